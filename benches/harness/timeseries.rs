//! The `timeseries` scenario: 100 sensors, one measurement per
//! sensor per second of simulated time, loaded by `--clients` clients in
//! batches of 1,000 (ten seconds of every sensor). The batches are built
//! as raw BSON before the clock starts, so the clients' share of the two
//! cores is the driver sending them, not the harness making them.
//!
//! Reports the ingest rate, the bytes on disk per measurement after a
//! compaction against the same documents in an ordinary collection, and
//! the time from the instant every bucket falls due (a `collMod` of the
//! collection's `expireAfterSeconds`) until the monitor has deleted them
//! all (`metrics.ttl.deletedDocuments` counts buckets).

use std::ops::Range;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Result, bail};
use mongodb::bson::{DateTime, Document, RawDocumentBuf, doc, oid::ObjectId, rawdoc};
use mongodb::{Client, Database};

use crate::args::Args;
use crate::daemon::{Target, cpu_spent, own_cpu};
use crate::report::{Outcome, Series};
use crate::workload::{deleted, load_batches, now_ms};

const SENSORS: usize = 100;

/// Measurement `i`: sensor `i % 100` at second `i / 100` after `start`,
/// reading its sensor's base temperature plus noise (0.00 to 4.99, from a
/// hash of `i`), as a sensor reports a two-decimal value.
fn measurement(start: i64, i: usize) -> RawDocumentBuf {
    let sensor = i % SENSORS;
    let noise = (splitmix(i as u64) % 500) as i64;
    rawdoc! {
        "_id": ObjectId::new(),
        "t": DateTime::from_millis(start + (i / SENSORS) as i64 * 1000),
        "sensor": format!("sensor-{sensor:03}"),
        "temp": (1500 + 10 * sensor as i64 + noise) as f64 / 100.0,
    }
}

/// SplitMix64: a fixed pseudo-random value per measurement.
fn splitmix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Bytes on disk of a collection after a compaction (records and indexes).
async fn disk_bytes(db: &Database, coll: &str) -> Result<i64> {
    db.run_command(doc! { "compact": coll, "force": true })
        .await?;
    let stats = db.run_command(doc! { "collStats": coll }).await?;
    Ok(stats.get_i64("totalSize")?)
}

pub async fn run(args: &Args) -> Result<Outcome> {
    let n = args.docs;
    let target = Target::start(args.uri.as_deref(), args.ebbd.as_ref(), &[])?;
    let client = Client::with_uri_str(&target.uri).await?;
    let db = client.database("bench");
    for c in ["metrics", "plain"] {
        db.collection::<Document>(c).drop().await?;
    }
    db.run_command(
        doc! { "create": "metrics", "timeseries": { "timeField": "t", "metaField": "sensor" } },
    )
    .await?;
    // The simulated day ends two hours ago, so a collection-level
    // expireAfterSeconds can make every bucket (span one hour) due at once.
    let seconds = n.div_ceil(SENSORS) as i64;
    let start = (now_ms() / 1000 - seconds - 7200) * 1000;
    let last = start + (seconds - 1) * 1000;
    let ts = db.collection::<RawDocumentBuf>("metrics");
    let batches: Arc<Vec<Vec<RawDocumentBuf>>> = Arc::new(
        (0..n)
            .step_by(1000)
            .map(|from| {
                (from..(from + 1000).min(n))
                    .map(|i| measurement(start, i))
                    .collect()
            })
            .collect(),
    );
    let batch = {
        let batches = batches.clone();
        move |range: Range<usize>| batches[range.start / 1000].clone()
    };
    let (cpu_before, client_before) = (target.cpu(), own_cpu());
    let (took, points) = load_batches(&ts, n, args.clients, batch.clone()).await?;
    let cpu = cpu_spent(cpu_before, target.cpu());
    let client_cpu = cpu_spent(client_before, own_cpu());
    let ingest = n as f64 / took.as_secs_f64();

    eprintln!("  loading the same documents into an ordinary collection");
    let plain = db.collection::<RawDocumentBuf>("plain");
    load_batches(&plain, n, args.clients, batch).await?;
    drop(batches);
    let ts_bytes = disk_bytes(&db, "metrics").await?;
    let plain_bytes = disk_bytes(&db, "plain").await?;
    plain.drop().await?;

    let buckets = db
        .collection::<Document>("system.buckets.metrics")
        .estimated_document_count()
        .await? as i64;
    let base = deleted(&client).await?;
    // Every bucket starts at or before the last measurement: this value
    // makes even the newest one due the moment collMod applies it.
    let due_at = now_ms();
    let eas = ((due_at - last) / 1000 - 3600).max(0);
    db.run_command(doc! { "collMod": "metrics", "expireAfterSeconds": eas })
        .await?;
    let deadline = Instant::now() + Duration::from_secs(600);
    let mut gone_points = Vec::new();
    let gone_ms = loop {
        let gone = deleted(&client).await? - base;
        let since = (now_ms() - due_at) as f64;
        gone_points.push((since / 1000.0, (buckets - gone) as f64));
        if gone >= buckets {
            break since;
        }
        if Instant::now() > deadline {
            bail!("expiry did not finish: {gone}/{buckets} buckets deleted");
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    };
    let left = ts.count_documents(doc! {}).await?;
    if left != 0 {
        bail!("{left} measurements left after expiry");
    }
    let mut out = Outcome::new("timeseries");
    out.add("measurements", n, "");
    out.add("sensors", SENSORS, "");
    out.add("clients", args.clients, "");
    out.add("ingest_measurements_per_s", ingest.round(), "/s");
    out.add("ebbd_cpu_during_ingest_s", cpu, "s");
    out.add("client_cpu_during_ingest_s", client_cpu, "s");
    out.add("buckets", buckets, "");
    out.add(
        "timeseries_bytes_per_measurement",
        ts_bytes as f64 / n as f64,
        "B",
    );
    out.add(
        "ordinary_bytes_per_document",
        plain_bytes as f64 / n as f64,
        "B",
    );
    out.add(
        "ratio_timeseries_to_ordinary",
        ts_bytes as f64 / plain_bytes.max(1) as f64,
        "x",
    );
    out.add("all_gone_after_due_ms", gone_ms, "ms");
    out.add(
        "ebbd_peak_rss_mib",
        target.peak_rss().map(|b| b / (1 << 20)),
        "MiB",
    );
    let _ = points;
    out.series = Some(Series {
        title: format!("timeseries: {buckets} buckets of {n} measurements due at T"),
        x_label: "seconds after T".into(),
        y_label: "buckets remaining".into(),
        points: gone_points,
    });
    Ok(out)
}
