//! Wildcard indexes as mongod builds and plans them: `{"$**": 1}` keys
//! every leaf path (a subtree's with `a.$**`, a `wildcardProjection`'s
//! choice otherwise), a predicate on one path reads that path's entries
//! (explain's `{$_path: 1, <path>: 1}`), and every answer is the one a
//! collection scan gives; what a wildcard index cannot be is refused with
//! mongod's codes.

use futures::TryStreamExt;
use mongodb::bson::{Bson, Document, doc};
use mongodb::options::Hint;
use mongodb::{Collection, Database};

use crate::common::{TestNode, expect_code, first_batch, message};

/// The same documents every run: nested documents, arrays of values and
/// of documents, nested and empty arrays, empty documents, mixed types.
fn shapes() -> Vec<Document> {
    let mut x = 0x2545_F491_4F6C_DD1Du64;
    let mut next = move |n: u64| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % n
    };
    let mut docs = Vec::new();
    for i in 0..1500 {
        let v = next(50) as i32;
        let scalar = |k: u64| -> Bson {
            match k {
                0 => Bson::Int32(v),
                1 => Bson::Double(f64::from(v) + 0.5),
                2 => Bson::String(format!("s{v:02}")),
                3 => Bson::Null,
                _ => Bson::Boolean(v % 2 == 0),
            }
        };
        let mut d = doc! { "_id": i };
        match next(8) {
            0 => {}
            1 => {
                d.insert("a", scalar(next(5)));
            }
            2 => {
                d.insert("a", vec![scalar(next(5)), Bson::Int32(v + 1)]);
            }
            3 => {
                d.insert("a", Bson::Array(vec![]));
            }
            4 => {
                d.insert("a", vec![Bson::Array(vec![Bson::Int32(v)])]);
            }
            5 => {
                d.insert("a", doc! {});
            }
            6 => {
                d.insert("a", doc! { "0": v });
            }
            _ => {
                d.insert("a", doc! { "b": scalar(next(5)) });
            }
        }
        match next(4) {
            0 => {
                d.insert("b", doc! { "c": v, "d": { "e": scalar(next(5)) } });
            }
            1 => {
                d.insert("b", vec![doc! { "c": v }, doc! { "c": v + 2, "d": [] }]);
            }
            2 => {
                d.insert("b", doc! { "c": [v, v * 2], "f": {} });
            }
            _ => {}
        }
        docs.push(d);
    }
    docs
}

async fn create(db: &Database, coll: &str, spec: Document) -> mongodb::error::Result<Document> {
    db.run_command(doc! { "createIndexes": coll, "indexes": [spec] })
        .await
}

async fn ids_hinted(c: &Collection<Document>, filter: &Document, hint: Document) -> Vec<i32> {
    ids_with(c, filter, Hint::Keys(hint)).await
}

async fn ids_with(c: &Collection<Document>, filter: &Document, hint: Hint) -> Vec<i32> {
    let docs: Vec<Document> = c
        .find(filter.clone())
        .hint(hint)
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    let mut ids: Vec<i32> = docs.iter().map(|d| d.get_i32("_id").unwrap()).collect();
    ids.sort_unstable();
    ids
}

/// The winning plan's scan: `(stage, keyPattern, indexBounds)`.
async fn scan(db: &Database, coll: &str, filter: &Document) -> (String, Document, Document) {
    let r = db
        .run_command(doc! {
            "explain": { "find": coll, "filter": filter.clone() },
            "verbosity": "queryPlanner",
        })
        .await
        .unwrap();
    let mut stage = r
        .get_document("queryPlanner")
        .unwrap()
        .get_document("winningPlan")
        .unwrap()
        .clone();
    while let Ok(inner) = stage.get_document("inputStage") {
        stage = inner.clone();
    }
    (
        stage.get_str("stage").unwrap().to_owned(),
        stage
            .get_document("keyPattern")
            .cloned()
            .unwrap_or_default(),
        stage
            .get_document("indexBounds")
            .cloned()
            .unwrap_or_default(),
    )
}

/// Filters a `{"$**": 1}` index serves, with the path it reads.
fn served() -> Vec<(Document, &'static str)> {
    vec![
        (doc! { "a": 7 }, "a"),
        (doc! { "a": { "$in": [3, 9, "s04"] } }, "a"),
        (doc! { "a": { "$gt": 10, "$lte": 30 } }, "a"),
        (doc! { "a": { "$gte": "s1", "$lt": "s3" } }, "a"),
        (doc! { "a": { "$regex": "^s2" } }, "a"),
        (doc! { "a": true }, "a"),
        (doc! { "a": [] }, "a"),
        (doc! { "a": {} }, "a"),
        (doc! { "a": [7] }, "a"),
        (doc! { "a": { "$exists": true } }, "a"),
        (doc! { "a.b": 12 }, "a.b"),
        (doc! { "a.b": { "$lt": 5 } }, "a.b"),
        (doc! { "a.0": 7 }, "a.0"),
        (doc! { "a.0": { "$exists": true } }, "a.0"),
        (doc! { "b.c": 14 }, "b.c"),
        (doc! { "b.c": { "$gt": 90 } }, "b.c"),
        (doc! { "b.d": { "$exists": true } }, "b.d"),
        (doc! { "b.d": [] }, "b.d"),
        (doc! { "b.d.e": { "$gte": 20, "$lt": 25 } }, "b.d.e"),
        (doc! { "b.f": {} }, "b.f"),
        (doc! { "b.1.c": 9 }, "b.1.c"),
        (doc! { "b.c": 30, "a": { "$exists": false } }, "b.c"),
    ]
}

/// Filters it cannot serve: a missing path has no entry, a non-empty
/// document is keyed by its leaves.
fn unserved() -> Vec<Document> {
    vec![
        doc! { "a": null },
        doc! { "a": { "$exists": false } },
        doc! { "a": { "$in": [null, 3] } },
        doc! { "b": { "c": 4 } },
        doc! { "a": { "$ne": 3 } },
    ]
}

#[tokio::test]
async fn a_wildcard_index_answers_every_path_as_a_collection_scan_does() {
    let node = TestNode::start();
    let db = node.db("wild").await;
    let c = db.collection::<Document>("shapes");
    c.insert_many(shapes()).await.unwrap();
    create(&db, "shapes", doc! { "key": { "$**": 1 }, "name": "$**_1" })
        .await
        .unwrap();
    for (filter, path) in served() {
        let (stage, key, bounds) = scan(&db, "shapes", &filter).await;
        assert_eq!(stage, "IXSCAN", "{filter}");
        assert_eq!(key, doc! { "$_path": 1, path: 1 }, "{filter}");
        assert!(
            bounds
                .get_array("$_path")
                .unwrap()
                .contains(&Bson::String(format!("[\"{path}\", \"{path}\"]"))),
            "{filter}: {bounds}"
        );
        let wild = ids_hinted(&c, &filter, doc! { "$**": 1 }).await;
        let scanned = ids_hinted(&c, &filter, doc! { "$natural": 1 }).await;
        assert_eq!(wild, scanned, "{filter}");
    }
    // Bounds as mongod shows them.
    let (_, _, bounds) = scan(&db, "shapes", &doc! { "a": { "$gt": 10 } }).await;
    assert_eq!(
        bounds,
        doc! { "$_path": ["[\"a\", \"a\"]"], "a": ["(10, inf.0]"] }
    );
    let (_, _, bounds) = scan(&db, "shapes", &doc! { "b.d": { "$exists": true } }).await;
    assert_eq!(
        bounds,
        doc! {
            "$_path": ["[\"b.d\", \"b.d\"]", "[\"b.d.\", \"b.d/\")"],
            "b.d": ["[MinKey, MaxKey]"],
        }
    );
    for filter in unserved() {
        let (stage, _, _) = scan(&db, "shapes", &filter).await;
        assert_ne!(stage, "IXSCAN", "{filter}");
    }
    // Writes keep the entries: an update moves a document between values,
    // a delete takes its entries away.
    let c2 = db.collection::<Document>("shapes");
    c2.update_one(doc! { "_id": 1 }, doc! { "$set": { "z.y": 4242 } })
        .await
        .unwrap();
    assert_eq!(
        ids_hinted(&c, &doc! { "z.y": 4242 }, doc! { "$**": 1 }).await,
        [1]
    );
    c2.update_one(doc! { "_id": 1 }, doc! { "$set": { "z.y": [4343] } })
        .await
        .unwrap();
    assert!(
        ids_hinted(&c, &doc! { "z.y": 4242 }, doc! { "$**": 1 })
            .await
            .is_empty()
    );
    assert_eq!(
        ids_hinted(&c, &doc! { "z.y": 4343 }, doc! { "$**": 1 }).await,
        [1]
    );
    c2.delete_one(doc! { "_id": 1 }).await.unwrap();
    assert!(
        ids_hinted(&c, &doc! { "z.y": 4343 }, doc! { "$**": 1 })
            .await
            .is_empty()
    );
    let v = db.run_command(doc! { "validate": "shapes" }).await.unwrap();
    assert!(v.get_bool("valid").unwrap(), "{v}");
}

#[tokio::test]
async fn a_subtree_or_a_projection_chooses_the_paths_held() {
    let node = TestNode::start();
    let db = node.db("wild").await;
    let c = db.collection::<Document>("shapes");
    c.insert_many(shapes()).await.unwrap();
    create(&db, "shapes", doc! { "key": { "b.$**": 1 }, "name": "b" })
        .await
        .unwrap();
    create(
        &db,
        "shapes",
        doc! { "key": { "$**": 1 }, "name": "some", "wildcardProjection": { "a": 1, "_id": 1 } },
    )
    .await
    .unwrap();
    let batch = first_batch(&db, doc! { "listIndexes": "shapes" }).await;
    assert!(batch.iter().any(|i| {
        i.get_document("wildcardProjection").ok() == Some(&doc! { "a": 1, "_id": 1 })
    }));
    // Held by the subtree index, by the projection, by neither.
    for (filter, index) in [
        (doc! { "b.c": 14 }, Some("b")),
        (doc! { "b.d.e": { "$gt": 40 } }, Some("b")),
        (doc! { "a": 7 }, Some("some")),
        (doc! { "a.b": { "$lt": 4 } }, Some("some")),
        (doc! { "_id": 7, "a": 7 }, None),
    ] {
        let r = db
            .run_command(doc! {
                "explain": { "find": "shapes", "filter": filter.clone() },
                "verbosity": "queryPlanner",
            })
            .await
            .unwrap();
        let shown = format!("{r}");
        match index {
            Some(name) => assert!(
                shown.contains(&format!("\"indexName\": \"{name}\"")),
                "{shown}"
            ),
            None => assert!(shown.contains("IDHACK"), "{shown}"),
        }
        let hint = match index {
            Some(name) => Hint::Name(name.to_owned()),
            None => Hint::Keys(doc! { "$natural": 1 }),
        };
        assert_eq!(
            ids_with(&c, &filter, hint).await,
            ids_hinted(&c, &filter, doc! { "$natural": 1 }).await,
            "{filter}"
        );
    }
    // `_id` is held only when the projection includes it.
    let by_name = |filter: Document, name: &str| c.find(filter).hint(Hint::Name(name.to_owned()));
    let found = ids_with(&c, &doc! { "_id": 5 }, Hint::Name("some".to_owned())).await;
    assert_eq!(found.len(), 1);
    // A hinted wildcard index that holds no path of the query: 291.
    let e = by_name(doc! { "a": 1 }, "b").await.map(|_| ());
    expect_code(e, 291);
    // min/max need key fields the wildcard index does not have: 51174.
    let e = db
        .run_command(doc! {
            "find": "shapes", "filter": { "b.c": 1 }, "min": { "a": 1 }, "hint": { "b.$**": 1 },
        })
        .await;
    expect_code(e, 51174);
    let e = db
        .run_command(doc! {
            "find": "shapes", "filter": { "b.c": 1 }, "returnKey": true, "hint": { "b.$**": 1 },
        })
        .await;
    expect_code(e, 238);
}

#[tokio::test]
async fn a_collated_wildcard_index_serves_queries_in_its_collation() {
    let node = TestNode::start();
    let db = node.db("wild").await;
    let c = db.collection::<Document>("people");
    c.insert_many(vec![
        doc! { "_id": 1, "name": "alice", "tags": ["Rust", "go"] },
        doc! { "_id": 2, "name": "ALICE" },
        doc! { "_id": 3, "name": "bob", "tags": ["RUST"] },
    ])
    .await
    .unwrap();
    let strength2 = doc! { "locale": "en", "strength": 2 };
    create(
        &db,
        "people",
        doc! { "key": { "$**": 1 }, "name": "all", "collation": strength2.clone() },
    )
    .await
    .unwrap();
    let run = |filter: Document, collation: Option<Document>| {
        let mut find = doc! { "find": "people", "filter": filter, "sort": { "_id": 1 } };
        if let Some(c) = collation {
            find.insert("collation", c);
        }
        let db = db.clone();
        async move {
            let r = db
                .run_command(doc! { "explain": find.clone(), "verbosity": "queryPlanner" })
                .await
                .unwrap();
            let shown = format!("{r}");
            let ids: Vec<i32> = first_batch(&db, find)
                .await
                .iter()
                .map(|d| d.get_i32("_id").unwrap())
                .collect();
            (shown.contains("\"indexName\": \"all\""), ids)
        }
    };
    assert_eq!(
        run(doc! { "name": "Alice" }, Some(strength2.clone())).await,
        (true, vec![1, 2])
    );
    assert_eq!(
        run(doc! { "tags": "rust" }, Some(strength2)).await,
        (true, vec![1, 3])
    );
    // Without the collation its string bounds mean nothing: a scan.
    assert_eq!(run(doc! { "name": "Alice" }, None).await, (false, vec![]));
    assert_eq!(run(doc! { "name": "alice" }, None).await, (false, vec![1]));
}

#[tokio::test]
async fn what_a_wildcard_index_cannot_be_is_refused_as_mongod_refuses_it() {
    let node = TestNode::start();
    let db = node.db("wild").await;
    let refused = [
        (doc! { "key": { "$**": 0 }, "name": "x" }, 67),
        (
            doc! { "key": { "$**": 1 }, "name": "x", "sparse": true },
            67,
        ),
        (
            doc! { "key": { "$**": 1 }, "name": "x", "unique": true },
            67,
        ),
        (
            doc! { "key": { "$**": 1 }, "name": "x", "expireAfterSeconds": 60 },
            67,
        ),
        (doc! { "key": { "$**": "hashed" }, "name": "x" }, 67),
        (doc! { "key": { "$**": "2dsphere" }, "name": "x" }, 67),
        (doc! { "key": { "$**": "2d" }, "name": "x" }, 67),
        (doc! { "key": { "a.$**": "text" }, "name": "x" }, 67),
        (doc! { "key": { "$**": "wildcard" }, "name": "x" }, 67),
        (doc! { "key": { "a.$**.$**": 1 }, "name": "x" }, 67),
        (doc! { "key": { "$**.$**": 1 }, "name": "x" }, 67),
        (doc! { "key": { "$**": 1, "b": 1 }, "name": "x" }, 67),
        (
            doc! { "key": { "$**": 1 }, "name": "x", "wildcardProjection": { "a": 1, "b": 0 } },
            31254,
        ),
        (
            doc! { "key": { "$**": 1 }, "name": "x", "wildcardProjection": { "a": 0, "b": 1 } },
            31253,
        ),
        (
            doc! { "key": { "$**": 1 }, "name": "x", "wildcardProjection": { "a": 1, "b": "s" } },
            51271,
        ),
        (
            doc! { "key": { "$**": 1 }, "name": "x", "wildcardProjection": {} },
            9,
        ),
        (
            doc! { "key": { "a": 1 }, "name": "x", "wildcardProjection": { "a": 1 } },
            2,
        ),
        (
            doc! { "key": { "$**": "text" }, "name": "x", "wildcardProjection": { "a": 1 } },
            2,
        ),
        (
            doc! { "key": { "a.$**": 1 }, "name": "x", "wildcardProjection": "s" },
            14,
        ),
        (
            doc! { "key": { "a.$**": 1 }, "name": "x", "wildcardProjection": { "a": 1 } },
            9,
        ),
    ];
    for (spec, code) in refused {
        let e = create(&db, "c", spec.clone()).await;
        let msg = expect_code(e, code);
        assert!(!msg.is_empty(), "{spec}");
    }
    // What mongod takes: a descending one, a partial one, an exclusion
    // that keeps `_id`, an inclusion that drops it.
    for spec in [
        doc! { "key": { "$**": -1 }, "name": "down" },
        doc! { "key": { "a.$**": 1 }, "name": "part", "partialFilterExpression": { "a": { "$gt": 0 } } },
        doc! { "key": { "$**": 1 }, "name": "ex", "wildcardProjection": { "_id": 1, "a": 0 } },
    ] {
        create(&db, "c", spec.clone())
            .await
            .unwrap_or_else(|e| panic!("{spec}: {}", message(&e)));
    }
    let e = create(
        &db,
        "c",
        doc! { "key": { "$**": 1 }, "name": "in", "wildcardProjection": { "_id": 0, "a": { "b": 1 } } },
    )
    .await;
    e.unwrap();
    // The descending index answers ranges in the same order-free way.
    let c = db.collection::<Document>("c");
    c.insert_many(vec![
        doc! { "_id": 1, "a": 5 },
        doc! { "_id": 2, "a": [6, 7] },
        doc! { "_id": 3, "a": { "b": 8 } },
    ])
    .await
    .unwrap();
    assert_eq!(
        ids_hinted(&c, &doc! { "a": { "$gte": 6 } }, doc! { "$**": -1 }).await,
        [2]
    );
    assert_eq!(
        ids_with(&c, &doc! { "a.b": 8 }, Hint::Name("in".to_owned())).await,
        [3]
    );
}
