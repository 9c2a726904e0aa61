//! The TTL monitor: MongoDB's parameters, passes, `metrics.ttl` counters
//! and the cases where the monitor does not run, plus ebb's prompt expiry
//! and pacing.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::common::{TestNode, eventually, expect_code};
use ebb_actors::clock::ManualClock;
use ebb_config::ParamValue;
use mongodb::bson::{Bson, DateTime, Document, doc};
use mongodb::options::IndexOptions;
use mongodb::{Collection, IndexModel};
use tokio::sync::OwnedMutexGuard;

const T0: i64 = 1_767_225_600_000;

fn at(ms: i64) -> Bson {
    Bson::DateTime(DateTime::from_millis(ms))
}

async fn ttl_index(c: &Collection<Document>, field: &str, secs: u64) {
    let o = IndexOptions::builder()
        .expire_after(Duration::from_secs(secs))
        .build();
    c.create_index(
        IndexModel::builder()
            .keys(doc! { field: 1 })
            .options(o)
            .build(),
    )
    .await
    .unwrap();
}

async fn count(c: &Collection<Document>) -> u64 {
    c.count_documents(doc! {}).await.unwrap()
}

fn manual_node(configure: impl FnOnce(&mut ebb_config::Config)) -> TestNode {
    TestNode::start_with(configure, Some(Arc::new(ManualClock::new(T0))))
}

/// A node on the manual clock, its monitor off until the test enables it,
/// whose visits delete at most 10 documents each and whose sub-passes end
/// after one round of visits.
fn node_in_visits_of_10() -> TestNode {
    node_in_visits_of_10_and(|_| {})
}

/// The same, with more of the config set by `more`.
fn node_in_visits_of_10_and(more: impl FnOnce(&mut ebb_config::Config)) -> TestNode {
    manual_node(|c| {
        set(c, "ttlIndexDeleteTargetDocs", ParamValue::Int(10));
        set(c, "ttlMonitorSubPassTargetSecs", ParamValue::Int(0));
        set(c, "ttlMonitorEnabled", ParamValue::Bool(false));
        more(c);
    })
}

fn set(config: &mut ebb_config::Config, name: &str, v: ParamValue) {
    config.set_parameter.set(name, v).unwrap();
}

async fn server_ttl(node: &TestNode) -> Document {
    node.ttl_status().await
}

/// `chunkRuns.<run>` of a `metrics.ttl` document: how many chunks the
/// writers ran that way.
fn chunk_runs(ttl: &Document, run: &str) -> i64 {
    ttl.get_document("chunkRuns").unwrap().get_i64(run).unwrap()
}

/// A full `validate` of `m.<collection>`, checked to pass.
async fn validated(node: &TestNode, collection: &str) -> Document {
    let r = node
        .db("m")
        .await
        .run_command(doc! { "validate": collection, "full": true })
        .await
        .unwrap();
    assert!(r.get_bool("valid").unwrap(), "{r}");
    r
}

#[tokio::test]
async fn parameters_have_mongodb_defaults_bounds_and_was() {
    let node = TestNode::start();
    let admin = node.db("admin").await;
    let all = admin
        .run_command(doc! { "getParameter": "*" })
        .await
        .unwrap();
    assert_eq!(all.get("ttlMonitorEnabled"), Some(&Bson::Boolean(true)));
    assert_eq!(all.get("ttlMonitorSleepSecs"), Some(&Bson::Int32(60)));
    assert_eq!(
        all.get("ttlMonitorBatchDeletes"),
        Some(&Bson::Boolean(true))
    );
    assert_eq!(
        all.get("ttlIndexDeleteTargetDocs"),
        Some(&Bson::Int32(50000))
    );
    assert_eq!(
        all.get("ttlIndexDeleteTargetTimeMS"),
        Some(&Bson::Int32(1000))
    );
    assert_eq!(
        all.get("ttlMonitorSubPassTargetSecs"),
        Some(&Bson::Int32(60))
    );
    for (name, bad, reason) in [
        ("ttlMonitorSleepSecs", -5, "-5 is not greater than 0"),
        (
            "ttlIndexDeleteTargetDocs",
            -1,
            "-1 is not greater than or equal to 0",
        ),
        (
            "ttlIndexDeleteTargetTimeMS",
            -1,
            "-1 is not greater than or equal to 0",
        ),
        (
            "ttlMonitorSubPassTargetSecs",
            -1,
            "-1 is not greater than or equal to 0",
        ),
    ] {
        let msg = expect_code(
            admin
                .run_command(doc! { "setParameter": 1, name: bad })
                .await,
            2,
        );
        assert_eq!(msg, format!("Invalid value for parameter {name}: {reason}"));
    }
    let r = admin
        .run_command(doc! { "setParameter": 1, "ttlMonitorEnabled": false })
        .await
        .unwrap();
    assert_eq!(r.get("was"), Some(&Bson::Boolean(true)));
    let r = admin
        .run_command(doc! { "setParameter": 1, "ttlIndexDeleteTargetDocs": 0 })
        .await
        .unwrap();
    assert_eq!(r.get("was"), Some(&Bson::Int32(50000)));
}

#[tokio::test]
async fn parameters_come_from_the_config_at_startup() {
    let node = TestNode::start_with(
        |c| {
            set(c, "ttlMonitorSleepSecs", ParamValue::Int(1));
            set(c, "ttlMonitorBatchDeletes", ParamValue::Bool(false));
        },
        None,
    );
    let r = node
        .db("admin")
        .await
        .run_command(
            doc! { "getParameter": 1, "ttlMonitorSleepSecs": 1, "ttlMonitorBatchDeletes": 1 },
        )
        .await
        .unwrap();
    assert_eq!(r.get("ttlMonitorSleepSecs"), Some(&Bson::Int32(1)));
    assert_eq!(r.get("ttlMonitorBatchDeletes"), Some(&Bson::Boolean(false)));
}

#[tokio::test]
async fn disabled_monitor_runs_no_pass_until_enabled_again() {
    let node = manual_node(|_| {});
    let c = node.coll("m", "c").await;
    ttl_index(&c, "at", 0).await;
    node.set_parameter("ttlMonitorEnabled", false).await;
    let passes = server_ttl(&node).await.get_i64("passes").unwrap();
    let wakeups = server_ttl(&node).await.get_i64("monitorWakeups").unwrap();
    c.insert_one(doc! { "at": at(T0 - 1000) }).await.unwrap();
    // Two wake-ups after disabling: the monitor has looked at the
    // parameter at least once more and skipped the pass.
    let woke = eventually(Duration::from_secs(10), || async {
        node.advance(Duration::from_secs(1));
        server_ttl(&node).await.get_i64("monitorWakeups").unwrap() >= wakeups + 2
    })
    .await;
    assert!(woke);
    let ttl = server_ttl(&node).await;
    assert!(
        ttl.get_i64("passes").unwrap() <= passes + 1,
        "at most the pass already running finished"
    );
    assert_eq!(count(&c).await, 1);
    node.set_parameter("ttlMonitorEnabled", true).await;
    node.ttl_pass().await;
    assert_eq!(count(&c).await, 0);
}

#[tokio::test]
async fn per_visit_targets_split_a_pass_into_sub_passes_round_robin() {
    let node = node_in_visits_of_10();
    let a = node.coll("m", "a").await;
    let b = node.coll("m", "b").await;
    ttl_index(&a, "at", 0).await;
    ttl_index(&b, "at", 0).await;
    a.insert_many((0..35).map(|_| doc! { "at": at(T0 - 1) }))
        .await
        .unwrap();
    // One live document: `a` cannot be expired whole, it goes in visits.
    a.insert_one(doc! { "at": at(T0 + 60_000) }).await.unwrap();
    b.insert_many((0..5).map(|_| doc! { "at": at(T0 - 1) }))
        .await
        .unwrap();
    let before = server_ttl(&node).await;
    node.set_parameter("ttlMonitorEnabled", true).await;
    node.ttl_pass().await;
    // Between passes: a chunk of the next pass would count as a run on the
    // writer before the monitor counts it as sent.
    let _between = node.hold_monitor().await;
    let after = server_ttl(&node).await;
    assert_eq!(count(&a).await + count(&b).await, 1);
    assert_eq!(
        after.get_i64("deletedDocuments").unwrap() - before.get_i64("deletedDocuments").unwrap(),
        40
    );
    // 35 documents at 10 per visit, one visit per sub-pass: at least 4.
    assert!(after.get_i64("subPasses").unwrap() - before.get_i64("subPasses").unwrap() >= 4);
    // Every chunk the monitor sent ran on exactly one of the writer's paths.
    let runs = |s: &Document| {
        let r = s.get_document("chunkRuns").unwrap();
        ["planned", "ahead", "onWriter"]
            .iter()
            .map(|k| r.get_i64(k).unwrap())
            .sum::<i64>()
    };
    let chunks = |s: &Document| s.get_i64("chunks").unwrap();
    assert!(chunks(&after) - chunks(&before) >= 4);
    assert_eq!(
        runs(&after) - runs(&before),
        chunks(&after) - chunks(&before)
    );
}

/// A chunk goes out `prompt` (the writer waits less for its plan) only
/// while the monitor keeps up with its index: the last chunk deleted
/// documents that had only just fallen due. It goes out `behind` (the
/// writer runs it itself instead of planning it) while the last chunk was
/// seconds late, and every chunk is still applied.
#[tokio::test]
async fn chunks_are_prompt_while_the_monitor_keeps_up_and_behind_while_it_is_seconds_late() {
    let node = node_in_visits_of_10();
    let a = node.coll("m", "a").await;
    ttl_index(&a, "at", 0).await;
    // One live document: `a` goes in visits of 10, one chunk each.
    a.insert_one(doc! { "at": at(T0 + 60_000) }).await.unwrap();
    let counts = |s: &Document| {
        let runs = s.get_document("chunkRuns").unwrap();
        let get = |k: &str| runs.get_i64(k).unwrap();
        [s.get_i64("chunks").unwrap(), get("prompt"), get("behind")]
    };
    let pass = |due: i64| {
        let (node, a) = (&node, &a);
        async move {
            node.set_parameter("ttlMonitorEnabled", false).await;
            a.insert_many((0..35).map(|_| doc! { "at": at(due) }))
                .await
                .unwrap();
            // Counters read between passes: no chunk is in flight.
            let held = node.hold_monitor().await;
            let before = counts(&server_ttl(node).await);
            drop(held);
            node.set_parameter("ttlMonitorEnabled", true).await;
            node.ttl_pass().await;
            assert_eq!(count(a).await, 1);
            let _held = node.hold_monitor().await;
            let after = counts(&server_ttl(node).await);
            (
                after[0] - before[0],
                after[1] - before[1],
                after[2] - before[2],
            )
        }
    };
    // Due 1 ms ago: every chunk after the index's first keeps up.
    let (chunks, prompt, behind) = pass(T0 - 1).await;
    assert!(chunks >= 4, "{chunks} chunks");
    assert_eq!(prompt, chunks - 1, "all but the index's first chunk");
    assert_eq!(behind, 0);
    // A backlog due an hour ago: only the chunk sent before the monitor
    // saw how late it was is prompt; every later one is behind.
    let (chunks, prompt, behind) = pass(T0 - 3_600_000).await;
    assert!(chunks >= 4, "{chunks} chunks");
    assert_eq!(prompt, 1);
    assert_eq!(behind, chunks - 1);
    // Back to documents that just fell due: prompt again after one chunk,
    // which is the last one sent behind.
    let (chunks, prompt, behind) = pass(T0 - 1).await;
    assert_eq!(prompt, chunks - 1);
    assert_eq!(behind, 1);
}

/// Under a deletion-rate limit a backlog is the operator's choice: however
/// late the monitor is, its chunks are never sent `behind`.
#[tokio::test]
async fn a_paced_monitor_never_sends_chunks_behind() {
    let node = node_in_visits_of_10_and(|c| c.ttl.max_deletes_per_sec = 1_000_000);
    let a = node.coll("m", "a").await;
    ttl_index(&a, "at", 0).await;
    a.insert_one(doc! { "at": at(T0 + 60_000) }).await.unwrap();
    a.insert_many((0..35).map(|_| doc! { "at": at(T0 - 3_600_000) }))
        .await
        .unwrap();
    node.set_parameter("ttlMonitorEnabled", true).await;
    node.ttl_pass().await;
    assert_eq!(count(&a).await, 1);
    let _held = node.hold_monitor().await;
    let s = server_ttl(&node).await;
    assert!(s.get_i64("chunks").unwrap() >= 4);
    let runs = s.get_document("chunkRuns").unwrap();
    assert_eq!(runs.get_i64("behind").unwrap(), 0);
}

#[tokio::test]
async fn a_collection_entirely_due_is_emptied_at_once_with_its_indexes() {
    let mut node = node_in_visits_of_10();
    let a = node.coll("m", "a").await;
    ttl_index(&a, "at", 0).await;
    let unique = IndexOptions::builder().unique(true).build();
    a.create_index(
        IndexModel::builder()
            .keys(doc! { "u": 1 })
            .options(unique)
            .build(),
    )
    .await
    .unwrap();
    let docs =
        |at_ms: i64| (0..35).map(move |i| doc! { "_id": i, "at": at(at_ms), "u": i, "k": i % 3 });
    a.insert_many(docs(T0 - 1)).await.unwrap();
    // A restart leaves the collection without recent foreground writes,
    // the one condition (besides every document being due) for taking it
    // whole.
    node.restart();
    let a = node.coll("m", "a").await;
    let (deleted, passes, sub_passes) = node.ttl_metrics().await;
    node.set_parameter("ttlMonitorEnabled", true).await;
    node.ttl_pass().await;
    let after = node.ttl_metrics().await;
    assert_eq!(count(&a).await, 0);
    assert_eq!(
        after.0 - deleted,
        35,
        "deletedDocuments counts every document"
    );
    // In visits of 10 the first pass alone would take 4 sub-passes; taken
    // whole it takes 2 (the second finds nothing), and a pass still running
    // may have finished one more.
    let extra = (after.2 - sub_passes) - (after.1 - passes);
    assert!(extra <= 2, "{extra} sub-passes beyond one per pass");
    // The index entries went too: the same `_id`s and unique values are
    // free again, and index scans find only the new documents.
    a.insert_many(docs(T0 + 60_000)).await.unwrap();
    assert_eq!(count(&a).await, 35);
    assert_eq!(a.count_documents(doc! { "k": 1 }).await.unwrap(), 12);
    assert_eq!(
        a.count_documents(doc! { "u": { "$gte": 30 } })
            .await
            .unwrap(),
        5
    );
}

/// Leaves the writer's 100 ms window of foreground activity (lookahead
/// runs only outside it), enables the monitor and waits for a full pass:
/// the TTL metrics before and after, and the monitor held between passes.
async fn quiet_pass(node: &TestNode) -> (Document, Document, OwnedMutexGuard<()>) {
    tokio::time::sleep(Duration::from_millis(200)).await;
    let before = server_ttl(node).await;
    node.set_parameter("ttlMonitorEnabled", true).await;
    node.ttl_pass().await;
    let held = node.hold_monitor().await;
    (before, server_ttl(node).await, held)
}

/// A visit that ends at its target leaves the plan of its next chunk to
/// the next visit, which starts from the floor where that plan resumes:
/// visits of 100 documents still run on plans made ahead, and every due
/// document goes with all its entries, counted once.
#[tokio::test]
async fn the_next_visit_takes_the_plan_made_ahead_in_the_last() {
    let node = manual_node(|c| {
        set(c, "ttlIndexDeleteTargetDocs", ParamValue::Int(100));
        set(c, "ttlMonitorEnabled", ParamValue::Bool(false));
    });
    let c = node.coll("m", "visits").await;
    ttl_index(&c, "at", 0).await;
    c.create_index(IndexModel::builder().keys(doc! { "k": 1 }).build())
        .await
        .unwrap();
    let due = 1_000;
    c.insert_many(
        (0..due).map(|i| doc! { "_id": i, "at": at(T0 - 500 - i64::from(i)), "k": i % 7 }),
    )
    .await
    .unwrap();
    // One document not due keeps the collection from going whole.
    c.insert_one(doc! { "_id": -1, "at": at(T0 + 3_600_000), "k": 1 })
        .await
        .unwrap();
    let (before, after, _between) = quiet_pass(&node).await;
    let delta = |k: &str| after.get_i64(k).unwrap() - before.get_i64(k).unwrap();
    assert_eq!(delta("deletedDocuments"), i64::from(due));
    assert_eq!(count(&c).await, 1);
    let ahead = |s: &Document| chunk_runs(s, "ahead");
    // Ten visits of one chunk each: all but the first and the last (whose
    // plan found nothing after it) can run on the plan the visit before
    // made (none did before visits could share them). A plan late on a
    // starved machine pauses lookahead for a second, so only one is asked.
    assert!(
        ahead(&after) > ahead(&before),
        "{} of {} chunks ran on a plan made ahead",
        ahead(&after) - ahead(&before),
        delta("chunks")
    );
    validated(&node, "visits").await;
}

/// A visit's target that the first, small chunks do not divide leaves a
/// remainder; the plan made while it commits is sized for the next visit's
/// first chunk, so from then on every visit is one chunk at the target,
/// planned ahead. Planned at the remainder's size instead, each visit took
/// the remainder and left the rest as another remainder: eight chunks,
/// five on the writer.
#[tokio::test]
async fn plans_made_ahead_are_sized_for_the_chunk_the_monitor_sends_next() {
    let node = manual_node(|c| {
        set(c, "ttlIndexDeleteTargetDocs", ParamValue::Int(1_500));
        set(c, "ttlMonitorEnabled", ParamValue::Bool(false));
    });
    let c = node.coll("m", "sized").await;
    ttl_index(&c, "at", 0).await;
    let due = 6_000;
    c.insert_many((0..due).map(|i| doc! { "_id": i, "at": at(T0 - 500 - i64::from(i)) }))
        .await
        .unwrap();
    // One document not due keeps the collection from going whole.
    c.insert_one(doc! { "_id": -1, "at": at(T0 + 3_600_000) })
        .await
        .unwrap();
    let (before, after, _between) = quiet_pass(&node).await;
    let delta = |k: &str| after.get_i64(k).unwrap() - before.get_i64(k).unwrap();
    let runs = |k: &str| chunk_runs(&after, k) - chunk_runs(&before, k);
    assert_eq!(delta("deletedDocuments"), i64::from(due));
    assert_eq!(count(&c).await, 1);
    // The first visit grows from 1,024 and leaves 476; then three visits
    // of 1,500. A late plan is made again on the writer at the same size.
    // The first pass deletes them all (the clock stands still); each pass
    // after it sends one chunk that finds nothing.
    let empty = delta("passes") - 1;
    assert_eq!(
        delta("chunks") - empty,
        5,
        "chunks of 1024, 476, 1500, 1500, 1500: {after}"
    );
    if runs("overduePlans") == 0 {
        assert_eq!(runs("ahead"), 3, "every visit after the first");
    }
    validated(&node, "sized").await;
}

/// While foreground writes go on, the plan of each chunk's successor is
/// made while the chunk commits and used when nothing was written in
/// between: the due documents go with every index entry, and every
/// document written meanwhile stays with all of its.
#[tokio::test]
async fn chunks_planned_ahead_under_foreground_writes_delete_only_due_documents() {
    let node = manual_node(|c| set(c, "ttlMonitorEnabled", ParamValue::Bool(false)));
    let c = node.coll("m", "fg").await;
    ttl_index(&c, "at", 0).await;
    c.create_index(IndexModel::builder().keys(doc! { "k": 1 }).build())
        .await
        .unwrap();
    // Enough chunks at the largest foreground size for several to find
    // their successor planned with no write in between.
    let due = 12_000;
    // Due half a second ago (the manual clock stands still): a backlog,
    // whose chunks are not `prompt`, so their plans get the full patience
    // even on a loaded test machine, but not one seconds late, whose
    // chunks would run on the writer unplanned (`behind`).
    c.insert_many((0..due).map(|i| doc! { "_id": i, "at": at(T0 - 500), "k": i % 7 }))
        .await
        .unwrap();
    // A client keeps foreground writes active for the whole pass: one
    // every 10 ms, well inside the writer's 100 ms window of activity. A
    // plan made ahead is used only if no write came in between, which a
    // client writing back to back leaves to chance (it failed about one
    // run in five).
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (c, stop) = (c.clone(), stop.clone());
        tokio::spawn(async move {
            let mut n = 0;
            while !stop.load(Ordering::SeqCst) {
                let live = doc! { "_id": due + n, "at": at(T0 + 3_600_000), "k": n % 7 };
                c.insert_one(live).await.unwrap();
                n += 1;
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            n
        })
    };
    let before = server_ttl(&node).await;
    node.set_parameter("ttlMonitorEnabled", true).await;
    node.ttl_pass().await;
    stop.store(true, Ordering::SeqCst);
    let live = writer.await.unwrap();
    let after = server_ttl(&node).await;
    let delta = |k: &str| after.get_i64(k).unwrap() - before.get_i64(k).unwrap();
    assert_eq!(delta("deletedDocuments"), i64::from(due));
    let ahead = |s: &Document| chunk_runs(s, "ahead");
    assert!(
        ahead(&after) > ahead(&before),
        "no chunk used a plan made ahead"
    );
    let r = validated(&node, "fg").await;
    assert_eq!(r.get_i64("nrecords").unwrap(), i64::from(live));
    let keys = r.get_document("keysPerIndex").unwrap();
    for index in ["_id_", "at_1", "k_1"] {
        assert_eq!(keys.get_i64(index).unwrap(), i64::from(live), "{index}");
    }
}

#[tokio::test]
async fn without_batch_deletes_one_visit_deletes_everything() {
    let node = manual_node(|c| {
        set(c, "ttlIndexDeleteTargetDocs", ParamValue::Int(10));
        set(c, "ttlMonitorSubPassTargetSecs", ParamValue::Int(0));
        set(c, "ttlMonitorBatchDeletes", ParamValue::Bool(false));
        set(c, "ttlMonitorEnabled", ParamValue::Bool(false));
    });
    let a = node.coll("m", "a").await;
    ttl_index(&a, "at", 0).await;
    a.insert_many((0..3000).map(|_| doc! { "at": at(T0 - 1) }))
        .await
        .unwrap();
    let before = server_ttl(&node).await;
    node.set_parameter("ttlMonitorEnabled", true).await;
    node.ttl_pass().await;
    let after = server_ttl(&node).await;
    assert_eq!(count(&a).await, 0);
    let passes = after.get_i64("passes").unwrap() - before.get_i64("passes").unwrap();
    let sub_passes = after.get_i64("subPasses").unwrap() - before.get_i64("subPasses").unwrap();
    assert_eq!(passes, sub_passes, "every pass is a single sub-pass");
}

#[tokio::test]
async fn explain_of_a_multi_delete_shows_batched_delete() {
    let node = TestNode::start();
    let db = node.db("m").await;
    db.collection::<Document>("c")
        .insert_one(doc! { "a": 1 })
        .await
        .unwrap();
    let stage = |e: Document| {
        e.get_document("queryPlanner")
            .unwrap()
            .get_document("winningPlan")
            .unwrap()
            .get_str("stage")
            .unwrap()
            .to_owned()
    };
    let many = db
        .run_command(
            doc! { "explain": { "delete": "c", "deletes": [{ "q": { "a": 1 }, "limit": 0 }] } },
        )
        .await
        .unwrap();
    assert_eq!(stage(many), "BATCHED_DELETE");
    let one = db
        .run_command(
            doc! { "explain": { "delete": "c", "deletes": [{ "q": { "a": 1 }, "limit": 1 }] } },
        )
        .await
        .unwrap();
    assert_eq!(stage(one), "DELETE");
    node.set_parameter("ttlMonitorBatchDeletes", false).await;
    let unbatched = db
        .run_command(
            doc! { "explain": { "delete": "c", "deletes": [{ "q": { "a": 1 }, "limit": 0 }] } },
        )
        .await
        .unwrap();
    assert_eq!(stage(unbatched), "DELETE");
}

#[tokio::test]
async fn current_op_shows_a_ttl_delete_while_it_runs() {
    let node = TestNode::start_with(
        |c| {
            c.ttl.max_deletes_per_sec = 1000;
            set(c, "ttlMonitorEnabled", ParamValue::Bool(false));
        },
        None,
    );
    let c = node.coll("m", "slow").await;
    ttl_index(&c, "at", 0).await;
    c.insert_many((0..4000).map(|_| doc! { "at": DateTime::from_millis(0) }))
        .await
        .unwrap();
    node.set_parameter("ttlMonitorEnabled", true).await;
    let admin = node.db("admin").await;
    let deadline = Instant::now() + Duration::from_secs(20);
    let op = loop {
        let r = admin.run_command(doc! { "currentOp": 1 }).await.unwrap();
        let ops = r.get_array("inprog").unwrap();
        let ttl = ops
            .iter()
            .filter_map(|o| o.as_document())
            .find(|o| o.get_str("desc").ok() == Some("TTLMonitor"));
        if let Some(op) = ttl {
            break op.clone();
        }
        assert!(Instant::now() < deadline, "no TTL operation in currentOp");
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    assert_eq!(op.get_str("ns").unwrap(), "m.slow");
    assert_eq!(op.get_str("op").unwrap(), "remove");
    assert!(op.get_bool("active").unwrap());
}

#[tokio::test]
async fn a_runtime_sleep_change_wakes_a_sleeping_monitor() {
    let node = TestNode::start_with(
        |c| {
            c.ttl.prompt = false;
            // What is stored, not what readers see, tells when it ran.
            c.ttl.hide_expired = false;
            set(c, "ttlMonitorSleepSecs", ParamValue::Int(3600));
        },
        None,
    );
    let c = node.coll("m", "c").await;
    let passes = || async { server_ttl(&node).await.get_i64("passes").unwrap() };
    // Let the start-up pass go by, then the one a new TTL index wakes the
    // monitor for (counting from before the index, not from start-up).
    assert!(eventually(Duration::from_secs(10), || async { passes().await >= 1 }).await);
    let before_index = passes().await;
    ttl_index(&c, "at", 0).await;
    let settled = eventually(Duration::from_secs(10), || async {
        passes().await > before_index
    })
    .await;
    assert!(settled);
    c.insert_one(doc! { "at": DateTime::from_millis(0) })
        .await
        .unwrap();
    assert_eq!(
        count(&c).await,
        1,
        "no prompt wake-up: MongoDB's fixed interval"
    );
    node.set_parameter("ttlMonitorSleepSecs", 1).await;
    let gone = eventually(Duration::from_secs(10), || async { count(&c).await == 0 }).await;
    assert!(gone, "the shorter sleep took effect at once");
}

/// Prompt expiry: with ttlMonitorSleepSecs at its default 60, a document
/// due at T is deleted by T + 250 ms. (The 100 ms target is measured by the
/// benchmark harness; this bound leaves room for a loaded CI machine.)
/// Hiding is off so the count sees what is stored, not what reads hide.
#[tokio::test]
async fn documents_are_gone_within_250_ms_of_their_due_time() {
    let node = TestNode::start_with(|c| c.ttl.hide_expired = false, None);
    let c = node.coll("m", "prompt").await;
    ttl_index(&c, "expireAt", 0).await;
    for round in 0..3 {
        let due = DateTime::now().timestamp_millis() + 700;
        c.insert_one(doc! { "_id": round, "expireAt": DateTime::from_millis(due) })
            .await
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(5);
        let gone_at = loop {
            // The server counted somewhere between `now` and `after`: a
            // document still there at `now` bounds the lag from below, one
            // gone by `after` bounds the deletion time from above.
            let now = DateTime::now().timestamp_millis();
            let left = c.count_documents(doc! { "_id": round }).await.unwrap();
            let after = DateTime::now().timestamp_millis();
            if left == 0 {
                break after;
            }
            assert!(
                now < due + 250,
                "round {round}: still present {} ms after its due time",
                now - due
            );
            assert!(Instant::now() < deadline, "round {round}: never expired");
            tokio::time::sleep(Duration::from_millis(5)).await;
        };
        assert!(
            gone_at >= due,
            "round {round}: deleted {} ms before its due time",
            due - gone_at
        );
    }
}

/// Pacing: `ttl.max_deletes_per_sec` bounds the monitor's delete rate.
#[tokio::test]
async fn max_deletes_per_sec_paces_a_mass_expiry() {
    let mut node = TestNode::start_with(
        |c| {
            c.ttl.max_deletes_per_sec = 2000;
            // The pace shows in what is stored, not in what readers see.
            c.ttl.hide_expired = false;
            set(c, "ttlMonitorEnabled", ParamValue::Bool(false));
        },
        None,
    );
    let c = node.coll("m", "paced").await;
    ttl_index(&c, "at", 0).await;
    c.insert_many((0..4000).map(|_| doc! { "at": DateTime::from_millis(0) }))
        .await
        .unwrap();
    // After a restart nothing but the rate keeps the collection, all of it
    // due, from being expired whole at once.
    node.restart();
    let c = node.coll("m", "paced").await;
    let started = Instant::now();
    node.set_parameter("ttlMonitorEnabled", true).await;
    let gone = eventually(Duration::from_secs(30), || async { count(&c).await == 0 }).await;
    assert!(gone);
    // 4000 deletions at 2000/s take at least ~1.9 s (100 ms of burst credit).
    assert!(
        started.elapsed() >= Duration::from_millis(1800),
        "took only {:?}",
        started.elapsed()
    );
}

/// Under a deletion rate, a new TTL index that makes a collection due does
/// not delete it in its build: the due documents are indexed, hidden, and
/// go at the monitor's pace.
#[tokio::test]
async fn a_new_ttl_index_leaves_its_due_documents_to_the_paced_monitor() {
    let node = TestNode::start_with(|c| c.ttl.max_deletes_per_sec = 2000, None);
    let c = node.coll("m", "built").await;
    c.insert_many((0..4000).map(|_| doc! { "at": DateTime::from_millis(0) }))
        .await
        .unwrap();
    let started = Instant::now();
    ttl_index(&c, "at", 0).await;
    assert_eq!(count(&c).await, 0, "due, so hidden at once");
    let gone = eventually(Duration::from_secs(30), || async {
        validated(&node, "built").await.get_i64("nrecords").unwrap() == 0
    })
    .await;
    assert!(gone);
    // Deleted in the build, they would all be gone as it returns.
    assert!(
        started.elapsed() >= Duration::from_millis(1800),
        "4000 at 2000/s took only {:?}",
        started.elapsed()
    );
}

/// A standalone that finds documents in local.system.replset at startup
/// never starts the monitor, as mongod ("The TTL collection monitor will
/// not start because of this"; ttl_repl_maintenance.js).
#[tokio::test]
async fn former_replica_set_member_never_starts_the_monitor() {
    let mut node = TestNode::start();
    let c = node.coll("m", "c").await;
    ttl_index(&c, "at", 0).await;
    node.coll("local", "system.replset")
        .await
        .insert_one(doc! { "_id": "rs0", "members": [] })
        .await
        .unwrap();
    node.restart();
    let c = node.coll("m", "c").await;
    c.insert_one(doc! { "at": DateTime::from_millis(0) })
        .await
        .unwrap();
    let ttl = server_ttl(&node).await;
    assert!(!ttl.get_bool("monitorRunning").unwrap());
    assert_eq!(ttl.get_i64("passes").unwrap(), 0);
    assert_eq!(count(&c).await, 1);
    // Removing the document takes a restart to matter, as in MongoDB.
    node.coll("local", "system.replset")
        .await
        .delete_many(doc! {})
        .await
        .unwrap();
    assert!(!server_ttl(&node).await.get_bool("monitorRunning").unwrap());
    node.restart();
    let c = node.coll("m", "c").await;
    let gone = eventually(Duration::from_secs(10), || async { count(&c).await == 0 }).await;
    assert!(gone);
}

/// An error on one index is logged and the pass goes on to the others.
#[tokio::test]
async fn a_failing_index_does_not_stop_the_pass() {
    let node = manual_node(|c| {
        // What the pass deleted shows in what is stored.
        c.ttl.hide_expired = false;
        set(c, "ttlMonitorEnabled", ParamValue::Bool(false));
    });
    let broken = node.coll("m", "broken").await;
    let healthy = node.coll("m", "healthy").await;
    ttl_index(&broken, "at", 0).await;
    ttl_index(&healthy, "at", 0).await;
    broken.insert_one(doc! { "at": at(T0 - 1) }).await.unwrap();
    healthy.insert_one(doc! { "at": at(T0 - 1) }).await.unwrap();
    // Break the first collection's TTL index underneath the catalog: its
    // column family disappears, so every scan of it fails in the engine.
    let ctx = node.node().context().clone();
    let state = ctx.view.load();
    let meta = &state.get("m", "broken").unwrap().coll.meta;
    let cf = meta.index("at_1").unwrap().id;
    ctx.shared
        .engine
        .drop_cf(ebb_storage::engine::Cf::Id(cf))
        .unwrap();
    node.set_parameter("ttlMonitorEnabled", true).await;
    node.ttl_pass().await;
    assert_eq!(
        count(&healthy).await,
        0,
        "the healthy index expired despite the failing one"
    );
    assert_eq!(count(&broken).await, 1);
}
