//! What every actor and the node share: the engine, the clock, runtime
//! parameters, the published catalog and the TTL counters.
//!
//! The catalog is published as an immutable snapshot ([`CatalogState`])
//! behind a lock that is held only to clone an `Arc`: readers (queries run
//! off the actors) see a consistent set of collections and indexes without
//! asking the catalog actor.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use actix::Addr;
use ebb_storage::engine::Engine;
use ebb_storage::write::IndexSet;
use tokio::sync::Notify;

use crate::clock::Clock;
use crate::collection::CollectionActor;
use crate::params::Params;

/// One collection as readers and writers find it.
#[derive(Clone)]
pub struct CollectionEntry {
    pub set: Arc<IndexSet>,
    pub addr: Addr<CollectionActor>,
}

/// An immutable view of every collection.
#[derive(Clone, Default)]
pub struct CatalogState {
    pub collections: BTreeMap<(String, String), CollectionEntry>,
}

impl CatalogState {
    pub fn get(&self, db: &str, name: &str) -> Option<&CollectionEntry> {
        self.collections.get(&(db.to_owned(), name.to_owned()))
    }

    /// Collections of one database, in name order.
    pub fn in_db<'a>(&'a self, db: &'a str) -> impl Iterator<Item = &'a CollectionEntry> + 'a {
        self.collections
            .iter()
            .filter(move |((d, _), _)| d == db)
            .map(|(_, e)| e)
    }

    /// Database names, in order, each once.
    pub fn databases(&self) -> Vec<String> {
        let mut dbs: Vec<String> = self.collections.keys().map(|(d, _)| d.clone()).collect();
        dbs.dedup();
        dbs
    }
}

/// The published catalog.
#[derive(Default)]
pub struct CatalogView {
    current: RwLock<Arc<CatalogState>>,
}

impl CatalogView {
    pub fn load(&self) -> Arc<CatalogState> {
        self.current.read().expect("catalog view lock").clone()
    }

    pub(crate) fn publish(&self, state: CatalogState) {
        *self.current.write().expect("catalog view lock") = Arc::new(state);
    }
}

/// A TTL delete in progress, for `currentOp`.
#[derive(Debug, Clone)]
pub struct TtlOp {
    pub ns: String,
    pub index: String,
    pub started_millis: i64,
    pub deleted: u64,
}

/// `serverStatus.metrics.ttl` and the monitor's schedule.
#[derive(Debug)]
pub struct TtlState {
    pub deleted_documents: AtomicU64,
    pub passes: AtomicU64,
    pub sub_passes: AtomicU64,
    /// When the monitor will next wake (millis on the node's clock).
    pub next_wake_millis: AtomicI64,
    /// Wakes the monitor early: an earlier due time, a parameter change,
    /// a new TTL index.
    pub wake: Notify,
    pub current: Mutex<Option<TtlOp>>,
    /// Whether the monitor runs at all (false on a former replica-set
    /// member, see `local.system.replset`).
    pub running: std::sync::atomic::AtomicBool,
    /// Times the monitor has woken from a sleep (for diagnostics and for
    /// tests that must know it looked at its parameters again).
    pub wakeups: AtomicU64,
}

impl Default for TtlState {
    fn default() -> Self {
        TtlState {
            deleted_documents: AtomicU64::new(0),
            passes: AtomicU64::new(0),
            sub_passes: AtomicU64::new(0),
            next_wake_millis: AtomicI64::new(i64::MAX),
            wake: Notify::new(),
            current: Mutex::new(None),
            running: std::sync::atomic::AtomicBool::new(false),
            wakeups: AtomicU64::new(0),
        }
    }
}

impl TtlState {
    /// Called by writers: a document becomes due at `due_millis`. Wakes the
    /// monitor only when that is earlier than its planned wake-up.
    pub fn note_due(&self, due_millis: i64) {
        let prev = self
            .next_wake_millis
            .fetch_min(due_millis, Ordering::SeqCst);
        if due_millis < prev {
            self.wake.notify_one();
        }
    }
}

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
    /// The low-priority thread TTL chunks run on.
    pub background: crate::background::Background,
    pub clock: Arc<dyn Clock>,
    pub params: Arc<Params>,
    pub catalog: CatalogView,
    pub ttl: TtlState,
    pub durability: Durability,
    /// Largest number of documents one TTL chunk deletes before the
    /// collection's writer takes other work.
    pub ttl_chunk_docs: usize,
    /// Monitor pacing: deletes per second, 0 = unlimited.
    pub ttl_max_deletes_per_sec: u64,
    /// Wake for the earliest due entry (false = MongoDB's fixed interval).
    pub ttl_prompt: bool,
    pub writes: WriteCounters,
}

/// Documents written, for `serverStatus`.
#[derive(Debug, Default)]
pub struct WriteCounters {
    pub inserted: AtomicU64,
    pub updated: AtomicU64,
    pub deleted: AtomicU64,
}
