//! `scans`: cheap point reads while other clients scan whole collections
//! (scans run on a bounded pool and must not starve point reads).
//!
//! Loads `--docs` documents, then measures `find_one({_id})` latency from
//! one client for `--duration` seconds with nothing else running (idle),
//! and again while `--clients` clients each loop a full collection scan
//! (`count_documents` on an unindexed field, so every document is read and
//! nothing crosses the network). Reports p50/p99 both ways, their ratio,
//! and how many documents per second the scanners read.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::Result;
use mongodb::Collection;
use mongodb::bson::{Bson, DateTime, Document, doc};

use crate::args::Args;
use crate::daemon::Target;
use crate::report::Outcome;
use crate::scenarios::{DAY_SECS, connect};
use crate::workload::{Rng, load, make_doc, now_ms, percentile};

/// Point reads by `_id` until `duration` has passed; sorted latencies (ms).
async fn point_reads(
    c: &Collection<Document>,
    ids: &[Bson],
    duration: Duration,
) -> Result<Vec<f64>> {
    let mut rng = Rng(0x2545_F491_4F6C_DD1D ^ now_ms() as u64);
    let mut latencies = Vec::new();
    let end = Instant::now() + duration;
    while Instant::now() < end {
        let id = &ids[rng.below(ids.len() as u64) as usize];
        let t = Instant::now();
        c.find_one(doc! { "_id": id.clone() }).await?;
        latencies.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    latencies.sort_by(f64::total_cmp);
    Ok(latencies)
}

pub async fn run(args: &Args) -> Result<Outcome> {
    let n = args.docs;
    let scanners = args.clients;
    let duration = Duration::from_secs(args.duration.unwrap_or(5));
    let mut out = Outcome::new("scans");
    let target = Target::start(args.uri.as_deref(), args.ebbd.as_ref(), &[])?;
    let (_client, c) = connect(&target, "scans").await?;
    let far = DateTime::from_millis(now_ms() + DAY_SECS * 1000);
    load(&c, n, 4, move |i| make_doc(far, i as i32)).await?;
    let ids: Vec<Bson> = c
        .find(doc! {})
        .projection(doc! { "_id": 1 })
        .limit(10_000)
        .await?
        .try_collect_ids()
        .await?;
    // Let the load's flushes settle before either measurement.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let idle = point_reads(&c, &ids, duration).await?;

    let stop = Arc::new(AtomicBool::new(false));
    let scanned = Arc::new(AtomicU64::new(0));
    let mut tasks = Vec::new();
    for _ in 0..scanners {
        let (c, stop, scanned) = (c.clone(), stop.clone(), scanned.clone());
        tasks.push(tokio::spawn(async move {
            while !stop.load(Ordering::SeqCst) {
                c.count_documents(doc! { "k": { "$lt": -1 } }).await?;
                scanned.fetch_add(n as u64, Ordering::SeqCst);
            }
            anyhow::Ok(())
        }));
    }
    // The scanners get going before the measurement starts.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let started = Instant::now();
    let base = scanned.load(Ordering::SeqCst);
    let during = point_reads(&c, &ids, duration).await?;
    let scan_rate =
        (scanned.load(Ordering::SeqCst) - base) as f64 / started.elapsed().as_secs_f64();
    stop.store(true, Ordering::SeqCst);
    for task in tasks {
        task.await??;
    }

    out.add("docs", n, "");
    out.add("scanning_clients", scanners, "");
    let (idle99, during99) = (percentile(&idle, 99.0), percentile(&during, 99.0));
    out.add("idle_point_reads", idle.len(), "");
    out.add("idle_p50_ms", percentile(&idle, 50.0), "ms");
    out.add("idle_p99_ms", idle99, "ms");
    out.add("during_point_reads", during.len(), "");
    out.add("during_p50_ms", percentile(&during, 50.0), "ms");
    out.add("during_p99_ms", during99, "ms");
    out.add("p99_ratio", during99 / idle99, "x");
    out.add("scanned_docs_per_s", scan_rate, "docs/s");
    Ok(out)
}

/// The `_id`s of a projection-only cursor.
trait CollectIds {
    async fn try_collect_ids(self) -> Result<Vec<Bson>>;
}

impl CollectIds for mongodb::Cursor<Document> {
    async fn try_collect_ids(mut self) -> Result<Vec<Bson>> {
        let mut ids = Vec::new();
        while self.advance().await? {
            let doc: Document = self.deserialize_current()?;
            ids.extend(doc.get("_id").cloned());
        }
        Ok(ids)
    }
}
