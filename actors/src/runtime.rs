//! The actors as one runtime: [`Runtime::start`] builds the shared state
//! from an engine, the config and a clock, loads the catalog (starting one
//! writer per collection), starts the TTL monitor (unless this is a former
//! replica-set member, as MongoDB decides; on a member it deletes only
//! while primary, through the set's log: `ttl::route`) and the WAL syncer.
//! [`Runtime::shutdown`] stops them in order: the monitor between chunks,
//! TTL work still running on the background threads, every collection's
//! writer after its queued work, the syncer, then one
//! last WAL sync and memtable flush.
//!
//! The node adds connections on top; nothing here knows the wire protocol.

use std::sync::Arc;

use actix::prelude::*;
use ebb_config::{Config, SyncPolicy};
use ebb_storage::engine::Engine;
use ebb_storage::ttl::ExpiryPolicy;
use ebb_storage::{Error, Result};

use crate::background::Background;
use crate::catalog::{CatalogActor, CatalogView};
use crate::clock::Clock;
use crate::collection::{CollectionHandle, Retire};
use crate::params::Params;
use crate::shared::{Durability, Shared, WriteCounters};
use crate::syncer::WalSyncer;
use crate::ttl::{HideAsMonitor, Routing, StopMonitor, TtlMonitor, TtlState};

/// How long shutdown waits for TTL work already running on the background
/// threads.
const DRAIN_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// Every actor of a node, started and stopped together.
pub struct Runtime {
    pub shared: Arc<Shared>,
    /// The published catalog: what reads see.
    pub view: Arc<CatalogView>,
    /// Where DDL goes.
    pub catalog: Addr<CatalogActor>,
    monitor: Option<Addr<TtlMonitor>>,
    syncer: Option<WalSyncer>,
}

impl Runtime {
    /// Starts the actors over an open engine. Must run inside an actix
    /// system.
    pub async fn start(
        engine: Arc<dyn Engine>,
        config: &Config,
        clock: Arc<dyn Clock>,
    ) -> Result<Runtime> {
        let durability = match config.storage.sync {
            SyncPolicy::Always => Durability::SyncEachWrite,
            SyncPolicy::Interval(d) => Durability::Interval(d),
        };
        let params = Arc::new(Params::new(config.set_parameter.clone()));
        let ttl = Arc::new(TtlState::default());
        let hide_due = Arc::new(HideAsMonitor {
            clock: clock.clone(),
            params: params.clone(),
            ttl: ttl.clone(),
            hide_expired: config.ttl.hide_expired,
            member: config.replication.enabled(),
        });
        let shared = Arc::new(Shared {
            engine: engine.clone(),
            background: Background::start(),
            clock,
            params,
            ttl,
            expiry: match config.replication.enabled() {
                true => Routing::member(),
                false => Routing::default(),
            },
            hide_due,
            durability,
            policy: ExpiryPolicy::from_config(&config.ttl),
            writes: WriteCounters::default(),
        });
        let view = Arc::new(CatalogView::default());
        let catalog = CatalogActor::load(shared.clone(), view.clone())
            .await?
            .start();
        let monitor = if !config.replication.enabled()
            && former_replica_set_member(&shared, &view).await?
        {
            tracing::warn!(
                "Document(s) exist in 'local.system.replset', which is used for replication. \
                 This node runs as a standalone. The TTL collection monitor will not start because of this."
            );
            None
        } else {
            Some(TtlMonitor::new(shared.clone(), view.clone()).start())
        };
        let syncer = match durability {
            Durability::Interval(every) => Some(WalSyncer::start(engine, every)),
            Durability::SyncEachWrite => None,
        };
        Ok(Runtime {
            shared,
            view,
            catalog,
            monitor,
            syncer,
        })
    }

    /// The collection, if it exists.
    pub fn collection(&self, db: &str, name: &str) -> Option<CollectionHandle> {
        self.view.load().get(db, name).cloned()
    }

    /// Stops the monitor between chunks, waits for TTL work still running on
    /// the background threads, drains every collection's writer,
    /// stops the syncer, then syncs the WAL and flushes the engine.
    pub async fn shutdown(self) -> Result<()> {
        if let Some(monitor) = &self.monitor {
            let _ = monitor.send(StopMonitor).await;
        }
        // A TTL task still running on a background thread holds the engine;
        // wait for it (bounded: the idle-priority thread may be starved).
        let drained = tokio::time::timeout(DRAIN_TIMEOUT, self.shared.background.drain()).await;
        if drained.is_err() {
            tracing::warn!("a TTL background task is still running at shutdown");
        }
        for handle in self.view.load().collections.values() {
            let _ = handle.addr.send(Retire).await;
        }
        if let Some(syncer) = self.syncer {
            syncer.stop().await;
        }
        let engine = self.shared.engine.clone();
        tokio::task::spawn_blocking(move || engine.sync_wal().and_then(|()| engine.flush()))
            .await
            .map_err(|e| Error::engine(format!("flush task failed: {e}")))?
    }
}

/// Whether `local.system.replset` holds documents (MongoDB then never
/// starts the TTL monitor; checked once, at startup).
async fn former_replica_set_member(shared: &Shared, view: &CatalogView) -> Result<bool> {
    let Some(handle) = view.load().get("local", "system.replset").cloned() else {
        return Ok(false);
    };
    let engine = shared.engine.clone();
    tokio::task::spawn_blocking(move || {
        let snap = engine.snapshot();
        Ok(!handle.is_empty(snap.as_ref())?)
    })
    .await
    .map_err(|e| Error::engine(format!("startup check failed: {e}")))?
}
