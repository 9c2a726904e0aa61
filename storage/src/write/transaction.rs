//! A transaction's commit: the documents it wrote, written to their
//! collections in one batch, if nobody changed them since its snapshot.
//!
//! A transaction runs its statements on an overlay of the engine
//! (`crate::engine::overlay`); what it leaves is, per record it wrote,
//! the value the record had in the snapshot and its final value. The
//! commit first checks that each record still holds its snapshot value
//! (first committer wins: otherwise WriteConflict, and nothing is written),
//! then writes each record's changes through the collection's own
//! [`Writer`], so indexes, TTL entries, never-expiring counts and the
//! change log are kept as for any write (not validated again: each
//! statement validated what it wrote, or bypassed validation as it asked). A unique key taken meanwhile by
//! another document is a conflict too. One batch carries every
//! collection's writes: the commit is atomic, and on a replica set every
//! member applies it from the same entry to the same data with the same
//! outcome.

use bson::RawDocument;
use md5::{Digest, Md5};

use crate::collection::Collection;
use crate::engine::Engine;
use crate::write::Writer;
use ebb_lang::error::{Error, ErrorKind, Result};

/// A record's value as the transaction's snapshot held it: its digest,
/// or `None` when it was absent.
pub type Seen = Option<[u8; 16]>;

/// The digest the commit compares a record's value by.
pub fn digest(value: &[u8]) -> [u8; 16] {
    Md5::digest(value).into()
}

/// A record the transaction wrote, as its snapshot held it.
pub struct Expect<'a> {
    /// The collection's position in the commit's list.
    pub coll: usize,
    pub key: &'a [u8],
    pub seen: Seen,
}

/// One write of a record, in the order the transaction made it.
pub struct Change<'a> {
    pub coll: usize,
    pub key: &'a [u8],
    /// The record's new document; `None` deletes it.
    pub doc: Option<&'a RawDocument>,
}

/// WriteConflict, as mongod words it, and why.
pub fn conflict(why: String) -> Error {
    Error::new(
        ErrorKind::WriteConflict,
        format!(
            "WriteConflict error: this operation conflicted with another operation. Please \
             retry your operation or multi-document transaction. ({why})"
        ),
    )
}

/// Applies a transaction's `changes` to `colls` in one batch, after
/// checking `expect`; returns the earliest TTL due time each collection's
/// new entries have, in `colls`' order. Every collection's writer is this
/// caller's while it runs (lent, on the node).
pub fn commit(
    engine: &dyn Engine,
    colls: &[&Collection],
    expect: &[Expect<'_>],
    changes: &[Change<'_>],
) -> Result<Vec<Option<i64>>> {
    for e in expect {
        let coll = colls[e.coll];
        let now = engine.get(coll.records(), e.key)?;
        if now.as_deref().map(digest) != e.seen {
            return Err(conflict(format!(
                "a document of {} changed since the transaction's snapshot",
                coll.ns()
            )));
        }
    }
    // Each statement validated its documents as it ran (or bypassed
    // validation, when it asked to): the replay stores them as they are.
    let mut writers = colls
        .iter()
        .map(|c| {
            let mut w = Writer::new(engine, c)?;
            w.bypass_validation(true);
            Ok(w)
        })
        .collect::<Result<Vec<_>>>()?;
    let mut batch = engine.batch();
    let mut holder: Option<usize> = None;
    for change in changes {
        let w = change.coll;
        if holder != Some(w) {
            if let Some(h) = holder {
                batch = writers[h].swap_batch(engine.batch());
            }
            // The writer's own fresh batch is empty; it goes back unused.
            let _ = writers[w].swap_batch(batch);
            batch = engine.batch();
            holder = Some(w);
        }
        let writer = &mut writers[w];
        let old = writer.get(change.key)?;
        let done = match (old, change.doc) {
            (None, Some(doc)) => writer.insert_keyed(doc, change.key.to_vec()),
            (Some(old), Some(doc)) => writer.replace(change.key, &old, doc),
            (Some(old), None) => writer.remove(change.key, &old),
            (None, None) => Ok(()),
        };
        done.map_err(|e| match e.kind {
            ErrorKind::DuplicateKey => conflict(e.message),
            _ => e,
        })?;
    }
    drop(batch);
    // Every writer adds its counts to the one batch, and the last commits it.
    let last = holder.unwrap_or(0);
    let mut batch = match holder {
        Some(h) => writers[h].swap_batch(engine.batch()),
        None => engine.batch(),
    };
    for (i, writer) in writers.iter_mut().enumerate() {
        if i != last {
            let _ = writer.swap_batch(batch);
            writer.settle()?;
            batch = writer.swap_batch(engine.batch());
        }
    }
    if let Some(writer) = writers.get_mut(last) {
        let _ = writer.swap_batch(batch);
        writer.commit(false)?;
    }
    Ok(writers.iter().map(Writer::earliest_due).collect())
}
