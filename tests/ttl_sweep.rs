//! The sweep seen from a driver: the secondary-index entries a TTL chunk
//! leaves queued (`ttl::sweep`) never reach an answer, a document stored
//! again under an expired `_id` is found exactly once, `validate` finds
//! the collection whole, and the sweep deletes the entries: at startup,
//! and once they have waited `ttl.sweep_after`.

use std::sync::Arc;
use std::time::Duration;

use crate::common::{TestNode, create_index, eventually, ttl_index};
use ebb_actors::clock::ManualClock;
use futures::TryStreamExt;
use mongodb::bson::{Bson, DateTime, Document, doc};
use mongodb::{Collection, Database};

/// 2026-01-01T00:00:00Z: the manual clock's start.
const T0: i64 = 1_767_225_600_000;
const HOUR: i64 = 3_600_000;
const DOCS: i32 = 200;

fn node_sweeping_after(after: Duration) -> TestNode {
    TestNode::start_with(
        |c| c.ttl.sweep_after = after,
        Some(Arc::new(ManualClock::new(T0))),
    )
}

/// `serverStatus.metrics.ttl.sweptEntries`.
async fn swept(t: &TestNode) -> i64 {
    let status = t
        .db("admin")
        .await
        .run_command(doc! { "serverStatus": 1 })
        .await
        .unwrap();
    let ttl = status
        .get_document("metrics")
        .unwrap()
        .get_document("ttl")
        .unwrap();
    ttl.get_i64("sweptEntries").unwrap()
}

/// Keys a full scan of index `hint` examines, and documents it returns.
async fn scan(db: &Database, hint: &str) -> (i64, i64) {
    let e = db
        .run_command(doc! {
            "explain": { "find": "s", "filter": {}, "hint": hint },
            "verbosity": "executionStats",
        })
        .await
        .unwrap();
    let s = e.get_document("executionStats").unwrap();
    (
        s.get_i64("totalKeysExamined").unwrap(),
        s.get_i64("nReturned").unwrap(),
    )
}

async fn ids(c: &Collection<Document>, filter: Document, sort: Document, hint: &str) -> Vec<i32> {
    let docs: Vec<Document> = c
        .find(filter)
        .sort(sort)
        .hint(mongodb::options::Hint::Name(hint.into()))
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    docs.iter().map(|d| d.get_i32("_id").unwrap()).collect()
}

async fn validate(db: &Database) -> Document {
    let report = db
        .run_command(doc! { "validate": "s", "full": true })
        .await
        .unwrap();
    assert!(report.get_bool("valid").unwrap(), "{report}");
    report
}

#[tokio::test]
async fn entries_waiting_for_the_sweep_reach_no_reader() {
    // Longer than the test: only the startup sweep runs.
    let mut t = node_sweeping_after(Duration::from_secs(3600));
    let db = t.db("sw").await;
    let c: Collection<Document> = db.collection("s");
    ttl_index(&c, doc! { "at": 1 }, 0, None).await;
    create_index(&c, doc! { "k": 1 }).await;
    create_index(&c, doc! { "k": 1, "n": -1 }).await;
    // Even `_id`s are due, odd ones live.
    let docs: Vec<Document> = (0..DOCS)
        .map(|i| {
            let at = if i % 2 == 0 { T0 - HOUR } else { T0 + HOUR };
            doc! { "_id": i, "at": DateTime::from_millis(at), "k": i % 10, "n": i }
        })
        .collect();
    c.insert_many(docs).await.unwrap();
    t.ttl_pass().await;
    let live = DOCS as i64 / 2;
    assert_eq!(c.count_documents(doc! {}).await.unwrap() as i64, live);
    assert_eq!(swept(&t).await, 0);

    // The expired documents' k entries are still there, passed over.
    assert_eq!(scan(&db, "k_1").await, (DOCS as i64, live));
    assert_eq!(scan(&db, "k_1_n_-1").await, (DOCS as i64, live));
    assert_eq!(
        scan(&db, "at_1").await,
        (live, live),
        "TTL entries go at once"
    );
    let odd_k = |k: i32| {
        (0..DOCS)
            .filter(|i| i % 2 == 1 && i % 10 == k)
            .collect::<Vec<_>>()
    };
    assert_eq!(
        ids(&c, doc! { "k": 3 }, doc! { "_id": 1 }, "k_1").await,
        odd_k(3)
    );
    assert!(
        ids(&c, doc! { "k": 4 }, doc! { "_id": 1 }, "k_1")
            .await
            .is_empty(),
        "k = 4 only ever held due documents"
    );
    let sorted = ids(&c, doc! {}, doc! { "k": 1, "n": -1 }, "k_1_n_-1").await;
    assert_eq!(sorted.len() as i64, live);
    assert_eq!(
        c.count_documents(doc! { "k": { "$gte": 0 } })
            .await
            .unwrap() as i64,
        live
    );
    let mut distinct: Vec<Bson> = c.distinct("k", doc! {}).await.unwrap();
    distinct.sort_by_key(|b| b.as_i32());
    assert_eq!(distinct, [1, 3, 5, 7, 9].map(Bson::Int32));
    let grouped: Vec<Document> = c
        .aggregate(vec![
            doc! { "$match": { "k": { "$gte": 0 } } },
            doc! { "$group": { "_id": null, "n": { "$sum": 1 } } },
        ])
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    assert_eq!(grouped[0].get_i32("n").unwrap() as i64, live);
    let report = validate(&db).await;
    let per_index = report.get_document("keysPerIndex").unwrap();
    assert_eq!(per_index.get_i64("k_1").unwrap(), live);

    // A restart sweeps what is queued.
    t.restart();
    let db = t.db("sw").await;
    let c: Collection<Document> = db.collection("s");
    // The sweep deletes in family order: wait for both indexes.
    let startup = eventually(Duration::from_secs(30), || async {
        scan(&db, "k_1").await == (live, live) && scan(&db, "k_1_n_-1").await == (live, live)
    })
    .await;
    assert!(startup, "the sweep at startup never came");
    validate(&db).await;

    // Expire documents 0 and 2 again, then store their `_id`s once more,
    // 0 with its old k and 2 with a new one: each is found once, under
    // its own k only.
    let dated = |id: i32, at: i64, k: i32| doc! { "_id": id, "at": DateTime::from_millis(at), "k": k, "n": id };
    c.insert_many(vec![dated(0, T0 - HOUR, 0), dated(2, T0 - HOUR, 2)])
        .await
        .unwrap();
    t.ttl_pass().await;
    assert_eq!(scan(&db, "k_1").await, (live + 2, live));
    c.insert_many(vec![dated(0, T0 + HOUR, 0), dated(2, T0 + HOUR, 1)])
        .await
        .unwrap();
    assert_eq!(
        ids(&c, doc! { "k": 0 }, doc! { "_id": 1 }, "k_1").await,
        [0]
    );
    assert_eq!(
        ids(&c, doc! { "k": 2 }, doc! { "_id": 1 }, "k_1").await,
        Vec::<i32>::new()
    );
    let mut ones = odd_k(1);
    ones.push(2);
    ones.sort();
    assert_eq!(
        ids(&c, doc! { "k": 1 }, doc! { "_id": 1 }, "k_1").await,
        ones
    );
    let sorted = ids(&c, doc! {}, doc! { "k": 1, "n": -1 }, "k_1_n_-1").await;
    assert_eq!(sorted.len() as i64, live + 2, "each document once");
    // The writer swept before storing them: only their own entries remain.
    assert_eq!(scan(&db, "k_1").await, (live + 2, live + 2));
    validate(&db).await;
}

#[tokio::test]
async fn queued_entries_are_swept_once_they_have_waited() {
    let t = node_sweeping_after(Duration::from_millis(100));
    let db = t.db("sw").await;
    let c: Collection<Document> = db.collection("s");
    ttl_index(&c, doc! { "at": 1 }, 0, None).await;
    create_index(&c, doc! { "k": 1 }).await;
    create_index(&c, doc! { "u": 1 }).await;
    let docs =
        (0..10).map(|i| doc! { "_id": i, "at": DateTime::from_millis(T0 - HOUR), "k": i, "u": i });
    c.insert_many(docs).await.unwrap();
    t.ttl_pass().await;
    assert_eq!(c.count_documents(doc! {}).await.unwrap(), 0);
    let done = eventually(Duration::from_secs(30), || async { swept(&t).await == 20 }).await;
    assert!(done, "swept {} of 20 entries", swept(&t).await);
    assert_eq!(scan(&db, "k_1").await, (0, 0));
    assert_eq!(scan(&db, "u_1").await, (0, 0));
    validate(&db).await;
}
