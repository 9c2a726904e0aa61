//! The WAL syncer: with `storage.sync = "<interval>"`, acknowledged writes
//! become durable within one interval (like MongoDB's journal commit
//! interval), by syncing the write-ahead log on a timer.

use std::sync::Arc;
use std::time::Duration;

use ebb_storage::engine::Engine;
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// A running syncer; stops when told or when dropped.
pub struct WalSyncer {
    stop: watch::Sender<bool>,
    task: JoinHandle<()>,
}

impl WalSyncer {
    /// Syncs `engine`'s WAL every `every`. Must run inside a tokio runtime.
    pub fn start(engine: Arc<dyn Engine>, every: Duration) -> WalSyncer {
        let (stop, mut stopped) = watch::channel(false);
        let task = tokio::spawn(async move {
            loop {
                tokio::select! {
                    _ = stopped.changed() => return,
                    _ = tokio::time::sleep(every) => {
                        let engine = engine.clone();
                        if let Ok(Err(e)) = tokio::task::spawn_blocking(move || engine.sync_wal()).await {
                            tracing::error!(error = %e, "periodic WAL sync failed");
                        }
                    }
                }
            }
        });
        WalSyncer { stop, task }
    }

    /// Stops the syncer after any sync in progress.
    pub async fn stop(self) {
        let _ = self.stop.send(true);
        let _ = self.task.await;
    }
}
