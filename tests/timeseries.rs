//! Time-series and clustered collections with TTL (collection-level
//! expireAfterSeconds, bucket expiry, partial TTL indexes on the metaField,
//! the extended range), end to end through the Rust driver; expiry is driven by the
//! manual clock, so no test waits for real time.

use std::sync::Arc;
use std::time::Duration;

use crate::common::{TestNode, expect_code, first_batch};
use ebb_actors::clock::ManualClock;
use futures::TryStreamExt;
use mongodb::bson::{Bson, DateTime, Document, doc};
use mongodb::{Collection, Database};

/// 2026-01-01T00:00:00Z: the manual clock's start (a whole day).
const T0: i64 = 1_767_225_600_000;
const SEC: i64 = 1000;
const MIN: i64 = 60 * SEC;
const HOUR: i64 = 60 * MIN;
const DAY: i64 = 24 * HOUR;

fn at(ms: i64) -> Bson {
    Bson::DateTime(DateTime::from_millis(ms))
}

fn node() -> TestNode {
    TestNode::start_with_clock(Arc::new(ManualClock::new(T0)))
}

/// `app.w`: a time-series collection of measurements at `t` by `sensor`.
async fn sensors(node: &TestNode) -> (Database, Collection<Document>) {
    let db = node.db("app").await;
    create(
        &db,
        doc! { "create": "w", "timeseries": { "timeField": "t", "metaField": "sensor" } },
    )
    .await
    .unwrap();
    let c = db.collection::<Document>("w");
    (db, c)
}

async fn create(db: &Database, cmd: Document) -> mongodb::error::Result<Document> {
    db.run_command(cmd).await
}

/// listCollections' entry for `name`.
async fn listed(db: &Database, name: &str) -> Option<Document> {
    first_batch(db, doc! { "listCollections": 1 })
        .await
        .into_iter()
        .find(|c| c.get_str("name").ok() == Some(name))
}

/// Every measurement, sorted by `n`.
async fn measurements(db: &Database, coll: &str) -> Vec<Document> {
    db.collection::<Document>(coll)
        .find(doc! {})
        .sort(doc! { "n": 1 })
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap()
}

/// The stored buckets (`system.buckets.<coll>`).
async fn buckets(db: &Database, coll: &str) -> Vec<Document> {
    db.collection::<Document>(&format!("system.buckets.{coll}"))
        .find(doc! {})
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap()
}

async fn count(db: &Database, coll: &str) -> u64 {
    db.collection::<Document>(coll)
        .count_documents(doc! {})
        .await
        .unwrap()
}

/// `n` measurements of sensor `meta`, one per second from `start`.
fn readings(meta: &str, start: i64, n: i32) -> Vec<Document> {
    (0..n)
        .map(|i| doc! { "t": at(start + i64::from(i) * SEC), "sensor": meta, "n": i, "v": f64::from(i) / 2.0 })
        .collect()
}

/// jstests/core/timeseries/ddl/timeseries_create.js; the TTL manual page's
/// weather24h.
#[tokio::test]
async fn create_lists_the_collection_and_its_buckets() {
    let node = node();
    let db = node.db("app").await;
    create(
        &db,
        doc! { "create": "weather24h", "timeseries": { "timeField": "timestamp", "metaField": "sensor", "granularity": "hours" }, "expireAfterSeconds": 86400 },
    )
    .await
    .unwrap();
    let ts = listed(&db, "weather24h").await.unwrap();
    assert_eq!(ts.get_str("type").unwrap(), "timeseries");
    let options = ts.get_document("options").unwrap();
    assert_eq!(
        options.get_document("timeseries").unwrap(),
        &doc! { "timeField": "timestamp", "metaField": "sensor", "granularity": "hours", "bucketMaxSpanSeconds": 2_592_000 }
    );
    assert_eq!(options.get("expireAfterSeconds"), Some(&Bson::Int64(86400)));
    let b = listed(&db, "system.buckets.weather24h").await.unwrap();
    assert_eq!(b.get_str("type").unwrap(), "collection");
    let bo = b.get_document("options").unwrap();
    assert_eq!(bo.get_bool("clusteredIndex").ok(), Some(true));
    assert_eq!(bo.get("expireAfterSeconds"), Some(&Bson::Int64(86400)));
}

/// timeseries_create.js: idempotent with identical options, 48 otherwise.
#[tokio::test]
async fn create_is_idempotent_only_with_identical_options() {
    let node = node();
    let db = node.db("app").await;
    let cmd = doc! { "create": "m", "timeseries": { "timeField": "t", "metaField": "s" } };
    create(&db, cmd.clone()).await.unwrap();
    create(&db, cmd).await.unwrap();
    expect_code(
        create(
            &db,
            doc! { "create": "m", "timeseries": { "timeField": "t" } },
        )
        .await,
        48,
    );
    expect_code(create(&db, doc! { "create": "m" }).await, 48);
}

/// timeseries_create.js: the option rules and their codes.
#[tokio::test]
async fn invalid_timeseries_options_get_mongods_codes() {
    let node = node();
    let db = node.db("app").await;
    let cases: Vec<(Bson, i32)> = vec![
        (Bson::String(String::new()), 14),
        (doc! { "timeField": 100 }.into(), 14),
        (doc! { "timeField": "time", "metaField": 100 }.into(), 14),
        (doc! { "timeField": "time", "invalidOption": {} }.into(), 40415),
        (doc! { "metaField": "m" }.into(), 40414),
        (doc! { "timeField": "sub.time" }.into(), 72),
        (doc! { "timeField": "time", "metaField": "sub.meta" }.into(), 72),
        (doc! { "timeField": "time", "metaField": "time" }.into(), 72),
        (doc! { "timeField": "time", "bucketMaxSpanSeconds": 10 }.into(), 72),
        (
            doc! { "timeField": "time", "granularity": "minutes", "bucketMaxSpanSeconds": 3600 }
                .into(),
            72,
        ),
        (
            doc! { "timeField": "time", "granularity": "seconds", "bucketMaxSpanSeconds": 3600, "bucketRoundingSeconds": 60 }
                .into(),
            72,
        ),
        (
            doc! { "timeField": "time", "bucketMaxSpanSeconds": 100, "bucketRoundingSeconds": 50 }
                .into(),
            72,
        ),
        (doc! { "timeField": "time", "granularity": "days" }.into(), 2),
        (doc! { "timeField": "\0time" }.into(), 2),
    ];
    for (i, (ts, code)) in cases.into_iter().enumerate() {
        let name = format!("bad{i}");
        expect_code(
            create(&db, doc! { "create": &name, "timeseries": ts.clone() }).await,
            code,
        );
        assert!(listed(&db, &name).await.is_none(), "{ts:?} created {name}");
    }
    expect_code(
        create(
            &db,
            doc! { "create": "capped", "timeseries": { "timeField": "t" }, "capped": true, "size": 100 },
        )
        .await,
        72,
    );
}

/// timeseries_create.js (custom span): rounding and span shown, no granularity.
#[tokio::test]
async fn custom_bucketing_is_shown_without_granularity() {
    let node = node();
    let db = node.db("app").await;
    create(
        &db,
        doc! { "create": "c", "timeseries": { "timeField": "t", "bucketMaxSpanSeconds": 600, "bucketRoundingSeconds": 600 } },
    )
    .await
    .unwrap();
    let ts = listed(&db, "c").await.unwrap();
    assert_eq!(
        ts.get_document("options")
            .unwrap()
            .get_document("timeseries")
            .unwrap(),
        &doc! { "timeField": "t", "bucketRoundingSeconds": 600, "bucketMaxSpanSeconds": 600 }
    );
}

/// timeseries_create.js: collection-level expireAfterSeconds is validated
/// on create.
#[tokio::test]
async fn collection_expire_after_seconds_is_validated() {
    let node = node();
    let db = node.db("app").await;
    for (eas, code) in [
        (Bson::Int64(-10), 72),
        (Bson::Int64(4_611_686_018_427_387_904), 72),
        (Bson::Int64(10_000_000_000), 72),
        (Bson::String(String::new()), 14),
    ] {
        expect_code(
            create(
                &db,
                doc! { "create": "e", "timeseries": { "timeField": "t" }, "expireAfterSeconds": eas },
            )
            .await,
            code,
        );
    }
    assert!(listed(&db, "e").await.is_none());
    // Refused without clustering or time series ("'expireAfterSeconds'
    // requires clustering to be enabled").
    expect_code(
        create(&db, doc! { "create": "plain", "expireAfterSeconds": 10 }).await,
        72,
    );
}

/// timeseries_create.js: drop removes the collection and its buckets.
#[tokio::test]
async fn drop_removes_the_collection_and_its_buckets() {
    let node = node();
    let db = node.db("app").await;
    create(
        &db,
        doc! { "create": "d", "timeseries": { "timeField": "t", "metaField": "sensor" } },
    )
    .await
    .unwrap();
    db.collection::<Document>("d")
        .insert_many(readings("a", T0, 3))
        .await
        .unwrap();
    db.collection::<Document>("d").drop().await.unwrap();
    assert!(listed(&db, "d").await.is_none());
    assert!(listed(&db, "system.buckets.d").await.is_none());
    assert_eq!(count(&db, "d").await, 0);
}

/// Time-series manual ("Query time-series data"): find returns the
/// measurements as inserted, with the metaField and an `_id`.
#[tokio::test]
async fn measurements_come_back_as_documents() {
    let node = node();
    let (db, c) = sensors(&node).await;
    c.insert_many(readings("a", T0, 3)).await.unwrap();
    c.insert_one(doc! { "_id": 7, "t": at(T0), "sensor": "b", "n": 10, "extra": "x" })
        .await
        .unwrap();
    let got = measurements(&db, "w").await;
    assert_eq!(got.len(), 4);
    assert_eq!(
        got[1].get_datetime("t").unwrap().timestamp_millis(),
        T0 + SEC
    );
    assert_eq!(got[1].get_str("sensor").unwrap(), "a");
    assert_eq!(got[1].get_f64("v").unwrap(), 0.5);
    assert!(got[1].get_object_id("_id").is_ok());
    assert_eq!(
        got[3],
        doc! { "t": at(T0), "sensor": "b", "_id": 7, "n": 10, "extra": "x" }
    );
    assert_eq!(count(&db, "w").await, 4);
    assert_eq!(
        c.count_documents(doc! { "sensor": "a", "n": { "$gte": 1 } })
            .await
            .unwrap(),
        2
    );
    let distinct = c.distinct("sensor", doc! {}).await.unwrap();
    assert_eq!(distinct, vec![Bson::from("a"), Bson::from("b")]);
}

/// Bucket catalog (jstests/core/timeseries/write/timeseries_bucket_*.js):
/// one bucket per meta value and span, with its control block.
#[tokio::test]
async fn measurements_of_one_meta_and_span_share_a_bucket() {
    let node = node();
    let (db, c) = sensors(&node).await;
    c.insert_many(readings("a", T0 + 30 * SEC, 5))
        .await
        .unwrap();
    c.insert_many(readings("b", T0 + 30 * SEC, 2))
        .await
        .unwrap();
    c.insert_many(readings("a", T0 + 40 * SEC, 2))
        .await
        .unwrap();
    let mut bs = buckets(&db, "w").await;
    bs.sort_by_key(|b| b.get_str("meta").unwrap().to_owned());
    assert_eq!(bs.len(), 2);
    let control = bs[0].get_document("control").unwrap();
    assert_eq!(control.get_i32("count").unwrap(), 7);
    // The start is the first time rounded down to the minute (seconds
    // granularity rounds by 60 s); the bucket's _id carries it.
    assert_eq!(
        control
            .get_document("min")
            .unwrap()
            .get_datetime("t")
            .unwrap()
            .timestamp_millis(),
        T0
    );
    assert_eq!(
        control
            .get_document("max")
            .unwrap()
            .get_datetime("t")
            .unwrap()
            .timestamp_millis(),
        T0 + 41 * SEC
    );
    assert_eq!(
        bs[0]
            .get_object_id("_id")
            .unwrap()
            .timestamp()
            .timestamp_millis(),
        T0
    );
}

/// MongoDB's bucket limits: 1000 measurements per bucket.
#[tokio::test]
async fn a_full_bucket_rolls_over() {
    let node = node();
    let (db, c) = sensors(&node).await;
    let docs: Vec<Document> = (0..1001)
        .map(|i| doc! { "t": at(T0 + i64::from(i)), "sensor": "a", "n": i })
        .collect();
    c.insert_many(docs).await.unwrap();
    let mut counts: Vec<i32> = buckets(&db, "w")
        .await
        .iter()
        .map(|b| b.get_document("control").unwrap().get_i32("count").unwrap())
        .collect();
    counts.sort_unstable();
    assert_eq!(counts, [1, 1000]);
    assert_eq!(count(&db, "w").await, 1001);
    // The full bucket is stored compressed and reads back exactly.
    let versions: Vec<i32> = buckets(&db, "w")
        .await
        .iter()
        .map(|b| {
            b.get_document("control")
                .unwrap()
                .get_i32("version")
                .unwrap()
        })
        .collect();
    assert!(versions.contains(&2), "{versions:?}");
    let all = measurements(&db, "w").await;
    assert_eq!(all.len(), 1001);
    for (i, m) in all.iter().enumerate() {
        assert_eq!(m.get_i32("n").unwrap(), i as i32);
        assert_eq!(
            m.get_datetime("t").unwrap().timestamp_millis(),
            T0 + i as i64
        );
    }
}

/// A late measurement goes to the bucket whose span covers it.
#[tokio::test]
async fn a_late_measurement_goes_to_the_bucket_covering_it() {
    let node = node();
    let (db, c) = sensors(&node).await;
    c.insert_one(doc! { "t": at(T0), "sensor": "a", "n": 0 })
        .await
        .unwrap();
    c.insert_one(doc! { "t": at(T0 + 2 * HOUR), "sensor": "a", "n": 1 })
        .await
        .unwrap();
    c.insert_one(doc! { "t": at(T0 + 10 * MIN), "sensor": "a", "n": 2 })
        .await
        .unwrap();
    let bs = buckets(&db, "w").await;
    assert_eq!(bs.len(), 2);
    let first = bs
        .iter()
        .find(|b| {
            b.get_object_id("_id")
                .unwrap()
                .timestamp()
                .timestamp_millis()
                == T0
        })
        .unwrap();
    assert_eq!(
        first
            .get_document("control")
            .unwrap()
            .get_i32("count")
            .unwrap(),
        2
    );
}

/// Bucket catalog: the timeField must be a Date; nothing is stored otherwise.
#[tokio::test]
async fn a_measurement_without_a_date_is_refused_and_nothing_stored() {
    let node = node();
    let (db, c) = sensors(&node).await;
    let msg = expect_code(
        c.insert_one(doc! { "t": "yesterday", "sensor": "a" }).await,
        2,
    );
    assert!(msg.contains("'t' must be present and contain a valid BSON UTC datetime value"));
    expect_code(c.insert_one(doc! { "sensor": "a" }).await, 2);
    assert_eq!(count(&db, "w").await, 0);
    assert!(buckets(&db, "w").await.is_empty());
}

/// The TTL manual page's "TTL for time series" and timeseries_ttl.js:
/// a bucket goes when min time + bucketMaxSpanSeconds + expireAfterSeconds
/// has passed, as a whole, and deletedDocuments counts it once.
#[tokio::test]
async fn a_bucket_expires_when_its_span_and_expire_after_seconds_have_passed() {
    let node = node();
    let db = node.db("app").await;
    create(
        &db,
        doc! { "create": "w", "timeseries": { "timeField": "t", "metaField": "sensor" }, "expireAfterSeconds": 300 },
    )
    .await
    .unwrap();
    db.collection::<Document>("w")
        .insert_many(readings("a", T0 + 5 * SEC, 10))
        .await
        .unwrap();
    let (deleted_before, ..) = node.ttl_metrics().await;
    // Due at start (T0) + 3600 s + 300 s, not at the last measurement + 300 s.
    node.advance(Duration::from_millis((HOUR + 5 * MIN - 1) as u64));
    node.ttl_pass().await;
    assert_eq!(count(&db, "w").await, 10);
    node.advance(Duration::from_millis(1));
    node.ttl_pass().await;
    assert_eq!(count(&db, "w").await, 0);
    assert!(buckets(&db, "w").await.is_empty());
    assert_eq!(node.ttl_metrics().await.0 - deleted_before, 1);
}

/// The TTL manual page's weather24h (granularity hours): data is kept for
/// the bucket span (30 days) beyond expireAfterSeconds.
#[tokio::test]
async fn hours_granularity_keeps_data_for_the_bucket_span() {
    let node = node();
    let db = node.db("app").await;
    create(
        &db,
        doc! { "create": "weather24h", "timeseries": { "timeField": "timestamp", "metaField": "sensor", "granularity": "hours" }, "expireAfterSeconds": 86400 },
    )
    .await
    .unwrap();
    db.collection::<Document>("weather24h")
        .insert_one(doc! { "timestamp": at(T0 + HOUR), "sensor": "MDB_NYC", "temp": 12 })
        .await
        .unwrap();
    node.advance(Duration::from_millis((2 * DAY) as u64));
    node.ttl_pass().await;
    assert_eq!(count(&db, "weather24h").await, 1);
    node.advance(Duration::from_millis((29 * DAY) as u64));
    node.ttl_pass().await;
    assert_eq!(count(&db, "weather24h").await, 0);
}

/// timeseries_expire_collmod.js: collMod sets, changes and
/// removes the collection-level expireAfterSeconds.
#[tokio::test]
async fn coll_mod_sets_changes_and_removes_expiry() {
    let node = node();
    let db = node.db("app").await;
    create(
        &db,
        doc! { "create": "w", "timeseries": { "timeField": "t" } },
    )
    .await
    .unwrap();
    let eas = |d: Document| {
        d.get_document("options")
            .unwrap()
            .get("expireAfterSeconds")
            .cloned()
    };
    db.run_command(doc! { "collMod": "w", "expireAfterSeconds": 100 })
        .await
        .unwrap();
    assert_eq!(eas(listed(&db, "w").await.unwrap()), Some(Bson::Int64(100)));
    db.run_command(doc! { "collMod": "w", "expireAfterSeconds": 200.5 })
        .await
        .unwrap();
    assert_eq!(eas(listed(&db, "w").await.unwrap()), Some(Bson::Int64(200)));
    db.run_command(doc! { "collMod": "w", "expireAfterSeconds": "off" })
        .await
        .unwrap();
    assert_eq!(eas(listed(&db, "w").await.unwrap()), None);
    for (v, code) in [
        (Bson::from("on"), 72),
        (Bson::Document(doc! {}), 14),
        (Bson::Int32(-1), 72),
    ] {
        expect_code(
            db.run_command(doc! { "collMod": "w", "expireAfterSeconds": v })
                .await,
            code,
        );
    }
    db.create_collection("plain").await.unwrap();
    expect_code(
        db.run_command(doc! { "collMod": "plain", "expireAfterSeconds": 10 })
            .await,
        72,
    );
}

/// timeseries_ttl.js: making a collection TTL with collMod
/// expires old buckets on the next pass.
#[tokio::test]
async fn coll_mod_expiry_removes_old_buckets_on_the_next_pass() {
    let node = node();
    let (db, c) = sensors(&node).await;
    c.insert_many(readings("old", T0 - 2 * DAY, 3))
        .await
        .unwrap();
    c.insert_many(readings("new", T0, 3)).await.unwrap();
    node.ttl_pass().await;
    assert_eq!(count(&db, "w").await, 6);
    db.run_command(doc! { "collMod": "w", "expireAfterSeconds": 3600 })
        .await
        .unwrap();
    node.ttl_pass().await;
    let left = measurements(&db, "w").await;
    assert_eq!(left.len(), 3);
    assert!(left.iter().all(|m| m.get_str("sensor").ok() == Some("new")));
}

/// MongoDB 7.0–8.0, as the TTL manual page documents: a measurement before
/// 1970 stops the monitor from deleting anything in the collection.
#[tokio::test]
async fn a_collection_in_the_extended_range_never_expires() {
    let node = node();
    let db = node.db("app").await;
    create(
        &db,
        doc! { "create": "w", "timeseries": { "timeField": "t", "metaField": "sensor" }, "expireAfterSeconds": 60 },
    )
    .await
    .unwrap();
    let c = db.collection::<Document>("w");
    c.insert_one(doc! { "t": at(-DAY), "sensor": "ancient" })
        .await
        .unwrap();
    c.insert_many(readings("old", T0 - 10 * DAY, 2))
        .await
        .unwrap();
    node.ttl_pass().await;
    assert_eq!(count(&db, "w").await, 3);
    // And after a restart, from the stored buckets.
    let mut node = node;
    node.restart();
    let db = node.db("app").await;
    node.ttl_pass().await;
    assert_eq!(count(&db, "w").await, 3);
}

/// A restart keeps the buckets, the options and the expiry.
#[tokio::test]
async fn a_restart_keeps_buckets_options_and_expiry() {
    let mut node = node();
    let db = node.db("app").await;
    create(
        &db,
        doc! { "create": "w", "timeseries": { "timeField": "t", "metaField": "sensor" }, "expireAfterSeconds": 60 },
    )
    .await
    .unwrap();
    db.collection::<Document>("w")
        .insert_many(readings("a", T0, 4))
        .await
        .unwrap();
    node.restart();
    let db = node.db("app").await;
    assert_eq!(count(&db, "w").await, 4);
    let ts = listed(&db, "w").await.unwrap();
    assert_eq!(
        ts.get_document("options")
            .unwrap()
            .get("expireAfterSeconds"),
        Some(&Bson::Int64(60))
    );
    // Later measurements go to the stored bucket.
    db.collection::<Document>("w")
        .insert_many(readings("a", T0 + 10 * SEC, 2))
        .await
        .unwrap();
    assert_eq!(buckets(&db, "w").await.len(), 1);
    node.advance(Duration::from_millis((HOUR + MIN) as u64));
    node.ttl_pass().await;
    assert_eq!(count(&db, "w").await, 0);
}

/// Clustered collections: Date `_id`s expire; `_id`s before the epoch and
/// non-Date `_id`s do not (mongod's bounded scan starts at the epoch).
#[tokio::test]
async fn a_clustered_collection_expires_by_its_date_ids() {
    let node = node();
    let db = node.db("app").await;
    create(
        &db,
        doc! { "create": "cl", "clusteredIndex": { "key": { "_id": 1 }, "unique": true }, "expireAfterSeconds": 60 },
    )
    .await
    .unwrap();
    let c = db.collection::<Document>("cl");
    c.insert_many(vec![
        doc! { "_id": at(T0 - 2 * MIN) },
        doc! { "_id": at(T0 + MIN) },
        doc! { "_id": at(-DAY) },
        doc! { "_id": "text" },
    ])
    .await
    .unwrap();
    node.ttl_pass().await;
    assert_eq!(c.count_documents(doc! {}).await.unwrap(), 3);
    node.advance(Duration::from_millis((2 * MIN) as u64));
    node.ttl_pass().await;
    let left: Vec<Document> = c.find(doc! {}).await.unwrap().try_collect().await.unwrap();
    assert_eq!(left.len(), 2);
    let listed = listed(&db, "cl").await.unwrap();
    assert_eq!(
        listed.get_document("options").unwrap(),
        &doc! { "clusteredIndex": { "v": 2, "key": { "_id": 1 }, "name": "_id_", "unique": true }, "expireAfterSeconds": 60i64 }
    );
    // listIndexes shows the clustered _id index only.
    let idx = first_batch(&db, doc! { "listIndexes": "cl" }).await;
    assert_eq!(idx.len(), 1);
    assert_eq!(idx[0].get_bool("clustered").ok(), Some(true));
}

/// create_collection.cpp: clusteredIndex must be {key: {_id: 1}, unique: true}.
#[tokio::test]
async fn clustered_index_options_are_validated() {
    let node = node();
    let db = node.db("app").await;
    for (spec, code) in [
        (Bson::Document(doc! { "key": { "_id": 1 } }), 40414),
        (
            Bson::Document(doc! { "key": { "_id": 1 }, "unique": false }),
            72,
        ),
        (
            Bson::Document(doc! { "key": { "a": 1 }, "unique": true }),
            72,
        ),
    ] {
        expect_code(
            create(&db, doc! { "create": "cl", "clusteredIndex": spec }).await,
            code,
        );
    }
    assert!(listed(&db, "cl").await.is_none());
}

/// Time-series deletes (8.0: any filter): a meta filter takes whole
/// buckets, a measurement filter rewrites the bucket without them.
#[tokio::test]
async fn deletes_remove_measurements() {
    let node = node();
    let (db, c) = sensors(&node).await;
    c.insert_many(readings("a", T0, 5)).await.unwrap();
    c.insert_many(readings("b", T0, 5)).await.unwrap();
    let r = c.delete_many(doc! { "sensor": "b" }).await.unwrap();
    assert_eq!(r.deleted_count, 5);
    assert_eq!(buckets(&db, "w").await.len(), 1);
    let r = c.delete_many(doc! { "n": { "$lt": 2 } }).await.unwrap();
    assert_eq!(r.deleted_count, 2);
    let left: Vec<i32> = measurements(&db, "w")
        .await
        .iter()
        .map(|m| m.get_i32("n").unwrap())
        .collect();
    assert_eq!(left, [2, 3, 4]);
    let r = c.delete_one(doc! {}).await.unwrap();
    assert_eq!(r.deleted_count, 1);
    assert_eq!(count(&db, "w").await, 2);
}

/// The buckets namespace takes no direct writes (updates of measurements
/// are tests/timeseries_updates.rs').
#[tokio::test]
async fn unsupported_timeseries_writes_are_refused() {
    let node = node();
    let (db, c) = sensors(&node).await;
    c.insert_many(readings("a", T0, 2)).await.unwrap();
    expect_code(
        db.collection::<Document>("system.buckets.w")
            .insert_one(doc! { "x": 1 })
            .await,
        238,
    );
    assert_eq!(count(&db, "w").await, 2);
}

/// timeseries_index_ttl_partial.js: the rules and codes of
/// TTL indexes on a time-series collection.
#[tokio::test]
async fn partial_ttl_index_rules() {
    let node = node();
    let db = node.db("app").await;
    create(
        &db,
        doc! { "create": "w", "timeseries": { "timeField": "tm", "metaField": "mm" } },
    )
    .await
    .unwrap();
    let index = |key: Document, opts: Document| {
        let mut spec = doc! { "key": key, "name": "partialTTLIndex" };
        spec.extend(opts);
        doc! { "createIndexes": "w", "indexes": [spec] }
    };
    let cases = [
        (doc! { "tm": 1 }, doc! { "expireAfterSeconds": 3600 }, 72),
        (doc! { "mm": 1 }, doc! { "expireAfterSeconds": 3600 }, 72),
        (
            doc! { "tm": 1 },
            doc! { "expireAfterSeconds": 400, "partialFilterExpression": { "data": { "$gt": 5 } } },
            72,
        ),
        (
            doc! { "tm": 1 },
            doc! { "expireAfterSeconds": 400, "partialFilterExpression": { "mm": { "$gt": 5 }, "data": { "$gt": 5 } } },
            72,
        ),
        (
            doc! { "tm": 1 },
            doc! { "expireAfterSeconds": 400, "partialFilterExpression": { "tm": { "$gt": at(T0) } } },
            72,
        ),
        (
            doc! { "mm": 1 },
            doc! { "expireAfterSeconds": 400, "partialFilterExpression": { "mm": { "$gt": 5 } } },
            72,
        ),
        (
            doc! { "tm": 1, "mm": 1 },
            doc! { "expireAfterSeconds": 400, "partialFilterExpression": { "mm": { "$gt": 5 } } },
            67,
        ),
        (
            doc! { "tm": 1 },
            doc! { "expireAfterSeconds": 400, "partialFilterExpression": { "mm": { "$gt": 5 } }, "collation": { "locale": "fr" } },
            85,
        ),
    ];
    for (key, opts, code) in cases {
        expect_code(db.run_command(index(key, opts)).await, code);
    }
    db.run_command(index(
        doc! { "tm": 1 },
        doc! { "expireAfterSeconds": 400i64, "partialFilterExpression": { "mm": { "$gt": 5 } } },
    ))
    .await
    .unwrap();
    let shown: Vec<Document> = first_batch(&db, doc! { "listIndexes": "w" })
        .await
        .into_iter()
        .filter(|i| i.get_str("name").ok() == Some("partialTTLIndex"))
        .collect();
    assert_eq!(shown.len(), 1);
    assert_eq!(shown[0].get_document("key").unwrap(), &doc! { "tm": 1 });
    assert_eq!(
        shown[0].get_document("partialFilterExpression").unwrap(),
        &doc! { "mm": { "$gt": 5 } }
    );
    assert_eq!(shown[0].get_i32("expireAfterSeconds").unwrap(), 400);
}

/// The TTL manual page's "Important" note and
/// timeseries_expires_with_partial_index.js:
/// a partial TTL index expires the buckets of the meta values its filter
/// names, by the bucket rule with its own expireAfterSeconds; the shorter
/// of collection and index TTL wins.
#[tokio::test]
async fn a_partial_ttl_index_expires_only_its_meta_values_sooner() {
    let node = node();
    let db = node.db("app").await;
    create(
        &db,
        doc! { "create": "weather24h", "timeseries": { "timeField": "timestamp", "metaField": "sensor", "granularity": "hours" }, "expireAfterSeconds": 86400 },
    )
    .await
    .unwrap();
    db.run_command(doc! { "createIndexes": "weather24h", "indexes": [
        { "key": { "timestamp": 1 }, "name": "timestamp_1", "expireAfterSeconds": 3600, "partialFilterExpression": { "sensor": { "$eq": "MDB_NYC" } } }
    ] })
    .await
    .unwrap();
    let c = db.collection::<Document>("weather24h");
    c.insert_many(vec![
        doc! { "timestamp": at(T0), "sensor": "MDB_NYC", "temp": 1 },
        doc! { "timestamp": at(T0), "sensor": "MDB_SF", "temp": 2 },
    ])
    .await
    .unwrap();
    // 30 days span + 1 hour: the NYC bucket only.
    node.advance(Duration::from_millis((30 * DAY + HOUR) as u64));
    node.ttl_pass().await;
    let left = measurements(&db, "weather24h").await;
    assert_eq!(left.len(), 1);
    assert_eq!(left[0].get_str("sensor").unwrap(), "MDB_SF");
    // 30 days span + 1 day: the collection's own rule takes SF.
    node.advance(Duration::from_millis((DAY - HOUR) as u64));
    node.ttl_pass().await;
    assert_eq!(count(&db, "weather24h").await, 0);
}

/// Filters on the metaField and timeField read only the buckets that can
/// hold matches (explain shows the bucket index bounds), and give the same
/// answers as a scan.
#[tokio::test]
async fn meta_and_time_filters_prune_buckets() {
    let node = node();
    let (db, c) = sensors(&node).await;
    for s in ["a", "b", "c"] {
        for h in 0..4 {
            c.insert_many(readings(s, T0 + h * HOUR, 10)).await.unwrap();
        }
    }
    let explain = |filter: Document| {
        doc! { "explain": { "find": "w", "filter": filter }, "verbosity": "executionStats" }
    };
    let run = |filter: Document| {
        let db = db.clone();
        async move {
            let e = db.run_command(explain(filter)).await.unwrap();
            let stats = e.get_document("executionStats").unwrap().clone();
            let plan = e
                .get_document("queryPlanner")
                .unwrap()
                .get_document("winningPlan")
                .unwrap()
                .clone();
            (
                stats.get_i64("nReturned").unwrap(),
                stats.get_i64("totalKeysExamined").unwrap(),
                plan,
            )
        }
    };
    let (n, keys, plan) = run(doc! { "sensor": "b" }).await;
    assert_eq!((n, keys), (40, 4));
    assert_eq!(plan.get_str("stage").unwrap(), "UNPACK_TS_BUCKET");
    assert_eq!(
        plan.get_document("inputStage")
            .unwrap()
            .get_str("stage")
            .unwrap(),
        "FETCH"
    );
    let (n, keys, _) =
        run(doc! { "sensor": "b", "t": { "$gte": at(T0 + HOUR), "$lt": at(T0 + 2 * HOUR) } }).await;
    assert_eq!(n, 10);
    assert!(keys <= 2, "{keys} buckets examined");
    let (n, keys, _) = run(doc! { "t": { "$gte": at(T0 + 3 * HOUR) } }).await;
    assert_eq!(n, 30);
    assert!(keys <= 6, "{keys} buckets examined");
    let (n, _, _) = run(doc! { "n": 3 }).await;
    assert_eq!(n, 12);
}

/// Aggregation reads measurements as find does.
#[tokio::test]
async fn aggregate_groups_measurements() {
    let node = node();
    let (_db, c) = sensors(&node).await;
    c.insert_many(readings("a", T0, 4)).await.unwrap();
    c.insert_many(readings("b", T0, 2)).await.unwrap();
    let out: Vec<Document> = c
        .aggregate(vec![
            doc! { "$match": { "n": { "$gte": 1 } } },
            doc! { "$group": { "_id": "$sensor", "n": { "$sum": 1 }, "v": { "$max": "$v" } } },
            doc! { "$sort": { "_id": 1 } },
        ])
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    assert_eq!(
        out,
        vec![
            doc! { "_id": "a", "n": 3, "v": 1.5 },
            doc! { "_id": "b", "n": 1, "v": 0.5 }
        ]
    );
}
