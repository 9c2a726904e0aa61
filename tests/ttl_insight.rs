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
    // A find's explain says the same when asked, and only then.
    let db = node.db("app").await;
    let find = doc! { "find": "sessions", "filter": { "_id": "string" } };
    let plain = db
        .run_command(doc! { "explain": find.clone(), "verbosity": "queryPlanner" })
        .await
        .unwrap();
    assert!(plain.get("ebbExpiry").is_none());
    let asked = db
        .run_command(doc! { "explain": find, "verbosity": "queryPlanner", "ebbExpiry": true })
        .await
        .unwrap();
    assert!(asked.get_document("queryPlanner").is_ok());
    let shown = asked
        .get_document("ebbExpiry")
        .unwrap()
        .get_array("documents")
        .unwrap();
    assert_eq!(shown.len(), 1);
    let e = shown[0].as_document().unwrap().get_array("expiry").unwrap()[0]
        .as_document()
        .unwrap()
        .clone();
    assert_eq!(e.get_str("never").unwrap(), "notADate");
    expect_code(
        db.run_command(doc! { "explain": { "count": "sessions" }, "ebbExpiry": true })
            .await,
        72,
    );
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

/// `expiryForecast`'s entry for TTL index `name`.
async fn forecast_of(node: &TestNode, name: &str) -> Document {
    let reply = node
        .db("app")
        .await
        .run_command(doc! { "expiryForecast": "events" })
        .await
        .unwrap();
    reply
        .get_array("ttlIndexes")
        .unwrap()
        .iter()
        .map(|i| i.as_document().unwrap().clone())
        .find(|i| i.get_str("name").unwrap() == name)
        .unwrap_or_else(|| panic!("no {name} in {reply}"))
}

fn counts(d: &Document, view: &str, per: &str) -> Vec<i64> {
    d.get_document(view)
        .unwrap()
        .get_array(per)
        .unwrap()
        .iter()
        .map(|n| n.as_i64().unwrap())
        .collect()
}

#[tokio::test]
async fn expiry_forecast_counts_what_falls_due_each_minute_and_hour() {
    const MIN: i64 = 60_000;
    const HOUR: i64 = 60 * MIN;
    let node = TestNode::start_with_clock(Arc::new(ManualClock::new(T0)));
    let _held = node.hold_monitor().await;
    let c = node.coll("app", "events").await;
    ttl_index(&c, doc! { "at": 1 }, TTL_SECS, None).await;
    ttl_index(&c, doc! { "b": -1 }, 0, None).await;
    let mut docs = Vec::new();
    for i in 0..3 {
        docs.push(doc! { "_id": format!("due {i}"), "at": at(T0 - 61_000) });
    }
    for i in 0..2 {
        // Due 30 s from now: the first minute.
        docs.push(doc! { "_id": format!("soon {i}"), "at": at(T0 - 30_000) });
    }
    docs.extend([
        // Due 11 min from now.
        doc! { "_id": "eleven minutes", "at": at(T0 + 10 * MIN) },
        // Two dates: due by the earlier, once.
        doc! { "_id": "two dates", "at": [at(T0 + 2 * HOUR), at(T0 - 59_000)] },
        // Due 3 h 1 min from now: the fourth hour.
        doc! { "_id": "three hours", "at": at(T0 + 3 * HOUR) },
        doc! { "_id": "next week", "at": at(T0 + 8 * 24 * HOUR) },
        doc! { "_id": "a string", "at": "tomorrow" },
        // The descending index: due 90 s from now.
        doc! { "_id": "by b", "b": at(T0 + 90_000) },
    ]);
    c.insert_many(docs).await.unwrap();

    let at_index = forecast_of(&node, "at_1").await;
    assert_eq!(at_index.get_i64("due").unwrap(), 3);
    let minutes = counts(&at_index, "nextHour", "perMinute");
    assert_eq!(minutes.len(), 60);
    assert_eq!(minutes[0], 3, "{minutes:?}");
    assert_eq!(minutes[10], 1, "{minutes:?}");
    assert_eq!(minutes.iter().sum::<i64>(), 4);
    let hours = counts(&at_index, "nextWeek", "perHour");
    assert_eq!(hours.len(), 168);
    assert_eq!(hours[0], 4, "{hours:?}");
    assert_eq!(hours[3], 1, "{hours:?}");
    assert_eq!(hours.iter().sum::<i64>(), 5);
    assert!(at_index.get_bool("exact").unwrap());
    assert_eq!(
        at_index
            .get_datetime("countedThrough")
            .unwrap()
            .timestamp_millis(),
        T0 + 168 * HOUR
    );
    let b_index = forecast_of(&node, "b_-1").await;
    assert_eq!(b_index.get_i64("due").unwrap(), 0);
    assert_eq!(counts(&b_index, "nextHour", "perMinute")[1], 1);
    assert_eq!(
        counts(&b_index, "nextWeek", "perHour").iter().sum::<i64>(),
        1
    );

    // A minute later the first minute's documents are due.
    node.advance(Duration::from_secs(60));
    let at_index = forecast_of(&node, "at_1").await;
    assert_eq!(at_index.get_i64("due").unwrap(), 6);
    assert_eq!(counts(&at_index, "nextHour", "perMinute")[9], 1);
}

/// `ebb_ttl_mass_expiry_changes_total` from the node's `/metrics`.
async fn mass_changes(node: &TestNode) -> f64 {
    let addr = node.node().http_addr().expect("net.http enabled");
    let (_, text) = crate::metrics::http(addr, "GET", "/metrics").await;
    crate::metrics::samples(&text)[&("ebb_ttl_mass_expiry_changes_total".to_owned(), vec![])]
}

#[tokio::test]
async fn a_dry_run_of_a_shorter_ttl_counts_what_it_makes_due_and_changes_nothing() {
    let node = crate::metrics::node_with_http_and(Some(Arc::new(ManualClock::new(T0))));
    let _held = node.hold_monitor().await;
    let db = node.db("app").await;
    let c = node.coll("app", "guarded").await;
    ttl_index(&c, doc! { "at": 1 }, 3600, None).await;
    // Dated 0, 10, …, 990 s ago: none due under an hour.
    c.insert_many((0..100).map(|i| doc! { "_id": i, "at": at(T0 - i * 10_000) }))
        .await
        .unwrap();
    let coll_mod = |secs: Bson, dry: bool| {
        let mut cmd = doc! {
            "collMod": "guarded",
            "index": { "keyPattern": { "at": 1 }, "expireAfterSeconds": secs },
        };
        if dry {
            cmd.insert("dryRun", true);
        }
        cmd
    };
    let preview = db.run_command(coll_mod(600.into(), true)).await.unwrap();
    assert!(preview.get_bool("dryRun").unwrap());
    // Those 600 s old or more: 60, …, 99.
    assert_eq!(preview.get_i64("dueAtOnce").unwrap(), 40, "{preview}");
    assert!(!preview.get_bool("dueAtOnceIsAtLeast").unwrap());
    assert_eq!(preview.get_i64("documents").unwrap(), 100);
    let ttl_of = async || {
        let mut indexes = c.list_indexes().await.unwrap();
        let mut secs = None;
        while indexes.advance().await.unwrap() {
            let index = indexes.deserialize_current().unwrap();
            if index.keys == doc! { "at": 1 } {
                secs = index.options.and_then(|o| o.expire_after);
            }
        }
        secs.unwrap().as_secs()
    };
    assert_eq!(ttl_of().await, 3600);
    assert_eq!(c.count_documents(doc! {}).await.unwrap(), 100);
    assert_eq!(mass_changes(&node).await, 0.0);

    // Values mongod refuses stay refused, previewed or not.
    for dry in [true, false] {
        expect_code(
            db.run_command(coll_mod(Bson::Double(f64::NAN), dry)).await,
            72,
        );
        expect_code(db.run_command(coll_mod((-1).into(), dry)).await, 72);
    }
    // The preview is of an expireAfterSeconds change alone.
    let mut with_hidden = coll_mod(600.into(), true);
    with_hidden
        .get_document_mut("index")
        .unwrap()
        .insert("hidden", true);
    expect_code(db.run_command(with_hidden).await, 72);
    expect_code(
        db.run_command(doc! { "collMod": "guarded", "dryRun": true })
            .await,
        72,
    );
    expect_code(
        db.run_command(doc! {
            "collMod": "guarded",
            "index": { "name": "nope", "expireAfterSeconds": 5 },
            "dryRun": true,
        })
        .await,
        27,
    );
    expect_code(
        db.run_command(doc! {
            "collMod": "missing",
            "index": { "name": "at_1", "expireAfterSeconds": 5 },
            "dryRun": true,
        })
        .await,
        26,
    );

    // Longer, or a little shorter: no warning.
    db.run_command(coll_mod(3000.into(), false)).await.unwrap();
    assert_eq!(mass_changes(&node).await, 0.0);
    // 40 % of the collection at once: done, and counted.
    let reply = db.run_command(coll_mod(600.into(), false)).await.unwrap();
    assert_eq!(reply.get_i64("expireAfterSeconds_old").unwrap(), 3000);
    assert_eq!(reply.get_i64("expireAfterSeconds_new").unwrap(), 600);
    assert_eq!(ttl_of().await, 600);
    assert_eq!(mass_changes(&node).await, 1.0);
    assert_eq!(c.count_documents(doc! {}).await.unwrap(), 60);
    // Then the one dated 590 s ago: 1 of the 60 left.
    let preview = db.run_command(coll_mod(590.into(), true)).await.unwrap();
    assert_eq!(preview.get_i64("dueAtOnce").unwrap(), 1, "{preview}");
    db.run_command(coll_mod(590.into(), false)).await.unwrap();
    assert_eq!(mass_changes(&node).await, 1.0);
}

#[tokio::test]
async fn a_dry_run_of_a_new_ttl_index_counts_what_it_makes_due_and_builds_nothing() {
    let node = crate::metrics::node_with_http_and(Some(Arc::new(ManualClock::new(T0))));
    let db = node.db("app").await;
    let c = node.coll("app", "fresh").await;
    c.insert_many((0..100).map(|i| doc! { "_id": i, "at": at(T0 - i * 10_000) }))
        .await
        .unwrap();
    let create = |secs: Bson, dry: bool| {
        let mut cmd = doc! {
            "createIndexes": "fresh",
            "indexes": [{ "key": { "at": 1 }, "name": "at_1", "expireAfterSeconds": secs }],
        };
        if dry {
            cmd.insert("dryRun", true);
        }
        cmd
    };
    let preview = db.run_command(create(600.into(), true)).await.unwrap();
    assert!(preview.get_bool("dryRun").unwrap());
    assert_eq!(preview.get_i32("numIndexesBefore").unwrap(), 1);
    assert_eq!(preview.get_i32("numIndexesAfter").unwrap(), 2);
    let ttl = preview.get_array("ttlIndexes").unwrap();
    let at_1 = ttl[0].as_document().unwrap();
    assert_eq!(at_1.get_str("index").unwrap(), "at_1");
    assert_eq!(at_1.get_i64("dueAtOnce").unwrap(), 40, "{preview}");
    assert_eq!(at_1.get_i64("documents").unwrap(), 100);
    // Nothing was built, nothing is hidden.
    let names = c.list_index_names().await.unwrap();
    assert_eq!(names, vec!["_id_".to_owned()]);
    assert_eq!(c.count_documents(doc! {}).await.unwrap(), 100);
    assert_eq!(mass_changes(&node).await, 0.0);
    // A spec the command refuses is refused previewed too.
    for dry in [true, false] {
        expect_code(db.run_command(create((-5).into(), dry)).await, 67);
    }
    expect_code(
        db.run_command(doc! { "createIndexes": "fresh", "indexes": [{ "key": { "at": 1 }, "name": "x" }], "dryRun": 1 })
            .await,
        14,
    );
    // Built for real: 40 % of the collection due at once, counted.
    db.run_command(create(600.into(), false)).await.unwrap();
    assert_eq!(mass_changes(&node).await, 1.0);
    assert_eq!(c.count_documents(doc! {}).await.unwrap(), 60);
}

/// 2100-01-01: a date not due under any of these tests' clocks.
const LATER: i64 = 4_102_444_800_000;

/// `neverExpire` of the collection's TTL index `at_1`, as explainExpiry
/// shows it.
async fn never_expire(node: &TestNode, coll: &str) -> Bson {
    let reply = node
        .db("app")
        .await
        .run_command(doc! { "explainExpiry": coll, "limit": 1 })
        .await
        .unwrap();
    reply.get_array("ttlIndexes").unwrap()[0]
        .as_document()
        .unwrap()
        .get("neverExpire")
        .unwrap()
        .clone()
}

fn tally(missing: i64, not_a_date: i64, array: i64, excluded: i64) -> Bson {
    Bson::Document(doc! {
        "missing": missing,
        "notADate": not_a_date,
        "arrayWithoutDate": array,
        "excludedByPartialFilter": excluded,
    })
}

#[tokio::test]
async fn never_expiring_documents_are_counted_as_they_are_written_and_kept_across_a_restart() {
    let mut node = crate::metrics::node_with_http_and(None);
    let c = node.coll("app", "counted").await;
    let partial = IndexOptions::builder()
        .partial_filter_expression(doc! { "kind": "session" })
        .build();
    ttl_index(&c, doc! { "at": 1 }, 3600, Some(partial)).await;
    assert_eq!(never_expire(&node, "counted").await, tally(0, 0, 0, 0));
    let s = |id: i32, at: Bson| doc! { "_id": id, "kind": "session", "at": at };
    c.insert_many(vec![
        doc! { "_id": 1, "kind": "session" },
        s(2, Bson::Null),
        s(3, "2026-01-01".into()),
        s(4, Bson::Int64(1_767_225_600)),
        s(5, Bson::Array(vec!["a".into()])),
        doc! { "_id": 6, "kind": "log", "at": at(T0) },
        s(7, at(LATER)),
        s(8, at(LATER)),
    ])
    .await
    .unwrap();
    assert_eq!(never_expire(&node, "counted").await, tally(2, 2, 1, 1));
    // Writes that change the reason change the counts.
    c.update_one(doc! { "_id": 1 }, doc! { "$set": { "at": at(LATER) } })
        .await
        .unwrap();
    c.update_one(doc! { "_id": 3 }, doc! { "$set": { "at": ["x", "y"] } })
        .await
        .unwrap();
    c.delete_one(doc! { "_id": 6 }).await.unwrap();
    c.replace_one(doc! { "_id": 7 }, doc! { "kind": "session" })
        .await
        .unwrap();
    let expected = tally(2, 1, 2, 0);
    assert_eq!(never_expire(&node, "counted").await, expected);
    node.restart();
    assert_eq!(never_expire(&node, "counted").await, expected);
    let addr = node.node().http_addr().expect("net.http enabled");
    let (_, text) = crate::metrics::http(addr, "GET", "/metrics").await;
    let samples = crate::metrics::samples(&text);
    let labels = |reason: &str| {
        vec![
            ("index".to_owned(), "at_1".to_owned()),
            ("ns".to_owned(), "app.counted".to_owned()),
            ("reason".to_owned(), reason.to_owned()),
        ]
    };
    let metric = "ebb_ttl_never_expiring_documents".to_owned();
    assert_eq!(samples[&(metric.clone(), labels("missing"))], 2.0);
    assert_eq!(samples[&(metric.clone(), labels("arrayWithoutDate"))], 2.0);

    // A TTL index built on existing documents counts them; a second TTL
    // index on a collection stops the counts of both.
    let b = node.coll("app", "built").await;
    b.insert_many(vec![
        doc! { "_id": 1 },
        doc! { "_id": 2, "at": "soon" },
        doc! { "_id": 3, "at": at(LATER) },
    ])
    .await
    .unwrap();
    ttl_index(&b, doc! { "at": 1 }, 3600, None).await;
    assert_eq!(never_expire(&node, "built").await, tally(1, 1, 0, 0));
    ttl_index(&b, doc! { "other": 1 }, 60, None).await;
    b.insert_one(doc! { "_id": 4 }).await.unwrap();
    assert_eq!(never_expire(&node, "built").await, Bson::Null);
}

#[tokio::test]
async fn stats_show_the_never_expiring_counts_only_when_asked() {
    let node = TestNode::start_with_clock(Arc::new(ManualClock::new(T0)));
    let db = node.db("app").await;
    let c = node.coll("app", "stats").await;
    ttl_index(&c, doc! { "at": 1 }, 3600, None).await;
    crate::common::create_index(&c, doc! { "user": 1 }).await;
    c.insert_many(vec![
        doc! { "_id": 1, "user": "a" },
        doc! { "_id": 2, "at": "soon" },
        doc! { "_id": 3, "at": at(LATER) },
    ])
    .await
    .unwrap();
    let at_1 = doc! {
        "name": "at_1",
        "field": "at",
        "expireAfterSeconds": 3600_i64,
        "neverExpire": tally(1, 1, 0, 0),
    };

    // MongoDB's shapes unless ebbExpiry is asked for.
    let plain = db.run_command(doc! { "collStats": "stats" }).await.unwrap();
    assert!(!plain.contains_key("ebbExpiry"), "{plain}");
    let asked = db
        .run_command(doc! { "collStats": "stats", "ebbExpiry": true })
        .await
        .unwrap();
    let shown = asked.get_document("ebbExpiry").unwrap();
    assert_eq!(shown, &doc! { "ttlIndexes": [at_1.clone()] });
    expect_code(
        db.run_command(doc! { "collStats": "stats", "ebbExpiry": "yes" })
            .await,
        14,
    );

    let stage = crate::common::agg(&c, vec![doc! { "$collStats": { "ebbExpiry": {} } }]).await;
    assert_eq!(
        stage[0].get_document("ebbExpiry").unwrap(),
        &doc! { "ttlIndexes": [at_1.clone()] }
    );

    let indexes = crate::common::agg(&c, vec![doc! { "$indexStats": {} }]).await;
    assert!(indexes.iter().all(|i| !i.contains_key("ebbExpiry")));
    let indexes = crate::common::agg(&c, vec![doc! { "$indexStats": { "ebbExpiry": true } }]).await;
    let by_name = |n: &str| {
        indexes
            .iter()
            .find(|i| i.get_str("name").unwrap() == n)
            .unwrap()
            .clone()
    };
    assert_eq!(by_name("at_1").get_document("ebbExpiry").unwrap(), &at_1);
    assert!(!by_name("user_1").contains_key("ebbExpiry"));
    assert!(!by_name("_id_").contains_key("ebbExpiry"));
    crate::common::agg_err(&c, vec![doc! { "$indexStats": { "ebbExpiry": "yes" } }], 14).await;
}

#[tokio::test]
async fn a_forecast_past_its_key_budget_estimates_the_rest_and_says_so() {
    let node = TestNode::start_with_clock(Arc::new(ManualClock::new(T0)));
    let _held = node.hold_monitor().await;
    let c = node.coll("app", "events").await;
    ttl_index(&c, doc! { "at": 1 }, 0, None).await;
    // One document every 2 s for 3 hours: 1,800 an hour.
    c.insert_many((1..=5400).map(|i| doc! { "_id": i, "at": at(T0 + i * 2000) }))
        .await
        .unwrap();
    let reply = node
        .db("app")
        .await
        .run_command(doc! { "expiryForecast": "events", "maxKeys": 1000 })
        .await
        .unwrap();
    let index = reply.get_array("ttlIndexes").unwrap()[0]
        .as_document()
        .unwrap()
        .clone();
    assert!(index.get_bool("estimated").unwrap(), "{index}");
    assert_eq!(
        index
            .get_datetime("countedThrough")
            .unwrap()
            .timestamp_millis(),
        T0 + 1001 * 2000 - 1
    );
    let hours = counts(&index, "nextWeek", "perHour");
    for h in &hours[..3] {
        assert!(h.abs_diff(1800) <= 18, "within 1 %: {:?}", &hours[..4]);
    }
    assert_eq!(hours[3..].iter().sum::<i64>(), 0);
    // Every minute holds 30: fewer than a sample, each counted whole.
    let minutes = counts(&index, "nextHour", "perMinute");
    assert!(minutes.iter().all(|&m| m == 30), "{minutes:?}");

    let whole = forecast_of(&node, "at_1").await;
    assert!(!whole.get_bool("estimated").unwrap());
    assert_eq!(
        counts(&whole, "nextWeek", "perHour")[..4],
        [1800, 1800, 1800, 0]
    );
}
