//! The change log: what a replica-set member's writes did to documents,
//! one row per document inserted, updated, replaced or deleted, written in
//! the batch that makes the change. Change streams read it.
//!
//! Rows live in the replication `log` family under `o/` ‖ ts ‖ n: `ts` is
//! the entry's place in the set's history (u64 BE: seconds, then the
//! counter within the second), `n` the change's number within its entry
//! (u32 BE). They sort in history order, every member writes the same rows
//! under the same keys (it applies the same entries to the same data), and
//! a snapshot carries them with the data. A document's change is numbered
//! from [`DATA`] on, in the order the entry makes them
//! ([`Rider::next_change`]); its row is committed with it or not at all,
//! and an entry applied again after a crash drops the batches already in,
//! their rows with them: each change has exactly one row.
//!
//! A change to a collection's catalog record (`create`, `createIndexes`,
//! `dropIndexes`, `collMod`: the events of `showExpandedEvents`) has a row
//! under a number below [`DATA`] fixed by its part in the command
//! ([`slot`]), written in the catalog's batch that makes the change. Run
//! again after a crash, a command whose change is in finds nothing to do
//! and writes nothing; one whose change is not writes the same row under
//! the same key. So these rows too are written once, come before the
//! entry's document changes, and leave their numbering alone.
//!
//! Only a member applying an entry writes rows (a standalone keeps none,
//! as mongod keeps no oplog there), and none for time-series collections,
//! whose records are buckets. A row is BSON, ebb's own:
//!
//! | field | |
//! | --- | --- |
//! | `op` | `i` insert, `u` update, `r` replace, `d` delete; for a whole collection `drop`, `rename`, and `dropDatabase`; for its catalog record `create`, `createIndexes`, `dropIndexes`, `modify` |
//! | `db`, `coll`, `ui` | the namespace and the collection's UUID (no `coll` nor `ui` for `dropDatabase`) |
//! | `to` | a rename's new `{db, coll}` |
//! | `key` | the document key, `{_id}` |
//! | `doc` | the document inserted, or the replacement |
//! | `desc` | an update's `updateDescription` |
//! | `before`, `after` | the document before and after, when the collection keeps images (`changeStreamPreAndPostImages`) |
//! | `expired` | a TTL delete's `{index, date, due}`: the index, the indexed date, when it fell due |
//! | `desc` (catalog rows) | the event's `operationDescription` |
//! | `stateBefore` | a `modify`'s `stateBeforeChange` |
//! | `wall` | the primary's clock when it wrote the entry |
//! | `txnNumber`, `lsid` | the transaction whose commit made the change, if one did |

use std::sync::Arc;

use bson::{RawBsonRef, RawDocument, RawDocumentBuf, rawdoc};
use ebb_lang::decided::Rider;
use ebb_lang::update::describe::describe;

use crate::collection::Collection;
use crate::engine::{Batch, Cf, Direction, Engine, KeyRange, first_key};
use ebb_lang::error::Result;

/// Where the rows start in the `log` family.
pub const PREFIX: &[u8] = b"o/";

/// Where the key of the last row trimmed away is kept (the oplog's
/// window, `trim`): a stream that needs that row or an earlier one has
/// lost its history.
pub const TRIMMED: &[u8] = b"o-trimmed";

/// The first number of a document change's row within its entry; the
/// numbers below are the catalog rows' ([`slot`]).
pub const DATA: u32 = 1 << 16;

/// Where a catalog row goes in its entry, by its part in the command: the
/// archive `createIndexes` creates, the collection a command creates, then
/// the command's own changes (the `n`-th of them).
pub mod slot {
    pub const ARCHIVE: u32 = 0;
    pub const CREATE: u32 = 1;
    pub const fn command(n: u32) -> u32 {
        2 + n
    }
}

/// The entry a catalog change applies in, on a replica-set member: the
/// place of its rows (`ts`), the primary's clock (`wall`), and what the
/// collections it creates take their UUIDs from (`seed`, so every member
/// gives them the same).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Applying {
    pub ts: u64,
    pub wall: i64,
    pub seed: [u8; 12],
}

/// A catalog change's row: `op` of collection `meta`, with its
/// `operationDescription` and, for `modify`, its `stateBeforeChange`.
pub fn catalog_row(
    at: &Applying,
    op: &str,
    meta: &crate::catalog::CollectionMeta,
    desc: bson::Document,
    before: Option<bson::Document>,
) -> Result<Vec<u8>> {
    let mut row = bson::doc! {
        "op": op,
        "db": meta.db.as_str(),
        "coll": meta.name.as_str(),
        "ui": meta.uuid.clone(),
        "wall": bson::DateTime::from_millis(at.wall),
        "desc": desc,
    };
    if let Some(before) = before {
        row.insert("stateBefore", before);
    }
    Ok(bson::serialize_to_vec(&row)?)
}

/// A row's key.
pub fn key(ts: u64, n: u32) -> [u8; 14] {
    let mut k = [0u8; 14];
    k[..2].copy_from_slice(PREFIX);
    k[2..10].copy_from_slice(&ts.to_be_bytes());
    k[10..].copy_from_slice(&n.to_be_bytes());
    k
}

/// The `(ts, n)` of a row's key.
pub fn parse_key(key: &[u8]) -> Option<(u64, u32)> {
    let rest = key.strip_prefix(PREFIX)?;
    let ts = u64::from_be_bytes(rest.get(..8)?.try_into().ok()?);
    let n = u32::from_be_bytes(rest.get(8..12)?.try_into().ok()?);
    Some((ts, n))
}

/// The rows from key `first` on.
pub fn rows_from(first: &[u8]) -> KeyRange {
    KeyRange::new(first.to_vec(), all_rows().upper)
}

/// A TTL delete: which index expired the document, its indexed date and
/// when it fell due (millis).
#[derive(Debug, Clone, Copy)]
pub struct Expired<'a> {
    pub index: &'a str,
    pub date: i64,
    pub due: i64,
}

/// The rider of the entry this thread applies, when its changes to
/// `coll` are logged.
pub fn logging(coll: &Collection) -> Option<Arc<Rider>> {
    if coll.timeseries.is_some() {
        return None;
    }
    ebb_lang::decided::rider()
}

/// Whether `coll` keeps the documents before and after each change
/// (`changeStreamPreAndPostImages: {enabled: true}`).
pub fn keeps_images(coll: &Collection) -> bool {
    coll.meta
        .options
        .get_document("changeStreamPreAndPostImages")
        .is_ok_and(|d| matches!(d.get_bool("enabled"), Ok(true)))
}

/// Logs the insert of `doc`.
pub fn inserted(batch: &mut dyn Batch, coll: &Collection, doc: &RawDocument) -> Result<()> {
    let Some(rider) = logging(coll) else {
        return Ok(());
    };
    let mut row = Row::start(coll, "i", &document_key(doc)?, &rider, doc.as_bytes().len());
    row.document("doc", doc);
    put(batch, &rider, &row.finish())
}

/// Logs `before` becoming `after`: a replacement, or an update described
/// field by field.
pub fn updated(
    batch: &mut dyn Batch,
    coll: &Collection,
    before: &RawDocument,
    after: &RawDocument,
    replaced: bool,
) -> Result<()> {
    let Some(rider) = logging(coll) else {
        return Ok(());
    };
    let op = if replaced { "r" } else { "u" };
    let images = keeps_images(coll);
    let room = after.as_bytes().len() * 2 + if images { before.as_bytes().len() } else { 0 };
    let mut row = Row::start(coll, op, &document_key(after)?, &rider, room);
    match replaced {
        true => row.document("doc", after),
        false => row.document("desc", &describe(before, after)?),
    }
    if images {
        row.document("before", before);
        row.document("after", after);
    }
    put(batch, &rider, &row.finish())
}

/// Logs the delete of the document with `_id` `id`; `before` is the
/// document when the deleter has it (it is logged when the collection
/// keeps images), `expired` says what expired a TTL delete.
pub fn deleted(
    batch: &mut dyn Batch,
    coll: &Collection,
    id: RawBsonRef<'_>,
    before: Option<&RawDocument>,
    expired: Option<Expired<'_>>,
) -> Result<()> {
    let Some(rider) = logging(coll) else {
        return Ok(());
    };
    let before = before.filter(|_| keeps_images(coll));
    let room = before.map_or(0, |b| b.as_bytes().len()) + 64;
    let key = rawdoc! { "_id": bson::RawBson::from(id) };
    let mut row = Row::start(coll, "d", &key, &rider, room);
    if let Some(before) = before {
        row.document("before", before);
    }
    if let Some(e) = expired {
        let expired = rawdoc! {
            "index": e.index,
            "date": bson::DateTime::from_millis(e.date),
            "due": bson::DateTime::from_millis(e.due),
        };
        row.document("expired", &expired);
    }
    put(batch, &rider, &row.finish())
}

/// What a command does to a whole collection or database, as a row.
pub enum Whole<'a> {
    Drop {
        coll: &'a Collection,
    },
    Rename {
        coll: &'a Collection,
        to_db: &'a str,
        to_coll: &'a str,
    },
    DropDatabase {
        db: &'a str,
    },
}

/// Logs `changes`, made by the entry `rider` applies, in one batch of
/// their own committed as one of the entry's (a command that drops or
/// renames logs them before it runs: after a crash the entry runs again
/// and does not log them twice).
pub fn log_whole(engine: &dyn Engine, rider: &Arc<Rider>, changes: &[Whole<'_>]) -> Result<()> {
    let mut batch = engine.batch();
    for change in changes {
        let row = match *change {
            Whole::Drop { coll } => rawdoc! {
                "op": "drop",
                "db": coll.meta.db.as_str(),
                "coll": coll.meta.name.as_str(),
                "ui": coll.meta.uuid.clone(),
                "wall": bson::DateTime::from_millis(rider.wall),
            },
            Whole::Rename {
                coll,
                to_db,
                to_coll,
            } => rawdoc! {
                "op": "rename",
                "db": coll.meta.db.as_str(),
                "coll": coll.meta.name.as_str(),
                "ui": coll.meta.uuid.clone(),
                "to": { "db": to_db, "coll": to_coll },
                "wall": bson::DateTime::from_millis(rider.wall),
            },
            Whole::DropDatabase { db } => rawdoc! {
                "op": "dropDatabase",
                "db": db,
                "wall": bson::DateTime::from_millis(rider.wall),
            },
        };
        put(batch.as_mut(), rider, row.as_bytes())?;
    }
    ebb_lang::decided::riding(Some(Arc::clone(rider)), || batch.commit(false))
}

fn document_key(doc: &RawDocument) -> Result<RawDocumentBuf> {
    let id = doc
        .get("_id")?
        .ok_or_else(|| ebb_lang::Error::corrupt("a stored document without _id"))?;
    Ok(rawdoc! { "_id": bson::RawBson::from(id) })
}

/// A document change's row, its BSON written straight into one buffer
/// sized for it (the writer logs one per document it writes: building it
/// field by field grew and copied it several times).
struct Row(Vec<u8>);

impl Row {
    /// The fields every row has, with room for `more` bytes of fields.
    fn start(coll: &Collection, op: &str, key: &RawDocument, rider: &Rider, more: usize) -> Row {
        let (db, name) = (coll.meta.db.as_str(), coll.meta.name.as_str());
        let txn = rider.txn.get();
        let txn_len = txn.map_or(0, |(lsid, _)| 32 + lsid.as_bytes().len());
        let mut row = Row(Vec::with_capacity(
            96 + db.len() + name.len() + key.as_bytes().len() + txn_len + more,
        ));
        row.0.extend_from_slice(&[0; 4]);
        row.string("op", op);
        row.string("db", db);
        row.string("coll", name);
        row.name(0x05, "ui");
        let ui = &coll.meta.uuid;
        row.0
            .extend_from_slice(&(ui.bytes.len() as i32).to_le_bytes());
        row.0.push(u8::from(ui.subtype));
        row.0.extend_from_slice(&ui.bytes);
        row.document("key", key);
        row.name(0x09, "wall");
        row.0.extend_from_slice(&rider.wall.to_le_bytes());
        if let Some((lsid, number)) = txn {
            row.name(0x12, "txnNumber");
            row.0.extend_from_slice(&number.to_le_bytes());
            row.document("lsid", lsid);
        }
        row
    }

    fn name(&mut self, tag: u8, name: &str) {
        self.0.push(tag);
        self.0.extend_from_slice(name.as_bytes());
        self.0.push(0);
    }

    fn string(&mut self, name: &str, value: &str) {
        self.name(0x02, name);
        self.0
            .extend_from_slice(&(value.len() as i32 + 1).to_le_bytes());
        self.0.extend_from_slice(value.as_bytes());
        self.0.push(0);
    }

    fn document(&mut self, name: &str, doc: &RawDocument) {
        self.name(0x03, name);
        self.0.extend_from_slice(doc.as_bytes());
    }

    /// The row's bytes, terminated and with their length.
    fn finish(mut self) -> Vec<u8> {
        self.0.push(0);
        let len = (self.0.len() as i32).to_le_bytes();
        self.0[..4].copy_from_slice(&len);
        self.0
    }
}

/// Puts `row` under the entry's next change number.
fn put(batch: &mut dyn Batch, rider: &Rider, row: &[u8]) -> Result<()> {
    batch.put(Cf::Log, &key(rider.ts, DATA + rider.next_change()), row)
}

/// Every row's key.
fn all_rows() -> KeyRange {
    KeyRange::prefix(PREFIX)
}

/// The log's window: while its rows take more than `max_bytes` (about, as
/// the engine's files say), removes the oldest, but never a row of an entry
/// at or after `keep_from` (a time, as row keys hold it: the minimum
/// retention). One range tombstone removes them, and the key of the last
/// one is kept under [`TRIMMED`]. Returns whether it removed any.
pub fn trim(engine: &dyn Engine, max_bytes: u64, keep_from: u64) -> Result<bool> {
    let total = engine.approximate_size(Cf::Log, all_rows())?;
    if total <= max_bytes {
        return Ok(false);
    }
    let bounds = (
        first_key(engine, Cf::Log, all_rows(), Direction::Forward)?,
        first_key(engine, Cf::Log, all_rows(), Direction::Reverse)?,
    );
    let (Some((oldest, _)), Some((newest, _))) = (
        bounds.0.as_deref().and_then(parse_key),
        bounds.1.as_deref().and_then(parse_key),
    ) else {
        return Ok(false);
    };
    // The oldest entry time whose rows and later ones fit in nine tenths
    // of the window, so it is not trimmed again at every new row.
    let target = max_bytes / 10 * 9;
    let fits = |ts: u64| -> Result<bool> {
        Ok(engine.approximate_size(Cf::Log, rows_from(&key(ts, 0)))? <= target)
    };
    let (mut lo, mut hi) = (oldest, newest.min(keep_from));
    if lo >= hi {
        return Ok(false);
    }
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if fits(mid)? {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    let cut = key(lo, 0);
    let below = KeyRange::new(PREFIX.to_vec(), Some(cut.to_vec()));
    let Some(last_gone) = first_key(engine, Cf::Log, below, Direction::Reverse)? else {
        return Ok(false);
    };
    let mut batch = engine.batch();
    batch.delete_range(Cf::Log, PREFIX, &cut)?;
    batch.put(Cf::Log, TRIMMED, &last_gone)?;
    batch.commit(false)?;
    engine.compact(
        Cf::Log,
        Some(KeyRange::new(PREFIX.to_vec(), Some(cut.to_vec()))),
    )?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::{Row, key, parse_key};

    use super::{PREFIX, TRIMMED, trim};
    use crate::engine::{Cf, Direction, Engine, KeyRange, first_key};

    /// 4,000 rows of 1 KiB that do not compress, one entry each, in the
    /// engine's files.
    fn logged() -> (tempfile::TempDir, crate::engine::rocks::RocksEngine) {
        let (dir, engine) = crate::testing::temp_engine();
        engine.create_cf(Cf::Log).unwrap();
        let mut batch = engine.batch();
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        for ts in 1..=4000u64 {
            let row: Vec<u8> = (0..128)
                .flat_map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    x.to_le_bytes()
                })
                .collect();
            batch.put(Cf::Log, &key(ts, 0), &row).unwrap();
        }
        batch.commit(false).unwrap();
        engine.flush().unwrap();
        (dir, engine)
    }

    fn oldest(engine: &dyn Engine) -> u64 {
        let first = first_key(
            engine,
            Cf::Log,
            KeyRange::prefix(PREFIX),
            Direction::Forward,
        );
        parse_key(&first.unwrap().unwrap()).unwrap().0
    }

    #[test]
    fn the_window_keeps_the_newest_rows_within_its_size_and_says_where_it_cut() {
        let (_dir, engine) = logged();
        assert!(!trim(&engine, 64 << 20, u64::MAX).unwrap(), "fits");
        assert!(trim(&engine, 1 << 20, u64::MAX).unwrap());
        let kept_from = oldest(&engine);
        // About a megabyte of 1 KiB rows is left: between 600 and 1,024.
        assert!((2976..=3400).contains(&kept_from), "kept from {kept_from}");
        let gone = engine.get(Cf::Log, TRIMMED).unwrap().unwrap();
        assert_eq!(parse_key(&gone), Some((kept_from - 1, 0)));
    }

    #[test]
    fn the_minimum_retention_keeps_rows_whatever_their_size() {
        let (_dir, engine) = logged();
        assert!(trim(&engine, 1 << 20, 100).unwrap());
        assert_eq!(oldest(&engine), 100);
        assert!(
            !trim(&engine, 1 << 20, 100).unwrap(),
            "nothing older is left"
        );
    }

    #[test]
    fn a_row_is_the_bson_its_fields_say() {
        use std::sync::Arc;

        use bson::rawdoc;
        use ebb_lang::decided::Rider;

        let meta = crate::testing::meta("c", bson::Document::new(), None, vec![]);
        let coll = crate::Collection::new(meta).unwrap();
        let rider = Arc::new(Rider::new(1, 0, 5, 1_700_000_000_123));
        let doc = rawdoc! { "_id": 7_i64, "x": "y" };
        let mut row = Row::start(&coll, "i", &rawdoc! { "_id": 7_i64 }, &rider, 32);
        row.document("doc", &doc);
        let bytes = row.finish();
        let parsed = bson::RawDocument::from_bytes(&bytes).unwrap();
        assert_eq!(
            parsed,
            &*rawdoc! {
                "op": "i",
                "db": coll.meta.db.as_str(),
                "coll": "c",
                "ui": coll.meta.uuid.clone(),
                "key": { "_id": 7_i64 },
                "wall": bson::DateTime::from_millis(1_700_000_000_123),
                "doc": doc.clone(),
            }
        );
    }

    #[test]
    fn keys_sort_by_time_then_number_and_read_back() {
        let a = key(5 << 32 | 1, 7);
        let b = key(5 << 32 | 2, 0);
        assert!(a < b);
        assert_eq!(parse_key(&a), Some((5 << 32 | 1, 7)));
        assert_eq!(parse_key(b"n/applying"), None);
    }
}
