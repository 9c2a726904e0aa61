//! Collations end to end: every command that takes `collation` honours it,
//! collection defaults are inherited, collated indexes are used only by
//! queries with the same collation, and bad specifications get mongod's
//! errors. Expected results come from the MongoDB manual's "Collation"
//! page and `jstests/core/query/collation/collation.js`.

use crate::common::{TestNode, cases, expect_code, first_batch};
use futures::TryStreamExt;
use mongodb::bson::{Bson, Document, doc};
use mongodb::options::Collation;
use mongodb::{Collection, Database};

fn case_insensitive() -> Document {
    doc! { "locale": "en_US", "strength": 2 }
}

async fn ping_pong(node: &TestNode) -> (Database, Collection<Document>) {
    let db = node.db("t").await;
    let c = db.collection::<Document>("s");
    c.insert_many(vec![
        doc! { "_id": 1, "k": "ping" },
        doc! { "_id": 2, "k": "PING" },
        doc! { "_id": 3, "k": "pong" },
    ])
    .await
    .unwrap();
    (db, c)
}

/// A case-insensitive lookup: documents "ping" and "PING" with
/// `{locale: "en_US", strength: 2}` — mongod matches both in every command
/// (manual, "Collation": strength 2 compares base letters and accents, not
/// case).
#[tokio::test]
async fn case_insensitive_collation_matches_both_in_every_command() {
    let node = TestNode::start();
    let (db, c) = ping_pong(&node).await;
    let ci = case_insensitive();
    let q = doc! { "k": "ping" };

    let found = first_batch(
        &db,
        doc! { "find": "s", "filter": q.clone(), "collation": ci.clone() },
    )
    .await;
    assert_eq!(found.len(), 2);
    let n = db
        .run_command(doc! { "count": "s", "query": q.clone(), "collation": ci.clone() })
        .await
        .unwrap();
    assert_eq!(n.get_i32("n").unwrap(), 2);
    let agg = first_batch(
        &db,
        doc! { "aggregate": "s", "pipeline": [{ "$match": q.clone() }], "cursor": {}, "collation": ci.clone() },
    )
    .await;
    assert_eq!(agg.len(), 2);
    // The two spellings are one distinct value under the collation.
    let distinct = db
        .run_command(doc! { "distinct": "s", "key": "k", "collation": ci.clone() })
        .await
        .unwrap();
    assert_eq!(distinct.get_array("values").unwrap().len(), 2);
    let plain = db
        .run_command(doc! { "distinct": "s", "key": "k" })
        .await
        .unwrap();
    assert_eq!(plain.get_array("values").unwrap().len(), 3);
    let explained = db
        .run_command(
            doc! { "explain": { "find": "s", "filter": q.clone(), "collation": ci.clone() } },
        )
        .await;
    assert!(explained.is_ok(), "{explained:?}");

    let collation = Collation::builder()
        .locale("en_US")
        .strength(mongodb::options::CollationStrength::Secondary)
        .build();
    let updated = c
        .update_many(q.clone(), doc! { "$set": { "seen": true } })
        .collation(collation.clone())
        .await
        .unwrap();
    assert_eq!(updated.matched_count, 2);
    assert_eq!(c.count_documents(doc! { "seen": true }).await.unwrap(), 2);
    let got = c
        .find_one_and_update(
            doc! { "k": "PING", "_id": 1 },
            doc! { "$set": { "one": 1 } },
        )
        .collation(collation.clone())
        .await
        .unwrap();
    assert_eq!(got.unwrap().get_i32("_id").unwrap(), 1);
    let counted = c
        .count_documents(q.clone())
        .collation(collation.clone())
        .await
        .unwrap();
    assert_eq!(counted, 2);
    let deleted = c.delete_many(q.clone()).collation(collation).await.unwrap();
    assert_eq!(deleted.deleted_count, 2);
    assert_eq!(c.count_documents(doc! {}).await.unwrap(), 1);
}

/// `{locale: "simple"}` is binary comparison.
#[tokio::test]
async fn simple_collation_compares_bytes() {
    let node = TestNode::start();
    let (db, _c) = ping_pong(&node).await;
    let n = db
        .run_command(
            doc! { "count": "s", "query": { "k": "ping" }, "collation": { "locale": "simple" } },
        )
        .await
        .unwrap();
    assert_eq!(n.get_i32("n").unwrap(), 1);
}

/// collation.js: a collection default applies when an operation names no
/// collation, `{locale: "simple"}` overrides it; listCollections shows the
/// resolved specification; indexes inherit it unless they name their own.
#[tokio::test]
async fn collection_default_collation_is_inherited() {
    let node = TestNode::start();
    let db = node.db("t").await;
    db.run_command(doc! { "create": "d", "collation": case_insensitive() })
        .await
        .unwrap();
    let c = db.collection::<Document>("d");
    c.insert_many(vec![doc! { "k": "foo" }, doc! { "k": "FOO" }])
        .await
        .unwrap();
    assert_eq!(c.count_documents(doc! { "k": "Foo" }).await.unwrap(), 2);
    let simple = first_batch(
        &db,
        doc! { "find": "d", "filter": { "k": "FOO" }, "collation": { "locale": "simple" } },
    )
    .await;
    assert_eq!(simple.len(), 1);

    let infos = first_batch(
        &db,
        doc! { "listCollections": 1, "filter": { "name": "d" } },
    )
    .await;
    let options = infos[0].get_document("options").unwrap();
    assert_eq!(
        options.get_document("collation").unwrap(),
        &doc! {
            "locale": "en_US", "caseLevel": false, "caseFirst": "off", "strength": 2,
            "numericOrdering": false, "alternate": "non-ignorable", "maxVariable": "punct",
            "normalization": false, "backwards": false, "version": "57.1",
        }
    );
    // Creating it again with the same collation is idempotent.
    db.run_command(doc! { "create": "d", "collation": case_insensitive() })
        .await
        .unwrap();

    db.run_command(doc! { "createIndexes": "d", "indexes": [
        { "key": { "k": 1 }, "name": "k_1" },
        { "key": { "j": 1 }, "name": "j_1", "collation": { "locale": "simple" } },
        { "key": { "f": 1 }, "name": "f_1", "collation": { "locale": "fr_CA" } },
    ] })
    .await
    .unwrap();
    let indexes = first_batch(&db, doc! { "listIndexes": "d" }).await;
    let collation_of = |name: &str| {
        indexes
            .iter()
            .find(|i| i.get_str("name").ok() == Some(name))
            .and_then(|i| i.get_document("collation").ok().cloned())
    };
    assert_eq!(
        collation_of("k_1").unwrap().get_i32("strength").ok(),
        Some(2)
    );
    assert_eq!(
        collation_of("_id_").unwrap().get_str("locale").ok(),
        Some("en_US")
    );
    assert_eq!(collation_of("j_1"), None);
    let fr = collation_of("f_1").unwrap();
    assert_eq!(fr.get_str("locale").ok(), Some("fr_CA"));
    assert_eq!(fr.get_bool("backwards").ok(), Some(true));

    // "simple" as the default stores no collation (collation.js).
    db.run_command(doc! { "create": "plain", "collation": { "locale": "simple" } })
        .await
        .unwrap();
    let infos = first_batch(
        &db,
        doc! { "listCollections": 1, "filter": { "name": "plain" } },
    )
    .await;
    assert!(
        infos[0]
            .get_document("options")
            .unwrap()
            .get("collation")
            .is_none()
    );
}

fn winning_stage(explain: &Document) -> String {
    let plan = explain
        .get_document("queryPlanner")
        .unwrap()
        .get_document("winningPlan")
        .unwrap();
    let mut stage = plan;
    loop {
        if stage.get_str("stage").ok() == Some("IXSCAN")
            || stage.get_str("stage").ok() == Some("COLLSCAN")
        {
            return stage.get_str("stage").unwrap().to_owned();
        }
        match stage.get_document("inputStage") {
            Ok(next) => stage = next,
            Err(_) => return stage.get_str("stage").unwrap_or("?").to_owned(),
        }
    }
}

/// collation.js ("collation_index3"): an index with a collation serves
/// string bounds only for a query with the same collation; the answers
/// agree either way.
#[tokio::test]
async fn collated_index_serves_only_its_own_collation() {
    let node = TestNode::start();
    let db = node.db("t").await;
    let c = db.collection::<Document>("ix");
    c.insert_many(vec![
        doc! { "a": "foo" },
        doc! { "a": "FOO" },
        doc! { "a": "bar" },
        doc! { "a": 5 },
    ])
    .await
    .unwrap();
    db.run_command(doc! { "createIndexes": "ix", "indexes": [
        { "key": { "a": 1 }, "name": "a_1", "collation": case_insensitive() },
    ] })
    .await
    .unwrap();
    let explain = |filter: Document, collation: Option<Document>| {
        let db = db.clone();
        async move {
            let mut find = doc! { "find": "ix", "filter": filter };
            if let Some(c) = collation {
                find.insert("collation", c);
            }
            db.run_command(doc! { "explain": find }).await.unwrap()
        }
    };
    let str_q = doc! { "a": "foo" };
    assert_eq!(
        winning_stage(&explain(str_q.clone(), None).await),
        "COLLSCAN"
    );
    assert_eq!(
        winning_stage(&explain(str_q.clone(), Some(doc! { "locale": "en_US" })).await),
        "COLLSCAN"
    );
    assert_eq!(
        winning_stage(&explain(str_q.clone(), Some(case_insensitive())).await),
        "IXSCAN"
    );
    // A number is keyed alike in every collation: the index serves it.
    assert_eq!(
        winning_stage(&explain(doc! { "a": 5 }, None).await),
        "IXSCAN"
    );

    let by_index = first_batch(
        &db,
        doc! { "find": "ix", "filter": { "a": { "$gte": "Foo" } }, "collation": case_insensitive(), "hint": "a_1" },
    )
    .await;
    let by_scan = first_batch(
        &db,
        doc! { "find": "ix", "filter": { "a": { "$gte": "Foo" } }, "collation": case_insensitive(), "hint": { "$natural": 1 } },
    )
    .await;
    assert_eq!(by_index.len(), 2);
    assert_eq!(by_scan.len(), 2);
}

/// A unique index with a case-insensitive collation treats "ping" and
/// "PING" as the same key (manual, "Collation and Unique Indexes").
#[tokio::test]
async fn unique_collated_index_rejects_case_variants() {
    let node = TestNode::start();
    let db = node.db("t").await;
    db.run_command(doc! { "createIndexes": "u", "indexes": [
        { "key": { "k": 1 }, "name": "k_1", "unique": true, "collation": case_insensitive() },
    ] })
    .await
    .unwrap();
    let c = db.collection::<Document>("u");
    c.insert_one(doc! { "k": "ping" }).await.unwrap();
    expect_code(c.insert_one(doc! { "k": "PING" }).await, 11000);
    c.insert_one(doc! { "k": "píng" }).await.unwrap();
    assert_eq!(c.count_documents(doc! {}).await.unwrap(), 2);
}

/// Sorts and `$group` keys follow the collation: numericOrdering sorts
/// digit runs by value (manual, "Collation Document").
#[tokio::test]
async fn sort_and_group_follow_the_collation() {
    let node = TestNode::start();
    let db = node.db("t").await;
    let c = db.collection::<Document>("g");
    c.insert_many(vec![
        doc! { "n": "10", "k": "a" },
        doc! { "n": "9", "k": "A" },
        doc! { "n": "2", "k": "b" },
    ])
    .await
    .unwrap();
    let sorted = first_batch(
        &db,
        doc! { "find": "g", "filter": {}, "sort": { "n": 1 }, "collation": { "locale": "en_US", "numericOrdering": true } },
    )
    .await;
    let order: Vec<&str> = sorted.iter().map(|d| d.get_str("n").unwrap()).collect();
    assert_eq!(order, ["2", "9", "10"]);
    let binary = first_batch(&db, doc! { "find": "g", "filter": {}, "sort": { "n": 1 } }).await;
    let order: Vec<&str> = binary.iter().map(|d| d.get_str("n").unwrap()).collect();
    assert_eq!(order, ["10", "2", "9"]);

    let groups = first_batch(
        &db,
        doc! { "aggregate": "g", "pipeline": [{ "$group": { "_id": "$k", "n": { "$sum": 1 } } }], "cursor": {}, "collation": case_insensitive() },
    )
    .await;
    assert_eq!(groups.len(), 2);
    let sizes: Vec<i32> = {
        let mut v: Vec<i32> = groups.iter().map(|g| g.get_i32("n").unwrap()).collect();
        v.sort();
        v
    };
    assert_eq!(sizes, [1, 2]);
}

/// An operation's `collation: {}` is no collation argument at all (mongod
/// reads an empty document as "not given"): find, count, update, delete
/// and aggregate run with the collection's default, which is the simple
/// collation on a collection without one.
#[tokio::test]
async fn empty_collation_is_the_collection_default() {
    let node = TestNode::start();
    let (db, _c) = ping_pong(&node).await;
    let ping = doc! { "k": "ping" };

    let found = first_batch(
        &db,
        doc! { "find": "s", "filter": ping.clone(), "collation": {} },
    )
    .await;
    assert_eq!(found.len(), 1, "{found:?}");
    let agg = first_batch(
        &db,
        doc! { "aggregate": "s", "pipeline": [{ "$match": ping.clone() }], "cursor": {}, "collation": {} },
    )
    .await;
    assert_eq!(agg.len(), 1, "{agg:?}");
    let n = db
        .run_command(doc! { "count": "s", "query": ping.clone(), "collation": {} })
        .await
        .unwrap();
    assert_eq!(n.get_i32("n").unwrap(), 1);
    let updated = db
        .run_command(doc! {
            "update": "s",
            "updates": [{ "q": ping.clone(), "u": { "$set": { "seen": true } }, "multi": true, "collation": {} }],
        })
        .await
        .unwrap();
    assert_eq!(updated.get_i32("n").unwrap(), 1, "{updated:?}");
    assert_eq!(updated.get_i32("nModified").unwrap(), 1, "{updated:?}");
    let deleted = db
        .run_command(doc! {
            "delete": "s",
            "deletes": [{ "q": ping.clone(), "limit": 0, "collation": {} }],
        })
        .await
        .unwrap();
    assert_eq!(deleted.get_i32("n").unwrap(), 1, "{deleted:?}");

    // On a collection with a default collation, `{}` keeps that default.
    db.run_command(doc! { "create": "d", "collation": case_insensitive() })
        .await
        .unwrap();
    db.collection::<Document>("d")
        .insert_many(vec![doc! { "k": "foo" }, doc! { "k": "FOO" }])
        .await
        .unwrap();
    let found = first_batch(
        &db,
        doc! { "find": "d", "filter": { "k": "Foo" }, "collation": {} },
    )
    .await;
    assert_eq!(found.len(), 2, "{found:?}");
}

/// collation.js and invalid_collation_locale.js: bad specifications fail
/// with mongod's codes and create nothing.
#[tokio::test]
async fn bad_collations_get_mongods_errors() {
    let node = TestNode::start();
    let db = node.db("t").await;
    let cases: Vec<(Bson, i32)> = vec![
        (Bson::String("not an object".into()), 14),
        (Bson::Document(doc! {}), 40414),
        (Bson::Document(doc! { "blah": 1 }), 40415),
        (Bson::Document(doc! { "locale": "en", "blah": 1 }), 40415),
        (Bson::Document(doc! { "locale": "xx" }), 2),
        (Bson::Document(doc! { "locale": "x_invalid" }), 2),
        (Bson::Document(doc! { "locale": "en", "strength": 99 }), 9),
        (Bson::Document(doc! { "locale": "en", "strength": 9.9 }), 9),
        (
            Bson::Document(doc! { "locale": "en", "version": "unknownVersion" }),
            161,
        ),
    ];
    for (collation, code) in cases {
        let r = db
            .run_command(doc! { "create": "bad", "collation": collation.clone() })
            .await;
        expect_code(r, code);
        let r = db
            .run_command(doc! { "createIndexes": "bad", "indexes": [{ "key": { "a": 1 }, "name": "a_1", "collation": collation.clone() }] })
            .await;
        expect_code(r, code);
        // An operation's `{}` is no collation, not a bad one.
        if collation != Bson::Document(doc! {}) {
            let r = db
                .run_command(doc! { "find": "bad", "filter": {}, "collation": collation.clone() })
                .await;
            expect_code(r, code);
        }
    }
    let names = db.list_collection_names().await.unwrap();
    assert!(!names.contains(&"bad".to_owned()), "{names:?}");
}

/// Property: with a collation, a scan of a collated index returns the same
/// documents as a collection scan, for equality, ranges and `$in` over
/// strings that differ by case and accents (the index only narrows).
#[tokio::test]
async fn collated_index_scans_agree_with_collection_scans() {
    use proptest::prelude::*;

    let node = TestNode::start();
    let db = node.db("t").await;
    let c = db.collection::<Document>("p");
    let words = [
        "a", "A", "á", "b", "B", "ab", "Ab", "aB", "abc", "ábc", "résumé", "resume", "Resume", "z",
        "Z", "", "10", "9",
    ];
    let docs: Vec<Document> = words
        .iter()
        .enumerate()
        .map(|(i, w)| doc! { "_id": i as i32, "w": *w })
        .collect();
    c.insert_many(docs).await.unwrap();
    let collations = [
        doc! { "locale": "en_US", "strength": 1 },
        doc! { "locale": "en_US", "strength": 2 },
        doc! { "locale": "en_US" },
        doc! { "locale": "fr_CA" },
        doc! { "locale": "en_US", "numericOrdering": true },
    ];
    for (i, collation) in collations.iter().enumerate() {
        db.run_command(doc! { "createIndexes": "p", "indexes": [
            { "key": { "w": 1 }, "name": format!("w_{i}"), "collation": collation.clone() },
            { "key": { "w": -1 }, "name": format!("w_desc_{i}"), "collation": collation.clone() },
        ] })
        .await
        .unwrap();
    }
    let strategy = (
        0..collations.len(),
        0..4usize,
        proptest::sample::select(words.to_vec()),
        proptest::sample::select(words.to_vec()),
        any::<bool>(),
    );
    for (ci, op, x, y, descending) in cases(strategy, 48) {
        let filter = match op {
            0 => doc! { "w": x },
            1 => doc! { "w": { "$gt": x } },
            2 => doc! { "w": { "$gte": x, "$lte": y } },
            _ => doc! { "w": { "$in": [x, y] } },
        };
        let index = if descending {
            format!("w_desc_{ci}")
        } else {
            format!("w_{ci}")
        };
        let ids = |hint: Bson| {
            let db = db.clone();
            let filter = filter.clone();
            let collation = collations[ci].clone();
            async move {
                let mut found: Vec<i32> = db
                    .collection::<Document>("p")
                    .find(filter)
                    .hint(mongodb::options::Hint::Keys(match hint {
                        Bson::Document(d) => d,
                        _ => unreachable!(),
                    }))
                    .collation(mongodb::bson::deserialize_from_document(collation).unwrap())
                    .await
                    .unwrap()
                    .try_collect::<Vec<Document>>()
                    .await
                    .unwrap()
                    .iter()
                    .map(|d| d.get_i32("_id").unwrap())
                    .collect();
                found.sort();
                found
            }
        };
        let by_scan = ids(Bson::Document(doc! { "$natural": 1 })).await;
        let key = if descending {
            doc! { "w": -1 }
        } else {
            doc! { "w": 1 }
        };
        // Two indexes share the key pattern per direction; hint by name.
        let by_index: Vec<i32> = {
            let reply = first_batch(
                &db,
                doc! { "find": "p", "filter": filter.clone(), "collation": collations[ci].clone(), "hint": index.clone(), "batchSize": 1000 },
            )
            .await;
            let mut v: Vec<i32> = reply.iter().map(|d| d.get_i32("_id").unwrap()).collect();
            v.sort();
            v
        };
        assert_eq!(
            by_index, by_scan,
            "{filter} in {} via {index} ({key})",
            collations[ci]
        );
    }
}

/// update_arrayFilters.js: array filters compare strings with the
/// statement's collation, as the `$` position does.
#[tokio::test]
async fn array_filters_follow_the_collation() {
    let node = TestNode::start();
    let db = node.db("t").await;
    let c = db.collection::<Document>("af");
    c.insert_one(doc! { "_id": 1, "a": ["foo", "FOO", "bar"] })
        .await
        .unwrap();
    db.run_command(doc! { "update": "af", "updates": [{
        "q": { "_id": 1 },
        "u": { "$set": { "a.$[i]": "x" } },
        "arrayFilters": [{ "i": "foo" }],
        "collation": case_insensitive(),
    }] })
    .await
    .unwrap();
    let got = c.find_one(doc! { "_id": 1 }).await.unwrap().unwrap();
    assert_eq!(
        got.get_array("a").unwrap(),
        &vec![Bson::from("x"), Bson::from("x"), Bson::from("bar")]
    );
    db.run_command(doc! { "update": "af", "updates": [{
        "q": { "a": "BAR" },
        "u": { "$set": { "a.$": "y" } },
        "collation": case_insensitive(),
    }] })
    .await
    .unwrap();
    let got = c.find_one(doc! { "_id": 1 }).await.unwrap().unwrap();
    assert_eq!(got.get_array("a").unwrap()[2], Bson::from("y"));
}

/// `$addToSet`, `$min` and `$max` in `$group` compare strings with the
/// pipeline's collation too (collation.js: "$group ... $addToSet").
#[tokio::test]
async fn group_accumulators_follow_the_collation() {
    let node = TestNode::start();
    let db = node.db("t").await;
    let c = db.collection::<Document>("acc");
    c.insert_many(vec![
        doc! { "k": "a", "n": "9" },
        doc! { "k": "A", "n": "10" },
        doc! { "k": "b", "n": "2" },
    ])
    .await
    .unwrap();
    let run = |collation: Document| {
        let db = db.clone();
        async move {
            first_batch(
                &db,
                doc! { "aggregate": "acc", "pipeline": [{ "$group": {
                    "_id": null,
                    "set": { "$addToSet": "$k" },
                    "max": { "$max": "$n" },
                } }], "cursor": {}, "collation": collation },
            )
            .await
            .remove(0)
        }
    };
    let ci = run(doc! { "locale": "en_US", "strength": 2, "numericOrdering": true }).await;
    assert_eq!(ci.get_array("set").unwrap().len(), 2);
    assert_eq!(ci.get_str("max").unwrap(), "10");
    let simple = run(doc! { "locale": "simple" }).await;
    assert_eq!(simple.get_array("set").unwrap().len(), 3);
    assert_eq!(simple.get_str("max").unwrap(), "9");
}

/// The `_id_` index of a collection with a default collation uses it
/// (collation.js: "_id index ... collection-default collation"): `_id`s
/// equal under it collide, and an `_id` lookup in that collation is a
/// point lookup (IDHACK) that finds the stored spelling.
#[tokio::test]
async fn id_follows_the_collection_default_collation() {
    let node = TestNode::start();
    let db = node.db("t").await;
    db.run_command(doc! { "create": "ids", "collation": case_insensitive() })
        .await
        .unwrap();
    let c = db.collection::<Document>("ids");
    c.insert_one(doc! { "_id": "Session-1", "n": 1 })
        .await
        .unwrap();
    expect_code(
        c.insert_one(doc! { "_id": "session-1", "n": 2 }).await,
        11000,
    );
    c.insert_one(doc! { "_id": "session-2", "n": 3 })
        .await
        .unwrap();
    let found = c
        .find_one(doc! { "_id": "SESSION-1" })
        .await
        .unwrap()
        .unwrap();
    assert_eq!(found.get_str("_id").unwrap(), "Session-1");
    let explain = db
        .run_command(doc! { "explain": { "find": "ids", "filter": { "_id": "SESSION-1" } } })
        .await
        .unwrap();
    assert_eq!(winning_stage(&explain), "IDHACK");
    // A simple-collation query compares bytes (and scans).
    let simple = first_batch(
        &db,
        doc! { "find": "ids", "filter": { "_id": "SESSION-1" }, "collation": { "locale": "simple" } },
    )
    .await;
    assert!(simple.is_empty());
    // Updates and deletes find documents through the collated `_id` too.
    let r = c
        .update_one(doc! { "_id": "session-2" }, doc! { "$set": { "n": 30 } })
        .await
        .unwrap();
    assert_eq!(r.matched_count, 1);
    let r = c
        .update_one(doc! { "_id": "SESSION-3" }, doc! { "$set": { "n": 4 } })
        .upsert(true)
        .await
        .unwrap();
    assert!(r.upserted_id.is_some());
    expect_code(c.insert_one(doc! { "_id": "session-3" }).await, 11000);
    assert_eq!(
        c.delete_one(doc! { "_id": "session-1" })
            .await
            .unwrap()
            .deleted_count,
        1
    );
    assert_eq!(c.count_documents(doc! {}).await.unwrap(), 2);
}

/// Update operators compare with the statement's collation
/// (jstests/core/query/collation/collation_update.js: `$addToSet`,
/// `$pull`, `$pullAll`, `$max` and `$push` with `$sort`).
#[tokio::test]
async fn update_operators_follow_the_collation() {
    let node = TestNode::start();
    let db = node.db("t").await;
    let c = db.collection::<Document>("upd");
    c.insert_one(doc! { "_id": 1, "tags": ["a", "b", "c"], "top": "b", "list": [] })
        .await
        .unwrap();
    let update = |u: Document| {
        let db = db.clone();
        async move {
            db.run_command(doc! { "update": "upd", "updates": [{
                "q": { "_id": 1 }, "u": u, "collation": case_insensitive(),
            }] })
            .await
            .unwrap();
        }
    };
    update(doc! { "$addToSet": { "tags": "A" } }).await;
    update(doc! { "$pull": { "tags": "B" } }).await;
    update(doc! { "$pullAll": { "tags": ["C"] } }).await;
    update(doc! { "$max": { "top": "B" } }).await;
    update(doc! { "$push": { "list": { "$each": ["b", "A", "C"], "$sort": 1 } } }).await;
    let got = c.find_one(doc! { "_id": 1 }).await.unwrap().unwrap();
    assert_eq!(got.get_array("tags").unwrap(), &vec![Bson::from("a")]);
    // "B" is not greater than "b" under the collation: unchanged.
    assert_eq!(got.get_str("top").unwrap(), "b");
    assert_eq!(
        got.get_array("list").unwrap(),
        &vec![Bson::from("A"), Bson::from("b"), Bson::from("C")]
    );
}
