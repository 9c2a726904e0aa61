//! The change log's window on this member (mongod's oplog size): every
//! few seconds, the oldest changes past `replication.oplog_size_mb` are
//! trimmed away, but never those younger than
//! `replication.oplog_min_retention` (`ebb_storage::changes::trim`). Each
//! member trims its own log; a stream that needs what is gone gets
//! ChangeStreamHistoryLost there, and may resume on a member that has it.

use std::sync::{Arc, Weak};
use std::time::Duration;

use ebb_storage::engine::Engine;

use super::set::ReplicaSet;

/// How often the window is checked.
const EVERY: Duration = Duration::from_secs(5);

/// Trims the log for as long as the member runs.
pub async fn keep(
    set: Weak<ReplicaSet>,
    engine: Arc<dyn Engine>,
    max_bytes: u64,
    retention: Duration,
) {
    loop {
        tokio::time::sleep(EVERY).await;
        let Some(now) = set.upgrade().map(|s| s.clock.now_millis()) else {
            return;
        };
        let oldest_kept_secs = (now / 1000)
            .saturating_sub(retention.as_secs() as i64)
            .max(0) as u64;
        let keep_from = oldest_kept_secs << 32;
        let engine = Arc::clone(&engine);
        let trimmed = tokio::task::spawn_blocking(move || {
            ebb_storage::changes::trim(&*engine, max_bytes, keep_from)
        })
        .await;
        match trimmed {
            Ok(Ok(true)) => tracing::debug!("trimmed the change log to its window"),
            Ok(Ok(false)) => {}
            Ok(Err(e)) => tracing::warn!(error = %e, "cannot trim the change log"),
            Err(e) => tracing::warn!(error = %e, "the change log's trim stopped"),
        }
    }
}
