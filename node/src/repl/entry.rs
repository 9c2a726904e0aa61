//! A log entry as the node writes it, one of two kinds:
//!
//! - a write command, the database it was sent to, and what the primary
//!   decided for it (`Decided`: its time, the seed of the ObjectIds it
//!   makes, whether due documents were hidden from it),
//!   `{db, command, at, ids, hides}`;
//! - a TTL chunk the primary's monitor sent, `{expire: {db, collection,
//!   index, cutoff, limit, after}}`: up to `limit` documents whose entry
//!   in TTL index `index` is at most `cutoff` (millis), after key `after`.
//!   It names no time to read: every member deletes what it names from the
//!   same data;
//! - a no-op, `{noop: msg}`, that only moves the set's time on: a new
//!   primary's first entry, and a primary's periodic one when nothing was
//!   written for a while, so secondaries' `lastWrite` stays fresh.
//!
//! Every entry carries the primary's wall time (`Proposal::at_millis`):
//! the timestamp of its oplog time is made from it.

use bson::{RawBsonRef, RawDocument, RawDocumentBuf, rawdoc};
use ebb_actors::collection::ExpireChunk;
use ebb_lang::decided::{Decided, Seed};
use ebb_repl::Proposal;

fn binary(bytes: &[u8]) -> bson::Binary {
    bson::Binary {
        subtype: bson::spec::BinarySubtype::Generic,
        bytes: bytes.to_vec(),
    }
}

/// The entry that carries `command`, sent to `db`, as decided.
pub fn write(db: &str, command: RawDocumentBuf, decided: Decided) -> Proposal {
    let entry = rawdoc! {
        "db": db,
        "command": command,
        "at": decided.at,
        "ids": binary(&decided.ids.bytes()),
        "hides": decided.hides,
    };
    Proposal {
        bytes: entry.into_bytes(),
        at_millis: decided.at.timestamp_millis(),
    }
}

/// The no-op entry with message `msg`, written at `at_millis`.
pub fn noop(msg: &str, at_millis: i64) -> Proposal {
    Proposal {
        bytes: rawdoc! { "noop": msg }.into_bytes(),
        at_millis,
    }
}

/// The entry that runs TTL chunk `chunk` of `db.collection`, sent at
/// `at_millis`.
pub fn expire(db: &str, collection: &str, chunk: &ExpireChunk, at_millis: i64) -> Proposal {
    let after = match &chunk.resume_after {
        Some(key) => bson::RawBson::Binary(binary(key)),
        None => bson::RawBson::Null,
    };
    let entry = rawdoc! {
        "expire": {
            "db": db,
            "collection": collection,
            "index": chunk.index.as_str(),
            "cutoff": chunk.cutoff_millis,
            "limit": chunk.limit as i64,
            "after": after,
        }
    };
    Proposal {
        bytes: entry.into_bytes(),
        at_millis,
    }
}

/// What an entry says.
pub enum Entry<'a> {
    /// A write command: its database, the command and its decisions.
    Write {
        db: &'a str,
        command: &'a RawDocument,
        decided: Decided,
    },
    /// A TTL chunk of `db.collection`.
    Expire {
        db: &'a str,
        collection: &'a str,
        chunk: ExpireChunk,
    },
    /// Nothing to apply.
    Noop,
}

/// Reads an entry [`write`] or [`expire`] wrote.
pub fn read(entry: &RawDocument) -> Option<Entry<'_>> {
    if entry.get_str("noop").is_ok() {
        return Some(Entry::Noop);
    }
    if let Ok(expire) = entry.get_document("expire") {
        let resume_after = match expire.get("after").ok()?? {
            RawBsonRef::Binary(b) => Some(b.bytes.to_vec()),
            _ => None,
        };
        let limit = usize::try_from(expire.get_i64("limit").ok()?).ok()?;
        return Some(Entry::Expire {
            db: expire.get_str("db").ok()?,
            collection: expire.get_str("collection").ok()?,
            chunk: ExpireChunk {
                index: expire.get_str("index").ok()?.to_owned(),
                cutoff_millis: expire.get_i64("cutoff").ok()?,
                limit,
                resume_after,
                whole: false,
                prompt: false,
                behind: false,
                throttle: false,
                next_limit: limit,
                logged: true,
                rider: None,
            },
        });
    }
    let ids: [u8; 12] = entry.get_binary("ids").ok()?.bytes.try_into().ok()?;
    Some(Entry::Write {
        db: entry.get_str("db").ok()?,
        command: entry.get_document("command").ok()?,
        decided: Decided {
            at: entry.get_datetime("at").ok()?,
            ids: Seed::from_bytes(ids),
            hides: entry.get_bool("hides").ok()?,
            rider: None,
        },
    })
}
