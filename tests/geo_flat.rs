//! `2d` indexes as mongod builds and reads them: legacy pairs on a flat
//! grid (its `bits`, `min` and `max`), `$near` on the plane and
//! `$nearSphere` from a legacy pair nearest first, `$geoWithin` (and its
//! old name `$within`) with `$box`, `$polygon`, `$center` and
//! `$centerSphere`, `$geoNear` on a `2d` index; every answer checked
//! against a brute-force reference or a collection scan, and mongod's
//! refusals of what a `2d` index cannot key.

use mongodb::Database;
use mongodb::bson::{Document, doc};

use crate::common::{TestNode, agg, expect_code, ids, message};
use crate::geo::{haversine, hinted, in_order};

/// A small xorshift generator: the same points every run.
fn generator() -> impl FnMut() -> f64 {
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        (x >> 11) as f64 / (1u64 << 53) as f64
    }
}

async fn create(db: &Database, coll: &str, spec: Document) -> mongodb::error::Result<Document> {
    db.run_command(doc! { "createIndexes": coll, "indexes": [spec] })
        .await
}

/// 10,000 points over the whole grid: as `[x, y]`, as `{x, y}`, or one of
/// two locations in a list; a few documents without one.
async fn scattered(db: &Database, next: &mut impl FnMut() -> f64) -> Vec<(i32, (f64, f64))> {
    let c = db.collection::<Document>("scattered");
    let mut located = Vec::new();
    let mut docs = Vec::new();
    for i in 0..10_000 {
        let p = (next() * 360.0 - 180.0, next() * 180.0 - 90.0);
        located.push((i, p));
        docs.push(match i % 4 {
            0 => doc! { "_id": i, "loc": [p.0, p.1] },
            1 => doc! { "_id": i, "loc": { "x": p.0, "y": p.1 } },
            // A second location far outside every query below.
            2 => doc! { "_id": i, "loc": [[p.0, p.1], [179.9, -89.9]] },
            _ => doc! { "_id": i, "loc": [p.0, p.1], "kind": "plain" },
        });
    }
    docs.push(doc! { "_id": -1, "loc": "nowhere" });
    docs.push(doc! { "_id": -2 });
    c.insert_many(docs).await.unwrap();
    create(
        db,
        "scattered",
        doc! { "key": { "loc": "2d" }, "name": "loc_2d" },
    )
    .await
    .unwrap();
    located
}

fn sorted(mut v: Vec<i32>) -> Vec<i32> {
    v.sort_unstable();
    v
}

/// Whether `p` lies in the convex polygon `vs` (counter-clockwise), by the
/// side of each edge it lies on.
fn in_convex(vs: &[(f64, f64)], p: (f64, f64)) -> bool {
    vs.iter()
        .zip(vs.iter().cycle().skip(1))
        .all(|(a, b)| (b.0 - a.0) * (p.1 - a.1) - (b.1 - a.1) * (p.0 - a.0) >= 0.0)
}

#[tokio::test]
async fn a_2d_index_answers_flat_regions_as_a_brute_force_reference_does() {
    let node = TestNode::start();
    let db = node.db("flat").await;
    let mut next = generator();
    let points = scattered(&db, &mut next).await;
    let c = db.collection::<Document>("scattered");
    let expected = |inside: &dyn Fn((f64, f64)) -> bool| -> Vec<i32> {
        sorted(
            points
                .iter()
                .filter(|(_, p)| inside(*p))
                .map(|(i, _)| *i)
                .collect(),
        )
    };
    for round in 0..20 {
        let (x, y) = (next() * 300.0 - 150.0, next() * 140.0 - 70.0);
        let (w, h) = (next() * 30.0, next() * 20.0);
        let r = next() * 15.0;
        let quad = [
            (x, y),
            (x + w, y + h * 0.2),
            (x + w * 0.8, y + h),
            (x - w * 0.1, y + h * 0.9),
        ];
        let cases: Vec<(Document, Vec<i32>)> = vec![
            (
                doc! { "$geoWithin": { "$box": [[x, y], [x + w, y + h]] } },
                expected(&|p| (x..=x + w).contains(&p.0) && (y..=y + h).contains(&p.1)),
            ),
            (
                doc! { "$within": { "$center": [[x, y], r] } },
                expected(&|p| (p.0 - x).hypot(p.1 - y) <= r),
            ),
            (
                doc! { "$geoWithin": { "$polygon": quad.iter().map(|q| vec![q.0, q.1]).collect::<Vec<_>>() } },
                expected(&|p| in_convex(&quad, p)),
            ),
        ];
        for (test, want) in cases {
            let q = doc! { "loc": test };
            let got = ids(&c, q.clone()).await;
            assert_eq!(got, want, "round {round}, {q}");
            assert_eq!(
                got,
                hinted(&c, q.clone(), doc! { "$natural": 1 }).await,
                "{q}"
            );
        }
        // $centerSphere on a 2d index: a cap in degrees of longitude and latitude.
        let radians = next() * 0.2;
        let q = doc! { "loc": { "$geoWithin": { "$centerSphere": [[x, y], radians] } } };
        let want = expected(&|p| haversine((x, y), p) <= radians);
        let got = ids(&c, q.clone()).await;
        let close = |i: &i32| {
            let p = points[*i as usize].1;
            (haversine((x, y), p) - radians).abs() < 1e-9
        };
        let differ: Vec<&i32> = got
            .iter()
            .filter(|i| !want.contains(i))
            .chain(want.iter().filter(|i| !got.contains(i)))
            .filter(|i| !close(i))
            .collect();
        assert!(differ.is_empty(), "{q}: {differ:?}");
    }
    // The index served them, and explain says so.
    let explain = db
        .run_command(doc! { "explain": {
            "find": "scattered",
            "filter": { "loc": { "$geoWithin": { "$box": [[0, 0], [10, 10]] } } },
        } })
        .await
        .unwrap();
    let text = explain.to_string();
    assert!(text.contains("IXSCAN") && text.contains("loc_2d"), "{text}");
    // Entries leave with their documents and their old locations.
    c.delete_many(doc! { "_id": { "$lt": 5000 } })
        .await
        .unwrap();
    c.update_many(doc! { "kind": "plain" }, doc! { "$set": { "loc": [1, 1] } })
        .await
        .unwrap();
    let r = db
        .run_command(doc! { "validate": "scattered", "full": true })
        .await
        .unwrap();
    assert!(r.get_bool("valid").unwrap(), "{r}");
    // Of the 5,000 left, a quarter have two locations; two documents have none.
    let keys = r.get_document("keysPerIndex").unwrap();
    assert_eq!(keys.get_i64("loc_2d").unwrap(), 5000 + 1250, "{keys}");
    let box_ids = ids(
        &c,
        doc! { "loc": { "$geoWithin": { "$box": [[0.5, 0.5], [1.5, 1.5]] } } },
    )
    .await;
    assert!(
        box_ids.len() >= 1250 && box_ids.iter().all(|i| *i >= 5000),
        "{}",
        box_ids.len()
    );
}

#[tokio::test]
async fn near_on_the_plane_and_near_sphere_return_the_nearest_first() {
    let node = TestNode::start();
    let db = node.db("flat").await;
    let mut next = generator();
    let points = scattered(&db, &mut next).await;
    let c = db.collection::<Document>("scattered");
    let nearest = |measure: &dyn Fn((f64, f64)) -> f64| -> Vec<f64> {
        let mut d: Vec<f64> = points
            .iter()
            .map(|(i, p)| {
                // The second location of every fourth point is at the corner.
                let mut d = measure(*p);
                if i % 4 == 2 {
                    d = d.min(measure((179.9, -89.9)));
                }
                d
            })
            .collect();
        d.sort_by(f64::total_cmp);
        d
    };
    let distance_of = |i: i32, measure: &dyn Fn((f64, f64)) -> f64| {
        let p = points[i as usize].1;
        let d = measure(p);
        if i % 4 == 2 {
            d.min(measure((179.9, -89.9)))
        } else {
            d
        }
    };
    for _ in 0..10 {
        let from = (next() * 300.0 - 150.0, next() * 140.0 - 70.0);
        let flat = |p: (f64, f64)| (p.0 - from.0).hypot(p.1 - from.1);
        let want = nearest(&flat);
        let q = doc! { "loc": { "$near": [from.0, from.1] } };
        let got = in_order(&c, q.clone(), Some(30)).await;
        assert_eq!(got.len(), 30);
        for (k, i) in got.iter().enumerate() {
            assert!(
                (distance_of(*i, &flat) - want[k]).abs() < 1e-9,
                "{q}: {k}th is {i}"
            );
        }
        // With $maxDistance: every point within it, nearest first.
        let max = want[40];
        let q = doc! { "loc": { "$near": [from.0, from.1], "$maxDistance": max } };
        let got = in_order(&c, q.clone(), None).await;
        assert_eq!(got.len(), want.iter().filter(|d| **d <= max).count(), "{q}");
        let ds: Vec<f64> = got.iter().map(|i| distance_of(*i, &flat)).collect();
        assert!(ds.windows(2).all(|w| w[0] <= w[1]), "{q}: {ds:?}");
        // On the sphere from a legacy pair: radians.
        let sphere = |p: (f64, f64)| haversine(from, p);
        let want = nearest(&sphere);
        let q = doc! { "loc": { "$nearSphere": [from.0, from.1] } };
        let got = in_order(&c, q.clone(), Some(10)).await;
        for (k, i) in got.iter().enumerate() {
            assert!(
                (distance_of(*i, &sphere) - want[k]).abs() < 1e-9,
                "{q}: {k}th is {i}"
            );
        }
    }
    // A GeoJSON point needs a 2dsphere index.
    let geojson =
        doc! { "loc": { "$near": { "$geometry": { "type": "Point", "coordinates": [0, 0] } } } };
    expect_code(c.find_one(geojson).await, 291);

    // $geoNear on the 2d index: distances on the plane, or in radians.
    let out = agg(
        &c,
        vec![
            doc! { "$geoNear": { "near": [10.0, 10.0], "distanceField": "d", "query": { "kind": "plain" } } },
            doc! { "$limit": 3 },
        ],
    )
    .await;
    let flat = |p: (f64, f64)| (p.0 - 10.0).hypot(p.1 - 10.0);
    for d in &out {
        let i = d.get_i32("_id").unwrap();
        assert_eq!(i % 4, 3, "{d}");
        assert!(
            (d.get_f64("d").unwrap() - distance_of(i, &flat)).abs() < 1e-9,
            "{d}"
        );
    }
    let out = agg(
        &c,
        vec![
            doc! { "$geoNear": { "near": [10.0, 10.0], "distanceField": "d", "spherical": true } },
            doc! { "$limit": 1 },
        ],
    )
    .await;
    let i = out[0].get_i32("_id").unwrap();
    let sphere = |p: (f64, f64)| haversine((10.0, 10.0), p);
    assert!((out[0].get_f64("d").unwrap() - distance_of(i, &sphere)).abs() < 1e-9);
    assert!(sorted(ids(&c, doc! {}).await).len() == 10_002);
}

#[tokio::test]
async fn what_a_2d_index_cannot_key_is_refused_with_mongods_reasons() {
    let node = TestNode::start();
    let db = node.db("flat").await;
    let c = db.collection::<Document>("places");
    create(
        &db,
        "places",
        doc! { "key": { "loc": "2d" }, "name": "loc_2d" },
    )
    .await
    .unwrap();
    for (loc, code, words) in [
        (
            doc! { "loc": [200, 0] },
            13027,
            "point not in interval of [ -180, 180 ]",
        ),
        (
            doc! { "loc": { "x": -15.0, "y": "abc" } },
            13026,
            "legacy coordinate pairs",
        ),
        // A first value that is no number makes a list of locations.
        (
            doc! { "loc": ["a", "b"] },
            16804,
            "location object expected",
        ),
        (doc! { "loc": [1] }, 13068, "only has 1 element"),
        (
            doc! { "loc": [[1, 2], "x"] },
            16804,
            "location object expected",
        ),
        (
            doc! { "loc": { "type": "Point", "coordinates": [1, 2] } },
            16804,
            "location object expected",
        ),
    ] {
        let msg = expect_code(c.insert_one(loc.clone()).await, code);
        assert!(msg.contains(words), "{loc}: {msg}");
    }
    // Nothing to key is no error: an empty location, a string, no field.
    c.insert_many(vec![
        doc! { "_id": 1, "loc": [] },
        doc! { "_id": 2, "loc": "nowhere" },
        doc! { "_id": 3 },
        doc! { "_id": 4, "loc": [180, -180] },
    ])
    .await
    .unwrap();
    // An update to a location the index cannot key changes nothing.
    expect_code(
        c.update_one(doc! { "_id": 4 }, doc! { "$set": { "loc": [0, 181] } })
            .await,
        13027,
    );
    let four = c.find_one(doc! { "_id": 4 }).await.unwrap().unwrap();
    assert_eq!(four.get_array("loc").unwrap().len(), 2);
    assert_eq!(four.get_array("loc").unwrap()[1].as_i32(), Some(-180));

    // A grid of its own: listed as given, its bounds enforced.
    let custom = db.collection::<Document>("custom");
    create(
        &db,
        "custom",
        doc! { "key": { "loc": "2d" }, "name": "loc_2d", "min": -95, "max": 95, "bits": 28 },
    )
    .await
    .unwrap();
    let msg = expect_code(
        custom.insert_one(doc! { "loc": [27.88, 97.21] }).await,
        13027,
    );
    assert!(msg.contains("[ -95, 95 ]"), "{msg}");
    custom
        .insert_one(doc! { "_id": 1, "loc": [27.88, 94.0] })
        .await
        .unwrap();
    assert_eq!(
        ids(&custom, doc! { "loc": { "$near": [27, 94] } }).await,
        [1]
    );
    let spec = crate::common::first_batch(&db, doc! { "listIndexes": "custom" })
        .await
        .into_iter()
        .find(|i| i.get_str("name").ok() == Some("loc_2d"))
        .unwrap();
    assert_eq!(spec.get_i32("min").unwrap(), -95, "{spec}");
    assert_eq!(spec.get_i32("max").unwrap(), 95, "{spec}");
    assert_eq!(spec.get_i32("bits").unwrap(), 28, "{spec}");

    // Options mongod refuses.
    for (spec, code) in [
        (doc! { "key": { "p": "2d" }, "name": "p", "bits": 0 }, 72),
        (doc! { "key": { "p": "2d" }, "name": "p", "bits": 33 }, 72),
        (doc! { "key": { "p": "2d" }, "name": "p", "bits": "x" }, 72),
        (
            doc! { "key": { "p": "2d" }, "name": "p", "min": 5, "max": 5 },
            72,
        ),
        (
            doc! { "key": { "p": "2d" }, "name": "p", "unique": true },
            67,
        ),
        (
            doc! { "key": { "p": "2d" }, "name": "p", "expireAfterSeconds": 5 },
            67,
        ),
    ] {
        expect_code(create(&db, "places", spec).await, code);
    }
    // A build over a document the grid cannot hold fails, and leaves no index.
    let old = db.collection::<Document>("old");
    old.insert_one(doc! { "loc": [500, 0] }).await.unwrap();
    let err = create(
        &db,
        "old",
        doc! { "key": { "loc": "2d" }, "name": "loc_2d" },
    )
    .await;
    assert!(message(err.as_ref().unwrap_err()).contains("point not in interval"));
    expect_code(err, 13027);
    let listed = crate::common::first_batch(&db, doc! { "listIndexes": "old" }).await;
    assert_eq!(listed.len(), 1, "{listed:?}");
}
