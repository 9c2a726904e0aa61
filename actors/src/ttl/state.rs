//! The TTL monitor's shared state: `serverStatus.metrics.ttl` counters,
//! the planned wake-up that writers lower when they index an earlier due
//! time, the running delete for `currentOp`, whether the monitor runs, and
//! the gate a test holds to keep it between passes.

use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use tokio::sync::Notify;

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
    /// TTL chunks sent to writers, and the microseconds from sending each
    /// to its answer (queueing behind foreground writes included): how
    /// long expiry takes per chunk as tombstones accumulate.
    pub chunks: AtomicU64,
    pub chunk_micros: AtomicU64,
    /// Microseconds writers spent on chunks sent to throttle their
    /// collection's writes: the time those writes waited behind expiry.
    pub throttle_micros: AtomicU64,
    /// How writers ran those chunks, and the plans they threw away.
    pub runs: ChunkRuns,
    /// Index changes that made more than `ttl.mass_expiry_percent` of a
    /// collection due at once.
    pub mass_changes: AtomicU64,
    /// When the monitor will next wake (millis on the node's clock).
    pub next_wake_millis: AtomicI64,
    /// Wakes the monitor early: an earlier due time, a parameter change,
    /// a new TTL index.
    pub wake: Notify,
    pub current: Mutex<Option<TtlOp>>,
    /// Whether the monitor runs at all (false on a former replica-set
    /// member, see `local.system.replset`).
    pub running: AtomicBool,
    /// Times the monitor has woken from a sleep (for diagnostics and for
    /// tests that must know it looked at its parameters again).
    pub wakeups: AtomicU64,
    /// Due documents reads passed over before the monitor deleted them
    /// (those a scan of a TTL index leaves out unread are not counted).
    pub hidden_by_reads: AtomicU64,
    /// Due documents writes deleted because they held the `_id` or unique
    /// key being written (also counted in `deleted_documents`).
    pub replaced_by_writes: AtomicU64,
    /// Index entries of expired documents deleted by sweeps after their
    /// chunks (`ttl::sweep`).
    pub swept: AtomicU64,
    /// Documents this member deleted applying the TTL chunks of a
    /// replica set's log: on a secondary, the primary's expiry reaching it
    /// (the primary counts its own in `deleted_documents` too).
    pub replicated_deletes: AtomicU64,
    /// Per TTL chunk, seconds from the due time of the oldest document it
    /// deleted to the chunk's answer: how late expiry runs (`/metrics`).
    pub expiry_lag: Histogram,
    /// The largest lag of a chunk (millis) since the expiry page's history
    /// last took it (`TtlState::take_lag_peak`).
    lag_peak_millis: AtomicU64,
    /// Taken by the monitor for each pass. Whoever holds it keeps the
    /// monitor between passes: tests use it to look at due documents that
    /// are still stored (`TtlState::hold`).
    pass_gate: Arc<tokio::sync::Mutex<()>>,
    /// Announces every visit that deleted documents, for the database
    /// profiler (the manual: TTL deletes show in its data).
    pub visits: tokio::sync::broadcast::Sender<TtlVisit>,
}

/// How writers ran TTL chunks (`serverStatus.metrics.ttl.chunkRuns`): the
/// paths a chunk can take and the plans discarded on the way, so a run
/// that falls behind shows which path it was on.
#[derive(Debug, Default)]
pub struct ChunkRuns {
    /// Applied from a plan made off the writer while writes were active.
    pub planned: AtomicU64,
    /// Applied from the plan made ahead while the chunk before committed.
    pub ahead: AtomicU64,
    /// Scanned and applied on the writer.
    pub on_writer: AtomicU64,
    /// Plans discarded because the writer ran a foreground job in between.
    pub stale_plans: AtomicU64,
    /// Plans not back within the writer's patience.
    pub overdue_plans: AtomicU64,
    /// Chunks the monitor sent as `prompt` (it was keeping up with their
    /// index, so the writer's patience for their plans was the shorter).
    pub prompt: AtomicU64,
    /// Chunks the monitor sent as `behind` (it was seconds late on their
    /// index, so the writer ran them itself instead of planning them).
    pub behind: AtomicU64,
    /// Chunks the monitor sent to throttle their collection's writes
    /// (`ttl.overload = "throttle"` and their index late).
    pub throttled: AtomicU64,
}

impl ChunkRuns {
    /// Each counter under its name in `serverStatus.metrics.ttl.chunkRuns`
    /// (and `/metrics`' `run` label).
    pub fn by_name(&self) -> [(&'static str, &AtomicU64); 8] {
        [
            ("planned", &self.planned),
            ("ahead", &self.ahead),
            ("onWriter", &self.on_writer),
            ("stalePlans", &self.stale_plans),
            ("overduePlans", &self.overdue_plans),
            ("prompt", &self.prompt),
            ("behind", &self.behind),
            ("throttled", &self.throttled),
        ]
    }
}

/// What one visit of the monitor to one TTL index deleted.
#[derive(Debug, Clone)]
pub struct TtlVisit {
    pub db: String,
    pub collection: String,
    pub index: String,
    pub deleted: u64,
    /// Documents whose date was at or before this were due (millis).
    pub cutoff_millis: i64,
    pub millis: u64,
}

impl Default for TtlState {
    fn default() -> Self {
        TtlState {
            deleted_documents: AtomicU64::new(0),
            // 1 ms to about a minute, doubling.
            expiry_lag: Histogram::new(exponential_buckets(0.001, 2.0, 17)),
            lag_peak_millis: AtomicU64::new(0),
            passes: AtomicU64::new(0),
            sub_passes: AtomicU64::new(0),
            chunks: AtomicU64::new(0),
            chunk_micros: AtomicU64::new(0),
            throttle_micros: AtomicU64::new(0),
            runs: ChunkRuns::default(),
            mass_changes: AtomicU64::new(0),
            next_wake_millis: AtomicI64::new(i64::MAX),
            wake: Notify::new(),
            current: Mutex::new(None),
            running: AtomicBool::new(false),
            wakeups: AtomicU64::new(0),
            hidden_by_reads: AtomicU64::new(0),
            replaced_by_writes: AtomicU64::new(0),
            swept: AtomicU64::new(0),
            replicated_deletes: AtomicU64::new(0),
            pass_gate: Arc::new(tokio::sync::Mutex::new(())),
            visits: tokio::sync::broadcast::Sender::new(256),
        }
    }
}

impl TtlState {
    /// Records how late (millis) a chunk deleted its oldest document.
    pub fn observe_lag(&self, late_millis: i64) {
        let late = late_millis.max(0);
        self.expiry_lag.observe(late as f64 / 1000.0);
        self.lag_peak_millis
            .fetch_max(late as u64, Ordering::Relaxed);
    }

    /// The largest lag (millis) observed since the last take; 0 when no
    /// chunk ran.
    pub fn lag_peak_millis(&self) -> u64 {
        self.lag_peak_millis.load(Ordering::Relaxed)
    }

    /// [`TtlState::lag_peak_millis`], starting the next interval from 0.
    pub fn take_lag_peak(&self) -> u64 {
        self.lag_peak_millis.swap(0, Ordering::Relaxed)
    }

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

    /// Keeps the monitor from starting a pass until the guard is dropped;
    /// waits for a running pass to end first. Hiding goes on meanwhile.
    pub async fn hold(&self) -> tokio::sync::OwnedMutexGuard<()> {
        self.pass_gate.clone().lock_owned().await
    }
}
