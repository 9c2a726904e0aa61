//! kill -9 in the middle of a TTL pass: after a restart no unexpired
//! document is missing, every index agrees with the records, and the
//! expired documents left over go on the next pass.

mod support;

use std::time::{Duration, Instant};

use mongodb::bson::{Bson, DateTime, Document, doc};
use mongodb::options::IndexOptions;
use mongodb::{Collection, Database, IndexModel};
use support::spawn;

const EXPIRED: usize = 100_000;
const LIVE: usize = 100_000;

async fn deleted(db: &Database) -> i64 {
    let s = db.run_command(doc! { "serverStatus": 1 }).await.unwrap();
    s.get_document("metrics")
        .unwrap()
        .get_document("ttl")
        .unwrap()
        .get_i64("deletedDocuments")
        .unwrap()
}

/// Turns the TTL monitor on and kills ebbd (SIGKILL) once `started`
/// documents have been deleted, in the middle of the pass; returns how many
/// had been.
async fn kill_mid_pass(d: &mut support::Daemon, admin: &Database, started: i64) -> i64 {
    admin
        .run_command(doc! { "setParameter": 1, "ttlMonitorEnabled": true })
        .await
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    let at_kill = loop {
        let n = deleted(admin).await;
        if n >= started {
            break n;
        }
        assert!(Instant::now() < deadline, "the TTL pass never got going");
        tokio::time::sleep(Duration::from_millis(5)).await;
    };
    d.child.kill().unwrap();
    d.child.wait().unwrap();
    at_kill
}

/// The node restarted on `dir` with the TTL monitor off, to look at
/// exactly what a crash or stop left.
fn restart_without_monitor(dir: &std::path::Path) -> support::Daemon {
    spawn(dir, &[("EBB_SETPARAMETER__TTLMONITORENABLED", "false")])
}

/// Entries of one index as a full hinted scan sees them: (keys, documents).
async fn scan_counts(db: &Database, hint: Document) -> (i64, i64) {
    scan_counts_in(db, "events", hint).await
}

#[tokio::test]
async fn kill_during_a_ttl_pass_loses_nothing_unexpired_and_keeps_indexes_consistent() {
    let dir = tempfile::tempdir().unwrap();
    let paced = [
        ("EBB_TTL__MAX_DELETES_PER_SEC", "20000"),
        ("EBB_SETPARAMETER__TTLMONITORENABLED", "false"),
    ];
    let mut d = spawn(dir.path(), &paced);
    let client = d.client().await;
    let db = client.database("crash");
    let c: Collection<Document> = db.collection("events");
    let ttl = IndexOptions::builder()
        .expire_after(Duration::from_secs(3600))
        .build();
    c.create_index(
        IndexModel::builder()
            .keys(doc! { "at": 1 })
            .options(ttl)
            .build(),
    )
    .await
    .unwrap();
    c.create_index(IndexModel::builder().keys(doc! { "k": 1 }).build())
        .await
        .unwrap();
    let now = DateTime::now().timestamp_millis();
    let (old, future) = (
        DateTime::from_millis(now - 2 * 3_600_000),
        DateTime::from_millis(now + 86_400_000),
    );
    let docs: Vec<Document> = (0..EXPIRED + LIVE)
        .map(|i| {
            let live = i % 2 == 0;
            doc! { "_id": i as i64, "live": live, "at": if live { future } else { old }, "k": (i % 100) as i32 }
        })
        .collect();
    for chunk in docs.chunks(10_000) {
        c.insert_many(chunk.to_vec()).await.unwrap();
    }

    let at_kill = kill_mid_pass(&mut d, &client.database("admin"), 10_000).await;
    assert!(
        at_kill < EXPIRED as i64,
        "killed after the pass had finished ({at_kill} deleted)"
    );
    drop(client);

    // Restart with the monitor off to look at exactly what the crash left.
    let d = restart_without_monitor(dir.path());
    let client = d.client().await;
    let db = client.database("crash");
    let c: Collection<Document> = db.collection("events");
    assert_eq!(
        c.count_documents(doc! { "live": true }).await.unwrap(),
        LIVE as u64,
        "unexpired documents lost"
    );
    let records = c.count_documents(doc! {}).await.unwrap() as i64;
    assert!(
        records < (EXPIRED + LIVE) as i64,
        "the pass deleted something before the kill"
    );
    indexes_agree(&db, "events", records).await;

    // The expired documents left over go on the next pass.
    client
        .database("admin")
        .run_command(doc! { "setParameter": 1, "ttlMonitorEnabled": true })
        .await
        .unwrap();
    // They are hidden at once; the records a full scan examines tell when
    // the monitor has deleted them.
    let deadline = Instant::now() + Duration::from_secs(120);
    while scan_counts(&db, doc! { "_id": 1 }).await.0 > LIVE as i64 {
        assert!(
            Instant::now() < deadline,
            "leftover expired documents were not deleted"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(c.count_documents(doc! {}).await.unwrap(), LIVE as u64);
    indexes_agree(&db, "events", LIVE as i64).await;
}

/// SIGTERM in the middle of a TTL pass: the monitor stops between chunks,
/// ebbd exits 0, and nothing is half-deleted.
#[tokio::test]
async fn sigterm_during_a_ttl_pass_stops_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let paced = [
        ("EBB_TTL__MAX_DELETES_PER_SEC", "5000"),
        ("EBB_SETPARAMETER__TTLMONITORENABLED", "false"),
    ];
    let mut d = spawn(dir.path(), &paced);
    let client = d.client().await;
    let c: Collection<Document> = client.database("stop").collection("events");
    let ttl = IndexOptions::builder()
        .expire_after(Duration::from_secs(0))
        .build();
    c.create_index(
        IndexModel::builder()
            .keys(doc! { "at": 1 })
            .options(ttl)
            .build(),
    )
    .await
    .unwrap();
    c.create_index(IndexModel::builder().keys(doc! { "k": 1 }).build())
        .await
        .unwrap();
    let docs: Vec<Document> = (0..20_000)
        .map(|i| doc! { "_id": i, "at": DateTime::from_millis(0), "k": i % 7 })
        .collect();
    c.insert_many(docs).await.unwrap();
    let admin = client.database("admin");
    admin
        .run_command(doc! { "setParameter": 1, "ttlMonitorEnabled": true })
        .await
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while deleted(&admin).await < 1000 {
        assert!(Instant::now() < deadline, "the pass never got going");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    drop(client);
    let started = Instant::now();
    assert_eq!(support::terminate(&mut d.child).code(), Some(0));
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "shutdown waited for the whole pass"
    );

    let d = restart_without_monitor(dir.path());
    let client = d.client().await;
    let db = client.database("stop");
    let c: Collection<Document> = db.collection("events");
    let records = c.count_documents(doc! {}).await.unwrap() as i64;
    assert!(records > 0 && records < 20_000, "{records} left");
    indexes_agree(&db, "events", records).await;
}

/// Every index of `coll` returns exactly its `records` documents and
/// `validate` finds it whole. The `k` index may hold entries of expired
/// documents queued for the sweep (`ttl::sweep`): no scan returns them,
/// and the writer's sweep deletes them within its interval (at startup
/// too), which the keys a full scan examines show.
async fn indexes_agree(db: &Database, coll: &str, records: i64) {
    for hint in [doc! { "_id": 1 }, doc! { "at": 1 }, doc! { "k": 1 }] {
        let (keys, returned) = scan_counts_in(db, coll, hint.clone()).await;
        assert_eq!(returned, records, "index {hint} disagrees with the records");
        if hint.contains_key("k") {
            assert!(keys >= records, "index {hint} lost entries");
        } else {
            assert_eq!(keys, records, "index {hint} disagrees with the records");
        }
    }
    let report = db
        .run_command(doc! { "validate": coll, "full": true })
        .await
        .unwrap();
    assert!(report.get_bool("valid").unwrap(), "{report}");
    let deadline = Instant::now() + Duration::from_secs(30);
    while scan_counts_in(db, coll, doc! { "k": 1 }).await.0 != records {
        assert!(Instant::now() < deadline, "the sweep never came");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn scan_counts_in(db: &Database, coll: &str, hint: impl Into<Bson>) -> (i64, i64) {
    let hint = hint.into();
    let e = db
        .run_command(doc! { "explain": { "find": coll, "filter": {}, "hint": hint }, "verbosity": "executionStats" })
        .await
        .unwrap();
    let s = e.get_document("executionStats").unwrap();
    (
        s.get_i64("totalKeysExamined").unwrap(),
        s.get_i64("nReturned").unwrap(),
    )
}

/// kill -9 in the middle of a TTL pass over a time-series collection's
/// buckets: after a restart no live measurement is missing, the bucket
/// indexes agree with the buckets, and the due buckets left over go on the
/// next pass.
#[tokio::test]
async fn kill_during_a_bucket_expiry_pass_loses_no_live_measurement() {
    const SENSORS: usize = 20_000;
    let dir = tempfile::tempdir().unwrap();
    let paced = [
        ("EBB_TTL__MAX_DELETES_PER_SEC", "5000"),
        ("EBB_SETPARAMETER__TTLMONITORENABLED", "false"),
    ];
    let mut d = spawn(dir.path(), &paced);
    let client = d.client().await;
    let db = client.database("crash");
    db.run_command(doc! { "create": "w", "timeseries": { "timeField": "t", "metaField": "s" }, "expireAfterSeconds": 3600 })
        .await
        .unwrap();
    let c: Collection<Document> = db.collection("w");
    let now = DateTime::now().timestamp_millis();
    // Due buckets start three hours ago (due after 1 h span + 1 h);
    // live ones now. Two measurements per bucket.
    for (live, at) in [(false, now - 3 * 3_600_000), (true, now)] {
        let docs: Vec<Document> = (0..SENSORS * 2)
            .map(|i| doc! { "t": DateTime::from_millis(at + (i / SENSORS) as i64), "s": format!("{live}-{}", i % SENSORS), "live": live })
            .collect();
        for chunk in docs.chunks(10_000) {
            c.insert_many(chunk.to_vec()).await.unwrap();
        }
    }
    let at_kill = kill_mid_pass(&mut d, &client.database("admin"), 2_000).await;
    assert!(
        at_kill < SENSORS as i64,
        "killed after the pass had finished"
    );
    drop(client);

    let d = restart_without_monitor(dir.path());
    let client = d.client().await;
    let db = client.database("crash");
    let c: Collection<Document> = db.collection("w");
    assert_eq!(
        c.count_documents(doc! { "live": true }).await.unwrap(),
        (SENSORS * 2) as u64,
        "live measurements lost"
    );
    let buckets: Collection<Document> = db.collection("system.buckets.w");
    let records = buckets.count_documents(doc! {}).await.unwrap() as i64;
    assert!(
        records < (SENSORS * 2) as i64,
        "nothing was deleted before the kill"
    );
    for hint in ["_id_", "$ebb_bucket_time", "$ebb_bucket_meta_time"] {
        assert_eq!(
            bucket_scan(&db, hint).await,
            (records, records),
            "index {hint} disagrees with the buckets"
        );
    }

    client
        .database("admin")
        .run_command(doc! { "setParameter": 1, "ttlMonitorEnabled": true })
        .await
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(120);
    while bucket_scan(&db, "_id_").await.0 > SENSORS as i64 {
        assert!(
            Instant::now() < deadline,
            "leftover due buckets were not deleted"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(
        c.count_documents(doc! {}).await.unwrap(),
        (SENSORS * 2) as u64
    );
    for hint in ["$ebb_bucket_time", "$ebb_bucket_meta_time"] {
        assert_eq!(
            bucket_scan(&db, hint).await,
            (SENSORS as i64, SENSORS as i64)
        );
    }
}

/// A full scan of the buckets through the index named `hint`: (keys, buckets).
async fn bucket_scan(db: &Database, hint: &str) -> (i64, i64) {
    scan_counts_in(db, "system.buckets.w", hint).await
}
