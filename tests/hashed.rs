//! `hashed` indexes as mongod keeps them: each document keyed by mongod's
//! hash of its field's value (so explain shows the same bounds), equality
//! and `$in` served by them with the same answers as a scan, and what
//! mongod refuses (arrays, uniqueness) refused with its codes.

use mongodb::bson::{Bson, Document, doc};
use mongodb::{Collection, Database};

use crate::common::{TestNode, create_index, cursor_ids, expect_code, first_batch, ids};

/// Values of every kind, two doubles that share a hash (both truncate to
/// 2), documents without the field and one where it is null.
async fn values(db: &Database) -> Collection<Document> {
    let c = db.collection::<Document>("h");
    c.insert_many(vec![
        doc! { "_id": 1, "a": 42 },
        doc! { "_id": 2, "a": 42.0 },
        doc! { "_id": 3, "a": 2.1 },
        doc! { "_id": 4, "a": 2.9 },
        doc! { "_id": 5, "a": "abc" },
        doc! { "_id": 6, "a": { "x": 1, "y": [1, 2] } },
        doc! { "_id": 7, "a": Bson::Null },
        doc! { "_id": 8 },
        doc! { "_id": 9, "a": true },
        doc! { "_id": 10, "a": 42i64 },
    ])
    .await
    .unwrap();
    c
}

async fn winning_plan(db: &Database, filter: Document) -> Document {
    let e = db
        .run_command(doc! { "explain": { "find": "h", "filter": filter } })
        .await
        .unwrap();
    e.get_document("queryPlanner")
        .unwrap()
        .get_document("winningPlan")
        .unwrap()
        .clone()
}

#[tokio::test]
async fn equality_and_in_are_served_by_the_hash_with_mongods_bounds() {
    let node = TestNode::start();
    let db = node.db("hashed").await;
    let c = values(&db).await;
    create_index(&c, doc! { "a": "hashed" }).await;
    let listed = first_batch(&db, doc! { "listIndexes": "h" }).await;
    assert!(listed.iter().any(|i| {
        i.get_str("name").ok() == Some("a_hashed")
            && i.get_document("key").ok() == Some(&doc! { "a": "hashed" })
    }));

    assert_eq!(ids(&c, doc! { "a": 42 }).await, vec![1, 2, 10]);
    let plan = winning_plan(&db, doc! { "a": 42 }).await;
    assert_eq!(plan.get_str("stage").unwrap(), "FETCH");
    let scan = plan.get_document("inputStage").unwrap();
    assert_eq!(scan.get_str("stage").unwrap(), "IXSCAN");
    assert_eq!(scan.get_str("indexName").unwrap(), "a_hashed");
    // mongod's hash of 42 (convertShardKeyToHashed(42)).
    assert_eq!(
        scan.get_document("indexBounds").unwrap(),
        &doc! { "a": ["[-944302157085130861, -944302157085130861]"] }
    );
    // 2.1 and 2.9 share a hash; the filter tells them apart.
    assert_eq!(ids(&c, doc! { "a": 2.1 }).await, vec![3]);
    assert_eq!(
        ids(&c, doc! { "a": { "$in": [2.9, "abc", true] } }).await,
        vec![4, 5, 9]
    );
    let plan = winning_plan(&db, doc! { "a": { "$in": [2.9, "abc"] } }).await;
    let bounds = plan
        .get_document("inputStage")
        .unwrap()
        .get_document("indexBounds")
        .unwrap();
    assert_eq!(bounds.get_array("a").unwrap().len(), 2);
    assert_eq!(
        ids(&c, doc! { "a": { "x": 1, "y": [1, 2] } }).await,
        vec![6]
    );
    // Null's hash is also the key of a document without the field.
    assert_eq!(ids(&c, doc! { "a": Bson::Null }).await, vec![7, 8]);
    assert_eq!(
        winning_plan(&db, doc! { "a": Bson::Null })
            .await
            .get_document("inputStage")
            .unwrap()
            .get_str("indexName")
            .unwrap(),
        "a_hashed"
    );
    // returnKey gives the key as mongod keeps it: the hash.
    let keys = first_batch(
        &db,
        doc! { "find": "h", "filter": { "a": 42 }, "returnKey": true },
    )
    .await;
    assert_eq!(keys, vec![doc! { "a": -944302157085130861i64 }; 3]);
    // A range cannot use hashes: a scan answers it.
    assert_eq!(
        ids(&c, doc! { "a": { "$gt": 2 } }).await,
        vec![1, 2, 3, 4, 10]
    );
    assert_eq!(
        winning_plan(&db, doc! { "a": { "$gt": 2 } })
            .await
            .get_str("stage")
            .unwrap(),
        "COLLSCAN"
    );
    // Hinted, the index is read whole for what its hashes cannot bound.
    let hinted = cursor_ids(
        c.find(doc! { "a": { "$gte": 2.5 } })
            .hint(mongodb::options::Hint::Keys(doc! { "a": "hashed" }))
            .sort(doc! { "_id": 1 })
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(hinted, vec![1, 2, 4, 10]);
}

#[tokio::test]
async fn writes_keep_the_hashes_in_step_with_the_documents() {
    let node = TestNode::start();
    let db = node.db("hashed").await;
    let c = db.collection::<Document>("h");
    create_index(&c, doc! { "a": "hashed" }).await;
    c.insert_many((0..200).map(|i| doc! { "_id": i, "a": i % 20 }))
        .await
        .unwrap();
    c.update_many(doc! { "a": 3 }, doc! { "$set": { "a": "three" } })
        .await
        .unwrap();
    c.delete_many(doc! { "a": 4 }).await.unwrap();
    assert!(ids(&c, doc! { "a": 3 }).await.is_empty());
    assert!(ids(&c, doc! { "a": 4 }).await.is_empty());
    assert_eq!(
        ids(&c, doc! { "a": "three" }).await,
        (0..200).filter(|i| i % 20 == 3).collect::<Vec<_>>()
    );
    let v = db.run_command(doc! { "validate": "h" }).await.unwrap();
    assert_eq!(v.get_bool("valid").ok(), Some(true), "{v}");
    let keys = v.get_document("keysPerIndex").unwrap();
    let keys = keys
        .get_i32("a_hashed")
        .map(i64::from)
        .or_else(|_| keys.get_i64("a_hashed"));
    assert_eq!(keys.ok(), Some(190), "{v}");
    // An `_id` may be hashed too, beside `_id_`.
    create_index(&c, doc! { "_id": "hashed" }).await;
    assert_eq!(ids(&c, doc! { "_id": 7 }).await, vec![7]);
}

#[tokio::test]
async fn what_a_hashed_index_cannot_hold_or_be_is_refused_with_mongods_codes() {
    let node = TestNode::start();
    let db = node.db("hashed").await;
    let c = db.collection::<Document>("h");
    create_index(&c, doc! { "a": "hashed" }).await;
    let msg = expect_code(c.insert_one(doc! { "_id": 1, "a": [1, 2] }).await, 16766);
    assert!(
        msg.contains("hashed indexes do not currently support array values"),
        "{msg}"
    );
    c.insert_one(doc! { "_id": 2, "a": 1 }).await.unwrap();
    expect_code(
        c.update_one(doc! { "_id": 2 }, doc! { "$set": { "a": [3] } })
            .await,
        16766,
    );
    assert_eq!(ids(&c, doc! { "a": 1 }).await, vec![2]);

    let other = db.collection::<Document>("g");
    other.insert_one(doc! { "b": [1, 2] }).await.unwrap();
    let build = |key: Document, extra: Document| {
        let db = db.clone();
        async move {
            let mut spec = doc! { "key": key, "name": "x" };
            spec.extend(extra);
            db.run_command(doc! { "createIndexes": "g", "indexes": [spec] })
                .await
        }
    };
    expect_code(build(doc! { "b": "hashed" }, doc! {}).await, 16766);
    let msg = expect_code(
        build(doc! { "c": "hashed" }, doc! { "unique": true }).await,
        16764,
    );
    assert!(msg.contains("cannot guarantee uniqueness"), "{msg}");
    expect_code(build(doc! { "c": "hashed", "d": 1 }, doc! {}).await, 67);
    expect_code(
        build(doc! { "c": "hashed" }, doc! { "expireAfterSeconds": 10 }).await,
        67,
    );
    expect_code(
        build(
            doc! { "c": "hashed" },
            doc! { "collation": { "locale": "fr" } },
        )
        .await,
        67,
    );
    let listed = first_batch(&db, doc! { "listIndexes": "g" }).await;
    assert_eq!(listed.len(), 1, "only _id_ is left: {listed:?}");
}
