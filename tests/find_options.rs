//! `find` options and projection operators end to end: `batchSize: 0`,
//! `$slice`, `$elemMatch` and positional `$` projections, `maxTimeMS`.
//! Each test names the manual page or jstest its expected results come
//! from.

mod common;

use common::{TestNode, expect_code};
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
