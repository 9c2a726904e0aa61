//! The database profiler end to end: the `profile` command and
//! `system.profile`. Expected results from the MongoDB manual ("Database
//! Profiler", "Database Profiler Output", the `profile` command reference,
//! "TTL Indexes": TTL deletes show in the profiler's data) and
//! jstests/core/administrative/profile/*.js.

use std::sync::Arc;
use std::time::Duration;

use crate::common::{TestNode, eventually, expect_code, first_batch, ttl_index};
use ebb_actors::clock::ManualClock;
use futures::TryStreamExt;
use mongodb::Database;
use mongodb::bson::{Bson, DateTime, Document, doc};

async fn profile_entries(db: &Database, filter: Document) -> Vec<Document> {
    db.collection::<Document>("system.profile")
        .find(filter)
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap()
}

fn number(d: &Document, field: &str) -> i64 {
    match d.get(field) {
        Some(Bson::Int32(n)) => i64::from(*n),
        Some(Bson::Int64(n)) => *n,
        other => panic!("{field}: {other:?} in {d}"),
    }
}

// The `profile` command reference: the reply holds the settings as they
// were (`was`, `slowms`, `sampleRate`); -1 only reads; bad values are
// BadValue (2).
#[tokio::test]
async fn profile_answers_the_previous_settings() {
    let node = TestNode::start();
    let db = node.db("app").await;
    let r = db.run_command(doc! { "profile": -1 }).await.unwrap();
    assert_eq!(number(&r, "was"), 0);
    assert_eq!(number(&r, "slowms"), 100);
    assert_eq!(r.get_f64("sampleRate").unwrap(), 1.0);
    db.run_command(doc! { "profile": 1, "slowms": 20, "sampleRate": 0.5 })
        .await
        .unwrap();
    let r = db.run_command(doc! { "profile": 2 }).await.unwrap();
    assert_eq!(number(&r, "was"), 1);
    assert_eq!(number(&r, "slowms"), 20);
    assert_eq!(r.get_f64("sampleRate").unwrap(), 0.5);
    let r = db.run_command(doc! { "profile": -1 }).await.unwrap();
    assert_eq!(number(&r, "was"), 2);
    let other = node.db("other").await;
    let r = other.run_command(doc! { "profile": -1 }).await.unwrap();
    assert_eq!(number(&r, "was"), 0, "the level is per database");
    expect_code(db.run_command(doc! { "profile": 5 }).await, 2);
    expect_code(
        db.run_command(doc! { "profile": 1, "sampleRate": 2.0 })
            .await,
        2,
    );
}

// "Database Profiler Output": at level 2 every operation is recorded in
// system.profile, a capped collection of 1 MiB, with op, ns, command,
// keysExamined, docsExamined, nreturned, planSummary, millis, ts
// (jstests/core/administrative/profile/profile_find.js, profile_insert.js).
#[tokio::test]
async fn level_two_records_operations_in_mongods_shape() {
    let node = TestNode::start();
    let db = node.db("app").await;
    let c = db.collection::<Document>("things");
    c.insert_many((0..5).map(|i| doc! { "_id": i, "a": i % 2 }))
        .await
        .unwrap();
    db.run_command(doc! { "profile": 2 }).await.unwrap();
    c.insert_one(doc! { "_id": 10, "a": 1 }).await.unwrap();
    let found: Vec<Document> = c
        .find(doc! { "a": 1 })
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    assert_eq!(found.len(), 3);
    let finds = profile_entries(&db, doc! { "op": "query" }).await;
    assert_eq!(finds.len(), 1, "{finds:?}");
    let f = &finds[0];
    assert_eq!(f.get_str("ns").unwrap(), "app.things");
    assert_eq!(
        f.get_document("command").unwrap().get_str("find").unwrap(),
        "things"
    );
    assert_eq!(number(f, "nreturned"), 3);
    assert_eq!(number(f, "docsExamined"), 6);
    assert_eq!(number(f, "keysExamined"), 6);
    assert_eq!(f.get_str("planSummary").unwrap(), "COLLSCAN");
    assert!(number(f, "millis") >= 0);
    assert!(f.get_datetime("ts").is_ok());
    let inserts = profile_entries(&db, doc! { "op": "insert" }).await;
    assert_eq!(number(&inserts[0], "ninserted"), 1);
    let listed = first_batch(
        &db,
        doc! { "listCollections": 1, "filter": { "name": "system.profile" } },
    )
    .await;
    let options = listed[0].get_document("options").unwrap();
    assert!(options.get_bool("capped").unwrap());
    assert_eq!(number(options, "size"), 1024 * 1024);
}

// The manual: at level 1 only operations slower than slowms are recorded;
// a filter replaces that rule ("filter" in the profile command reference).
#[tokio::test]
async fn level_one_records_slow_or_filtered_operations_only() {
    let node = TestNode::start();
    let db = node.db("app").await;
    let c = db.collection::<Document>("t");
    db.run_command(doc! { "profile": 1, "slowms": 1_000_000 })
        .await
        .unwrap();
    c.insert_one(doc! { "_id": 1 }).await.unwrap();
    c.find_one(doc! {}).await.unwrap();
    assert!(profile_entries(&db, doc! {}).await.is_empty());
    db.run_command(doc! { "profile": 1, "filter": { "op": "insert" } })
        .await
        .unwrap();
    c.insert_one(doc! { "_id": 2 }).await.unwrap();
    c.find_one(doc! {}).await.unwrap();
    let all = profile_entries(&db, doc! {}).await;
    assert_eq!(all.len(), 1, "{all:?}");
    assert_eq!(all[0].get_str("op").unwrap(), "insert");
    let r = db
        .run_command(doc! { "profile": 0, "filter": "unset" })
        .await
        .unwrap();
    assert_eq!(r.get_document("filter").unwrap(), &doc! { "op": "insert" });
}

const T0: i64 = 1_700_000_000_000;

// "TTL Indexes": the monitor's deletes appear "in the data collected by
// the database profiler": a `remove` entry with `ndeleted`.
#[tokio::test]
async fn ttl_deletes_appear_in_the_profile() {
    let node = TestNode::start_with_clock(Arc::new(ManualClock::new(T0)));
    let db = node.db("app").await;
    let c = db.collection::<Document>("sessions");
    ttl_index(&c, doc! { "at": 1 }, 60, None).await;
    db.run_command(doc! { "profile": 2 }).await.unwrap();
    let old = DateTime::from_millis(T0 - 3_600_000);
    c.insert_many([doc! { "_id": 1, "at": old }, doc! { "_id": 2, "at": old }])
        .await
        .unwrap();
    node.ttl_pass().await;
    let recorded = eventually(Duration::from_secs(10), || async {
        !profile_entries(&db, doc! { "op": "remove", "ns": "app.sessions" })
            .await
            .is_empty()
    })
    .await;
    assert!(recorded, "no TTL delete in system.profile");
    let removes = profile_entries(&db, doc! { "op": "remove", "ns": "app.sessions" }).await;
    assert_eq!(number(&removes[0], "ndeleted"), 2);
    assert_eq!(
        removes[0]
            .get_document("command")
            .unwrap()
            .get_str("ttlIndex")
            .unwrap(),
        "at_1"
    );
}

// Reads of system.profile are operations like any other: mongod profiles
// them at level 2 too, so a count of the entries sees the counts before
// it (ODMs that count queries through system.profile subtract their own
// counts for this reason).
#[tokio::test]
async fn reads_of_system_profile_are_profiled() {
    let node = TestNode::start();
    let db = node.db("app").await;
    let c = db.collection::<Document>("things");
    c.insert_one(doc! { "_id": 1 }).await.unwrap();
    db.run_command(doc! { "profile": 2 }).await.unwrap();
    let profile = db.collection::<Document>("system.profile");
    let n0 = profile.count_documents(doc! {}).await.unwrap();
    let n1 = profile.count_documents(doc! {}).await.unwrap();
    assert_eq!(n1, n0 + 1, "the first count is recorded");
    c.find_one(doc! {}).await.unwrap();
    let n2 = profile.count_documents(doc! {}).await.unwrap();
    assert_eq!(n2, n1 + 2, "the second count and the find are recorded");

    let reads = profile_entries(&db, doc! { "ns": "app.system.profile" }).await;
    assert_eq!(reads.len(), 3, "{reads:?}");
    for r in &reads {
        assert_eq!(r.get_str("op").unwrap(), "command", "{r}");
        assert_eq!(
            r.get_document("command")
                .unwrap()
                .get_str("aggregate")
                .unwrap(),
            "system.profile"
        );
    }
    let finds = profile_entries(
        &db,
        doc! { "op": "query", "ns": "app.system.profile", "command.find": "system.profile" },
    )
    .await;
    assert_eq!(
        finds.len(),
        1,
        "the previous find of system.profile: {finds:?}"
    );
}

/// The profile entry of the statement whose `command.q` is `q`.
fn statement_entry<'a>(entries: &'a [Document], q: &Document) -> &'a Document {
    entries
        .iter()
        .find(|e| e.get_document("command").unwrap().get_document("q").ok() == Some(q))
        .unwrap_or_else(|| panic!("no entry for {q}: {entries:?}"))
}

// profile_update.js, profile_delete.js and profile1.js: an update or
// delete command is profiled one entry per statement ("update" or
// "remove"), its `command` the statement with mongod's defaults filled in
// (`{q, u, multi, upsert}`, `{q, limit}`), with the statement's own
// counts.
#[tokio::test]
async fn writes_are_profiled_one_entry_per_statement() {
    let node = TestNode::start();
    let db = node.db("app").await;
    let c = db.collection::<Document>("things");
    c.insert_many((1..=3).map(|i| doc! { "_id": i, "a": i }))
        .await
        .unwrap();
    db.run_command(doc! { "profile": 2 }).await.unwrap();
    db.run_command(doc! {
        "update": "things",
        "updates": [
            { "q": { "a": 1 }, "u": { "$set": { "b": 1 } } },
            { "q": { "a": { "$gte": 2 } }, "u": { "$set": { "b": 2 } }, "multi": true },
            { "q": { "_id": 9 }, "u": { "$set": { "b": 9 } }, "upsert": true },
            { "q": { "a": 3 }, "u": { "$set": { "c": 1 } }, "hint": { "_id": 1 } },
        ],
    })
    .await
    .unwrap();
    let updates = profile_entries(&db, doc! { "op": "update", "ns": "app.things" }).await;
    assert_eq!(updates.len(), 4, "{updates:?}");
    assert!(
        updates
            .iter()
            .all(|e| !e.get_document("command").unwrap().contains_key("updates")),
        "{updates:?}"
    );
    let one = statement_entry(&updates, &doc! { "a": 1 });
    assert_eq!(
        one.get_document("command").unwrap(),
        &doc! { "q": { "a": 1 }, "u": { "$set": { "b": 1 } }, "multi": false, "upsert": false }
    );
    assert_eq!(number(one, "nMatched"), 1);
    assert_eq!(number(one, "nModified"), 1);
    assert_eq!(number(one, "nUpserted"), 0);
    assert_eq!(number(one, "docsExamined"), 1);
    assert!(number(one, "keysExamined") >= 0);
    assert_eq!(one.get_str("planSummary").unwrap(), "COLLSCAN");
    let many = statement_entry(&updates, &doc! { "a": { "$gte": 2 } });
    assert_eq!(
        many.get_document("command").unwrap(),
        &doc! { "q": { "a": { "$gte": 2 } }, "u": { "$set": { "b": 2 } }, "multi": true, "upsert": false }
    );
    assert_eq!(number(many, "nMatched"), 2);
    assert_eq!(number(many, "nModified"), 2);
    let upsert = statement_entry(&updates, &doc! { "_id": 9 });
    assert_eq!(
        upsert.get_document("command").unwrap(),
        &doc! { "q": { "_id": 9 }, "u": { "$set": { "b": 9 } }, "multi": false, "upsert": true }
    );
    assert_eq!(number(upsert, "nMatched"), 0);
    assert_eq!(number(upsert, "nModified"), 0);
    assert_eq!(number(upsert, "nUpserted"), 1);
    let hinted = statement_entry(&updates, &doc! { "a": 3 });
    let command = hinted.get_document("command").unwrap();
    assert_eq!(command.get_document("hint").unwrap(), &doc! { "_id": 1 });
    assert!(!command.get_bool("multi").unwrap());
    assert!(!command.get_bool("upsert").unwrap());

    db.run_command(doc! {
        "delete": "things",
        "deletes": [
            { "q": { "_id": 1 }, "limit": 1 },
            { "q": { "b": 2 }, "limit": 0 },
        ],
    })
    .await
    .unwrap();
    let removes = profile_entries(&db, doc! { "op": "remove", "ns": "app.things" }).await;
    assert_eq!(removes.len(), 2, "{removes:?}");
    let first = statement_entry(&removes, &doc! { "_id": 1 });
    assert_eq!(
        first.get_document("command").unwrap(),
        &doc! { "q": { "_id": 1 }, "limit": 1 }
    );
    assert_eq!(number(first, "ndeleted"), 1);
    let second = statement_entry(&removes, &doc! { "b": 2 });
    assert_eq!(number(second, "ndeleted"), 2);
    assert!(number(second, "docsExamined") >= 2);

    // A helper's single statement is one entry too (profile1.js).
    c.update_one(doc! { "_id": 2 }, doc! { "$inc": { "x": 1 } })
        .await
        .unwrap();
    let inc = profile_entries(&db, doc! { "op": "update", "command.q._id": 2 }).await;
    assert_eq!(inc.len(), 1, "{inc:?}");
    assert_eq!(
        inc[0].get_document("command").unwrap(),
        &doc! { "q": { "_id": 2 }, "u": { "$inc": { "x": 1 } }, "multi": false, "upsert": false }
    );
}
