//! Insert statements on a temp-dir RocksDB: the batched record lookups
//! (`Writer::prefetch`) never let a duplicate `_id` through, within a
//! statement, across its chunk commits, or against a committed document;
//! documents prepared before the writer are stored as the writer would
//! store them.

use std::sync::Arc;

use bson::{RawDocumentBuf, doc, rawdoc};

use super::writer::prepare_statement;
use crate::catalog::{CollectionMeta, IndexMeta};
use crate::collection::Collection;
use crate::engine::rocks::RocksEngine;
use crate::engine::{Cf, Engine, KeyRange};
use crate::statement::{self, CHUNK_OPS, InsertStatement};
use ebb_lang::error::ErrorKind;

/// Records in 10, indexes `a_1` in 11 and `b_1` in 12: three writes per
/// document.
fn collection() -> (tempfile::TempDir, RocksEngine, Arc<Collection>) {
    let (dir, engine) = crate::testing::temp_engine();
    let index = |id, field: &str| IndexMeta {
        id,
        name: format!("{field}_1"),
        key: doc! { field: 1 },
        unique: false,
        ..CollectionMeta::id_index(0)
    };
    let meta = crate::testing::meta(
        "c",
        doc! {},
        None,
        vec![CollectionMeta::id_index(10), index(11, "a"), index(12, "b")],
    );
    for cf in [10, 11, 12] {
        engine.create_cf(Cf::Id(cf)).unwrap();
    }
    (dir, engine, Collection::new(meta).unwrap())
}

fn stored(engine: &RocksEngine) -> u64 {
    engine.count(Cf::Id(10), KeyRange::all()).unwrap()
}

#[test]
fn a_duplicate_id_is_refused_within_a_statement_across_its_commits_and_against_stored_ones() {
    let (_dir, engine, coll) = collection();
    statement::insert(&engine, &coll, vec![rawdoc! { "_id": -1 }], true).unwrap();
    // Documents 2m and 2m+1 share `_id` m. Each first of a pair writes
    // three entries and each second writes none, so every chunk commit
    // falls between the two of a pair, where the second must still be
    // refused although its first is no longer in the uncommitted batch.
    let pairs = CHUNK_OPS as i32;
    let mut docs: Vec<RawDocumentBuf> = (0..2 * pairs)
        .map(|i| rawdoc! { "_id": i / 2, "a": i, "b": i })
        .collect();
    docs.push(rawdoc! { "_id": -1 });
    let out = statement::insert(&engine, &coll, docs, false).unwrap();
    assert_eq!(out.n, pairs as u64);
    let refused: Vec<usize> = out.errors.iter().map(|e| e.index).collect();
    let expected: Vec<usize> = (0..pairs as usize)
        .map(|m| 2 * m + 1)
        .chain([2 * pairs as usize])
        .collect();
    assert_eq!(refused, expected);
    assert!(
        out.errors
            .iter()
            .all(|e| e.error.kind == ErrorKind::DuplicateKey)
    );
    assert_eq!(stored(&engine), pairs as u64 + 1);
    assert_eq!(
        engine.count(Cf::Id(11), KeyRange::all()).unwrap(),
        pairs as u64 + 1,
        "a refused document leaves no index entry"
    );
}

#[test]
fn an_ordered_statement_stops_at_its_first_duplicate() {
    let (_dir, engine, coll) = collection();
    let docs = (0..1000)
        .map(|i| rawdoc! { "_id": if i == 700 { 3 } else { i } })
        .collect();
    let out = statement::insert(&engine, &coll, docs, true).unwrap();
    assert_eq!(out.n, 700);
    assert_eq!(out.errors.len(), 1);
    assert_eq!(out.errors[0].index, 700);
    assert_eq!(stored(&engine), 700);
}

#[test]
fn documents_prepared_before_the_writer_are_stored_as_the_writer_would_store_them() {
    let (_dir, engine, coll) = collection();
    let sent = [
        rawdoc! { "a": 1, "_id": "second" },
        rawdoc! { "_id": "first", "a": 2 },
        rawdoc! { "a": 3 },
    ];
    let refs: Vec<&bson::RawDocument> = sent.iter().map(|d| d.as_ref()).collect();
    let prepared = prepare_statement(&refs).expect("every document is valid");
    assert_eq!(prepared[0], rawdoc! { "_id": "second", "a": 1 });
    assert_eq!(prepared[1], sent[1]);
    assert_eq!(prepared[2].iter().next().unwrap().unwrap().0, "_id");
    let statement = InsertStatement {
        docs: Arc::new(prepared),
        ordered: true,
        bypass_validation: false,
        prepared: true,
    };
    let out = statement::insert_with(&engine, &coll, statement).unwrap();
    assert_eq!((out.n, out.errors.len()), (3, 0));
    assert_eq!(stored(&engine), 3);

    // One invalid document: nothing is prepared, and the writer reports
    // it in its place.
    let sent = [rawdoc! { "_id": 7 }, rawdoc! { "_id": [1] }];
    let refs: Vec<&bson::RawDocument> = sent.iter().map(|d| d.as_ref()).collect();
    assert!(prepare_statement(&refs).is_none());
    let out = statement::insert(&engine, &coll, sent.to_vec(), false).unwrap();
    assert_eq!(out.n, 1);
    assert_eq!(out.errors[0].index, 1);
    assert_eq!(out.errors[0].error.kind, ErrorKind::BadValue);
}
