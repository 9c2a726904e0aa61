//! Read-only views, as drivers and mongosh use them: `create` with
//! `viewOn` and `pipeline`, reads through `find`, `aggregate`, `count` and
//! `distinct` (a view of a view too), `listCollections` showing them, and
//! mongod's errors for writes, indexes, cycles and writing stages.

use mongodb::Collection;
use mongodb::bson::{Document, doc};

use crate::common::{TestNode, code, expect_code};

async fn docs(c: &Collection<Document>, filter: Document) -> Vec<Document> {
    let mut out = Vec::new();
    let mut cursor = c.find(filter).await.unwrap();
    while cursor.advance().await.unwrap() {
        out.push(cursor.deserialize_current().unwrap());
    }
    out
}

#[tokio::test]
async fn a_view_reads_its_source_through_its_pipeline() {
    let node = TestNode::start();
    let db = node.db("v").await;
    let orders = node.coll("v", "orders").await;
    orders
        .insert_many((0..10).map(|i| {
            doc! { "_id": i, "status": if i % 2 == 0 { "open" } else { "done" }, "n": i, "tags": ["a", format!("t{}", i % 3)] }
        }))
        .await
        .unwrap();
    db.run_command(doc! {
        "create": "open",
        "viewOn": "orders",
        "pipeline": [{ "$match": { "status": "open" } }, { "$project": { "status": 0 } }],
    })
    .await
    .unwrap();
    // A view of the view.
    db.run_command(doc! {
        "create": "big_open",
        "viewOn": "open",
        "pipeline": [{ "$match": { "n": { "$gte": 4 } } }],
    })
    .await
    .unwrap();
    let open: Collection<Document> = db.collection("open");
    let big: Collection<Document> = db.collection("big_open");

    let all = docs(&open, doc! {}).await;
    assert_eq!(all.len(), 5);
    assert!(all.iter().all(|d| !d.contains_key("status")), "{all:?}");
    let found: Vec<i32> = {
        let mut cursor = open
            .find(doc! { "n": { "$gt": 2 } })
            .sort(doc! { "n": -1 })
            .skip(1)
            .limit(2)
            .projection(doc! { "_id": 0, "n": 1 })
            .await
            .unwrap();
        let mut out = Vec::new();
        while cursor.advance().await.unwrap() {
            out.push(cursor.deserialize_current().unwrap().get_i32("n").unwrap());
        }
        out
    };
    assert_eq!(found, [6, 4]);
    assert_eq!(
        docs(&big, doc! {})
            .await
            .iter()
            .map(|d| d.get_i32("n").unwrap())
            .collect::<Vec<_>>(),
        [4, 6, 8]
    );
    assert_eq!(open.count_documents(doc! {}).await.unwrap(), 5);
    assert_eq!(big.count_documents(doc! { "n": 8 }).await.unwrap(), 1);
    let n = db
        .run_command(doc! { "count": "open", "query": { "n": { "$lt": 5 } } })
        .await
        .unwrap();
    assert_eq!(n.get_i32("n").unwrap(), 3);
    let mut tags: Vec<String> = open
        .distinct("tags", doc! {})
        .await
        .unwrap()
        .into_iter()
        .map(|b| b.as_str().unwrap().to_owned())
        .collect();
    tags.sort();
    assert_eq!(tags, ["a", "t0", "t1", "t2"]);
    let mut grouped = open
        .aggregate([doc! { "$group": { "_id": null, "total": { "$sum": "$n" } } }])
        .await
        .unwrap();
    assert!(grouped.advance().await.unwrap());
    assert_eq!(
        grouped
            .deserialize_current()
            .unwrap()
            .get_i32("total")
            .unwrap(),
        20
    );

    // A batch at a time: the cursor is the view's.
    let mut cursor = open.find(doc! {}).batch_size(2).await.unwrap();
    let mut n = 0;
    while cursor.advance().await.unwrap() {
        n += 1;
    }
    assert_eq!(n, 5);

    // The source changes, the view follows.
    orders
        .insert_one(doc! { "_id": 10, "status": "open", "n": 10 })
        .await
        .unwrap();
    assert_eq!(big.count_documents(doc! {}).await.unwrap(), 4);

    // listCollections shows them, as mongod does.
    let listed = db
        .run_command(doc! { "listCollections": 1, "filter": { "type": "view" } })
        .await
        .unwrap();
    let batch = listed
        .get_document("cursor")
        .unwrap()
        .get_array("firstBatch")
        .unwrap();
    let names: Vec<&str> = batch
        .iter()
        .map(|d| d.as_document().unwrap().get_str("name").unwrap())
        .collect();
    assert_eq!(names, ["big_open", "open"]);
    let open_entry = batch[1].as_document().unwrap();
    assert_eq!(
        open_entry
            .get_document("options")
            .unwrap()
            .get_str("viewOn")
            .unwrap(),
        "orders"
    );
    assert!(
        open_entry
            .get_document("info")
            .unwrap()
            .get_bool("readOnly")
            .unwrap()
    );
    let names = db.list_collection_names().await.unwrap();
    assert!(names.contains(&"system.views".to_owned()), "{names:?}");

    // Dropped, a view is gone, and its source stays.
    db.run_command(doc! { "drop": "big_open" }).await.unwrap();
    assert!(
        !db.list_collection_names()
            .await
            .unwrap()
            .contains(&"big_open".to_owned())
    );
    assert_eq!(orders.count_documents(doc! {}).await.unwrap(), 11);
    // A view over nothing reads nothing.
    db.run_command(doc! { "create": "ghost", "viewOn": "missing" })
        .await
        .unwrap();
    let ghost: Collection<Document> = db.collection("ghost");
    assert!(docs(&ghost, doc! {}).await.is_empty());
}

#[tokio::test]
async fn a_view_refuses_writes_indexes_cycles_and_writing_stages() {
    let node = TestNode::start();
    let db = node.db("v").await;
    node.coll("v", "src")
        .await
        .insert_one(doc! { "_id": 1 })
        .await
        .unwrap();
    db.run_command(doc! { "create": "view", "viewOn": "src", "pipeline": [] })
        .await
        .unwrap();
    let view: Collection<Document> = db.collection("view");
    expect_code(view.insert_one(doc! { "x": 1 }).await, 166);
    expect_code(
        view.update_one(doc! {}, doc! { "$set": { "x": 1 } }).await,
        166,
    );
    expect_code(view.delete_many(doc! {}).await, 166);
    expect_code(
        view.find_one_and_update(doc! {}, doc! { "$set": { "x": 1 } })
            .await,
        166,
    );
    expect_code(
        db.run_command(
            doc! { "createIndexes": "view", "indexes": [{ "key": { "x": 1 }, "name": "x_1" }] },
        )
        .await,
        166,
    );
    // Nothing was created by those writes.
    assert_eq!(view.count_documents(doc! {}).await.unwrap(), 1);

    // Names are taken by collections and views alike.
    expect_code(
        db.run_command(doc! { "create": "view", "viewOn": "src" })
            .await,
        48,
    );
    expect_code(
        db.run_command(doc! { "create": "src", "viewOn": "view" })
            .await,
        48,
    );
    expect_code(db.run_command(doc! { "create": "view" }).await, 48);
    // A cycle, a writing stage, a bad option, a bad pipeline.
    db.run_command(doc! { "create": "a", "viewOn": "b" })
        .await
        .unwrap();
    expect_code(
        db.run_command(doc! { "create": "b", "viewOn": "a" }).await,
        142,
    );
    expect_code(
        db.run_command(doc! { "create": "w", "viewOn": "src", "pipeline": [{ "$out": "x" }] })
            .await,
        167,
    );
    expect_code(
        db.run_command(doc! { "create": "w", "viewOn": "src", "capped": true, "size": 10 })
            .await,
        72,
    );
    let e = db
        .run_command(doc! { "create": "w", "viewOn": "src", "pipeline": [{ "$nope": 1 }] })
        .await
        .unwrap_err();
    assert!(code(&e).is_some(), "{e}");
    expect_code(
        db.run_command(doc! { "create": "w", "viewOn": 5 }).await,
        14,
    );
    expect_code(
        db.run_command(doc! { "create": "w", "pipeline": [] }).await,
        72,
    );
    // explain of a view is refused rather than answered as a missing
    // collection's.
    expect_code(
        db.run_command(doc! { "explain": { "find": "view" } }).await,
        238,
    );
    // A find option a view cannot take.
    expect_code(
        db.run_command(doc! { "find": "view", "tailable": true })
            .await,
        167,
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_view_is_defined_through_a_sets_log_and_read_on_a_secondary() {
    use crate::common::set::{documents_of, eventually, initiated_set, primary_of};
    let root = tempfile::tempdir().unwrap();
    let (members, client) = initiated_set(root.path()).await;
    let db = client.database("t");
    db.collection::<Document>("src")
        .insert_many([doc! { "_id": 1, "k": "a" }, doc! { "_id": 2, "k": "b" }])
        .await
        .unwrap();
    db.run_command(doc! {
        "create": "only_a",
        "viewOn": "src",
        "pipeline": [{ "$match": { "k": "a" } }],
        "writeConcern": { "w": 3 },
    })
    .await
    .unwrap();
    let primary = primary_of(&members).await;
    for (i, m) in members.iter().enumerate() {
        if i == primary {
            continue;
        }
        // documents_of reads with secondaryPreferred on a direct client.
        eventually("a secondary serves the view", async || {
            documents_of(m, "only_a").await == [doc! { "_id": 1, "k": "a" }]
        })
        .await;
    }
}

#[tokio::test]
async fn lookup_and_union_with_read_a_view() {
    let node = TestNode::start();
    let db = node.db("v").await;
    node.coll("v", "users")
        .await
        .insert_many([
            doc! { "_id": 1, "name": "ann", "active": true },
            doc! { "_id": 2, "name": "bob", "active": false },
        ])
        .await
        .unwrap();
    node.coll("v", "orders")
        .await
        .insert_many([doc! { "_id": 10, "user": 1 }, doc! { "_id": 11, "user": 2 }])
        .await
        .unwrap();
    db.run_command(doc! {
        "create": "active_users",
        "viewOn": "users",
        "pipeline": [{ "$match": { "active": true } }, { "$project": { "active": 0 } }],
    })
    .await
    .unwrap();
    let orders = node.coll("v", "orders").await;
    let mut joined = orders
        .aggregate([
            doc! { "$lookup": { "from": "active_users", "localField": "user", "foreignField": "_id", "as": "u" } },
            doc! { "$sort": { "_id": 1 } },
        ])
        .await
        .unwrap();
    let mut out = Vec::new();
    while joined.advance().await.unwrap() {
        out.push(joined.deserialize_current().unwrap());
    }
    assert_eq!(
        out,
        [
            doc! { "_id": 10, "user": 1, "u": [{ "_id": 1, "name": "ann" }] },
            doc! { "_id": 11, "user": 2, "u": [] },
        ]
    );
    let mut union = orders
        .aggregate([
            doc! { "$unionWith": "active_users" },
            doc! { "$count": "n" },
        ])
        .await
        .unwrap();
    assert!(union.advance().await.unwrap());
    assert_eq!(
        union.deserialize_current().unwrap().get_i32("n").unwrap(),
        3
    );
}
