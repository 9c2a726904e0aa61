//! Storage-level TTL tests on a real RocksDB in a temp dir: chunks, the
//! floor, plans, whole-collection expiry and the earliest due Date.

use std::sync::Arc;

use bson::{Bson, DateTime, doc, rawdoc};

use bson::RawDocument;

use super::{ExpireOutcome, ExpiryPolicy, earliest_date};
use crate::catalog::{CollectionMeta, IndexMeta};
use crate::collection::Collection;
use crate::engine::rocks::RocksEngine;
use crate::engine::{Cf, Direction, Engine, KeyRange};
use crate::statement as ops;
use ebb_lang::encoding::keycode;
use ebb_lang::error::Result;

fn chunk<'a>(
    index: &'a str,
    cutoff_millis: i64,
    limit: usize,
    resume_after: Option<&'a [u8]>,
) -> super::Chunk<'a> {
    super::Chunk {
        index,
        cutoff_millis,
        limit,
        resume_after,
    }
}

/// One chunk with the default policy, then the sweep: every entry of the
/// documents it deleted is gone (`sweep_tests` looks at what lies between).
fn expire(
    engine: &dyn Engine,
    coll: &Collection,
    index: &str,
    cutoff_millis: i64,
    limit: usize,
    resume_after: Option<&[u8]>,
) -> Result<ExpireOutcome> {
    let out = super::expire(
        engine,
        coll,
        chunk(index, cutoff_millis, limit, resume_after),
        &ExpiryPolicy::default(),
    )?;
    super::sweep(engine, coll)?;
    Ok(out)
}

/// Chunks of at most `limit` documents, each resuming where the last
/// stopped, until nothing due by `cutoff_millis` is left.
fn expire_chunk_by_chunk(
    engine: &dyn Engine,
    coll: &Collection,
    index: &str,
    cutoff_millis: i64,
    limit: usize,
) {
    let mut resume = None;
    loop {
        let out = expire(engine, coll, index, cutoff_millis, limit, resume.as_deref()).unwrap();
        resume = out.resume_after;
        if !out.more {
            break;
        }
    }
}

/// A plan of one chunk with the default policy.
fn plan(
    engine: &dyn Engine,
    coll: &Collection,
    index: &str,
    cutoff_millis: i64,
    limit: usize,
    resume_after: Option<&[u8]>,
) -> Result<super::Plan> {
    super::plan(
        engine,
        coll,
        chunk(index, cutoff_millis, limit, resume_after),
        &ExpiryPolicy::default(),
    )
}

/// Applies a plan, then the sweep (as [`expire`]).
fn apply(engine: &dyn Engine, coll: &Collection, plan: super::Plan) -> Result<ExpireOutcome> {
    let out = super::apply(engine, coll, plan)?;
    super::sweep(engine, coll)?;
    Ok(out)
}

/// Whole-collection expiry with the default policy.
fn expire_all(
    engine: &dyn Engine,
    coll: &Collection,
    index: &str,
    cutoff_millis: i64,
) -> Result<Option<u64>> {
    Ok(
        super::expire_all(engine, coll, index, cutoff_millis, &ExpiryPolicy::default())?
            .map(|out| out.deleted),
    )
}

pub(crate) fn setup() -> (tempfile::TempDir, RocksEngine, Arc<Collection>) {
    setup_with(|_| {})
}

/// Records in family 10, TTL index `at_1` (shaped by `ttl`) in 11,
/// plain index `k_1` in 12.
fn setup_with(
    ttl: impl FnOnce(&mut IndexMeta),
) -> (tempfile::TempDir, RocksEngine, Arc<Collection>) {
    let (dir, engine) = crate::testing::temp_engine();
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
    let indexes = vec![
        CollectionMeta::id_index(10),
        ttl_index,
        index(12, "k_1", doc! { "k": 1 }),
    ];
    let meta = crate::testing::meta("c", doc! {}, None, indexes);
    for cf in [10, 11, 12] {
        engine.create_cf(Cf::Id(cf)).unwrap();
    }
    (dir, engine, Collection::new(meta).unwrap())
}

pub(super) fn keys(engine: &RocksEngine, cf: u64) -> usize {
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

pub(super) fn ids(engine: &RocksEngine) -> Vec<i32> {
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

pub(crate) fn at(ms: i64) -> Bson {
    Bson::DateTime(DateTime::from_millis(ms))
}

#[test]
fn the_floor_skips_what_was_deleted_but_never_what_a_write_puts_below_it() {
    let (_d, engine, coll) = setup();
    let dated = |id: i32, ms: i64| rawdoc! { "_id": id, "at": DateTime::from_millis(ms), "k": id };
    ops::insert(
        &engine,
        &coll,
        (0..5).map(|i| dated(i, 100 + i as i64)).collect(),
        true,
    )
    .unwrap();
    ops::insert(&engine, &coll, vec![dated(9, 900)], true).unwrap();
    // A visit in two chunks: the first scanned from the bottom and
    // raises the floor past what it deleted.
    let out = expire(&engine, &coll, "at_1", 500, 3, None).unwrap();
    assert_eq!((out.deleted, out.more), (3, true));
    let out = expire(&engine, &coll, "at_1", 500, 3, out.resume_after.as_deref()).unwrap();
    assert_eq!((out.deleted, out.more), (2, false));
    assert_eq!(earliest_date(&engine, &coll, "at_1").unwrap(), Some(900));
    // Documents dated below the floor are written later: the next scan
    // and the earliest date still see them.
    ops::insert(&engine, &coll, vec![dated(20, 50), dated(21, 60)], true).unwrap();
    assert_eq!(earliest_date(&engine, &coll, "at_1").unwrap(), Some(50));
    let out = expire(&engine, &coll, "at_1", 500, 1000, None).unwrap();
    assert_eq!((out.deleted, out.more), (2, false));
    assert_eq!(ids(&engine), vec![9]);
    // After an empty scan up to a cutoff, a later write below it counts.
    assert_eq!(
        expire(&engine, &coll, "at_1", 500, 1000, None)
            .unwrap()
            .deleted,
        0
    );
    ops::insert(&engine, &coll, vec![dated(30, 400)], true).unwrap();
    assert_eq!(earliest_date(&engine, &coll, "at_1").unwrap(), Some(400));
    assert_eq!(
        expire(&engine, &coll, "at_1", 500, 1000, None)
            .unwrap()
            .deleted,
        1
    );
    assert_eq!(ids(&engine), vec![9]);
    // An update that moves a date below the floor counts too.
    let mut w = crate::write::Writer::new(&engine, &coll).unwrap();
    let id_key = keycode::encode_key(bson::RawBsonRef::Int32(9));
    w.replace(&id_key, &dated(9, 900), &dated(9, 300)).unwrap();
    w.commit(false).unwrap();
    assert_eq!(earliest_date(&engine, &coll, "at_1").unwrap(), Some(300));
    assert_eq!(
        expire(&engine, &coll, "at_1", 500, 1000, None)
            .unwrap()
            .deleted,
        1
    );
    assert_eq!(ids(&engine), Vec::<i32>::new());
    assert_eq!(keys(&engine, 11), 0);
    assert_eq!(keys(&engine, 12), 0);
}

pub(crate) fn insert(
    engine: &RocksEngine,
    coll: &std::sync::Arc<Collection>,
    docs: Vec<bson::Document>,
) {
    let raw = docs
        .iter()
        .map(|d| bson::RawDocumentBuf::try_from(d).unwrap())
        .collect();
    ops::insert(engine, coll, raw, true).unwrap();
}

fn all_keys(engine: &RocksEngine) -> (usize, usize, usize) {
    (keys(engine, 10), keys(engine, 11), keys(engine, 12))
}

#[test]
fn a_collection_entirely_due_goes_at_once_and_later_writes_are_kept() {
    let (_d, engine, coll) = setup();
    insert(
        &engine,
        &coll,
        (0..10)
            .map(|i| doc! { "_id": i, "at": at(100 - i64::from(i)), "k": i % 3 })
            .collect(),
    );
    assert_eq!(expire_all(&engine, &coll, "at_1", 100).unwrap(), Some(10));
    assert_eq!(all_keys(&engine), (0, 0, 0));
    // A write after the range tombstones is visible, expires normally,
    // and is seen below the raised floor.
    insert(
        &engine,
        &coll,
        vec![
            doc! { "_id": 0, "at": at(5_000), "k": 1 },
            doc! { "_id": 1, "at": at(50), "k": 1 },
        ],
    );
    assert_eq!(ids(&engine), [0, 1]);
    assert_eq!(all_keys(&engine), (2, 2, 2));
    assert_eq!(earliest_date(&engine, &coll, "at_1").unwrap(), Some(50));
    assert_eq!(expire_all(&engine, &coll, "at_1", 100).unwrap(), None);
    assert_eq!(
        expire(&engine, &coll, "at_1", 100, 1000, None)
            .unwrap()
            .deleted,
        1
    );
    assert_eq!(ids(&engine), [0]);
}

#[test]
fn a_collection_emptied_chunk_by_chunk_leaves_its_last_documents_to_chunks() {
    // A steady stream expires chunk by chunk, and the tombstones of what
    // went stay until compaction: counting the few documents left whole
    // would walk all of them while holding the writer.
    let (_d, engine, coll) = setup();
    insert(
        &engine,
        &coll,
        (0..20_000)
            .map(|i| doc! { "_id": i, "at": at(100), "k": i })
            .collect(),
    );
    // An older reader pins the tombstones, which a background compaction
    // could otherwise drop before the collection is looked at.
    let _pin = engine.snapshot();
    expire_chunk_by_chunk(&engine, &coll, "at_1", 100, 100);
    insert(
        &engine,
        &coll,
        (20_000..20_010)
            .map(|i| doc! { "_id": i, "at": at(200), "k": i })
            .collect(),
    );
    assert_eq!(expire_all(&engine, &coll, "at_1", 200).unwrap(), None);
    assert_eq!(ids(&engine).len(), 10);
    assert_eq!(
        expire(&engine, &coll, "at_1", 200, 1000, None)
            .unwrap()
            .deleted,
        10
    );
    assert_eq!(all_keys(&engine), (0, 0, 0));
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
        let (_d, engine, coll) = setup();
        let mut docs: Vec<_> = (0..5)
            .map(|i| doc! { "_id": i, "at": at(100), "k": i })
            .collect();
        docs.push(odd.clone());
        insert(&engine, &coll, docs);
        let before = all_keys(&engine);
        assert_eq!(
            expire_all(&engine, &coll, "at_1", 100).unwrap(),
            None,
            "{odd}"
        );
        assert_eq!(all_keys(&engine), before, "{odd}");
        // The chunked path still takes what is due: the array with a
        // due date included, as MongoDB expires at the earliest date.
        let out = expire(&engine, &coll, "at_1", 100, 1000, None).unwrap();
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
        let (_d, engine, coll) = setup_with(shape);
        // Every document the index holds is due, but one it skips is
        // not in it at all.
        insert(
            &engine,
            &coll,
            vec![
                doc! { "_id": 1, "at": at(100), "k": 1 },
                doc! { "_id": 2, "k": -1 },
            ],
        );
        assert_eq!(
            expire_all(&engine, &coll, "at_1", 100).unwrap(),
            None,
            "{name}"
        );
        assert_eq!(
            expire(&engine, &coll, "at_1", 100, 1000, None)
                .unwrap()
                .deleted,
            1
        );
        assert_eq!(ids(&engine), [2], "{name}");
    }
}

#[test]
fn a_descending_ttl_index_takes_the_whole_collection_too() {
    let (_d, engine, coll) = setup_with(|m| m.key = doc! { "at": -1 });
    insert(
        &engine,
        &coll,
        (0..4)
            .map(|i| doc! { "_id": i, "at": at(10 * i64::from(i)), "k": i })
            .collect(),
    );
    assert_eq!(expire_all(&engine, &coll, "at_1", 20).unwrap(), None);
    assert_eq!(expire_all(&engine, &coll, "at_1", 30).unwrap(), Some(4));
    assert_eq!(all_keys(&engine), (0, 0, 0));
}

#[test]
fn a_plan_deletes_nothing_until_applied_then_what_expire_would() {
    let (_d, engine, coll) = setup();
    insert(
        &engine,
        &coll,
        (0..6)
            .map(|i| doc! { "_id": i, "at": at(100 + i64::from(i)), "k": i % 2 })
            .collect(),
    );
    let plan = plan(&engine, &coll, "at_1", 103, 3, None).unwrap();
    assert_eq!(plan.docs(), 3);
    assert_eq!(all_keys(&engine), (6, 6, 6), "planning writes nothing");
    let out = apply(&engine, &coll, plan).unwrap();
    assert_eq!((out.deleted, out.more), (3, true));
    assert_eq!(ids(&engine), [3, 4, 5]);
    assert_eq!(all_keys(&engine), (3, 3, 3));
    // The floor moved with the applied plan, as `expire` moves it.
    let rest = expire(&engine, &coll, "at_1", 103, 10, out.resume_after.as_deref()).unwrap();
    assert_eq!((rest.deleted, rest.more), (1, false));
    assert_eq!(earliest_date(&engine, &coll, "at_1").unwrap(), Some(104));
}

#[test]
fn adjacent_expired_records_go_with_every_index_entry() {
    let (_d, engine, coll) = setup();
    let docs = (0..10)
        .map(|i| rawdoc! { "_id": i, "at": DateTime::from_millis(100), "k": i % 3 })
        .collect();
    ops::insert(&engine, &coll, docs, true).unwrap();
    let out = expire(&engine, &coll, "at_1", 100, 1000, None).unwrap();
    assert_eq!((out.deleted, out.more), (10, false));
    assert_eq!(
        (keys(&engine, 10), keys(&engine, 11), keys(&engine, 12)),
        (0, 0, 0)
    );
}

#[test]
fn interleaved_live_records_survive_with_their_entries() {
    let (_d, engine, coll) = setup();
    let docs = (0..10)
        .map(|i| {
            let when = if i % 2 == 0 { at(100) } else { at(10_000) };
            bson::RawDocumentBuf::try_from(&doc! { "_id": i, "at": when, "k": i }).unwrap()
        })
        .collect();
    ops::insert(&engine, &coll, docs, true).unwrap();
    let out = expire(&engine, &coll, "at_1", 100, 1000, None).unwrap();
    assert_eq!(out.deleted, 5);
    assert_eq!(ids(&engine), [1, 3, 5, 7, 9]);
    assert_eq!((keys(&engine, 11), keys(&engine, 12)), (5, 5));
}

#[test]
fn a_multikey_document_loses_its_later_dates_too() {
    let (_d, engine, coll) = setup();
    let doc = bson::RawDocumentBuf::try_from(
        &doc! { "_id": 1, "at": [at(10_000), at(100), at(100)], "k": 1 },
    )
    .unwrap();
    let live = bson::RawDocumentBuf::try_from(&doc! { "_id": 2, "at": at(5_000), "k": 2 }).unwrap();
    ops::insert(&engine, &coll, vec![doc, live], true).unwrap();
    let out = expire(&engine, &coll, "at_1", 100, 1000, None).unwrap();
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
    let (_d, engine, coll) = setup();
    let docs = (0..10)
        .map(|i| rawdoc! { "_id": i, "at": DateTime::from_millis(i64::from(i)), "k": 0 })
        .collect();
    ops::insert(&engine, &coll, docs, true).unwrap();
    let first = expire(&engine, &coll, "at_1", 100, 4, None).unwrap();
    assert_eq!((first.deleted, first.more), (4, true));
    let second = expire(
        &engine,
        &coll,
        "at_1",
        100,
        4,
        first.resume_after.as_deref(),
    )
    .unwrap();
    assert_eq!((second.deleted, second.more), (4, true));
    let third = expire(
        &engine,
        &coll,
        "at_1",
        100,
        4,
        second.resume_after.as_deref(),
    )
    .unwrap();
    assert_eq!((third.deleted, third.more), (2, false));
    assert_eq!(keys(&engine, 10) + keys(&engine, 11) + keys(&engine, 12), 0);
    assert_eq!(earliest_date(&engine, &coll, "at_1").unwrap(), None);
}

#[test]
fn a_chunk_planned_while_the_one_before_it_commits_deletes_each_document_once() {
    let (_d, engine, coll) = setup();
    // Document 1 has a date in each chunk's range.
    let docs = (0..6)
        .map(|i| match i {
            1 => doc! { "_id": i, "at": [at(10), at(45)], "k": i },
            _ => doc! { "_id": i, "at": at(i64::from(i) * 10), "k": i },
        })
        .collect();
    insert(&engine, &coll, docs);
    let mut first = plan(&engine, &coll, "at_1", 100, 3, None).unwrap();
    assert!(first.follows_ok());
    let resume = first.resume_after().unwrap().to_vec();
    let next = chunk("at_1", 100, 3, Some(&resume));
    let next = super::plan_after(
        &engine,
        &coll,
        next,
        &ExpiryPolicy::default(),
        first.take_deleted_ids(),
    )
    .unwrap();
    assert!(!next.follows_ok(), "nothing follows the last chunk");
    let first = apply(&engine, &coll, first).unwrap();
    let next = apply(&engine, &coll, next).unwrap();
    assert_eq!((first.deleted, first.more), (3, true));
    assert_eq!((next.deleted, next.more), (3, false));
    assert_eq!(all_keys(&engine), (0, 0, 0));
    // The second chunk started where the first raised the floor, so the
    // floor ends past everything deleted: later scans start there.
    let (_, end) = keycode::date_range_up_to(100, false);
    let floor = coll.keygen("at_1").and_then(|kg| kg.floor()).unwrap();
    assert!(floor.is_at(&end));
}

/// Hides what is due at a fixed time.
#[derive(Debug)]
struct HideAt(i64);

impl crate::collection::HideDue for HideAt {
    fn hide_at(&self) -> Option<i64> {
        Some(self.0)
    }
}

#[test]
fn a_count_from_keys_equals_a_count_of_documents_the_rule_leaves() {
    let (_dir, engine, coll) = setup();
    let date = |ms: i64| Bson::DateTime(DateTime::from_millis(ms));
    insert(
        &engine,
        &coll,
        vec![
            doc! { "_id": 1, "at": date(100) },
            // Two due dates: one document, counted once.
            doc! { "_id": 2, "at": [date(50), date(60)] },
            doc! { "_id": 3, "at": date(1_000) },
            doc! { "_id": 4, "at": "50" },
            doc! { "_id": 5 },
        ],
    );
    let hiding = Collection::open(coll.meta.clone(), Arc::new(HideAt(100))).unwrap();
    let snap = engine.snapshot();
    assert_eq!(
        super::due_from_keys(snap.as_ref(), &hiding, 100, 10).unwrap(),
        Some(2)
    );
    assert_eq!(super::count_unhidden(snap.as_ref(), &hiding).unwrap(), 3);
    // Past the cap the keys give up and every document is checked.
    assert_eq!(
        super::due_from_keys(snap.as_ref(), &hiding, 100, 1).unwrap(),
        None
    );
    assert_eq!(
        super::count_unhidden_capped(snap.as_ref(), &hiding, 1).unwrap(),
        3
    );
    let due: Vec<bool> = (1..=5)
        .map(|id| {
            let doc = ops::get_by_id(&engine, &hiding, bson::RawBsonRef::Int32(id))
                .unwrap()
                .unwrap();
            hiding.is_due(&doc, 100)
        })
        .collect();
    assert_eq!(due, [true, true, false, false, false]);
    // A reader lists the due record keys first and asks the list.
    let listed = super::Due::on(snap.as_ref(), &hiding, 100).unwrap();
    assert!(matches!(&listed, super::Due::Ids(ids) if ids.len() == 2));
    let held: Vec<bool> = (1..=5)
        .map(|id| {
            let raw = bson::RawBsonRef::Int32(id);
            let doc = ops::get_by_id(&engine, &hiding, raw).unwrap().unwrap();
            listed.holds(&hiding, &hiding.record_key(raw), &doc)
        })
        .collect();
    assert_eq!(held, due);
    assert!(matches!(
        super::Due::on(snap.as_ref(), &hiding, 40).unwrap(),
        super::Due::Nothing
    ));
    // Nothing is hidden without a visibility that hides.
    assert_eq!(super::count_unhidden(snap.as_ref(), &coll).unwrap(), 5);
}

/// The key and value of the first entry in family `cf`.
fn first_entry(engine: &RocksEngine, cf: u64) -> (Vec<u8>, Vec<u8>) {
    let c = engine
        .cursor(Cf::Id(cf), KeyRange::all(), Direction::Forward)
        .unwrap();
    assert!(c.valid());
    (c.key().to_vec(), c.value().to_vec())
}

#[test]
fn a_ttl_entry_carries_the_entries_an_update_gives_its_document() {
    let (_d, engine, coll) = setup();
    let old = bson::RawDocumentBuf::try_from(&doc! { "_id": 1, "at": at(100), "k": 1 }).unwrap();
    ops::insert(&engine, &coll, vec![old.clone()], true).unwrap();
    let listed = |engine: &RocksEngine| {
        let (key, value) = first_entry(engine, 11);
        let entries = super::carry::decode(&value, (11, &key), &coll).expect("covers the handle");
        entries
            .iter()
            .map(|(cf, e)| (*cf, e.to_vec()))
            .collect::<Vec<_>>()
    };
    assert_eq!(listed(&engine).len(), 2, "its TTL entry and its k entry");
    // Only `k` changes: the TTL entry stays but must list the new k entry.
    let new = bson::RawDocumentBuf::try_from(&doc! { "_id": 1, "at": at(100), "k": 7 }).unwrap();
    let id_key = coll.record_key(bson::RawBsonRef::Int32(1));
    let mut w = crate::write::writer::Writer::new(&engine, &coll).unwrap();
    w.replace(&id_key, &old, &new).unwrap();
    w.commit(false).unwrap();
    let mut k7 = keycode::encode_key(bson::RawBsonRef::Int32(7));
    k7.extend_from_slice(&id_key);
    assert!(listed(&engine).contains(&(Cf::Id(12), k7)));
    let out = expire(&engine, &coll, "at_1", 100, 1000, None).unwrap();
    assert_eq!(out.deleted, 1);
    assert_eq!(all_keys(&engine), (0, 0, 0), "no k entry left behind");
}

#[test]
fn an_index_built_after_the_write_makes_expiry_read_the_record() {
    let (_d, engine, coll) = setup();
    insert(
        &engine,
        &coll,
        (0..4)
            .map(|i| doc! { "_id": i, "at": at(100), "k": i, "j": i })
            .collect(),
    );
    // A new index `j_1` in family 13, built over the stored documents: the
    // TTL entries written before it do not list its entries.
    let mut meta = coll.meta.clone();
    meta.indexes.push(IndexMeta {
        id: 13,
        name: "j_1".into(),
        key: doc! { "j": 1 },
        unique: false,
        ..CollectionMeta::id_index(0)
    });
    engine.create_cf(Cf::Id(13)).unwrap();
    let coll = Collection::new(meta).unwrap();
    ops::build_indexes(&engine, &coll, &["j_1".to_owned()], false).unwrap();
    assert_eq!(keys(&engine, 13), 4);
    let (key, value) = first_entry(&engine, 11);
    assert!(super::carry::decode(&value, (11, &key), &coll).is_none());
    let out = expire(&engine, &coll, "at_1", 100, 1000, None).unwrap();
    assert_eq!(out.deleted, 4);
    assert_eq!(all_keys(&engine), (0, 0, 0));
    assert_eq!(keys(&engine, 13), 0, "entries of the new index went too");
}

#[test]
fn a_reader_checks_dates_instead_of_walking_the_tombstones_of_earlier_expiry() {
    let (_d, engine, coll) = setup();
    insert(
        &engine,
        &coll,
        (0..20_000)
            .map(|i| doc! { "_id": i, "at": at(100), "k": i })
            .collect(),
    );
    // Small chunks delete point by point: 20,000 tombstones in the TTL
    // index's due range, below any entry written later. An older reader
    // pins them: without it a background compaction may drop them all
    // before the reader below looks.
    let pin = engine.snapshot();
    expire_chunk_by_chunk(&engine, &coll, "at_1", 100, 256);
    insert(
        &engine,
        &coll,
        vec![doc! { "_id": 20_000, "at": at(100), "k": 0 }],
    );
    let snap = engine.snapshot();
    let due = super::Due::on(snap.as_ref(), &coll, 200).unwrap();
    assert!(matches!(due, super::Due::Check(200)), "{due:?}");
    let id_key = coll.record_key(bson::RawBsonRef::Int32(20_000));
    let doc = rawdoc! { "_id": 20_000, "at": DateTime::from_millis(100), "k": 0 };
    assert!(due.holds(&coll, &id_key, &doc), "still hidden");
    drop(snap);
    drop(pin);
    // Fewer tombstones: the due document is listed.
    let (_d, engine, coll) = setup();
    insert(
        &engine,
        &coll,
        vec![doc! { "_id": 1, "at": at(100), "k": 0 }],
    );
    let snap = engine.snapshot();
    let due = super::Due::on(snap.as_ref(), &coll, 200).unwrap();
    assert!(
        matches!(&due, super::Due::Ids(ids) if ids.len() == 1),
        "{due:?}"
    );
    // A reader's next batch lists again after a list, and checks dates at
    // once, at its own time, after a batch that had to check them.
    let next = due.again(snap.as_ref(), &coll, 300).unwrap();
    assert!(matches!(&next, super::Due::Ids(ids) if ids.len() == 1));
    let checked = super::Due::Check(200)
        .again(snap.as_ref(), &coll, 300)
        .unwrap();
    assert!(matches!(checked, super::Due::Check(300)), "{checked:?}");
    let nothing = super::Due::Nothing.again(snap.as_ref(), &coll, 50).unwrap();
    assert!(matches!(nothing, super::Due::Nothing), "{nothing:?}");
}

#[test]
fn a_chunk_and_the_whole_collection_step_report_the_oldest_date_they_deleted() {
    let (_d, engine, coll) = setup();
    insert(
        &engine,
        &coll,
        (0..6)
            .map(|i| doc! { "_id": i, "at": at(60 - 10 * i64::from(i)), "k": i })
            .collect(),
    );
    // Dates 10..=60; the chunk takes the two oldest.
    let out = expire(&engine, &coll, "at_1", 100, 2, None).unwrap();
    assert_eq!((out.deleted, out.oldest_millis), (2, Some(10)));
    let none = expire(&engine, &coll, "at_1", 5, 10, None).unwrap();
    assert_eq!((none.deleted, none.oldest_millis), (0, None));
    let whole = super::expire_all(&engine, &coll, "at_1", 100, &ExpiryPolicy::default())
        .unwrap()
        .unwrap();
    assert_eq!((whole.deleted, whole.oldest_millis), (4, Some(30)));
}

#[test]
fn the_backlog_counts_the_entries_due_and_not_yet_deleted() {
    let (_d, engine, coll) = setup();
    insert(
        &engine,
        &coll,
        (0..6)
            .map(|i| doc! { "_id": i, "at": at(10 * (1 + i64::from(i))), "k": i })
            .collect(),
    );
    // Dates 10..=60.
    assert_eq!(super::count_due(&engine, &coll, "at_1", 35).unwrap(), 3);
    assert_eq!(super::count_due(&engine, &coll, "at_1", 5).unwrap(), 0);
    expire(&engine, &coll, "at_1", 35, 2, None).unwrap();
    assert_eq!(super::count_due(&engine, &coll, "at_1", 35).unwrap(), 1);
    assert_eq!(super::count_due(&engine, &coll, "at_1", 100).unwrap(), 4);
    assert_eq!(
        super::count_due(&engine, &coll, "no_such_index", 100).unwrap(),
        0
    );
}
