//! Geospatial queries as mongod answers them: `$geoWithin` (a GeoJSON
//! polygon with holes, `$centerSphere`, and the flat `$box`, `$polygon`,
//! `$center`) and `$geoIntersects` over points, legacy pairs, lines and
//! polygons, with mongod's refusals of bad shapes.

use mongodb::bson::{Document, doc};
use mongodb::{Collection, Database};

use crate::common::{TestNode, agg_err, cursor_ids, expect_code, ids};

fn point(x: f64, y: f64) -> Document {
    doc! { "type": "Point", "coordinates": [x, y] }
}

fn square(x0: f64, y0: f64, x1: f64, y1: f64) -> Document {
    doc! { "type": "Polygon", "coordinates": [[[x0, y0], [x1, y0], [x1, y1], [x0, y1], [x0, y0]]] }
}

/// Places as GeoJSON and as legacy pairs, and shapes that are not points.
async fn places(db: &Database) -> Collection<Document> {
    let c = db.collection::<Document>("places");
    c.insert_many(vec![
        doc! { "_id": 1, "loc": point(1.0, 1.0) },
        doc! { "_id": 2, "loc": [1.5, 1.5] },
        doc! { "_id": 3, "loc": { "lng": 3.0, "lat": 3.0 } },
        doc! { "_id": 4, "loc": point(-1.0, 0.5) },
        doc! { "_id": 5, "loc": { "type": "LineString", "coordinates": [[0.5, 0.5], [1.5, 0.5]] } },
        doc! { "_id": 6, "loc": { "type": "LineString", "coordinates": [[1.0, 1.0], [5.0, 1.0]] } },
        doc! { "_id": 7, "loc": square(0.2, 0.2, 0.8, 0.8) },
        doc! { "_id": 8, "loc": [point(10.0, 10.0), point(1.2, 1.8)] },
        doc! { "_id": 9, "loc": "not a place" },
        doc! { "_id": 10 },
    ])
    .await
    .unwrap();
    c
}

#[tokio::test]
async fn geo_within_and_intersects_find_what_lies_in_or_crosses_a_shape() {
    let node = TestNode::start();
    let db = node.db("geo").await;
    let c = places(&db).await;
    let within = |shape: Document| doc! { "loc": { "$geoWithin": shape } };
    assert_eq!(
        ids(&c, within(doc! { "$geometry": square(0.0, 0.0, 2.0, 2.0) })).await,
        [1, 2, 5, 7, 8]
    );
    // A hole leaves out what lies in it.
    let holed = doc! { "type": "Polygon", "coordinates": [
        [[0.0, 0.0], [2.0, 0.0], [2.0, 2.0], [0.0, 2.0], [0.0, 0.0]],
        [[1.1, 1.1], [1.9, 1.1], [1.9, 1.9], [1.1, 1.9], [1.1, 1.1]],
    ] };
    assert_eq!(
        ids(&c, within(doc! { "$geometry": holed })).await,
        [1, 5, 7]
    );
    // Two degrees of arc around (0, 0) take in (1, 1) but not (1.5, 1.5).
    let two_degrees = 2.0_f64.to_radians();
    assert_eq!(
        ids(
            &c,
            within(doc! { "$centerSphere": [[0.0, 0.0], two_degrees] })
        )
        .await,
        [1, 4, 5, 7]
    );
    // The flat shapes hold points only.
    assert_eq!(
        ids(&c, within(doc! { "$box": [[0, 0], [2, 2]] })).await,
        [1, 2, 8]
    );
    assert_eq!(
        ids(&c, within(doc! { "$center": [[0, 0], 1.5] })).await,
        [1, 4]
    );
    assert_eq!(
        ids(&c, within(doc! { "$polygon": [[0, 0], [4, 0], [4, 4]] })).await,
        [1, 2, 3]
    );
    let crossing =
        doc! { "loc": { "$geoIntersects": { "$geometry": square(0.9, 0.9, 1.1, 1.1) } } };
    assert_eq!(ids(&c, crossing).await, [1, 6]);
    let line = doc! { "type": "LineString", "coordinates": [[0.0, 0.3], [3.0, 0.3]] };
    let crossing = doc! { "loc": { "$geoIntersects": { "$geometry": line } } };
    assert_eq!(ids(&c, crossing).await, [7]);
    // The same filters in aggregate's $match and in count.
    let n = c
        .count_documents(within(doc! { "$geometry": square(0.0, 0.0, 2.0, 2.0) }))
        .await
        .unwrap();
    assert_eq!(n, 5);
}

#[tokio::test]
async fn bad_shapes_and_near_without_a_geo_index_are_refused_as_mongod_refuses_them() {
    let node = TestNode::start();
    let db = node.db("geo").await;
    let c = places(&db).await;
    let find = |filter: Document| {
        let c = c.clone();
        async move { c.find_one(filter).await }
    };
    let msg = expect_code(
        find(doc! { "loc": { "$geoWithin": { "$geometry": point(1.0, 1.0) } } }).await,
        2,
    );
    assert!(
        msg.contains("$geoWithin not supported with provided geometry"),
        "{msg}"
    );
    let open = doc! { "type": "Polygon", "coordinates": [[[0, 0], [1, 0], [1, 1], [0, 1]]] };
    let msg = expect_code(
        find(doc! { "loc": { "$geoWithin": { "$geometry": open } } }).await,
        2,
    );
    assert!(msg.contains("Loop is not closed"), "{msg}");
    let msg = expect_code(
        find(doc! { "loc": { "$geoIntersects": { "$geometry": point(200.0, 0.0) } } }).await,
        2,
    );
    assert!(msg.contains("out of bounds"), "{msg}");
    expect_code(
        find(doc! { "loc": { "$geoWithin": { "$centerSphere": [[0, 0], -1] } } }).await,
        2,
    );
    // $near orders by distance: only a geo index can.
    let msg = expect_code(
        find(doc! { "loc": { "$near": { "$geometry": point(0.0, 0.0) } } }).await,
        291,
    );
    assert!(
        msg.contains("unable to find index for $geoNear query"),
        "{msg}"
    );
    expect_code(
        find(doc! { "loc": { "$nearSphere": [0, 0], "$maxDistance": 0.1 } }).await,
        291,
    );
    expect_code(find(doc! { "loc": { "$maxDistance": 1 } }).await, 2);
    // Nearest first is an order of the whole answer: $near is one of its
    // top-level conditions, and only one.
    let near = doc! { "$near": { "$geometry": point(0.0, 0.0) } };
    let msg = expect_code(
        find(doc! { "$or": [{ "loc": near.clone() }, { "_id": 1 }] }).await,
        2,
    );
    assert!(msg.contains("geoNear must be top-level expr"), "{msg}");
    expect_code(find(doc! { "loc": { "$not": near.clone() } }).await, 2);
    let msg = expect_code(
        find(doc! { "$and": [{ "loc": near.clone() }, { "loc": near.clone() }] }).await,
        2,
    );
    assert!(msg.contains("Too many geoNear expressions"), "{msg}");
    // Every command that plans a query refuses it alike.
    let msg = expect_code(
        c.update_many(
            doc! { "$or": [{ "loc": near.clone() }, { "_id": 1 }] },
            doc! { "$set": { "x": 1 } },
        )
        .await,
        2,
    );
    assert!(msg.contains("geoNear must be top-level expr"), "{msg}");
    expect_code(
        c.delete_many(doc! { "$or": [{ "loc": near.clone() }, { "_id": 1 }] })
            .await,
        2,
    );
    agg_err(
        &c,
        vec![doc! { "$match": { "loc": { "$near": [0, 0] } } }],
        2,
    )
    .await;
}

/// The `_id`s a find returns with `hint`, sorted.
pub async fn hinted(c: &Collection<Document>, filter: Document, hint: Document) -> Vec<i32> {
    let mut out = cursor_ids(
        c.find(filter)
            .hint(mongodb::options::Hint::Keys(hint))
            .await
            .unwrap(),
    )
    .await;
    out.sort_unstable();
    out
}

#[tokio::test]
async fn a_2dsphere_index_serves_geo_queries_with_the_same_answers_as_a_scan() {
    let node = TestNode::start();
    let db = node.db("geo").await;
    let c = places(&db).await;
    // A value that is no location refuses the index, as mongod does.
    let msg = expect_code(
        db.run_command(doc! {
            "createIndexes": "places",
            "indexes": [{ "key": { "loc": "2dsphere" }, "name": "loc_2dsphere" }],
        })
        .await,
        16755,
    );
    assert!(msg.contains("Can't extract geo keys"), "{msg}");
    c.delete_one(doc! { "_id": 9 }).await.unwrap();
    db.run_command(doc! {
        "createIndexes": "places",
        "indexes": [{ "key": { "loc": "2dsphere" }, "name": "loc_2dsphere" }],
    })
    .await
    .unwrap();
    let listed = crate::common::first_batch(&db, doc! { "listIndexes": "places" }).await;
    let geo = listed
        .iter()
        .find(|i| i.get_str("name").ok() == Some("loc_2dsphere"))
        .unwrap();
    assert_eq!(geo.get_i32("2dsphereIndexVersion").unwrap(), 3, "{geo}");
    // Now a document that is no location is refused, and nothing is stored.
    let refused = c
        .insert_one(doc! { "_id": 11, "loc": { "type": "Point", "coordinates": [0, 95] } })
        .await;
    expect_code(refused, 16755);
    assert!(c.find_one(doc! { "_id": 11 }).await.unwrap().is_none());

    let queries = [
        doc! { "loc": { "$geoWithin": { "$geometry": square(0.0, 0.0, 2.0, 2.0) } } },
        doc! { "loc": { "$geoWithin": { "$centerSphere": [[0.0, 0.0], 2.0_f64.to_radians()] } } },
        doc! { "loc": { "$geoIntersects": { "$geometry": square(0.9, 0.9, 1.1, 1.1) } } },
        doc! { "loc": { "$geoIntersects": { "$geometry": point(1.0, 1.0) } } },
    ];
    for q in queries {
        let scanned = hinted(&c, q.clone(), doc! { "$natural": 1 }).await;
        assert_eq!(ids(&c, q.clone()).await, scanned, "{q}");
        assert_eq!(
            hinted(&c, q.clone(), doc! { "loc": "2dsphere" }).await,
            scanned,
            "{q}"
        );
        let plan = db
            .run_command(doc! { "explain": { "find": "places", "filter": q.clone() } })
            .await
            .unwrap();
        let text = plan.to_string();
        assert!(
            text.contains("IXSCAN") && text.contains("loc_2dsphere"),
            "{q}: {plan}"
        );
    }
    let r = db
        .run_command(doc! { "validate": "places", "full": true })
        .await
        .unwrap();
    assert!(r.get_bool("valid").unwrap(), "{r}");
}

#[tokio::test]
async fn what_a_2dsphere_index_cannot_be_is_refused() {
    let node = TestNode::start();
    let db = node.db("geo").await;
    let create = |spec: Document| {
        let db = db.clone();
        async move {
            db.run_command(doc! { "createIndexes": "c", "indexes": [spec] })
                .await
        }
    };
    // Two 2dsphere fields in one index: mongod's, not ebb's.
    expect_code(
        create(doc! { "key": { "loc": "2dsphere", "a": "2dsphere" }, "name": "x" }).await,
        67,
    );
    expect_code(
        create(doc! { "key": { "loc": "2dsphere" }, "name": "x", "unique": true }).await,
        67,
    );
    expect_code(
        create(doc! { "key": { "loc": "2dsphere" }, "name": "x", "expireAfterSeconds": 5 }).await,
        67,
    );
    expect_code(
        create(doc! { "key": { "loc": "2dsphere" }, "name": "x", "2dsphereIndexVersion": 4 }).await,
        67,
    );
    expect_code(
        create(doc! { "key": { "a": 1, "loc": "2d" }, "name": "x" }).await,
        16801,
    );
    expect_code(
        create(doc! { "key": { "loc": "2d", "a": "2d" }, "name": "x" }).await,
        16800,
    );
    expect_code(
        create(doc! { "key": { "loc": "2d", "a": "2dsphere" }, "name": "x" }).await,
        67,
    );
    create(doc! { "key": { "loc": "2dsphere" }, "name": "x", "2dsphereIndexVersion": 2 })
        .await
        .unwrap();
}

/// Great-circle distance in radians (haversine), independent of ebb's.
pub fn haversine(a: (f64, f64), b: (f64, f64)) -> f64 {
    let (lat1, lat2) = (a.1.to_radians(), b.1.to_radians());
    let (dlat, dlng) = ((b.1 - a.1).to_radians(), (b.0 - a.0).to_radians());
    let h = (dlat / 2.0).sin().powi(2) + lat1.cos() * lat2.cos() * (dlng / 2.0).sin().powi(2);
    2.0 * h.sqrt().asin()
}

#[tokio::test]
async fn geo_answers_match_a_brute_force_reference_on_ten_thousand_random_points() {
    let node = TestNode::start();
    let db = node.db("geo").await;
    let c = db.collection::<Document>("random");
    let mut x = 0x2545_F491_4F6C_DD1Du64;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        (x >> 11) as f64 / (1u64 << 53) as f64
    };
    // Points over a 20° square around (10, 40), a third as legacy pairs.
    let points: Vec<(f64, f64)> = (0..10_000)
        .map(|_| (next() * 20.0, 30.0 + next() * 20.0))
        .collect();
    c.insert_many(points.iter().enumerate().map(|(i, &(lng, lat))| {
        if i % 3 == 0 {
            doc! { "_id": i as i32, "loc": [lng, lat] }
        } else {
            doc! { "_id": i as i32, "loc": point(lng, lat) }
        }
    }))
    .await
    .unwrap();
    db.run_command(doc! {
        "createIndexes": "random",
        "indexes": [{ "key": { "loc": "2dsphere" }, "name": "loc_2dsphere" }],
    })
    .await
    .unwrap();
    for _ in 0..20 {
        let center = (next() * 20.0, 30.0 + next() * 20.0);
        let radians = next() * 5.0_f64.to_radians();
        let expected: Vec<i32> = points
            .iter()
            .enumerate()
            // A hair of slack either way: ebb decides on S2's exact
            // predicates, the reference on floating-point trigonometry.
            .filter(|(_, p)| haversine(center, **p) <= radians)
            .map(|(i, _)| i as i32)
            .collect();
        let q =
            doc! { "loc": { "$geoWithin": { "$centerSphere": [[center.0, center.1], radians] } } };
        let got = ids(&c, q.clone()).await;
        let close = |i: &i32| (haversine(center, points[*i as usize]) - radians).abs() < 1e-9;
        let differ: Vec<&i32> = got
            .iter()
            .filter(|i| !expected.contains(i))
            .chain(expected.iter().filter(|i| !got.contains(i)))
            .filter(|i| !close(i))
            .collect();
        assert!(differ.is_empty(), "{q}: {differ:?}");
        // The 25 nearest, nearest first.
        let mut by_distance: Vec<(f64, i32)> = points
            .iter()
            .enumerate()
            .map(|(i, p)| (haversine(center, *p), i as i32))
            .collect();
        by_distance.sort_by(|a, b| a.0.total_cmp(&b.0));
        let near = doc! { "loc": { "$nearSphere": { "$geometry": point(center.0, center.1) } } };
        let got = in_order(&c, near.clone(), Some(25)).await;
        let expected: Vec<i32> = by_distance[..25].iter().map(|(_, i)| *i).collect();
        for (g, e) in got.iter().zip(&expected) {
            let (dg, de) = (
                haversine(center, points[*g as usize]),
                haversine(center, points[*e as usize]),
            );
            assert!(
                (dg - de).abs() < 1e-12,
                "{near}: {got:?} against {expected:?}"
            );
        }
        // A random quadrilateral: the index and a scan agree.
        let (x0, y0) = (next() * 20.0, 30.0 + next() * 20.0);
        let (w, h) = (next() * 6.0, next() * 6.0);
        let quad = doc! { "type": "Polygon", "coordinates": [[
            [x0, y0], [x0 + w, y0 + h * 0.2], [x0 + w * 0.8, y0 + h], [x0 - w * 0.1, y0 + h * 0.9], [x0, y0]
        ]] };
        let q = doc! { "loc": { "$geoWithin": { "$geometry": quad } } };
        let scanned = hinted(&c, q.clone(), doc! { "$natural": 1 }).await;
        assert_eq!(ids(&c, q.clone()).await, scanned, "{q}");
    }
}

#[tokio::test]
async fn locations_that_expire_leave_the_geo_index_with_their_documents() {
    use std::sync::Arc;
    let t0 = 1_767_225_600_000i64;
    let node = TestNode::start_with_clock(Arc::new(ebb_actors::clock::ManualClock::new(t0)));
    let db = node.db("geo").await;
    let c = db.collection::<Document>("couriers");
    crate::common::ttl_index(&c, doc! { "at": 1 }, 60, None).await;
    db.run_command(doc! {
        "createIndexes": "couriers",
        "indexes": [{ "key": { "loc": "2dsphere" }, "name": "loc_2dsphere" }],
    })
    .await
    .unwrap();
    let at = |ms: i64| mongodb::bson::DateTime::from_millis(ms);
    c.insert_many((0..100).map(|i| {
        let seen = if i % 2 == 0 { t0 - 120_000 } else { t0 };
        doc! { "_id": i, "loc": point(f64::from(i) * 0.01, 0.0), "at": at(seen) }
    }))
    .await
    .unwrap();
    node.ttl_pass().await;
    let near_origin = doc! { "loc": { "$geoWithin": { "$centerSphere": [[0, 0], 0.1] } } };
    let live: Vec<i32> = (0..100).filter(|i| i % 2 == 1).collect();
    assert_eq!(ids(&c, near_origin).await, live);
    let r = db
        .run_command(doc! { "validate": "couriers", "full": true })
        .await
        .unwrap();
    assert!(r.get_bool("valid").unwrap(), "{r}");
    assert_eq!(r.get_i64("nrecords").unwrap(), 50);
    let keys = r.get_document("keysPerIndex").unwrap();
    assert_eq!(keys.get_i64("loc_2dsphere").unwrap(), 50, "{keys}");
}

/// Points every 0.1° of longitude along the equator, and one without a
/// location; a 2dsphere index on `loc`.
async fn equator(db: &Database) -> Collection<Document> {
    let c = db.collection::<Document>("equator");
    c.insert_many((0..20).map(|i| {
        let x = f64::from(i) * 0.1;
        if i % 4 == 0 {
            doc! { "_id": i, "loc": [x, 0.0], "kind": i % 2 }
        } else {
            doc! { "_id": i, "loc": point(x, 0.0), "kind": i % 2 }
        }
    }))
    .await
    .unwrap();
    c.insert_one(doc! { "_id": 100, "kind": 0 }).await.unwrap();
    db.run_command(doc! {
        "createIndexes": "equator",
        "indexes": [{ "key": { "loc": "2dsphere" }, "name": "loc_2dsphere" }],
    })
    .await
    .unwrap();
    c
}

/// The `_id`s of a find, in the order it returns them.
pub async fn in_order(c: &Collection<Document>, filter: Document, limit: Option<i64>) -> Vec<i32> {
    let mut find = c.find(filter);
    if let Some(l) = limit {
        find = find.limit(l);
    }
    cursor_ids(find.await.unwrap()).await
}

#[tokio::test]
async fn near_and_near_sphere_return_the_nearest_first() {
    let node = TestNode::start();
    let db = node.db("geo").await;
    let c = equator(&db).await;
    // 0.1° of arc at mongod's Earth radius, in meters.
    let step = 6_378_100.0 * 0.1_f64.to_radians();
    let from = |x: f64| point(x, 0.0);
    let near = |x: f64, max: Option<f64>, min: Option<f64>| {
        let mut spec = doc! { "$geometry": from(x) };
        if let Some(m) = max {
            spec.insert("$maxDistance", m);
        }
        if let Some(m) = min {
            spec.insert("$minDistance", m);
        }
        doc! { "loc": { "$near": spec } }
    };
    assert_eq!(
        in_order(&c, near(1.04, None, None), Some(4)).await,
        [10, 11, 9, 12]
    );
    assert_eq!(
        in_order(&c, near(0.0, Some(step * 3.5), None), None).await,
        [0, 1, 2, 3]
    );
    assert_eq!(
        in_order(&c, near(0.0, Some(step * 3.5), Some(step * 1.5)), None).await,
        [2, 3]
    );
    // A legacy point on the sphere measures in radians.
    let legacy =
        doc! { "loc": { "$nearSphere": [1.9, 0.0], "$maxDistance": 0.25_f64.to_radians() } };
    assert_eq!(in_order(&c, legacy, None).await, [19, 18, 17]);
    // The rest of the filter, skip, and a sort that takes over the order.
    let mut filtered = near(1.04, None, None);
    filtered.insert("kind", 1);
    assert_eq!(in_order(&c, filtered, Some(3)).await, [11, 9, 13]);
    let skipped = cursor_ids(
        c.find(near(0.0, None, None))
            .skip(18)
            .projection(doc! { "_id": 1 })
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(skipped, [18, 19]);
    let sorted = cursor_ids(
        c.find(near(0.0, Some(step * 2.5), None))
            .sort(doc! { "_id": -1 })
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(sorted, [2, 1, 0]);
    // countDocuments runs a $match, where mongod refuses $near too.
    expect_code(
        c.count_documents(near(0.0, Some(step * 3.5), None)).await,
        2,
    );
    // A flat $near needs a 2d index.
    expect_code(c.find_one(doc! { "loc": { "$near": [0, 0] } }).await, 291);
}

#[tokio::test]
async fn geo_near_adds_each_documents_distance_nearest_first() {
    let node = TestNode::start();
    let db = node.db("geo").await;
    let c = equator(&db).await;
    let step = 6_378_100.0 * 0.1_f64.to_radians();
    let out = crate::common::agg(
        &c,
        vec![
            doc! { "$geoNear": {
                "near": point(0.0, 0.0),
                "distanceField": "dist.meters",
                "maxDistance": step * 2.5,
                "includeLocs": "where",
                "query": { "kind": 0 },
            } },
            doc! { "$project": { "dist": 1, "where": 1 } },
        ],
    )
    .await;
    let got: Vec<(i32, f64)> = out
        .iter()
        .map(|d| {
            (
                d.get_i32("_id").unwrap(),
                d.get_document("dist").unwrap().get_f64("meters").unwrap(),
            )
        })
        .collect();
    assert_eq!(got.iter().map(|g| g.0).collect::<Vec<_>>(), [0, 2]);
    assert!(
        got[0].1.abs() < 1e-6 && (got[1].1 - 2.0 * step).abs() < 1e-3,
        "{got:?}"
    );
    assert_eq!(out[1].get_document("where").unwrap(), &point(0.2, 0.0));
    // A legacy point with spherical: radians, scaled by distanceMultiplier.
    let out = crate::common::agg(
        &c,
        vec![
            doc! { "$geoNear": {
                "near": [0.0, 0.0],
                "spherical": true,
                "distanceField": "d",
                "distanceMultiplier": 6378.1,
            } },
            doc! { "$limit": 2 },
        ],
    )
    .await;
    let km = out[1].get_f64("d").unwrap();
    assert!((km - step / 1000.0).abs() < 1e-6, "{km}");

    crate::common::agg_err(
        &c,
        vec![
            doc! { "$match": {} },
            doc! { "$geoNear": { "near": [0, 0], "distanceField": "d" } },
        ],
        40602,
    )
    .await;
    crate::common::agg_err(&c, vec![doc! { "$geoNear": { "near": [0, 0] } }], 9).await;
    crate::common::agg_err(
        &c,
        vec![doc! { "$geoNear": { "near": [0, 0], "distanceField": "d", "num": 5 } }],
        40415,
    )
    .await;
    // A flat $geoNear needs a 2d index.
    crate::common::agg_err(
        &c,
        vec![doc! { "$geoNear": { "near": [0, 0], "distanceField": "d" } }],
        27,
    )
    .await;
    db.run_command(doc! {
        "createIndexes": "equator",
        "indexes": [{ "key": { "other": "2dsphere" }, "name": "other_2dsphere" }],
    })
    .await
    .unwrap();
    let msg = crate::common::agg_err(
        &c,
        vec![doc! { "$geoNear": { "near": point(0.0, 0.0), "distanceField": "d" } }],
        27,
    )
    .await;
    assert!(msg.contains("more than one"), "{msg}");
    let keyed = crate::common::agg(
        &c,
        vec![
            doc! { "$geoNear": { "near": point(0.0, 0.0), "distanceField": "d", "key": "loc" } },
            doc! { "$limit": 1 },
        ],
    )
    .await;
    assert_eq!(keyed[0].get_i32("_id").unwrap(), 0);
    let empty = db.collection::<Document>("no_index");
    empty.insert_one(doc! { "loc": [0, 0] }).await.unwrap();
    crate::common::agg_err(
        &empty,
        vec![doc! { "$geoNear": { "near": point(0.0, 0.0), "distanceField": "d" } }],
        27,
    )
    .await;
}
