//! TTL expiry on the storage side: one chunk of expired documents deleted
//! in one batch, a whole collection that is entirely due, and the earliest
//! due date of a TTL index.
//!
//! [`expire`] runs on the collection's single writer, so the index entries
//! a chunk scans are current: a document updated to a later date has
//! already left the range, and a document in a partial index passed its
//! filter. Nothing is re-checked and nothing can change between the scan
//! and the delete. [`plan`] does the same reading without the writer and
//! [`apply`] commits its deletions later; the writer applies a plan only if
//! it wrote nothing in between, which keeps the same guarantee.
//!
//! A large chunk writes as few tombstones as the layout allows:
//!
//! - the TTL entries it scanned, `[lower, last]`, are one contiguous key
//!   range holding only entries of documents it deletes: one range
//!   tombstone replaces a point delete per document (and later scans skip
//!   it in one step instead of walking a tombstone per document);
//! - records are clustered by `_id`, and documents that expire together
//!   were usually inserted together (ObjectIds grow with time): when the
//!   records between the chunk's smallest and largest `_id` are exactly its
//!   documents, one range scan reads them and one range tombstone deletes
//!   them; otherwise they are read with a multi-get and deleted one by one;
//! - only the entries of the other indexes are deleted point by point.
//!
//! A small chunk (the writer shrinks chunks while foreground writes are
//! active) deletes point by point instead: every new iterator re-fragments
//! all range tombstones of the mutable memtable, so thousands of small
//! range tombstones would slow every later scan, while a few hundred
//! adjacent point deletes applied in key order cost little.
//!
//! When every document of the collection is due (a cache loaded at once,
//! a batch of sessions that share an expiry time), [`expire_all`] deletes
//! the whole collection with one range tombstone per column family instead
//! of chunks: its cost does not grow with the number of documents beyond
//! counting them. It applies only when the index proves it: the TTL index
//! is neither sparse nor partial, so every document has an entry, and its
//! first and last entries both hold Dates due by the cutoff, so every entry
//! between them does too. The writer offers it only when no rate limit
//! applies and no foreground write arrived lately, and only to collections
//! of up to two million documents, since counting them holds the writer.
//!
//! Point tombstones stay until compaction drops them, and a scan from the
//! start of the Date bracket walks every one of them: under a steady
//! stream of expiries each pass would walk all the tombstones of the
//! passes before it. So an ascending TTL index keeps a [`Floor`]: a key
//! below which its Date bracket is known to hold nothing. A chunk that
//! scanned from the floor raises it past what it deleted; every write that
//! puts an entry lowers it to that entry. Scans and [`earliest_date`] start
//! at the floor. (A descending TTL index keeps its oldest dates at the end
//! of the bracket, where the scan stops, and has no floor.)

use std::collections::HashSet;
use std::sync::Mutex;

use bson::RawDocument;

use crate::engine::{Batch, Cf, Direction, Engine, KeyRange};
use crate::error::Result;
use crate::index::KeyGen;
use crate::keycode;
use crate::write::IndexSet;

/// Chunks at least this large use range tombstones.
const RANGE_DELETE_MIN_DOCS: usize = 512;
/// The largest collection (by the engine's estimate) [`expire_all`] takes.
const WHOLE_COLLECTION_MAX_DOCS: u64 = 2_000_000;

/// Result of one TTL expiry chunk.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct ExpireOutcome {
    pub deleted: u64,
    /// Where the next chunk of this visit resumes (exclusive), when `more`
    /// is set.
    pub resume_after: Option<Vec<u8>>,
    /// Whether expired entries remain beyond this chunk.
    pub more: bool,
}

/// Where the expired entries of an ascending TTL index can start: no key
/// of the Date bracket sorts below it. Unknown (the bracket's start) until
/// a chunk has scanned from the bottom. Lives in the index's `KeyGen`, so a
/// new index set (DDL, collMod) starts unknown again.
#[derive(Debug, Default)]
pub struct Floor(Mutex<Option<Vec<u8>>>);

impl Floor {
    /// A write puts `key` into the index.
    pub fn lower(&self, key: &[u8]) {
        let mut floor = self.0.lock().expect("floor lock");
        if floor.as_deref().is_some_and(|f| key < f) {
            *floor = Some(key.to_vec());
        }
    }

    /// The lowest key that can exist in `[start, ...)`.
    fn base(&self, start: Vec<u8>) -> Vec<u8> {
        match &*self.0.lock().expect("floor lock") {
            Some(f) if *f > start => f.clone(),
            _ => start,
        }
    }

    /// Nothing below `key` is left.
    fn raise(&self, key: Vec<u8>) {
        *self.0.lock().expect("floor lock") = Some(key);
    }
}

/// The lowest key at or above `start` that the index can hold: its floor,
/// when it has one above `start`.
fn lowest_possible(kg: &KeyGen, start: Vec<u8>) -> Vec<u8> {
    match kg.floor() {
        Some(floor) => floor.base(start),
        None => start,
    }
}

/// The smallest key strictly greater than `key`.
fn just_after(key: &[u8]) -> Vec<u8> {
    let mut k = Vec::with_capacity(key.len() + 1);
    k.extend_from_slice(key);
    k.push(0);
    k
}

/// Deletes up to `limit` documents whose entry in TTL index `index_name`
/// holds a Date `<= cutoff_millis`, starting after `resume_after`.
pub fn expire(
    engine: &dyn Engine,
    set: &IndexSet,
    index_name: &str,
    cutoff_millis: i64,
    limit: usize,
    resume_after: Option<&[u8]>,
) -> Result<ExpireOutcome> {
    let mut batch = engine.batch();
    let found = collect(
        engine,
        set,
        index_name,
        cutoff_millis,
        limit,
        resume_after,
        &mut batch,
    )?;
    if !batch.is_empty() {
        batch.commit(false)?;
    }
    Ok(found.finish(set, index_name))
}

/// A chunk read and decided without holding the writer: the deletions it
/// would make, to be applied by the writer only if nothing was written to
/// the collection in between (the caller's check; the plan cannot tell).
#[derive(Debug)]
pub struct Plan {
    index_name: String,
    deletes: Vec<Delete>,
    found: Found,
}

impl Plan {
    /// Documents the plan deletes.
    pub fn docs(&self) -> u64 {
        self.found.deleted
    }
}

/// Reads one chunk like [`expire`] but only records its deletions.
pub fn plan(
    engine: &dyn Engine,
    set: &IndexSet,
    index_name: &str,
    cutoff_millis: i64,
    limit: usize,
    resume_after: Option<&[u8]>,
) -> Result<Plan> {
    let mut deletes = Vec::new();
    let found = collect(
        engine,
        set,
        index_name,
        cutoff_millis,
        limit,
        resume_after,
        &mut deletes,
    )?;
    Ok(Plan {
        index_name: index_name.to_owned(),
        deletes,
        found,
    })
}

/// Applies a [`Plan`] made against this same `set` with no write since.
pub fn apply(engine: &dyn Engine, set: &IndexSet, plan: Plan) -> Result<ExpireOutcome> {
    let mut batch = engine.batch();
    for d in &plan.deletes {
        match d {
            Delete::Key(cf, key) => batch.delete(*cf, key)?,
            Delete::Range(cf, from, to) => batch.delete_range(*cf, from, to)?,
        }
    }
    if !batch.is_empty() {
        batch.commit(false)?;
    }
    Ok(plan.found.finish(set, &plan.index_name))
}

/// One recorded deletion of a [`Plan`].
#[derive(Debug)]
enum Delete {
    Key(Cf, Vec<u8>),
    Range(Cf, Vec<u8>, Vec<u8>),
}

/// Where a chunk puts its deletions: a batch committed at once, or a plan.
trait Sink {
    fn delete(&mut self, cf: Cf, key: &[u8]) -> Result<()>;
    fn delete_range(&mut self, cf: Cf, from: &[u8], to: &[u8]) -> Result<()>;
}

impl Sink for Box<dyn Batch + '_> {
    fn delete(&mut self, cf: Cf, key: &[u8]) -> Result<()> {
        Batch::delete(self.as_mut(), cf, key)
    }
    fn delete_range(&mut self, cf: Cf, from: &[u8], to: &[u8]) -> Result<()> {
        Batch::delete_range(self.as_mut(), cf, from, to)
    }
}

impl Sink for Vec<Delete> {
    fn delete(&mut self, cf: Cf, key: &[u8]) -> Result<()> {
        self.push(Delete::Key(cf, key.to_vec()));
        Ok(())
    }
    fn delete_range(&mut self, cf: Cf, from: &[u8], to: &[u8]) -> Result<()> {
        self.push(Delete::Range(cf, from.to_vec(), to.to_vec()));
        Ok(())
    }
}

/// What a chunk found, beyond its deletions.
#[derive(Debug, Default)]
struct Found {
    deleted: u64,
    last: Option<Vec<u8>>,
    more: bool,
    /// Where the index's floor goes once the deletions are applied.
    raise: Option<Vec<u8>>,
}

impl Found {
    /// Called once the deletions are committed.
    fn finish(self, set: &IndexSet, index_name: &str) -> ExpireOutcome {
        if let (Some(key), Some(floor)) =
            (self.raise, set.keygen(index_name).and_then(KeyGen::floor))
        {
            floor.raise(key);
        }
        ExpireOutcome {
            deleted: self.deleted,
            resume_after: self.last,
            more: self.more,
        }
    }
}

/// Scans one chunk and puts its deletions into `out`.
fn collect(
    engine: &dyn Engine,
    set: &IndexSet,
    index_name: &str,
    cutoff_millis: i64,
    limit: usize,
    resume_after: Option<&[u8]>,
    out: &mut dyn Sink,
) -> Result<Found> {
    let Some(ttl) = set.keygen(index_name) else {
        // Dropped since the monitor looked: nothing to do.
        return Ok(Found::default());
    };
    let (start, end) = keycode::date_range_up_to(cutoff_millis, ttl.leading_descending());
    let base = lowest_possible(ttl, start);
    let lower = match resume_after {
        Some(after) if after >= base.as_slice() => just_after(after),
        _ => base.clone(),
    };
    let from_bottom = lower == base;
    if lower >= end {
        return Ok(Found::default());
    }

    // The chunk: up to `limit` distinct documents from the TTL range.
    let mut cursor = engine.cursor(
        Cf::Id(ttl.cf),
        KeyRange::new(lower.clone(), Some(end.clone())),
        Direction::Forward,
    )?;
    let mut ids: Vec<Vec<u8>> = Vec::with_capacity(limit.min(4096));
    let mut seen: HashSet<Vec<u8>> = HashSet::with_capacity(limit.min(4096));
    let mut last = None;
    while cursor.valid() && ids.len() < limit.max(1) {
        let id = ttl.id_suffix(cursor.key())?;
        // A multikey document appears once per date in the range.
        if !seen.contains(id) {
            seen.insert(id.to_vec());
            ids.push(id.to_vec());
        }
        last = Some(cursor.key().to_vec());
        cursor.advance();
    }
    let more = cursor.valid();
    cursor.status()?;
    drop(cursor);
    let has_floor = from_bottom && ttl.floor().is_some();
    let Some(last) = last else {
        return Ok(Found {
            raise: has_floor.then_some(end),
            ..Found::default()
        });
    };

    let ranged = ids.len() >= RANGE_DELETE_MIN_DOCS;
    let docs = read_and_delete_records(engine, set, &ids, ranged, out)?;
    let ttl_upper = just_after(&last);
    if ranged {
        out.delete_range(Cf::Id(ttl.cf), &lower, &ttl_upper)?;
    }
    let mut entries = Vec::new();
    for (id, doc) in &docs {
        let doc = RawDocument::from_bytes(doc)?;
        for kg in &set.keygens {
            entries.clear();
            kg.keys(doc, id, &mut entries)?;
            for e in &entries {
                let covered = ranged
                    && kg.cf == ttl.cf
                    && e.as_slice() >= lower.as_slice()
                    && e.as_slice() < ttl_upper.as_slice();
                if !covered {
                    out.delete(Cf::Id(kg.cf), e)?;
                }
            }
        }
    }
    Ok(Found {
        deleted: docs.len() as u64,
        raise: has_floor.then_some(if more { ttl_upper } else { end }),
        last: Some(last),
        more,
    })
}

/// Deletes every document of the collection when every one of them is due
/// by TTL index `index_name` at `cutoff_millis` (see the module doc);
/// returns how many went, or `None` (and deletes nothing) when that cannot
/// be proven from the index's first and last entries.
pub fn expire_all(
    engine: &dyn Engine,
    set: &IndexSet,
    index_name: &str,
    cutoff_millis: i64,
) -> Result<Option<u64>> {
    let Some(ttl) = set.keygen(index_name) else {
        return Ok(None);
    };
    if !ttl.indexes_every_document() {
        return Ok(None);
    }
    let (start, end) = keycode::date_range_up_to(cutoff_millis, ttl.leading_descending());
    let cf = Cf::Id(ttl.cf);
    let below = KeyRange::new(Vec::new(), Some(start));
    if edge(engine, cf, below, Direction::Forward)?.is_some() {
        return Ok(None);
    }
    match edge(engine, cf, KeyRange::all(), Direction::Reverse)? {
        Some(last) if last < end => {}
        _ => return Ok(None),
    }

    // Counting holds the writer (about 0.2 s per million documents here):
    // beyond this size chunks keep a foreground write from waiting long.
    if engine.stats(set.records())?.estimated_keys > WHOLE_COLLECTION_MAX_DOCS {
        return Ok(None);
    }
    // Nothing else writes while this runs (single writer), so the count is
    // exactly what the range tombstones below remove.
    let count = engine.count(set.records(), KeyRange::all())?;
    let mut batch = engine.batch();
    for cf in std::iter::once(set.records()).chain(set.keygens.iter().map(|kg| Cf::Id(kg.cf))) {
        if let Some(last) = edge(engine, cf, KeyRange::all(), Direction::Reverse)? {
            batch.delete_range(cf, &[], &just_after(&last))?;
        }
    }
    batch.commit(false)?;
    if let Some(floor) = ttl.floor() {
        floor.raise(end);
    }
    Ok(Some(count))
}

/// The first key of `range` in direction `dir`.
fn edge(engine: &dyn Engine, cf: Cf, range: KeyRange, dir: Direction) -> Result<Option<Vec<u8>>> {
    let cursor = engine.cursor(cf, range, dir)?;
    let key = cursor.valid().then(|| cursor.key().to_vec());
    cursor.status()?;
    Ok(key)
}

/// Reads the records of `ids` and adds their deletion to `batch`: one range
/// scan when they are adjacent in the records family (one range tombstone
/// too when `ranged`), a multi-get otherwise.
fn read_and_delete_records(
    engine: &dyn Engine,
    set: &IndexSet,
    ids: &[Vec<u8>],
    ranged: bool,
    batch: &mut dyn Sink,
) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
    let (Some(first), Some(last)) = (ids.iter().min(), ids.iter().max()) else {
        return Ok(Vec::new());
    };
    let upper = just_after(last);
    let mut cursor = engine.cursor(
        set.records(),
        KeyRange::new(first.clone(), Some(upper.clone())),
        Direction::Forward,
    )?;
    let mut docs = Vec::with_capacity(ids.len());
    while cursor.valid() && docs.len() <= ids.len() {
        docs.push((cursor.key().to_vec(), cursor.value().to_vec()));
        cursor.advance();
    }
    cursor.status()?;
    drop(cursor);
    // Every id is in the range and ids are distinct, so the range holds
    // exactly them when it holds as many records as there are ids.
    if docs.len() == ids.len() {
        if ranged {
            batch.delete_range(set.records(), first, &upper)?;
        } else {
            for (id, _) in &docs {
                batch.delete(set.records(), id)?;
            }
        }
        return Ok(docs);
    }
    let values = engine.multi_get(set.records(), ids)?;
    let mut docs = Vec::with_capacity(ids.len());
    for (id, value) in ids.iter().zip(values) {
        if let Some(value) = value {
            batch.delete(set.records(), id)?;
            docs.push((id.clone(), value));
        }
    }
    Ok(docs)
}

/// The earliest Date in a TTL index (its first entry in the Date bracket),
/// for scheduling the next wake-up.
pub fn earliest_date(engine: &dyn Engine, set: &IndexSet, index_name: &str) -> Result<Option<i64>> {
    let Some(kg) = set.keygen(index_name) else {
        return Ok(None);
    };
    let descending = kg.leading_descending();
    let (start, end) = keycode::date_range_up_to(i64::MAX, descending);
    let start = lowest_possible(kg, start);
    if start >= end {
        return Ok(None);
    }
    // Inverted bytes put the oldest date of a descending index last.
    let dir = if descending {
        Direction::Reverse
    } else {
        Direction::Forward
    };
    let first = edge(engine, Cf::Id(kg.cf), KeyRange::new(start, Some(end)), dir)?;
    Ok(first.and_then(|key| keycode::leading_date(&key, descending)))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use bson::{Bson, DateTime, doc, rawdoc};

    use super::*;
    use crate::catalog::{CollectionMeta, IndexMeta};
    use crate::engine::rocks::{RocksEngine, RocksOptions};
    use crate::ops;

    fn setup() -> (tempfile::TempDir, RocksEngine, Arc<IndexSet>) {
        setup_with(|_| {})
    }

    /// Records in family 10, TTL index `at_1` (shaped by `ttl`) in 11,
    /// plain index `k_1` in 12.
    fn setup_with(
        ttl: impl FnOnce(&mut IndexMeta),
    ) -> (tempfile::TempDir, RocksEngine, Arc<IndexSet>) {
        let dir = tempfile::tempdir().unwrap();
        let engine = RocksEngine::open(&RocksOptions {
            path: dir.path().to_path_buf(),
            block_cache_bytes: 1 << 20,
            write_buffer_bytes: 4 << 20,
        })
        .unwrap();
        let index = |id, name: &str, key| IndexMeta {
            id,
            name: name.into(),
            key,
            unique: false,
            ..CollectionMeta::id_index(0)
        };
        let mut ttl_index = index(11, "at_1", doc! { "at": 1 });
        ttl_index.expire_after_seconds = Some(0);
        ttl(&mut ttl_index);
        let meta = CollectionMeta {
            id: 10,
            db: "t".into(),
            name: "c".into(),
            uuid: bson::Binary {
                subtype: bson::spec::BinarySubtype::Uuid,
                bytes: vec![0; 16],
            },
            options: doc! {},
            indexes: vec![
                CollectionMeta::id_index(10),
                ttl_index,
                index(12, "k_1", doc! { "k": 1 }),
            ],
        };
        for cf in [10, 11, 12] {
            engine.create_cf(Cf::Id(cf)).unwrap();
        }
        (dir, engine, IndexSet::new(meta).unwrap())
    }

    fn keys(engine: &RocksEngine, cf: u64) -> usize {
        let mut c = engine
            .cursor(Cf::Id(cf), KeyRange::all(), Direction::Forward)
            .unwrap();
        let mut n = 0;
        while c.valid() {
            n += 1;
            c.advance();
        }
        n
    }

    fn ids(engine: &RocksEngine) -> Vec<i32> {
        let mut c = engine
            .cursor(Cf::Id(10), KeyRange::all(), Direction::Forward)
            .unwrap();
        let mut out = Vec::new();
        while c.valid() {
            out.push(
                RawDocument::from_bytes(c.value())
                    .unwrap()
                    .get_i32("_id")
                    .unwrap(),
            );
            c.advance();
        }
        out
    }

    fn at(ms: i64) -> Bson {
        Bson::DateTime(DateTime::from_millis(ms))
    }

    #[test]
    fn the_floor_skips_what_was_deleted_but_never_what_a_write_puts_below_it() {
        let (_d, engine, set) = setup();
        let dated =
            |id: i32, ms: i64| rawdoc! { "_id": id, "at": DateTime::from_millis(ms), "k": id };
        ops::insert(
            &engine,
            &set,
            (0..5).map(|i| dated(i, 100 + i as i64)).collect(),
            true,
        )
        .unwrap();
        ops::insert(&engine, &set, vec![dated(9, 900)], true).unwrap();
        // A visit in two chunks: the first scanned from the bottom and
        // raises the floor past what it deleted.
        let out = expire(&engine, &set, "at_1", 500, 3, None).unwrap();
        assert_eq!((out.deleted, out.more), (3, true));
        let out = expire(&engine, &set, "at_1", 500, 3, out.resume_after.as_deref()).unwrap();
        assert_eq!((out.deleted, out.more), (2, false));
        assert_eq!(earliest_date(&engine, &set, "at_1").unwrap(), Some(900));
        // Documents dated below the floor are written later: the next scan
        // and the earliest date still see them.
        ops::insert(&engine, &set, vec![dated(20, 50), dated(21, 60)], true).unwrap();
        assert_eq!(earliest_date(&engine, &set, "at_1").unwrap(), Some(50));
        let out = expire(&engine, &set, "at_1", 500, 1000, None).unwrap();
        assert_eq!((out.deleted, out.more), (2, false));
        assert_eq!(ids(&engine), vec![9]);
        // After an empty scan up to a cutoff, a later write below it counts.
        assert_eq!(
            expire(&engine, &set, "at_1", 500, 1000, None)
                .unwrap()
                .deleted,
            0
        );
        ops::insert(&engine, &set, vec![dated(30, 400)], true).unwrap();
        assert_eq!(earliest_date(&engine, &set, "at_1").unwrap(), Some(400));
        assert_eq!(
            expire(&engine, &set, "at_1", 500, 1000, None)
                .unwrap()
                .deleted,
            1
        );
        assert_eq!(ids(&engine), vec![9]);
        // An update that moves a date below the floor counts too.
        let mut w = crate::write::Writer::new(&engine, &set);
        let id_key = keycode::encode_key(bson::RawBsonRef::Int32(9));
        w.replace(&id_key, &dated(9, 900), &dated(9, 300)).unwrap();
        w.commit(false).unwrap();
        assert_eq!(earliest_date(&engine, &set, "at_1").unwrap(), Some(300));
        assert_eq!(
            expire(&engine, &set, "at_1", 500, 1000, None)
                .unwrap()
                .deleted,
            1
        );
        assert_eq!(ids(&engine), Vec::<i32>::new());
        assert_eq!(keys(&engine, 11), 0);
        assert_eq!(keys(&engine, 12), 0);
    }

    fn insert(engine: &RocksEngine, set: &IndexSet, docs: Vec<bson::Document>) {
        let raw = docs
            .iter()
            .map(|d| bson::RawDocumentBuf::try_from(d).unwrap())
            .collect();
        ops::insert(engine, set, raw, true).unwrap();
    }

    fn all_keys(engine: &RocksEngine) -> (usize, usize, usize) {
        (keys(engine, 10), keys(engine, 11), keys(engine, 12))
    }

    #[test]
    fn a_collection_entirely_due_goes_at_once_and_later_writes_are_kept() {
        let (_d, engine, set) = setup();
        insert(
            &engine,
            &set,
            (0..10)
                .map(|i| doc! { "_id": i, "at": at(100 - i64::from(i)), "k": i % 3 })
                .collect(),
        );
        assert_eq!(expire_all(&engine, &set, "at_1", 100).unwrap(), Some(10));
        assert_eq!(all_keys(&engine), (0, 0, 0));
        // A write after the range tombstones is visible, expires normally,
        // and is seen below the raised floor.
        insert(
            &engine,
            &set,
            vec![
                doc! { "_id": 0, "at": at(5_000), "k": 1 },
                doc! { "_id": 1, "at": at(50), "k": 1 },
            ],
        );
        assert_eq!(ids(&engine), [0, 1]);
        assert_eq!(all_keys(&engine), (2, 2, 2));
        assert_eq!(earliest_date(&engine, &set, "at_1").unwrap(), Some(50));
        assert_eq!(expire_all(&engine, &set, "at_1", 100).unwrap(), None);
        assert_eq!(
            expire(&engine, &set, "at_1", 100, 1000, None)
                .unwrap()
                .deleted,
            1
        );
        assert_eq!(ids(&engine), [0]);
    }

    #[test]
    fn one_document_not_provably_due_keeps_the_collection_whole() {
        let not_due = [
            doc! { "_id": 99, "at": at(5_000), "k": 0 },
            doc! { "_id": 99, "k": 0 },
            doc! { "_id": 99, "at": "soon", "k": 0 },
            doc! { "_id": 99, "at": [at(100), at(5_000)], "k": 0 },
            doc! { "_id": 99, "at": [at(100), 7], "k": 0 },
        ];
        for odd in not_due {
            let (_d, engine, set) = setup();
            let mut docs: Vec<_> = (0..5)
                .map(|i| doc! { "_id": i, "at": at(100), "k": i })
                .collect();
            docs.push(odd.clone());
            insert(&engine, &set, docs);
            let before = all_keys(&engine);
            assert_eq!(
                expire_all(&engine, &set, "at_1", 100).unwrap(),
                None,
                "{odd}"
            );
            assert_eq!(all_keys(&engine), before, "{odd}");
            // The chunked path still takes what is due: the array with a
            // due date included, as MongoDB expires at the earliest date.
            let out = expire(&engine, &set, "at_1", 100, 1000, None).unwrap();
            let array = odd.get_array("at").is_ok();
            assert_eq!(out.deleted, if array { 6 } else { 5 }, "{odd}");
        }
    }

    #[test]
    fn sparse_and_partial_ttl_indexes_never_take_the_whole_collection() {
        let sparse = |m: &mut IndexMeta| m.sparse = true;
        let partial = |m: &mut IndexMeta| m.partial_filter = Some(doc! { "k": { "$gte": 0 } });
        for (name, shape) in [
            ("sparse", &sparse as &dyn Fn(&mut IndexMeta)),
            ("partial", &partial),
        ] {
            let (_d, engine, set) = setup_with(shape);
            // Every document the index holds is due, but one it skips is
            // not in it at all.
            insert(
                &engine,
                &set,
                vec![
                    doc! { "_id": 1, "at": at(100), "k": 1 },
                    doc! { "_id": 2, "k": -1 },
                ],
            );
            assert_eq!(
                expire_all(&engine, &set, "at_1", 100).unwrap(),
                None,
                "{name}"
            );
            assert_eq!(
                expire(&engine, &set, "at_1", 100, 1000, None)
                    .unwrap()
                    .deleted,
                1
            );
            assert_eq!(ids(&engine), [2], "{name}");
        }
    }

    #[test]
    fn a_descending_ttl_index_takes_the_whole_collection_too() {
        let (_d, engine, set) = setup_with(|m| m.key = doc! { "at": -1 });
        insert(
            &engine,
            &set,
            (0..4)
                .map(|i| doc! { "_id": i, "at": at(10 * i64::from(i)), "k": i })
                .collect(),
        );
        assert_eq!(expire_all(&engine, &set, "at_1", 20).unwrap(), None);
        assert_eq!(expire_all(&engine, &set, "at_1", 30).unwrap(), Some(4));
        assert_eq!(all_keys(&engine), (0, 0, 0));
    }

    #[test]
    fn a_plan_deletes_nothing_until_applied_then_what_expire_would() {
        let (_d, engine, set) = setup();
        insert(
            &engine,
            &set,
            (0..6)
                .map(|i| doc! { "_id": i, "at": at(100 + i64::from(i)), "k": i % 2 })
                .collect(),
        );
        let plan = super::plan(&engine, &set, "at_1", 103, 3, None).unwrap();
        assert_eq!(plan.docs(), 3);
        assert_eq!(all_keys(&engine), (6, 6, 6), "planning writes nothing");
        let out = apply(&engine, &set, plan).unwrap();
        assert_eq!((out.deleted, out.more), (3, true));
        assert_eq!(ids(&engine), [3, 4, 5]);
        assert_eq!(all_keys(&engine), (3, 3, 3));
        // The floor moved with the applied plan, as `expire` moves it.
        let rest = expire(&engine, &set, "at_1", 103, 10, out.resume_after.as_deref()).unwrap();
        assert_eq!((rest.deleted, rest.more), (1, false));
        assert_eq!(earliest_date(&engine, &set, "at_1").unwrap(), Some(104));
    }

    #[test]
    fn adjacent_expired_records_go_with_every_index_entry() {
        let (_d, engine, set) = setup();
        let docs = (0..10)
            .map(|i| rawdoc! { "_id": i, "at": DateTime::from_millis(100), "k": i % 3 })
            .collect();
        ops::insert(&engine, &set, docs, true).unwrap();
        let out = expire(&engine, &set, "at_1", 100, 1000, None).unwrap();
        assert_eq!((out.deleted, out.more), (10, false));
        assert_eq!(
            (keys(&engine, 10), keys(&engine, 11), keys(&engine, 12)),
            (0, 0, 0)
        );
    }

    #[test]
    fn interleaved_live_records_survive_with_their_entries() {
        let (_d, engine, set) = setup();
        let docs = (0..10)
            .map(|i| {
                let when = if i % 2 == 0 { at(100) } else { at(10_000) };
                bson::RawDocumentBuf::try_from(&doc! { "_id": i, "at": when, "k": i }).unwrap()
            })
            .collect();
        ops::insert(&engine, &set, docs, true).unwrap();
        let out = expire(&engine, &set, "at_1", 100, 1000, None).unwrap();
        assert_eq!(out.deleted, 5);
        assert_eq!(ids(&engine), [1, 3, 5, 7, 9]);
        assert_eq!((keys(&engine, 11), keys(&engine, 12)), (5, 5));
    }

    #[test]
    fn a_multikey_document_loses_its_later_dates_too() {
        let (_d, engine, set) = setup();
        let doc = bson::RawDocumentBuf::try_from(
            &doc! { "_id": 1, "at": [at(10_000), at(100), at(100)], "k": 1 },
        )
        .unwrap();
        let live =
            bson::RawDocumentBuf::try_from(&doc! { "_id": 2, "at": at(5_000), "k": 2 }).unwrap();
        ops::insert(&engine, &set, vec![doc, live], true).unwrap();
        let out = expire(&engine, &set, "at_1", 100, 1000, None).unwrap();
        assert_eq!(out.deleted, 1);
        assert_eq!(ids(&engine), [2]);
        assert_eq!(
            keys(&engine, 11),
            1,
            "only the live document's entry is left"
        );
    }

    #[test]
    fn chunks_resume_after_the_last_key() {
        let (_d, engine, set) = setup();
        let docs = (0..10)
            .map(|i| rawdoc! { "_id": i, "at": DateTime::from_millis(i64::from(i)), "k": 0 })
            .collect();
        ops::insert(&engine, &set, docs, true).unwrap();
        let first = expire(&engine, &set, "at_1", 100, 4, None).unwrap();
        assert_eq!((first.deleted, first.more), (4, true));
        let second = expire(&engine, &set, "at_1", 100, 4, first.resume_after.as_deref()).unwrap();
        assert_eq!((second.deleted, second.more), (4, true));
        let third = expire(
            &engine,
            &set,
            "at_1",
            100,
            4,
            second.resume_after.as_deref(),
        )
        .unwrap();
        assert_eq!((third.deleted, third.more), (2, false));
        assert_eq!(keys(&engine, 10) + keys(&engine, 11) + keys(&engine, 12), 0);
        assert_eq!(earliest_date(&engine, &set, "at_1").unwrap(), None);
    }
}
