//! Aggregation expressions end to end: `$expr` in every command that takes
//! a filter, command `let` variables and `$$NOW`, `$mod`, `$comment`,
//! `$where` refused as a JavaScript-less mongod refuses it, `$project`
//! computing with several operator families, the bit test query operators,
//! the trigonometric and bitwise expressions with mongod's codes, and
//! `$percentile`/`$median` as accumulators, window functions and
//! expressions.

use std::sync::Arc;

use crate::common::{TestNode, agg, agg_err, all, expect_code, ids};
use ebb_actors::clock::ManualClock;
use futures::TryStreamExt;
use mongodb::bson::{Bson, DateTime, Document, doc};

/// Manual, $expr: "Compare Two Fields from A Single Document" (the
/// monthlyBudget example) and "Use $expr With Conditional Statements".
#[tokio::test]
async fn find_with_expr_compares_two_fields_of_a_document() {
    let node = TestNode::start();
    let c = node.coll("app", "monthlyBudget").await;
    c.insert_many(vec![
        doc! { "_id": 1, "category": "food", "budget": 400, "spent": 450 },
        doc! { "_id": 2, "category": "drinks", "budget": 100, "spent": 150 },
        doc! { "_id": 3, "category": "clothes", "budget": 100, "spent": 50 },
        doc! { "_id": 4, "category": "misc", "budget": 500, "spent": 300 },
        doc! { "_id": 5, "category": "travel", "budget": 200, "spent": 650 },
    ])
    .await
    .unwrap();
    assert_eq!(
        ids(&c, doc! { "$expr": { "$gt": ["$spent", "$budget"] } }).await,
        vec![1, 2, 5]
    );
    let discounted = doc! { "$expr": { "$lt": [
        { "$cond": { "if": { "$gte": ["$budget", 200] }, "then": { "$multiply": ["$budget", 0.5] }, "else": "$budget" } },
        150
    ] } };
    assert_eq!(ids(&c, discounted).await, vec![2, 3, 5]);
    // count and distinct take $expr too.
    let n = c
        .count_documents(doc! { "$expr": { "$eq": ["$budget", 100] } })
        .await
        .unwrap();
    assert_eq!(n, 2);
}

/// jstests/core/command_let_variables.js: `let` variables reach `$expr` in
/// find, aggregate, update (query and pipeline-free update), delete and
/// findAndModify; each variable may use the ones before it.
#[tokio::test]
async fn let_variables_reach_expr_in_every_command() {
    let node = TestNode::start();
    let db = node.db("app").await;
    let c = db.collection::<Document>("birds");
    c.insert_many(vec![
        doc! { "_id": 1, "species": "blackbird", "count": 3 },
        doc! { "_id": 2, "species": "bullfinch", "count": 7 },
        doc! { "_id": 3, "species": "chaffinch", "count": 9 },
        doc! { "_id": 4, "species": "song thrush", "count": 2 },
    ])
    .await
    .unwrap();
    let found = db
        .run_command(doc! {
            "find": "birds",
            "filter": { "$expr": { "$eq": ["$species", "$$target"] } },
            "let": { "target": "song thrush" },
        })
        .await
        .unwrap();
    let batch = found
        .get_document("cursor")
        .unwrap()
        .get_array("firstBatch")
        .unwrap();
    assert_eq!(batch.len(), 1);
    let agg = db
        .run_command(doc! {
            "aggregate": "birds",
            "pipeline": [
                { "$match": { "$expr": { "$gt": ["$count", "$$min"] } } },
                { "$project": { "_id": 1, "over": { "$subtract": ["$count", "$$min"] } } },
                { "$sort": { "_id": 1 } },
            ],
            "cursor": {},
            "let": { "base": 3, "min": { "$add": ["$$base", 2] } },
        })
        .await
        .unwrap();
    let batch = agg
        .get_document("cursor")
        .unwrap()
        .get_array("firstBatch")
        .unwrap();
    assert_eq!(
        batch,
        &vec![
            Bson::Document(doc! { "_id": 2, "over": 2 }),
            Bson::Document(doc! { "_id": 3, "over": 4 }),
        ]
    );
    let updated = db
        .run_command(doc! {
            "update": "birds",
            "updates": [{ "q": { "$expr": { "$eq": ["$species", "$$target"] } }, "u": { "$set": { "seen": true } } }],
            "let": { "target": "chaffinch" },
        })
        .await
        .unwrap();
    assert_eq!(updated.get_i32("n").unwrap(), 1);
    assert_eq!(ids(&c, doc! { "seen": true }).await, vec![3]);
    let modified = db
        .run_command(doc! {
            "findAndModify": "birds",
            "query": { "$and": [{ "_id": 1 }, { "$expr": { "$eq": ["$species", "$$target"] } }] },
            "update": { "$inc": { "count": 1 } },
            "new": true,
            "let": { "target": "blackbird" },
        })
        .await
        .unwrap();
    assert_eq!(
        modified.get_document("value").unwrap(),
        &doc! { "_id": 1, "species": "blackbird", "count": 4 }
    );
    let deleted = db
        .run_command(doc! {
            "delete": "birds",
            "deletes": [{ "q": { "$expr": { "$lt": ["$count", "$$few"] } }, "limit": 0 }],
            "let": { "few": 3 },
        })
        .await
        .unwrap();
    assert_eq!(deleted.get_i32("n").unwrap(), 1);
    assert_eq!(ids(&c, doc! {}).await, vec![1, 2, 3]);
}

/// jstests/core/command_let_variables.js: a non-document `let` is a
/// TypeMismatch, an undefined variable is 17276, a `let` expression may not
/// read a field (4890500), and names must start with a lowercase letter.
#[tokio::test]
async fn bad_let_options_are_refused_with_mongod_codes() {
    let node = TestNode::start();
    let db = node.db("app").await;
    db.collection::<Document>("c")
        .insert_one(doc! { "_id": 1 })
        .await
        .unwrap();
    let find = |lets: Bson, filter: Document| {
        doc! { "find": "c", "filter": filter, "let": lets }
    };
    expect_code(db.run_command(find(Bson::Int32(1), doc! {})).await, 14);
    expect_code(
        db.run_command(find(
            Bson::Document(doc! { "cat": 1 }),
            doc! { "$expr": { "$eq": ["$_id", "$$dog"] } },
        ))
        .await,
        17276,
    );
    expect_code(
        db.run_command(find(Bson::Document(doc! { "a": "$_id" }), doc! {}))
            .await,
        4890500,
    );
    expect_code(
        db.run_command(find(Bson::Document(doc! { "Reserved": 1 }), doc! {}))
            .await,
        9,
    );
    expect_code(
        db.run_command(find(Bson::Document(doc! { "NOW": 1 }), doc! {}))
            .await,
        4738901,
    );
    // A null `let` is no `let`.
    db.run_command(find(Bson::Null, doc! {})).await.unwrap();
}

/// Manual, $$NOW: "Use $$NOW in $expr" — one instant per command, here the
/// node's (manual) clock.
#[tokio::test]
async fn now_in_expr_is_the_nodes_clock() {
    let start = 1_700_000_000_000;
    let clock = Arc::new(ManualClock::new(start));
    let node = TestNode::start_with_clock(clock.clone());
    let c = node.coll("app", "tasks").await;
    c.insert_many(vec![
        doc! { "_id": 1, "due": DateTime::from_millis(start - 1000) },
        doc! { "_id": 2, "due": DateTime::from_millis(start + 60_000) },
    ])
    .await
    .unwrap();
    let overdue = doc! { "$expr": { "$lt": ["$due", "$$NOW"] } };
    assert_eq!(ids(&c, overdue.clone()).await, vec![1]);
    node.advance(std::time::Duration::from_secs(120));
    assert_eq!(ids(&c, overdue).await, vec![1, 2]);
}

/// Manual, $mod: "Use $mod to Select Documents", "Floating Point
/// Arguments", and the errors for malformed arrays.
#[tokio::test]
async fn mod_selects_remainders_and_rejects_bad_arrays() {
    let node = TestNode::start();
    let c = node.coll("app", "inventory").await;
    c.insert_many(vec![
        doc! { "_id": 1, "item": "abc123", "qty": 0 },
        doc! { "_id": 2, "item": "xyz123", "qty": 5 },
        doc! { "_id": 3, "item": "ijk123", "qty": 12 },
    ])
    .await
    .unwrap();
    assert_eq!(
        ids(&c, doc! { "qty": { "$mod": [4, 0] } }).await,
        vec![1, 3]
    );
    assert_eq!(
        ids(&c, doc! { "qty": { "$mod": [4.5, 0] } }).await,
        vec![1, 3]
    );
    assert_eq!(ids(&c, doc! { "qty": { "$mod": [4.0, 1] } }).await, vec![2]);
    let msg = expect_code(c.find(doc! { "qty": { "$mod": [4] } }).await, 2);
    assert_eq!(msg, "malformed mod, not enough elements");
    let msg = expect_code(c.find(doc! { "qty": { "$mod": [4, 1, 3] } }).await, 2);
    assert_eq!(msg, "malformed mod, too many elements");
    let msg = expect_code(c.find(doc! { "qty": { "$mod": [0, 1] } }).await, 2);
    assert_eq!(msg, "divisor cannot be 0");
}

/// Manual, $comment: a comment does not change what a query matches.
#[tokio::test]
async fn comment_is_accepted_and_changes_nothing() {
    let node = TestNode::start();
    let c = node.coll("app", "c").await;
    c.insert_many(vec![doc! { "_id": 1, "x": 1 }, doc! { "_id": 2, "x": 2 }])
        .await
        .unwrap();
    assert_eq!(
        ids(
            &c,
            doc! { "x": { "$gt": 1 }, "$comment": "find the big ones" }
        )
        .await,
        vec![2]
    );
}

/// `mongod --noscripting` answers `$where` with Location6108304 ("no
/// globalScriptEngine in $where parsing"); inside `$match` it is BadValue
/// (jstests/aggregation/bugs/server6335.js). Nothing is deleted.
#[tokio::test]
async fn where_is_refused_as_mongod_without_javascript_refuses_it() {
    let node = TestNode::start_with(|c| c.security.javascript_enabled = false, None);
    let c = node.coll("app", "c").await;
    c.insert_one(doc! { "_id": 1, "x": 1 }).await.unwrap();
    let msg = expect_code(c.find(doc! { "$where": "this.x == 1" }).await, 6108304);
    assert_eq!(msg, "no globalScriptEngine in $where parsing");
    expect_code(
        c.aggregate(vec![doc! { "$match": { "$where": "this.x == 1" } }])
            .await,
        2,
    );
    expect_code(c.delete_many(doc! { "$where": "true" }).await, 6108304);
    assert_eq!(all(&c).await.len(), 1);
}

/// An unknown expression operator is InvalidPipelineOperator (168) in every
/// command, and a failed write changes nothing.
#[tokio::test]
async fn unknown_expression_operator_is_168_and_nothing_changes() {
    let node = TestNode::start();
    let c = node.coll("app", "c").await;
    c.insert_many(vec![doc! { "_id": 1, "x": 1 }, doc! { "_id": 2, "x": 2 }])
        .await
        .unwrap();
    let before = all(&c).await;
    let bogus = doc! { "$expr": { "$frobnicate": ["$x", 1] } };
    let msg = expect_code(c.find(bogus.clone()).await, 168);
    assert_eq!(msg, "Unrecognized expression '$frobnicate'");
    expect_code(
        c.update_many(bogus.clone(), doc! { "$set": { "y": 1 } })
            .await,
        168,
    );
    expect_code(c.delete_many(bogus.clone()).await, 168);
    expect_code(
        c.aggregate(vec![doc! { "$project": { "y": { "$frobnicate": 1 } } }])
            .await,
        168,
    );
    // Evaluation errors fail the command too: jstests divide.js, 16608.
    expect_code(
        c.update_many(
            doc! { "$expr": { "$divide": [1, { "$subtract": ["$x", 1] }] } },
            doc! { "$set": { "y": 1 } },
        )
        .await,
        16608,
    );
    assert_eq!(all(&c).await, before);
}

/// `$project` with arithmetic, string, conditional, array and date
/// operators; `$dateToString` formats from
/// jstests/aggregation/expressions/date_to_string.js.
#[tokio::test]
async fn aggregate_project_computes_with_several_operator_families() {
    let node = TestNode::start();
    let c = node.coll("app", "sales").await;
    c.insert_many(vec![
        doc! {
            "_id": 1, "item": "abc", "price": 10, "qty": 2,
            "tags": ["a", "b", "c"],
            "date": DateTime::from_millis(1_499_180_202_911),
        },
        doc! {
            "_id": 2, "item": "jkl", "price": 20, "qty": 1,
            "tags": [],
            "date": DateTime::from_millis(1_483_542_531_911),
        },
    ])
    .await
    .unwrap();
    let out: Vec<Document> = c
        .aggregate(vec![
            doc! { "$project": {
                "_id": 1,
                "total": { "$multiply": ["$price", "$qty"] },
                "label": { "$concat": [{ "$toUpper": "$item" }, "-", { "$toString": "$qty" }] },
                "big": { "$cond": [{ "$gte": [{ "$multiply": ["$price", "$qty"] }, 20] }, "yes", "no"] },
                "ntags": { "$size": "$tags" },
                "first": { "$ifNull": [{ "$first": "$tags" }, "none"] },
                "day": { "$dateToString": { "format": "%Y-%m-%d", "date": "$date" } },
                "ny": { "$dateToString": { "format": "%H:%M %z", "date": "$date", "timezone": "America/New_York" } },
                "ist": { "$dateToString": { "format": "%H:%M", "date": "$date", "timezone": "+05:30" } },
                "month": { "$month": "$date" },
            } },
            doc! { "$sort": { "_id": 1 } },
        ])
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    assert_eq!(
        out,
        vec![
            doc! {
                "_id": 1, "total": 20, "label": "ABC-2", "big": "yes", "ntags": 3, "first": "a",
                "day": "2017-07-04", "ny": "10:56 -0400", "ist": "20:26", "month": 7,
            },
            doc! {
                "_id": 2, "total": 20, "label": "JKL-1", "big": "yes", "ntags": 0, "first": "none",
                "day": "2017-01-04", "ny": "10:08 -0500", "ist": "20:38", "month": 1,
            },
        ]
    );
}

/// Manual, "Partial Indexes": a partial filter may not use `$expr`
/// (CannotCreateIndex, 67), and no index is created.
#[tokio::test]
async fn partial_index_filters_refuse_expr() {
    let node = TestNode::start();
    let db = node.db("app").await;
    db.collection::<Document>("c")
        .insert_one(doc! { "_id": 1, "a": 1 })
        .await
        .unwrap();
    expect_code(
        db.run_command(doc! {
            "createIndexes": "c",
            "indexes": [{
                "key": { "a": 1 }, "name": "a_1",
                "partialFilterExpression": { "$expr": { "$gt": ["$a", 0] } },
            }],
        })
        .await,
        67,
    );
    let listed = db.run_command(doc! { "listIndexes": "c" }).await.unwrap();
    let indexes = listed
        .get_document("cursor")
        .unwrap()
        .get_array("firstBatch")
        .unwrap();
    assert_eq!(indexes.len(), 1);
}

/// jstests/core/bittest.js: the bit tests on numbers, positions and BinData,
/// in find and in an aggregation's `$match`, and mongod's BadValue for bad
/// masks.
#[tokio::test]
async fn bit_tests_select_integers_and_bindata() {
    let node = TestNode::start();
    let c = node.coll("app", "bits").await;
    let values = [0.0, 1.0, 54.0, 88.0, 255.0, 1e18];
    c.insert_many(
        values
            .iter()
            .enumerate()
            .map(|(i, v)| doc! { "_id": i as i32, "a": *v }),
    )
    .await
    .unwrap();
    c.insert_one(doc! { "_id": 10, "a": "54" }).await.unwrap();
    let count = |filter: Document| {
        let c = c.clone();
        async move { c.count_documents(filter).await.unwrap() }
    };
    assert_eq!(count(doc! { "a": { "$bitsAllSet": 54 } }).await, 2);
    assert_eq!(
        count(doc! { "a": { "$bitsAllSet": [1, 2, 4, 5] } }).await,
        2
    );
    assert_eq!(count(doc! { "a": { "$bitsAllClear": 129 } }).await, 4);
    assert_eq!(count(doc! { "a": { "$bitsAnySet": 9 } }).await, 3);
    assert_eq!(count(doc! { "a": { "$bitsAnyClear": [1, 4] } }).await, 4);
    assert_eq!(
        count(doc! { "a": { "$bitsAllSet": 54, "$bitsAllClear": 201 } }).await,
        1
    );
    assert_eq!(
        count(doc! { "a": { "$not": { "$bitsAnySet": 1 } } }).await,
        5,
        "the string too"
    );
    let matched = agg(&c, vec![doc! { "$match": { "a": { "$bitsAllSet": 88 } } }]).await;
    assert_eq!(matched.len(), 2);
    let b = node.coll("app", "bin").await;
    let bin = |bytes: &[u8]| mongodb::bson::Binary {
        subtype: mongodb::bson::spec::BinarySubtype::Generic,
        bytes: bytes.to_vec(),
    };
    b.insert_many([
        doc! { "a": bin(&[0, 0]) },
        doc! { "a": bin(&[0x24, 0x03]) },
        doc! { "a": bin(&[0xff, 0xff]) },
    ])
    .await
    .unwrap();
    assert_eq!(
        b.count_documents(doc! { "a": { "$bitsAllSet": bin(&[0x04, 0x01]) } })
            .await
            .unwrap(),
        2
    );
    assert_eq!(
        b.count_documents(doc! { "a": { "$bitsAnySet": [16] } })
            .await
            .unwrap(),
        0
    );
    for bad in [
        Bson::Int32(-1),
        Bson::Double(1.5),
        Bson::String("1".into()),
        Bson::Array(vec![Bson::Int32(-1)]),
    ] {
        expect_code(c.find(doc! { "a": { "$bitsAllSet": bad } }).await, 2);
    }
}

/// jstests/aggregation/expressions/expression_trigonometric.js and
/// bitwise.js, end to end: values, and mongod's codes for what they refuse.
#[tokio::test]
async fn trigonometric_and_bitwise_expressions() {
    let node = TestNode::start();
    let c = node.coll("app", "math").await;
    c.insert_one(doc! { "_id": 1, "z": 0, "two": 2, "inf": f64::INFINITY, "s": "x", "a": 3, "b": 5, "l": 1_i64 })
        .await
        .unwrap();
    let out = agg(
        &c,
        vec![doc! { "$project": {
            "_id": 0,
            "cos": { "$cos": "$z" },
            "atan2": { "$atan2": ["$z", 1] },
            "deg": { "$radiansToDegrees": "$z" },
            "and": { "$bitAnd": ["$a", "$b"] },
            "or": { "$bitOr": ["$a", "$l"] },
            "not": { "$bitNot": "$a" },
            "missing": { "$sin": "$nothing" },
        } }],
    )
    .await;
    assert_eq!(
        out,
        vec![
            doc! { "cos": 1.0, "atan2": 0.0, "deg": 0.0, "and": 1, "or": 3_i64, "not": -4, "missing": null }
        ]
    );
    let project = |e: Document| vec![doc! { "$project": { "r": e } }];
    let msg = agg_err(&c, project(doc! { "$acos": "$two" }), 50989).await;
    assert_eq!(msg, "cannot apply $acos to 2, value must be in [-1,1]");
    agg_err(&c, project(doc! { "$tan": "$inf" }), 50989).await;
    agg_err(&c, project(doc! { "$sin": "$s" }), 28765).await;
    agg_err(&c, project(doc! { "$atan2": ["$s", 1] }), 51044).await;
    agg_err(&c, project(doc! { "$atan2": [1, "$s"] }), 51045).await;
    agg_err(&c, project(doc! { "$bitAnd": ["$a", 1.5] }), 14).await;
    agg_err(&c, project(doc! { "$bitNot": ["$a", "$b"] }), 16020).await;
}

/// `$rand` draws per document and `$sampleRate` keeps each document with
/// its probability, in find and in an aggregation.
#[tokio::test]
async fn rand_and_sample_rate() {
    let node = TestNode::start();
    let c = node.coll("app", "sample").await;
    c.insert_many((0..200).map(|i| doc! { "_id": i }))
        .await
        .unwrap();
    let drawn = agg(&c, vec![doc! { "$project": { "r": { "$rand": {} } } }]).await;
    let r: Vec<f64> = drawn.iter().map(|d| d.get_f64("r").unwrap()).collect();
    assert!(r.iter().all(|x| (0.0..1.0).contains(x)));
    assert!(r.windows(2).any(|w| w[0] != w[1]), "a value per document");
    assert_eq!(
        c.count_documents(doc! { "$sampleRate": 1.0 })
            .await
            .unwrap(),
        200
    );
    assert_eq!(
        c.count_documents(doc! { "$sampleRate": 0.0 })
            .await
            .unwrap(),
        0
    );
    let some = agg(&c, vec![doc! { "$match": { "$sampleRate": 0.5 } }])
        .await
        .len();
    assert!((40..=160).contains(&some), "{some}");
    expect_code(c.find(doc! { "$sampleRate": 2 }).await, 2);
    agg_err(
        &c,
        vec![doc! { "$project": { "r": { "$rand": { "x": 1 } } } }],
        3040500,
    )
    .await;
}

/// jstests/aggregation/accumulators/{median,percentiles}_approx.js: the
/// value at rank ⌈p·n⌉ of the numbers (others ignored), as an accumulator,
/// a window function and an array expression; timestamps' parts, sizes
/// and hashed index keys with mongod's codes.
#[tokio::test]
async fn percentiles_medians_and_value_facts_as_mongod_computes_them() {
    let node = TestNode::start();
    let c = node.coll("app", "samples").await;
    c.insert_many(vec![
        doc! { "_id": 1, "k": 0, "x": 2 },
        doc! { "_id": 2, "k": 0, "x": 1 },
        doc! { "_id": 3, "k": 1, "x": 2 },
        doc! { "_id": 4, "k": 2 },
        doc! { "_id": 5, "k": 0, "x": "str" },
        doc! { "_id": 6, "k": 1, "x": 0 },
        doc! { "_id": 7, "k": 0, "x": f64::NAN },
    ])
    .await
    .unwrap();
    let grouped = agg(
        &c,
        vec![
            doc! { "$group": {
                "_id": "$k",
                "m": { "$median": { "input": "$x", "method": "approximate" } },
                "p": { "$percentile": { "input": "$x", "p": [0.9, 0.1], "method": "approximate" } },
            } },
            doc! { "$sort": { "_id": 1 } },
        ],
    )
    .await;
    let shown: Vec<(Bson, Bson)> = grouped
        .iter()
        .map(|d| (d.get("m").unwrap().clone(), d.get("p").unwrap().clone()))
        .collect();
    assert_eq!(
        shown,
        vec![
            (Bson::Double(1.0), Bson::from(vec![2.0, 1.0])),
            (Bson::Double(0.0), Bson::from(vec![2.0, 0.0])),
            (Bson::Null, Bson::from(vec![Bson::Null, Bson::Null])),
        ]
    );
    // A window of the two documents before and this one.
    let windowed = agg(
        &c,
        vec![
            doc! { "$match": { "x": { "$type": "number" }, "_id": { "$ne": 7 } } },
            doc! { "$setWindowFields": {
                "sortBy": { "_id": 1 },
                "output": { "m": {
                    "$median": { "input": "$x", "method": "approximate" },
                    "window": { "documents": [-2, 0] },
                } },
            } },
            doc! { "$project": { "m": 1 } },
        ],
    )
    .await;
    let medians: Vec<f64> = windowed.iter().map(|d| d.get_f64("m").unwrap()).collect();
    assert_eq!(medians, [2.0, 1.0, 2.0, 1.0]);
    let out = agg(
        &c,
        vec![
            doc! { "$match": { "_id": 1 } },
            doc! { "$project": {
                "_id": 0,
                "m": { "$median": { "input": [5, 1, "x", 3], "method": "approximate" } },
                "p": { "$percentile": { "input": [5, 1, 3], "p": [1], "method": "approximate" } },
                "one": { "$median": { "input": 7, "method": "approximate" } },
                "sec": { "$tsSecond": { "$literal": mongodb::bson::Timestamp { time: 1700000000, increment: 5 } } },
                "inc": { "$tsIncrement": { "$literal": mongodb::bson::Timestamp { time: 1700000000, increment: 5 } } },
                "bytes": { "$binarySize": "héllo" },
                "size": { "$bsonSize": { "a": 1 } },
                "none": { "$bsonSize": null },
                "hashed": { "$toHashedIndexKey": 1 },
            } },
        ],
    )
    .await;
    assert_eq!(
        out[0],
        doc! {
            "m": 3.0, "p": [5.0], "one": 7.0, "sec": 1_700_000_000i64, "inc": 5i64,
            "bytes": 6, "size": 12, "none": null,
            // mongod's hash of 1, as its hashed shard keys show it.
            "hashed": 5902408780260971510i64,
        }
    );
    for (stage, code) in [
        (doc! { "$project": { "v": { "$tsSecond": 1 } } }, 5687301),
        (doc! { "$project": { "v": { "$binarySize": 1 } } }, 51276),
        (doc! { "$project": { "v": { "$bsonSize": "a" } } }, 31393),
        (
            doc! { "$group": { "_id": null, "v": { "$percentile": { "input": "$x", "p": [2], "method": "approximate" } } } },
            9,
        ),
        (
            doc! { "$group": { "_id": null, "v": { "$percentile": { "input": "$x", "p": ["$x"], "method": "approximate" } } } },
            9,
        ),
        (
            doc! { "$group": { "_id": null, "v": { "$median": { "input": "$x", "method": "fancy" } } } },
            9,
        ),
        (
            doc! { "$group": { "_id": null, "v": { "$median": { "input": "$x" } } } },
            9,
        ),
    ] {
        agg_err(&c, vec![stage], code).await;
    }
}
