//! What every actor and the node share: the engine, the low-priority TTL
//! threads, the clock, runtime parameters, the TTL state and its route, what readers see
//! of due documents, durability, the expiry policy and the write counters. It names no actor: the published
//! catalog (which holds actor addresses) lives in `catalog::view`.

use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use ebb_storage::collection::HideDue;
use ebb_storage::engine::Engine;
use ebb_storage::ttl::ExpiryPolicy;

use crate::background::Background;
use crate::clock::Clock;
use crate::params::Params;
use crate::ttl::{Routing, TtlState};

/// Durability of acknowledged writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Durability {
    /// Every write group is synced before it is acknowledged.
    SyncEachWrite,
    /// The WAL is synced on an interval; `j: true` writes sync at once.
    Interval(std::time::Duration),
}

/// Shared by the actors and the node.
pub struct Shared {
    pub engine: Arc<dyn Engine>,
    /// The low-priority threads TTL chunks run on.
    pub background: Background,
    pub clock: Arc<dyn Clock>,
    pub params: Arc<Params>,
    pub ttl: Arc<TtlState>,
    /// Where TTL chunks go: the writers, or a replica set's log.
    pub expiry: Routing,
    /// Whether readers see due documents the monitor has yet to delete
    /// (every collection's collection handle carries it).
    pub hide_due: Arc<dyn HideDue>,
    pub durability: Durability,
    /// How TTL work is cut into chunks (from `config.ttl`).
    pub policy: ExpiryPolicy,
    pub writes: WriteCounters,
}

/// Documents written, for `serverStatus`.
#[derive(Debug, Default)]
pub struct WriteCounters {
    pub inserted: AtomicU64,
    pub updated: AtomicU64,
    pub deleted: AtomicU64,
}
