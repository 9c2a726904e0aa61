//! Index commands and index use, end to end.

use crate::common::{TestNode, expect_code};
use futures::TryStreamExt;
use mongodb::IndexModel;
use mongodb::bson::{Bson, Document, doc};
use mongodb::options::IndexOptions;

fn names(indexes: &[Document]) -> Vec<String> {
    indexes
        .iter()
        .map(|i| i.get_str("name").unwrap().to_owned())
        .collect()
}

async fn list(db: &mongodb::Database, coll: &str) -> Vec<Document> {
    let r = db
        .run_command(doc! { "listIndexes": coll, "cursor": {} })
        .await
        .unwrap();
    r.get_document("cursor")
        .unwrap()
        .get_array("firstBatch")
        .unwrap()
        .iter()
        .map(|b| b.as_document().unwrap().clone())
        .collect()
}

#[tokio::test]
async fn create_list_and_drop_indexes_of_every_shape() {
    let node = TestNode::start();
    let db = node.db("ix").await;
    let r = db
        .run_command(doc! { "createIndexes": "c", "indexes": [
            { "key": { "a": 1 }, "name": "a_1" },
            { "key": { "b": -1, "c": 1 }, "name": "b_-1_c_1", "unique": true },
            { "key": { "s": 1 }, "name": "s_1", "sparse": true },
            { "key": { "p": 1 }, "name": "p_1", "partialFilterExpression": { "p": { "$gt": 5 } } },
            { "key": { "n.m": 1 }, "name": "custom" },
        ] })
        .await
        .unwrap();
    assert_eq!(r.get_i32("numIndexesBefore").unwrap(), 1);
    assert_eq!(r.get_i32("numIndexesAfter").unwrap(), 6);
    assert!(r.get_bool("createdCollectionAutomatically").unwrap());

    let listed = list(&db, "c").await;
    assert_eq!(
        names(&listed),
        ["_id_", "a_1", "b_-1_c_1", "s_1", "p_1", "custom"]
    );
    assert_eq!(
        listed[0],
        doc! { "v": 2, "key": { "_id": 1 }, "name": "_id_" }
    );
    assert_eq!(
        listed[2],
        doc! { "v": 2, "key": { "b": -1, "c": 1 }, "name": "b_-1_c_1", "unique": true }
    );
    assert!(listed[3].get_bool("sparse").unwrap());
    assert_eq!(
        listed[4].get_document("partialFilterExpression").unwrap(),
        &doc! { "p": { "$gt": 5 } }
    );

    // The same spec again is a no-op with MongoDB's note.
    let again = db
        .run_command(
            doc! { "createIndexes": "c", "indexes": [{ "key": { "a": 1 }, "name": "a_1" }] },
        )
        .await
        .unwrap();
    assert_eq!(again.get_str("note").unwrap(), "all indexes already exist");
    assert_eq!(
        again.get_i32("numIndexesBefore").unwrap(),
        again.get_i32("numIndexesAfter").unwrap()
    );
    assert!(again.get("createdCollectionAutomatically").is_none());

    let r = db
        .run_command(doc! { "dropIndexes": "c", "index": { "b": -1, "c": 1 } })
        .await
        .unwrap();
    assert_eq!(r.get_i32("nIndexesWas").unwrap(), 6);
    db.run_command(doc! { "dropIndexes": "c", "index": "custom" })
        .await
        .unwrap();
    db.run_command(doc! { "dropIndexes": "c", "index": ["s_1", "p_1"] })
        .await
        .unwrap();
    assert_eq!(names(&list(&db, "c").await), ["_id_", "a_1"]);
    db.run_command(doc! { "dropIndexes": "c", "index": "*" })
        .await
        .unwrap();
    assert_eq!(names(&list(&db, "c").await), ["_id_"]);
}

#[tokio::test]
async fn index_errors_carry_mongodb_codes() {
    let node = TestNode::start();
    let db = node.db("ix").await;
    db.run_command(
        doc! { "createIndexes": "c", "indexes": [{ "key": { "a": 1 }, "name": "a_1" }] },
    )
    .await
    .unwrap();
    // Same name, other key pattern.
    expect_code(
        db.run_command(
            doc! { "createIndexes": "c", "indexes": [{ "key": { "b": 1 }, "name": "a_1" }] },
        )
        .await,
        86,
    );
    // Same key pattern, other name.
    let msg = expect_code(
        db.run_command(
            doc! { "createIndexes": "c", "indexes": [{ "key": { "a": 1 }, "name": "other" }] },
        )
        .await,
        85,
    );
    assert_eq!(msg, "Index already exists with a different name: a_1");
    expect_code(db.run_command(doc! { "createIndexes": "c", "indexes": [{ "key": { "a": 1 }, "name": "x", "bogus": 1 }] }).await, 197);
    expect_code(
        db.run_command(doc! { "createIndexes": "c", "indexes": [{ "key": {}, "name": "x" }] })
            .await,
        67,
    );
    expect_code(
        db.run_command(doc! { "dropIndexes": "c", "index": "_id_" })
            .await,
        72,
    );
    expect_code(
        db.run_command(doc! { "dropIndexes": "c", "index": "nope" })
            .await,
        27,
    );
    expect_code(
        db.run_command(doc! { "dropIndexes": "missing", "index": "a_1" })
            .await,
        26,
    );
    expect_code(db.run_command(doc! { "listIndexes": "missing" }).await, 26);
    // A `$` anywhere but a wildcard's last part is mongod's illegal name.
    let msg = expect_code(
        db.run_command(
            doc! { "createIndexes": "c", "indexes": [{ "key": { "a.$b": 1 }, "name": "w" }] },
        )
        .await,
        67,
    );
    assert!(msg.contains("illegal field name"), "{msg}");
    assert_eq!(list(&db, "c").await.len(), 2, "nothing was built");
    // dropDups is accepted and ignored, as mongod does for old clients.
    db.run_command(doc! { "createIndexes": "c", "indexes": [{ "key": { "d": 1 }, "name": "d_1", "dropDups": true }] })
        .await
        .unwrap();
    let d = list(&db, "c")
        .await
        .into_iter()
        .find(|i| i.get_str("name").is_ok_and(|n| n == "d_1"))
        .unwrap();
    assert!(!d.contains_key("dropDups"), "{d}");
}

#[tokio::test]
async fn unique_index_rejects_duplicates_on_insert_update_and_build() {
    let node = TestNode::start();
    let c = node.coll("ix", "users").await;
    c.create_index(
        IndexModel::builder()
            .keys(doc! { "email": 1 })
            .options(IndexOptions::builder().unique(true).build())
            .build(),
    )
    .await
    .unwrap();
    c.insert_one(doc! { "_id": 1, "email": "a" }).await.unwrap();
    c.insert_one(doc! { "_id": 2, "email": "b" }).await.unwrap();
    let msg = expect_code(c.insert_one(doc! { "_id": 3, "email": "a" }).await, 11000);
    assert_eq!(
        msg,
        r#"E11000 duplicate key error collection: ix.users index: email_1 dup key: { email: "a" }"#
    );
    expect_code(
        c.update_one(doc! { "_id": 2 }, doc! { "$set": { "email": "a" } })
            .await,
        11000,
    );
    // Two documents of one insert colliding with each other.
    expect_code(
        c.insert_many(vec![doc! { "email": "z" }, doc! { "email": "z" }])
            .await,
        11000,
    );
    assert_eq!(c.count_documents(doc! { "email": "z" }).await.unwrap(), 1);
    // Moving a value between documents in order is fine.
    c.update_one(doc! { "_id": 2 }, doc! { "$set": { "email": "c" } })
        .await
        .unwrap();
    c.update_one(doc! { "_id": 1 }, doc! { "$set": { "email": "b" } })
        .await
        .unwrap();

    // Building a unique index over existing duplicates fails and leaves no index.
    let other = node.coll("ix", "dups").await;
    other
        .insert_many(vec![doc! { "k": 1 }, doc! { "k": 1 }])
        .await
        .unwrap();
    let r = other
        .create_index(
            IndexModel::builder()
                .keys(doc! { "k": 1 })
                .options(IndexOptions::builder().unique(true).build())
                .build(),
        )
        .await;
    expect_code(r, 11000);
    let names: Vec<String> = other.list_index_names().await.unwrap();
    assert_eq!(names, ["_id_"]);
}

#[tokio::test]
async fn explain_shows_index_scan_with_bounds_for_a_range() {
    let node = TestNode::start();
    let c = node.coll("ix", "events").await;
    c.insert_many((0..100).map(|i| doc! { "t": i, "u": i % 3 }))
        .await
        .unwrap();
    c.create_index(IndexModel::builder().keys(doc! { "t": 1 }).build())
        .await
        .unwrap();
    let db = node.db("ix").await;
    let e = db.run_command(doc! { "explain": { "find": "events", "filter": { "t": { "$gte": 10, "$lt": 20 } } }, "verbosity": "executionStats" }).await.unwrap();
    let plan = e
        .get_document("queryPlanner")
        .unwrap()
        .get_document("winningPlan")
        .unwrap();
    assert_eq!(plan.get_str("stage").unwrap(), "FETCH");
    let ixscan = plan.get_document("inputStage").unwrap();
    assert_eq!(ixscan.get_str("stage").unwrap(), "IXSCAN");
    assert_eq!(ixscan.get_str("indexName").unwrap(), "t_1");
    assert_eq!(
        ixscan.get_document("indexBounds").unwrap(),
        &doc! { "t": ["[10, 20)"] }
    );
    let stats = e.get_document("executionStats").unwrap();
    assert_eq!(stats.get_i64("nReturned").unwrap(), 10);
    assert_eq!(stats.get_i64("totalDocsExamined").unwrap(), 10);

    let collscan = db
        .run_command(doc! { "explain": { "find": "events", "filter": { "u": 1 } } })
        .await
        .unwrap();
    let stage = collscan
        .get_document("queryPlanner")
        .unwrap()
        .get_document("winningPlan")
        .unwrap()
        .get_str("stage")
        .unwrap()
        .to_owned();
    assert_eq!(stage, "COLLSCAN");
}

/// The `_id`s of documents, sorted (NaN values make whole documents
/// unequal to themselves, so results are compared by identity).
fn ids(docs: Vec<Document>) -> Vec<i32> {
    let mut ids: Vec<i32> = docs.iter().map(|d| d.get_i32("_id").unwrap()).collect();
    ids.sort_unstable();
    ids
}

/// Every query returns the same documents, in the same order when sorted,
/// with and without an index.
#[tokio::test]
async fn results_are_identical_with_and_without_an_index() {
    let node = TestNode::start();
    let c = node.coll("ix", "mixed").await;
    let values: Vec<Bson> = vec![
        Bson::Int32(1),
        Bson::Double(1.0),
        Bson::Int64(2),
        Bson::Double(2.5),
        Bson::String("a".into()),
        Bson::String("b".into()),
        Bson::Null,
        Bson::Boolean(true),
        Bson::Array(vec![Bson::Int32(1), Bson::Int32(9)]),
        Bson::Array(vec![]),
        Bson::Document(doc! { "x": 1 }),
        Bson::DateTime(mongodb::bson::DateTime::from_millis(5)),
        Bson::Int32(-7),
        Bson::Double(f64::NAN),
    ];
    let mut docs = Vec::new();
    for (i, v) in values.iter().enumerate() {
        for j in 0..3 {
            docs.push(doc! { "_id": (i * 3 + j) as i32, "v": v.clone(), "w": j as i32 });
        }
    }
    docs.push(doc! { "_id": 1000, "w": 1 });
    c.insert_many(docs).await.unwrap();
    let queries = vec![
        doc! { "v": 1 },
        doc! { "v": { "$gt": 1 } },
        doc! { "v": { "$gte": 1, "$lte": 2 } },
        doc! { "v": { "$lt": "b" } },
        doc! { "v": { "$in": [2, "a", 9] } },
        doc! { "v": null },
        doc! { "v": { "$exists": false } },
        doc! { "v": 9 },
        doc! { "v": { "$ne": 1 } },
        doc! { "v": { "$gt": mongodb::bson::DateTime::from_millis(0) } },
        doc! { "v": [] },
        doc! { "v": { "x": 1 } },
        doc! { "v": { "$lte": -7 } },
        doc! { "v": f64::NAN },
    ];
    let run = |index: bool, q: Document| {
        let c = c.clone();
        async move {
            let hint = if index {
                doc! { "v": 1 }
            } else {
                doc! { "$natural": 1 }
            };
            let out: Vec<Document> = c
                .find(q)
                .hint(mongodb::options::Hint::Keys(hint))
                .await
                .unwrap()
                .try_collect()
                .await
                .unwrap();
            ids(out)
        }
    };
    let sorted = |dir: i32| {
        let c = c.clone();
        async move {
            let docs: Vec<Document> = c
                .find(doc! {})
                .sort(doc! { "v": dir, "_id": 1 })
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
    let before: Vec<Vec<i32>> =
        futures::future::join_all(queries.iter().map(|q| run(false, q.clone()))).await;
    let unsorted_asc = sorted(1).await;
    let unsorted_desc = sorted(-1).await;
    c.create_index(IndexModel::builder().keys(doc! { "v": 1 }).build())
        .await
        .unwrap();
    for (q, expected) in queries.iter().zip(&before) {
        assert_eq!(&run(true, q.clone()).await, expected, "query {q}");
        let planned = ids(c
            .find(q.clone())
            .await
            .unwrap()
            .try_collect()
            .await
            .unwrap());
        assert_eq!(&planned, expected, "planned query {q}");
    }
    assert_eq!(sorted(1).await, unsorted_asc);
    assert_eq!(sorted(-1).await, unsorted_desc);
}

/// `background` is accepted and, as mongod keeps it in the spec, echoed by
/// listIndexes (jstests/core/index/index_background.js reads it back).
#[tokio::test]
async fn list_indexes_echoes_background() {
    let node = TestNode::start();
    let db = node.db("t").await;
    db.run_command(doc! { "createIndexes": "bg", "indexes": [
        { "key": { "a": 1 }, "name": "a_1", "background": true },
        { "key": { "b": 1 }, "name": "b_1" },
    ] })
    .await
    .unwrap();
    let raw = db.run_command(doc! { "listIndexes": "bg" }).await.unwrap();
    let batch = raw
        .get_document("cursor")
        .unwrap()
        .get_array("firstBatch")
        .unwrap();
    let spec = |name: &str| {
        batch
            .iter()
            .map(|d| d.as_document().unwrap())
            .find(|d| d.get_str("name").ok() == Some(name))
            .unwrap()
            .clone()
    };
    assert_eq!(spec("a_1").get_bool("background").ok(), Some(true));
    assert!(spec("b_1").get("background").is_none());
}

/// The winning plan's index, or `None` for a collection scan.
async fn planned_index(db: &mongodb::Database, command: Document) -> Option<String> {
    let e = db
        .run_command(doc! { "explain": command, "verbosity": "executionStats" })
        .await
        .unwrap();
    let mut stage = e
        .get_document("queryPlanner")
        .unwrap()
        .get_document("winningPlan")
        .unwrap()
        .clone();
    loop {
        match stage.get_str("stage").unwrap() {
            "COLLSCAN" => return None,
            "IXSCAN" => return Some(stage.get_str("indexName").unwrap().to_owned()),
            _ => stage = stage.get_document("inputStage").unwrap().clone(),
        }
    }
}

/// A partial index serves a query whose filter implies the index's, and
/// only then, with the same answers as a collection scan (mongod's
/// jstests/core/index/index_partial_read_ops.js cases).
#[tokio::test]
async fn a_partial_index_serves_queries_that_imply_its_filter() {
    let node = TestNode::start();
    let db = node.db("partial").await;
    let c = node.coll("partial", "p").await;
    c.create_index(
        IndexModel::builder()
            .keys(doc! { "x": 1 })
            .options(
                IndexOptions::builder()
                    .partial_filter_expression(doc! { "a": { "$lte": 1.5 } })
                    .build(),
            )
            .build(),
    )
    .await
    .unwrap();
    c.insert_many([
        doc! { "_id": 1, "x": 5, "a": 2 },
        doc! { "_id": 2, "x": 6, "a": 1 },
        doc! { "_id": 3, "x": 6, "a": [0, 3] },
        doc! { "_id": 4, "x": 6, "a": [3] },
    ])
    .await
    .unwrap();
    let cases = [
        (doc! { "x": 6, "a": 1 }, true, vec![2]),
        (doc! { "x": { "$gt": 1 }, "a": 1 }, true, vec![2]),
        (doc! { "x": 6, "a": { "$lte": 1 } }, true, vec![2, 3]),
        (doc! { "x": 6, "a": { "$in": [0, 1] } }, true, vec![2, 3]),
        (doc! { "x": 6, "a": { "$lt": 1.6 } }, false, vec![2, 3]),
        (doc! { "x": 6 }, false, vec![2, 3, 4]),
        (doc! { "x": { "$gt": 1 }, "a": 3 }, false, vec![3, 4]),
        (doc! { "x": 6, "a": { "$ne": 2 } }, false, vec![2, 3, 4]),
    ];
    for (filter, indexed, expected) in cases {
        let find = doc! { "find": "p", "filter": filter.clone() };
        let chosen = planned_index(&db, find).await;
        assert_eq!(chosen.as_deref(), indexed.then_some("x_1"), "{filter}");
        let found = c
            .find(filter.clone())
            .await
            .unwrap()
            .try_collect()
            .await
            .unwrap();
        let scanned = c
            .find(filter.clone())
            .hint(mongodb::options::Hint::Keys(doc! { "$natural": 1 }))
            .await
            .unwrap()
            .try_collect()
            .await
            .unwrap();
        assert_eq!(ids(found), expected, "{filter}");
        assert_eq!(ids(scanned), expected, "{filter}");
    }
    // count and aggregate plan the same way.
    let count = doc! { "count": "p", "query": { "x": { "$gt": 1 }, "a": 1 } };
    assert_eq!(planned_index(&db, count).await.as_deref(), Some("x_1"));
    let count = doc! { "count": "p", "query": { "x": { "$gt": 1 }, "a": 2 } };
    assert_eq!(planned_index(&db, count).await, None);
    let agg = doc! { "aggregate": "p", "pipeline": [{ "$match": { "x": { "$gt": 1 }, "a": 1 } }], "cursor": {} };
    assert_eq!(planned_index(&db, agg).await.as_deref(), Some("x_1"));

    // A partial filter with $or: a query implying either branch uses it.
    let o = node.coll("partial", "or").await;
    o.create_index(
        IndexModel::builder()
            .keys(doc! { "x": 1 })
            .options(
                IndexOptions::builder()
                    .partial_filter_expression(
                        doc! { "$or": [{ "a": 3 }, { "$and": [{ "a": 5 }, { "b": 5 }] }] },
                    )
                    .build(),
            )
            .build(),
    )
    .await
    .unwrap();
    o.insert_many([
        doc! { "_id": 1, "x": 1, "a": 1 },
        doc! { "_id": 2, "x": 2, "a": 5 },
        doc! { "_id": 3, "x": 3, "a": 5, "b": 1 },
        doc! { "_id": 4, "x": 4, "a": 3 },
        doc! { "_id": 5, "x": 5, "a": 5, "b": 5 },
    ])
    .await
    .unwrap();
    for (filter, indexed, expected) in [
        (doc! { "x": 4, "a": 3 }, true, vec![4]),
        (doc! { "x": 5, "a": 5, "b": 5 }, true, vec![5]),
        (doc! { "x": 2, "a": 5 }, false, vec![2]),
        (doc! { "x": 3, "a": 5, "b": 1 }, false, vec![3]),
    ] {
        let chosen = planned_index(&db, doc! { "find": "or", "filter": filter.clone() }).await;
        assert_eq!(chosen.as_deref(), indexed.then_some("x_1"), "{filter}");
        let found = o
            .find(filter.clone())
            .await
            .unwrap()
            .try_collect()
            .await
            .unwrap();
        assert_eq!(ids(found), expected, "{filter}");
    }
}
