//! The writing stages `$out` and `$merge`, end to end through the driver:
//! what the target holds afterwards, and that a refused or failed write
//! leaves it as it was. Each test names the MongoDB manual page or jstest
//! its expectation comes from.

use crate::common::{TestNode, all, create_index, expect_code, first_batch};
use futures::TryStreamExt;
use mongodb::bson::{Document, doc};
use mongodb::options::IndexOptions;
use mongodb::{Collection, IndexModel};

async fn run(c: &Collection<Document>, pipeline: Vec<Document>) -> mongodb::error::Result<()> {
    let out: Vec<Document> = c.aggregate(pipeline).await?.try_collect().await?;
    assert!(
        out.is_empty(),
        "a writing stage returns no documents: {out:?}"
    );
    Ok(())
}

async fn unique_index(c: &Collection<Document>, keys: Document) {
    c.create_index(
        IndexModel::builder()
            .keys(keys)
            .options(IndexOptions::builder().unique(true).build())
            .build(),
    )
    .await
    .unwrap();
}

async fn source(node: &TestNode) -> Collection<Document> {
    let c = node.coll("w", "source").await;
    c.insert_many(vec![
        doc! { "_id": 1, "a": 1, "b": "a" },
        doc! { "_id": 2, "a": 2, "b": "b" },
        doc! { "_id": 3, "a": 3, "b": "c" },
    ])
    .await
    .unwrap();
    c
}

async fn collection_names(node: &TestNode, db: &str) -> Vec<String> {
    let mut names = node.db(db).await.list_collection_names().await.unwrap();
    names.sort();
    names
}

/// jstests/aggregation/sources/out/replace_collection.js: `$out` replaces
/// the target's documents and keeps its indexes and validator.
#[tokio::test]
async fn out_replaces_the_target_keeping_its_indexes_and_validator() {
    let node = TestNode::start();
    let db = node.db("w").await;
    db.run_command(doc! { "create": "target", "validator": { "a": { "$gt": 0 } } })
        .await
        .unwrap();
    let target = node.coll("w", "target").await;
    create_index(&target, doc! { "a": 1 }).await;
    target.insert_one(doc! { "_id": 99, "a": 5 }).await.unwrap();
    let src = source(&node).await;
    run(
        &src,
        vec![
            doc! { "$match": { "a": { "$gte": 2 } } },
            doc! { "$out": "target" },
        ],
    )
    .await
    .unwrap();
    assert_eq!(
        all(&target).await,
        vec![
            doc! { "_id": 2, "a": 2, "b": "b" },
            doc! { "_id": 3, "a": 3, "b": "c" }
        ]
    );
    let indexes = target.list_index_names().await.unwrap();
    assert_eq!(indexes.len(), 2, "{indexes:?}");
    let info = first_batch(
        &db,
        doc! { "listCollections": 1, "filter": { "name": "target" } },
    )
    .await;
    let options = info[0].get_document("options").unwrap();
    assert_eq!(
        options.get_document("validator").unwrap(),
        &doc! { "a": { "$gt": 0 } }
    );
    assert!(options.get("temp").is_none(), "{options:?}");
    // The validator applies to what $out writes.
    let e = run(
        &src,
        vec![doc! { "$set": { "a": -1 } }, doc! { "$out": "target" }],
    )
    .await;
    expect_code(e, 121);
    assert_eq!(all(&target).await.len(), 2);
    run(
        &src,
        vec![doc! { "$set": { "a": -1 } }, doc! { "$out": "target" }],
    )
    .await
    .map(|_| ())
    .unwrap_err();
    let bypass = db
        .run_command(doc! {
            "aggregate": "source",
            "pipeline": [{ "$set": { "a": -1 } }, { "$out": "target" }],
            "bypassDocumentValidation": true,
            "cursor": {},
        })
        .await
        .unwrap();
    assert_eq!(
        bypass
            .get_document("cursor")
            .unwrap()
            .get_array("firstBatch")
            .unwrap()
            .len(),
        0
    );
    assert_eq!(all(&target).await.len(), 3);
    assert_eq!(collection_names(&node, "w").await, vec!["source", "target"]);
}

/// jstests/aggregation/sources/out/replace_collection.js: `$out` creates a
/// missing target, in another database too (`{db, coll}`).
#[tokio::test]
async fn out_creates_a_missing_target_in_any_database() {
    let node = TestNode::start();
    let src = source(&node).await;
    run(&src, vec![doc! { "$out": "fresh" }]).await.unwrap();
    assert_eq!(all(&node.coll("w", "fresh").await).await.len(), 3);
    run(
        &src,
        vec![doc! { "$out": { "db": "elsewhere", "coll": "copy" } }],
    )
    .await
    .unwrap();
    assert_eq!(all(&node.coll("elsewhere", "copy").await).await.len(), 3);
    // An empty output still replaces the target.
    run(
        &src,
        vec![doc! { "$match": { "a": 0 } }, doc! { "$out": "fresh" }],
    )
    .await
    .unwrap();
    assert!(all(&node.coll("w", "fresh").await).await.is_empty());
    assert_eq!(collection_names(&node, "w").await, vec!["fresh", "source"]);
}

/// jstests/aggregation/sources/out/replace_collection.js: a unique index
/// the output violates fails `$out` with DuplicateKey and the target keeps
/// its documents; a target document that would conflict does not matter,
/// since the target is replaced.
#[tokio::test]
async fn out_violating_a_unique_index_leaves_the_target_unchanged() {
    let node = TestNode::start();
    let src = node.coll("w", "source").await;
    src.insert_many(vec![doc! { "_id": 0, "a": 0 }, doc! { "_id": 1, "a": 0 }])
        .await
        .unwrap();
    let target = node.coll("w", "target").await;
    unique_index(&target, doc! { "a": 1 }).await;
    target.insert_one(doc! { "_id": 7, "a": 7 }).await.unwrap();
    expect_code(run(&src, vec![doc! { "$out": "target" }]).await, 11000);
    assert_eq!(all(&target).await, vec![doc! { "_id": 7, "a": 7 }]);
    assert_eq!(collection_names(&node, "w").await, vec!["source", "target"]);

    src.delete_one(doc! { "_id": 1 }).await.unwrap();
    target.insert_one(doc! { "_id": 1, "a": 0 }).await.unwrap();
    run(&src, vec![doc! { "$out": "target" }]).await.unwrap();
    assert_eq!(all(&target).await, vec![doc! { "_id": 0, "a": 0 }]);
}

/// jstests/aggregation/sources/out/required_last_position.js,
/// out_in_lookup_not_allowed.js and the manual's `$out` restrictions:
/// misplaced or misdirected writing stages are refused before anything is
/// written.
#[tokio::test]
async fn misplaced_or_misdirected_writing_stages_are_refused() {
    let node = TestNode::start();
    let src = source(&node).await;
    let cases: Vec<(Vec<Document>, i32)> = vec![
        (vec![doc! { "$out": "t" }, doc! { "$match": {} }], 40601),
        (vec![doc! { "$merge": "t" }, doc! { "$match": {} }], 40601),
        (
            vec![doc! { "$lookup": { "from": "x", "pipeline": [{ "$out": "t" }], "as": "j" } }],
            51047,
        ),
        (vec![doc! { "$facet": { "f": [{ "$out": "t" }] } }], 40600),
        (
            vec![doc! { "$unionWith": { "coll": "x", "pipeline": [{ "$merge": "t" }] } }],
            31441,
        ),
        (vec![doc! { "$out": 1 }], 16990),
        (vec![doc! { "$out": "system.t" }], 17385),
        (vec![doc! { "$out": { "db": "admin", "coll": "t" } }], 31321),
        (vec![doc! { "$merge": { "into": "system.t" } }], 31319),
        (
            vec![doc! { "$merge": { "into": { "db": "config", "coll": "t" } } }],
            31320,
        ),
        (vec![doc! { "$merge": 1 }], 51182),
        (vec![doc! { "$merge": { "into": 1 } }], 51178),
        (
            vec![
                doc! { "$merge": { "into": "t", "whenMatched": "fail", "whenNotMatched": "fail" } },
            ],
            51181,
        ),
        (
            vec![
                doc! { "$merge": { "into": "t", "whenMatched": "keepExisting", "whenNotMatched": "fail" } },
            ],
            51181,
        ),
        (
            vec![doc! { "$merge": { "into": "t", "whenMatched": "bogus" } }],
            2,
        ),
        (
            vec![doc! { "$merge": { "into": "t", "let": { "x": 1 } } }],
            51199,
        ),
        (vec![doc! { "$merge": { "into": "t", "on": 2.5 } }], 51186),
        (vec![doc! { "$merge": { "into": "t", "on": [] } }], 51187),
        (
            vec![doc! { "$merge": { "into": "t", "on": ["a", 1] } }],
            51134,
        ),
        (vec![doc! { "$merge": { "into": "t", "bogus": 1 } }], 40415),
        // No unique index on `b`: the target does not exist.
        (vec![doc! { "$merge": { "into": "t", "on": "b" } }], 51183),
    ];
    for (pipeline, code) in cases {
        let r = run(&src, pipeline.clone()).await;
        let msg = expect_code(r, code);
        assert!(!msg.is_empty(), "{pipeline:?}");
    }
    // A capped target: $out refuses it (17152), $merge writes into it.
    node.db("w")
        .await
        .run_command(doc! { "create": "ring", "capped": true, "size": 4096 })
        .await
        .unwrap();
    expect_code(run(&src, vec![doc! { "$out": "ring" }]).await, 17152);
    run(&src, vec![doc! { "$merge": "ring" }]).await.unwrap();
    assert_eq!(all(&node.coll("w", "ring").await).await.len(), 3);
    node.coll("w", "ring").await.drop().await.unwrap();
    // An update pipeline may not hold one either.
    let e = src
        .update_one(doc! {}, vec![doc! { "$out": "t" }])
        .await
        .map(|_| ());
    expect_code(e, 72);
    assert_eq!(collection_names(&node, "w").await, vec!["source"]);
}

/// jstests/aggregation/sources/merge/all_modes.js: every supported pair of
/// `whenMatched` and `whenNotMatched`.
#[tokio::test]
async fn merge_modes_fold_output_into_the_target_as_mongod_does() {
    let node = TestNode::start();
    let src = source(&node).await;
    let target = node.coll("w", "target").await;
    let reset = |docs: Vec<Document>| {
        let target = target.clone();
        async move {
            target.delete_many(doc! {}).await.unwrap();
            target.insert_many(docs).await.unwrap();
        }
    };
    let merge = |m: &str, n: &str| {
        vec![doc! { "$merge": { "into": "target", "whenMatched": m, "whenNotMatched": n } }]
    };

    reset(vec![
        doc! { "_id": 1, "a": 10 },
        doc! { "_id": 3, "a": 30 },
        doc! { "_id": 4, "a": 40 },
    ])
    .await;
    run(&src, merge("replace", "insert")).await.unwrap();
    assert_eq!(
        all(&target).await,
        vec![
            doc! { "_id": 1, "a": 1, "b": "a" },
            doc! { "_id": 2, "a": 2, "b": "b" },
            doc! { "_id": 3, "a": 3, "b": "c" },
            doc! { "_id": 4, "a": 40 },
        ]
    );

    // Unmatched documents fail the stage after every matched one is written.
    reset(vec![
        doc! { "_id": 1, "a": 10 },
        doc! { "_id": 3, "a": 30 },
        doc! { "_id": 4, "a": 40 },
    ])
    .await;
    expect_code(run(&src, merge("replace", "fail")).await, 13113);
    assert_eq!(
        all(&target).await,
        vec![
            doc! { "_id": 1, "a": 1, "b": "a" },
            doc! { "_id": 3, "a": 3, "b": "c" },
            doc! { "_id": 4, "a": 40 },
        ]
    );

    reset(vec![
        doc! { "_id": 3, "a": 30, "c": "y" },
        doc! { "_id": 10, "a": 10 },
    ])
    .await;
    expect_code(run(&src, merge("fail", "insert")).await, 11000);
    assert_eq!(
        all(&target).await,
        vec![
            doc! { "_id": 1, "a": 1, "b": "a" },
            doc! { "_id": 2, "a": 2, "b": "b" },
            doc! { "_id": 3, "a": 30, "c": "y" },
            doc! { "_id": 10, "a": 10 },
        ]
    );

    reset(vec![
        doc! { "_id": 1, "a": 10, "c": "z" },
        doc! { "_id": 4, "a": 40 },
    ])
    .await;
    run(&src, merge("merge", "insert")).await.unwrap();
    assert_eq!(
        all(&target).await,
        vec![
            doc! { "_id": 1, "a": 1, "c": "z", "b": "a" },
            doc! { "_id": 2, "a": 2, "b": "b" },
            doc! { "_id": 3, "a": 3, "b": "c" },
            doc! { "_id": 4, "a": 40 },
        ]
    );

    reset(vec![doc! { "_id": 1, "a": 10 }, doc! { "_id": 4, "a": 40 }]).await;
    run(&src, merge("merge", "discard")).await.unwrap();
    assert_eq!(
        all(&target).await,
        vec![
            doc! { "_id": 1, "a": 1, "b": "a" },
            doc! { "_id": 4, "a": 40 }
        ]
    );

    reset(vec![doc! { "_id": 1, "a": 10 }, doc! { "_id": 4, "a": 40 }]).await;
    run(&src, merge("keepExisting", "insert")).await.unwrap();
    assert_eq!(
        all(&target).await,
        vec![
            doc! { "_id": 1, "a": 10 },
            doc! { "_id": 2, "a": 2, "b": "b" },
            doc! { "_id": 3, "a": 3, "b": "c" },
            doc! { "_id": 4, "a": 40 },
        ]
    );

    // A pipeline: an upsert applies it to the matched fields alone.
    reset(vec![doc! { "_id": 1, "b": 1 }]).await;
    run(
        &src,
        vec![doc! { "$merge": {
            "into": "target", "whenMatched": [{ "$addFields": { "x": 2 } }], "whenNotMatched": "insert"
        } }],
    )
    .await
    .unwrap();
    assert_eq!(
        all(&target).await,
        vec![
            doc! { "_id": 1, "b": 1, "x": 2 },
            doc! { "_id": 2, "x": 2 },
            doc! { "_id": 3, "x": 2 },
        ]
    );
}

/// Manual, $merge: "Use the Variables to Customize the Merge" and the
/// default `$$new` — a running total kept with a pipeline `whenMatched`.
#[tokio::test]
async fn merge_pipeline_sees_the_output_document_and_let_variables() {
    let node = TestNode::start();
    let sales = node.coll("w", "sales").await;
    sales
        .insert_many(vec![
            doc! { "_id": 1, "store": "a", "qty": 3 },
            doc! { "_id": 2, "store": "a", "qty": 4 },
            doc! { "_id": 3, "store": "b", "qty": 5 },
        ])
        .await
        .unwrap();
    let totals = node.coll("w", "totals").await;
    totals
        .insert_one(doc! { "_id": "a", "qty": 100 })
        .await
        .unwrap();
    let pipeline = vec![
        doc! { "$group": { "_id": "$store", "qty": { "$sum": "$qty" } } },
        doc! { "$merge": {
            "into": "totals",
            "let": { "add": "$qty" },
            "whenMatched": [{ "$set": { "qty": { "$add": ["$qty", "$$add"] }, "seen": "$$new.qty" } }],
        } },
    ];
    run(&sales, pipeline).await.unwrap();
    assert_eq!(
        all(&totals).await,
        vec![
            doc! { "_id": "a", "qty": 107, "seen": 7 },
            // The upsert runs the pipeline on `{_id: "b"}`: `$qty` is
            // missing there, so the sum is null, as in mongod.
            doc! { "_id": "b", "qty": null, "seen": 5 },
        ]
    );
}

/// jstests/aggregation/sources/merge/on_fields_validation.js and
/// requires_unique_index.js: `on` other than `_id` needs a unique index on
/// exactly those fields; each output document must hold them as scalars.
#[tokio::test]
async fn merge_on_other_fields_needs_a_unique_index_and_scalar_values() {
    let node = TestNode::start();
    let src = node.coll("w", "source").await;
    src.insert_one(doc! { "_id": 0 }).await.unwrap();
    let target = node.coll("w", "target").await;
    create_index(&target, doc! { "name": 1, "team": -1 }).await;
    let pipeline = vec![doc! { "$merge": {
        "into": "target", "whenMatched": "replace", "whenNotMatched": "insert", "on": ["name", "team"]
    } }];
    // Not unique yet.
    expect_code(run(&src, pipeline.clone()).await, 51183);
    target.drop().await.unwrap();
    unique_index(&target, doc! { "name": 1, "team": -1 }).await;
    expect_code(run(&src, pipeline.clone()).await, 51132);
    src.replace_one(
        doc! { "_id": 0 },
        doc! { "name": "nicholas", "team": ["q"] },
    )
    .await
    .unwrap();
    expect_code(run(&src, pipeline.clone()).await, 51185);
    src.replace_one(
        doc! { "_id": 0 },
        doc! { "name": "nicholas", "team": "query" },
    )
    .await
    .unwrap();
    run(&src, pipeline.clone()).await.unwrap();
    assert_eq!(
        all(&target).await,
        vec![doc! { "_id": 0, "name": "nicholas", "team": "query" }]
    );
    // Matched on the fields, the target keeps its own `_id`.
    src.delete_many(doc! {}).await.unwrap();
    src.insert_one(doc! { "_id": 5, "name": "nicholas", "team": "query", "x": 1 })
        .await
        .unwrap();
    let e = run(&src, pipeline.clone()).await;
    expect_code(e, 66);
    run(&src, vec![doc! { "$unset": "_id" }, pipeline[0].clone()])
        .await
        .unwrap();
    assert_eq!(
        all(&target).await,
        vec![doc! { "_id": 0, "name": "nicholas", "team": "query", "x": 1 }]
    );
}

/// Manual, `$out`: "If the aggregation fails, $out does not make any
/// changes" — the temporary collection of an `$out` a restart interrupted
/// (any collection created `temp`) is gone after the restart.
#[tokio::test]
async fn temporary_collections_do_not_survive_a_restart() {
    let mut node = TestNode::start();
    let db = node.db("w").await;
    db.run_command(doc! { "create": "tmp.agg_out.leftover", "temp": true })
        .await
        .unwrap();
    db.run_command(doc! { "create": "kept" }).await.unwrap();
    assert_eq!(
        collection_names(&node, "w").await,
        vec!["kept", "tmp.agg_out.leftover"]
    );
    node.restart();
    assert_eq!(collection_names(&node, "w").await, vec!["kept"]);
}

/// mongod's `$merge` gives an output document without `_id` a new
/// ObjectId when merging on `_id` (the default): a `$project` that drops
/// `_id` appends new documents each run.
#[tokio::test]
async fn merge_of_documents_without_id_inserts_new_ones() {
    let node = TestNode::start();
    let src = source(&node).await;
    let pipeline = vec![
        doc! { "$project": { "_id": 0, "a": 1 } },
        doc! { "$merge": "appended" },
    ];
    run(&src, pipeline.clone()).await.unwrap();
    run(&src, pipeline).await.unwrap();
    let docs = all(&node.coll("w", "appended").await).await;
    assert_eq!(docs.len(), 6);
    assert!(docs.iter().all(|d| d.get_object_id("_id").is_ok()));
}
