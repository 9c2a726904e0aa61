//! The node as commands see it: actors, engine, catalog, cursors and
//! counters, shared by every connection.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use actix::Addr;
use ebb_actors::catalog::{CatalogActor, CatalogView};
use ebb_actors::collection::CollectionHandle;
use ebb_actors::runtime::Runtime;
use ebb_actors::shared::Shared;
use ebb_lang::query::interrupt::Scope;
use ebb_lang::query::spill::DiskUse;
use ebb_storage::engine::Snapshot;
use tokio::sync::{Notify, Semaphore};

use crate::auth::directory::Directory;
use crate::cursor::CursorManager;
use crate::error::{CommandError, CommandResult};
use crate::latency::Latencies;
use crate::ops::{self, Operations};

/// The namespace prefix under which a time-series collection's buckets
/// are shown.
pub const BUCKETS_PREFIX: &str = "system.buckets.";

/// `serverStatus.opcounters`.
#[derive(Debug, Default)]
pub struct OpCounters {
    pub insert: AtomicU64,
    pub query: AtomicU64,
    pub update: AtomicU64,
    pub delete: AtomicU64,
    pub getmore: AtomicU64,
    pub command: AtomicU64,
}

/// `serverStatus.connections`.
#[derive(Debug, Default)]
pub struct ConnectionCounters {
    pub current: AtomicU64,
    pub total_created: AtomicU64,
}

pub struct NodeContext {
    pub shared: Arc<Shared>,
    /// The published catalog: what reads see.
    pub view: Arc<CatalogView>,
    /// Where DDL goes.
    pub catalog: Addr<CatalogActor>,
    pub cursors: CursorManager,
    pub started: Instant,
    pub opcounters: OpCounters,
    pub connections: ConnectionCounters,
    pub config: Arc<ebb_config::Config>,
    pub argv: Vec<String>,
    /// The node is the whole process (ebbd): it may replace the process
    /// with itself started again.
    pub own_process: bool,
    /// The shared key members authenticate to each other with
    /// (`security.key_file`), when there is one.
    pub internal_key: Option<Arc<crate::auth::internal::InternalKey>>,
    /// The node's users: the generation connections check their cached roles against.
    pub users: Directory,
    /// The running commands (`currentOp`, `killOp`, cancel on disconnect).
    pub ops: Operations,
    /// The database profiler's settings (`profile`).
    pub profiler: crate::profile::settings::Profiler,
    /// Signalled by the `shutdown` command; the daemon then stops as on SIGTERM.
    pub shutdown_requested: Notify,
    /// Command latencies for `/metrics`.
    pub latencies: Latencies,
    /// Time and operations per collection, for `top`.
    pub top: crate::top::Top,
    /// The logical sessions clients named.
    pub sessions: crate::sessions::Sessions,
    /// Each session's latest multi-document transaction.
    pub transactions: crate::txn::Transactions,
    /// This node's replica set, once it has started as a member (never on a
    /// standalone).
    pub replica_set: std::sync::OnceLock<Arc<crate::repl::ReplicaSet>>,
    /// Bounds concurrent reads on the blocking pool.
    reads: Semaphore,
    /// Bounds, within `reads`, the reads that may walk many keys.
    scans: Semaphore,
}

/// How many reads may run on blocking threads at once.
const MAX_CONCURRENT_READS: usize = 64;

/// How many reads that walk many keys may run at once: all cores but one,
/// so point reads and writes keep a core however many clients scan.
fn max_concurrent_scans() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(2)
        .saturating_sub(1)
        .max(1)
}

impl NodeContext {
    /// Where a query's sort may spill: `<storage.path>/_tmp` when the
    /// client allowed disk use (as mongod's `dbpath/_tmp`), else nowhere.
    pub fn disk_use(&self, allowed: bool) -> DiskUse {
        if allowed {
            DiskUse::Allowed(self.config.storage.path.join("_tmp"))
        } else {
            DiskUse::Forbidden
        }
    }

    pub fn new(
        runtime: &Runtime,
        config: Arc<ebb_config::Config>,
        argv: Vec<String>,
        own_process: bool,
        internal_key: Option<Arc<crate::auth::internal::InternalKey>>,
    ) -> Self {
        NodeContext {
            cursors: CursorManager::new(
                config.cursors.idle_timeout,
                config.cursors.max_per_connection,
            ),
            shared: runtime.shared.clone(),
            view: runtime.view.clone(),
            catalog: runtime.catalog.clone(),
            started: Instant::now(),
            opcounters: OpCounters::default(),
            connections: ConnectionCounters::default(),
            config,
            argv,
            own_process,
            internal_key,
            users: Directory::default(),
            ops: Operations::default(),
            profiler: Default::default(),
            shutdown_requested: Notify::new(),
            latencies: Latencies::default(),
            top: Default::default(),
            sessions: Default::default(),
            transactions: Default::default(),
            replica_set: std::sync::OnceLock::new(),
            reads: Semaphore::new(MAX_CONCURRENT_READS),
            scans: Semaphore::new(max_concurrent_scans()),
        }
    }

    /// The collection, if it exists. `system.buckets.<name>` of a
    /// time-series collection is that collection read as its stored
    /// buckets (the same writer, which refuses writes there: see
    /// `command::write::target`).
    /// This node's replica set, when it is a member.
    pub fn replica_set(&self) -> Option<&crate::repl::ReplicaSet> {
        self.replica_set.get().map(|s| &**s)
    }

    pub fn collection(&self, db: &str, name: &str) -> Option<CollectionHandle> {
        let view = self.view.load();
        if let Some(base) = name.strip_prefix(BUCKETS_PREFIX) {
            let entry = view.get(db, base)?;
            entry.coll.timeseries.as_ref()?;
            let coll = entry.coll.raw_buckets().ok()?;
            return Some(CollectionHandle {
                coll,
                addr: entry.addr.clone(),
                inserted: entry.inserted.clone(),
            });
        }
        view.get(db, name).cloned()
    }

    /// Runs a read that may walk many keys (a collection or range scan, a
    /// count, an aggregation) as [`NodeContext::read`] does, after waiting
    /// for one of the few scan slots: many clients scanning at once queue
    /// here instead of taking every core from point reads and writes.
    pub async fn scan<T: Send + 'static>(
        &self,
        f: impl FnOnce(&dyn Snapshot) -> CommandResult<T> + Send + 'static,
    ) -> CommandResult<T> {
        let _slot = self
            .scans
            .acquire()
            .await
            .map_err(|_| CommandError::internal())?;
        self.read(f).await
    }

    /// Runs a read on a snapshot on the blocking pool, interruptible by
    /// `killOp` or its client's disconnect (the running command's interrupt).
    /// Reads that may walk many keys go through [`NodeContext::scan`].
    /// A statement of a transaction reads the transaction's snapshot with
    /// its writes (`crate::txn`).
    pub async fn read<T: Send + 'static>(
        &self,
        f: impl FnOnce(&dyn Snapshot) -> CommandResult<T> + Send + 'static,
    ) -> CommandResult<T> {
        let _permit = self
            .reads
            .acquire()
            .await
            .map_err(|_| CommandError::internal())?;
        // A transaction's statement reads its snapshot and its own writes.
        let engine: Arc<dyn ebb_storage::engine::Engine> = match crate::txn::current() {
            Some(txn) => txn.overlay()?,
            None => self.shared.engine.clone(),
        };
        let interrupt = ops::current();
        tokio::task::spawn_blocking(move || {
            let _scope = Scope::enter(interrupt);
            let snap = engine.snapshot();
            f(snap.as_ref())
        })
        .await
        .map_err(|e| {
            tracing::error!(error = %e, "read task failed");
            CommandError::internal()
        })?
    }

    pub fn count(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Ordering::Relaxed);
    }
}
