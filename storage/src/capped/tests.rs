//! Capped collections on a temp-dir RocksDB: capping in the insert's
//! batch, the order and totals through deletes, updates and TTL expiry
//! (chunks run on the writer and planned ones), and natural-order scans.

use std::sync::Arc;

use bson::{RawDocumentBuf, doc, rawdoc};

use super::Totals;
use crate::catalog::{CollectionMeta, IndexMeta};
use crate::collection::Collection;
use crate::engine::rocks::RocksEngine;
use crate::engine::{Cf, Direction, Engine, KeyRange};
use crate::plan::exec::{BatchLimits, QueryCursor};
use crate::plan::{self, Hint, QuerySpec};
use crate::statement::{self, DeleteStatement};
use crate::ttl::{self, Chunk, ExpiryPolicy};
use ebb_lang::query::filter::Filter;

const NATURAL: u64 = 20;

/// Records in 10, TTL index `at_1` (due at once) in 11, order in 20.
fn capped(size: i64, max: Option<i64>) -> (tempfile::TempDir, RocksEngine, Arc<Collection>) {
    let (dir, engine) = crate::testing::temp_engine();
    let mut ttl = IndexMeta {
        id: 11,
        name: "at_1".into(),
        key: doc! { "at": 1 },
        unique: false,
        ..CollectionMeta::id_index(0)
    };
    ttl.expire_after_seconds = Some(0);
    let options = super::CappedOptions::new(size, max).unwrap().to_document();
    let meta = crate::testing::meta(
        "c",
        options,
        Some(NATURAL),
        vec![CollectionMeta::id_index(10), ttl],
    );
    for cf in [10, 11, NATURAL] {
        engine.create_cf(Cf::Id(cf)).unwrap();
    }
    (dir, engine, Collection::new(meta).unwrap())
}

fn insert(engine: &RocksEngine, coll: &Arc<Collection>, docs: Vec<RawDocumentBuf>) {
    let out = statement::insert(engine, coll, docs, true).unwrap();
    assert!(out.errors.is_empty(), "{:?}", out.errors);
}

/// `_id`s in natural order (`dir`), through the planner's collection scan.
fn natural(engine: &RocksEngine, coll: &Arc<Collection>, dir: Direction) -> Vec<i32> {
    let spec = QuerySpec {
        filter: Filter::parse(&rawdoc! {}).unwrap(),
        sort: None,
        hint: Some(Hint::Natural(dir)),
    };
    let plan = plan::plan(&coll.meta, &spec).unwrap();
    let mut cursor = QueryCursor::new(coll, plan, spec.filter, None, 0, None).unwrap();
    let snap = engine.snapshot();
    let batch = cursor
        .next_batch(snap.as_ref(), BatchLimits::UNLIMITED)
        .unwrap();
    batch
        .iter()
        .map(|f| f.doc.get_i32("_id").unwrap())
        .collect()
}

fn totals(engine: &RocksEngine) -> Totals {
    Totals::read(engine, Cf::Id(NATURAL)).unwrap()
}

/// Entries of the order family: two per document plus the totals.
fn order_entries(engine: &RocksEngine) -> usize {
    engine.count(Cf::Id(NATURAL), KeyRange::all()).unwrap() as usize
}

#[test]
fn an_insert_past_max_removes_the_oldest_in_its_own_batch() {
    let (_d, engine, coll) = capped(1 << 20, Some(3));
    insert(
        &engine,
        &coll,
        (0..5).map(|i| rawdoc! { "_id": i }).collect(),
    );
    assert_eq!(natural(&engine, &coll, Direction::Forward), vec![2, 3, 4]);
    assert_eq!(natural(&engine, &coll, Direction::Reverse), vec![4, 3, 2]);
    let t = totals(&engine);
    assert_eq!((t.count, t.next_seq), (3, 5));
    assert_eq!(t.bytes, 3 * rawdoc! { "_id": 0 }.as_bytes().len() as u64);
    assert_eq!(order_entries(&engine), 2 * 3 + 1);
}

#[test]
fn size_counts_bson_bytes_and_a_too_large_document_is_refused() {
    let doc = |i: i32| rawdoc! { "_id": i, "s": "x".repeat(100) };
    let one = doc(0).as_bytes().len() as i64;
    let (_d, engine, coll) = capped(2 * one + 1, None);
    insert(&engine, &coll, (0..4).map(doc).collect());
    assert_eq!(natural(&engine, &coll, Direction::Forward), vec![2, 3]);
    let too_big = rawdoc! { "_id": 9, "s": "x".repeat(300) };
    let out = statement::insert(&engine, &coll, vec![too_big], true).unwrap();
    assert_eq!(
        out.errors[0].error.message,
        "object to insert exceeds cappedMaxSize"
    );
    assert_eq!(natural(&engine, &coll, Direction::Forward), vec![2, 3]);
}

#[test]
fn deletes_keep_order_and_totals() {
    let (_d, engine, coll) = capped(1 << 20, Some(3));
    insert(
        &engine,
        &coll,
        (0..3).map(|i| rawdoc! { "_id": i }).collect(),
    );
    let del = DeleteStatement {
        filter: Filter::parse(&rawdoc! { "_id": 1 }).unwrap(),
        collation: ebb_lang::encoding::collation::Choice::CollectionDefault,
        just_one: true,
        hint: None,
        deadline: None,
        interrupt: None,
    };
    assert_eq!(
        statement::delete(&engine, &coll, vec![del], true)
            .unwrap()
            .n,
        1
    );
    assert_eq!(totals(&engine).count, 2);
    insert(
        &engine,
        &coll,
        vec![rawdoc! { "_id": 3 }, rawdoc! { "_id": 4 }],
    );
    assert_eq!(natural(&engine, &coll, Direction::Forward), vec![2, 3, 4]);
    assert_eq!(order_entries(&engine), 2 * 3 + 1);
}

#[test]
fn ttl_chunks_remove_order_entries_run_or_planned() {
    let old = bson::DateTime::from_millis(1_000);
    let (_d, engine, coll) = capped(1 << 20, None);
    insert(
        &engine,
        &coll,
        (0..6)
            .map(|i| match i % 2 {
                0 => rawdoc! { "_id": i, "at": old },
                _ => rawdoc! { "_id": i },
            })
            .collect(),
    );
    let policy = ExpiryPolicy::default();
    let chunk = |limit| Chunk {
        index: "at_1",
        cutoff_millis: 2_000,
        limit,
        resume_after: None,
    };
    let out = ttl::expire(&engine, &coll, chunk(1), &policy).unwrap();
    assert_eq!(out.deleted, 1);
    let first = ttl::plan(&engine, &coll, chunk(1), &policy).unwrap();
    assert!(
        first.more() && !first.follows_ok(),
        "every chunk rewrites the totals: none is planned ahead"
    );
    let planned = ttl::plan(&engine, &coll, chunk(10), &policy).unwrap();
    assert_eq!(ttl::apply(&engine, &coll, planned).unwrap().deleted, 2);
    assert_eq!(natural(&engine, &coll, Direction::Forward), vec![1, 3, 5]);
    assert_eq!(totals(&engine).count, 3);
    assert_eq!(order_entries(&engine), 2 * 3 + 1);
    assert_eq!(
        ttl::expire_all(&engine, &coll, "at_1", 2_000, &policy).unwrap(),
        None,
        "whole-collection expiry leaves capped collections to chunks"
    );
}

#[test]
fn an_update_changes_the_byte_total() {
    let (_d, engine, coll) = capped(1 << 20, None);
    insert(&engine, &coll, vec![rawdoc! { "_id": 1, "s": "ab" }]);
    let before = totals(&engine).bytes;
    let mut w = crate::write::Writer::new(&engine, &coll).unwrap();
    let id_key = coll.record_key(bson::RawBsonRef::Int32(1));
    let old = w.get(&id_key).unwrap().unwrap();
    w.replace(&id_key, &old, &rawdoc! { "_id": 1, "s": "abcdef" })
        .unwrap();
    w.commit(false).unwrap();
    assert_eq!(totals(&engine).bytes, before + 4);
}

#[test]
fn a_tailable_scan_resumes_after_its_last_document() {
    let (_d, engine, coll) = capped(1 << 20, Some(2));
    insert(&engine, &coll, vec![rawdoc! { "_id": 1 }]);
    let spec = QuerySpec {
        filter: Filter::parse(&rawdoc! {}).unwrap(),
        sort: None,
        hint: None,
    };
    let plan = plan::plan(&coll.meta, &spec).unwrap();
    let mut cursor = QueryCursor::new(&coll, plan, spec.filter, None, 0, None)
        .unwrap()
        .tailable()
        .unwrap();
    let mut next = || {
        let snap = engine.snapshot();
        cursor
            .next_batch(snap.as_ref(), BatchLimits::UNLIMITED)
            .map(|b| {
                b.iter()
                    .map(|f| f.doc.get_i32("_id").unwrap())
                    .collect::<Vec<_>>()
            })
    };
    assert_eq!(next().unwrap(), vec![1]);
    assert_eq!(next().unwrap(), Vec::<i32>::new());
    insert(&engine, &coll, vec![rawdoc! { "_id": 2 }]);
    assert_eq!(next().unwrap(), vec![2]);
    insert(
        &engine,
        &coll,
        vec![rawdoc! { "_id": 3 }, rawdoc! { "_id": 4 }],
    );
    let lost = next().unwrap_err();
    assert_eq!(lost.kind, crate::ErrorKind::CappedPositionLost);
}
