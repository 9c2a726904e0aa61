//! Data survives a restart: every database, collection, index and document.

use crate::common::TestNode;
use futures::TryStreamExt;
use mongodb::IndexModel;
use mongodb::bson::{Document, doc};

#[tokio::test]
async fn restart_brings_back_collections_indexes_and_documents() {
    let mut node = TestNode::start();
    {
        let c = node.coll("keep", "events").await;
        c.insert_many((0..1000).map(|i| doc! { "_id": i, "k": i % 10, "s": format!("s{i}") }))
            .await
            .unwrap();
        c.create_index(IndexModel::builder().keys(doc! { "k": 1 }).build())
            .await
            .unwrap();
        c.create_index(IndexModel::builder().keys(doc! { "s": -1 }).build())
            .await
            .unwrap();
        node.coll("other", "empty")
            .await
            .insert_one(doc! { "x": 1 })
            .await
            .unwrap();
        node.coll("other", "empty")
            .await
            .delete_many(doc! {})
            .await
            .unwrap();
    }
    node.restart();
    let client = node.client().await;
    assert_eq!(
        client.list_database_names().await.unwrap(),
        ["admin", "config", "keep", "local", "other"]
    );
    let c = client.database("keep").collection::<Document>("events");
    assert_eq!(c.count_documents(doc! {}).await.unwrap(), 1000);
    assert_eq!(c.list_index_names().await.unwrap(), ["_id_", "k_1", "s_-1"]);
    let by_k: Vec<Document> = c
        .find(doc! { "k": 3 })
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    assert_eq!(by_k.len(), 100);
    assert!(by_k.iter().all(|d| d.get_i32("k").unwrap() == 3));
    let by_s = c.find_one(doc! { "s": "s777" }).await.unwrap().unwrap();
    assert_eq!(by_s.get_i32("_id").unwrap(), 777);
    let e = client
        .database("keep")
        .run_command(doc! { "explain": { "find": "events", "filter": { "k": 3 } } })
        .await
        .unwrap();
    let plan = e
        .get_document("queryPlanner")
        .unwrap()
        .get_document("winningPlan")
        .unwrap();
    assert_eq!(
        plan.get_document("inputStage")
            .unwrap()
            .get_str("indexName")
            .unwrap(),
        "k_1"
    );
    // Writes after a restart keep the indexes up to date.
    c.insert_one(doc! { "_id": 5000, "k": 3, "s": "new" })
        .await
        .unwrap();
    assert_eq!(c.count_documents(doc! { "k": 3 }).await.unwrap(), 101);
}
