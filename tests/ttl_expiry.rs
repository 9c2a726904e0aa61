//! Which documents expire and when (MongoDB's rule: the indexed Date, or
//! the earliest Date of an array, plus expireAfterSeconds at or before
//! now), driven through an injected clock: no test waits for real time to
//! pass.

use std::sync::Arc;
use std::time::Duration;

use crate::common::{self, TestNode, str_ids, ttl_index};
use ebb_actors::clock::ManualClock;
use futures::TryStreamExt;
use mongodb::IndexModel;
use mongodb::bson::{Bson, DateTime, Document, doc};
use mongodb::options::IndexOptions;

/// 2026-01-01T00:00:00Z: the manual clock's start.
const T0: i64 = 1_767_225_600_000;
const MIN: i64 = 60_000;
const HOUR: i64 = 60 * MIN;

fn at(ms: i64) -> Bson {
    Bson::DateTime(DateTime::from_millis(ms))
}

fn node() -> TestNode {
    TestNode::start_with_clock(Arc::new(ManualClock::new(T0)))
}

#[tokio::test]
async fn only_dates_at_or_before_the_cutoff_expire() {
    let node = node();
    let c = node.coll("app", "eventlog").await;
    ttl_index(&c, doc! { "lastModifiedDate": 1 }, 3600, None).await;
    let (deleted_before, ..) = node.ttl_metrics().await;
    c.insert_many(vec![
        doc! { "_id": "a-two-hours-ago", "lastModifiedDate": at(T0 - 2 * HOUR) },
        doc! { "_id": "b-exactly-due", "lastModifiedDate": at(T0 - HOUR) },
        doc! { "_id": "c-due-in-a-minute", "lastModifiedDate": at(T0 - HOUR + MIN) },
        doc! { "_id": "d-future", "lastModifiedDate": at(T0 + 24 * HOUR) },
        doc! { "_id": "e-array-earliest-expired", "lastModifiedDate": [at(T0 + 24 * HOUR), at(T0 - 2 * HOUR)] },
        doc! { "_id": "f-array-all-future", "lastModifiedDate": [at(T0 + HOUR), at(T0 + 2 * HOUR)] },
        doc! { "_id": "g-pre-1970", "lastModifiedDate": at(-315_619_200_000) },
        doc! { "_id": "h-string", "lastModifiedDate": "2020-01-01T00:00:00Z" },
        doc! { "_id": "i-number", "lastModifiedDate": 1_000_000i64 },
        doc! { "_id": "j-timestamp", "lastModifiedDate": Bson::Timestamp(mongodb::bson::Timestamp { time: 1, increment: 1 }) },
        doc! { "_id": "k-null", "lastModifiedDate": Bson::Null },
        doc! { "_id": "l-missing" },
        doc! { "_id": "m-object", "lastModifiedDate": { "d": at(0) } },
        doc! { "_id": "n-objectid", "lastModifiedDate": mongodb::bson::oid::ObjectId::new() },
    ])
    .await
    .unwrap();
    node.ttl_pass().await;
    assert_eq!(
        str_ids(&c, doc! {}).await,
        [
            "c-due-in-a-minute",
            "d-future",
            "f-array-all-future",
            "h-string",
            "i-number",
            "j-timestamp",
            "k-null",
            "l-missing",
            "m-object",
            "n-objectid"
        ]
    );
    assert_eq!(node.ttl_metrics().await.0 - deleted_before, 4);

    node.advance(Duration::from_secs(60));
    node.ttl_pass().await;
    assert!(
        !str_ids(&c, doc! {})
            .await
            .contains(&"c-due-in-a-minute".to_owned())
    );
}

#[tokio::test]
async fn zero_seconds_expires_at_the_clock_time_in_the_field() {
    let node = node();
    let c = node.coll("app", "tokens").await;
    ttl_index(&c, doc! { "expireAt": 1 }, 0, None).await;
    c.insert_one(doc! { "_id": "t", "expireAt": at(T0 + 10_000) })
        .await
        .unwrap();
    node.advance(Duration::from_millis(9_999));
    node.ttl_pass().await;
    assert_eq!(str_ids(&c, doc! {}).await, ["t"]);
    node.advance(Duration::from_millis(1));
    node.ttl_pass().await;
    assert!(str_ids(&c, doc! {}).await.is_empty());
}

#[tokio::test]
async fn several_ttl_indexes_act_independently() {
    let node = node();
    let c = node.coll("app", "two").await;
    ttl_index(&c, doc! { "a": 1 }, 10, None).await;
    ttl_index(&c, doc! { "b": 1 }, 1000, None).await;
    c.insert_many(vec![
        doc! { "_id": "by-a", "a": at(T0 - 11_000), "b": at(T0) },
        doc! { "_id": "by-b", "a": at(T0), "b": at(T0 - 1_001_000) },
        doc! { "_id": "neither", "a": at(T0), "b": at(T0) },
    ])
    .await
    .unwrap();
    node.ttl_pass().await;
    assert_eq!(str_ids(&c, doc! {}).await, ["neither"]);
}

#[tokio::test]
async fn documents_already_expired_go_on_the_first_pass_after_the_index_is_built() {
    let node = node();
    let c = node.coll("app", "late").await;
    c.insert_many((0..50).map(|i| doc! { "_id": format!("{i:02}"), "at": at(T0 - HOUR) }))
        .await
        .unwrap();
    node.ttl_pass().await;
    assert_eq!(str_ids(&c, doc! {}).await.len(), 50);
    ttl_index(&c, doc! { "at": 1 }, 60, None).await;
    node.ttl_pass().await;
    assert!(str_ids(&c, doc! {}).await.is_empty());
}

#[tokio::test]
async fn dropping_the_index_stops_expiry() {
    let node = node();
    let c = node.coll("app", "dropped").await;
    ttl_index(&c, doc! { "at": 1 }, 60, None).await;
    c.insert_one(doc! { "_id": "x", "at": at(T0) })
        .await
        .unwrap();
    c.drop_index("at_1").await.unwrap();
    node.advance(Duration::from_secs(3600));
    node.ttl_pass().await;
    assert_eq!(str_ids(&c, doc! {}).await, ["x"]);
}

#[tokio::test]
async fn partial_sparse_descending_and_dotted_ttl_indexes_expire_their_documents_only() {
    let node = node();
    let c = node.coll("app", "shapes").await;
    let partial = IndexOptions::builder()
        .partial_filter_expression(doc! { "kind": "temp" })
        .build();
    ttl_index(&c, doc! { "p": 1 }, 0, Some(partial)).await;
    ttl_index(
        &c,
        doc! { "s": 1 },
        0,
        Some(IndexOptions::builder().sparse(true).build()),
    )
    .await;
    ttl_index(&c, doc! { "d": -1 }, 0, None).await;
    ttl_index(&c, doc! { "meta.at": 1 }, 0, None).await;
    let old = at(T0 - 1);
    c.insert_many(vec![
        doc! { "_id": "partial-temp", "p": old.clone(), "kind": "temp" },
        doc! { "_id": "partial-keep", "p": old.clone(), "kind": "keep" },
        doc! { "_id": "sparse", "s": old.clone() },
        doc! { "_id": "descending", "d": old.clone() },
        doc! { "_id": "descending-future", "d": at(T0 + HOUR) },
        doc! { "_id": "dotted", "meta": { "at": old.clone() } },
        doc! { "_id": "dotted-array", "meta": [{ "at": at(T0 + HOUR) }, { "at": old.clone() }] },
    ])
    .await
    .unwrap();
    node.ttl_pass().await;
    assert_eq!(
        str_ids(&c, doc! {}).await,
        ["descending-future", "partial-keep"]
    );
}

#[tokio::test]
async fn a_document_moved_to_a_later_date_survives() {
    let node = node();
    let c = node.coll("app", "moved").await;
    ttl_index(&c, doc! { "at": 1 }, 0, None).await;
    c.insert_many(vec![
        doc! { "_id": "moved", "at": at(T0 + 1000) },
        doc! { "_id": "stays", "at": at(T0 + 1000) },
    ])
    .await
    .unwrap();
    c.update_one(
        doc! { "_id": "moved" },
        doc! { "$set": { "at": at(T0 + HOUR) } },
    )
    .await
    .unwrap();
    node.advance(Duration::from_secs(2));
    node.ttl_pass().await;
    assert_eq!(str_ids(&c, doc! {}).await, ["moved"]);
    // Unsetting the date takes it out of expiry altogether.
    c.update_one(doc! { "_id": "moved" }, doc! { "$unset": { "at": "" } })
        .await
        .unwrap();
    node.advance(Duration::from_secs(2 * 3600));
    node.ttl_pass().await;
    assert_eq!(str_ids(&c, doc! {}).await, ["moved"]);
}

#[tokio::test]
async fn lowering_expire_after_seconds_with_coll_mod_expires_on_the_next_pass() {
    let node = node();
    let c = node.coll("app", "lowered").await;
    ttl_index(&c, doc! { "at": 1 }, 3600, None).await;
    c.insert_one(doc! { "_id": "x", "at": at(T0 - MIN) })
        .await
        .unwrap();
    node.ttl_pass().await;
    assert_eq!(str_ids(&c, doc! {}).await, ["x"]);
    node.db("app")
        .await
        .run_command(
            doc! { "collMod": "lowered", "index": { "name": "at_1", "expireAfterSeconds": 30 } },
        )
        .await
        .unwrap();
    node.ttl_pass().await;
    assert!(str_ids(&c, doc! {}).await.is_empty());
}

#[tokio::test]
async fn converting_a_plain_index_with_coll_mod_makes_it_expire() {
    let node = node();
    let c = node.coll("app", "converted").await;
    c.create_index(IndexModel::builder().keys(doc! { "at": 1 }).build())
        .await
        .unwrap();
    c.insert_one(doc! { "_id": "x", "at": at(T0 - HOUR) })
        .await
        .unwrap();
    node.ttl_pass().await;
    assert_eq!(str_ids(&c, doc! {}).await, ["x"]);
    node.db("app").await.run_command(doc! { "collMod": "converted", "index": { "keyPattern": { "at": 1 }, "expireAfterSeconds": 60 } }).await.unwrap();
    node.ttl_pass().await;
    assert!(str_ids(&c, doc! {}).await.is_empty());
}

#[tokio::test]
async fn writes_racing_expiry_chunks_keep_documents_and_indexes_consistent() {
    let node = node();
    let c = node.coll("t", "race").await;
    ttl_index(&c, doc! { "at": 1 }, 0, None).await;
    c.create_index(IndexModel::builder().keys(doc! { "k": 1 }).build())
        .await
        .unwrap();
    node.set_parameter("ttlMonitorEnabled", false).await;
    c.insert_many((0..3000).map(|i| doc! { "_id": i, "at": at(T0 - 1), "k": i }))
        .await
        .unwrap();
    node.set_parameter("ttlMonitorEnabled", true).await;
    // While chunks run (planned off the writer, as foreground writes are
    // active), move some due documents to a later date and insert new ones.
    let later = at(T0 + HOUR);
    let mut kept = Vec::new();
    for (j, i) in (0..3000).step_by(3).enumerate() {
        let r = c
            .update_one(doc! { "_id": i }, doc! { "$set": { "at": later.clone() } })
            .await
            .unwrap();
        if r.matched_count == 1 {
            kept.push(i);
        }
        let new_id = 100_000 + j as i32;
        c.insert_one(doc! { "_id": new_id, "at": later.clone(), "k": -1 })
            .await
            .unwrap();
        kept.push(new_id);
    }
    let settled = common::eventually(Duration::from_secs(30), || async {
        c.count_documents(doc! {}).await.unwrap() == kept.len() as u64
    })
    .await;
    let mut left: Vec<i32> = c
        .find(doc! {})
        .await
        .unwrap()
        .try_collect::<Vec<Document>>()
        .await
        .unwrap()
        .iter()
        .map(|d| d.get_i32("_id").unwrap())
        .collect();
    left.sort();
    kept.sort();
    assert!(
        settled,
        "{} documents left, expected {}",
        left.len(),
        kept.len()
    );
    assert_eq!(
        left, kept,
        "exactly the moved and the new documents survive"
    );
    // Both indexes hold exactly the surviving documents.
    let by_k = c
        .count_documents(doc! { "k": { "$gte": -1 } })
        .hint(mongodb::options::Hint::Name("k_1".into()))
        .await
        .unwrap();
    let by_at = c
        .count_documents(doc! { "at": { "$gte": at(0) } })
        .hint(mongodb::options::Hint::Name("at_1".into()))
        .await
        .unwrap();
    assert_eq!((by_k, by_at), (kept.len() as u64, kept.len() as u64));
}

#[tokio::test]
async fn a_visit_of_many_chunks_deletes_each_multikey_document_once() {
    let node = node();
    let c = node.coll("t", "multi").await;
    ttl_index(&c, doc! { "at": 1 }, 0, None).await;
    // Each document has a date in two chunks of the visit: chunks of 1,024
    // documents, the next planned while the one before it commits.
    let n = 3000;
    let (deleted_before, ..) = node.ttl_metrics().await;
    node.set_parameter("ttlMonitorEnabled", false).await;
    c.insert_many((0..n).map(|i| {
        let first = T0 - HOUR + i64::from(i);
        doc! { "_id": i, "at": [at(first), at(first + 1500)], "k": i }
    }))
    .await
    .unwrap();
    // One document not due keeps the collection from going whole.
    c.insert_one(doc! { "_id": -1, "at": at(T0 + HOUR) })
        .await
        .unwrap();
    // Out of the foreground window (100 ms since the last write), so the
    // writer plans chunks ahead.
    tokio::time::sleep(Duration::from_millis(200)).await;
    node.set_parameter("ttlMonitorEnabled", true).await;
    node.ttl_pass().await;
    let (deleted_after, ..) = node.ttl_metrics().await;
    assert_eq!(c.count_documents(doc! {}).await.unwrap(), 1);
    assert_eq!(
        deleted_after - deleted_before,
        i64::from(n),
        "each document counted once"
    );
}
