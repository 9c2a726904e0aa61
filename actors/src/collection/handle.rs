//! A collection as readers and writers find it: its immutable storage handle
//! (for reads on snapshots) and the address of its single writer (for
//! writes), with what the node asks of a collection besides reads and
//! writes — count, emptiness, sizes, compaction — so that nothing above
//! the actors names a column family.

use std::sync::Arc;

use actix::Addr;
use ebb_storage::engine::{Engine, Snapshot};
use ebb_storage::stats::{self, Sizes};
use ebb_storage::{Collection, Result};

use super::actor::CollectionActor;

/// One collection: its storage handle and its writer.
#[derive(Clone)]
pub struct CollectionHandle {
    pub coll: Arc<Collection>,
    pub addr: Addr<CollectionActor>,
    /// Changes after each committed write that stored new documents (its
    /// writer's `inserts`); closed when the writer stops.
    pub inserted: tokio::sync::watch::Receiver<u64>,
}

impl CollectionHandle {
    /// `db.name`.
    pub fn ns(&self) -> String {
        self.coll.ns()
    }

    /// Documents in the collection, counted exactly on `snap`.
    pub fn count(&self, snap: &dyn Snapshot) -> Result<u64> {
        stats::count(snap, &self.coll)
    }

    /// Whether the collection holds no document, on `snap`.
    pub fn is_empty(&self, snap: &dyn Snapshot) -> Result<bool> {
        stats::is_empty(snap, &self.coll)
    }

    /// Size figures from the engine's estimates.
    pub fn sizes(&self, engine: &dyn Engine) -> Sizes {
        stats::sizes(engine, &self.coll)
    }

    /// Compacts the collection's records and indexes on a blocking thread;
    /// returns the bytes freed.
    pub async fn compact(&self, engine: Arc<dyn Engine>) -> Result<u64> {
        let coll = self.coll.clone();
        tokio::task::spawn_blocking(move || stats::compact(engine.as_ref(), &coll))
            .await
            .map_err(|e| ebb_storage::Error::engine(format!("compaction task failed: {e}")))?
    }
}
