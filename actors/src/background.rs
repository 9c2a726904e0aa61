//! Three low-priority threads for TTL work.
//!
//! Expiry is background work: it must not take CPU from foreground reads
//! and writes on a small machine. TTL chunks that hold a collection's
//! writer run on `ebb-ttl` (those of an index whose expiry is seconds
//! behind run on the blocking pool instead: writes wait for them), whose scheduling priority is lowered once at
//! start (nice +10 on Linux; the nice value is per thread there), so the
//! kernel prefers foreground threads whenever both are runnable, yet a
//! write waiting behind a chunk is not kept waiting long. Chunks planned
//! without holding the writer run on `ebb-ttl-plan` at `SCHED_IDLE`: the
//! kernel runs it only on otherwise idle CPU, which is safe because no
//! other thread ever waits for it. Only one chunk runs at a time anyway:
//! the monitor visits indexes one after another. While no foreground write
//! is active, the next chunk of a visit is planned on `ebb-ttl-ahead`
//! (nice +10, like `ebb-ttl`) while the current one commits: the writer
//! waits for that plan, so it must not starve behind compaction the way
//! an idle-priority thread would. While foreground writes are active, the
//! next chunk's plan goes to `ebb-ttl-plan` instead: nothing waits on it
//! beyond the schedule's patience, as for any plan made there.
//!
//! Work waiting in these queues holds the engine only weakly: a starved
//! idle-priority thread must not keep a stopped node's RocksDB open (its
//! LOCK file would refuse the next open of the same path). Work whose
//! engine is gone by the time it runs is skipped.

use std::sync::{Arc, mpsc};

use ebb_storage::engine::Engine;

type Task = Box<dyn FnOnce() + Send>;

/// The background threads' inboxes.
pub struct Background {
    tx: mpsc::Sender<Task>,
    idle: mpsc::Sender<Task>,
    ahead: mpsc::Sender<Task>,
}

/// Where a plan made ahead of its chunk runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlanThread {
    /// `ebb-ttl-ahead` (nice +10): the writer, free of foreground writes,
    /// waits for the plan.
    Ahead,
    /// `ebb-ttl-plan` (idle priority): foreground writes are active, and
    /// nothing waits on the plan beyond the schedule's patience.
    Idle,
}

/// How much lower than normal the thread runs (a nice value).
const NICENESS: i32 = 10;

impl Background {
    pub fn start() -> Self {
        Background {
            tx: spawn("ebb-ttl", lower_priority),
            idle: spawn("ebb-ttl-plan", idle_priority),
            ahead: spawn("ebb-ttl-ahead", lower_priority),
        }
    }

    /// Runs `f` on `engine` on the nice +10 thread; resolves with its
    /// result, or `None` if the engine was dropped before it ran.
    pub async fn run<T: Send + 'static>(
        &self,
        engine: &Arc<dyn Engine>,
        f: impl FnOnce(&dyn Engine) -> T + Send + 'static,
    ) -> Option<T> {
        on(&self.tx, engine, f).await
    }

    /// Runs `f` on `engine` on the idle-priority thread: only for work that
    /// holds nothing another thread may wait for.
    pub async fn run_idle<T: Send + 'static>(
        &self,
        engine: &Arc<dyn Engine>,
        f: impl FnOnce(&dyn Engine) -> T + Send + 'static,
    ) -> Option<T> {
        on(&self.idle, engine, f).await
    }

    /// Queues a plan made ahead on `thread` and returns at once, from any
    /// thread; the receiver gets its result (it is closed if the engine was
    /// dropped first, or `None` comes back if the thread is gone).
    pub fn submit_plan<T: Send + 'static>(
        &self,
        thread: PlanThread,
        engine: &Arc<dyn Engine>,
        f: impl FnOnce(&dyn Engine) -> T + Send + 'static,
    ) -> Option<tokio::sync::oneshot::Receiver<T>> {
        let tx = match thread {
            PlanThread::Ahead => &self.ahead,
            PlanThread::Idle => &self.idle,
        };
        submit(tx, engine, f)
    }

    /// Resolves once both threads have finished every task queued before
    /// the call: at shutdown, so that no task still holds the engine (and
    /// its LOCK file) after the node has stopped. A task that is already
    /// running has upgraded its weak engine and would keep it open.
    pub async fn drain(&self) {
        for tx in [&self.tx, &self.idle, &self.ahead] {
            let (done, finished) = tokio::sync::oneshot::channel::<()>();
            let signal: Task = Box::new(move || {
                let _ = done.send(());
            });
            if tx.send(signal).is_ok() {
                let _ = finished.await;
            }
        }
    }
}

async fn on<T: Send + 'static>(
    tx: &mpsc::Sender<Task>,
    engine: &Arc<dyn Engine>,
    f: impl FnOnce(&dyn Engine) -> T + Send + 'static,
) -> Option<T> {
    submit(tx, engine, f)?.await.ok()
}

fn submit<T: Send + 'static>(
    tx: &mpsc::Sender<Task>,
    engine: &Arc<dyn Engine>,
    f: impl FnOnce(&dyn Engine) -> T + Send + 'static,
) -> Option<tokio::sync::oneshot::Receiver<T>> {
    let (done, result) = tokio::sync::oneshot::channel();
    let engine = Arc::downgrade(engine);
    let task: Task = Box::new(move || {
        if let Some(engine) = engine.upgrade() {
            let _ = done.send(f(engine.as_ref()));
        }
    });
    tx.send(task).ok()?;
    Some(result)
}

fn spawn(name: &str, setup: fn()) -> mpsc::Sender<Task> {
    let (tx, rx) = mpsc::channel::<Task>();
    std::thread::Builder::new()
        .name(name.into())
        .spawn(move || {
            setup();
            for task in rx {
                task();
            }
        })
        .expect("spawn a TTL thread");
    tx
}

#[cfg(target_os = "linux")]
fn idle_priority() {
    // SAFETY: sched_param is plain data; sched_setscheduler reads it.
    let rc = unsafe {
        let param = libc::sched_param { sched_priority: 0 };
        libc::sched_setscheduler(0, libc::SCHED_IDLE, &param)
    };
    if rc != 0 {
        tracing::warn!("could not give the TTL planning thread idle priority");
        lower_priority();
    }
}

#[cfg(not(target_os = "linux"))]
fn idle_priority() {}

#[cfg(target_os = "linux")]
fn lower_priority() {
    // SAFETY: gettid and setpriority only read their integer arguments.
    let rc = unsafe {
        let tid = libc::syscall(libc::SYS_gettid) as libc::id_t;
        libc::setpriority(libc::PRIO_PROCESS, tid, NICENESS)
    };
    if rc != 0 {
        tracing::warn!("could not lower the TTL thread's priority; expiry runs at normal priority");
    }
}

#[cfg(not(target_os = "linux"))]
fn lower_priority() {}
