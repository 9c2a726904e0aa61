//! Capped collections and tailable cursors end to end through the Rust
//! driver. Expected results come from the MongoDB manual ("Capped
//! Collections", the `create` and `convertToCapped` command references)
//! and the jstests named on each test.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::common::{TestNode, eventually, expect_code, first_batch, ttl_index};
use ebb_actors::clock::ManualClock;
use futures::TryStreamExt;
use mongodb::bson::{Bson, DateTime, Document, doc};
use mongodb::options::CursorType;
use mongodb::{Collection, Database};

async fn capped(db: &Database, name: &str, size: i64, max: Option<i64>) -> Collection<Document> {
    let mut cmd = doc! { "create": name, "capped": true, "size": size };
    if let Some(max) = max {
        cmd.insert("max", max);
    }
    db.run_command(cmd).await.unwrap();
    db.collection(name)
}

/// `_id`s in the order a plain `find` (natural order) returns them.
async fn natural_ids(c: &Collection<Document>) -> Vec<i32> {
    let docs: Vec<Document> = c.find(doc! {}).await.unwrap().try_collect().await.unwrap();
    docs.iter().map(|d| d.get_i32("_id").unwrap()).collect()
}

/// A numeric field of a reply, whichever integer type it came as.
fn number(reply: &Document, field: &str) -> i64 {
    match reply.get(field) {
        Some(Bson::Int32(n)) => i64::from(*n),
        Some(Bson::Int64(n)) => *n,
        other => panic!("{field}: {other:?} in {reply}"),
    }
}

async fn coll_stats(db: &Database, name: &str) -> Document {
    db.run_command(doc! { "collStats": name }).await.unwrap()
}

// The `create` reference and mongod 8.0's create command: size is
// required (72), must be >= 1 (51024) and at most 1 PB (2); size or max
// without capped is 72; max must stay below 2^31 (2). Nothing is created.
#[tokio::test]
async fn create_refuses_capped_options_as_mongod_does() {
    let node = TestNode::start();
    let db = node.db("app").await;
    let cases = [
        (doc! { "create": "c", "capped": true }, 72),
        (doc! { "create": "c", "capped": true, "max": 5 }, 72),
        (doc! { "create": "c", "capped": true, "size": 0 }, 51024),
        (doc! { "create": "c", "capped": true, "size": -500 }, 51024),
        (
            doc! { "create": "c", "capped": true, "size": (1i64 << 50) + 1 },
            2,
        ),
        (doc! { "create": "c", "size": 4096 }, 72),
        (doc! { "create": "c", "capped": false, "max": 3 }, 72),
        (
            doc! { "create": "c", "capped": true, "size": 4096, "max": 1i64 << 31 },
            2,
        ),
        (doc! { "create": "c", "capped": "yes", "size": 4096 }, 14),
        (
            doc! { "create": "c", "capped": true, "size": 4096, "timeseries": { "timeField": "t" } },
            72,
        ),
    ];
    for (cmd, code) in cases {
        expect_code(db.run_command(cmd.clone()).await, code);
    }
    let names = db.list_collection_names().await.unwrap();
    assert!(names.is_empty(), "nothing created: {names:?}");
}

// listCollections shows {capped, size, max} (mongod 8.0 keeps size as
// given: SERVER-67246); collStats shows capped, maxSize and max
// (jstests/core/capped/capped_max1.js); `create` again with the same
// options succeeds, with others fails with NamespaceExists (48).
#[tokio::test]
async fn capped_options_show_in_list_collections_and_coll_stats() {
    let node = TestNode::start();
    let db = node.db("app").await;
    capped(&db, "log", 64 * 1024 + 1, Some(10)).await;
    let listed = first_batch(
        &db,
        doc! { "listCollections": 1, "filter": { "name": "log" } },
    )
    .await;
    assert_eq!(
        listed[0].get_document("options").unwrap(),
        &doc! { "capped": true, "size": 64 * 1024 + 1, "max": 10 }
    );
    let stats = coll_stats(&db, "log").await;
    assert!(stats.get_bool("capped").unwrap());
    assert_eq!(number(&stats, "maxSize"), 64 * 1024 + 1);
    assert_eq!(number(&stats, "max"), 10);
    db.run_command(doc! { "create": "log", "capped": true, "size": 64 * 1024 + 1, "max": 10 })
        .await
        .unwrap();
    expect_code(
        db.run_command(doc! { "create": "log", "capped": true, "size": 4096 })
            .await,
        48,
    );
    db.create_collection("plain").await.unwrap();
    let plain = coll_stats(&db, "plain").await;
    assert!(!plain.get_bool("capped").unwrap());
    assert!(!plain.contains_key("maxSize"));
}

// Manual, "Capped Collections": documents come back in insertion order,
// and `$natural: -1` (as sort or hint) returns them newest first.
#[tokio::test]
async fn capped_collections_keep_insertion_order_both_ways() {
    let node = TestNode::start();
    let db = node.db("app").await;
    let c = capped(&db, "events", 100_000, None).await;
    for id in [3, 1, 2, -7, 10] {
        c.insert_one(doc! { "_id": id }).await.unwrap();
    }
    assert_eq!(natural_ids(&c).await, vec![3, 1, 2, -7, 10]);
    let sorted: Vec<Document> = c
        .find(doc! {})
        .sort(doc! { "$natural": -1 })
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    let ids: Vec<i32> = sorted.iter().map(|d| d.get_i32("_id").unwrap()).collect();
    assert_eq!(ids, vec![10, -7, 2, 1, 3]);
    let hinted = first_batch(
        &db,
        doc! { "find": "events", "hint": { "$natural": -1 }, "filter": { "_id": { "$gt": 0 } } },
    )
    .await;
    let ids: Vec<i32> = hinted.iter().map(|d| d.get_i32("_id").unwrap()).collect();
    assert_eq!(ids, vec![10, 2, 1, 3]);
    let forward = first_batch(
        &db,
        doc! { "find": "events", "sort": { "$natural": 1 }, "batchSize": 2 },
    )
    .await;
    let ids: Vec<i32> = forward.iter().map(|d| d.get_i32("_id").unwrap()).collect();
    assert_eq!(ids, vec![3, 1]);
}

// jstests/core/capped/capped_max1.js: with max 10, twenty inserts leave
// the last ten.
#[tokio::test]
async fn max_keeps_the_newest_documents() {
    let node = TestNode::start();
    let db = node.db("app").await;
    let c = capped(&db, "t", 64 * 1024, Some(10)).await;
    for i in 0..20 {
        c.insert_one(doc! { "_id": i, "x": i }).await.unwrap();
    }
    assert_eq!(c.count_documents(doc! {}).await.unwrap(), 10);
    assert_eq!(natural_ids(&c).await, (10..20).collect::<Vec<_>>());
}

// The manual: "the oldest documents are removed" as an insert overfills
// the collection — even inside one insert command of more documents than
// `max` (they are removed in the insert's own write).
#[tokio::test]
async fn one_insert_of_more_than_max_keeps_its_last_documents() {
    let node = TestNode::start();
    let db = node.db("app").await;
    let c = capped(&db, "q", 100_000, Some(3)).await;
    c.insert_many((0..8).map(|i| doc! { "_id": i }))
        .await
        .unwrap();
    assert_eq!(natural_ids(&c).await, vec![5, 6, 7]);
    let stats = coll_stats(&db, "q").await;
    assert_eq!(number(&stats, "count"), 3);
}

// jstests/core/capped/capped_large_docs.js (scaled down): documents of
// about 10 KiB in a 25 KiB collection leave two, within the size.
#[tokio::test]
async fn size_keeps_the_collection_within_its_bytes() {
    let node = TestNode::start();
    let db = node.db("app").await;
    let c = capped(&db, "big", 25 * 1024, None).await;
    for i in 0..5 {
        c.insert_one(doc! { "_id": i, "key": "a".repeat(10 * 1024) })
            .await
            .unwrap();
    }
    assert_eq!(natural_ids(&c).await, vec![3, 4]);
    let stats = coll_stats(&db, "big").await;
    assert!(stats.get_i64("size").unwrap() <= 25 * 1024, "{stats}");
    assert_eq!(number(&stats, "count"), 2);
}

// mongod refuses a document larger than the whole collection with
// BadValue ("object to insert exceeds cappedMaxSize"); nothing changes.
#[tokio::test]
async fn a_document_larger_than_the_collection_is_refused() {
    let node = TestNode::start();
    let db = node.db("app").await;
    let c = capped(&db, "small", 1000, None).await;
    c.insert_one(doc! { "_id": 1 }).await.unwrap();
    let msg = expect_code(
        c.insert_one(doc! { "_id": 2, "s": "x".repeat(2000) }).await,
        2,
    );
    assert!(msg.contains("exceeds cappedMaxSize"), "{msg}");
    assert_eq!(natural_ids(&c).await, vec![1]);
}

// jstests/core/capped/capped_update.js (SERVER-58865, 5.3+): updates may
// change a document's size; mongod 8.0 allows deletes on capped
// collections. Order is kept through both.
#[tokio::test]
async fn updates_that_resize_and_deletes_are_allowed() {
    let node = TestNode::start();
    let db = node.db("app").await;
    let c = capped(&db, "u", 100_000, None).await;
    for j in 1..=10 {
        c.insert_one(doc! { "_id": j, "s": "Hello, World!" })
            .await
            .unwrap();
    }
    c.update_one(doc! { "_id": 3 }, doc! { "$set": { "s": "Hello!" } })
        .await
        .unwrap();
    c.replace_one(doc! { "_id": 10 }, doc! { "s": "Hello, World!!!" })
        .await
        .unwrap();
    c.delete_one(doc! { "_id": 5 }).await.unwrap();
    assert_eq!(natural_ids(&c).await, vec![1, 2, 3, 4, 6, 7, 8, 9, 10]);
    let three = c.find_one(doc! { "_id": 3 }).await.unwrap().unwrap();
    assert_eq!(three.get_str("s").unwrap(), "Hello!");
    c.insert_one(doc! { "_id": 11 }).await.unwrap();
    assert_eq!(number(&coll_stats(&db, "u").await, "count"), 10);
}

const T0: i64 = 1_700_000_000_000;

// The manual ("TTL Indexes", 7.1+): a TTL index on a capped collection is
// allowed and the monitor deletes its due documents; capping goes on
// counting correctly afterwards.
#[tokio::test]
async fn ttl_indexes_expire_documents_of_capped_collections() {
    let node = TestNode::start_with_clock(Arc::new(ManualClock::new(T0)));
    let db = node.db("app").await;
    let c = capped(&db, "sessions", 100_000, Some(4)).await;
    ttl_index(&c, doc! { "at": 1 }, 60, None).await;
    let old = DateTime::from_millis(T0 - 3_600_000);
    let fresh = DateTime::from_millis(T0 + 3_600_000);
    c.insert_many([
        doc! { "_id": 1, "at": old },
        doc! { "_id": 2, "at": fresh },
        doc! { "_id": 3, "at": old },
    ])
    .await
    .unwrap();
    node.ttl_pass().await;
    assert_eq!(natural_ids(&c).await, vec![2]);
    assert_eq!(number(&coll_stats(&db, "sessions").await, "count"), 1);
    for id in 4..=7 {
        c.insert_one(doc! { "_id": id, "at": fresh }).await.unwrap();
    }
    assert_eq!(natural_ids(&c).await, vec![4, 5, 6, 7]);
}

// The manual ("Tailable Cursors") and jstests/core/tailable_skip_limit.js:
// a tailable cursor stays open at the end and returns later inserts.
#[tokio::test]
async fn a_tailable_cursor_returns_documents_inserted_later() {
    let node = TestNode::start();
    let db = node.db("app").await;
    let c = capped(&db, "tail", 100_000, None).await;
    c.insert_one(doc! { "_id": 1 }).await.unwrap();
    let reply = db
        .run_command(doc! { "find": "tail", "tailable": true })
        .await
        .unwrap();
    let cursor = reply.get_document("cursor").unwrap();
    let id = cursor.get_i64("id").unwrap();
    assert_ne!(id, 0, "a tailable cursor stays open");
    c.insert_many([doc! { "_id": 2 }, doc! { "_id": 3 }])
        .await
        .unwrap();
    let more = db
        .run_command(doc! { "getMore": id, "collection": "tail" })
        .await
        .unwrap();
    let batch = more
        .get_document("cursor")
        .unwrap()
        .get_array("nextBatch")
        .unwrap();
    assert_eq!(batch.len(), 2);
    let empty = db
        .run_command(doc! { "getMore": id, "collection": "tail" })
        .await
        .unwrap();
    let cursor = empty.get_document("cursor").unwrap();
    assert!(cursor.get_array("nextBatch").unwrap().is_empty());
    assert_eq!(cursor.get_i64("id").unwrap(), id, "still open at the end");
}

// The queue pattern: a tailable awaitData
// cursor (the driver's CursorType::TailableAwait, maxAwaitTimeMS 5 s) is
// waiting in getMore; a document inserted then reaches it within 50 ms,
// long before the wait would time out (jstests/core/awaitdata_getmore_cmd.js).
#[tokio::test]
async fn an_await_data_cursor_wakes_within_50_ms_of_an_insert() {
    let node = TestNode::start();
    let db = node.db("app").await;
    let c = capped(&db, "queue", 100_000, None).await;
    c.insert_one(doc! { "_id": 0 }).await.unwrap();
    let mut cursor = c
        .find(doc! {})
        .cursor_type(CursorType::TailableAwait)
        .max_await_time(Duration::from_secs(5))
        .await
        .unwrap();
    assert!(cursor.advance().await.unwrap());
    assert_eq!(cursor.current().get_i32("_id").unwrap(), 0);
    let waiter = tokio::spawn(async move {
        let more = cursor.advance().await.unwrap();
        (more, Instant::now(), cursor.deserialize_current().unwrap())
    });
    // Wait (polling, with a deadline) until the getMore is in flight.
    let admin = node.db("admin").await;
    let waiting = eventually(Duration::from_secs(10), || async {
        let ops = admin.run_command(doc! { "currentOp": 1 }).await.unwrap();
        ops.get_array("inprog").unwrap().iter().any(|op| {
            op.as_document()
                .and_then(|d| d.get_document("command").ok())
                .is_some_and(|cmd| cmd.contains_key("getMore"))
        })
    })
    .await;
    assert!(waiting, "the getMore never started waiting");
    let inserted = Instant::now();
    c.insert_one(doc! { "_id": 1, "job": "send" })
        .await
        .unwrap();
    let (more, received, doc) = waiter.await.unwrap();
    assert!(more);
    assert_eq!(doc, doc! { "_id": 1, "job": "send" });
    let latency = received.duration_since(inserted);
    assert!(latency < Duration::from_millis(50), "took {latency:?}");
}

// An awaitData getMore with nothing new waits its maxTimeMS, then answers
// an empty batch and keeps the cursor (awaitdata_getmore_cmd.js).
#[tokio::test]
async fn an_await_data_get_more_times_out_with_an_empty_batch() {
    let node = TestNode::start();
    let db = node.db("app").await;
    capped(&db, "idle", 100_000, None).await;
    db.collection::<Document>("idle")
        .insert_one(doc! { "_id": 1 })
        .await
        .unwrap();
    let reply = db
        .run_command(doc! { "find": "idle", "tailable": true, "awaitData": true })
        .await
        .unwrap();
    let id = reply.get_document("cursor").unwrap().get_i64("id").unwrap();
    let started = Instant::now();
    let more = db
        .run_command(doc! { "getMore": id, "collection": "idle", "maxTimeMS": 200 })
        .await
        .unwrap();
    assert!(started.elapsed() >= Duration::from_millis(190));
    let cursor = more.get_document("cursor").unwrap();
    assert!(cursor.get_array("nextBatch").unwrap().is_empty());
    assert_eq!(cursor.get_i64("id").unwrap(), id);
}

// mongod's errors: tailable on a collection that is not capped is
// BadValue (2); awaitData without tailable is FailedToParse (9); a
// tailable sort other than {$natural: 1} is BadValue; maxTimeMS on the
// getMore of a cursor that is not awaitData is BadValue.
#[tokio::test]
async fn tailable_misuse_gets_mongods_errors() {
    let node = TestNode::start();
    let db = node.db("app").await;
    db.collection::<Document>("plain")
        .insert_one(doc! { "_id": 1 })
        .await
        .unwrap();
    capped(&db, "cap", 4096, None).await;
    db.collection::<Document>("cap")
        .insert_one(doc! { "_id": 1 })
        .await
        .unwrap();
    expect_code(
        db.run_command(doc! { "find": "plain", "tailable": true })
            .await,
        2,
    );
    expect_code(
        db.run_command(doc! { "find": "cap", "awaitData": true })
            .await,
        9,
    );
    expect_code(
        db.run_command(doc! { "find": "cap", "tailable": true, "sort": { "_id": 1 } })
            .await,
        2,
    );
    let reply = db
        .run_command(doc! { "find": "cap", "tailable": true })
        .await
        .unwrap();
    let id = reply.get_document("cursor").unwrap().get_i64("id").unwrap();
    expect_code(
        db.run_command(doc! { "getMore": id, "collection": "cap", "maxTimeMS": 10 })
            .await,
        2,
    );
}

// jstests/core/tailable_cursor_invalidation.js: a tailable cursor on an
// empty capped collection is not kept (mongod keeps one only when the
// collection has records).
#[tokio::test]
async fn a_tailable_cursor_on_an_empty_collection_is_closed() {
    let node = TestNode::start();
    let db = node.db("app").await;
    capped(&db, "empty", 4096, None).await;
    let reply = db
        .run_command(doc! { "find": "empty", "tailable": true })
        .await
        .unwrap();
    assert_eq!(
        reply.get_document("cursor").unwrap().get_i64("id").unwrap(),
        0
    );
}

// jstests/core/capped/capped_max1.js ("cursor should now be dead") and
// mongod's CappedPositionLost (136): once capping removed the document a
// tailable cursor stood on, its getMore fails.
#[tokio::test]
async fn a_tailable_cursor_whose_position_was_capped_away_fails() {
    let node = TestNode::start();
    let db = node.db("app").await;
    let c = capped(&db, "lost", 100_000, Some(2)).await;
    c.insert_many([doc! { "_id": 1 }, doc! { "_id": 2 }])
        .await
        .unwrap();
    let reply = db
        .run_command(doc! { "find": "lost", "tailable": true, "batchSize": 1 })
        .await
        .unwrap();
    let id = reply.get_document("cursor").unwrap().get_i64("id").unwrap();
    c.insert_many((3..8).map(|i| doc! { "_id": i }))
        .await
        .unwrap();
    expect_code(
        db.run_command(doc! { "getMore": id, "collection": "lost" })
            .await,
        136,
    );
}

// The `convertToCapped` reference: the collection becomes capped in
// place, keeping the newest documents that fit; `cloneCollectionAsCapped`
// copies into a new capped collection and leaves the source; a missing
// source is NamespaceNotFound (26).
#[tokio::test]
async fn convert_and_clone_to_capped() {
    let node = TestNode::start();
    let db = node.db("app").await;
    let c = db.collection::<Document>("events");
    c.insert_many((0..10).map(|i| doc! { "_id": i, "pad": "p".repeat(100) }))
        .await
        .unwrap();
    db.run_command(
        doc! { "cloneCollectionAsCapped": "events", "toCollection": "copy", "size": 100_000 },
    )
    .await
    .unwrap();
    let copy = db.collection::<Document>("copy");
    assert_eq!(natural_ids(&copy).await, (0..10).collect::<Vec<_>>());
    expect_code(
        db.run_command(
            doc! { "cloneCollectionAsCapped": "events", "toCollection": "copy", "size": 4096 },
        )
        .await,
        48,
    );
    db.run_command(doc! { "convertToCapped": "events", "size": 600 })
        .await
        .unwrap();
    let ids = natural_ids(&c).await;
    assert!(!ids.is_empty() && ids.len() < 10, "{ids:?}");
    assert_eq!(*ids.last().unwrap(), 9, "the newest are kept");
    let stats = coll_stats(&db, "events").await;
    assert!(stats.get_bool("capped").unwrap());
    assert_eq!(number(&stats, "maxSize"), 600);
    expect_code(
        db.run_command(doc! { "convertToCapped": "nothing", "size": 4096 })
            .await,
        26,
    );
}

// Capping survives a restart: the order and totals are on disk.
#[tokio::test]
async fn capping_continues_after_a_restart() {
    let mut node = TestNode::start();
    {
        let db = node.db("app").await;
        let c = capped(&db, "r", 100_000, Some(3)).await;
        c.insert_many((0..3).map(|i| doc! { "_id": i }))
            .await
            .unwrap();
    }
    node.restart();
    let c = node.coll("app", "r").await;
    c.insert_one(doc! { "_id": 3 }).await.unwrap();
    assert_eq!(natural_ids(&c).await, vec![1, 2, 3]);
}
