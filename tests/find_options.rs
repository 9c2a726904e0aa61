//! `find` options and projection operators end to end: `batchSize: 0`,
//! `$slice`, `$elemMatch` and positional `$` projections, `maxTimeMS`,
//! projections of many fields.
//! Each test names the manual page or jstest its expected results come
//! from.

use crate::common::{TestNode, big_padded_collection, create_index, expect_code};
use futures::TryStreamExt;
use mongodb::bson::{Document, doc};
use mongodb::{Collection, Database};

async fn numbers(node: &TestNode, n: i32) -> (Database, Collection<Document>) {
    let db = node.db("t").await;
    let c = db.collection::<Document>("f");
    let docs: Vec<Document> = (0..n).map(|i| doc! { "_id": i, "x": i }).collect();
    c.insert_many(docs).await.unwrap();
    (db, c)
}

fn first_batch(reply: &Document) -> (i64, usize) {
    let cursor = reply.get_document("cursor").unwrap();
    (
        cursor.get_i64("id").unwrap(),
        cursor.get_array("firstBatch").unwrap().len(),
    )
}

/// The manual's `find` command page: "A batchSize of 0 means that the
/// cursor will be established, but no documents will be returned in the
/// first batch"; the documents then come from `getMore`.
#[tokio::test]
async fn batch_size_zero_returns_an_empty_first_batch_and_a_live_cursor() {
    let node = TestNode::start();
    let (db, _c) = numbers(&node, 5).await;
    let reply = db
        .run_command(doc! { "find": "f", "batchSize": 0 })
        .await
        .unwrap();
    let (id, n) = first_batch(&reply);
    assert_eq!(n, 0);
    assert_ne!(id, 0);
    let more = db
        .run_command(doc! { "getMore": id, "collection": "f" })
        .await
        .unwrap();
    let cursor = more.get_document("cursor").unwrap();
    assert_eq!(cursor.get_array("nextBatch").unwrap().len(), 5);
    assert_eq!(cursor.get_i64("id").unwrap(), 0);
}

/// The manual's `aggregate` command page: `cursor: {batchSize: 0}` returns
/// an empty first batch, the results come from `getMore`.
#[tokio::test]
async fn aggregate_batch_size_zero_returns_an_empty_first_batch() {
    let node = TestNode::start();
    let (db, _c) = numbers(&node, 3).await;
    let reply = db
        .run_command(doc! {
            "aggregate": "f",
            "pipeline": [{ "$match": { "x": { "$gte": 1 } } }],
            "cursor": { "batchSize": 0 },
        })
        .await
        .unwrap();
    let (id, n) = first_batch(&reply);
    assert_eq!(n, 0);
    assert_ne!(id, 0);
    let more = db
        .run_command(doc! { "getMore": id, "collection": "f", "batchSize": 1 })
        .await
        .unwrap();
    let cursor = more.get_document("cursor").unwrap();
    assert_eq!(cursor.get_array("nextBatch").unwrap().len(), 1);
    assert_eq!(cursor.get_i64("id").unwrap(), id);
}

async fn find_one_projected(
    c: &Collection<Document>,
    filter: Document,
    projection: Document,
) -> Document {
    c.find_one(filter)
        .projection(projection)
        .await
        .unwrap()
        .expect("a match")
}

/// The manual's `$slice` (projection) page and
/// jstests/core/query/projection/slice*.js: `n`, `-n`, `[skip, limit]`,
/// and the errors of bad forms.
#[tokio::test]
async fn slice_projection_returns_part_of_an_array() {
    let node = TestNode::start();
    let c = node.coll("t", "s").await;
    c.insert_one(doc! { "_id": 1, "a": [1, 2, 3, 4, 5], "b": "x" })
        .await
        .unwrap();
    let p = |spec| find_one_projected(&c, doc! {}, spec);
    assert_eq!(
        p(doc! { "a": { "$slice": 2 } }).await,
        doc! { "_id": 1, "a": [1, 2], "b": "x" }
    );
    assert_eq!(
        p(doc! { "a": { "$slice": -2 } }).await,
        doc! { "_id": 1, "a": [4, 5], "b": "x" }
    );
    assert_eq!(
        p(doc! { "a": { "$slice": [1, 3] }, "_id": 0, "b": 1 }).await,
        doc! { "a": [2, 3, 4], "b": "x" }
    );
    let bad = c
        .find_one(doc! {})
        .projection(doc! { "a": { "$slice": [1, 0] } })
        .await;
    assert_eq!(
        expect_code(bad, 31259),
        "$slice limit must be positive, got 0"
    );
    let bad = c
        .find_one(doc! {})
        .projection(doc! { "a": { "$slice": [1] } })
        .await;
    expect_code(bad, 31272);
    // The manual's findAndModify page: `fields` takes find's projection.
    let got = c
        .find_one_and_update(doc! { "_id": 1 }, doc! { "$set": { "b": "y" } })
        .projection(doc! { "a": { "$slice": 1 } })
        .return_document(mongodb::options::ReturnDocument::After)
        .await
        .unwrap();
    assert_eq!(got, Some(doc! { "_id": 1, "a": [1], "b": "y" }));
}

/// The manual's `$elemMatch` (projection) page and
/// jstests/core/query/projection/elemmatch_projection.js: the first
/// matching element only, after the other included fields; no match, no
/// field.
#[tokio::test]
async fn elem_match_projection_returns_the_first_matching_element() {
    let node = TestNode::start();
    let c = node.coll("t", "e").await;
    c.insert_many(vec![
        doc! { "_id": 1, "zip": 63109, "students": [
            { "name": "john", "school": 102, "age": 10 },
            { "name": "jess", "school": 102, "age": 11 },
            { "name": "jeff", "school": 108, "age": 15 },
        ] },
        doc! { "_id": 2, "zip": 63110, "students": [{ "name": "ajax", "school": 100, "age": 7 }] },
    ])
    .await
    .unwrap();
    let got = find_one_projected(
        &c,
        doc! { "_id": 1 },
        doc! { "students": { "$elemMatch": { "school": 102 } }, "zip": 1 },
    )
    .await;
    assert_eq!(
        got,
        doc! { "_id": 1, "zip": 63109, "students": [{ "name": "john", "school": 102, "age": 10 }] }
    );
    let got = find_one_projected(
        &c,
        doc! { "_id": 2 },
        doc! { "students": { "$elemMatch": { "school": 102 } } },
    )
    .await;
    assert_eq!(got, doc! { "_id": 2 });
    let bad = c
        .find_one(doc! {})
        .projection(doc! { "students.name": { "$elemMatch": { "x": 1 } } })
        .await;
    assert_eq!(
        expect_code(bad, 31275),
        "Cannot use $elemMatch projection on a nested field."
    );
}

/// The manual's `$` (projection) page and
/// jstests/core/query/projection/positional_projection.js: the element the
/// query matched, and mongod's errors for a field the query does not name
/// or a second positional.
#[tokio::test]
async fn positional_projection_returns_the_matched_element() {
    let node = TestNode::start();
    let c = node.coll("t", "p").await;
    c.insert_many(vec![
        doc! { "_id": 1, "semester": 1, "grades": [70, 87, 90] },
        doc! { "_id": 2, "semester": 1, "grades": [90, 88, 92] },
        doc! { "_id": 3, "semester": 1, "grades": [85, 100, 90] },
    ])
    .await
    .unwrap();
    let got: Vec<Document> = futures::TryStreamExt::try_collect(
        c.find(doc! { "semester": 1, "grades": { "$gte": 85 } })
            .projection(doc! { "grades.$": 1 })
            .sort(doc! { "_id": 1 })
            .await
            .unwrap(),
    )
    .await
    .unwrap();
    assert_eq!(
        got,
        vec![
            doc! { "_id": 1, "grades": [87] },
            doc! { "_id": 2, "grades": [90] },
            doc! { "_id": 3, "grades": [85] },
        ]
    );
    let bad = c
        .find_one(doc! { "semester": 1 })
        .projection(doc! { "grades.$": 1 })
        .await;
    assert_eq!(
        expect_code(bad, 31277),
        "Positional projection 'grades.$' does not match the query document."
    );
    let bad = c
        .find_one(doc! { "grades": 90 })
        .projection(doc! { "grades.$": 1, "semester.$": 1 })
        .await;
    expect_code(bad, 31276);
}

/// The manual's `cursor.maxTimeMS()` page and jstests/core/max_time_ms.js:
/// a scan that runs past its limit fails with MaxTimeMSExpired (50) on
/// find, count, distinct, aggregate and the writes' search for their
/// targets (a whole-command error, as mongod fails a write batch it
/// interrupts); a generous limit changes nothing.
#[tokio::test]
async fn max_time_ms_stops_a_long_scan_with_max_time_ms_expired() {
    let node = TestNode::start();
    let db = node.db("t").await;
    let c = db.collection::<Document>("slow");
    let docs: Vec<Document> = (0..50_000)
        .map(|i| doc! { "_id": i, "x": i, "pad": "p".repeat(64) })
        .collect();
    c.insert_many(docs).await.unwrap();
    // No document matches, so every command scans the whole collection.
    let none = doc! { "x": { "$lt": 0 } };
    for cmd in [
        doc! { "find": "slow", "filter": none.clone(), "maxTimeMS": 1 },
        doc! { "count": "slow", "query": none.clone(), "maxTimeMS": 1 },
        doc! { "distinct": "slow", "key": "x", "query": none.clone(), "maxTimeMS": 1 },
        doc! { "aggregate": "slow", "pipeline": [{ "$match": none.clone() }], "cursor": {}, "maxTimeMS": 1 },
        doc! { "update": "slow", "updates": [{ "q": none.clone(), "u": { "$set": { "y": 1 } }, "multi": true }], "maxTimeMS": 1 },
        doc! { "delete": "slow", "deletes": [{ "q": none.clone(), "limit": 0 }], "maxTimeMS": 1 },
        doc! { "findAndModify": "slow", "query": none.clone(), "remove": true, "maxTimeMS": 1 },
    ] {
        let msg = expect_code(db.run_command(cmd.clone()).await, 50);
        assert_eq!(msg, "operation exceeded time limit", "{cmd}");
    }
    let reply = db
        .run_command(
            doc! { "count": "slow", "query": { "x": { "$gte": 49_990 } }, "maxTimeMS": 600_000 },
        )
        .await
        .unwrap();
    assert_eq!(reply.get_i32("n").unwrap(), 10);
}

/// mongod's errors for bad `maxTimeMS` values (BadValue 2), as MongoDB
/// returns them (FerretDB's compatibility suite records them against
/// mongod: "maxTimeMS must be a number", "... is out of range",
/// "maxTimeMS has non-integral value").
#[tokio::test]
async fn bad_max_time_ms_values_are_refused() {
    let node = TestNode::start();
    let (db, _c) = numbers(&node, 1).await;
    for (value, message) in [
        (
            mongodb::bson::Bson::String("x".into()),
            "maxTimeMS must be a number",
        ),
        (
            mongodb::bson::Bson::Int32(-1),
            "-1 value for maxTimeMS is out of range",
        ),
        (
            mongodb::bson::Bson::Int64(i64::MAX),
            "9223372036854775807 value for maxTimeMS is out of range",
        ),
        (
            mongodb::bson::Bson::Double(43.15),
            "maxTimeMS has non-integral value",
        ),
    ] {
        let r = db
            .run_command(doc! { "find": "f", "maxTimeMS": value })
            .await;
        assert_eq!(expect_code(r, 2), message);
    }
    let reply = db
        .run_command(doc! { "find": "f", "maxTimeMS": 0.0, "batchSize": 0 })
        .await
        .unwrap();
    let (id, _) = first_batch(&reply);
    // A getMore's own maxTimeMS is for awaitData cursors only.
    let r = db
        .run_command(doc! { "getMore": id, "collection": "f", "maxTimeMS": 10 })
        .await;
    expect_code(r, 2);
}

/// jstests/core/query/return_key.js: `returnKey` returns the index key of
/// each result (`{a: 3}` through index `{a: 1}`), `{}` for a collection
/// scan, and in the index's order.
#[tokio::test]
async fn return_key_returns_the_index_key() {
    let node = TestNode::start();
    let c = node.coll("t", "rk").await;
    c.insert_many(vec![
        doc! { "_id": 1, "a": 3, "b": 1 },
        doc! { "_id": 2, "a": 2, "b": 2 },
        doc! { "_id": 3, "a": 1, "b": 3 },
    ])
    .await
    .unwrap();
    create_index(&c, doc! { "a": 1 }).await;
    let db = node.db("t").await;
    let batch = |reply: Document| -> Vec<Document> {
        reply
            .get_document("cursor")
            .unwrap()
            .get_array("firstBatch")
            .unwrap()
            .iter()
            .map(|d| d.as_document().unwrap().clone())
            .collect()
    };
    let reply = db
        .run_command(doc! { "find": "rk", "hint": { "a": 1 }, "returnKey": true })
        .await
        .unwrap();
    assert_eq!(
        batch(reply),
        vec![doc! { "a": 1 }, doc! { "a": 2 }, doc! { "a": 3 }]
    );
    let reply = db
        .run_command(doc! { "find": "rk", "filter": { "b": 2 }, "returnKey": true, "projection": { "b": 1 } })
        .await
        .unwrap();
    assert_eq!(batch(reply), vec![doc! {}]);
}

/// ebb keeps records by `_id` and has no record ids: `showRecordId` is
/// refused as not implemented (238) rather than answered with made-up
/// numbers (the manual's `find` command page describes `$recordId`).
#[tokio::test]
async fn show_record_id_is_refused_as_not_implemented() {
    let node = TestNode::start();
    let (db, _c) = numbers(&node, 1).await;
    let r = db
        .run_command(doc! { "find": "f", "showRecordId": true })
        .await;
    expect_code(r, 238);
    db.run_command(doc! { "find": "f", "showRecordId": false })
        .await
        .unwrap();
}

/// jstests/core/query/min_max/*.js and the manual's `cursor.min()` /
/// `cursor.max()` pages: the hinted index from `min` (inclusive) to `max`
/// (exclusive), and mongod's errors 51173 (no hint), 51174 (bounds not
/// the key pattern), 51175 (min not before max), 51176 (fields differ).
#[tokio::test]
async fn min_and_max_bound_the_hinted_index() {
    let node = TestNode::start();
    let c = node.coll("t", "mm").await;
    let docs: Vec<Document> = (0..10)
        .map(|i| doc! { "_id": i, "a": i, "b": 10 - i })
        .collect();
    c.insert_many(docs).await.unwrap();
    create_index(&c, doc! { "a": 1 }).await;
    create_index(&c, doc! { "b": -1 }).await;
    let ids = |min: Document, max: Document, hint: Document| {
        let c = c.clone();
        async move {
            let found: Vec<Document> = futures::TryStreamExt::try_collect(
                c.find(doc! {})
                    .min(min)
                    .max(max)
                    .hint(mongodb::options::Hint::Keys(hint))
                    .sort(doc! { "_id": 1 })
                    .await
                    .unwrap(),
            )
            .await
            .unwrap();
            found
                .iter()
                .map(|d| d.get_i32("_id").unwrap())
                .collect::<Vec<i32>>()
        }
    };
    assert_eq!(
        ids(doc! { "a": 3 }, doc! { "a": 6 }, doc! { "a": 1 }).await,
        vec![3, 4, 5]
    );
    assert_eq!(
        ids(doc! { "a": 7 }, doc! {}, doc! { "a": 1 }).await,
        vec![7, 8, 9]
    );
    // Descending index: b from 8 down to (not including) 5.
    assert_eq!(
        ids(doc! { "b": 8 }, doc! { "b": 5 }, doc! { "b": -1 }).await,
        vec![2, 3, 4]
    );
    assert_eq!(
        ids(doc! { "_id": 8 }, doc! {}, doc! { "_id": 1 }).await,
        vec![8, 9]
    );
    let db = node.db("t").await;
    for (cmd, code) in [
        (doc! { "find": "mm", "min": { "a": 3 } }, 51173),
        (
            doc! { "find": "mm", "min": { "b": 3 }, "hint": { "a": 1 } },
            51174,
        ),
        (
            doc! { "find": "mm", "min": { "a": 6 }, "max": { "a": 3 }, "hint": { "a": 1 } },
            51175,
        ),
        (
            doc! { "find": "mm", "min": { "a": 3 }, "max": { "b": 6 }, "hint": { "a": 1 } },
            51176,
        ),
    ] {
        expect_code(db.run_command(cmd).await, code);
    }
}

/// A sort past the 100 MiB in-memory limit fails with 292 unless the
/// client allows disk use or limits the results (a top-k sort holds only
/// those); with `allowDiskUse: true` it spills sorted runs
/// to `<dbpath>/_tmp` and merges them (manual, `cursor.allowDiskUse()`;
/// jstests/core/query/sort/sort_big_objects.js and
/// jstests/noPassthrough/query/external_sort_find.js).
#[tokio::test]
async fn sort_past_the_memory_limit_spills_with_allow_disk_use() {
    let node = TestNode::start();
    let db = node.db("t").await;
    let c = big_padded_collection(&db).await;
    let r = db
        .run_command(
            doc! { "find": "big", "filter": {}, "sort": { "k": 1 }, "projection": { "pad": 0 } },
        )
        .await;
    expect_code(r, 292);
    // With a limit only the best skip + limit are held (a top-k sort), so
    // no disk is needed, as in mongod's top-k sort.
    let top: Vec<i32> = c
        .find(doc! {})
        .sort(doc! { "k": 1 })
        .projection(doc! { "pad": 0 })
        .skip(2)
        .limit(5)
        .await
        .unwrap()
        .try_collect::<Vec<Document>>()
        .await
        .unwrap()
        .iter()
        .map(|d| d.get_i32("k").unwrap())
        .collect();
    assert_eq!(top, [2, 3, 4, 5, 6]);
    let mut cursor = c
        .find(doc! {})
        .sort(doc! { "k": -1 })
        .projection(doc! { "pad": 0 })
        .allow_disk_use(true)
        .skip(5)
        .await
        .unwrap();
    let mut keys = Vec::new();
    while let Some(d) = cursor.try_next().await.unwrap() {
        keys.push(d.get_i32("k").unwrap());
    }
    let expected: Vec<i32> = (0..1100).rev().skip(5).collect();
    assert_eq!(keys.len(), expected.len());
    assert!(
        keys == expected,
        "first {:?}, last {:?}",
        &keys[..3],
        keys.last()
    );
}

/// MongoDB 4.4+ find projections take aggregation expressions and
/// literals (manual, "Project Fields to Return from Query": "Projection
/// with Aggregation Expressions"), seeing the command's `let` and `$$NOW`.
#[tokio::test]
async fn find_projection_computes_fields() {
    let node = TestNode::start();
    let db = node.db("t").await;
    let c = db.collection::<Document>("pc");
    c.insert_many(vec![
        doc! { "_id": 1, "a": 2, "b": 3, "name": "x" },
        doc! { "_id": 2, "a": 10, "b": -4, "name": "y" },
    ])
    .await
    .unwrap();
    let reply = db
        .run_command(doc! {
            "find": "pc", "filter": {}, "sort": { "_id": 1 },
            "projection": { "_id": 0, "name": 1, "total": { "$add": ["$a", "$b"] },
                            "scaled": { "$multiply": ["$a", "$$k"] }, "tag": "fixed" },
            "let": { "k": 10 },
        })
        .await
        .unwrap();
    let batch = reply
        .get_document("cursor")
        .unwrap()
        .get_array("firstBatch")
        .unwrap();
    let first = batch[0].as_document().unwrap();
    assert_eq!(
        first,
        &doc! { "name": "x", "total": 5, "scaled": 20, "tag": "fixed" }
    );
    assert_eq!(batch[1].as_document().unwrap().get_i32("total").unwrap(), 6);
    let r = db
        .run_command(doc! { "find": "pc", "filter": {}, "projection": { "x": { "$nope": 1 } } })
        .await;
    expect_code(r, 168);
}

/// A find projection may mix `$slice` with computed fields (MongoDB 4.4+):
/// the computed field makes it an inclusion, which includes the sliced
/// array as `{a: 1}` would.
#[tokio::test]
async fn slice_projection_mixes_with_computed_fields() {
    let node = TestNode::start();
    let c = node.coll("t", "sc").await;
    c.insert_one(doc! { "_id": 1, "a": [1, 2, 3, 4, 5], "b": "x", "c": 1 })
        .await
        .unwrap();
    let p = |spec| find_one_projected(&c, doc! {}, spec);
    assert_eq!(
        p(doc! { "a": { "$slice": 2 }, "k": { "$literal": 7 } }).await,
        doc! { "_id": 1, "a": [1, 2], "k": 7 }
    );
    assert_eq!(
        p(doc! { "_id": 0, "a": { "$slice": [1, 2] }, "k": { "$add": ["$c", 1] } }).await,
        doc! { "a": [2, 3], "k": 2 }
    );
}

/// A projection naming 200,000 fields over 50,000 documents is answered,
/// and other clients are served while it runs: parsing and applying a
/// projection takes time linear in its size, not in its size squared.
#[tokio::test]
async fn a_projection_of_200000_fields_is_answered_while_others_are_served() {
    let node = TestNode::start();
    let db = node.db("t").await;
    let c = db.collection::<Document>("wide");
    let docs: Vec<Document> = (0..50_000)
        .map(|i| doc! { "_id": i, "f3": i, "f199998": "kept", "other": i })
        .collect();
    c.insert_many(docs).await.unwrap();
    let mut projection = Document::new();
    for i in 0..200_000 {
        projection.insert(format!("f{i}"), 1);
    }
    let pinger = node.client().await;
    let wide = async {
        let found: Vec<Document> = c
            .find(doc! {})
            .projection(projection)
            .await
            .unwrap()
            .try_collect()
            .await
            .unwrap();
        found
    };
    let pings = async {
        let admin = pinger.database("admin");
        let mut answered = 0;
        loop {
            admin.run_command(doc! { "ping": 1 }).await.unwrap();
            answered += 1;
            if answered == 20 {
                return answered;
            }
        }
    };
    let (found, answered) = tokio::join!(wide, pings);
    assert_eq!(answered, 20);
    assert_eq!(found.len(), 50_000);
    assert_eq!(found[7], doc! { "_id": 7, "f3": 7, "f199998": "kept" });
}
