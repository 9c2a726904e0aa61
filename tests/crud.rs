//! CRUD commands end to end through the Rust driver.

use crate::common::{TestNode, expect_code};
use futures::TryStreamExt;
use mongodb::bson::{Bson, Document, doc, oid::ObjectId};
use mongodb::options::ReturnDocument;

#[tokio::test]
async fn insert_then_find_round_trips_documents() {
    let node = TestNode::start();
    let c = node.coll("app", "things").await;
    let r = c
        .insert_many(vec![
            doc! { "_id": 1, "a": "x" },
            doc! { "_id": 2, "a": "y", "n": { "m": [1, 2] } },
        ])
        .await
        .unwrap();
    assert_eq!(r.inserted_ids.len(), 2);
    let all: Vec<Document> = c
        .find(doc! {})
        .sort(doc! { "_id": 1 })
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    assert_eq!(
        all,
        vec![
            doc! { "_id": 1, "a": "x" },
            doc! { "_id": 2, "a": "y", "n": { "m": [1, 2] } }
        ]
    );
}

#[tokio::test]
async fn server_generates_object_id_first_when_missing() {
    let node = TestNode::start();
    let db = node.db("app").await;
    db.run_command(doc! { "insert": "c", "documents": [{ "a": 1 }] })
        .await
        .unwrap();
    let d = db
        .collection::<Document>("c")
        .find_one(doc! {})
        .await
        .unwrap()
        .unwrap();
    assert_eq!(d.keys().next().unwrap(), "_id");
    assert!(matches!(d.get("_id"), Some(Bson::ObjectId(_))));
}

#[tokio::test]
async fn duplicate_id_is_a_write_error_with_e11000() {
    let node = TestNode::start();
    let c = node.coll("app", "dups").await;
    c.insert_one(doc! { "_id": 7 }).await.unwrap();
    let msg = expect_code(c.insert_one(doc! { "_id": 7.0 }).await, 11000);
    assert_eq!(
        msg,
        "E11000 duplicate key error collection: app.dups index: _id_ dup key: { _id: 7.0 }"
    );
}

/// Batches from concurrent clients arrive out of order; the late batch's
/// ids fall below ids already stored, and a second copy of any of them is
/// still a duplicate (the writer skips reads for keys it knows are free).
#[tokio::test]
async fn out_of_order_batches_still_find_every_duplicate() {
    let node = TestNode::start();
    let c = node.coll("app", "late").await;
    let batch = |ids: std::ops::Range<i32>| ids.map(|i| doc! { "_id": i }).collect::<Vec<_>>();
    c.insert_many(batch(0..10)).await.unwrap();
    c.insert_many(batch(30..40)).await.unwrap();
    c.insert_many(batch(20..30)).await.unwrap();
    c.insert_many(batch(10..15)).await.unwrap();
    for id in [0, 5, 9, 10, 14, 20, 25, 29, 30, 39] {
        let e = c.insert_one(doc! { "_id": id }).await;
        expect_code(e, 11000);
    }
    c.insert_many(batch(15..20)).await.unwrap();
    assert_eq!(c.count_documents(doc! {}).await.unwrap(), 40);
    for id in [15, 17, 19] {
        expect_code(c.insert_one(doc! { "_id": id }).await, 11000);
    }
    // A late batch with a duplicate of its own stops there (ordered).
    let mut dup = batch(40..45);
    dup.extend(batch(42..43));
    c.insert_many(batch(50..55)).await.unwrap();
    expect_code(c.insert_many(dup).await, 11000);
    assert_eq!(c.count_documents(doc! {}).await.unwrap(), 50);
}

#[tokio::test]
async fn ordered_insert_stops_at_first_error_unordered_continues() {
    let node = TestNode::start();
    let db = node.db("app").await;
    let r = db
        .run_command(doc! { "insert": "o", "documents": [{ "_id": 1 }, { "_id": 1 }, { "_id": 2 }], "ordered": true })
        .await
        .unwrap();
    assert_eq!(r.get_i32("n").unwrap(), 1);
    let errs = r.get_array("writeErrors").unwrap();
    assert_eq!(errs.len(), 1);
    assert_eq!(errs[0].as_document().unwrap().get_i32("index").unwrap(), 1);
    let r = db
        .run_command(doc! { "insert": "u", "documents": [{ "_id": 1 }, { "_id": 1 }, { "_id": 2 }], "ordered": false })
        .await
        .unwrap();
    assert_eq!(r.get_i32("n").unwrap(), 2);
}

#[tokio::test]
async fn filters_cover_the_comparison_and_logical_operators() {
    let node = TestNode::start();
    let c = node.coll("q", "ops").await;
    c.insert_many(vec![
        doc! { "_id": 1, "n": 1, "s": "a", "t": ["x", "y"] },
        doc! { "_id": 2, "n": 2.5, "s": "b", "t": ["y"] },
        doc! { "_id": 3, "n": 3i64, "s": "c" },
        doc! { "_id": 4, "s": "d", "sub": { "k": 1 } },
        doc! { "_id": 5, "n": "3", "sub": { "k": 2 } },
    ])
    .await
    .unwrap();
    let ids = |f: Document| {
        let c = c.clone();
        async move {
            let docs: Vec<Document> = c
                .find(f)
                .sort(doc! { "_id": 1 })
                .await
                .unwrap()
                .try_collect()
                .await
                .unwrap();
            docs.iter()
                .map(|d| d.get_i32("_id").unwrap())
                .collect::<Vec<_>>()
        }
    };
    assert_eq!(ids(doc! { "n": 3 }).await, vec![3]);
    assert_eq!(ids(doc! { "n": { "$ne": 3 } }).await, vec![1, 2, 4, 5]);
    assert_eq!(ids(doc! { "n": { "$gt": 1 } }).await, vec![2, 3]);
    assert_eq!(ids(doc! { "n": { "$gte": 1, "$lt": 3 } }).await, vec![1, 2]);
    assert_eq!(ids(doc! { "n": { "$lte": 2.5 } }).await, vec![1, 2]);
    assert_eq!(ids(doc! { "n": { "$in": [1, "3"] } }).await, vec![1, 5]);
    assert_eq!(ids(doc! { "n": { "$nin": [1, 2.5] } }).await, vec![3, 4, 5]);
    assert_eq!(ids(doc! { "n": { "$exists": false } }).await, vec![4]);
    assert_eq!(
        ids(doc! { "$and": [{ "s": { "$gte": "b" } }, { "s": { "$lte": "c" } }] }).await,
        vec![2, 3]
    );
    assert_eq!(
        ids(doc! { "$or": [{ "_id": 1 }, { "sub.k": 2 }] }).await,
        vec![1, 5]
    );
    assert_eq!(
        ids(doc! { "n": { "$not": { "$gt": 1 } } }).await,
        vec![1, 4, 5]
    );
    assert_eq!(ids(doc! { "t": "y" }).await, vec![1, 2]);
    assert_eq!(ids(doc! { "sub.k": { "$gte": 1 } }).await, vec![4, 5]);
    expect_code(c.find(doc! { "n": { "$bogus": 1 } }).await, 2);
}

#[tokio::test]
async fn find_supports_projection_sort_skip_limit_and_batches() {
    let node = TestNode::start();
    let c = node.coll("q", "pages").await;
    c.insert_many((0..250).map(|i| doc! { "_id": i, "v": i % 7, "w": "x" }))
        .await
        .unwrap();
    let docs: Vec<Document> = c
        .find(doc! { "v": { "$lt": 3 } })
        .sort(doc! { "v": -1, "_id": 1 })
        .skip(2)
        .limit(5)
        .projection(doc! { "w": 0 })
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    assert_eq!(
        docs,
        vec![
            doc! { "_id": 16, "v": 2 },
            doc! { "_id": 23, "v": 2 },
            doc! { "_id": 30, "v": 2 },
            doc! { "_id": 37, "v": 2 },
            doc! { "_id": 44, "v": 2 }
        ]
    );

    // 250 documents in batches of 20: getMore runs until the cursor ends.
    let all: Vec<Document> = c
        .find(doc! {})
        .batch_size(20)
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    assert_eq!(all.len(), 250);
    let db = node.db("q").await;
    let first = db
        .run_command(doc! { "find": "pages", "batchSize": 10 })
        .await
        .unwrap();
    let cursor = first.get_document("cursor").unwrap();
    let id = cursor.get_i64("id").unwrap();
    assert_ne!(id, 0);
    assert_eq!(cursor.get_str("ns").unwrap(), "q.pages");
    let killed = db
        .run_command(doc! { "killCursors": "pages", "cursors": [id] })
        .await
        .unwrap();
    assert_eq!(
        killed.get_array("cursorsKilled").unwrap(),
        &vec![Bson::Int64(id)]
    );
    expect_code(
        db.run_command(doc! { "getMore": id, "collection": "pages" })
            .await,
        43,
    );
}

#[tokio::test]
async fn find_on_missing_collection_is_empty_not_an_error() {
    let node = TestNode::start();
    let r = node
        .db("nope")
        .await
        .run_command(doc! { "find": "missing" })
        .await
        .unwrap();
    let cursor = r.get_document("cursor").unwrap();
    assert_eq!(cursor.get_i64("id").unwrap(), 0);
    assert!(cursor.get_array("firstBatch").unwrap().is_empty());
}

#[tokio::test]
async fn update_operators_upsert_and_multi() {
    let node = TestNode::start();
    let c = node.coll("u", "docs").await;
    c.insert_many(vec![
        doc! { "_id": 1, "n": 1, "gone": true },
        doc! { "_id": 2, "n": 5 },
    ])
    .await
    .unwrap();
    let r = c
        .update_one(doc! { "_id": 1 }, doc! { "$set": { "a.b": "x" }, "$unset": { "gone": "" }, "$inc": { "n": 2 }, "$currentDate": { "at": true } })
        .await
        .unwrap();
    assert_eq!((r.matched_count, r.modified_count), (1, 1));
    let d = c.find_one(doc! { "_id": 1 }).await.unwrap().unwrap();
    assert_eq!(d.get_i32("n").unwrap(), 3);
    assert_eq!(d.get_document("a").unwrap(), &doc! { "b": "x" });
    assert!(d.get("gone").is_none());
    assert!(matches!(d.get("at"), Some(Bson::DateTime(_))));

    let r = c
        .update_many(doc! {}, doc! { "$inc": { "n": 10 } })
        .await
        .unwrap();
    assert_eq!((r.matched_count, r.modified_count), (2, 2));

    let r = c
        .update_one(
            doc! { "_id": 9, "k": "v" },
            doc! { "$setOnInsert": { "fresh": true } },
        )
        .upsert(true)
        .await
        .unwrap();
    assert_eq!(r.upserted_id, Some(Bson::Int32(9)));
    assert_eq!(
        c.find_one(doc! { "_id": 9 }).await.unwrap().unwrap(),
        doc! { "_id": 9, "k": "v", "fresh": true }
    );

    // $setOnInsert does nothing to an existing document; a no-op is not a modification.
    let r = c
        .update_one(
            doc! { "_id": 9 },
            doc! { "$setOnInsert": { "fresh": false } },
        )
        .upsert(true)
        .await
        .unwrap();
    assert_eq!(
        (r.matched_count, r.modified_count, r.upserted_id),
        (1, 0, None)
    );

    let r = c
        .replace_one(doc! { "_id": 2 }, doc! { "only": 1 })
        .await
        .unwrap();
    assert_eq!(r.modified_count, 1);
    assert_eq!(
        c.find_one(doc! { "_id": 2 }).await.unwrap().unwrap(),
        doc! { "_id": 2, "only": 1 }
    );

    expect_code(
        c.update_one(doc! { "_id": 2 }, doc! { "$set": { "_id": 3 } })
            .await,
        66,
    );
    expect_code(
        c.update_one(doc! { "_id": 2 }, doc! { "$inc": { "only": "x" } })
            .await,
        14,
    );
}

#[tokio::test]
async fn delete_one_and_many() {
    let node = TestNode::start();
    let c = node.coll("d", "docs").await;
    c.insert_many((0..10).map(|i| doc! { "_id": i, "odd": i % 2 == 1 }))
        .await
        .unwrap();
    assert_eq!(
        c.delete_one(doc! { "odd": true })
            .await
            .unwrap()
            .deleted_count,
        1
    );
    assert_eq!(
        c.delete_many(doc! { "odd": true })
            .await
            .unwrap()
            .deleted_count,
        4
    );
    assert_eq!(c.count_documents(doc! {}).await.unwrap(), 5);
    let db = node.db("d").await;
    expect_code(
        db.run_command(doc! { "delete": "docs", "deletes": [{ "q": {}, "limit": 2 }] })
            .await,
        9,
    );
    expect_code(
        db.run_command(doc! { "delete": "docs", "deletes": [{ "q": {} }] })
            .await,
        40414,
    );
}

#[tokio::test]
async fn find_and_modify_returns_before_or_after() {
    let node = TestNode::start();
    let c = node.coll("f", "docs").await;
    c.insert_many(vec![doc! { "_id": 1, "n": 1 }, doc! { "_id": 2, "n": 2 }])
        .await
        .unwrap();
    let before = c
        .find_one_and_update(doc! {}, doc! { "$inc": { "n": 1 } })
        .sort(doc! { "n": -1 })
        .await
        .unwrap();
    assert_eq!(before, Some(doc! { "_id": 2, "n": 2 }));
    let after = c
        .find_one_and_update(doc! { "_id": 1 }, doc! { "$set": { "x": 1 } })
        .return_document(ReturnDocument::After)
        .projection(doc! { "_id": 0 })
        .await
        .unwrap();
    assert_eq!(after, Some(doc! { "n": 1, "x": 1 }));
    let removed = c.find_one_and_delete(doc! { "_id": 2 }).await.unwrap();
    assert_eq!(removed, Some(doc! { "_id": 2, "n": 3 }));
    assert_eq!(
        c.find_one_and_delete(doc! { "_id": 2 }).await.unwrap(),
        None
    );
    let up = c
        .find_one_and_replace(doc! { "_id": 5 }, doc! { "r": true })
        .upsert(true)
        .return_document(ReturnDocument::After)
        .await
        .unwrap();
    assert_eq!(up, Some(doc! { "_id": 5, "r": true }));
}

#[tokio::test]
async fn count_count_documents_distinct_and_aggregate() {
    let node = TestNode::start();
    let c = node.coll("a", "docs").await;
    c.insert_many(
        (0..100).map(|i| doc! { "_id": i, "g": i % 4, "tags": ["t", format!("t{}", i % 3)] }),
    )
    .await
    .unwrap();
    assert_eq!(c.estimated_document_count().await.unwrap(), 100);
    assert_eq!(
        c.count_documents(doc! { "g": 1 })
            .skip(5)
            .limit(10)
            .await
            .unwrap(),
        10
    );
    let mut d = c.distinct("tags", doc! {}).await.unwrap();
    d.sort_by_key(|b| b.to_string());
    assert_eq!(
        d,
        vec![
            Bson::from("t"),
            Bson::from("t0"),
            Bson::from("t1"),
            Bson::from("t2")
        ]
    );
    let groups: Vec<Document> = c
        .aggregate(vec![
            doc! { "$match": { "_id": { "$lt": 40 } } },
            doc! { "$group": { "_id": "$g", "n": { "$sum": 1 } } },
            doc! { "$sort": { "_id": 1 } },
        ])
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    assert_eq!(
        groups,
        (0..4)
            .map(|g| doc! { "_id": g, "n": 10 })
            .collect::<Vec<_>>()
    );
    let db = node.db("a").await;
    expect_code(
        db.run_command(doc! { "aggregate": "docs", "pipeline": [{ "$nope": {} }], "cursor": {} })
            .await,
        40324,
    );
    expect_code(
        db.run_command(doc! { "find": "docs", "limit": "x" }).await,
        14,
    );
    expect_code(
        db.run_command(doc! { "find": "docs", "filtr": {} }).await,
        40415,
    );
}

#[tokio::test]
async fn object_ids_and_dates_round_trip() {
    let node = TestNode::start();
    let c = node.coll("t", "types").await;
    let id = ObjectId::new();
    let when = mongodb::bson::DateTime::from_millis(-86_400_000);
    c.insert_one(doc! { "_id": id, "when": when, "d": 1.5, "l": 1i64 << 40 })
        .await
        .unwrap();
    let d = c.find_one(doc! { "_id": id }).await.unwrap().unwrap();
    assert_eq!(
        d,
        doc! { "_id": id, "when": when, "d": 1.5, "l": 1i64 << 40 }
    );
}

/// `$sum` in a `$group` adds exactly as `$inc` does: the same Decimal128
/// values give the same exact decimal (not a rounded double), and int32
/// totals widen to int64 past 2^31 in both.
#[tokio::test]
async fn group_sum_equals_inc_of_the_same_values() {
    let node = TestNode::start();
    let db = node.db("t").await;
    let values: Vec<Bson> = vec![
        Bson::Decimal128("0.1".parse().unwrap()),
        Bson::Decimal128("0.2".parse().unwrap()),
        Bson::Int32(i32::MAX),
        Bson::Int64(5),
        Bson::Decimal128("2.50".parse().unwrap()),
    ];
    let items = db.collection::<Document>("items");
    let totals = db.collection::<Document>("totals");
    totals.insert_one(doc! { "_id": 1, "s": 0 }).await.unwrap();
    for (i, v) in values.iter().enumerate() {
        items
            .insert_one(doc! { "_id": i as i32, "v": v.clone() })
            .await
            .unwrap();
        totals
            .update_one(doc! { "_id": 1 }, doc! { "$inc": { "s": v.clone() } })
            .await
            .unwrap();
    }
    let by_inc = totals
        .find_one(doc! { "_id": 1 })
        .await
        .unwrap()
        .unwrap()
        .get("s")
        .cloned()
        .unwrap();
    let mut cursor = items
        .aggregate(vec![
            doc! { "$group": { "_id": null, "s": { "$sum": "$v" } } },
        ])
        .await
        .unwrap();
    let group = cursor.try_next().await.unwrap().unwrap();
    assert_eq!(group.get("s"), Some(&by_inc));
    assert!(matches!(by_inc, Bson::Decimal128(_)), "{by_inc:?}");
}

/// mongod refuses a `$`-prefixed field anywhere in a document `_id`
/// (DollarPrefixedFieldName, "… is not valid for storage."), so nothing is
/// stored (jstests/core/write/insert/insert_id_undefined.js's neighbours,
/// `jstests/core/field_name_validation.js`).
#[tokio::test]
async fn dollar_prefixed_field_in_id_is_refused() {
    let node = TestNode::start();
    let c = node.coll("t", "ids").await;
    let msg = expect_code(c.insert_one(doc! { "_id": { "$a": 1 } }).await, 52);
    assert!(msg.contains("$a is not valid for storage"), "{msg}");
    expect_code(c.insert_one(doc! { "_id": { "a": { "$b": 1 } } }).await, 52);
    let upsert = c
        .update_one(
            doc! { "_id": { "$eq": { "$x": 1 } } },
            doc! { "$set": { "y": 1 } },
        )
        .upsert(true)
        .await;
    expect_code(upsert, 52);
    assert_eq!(c.count_documents(doc! {}).await.unwrap(), 0);
    c.insert_one(doc! { "_id": { "a": 1 } }).await.unwrap();
}

/// A write concern a standalone cannot satisfy is refused before the
/// command runs, with mongod's words (write_concern.cpp's
/// validateWriteConcern): `w > 1` is BadValue, `w > 50` FailedToParse.
#[tokio::test]
async fn unsatisfiable_write_concern_is_refused_on_a_standalone() {
    let node = TestNode::start();
    let db = node.db("t").await;
    let msg = expect_code(
        db.run_command(doc! { "create": "wc", "writeConcern": { "w": 50 } })
            .await,
        2,
    );
    assert_eq!(msg, "cannot use 'w' > 1 when a host is not replicated");
    expect_code(
        db.run_command(doc! { "create": "wc", "writeConcern": { "w": 51 } })
            .await,
        9,
    );
    expect_code(
        db.run_command(
            doc! { "insert": "wc", "documents": [{ "a": 1 }], "writeConcern": { "w": "dc1" } },
        )
        .await,
        2,
    );
    expect_code(
        db.run_command(
            doc! { "insert": "wc", "documents": [{ "a": 1 }], "writeConcern": { "w": 2 } },
        )
        .await,
        2,
    );
    assert!(
        !db.list_collection_names()
            .await
            .unwrap()
            .contains(&"wc".to_owned())
    );
    for ok in [
        doc! { "w": 1 },
        doc! { "w": 0 },
        doc! { "w": "majority", "j": true },
    ] {
        db.run_command(doc! { "insert": "wc", "documents": [{ "a": 1 }], "writeConcern": ok })
            .await
            .unwrap();
    }
}

/// mongod refuses a document with two `_id` fields (BadValue, "can't have
/// multiple _id fields in one document", insert.cpp fixDocumentForInsert) and
/// stores nothing of that insert.
#[tokio::test]
async fn a_document_with_two_ids_is_refused() {
    let node = TestNode::start();
    let c = node
        .db("app")
        .await
        .collection::<mongodb::bson::RawDocumentBuf>("twice");
    let mut twice = mongodb::bson::RawDocumentBuf::new();
    twice.append(mongodb::bson::raw::cstr!("_id"), 1);
    twice.append(mongodb::bson::raw::cstr!("_id"), 2);
    let message = expect_code(c.insert_one(twice).await, 2);
    assert_eq!(message, "can't have multiple _id fields in one document");
    assert_eq!(c.count_documents(doc! {}).await.unwrap(), 0);
}

/// `{a: {a: … {a: 1}}}` with `levels` levels, the document itself included.
fn nested(levels: usize) -> Document {
    let mut value = Bson::Int32(1);
    for _ in 1..levels {
        value = Bson::Document(doc! { "a": value });
    }
    doc! { "_id": 1, "a": value }
}

/// The manual's limit of 100 levels of nesting (limits page, "Nested Depth for
/// BSON Documents"): an insert or update past it fails with Overflow (15) and
/// nothing changes.
#[tokio::test]
async fn documents_nested_past_100_levels_are_refused() {
    let node = TestNode::start();
    let c = node.coll("app", "deep").await;
    c.insert_one(nested(100)).await.unwrap();
    let message = expect_code(c.insert_one(nested(101)).await, 15);
    assert_eq!(
        message,
        "cannot insert document because it exceeds 100 levels of nesting"
    );
    let message = expect_code(c.replace_one(doc! { "_id": 1 }, nested(101)).await, 15);
    assert_eq!(message, "Document exceeds maximum nesting depth of 100");
    let stored = c.find_one(doc! {}).await.unwrap().unwrap();
    assert_eq!(stored, nested(100));
    assert_eq!(c.count_documents(doc! {}).await.unwrap(), 1);
}

/// A `$in` of a million `_id`s (kept sorted, so each document is checked
/// by binary search, not against the whole list) returns exactly the
/// listed documents that exist; BENCHMARKS.md has its time.
#[tokio::test]
async fn in_with_a_million_ids_finds_the_listed_documents() {
    let node = TestNode::start();
    let c = node.coll("app", "many").await;
    let docs: Vec<Document> = (0..20_000).map(|i| doc! { "_id": i * 100 }).collect();
    c.insert_many(docs).await.unwrap();
    let ids: Vec<Bson> = (0..1_000_000).rev().map(Bson::Int32).collect();
    let started = std::time::Instant::now();
    let n = c
        .count_documents(doc! { "_id": { "$in": ids } })
        .await
        .unwrap();
    eprintln!("$in of 1,000,000 _ids: {:?}", started.elapsed());
    assert_eq!(n, 10_000, "every _id below 1,000,000 that exists");
}
