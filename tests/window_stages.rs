//! `$setWindowFields`, `$fill` and spilling `$sort` stages, end to end
//! through the driver. Each test names the MongoDB manual page or jstest
//! its expectation comes from.

use crate::common::{TestNode, agg, agg_err, big_padded_collection, expect_code};
use futures::TryStreamExt;
use mongodb::Collection;
use mongodb::bson::{Bson, DateTime, Document, doc};

fn date(s: &str) -> DateTime {
    DateTime::parse_rfc3339_str(s).unwrap()
}

/// The `cakeSales` collection of the manual's `$setWindowFields` page.
async fn cake_sales(node: &TestNode) -> Collection<Document> {
    let c = node.coll("shop", "cakeSales").await;
    c.insert_many(vec![
        doc! { "_id": 0, "type": "chocolate", "orderDate": date("2020-05-18T14:10:30Z"), "state": "CA", "price": 13, "quantity": 120 },
        doc! { "_id": 1, "type": "chocolate", "orderDate": date("2021-03-20T11:30:05Z"), "state": "WA", "price": 14, "quantity": 140 },
        doc! { "_id": 2, "type": "vanilla", "orderDate": date("2021-01-11T06:31:15Z"), "state": "CA", "price": 12, "quantity": 145 },
        doc! { "_id": 3, "type": "vanilla", "orderDate": date("2020-02-08T13:13:23Z"), "state": "WA", "price": 13, "quantity": 104 },
        doc! { "_id": 4, "type": "strawberry", "orderDate": date("2019-05-18T16:09:01Z"), "state": "CA", "price": 41, "quantity": 162 },
        doc! { "_id": 5, "type": "strawberry", "orderDate": date("2019-01-08T06:12:03Z"), "state": "WA", "price": 43, "quantity": 134 },
    ])
    .await
    .unwrap();
    c
}

fn by_id(out: &[Document], field: &str) -> Vec<(i32, Bson)> {
    let mut v: Vec<(i32, Bson)> = out
        .iter()
        .map(|d| {
            (
                d.get_i32("_id").unwrap(),
                d.get(field).cloned().unwrap_or(Bson::Null),
            )
        })
        .collect();
    v.sort_by_key(|(id, _)| *id);
    v
}

/// Manual, $setWindowFields: "Use Documents Window to Obtain Cumulative
/// Quantity for Each State" — partitions come out one after the other,
/// each in orderDate order.
#[tokio::test]
async fn cumulative_quantity_per_state_in_order() {
    let node = TestNode::start();
    let c = cake_sales(&node).await;
    let out = agg(
        &c,
        vec![doc! { "$setWindowFields": {
            "partitionBy": "$state",
            "sortBy": { "orderDate": 1 },
            "output": { "cumulativeQuantityForState": {
                "$sum": "$quantity",
                "window": { "documents": ["unbounded", "current"] },
            } },
        } }],
    )
    .await;
    let seen: Vec<(i32, i32)> = out
        .iter()
        .map(|d| {
            (
                d.get_i32("_id").unwrap(),
                d.get_i32("cumulativeQuantityForState").unwrap(),
            )
        })
        .collect();
    assert_eq!(
        seen,
        [(4, 162), (0, 282), (2, 427), (5, 134), (3, 238), (1, 378)]
    );
    // The partition key travels only inside the stage.
    assert!(out.iter().all(|d| d.len() == 7), "{out:?}");
}

/// Manual, $setWindowFields: "Use a Time Range Window with a Positive
/// Upper Bound" — prices of orders up to 10 months after each order.
#[tokio::test]
async fn time_range_window_in_months() {
    let node = TestNode::start();
    let c = cake_sales(&node).await;
    let out = agg(
        &c,
        vec![doc! { "$setWindowFields": {
            "partitionBy": "$state",
            "sortBy": { "orderDate": 1 },
            "output": { "recentOrders": {
                "$push": "$price",
                "window": { "range": ["unbounded", 10], "unit": "month" },
            } },
        } }],
    )
    .await;
    let prices = |v: &Bson| -> Vec<i32> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|p| p.as_i32().unwrap())
            .collect()
    };
    let got: Vec<(i32, Vec<i32>)> = by_id(&out, "recentOrders")
        .into_iter()
        .map(|(id, v)| (id, prices(&v)))
        .collect();
    assert_eq!(
        got,
        vec![
            (0, vec![41, 13, 12]),
            (1, vec![43, 13, 14]),
            (2, vec![41, 13, 12]),
            (3, vec![43, 13]),
            (4, vec![41]),
            (5, vec![43]),
        ]
    );
}

/// Manual, $rank: "Dense Rank Partitions by an Integer Field" style —
/// ranks of quantity per state, largest first.
#[tokio::test]
async fn rank_of_quantity_per_state() {
    let node = TestNode::start();
    let c = cake_sales(&node).await;
    let out = agg(
        &c,
        vec![doc! { "$setWindowFields": {
            "partitionBy": "$state",
            "sortBy": { "quantity": -1 },
            "output": { "rankQuantityForState": { "$rank": {} } },
        } }],
    )
    .await;
    let ranks: Vec<(i32, Bson)> = by_id(&out, "rankQuantityForState");
    assert_eq!(
        ranks,
        vec![
            (0, Bson::Int32(3)),
            (1, Bson::Int32(1)),
            (2, Bson::Int32(2)),
            (3, Bson::Int32(3)),
            (4, Bson::Int32(1)),
            (5, Bson::Int32(2)),
        ]
    );
}

/// jstests/aggregation/sources/setWindowFields/parse.js, rank.js and
/// partition.js: bad specifications get mongod's codes; nothing runs.
#[tokio::test]
async fn bad_window_specifications_get_mongods_codes() {
    let node = TestNode::start();
    let c = cake_sales(&node).await;
    let cases = [
        (doc! { "output": { "r": { "$rank": {} } } }, 5371602),
        (
            doc! { "sortBy": { "a": 1 }, "output": { "r": { "$rank": {}, "window": { "documents": [-1, 1] } } } },
            5371601,
        ),
        (
            doc! { "sortBy": { "a": 1 }, "output": { "v": { "$sum": "$a", "window": { "documents": [1, -1] } } } },
            5339900,
        ),
        (
            doc! { "output": { "v": { "$sum": "$a", "window": { "documents": ["unbounded", "current"] } } } },
            5339901,
        ),
        (
            doc! { "sortBy": { "a": 1, "b": 1 }, "output": { "v": { "$sum": "$a", "window": { "range": [-1, 1] } } } },
            5339902,
        ),
        (doc! { "output": { "v": { "$summ": "$a" } } }, 9),
        (doc! { "what_is_this": 1 }, 40415),
        (doc! { "output": "invalid" }, 14),
    ];
    for (spec, code) in cases {
        agg_err(&c, vec![doc! { "$setWindowFields": spec }], code).await;
    }
    // An array partition key fails at run time with TypeMismatch.
    agg_err(
        &c,
        vec![
            doc! { "$set": { "arr": [1, 2] } },
            doc! { "$setWindowFields": { "partitionBy": "$arr", "output": {} } },
        ],
        14,
    )
    .await;
    // A range window over a non-numeric sortBy value (range.js).
    agg_err(
        &c,
        vec![
            doc! { "$setWindowFields": { "sortBy": { "state": 1 }, "output": {
            "v": { "$sum": 1, "window": { "range": [-1, 1] } } } } },
        ],
        5429413,
    )
    .await;
}

/// Manual, $fill: "Fill Missing Field Values with a Constant Value" and
/// "Fill Missing Field Values with Linear Interpolation" and "... Based on
/// the Last Observed Value".
#[tokio::test]
async fn fill_with_values_linear_interpolation_and_locf() {
    let node = TestNode::start();
    let sales = node.coll("shop", "dailySales").await;
    sales
        .insert_many(vec![
            doc! { "_id": 1, "bootsSold": 10, "sandalsSold": 20, "sneakersSold": 12 },
            doc! { "_id": 2, "bootsSold": 7, "sneakersSold": 18 },
            doc! { "_id": 3, "sneakersSold": 5 },
        ])
        .await
        .unwrap();
    let out = agg(
        &sales,
        vec![
            doc! { "$fill": { "output": {
                "bootsSold": { "value": 0 },
                "sandalsSold": { "value": 0 },
                "sneakersSold": { "value": 0 },
            } } },
            doc! { "$sort": { "_id": 1 } },
        ],
    )
    .await;
    assert_eq!(
        out,
        vec![
            doc! { "_id": 1, "bootsSold": 10, "sandalsSold": 20, "sneakersSold": 12 },
            doc! { "_id": 2, "bootsSold": 7, "sneakersSold": 18, "sandalsSold": 0 },
            doc! { "_id": 3, "sneakersSold": 5, "bootsSold": 0, "sandalsSold": 0 },
        ]
    );

    let stock = node.coll("shop", "stock").await;
    let minute = |m: i64| DateTime::from_millis(1_615_194_000_000 + m * 60_000);
    stock
        .insert_many(vec![
            doc! { "_id": 0, "time": minute(0), "price": 500 },
            doc! { "_id": 1, "time": minute(1) },
            doc! { "_id": 2, "time": minute(2), "price": 515 },
            doc! { "_id": 3, "time": minute(3) },
            doc! { "_id": 4, "time": minute(4) },
            doc! { "_id": 5, "time": minute(5), "price": 560 },
        ])
        .await
        .unwrap();
    let out = agg(
        &stock,
        vec![doc! { "$fill": { "sortBy": { "time": 1 }, "output": { "price": { "method": "linear" } } } }],
    )
    .await;
    let prices: Vec<f64> = out
        .iter()
        .map(|d| match d.get("price").unwrap() {
            Bson::Int32(n) => f64::from(*n),
            Bson::Double(x) => *x,
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(prices, [500.0, 507.5, 515.0, 530.0, 545.0, 560.0]);

    let reviews = node.coll("shop", "restaurantReviews").await;
    reviews
        .insert_many(vec![
            doc! { "_id": 1, "date": minute(0), "score": 5 },
            doc! { "_id": 2, "date": minute(1) },
            doc! { "_id": 3, "date": minute(2), "score": 8 },
            doc! { "_id": 4, "date": minute(3) },
        ])
        .await
        .unwrap();
    let out = agg(
        &reviews,
        vec![doc! { "$fill": { "sortBy": { "date": 1 }, "output": { "score": { "method": "locf" } } } }],
    )
    .await;
    let scores: Vec<i32> = out.iter().map(|d| d.get_i32("score").unwrap()).collect();
    assert_eq!(scores, [5, 5, 8, 8]);
    // $fill's own errors: a method needs sortBy; an unknown method fails.
    agg_err(
        &reviews,
        vec![doc! { "$fill": { "output": { "score": { "method": "locf" } } } }],
        9,
    )
    .await;
    agg_err(
        &reviews,
        vec![doc! { "$fill": { "sortBy": { "date": 1 }, "output": { "score": { "method": "next" } } } }],
        9,
    )
    .await;
}

/// A `$sort` stage past the 100 MiB limit (after a stage, so not the
/// query's own sort) fails with 292 unless the client allows disk use;
/// then it spills sorted runs and merges them (manual, "Aggregation
/// Pipeline Limits": "$sort ... can use allowDiskUse"; jstests/aggregation/
/// sources/sort/*spill*). `$setWindowFields` sorts the same way.
#[tokio::test]
async fn sort_stage_past_the_memory_limit_spills_with_allow_disk_use() {
    let node = TestNode::start();
    let db = node.db("t").await;
    let c = big_padded_collection(&db).await;
    // Every field is needed after the sort (mongod would otherwise sort
    // only the fields used), and no $limit bounds it (a top-k sort would
    // hold only those).
    let pipeline = || {
        vec![
            doc! { "$set": { "n": 1 } },
            doc! { "$sort": { "k": -1 } },
            doc! { "$skip": 1097 },
        ]
    };
    agg_err(&c, pipeline(), 292).await;
    let out: Vec<Document> = c
        .aggregate(pipeline())
        .allow_disk_use(true)
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    let keys: Vec<i32> = out.iter().map(|d| d.get_i32("k").unwrap()).collect();
    assert_eq!(keys, [2, 1, 0]);
    // $sort + $limit keeps only the limit: no disk needed (mongod's top-k).
    let top = agg(
        &c,
        vec![
            doc! { "$set": { "n": 1 } },
            doc! { "$sort": { "k": 1 } },
            doc! { "$limit": 2 },
        ],
    )
    .await;
    let keys: Vec<i32> = top.iter().map(|d| d.get_i32("k").unwrap()).collect();
    assert_eq!(keys, [0, 1]);
    let window = vec![
        doc! { "$setWindowFields": { "sortBy": { "k": 1 }, "output": { "n": { "$documentNumber": {} } } } },
        doc! { "$match": { "n": { "$lte": 2 } } },
    ];
    agg_err(&c, window.clone(), 292).await;
    // Sorted on disk, but one partition of 107 MiB is still more than a
    // window stage holds: mongod's 5643011 would need disk use too, which
    // ebb refuses rather than ignore.
    let r = c.aggregate(window).allow_disk_use(true).await;
    let r = match r {
        Ok(cursor) => cursor.try_collect::<Vec<Document>>().await,
        Err(e) => Err(e),
    };
    expect_code(r, 238);
}

/// Manual, `$densify`: "Densify Time Series Data" — hourly readings added
/// in the explicit range `[00:00, 08:00)`; the reading past it passes
/// through.
#[tokio::test]
async fn densify_fills_hours_in_an_explicit_range() {
    let node = TestNode::start();
    let c = node.coll("shop", "weather").await;
    let meta = doc! { "sensorId": 5578, "type": "temperature" };
    c.insert_many(
        ["00", "04", "08", "12"]
            .iter()
            .map(|h| doc! { "metadata": meta.clone(), "timestamp": date(&format!("2021-05-18T{h}:00:00Z")), "temp": 12 }),
    )
    .await
    .unwrap();
    let out = agg(
        &c,
        vec![
            doc! { "$densify": { "field": "timestamp", "range": {
                "step": 1, "unit": "hour",
                "bounds": [date("2021-05-18T00:00:00Z"), date("2021-05-18T08:00:00Z")],
            } } },
            doc! { "$project": { "_id": 0, "timestamp": 1, "temp": 1 } },
        ],
    )
    .await;
    let hours: Vec<(String, bool)> = out
        .iter()
        .map(|d| {
            (
                d.get_datetime("timestamp")
                    .unwrap()
                    .try_to_rfc3339_string()
                    .unwrap()[11..13]
                    .to_owned(),
                d.contains_key("temp"),
            )
        })
        .collect();
    let expected: Vec<(String, bool)> = [
        ("00", true),
        ("01", false),
        ("02", false),
        ("03", false),
        ("04", true),
        ("05", false),
        ("06", false),
        ("07", false),
        ("08", true),
        ("12", true),
    ]
    .iter()
    .map(|(h, t)| (h.to_string(), *t))
    .collect();
    assert_eq!(hours, expected);
}

async fn coffee(node: &TestNode) -> Collection<Document> {
    let c = node.coll("shop", "coffee").await;
    c.insert_many(vec![
        doc! { "altitude": 600, "variety": "Arabica Typica", "score": 68.3 },
        doc! { "altitude": 750, "variety": "Arabica Typica", "score": 69.5 },
        doc! { "altitude": 950, "variety": "Arabica Typica", "score": 70.5 },
        doc! { "altitude": 1250, "variety": "Gesha", "score": 88.15 },
        doc! { "altitude": 1700, "variety": "Gesha", "score": 95.5, "price": 1029 },
    ])
    .await
    .unwrap();
    c
}

/// Manual, `$densify`: "Densification with Partitions" — every variety
/// over the full range of altitudes, then each over its own.
#[tokio::test]
async fn densify_fills_each_partition_over_the_full_or_its_own_range() {
    let node = TestNode::start();
    let c = coffee(&node).await;
    let altitudes = |bounds: &str| {
        let c = c.clone();
        let bounds = bounds.to_owned();
        async move {
            agg(
                &c,
                vec![doc! { "$densify": {
                    "field": "altitude", "partitionByFields": ["variety"],
                    "range": { "bounds": bounds, "step": 200 },
                } }],
            )
            .await
            .iter()
            .map(|d| {
                (
                    d.get_str("variety").unwrap().to_owned(),
                    d.get_i32("altitude").unwrap(),
                )
            })
            .collect::<Vec<_>>()
        }
    };
    let of = |v: &str, list: &[i32]| list.iter().map(|a| (v.to_owned(), *a)).collect::<Vec<_>>();
    let mut full = of(
        "Arabica Typica",
        &[600, 750, 800, 950, 1000, 1200, 1400, 1600],
    );
    full.extend(of("Gesha", &[600, 800, 1000, 1200, 1250, 1400, 1600, 1700]));
    assert_eq!(altitudes("full").await, full);
    let mut own = of("Arabica Typica", &[600, 750, 800, 950]);
    own.extend(of("Gesha", &[1250, 1450, 1650, 1700]));
    assert_eq!(altitudes("partition").await, own);
}

/// jstests/aggregation/sources/densify/libs/parse_util.js: mongod's codes
/// for bad specifications.
#[tokio::test]
async fn densify_bad_specifications_get_mongods_codes() {
    let node = TestNode::start();
    let c = coffee(&node).await;
    let run = |spec: Document| vec![doc! { "$densify": spec }];
    let cases = vec![
        (doc! { "field": "a", "range": { "step": 1.0 } }, 40414),
        (doc! { "range": { "step": 1.0, "bounds": "full" } }, 40414),
        (
            doc! { "field": 1.0, "range": { "step": 1.0, "bounds": "full" } },
            14,
        ),
        (
            doc! { "field": "a", "range": { "step": "x", "bounds": "full" } },
            14,
        ),
        (
            doc! { "field": "a", "partitionByFields": ["a"], "range": { "step": 1.0, "bounds": "full" } },
            8993000,
        ),
        (
            doc! { "field": "a.b", "partitionByFields": ["a"], "range": { "step": 1.0, "bounds": "full" } },
            9554500,
        ),
        (
            doc! { "field": "a", "range": { "step": 1.0, "bounds": [0, 1, 2] } },
            5733403,
        ),
        (
            doc! { "field": "a", "range": { "step": -1.0, "bounds": [0, 1] } },
            5733401,
        ),
        (
            doc! { "field": "$a", "range": { "step": 1.0, "bounds": [0, 1] } },
            16410,
        ),
        (
            doc! { "field": "a", "range": { "step": 1.0, "bounds": "partition" } },
            5733408,
        ),
        (
            doc! { "field": "a", "range": { "step": 1.0, "bounds": [2, 1] } },
            5733402,
        ),
        (
            doc! { "field": "a", "range": { "step": 1.0, "bounds": [1, 2], "unit": "second" } },
            5733409,
        ),
        (
            doc! { "field": "a", "range": { "step": 1.0, "bounds": [1, date("2020-01-01T00:00:00Z")] } },
            5733406,
        ),
        (
            doc! { "field": "a", "range": { "step": 1.1, "unit": "second",
            "bounds": [date("2020-01-01T00:00:00Z"), date("2020-01-03T00:00:00Z")] } },
            6586400,
        ),
    ];
    for (spec, code) in cases {
        agg_err(&c, run(spec), code).await;
    }
    // A value of the wrong type for the range.
    agg_err(
        &c,
        run(doc! { "field": "variety", "range": { "step": 1, "bounds": "full" } }),
        5733201,
    )
    .await;
}
