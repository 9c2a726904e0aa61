//! Compound geo indexes as applications declare them (`{category: 1,
//! loc: "2dsphere"}`, `{loc: "2dsphere", tags: 1}`, `{loc: "2d", kind:
//! 1}`): the location's cells read for `$near`, `$geoWithin` and
//! `$geoNear` whatever the location field's place, the other fields
//! carried in each entry, every answer the one a brute-force reference
//! gives; updates and TTL deletes keep the entries right.

use std::sync::Arc;

use ebb_actors::clock::ManualClock;
use mongodb::Database;
use mongodb::bson::{DateTime, Document, doc};

use crate::common::{TestNode, agg, first_batch, ttl_index};
use crate::geo::{haversine, hinted, in_order};

const CATEGORIES: [&str; 3] = ["cafe", "park", "shop"];

/// 3,000 points around Paris, each with a category and a list of tags.
async fn city(db: &Database) -> Vec<(i32, (f64, f64), &'static str)> {
    let c = db.collection::<Document>("city");
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        (x >> 11) as f64 / (1u64 << 53) as f64
    };
    let mut placed = Vec::new();
    let mut docs = Vec::new();
    for i in 0..3000 {
        let p = (2.2 + next() * 0.3, 48.75 + next() * 0.2);
        let category = CATEGORIES[i as usize % 3];
        let tags = match i % 4 {
            0 => vec!["open", "wifi"],
            1 => vec!["open"],
            2 => vec![],
            _ => vec!["wifi"],
        };
        placed.push((i, p, category));
        docs.push(doc! {
            "_id": i,
            "loc": { "type": "Point", "coordinates": [p.0, p.1] },
            "category": category,
            "tags": tags,
        });
    }
    // Without a location: in no geo index.
    docs.push(doc! { "_id": -1, "category": "cafe" });
    c.insert_many(docs).await.unwrap();
    placed
}

#[tokio::test]
async fn compound_2dsphere_indexes_answer_as_a_brute_force_reference_does() {
    let node = TestNode::start();
    let db = node.db("compound").await;
    let placed = city(&db).await;
    let c = db.collection::<Document>("city");
    db.run_command(doc! { "createIndexes": "city", "indexes": [
        { "key": { "category": 1, "loc": "2dsphere" }, "name": "category_loc" },
        { "key": { "loc": "2dsphere", "tags": -1 }, "name": "loc_tags" },
    ] })
    .await
    .unwrap();
    let listed = first_batch(&db, doc! { "listIndexes": "city" }).await;
    assert_eq!(
        listed[1].get_document("key").unwrap(),
        &doc! { "category": 1, "loc": "2dsphere" }
    );
    let center = (2.35, 48.85);
    let meters = 6_378_100.0;
    // The nearest cafes within 3 km, nearest first.
    let within = |id: &i32| {
        let (_, p, category) = placed[*id as usize];
        category == "cafe" && haversine(center, p) * meters <= 3000.0
    };
    let mut expected: Vec<i32> = placed.iter().map(|(i, _, _)| *i).filter(within).collect();
    expected.sort_by(|a, b| {
        let d = |i: &i32| haversine(center, placed[*i as usize].1);
        d(a).total_cmp(&d(b))
    });
    let near = doc! {
        "category": "cafe",
        "loc": { "$near": {
            "$geometry": { "type": "Point", "coordinates": [center.0, center.1] },
            "$maxDistance": 3000,
        } },
    };
    assert!(expected.len() > 20, "{}", expected.len());
    assert_eq!(in_order(&c, near.clone(), None).await, expected);
    // Explain: the index's fields in its order, the location's cells
    // bounded, the others not.
    let r = db
        .run_command(
            doc! { "explain": { "find": "city", "filter": near }, "verbosity": "queryPlanner" },
        )
        .await
        .unwrap();
    let shown = format!("{r}");
    assert!(shown.contains("\"indexName\": \"category_loc\""), "{shown}");
    assert!(
        shown.contains("\"category\": [\"[MinKey, MaxKey]\"]"),
        "{shown}"
    );
    // $geoWithin through each index, the other fields decided by the
    // filter: the same answer as a collection scan.
    let square = doc! { "type": "Polygon", "coordinates": [[
        [2.3, 48.8], [2.4, 48.8], [2.4, 48.9], [2.3, 48.9], [2.3, 48.8],
    ]] };
    for (filter, hint) in [
        (
            doc! { "loc": { "$geoWithin": { "$geometry": square.clone() } }, "tags": "wifi" },
            doc! { "loc": "2dsphere", "tags": -1 },
        ),
        (
            doc! { "loc": { "$geoWithin": { "$geometry": square.clone() } }, "category": "park" },
            doc! { "category": 1, "loc": "2dsphere" },
        ),
    ] {
        let indexed = hinted(&c, filter.clone(), hint).await;
        let scanned = hinted(&c, filter.clone(), doc! { "$natural": 1 }).await;
        assert!(!indexed.is_empty(), "{filter}");
        assert_eq!(indexed, scanned, "{filter}");
    }
    // $geoNear names the location field of a compound index.
    let out = agg(
        &c,
        vec![
            doc! { "$geoNear": {
                "near": { "type": "Point", "coordinates": [center.0, center.1] },
                "distanceField": "d", "key": "loc", "maxDistance": 3000,
                "query": { "category": "cafe" },
            } },
            doc! { "$project": { "_id": 1 } },
        ],
    )
    .await;
    let ids: Vec<i32> = out.iter().map(|d| d.get_i32("_id").unwrap()).collect();
    assert_eq!(ids, expected);
    // An update that changes a carried field moves the entry.
    let first = expected[0];
    c.update_one(
        doc! { "_id": first },
        doc! { "$set": { "category": "park" } },
    )
    .await
    .unwrap();
    let near_cafes = doc! {
        "category": "cafe",
        "loc": { "$nearSphere": {
            "$geometry": { "type": "Point", "coordinates": [center.0, center.1] },
            "$maxDistance": 3000,
        } },
    };
    assert_eq!(in_order(&c, near_cafes, None).await, expected[1..]);
    let v = db.run_command(doc! { "validate": "city" }).await.unwrap();
    assert!(v.get_bool("valid").unwrap(), "{v}");
}

#[tokio::test]
async fn a_compound_2d_index_reads_the_plane_with_its_other_fields_carried() {
    let node = TestNode::start();
    let db = node.db("compound").await;
    let shops = db.collection::<Document>("shops");
    db.run_command(doc! { "createIndexes": "shops", "indexes": [
        { "key": { "loc": "2d", "kind": 1 }, "name": "loc_kind" },
    ] })
    .await
    .unwrap();
    shops
        .insert_many(vec![
            doc! { "_id": 1, "loc": [1, 1], "kind": "food" },
            doc! { "_id": 2, "loc": [2, 2], "kind": "tools" },
            doc! { "_id": 3, "loc": [3, 3], "kind": "food" },
            doc! { "_id": 4, "loc": [50, 50], "kind": "food" },
        ])
        .await
        .unwrap();
    let near = doc! { "loc": { "$near": [0, 0], "$maxDistance": 10 }, "kind": "food" };
    assert_eq!(in_order(&shops, near, None).await, [1, 3]);
}

#[tokio::test]
async fn expiring_locations_leave_a_compound_geo_index_with_their_documents() {
    let t0 = 1_767_225_600_000i64;
    let node = TestNode::start_with_clock(Arc::new(ManualClock::new(t0)));
    let db = node.db("compound").await;
    let c = db.collection::<Document>("visits");
    ttl_index(&c, doc! { "at": 1 }, 60, None).await;
    db.run_command(doc! { "createIndexes": "visits", "indexes": [
        { "key": { "loc": "2dsphere", "user": 1 }, "name": "loc_user" },
    ] })
    .await
    .unwrap();
    c.insert_many((0..100).map(|i| {
        let seen = if i % 2 == 0 { t0 - 120_000 } else { t0 };
        doc! {
            "_id": i,
            "loc": { "type": "Point", "coordinates": [f64::from(i) * 0.01, 0.0] },
            "user": format!("u{}", i % 7),
            "at": DateTime::from_millis(seen),
        }
    }))
    .await
    .unwrap();
    node.ttl_pass().await;
    let near_origin = doc! { "loc": { "$geoWithin": { "$centerSphere": [[0, 0], 0.1] } } };
    let live: Vec<i32> = (0..100).filter(|i| i % 2 == 1).collect();
    assert_eq!(
        hinted(&c, near_origin, doc! { "loc": "2dsphere", "user": 1 }).await,
        live
    );
    let r = db
        .run_command(doc! { "validate": "visits", "full": true })
        .await
        .unwrap();
    assert!(r.get_bool("valid").unwrap(), "{r}");
    let keys = r.get_document("keysPerIndex").unwrap();
    assert_eq!(keys.get_i64("loc_user").unwrap(), 50, "{keys}");
}
