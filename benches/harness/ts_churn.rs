//! `timeseries-churn`: the `churn` stream into a time-series collection.
//! R measurements/s from 100 sensors, each dated when issued, into a
//! collection with `bucketMaxSpanSeconds: 1` and a collection-level
//! `expireAfterSeconds` of T, for a duration; the same lag, live-set, SST,
//! RSS and TTL-chunk figures as `churn`, driven and measured by `steady`.
//!
//! Expiry is per bucket, as in mongod: every bucket of second s is due at
//! s + 1 s + T, so the measurements issued in second s are due then, and
//! that is the due time the stream's timeline records. The node counts
//! deleted buckets, not measurements; the harness turns the count into
//! measurements from what it issued: buckets fill to 1,000 measurements
//! and roll over, so a sensor's c measurements in one second make
//! ⌈c / 1000⌉ buckets, and the monitor deletes the buckets of one second
//! before those of the next. The report checks that model: the buckets
//! deleted once everything fell due against the buckets it predicts.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Result, bail};
use mongodb::bson::{DateTime, RawDocumentBuf, doc, oid::ObjectId, rawdoc};
use mongodb::{Client, Collection};

use crate::args::Args;
use crate::churn::{Gauge, add_lag_and_live, add_rss, lag_series, spawn_gauges, timeline};
use crate::daemon::{Target, cpu_spent, own_cpu};
use crate::report::Outcome;
use crate::steady::{self, Store, Stream};
use crate::workload::deleted;

const SENSORS: usize = 100;
/// Measurements a bucket holds before the next one opens.
const BUCKET_MEASUREMENTS: u64 = 1000;

/// The time-series collection under the stream.
pub struct TsEbb {
    client: Client,
    coll: Collection<RawDocumentBuf>,
    ttl_ms: i64,
    sensors: Vec<String>,
    /// Buckets the node had deleted before the stream.
    deleted_before: i64,
    acked: AtomicU64,
    issued: Mutex<Issued>,
}

/// Measurements issued per second of their time, per sensor; seconds whose
/// buckets are all deleted leave the map for two sums, so the sampler's
/// walk (every 10 ms) stays a few seconds long however long the run.
#[derive(Default)]
struct Issued {
    seconds: BTreeMap<i64, [u64; SENSORS]>,
    gone_buckets: u64,
    gone_measurements: u64,
}

impl TsEbb {
    async fn new(target: &Target, ttl: Duration) -> Result<TsEbb> {
        let client = Client::with_uri_str(&target.uri).await?;
        let db = client.database("bench");
        db.collection::<RawDocumentBuf>("churn_ts").drop().await?;
        db.run_command(doc! {
            "create": "churn_ts",
            "timeseries": {
                "timeField": "t",
                "metaField": "sensor",
                "bucketMaxSpanSeconds": 1,
                "bucketRoundingSeconds": 1,
            },
            "expireAfterSeconds": ttl.as_secs() as i64,
        })
        .await?;
        Ok(TsEbb {
            coll: db.collection("churn_ts"),
            deleted_before: deleted(&client).await?,
            client,
            ttl_ms: ttl.as_millis() as i64,
            sensors: (0..SENSORS).map(|s| format!("sensor-{s:03}")).collect(),
            acked: AtomicU64::new(0),
            issued: Mutex::new(Issued::default()),
        })
    }

    /// Buckets the node has deleted since the stream began.
    async fn buckets_deleted(&self) -> Result<u64> {
        Ok((deleted(&self.client).await? - self.deleted_before).max(0) as u64)
    }

    /// Buckets the measurements issued so far make.
    fn buckets_issued(&self) -> u64 {
        let issued = self.issued.lock().expect("issued lock");
        issued.gone_buckets + issued.seconds.values().map(buckets_of).sum::<u64>()
    }

    /// Measurements in the first `buckets` buckets to fall due (a count
    /// that only grows: a second wholly inside it is never issued to
    /// again, since it fell due long after it was issued).
    fn measurements_in(&self, buckets: u64) -> u64 {
        let mut issued = self.issued.lock().expect("issued lock");
        let mut left = buckets.saturating_sub(issued.gone_buckets);
        while let Some(entry) = issued.seconds.first_entry() {
            let (b, m) = (buckets_of(entry.get()), entry.get().iter().sum::<u64>());
            if left < b {
                // Part of a second: its buckets hold about the same.
                return issued.gone_measurements + m * left / b.max(1);
            }
            entry.remove();
            issued.gone_buckets += b;
            issued.gone_measurements += m;
            left -= b;
        }
        issued.gone_measurements
    }
}

/// Buckets one second's measurements make: ⌈c / 1000⌉ per sensor.
fn buckets_of(counts: &[u64; SENSORS]) -> u64 {
    counts.iter().map(|c| c.div_ceil(BUCKET_MEASUREMENTS)).sum()
}

impl Store for TsEbb {
    async fn insert(&self, _worker: usize, first: u64, n: usize, due_ms: i64) -> Result<()> {
        let at = due_ms - self.ttl_ms;
        {
            let mut issued = self.issued.lock().expect("issued lock");
            let counts = issued
                .seconds
                .entry(at.div_euclid(1000))
                .or_insert([0; SENSORS]);
            for i in first..first + n as u64 {
                counts[i as usize % SENSORS] += 1;
            }
        }
        let t = DateTime::from_millis(at);
        let docs: Vec<RawDocumentBuf> = (first..first + n as u64)
            .map(|i| {
                let sensor = i as usize % SENSORS;
                rawdoc! {
                    "_id": ObjectId::new(),
                    "t": t,
                    "sensor": self.sensors[sensor].as_str(),
                    "temp": (1500 + 10 * sensor as i64 + (i % 500) as i64) as f64 / 100.0,
                }
            })
            .collect();
        self.coll.insert_many(docs).await?;
        self.acked.fetch_add(n as u64, Ordering::SeqCst);
        Ok(())
    }

    /// A measurement dated t is due with its bucket: ⌊t⌋ + 1 s + T.
    fn due(&self, due_ms: i64) -> i64 {
        (due_ms - self.ttl_ms).div_euclid(1000) * 1000 + 1000 + self.ttl_ms
    }

    async fn stored(&self) -> Result<u64> {
        let gone = self.measurements_in(self.buckets_deleted().await?);
        Ok(self.acked.load(Ordering::SeqCst).saturating_sub(gone))
    }
}

pub async fn run(args: &Args) -> Result<Outcome> {
    let stream = Stream {
        rate: args.rate.unwrap_or(500_000),
        duration: Duration::from_secs(args.duration.unwrap_or(600)),
        ttl: Duration::from_secs(args.ttl),
        workers: args.clients,
    };
    let target = Arc::new(Target::start(args.uri.as_deref(), args.ebbd.as_ref(), &[])?);
    let store = Arc::new(TsEbb::new(&target, stream.ttl).await?);
    let started = Instant::now();
    let stop_gauges = Arc::new(AtomicBool::new(false));
    let gauge_task = spawn_gauges(
        target.clone(),
        store.client.clone(),
        started,
        stop_gauges.clone(),
    );
    let (cpu_before, client_before) = (target.cpu(), own_cpu());
    let run = steady::drive(store.clone(), stream).await?;
    stop_gauges.store(true, Ordering::Relaxed);
    let cpu = cpu_spent(cpu_before, target.cpu());
    let client_cpu = cpu_spent(client_before, own_cpu());
    let gauges: Vec<Gauge> = gauge_task.await??;

    // Every bucket is due by now or within a second; wait for the last.
    let expected = store.buckets_issued();
    let deadline = Instant::now() + Duration::from_secs(60);
    let gone_s = loop {
        let gone = store.buckets_deleted().await?;
        if gone >= expected {
            break started.elapsed().as_secs_f64() - run.stopped_at_s;
        }
        if Instant::now() > deadline {
            bail!("expiry did not finish: {gone}/{expected} buckets deleted");
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    let buckets_deleted = store.buckets_deleted().await?;
    let left = store
        .client
        .database("bench")
        .collection::<RawDocumentBuf>("system.buckets.churn_ts")
        .estimated_document_count()
        .await?;

    let (p50, p99, max) = run.lag(stream.ttl);
    let (live_min, live_median, live_max) =
        run.live_set(stream.ttl + Duration::from_secs(1), Duration::from_secs(2));
    // A measurement stays from its issue until the end of its second plus
    // T: T + 0.5 s on average.
    let expected_live = run.achieved_rate * (stream.ttl.as_secs_f64() + 0.5);
    let at_stop = gauges
        .iter()
        .rev()
        .find(|g| g.t <= run.stopped_at_s)
        .copied()
        .unwrap_or_default();
    let steady_from = stream.ttl.as_secs_f64() + 3.0;
    let stretch = ((run.stopped_at_s - steady_from) / 4.0).clamp(1.0, 60.0);
    let chunks = |from: f64, to: f64| crate::churn::chunk_stats(&gauges, from, to);
    let first = chunks(steady_from, steady_from + stretch);
    let last = chunks(run.stopped_at_s - stretch, run.stopped_at_s);

    let mut out = Outcome::new("timeseries-churn");
    out.add("target_rate_per_s", stream.rate, "/s");
    out.add("achieved_rate_per_s", run.achieved_rate.round(), "/s");
    out.add("duration_s", stream.duration.as_secs(), "s");
    out.add("ttl_s", stream.ttl.as_secs(), "s");
    out.add("inserted", run.inserted, "");
    out.add("ebbd_cpu_s", cpu, "s");
    out.add("client_cpu_s", client_cpu, "s");
    add_lag_and_live(
        &mut out,
        (p50, p99, max),
        run.backlog_max(),
        (live_min, live_median, live_max),
        expected_live,
        "",
    );
    out.add("buckets_expected", expected, "");
    out.add("buckets_deleted", buckets_deleted, "");
    out.add(
        "measurements_per_bucket",
        run.inserted as f64 / buckets_deleted.max(1) as f64,
        "",
    );
    out.add("buckets_left", left, "");
    out.add("all_gone_after_stop_s", gone_s, "s");
    out.add(
        "sst_bytes_at_stop_mib",
        at_stop.sst_bytes as f64 / 1048576.0,
        "MiB",
    );
    out.add(
        "sst_bytes_per_live_measurement",
        at_stop.sst_bytes as f64 / live_median.max(1.0),
        "B",
    );
    add_rss(&mut out, &gauges);
    out.add("chunk_us_first", first.map(|c| c.0), "us");
    out.add("chunk_us_last", last.map(|c| c.0), "us");
    out.add("chunk_buckets_first", first.map(|c| c.1), "");
    out.add("chunk_buckets_last", last.map(|c| c.1), "");
    let windows = run.windows(Duration::from_secs(1));
    out.timeline = Some(timeline(&windows, &gauges));
    out.series = Some(lag_series(
        "timeseries-churn",
        "measurements",
        &stream,
        &windows,
    ));
    Ok(out)
}
