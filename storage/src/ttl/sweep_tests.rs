//! The sweep on a real RocksDB: what a chunk leaves queued, who sees it
//! (nobody), what deletes it, and the writes that must not lose an entry
//! to it.
//!
//! A chunk of scattered documents leaves their records in place too, and
//! the engine hides them: [`stored`] counts keys as RocksDB holds them.

use std::sync::Arc;

use bson::doc;

use super::tests::{at, ids, insert, keys, setup};
use super::{Chunk, ExpiryPolicy, sweep};
use crate::collection::Collection;
use crate::engine::{Cf, Direction, Engine, KeyRange};
use crate::integrity;

/// One chunk over every document due by `cutoff`, without the sweep.
fn chunk_only(engine: &dyn Engine, coll: &Collection, cutoff: i64) -> u64 {
    chunk_only_limit(engine, coll, cutoff, 1000)
}

/// One chunk of at most `limit` documents, without the sweep.
fn chunk_only_limit(engine: &dyn Engine, coll: &Collection, cutoff: i64, limit: usize) -> u64 {
    let chunk = Chunk {
        index: "at_1",
        cutoff_millis: cutoff,
        limit,
        resume_after: None,
    };
    super::expire(engine, coll, chunk, &ExpiryPolicy::default())
        .unwrap()
        .deleted
}

/// Documents `0..n`: the even ones due by 100 in the reverse of their `_id`
/// order (scattered lifetimes, so a chunk leaves their records in place),
/// the odd ones live.
fn insert_scattered(engine: &crate::engine::rocks::RocksEngine, coll: &Arc<Collection>, n: i32) {
    let due = |i: i32| at(if i % 2 == 0 { 100 - i64::from(i) } else { 900 });
    insert(
        engine,
        coll,
        (0..n)
            .map(|i| doc! { "_id": i, "at": due(i), "k": i })
            .collect(),
    );
}

/// Keys of family `cf` as stored, the ones the engine hides included.
fn stored(engine: &dyn Engine, cf: u64) -> usize {
    let hidden = engine.held().registered(cf);
    engine.held().unregister(cf);
    let n = engine.count(Cf::Id(cf), KeyRange::all()).unwrap() as usize;
    if let Some(keys) = hidden {
        engine.held().register(cf, keys);
    }
    n
}

fn valid(engine: &dyn Engine, coll: &Collection) -> integrity::Report {
    let report = integrity::check(engine.snapshot().as_ref(), coll).unwrap();
    assert!(report.valid(), "{report:?}");
    report
}

#[test]
fn a_chunk_queues_the_plain_index_entries_and_the_sweep_deletes_them() {
    let (_d, engine, coll) = setup();
    let docs = (0..10).map(|i| doc! { "_id": i, "at": at(100), "k": i % 3 });
    insert(&engine, &coll, docs.collect());
    assert_eq!(chunk_only(&engine, &coll, 100), 10);
    // Records (a run: inserted together) and TTL entries go with the
    // chunk; the k entries wait.
    assert_eq!((stored(&engine, 10), keys(&engine, 11)), (0, 0));
    assert_eq!(keys(&engine, 12), 10);
    assert_eq!(coll.sweep.entries(), 10);
    assert!(
        coll.sweep
            .due_in(std::time::Instant::now(), &ExpiryPolicy::default())
            .is_some()
    );
    // `validate` accounts for them and counts none as the index's.
    let report = valid(&engine, &coll);
    assert_eq!(report.keys_per_index["k_1"], 0);

    assert_eq!(sweep(&engine, &coll).unwrap(), 10);
    assert_eq!((stored(&engine, 10), keys(&engine, 12)), (0, 0));
    assert_eq!(
        super::sweep::queued_collections(&engine).unwrap(),
        Vec::<u64>::new()
    );
    assert_eq!(
        coll.sweep
            .due_in(std::time::Instant::now(), &ExpiryPolicy::default()),
        None
    );
    assert_eq!(sweep(&engine, &coll).unwrap(), 0, "nothing left to sweep");
}

#[test]
fn a_document_stored_again_under_an_expired_id_keeps_the_entry_it_shares() {
    let (_d, engine, coll) = setup();
    insert(
        &engine,
        &coll,
        vec![doc! { "_id": 1, "at": at(100), "k": 5 }],
    );
    assert_eq!(chunk_only(&engine, &coll, 100), 1);
    // The same `_id` and the same k: the old entry is the new one's key.
    insert(
        &engine,
        &coll,
        vec![doc! { "_id": 1, "at": at(10_000), "k": 5 }],
    );
    assert_eq!(keys(&engine, 12), 1);
    // The insert swept first, so no later sweep can take the entry.
    assert_eq!(coll.sweep.entries(), 0);
    sweep(&engine, &coll).unwrap();
    assert_eq!(keys(&engine, 12), 1, "the new document's k entry is kept");
    let report = valid(&engine, &coll);
    assert_eq!(report.keys_per_index["k_1"], 1);
    assert_eq!(ids(&engine), [1]);
}

#[test]
fn a_new_index_set_reads_the_queue_back() {
    let (_d, engine, coll) = setup();
    let docs = (0..4).map(|i| doc! { "_id": i, "at": at(100), "k": i });
    insert(&engine, &coll, docs.collect());
    assert_eq!(chunk_only(&engine, &coll, 100), 4);
    // A catalog change, or a restart, starts from what is stored.
    let fresh = Collection::new(coll.meta.clone()).unwrap();
    let id = fresh.record_key(bson::RawBsonRef::Int32(2));
    assert!(fresh.sweep.holds(&engine, fresh.meta.id, &id).unwrap());
    assert_eq!(fresh.sweep.entries(), 4);
    insert(
        &engine,
        &fresh,
        vec![doc! { "_id": 2, "at": at(10_000), "k": 2 }],
    );
    assert_eq!(
        keys(&engine, 12),
        1,
        "swept before the insert, then its entry"
    );
    valid(&engine, &fresh);
}

#[test]
fn entries_of_a_dropped_index_are_passed_over() {
    let (_d, engine, coll) = setup();
    insert(
        &engine,
        &coll,
        vec![doc! { "_id": 1, "at": at(100), "k": 1 }],
    );
    assert_eq!(chunk_only(&engine, &coll, 100), 1);
    let mut meta = coll.meta.clone();
    meta.indexes.retain(|i| i.name != "k_1");
    engine.drop_cf(Cf::Id(12)).unwrap();
    let without_k = Collection::new(meta).unwrap();
    assert_eq!(sweep(&engine, &without_k).unwrap(), 0);
    assert_eq!(stored(&engine, 10), 0);
    assert_eq!(
        super::sweep::queued_collections(&engine).unwrap(),
        Vec::<u64>::new()
    );
}

#[test]
fn a_unique_index_loses_its_entries_with_the_chunk() {
    let (_d, engine, coll) = setup();
    let mut meta = coll.meta.clone();
    meta.indexes[2].unique = true;
    let coll = Collection::new(meta).unwrap();
    insert(
        &engine,
        &coll,
        vec![doc! { "_id": 1, "at": at(100), "k": 1 }],
    );
    assert_eq!(chunk_only(&engine, &coll, 100), 1);
    assert_eq!(keys(&engine, 12), 0);
    assert_eq!(coll.sweep.entries(), 0);
    // Another document may take the key at once.
    insert(
        &engine,
        &coll,
        vec![doc! { "_id": 2, "at": at(10_000), "k": 1 }],
    );
    assert_eq!(keys(&engine, 12), 1);
}

#[test]
fn a_dropped_collection_forgets_its_queue() {
    let (_d, engine, coll) = setup();
    insert(
        &engine,
        &coll,
        vec![doc! { "_id": 1, "at": at(100), "k": 1 }],
    );
    assert_eq!(chunk_only(&engine, &coll, 100), 1);
    assert_eq!(super::sweep::queued_collections(&engine).unwrap(), [10]);
    let mut batch = engine.batch();
    super::sweep::forget(batch.as_mut(), &[10]).unwrap();
    batch.commit(false).unwrap();
    assert_eq!(
        super::sweep::queued_collections(&engine).unwrap(),
        Vec::<u64>::new()
    );
}

#[test]
fn a_sweep_in_slices_keeps_its_ids_until_the_last_slice() {
    let (_d, engine, coll) = setup();
    let docs = (0..10).map(|i| doc! { "_id": i, "at": at(100), "k": i });
    insert(&engine, &coll, docs.collect());
    assert_eq!(chunk_only(&engine, &coll, 100), 10);
    let policy = ExpiryPolicy {
        sweep_slice: 4,
        ..ExpiryPolicy::default()
    };
    let now = std::time::Instant::now();
    assert_eq!(
        super::sweep_step(&engine, &coll, &policy).unwrap(),
        0,
        "the first turn reads and sorts the queue"
    );
    assert_eq!(keys(&engine, 12), 10);
    assert_eq!(super::sweep_step(&engine, &coll, &policy).unwrap(), 4);
    assert_eq!(keys(&engine, 12), 6);
    // The run goes on at once, and still guards its record keys.
    assert_eq!(
        coll.sweep.due_in(now, &policy),
        Some(std::time::Duration::ZERO)
    );
    let id = coll.record_key(bson::RawBsonRef::Int32(9));
    assert!(coll.sweep.holds(&engine, coll.meta.id, &id).unwrap());
    // A chunk in between queues for the next sweep, not this run.
    insert(
        &engine,
        &coll,
        vec![doc! { "_id": 20, "at": at(200), "k": 20 }],
    );
    assert_eq!(chunk_only(&engine, &coll, 200), 1);
    assert_eq!(super::sweep_step(&engine, &coll, &policy).unwrap(), 4);
    assert_eq!(super::sweep_step(&engine, &coll, &policy).unwrap(), 2);
    assert_eq!(keys(&engine, 12), 1, "the later chunk's entry waits");
    assert!(!coll.sweep.holds(&engine, coll.meta.id, &id).unwrap());
    assert_eq!(coll.sweep.entries(), 1);
    valid(&engine, &coll);
    assert_eq!(super::sweep_step(&engine, &coll, &policy).unwrap(), 0);
    assert_eq!(super::sweep_step(&engine, &coll, &policy).unwrap(), 1);
    assert_eq!(keys(&engine, 12), 0);
    assert_eq!(coll.sweep.due_in(now, &policy), None);
    assert_eq!(
        super::sweep::queued_collections(&engine).unwrap(),
        Vec::<u64>::new()
    );
}

/// The keys of the plain index `k_1`, in order.
fn plain_keys(engine: &dyn Engine) -> Vec<Vec<u8>> {
    let mut c = engine
        .cursor(Cf::Id(12), KeyRange::all(), Direction::Forward)
        .unwrap();
    let mut out = Vec::new();
    while c.valid() {
        out.push(c.key().to_vec());
        c.advance();
    }
    out
}

#[test]
fn a_run_reads_the_queue_a_few_items_per_turn_and_deletes_in_key_order_across_them() {
    let (_d, engine, coll) = setup();
    // Three chunks, three queue items, whose k values interleave.
    let docs = (0..12).map(|i| doc! { "_id": i, "at": at(100 * (1 + i64::from(i % 3))), "k": i });
    insert(&engine, &coll, docs.collect());
    for cutoff in [100, 200, 300] {
        assert_eq!(chunk_only(&engine, &coll, cutoff), 4);
    }
    let all = plain_keys(&engine);
    assert_eq!(all.len(), 12);
    let policy = ExpiryPolicy {
        sweep_read: 1,
        sweep_slice: 5,
        ..ExpiryPolicy::default()
    };
    for turn in 1..=3 {
        assert_eq!(
            super::sweep_step(&engine, &coll, &policy).unwrap(),
            0,
            "reading turn {turn}: one item"
        );
    }
    assert_eq!(plain_keys(&engine), all, "reading deletes nothing");
    assert_eq!(super::sweep_step(&engine, &coll, &policy).unwrap(), 5);
    assert_eq!(
        plain_keys(&engine),
        all[5..],
        "the five smallest, from all three items"
    );
    valid(&engine, &coll);
    assert_eq!(super::sweep_step(&engine, &coll, &policy).unwrap(), 5);
    assert_eq!(super::sweep_step(&engine, &coll, &policy).unwrap(), 2);
    assert_eq!(keys(&engine, 12), 0);
    assert_eq!(
        super::sweep::queued_collections(&engine).unwrap(),
        Vec::<u64>::new(),
        "the items go with the last slice"
    );
    let id = coll.record_key(bson::RawBsonRef::Int32(4));
    assert!(!coll.sweep.holds(&engine, coll.meta.id, &id).unwrap());
}

#[test]
fn storing_an_id_of_a_run_half_done_sweeps_everything_first() {
    let (_d, engine, coll) = setup();
    let docs = (0..10).map(|i| doc! { "_id": i, "at": at(100), "k": 5 });
    insert(&engine, &coll, docs.collect());
    assert_eq!(chunk_only(&engine, &coll, 100), 10);
    let policy = ExpiryPolicy {
        sweep_slice: 3,
        ..ExpiryPolicy::default()
    };
    assert_eq!(super::sweep_step(&engine, &coll, &policy).unwrap(), 0);
    assert_eq!(super::sweep_step(&engine, &coll, &policy).unwrap(), 3);
    // `_id` 9 sorts last under k = 5: its entry is not deleted yet.
    insert(
        &engine,
        &coll,
        vec![doc! { "_id": 9, "at": at(10_000), "k": 5 }],
    );
    assert_eq!(keys(&engine, 12), 1);
    assert_eq!(super::sweep_step(&engine, &coll, &policy).unwrap(), 0);
    assert_eq!(keys(&engine, 12), 1, "the new document's entry is kept");
    valid(&engine, &coll);
}

#[test]
fn under_a_deletion_rate_limit_the_chunk_deletes_every_entry_itself() {
    let (_d, engine, coll) = setup();
    let docs = (0..10).map(|i| doc! { "_id": i, "at": at(100), "k": i % 3 });
    insert(&engine, &coll, docs.collect());
    let paced = ExpiryPolicy {
        max_deletes_per_sec: 1000,
        ..ExpiryPolicy::default()
    };
    let chunk = Chunk {
        index: "at_1",
        cutoff_millis: 100,
        limit: 1000,
        resume_after: None,
    };
    assert_eq!(
        super::expire(&engine, &coll, chunk, &paced)
            .unwrap()
            .deleted,
        10
    );
    assert_eq!(keys(&engine, 12), 0, "nothing left for a sweep");
    assert_eq!(coll.sweep.entries(), 0);
    assert_eq!(
        super::sweep::queued_collections(&engine).unwrap(),
        Vec::<u64>::new()
    );
    valid(&engine, &coll);
}

/// The `_id`s of the records stored, hidden ones included.
fn ids_stored(engine: &crate::engine::rocks::RocksEngine) -> Vec<i32> {
    let hidden = engine.held().registered(10);
    engine.held().unregister(10);
    let out = ids(engine);
    if let Some(keys) = hidden {
        engine.held().register(10, keys);
    }
    out
}

#[test]
fn records_left_to_the_sweep_are_hidden_from_every_read_until_it_deletes_them() {
    let (_d, engine, coll) = setup();
    insert_scattered(&engine, &coll, 6);
    assert_eq!(chunk_only(&engine, &coll, 100), 3);
    assert_eq!(ids_stored(&engine), [0, 1, 2, 3, 4, 5], "left in place");
    let key = |i: i32| coll.record_key(bson::RawBsonRef::Int32(i));
    let records = Cf::Id(10);
    // Point reads, multi-gets, cursors both ways, counts, snapshots.
    assert_eq!(engine.get(records, &key(2)).unwrap(), None);
    assert!(engine.get(records, &key(3)).unwrap().is_some());
    let got = engine.multi_get(records, &[key(0), key(1)]).unwrap();
    assert_eq!((got[0].is_some(), got[1].is_some()), (false, true));
    assert_eq!(ids(&engine), [1, 3, 5]);
    let mut back = engine
        .cursor(records, KeyRange::all(), Direction::Reverse)
        .unwrap();
    back.seek(&key(4));
    assert_eq!(back.key(), key(3));
    assert_eq!(engine.count(records, KeyRange::all()).unwrap(), 3);
    let snap = engine.snapshot();
    assert_eq!(snap.get(records, &key(4)).unwrap(), None);
    let mut c = snap
        .cursor(records, KeyRange::all(), Direction::Forward)
        .unwrap();
    assert_eq!(c.key(), key(1));
    c.seek(&key(2));
    assert_eq!(c.key(), key(3));
    drop(c);
    drop(snap);
    valid(&engine, &coll);
    sweep(&engine, &coll).unwrap();
    assert_eq!(ids_stored(&engine), [1, 3, 5]);
}

#[test]
fn a_snapshot_taken_before_the_sweep_keeps_hiding_what_it_still_stores() {
    let (_d, engine, coll) = setup();
    // Due documents 1 and 3 around a live 2: scattered, left in place.
    let docs = (1..4).map(
        |i| doc! { "_id": i, "at": at(if i == 2 { 900 } else { 100 - i64::from(i) }), "k": i },
    );
    insert(&engine, &coll, docs.collect());
    assert_eq!(chunk_only(&engine, &coll, 100), 2);
    assert_eq!(ids_stored(&engine), [1, 2, 3]);
    let key = coll.record_key(bson::RawBsonRef::Int32(1));
    let before = engine.snapshot();
    // The insert of the same `_id` sweeps first, then stores the new one.
    insert(
        &engine,
        &coll,
        vec![doc! { "_id": 1, "at": at(10_000), "k": 2 }],
    );
    assert_eq!(
        before.get(Cf::Id(10), &key).unwrap(),
        None,
        "the dead record"
    );
    let now = engine.get(Cf::Id(10), &key).unwrap().unwrap();
    let now = bson::RawDocument::from_bytes(&now).unwrap();
    assert_eq!(now.get_i32("k").unwrap(), 2);
    let after = engine.snapshot();
    assert!(after.get(Cf::Id(10), &key).unwrap().is_some());
}

#[test]
fn after_a_restart_the_records_left_to_the_sweep_stay_hidden() {
    let (_d, engine, coll) = setup();
    insert_scattered(&engine, &coll, 4);
    assert_eq!(chunk_only(&engine, &coll, 100), 2);
    // A restart: nothing registered until the queue is read back.
    engine.held().unregister(10);
    assert_eq!(ids(&engine), [0, 1, 2, 3]);
    let fresh = Collection::new(coll.meta.clone()).unwrap();
    fresh.sweep.load(&engine, fresh.meta.id).unwrap();
    assert_eq!(ids(&engine), [1, 3]);
    valid(&engine, &fresh);
}

#[test]
fn a_contiguous_run_of_records_goes_with_its_chunk_in_one_range_tombstone() {
    let (_d, engine, coll) = setup();
    let docs =
        (0..600).map(|i| doc! { "_id": i, "at": at(if i < 550 { 100 } else { 900 }), "k": i });
    insert(&engine, &coll, docs.collect());
    assert_eq!(chunk_only_limit(&engine, &coll, 100, 1000), 550);
    assert_eq!(stored(&engine, 10), 50, "deleted, not left to the sweep");
    assert_eq!(coll.sweep.entries(), 550, "the k entries wait");
    let id = coll.record_key(bson::RawBsonRef::Int32(3));
    assert!(coll.sweep.holds(&engine, coll.meta.id, &id).unwrap());
}

#[test]
fn reads_are_filtered_only_while_something_is_held() {
    let (_d, engine, coll) = setup();
    insert_scattered(&engine, &coll, 4);
    assert!(engine.held().registered(10).is_none(), "nothing held yet");
    assert_eq!(chunk_only(&engine, &coll, 100), 2);
    assert!(engine.held().registered(10).is_some());
    sweep(&engine, &coll).unwrap();
    assert!(engine.held().registered(10).is_none(), "all released");
    assert_eq!(ids(&engine), [1, 3]);
}

#[test]
fn a_full_queue_makes_chunks_delete_everything_themselves() {
    let (_d, engine, coll) = setup();
    let policy = ExpiryPolicy {
        sweep_max_entries: 8,
        ..ExpiryPolicy::default()
    };
    insert_scattered(&engine, &coll, 40);
    let chunk = |limit: usize| {
        let chunk = Chunk {
            index: "at_1",
            cutoff_millis: 100,
            limit,
            resume_after: None,
        };
        super::expire(&engine, &coll, chunk, &policy)
            .unwrap()
            .deleted
    };
    // The first chunk queues its 5 documents' records and k entries: the
    // queue passes its bound, and holds their record keys.
    assert_eq!(chunk(5), 5);
    assert_eq!(coll.sweep.entries(), 10);
    assert_eq!(coll.sweep.held_keys(), 5);
    // Every later chunk, however far behind, queues nothing and holds
    // nothing more: it deletes records and entries at once.
    assert_eq!(chunk(15), 15);
    assert_eq!(coll.sweep.entries(), 10);
    assert_eq!(coll.sweep.held_keys(), 5);
    assert_eq!(stored(&engine, 10), 20 + 5, "the odd ones and the queued");
    assert_eq!(keys(&engine, 12), 20 + 5);
    valid(&engine, &coll);
    // The sweep empties the queue; chunks queue again below the bound.
    assert_eq!(sweep(&engine, &coll).unwrap(), 10);
    assert_eq!((coll.sweep.entries(), coll.sweep.held_keys()), (0, 0));
    assert_eq!(stored(&engine, 10), 20);
    valid(&engine, &coll);
}

#[test]
fn a_backlog_of_a_million_keeps_what_waits_for_the_sweep_within_its_bound() {
    // Past capacity the backlog may grow without end; what waits for the
    // sweep (queued entries, and record keys held from every read) must
    // not grow with it. Lifetimes in the reverse of `_id` order make every
    // document leave its record, not only its `k` entry, to the sweep.
    const DOCS: i32 = 1_000_000;
    const CAP: usize = 20_000;
    const LIMIT: usize = 8_192;
    let (_d, engine, coll) = setup();
    for start in (0..DOCS).step_by(50_000) {
        let docs = (start..start + 50_000)
            .map(|i| doc! { "_id": i, "at": at(i64::from(DOCS - i)), "k": i })
            .collect();
        insert(&engine, &coll, docs);
    }
    let policy = ExpiryPolicy {
        sweep_max_entries: CAP,
        ..ExpiryPolicy::default()
    };
    let (mut deleted, mut resume, mut most) = (0, None, (0, 0));
    loop {
        let chunk = Chunk {
            index: "at_1",
            cutoff_millis: i64::from(DOCS),
            limit: LIMIT,
            resume_after: resume.as_deref(),
        };
        let out = super::expire(&engine, &coll, chunk, &policy).unwrap();
        deleted += out.deleted;
        // One chunk may carry the queue past its bound; none after it
        // adds to it.
        let now = (coll.sweep.entries(), coll.sweep.held_keys());
        assert!(now.0 <= CAP + 2 * LIMIT, "{now:?} after {deleted}");
        assert!(now.1 <= CAP + LIMIT, "{now:?} after {deleted}");
        most = (most.0.max(now.0), most.1.max(now.1));
        resume = out.resume_after;
        if !out.more {
            break;
        }
    }
    assert_eq!(deleted, DOCS as u64);
    assert!(most.0 >= CAP, "the bound was reached: {most:?}");
    assert_eq!(ids(&engine).len(), 0, "no read sees a held record");
    sweep(&engine, &coll).unwrap();
    assert_eq!((coll.sweep.entries(), coll.sweep.held_keys()), (0, 0));
    assert_eq!(stored(&engine, 10), 0);
    assert_eq!(keys(&engine, 11), 0);
    assert_eq!(keys(&engine, 12), 0);
    valid(&engine, &coll);
}
