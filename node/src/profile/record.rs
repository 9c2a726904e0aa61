//! Writing profile entries to `<db>.system.profile`, a capped collection
//! of 1 MiB created on the first write as mongod creates it, and the task
//! that records the TTL monitor's deletes there.

use std::sync::Arc;

use bson::{Bson, RawDocumentBuf, doc};
use ebb_actors::catalog::CreateCollection;
use ebb_actors::collection::InsertDocs;
use ebb_storage::capped::CappedOptions;

use super::settings::{PROFILE_BYTES, PROFILE_COLLECTION, entry, number};
use crate::context::NodeContext;

/// Writes `entry` to `<db>.system.profile`, creating it (capped, 1 MiB)
/// when missing. A failure is logged, never the operation's.
pub async fn write(node: &NodeContext, db: &str, entry: RawDocumentBuf) {
    let handle = match node.collection(db, PROFILE_COLLECTION) {
        Some(h) => Some(h),
        None => {
            let options = CappedOptions::new(PROFILE_BYTES, None)
                .map(|c| c.to_document())
                .unwrap_or_default();
            let created = node
                .catalog
                .send(CreateCollection {
                    db: db.to_owned(),
                    name: PROFILE_COLLECTION.to_owned(),
                    options,
                    applying: None,
                })
                .await;
            if let Ok(Err(e)) = created {
                tracing::debug!(db, error = %e.message, "system.profile not created");
            }
            node.collection(db, PROFILE_COLLECTION)
        }
    };
    let Some(handle) = handle else { return };
    let sent = handle
        .addr
        .send(InsertDocs {
            docs: Arc::new(vec![entry]),
            ordered: true,
            sync: false,
            prepared: false,
            decided: None,
            bypass_validation: true,
        })
        .await;
    if !matches!(sent, Ok(Ok(_))) {
        tracing::debug!(db, "profile entry not written");
    }
}

/// Records the TTL monitor's deletes in the profile of databases being
/// profiled, until `stop` changes: an entry per visit to a TTL index,
/// `op: "remove"` with `ndeleted`, its index and cutoff in `command`
/// (mongod does not document its own shape for these).
pub async fn record_ttl_deletes(
    node: std::sync::Arc<NodeContext>,
    mut stop: tokio::sync::watch::Receiver<bool>,
) {
    let mut visits = node.shared.ttl.visits.subscribe();
    loop {
        let visit = tokio::select! {
            _ = stop.changed() => return,
            v = visits.recv() => v,
        };
        let visit = match visit {
            Ok(v) => v,
            Err(tokio::sync::broadcast::error::RecvError::Lagged(n)) => {
                tracing::debug!(missed = n, "profiler missed TTL visits");
                continue;
            }
            Err(_) => return,
        };
        if !node.profiler.active(&visit.db) || visit.collection == PROFILE_COLLECTION {
            continue;
        }
        let command = doc! {
            "delete": visit.collection.clone(),
            "ttlIndex": visit.index.clone(),
            "expireBefore": bson::DateTime::from_millis(visit.cutoff_millis),
        };
        let ns = format!("{}.{}", visit.db, visit.collection);
        let millis = visit.millis as i64;
        let mut e = entry("remove", &ns, command, millis, node.shared.clock.now());
        e.insert("ndeleted", number(visit.deleted as i64));
        e.insert("appName", "TTLMonitor");
        e.insert("client", "");
        e.insert("allUsers", Vec::<Bson>::new());
        e.insert("user", "");
        let Ok(raw) = RawDocumentBuf::try_from(&e) else {
            continue;
        };
        if node.profiler.wants(&visit.db, &raw, millis) {
            write(&node, &visit.db, raw).await;
        }
    }
}
