//! `$regex` and BSON regular-expression values end to end. Expected
//! results follow the MongoDB manual's `$regex` page and the jstests it
//! rests on (`jstests/core/query/regex/regex*.js`, `jstests/core/query/in/in*.js`
//! for regexes in `$in`, `not2.js` for `$not`).

use crate::common::{TestNode, cases, create_index, expect_code, ids};
use mongodb::bson::{Bson, Document, Regex, doc};
use mongodb::{Collection, Database};

fn re(pattern: &str, options: &str) -> Bson {
    Bson::RegularExpression(Regex {
        pattern: pattern.try_into().unwrap(),
        options: options.try_into().unwrap(),
    })
}

async fn sample(node: &TestNode) -> (Database, Collection<Document>) {
    let db = node.db("t").await;
    let c = db.collection::<Document>("r");
    c.insert_many(vec![
        doc! { "_id": 1, "a": "abc" },
        doc! { "_id": 2, "a": "ABC" },
        doc! { "_id": 3, "a": "xabc" },
        doc! { "_id": 4, "a": "line\nabc" },
        doc! { "_id": 5, "a": re("abc", "") },
        doc! { "_id": 6, "a": 5 },
        doc! { "_id": 7, "a": ["zz", "abc1"] },
        doc! { "_id": 8 },
    ])
    .await
    .unwrap();
    (db, c)
}

/// The forms of a regex query and what each matches (manual, `$regex`:
/// "Syntax", "Perform a LIKE Match", "Case Insensitive", multi-line `m`).
#[tokio::test]
async fn regex_forms_match_as_mongod_does() {
    let node = TestNode::start();
    let (_db, c) = sample(&node).await;
    // A regex value matches strings it finds a match in, array elements,
    // and a stored regex equal to it.
    assert_eq!(ids(&c, doc! { "a": re("abc", "") }).await, [1, 3, 4, 5, 7]);
    assert_eq!(ids(&c, doc! { "a": re("^abc", "") }).await, [1, 7]);
    assert_eq!(
        ids(&c, doc! { "a": { "$regex": "^abc", "$options": "i" } }).await,
        [1, 2, 7]
    );
    assert_eq!(
        ids(&c, doc! { "a": { "$options": "i", "$regex": "^abc" } }).await,
        [1, 2, 7]
    );
    assert_eq!(
        ids(&c, doc! { "a": { "$regex": re("^abc", "i") } }).await,
        [1, 2, 7]
    );
    assert_eq!(
        ids(
            &c,
            doc! { "a": { "$regex": re("^abc", ""), "$options": "i" } }
        )
        .await,
        [1, 2, 7]
    );
    // `m`: ^ matches after a newline too.
    assert_eq!(
        ids(&c, doc! { "a": { "$regex": "^abc$", "$options": "m" } }).await,
        [1, 4]
    );
    // `x`: whitespace and comments in the pattern are ignored.
    assert_eq!(
        ids(
            &c,
            doc! { "a": { "$regex": "^a b c # abc", "$options": "x" } }
        )
        .await,
        [1, 7]
    );
    // `s`: dot matches newline.
    assert_eq!(
        ids(&c, doc! { "a": { "$regex": "line.abc", "$options": "s" } }).await,
        [4]
    );
    assert_eq!(
        ids(&c, doc! { "a": { "$regex": "line.abc" } }).await,
        Vec::<i32>::new()
    );
    // `$eq` with a regex is equality with a stored regex only.
    assert_eq!(ids(&c, doc! { "a": { "$eq": re("abc", "") } }).await, [5]);
    // Regexes in `$in`, `$nin`, `$all` and under `$not`.
    assert_eq!(
        ids(&c, doc! { "a": { "$in": [re("^x", ""), 5] } }).await,
        [3, 6]
    );
    assert_eq!(
        ids(&c, doc! { "a": { "$nin": [re("b", ""), 5] } }).await,
        [2, 5, 8]
    );
    assert_eq!(
        ids(&c, doc! { "a": { "$not": re("b", "") } }).await,
        [2, 5, 6, 8]
    );
    assert_eq!(
        ids(
            &c,
            doc! { "a": { "$not": { "$regex": "B", "$options": "i" } } }
        )
        .await,
        [5, 6, 8]
    );
    assert_eq!(
        ids(&c, doc! { "a": { "$all": [re("^z", ""), re("^abc", "")] } }).await,
        [7]
    );
    assert_eq!(
        ids(&c, doc! { "a": { "$elemMatch": { "$regex": "1$" } } }).await,
        [7]
    );
    // PCRE features: backreferences and lookaround.
    assert_eq!(
        ids(&c, doc! { "a": { "$regex": "(b)c$" } }).await,
        [1, 3, 4]
    );
    assert_eq!(ids(&c, doc! { "a": { "$regex": "a(?=bc1)" } }).await, [7]);
    assert_eq!(
        ids(&c, doc! { "a": { "$regex": "(?<!x)abc$" } }).await,
        [1, 4]
    );
}

/// A regex that cannot compile gets mongod's error, and a write whose
/// query has one changes nothing.
#[tokio::test]
async fn bad_regexes_get_mongods_errors() {
    let node = TestNode::start();
    let (db, c) = sample(&node).await;
    let r = db
        .run_command(doc! { "find": "r", "filter": { "a": { "$regex": "(" } } })
        .await;
    expect_code(r, 51091);
    let r = db
        .run_command(doc! { "find": "r", "filter": { "a": { "$regex": "a", "$options": "q" } } })
        .await;
    expect_code(r, 51108);
    let r = db
        .run_command(doc! { "find": "r", "filter": { "a": { "$options": "i" } } })
        .await;
    expect_code(r, 2);
    let r = db
        .run_command(
            doc! { "find": "r", "filter": { "a": { "$regex": re("a", "i"), "$options": "m" } } },
        )
        .await;
    expect_code(r, 51075);
    let r = c
        .update_many(doc! { "a": { "$regex": "[" } }, doc! { "$set": { "x": 1 } })
        .await;
    expect_code(r, 51091);
    assert_eq!(c.count_documents(doc! { "x": 1 }).await.unwrap(), 0);
}

/// A pattern whose matching would backtrack without end fails the query
/// (bounded by the engine's backtracking limit) rather than hanging a
/// thread or quietly dropping the document.
#[tokio::test]
async fn pathological_regex_fails_instead_of_hanging() {
    let node = TestNode::start();
    let db = node.db("t").await;
    let c = db.collection::<Document>("p");
    c.insert_one(doc! { "a": format!("{}b", "a".repeat(40)) })
        .await
        .unwrap();
    let r = db
        .run_command(doc! { "find": "p", "filter": { "a": { "$regex": r"^(a|aa)+\1x" } } })
        .await;
    let message = expect_code(r, 2);
    assert!(message.contains("backtracking limit"), "{message}");
}

fn ixscan_bounds(explain: &Document) -> Option<Document> {
    let mut stage = explain
        .get_document("queryPlanner")
        .unwrap()
        .get_document("winningPlan")
        .unwrap();
    loop {
        if stage.get_str("stage").ok() == Some("IXSCAN") {
            return stage.get_document("indexBounds").ok().cloned();
        }
        stage = stage.get_document("inputStage").ok()?;
    }
}

/// An anchored, case-sensitive prefix becomes index bounds (manual,
/// `$regex` "Index Use"); a case-insensitive one does not.
#[tokio::test]
async fn anchored_prefix_regex_uses_index_bounds() {
    let node = TestNode::start();
    let (db, c) = sample(&node).await;
    create_index(&c, doc! { "a": 1 }).await;
    let explain = db
        .run_command(doc! { "explain": { "find": "r", "filter": { "a": re("^abc", "") } } })
        .await
        .unwrap();
    let bounds = ixscan_bounds(&explain).expect("an index scan");
    let a = bounds.get_array("a").unwrap();
    assert_eq!(a[0].as_str(), Some("[\"abc\", \"abd\")"), "{bounds}");
    assert_eq!(ids(&c, doc! { "a": re("^abc", "") }).await, [1, 7]);
    let explain = db
        .run_command(doc! { "explain": { "find": "r", "filter": { "a": re("^abc", "i") } } })
        .await
        .unwrap();
    assert!(ixscan_bounds(&explain).is_none(), "{explain}");
}

/// Property: prefix bounds never lose a match — a hinted index scan and a
/// collection scan return the same documents for anchored patterns.
#[tokio::test]
async fn regex_prefix_bounds_never_lose_a_match() {
    use proptest::prelude::*;

    let node = TestNode::start();
    let db = node.db("t").await;
    let c = db.collection::<Document>("q");
    let words = [
        "",
        "a",
        "ab",
        "abc",
        "abd",
        "abc\u{10FFFF}",
        "ab\u{10FFFF}",
        "b",
        "aB",
        "ä",
        "äb",
        "a\nb",
        "a.b",
        "a+b",
        "abcabc",
        "zz",
    ];
    let mut docs: Vec<Document> = words
        .iter()
        .enumerate()
        .map(|(i, w)| doc! { "_id": i as i32, "w": *w })
        .collect();
    docs.push(doc! { "_id": 100, "w": ["x", "abc"] });
    docs.push(doc! { "_id": 101, "w": re("^ab", "") });
    c.insert_many(docs).await.unwrap();
    create_index(&c, doc! { "w": 1 }).await;
    create_index(&c, doc! { "w": -1 }).await;
    let strategy = (
        proptest::sample::select(vec!["", "a", "ab", "abc", "ä", "a\\.", "z"]),
        proptest::sample::select(vec!["", ".*", "?", "c*", "$", "\\.b", "b{1,2}", "(c|d)"]),
        proptest::sample::select(vec!["^", "\\A"]),
        proptest::sample::select(vec!["", "s", "m", "u"]),
        any::<bool>(),
    );
    for (literal, tail, anchor, options, descending) in cases(strategy, 64) {
        let pattern = format!("{anchor}{literal}{tail}");
        let filter = doc! { "w": { "$regex": &pattern, "$options": options } };
        let hint = if descending { "w_-1" } else { "w_1" };
        let run = |hint: Bson| {
            let db = db.clone();
            let filter = filter.clone();
            async move {
                let reply = db
                    .run_command(
                        doc! { "find": "q", "filter": filter, "hint": hint, "batchSize": 1000 },
                    )
                    .await
                    .unwrap();
                let mut v: Vec<i32> = reply
                    .get_document("cursor")
                    .unwrap()
                    .get_array("firstBatch")
                    .unwrap()
                    .iter()
                    .map(|d| d.as_document().unwrap().get_i32("_id").unwrap())
                    .collect();
                v.sort();
                v
            }
        };
        let by_index = run(Bson::String(hint.into())).await;
        let by_scan = run(Bson::Document(doc! { "$natural": 1 })).await;
        assert_eq!(by_index, by_scan, "/{pattern}/{options} via {hint}");
    }
}

/// The manual's `$regexMatch` / `$regexFind` / `$regexFindAll` pages, as
/// an application uses them: in `$expr` and in a computed field.
#[tokio::test]
async fn regex_expression_operators() {
    let node = TestNode::start();
    let db = node.db("t").await;
    let c = db.collection::<Document>("products");
    c.insert_many(vec![
        doc! { "_id": 1, "description": "Single LINE description." },
        doc! { "_id": 2, "description": "First lines\nsecond line" },
        doc! { "_id": 3, "description": "Many spaces before     line" },
        doc! { "_id": 4, "description": "Multiple\nline descriptions" },
        doc! { "_id": 5, "description": "café" },
    ])
    .await
    .unwrap();
    let matched = ids(
        &c,
        doc! { "$expr": { "$regexMatch": { "input": "$description", "regex": "line", "options": "i" } } },
    )
    .await;
    assert_eq!(matched, [1, 2, 3, 4]);
    let reply = db
        .run_command(doc! { "aggregate": "products", "pipeline": [
            { "$match": { "_id": { "$in": [1, 2] } } },
            { "$addFields": {
                "first": { "$regexFind": { "input": "$description", "regex": re("line", "i") } },
                "all": { "$regexFindAll": { "input": "$description", "regex": "(l)ine" } },
            } },
            { "$sort": { "_id": 1 } },
        ], "cursor": {} })
        .await
        .unwrap();
    let batch = reply
        .get_document("cursor")
        .unwrap()
        .get_array("firstBatch")
        .unwrap();
    let first = batch[0].as_document().unwrap();
    assert_eq!(
        first.get_document("first").unwrap(),
        &doc! { "match": "LINE", "idx": 7, "captures": [] }
    );
    assert_eq!(first.get_array("all").unwrap().len(), 0);
    let second = batch[1].as_document().unwrap();
    let all = second.get_array("all").unwrap();
    assert_eq!(all.len(), 2);
    assert_eq!(
        all[1].as_document().unwrap(),
        &doc! { "match": "line", "idx": 19, "captures": ["l"] }
    );
    let r = db
        .run_command(doc! { "aggregate": "products", "pipeline": [
            { "$project": { "x": { "$regexMatch": { "input": "$description", "regex": "(" } } } },
        ], "cursor": {} })
        .await;
    expect_code(r, 51111);
}
