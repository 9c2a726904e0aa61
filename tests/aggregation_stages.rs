//! Aggregation stages that read other collections (`$lookup`,
//! `$unionWith`), `$documents`, and the grouping stages `$facet`,
//! `$bucket`, `$sortByCount` and `$sample`, and `$redact`, end to end
//! through the driver.
//! Each test names the MongoDB manual page or jstest its expectation comes
//! from.

use std::time::{Duration, Instant};

use crate::common::{TestNode, agg, agg_err, create_index, expect_code, first_batch};
use futures::TryStreamExt;
use mongodb::bson::{Document, doc};
use mongodb::{Collection, Database};

/// The database-level `aggregate: 1`.
async fn db_agg(db: &Database, pipeline: Vec<Document>) -> mongodb::error::Result<Vec<Document>> {
    db.aggregate(pipeline).await?.try_collect().await
}

async fn orders_and_inventory(node: &TestNode) -> (Collection<Document>, Collection<Document>) {
    let orders = node.coll("shop", "orders").await;
    let inventory = node.coll("shop", "inventory").await;
    orders
        .insert_many(vec![
            doc! { "_id": 1, "item": "almonds", "price": 12, "quantity": 2 },
            doc! { "_id": 2, "item": "pecans", "price": 20, "quantity": 1 },
            doc! { "_id": 3 },
        ])
        .await
        .unwrap();
    inventory
        .insert_many(vec![
            doc! { "_id": 1, "sku": "almonds", "instock": 120 },
            doc! { "_id": 2, "sku": "bread", "instock": 80 },
            doc! { "_id": 3, "sku": "cashews", "instock": 60 },
            doc! { "_id": 4, "sku": "pecans", "instock": 70 },
            doc! { "_id": 5, "sku": null },
            doc! { "_id": 6 },
        ])
        .await
        .unwrap();
    (orders, inventory)
}

fn joined_ids(d: &Document, field: &str) -> Vec<i32> {
    d.get_array(field)
        .unwrap()
        .iter()
        .map(|j| j.as_document().unwrap().get_i32("_id").unwrap())
        .collect()
}

/// Manual, $lookup: "Perform a Single Equality Join with $lookup" — the
/// order without an `item` joins the inventory documents whose `sku` is
/// null or missing.
#[tokio::test]
async fn lookup_equality_joins_and_missing_matches_null_and_missing() {
    let node = TestNode::start();
    let (orders, _) = orders_and_inventory(&node).await;
    let out = agg(
        &orders,
        vec![
            doc! { "$lookup": { "from": "inventory", "localField": "item", "foreignField": "sku", "as": "inventory_docs" } },
            doc! { "$sort": { "_id": 1 } },
        ],
    )
    .await;
    assert_eq!(out.len(), 3);
    assert_eq!(joined_ids(&out[0], "inventory_docs"), vec![1]);
    assert_eq!(joined_ids(&out[1], "inventory_docs"), vec![4]);
    assert_eq!(joined_ids(&out[2], "inventory_docs"), vec![5, 6]);
    assert_eq!(out[0].get_str("item").unwrap(), "almonds");
}

/// Manual, $lookup: "Use $lookup with an Array" — a local array matches
/// foreign documents equal to any of its elements.
#[tokio::test]
async fn lookup_local_array_matches_any_element() {
    let node = TestNode::start();
    let classes = node.coll("school", "classes").await;
    let members = node.coll("school", "members").await;
    classes
        .insert_many(vec![
            doc! { "_id": 1, "title": "Reading is ...", "enrollmentlist": ["giraffe2", "pandabear", "artie"] },
            doc! { "_id": 2, "title": "But Writing ...", "enrollmentlist": ["giraffe1", "artie"] },
        ])
        .await
        .unwrap();
    members
        .insert_many(vec![
            doc! { "_id": 1, "name": "artie" },
            doc! { "_id": 3, "name": "giraffe1" },
            doc! { "_id": 4, "name": "giraffe2" },
            doc! { "_id": 5, "name": "pandabear" },
            doc! { "_id": 6, "name": "giraffe3" },
        ])
        .await
        .unwrap();
    let out = agg(
        &classes,
        vec![
            doc! { "$lookup": { "from": "members", "localField": "enrollmentlist", "foreignField": "name", "as": "enrollee_info" } },
            doc! { "$sort": { "_id": 1 } },
        ],
    )
    .await;
    assert_eq!(joined_ids(&out[0], "enrollee_info"), vec![1, 4, 5]);
    assert_eq!(joined_ids(&out[1], "enrollee_info"), vec![1, 3]);
}

/// jstests/aggregation/sources/lookup/lookup_subpipeline.js: "Basic
/// non-equi theta join via $match" with a `let` variable in `$expr`.
#[tokio::test]
async fn lookup_pipeline_sees_let_variables_in_expr() {
    let node = TestNode::start();
    let coll = node.coll("app", "lookUp").await;
    let from = node.coll("app", "from").await;
    coll.insert_many(vec![
        doc! { "_id": 1, "x": 1 },
        doc! { "_id": 2, "x": 2 },
        doc! { "_id": 3, "x": 3 },
    ])
    .await
    .unwrap();
    from.insert_many(vec![
        doc! { "_id": 1 },
        doc! { "_id": 2 },
        doc! { "_id": 3 },
    ])
    .await
    .unwrap();
    let out = agg(
        &coll,
        vec![
            doc! { "$lookup": {
                "let": { "var1": "$_id" },
                "pipeline": [ { "$match": { "$expr": { "$lt": ["$_id", "$$var1"] } } }, { "$sort": { "_id": 1 } } ],
                "from": "from",
                "as": "c",
            } },
            doc! { "$sort": { "_id": 1 } },
        ],
    )
    .await;
    assert_eq!(joined_ids(&out[0], "c"), Vec::<i32>::new());
    assert_eq!(joined_ids(&out[1], "c"), vec![1]);
    assert_eq!(joined_ids(&out[2], "c"), vec![1, 2]);
}

/// jstests/aggregation/sources/lookup/lookup_subpipeline.js: "'let'
/// defined variables are available to all nested sub-pipelines".
#[tokio::test]
async fn lookup_let_variables_reach_nested_pipelines() {
    let node = TestNode::start();
    let coll = node.coll("app", "lookUp").await;
    let from = node.coll("app", "from").await;
    coll.insert_one(doc! { "_id": 1, "x": 1 }).await.unwrap();
    from.insert_many(vec![doc! { "_id": 1 }, doc! { "_id": 2 }])
        .await
        .unwrap();
    let out = agg(
        &coll,
        vec![doc! { "$lookup": {
            "let": { "var1": "ABC", "var2": "123" },
            "pipeline": [
                { "$match": { "_id": 1 } },
                { "$lookup": {
                    "let": { "var3": "XYZ" },
                    "pipeline": [
                        { "$match": { "_id": 2 } },
                        { "$addFields": { "merged": { "$concat": ["$$var1", "$$var2", "$$var3"] } } },
                    ],
                    "from": "from",
                    "as": "join2",
                } },
            ],
            "from": "from",
            "as": "join1",
        } }],
    )
    .await;
    assert_eq!(
        out[0].get_array("join1").unwrap()[0].as_document().unwrap(),
        &doc! { "_id": 1, "join2": [ { "_id": 2, "merged": "ABC123XYZ" } ] }
    );
}

/// Manual, $lookup: "Perform a Concise Correlated Subquery with $lookup"
/// (5.0+): the equality and the pipeline both apply.
#[tokio::test]
async fn lookup_concise_form_joins_then_runs_the_pipeline() {
    let node = TestNode::start();
    let restaurants = node.coll("food", "restaurants").await;
    let orders = node.coll("food", "orders").await;
    restaurants
        .insert_many(vec![
            doc! { "_id": 1, "name": "American Steak House", "food": ["filet", "sirloin"], "beverages": ["beer", "wine"] },
            doc! { "_id": 2, "name": "Honest John Pizza", "food": ["cheese pizza", "pepperoni pizza"], "beverages": ["soda"] },
        ])
        .await
        .unwrap();
    orders
        .insert_many(vec![
            doc! { "_id": 1, "item": "filet", "restaurant_name": "American Steak House" },
            doc! { "_id": 2, "item": "cheese pizza", "restaurant_name": "Honest John Pizza", "drink": "lemonade" },
            doc! { "_id": 3, "item": "cheese pizza", "restaurant_name": "Honest John Pizza", "drink": "soda" },
        ])
        .await
        .unwrap();
    let out = agg(
        &orders,
        vec![
            doc! { "$lookup": {
                "from": "restaurants",
                "localField": "restaurant_name",
                "foreignField": "name",
                "let": { "orders_drink": "$drink" },
                "pipeline": [ { "$match": { "$expr": { "$in": ["$$orders_drink", "$beverages"] } } } ],
                "as": "matches",
            } },
            doc! { "$sort": { "_id": 1 } },
        ],
    )
    .await;
    assert_eq!(joined_ids(&out[0], "matches"), Vec::<i32>::new());
    assert_eq!(joined_ids(&out[1], "matches"), Vec::<i32>::new());
    assert_eq!(joined_ids(&out[2], "matches"), vec![2]);
}

/// jstests/aggregation/sources/lookup/lookup_non_existent_collection.js:
/// a foreign collection that does not exist joins nothing.
#[tokio::test]
async fn lookup_of_missing_collection_gives_empty_arrays() {
    let node = TestNode::start();
    let (orders, _) = orders_and_inventory(&node).await;
    let out = agg(
        &orders,
        vec![doc! { "$lookup": { "from": "nowhere", "localField": "item", "foreignField": "sku", "as": "j" } }],
    )
    .await;
    assert_eq!(out.len(), 3);
    assert!(out.iter().all(|d| d.get_array("j").unwrap().is_empty()));
}

/// jstests/aggregation/sources/lookup/lookup_collation.js: the foreign side
/// compares with the aggregate's collation.
#[tokio::test]
async fn lookup_compares_with_the_aggregate_collation() {
    let node = TestNode::start();
    let db = node.db("app").await;
    let local = db.collection::<Document>("local");
    let foreign = db.collection::<Document>("foreign");
    local
        .insert_one(doc! { "_id": 1, "s": "abc" })
        .await
        .unwrap();
    foreign
        .insert_many(vec![
            doc! { "_id": 1, "s": "ABC" },
            doc! { "_id": 2, "s": "xyz" },
        ])
        .await
        .unwrap();
    let pipeline = doc! { "$lookup": { "from": "foreign", "localField": "s", "foreignField": "s", "as": "m" } };
    let simple = first_batch(
        &db,
        doc! { "aggregate": "local", "pipeline": [pipeline.clone()], "cursor": {} },
    )
    .await;
    assert!(simple[0].get_array("m").unwrap().is_empty());
    let folded = first_batch(
        &db,
        doc! { "aggregate": "local", "pipeline": [pipeline], "cursor": {}, "collation": { "locale": "en", "strength": 2 } },
    )
    .await;
    assert_eq!(joined_ids(&folded[0], "m"), vec![1]);
}

/// As in mongod's indexed loop join
/// (jstests/aggregation/sources/lookup/lookup_equijoin_semantics_inlj.js),
/// an equality `$lookup` on an indexed foreignField looks each document up
/// through the index, so thousands of documents join in linear time.
#[tokio::test]
async fn lookup_on_indexed_foreign_field_is_not_quadratic() {
    let node = TestNode::start();
    let events = node.coll("log", "events").await;
    let users = node.coll("log", "users").await;
    const N: i32 = 8000;
    users
        .insert_many((0..N).map(|i| doc! { "_id": i, "uid": format!("u{i}") }))
        .await
        .unwrap();
    events
        .insert_many((0..N).map(|i| doc! { "_id": i, "user": format!("u{}", (i * 7) % N) }))
        .await
        .unwrap();
    create_index(&users, doc! { "uid": 1 }).await;
    let started = Instant::now();
    let out = agg(
        &events,
        vec![
            doc! { "$lookup": { "from": "users", "localField": "user", "foreignField": "uid", "as": "u" } },
            doc! { "$match": { "u": { "$size": 1 } } },
            doc! { "$count": "n" },
        ],
    )
    .await;
    assert_eq!(out, vec![doc! { "n": N }]);
    // The classic pipeline form (`let` + `$expr` `$eq`) is served by the
    // index too (mongod turns the `$eq` into index bounds).
    let out = agg(
        &events,
        vec![
            doc! { "$lookup": {
                "from": "users",
                "let": { "who": "$user" },
                "pipeline": [ { "$match": { "$expr": { "$eq": ["$uid", "$$who"] } } } ],
                "as": "u",
            } },
            doc! { "$match": { "u": { "$size": 1 } } },
            doc! { "$count": "n" },
        ],
    )
    .await;
    assert_eq!(out, vec![doc! { "n": N }]);
    // A scan of the 8000 users per event (64 M documents), for either
    // form, takes over a minute in a debug build (4000 took 23 s); point
    // lookups take a few seconds.
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "took {:?}",
        started.elapsed()
    );
}

/// jstests/aggregation/sources/lookup/lookup_invalid_input.js,
/// lookup_subpipeline.js and lookup_unknown_field.js: malformed `$lookup`
/// specifications and their codes.
#[tokio::test]
async fn lookup_refuses_bad_arguments_with_mongods_codes() {
    let node = TestNode::start();
    let (orders, _) = orders_and_inventory(&node).await;
    let cases = vec![
        (
            doc! { "from": "inventory", "localField": "x", "as": "r" },
            9,
        ),
        (
            doc! { "from": "inventory", "foreignField": "y", "as": "r" },
            9,
        ),
        (doc! { "from": "inventory", "as": "r" }, 9),
        (
            doc! { "localField": "x", "foreignField": "y", "as": "r" },
            9,
        ),
        (
            doc! { "from": "inventory", "let": { "v": "$x" }, "localField": "x", "foreignField": "y", "as": "r" },
            9,
        ),
        (doc! { "from": "inventory", "pipeline": 1, "as": "r" }, 14),
        (
            doc! { "from": "inventory", "let": 1, "pipeline": [], "as": "r" },
            9,
        ),
        (
            doc! { "from": "inventory", "localField": "x", "foreignField": "y", "as": "r", "hi": "hi" },
            9,
        ),
        (
            doc! { "from": { "db": "other", "coll": "c" }, "pipeline": [], "as": "r" },
            9,
        ),
        (
            doc! { "from": "inventory", "pipeline": [ { "$out": "x" } ], "as": "r" },
            51047,
        ),
        (
            doc! { "let": { "var1": 1, "var2": "$$var1" }, "pipeline": [], "from": "inventory", "as": "r" },
            17276,
        ),
        (
            doc! { "from": "inventory", "let": { "v": "$x" }, "pipeline": [ { "$project": { "m": "$$nonExistent" } } ], "as": "r" },
            17276,
        ),
    ];
    for (spec, code) in cases {
        let msg = agg_err(&orders, vec![doc! { "$lookup": spec.clone() }], code).await;
        assert!(!msg.is_empty(), "{spec}");
    }
}

/// jstests/aggregation/sources/lookup/lookup_large_documents.js and
/// jstests/aggregation/sources/facet/facet_memory_consumption.js: a joined
/// document may pass 16 MiB inside the pipeline, but a result document
/// over 16 MiB fails with BSONObjectTooLarge.
#[tokio::test]
async fn lookup_result_over_16_mib_fails_but_can_be_projected_away() {
    let node = TestNode::start();
    let local = node.coll("big", "local").await;
    let foreign = node.coll("big", "foreign").await;
    local.insert_one(doc! { "_id": 1, "k": 1 }).await.unwrap();
    let large = "x".repeat(9 * 1024 * 1024);
    for i in 0..2 {
        foreign
            .insert_one(doc! { "_id": i, "k": 1, "s": large.clone() })
            .await
            .unwrap();
    }
    let lookup = doc! { "$lookup": { "from": "foreign", "localField": "k", "foreignField": "k", "as": "r" } };
    agg_err(&local, vec![lookup.clone()], 10334).await;
    let out = agg(
        &local,
        vec![
            lookup,
            doc! { "$project": { "_id": 0, "n": { "$size": "$r" } } },
        ],
    )
    .await;
    assert_eq!(out, vec![doc! { "n": 2 }]);
}

/// Manual, $unionWith: "Create a Yearly Report from the Union of Yearly
/// Data Collections" (string form, and `{coll, pipeline}`).
#[tokio::test]
async fn union_with_appends_another_collections_documents() {
    let node = TestNode::start();
    let q1 = node.coll("sales", "sales_2017").await;
    let q2 = node.coll("sales", "sales_2018").await;
    q1.insert_many(vec![
        doc! { "store": "A", "item": "Chocolates", "quantity": 150 },
        doc! { "store": "B", "item": "Chocolates", "quantity": 50 },
    ])
    .await
    .unwrap();
    q2.insert_many(vec![
        doc! { "store": "A", "item": "Chocolates", "quantity": 5 },
        doc! { "store": "B", "item": "Cookies", "quantity": 100 },
    ])
    .await
    .unwrap();
    let out = agg(
        &q1,
        vec![
            doc! { "$set": { "_id": "2017" } },
            doc! { "$unionWith": { "coll": "sales_2018", "pipeline": [ { "$set": { "_id": "2018" } } ] } },
            doc! { "$group": { "_id": "$item", "total": { "$sum": "$quantity" } } },
            doc! { "$sort": { "_id": 1 } },
        ],
    )
    .await;
    assert_eq!(
        out,
        vec![
            doc! { "_id": "Chocolates", "total": 205 },
            doc! { "_id": "Cookies", "total": 100 },
        ]
    );
    let plain = agg(&q1, vec![doc! { "$unionWith": "sales_2018" }]).await;
    assert_eq!(plain.len(), 4);
    // A missing collection adds nothing; a missing input still unions.
    assert_eq!(
        agg(&q1, vec![doc! { "$unionWith": "nowhere" }]).await.len(),
        2
    );
    let none = node.coll("sales", "nothing").await;
    assert_eq!(
        agg(&none, vec![doc! { "$unionWith": "sales_2018" }])
            .await
            .len(),
        2
    );
}

/// jstests/aggregation/sources/unionWith/unionWith_invalid_usage.js and
/// jstests/aggregation/sources/documents.js: writing stages inside
/// `$unionWith` (31441), no collection and no `$documents` (FailedToParse),
/// and `$unionWith` in an update pipeline (InvalidOptions).
#[tokio::test]
async fn union_with_refuses_bad_pipelines() {
    let node = TestNode::start();
    let base = node.coll("app", "base").await;
    base.insert_one(doc! { "a": 1 }).await.unwrap();
    agg_err(
        &base,
        vec![doc! { "$unionWith": { "coll": "u", "pipeline": [ { "$out": "some_out_coll" } ] } }],
        31441,
    )
    .await;
    agg_err(
        &base,
        vec![doc! { "$unionWith": { "pipeline": [ { "$project": { "a": 1 } } ] } }],
        9,
    )
    .await;
    let r = base
        .update_one(doc! { "a": 1 }, vec![doc! { "$unionWith": "u" }])
        .await;
    expect_code(r, 72);
}

/// jstests/aggregation/sources/documents.js: `$documents` in a
/// database-level aggregate, inside `$unionWith` and `$lookup` without a
/// collection.
#[tokio::test]
async fn documents_feeds_database_level_and_nested_pipelines() {
    let node = TestNode::start();
    let db = node.db("docs").await;
    let out = db_agg(
        &db,
        vec![doc! { "$documents": [ { "a1": 1 }, { "a1": 2 } ] }],
    )
    .await
    .unwrap();
    assert_eq!(out, vec![doc! { "a1": 1 }, doc! { "a1": 2 }]);
    let mapped = db_agg(
        &db,
        vec![doc! { "$documents": { "$map": { "input": { "$range": [0, 5] }, "in": { "x": "$$this" } } } }],
    )
    .await
    .unwrap();
    assert_eq!(mapped.len(), 5);
    assert_eq!(mapped[4], doc! { "x": 4 });

    let names = db.collection::<Document>("lookup_coll");
    names
        .insert_many((0..4).map(|i| doc! { "_id": i, "id_name": i }))
        .await
        .unwrap();
    let joined = agg(
        &names,
        vec![
            doc! { "$lookup": {
                "localField": "id_name",
                "foreignField": "xx",
                "pipeline": [ { "$documents": [ { "xx": 1 }, { "xx": 2 } ] } ],
                "as": "names",
            } },
            doc! { "$match": { "names": { "$ne": [] } } },
            doc! { "$sort": { "_id": 1 } },
        ],
    )
    .await;
    assert_eq!(
        joined,
        vec![
            doc! { "_id": 1, "id_name": 1, "names": [ { "xx": 1 } ] },
            doc! { "_id": 2, "id_name": 2, "names": [ { "xx": 2 } ] },
        ]
    );
    let unioned = agg(
        &names,
        vec![
            doc! { "$unionWith": { "pipeline": [ { "$documents": [ { "xx": 7 } ] } ] } },
            doc! { "$match": { "xx": 7 } },
        ],
    )
    .await;
    assert_eq!(unioned, vec![doc! { "xx": 7 }]);
}

/// jstests/aggregation/sources/documents.js: where `$documents` may not
/// stand (InvalidNamespace, 40602) and what it must evaluate to (40228).
#[tokio::test]
async fn documents_refuses_misplacement_and_non_documents() {
    let node = TestNode::start();
    let db = node.db("docs").await;
    let coll = db.collection::<Document>("documents");
    coll.insert_one(doc! { "a": 1 }).await.unwrap();
    agg_err(&coll, vec![doc! { "$documents": [ { "a": 1 } ] }], 73).await;
    agg_err(
        &coll,
        vec![
            doc! { "$project": { "a": [ { "xx": 1 } ] } },
            doc! { "$documents": [ { "a": 1 } ] },
        ],
        40602,
    )
    .await;
    expect_code(
        db_agg(
            &db,
            vec![
                doc! { "$project": { "a": 1 } },
                doc! { "$documents": [ { "a": 1 } ] },
            ],
        )
        .await,
        73,
    );
    expect_code(
        db_agg(&db, vec![doc! { "$documents": [1, 2, 3] }]).await,
        40228,
    );
    expect_code(
        db_agg(&db, vec![doc! { "$documents": [ { "a": 1 }, 2 ] }]).await,
        40228,
    );
    expect_code(
        db_agg(&db, vec![doc! { "$documents": "string" }]).await,
        5858203,
    );
}

/// Manual, $facet: "Multi-faceted Aggregation" (the artwork example, cut
/// down): each facet is its own pipeline over the same input.
#[tokio::test]
async fn facet_runs_each_pipeline_over_the_same_input() {
    let node = TestNode::start();
    let artwork = node.coll("art", "artwork").await;
    artwork
        .insert_many(vec![
            doc! { "_id": 1, "price": 199, "tags": ["painting", "satire"] },
            doc! { "_id": 2, "price": 280, "tags": ["woodcut", "ukiyo-e"] },
            doc! { "_id": 3, "price": 76, "tags": ["oil", "painting"] },
            doc! { "_id": 4, "price": 167, "tags": ["woodblock", "ukiyo-e"] },
        ])
        .await
        .unwrap();
    let out = agg(
        &artwork,
        vec![doc! { "$facet": {
            "categorizedByTags": [ { "$unwind": "$tags" }, { "$sortByCount": "$tags" }, { "$match": { "count": 2 } }, { "$sort": { "_id": 1 } } ],
            "cheap": [ { "$match": { "price": { "$lt": 100 } } }, { "$project": { "_id": 1 } } ],
            "total": [ { "$count": "n" } ],
        } }],
    )
    .await;
    assert_eq!(
        out,
        vec![doc! {
            "categorizedByTags": [ { "_id": "painting", "count": 2 }, { "_id": "ukiyo-e", "count": 2 } ],
            "cheap": [ { "_id": 3 } ],
            "total": [ { "n": 4 } ],
        }]
    );
    // With no input, one document of empty arrays.
    let none = node.coll("art", "nothing").await;
    assert_eq!(
        agg(&none, vec![doc! { "$facet": { "a": [] } }]).await,
        vec![doc! { "a": [] }]
    );
}

/// jstests/aggregation/sources/facet/facet_validate_pipelines.js and
/// mongod's $facet parser codes (40169, 40170, 40171, 40600).
#[tokio::test]
async fn facet_refuses_bad_specifications() {
    let node = TestNode::start();
    let c = node.coll("app", "coll_facet").await;
    c.insert_one(doc! { "_id": 0, "a": 1 }).await.unwrap();
    agg_err(&c, vec![doc! { "$facet": {} }], 40169).await;
    agg_err(&c, vec![doc! { "$facet": { "a": 1 } }], 40170).await;
    agg_err(&c, vec![doc! { "$facet": { "a": [1] } }], 40171).await;
    let msg = agg_err(
        &c,
        vec![doc! { "$facet": { "x": [ { "$facet": { "y": [] } } ] } }],
        40600,
    )
    .await;
    assert!(
        msg.contains("$facet is not allowed to be used within a $facet stage"),
        "{msg}"
    );
    let nested = doc! { "$facet": { "r": [ { "$lookup": {
        "from": "foreign_coll", "localField": "a", "foreignField": "a",
        "pipeline": [ { "$facet": { "r": [] } } ], "as": "j",
    } } ] } };
    let msg = agg_err(&c, vec![nested], 40600).await;
    assert!(
        msg.contains("$facet inside of $lookup is not allowed to be used within a $facet stage"),
        "{msg}"
    );
}

/// Manual, $bucket: "Bucket by Year and Filter by Bucket Results" (cut
/// down): boundaries, default and output; and no default → 40066.
#[tokio::test]
async fn bucket_groups_between_boundaries_with_a_default() {
    let node = TestNode::start();
    let artists = node.coll("art", "artists").await;
    artists
        .insert_many(vec![
            doc! { "_id": 1, "last_name": "Bernard", "year_born": 1887 },
            doc! { "_id": 2, "last_name": "Rippl-Ronai", "year_born": 1861 },
            doc! { "_id": 3, "last_name": "Ostroumova", "year_born": 1871 },
            doc! { "_id": 4, "last_name": "Van Gogh", "year_born": 1853 },
            doc! { "_id": 5, "last_name": "Maurer", "year_born": 1868 },
            doc! { "_id": 6, "last_name": "Munch", "year_born": 1863 },
            doc! { "_id": 7, "last_name": "Redon", "year_born": 1840 },
            doc! { "_id": 8, "last_name": "Diriks", "year_born": 1920 },
        ])
        .await
        .unwrap();
    let out = agg(
        &artists,
        vec![doc! { "$bucket": {
            "groupBy": "$year_born",
            "boundaries": [1840, 1850, 1860, 1870, 1880],
            "default": "Other",
            "output": { "count": { "$sum": 1 }, "artists": { "$push": "$last_name" } },
        } }],
    )
    .await;
    assert_eq!(
        out,
        vec![
            doc! { "_id": 1840, "count": 1, "artists": ["Redon"] },
            doc! { "_id": 1850, "count": 1, "artists": ["Van Gogh"] },
            doc! { "_id": 1860, "count": 3, "artists": ["Rippl-Ronai", "Maurer", "Munch"] },
            doc! { "_id": 1870, "count": 1, "artists": ["Ostroumova"] },
            doc! { "_id": "Other", "count": 2, "artists": ["Bernard", "Diriks"] },
        ]
    );
    agg_err(
        &artists,
        vec![doc! { "$bucket": { "groupBy": "$year_born", "boundaries": [1840, 1880] } }],
        40066,
    )
    .await;
}

/// mongod's $bucket parser (document_source_bucket.cpp): the codes of its
/// argument checks.
#[tokio::test]
async fn bucket_refuses_bad_arguments_with_mongods_codes() {
    let node = TestNode::start();
    let c = node.coll("app", "b").await;
    c.insert_one(doc! { "x": 1 }).await.unwrap();
    let cases = vec![
        (mongodb::bson::Bson::Int32(1), 40201),
        (doc! { "groupBy": "x", "boundaries": [0, 5] }.into(), 40202),
        (doc! { "groupBy": "$x", "boundaries": 1 }.into(), 40200),
        (
            doc! { "groupBy": "$x", "boundaries": ["$x", 5] }.into(),
            40191,
        ),
        (doc! { "groupBy": "$x", "boundaries": [0] }.into(), 40192),
        (
            doc! { "groupBy": "$x", "boundaries": [0, "a"] }.into(),
            40193,
        ),
        (doc! { "groupBy": "$x", "boundaries": [5, 0] }.into(), 40194),
        (
            doc! { "groupBy": "$x", "boundaries": [0, 5], "default": "$x" }.into(),
            40195,
        ),
        (
            doc! { "groupBy": "$x", "boundaries": [0, 5], "output": 1 }.into(),
            40196,
        ),
        (
            doc! { "groupBy": "$x", "boundaries": [0, 5], "other": 1 }.into(),
            40197,
        ),
        (doc! { "groupBy": "$x" }.into(), 40198),
        (
            doc! { "groupBy": "$x", "boundaries": [0, 5], "default": 3 }.into(),
            40199,
        ),
    ];
    for (spec, code) in cases {
        agg_err(&c, vec![doc! { "$bucket": spec }], code).await;
    }
}

/// Manual, $sortByCount: the example counting exhibit tags; and its
/// argument codes (40147, 40148, 40149).
#[tokio::test]
async fn sort_by_count_counts_and_sorts_descending() {
    let node = TestNode::start();
    let exhibits = node.coll("art", "exhibits").await;
    exhibits
        .insert_many(vec![
            doc! { "_id": 1, "tags": ["painting", "satire", "Expressionism", "caricature"] },
            doc! { "_id": 2, "tags": ["woodcut", "Expressionism"] },
            doc! { "_id": 3, "tags": ["oil", "Surrealism", "painting"] },
            doc! { "_id": 4, "tags": ["Expressionism", "painting", "oil"] },
        ])
        .await
        .unwrap();
    let out = agg(
        &exhibits,
        vec![
            doc! { "$unwind": "$tags" },
            doc! { "$sortByCount": "$tags" },
            doc! { "$limit": 3 },
        ],
    )
    .await;
    assert_eq!(out[0].get_i32("count").unwrap(), 3);
    assert_eq!(out[1].get_i32("count").unwrap(), 3);
    assert_eq!(out[2], doc! { "_id": "oil", "count": 2 });
    agg_err(&exhibits, vec![doc! { "$sortByCount": { "a": 1 } }], 40147).await;
    agg_err(&exhibits, vec![doc! { "$sortByCount": "tags" }], 40148).await;
    agg_err(&exhibits, vec![doc! { "$sortByCount": 1 }], 40149).await;
}

/// Manual, $sample: N distinct documents of the input, at random; fewer
/// when the input is smaller. Codes from document_source_sample.cpp.
#[tokio::test]
async fn sample_returns_size_distinct_documents() {
    let node = TestNode::start();
    let c = node.coll("app", "users").await;
    c.insert_many((0..50).map(|i| doc! { "_id": i }))
        .await
        .unwrap();
    let out = agg(&c, vec![doc! { "$sample": { "size": 10 } }]).await;
    let mut ids: Vec<i32> = out.iter().map(|d| d.get_i32("_id").unwrap()).collect();
    assert_eq!(ids.len(), 10);
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), 10);
    // Two samples of 10 out of 50 are the same set with probability ~1e-10.
    let again = agg(&c, vec![doc! { "$sample": { "size": 10 } }]).await;
    let mut other: Vec<i32> = again.iter().map(|d| d.get_i32("_id").unwrap()).collect();
    other.sort_unstable();
    assert_ne!(ids, other);
    assert_eq!(
        agg(&c, vec![doc! { "$sample": { "size": 500 } }])
            .await
            .len(),
        50
    );
    agg_err(&c, vec![doc! { "$sample": 1 }], 28745).await;
    agg_err(&c, vec![doc! { "$sample": { "size": "a" } }], 28746).await;
    agg_err(&c, vec![doc! { "$sample": { "size": -1 } }], 28747).await;
    agg_err(&c, vec![doc! { "$sample": { "size": 1, "x": 1 } }], 28748).await;
    agg_err(&c, vec![doc! { "$sample": {} }], 28749).await;
}

/// Manual, $bucketAuto ("evenly distribute the documents into the
/// specified number of buckets"; the last bucket's max is inclusive, equal
/// keys never split), and the argument codes of mongod's
/// document_source_bucket_auto.cpp.
#[tokio::test]
async fn bucket_auto_cuts_sorted_input_into_even_buckets() {
    let node = TestNode::start();
    let c = node.coll("app", "auto").await;
    c.insert_many((0..10).rev().map(|i| doc! { "_id": i, "v": i }))
        .await
        .unwrap();
    let out = agg(
        &c,
        vec![doc! { "$bucketAuto": { "groupBy": "$v", "buckets": 3 } }],
    )
    .await;
    assert_eq!(
        out,
        vec![
            doc! { "_id": { "min": 0, "max": 3 }, "count": 3 },
            doc! { "_id": { "min": 3, "max": 6 }, "count": 3 },
            doc! { "_id": { "min": 6, "max": 9 }, "count": 4 },
        ]
    );
    let ties = node.coll("app", "ties").await;
    ties.insert_many(
        [1, 1, 1, 1, 2, 3]
            .iter()
            .enumerate()
            .map(|(i, v)| doc! { "_id": i as i32, "v": *v }),
    )
    .await
    .unwrap();
    let out = agg(
        &ties,
        vec![doc! { "$bucketAuto": { "groupBy": "$v", "buckets": 2, "output": { "ids": { "$push": "$_id" } } } }],
    )
    .await;
    assert_eq!(
        out,
        vec![
            doc! { "_id": { "min": 1, "max": 2 }, "ids": [0, 1, 2, 3] },
            doc! { "_id": { "min": 2, "max": 3 }, "ids": [4, 5] },
        ]
    );
    for (spec, code) in [
        (mongodb::bson::Bson::Int32(1), 40240),
        (doc! { "groupBy": "$v", "buckets": "a" }.into(), 40241),
        (doc! { "groupBy": "$v", "buckets": 1.5 }.into(), 40242),
        (doc! { "groupBy": "$v", "buckets": 0 }.into(), 40243),
        (
            doc! { "groupBy": "$v", "buckets": 2, "output": 1 }.into(),
            40244,
        ),
        (doc! { "groupBy": "$v", "buckets": 2, "x": 1 }.into(), 40245),
        (doc! { "groupBy": "$v" }.into(), 40246),
        (
            doc! { "groupBy": "$v", "buckets": 2, "granularity": 1 }.into(),
            40261,
        ),
        (
            doc! { "groupBy": "$v", "buckets": 2, "granularity": "R5" }.into(),
            238,
        ),
    ] {
        agg_err(&c, vec![doc! { "$bucketAuto": spec }], code).await;
    }
}

/// Manual, $topN / $bottom / $firstN / $maxN / $stdDevPop / $mergeObjects
/// (the gamescores examples, cut down), and $firstN's missing 'n'
/// (accumulator_multi.cpp: 5787906).
#[tokio::test]
async fn group_accumulators_that_keep_several_values() {
    let node = TestNode::start();
    let games = node.coll("app", "gamescores").await;
    games
        .insert_many(vec![
            doc! { "playerId": "PlayerA", "gameId": "G1", "score": 31 },
            doc! { "playerId": "PlayerB", "gameId": "G1", "score": 33 },
            doc! { "playerId": "PlayerC", "gameId": "G1", "score": 99 },
            doc! { "playerId": "PlayerD", "gameId": "G1", "score": 1 },
            doc! { "playerId": "PlayerA", "gameId": "G2", "score": 10 },
            doc! { "playerId": "PlayerB", "gameId": "G2", "score": 14 },
        ])
        .await
        .unwrap();
    let out = agg(
        &games,
        vec![
            doc! { "$group": {
                "_id": "$gameId",
                "top3": { "$topN": { "output": ["$playerId", "$score"], "sortBy": { "score": -1 }, "n": 3 } },
                "lowest": { "$bottom": { "output": "$playerId", "sortBy": { "score": -1 } } },
                "first2": { "$firstN": { "input": "$playerId", "n": 2 } },
                "max2": { "$maxN": { "input": "$score", "n": 2 } },
                "spread": { "$stdDevPop": "$score" },
                "players": { "$mergeObjects": { "$arrayToObject": [[["$playerId", "$score"]]] } },
            } },
            doc! { "$sort": { "_id": 1 } },
        ],
    )
    .await;
    assert_eq!(
        out[1],
        doc! {
            "_id": "G2",
            "top3": [["PlayerB", 14], ["PlayerA", 10]],
            "lowest": "PlayerA",
            "first2": ["PlayerA", "PlayerB"],
            "max2": [14, 10],
            "spread": 2.0,
            "players": { "PlayerA": 10, "PlayerB": 14 },
        }
    );
    assert_eq!(out[0].get_array("top3").unwrap().len(), 3, "{:?}", out[0]);
    assert_eq!(out[0].get_str("lowest").unwrap(), "PlayerD");
    agg_err(
        &games,
        vec![doc! { "$group": { "_id": null, "x": { "$firstN": { "input": "$score" } } } }],
        5787906,
    )
    .await;
}

/// Manual, `$collStats`: `storageStats` (with `scale`) and `count`, the
/// source mongosh's `db.coll.stats()` reads; jstests/core/collStats
/// cases for the refusals.
#[tokio::test]
async fn coll_stats_stage_reports_storage_figures_and_the_count() {
    let node = TestNode::start();
    let (orders, _) = orders_and_inventory(&node).await;
    create_index(&orders, doc! { "item": 1 }).await;
    let out = agg(
        &orders,
        vec![doc! { "$collStats": { "storageStats": { "scale": 1024 }, "count": {} } }],
    )
    .await;
    assert_eq!(out.len(), 1);
    let stats = &out[0];
    assert_eq!(stats.get_str("ns").unwrap(), "shop.orders");
    assert_eq!(stats.get_i64("count").unwrap(), 3);
    let storage = stats.get_document("storageStats").unwrap();
    assert_eq!(storage.get_i64("count").unwrap(), 3);
    assert_eq!(storage.get_i32("nindexes").unwrap(), 2);
    assert_eq!(storage.get_i64("scaleFactor").unwrap(), 1024);
    assert!(!storage.get_bool("capped").unwrap());
    // The stages after it run over its document.
    let counted = agg(
        &orders,
        vec![
            doc! { "$collStats": { "count": {} } },
            doc! { "$project": { "_id": 0, "count": 1 } },
        ],
    )
    .await;
    assert_eq!(counted, vec![doc! { "count": 3i64 }]);
    let missing = node.coll("shop", "missing").await;
    agg_err(&missing, vec![doc! { "$collStats": { "count": {} } }], 26).await;
    agg_err(
        &orders,
        vec![doc! { "$collStats": { "latencyStats": {} } }],
        238,
    )
    .await;
    agg_err(&orders, vec![doc! { "$collStats": { "bogus": {} } }], 40415).await;
    agg_err(
        &orders,
        vec![doc! { "$match": {} }, doc! { "$collStats": {} }],
        40602,
    )
    .await;
    let db = node.db("shop").await;
    let e = db
        .run_command(doc! { "collStats": "orders", "scale": 0 })
        .await
        .map(|_| ());
    expect_code(e, 2);
}

/// Manual, `$indexStats`: one document per index, `accesses.ops` counting
/// the operations that used it.
#[tokio::test]
async fn index_stats_stage_counts_the_queries_each_index_served() {
    let node = TestNode::start();
    let (orders, _) = orders_and_inventory(&node).await;
    create_index(&orders, doc! { "item": 1 }).await;
    for _ in 0..2 {
        orders.find_one(doc! { "item": "pecans" }).await.unwrap();
    }
    orders.find_one(doc! { "_id": 1 }).await.unwrap();
    let stats = agg(
        &orders,
        vec![doc! { "$indexStats": {} }, doc! { "$sort": { "name": 1 } }],
    )
    .await;
    let ops: Vec<(String, i64)> = stats
        .iter()
        .map(|s| {
            (
                s.get_str("name").unwrap().to_owned(),
                s.get_document("accesses").unwrap().get_i64("ops").unwrap(),
            )
        })
        .collect();
    assert_eq!(ops, vec![("_id_".to_owned(), 1), ("item_1".to_owned(), 2)]);
    assert_eq!(
        stats[1]
            .get_document("spec")
            .unwrap()
            .get_document("key")
            .unwrap(),
        &doc! { "item": 1 }
    );
}

/// Manual, `$currentOp`: `aggregate: 1` on `admin`, the running commands
/// as `currentOp` shows them (this very aggregate among them).
#[tokio::test]
async fn current_op_stage_lists_running_operations_on_admin_only() {
    let node = TestNode::start();
    let admin = node.db("admin").await;
    let ops = db_agg(
        &admin,
        vec![
            doc! { "$currentOp": { "allUsers": true } },
            doc! { "$match": { "command.aggregate": 1 } },
        ],
    )
    .await
    .unwrap();
    assert_eq!(ops.len(), 1, "{ops:?}");
    assert!(ops[0].get_i64("opid").is_ok());
    let other = node.db("shop").await;
    expect_code(db_agg(&other, vec![doc! { "$currentOp": {} }]).await, 73);
    expect_code(
        db_agg(&admin, vec![doc! { "$currentOp": { "idleCursors": true } }]).await,
        238,
    );
}

/// Manual, `$sum` and `$avg` ("Behavior": result types) and
/// jstests/aggregation/accumulators/sum.js: integers sum to an int while
/// they fit, then a long, then a double; any double makes a double, any
/// decimal a decimal; `$avg` is a double unless a decimal is involved;
/// non-numbers are ignored (`$sum` 0, `$avg` null).
#[tokio::test]
async fn sum_and_avg_of_mixed_numbers_have_mongods_result_types() {
    use mongodb::bson::{Bson, Decimal128};
    let node = TestNode::start();
    let c = node.coll("agg", "mixed").await;
    let dec = |s: &str| Bson::Decimal128(s.parse::<Decimal128>().unwrap());
    let groups: Vec<(i32, Vec<Bson>)> = vec![
        (1, vec![Bson::Int32(1), Bson::Int32(2)]),
        (2, vec![Bson::Int32(i32::MAX), Bson::Int32(1)]),
        (3, vec![Bson::Int32(1), Bson::Int64(2)]),
        (4, vec![Bson::Int32(1), Bson::Double(2.5)]),
        (5, vec![Bson::Int32(1), dec("2.5")]),
        (6, vec![Bson::String("x".into()), Bson::Null]),
        (7, vec![Bson::Int64(i64::MAX), Bson::Int64(1)]),
    ];
    let mut docs = Vec::new();
    for (g, values) in &groups {
        for v in values {
            docs.push(doc! { "g": g, "v": v.clone() });
        }
    }
    c.insert_many(docs).await.unwrap();
    let out = agg(
        &c,
        vec![
            doc! { "$group": { "_id": "$g", "s": { "$sum": "$v" }, "a": { "$avg": "$v" } } },
            doc! { "$sort": { "_id": 1 } },
        ],
    )
    .await;
    let got: Vec<(Bson, Bson)> = out
        .iter()
        .map(|d| (d.get("s").unwrap().clone(), d.get("a").unwrap().clone()))
        .collect();
    assert_eq!(
        got,
        vec![
            (Bson::Int32(3), Bson::Double(1.5)),
            (Bson::Int64(2147483648), Bson::Double(1073741824.0)),
            (Bson::Int64(3), Bson::Double(1.5)),
            (Bson::Double(3.5), Bson::Double(1.75)),
            (dec("3.5"), dec("1.75")),
            (Bson::Int32(0), Bson::Null),
            (
                Bson::Double(9.223372036854776e18),
                Bson::Double(4.611686018427388e18)
            ),
        ]
    );
}

/// Manual, "Return Information on Aggregation Pipeline Operation"
/// (`explain`): a leading `$match` is the query the planner sees, so an
/// index serves it; the stages after it follow the `$cursor` stage.
#[tokio::test]
async fn explain_shows_a_leading_match_using_an_index() {
    let node = TestNode::start();
    let (orders, _) = orders_and_inventory(&node).await;
    create_index(&orders, doc! { "item": 1 }).await;
    let db = node.db("shop").await;
    let index_name = |plan: &Document| -> String {
        let mut stage = plan.clone();
        loop {
            if stage.get_str("stage").ok() == Some("IXSCAN") {
                return stage.get_str("indexName").unwrap().to_owned();
            }
            match stage.get_document("inputStage") {
                Ok(inner) => stage = inner.clone(),
                Err(_) => return format!("no IXSCAN in {plan:?}"),
            }
        }
    };
    let explained = db
        .run_command(doc! {
            "explain": {
                "aggregate": "orders",
                "pipeline": [
                    { "$match": { "item": "pecans" } },
                    { "$group": { "_id": "$item", "n": { "$sum": 1 } } },
                ],
                "cursor": {},
            },
            "verbosity": "executionStats",
        })
        .await
        .unwrap();
    let stages = explained.get_array("stages").unwrap();
    assert_eq!(stages.len(), 2);
    let cursor = stages[0]
        .as_document()
        .unwrap()
        .get_document("$cursor")
        .unwrap();
    let plan = cursor
        .get_document("queryPlanner")
        .unwrap()
        .get_document("winningPlan")
        .unwrap();
    assert_eq!(index_name(plan), "item_1");
    assert_eq!(
        cursor
            .get_document("executionStats")
            .unwrap()
            .get_i64("nReturned")
            .unwrap(),
        1
    );
    assert!(stages[1].as_document().unwrap().contains_key("$group"));
    // A pipeline the query layer takes whole, and the legacy `explain: true`.
    let whole = db
        .run_command(doc! {
            "aggregate": "orders",
            "pipeline": [{ "$match": { "item": "pecans" } }],
            "explain": true,
        })
        .await
        .unwrap();
    let plan = whole
        .get_document("queryPlanner")
        .unwrap()
        .get_document("winningPlan")
        .unwrap();
    assert_eq!(index_name(plan), "item_1");
}

async fn employees(node: &TestNode) -> Collection<Document> {
    let c = node.coll("graph", "employees").await;
    c.insert_many(vec![
        doc! { "_id": 1, "name": "Dev" },
        doc! { "_id": 2, "name": "Eliot", "reportsTo": "Dev" },
        doc! { "_id": 3, "name": "Ron", "reportsTo": "Eliot" },
        doc! { "_id": 4, "name": "Andrew", "reportsTo": "Eliot" },
        doc! { "_id": 5, "name": "Asya", "reportsTo": "Ron" },
        doc! { "_id": 6, "name": "Dan", "reportsTo": "Andrew" },
    ])
    .await
    .unwrap();
    c
}

/// Manual, `$graphLookup`: "Within a Single Collection" — the reporting
/// chain of each employee, with `depthField` and `maxDepth`.
#[tokio::test]
async fn graph_lookup_follows_a_chain_with_depths_and_a_bound() {
    let node = TestNode::start();
    let c = employees(&node).await;
    create_index(&c, doc! { "name": 1 }).await;
    let chain = |max_depth: Option<i32>| {
        let mut spec = doc! {
            "from": "employees",
            "startWith": "$reportsTo",
            "connectFromField": "reportsTo",
            "connectToField": "name",
            "as": "chain",
            "depthField": "depth",
        };
        if let Some(m) = max_depth {
            spec.insert("maxDepth", m);
        }
        vec![
            doc! { "$match": { "_id": 5 } },
            doc! { "$graphLookup": spec },
            doc! { "$unwind": "$chain" },
            doc! { "$sort": { "chain.depth": 1 } },
            doc! { "$project": { "_id": 0, "name": "$chain.name", "depth": "$chain.depth" } },
        ]
    };
    assert_eq!(
        agg(&c, chain(None)).await,
        vec![
            doc! { "name": "Ron", "depth": 0i64 },
            doc! { "name": "Eliot", "depth": 1i64 },
            doc! { "name": "Dev", "depth": 2i64 },
        ]
    );
    assert_eq!(agg(&c, chain(Some(1))).await.len(), 2);
    // Dev reports to no one: a missing startWith reaches nothing.
    let dev = agg(
        &c,
        vec![
            doc! { "$match": { "_id": 1 } },
            doc! { "$graphLookup": {
                "from": "employees", "startWith": "$reportsTo", "connectFromField": "reportsTo",
                "connectToField": "name", "as": "chain",
            } },
        ],
    )
    .await;
    assert_eq!(dev[0].get_array("chain").unwrap().len(), 0);
}

/// jstests/aggregation/sources/graphLookup/missing_fields.js: a null
/// value matches a null field, not a missing one.
#[tokio::test]
async fn graph_lookup_null_matches_null_but_not_missing() {
    let node = TestNode::start();
    let c = node.coll("graph", "nulls").await;
    c.insert_many(vec![
        doc! { "_id": 0, "x": 1, "y": 1 },
        doc! { "_id": 1, "x": 1, "y": null },
        doc! { "_id": 3, "x": 1 },
    ])
    .await
    .unwrap();
    let out = agg(
        &c,
        vec![
            doc! { "$match": { "_id": 3 } },
            doc! { "$graphLookup": {
                "from": "nulls", "startWith": null, "connectFromField": "x",
                "connectToField": "y", "as": "arr", "maxDepth": 0,
            } },
        ],
    )
    .await;
    assert_eq!(
        out[0].get_array("arr").unwrap(),
        &vec![mongodb::bson::Bson::Document(
            doc! { "_id": 1, "x": 1, "y": null }
        )]
    );
}

/// jstests/aggregation/sources/graphLookup/error.js: mongod's codes for
/// bad specifications.
#[tokio::test]
async fn graph_lookup_bad_specifications_get_mongods_codes() {
    let node = TestNode::start();
    let c = employees(&node).await;
    let base = || {
        doc! {
            "from": "employees", "startWith": { "$literal": 0 }, "connectToField": "a",
            "connectFromField": "b", "as": "out",
        }
    };
    let with = |k: &str, v: mongodb::bson::Bson| {
        let mut d = base();
        d.insert(k, v);
        vec![doc! { "$graphLookup": d }]
    };
    let without = |k: &str| {
        let mut d = base();
        d.remove(k);
        vec![doc! { "$graphLookup": d }]
    };
    use mongodb::bson::Bson;
    agg_err(&c, vec![doc! { "$graphLookup": 4 }], 9).await;
    agg_err(&c, with("maxDepth", Bson::String("x".into())), 40100).await;
    agg_err(&c, with("maxDepth", Bson::Int32(-1)), 40101).await;
    agg_err(&c, with("maxDepth", Bson::Double(2.3)), 40102).await;
    agg_err(&c, with("as", Bson::Int32(0)), 40103).await;
    agg_err(&c, with("as", Bson::String("$out".into())), 16410).await;
    agg_err(
        &c,
        with("connectFromField", Bson::String("$b".into())),
        16410,
    )
    .await;
    agg_err(
        &c,
        with("restrictSearchWithMatch", Bson::String("x".into())),
        40185,
    )
    .await;
    agg_err(&c, with("notAField", Bson::String("x".into())), 40104).await;
    agg_err(&c, without("connectToField"), 40105).await;
    agg_err(&c, without("startWith"), 40105).await;
    agg_err(&c, without("from"), 9).await;
    agg_err(&c, with("from", Bson::String(String::new())), 73).await;
}

/// The server's codeName of a driver error.
fn code_name(e: &mongodb::error::Error) -> Option<String> {
    match e.kind.as_ref() {
        mongodb::error::ErrorKind::Command(c) => Some(c.code_name.clone()),
        _ => None,
    }
}

/// jstests/noPassthrough/unsupported_change_stream_deployments.js: a
/// standalone mongod refuses `$changeStream` with 40573, whether the stream
/// watches a collection, a database or (from `admin`, with
/// `allChangesForCluster`) the whole deployment; ebb is a standalone.
#[tokio::test]
async fn change_streams_need_a_replica_set() {
    let node = TestNode::start();
    let client = node.client().await;
    let db = client.database("test");
    let c = db.collection::<Document>("watched");
    c.insert_one(doc! { "_id": 1 }).await.unwrap();
    let expect_40573 = |what: &str, r: mongodb::error::Result<()>| {
        let e = r.expect_err(what);
        assert_eq!(crate::common::code(&e), Some(40573), "{what}: {e}");
        assert_eq!(
            code_name(&e).as_deref(),
            Some("Location40573"),
            "{what}: {e}"
        );
        assert_eq!(
            crate::common::message(&e),
            "The $changeStream stage is only supported on replica sets",
            "{what}"
        );
    };
    expect_40573("collection watch", c.watch().await.map(drop));
    expect_40573(
        "collection watch, updateLookup",
        c.watch()
            .full_document(mongodb::options::FullDocumentType::UpdateLookup)
            .await
            .map(drop),
    );
    expect_40573("database watch", db.watch().await.map(drop));
    expect_40573("cluster watch", client.watch().await.map(drop));
    expect_40573(
        "collection that does not exist",
        db.collection::<Document>("non_existent")
            .watch()
            .await
            .map(drop),
    );
    expect_40573(
        "aggregate command",
        db.run_command(doc! {
            "aggregate": "watched",
            "pipeline": [{ "$changeStream": {} }, { "$match": { "operationType": "insert" } }],
            "cursor": {},
        })
        .await
        .map(drop),
    );
}

/// The manual's `$redact` examples: a report whose sections a reader sees
/// by their tags (`$$DESCEND`/`$$PRUNE`, down through arrays of
/// sections), and accounts kept or pruned whole by a level (`$$KEEP`).
#[tokio::test]
async fn redact_descends_prunes_and_keeps_as_the_manual_shows() {
    let node = TestNode::start();
    let c = node.coll("app", "forecasts").await;
    c.insert_one(doc! {
        "_id": 1, "title": "123 Department Report", "tags": ["G", "STLW"], "year": 2014,
        "subsections": [
            { "subtitle": "Section 1: Overview", "tags": ["SI", "G"], "content": "Section 1" },
            { "subtitle": "Section 2: Analysis", "tags": ["STLW"], "content": "Section 2" },
            { "subtitle": "Section 3: Budgeting", "tags": ["TK"],
              "content": { "text": "Section 3", "tags": ["HCS"] } },
        ],
    })
    .await
    .unwrap();
    let by_tags = doc! { "$redact": { "$cond": {
        "if": { "$gt": [{ "$size": { "$setIntersection": ["$tags", ["STLW", "G"]] } }, 0] },
        "then": "$$DESCEND",
        "else": "$$PRUNE",
    } } };
    let out = agg(&c, vec![doc! { "$match": { "year": 2014 } }, by_tags]).await;
    assert_eq!(
        out,
        vec![doc! {
            "_id": 1, "title": "123 Department Report", "tags": ["G", "STLW"], "year": 2014,
            "subsections": [
                { "subtitle": "Section 1: Overview", "tags": ["SI", "G"], "content": "Section 1" },
                { "subtitle": "Section 2: Analysis", "tags": ["STLW"], "content": "Section 2" },
            ],
        }]
    );
    let accounts = node.coll("app", "accounts").await;
    accounts
        .insert_many(vec![
            doc! { "_id": 1, "status": "A", "acct": { "level": 5, "id": 7 }, "root": { "level": 1 } },
            doc! { "_id": 2, "status": "B", "level": 1, "acct": { "level": 1, "id": 8 } },
        ])
        .await
        .unwrap();
    // `$$ROOT` stays the whole document while `$$CURRENT` descends.
    let out = agg(
        &accounts,
        vec![
            doc! { "$sort": { "_id": 1 } },
            doc! { "$redact": { "$cond": {
                "if": { "$eq": ["$level", 5] },
                "then": "$$PRUNE",
                "else": { "$cond": [{ "$eq": ["$$ROOT.status", "B"] }, "$$KEEP", "$$DESCEND"] },
            } } },
        ],
    )
    .await;
    assert_eq!(
        out,
        vec![
            doc! { "_id": 1, "status": "A", "root": { "level": 1 } },
            doc! { "_id": 2, "status": "B", "level": 1, "acct": { "level": 1, "id": 8 } },
        ]
    );
    let msg = agg_err(&c, vec![doc! { "$redact": "$title" }], 17053).await;
    assert!(msg.contains("$$KEEP, $$DESCEND, and $$PRUNE"), "{msg}");
}
