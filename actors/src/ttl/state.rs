//! The TTL monitor's shared state: `serverStatus.metrics.ttl` counters,
//! the planned wake-up that writers lower when they index an earlier due
//! time, the running delete for `currentOp`, and whether the monitor runs.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};

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
            running: AtomicBool::new(false),
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
