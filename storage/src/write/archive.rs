//! Archive on expire, ebb's own: a TTL index whose `archiveTo` names a
//! collection of its database writes each document it expires there, in
//! the batch that deletes it, so a document is never gone without its
//! copy and never copied twice (a crash loses both or neither; a member
//! applying a chunk again drops the batch whole).
//!
//! An archived document is an envelope around the one that expired:
//!
//! | field | |
//! | --- | --- |
//! | `_id` | a new ObjectId, of the time it expired (the archive's records cluster by it) |
//! | `expiredAt` | when the chunk deleted it (on a replica set, the primary's clock for the entry) |
//! | `expiredBy` | `{index, date, due}`: the index, the indexed date, when it fell due (as a change stream's `expiredBy`) |
//! | `doc` | the document, as it was |
//!
//! The archive is an ordinary collection, written here by a second
//! [`Writer`] whose batch carries the chunk's deletions too. Its own writer
//! is lent to the chunk meanwhile (the actors' part), so it is written by
//! one thread at a time, as every collection is. Its validator does not
//! apply (the server writes the envelope), and it may not be capped,
//! time-series, another index's source of archives, nor have a unique
//! index besides `_id` (`check_target`): nothing in it can refuse an
//! envelope and stop the expiry behind it.

use bson::oid::ObjectId;
use bson::rawdoc;

use crate::catalog::CollectionMeta;
use crate::collection::Collection;
use crate::engine::Engine;
use crate::ttl::{self, Chunk, ExpireOutcome, ExpiryPolicy};
use crate::write::Writer;
use ebb_lang::error::{Error, ErrorKind, Result};

/// Where a chunk's documents go, and the time they expire at.
pub struct Archive<'a> {
    pub coll: &'a Collection,
    /// `expiredAt`, in milliseconds.
    pub at_millis: i64,
}

/// What an archiving chunk did.
#[derive(Debug)]
pub struct Archived {
    pub outcome: ExpireOutcome,
    /// The earliest TTL due time among the archive's new entries (the
    /// archive's own TTL index), for the monitor.
    pub earliest_due: Option<i64>,
}

/// Deletes one chunk of expired documents of `coll` and writes each to
/// `archive.coll`, in one batch.
pub fn expire(
    engine: &dyn Engine,
    coll: &Collection,
    chunk: Chunk<'_>,
    policy: &ExpiryPolicy,
    archive: Archive<'_>,
) -> Result<Archived> {
    let after_ms = coll
        .keygen(chunk.index)
        .and_then(|kg| kg.expire_after_secs())
        .unwrap_or(0)
        .saturating_mul(1000);
    let mut writer = Writer::new(engine, archive.coll)?;
    writer.bypass_validation(true);
    let mut taken = ttl::take(engine, coll, chunk, policy, writer.batch_mut())?;
    let ids = Ids::new(archive.at_millis);
    for (n, (doc, date)) in taken.expired().into_iter().enumerate() {
        let envelope = rawdoc! {
            "_id": ids.nth(n),
            "expiredAt": bson::DateTime::from_millis(archive.at_millis),
            "expiredBy": {
                "index": chunk.index,
                "date": bson::DateTime::from_millis(date),
                "due": bson::DateTime::from_millis(date.saturating_add(after_ms)),
            },
            "doc": bson::RawDocumentBuf::from_bytes(doc)?,
        };
        writer.insert(&envelope)?;
    }
    let outcome = taken.commit(engine, coll, || writer.commit(false))?;
    Ok(Archived {
        outcome,
        earliest_due: writer.earliest_due(),
    })
}

/// The `_id`s of a chunk's envelopes. A member applying a chunk from a
/// replica set's log makes them from the entry (its time and index), so
/// every member, and a run again after a crash, makes the same ones;
/// elsewhere they are fresh ObjectIds.
struct Ids {
    from_entry: Option<[u8; 9]>,
}

impl Ids {
    fn new(at_millis: i64) -> Ids {
        let from_entry = ebb_lang::decided::rider().map(|r| {
            let mut head = [0u8; 9];
            head[..4].copy_from_slice(&(at_millis.div_euclid(1000) as u32).to_be_bytes());
            head[4..].copy_from_slice(&r.index.to_be_bytes()[3..]);
            head
        });
        Ids { from_entry }
    }

    fn nth(&self, n: usize) -> ObjectId {
        match self.from_entry {
            None => ObjectId::new(),
            Some(head) => {
                let mut bytes = [0u8; 12];
                bytes[..9].copy_from_slice(&head);
                bytes[9..].copy_from_slice(&(n as u32).to_be_bytes()[1..]);
                ObjectId::from_bytes(bytes)
            }
        }
    }
}

/// Whether a TTL index of `db.source` may archive to `db.target_name`
/// (`target`: that collection's record, `None` while it does not exist; it
/// is then created as an ordinary collection). `others` are the
/// database's collections: an archive cannot archive in turn, and a
/// collection another index archives to cannot be a source. Refused with
/// `CannotCreateIndex` (67), naming why.
pub fn check_target<'a>(
    db: &str,
    source: &str,
    target_name: &str,
    target: Option<&CollectionMeta>,
    mut others: impl Iterator<Item = &'a CollectionMeta>,
) -> Result<()> {
    let refuse = |why: String| {
        Err(Error::new(
            ErrorKind::CannotCreateIndex,
            format!("a TTL index of {db}.{source} cannot archive to {db}.{target_name}: {why}"),
        ))
    };
    if target_name == source {
        return refuse("a collection cannot be its own archive".into());
    }
    if target_name.starts_with("system.") {
        return refuse("system collections cannot be archives".into());
    }
    if let Some(other) = others.find(|o| o.name != source && archives_to(o, source)) {
        return refuse(format!(
            "{source} is the archive of a TTL index of {}, and an archive cannot archive in turn",
            other.name
        ));
    }
    let Some(target) = target else {
        return Ok(());
    };
    if target.options.get("timeseries").is_some() {
        return refuse("it is a time-series collection".into());
    }
    if matches!(target.options.get_bool("capped"), Ok(true)) {
        return refuse("it is a capped collection".into());
    }
    if target.indexes.iter().any(|i| i.archive_to().is_some()) {
        return refuse("it archives what its own TTL index expires".into());
    }
    if let Some(i) = target.indexes.iter().find(|i| i.unique && !i.is_id_index()) {
        return refuse(format!(
            "it has the unique index {}, which could refuse an archived document",
            i.name
        ));
    }
    Ok(())
}

/// Whether a TTL index of `meta` archives to `name` (of its database).
pub fn archives_to(meta: &CollectionMeta, name: &str) -> bool {
    meta.indexes.iter().any(|i| i.archive_to() == Some(name))
}
