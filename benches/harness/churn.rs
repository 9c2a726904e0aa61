//! `churn`: R documents/s inserted into ebb with a TTL of T (a TTL index
//! on `at` with `expireAfterSeconds` T, and a second index on `k`) for a
//! duration, the stream driven and its lag measured by `steady`. Beside
//! the lag: the live set, SST bytes, ebbd's RSS and the TTL monitor's time
//! per chunk every second (do they grow as tombstones accumulate?), and a
//! full `count_documents({})` during the run against the same count on an
//! idle collection of the same size, and the read of the oldest document
//! by the TTL index (`oldest`) during the run against the same read idle.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::Result;
use mongodb::bson::{DateTime, Document, RawDocumentBuf, doc};
use mongodb::{Client, Collection};
use serde_json::json;

use crate::args::Args;
use crate::daemon::Target;
use crate::oldest;
use crate::report::{Outcome, Series};
use crate::scenarios::{DAY_SECS, connect, index};
use crate::status::{add_chunk_runs, chunk_runs, status};
use crate::steady::{self, Store, Stream};
use crate::workload::{Stamp, load, make_doc, now_ms, percentile};

/// ebb under the stream: documents dated when issued, due T later.
pub struct Ebb {
    client: Client,
    coll: Collection<RawDocumentBuf>,
    stamp: Stamp,
    ttl_ms: i64,
    /// The member whose deletes count instead of the primary's (`--lag-on`).
    lag_on: Option<Client>,
}

impl Ebb {
    /// Creates `bench.<name>` with the TTL index and the second index.
    pub async fn new(target: &Target, name: &str, ttl: Duration) -> Result<Ebb> {
        let (client, coll) = connect(target, name).await?;
        index(&coll, doc! { "at": 1 }, Some(ttl.as_secs() as i64)).await?;
        index(&coll, doc! { "k": 1 }, None).await?;
        Ok(Ebb {
            client,
            coll: coll.clone_with_type(),
            stamp: Stamp::new(),
            ttl_ms: ttl.as_millis() as i64,
            lag_on: None,
        })
    }

    /// Counts as stored what the member at `uri` has not deleted yet.
    pub async fn lag_on(mut self, uri: &str) -> Result<Ebb> {
        self.lag_on = Some(Client::with_uri_str(uri).await?);
        Ok(self)
    }
}

impl Store for Ebb {
    async fn insert(&self, _worker: usize, first: u64, n: usize, due_ms: i64) -> Result<()> {
        let at = DateTime::from_millis(due_ms - self.ttl_ms);
        let docs = (first..first + n as u64).map(|i| self.stamp.doc(at, (i % 1000) as i32));
        self.coll.insert_many(docs).await?;
        Ok(())
    }

    async fn stored(&self) -> Result<u64> {
        let s = status(&self.client).await?;
        let m = s.get_document("metrics")?;
        let inserted = m.get_document("document")?.get_i64("inserted")?;
        let deleted = match &self.lag_on {
            None => m.get_document("ttl")?.get_i64("deletedDocuments")?,
            Some(member) => status(member)
                .await?
                .get_document("metrics")?
                .get_document("ttl")?
                .get_i64("replicatedDeletes")?,
        };
        Ok((inserted - deleted).max(0) as u64)
    }
}

/// What is read once a second; the counters are cumulative, as read.
#[derive(Debug, Clone, Copy, Default)]
pub struct Gauge {
    /// Seconds since the run started.
    pub t: f64,
    pub rss: u64,
    pub sst_bytes: u64,
    /// TTL chunks sent, the µs from sending them to their answers, and
    /// the documents they deleted.
    pub chunks: i64,
    pub chunk_us: i64,
    pub deleted: i64,
    /// How the writer ran them (`chunkRuns`: planned, planned ahead, on
    /// the writer, plans stale, plans overdue, sent `behind`), so a second
    /// that fell behind shows which path its chunks took.
    pub runs: [i64; 6],
}

/// Reads the gauges once a second from `started` until `stop` is set.
pub fn spawn_gauges(
    target: Arc<Target>,
    client: Client,
    started: Instant,
    stop: Arc<AtomicBool>,
) -> tokio::task::JoinHandle<Result<Vec<Gauge>>> {
    tokio::spawn(async move {
        let mut out = Vec::new();
        let mut tick = tokio::time::interval(Duration::from_secs(1));
        while !stop.load(Ordering::Relaxed) {
            tick.tick().await;
            out.push(gauges(&target, &client, started).await?);
        }
        Ok(out)
    })
}

/// TTL chunks between `from` and `to` seconds: (µs per chunk, documents
/// per chunk), if any ran.
pub fn chunk_stats(gauges: &[Gauge], from: f64, to: f64) -> Option<(f64, f64)> {
    let a = gauges.iter().find(|g| g.t >= from)?;
    let b = gauges.iter().rev().find(|g| g.t <= to)?;
    (b.chunks > a.chunks).then(|| {
        let chunks = (b.chunks - a.chunks) as f64;
        (
            (b.chunk_us - a.chunk_us) as f64 / chunks,
            (b.deleted - a.deleted) as f64 / chunks,
        )
    })
}

async fn gauges(target: &Target, client: &Client, started: Instant) -> Result<Gauge> {
    let s = status(client).await?;
    let ttl = s.get_document("metrics")?.get_document("ttl")?;
    let runs = ttl.get_document("chunkRuns").ok();
    let run = |field| runs.and_then(|r| r.get_i64(field).ok()).unwrap_or(0);
    Ok(Gauge {
        t: started.elapsed().as_secs_f64(),
        rss: target.rss().unwrap_or(0),
        sst_bytes: target.sst_bytes().unwrap_or(0),
        chunks: ttl.get_i64("chunks").unwrap_or(0),
        chunk_us: ttl.get_i64("chunkMicros").unwrap_or(0),
        deleted: ttl.get_i64("deletedDocuments")?,
        runs: [
            run("planned"),
            run("ahead"),
            run("onWriter"),
            run("stalePlans"),
            run("overduePlans"),
            run("behind"),
        ],
    })
}

/// The stream's lag (p50, p99, max), its largest backlog of stored due
/// items, and its live set (min, median, max) against the expected size.
pub fn add_lag_and_live(
    out: &mut Outcome,
    lag: (f64, f64, f64),
    backlog_max: u64,
    live: (f64, f64, f64),
    expected_live: f64,
    unit: &str,
) {
    out.add("lag_p50_ms", lag.0, "ms");
    out.add("lag_p99_ms", lag.1, "ms");
    out.add("lag_max_ms", lag.2, "ms");
    out.add("stored_due_max", backlog_max, unit);
    out.add("live_set_expected", expected_live.round(), unit);
    out.add("live_set_min", live.0, unit);
    out.add("live_set_median", live.1, unit);
    out.add("live_set_max", live.2, unit);
    out.add(
        "live_set_max_over_expected",
        live.2 / expected_live.max(1.0),
        "x",
    );
}

/// RSS at the first and last gauge and its maximum, in MiB.
pub fn add_rss(out: &mut Outcome, gauges: &[Gauge]) {
    let mib = |b: u64| b as f64 / 1048576.0;
    out.add(
        "rss_first_mib",
        gauges.first().map_or(0.0, |g| mib(g.rss)),
        "MiB",
    );
    out.add(
        "rss_last_mib",
        gauges.last().map_or(0.0, |g| mib(g.rss)),
        "MiB",
    );
    let max = gauges.iter().map(|g| g.rss).max().unwrap_or(0);
    out.add("rss_max_mib", mib(max), "MiB");
}

/// The plot of a steady-stream scenario: expiry lag p99 per second.
pub fn lag_series(
    scenario: &str,
    unit: &str,
    stream: &Stream,
    windows: &[(f64, f64, f64, f64, f64)],
) -> Series {
    Series {
        title: format!(
            "{scenario}: {} {unit}/s, TTL {} s: expiry lag p99 per second",
            stream.rate,
            stream.ttl.as_secs()
        ),
        x_label: "seconds".into(),
        y_label: "lag p99 (ms)".into(),
        points: windows.iter().map(|w| (w.0, w.2)).collect(),
    }
}

/// The per-second lag windows and gauges, for the JSON report.
pub fn timeline(windows: &[(f64, f64, f64, f64, f64)], gauges: &[Gauge]) -> serde_json::Value {
    json!({
        "lag_per_second": windows.iter().map(|w| json!({
            "t": w.0, "p50_ms": w.1, "p99_ms": w.2, "max_ms": w.3, "stored": w.4,
        })).collect::<Vec<_>>(),
        "gauges_per_second": gauges.iter().map(|g| json!({
            "t": g.t, "rss": g.rss, "sst_bytes": g.sst_bytes, "chunks": g.chunks,
            "chunk_us": g.chunk_us, "deleted": g.deleted, "planned": g.runs[0],
            "ahead": g.runs[1], "on_writer": g.runs[2], "stale": g.runs[3], "overdue": g.runs[4],
            "behind": g.runs[5],
        })).collect::<Vec<_>>(),
    })
}

/// Times `count_documents({})` on `coll`: (documents, seconds).
async fn scan(coll: &Collection<Document>) -> Result<(u64, f64)> {
    let t = Instant::now();
    let n = coll.count_documents(doc! {}).await?;
    Ok((n, t.elapsed().as_secs_f64()))
}

pub async fn run(args: &Args) -> Result<Outcome> {
    let stream = Stream {
        rate: args.rate.unwrap_or(100_000),
        duration: Duration::from_secs(args.duration.unwrap_or(600)),
        ttl: Duration::from_secs(args.ttl),
        workers: args.clients,
    };
    let mut env: Vec<(&str, String)> = Vec::new();
    if args.show_expired {
        env.push(("EBB_TTL__HIDE_EXPIRED", "false".to_owned()));
    }
    if let Some(overload) = &args.overload {
        env.push(("EBB_TTL__OVERLOAD", overload.clone()));
    }
    let target = Arc::new(Target::start(
        args.uri.as_deref(),
        args.ebbd.as_ref(),
        &env,
    )?);
    let mut store = Ebb::new(&target, "churn", stream.ttl).await?;
    if let Some(uri) = &args.lag_on {
        store = store.lag_on(uri).await?;
    }
    let store = Arc::new(store);
    let started = Instant::now();
    let stop_gauges = Arc::new(AtomicBool::new(false));
    let gauge_task = spawn_gauges(
        target.clone(),
        store.client.clone(),
        started,
        stop_gauges.clone(),
    );
    // Full scans at a quarter, half and three quarters of the run, and the
    // moment inserts stop (while the last documents are still expiring).
    let scan_task = {
        let coll = store.coll.clone_with_type::<Document>();
        let d = stream.duration.as_secs_f64();
        tokio::spawn(async move {
            let mut out = Vec::new();
            for at in [0.25 * d, 0.5 * d, 0.75 * d, d] {
                let wait = at - started.elapsed().as_secs_f64();
                if wait > 0.0 {
                    tokio::time::sleep(Duration::from_secs_f64(wait)).await;
                }
                let (n, secs) = scan(&coll).await?;
                out.push((started.elapsed().as_secs_f64(), n, secs));
            }
            anyhow::Ok(out)
        })
    };
    let stop_probe = Arc::new(AtomicBool::new(false));
    let probe_task = oldest::spawn(
        &target.uri,
        &store.coll.clone_with_type(),
        stream.ttl,
        stop_probe.clone(),
    );
    let run = steady::drive(store.clone(), stream).await?;
    stop_probe.store(true, Ordering::Relaxed);
    stop_gauges.store(true, Ordering::Relaxed);
    let probe = probe_task.await??;
    let gauges = gauge_task.await??;
    let scans = scan_task.await??;
    let (p50, p99, max) = run.lag(stream.ttl);
    let (live_min, live_median, live_max) = run.live_set(stream.ttl, Duration::from_secs(2));
    let expected_live = run.achieved_rate * stream.ttl.as_secs_f64();
    let at_stop = gauges
        .iter()
        .rev()
        .find(|g| g.t <= run.stopped_at_s)
        .copied()
        .unwrap_or_default();
    let doc_bytes = mongodb::bson::RawDocumentBuf::try_from(&make_doc(DateTime::now(), 1))?
        .as_bytes()
        .len();
    // Record plus the TTL entry (Date + ObjectId) and the `k` entry
    // (int32 + ObjectId), uncompressed.
    let live_bytes = live_median * (doc_bytes + 22 + 18) as f64;
    // Chunk time in the first and the last stretch of the steady part.
    let steady_from = stream.ttl.as_secs_f64() + 2.0;
    let stretch = ((run.stopped_at_s - steady_from) / 4.0).clamp(1.0, 60.0);
    let chunk_us = |from: f64, to: f64| chunk_stats(&gauges, from, to);
    let first = chunk_us(steady_from, steady_from + stretch);
    let last = chunk_us(run.stopped_at_s - stretch, run.stopped_at_s);

    let runs = chunk_runs(&store.client).await?;

    // The same count on an idle collection of the live set's size.
    eprintln!("  loading an idle collection of {live_median} documents");
    let (idle_rates, idle_probe) = {
        let (_c, idle) = connect(&target, "idle").await?;
        index(&idle, doc! { "at": 1 }, Some(stream.ttl.as_secs() as i64)).await?;
        index(&idle, doc! { "k": 1 }, None).await?;
        let far = DateTime::from_millis(now_ms() + DAY_SECS * 1000);
        load(&idle, live_median as usize, 4, move |i| {
            make_doc(far, (i % 1000) as i32)
        })
        .await?;
        tokio::time::sleep(Duration::from_secs(2)).await;
        let mut rates = Vec::new();
        for _ in 0..3 {
            let (n, secs) = scan(&idle).await?;
            rates.push(n as f64 / secs);
        }
        rates.sort_by(f64::total_cmp);
        (
            rates,
            oldest::idle(&target.uri, &idle, stream.ttl, 200).await?,
        )
    };
    let idle_rate = percentile(&idle_rates, 50.0);
    let mut during: Vec<f64> = scans.iter().map(|s| s.1 as f64 / s.2).collect();
    during.sort_by(f64::total_cmp);

    let mut out = Outcome::new("churn");
    out.add("target_rate_docs_per_s", stream.rate, "docs/s");
    out.add(
        "achieved_rate_docs_per_s",
        run.achieved_rate.round(),
        "docs/s",
    );
    out.add("duration_s", stream.duration.as_secs(), "s");
    out.add("ttl_s", stream.ttl.as_secs(), "s");
    out.add("hide_expired", !args.show_expired, "");
    out.add("inserted", run.inserted, "");
    add_lag_and_live(
        &mut out,
        (p50, p99, max),
        run.backlog_max(),
        (live_min, live_median, live_max),
        expected_live,
        "docs",
    );
    out.add(
        "sst_bytes_at_stop_mib",
        at_stop.sst_bytes as f64 / 1048576.0,
        "MiB",
    );
    out.add("live_data_mib", live_bytes / 1048576.0, "MiB");
    out.add(
        "sst_over_live_data",
        at_stop.sst_bytes as f64 / live_bytes.max(1.0),
        "x",
    );
    add_rss(&mut out, &gauges);
    // A backlog left at the stop, drained with no inflow.
    let drain = run.drain();
    out.add("drain_docs_per_s", drain.map(|d| d.0.round()), "docs/s");
    out.add("drain_s", drain.map(|d| d.1), "s");
    out.add("chunk_stretch_s", stretch, "s");
    out.add("chunk_us_first", first.map(|c| c.0), "us");
    out.add("chunk_us_last", last.map(|c| c.0), "us");
    out.add("chunk_docs_first", first.map(|c| c.1), "docs");
    out.add("chunk_docs_last", last.map(|c| c.1), "docs");
    out.add(
        "chunk_time_last_over_first",
        first.zip(last).map(|(f, l)| l.0 / f.0),
        "x",
    );
    add_chunk_runs(&mut out, "", runs.as_ref());
    out.add(
        "scan_during_min_docs_per_s",
        during.first().copied(),
        "docs/s",
    );
    out.add(
        "scan_during_median_docs_per_s",
        percentile(&during, 50.0),
        "docs/s",
    );
    out.add("scan_idle_docs_per_s", idle_rate, "docs/s");
    out.add(
        "scan_idle_over_during_min",
        idle_rate / during.first().copied().unwrap_or(1.0).max(1e-9),
        "x",
    );
    // The oldest document by the TTL index, during the stream and idle.
    let (during_p50, during_p99) = probe.p50_p99();
    let (idle_p50, idle_p99) = idle_probe.p50_p99();
    out.add("oldest_read_during_p50_ms", during_p50, "ms");
    out.add("oldest_read_during_p99_ms", during_p99, "ms");
    out.add("oldest_read_idle_p50_ms", idle_p50, "ms");
    out.add("oldest_read_idle_p99_ms", idle_p99, "ms");
    out.add(
        "oldest_read_p99_over_idle",
        during_p99 / idle_p99.max(1e-9),
        "x",
    );
    out.add(
        "oldest_read_due_returned",
        probe.due_returned + idle_probe.due_returned,
        "docs",
    );
    let windows = run.windows(Duration::from_secs(1));
    let mut timeline = timeline(&windows, &gauges);
    timeline["scans_during"] = scans
        .iter()
        .map(|s| json!({ "t": s.0, "docs": s.1, "secs": s.2 }))
        .collect();
    timeline["scans_idle_docs_per_s"] = json!(idle_rates);
    out.timeline = Some(timeline);
    out.series = Some(lag_series("churn", "docs", &stream, &windows));
    Ok(out)
}
