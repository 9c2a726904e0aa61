//! The primary's no-op entries, as mongod writes them: one as it is
//! elected, so the set's time moves into its term at once, and one
//! whenever it applied no write for `replication.periodic_noop`, so every
//! member's `lastWrite` stays fresh and drivers' `maxStalenessSeconds`
//! does not take an idle set's secondaries for stale ones.

use std::sync::{Arc, Weak};

use ebb_repl::OpTime;

use super::entry;
use super::set::ReplicaSet;

/// Proposes a no-op entry with message `msg`; whether it applied.
async fn write(set: &ReplicaSet, msg: &str) -> bool {
    let proposal = entry::noop(msg, set.clock.now_millis());
    match set.replica.propose(proposal).await {
        Ok(_) => true,
        Err(e) => {
            tracing::debug!(error = %e, msg, "no-op entry not written");
            false
        }
    }
}

/// The first entry of a member just elected.
pub fn elected(set: &Arc<ReplicaSet>) {
    let set = Arc::clone(set);
    tokio::spawn(async move { write(&set, "new primary").await });
}

/// Writes the periodic no-op for as long as the member runs.
pub async fn periodic(set: Weak<ReplicaSet>) {
    let Some(period) = set.upgrade().map(|s| s.periodic_noop) else {
        return;
    };
    let mut seen: Option<OpTime> = None;
    loop {
        tokio::time::sleep(period).await;
        let Some(set) = set.upgrade() else {
            return;
        };
        let now = set.replica.optime();
        if seen == Some(now) && set.replica.view().writable {
            write(&set, "periodic noop").await;
        }
        seen = Some(set.replica.optime());
    }
}
