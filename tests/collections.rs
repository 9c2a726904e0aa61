//! Collection and database commands, end to end.

use crate::common::{TestNode, create_index, expect_code};
use mongodb::bson::{Document, doc};

#[tokio::test]
async fn create_list_rename_and_drop_collections() {
    let node = TestNode::start();
    let db = node.db("cat").await;
    db.create_collection("a").await.unwrap();
    // Creating it again with other options (capped) is NamespaceExists.
    expect_code(db.create_collection("a").capped(true).size(1024).await, 48);
    db.collection::<Document>("b")
        .insert_one(doc! { "x": 1 })
        .await
        .unwrap();
    let mut names = db.list_collection_names().await.unwrap();
    names.sort();
    assert_eq!(names, ["a", "b"]);

    let r = db
        .run_command(doc! { "listCollections": 1, "filter": { "name": "b" } })
        .await
        .unwrap();
    let batch = r
        .get_document("cursor")
        .unwrap()
        .get_array("firstBatch")
        .unwrap();
    assert_eq!(batch.len(), 1);
    let info = batch[0].as_document().unwrap();
    assert_eq!(info.get_str("type").unwrap(), "collection");
    assert!(
        !info
            .get_document("info")
            .unwrap()
            .get_bool("readOnly")
            .unwrap()
    );
    // The Rust driver's full listing parses every field.
    let specs: Vec<_> = {
        use futures::TryStreamExt;
        db.list_collections()
            .await
            .unwrap()
            .try_collect()
            .await
            .unwrap()
    };
    assert_eq!(specs.len(), 2);

    let admin = node.db("admin").await;
    admin
        .run_command(doc! { "renameCollection": "cat.b", "to": "cat.c" })
        .await
        .unwrap();
    assert_eq!(
        db.collection::<Document>("c")
            .count_documents(doc! {})
            .await
            .unwrap(),
        1
    );
    expect_code(
        admin
            .run_command(doc! { "renameCollection": "cat.b", "to": "cat.d" })
            .await,
        26,
    );
    expect_code(
        admin
            .run_command(doc! { "renameCollection": "cat.a", "to": "cat.c" })
            .await,
        48,
    );

    let r = db.run_command(doc! { "drop": "c" }).await.unwrap();
    assert_eq!(r.get_i32("nIndexesWas").unwrap(), 1);
    expect_code(db.run_command(doc! { "drop": "c" }).await, 26);
    expect_code(db.run_command(doc! { "create": "bad$name" }).await, 73);
}

#[tokio::test]
async fn list_and_drop_databases() {
    let node = TestNode::start();
    let client = node.client().await;
    client
        .database("one")
        .collection::<Document>("c")
        .insert_one(doc! {})
        .await
        .unwrap();
    client
        .database("two")
        .collection::<Document>("c")
        .insert_one(doc! {})
        .await
        .unwrap();
    // mongod's own three databases are always listed.
    let names = client.list_database_names().await.unwrap();
    assert_eq!(names, ["admin", "config", "local", "one", "two"]);
    let full = client.list_databases().await.unwrap();
    assert_eq!(full.len(), 5);
    client.database("one").drop().await.unwrap();
    assert_eq!(
        client.list_database_names().await.unwrap(),
        ["admin", "config", "local", "two"]
    );
    // Writing again recreates the collection.
    client
        .database("one")
        .collection::<Document>("c")
        .insert_one(doc! { "again": true })
        .await
        .unwrap();
    assert_eq!(
        client
            .database("one")
            .collection::<Document>("c")
            .count_documents(doc! {})
            .await
            .unwrap(),
        1
    );
}

#[tokio::test]
async fn drop_during_writes_loses_nothing_written_after() {
    let node = TestNode::start();
    let c = node.coll("race", "c").await;
    let writer = {
        let c = c.clone();
        tokio::spawn(async move {
            for i in 0..200 {
                c.insert_one(doc! { "i": i }).await.unwrap();
            }
        })
    };
    for _ in 0..5 {
        c.drop().await.unwrap();
        tokio::task::yield_now().await;
    }
    writer.await.unwrap();
    c.insert_one(doc! { "last": true }).await.unwrap();
    assert_eq!(c.count_documents(doc! { "last": true }).await.unwrap(), 1);
}

/// `collStats` and `dataSize` measure the documents; `compact` gives back
/// the space of deleted ones.
#[tokio::test]
async fn compact_reclaims_the_space_of_deleted_documents() {
    let node = TestNode::start();
    let db = node.db("space").await;
    let c = db.collection::<Document>("c");
    // Incompressible payloads, so the sizes measure documents, not LZ4.
    let mut state: u64 = 0x2545_F491_4F6C_DD1D;
    let mut noise = move || {
        (0..1000)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                char::from(b'a' + (state % 26) as u8)
            })
            .collect::<String>()
    };
    for chunk in 0..10 {
        c.insert_many((0..1000).map(|i| doc! { "_id": chunk * 1000 + i, "p": noise() }))
            .await
            .unwrap();
    }
    db.run_command(doc! { "compact": "c" }).await.unwrap();
    let size = |d: Document| d.get_i64("storageSize").unwrap();
    let full = size(db.run_command(doc! { "collStats": "c" }).await.unwrap());
    assert!(full > 1_000_000, "10 MB of documents take {full} bytes");
    // dataSize: the same figure, and the exact count.
    let ds = db
        .run_command(doc! { "dataSize": "space.c" })
        .await
        .unwrap();
    assert_eq!(ds.get_i64("numObjects").unwrap(), 10_000, "{ds}");
    assert_eq!(ds.get_i64("size").unwrap(), full, "{ds}");
    let none = db
        .run_command(doc! { "dataSize": "space.missing" })
        .await
        .unwrap();
    assert_eq!(none.get_i64("numObjects").unwrap(), 0, "{none}");
    expect_code(
        db.run_command(doc! { "dataSize": "space.c", "min": { "_id": 1 }, "max": { "_id": 5 }, "keyPattern": { "_id": 1 } })
            .await,
        238,
    );
    expect_code(db.run_command(doc! { "dataSize": "other.c" }).await, 73);
    c.delete_many(doc! {}).await.unwrap();
    let r = db.run_command(doc! { "compact": "c" }).await.unwrap();
    assert!(r.get_i64("bytesFreed").unwrap() > 1_000_000);
    let empty = size(db.run_command(doc! { "collStats": "c" }).await.unwrap());
    assert!(empty < full / 10, "after compact: {empty} bytes of {full}");
    expect_code(db.run_command(doc! { "compact": "missing" }).await, 26);
}

/// Manual, `validate`: a healthy collection is valid, with every record
/// and index key counted (`keysPerIndex` counts a multikey document once
/// per key); options ebb cannot honour are refused.
#[tokio::test]
async fn validate_counts_records_and_index_keys() {
    let node = TestNode::start();
    let c = node.coll("v", "c").await;
    c.insert_many(vec![
        doc! { "_id": 1, "tags": ["a", "b"] },
        doc! { "_id": 2, "tags": ["c", "d", "e"] },
        doc! { "_id": 3 },
    ])
    .await
    .unwrap();
    create_index(&c, doc! { "tags": 1 }).await;
    let db = node.db("v").await;
    let r = db.run_command(doc! { "validate": "c" }).await.unwrap();
    assert!(r.get_bool("valid").unwrap(), "{r:?}");
    assert_eq!(r.get_i64("nrecords").unwrap(), 3);
    assert_eq!(r.get_i32("nIndexes").unwrap(), 2);
    assert_eq!(
        r.get_document("keysPerIndex").unwrap(),
        &doc! { "_id_": 3i64, "tags_1": 6i64 }
    );
    assert!(r.get_array("errors").unwrap().is_empty());
    let full = db
        .run_command(doc! { "validate": "c", "full": true })
        .await
        .unwrap();
    assert!(full.get_bool("valid").unwrap());
    expect_code(db.run_command(doc! { "validate": "missing" }).await, 26);
    expect_code(
        db.run_command(doc! { "validate": "c", "repair": true })
            .await,
        238,
    );
}

/// Manual, `dbHash`: one MD5 per collection of its documents, equal for
/// equal contents, changed by any write.
#[tokio::test]
async fn db_hash_follows_the_documents() {
    let node = TestNode::start();
    for db in ["h1", "h2"] {
        node.coll(db, "c")
            .await
            .insert_many(vec![doc! { "_id": 1, "x": 1 }, doc! { "_id": 2, "x": 2 }])
            .await
            .unwrap();
    }
    let hash = |db: &'static str| {
        let node = &node;
        async move {
            let r = node
                .db(db)
                .await
                .run_command(doc! { "dbHash": 1 })
                .await
                .unwrap();
            r.get_document("collections")
                .unwrap()
                .get_str("c")
                .unwrap()
                .to_owned()
        }
    };
    let before = hash("h1").await;
    assert_eq!(before.len(), 32);
    assert_eq!(before, hash("h2").await);
    node.coll("h2", "c")
        .await
        .update_one(doc! { "_id": 2 }, doc! { "$set": { "x": 3 } })
        .await
        .unwrap();
    assert_ne!(before, hash("h2").await);
    assert_eq!(before, hash("h1").await);
}

/// Manual, `top`: time and operations per collection, counted by kind,
/// on `admin` only.
#[tokio::test]
async fn top_counts_operations_per_collection() {
    let node = TestNode::start();
    let c = node.coll("t", "c").await;
    c.insert_many(vec![doc! { "_id": 1 }, doc! { "_id": 2 }])
        .await
        .unwrap();
    c.find_one(doc! { "_id": 1 }).await.unwrap();
    c.delete_one(doc! { "_id": 2 }).await.unwrap();
    let admin = node.db("admin").await;
    let totals = admin
        .run_command(doc! { "top": 1 })
        .await
        .unwrap()
        .get_document("totals")
        .unwrap()
        .clone();
    let row = totals.get_document("t.c").unwrap();
    let count = |column: &str| row.get_document(column).unwrap().get_i64("count").unwrap();
    assert_eq!(count("insert"), 1);
    assert_eq!(count("queries"), 1);
    assert_eq!(count("remove"), 1);
    assert!(count("total") >= 3);
    assert_eq!(count("readLock") + count("writeLock"), count("total"));
    expect_code(node.db("t").await.run_command(doc! { "top": 1 }).await, 13);
}
