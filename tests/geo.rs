//! Geospatial queries as mongod answers them: `$geoWithin` (a GeoJSON
//! polygon with holes, `$centerSphere`, and the flat `$box`, `$polygon`,
//! `$center`) and `$geoIntersects` over points, legacy pairs, lines and
//! polygons, with mongod's refusals of bad shapes.

use mongodb::bson::{Document, doc};
use mongodb::{Collection, Database};

use crate::common::{TestNode, agg_err, expect_code, ids};

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
    agg_err(
        &c,
        vec![doc! { "$match": { "loc": { "$near": [0, 0] } } }],
        2,
    )
    .await;
}
