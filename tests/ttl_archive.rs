//! Archive on expire, ebb's own `archiveTo` option of a TTL index: each
//! document the index expires is written to the named collection, in the
//! batch that deletes it, as `{_id, expiredAt, expiredBy, doc}`; the archive
//! is an ordinary collection (queried, indexed, with a TTL of its own);
//! what cannot be an archive is refused with 67; a missing archive holds
//! expiry back instead of losing documents; `kill -9` in the middle of
//! archiving leaves every document either live or archived, once; and on
//! a replica set every member archives the same documents under the same
//! `_id`s.

use std::sync::Arc;
use std::time::{Duration, Instant};

use ebb_actors::clock::ManualClock;
use futures::TryStreamExt;
use mongodb::bson::{Bson, DateTime, Document, doc};
use mongodb::{Collection, Database};

use crate::common::set::{Member, documents_of, eventually, free_port, initiated_set};
use crate::common::{TestNode, expect_code, first_batch, str_ids};

/// 2026-01-01T00:00:00Z: the manual clock's start.
const T0: i64 = 1_767_225_600_000;
const HOUR: i64 = 3_600_000;

fn node() -> TestNode {
    TestNode::start_with_clock(Arc::new(ManualClock::new(T0)))
}

fn at(ms: i64) -> DateTime {
    DateTime::from_millis(ms)
}

/// `createIndexes` of one index spec on `coll`.
async fn create(db: &Database, coll: &str, spec: Document) -> mongodb::error::Result<Document> {
    db.run_command(doc! { "createIndexes": coll, "indexes": [spec] })
        .await
}

/// A TTL index on `at` (an hour) of `coll` that archives to `to`.
fn archiving(to: impl Into<Bson>) -> Document {
    doc! { "key": { "at": 1 }, "name": "at_1", "expireAfterSeconds": 3600, "archiveTo": to.into() }
}

/// Every document of `c`, in `_id` order.
async fn documents(c: &Collection<Document>) -> Vec<Document> {
    c.find(doc! {})
        .sort(doc! { "_id": 1 })
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap()
}

#[tokio::test]
async fn expired_documents_land_in_the_archive_saying_when_and_why() {
    let node = node();
    let db = node.db("app").await;
    create(&db, "sessions", archiving("sessions_expired"))
        .await
        .unwrap();
    let names = db.list_collection_names().await.unwrap();
    assert!(
        names.contains(&"sessions_expired".to_owned()),
        "the archive is created with the index: {names:?}"
    );
    let specs = first_batch(&db, doc! { "listIndexes": "sessions" }).await;
    let ttl = specs
        .iter()
        .find(|s| s.get_str("name").ok() == Some("at_1"));
    assert_eq!(
        ttl.unwrap().get_str("archiveTo").ok(),
        Some("sessions_expired"),
        "{specs:?}"
    );

    let sessions = db.collection::<Document>("sessions");
    let old = at(T0 - 2 * HOUR);
    let docs = vec![
        doc! { "_id": "a", "user": "ann", "at": old, "cart": [1, 2] },
        doc! { "_id": "b", "user": "bob", "at": at(T0 - HOUR) },
        doc! { "_id": "c", "user": "cy", "at": at(T0 + HOUR) },
        doc! { "_id": "d", "user": "di", "at": [at(T0 + HOUR), old] },
        doc! { "_id": "e", "user": "ed", "at": "not a date" },
    ];
    sessions.insert_many(docs.clone()).await.unwrap();
    node.ttl_pass().await;
    assert_eq!(str_ids(&sessions, doc! {}).await, ["c", "e"]);

    let archive = db.collection::<Document>("sessions_expired");
    let mut archived = documents(&archive).await;
    assert_eq!(archived.len(), 3, "{archived:?}");
    archived.sort_by_key(|a| {
        a.get_document("doc")
            .unwrap()
            .get_str("_id")
            .unwrap()
            .to_owned()
    });
    for (a, (original, date)) in
        archived
            .iter()
            .zip([(&docs[0], old), (&docs[1], at(T0 - HOUR)), (&docs[3], old)])
    {
        let keys: Vec<&str> = a.keys().map(String::as_str).collect();
        assert_eq!(keys, ["_id", "expiredAt", "expiredBy", "doc"]);
        assert!(a.get_object_id("_id").is_ok(), "{a:?}");
        assert_eq!(a.get_datetime("expiredAt").unwrap(), &at(T0));
        let by = a.get_document("expiredBy").unwrap();
        assert_eq!(by.get_str("index").unwrap(), "at_1");
        assert_eq!(by.get_datetime("date").unwrap(), &date);
        assert_eq!(
            by.get_datetime("due").unwrap(),
            &at(date.timestamp_millis() + HOUR)
        );
        assert_eq!(a.get_document("doc").unwrap(), original);
    }
    // Queried like any collection, by the archived document's fields.
    let ann = archive
        .find_one(doc! { "doc.user": "ann" })
        .await
        .unwrap()
        .unwrap();
    assert_eq!(ann.get_document("doc").unwrap(), &docs[0]);

    // A document archived once is not archived again by a later pass.
    node.advance(Duration::from_secs(60));
    node.ttl_pass().await;
    assert_eq!(documents(&archive).await.len(), 3);
}

#[tokio::test]
async fn the_archive_is_an_ordinary_collection_with_a_ttl_of_its_own() {
    let node = node();
    let db = node.db("app").await;
    create(&db, "events", archiving("events_archive"))
        .await
        .unwrap();
    let archive = db.collection::<Document>("events_archive");
    // Kept for a day after it expired, then gone for good.
    create(
        &db,
        "events_archive",
        doc! { "key": { "expiredAt": 1 }, "name": "expiredAt_1", "expireAfterSeconds": 86_400 },
    )
    .await
    .unwrap();
    create(
        &db,
        "events_archive",
        doc! { "key": { "doc.kind": 1 }, "name": "kind" },
    )
    .await
    .unwrap();
    let events = db.collection::<Document>("events");
    events
        .insert_many((0..50).map(|i| {
            doc! { "_id": i, "kind": if i % 2 == 0 { "click" } else { "view" }, "at": at(T0 - 2 * HOUR) }
        }))
        .await
        .unwrap();
    node.ttl_pass().await;
    assert_eq!(events.count_documents(doc! {}).await.unwrap(), 0);
    assert_eq!(archive.count_documents(doc! {}).await.unwrap(), 50);
    let clicks = archive
        .count_documents(doc! { "doc.kind": "click" })
        .hint(mongodb::options::Hint::Name("kind".into()))
        .await
        .unwrap();
    assert_eq!(clicks, 25);

    node.advance(Duration::from_secs(86_400));
    node.ttl_pass().await;
    assert_eq!(archive.count_documents(doc! {}).await.unwrap(), 0);
}

#[tokio::test]
async fn what_cannot_archive_or_be_an_archive_is_refused() {
    let node = node();
    let db = node.db("app").await;
    expect_code(create(&db, "s", archiving(5)).await, 14);
    expect_code(create(&db, "s", archiving("")).await, 73);
    expect_code(create(&db, "s", archiving("a$b")).await, 73);
    let msg = expect_code(
        create(
            &db,
            "s",
            doc! { "key": { "at": 1 }, "name": "at_1", "archiveTo": "x" },
        )
        .await,
        67,
    );
    assert!(msg.contains("expireAfterSeconds"), "{msg}");
    let msg = expect_code(create(&db, "s", archiving("s")).await, 67);
    assert!(msg.contains("its own archive"), "{msg}");
    expect_code(create(&db, "s", archiving("system.x")).await, 67);

    db.run_command(doc! { "create": "capped", "capped": true, "size": 4096 })
        .await
        .unwrap();
    let msg = expect_code(create(&db, "s", archiving("capped")).await, 67);
    assert!(msg.contains("capped"), "{msg}");
    create(
        &db,
        "keyed",
        doc! { "key": { "k": 1 }, "name": "k_1", "unique": true },
    )
    .await
    .unwrap();
    let msg = expect_code(create(&db, "s", archiving("keyed")).await, 67);
    assert!(msg.contains("unique"), "{msg}");
    db.run_command(doc! { "create": "ts", "timeseries": { "timeField": "t" } })
        .await
        .unwrap();
    expect_code(create(&db, "s", archiving("ts")).await, 67);
    expect_code(create(&db, "ts", archiving("x")).await, 67);
    // Nothing refused above was built or created.
    let names = db.list_collection_names().await.unwrap();
    assert!(!names.contains(&"s".to_owned()), "{names:?}");

    create(&db, "s", archiving("s_archive")).await.unwrap();
    // The same spec again is a no-op, another archive for it a conflict.
    let again = create(&db, "s", archiving("s_archive")).await.unwrap();
    assert_eq!(
        again.get_str("note").ok(),
        Some("all indexes already exist")
    );
    expect_code(create(&db, "s", archiving("other")).await, 85);
    // An archive does not archive in turn, nor is a source made an archive.
    let msg = expect_code(create(&db, "s_archive", archiving("z")).await, 67);
    assert!(msg.contains("cannot archive in turn"), "{msg}");
    create(
        &db,
        "t",
        doc! { "key": { "u": 1 }, "name": "u_1", "expireAfterSeconds": 60, "archiveTo": "t2" },
    )
    .await
    .unwrap();
    let msg = expect_code(create(&db, "s2", archiving("t")).await, 67);
    assert!(
        msg.contains("archives what its own TTL index expires"),
        "{msg}"
    );
    // An archive keeps no unique index: it could refuse a copy.
    let msg = expect_code(
        create(
            &db,
            "s_archive",
            doc! { "key": { "doc.user": 1 }, "name": "user", "unique": true },
        )
        .await,
        67,
    );
    assert!(msg.contains("archive"), "{msg}");
}

#[tokio::test]
async fn a_dropped_archive_holds_expiry_back_until_it_is_back() {
    let node = node();
    let db = node.db("app").await;
    create(&db, "s", archiving("s_archive")).await.unwrap();
    db.collection::<Document>("s_archive").drop().await.unwrap();
    let (deleted, ..) = node.ttl_metrics().await;
    let s = db.collection::<Document>("s");
    s.insert_many((0..10).map(|i| doc! { "_id": i, "at": at(T0 - 2 * HOUR) }))
        .await
        .unwrap();
    node.ttl_pass().await;
    assert_eq!(
        node.ttl_metrics().await.0,
        deleted,
        "nothing expires without its archive"
    );
    // Due, so hidden, but kept: an index hint on a full scan still finds
    // none, while the monitor has deleted none.
    assert_eq!(s.count_documents(doc! {}).await.unwrap(), 0);

    db.run_command(doc! { "create": "s_archive" })
        .await
        .unwrap();
    node.ttl_pass().await;
    assert_eq!(node.ttl_metrics().await.0, deleted + 10);
    let archived = documents(&db.collection("s_archive")).await;
    let mut ids: Vec<i32> = archived
        .iter()
        .map(|a| a.get_document("doc").unwrap().get_i32("_id").unwrap())
        .collect();
    ids.sort_unstable();
    assert_eq!(ids, (0..10).collect::<Vec<_>>());
}

/// Waits until `archive` holds at least `n` documents, within 120 s (due
/// documents are hidden at once: their source looks empty before the
/// monitor has deleted them).
async fn archived(archive: &Collection<Document>, n: u64) {
    let deadline = Instant::now() + Duration::from_secs(120);
    while archive.count_documents(doc! {}).await.unwrap_or(0) < n {
        assert!(Instant::now() < deadline, "not archived within 120 s");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Checks that `archive` holds exactly one copy of each of `0..n`.
async fn each_archived_once(archive: &Collection<Document>, n: i64) {
    let mut ids: Vec<i64> = documents(archive)
        .await
        .iter()
        .map(|a| a.get_document("doc").unwrap().get_i64("_id").unwrap())
        .collect();
    ids.sort_unstable();
    let twice: Vec<&[i64]> = ids.windows(2).filter(|w| w[0] == w[1]).take(5).collect();
    assert!(twice.is_empty(), "archived twice: {twice:?}");
    let expected: Vec<i64> = (0..n).collect();
    let missing: Vec<&i64> = expected
        .iter()
        .filter(|i| ids.binary_search(i).is_err())
        .take(5)
        .collect();
    assert!(missing.is_empty(), "never archived: {missing:?}…");
    assert_eq!(ids.len() as i64, n);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_while_archiving_leaves_each_document_live_or_archived_once() {
    let root = tempfile::tempdir().unwrap();
    let port = free_port();
    let mut node = Member {
        port,
        dir: root.path().join(port.to_string()),
        child: None,
        env: Vec::new(),
    };
    node.launch(false);
    let client = node.direct().await;
    let db = client.database("app");
    create(&db, "s", archiving("s_archive")).await.unwrap();
    let s = db.collection::<Document>("s");
    // Written with the monitor off, then all due at once when it is on.
    db.client()
        .database("admin")
        .run_command(doc! { "setParameter": 1, "ttlMonitorEnabled": false })
        .await
        .unwrap();
    let total: i64 = 200_000;
    let old = DateTime::from_millis(DateTime::now().timestamp_millis() - 2 * HOUR);
    for start in (0..total).step_by(10_000) {
        s.insert_many(
            (start..start + 10_000).map(|i| doc! { "_id": i, "at": old, "pad": "x".repeat(64) }),
        )
        .await
        .unwrap();
    }
    db.client()
        .database("admin")
        .run_command(doc! { "setParameter": 1, "ttlMonitorEnabled": true })
        .await
        .unwrap();
    let archive = db.collection::<Document>("s_archive");
    // Killed once some, not all, are archived.
    eventually("archiving under way", async || {
        archive.estimated_document_count().await.unwrap_or(0) > 0
    })
    .await;
    node.kill();
    node.launch(false);
    let client = node.direct().await;
    let db = client.database("app");
    let (s, archive) = (db.collection::<Document>("s"), db.collection("s_archive"));
    archived(&archive, total as u64).await;
    each_archived_once(&archive, total).await;
    // And none is left stored in the source (`validate` counts records,
    // due or not).
    let stored = |db: Database| async move {
        let v = db.run_command(doc! { "validate": "s" }).await.unwrap();
        v.get_i64("nrecords").unwrap()
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    while stored(db.clone()).await > 0 {
        assert!(Instant::now() < deadline, "records left in the source");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(s.count_documents(doc! {}).await.unwrap(), 0);
}

/// `listCollections`' `info.uuid` of each collection of `t` on `member`.
async fn uuids_on(member: &Member) -> Vec<(String, Bson)> {
    let db = member.direct().await.database("t");
    let mut out: Vec<(String, Bson)> = first_batch(&db, doc! { "listCollections": 1 })
        .await
        .into_iter()
        .map(|c| {
            let name = c.get_str("name").unwrap().to_owned();
            (
                name,
                c.get_document("info").unwrap().get("uuid").unwrap().clone(),
            )
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_member_of_a_set_archives_the_same_documents_under_the_same_ids() {
    let root = tempfile::tempdir().unwrap();
    let (members, client) = initiated_set(root.path()).await;
    let db = client.database("t");
    create(&db, "s", archiving("s_archive")).await.unwrap();
    // Collections made every way a set makes them: each has one UUID on
    // every member.
    db.run_command(doc! { "create": "made" }).await.unwrap();
    db.collection::<Document>("implicit")
        .insert_one(doc! { "_id": 1 })
        .await
        .unwrap();
    let s = db.collection::<Document>("s");
    let old = DateTime::from_millis(DateTime::now().timestamp_millis() - 2 * HOUR);
    s.insert_many((0..500i64).map(|i| doc! { "_id": i, "at": old }))
        .await
        .unwrap();
    let archive = db.collection::<Document>("s_archive");
    archived(&archive, 500).await;
    each_archived_once(&archive, 500).await;
    let on_primary = documents(&archive).await;
    for m in &members {
        eventually("the member holds the archive", async || {
            documents_of(m, "s_archive").await.len() == 500
        })
        .await;
        let mut here = documents_of(m, "s_archive").await;
        here.sort_by_key(|d| d.get_object_id("_id").unwrap());
        assert_eq!(here, on_primary, "member {}", m.host());
    }
    let uuids = uuids_on(&members[0]).await;
    let names: Vec<&str> = uuids.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["implicit", "made", "s", "s_archive"]);
    let distinct: std::collections::HashSet<String> =
        uuids.iter().map(|(_, u)| u.to_string()).collect();
    assert_eq!(distinct.len(), 4, "{uuids:?}");
    for m in &members[1..] {
        assert_eq!(uuids_on(m).await, uuids, "member {}", m.host());
    }
}
