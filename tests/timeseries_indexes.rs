//! Secondary indexes on time-series collections, end to end through the Rust driver: the bucket-level index mongod builds for
//! the user's key pattern, listed, dropped and hinted by that pattern,
//! used by meta filters, kept with every bucket write, expiry and restart.

use std::time::Duration;

use crate::common::ts::{HOUR, SEC, T0, at, node};
use crate::common::{self, TestNode, expect_code, first_batch};
use futures::TryStreamExt;
use mongodb::bson::{Bson, Document, doc};
use mongodb::{Collection, Database};

/// `app.w` with timeField `tm` and metaField `mm` (the jstests' names),
/// and `expireAfterSeconds` when given.
async fn collection(node: &TestNode, expire: Option<i64>) -> (Database, Collection<Document>) {
    let db = node.db("app").await;
    let mut cmd = doc! { "create": "w", "timeseries": { "timeField": "tm", "metaField": "mm" } };
    if let Some(e) = expire {
        cmd.insert("expireAfterSeconds", e);
    }
    db.run_command(cmd).await.unwrap();
    (db.clone(), db.collection("w"))
}

/// One measurement per tag in `tags`, `n` per tag, a second apart.
fn readings(tags: &[&str], n: i32) -> Vec<Document> {
    let mut out = Vec::new();
    for (k, tag) in tags.iter().enumerate() {
        for i in 0..n {
            out.push(doc! {
                "_id": (k as i32) * 1000 + i,
                "tm": at(T0 + i64::from(i) * SEC),
                "mm": { "tag": *tag, "loc": [1.0, 2.0] },
                "x": i,
            });
        }
    }
    out
}

async fn create_index(db: &Database, spec: Document) -> mongodb::error::Result<Document> {
    db.run_command(doc! { "createIndexes": "w", "indexes": [spec] })
        .await
}

async fn listed(db: &Database) -> Vec<Document> {
    first_batch(db, doc! { "listIndexes": "w" }).await
}

async fn find(
    c: &Collection<Document>,
    filter: Document,
    hint: Option<Bson>,
) -> mongodb::error::Result<Vec<Document>> {
    let mut f = c.find(filter).sort(doc! { "_id": 1 });
    if let Some(h) = hint {
        f = f.hint(match h {
            Bson::String(s) => mongodb::options::Hint::Name(s),
            Bson::Document(d) => mongodb::options::Hint::Keys(d),
            other => panic!("no hint {other}"),
        });
    }
    f.await?.try_collect().await
}

/// `explain` of a find: (winning plan's input stage, totalKeysExamined, nReturned).
async fn explain(db: &Database, find: Document) -> (Document, i64, i64) {
    let e = db
        .run_command(doc! { "explain": find, "verbosity": "executionStats" })
        .await
        .unwrap();
    let plan = e
        .get_document("queryPlanner")
        .unwrap()
        .get_document("winningPlan")
        .unwrap()
        .clone();
    let stats = e.get_document("executionStats").unwrap();
    (
        plan,
        stats.get_i64("totalKeysExamined").unwrap(),
        stats.get_i64("nReturned").unwrap(),
    )
}

/// The IXSCAN under a time-series plan (UNPACK_TS_BUCKET → FETCH → IXSCAN).
fn ixscan(plan: &Document) -> Option<Document> {
    let mut stage = plan.clone();
    loop {
        if stage.get_str("stage").ok() == Some("IXSCAN") {
            return Some(stage);
        }
        stage = stage.get_document("inputStage").ok()?.clone();
    }
}

/// jstests/core/timeseries/ddl/timeseries_index.js (runTest): each key
/// pattern is accepted on an existing collection and listIndexes shows
/// the user's pattern, beside the `{mm: 1, tm: 1}` index every
/// collection with a metaField has.
#[tokio::test]
async fn index_specs_are_accepted_and_listed_with_the_users_key() {
    let node = node();
    let (db, c) = collection(&node, None).await;
    c.insert_many(readings(&["a"], 2)).await.unwrap();
    let keys = [
        doc! { "mm": 1 },
        doc! { "mm": -1 },
        doc! { "mm.tag": 1, "mm.loc": -1 },
        doc! { "tm": 1 },
        doc! { "tm": -1 },
        doc! { "mm.tag": 1, "tm": -1 },
        doc! { "x": 1 },
        doc! { "x": -1, "mm.tag": 1 },
    ];
    for (i, key) in keys.iter().enumerate() {
        create_index(&db, doc! { "key": key.clone(), "name": format!("i{i}") })
            .await
            .unwrap();
    }
    let shown = listed(&db).await;
    assert_eq!(
        shown[0].get_document("key").unwrap(),
        &doc! { "mm": 1, "tm": 1 }
    );
    for (i, key) in keys.iter().enumerate() {
        let spec = shown
            .iter()
            .find(|s| s.get_str("name").ok() == Some(&format!("i{i}")))
            .unwrap_or_else(|| panic!("i{i} not listed: {shown:?}"));
        assert_eq!(spec.get_document("key").unwrap(), key);
        assert!(!spec.contains_key("timeseriesUserSpec"), "{spec:?}");
    }
    // The measurements are unchanged and every index reads them all.
    for i in 0..keys.len() {
        let all = find(&c, doc! {}, Some(Bson::String(format!("i{i}"))))
            .await
            .unwrap();
        assert_eq!(all.len(), 2, "i{i}");
    }
}

/// timeseries_index.js (error handling), timeseries_sparse_index.js,
/// timeseries_metric_index_hashed.js, timeseries_index_spec.js: what
/// mongod refuses, with its codes; ebb refuses a partial filter on
/// measurements (mongod rewrites it into control bounds) with 238.
#[tokio::test]
async fn refused_time_series_index_specs_get_mongods_codes() {
    let node = node();
    let (db, c) = collection(&node, None).await;
    c.insert_many(readings(&["a"], 1)).await.unwrap();
    let cases = [
        (doc! { "key": { "mm": 1 }, "name": "u", "unique": true }, 72),
        (
            doc! { "key": { "mm": 1 }, "name": "ttl", "expireAfterSeconds": 3600 },
            72,
        ),
        (doc! { "key": { "x": 1 }, "name": "s", "sparse": true }, 72),
        (
            doc! { "key": { "tm": 1, "x": 1 }, "name": "s", "sparse": true },
            72,
        ),
        (doc! { "key": { "x": "hashed" }, "name": "h" }, 67),
        (
            doc! { "key": { "mm.tag": 1, "x": "hashed" }, "name": "h" },
            67,
        ),
        (doc! { "key": {}, "name": "e" }, 67),
        (
            doc! { "key": { "x": 1 }, "name": "p", "partialFilterExpression": { "x": { "$gt": 5 } } },
            238,
        ),
    ];
    for (spec, code) in cases {
        let shown = format!("{spec:?}");
        match create_index(&db, spec).await {
            Ok(r) => panic!("{shown} was accepted: {r:?}"),
            Err(e) => assert_eq!(common::code(&e), Some(code), "{shown}: {e}"),
        }
    }
    let text = common::code(
        &create_index(&db, doc! { "key": { "mm": "text" }, "name": "t" })
            .await
            .unwrap_err(),
    );
    assert!(matches!(text, Some(67 | 72)), "{text:?}");
    // Sparse and partial indexes on the metaField are mongod's too.
    create_index(
        &db,
        doc! { "key": { "mm.tag": 1 }, "name": "sp", "sparse": true },
    )
    .await
    .unwrap();
    create_index(
        &db,
        doc! { "key": { "tm": 1 }, "name": "pm", "partialFilterExpression": { "mm.tag": "a" } },
    )
    .await
    .unwrap();
    let shown = listed(&db).await;
    let pm = shown
        .iter()
        .find(|s| s.get_str("name").ok() == Some("pm"))
        .unwrap();
    assert_eq!(
        pm.get_document("partialFilterExpression").unwrap(),
        &doc! { "mm.tag": "a" }
    );
    assert_eq!(shown.len(), 3, "{shown:?}");
}

/// timeseries_index.js: dropIndex by the user's key pattern and by name
/// (one or an array); a name no index has is IndexNotFound (names are not
/// translated), and so is a key pattern no index has.
#[tokio::test]
async fn time_series_indexes_drop_by_key_pattern_or_name() {
    let node = node();
    let (db, c) = collection(&node, None).await;
    c.insert_many(readings(&["a"], 1)).await.unwrap();
    create_index(
        &db,
        doc! { "key": { "not_metadata": 1 }, "name": "not_metadata_1" },
    )
    .await
    .unwrap();
    db.run_command(doc! { "dropIndexes": "w", "index": { "not_metadata": 1 } })
        .await
        .unwrap();
    expect_code(
        db.run_command(doc! { "dropIndexes": "w", "index": "mm_1" })
            .await,
        27,
    );
    expect_code(
        db.run_command(doc! { "dropIndexes": "w", "index": { "mm": 1 } })
            .await,
        27,
    );
    create_index(&db, doc! { "key": { "mm.tag": 1 }, "name": "myindex1" })
        .await
        .unwrap();
    create_index(&db, doc! { "key": { "tm": -1 }, "name": "myindex2" })
        .await
        .unwrap();
    db.run_command(doc! { "dropIndexes": "w", "index": "myindex1" })
        .await
        .unwrap();
    db.run_command(doc! { "dropIndexes": "w", "index": ["myindex2"] })
        .await
        .unwrap();
    assert_eq!(listed(&db).await.len(), 1);
    // A hint on the dropped index is BadValue, as on any collection.
    expect_code(
        find(&c, doc! {}, Some(Bson::Document(doc! { "mm.tag": 1 }))).await,
        2,
    );
}

/// timeseries_index.js (hint test): a hint by the user's key pattern or
/// by name reads the bucket index (explain names it).
#[tokio::test]
async fn a_hint_by_key_pattern_or_name_reads_the_bucket_index() {
    let node = node();
    let (db, c) = collection(&node, None).await;
    c.insert_many(readings(&["a", "b"], 3)).await.unwrap();
    create_index(
        &db,
        doc! { "key": { "x": 1 }, "name": "index_for_hint_test" },
    )
    .await
    .unwrap();
    for hint in [
        Bson::String("index_for_hint_test".into()),
        Bson::Document(doc! { "x": 1 }),
    ] {
        let found = find(&c, doc! { "x": { "$gte": 1 } }, Some(hint.clone()))
            .await
            .unwrap();
        assert_eq!(found.len(), 4, "{hint}");
        let (plan, _, n) = explain(
            &db,
            doc! { "find": "w", "filter": { "x": { "$gte": 1 } }, "hint": hint },
        )
        .await;
        assert_eq!(n, 4);
        let scan = ixscan(&plan).unwrap();
        assert_eq!(scan.get_str("indexName").unwrap(), "index_for_hint_test");
    }
}

/// timeseries_index_use.js: an index on a metaField subfield serves an
/// equality on it: only the matching buckets are read (explain shows an
/// IXSCAN of the bucket key `meta.tag`), with the same answer as a scan.
#[tokio::test]
async fn an_index_on_a_meta_subfield_serves_its_filter() {
    let node = node();
    let (db, c) = collection(&node, None).await;
    c.insert_many(readings(&["a", "b", "c", "d"], 5))
        .await
        .unwrap();
    create_index(&db, doc! { "key": { "mm.tag": 1 }, "name": "tag" })
        .await
        .unwrap();
    let (plan, keys, n) = explain(&db, doc! { "find": "w", "filter": { "mm.tag": "c" } }).await;
    assert_eq!(n, 5);
    assert_eq!(keys, 1, "one bucket's key: {plan:?}");
    let scan = ixscan(&plan).unwrap();
    assert_eq!(scan.get_str("indexName").unwrap(), "tag");
    assert_eq!(
        scan.get_document("keyPattern").unwrap(),
        &doc! { "meta.tag": 1 }
    );
    let (_, keys, n) = explain(
        &db,
        doc! { "find": "w", "filter": { "mm.tag": { "$in": ["a", "d"] }, "x": 2 } },
    )
    .await;
    assert_eq!((keys, n), (2, 2));
    let found = find(&c, doc! { "mm.tag": "c" }, None).await.unwrap();
    let ids: Vec<i32> = found.iter().map(|d| d.get_i32("_id").unwrap()).collect();
    assert_eq!(ids, [2000, 2001, 2002, 2003, 2004]);
}

/// The bucket index follows every bucket write: measurements inserted
/// after the index exists are found through it, and a bucket that expires
/// (manual clock; min time + bucketMaxSpanSeconds + expireAfterSeconds
/// has passed) takes its index entries with it
/// (`validate` counts none left, a hinted scan examines no key).
#[tokio::test]
async fn bucket_index_entries_follow_inserts_and_go_with_expired_buckets() {
    let node = node();
    let (db, c) = collection(&node, Some(60)).await;
    create_index(&db, doc! { "key": { "mm.tag": 1 }, "name": "tag" })
        .await
        .unwrap();
    c.insert_many(readings(&["a", "b"], 3)).await.unwrap();
    let (_, keys, n) = explain(&db, doc! { "find": "w", "filter": { "mm.tag": "b" } }).await;
    assert_eq!((keys, n), (1, 3));
    let v = db.run_command(doc! { "validate": "w" }).await.unwrap();
    assert!(v.get_bool("valid").unwrap(), "{v:?}");
    assert_eq!(
        v.get_document("keysPerIndex")
            .unwrap()
            .get_i64("tag")
            .unwrap(),
        2
    );
    node.advance(Duration::from_millis((HOUR + 61 * SEC) as u64));
    node.ttl_pass().await;
    assert!(find(&c, doc! {}, None).await.unwrap().is_empty());
    let v = db.run_command(doc! { "validate": "w" }).await.unwrap();
    assert!(v.get_bool("valid").unwrap(), "{v:?}");
    assert_eq!(
        v.get_document("keysPerIndex")
            .unwrap()
            .get_i64("tag")
            .unwrap(),
        0
    );
    let (_, keys, _) = explain(&db, doc! { "find": "w", "filter": {}, "hint": "tag" }).await;
    assert_eq!(keys, 0);
}

/// A restart keeps a secondary index: listed with the user's key, used
/// for the meta filter and kept by later inserts.
#[tokio::test]
async fn a_restart_keeps_a_secondary_index() {
    let mut node = node();
    let (db, c) = collection(&node, None).await;
    c.insert_many(readings(&["a", "b"], 2)).await.unwrap();
    create_index(
        &db,
        doc! { "key": { "mm.tag": 1, "tm": -1 }, "name": "tag_time" },
    )
    .await
    .unwrap();
    node.restart();
    let db = node.db("app").await;
    let c = db.collection::<Document>("w");
    let shown = listed(&db).await;
    let spec = shown
        .iter()
        .find(|s| s.get_str("name").ok() == Some("tag_time"))
        .unwrap();
    assert_eq!(
        spec.get_document("key").unwrap(),
        &doc! { "mm.tag": 1, "tm": -1 }
    );
    c.insert_many(readings(&["c"], 2)).await.unwrap();
    let (plan, keys, n) = explain(&db, doc! { "find": "w", "filter": { "mm.tag": "c" } }).await;
    assert_eq!((keys, n), (1, 2));
    assert_eq!(
        ixscan(&plan).unwrap().get_str("indexName").unwrap(),
        "tag_time"
    );
}

/// timeseries_index.js (hide/unhide): collMod hides and unhides a
/// time-series index by name or by the user's key pattern, an index may
/// be created hidden, and a hidden index cannot be hinted (BadValue).
#[tokio::test]
async fn a_time_series_index_is_hidden_and_unhidden_by_name_or_key_pattern() {
    let node = node();
    let (db, c) = collection(&node, None).await;
    c.insert_many(readings(&["a"], 1)).await.unwrap();
    let hide = |index: Document, hidden: bool| {
        let db = db.clone();
        async move {
            let mut target = index;
            target.insert("hidden", hidden);
            db.run_command(doc! { "collMod": "w", "index": target })
                .await
        }
    };
    create_index(&db, doc! { "key": { "x": 1 }, "name": "hide1" })
        .await
        .unwrap();
    for target in [doc! { "name": "hide1" }, doc! { "keyPattern": { "x": 1 } }] {
        hide(target.clone(), true).await.unwrap();
        let shown = listed(&db).await;
        let spec = shown
            .iter()
            .find(|s| s.get_str("name").ok() == Some("hide1"))
            .unwrap();
        assert_eq!(spec.get_bool("hidden").ok(), Some(true), "{spec:?}");
        expect_code(
            find(&c, doc! {}, Some(Bson::String("hide1".into()))).await,
            2,
        );
        expect_code(
            find(&c, doc! {}, Some(Bson::Document(doc! { "x": 1 }))).await,
            2,
        );
        hide(target, false).await.unwrap();
        assert_eq!(
            find(&c, doc! {}, Some(Bson::Document(doc! { "x": 1 })))
                .await
                .unwrap()
                .len(),
            1
        );
    }
    expect_code(hide(doc! { "keyPattern": { "y": 1 } }, true).await, 27);
    create_index(
        &db,
        doc! { "key": { "mm.tag": 1 }, "name": "hide3", "hidden": true },
    )
    .await
    .unwrap();
    expect_code(
        find(&c, doc! {}, Some(Bson::String("hide3".into()))).await,
        2,
    );
    // A hidden index is not used for the meta filter either.
    let (plan, _, n) = explain(&db, doc! { "find": "w", "filter": { "mm.tag": "a" } }).await;
    assert_eq!(n, 1);
    assert!(
        ixscan(&plan).is_none_or(|s| s.get_str("indexName").ok() != Some("hide3")),
        "{plan:?}"
    );
}

/// timeseries_index.js: every collection with a metaField lists mongod's
/// `{mm: 1, tm: 1}` index (ebb's bucket lookup index); a hint by its name
/// or key reads it. ebb needs it to place inserts, so dropping or hiding
/// it is refused (238) where mongod allows it.
#[tokio::test]
async fn the_meta_time_index_is_hinted_but_not_dropped() {
    let node = node();
    let (db, c) = collection(&node, None).await;
    c.insert_many(readings(&["a", "b"], 2)).await.unwrap();
    for hint in [
        Bson::String("mm_1_tm_1".into()),
        Bson::Document(doc! { "mm": 1, "tm": 1 }),
    ] {
        assert_eq!(
            find(&c, doc! { "x": 1 }, Some(hint.clone()))
                .await
                .unwrap()
                .len(),
            2
        );
        let (plan, keys, _) = explain(&db, doc! { "find": "w", "filter": {}, "hint": hint }).await;
        assert!(ixscan(&plan).is_some(), "{plan:?}");
        assert_eq!(keys, 2);
    }
    expect_code(
        db.run_command(doc! { "dropIndexes": "w", "index": "mm_1_tm_1" })
            .await,
        238,
    );
    expect_code(
        db.run_command(doc! { "dropIndexes": "w", "index": { "mm": 1, "tm": 1 } })
            .await,
        238,
    );
    expect_code(
        db.run_command(doc! { "collMod": "w", "index": { "name": "mm_1_tm_1", "hidden": true } })
            .await,
        238,
    );
    assert_eq!(listed(&db).await.len(), 1);
}
