//! One low-priority thread for TTL deletions.
//!
//! Expiry is background work: it must not take CPU from foreground reads
//! and writes on a small machine. Every TTL chunk of every collection runs
//! here, on a thread whose scheduling priority is lowered once at start
//! (nice +10 on Linux; the nice value is per thread there), so the kernel
//! prefers foreground threads whenever both are runnable. Only one chunk
//! runs at a time anyway: the monitor visits indexes one after another.

use std::sync::mpsc;

type Task = Box<dyn FnOnce() + Send>;

/// The background thread's inbox.
pub struct Background {
    tx: mpsc::Sender<Task>,
}

/// How much lower than normal the thread runs (a nice value).
const NICENESS: i32 = 10;

impl Background {
    pub fn start() -> Self {
        let (tx, rx) = mpsc::channel::<Task>();
        std::thread::Builder::new()
            .name("ebb-ttl".into())
            .spawn(move || {
                lower_priority();
                for task in rx {
                    task();
                }
            })
            .expect("spawn the TTL thread");
        Background { tx }
    }

    /// Runs `f` on the background thread; resolves with its result.
    pub async fn run<T: Send + 'static>(
        &self,
        f: impl FnOnce() -> T + Send + 'static,
    ) -> Option<T> {
        let (done, result) = tokio::sync::oneshot::channel();
        let task: Task = Box::new(move || {
            let _ = done.send(f());
        });
        self.tx.send(task).ok()?;
        result.await.ok()
    }
}

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
