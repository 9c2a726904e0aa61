//! Expiry past its capacity (`ttl.overload`): a backlog drains once the
//! inflow stops and leaves nothing queued for the sweep; under
//! `"throttle"`, chunks of a late index make its collection's writes wait,
//! and stop once expiry is on time again.

use std::time::Duration;

use crate::common::{TestNode, create_index, eventually, ttl_index};
use ebb_config::{Overload, ParamValue};
use mongodb::Collection;
use mongodb::bson::{DateTime, Document, doc};

const HOUR_MS: i64 = 3_600_000;

/// A node whose monitor waits for the test to enable it.
fn node(overload: Overload) -> TestNode {
    TestNode::start_with(
        |c| {
            c.ttl.overload = overload;
            c.ttl.sweep_after = Duration::from_millis(100);
            // What is stored shows the backlog; readers would not see it.
            c.ttl.hide_expired = false;
            c.set_parameter
                .set("ttlMonitorEnabled", ParamValue::Bool(false))
                .unwrap();
        },
        None,
    )
}

fn run(ttl: &Document, name: &str) -> i64 {
    ttl.get_document("chunkRuns")
        .unwrap()
        .get_i64(name)
        .unwrap()
}

/// A collection with a TTL index (due at its date) and a plain index,
/// holding `due` documents dated an hour ago and `live` dated a day ahead.
async fn backlog(node: &TestNode, due: i32, live: i32) -> Collection<Document> {
    let c = node.coll("o", "events").await;
    ttl_index(&c, doc! { "at": 1 }, 0, None).await;
    create_index(&c, doc! { "k": 1 }).await;
    let now = DateTime::now().timestamp_millis();
    let docs = (0..due + live).map(|i| {
        let at = if i < due {
            now - HOUR_MS
        } else {
            now + 24 * HOUR_MS
        };
        doc! { "_id": i, "at": DateTime::from_millis(at), "k": i % 97 }
    });
    c.insert_many(docs.collect::<Vec<_>>()).await.unwrap();
    c
}

/// Inserts live documents one small batch at a time until `stop` is set:
/// foreground writes the chunks must share the writer with.
fn inflow(c: &Collection<Document>) -> tokio::sync::oneshot::Sender<()> {
    let (stop, mut stopped) = tokio::sync::oneshot::channel::<()>();
    let c = c.clone();
    tokio::spawn(async move {
        let later = DateTime::from_millis(DateTime::now().timestamp_millis() + 24 * HOUR_MS);
        let mut next = 1_000_000;
        while stopped.try_recv().is_err() {
            let docs = (next..next + 20).map(|i| doc! { "_id": i, "at": later, "k": i % 97 });
            c.insert_many(docs.collect::<Vec<_>>()).await.unwrap();
            next += 20;
        }
    });
    stop
}

#[tokio::test]
async fn a_backlog_drains_once_the_inflow_stops_and_leaves_nothing_for_the_sweep() {
    let node = node(Overload::Backlog);
    let c = backlog(&node, 30_000, 100).await;
    let stop = inflow(&c);
    node.set_parameter("ttlMonitorEnabled", true).await;
    let due = doc! { "at": { "$lt": DateTime::now() } };
    let draining = eventually(Duration::from_secs(60), || async {
        c.count_documents(due.clone()).await.unwrap() < 30_000
    })
    .await;
    assert!(draining, "expiry made no progress beside the writes");
    stop.send(()).unwrap();
    let drained = eventually(Duration::from_secs(60), || async {
        c.count_documents(due.clone()).await.unwrap() == 0
    })
    .await;
    assert!(drained, "the backlog never drained");
    // The plain index's entries went through the sweep, and none is left.
    let swept = eventually(Duration::from_secs(30), || async {
        node.ttl_status().await.get_i64("sweptEntries").unwrap() >= 30_000
    })
    .await;
    assert!(swept, "{:?}", node.ttl_status().await);
    let report = node
        .db("o")
        .await
        .run_command(doc! { "validate": "events", "full": true })
        .await
        .unwrap();
    assert!(report.get_bool("valid").unwrap(), "{report}");
    assert_eq!(
        run(&node.ttl_status().await, "throttled"),
        0,
        "not asked for"
    );
}

#[tokio::test]
async fn throttle_engages_while_expiry_is_late_and_releases_once_it_is_on_time() {
    let node = node(Overload::Throttle);
    let c = backlog(&node, 20_000, 1).await;
    let stop = inflow(&c);
    node.set_parameter("ttlMonitorEnabled", true).await;
    // Documents an hour late: every chunk after the first throttles the
    // writes beside it.
    let drained = eventually(Duration::from_secs(60), || async {
        let due = doc! { "at": { "$lt": DateTime::now() } };
        c.count_documents(due).await.unwrap() == 0
    })
    .await;
    assert!(drained, "the backlog never drained");
    stop.send(()).unwrap();
    let engaged = node.ttl_status().await;
    assert!(run(&engaged, "throttled") > 0, "{engaged:?}");
    assert!(
        engaged.get_i64("throttleMicros").unwrap() > 0,
        "{engaged:?}"
    );
    // Documents deleted as they fall due: the chunk after an on-time one
    // throttles nothing. One late round (a busy machine) may throttle its
    // next chunk again, but not every round's.
    let before = run(&node.ttl_status().await, "throttled");
    for round in 0..4 {
        let at = DateTime::from_millis(DateTime::now().timestamp_millis() + 200);
        c.insert_one(doc! { "_id": format!("r{round}"), "at": at, "k": 0 })
            .await
            .unwrap();
        let gone = eventually(Duration::from_secs(10), || async {
            c.count_documents(doc! { "_id": format!("r{round}") })
                .await
                .unwrap()
                == 0
        })
        .await;
        assert!(gone, "round {round} never expired");
    }
    let after = run(&node.ttl_status().await, "throttled");
    assert!(after - before < 4, "still throttling: {before} -> {after}");
}
