//! Covered queries, as mongod plans them: a find whose filter, sort and
//! projection need nothing but an index's key fields (`_id` excluded
//! unless it is one) is answered from the index (`PROJECTION_COVERED`
//! over `IXSCAN`, no `FETCH`, no document examined), with every value in
//! its stored type; an entry the key cannot answer for (an array along a
//! key path) has its document read; due documents stay hidden.

use std::sync::Arc;
use std::time::Duration;

use futures::TryStreamExt;
use mongodb::bson::{Bson, DateTime, Document, doc};
use mongodb::options::Hint;
use mongodb::{Collection, Database};

use crate::common::{TestNode, create_index, ttl_index};

/// Runs a find and returns its documents in order.
async fn found(
    c: &Collection<Document>,
    filter: Document,
    projection: Document,
    sort: Document,
    hint: Option<Document>,
) -> Vec<Document> {
    let mut find = c.find(filter).projection(projection).sort(sort);
    if let Some(h) = hint {
        find = find.hint(Hint::Keys(h));
    }
    find.await.unwrap().try_collect().await.unwrap()
}

/// `explain` of a find at executionStats: (its winning plan, its
/// execution stats).
async fn explain(db: &Database, find: Document) -> (Document, Document) {
    let r = db
        .run_command(doc! { "explain": find, "verbosity": "executionStats" })
        .await
        .unwrap();
    let plan = r
        .get_document("queryPlanner")
        .unwrap()
        .get_document("winningPlan")
        .unwrap()
        .clone();
    (plan, r.get_document("executionStats").unwrap().clone())
}

fn stages(plan: &Document) -> Vec<String> {
    let mut out = vec![plan.get_str("stage").unwrap().to_owned()];
    if let Ok(inner) = plan.get_document("inputStage") {
        out.extend(stages(inner));
    }
    out
}

/// Values of every type an index keeps, and some it does not.
fn mixed() -> Vec<Document> {
    let values: Vec<Bson> = vec![
        Bson::Int32(5),
        Bson::Int64(5),
        Bson::Double(5.0),
        Bson::Double(2.5),
        Bson::Int64(9_007_199_254_740_993),
        Bson::String("five".into()),
        Bson::DateTime(DateTime::from_millis(5)),
        Bson::Boolean(true),
        Bson::Null,
        Bson::ObjectId(mongodb::bson::oid::ObjectId::from_bytes([5; 12])),
    ];
    let mut docs = Vec::new();
    for (i, v) in values.iter().enumerate() {
        docs.push(
            doc! { "_id": i as i32, "a": v.clone(), "b": i as i32 * 10, "c": "not in the key" },
        );
    }
    // No `b`; `b` a double; `a` an array (an entry per element).
    docs.push(doc! { "_id": 20, "a": 7 });
    docs.push(doc! { "_id": 21, "a": 8, "b": -0.5 });
    docs.push(doc! { "_id": 22, "a": [1, 2], "b": 3 });
    docs
}

#[tokio::test]
async fn a_find_of_key_fields_alone_is_answered_from_the_index_in_stored_types() {
    let node = TestNode::start();
    let db = node.db("covered").await;
    let c = db.collection::<Document>("mixed");
    c.insert_many(mixed()).await.unwrap();
    create_index(&c, doc! { "a": 1, "b": -1 }).await;
    // The whole index, hinted: every document has an entry.
    let filter = doc! {};
    let hint = doc! { "a": 1, "b": -1 };
    let projection = doc! { "a": 1, "b": 1, "_id": 0 };
    let sort = doc! { "a": 1, "b": -1 };
    let from_index = found(
        &c,
        filter.clone(),
        projection.clone(),
        sort.clone(),
        Some(hint.clone()),
    )
    .await;
    let from_records = found(
        &c,
        filter.clone(),
        projection.clone(),
        sort.clone(),
        Some(doc! { "$natural": 1 }),
    )
    .await;
    // Bson's equality tells 5 from 5i64 from 5.0.
    assert_eq!(from_index, from_records);
    assert!(
        from_index
            .iter()
            .any(|d| d.get("a") == Some(&Bson::Int64(5)))
    );
    assert!(
        from_index
            .iter()
            .any(|d| d.get("a") == Some(&Bson::Double(5.0)))
    );
    assert!(
        from_index.iter().any(|d| d == &doc! { "a": 7 }),
        "a missing b stays missing"
    );

    let find = doc! {
        "find": "mixed", "filter": filter.clone(), "projection": projection.clone(), "hint": hint.clone(),
    };
    let (plan, stats) = explain(&db, find.clone()).await;
    assert_eq!(stages(&plan), ["PROJECTION_COVERED", "IXSCAN"], "{plan}");
    // The array's first entry reads its document; no other is read.
    assert_eq!(stats.get_i64("totalDocsExamined").unwrap(), 1, "{stats}");
    assert_eq!(stats.get_i64("nReturned").unwrap(), from_index.len() as i64);

    // A type changed in place: the entry keeps its key and takes the new type.
    c.update_one(doc! { "_id": 0 }, doc! { "$set": { "a": 5.0 } })
        .await
        .unwrap();
    c.update_one(doc! { "_id": 2 }, doc! { "$set": { "a": 5 } })
        .await
        .unwrap();
    let fives = found(
        &c,
        doc! { "a": 5, "b": { "$in": [0, 20] } },
        projection.clone(),
        doc! { "b": 1 },
        None,
    )
    .await;
    assert_eq!(fives, [doc! { "a": 5.0, "b": 0 }, doc! { "a": 5, "b": 20 }]);
    // The array gone, its document is answered from the index too.
    c.update_one(doc! { "_id": 22 }, doc! { "$set": { "a": 1 } })
        .await
        .unwrap();
    let (_, stats) = explain(&db, find).await;
    assert_eq!(stats.get_i64("totalDocsExamined").unwrap(), 0, "{stats}");
}

#[tokio::test]
async fn what_needs_more_than_the_key_reads_the_documents() {
    let node = TestNode::start();
    let db = node.db("covered").await;
    let c = db.collection::<Document>("mixed");
    c.insert_many(mixed()).await.unwrap();
    create_index(&c, doc! { "a": 1, "b": -1 }).await;
    create_index(&c, doc! { "x.y": 1 }).await;
    c.insert_one(doc! { "_id": 30, "x": { "y": 4, "z": 5 } })
        .await
        .unwrap();
    let plan_of = |find: Document| {
        let db = db.clone();
        async move { stages(&explain(&db, find).await.0) }
    };
    // `_id` is returned unless excluded: not in the key.
    let with_id = doc! { "find": "mixed", "filter": { "a": 5 }, "projection": { "a": 1 } };
    assert_eq!(
        plan_of(with_id).await,
        ["PROJECTION_SIMPLE", "FETCH", "IXSCAN"]
    );
    // A filter or a projection beyond the key.
    let other = doc! { "find": "mixed", "filter": { "a": 5, "c": "x" }, "projection": { "a": 1, "_id": 0 } };
    assert_eq!(
        plan_of(other).await,
        ["PROJECTION_SIMPLE", "FETCH", "IXSCAN"]
    );
    let wider =
        doc! { "find": "mixed", "filter": { "a": 5 }, "projection": { "a": 1, "c": 1, "_id": 0 } };
    assert_eq!(
        plan_of(wider).await,
        ["PROJECTION_SIMPLE", "FETCH", "IXSCAN"]
    );
    // An exclusion keeps what the key does not hold.
    let excluded = doc! { "find": "mixed", "filter": { "a": 5 }, "projection": { "c": 0 } };
    assert_eq!(
        plan_of(excluded).await,
        ["PROJECTION_SIMPLE", "FETCH", "IXSCAN"]
    );
    // A dotted key field comes back nested.
    let dotted =
        doc! { "find": "mixed", "filter": { "x.y": 4 }, "projection": { "x.y": 1, "_id": 0 } };
    assert_eq!(plan_of(dotted).await, ["PROJECTION_COVERED", "IXSCAN"]);
    let got = found(
        &c,
        doc! { "x.y": 4 },
        doc! { "x.y": 1, "_id": 0 },
        doc! {},
        None,
    )
    .await;
    assert_eq!(got, [doc! { "x": { "y": 4 } }]);
}

#[tokio::test]
async fn a_covered_read_hides_due_documents_and_never_answers_for_expired_ones() {
    let t0 = 1_767_225_600_000i64;
    let clock = Arc::new(ebb_actors::clock::ManualClock::new(t0));
    let node = TestNode::start_with_clock(clock);
    let db = node.db("covered").await;
    let c = db.collection::<Document>("sessions");
    ttl_index(&c, doc! { "at": 1 }, 10, None).await;
    create_index(&c, doc! { "user": 1 }).await;
    let users = |range: std::ops::Range<i32>, step: usize| -> Vec<String> {
        range.step_by(step).map(|i| format!("u{i:02}")).collect()
    };
    // The even sessions fall due 5 s from now, the odd ones 10 s.
    c.insert_many((0..20).map(|i| {
        let at = DateTime::from_millis(if i % 2 == 0 { t0 - 5_000 } else { t0 });
        doc! { "_id": i, "user": format!("u{i:02}"), "at": at }
    }))
    .await
    .unwrap();
    let filter = doc! { "user": { "$gte": "u" } };
    let projection = doc! { "user": 1, "_id": 0 };
    let listed = || {
        let (c, filter, projection) = (c.clone(), filter.clone(), projection.clone());
        async move {
            found(&c, filter, projection, doc! { "user": 1 }, None)
                .await
                .iter()
                .map(|d| d.get_str("user").unwrap().to_owned())
                .collect::<Vec<String>>()
        }
    };
    let find =
        doc! { "find": "sessions", "filter": filter.clone(), "projection": projection.clone() };
    // The monitor held: the due half is still stored, and hidden.
    let held = node.hold_monitor().await;
    node.advance(Duration::from_secs(6));
    assert_eq!(listed().await, users(1..20, 2));
    let (plan, stats) = explain(&db, find.clone()).await;
    assert_eq!(stages(&plan), ["PROJECTION_COVERED", "IXSCAN"], "{plan}");
    assert_eq!(stats.get_i64("nReturned").unwrap(), 10, "{stats}");
    assert_eq!(stats.get_i64("totalDocsExamined").unwrap(), 0, "{stats}");
    node.advance(Duration::from_secs(5));
    assert!(listed().await.is_empty());
    // Expired and deleted: entries the sweep has yet to remove answer for
    // nothing, and new sessions are found beside them.
    drop(held);
    node.ttl_pass().await;
    c.insert_many((20..25).map(|i| {
        doc! { "_id": i, "user": format!("u{i:02}"), "at": DateTime::from_millis(t0 + 60_000) }
    }))
    .await
    .unwrap();
    assert_eq!(listed().await, users(20..25, 1));
}
