//! Expired documents are never visible (`ttl.hide_expired`, on by
//! default): a document is returned at due − 1 ms and absent at due on
//! every read path, with the TTL monitor held between passes so the
//! document is still stored. The rule is MongoDB's expiry rule (the
//! "TTL Indexes" manual: indexed Date + expireAfterSeconds ≤ now; the
//! earliest Date of an array; partial indexes; any of several TTL
//! indexes); only the moment changes: MongoDB shows a due document until
//! its monitor's next pass (by default up to 60 s later), ebb hides it at
//! once.

use std::sync::Arc;
use std::time::Duration;

use crate::common::{self, TestNode, cases, first_batch, str_ids, ttl_index};
use ebb_actors::clock::ManualClock;
use mongodb::bson::{Bson, DateTime, Document, doc};
use mongodb::options::IndexOptions;
use mongodb::{Collection, Database, IndexModel};

/// 2026-01-01T00:00:00Z: when the test documents were stamped.
const T0: i64 = 1_767_225_600_000;
/// Their TTL: due at T0 + 10 s.
const TTL_SECS: u64 = 10;
const DUE: i64 = T0 + 10_000;

fn at(ms: i64) -> Bson {
    Bson::DateTime(DateTime::from_millis(ms))
}

/// A node whose clock stands at `DUE - 1`.
fn node() -> TestNode {
    TestNode::start_with_clock(Arc::new(ManualClock::new(DUE - 1)))
}

/// A collection `app.sessions` with a TTL index on `at`, holding the
/// session `"due"` (due at `DUE`) and `"live"` (due an hour later).
async fn sessions(node: &TestNode) -> Collection<Document> {
    let c = node.coll("app", "sessions").await;
    ttl_index(&c, doc! { "at": 1 }, TTL_SECS, None).await;
    c.insert_many(vec![
        doc! { "_id": "due", "at": at(T0), "user": "ann" },
        doc! { "_id": "live", "at": at(T0 + 3_600_000), "user": "bob" },
    ])
    .await
    .unwrap();
    c
}

/// A unique index on `email`.
async fn unique_email_index(c: &Collection<Document>) {
    let unique = IndexOptions::builder().unique(true).build();
    c.create_index(
        IndexModel::builder()
            .keys(doc! { "email": 1 })
            .options(unique)
            .build(),
    )
    .await
    .unwrap();
}

fn strs(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

/// `serverStatus.metrics.ttl.<name>`.
async fn ttl_metric(node: &TestNode, name: &str) -> i64 {
    node.ttl_status().await.get_i64(name).unwrap()
}

/// The documents stored, hidden or not: the monitor is disabled for the
/// look (nothing is hidden then, as in mongod) and enabled again.
async fn stored(node: &TestNode, c: &Collection<Document>) -> Vec<String> {
    node.set_parameter("ttlMonitorEnabled", false).await;
    let found = str_ids(c, doc! {}).await;
    node.set_parameter("ttlMonitorEnabled", true).await;
    found
}

async fn count(db: &Database, cmd: Document) -> i32 {
    db.run_command(cmd).await.unwrap().get_i32("n").unwrap()
}

// --- one test per read path --------------------------------------------

#[tokio::test]
async fn find_stops_returning_a_document_at_its_due_time() {
    let node = node();
    let c = sessions(&node).await;
    let _held = node.hold_monitor().await;
    assert_eq!(str_ids(&c, doc! {}).await, strs(&["due", "live"]));
    assert_eq!(str_ids(&c, doc! { "_id": "due" }).await, strs(&["due"]));
    node.advance(Duration::from_millis(1));
    assert_eq!(str_ids(&c, doc! {}).await, strs(&["live"]));
    // A point lookup by _id and an index scan on the TTL field alike.
    assert!(str_ids(&c, doc! { "_id": "due" }).await.is_empty());
    assert!(
        str_ids(&c, doc! { "at": { "$lt": at(T0 + 1) } })
            .await
            .is_empty()
    );
    assert_eq!(stored(&node, &c).await, strs(&["due", "live"]));
    // The scan of the TTL index starts past the due entries: it reads, and
    // counts, none of them.
    assert!(ttl_metric(&node, "hiddenByReads").await >= 2);
}

#[tokio::test]
async fn get_more_never_returns_what_fell_due_since_the_first_batch() {
    let node = node();
    let _c = sessions(&node).await;
    let db = node.db("app").await;
    let _held = node.hold_monitor().await;
    let reply = db
        .run_command(doc! { "find": "sessions", "sort": { "_id": -1 }, "batchSize": 1 })
        .await
        .unwrap();
    let cursor = reply.get_document("cursor").unwrap();
    let first = cursor.get_array("firstBatch").unwrap();
    assert_eq!(first.len(), 1);
    assert_eq!(
        first[0].as_document().unwrap().get_str("_id").unwrap(),
        "live"
    );
    let id = cursor.get_i64("id").unwrap();
    node.advance(Duration::from_millis(1));
    let more = db
        .run_command(doc! { "getMore": id, "collection": "sessions" })
        .await
        .unwrap();
    let next = more
        .get_document("cursor")
        .unwrap()
        .get_array("nextBatch")
        .unwrap();
    assert!(next.is_empty(), "{next:?}");
}

#[tokio::test]
async fn count_by_keys_and_by_documents_agree_at_the_due_time() {
    let node = node();
    let c = sessions(&node).await;
    let db = node.db("app").await;
    let _held = node.hold_monitor().await;
    // `{count}` alone is answered from keys (records minus the TTL index's
    // due range); with a query it reads documents.
    let all = doc! { "count": "sessions" };
    let queried = doc! { "count": "sessions", "query": { "user": { "$exists": true } } };
    assert_eq!(count(&db, all.clone()).await, 2);
    assert_eq!(count(&db, queried.clone()).await, 2);
    assert_eq!(c.estimated_document_count().await.unwrap(), 2);
    node.advance(Duration::from_millis(1));
    assert_eq!(count(&db, all).await, 1);
    assert_eq!(count(&db, queried).await, 1);
    assert_eq!(c.estimated_document_count().await.unwrap(), 1);
    assert_eq!(c.count_documents(doc! {}).await.unwrap(), 1);
}

#[tokio::test]
async fn distinct_leaves_out_due_documents() {
    let node = node();
    let c = sessions(&node).await;
    let _held = node.hold_monitor().await;
    let users = |v: Vec<Bson>| -> Vec<String> {
        v.iter().map(|b| b.as_str().unwrap().to_owned()).collect()
    };
    assert_eq!(
        users(c.distinct("user", doc! {}).await.unwrap()),
        strs(&["ann", "bob"])
    );
    node.advance(Duration::from_millis(1));
    assert_eq!(
        users(c.distinct("user", doc! {}).await.unwrap()),
        strs(&["bob"])
    );
}

#[tokio::test]
async fn aggregate_leaves_out_due_documents() {
    let node = node();
    let _c = sessions(&node).await;
    let db = node.db("app").await;
    let _held = node.hold_monitor().await;
    let pipeline = doc! {
        "aggregate": "sessions",
        "pipeline": [ { "$group": { "_id": null, "users": { "$push": "$user" } } } ],
        "cursor": {},
    };
    let users = |batch: Vec<Document>| batch[0].get_array("users").unwrap().len();
    assert_eq!(users(first_batch(&db, pipeline.clone()).await), 2);
    node.advance(Duration::from_millis(1));
    assert_eq!(users(first_batch(&db, pipeline).await), 1);
}

#[tokio::test]
async fn lookup_and_union_with_leave_out_due_documents_of_their_source() {
    let node = node();
    let _c = sessions(&node).await;
    let db = node.db("app").await;
    let users = db.collection::<Document>("users");
    users
        .insert_many(vec![doc! { "_id": "ann" }, doc! { "_id": "bob" }])
        .await
        .unwrap();
    let _held = node.hold_monitor().await;
    let lookup = doc! {
        "aggregate": "users",
        "pipeline": [
            { "$lookup": { "from": "sessions", "localField": "_id", "foreignField": "user", "as": "s" } },
            { "$project": { "n": { "$size": "$s" } } },
            { "$sort": { "_id": 1 } },
        ],
        "cursor": {},
    };
    let union = doc! {
        "aggregate": "users",
        "pipeline": [ { "$unionWith": "sessions" } ],
        "cursor": {},
    };
    let sizes = |batch: Vec<Document>| -> Vec<i32> {
        batch.iter().map(|d| d.get_i32("n").unwrap()).collect()
    };
    assert_eq!(sizes(first_batch(&db, lookup.clone()).await), [1, 1]);
    assert_eq!(first_batch(&db, union.clone()).await.len(), 4);
    node.advance(Duration::from_millis(1));
    assert_eq!(sizes(first_batch(&db, lookup).await), [0, 1]);
    assert_eq!(first_batch(&db, union).await.len(), 3);
}

#[tokio::test]
async fn update_never_matches_a_due_document() {
    let node = node();
    let c = sessions(&node).await;
    let _held = node.hold_monitor().await;
    let touch = doc! { "$set": { "touched": true } };
    let r = c
        .update_one(doc! { "_id": "due" }, touch.clone())
        .await
        .unwrap();
    assert_eq!(r.matched_count, 1);
    node.advance(Duration::from_millis(1));
    let r = c
        .update_one(doc! { "_id": "due" }, touch.clone())
        .await
        .unwrap();
    assert_eq!(r.matched_count, 0);
    let r = c.update_many(doc! {}, touch).await.unwrap();
    assert_eq!(r.matched_count, 1, "only the live session");
}

#[tokio::test]
async fn delete_never_matches_a_due_document() {
    let node = node();
    let c = sessions(&node).await;
    c.insert_one(doc! { "_id": "due-too", "at": at(T0), "user": "cy" })
        .await
        .unwrap();
    let _held = node.hold_monitor().await;
    let r = c.delete_one(doc! { "_id": "due-too" }).await.unwrap();
    assert_eq!(r.deleted_count, 1);
    node.advance(Duration::from_millis(1));
    let r = c.delete_one(doc! { "_id": "due" }).await.unwrap();
    assert_eq!(r.deleted_count, 0);
    let r = c
        .delete_many(doc! { "at": { "$lte": at(T0) } })
        .await
        .unwrap();
    assert_eq!(r.deleted_count, 0);
    // The monitor, not the user's delete, removes it.
    assert_eq!(stored(&node, &c).await, strs(&["due", "live"]));
}

#[tokio::test]
async fn find_and_modify_never_returns_a_due_document() {
    let node = node();
    let c = sessions(&node).await;
    let _held = node.hold_monitor().await;
    let touch = doc! { "$inc": { "hits": 1 } };
    let found = c
        .find_one_and_update(doc! { "_id": "due" }, touch.clone())
        .await
        .unwrap();
    assert!(found.is_some());
    node.advance(Duration::from_millis(1));
    let found = c
        .find_one_and_update(doc! { "_id": "due" }, touch)
        .await
        .unwrap();
    assert_eq!(found, None);
    assert_eq!(
        c.find_one_and_delete(doc! { "user": "ann" }).await.unwrap(),
        None
    );
}

#[tokio::test]
async fn explain_counts_only_visible_documents() {
    let node = node();
    let _c = sessions(&node).await;
    let db = node.db("app").await;
    let _held = node.hold_monitor().await;
    let explain = doc! {
        "explain": { "find": "sessions", "filter": {} },
        "verbosity": "executionStats",
    };
    let returned = |r: Document| {
        r.get_document("executionStats")
            .unwrap()
            .get_i64("nReturned")
            .unwrap()
    };
    assert_eq!(returned(db.run_command(explain.clone()).await.unwrap()), 2);
    node.advance(Duration::from_millis(1));
    assert_eq!(returned(db.run_command(explain).await.unwrap()), 1);
}

#[tokio::test]
async fn more_due_documents_than_a_reader_lists_are_checked_one_by_one() {
    // Past MAX_DUE_LISTED (4096) due documents a batch checks each
    // document's dates instead of listing the due ones first.
    let node = node();
    let c = node.coll("app", "many").await;
    ttl_index(&c, doc! { "at": 1 }, TTL_SECS, None).await;
    let mut docs: Vec<Document> = (0..5_000)
        .map(|i| doc! { "_id": format!("d{i:05}"), "at": at(T0) })
        .collect();
    docs.push(doc! { "_id": "live", "at": at(DUE) });
    c.insert_many(docs).await.unwrap();
    let db = node.db("app").await;
    let _held = node.hold_monitor().await;
    assert_eq!(count(&db, doc! { "count": "many" }).await, 5_001);
    node.advance(Duration::from_millis(1));
    assert_eq!(str_ids(&c, doc! {}).await, strs(&["live"]));
    assert_eq!(count(&db, doc! { "count": "many" }).await, 1);
    assert_eq!(c.count_documents(doc! {}).await.unwrap(), 1);
}

// --- the expiry rule, as readers see it ---------------------------------

#[tokio::test]
async fn an_array_is_hidden_when_its_earliest_date_is_due() {
    let node = node();
    let c = node.coll("app", "arrays").await;
    ttl_index(&c, doc! { "at": 1 }, TTL_SECS, None).await;
    c.insert_many(vec![
        doc! { "_id": "earliest-due", "at": [at(T0 + 3_600_000), "soon", at(T0)] },
        doc! { "_id": "no-date-due", "at": [at(T0 + 1), 5] },
        doc! { "_id": "nested", "at": [[at(T0)]] },
        doc! { "_id": "string", "at": "2020-01-01" },
    ])
    .await
    .unwrap();
    let _held = node.hold_monitor().await;
    node.advance(Duration::from_millis(1));
    // An array inside an array is one value, not a Date: never due (the
    // index holds the inner array as a key, as MongoDB's does).
    assert_eq!(
        str_ids(&c, doc! {}).await,
        strs(&["nested", "no-date-due", "string"])
    );
    node.advance(Duration::from_millis(1));
    assert_eq!(str_ids(&c, doc! {}).await, strs(&["nested", "string"]));
}

#[tokio::test]
async fn a_partial_ttl_index_hides_only_documents_its_filter_admits() {
    let node = node();
    let c = node.coll("app", "partial").await;
    let opts = IndexOptions::builder()
        .partial_filter_expression(doc! { "kind": "guest" })
        .build();
    ttl_index(&c, doc! { "at": 1 }, TTL_SECS, Some(opts)).await;
    c.insert_many(vec![
        doc! { "_id": "guest", "kind": "guest", "at": at(T0) },
        doc! { "_id": "member", "kind": "member", "at": at(T0) },
    ])
    .await
    .unwrap();
    let _held = node.hold_monitor().await;
    node.advance(Duration::from_millis(1));
    assert_eq!(str_ids(&c, doc! {}).await, strs(&["member"]));
    let db = node.db("app").await;
    assert_eq!(count(&db, doc! { "count": "partial" }).await, 1);
}

#[tokio::test]
async fn any_of_two_ttl_indexes_hides_a_document() {
    let node = node();
    let c = node.coll("app", "two").await;
    ttl_index(&c, doc! { "created": 1 }, 3600, None).await;
    ttl_index(&c, doc! { "lastSeen": 1 }, TTL_SECS, None).await;
    c.insert_many(vec![
        // Due by lastSeen at DUE, by created an hour later.
        doc! { "_id": "idle", "created": at(T0), "lastSeen": at(T0) },
        // Due by created only, at T0 + 1 h.
        doc! { "_id": "busy", "created": at(T0), "lastSeen": at(T0 + 86_400_000) },
    ])
    .await
    .unwrap();
    let db = node.db("app").await;
    let _held = node.hold_monitor().await;
    assert_eq!(count(&db, doc! { "count": "two" }).await, 2);
    node.advance(Duration::from_millis(1));
    assert_eq!(str_ids(&c, doc! {}).await, strs(&["busy"]));
    assert_eq!(count(&db, doc! { "count": "two" }).await, 1);
    node.advance(Duration::from_millis(3_600_000 - 10_000));
    assert!(str_ids(&c, doc! {}).await.is_empty());
    // One document due by both indexes counts once.
    assert_eq!(count(&db, doc! { "count": "two" }).await, 0);
}

#[tokio::test]
async fn a_coll_mod_lowering_expire_after_seconds_hides_at_once() {
    let node = node();
    let c = node.coll("app", "lowered").await;
    ttl_index(&c, doc! { "at": 1 }, 3600, None).await;
    c.insert_one(doc! { "_id": "s", "at": at(T0) })
        .await
        .unwrap();
    let _held = node.hold_monitor().await;
    assert_eq!(str_ids(&c, doc! {}).await, strs(&["s"]));
    node.db("app")
        .await
        .run_command(doc! {
            "collMod": "lowered",
            "index": { "keyPattern": { "at": 1 }, "expireAfterSeconds": 5 },
        })
        .await
        .unwrap();
    assert!(str_ids(&c, doc! {}).await.is_empty());
}

#[tokio::test]
async fn due_documents_stay_hidden_after_a_restart() {
    let mut node = node();
    let c = sessions(&node).await;
    drop(c);
    node.restart();
    let c = node.coll("app", "sessions").await;
    let _held = node.hold_monitor().await;
    assert_eq!(str_ids(&c, doc! {}).await, strs(&["due", "live"]));
    node.advance(Duration::from_millis(1));
    assert_eq!(str_ids(&c, doc! {}).await, strs(&["live"]));
}

// --- writes see the same world ------------------------------------------

#[tokio::test]
async fn an_id_upsert_replaces_a_due_document() {
    let node = node();
    let c = sessions(&node).await;
    let _held = node.hold_monitor().await;
    node.advance(Duration::from_millis(1));
    let (deleted, ..) = node.ttl_metrics().await;
    let r = c
        .update_one(doc! { "_id": "due" }, doc! { "$set": { "user": "new" } })
        .upsert(true)
        .await
        .unwrap();
    assert_eq!(r.matched_count, 0);
    assert_eq!(r.upserted_id, Some(Bson::String("due".into())));
    // A fresh document: nothing of the due one survives.
    let now = c.find_one(doc! { "_id": "due" }).await.unwrap().unwrap();
    assert_eq!(now, doc! { "_id": "due", "user": "new" });
    assert_eq!(node.ttl_metrics().await.0, deleted + 1);
    assert_eq!(ttl_metric(&node, "replacedByWrites").await, 1);
}

#[tokio::test]
async fn an_insert_takes_the_id_of_a_due_document() {
    let node = node();
    let c = sessions(&node).await;
    let _held = node.hold_monitor().await;
    let dup = c.insert_one(doc! { "_id": "due" }).await;
    assert_eq!(common::code(&dup.unwrap_err()), Some(11000));
    node.advance(Duration::from_millis(1));
    c.insert_one(doc! { "_id": "due", "user": "again" })
        .await
        .unwrap();
    assert_eq!(stored(&node, &c).await, strs(&["due", "live"]));
    let again = c.find_one(doc! { "_id": "due" }).await.unwrap().unwrap();
    assert_eq!(again.get_str("user").unwrap(), "again");
    // Its index entries went with it: a TTL scan finds only the new one.
    assert!(str_ids(&c, doc! { "at": { "$exists": true } }).await == strs(&["live"]));
}

#[tokio::test]
async fn a_unique_key_held_by_a_due_document_does_not_block_a_new_one() {
    let node = node();
    let c = node.coll("app", "tokens").await;
    ttl_index(&c, doc! { "at": 1 }, TTL_SECS, None).await;
    unique_email_index(&c).await;
    c.insert_one(doc! { "_id": "old", "email": "a@x", "at": at(T0) })
        .await
        .unwrap();
    let _held = node.hold_monitor().await;
    let blocked = c.insert_one(doc! { "_id": "new", "email": "a@x" }).await;
    assert_eq!(common::code(&blocked.unwrap_err()), Some(11000));
    node.advance(Duration::from_millis(1));
    c.insert_one(doc! { "_id": "new", "email": "a@x" })
        .await
        .unwrap();
    assert_eq!(stored(&node, &c).await, strs(&["new"]));
    assert_eq!(str_ids(&c, doc! { "email": "a@x" }).await, strs(&["new"]));
    // An update taking a due document's key does the same.
    c.insert_one(doc! { "_id": "old2", "email": "b@x", "at": at(T0) })
        .await
        .unwrap();
    c.update_one(doc! { "_id": "new" }, doc! { "$set": { "email": "b@x" } })
        .await
        .unwrap();
    assert_eq!(stored(&node, &c).await, strs(&["new"]));
    assert_eq!(ttl_metric(&node, "replacedByWrites").await, 2);
}

/// An index build meets a due document the monitor has not deleted yet: it
/// deletes it instead of indexing it, so a unique index is not refused over
/// a document no reader can see (found by the model test as a race with the
/// monitor).
#[tokio::test]
async fn a_unique_index_build_is_not_refused_over_a_due_document() {
    let node = node();
    let c = node.coll("app", "tokens").await;
    ttl_index(&c, doc! { "at": 1 }, TTL_SECS, None).await;
    c.insert_many(vec![
        doc! { "_id": "due", "email": "a@x", "at": at(T0) },
        doc! { "_id": "live", "email": "a@x" },
    ])
    .await
    .unwrap();
    let _held = node.hold_monitor().await;
    node.advance(Duration::from_millis(1));
    assert_eq!(stored(&node, &c).await, strs(&["due", "live"]));
    unique_email_index(&c).await;
    assert_eq!(stored(&node, &c).await, strs(&["live"]));
    assert_eq!(str_ids(&c, doc! { "email": "a@x" }).await, strs(&["live"]));
    assert_eq!(ttl_metric(&node, "replacedByWrites").await, 1);
}

// --- MongoDB's behaviour on request -------------------------------------

#[tokio::test]
async fn with_the_monitor_disabled_nothing_is_hidden() {
    let node = node();
    let c = sessions(&node).await;
    node.set_parameter("ttlMonitorEnabled", false).await;
    node.advance(Duration::from_secs(3600));
    assert_eq!(str_ids(&c, doc! {}).await, strs(&["due", "live"]));
    let dup = c.insert_one(doc! { "_id": "due" }).await;
    assert_eq!(common::code(&dup.unwrap_err()), Some(11000));
    let _held = node.hold_monitor().await;
    node.set_parameter("ttlMonitorEnabled", true).await;
    assert_eq!(str_ids(&c, doc! {}).await, strs(&["live"]));
}

#[tokio::test]
async fn hide_expired_false_keeps_due_documents_visible_until_deleted() {
    let node = TestNode::start_with(
        |config| config.ttl.hide_expired = false,
        Some(Arc::new(ManualClock::new(DUE - 1))),
    );
    let c = sessions(&node).await;
    let db = node.db("app").await;
    {
        let _held = node.hold_monitor().await;
        node.advance(Duration::from_millis(1));
        assert_eq!(str_ids(&c, doc! {}).await, strs(&["due", "live"]));
        assert_eq!(count(&db, doc! { "count": "sessions" }).await, 2);
        let dup = c.insert_one(doc! { "_id": "due" }).await;
        assert_eq!(common::code(&dup.unwrap_err()), Some(11000));
        assert_eq!(ttl_metric(&node, "hiddenByReads").await, 0);
    }
    node.ttl_pass().await;
    assert_eq!(str_ids(&c, doc! {}).await, strs(&["live"]));
}

// --- the property ---------------------------------------------------------

/// A drawn value for a TTL field: a Date (seconds from T0), two Dates in
/// an array, a string, a number, or nothing.
#[derive(Debug, Clone)]
enum Drawn {
    Date(i64),
    Dates(i64, i64),
    Text,
    Number(i64),
    Missing,
}

impl Drawn {
    fn bson(&self) -> Option<Bson> {
        match self {
            Drawn::Date(s) => Some(at(T0 + s * 1000)),
            Drawn::Dates(x, y) => Some(Bson::Array(vec![at(T0 + x * 1000), at(T0 + y * 1000)])),
            Drawn::Text => Some(Bson::String("2026-01-01".into())),
            Drawn::Number(n) => Some(Bson::Int64(T0 + n)),
            Drawn::Missing => None,
        }
    }

    /// The earliest Date the value holds (the Date an array expires by).
    fn earliest(&self) -> Option<i64> {
        match self {
            Drawn::Date(s) => Some(T0 + s * 1000),
            Drawn::Dates(x, y) => Some(T0 + x.min(y) * 1000),
            _ => None,
        }
    }
}

/// A drawn TTL index: on `a` (always) or `b`, with its
/// `expireAfterSeconds` and, maybe, a partial filter `{kind: "x"}`.
#[derive(Debug, Clone)]
struct DrawnIndex {
    secs: i64,
    partial: bool,
}

/// For random documents, TTL indexes and clock values: the documents
/// every reader sees are exactly those no TTL index makes due by
/// MongoDB's rule, and counts answered from index keys equal counts of
/// fetched documents.
#[tokio::test]
async fn visible_is_exactly_not_due_and_key_counts_equal_fetched_counts() {
    use proptest::prelude::*;
    let value = prop_oneof![
        (-60i64..60).prop_map(Drawn::Date),
        (-60i64..60, -60i64..60).prop_map(|(x, y)| Drawn::Dates(x, y)),
        Just(Drawn::Text),
        (-60_000i64..60_000).prop_map(Drawn::Number),
        Just(Drawn::Missing),
    ];
    let index = (0i64..40, any::<bool>()).prop_map(|(secs, partial)| DrawnIndex { secs, partial });
    let doc = (value.clone(), value, any::<bool>());
    let strategy = (
        index.clone(),
        proptest::option::of(index),
        proptest::collection::vec(doc, 1..16),
        0i64..120_000,
    );
    let clock = Arc::new(ManualClock::new(T0));
    let node = TestNode::start_with_clock(clock.clone());
    let db = node.db("prop").await;
    for (case, (on_a, on_b, docs, offset)) in cases(strategy, 40).into_iter().enumerate() {
        let name = format!("c{case}");
        let c = db.collection::<Document>(&name);
        let held = node.hold_monitor().await;
        clock.set(T0 + offset);
        let partial = |p: bool| {
            p.then(|| {
                IndexOptions::builder()
                    .partial_filter_expression(doc! { "kind": "x" })
                    .build()
            })
        };
        ttl_index(&c, doc! { "a": 1 }, on_a.secs as u64, partial(on_a.partial)).await;
        if let Some(b) = &on_b {
            ttl_index(&c, doc! { "b": 1 }, b.secs as u64, partial(b.partial)).await;
        }
        let mut expected = Vec::new();
        let mut inserted = Vec::new();
        for (i, (a, b, x)) in docs.iter().enumerate() {
            let mut d = doc! { "_id": i as i32, "kind": if *x { "x" } else { "y" } };
            if let Some(v) = a.bson() {
                d.insert("a", v);
            }
            if let Some(v) = b.bson() {
                d.insert("b", v);
            }
            inserted.push(d);
            let due_by = |v: &Drawn, ix: &DrawnIndex| {
                (!ix.partial || *x)
                    && v.earliest()
                        .is_some_and(|date| date + ix.secs * 1000 <= T0 + offset)
            };
            let due = due_by(a, &on_a) || on_b.as_ref().is_some_and(|ix| due_by(b, ix));
            if !due {
                expected.push(i as i32);
            }
        }
        c.insert_many(inserted).await.unwrap();
        let seen = common::ids(&c, doc! {}).await;
        assert_eq!(
            seen, expected,
            "case {case}: {on_a:?} {on_b:?} {docs:?} at +{offset} ms"
        );
        let by_keys = count(&db, doc! { "count": &name }).await;
        let fetched = count(
            &db,
            doc! { "count": &name, "query": { "kind": { "$exists": true } } },
        )
        .await;
        assert_eq!(
            by_keys as usize,
            expected.len(),
            "case {case}: index-only count"
        );
        assert_eq!(
            fetched as usize,
            expected.len(),
            "case {case}: fetched count"
        );
        drop(held);
    }
}

#[tokio::test]
async fn a_scan_of_the_ttl_index_starts_past_its_due_entries() {
    // The oldest live document by the TTL index, under a backlog of due
    // ones: the scan leaves the due Date bracket out instead of reading
    // and hiding each of its entries, in either direction, and still
    // hides a document due by another of its dates.
    let node = node();
    let c = node.coll("app", "backlog").await;
    ttl_index(&c, doc! { "at": 1 }, TTL_SECS, None).await;
    let mut docs: Vec<Document> = (0..3_000)
        .map(|i| doc! { "_id": format!("d{i:05}"), "at": at(T0) })
        .collect();
    docs.extend([
        doc! { "_id": "live-1", "at": at(DUE) },
        doc! { "_id": "live-2", "at": at(DUE + 1) },
        doc! { "_id": "number", "at": 5 },
        doc! { "_id": "string", "at": "soon" },
        doc! { "_id": "array-due", "at": [at(DUE + 2), at(T0)] },
    ]);
    c.insert_many(docs).await.unwrap();
    let db = node.db("app").await;
    let _held = node.hold_monitor().await;
    node.advance(Duration::from_millis(1));
    let sorted = |dir: i32| {
        let c = c.clone();
        async move {
            let found = c
                .find(doc! {})
                .sort(doc! { "at": dir })
                .hint(mongodb::options::Hint::Keys(doc! { "at": 1 }))
                .await
                .unwrap();
            let docs: Vec<Document> = futures::TryStreamExt::try_collect(found).await.unwrap();
            docs.iter()
                .map(|d| d.get_str("_id").unwrap().to_owned())
                .collect::<Vec<_>>()
        }
    };
    assert_eq!(
        sorted(1).await,
        strs(&["number", "string", "live-1", "live-2"])
    );
    assert_eq!(
        sorted(-1).await,
        strs(&["live-2", "live-1", "string", "number"])
    );
    let explain = db
        .run_command(doc! {
            "explain": {
                "find": "backlog", "filter": { "at": { "$gte": at(0) } }, "sort": { "at": 1 },
                "hint": { "at": 1 }, "limit": 1,
            },
            "verbosity": "executionStats",
        })
        .await
        .unwrap();
    let stats = explain.get_document("executionStats").unwrap();
    assert_eq!(stats.get_i64("nReturned").unwrap(), 1);
    let keys = stats.get_i64("totalKeysExamined").unwrap();
    assert!(
        keys < 10,
        "{keys} keys examined for the oldest live document"
    );
    assert_eq!(
        str_ids(&c, doc! { "at": { "$lte": at(DUE + 2) } }).await,
        strs(&["live-1", "live-2"])
    );
}
