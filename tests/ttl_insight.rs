//! Why a document does not expire: `explainExpiry` names, for each
//! document a filter matches, when each TTL index makes it due or the
//! reason it never does, with the monitor held so due documents are still
//! stored and the node's clock driven by hand.

use std::sync::Arc;
use std::time::Duration;

use crate::common::{TestNode, expect_code, ttl_index};
use ebb_actors::clock::ManualClock;
use mongodb::bson::{Bson, DateTime, Document, doc};
use mongodb::options::IndexOptions;

/// 2026-01-01T00:00:00Z.
const T0: i64 = 1_767_225_600_000;
const TTL_SECS: u64 = 60;

fn at(ms: i64) -> Bson {
    Bson::DateTime(DateTime::from_millis(ms))
}

/// What `explainExpiry` says of each document, by `_id`: the one TTL
/// index's entry.
async fn explained(node: &TestNode, filter: Document) -> Vec<(String, Document)> {
    let reply = node
        .db("app")
        .await
        .run_command(doc! { "explainExpiry": "sessions", "filter": filter })
        .await
        .unwrap();
    reply
        .get_array("documents")
        .unwrap()
        .iter()
        .map(|d| {
            let d = d.as_document().unwrap();
            let expiry = d.get_array("expiry").unwrap();
            assert_eq!(expiry.len(), 1, "{d}");
            (
                d.get_str("_id").unwrap().to_owned(),
                expiry[0].as_document().unwrap().clone(),
            )
        })
        .collect()
}

#[tokio::test]
async fn explain_expiry_names_each_reason_a_document_never_expires() {
    let node = TestNode::start_with_clock(Arc::new(ManualClock::new(T0)));
    let _held = node.hold_monitor().await;
    let c = node.coll("app", "sessions").await;
    let partial = IndexOptions::builder()
        .partial_filter_expression(doc! { "kind": "session" })
        .build();
    ttl_index(&c, doc! { "at": 1 }, TTL_SECS, Some(partial)).await;
    let s = |id: &str, at: Bson| doc! { "_id": id, "kind": "session", "at": at };
    c.insert_many(vec![
        s("due", at(T0 - 61_000)),
        s("later", at(T0)),
        s(
            "earliest of two",
            Bson::Array(vec![at(T0 + 5_000), at(T0 - 5_000)]),
        ),
        doc! { "_id": "no field", "kind": "session" },
        s("null", Bson::Null),
        s("string", Bson::String("2026-01-01T00:00:00Z".into())),
        s("epoch", Bson::Int64(1_767_225_600)),
        s(
            "array of strings",
            Bson::Array(vec!["a".into(), "b".into()]),
        ),
        s("empty array", Bson::Array(vec![])),
        doc! { "_id": "a log", "kind": "log", "at": at(T0 - 61_000) },
    ])
    .await
    .unwrap();

    let shown = explained(&node, doc! {}).await;
    let of = |id: &str| {
        shown
            .iter()
            .find(|(i, _)| i == id)
            .unwrap_or_else(|| panic!("{id} not shown: {shown:?}"))
            .1
            .clone()
    };
    assert_eq!(shown.len(), 10);
    // Due ones are shown although every other read hides them.
    let due = of("due");
    assert_eq!(due.get_str("index").unwrap(), "at_1");
    assert_eq!(due.get_str("field").unwrap(), "at");
    assert_eq!(
        due.get_datetime("dueAt").unwrap().timestamp_millis(),
        T0 - 1_000
    );
    assert!(due.get_bool("due").unwrap());
    assert_eq!(c.count_documents(doc! { "_id": "due" }).await.unwrap(), 0);
    let later = of("later");
    assert_eq!(
        later.get_datetime("dueAt").unwrap().timestamp_millis(),
        T0 + 60_000
    );
    assert!(!later.get_bool("due").unwrap());
    let two = of("earliest of two");
    assert_eq!(
        two.get_datetime("date").unwrap().timestamp_millis(),
        T0 - 5_000
    );
    assert_eq!(
        two.get_datetime("dueAt").unwrap().timestamp_millis(),
        T0 + 55_000
    );
    for (id, reason, words) in [
        ("no field", "missing", "no date at 'at'"),
        ("null", "missing", "missing or null"),
        ("string", "notADate", "holds a string, not a date"),
        ("epoch", "notADate", "holds a long, not a date"),
        (
            "array of strings",
            "arrayWithoutDate",
            "an array with no date",
        ),
        ("empty array", "arrayWithoutDate", "an array with no date"),
        (
            "a log",
            "excludedByPartialFilter",
            "partialFilterExpression",
        ),
    ] {
        let e = of(id);
        assert_eq!(e.get_str("never").unwrap(), reason, "{id}: {e}");
        assert!(e.get_str("why").unwrap().contains(words), "{id}: {e}");
        assert!(e.get("dueAt").is_none(), "{id}: {e}");
    }

    // The clock moves: the later one falls due.
    node.advance(Duration::from_secs(60));
    let later = explained(&node, doc! { "_id": "later" }).await;
    assert_eq!(later.len(), 1);
    assert!(later[0].1.get_bool("due").unwrap());
    // Nothing was changed: every document is still stored (with the
    // monitor off nothing is hidden, as in mongod).
    node.set_parameter("ttlMonitorEnabled", false).await;
    assert_eq!(c.count_documents(doc! {}).await.unwrap(), 10);
    drop(_held);
}

#[tokio::test]
async fn explain_expiry_reports_the_monitor_limits_and_bad_input() {
    let node = TestNode::start();
    let db = node.db("app").await;
    expect_code(
        db.run_command(doc! { "explainExpiry": "sessions" }).await,
        26,
    );
    let c = node.coll("app", "sessions").await;
    c.insert_many((0..5).map(|i| doc! { "_id": i.to_string() }))
        .await
        .unwrap();
    let reply = db
        .run_command(doc! { "explainExpiry": "sessions", "limit": 2 })
        .await
        .unwrap();
    // No TTL index: nothing ever expires, and the reply says so.
    assert!(reply.get_array("ttlIndexes").unwrap().is_empty());
    assert_eq!(reply.get_array("documents").unwrap().len(), 2);
    assert!(reply.get_bool("more").unwrap());
    let monitor = reply.get_document("monitor").unwrap();
    assert!(monitor.get_bool("enabled").unwrap());
    node.set_parameter("ttlMonitorEnabled", false).await;
    let reply = db
        .run_command(doc! { "explainExpiry": "sessions" })
        .await
        .unwrap();
    assert!(
        !reply
            .get_document("monitor")
            .unwrap()
            .get_bool("enabled")
            .unwrap()
    );
    assert!(!reply.get_bool("more").unwrap());
    expect_code(
        db.run_command(doc! { "explainExpiry": "sessions", "limit": 0 })
            .await,
        2,
    );
    expect_code(
        db.run_command(doc! { "explainExpiry": "sessions", "sort": { "_id": 1 } })
            .await,
        40415,
    );
}
