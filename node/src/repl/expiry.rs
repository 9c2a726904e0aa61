//! TTL on a replica set: the primary's monitor sends its chunks through
//! the log ([`LoggedExpiry`], the actors' `ExpiryRoute`), every member
//! applies them in log order ([`apply`]), and the answer on the primary is
//! the chunk's outcome there. A secondary's writers never run a chunk of
//! their own, so `metrics.ttl.deletedDocuments` stays 0 on it while the
//! primary's deletes reach it.

use std::sync::Weak;
use std::time::{Duration, Instant};

use bson::{RawBson, RawBsonRef, RawDocument, RawDocumentBuf, rawdoc};
use ebb_actors::collection::ExpireChunk;
use ebb_actors::ttl::ExpiryRoute;
use ebb_storage::ttl::ExpireOutcome;
use futures::future::BoxFuture;

use super::entry;
use super::set::ReplicaSet;
use crate::context::NodeContext;
use crate::error::CommandError;

/// The monitor's way through the set's log.
pub struct LoggedExpiry {
    pub set: Weak<ReplicaSet>,
}

impl ExpiryRoute for LoggedExpiry {
    fn may_expire(&self) -> bool {
        self.set
            .upgrade()
            .is_some_and(|set| set.replica.view().writable)
    }

    fn expire(
        &self,
        db: &str,
        collection: &str,
        chunk: ExpireChunk,
    ) -> BoxFuture<'_, Option<ebb_storage::Result<ExpireOutcome>>> {
        let set = self.set.upgrade();
        let proposal = set
            .as_ref()
            .map(|set| entry::expire(db, collection, &chunk, set.clock.now_millis()));
        Box::pin(async move {
            let (set, proposal) = (set?, proposal?);
            let (_, applied) = set.replica.propose(proposal).await.ok()?;
            let reply = RawDocumentBuf::from_bytes(applied.bytes).ok()?;
            Some(outcome(&reply))
        })
    }
}

/// Runs a TTL chunk from the log on this member's writer of
/// `db.collection`; answers its outcome as a reply document.
pub async fn apply(
    node: &NodeContext,
    db: &str,
    collection: &str,
    chunk: ExpireChunk,
) -> RawDocumentBuf {
    // The collection the monitor saw (a time-series collection's, not its
    // buckets' view).
    let Some(addr) = node.view.load().get(db, collection).map(|e| e.addr.clone()) else {
        return reply(&ExpireOutcome::default());
    };
    match addr.send(chunk).await {
        Ok(Ok(out)) => {
            let replicated = &node.shared.ttl.replicated_deletes;
            replicated.fetch_add(out.deleted, std::sync::atomic::Ordering::Relaxed);
            reply(&out)
        }
        Ok(Err(e)) if e.kind == ebb_storage::ErrorKind::NamespaceNotFound => {
            reply(&ExpireOutcome::default())
        }
        Ok(Err(e)) => CommandError::from(e).to_reply(),
        // Dropped meanwhile: nothing left to delete.
        Err(_) => reply(&ExpireOutcome::default()),
    }
}

fn reply(out: &ExpireOutcome) -> RawDocumentBuf {
    let after = match &out.resume_after {
        Some(key) => RawBson::Binary(bson::Binary {
            subtype: bson::spec::BinarySubtype::Generic,
            bytes: key.clone(),
        }),
        None => RawBson::Null,
    };
    let oldest = out.oldest_millis.map_or(RawBson::Null, RawBson::Int64);
    rawdoc! {
        "ok": 1.0,
        "deleted": out.deleted as i64,
        "more": out.more,
        "after": after,
        "oldest": oldest,
    }
}

/// Reads what [`reply`] wrote, or the error the chunk failed with.
fn outcome(reply: &RawDocument) -> ebb_storage::Result<ExpireOutcome> {
    if reply.get_f64("ok").unwrap_or(0.0) != 1.0 {
        let message = reply.get_str("errmsg").unwrap_or("TTL chunk failed");
        return Err(ebb_storage::Error::engine(message.to_owned()));
    }
    let read = || -> Option<ExpireOutcome> {
        Some(ExpireOutcome {
            deleted: u64::try_from(reply.get_i64("deleted").ok()?).ok()?,
            more: reply.get_bool("more").ok()?,
            resume_after: match reply.get("after").ok()? {
                Some(RawBsonRef::Binary(b)) => Some(b.bytes.to_vec()),
                _ => None,
            },
            oldest_millis: reply.get_i64("oldest").ok(),
        })
    };
    read()
        .ok_or_else(|| ebb_storage::Error::engine("a TTL chunk's outcome is unreadable".to_owned()))
}

/// Wakes `node`'s monitor once this member, just elected, is a writable
/// primary, so it deletes what fell due while it was a secondary without
/// waiting for its next pass.
pub async fn wake_as_primary(node: &NodeContext, set: &ReplicaSet) {
    // A new leader is writable once a majority answered it.
    let deadline = Instant::now() + 2 * set.election_timeout;
    while !set.replica.view().writable && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    node.shared.ttl.wake.notify_one();
}
