//! The sweep seen from a driver: the secondary-index entries a TTL chunk
//! leaves queued (`ttl::sweep`) never reach an answer, a document stored
//! again under an expired `_id` is found exactly once, `validate` finds
//! the collection whole, and the sweep deletes the entries (here at
//! startup: the interval is set beyond the test).

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::{TestNode, create_index, eventually, ttl_index};
use ebb_actors::clock::ManualClock;
use futures::TryStreamExt;
use mongodb::bson::{Bson, DateTime, Document, doc};
use mongodb::{Collection, Database};

/// 2026-01-01T00:00:00Z: the manual clock's start.
const T0: i64 = 1_767_225_600_000;
const HOUR: i64 = 3_600_000;
const DOCS: i32 = 200;

fn node() -> TestNode {
    TestNode::start_with(
        |c| c.ttl.sweep_after = Duration::from_secs(3600),
        Some(Arc::new(ManualClock::new(T0))),
    )
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
    let mut t = node();
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

    // An expired `_id` stored again, once with its old k and once with a
    // new one: each is found once, under its own k only.
    c.insert_many(vec![
        doc! { "_id": 4, "at": DateTime::from_millis(T0 + HOUR), "k": 4, "n": 4 },
        doc! { "_id": 6, "at": DateTime::from_millis(T0 + HOUR), "k": 1, "n": 6 },
    ])
    .await
    .unwrap();
    assert_eq!(
        ids(&c, doc! { "k": 4 }, doc! { "_id": 1 }, "k_1").await,
        [4]
    );
    assert_eq!(
        ids(&c, doc! { "k": 6 }, doc! { "_id": 1 }, "k_1").await,
        Vec::<i32>::new()
    );
    let mut ones = odd_k(1);
    ones.push(6);
    ones.sort();
    assert_eq!(
        ids(&c, doc! { "k": 1 }, doc! { "_id": 1 }, "k_1").await,
        ones
    );
    let sorted = ids(&c, doc! {}, doc! { "k": 1, "n": -1 }, "k_1_n_-1").await;
    assert_eq!(sorted.len() as i64, live + 2, "each document once");
    validate(&db).await;

    // A restart sweeps what is queued.
    t.restart();
    let db = t.db("sw").await;
    let swept = eventually(Duration::from_secs(30), || async {
        scan(&db, "k_1").await == (live + 2, live + 2)
    })
    .await;
    assert!(swept, "the sweep at startup never came");
    assert_eq!(scan(&db, "k_1_n_-1").await, (live + 2, live + 2));
    validate(&db).await;
}
