//! `geo`: geospatial queries on N points spread over a 10° square (about
//! 800 km across), as a delivery or ride application keeps them. Loads the
//! points into a collection without an index and into one with a
//! `2dsphere` index (the insert rate with the index against without, in
//! one run), then times, at random centers, `$near` with a limit of 100
//! and `$geoWithin` of a city-sized square (0.1° on a side), reporting
//! medians and 99th percentiles of the client's round trip.

use std::time::Instant;

use anyhow::{Result, bail};
use mongodb::bson::{Document, doc};

use crate::args::Args;
use crate::daemon::Target;
use crate::report::Outcome;
use crate::scenarios::connect;
use crate::workload::{Rng, load, percentile};

const QUERIES: usize = 200;

fn coordinate(rng: &mut Rng, span: f64) -> f64 {
    (rng.next() >> 11) as f64 / (1u64 << 53) as f64 * span
}

fn point(x: f64, y: f64) -> Document {
    doc! { "type": "Point", "coordinates": [x, y] }
}

fn place(i: usize) -> Document {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ (i as u64).wrapping_mul(0x2545_F491_4F6C_DD1D) | 1);
    let (x, y) = (
        coordinate(&mut rng, 10.0),
        40.0 + coordinate(&mut rng, 10.0),
    );
    doc! { "_id": i as i64, "loc": point(x, y), "kind": (i % 7) as i32 }
}

/// Every document of a cursor.
async fn collect(mut cursor: mongodb::Cursor<Document>) -> Result<Vec<Document>> {
    let mut out = Vec::new();
    while cursor.advance().await? {
        out.push(cursor.deserialize_current()?);
    }
    Ok(out)
}

pub async fn run(args: &Args) -> Result<Outcome> {
    let n = args.docs;
    let target = Target::start(args.uri.as_deref(), args.ebbd.as_ref(), &[])?;
    let (client, plain) = connect(&target, "geo_plain").await?;
    let db = client.database("bench");
    eprintln!("  loading {n} points without a geo index");
    let (plain_time, _) = load(&plain, n, args.clients, place).await?;
    let (_, geo) = connect(&target, "geo").await?;
    db.run_command(doc! {
        "createIndexes": "geo",
        "indexes": [{ "key": { "loc": "2dsphere" }, "name": "loc_2dsphere" }],
    })
    .await?;
    eprintln!("  loading {n} points with a 2dsphere index");
    let (geo_time, _) = load(&geo, n, args.clients, place).await?;
    let mut rng = Rng(0x5DEE_CE66_D1CE_4E5B);
    let (mut near_ms, mut within_ms) = (Vec::new(), Vec::new());
    let mut within_found = 0usize;
    for _ in 0..QUERIES {
        let (x, y) = (
            coordinate(&mut rng, 10.0),
            40.0 + coordinate(&mut rng, 10.0),
        );
        let near = doc! { "loc": { "$near": { "$geometry": point(x, y) } } };
        let t = Instant::now();
        let found = collect(geo.find(near).limit(100).await?).await?;
        near_ms.push(t.elapsed().as_secs_f64() * 1000.0);
        if found.len() != 100 {
            bail!("$near with a limit of 100 returned {}", found.len());
        }
        let square = doc! { "type": "Polygon", "coordinates": [[
            [x, y], [x + 0.1, y], [x + 0.1, y + 0.1], [x, y + 0.1], [x, y]
        ]] };
        let within = doc! { "loc": { "$geoWithin": { "$geometry": square } } };
        let t = Instant::now();
        let found = collect(geo.find(within).await?).await?;
        within_ms.push(t.elapsed().as_secs_f64() * 1000.0);
        within_found += found.len();
    }
    near_ms.sort_by(f64::total_cmp);
    within_ms.sort_by(f64::total_cmp);
    let (plain_rate, geo_rate) = (
        n as f64 / plain_time.as_secs_f64(),
        n as f64 / geo_time.as_secs_f64(),
    );
    let mut out = Outcome::new("geo");
    out.add("points", n, "");
    out.add("insert_rate_without_index", plain_rate.round(), "docs/s");
    out.add("insert_rate_with_2dsphere", geo_rate.round(), "docs/s");
    out.add("ratio_insert_with_to_without", geo_rate / plain_rate, "x");
    out.add("near_limit_100_p50_ms", percentile(&near_ms, 50.0), "ms");
    out.add("near_limit_100_p99_ms", percentile(&near_ms, 99.0), "ms");
    out.add(
        "within_city_square_p50_ms",
        percentile(&within_ms, 50.0),
        "ms",
    );
    out.add(
        "within_city_square_p99_ms",
        percentile(&within_ms, 99.0),
        "ms",
    );
    out.add(
        "within_city_square_mean_found",
        (within_found as f64 / QUERIES as f64).round(),
        "docs",
    );
    Ok(out)
}
