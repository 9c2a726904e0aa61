//! Updates, upserts and findAndModify on time-series measurements as
//! MongoDB 8.0 allows them, end to end through the Rust
//! driver: the measurements are changed with the ordinary update engine
//! and their buckets rewritten; one whose meta or time leaves its bucket
//! moves to a bucket of its own.

use std::time::Duration;

use crate::common::ts::{HOUR, SEC, T0, at, node};
use crate::common::{TestNode, expect_code};
use futures::TryStreamExt;
use mongodb::bson::{Bson, Document, doc};
use mongodb::options::ReturnDocument;
use mongodb::{Collection, Database};

/// `app.w` (timeField `time`, metaField `tag`, as timeseries_writes_util.js)
/// holding `docs`.
async fn collection(node: &TestNode, docs: Vec<Document>) -> (Database, Collection<Document>) {
    let db = node.db("app").await;
    db.run_command(doc! { "create": "w", "timeseries": { "timeField": "time", "metaField": "tag" }, "expireAfterSeconds": 600 })
        .await
        .unwrap();
    let c = db.collection::<Document>("w");
    if !docs.is_empty() {
        c.insert_many(docs).await.unwrap();
    }
    (db, c)
}

/// A measurement of `tag` at T0 + `secs`.
fn m(id: i32, tag: &str, secs: i64, extra: Document) -> Document {
    let mut d = doc! { "_id": id, "time": at(T0 + secs * SEC), "tag": tag };
    d.extend(extra);
    d
}

/// Every measurement, by `_id`, with fields sorted by name (buckets put
/// the time and meta first: only the values are compared).
async fn all(c: &Collection<Document>) -> Vec<Document> {
    let docs: Vec<Document> = c
        .find(doc! {})
        .sort(doc! { "_id": 1 })
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    docs.into_iter().map(sorted).collect()
}

fn sorted(d: Document) -> Document {
    let mut fields: Vec<(String, Bson)> = d.into_iter().collect();
    fields.sort_by(|a, b| a.0.cmp(&b.0));
    fields.into_iter().collect()
}

/// The stored buckets as (meta, count), sorted.
async fn buckets(db: &Database) -> Vec<(Bson, i32)> {
    let raw: Vec<Document> = db
        .collection::<Document>("system.buckets.w")
        .find(doc! {})
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    let mut out: Vec<(Bson, i32)> = raw
        .iter()
        .map(|b| {
            (
                b.get("meta").cloned().unwrap_or(Bson::Null),
                b.get_document("control").unwrap().get_i32("count").unwrap(),
            )
        })
        .collect();
    out.sort_by(|a, b| format!("{a:?}").cmp(&format!("{b:?}")));
    out
}

/// jstests/core/timeseries/write/timeseries_update_one.js
/// (testUnsetMetricField, testAddNewMetricField, testChangeFieldType):
/// updateOne changes exactly one matching measurement.
#[tokio::test]
async fn update_one_changes_one_measurement() {
    let node = node();
    let (_db, c) = collection(
        &node,
        vec![
            m(1, "A", 1, doc! { "a": 1, "b": 1 }),
            m(2, "A", 2, doc! { "c": 1, "d": 1 }),
        ],
    )
    .await;
    let r = c
        .update_one(
            doc! { "a": { "$eq": 1 }, "tag": { "$eq": "A" } },
            doc! { "$unset": { "a": "" } },
        )
        .await
        .unwrap();
    assert_eq!((r.matched_count, r.modified_count), (1, 1));
    let r = c
        .update_one(doc! { "b": 1 }, doc! { "$set": { "a": ["arr", "ay"] } })
        .await
        .unwrap();
    assert_eq!((r.matched_count, r.modified_count), (1, 1));
    let r = c
        .update_one(doc! {}, doc! { "$unset": { "z": "" } })
        .await
        .unwrap();
    assert_eq!((r.matched_count, r.modified_count), (1, 0));
    assert_eq!(
        all(&c).await,
        vec![
            sorted(m(1, "A", 1, doc! { "a": ["arr", "ay"], "b": 1 })),
            sorted(m(2, "A", 2, doc! { "c": 1, "d": 1 })),
        ]
    );
}

/// timeseries_update_multi.js (testAddNewField, testNoopUpdate,
/// testArrayModifier): updateMany changes every match; nModified counts
/// only the measurements that changed; `$` is the matched element.
#[tokio::test]
async fn update_many_changes_every_matching_measurement() {
    let node = node();
    let (_db, c) = collection(
        &node,
        vec![
            m(1, "A", 1, doc! { "f": [2, 3] }),
            m(2, "A", 2, doc! { "f": [1, 10] }),
            m(3, "B", 3, doc! { "f": "F" }),
        ],
    )
    .await;
    let r = c
        .update_many(doc! { "_id": { "$lt": 3 } }, doc! { "$set": { "g": 42 } })
        .await
        .unwrap();
    assert_eq!((r.matched_count, r.modified_count), (2, 2));
    let r = c
        .update_many(doc! {}, doc! { "$set": { "tag": "A" } })
        .await
        .unwrap();
    assert_eq!((r.matched_count, r.modified_count), (3, 1));
    let r = c
        .update_many(doc! { "f": { "$gt": 2 } }, doc! { "$set": { "f.$": 20 } })
        .await
        .unwrap();
    assert_eq!((r.matched_count, r.modified_count), (2, 2));
    assert_eq!(
        all(&c).await,
        vec![
            sorted(m(1, "A", 1, doc! { "f": [2, 20], "g": 42 })),
            sorted(m(2, "A", 2, doc! { "f": [1, 20], "g": 42 })),
            sorted(m(3, "A", 3, doc! { "f": "F" })),
        ]
    );
}

/// timeseries_update_multi.js (testMetricFieldQueryMetaFieldUpdate,
/// testSplitBucketWithUpdate) and timeseries_update_one.js
/// (testPipelineUpdateSetMultipleFields): a measurement whose metaField
/// or time leaves its bucket moves to a bucket of its new meta and span;
/// the others stay, and reads and the meta index see it there.
#[tokio::test]
async fn a_measurement_whose_meta_or_time_changes_moves_to_another_bucket() {
    let node = node();
    let (db, c) = collection(
        &node,
        vec![
            m(1, "A", 1, doc! { "x": 1 }),
            m(2, "A", 2, doc! { "x": 2 }),
            m(3, "A", 3, doc! { "x": 3 }),
        ],
    )
    .await;
    db.run_command(
        doc! { "createIndexes": "w", "indexes": [{ "key": { "tag": 1 }, "name": "tag_1" }] },
    )
    .await
    .unwrap();
    assert_eq!(buckets(&db).await, vec![(Bson::String("A".into()), 3)]);
    let r = c
        .update_one(doc! { "_id": 2 }, doc! { "$set": { "tag": "B" } })
        .await
        .unwrap();
    assert_eq!(r.modified_count, 1);
    assert_eq!(
        buckets(&db).await,
        vec![(Bson::String("A".into()), 2), (Bson::String("B".into()), 1)]
    );
    let found: Vec<Document> = c
        .find(doc! { "tag": "B" })
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].get_i32("_id").unwrap(), 2);
    // Two hours later is past the bucket's one-hour span (pipeline update).
    let r = c
        .update_one(
            doc! { "_id": 3 },
            vec![doc! { "$set": { "time": at(T0 + 2 * HOUR) } }],
        )
        .await
        .unwrap();
    assert_eq!(r.modified_count, 1);
    assert_eq!(buckets(&db).await.len(), 3);
    assert_eq!(
        all(&c).await,
        vec![
            sorted(m(1, "A", 1, doc! { "x": 1 })),
            sorted(m(2, "B", 2, doc! { "x": 2 })),
            sorted(doc! { "_id": 3, "time": at(T0 + 2 * HOUR), "tag": "A", "x": 3 }),
        ]
    );
    // Moving every measurement out of a bucket removes it.
    c.update_many(doc! { "tag": "A" }, doc! { "$set": { "tag": "C" } })
        .await
        .unwrap();
    let metas: Vec<Bson> = buckets(&db).await.into_iter().map(|(m, _)| m).collect();
    assert!(!metas.contains(&Bson::String("A".into())), "{metas:?}");
    assert_eq!(c.count_documents(doc! { "tag": "C" }).await.unwrap(), 2);
}

/// timeseries_update_one.js (testReplacementUpdateNoId,
/// testReplacementUpdateChangeId) and timeseries_update_multi.js
/// (testChangeMeasurementId): a replacement keeps the `_id` it does not
/// name; a measurement's `_id` may change.
#[tokio::test]
async fn replacements_keep_or_change_the_measurement_id() {
    let node = node();
    let (_db, c) = collection(
        &node,
        vec![m(1, "A", 1, doc! { "a": 1 }), m(2, "B", 2, doc! { "a": 2 })],
    )
    .await;
    c.replace_one(
        doc! { "_id": 1 },
        doc! { "time": at(T0 + 5 * SEC), "tag": "B", "a": 5 },
    )
    .await
    .unwrap();
    c.update_one(doc! { "_id": 2 }, doc! { "$set": { "_id": 10 } })
        .await
        .unwrap();
    c.replace_one(
        doc! { "_id": 10 },
        doc! { "_id": 20, "time": at(T0), "a": 20 },
    )
    .await
    .unwrap();
    assert_eq!(
        all(&c).await,
        vec![
            sorted(m(1, "B", 5, doc! { "a": 5 })),
            sorted(doc! { "_id": 20, "time": at(T0), "a": 20 }),
        ]
    );
}

/// timeseries_update_one.js (testRemoveTimeField, testChangeTimeFieldType,
/// testReplacementUpdateNoTimeField), timeseries_update_multi.js
/// (testArrayModifierNoFilter): an update leaving a measurement without a
/// Date time is BadValue, as is `$` with nothing matched, and nothing of
/// the statement is stored.
#[tokio::test]
async fn updates_that_break_a_measurement_are_refused_and_store_nothing() {
    let node = node();
    let docs = vec![
        m(1, "A", 1, doc! { "f": [1, 2] }),
        m(2, "A", 2, doc! { "f": "F" }),
    ];
    let (_db, c) = collection(&node, docs.clone()).await;
    expect_code(
        c.update_many(doc! {}, doc! { "$unset": { "time": "" } })
            .await,
        2,
    );
    expect_code(
        c.update_many(doc! {}, vec![doc! { "$set": { "time": "string" } }])
            .await,
        2,
    );
    expect_code(
        c.replace_one(doc! { "_id": 1 }, doc! { "tag": "A", "a": 1 })
            .await,
        2,
    );
    expect_code(
        c.update_many(doc! {}, doc! { "$set": { "f.$": 20 } }).await,
        2,
    );
    assert_eq!(
        all(&c).await,
        docs.into_iter().map(sorted).collect::<Vec<_>>()
    );
}

/// timeseries_update_one.js (testUpsert, testUpsertWithNoId,
/// testUpsertQueryOnTimeField, testUpsertNoTimeField): an upsert that
/// matches nothing inserts a measurement into its bucket; one without a
/// time is BadValue.
#[tokio::test]
async fn an_upsert_inserts_a_measurement() {
    let node = node();
    let (db, c) = collection(&node, vec![m(1, "A", 1, doc! {})]).await;
    let r = c
        .update_one(
            doc! { "tag": { "z": "Z" } },
            doc! { "$set": { "time": at(T0) } },
        )
        .upsert(true)
        .await
        .unwrap();
    let id = r.upserted_id.unwrap();
    let r = c
        .update_one(
            doc! { "time": at(T0 + 3 * SEC) },
            doc! { "$set": { "f": 10 } },
        )
        .upsert(true)
        .await
        .unwrap();
    assert!(r.upserted_id.is_some());
    let r = c
        .replace_one(
            doc! { "_id": 100 },
            doc! { "time": at(T0 + 4 * SEC), "tag": "A", "a": 5 },
        )
        .upsert(true)
        .await
        .unwrap();
    assert_eq!(r.upserted_id, Some(Bson::Int32(100)));
    expect_code(
        c.update_one(doc! { "tag": "Q" }, doc! { "$set": { "f": 10 } })
            .upsert(true)
            .await,
        2,
    );
    assert_eq!(c.count_documents(doc! {}).await.unwrap(), 4);
    let z = c
        .find_one(doc! { "_id": id.clone() })
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        sorted(z),
        sorted(doc! { "_id": id.clone(), "time": at(T0), "tag": { "z": "Z" } })
    );
    // The replacement upsert joined the stored bucket of its meta.
    assert!(buckets(&db).await.contains(&(Bson::String("A".into()), 2)));
}

/// timeseries_findAndModify_basic.js and the findAndModify helpers of
/// timeseries_writes_util.js: findAndModify updates (old or new image),
/// removes and upserts measurements.
#[tokio::test]
async fn find_and_modify_updates_removes_and_upserts_measurements() {
    let node = node();
    let docs: Vec<Document> = (0..5).map(|i| m(i, "A", i64::from(i), doc! {})).collect();
    let (_db, c) = collection(&node, docs).await;
    let before = c
        .find_one_and_update(doc! { "_id": { "$gt": 0 } }, doc! { "$set": { "t2": 1 } })
        .sort(doc! { "_id": 1 })
        .await
        .unwrap()
        .unwrap();
    assert_eq!(before.get_i32("_id").unwrap(), 1);
    assert!(!before.contains_key("t2"));
    assert_eq!(
        c.count_documents(doc! { "t2": { "$exists": true } })
            .await
            .unwrap(),
        1
    );
    let after = c
        .find_one_and_update(doc! { "_id": 3 }, doc! { "$set": { "tag": "B" } })
        .return_document(ReturnDocument::After)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(after.get_str("tag").unwrap(), "B");
    let removed = c
        .find_one_and_delete(doc! { "t2": { "$exists": true } })
        .await
        .unwrap()
        .unwrap();
    assert_eq!(removed.get_i32("_id").unwrap(), 1);
    let upserted = c
        .find_one_and_update(
            doc! { "_id": 50 },
            doc! { "$set": { "time": at(T0 + 9 * SEC) } },
        )
        .upsert(true)
        .return_document(ReturnDocument::After)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        sorted(upserted),
        sorted(doc! { "_id": 50, "time": at(T0 + 9 * SEC) })
    );
    let ids: Vec<i32> = all(&c)
        .await
        .iter()
        .map(|d| d.get_i32("_id").unwrap())
        .collect();
    assert_eq!(ids, [0, 2, 3, 4, 50]);
    assert_eq!(
        c.find_one(doc! { "_id": 3 })
            .await
            .unwrap()
            .unwrap()
            .get_str("tag")
            .unwrap(),
        "B"
    );
}

/// timeseries_insert_after_update.js: an insert after an update goes into
/// the updated bucket without losing the update (the open-bucket cache is
/// never used for a rewritten bucket).
#[tokio::test]
async fn an_insert_after_an_update_keeps_the_update() {
    let node = node();
    let (db, c) = collection(&node, vec![m(1, "A", 1, doc! { "x": 1 })]).await;
    c.insert_one(m(2, "A", 2, doc! { "x": 2 })).await.unwrap();
    c.update_one(doc! { "_id": 1 }, doc! { "$set": { "x": 100 } })
        .await
        .unwrap();
    c.insert_one(m(3, "A", 3, doc! { "x": 3 })).await.unwrap();
    assert_eq!(buckets(&db).await, vec![(Bson::String("A".into()), 3)]);
    let xs: Vec<i32> = all(&c)
        .await
        .iter()
        .map(|d| d.get_i32("x").unwrap())
        .collect();
    assert_eq!(xs, [100, 2, 3]);
}

/// Bucket expiry (min time + bucketMaxSpanSeconds + expireAfterSeconds)
/// with updates: a bucket rewritten in place keeps its start and so its
/// expiry; a measurement moved to a new bucket expires by that bucket's
/// start (manual clock).
#[tokio::test]
async fn updated_buckets_keep_their_expiry() {
    let node = node();
    let (_db, c) = collection(&node, vec![m(1, "A", 1, doc! {}), m(2, "A", 2, doc! {})]).await;
    c.update_one(doc! { "_id": 1 }, doc! { "$set": { "y": 1 } })
        .await
        .unwrap();
    c.update_one(
        doc! { "_id": 2 },
        doc! { "$set": { "time": at(T0 + 2 * HOUR) } },
    )
    .await
    .unwrap();
    // The first bucket is due at T0 + 1 h span + 600 s.
    node.advance(Duration::from_millis((HOUR + 600 * SEC) as u64));
    node.ttl_pass().await;
    let ids: Vec<i32> = all(&c)
        .await
        .iter()
        .map(|d| d.get_i32("_id").unwrap())
        .collect();
    assert_eq!(ids, [2]);
    node.advance(Duration::from_millis((2 * HOUR) as u64));
    node.ttl_pass().await;
    assert!(all(&c).await.is_empty());
}
