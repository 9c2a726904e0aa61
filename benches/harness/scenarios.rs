//! The first four scenarios (purge, lag, insert, foreground) and the helpers
//! the others share (connecting to a fresh collection, indexes, waiting for
//! deletes). Each returns an [`Outcome`]; none asserts a target (targets
//! live in BENCHMARKS.md, next to the figures measured).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Result, bail};
use mongodb::bson::{Bson, DateTime, Document, doc};
use mongodb::options::IndexOptions;
use mongodb::{Client, Collection, IndexModel};

use crate::args::Args;
use crate::daemon::{Target, cpu_spent, own_cpu};
use crate::floor;
use crate::report::{Outcome, Series};
use crate::workload::{
    PAYLOAD, Rng, deleted, encoded_batches, load, load_encoded, make_doc, now_ms, percentile,
};

pub const DAY_SECS: i64 = 86_400;

pub async fn connect(target: &Target, coll: &str) -> Result<(Client, Collection<Document>)> {
    let client = Client::with_uri_str(&target.uri).await?;
    let c = client.database("bench").collection::<Document>(coll);
    c.drop().await?;
    Ok((client, c))
}

pub async fn index(c: &Collection<Document>, key: Document, expire: Option<i64>) -> Result<()> {
    let options = expire.map(|s| {
        IndexOptions::builder()
            .expire_after(Duration::from_secs(s as u64))
            .build()
    });
    c.create_index(IndexModel::builder().keys(key).options(options).build())
        .await?;
    Ok(())
}

/// Loads `n` documents dated `load_at` into a collection whose TTL index
/// keeps them for a year; `make_due` later makes them all due at once.
async fn load_purge_set(c: &Collection<Document>, n: usize) -> Result<(i64, Duration)> {
    index(c, doc! { "at": 1 }, Some(365 * DAY_SECS)).await?;
    index(c, doc! { "k": 1 }, None).await?;
    let load_at = now_ms() / 1000 * 1000;
    let (took, _) = load(c, n, 4, move |i| {
        make_doc(DateTime::from_millis(load_at), (i % 1000) as i32)
    })
    .await?;
    Ok((load_at, took))
}

/// Lowers the TTL so every document loaded at `load_at` falls due at one
/// instant T, at least a second from now; returns T.
async fn make_due(c: &Collection<Document>, load_at: i64) -> Result<i64> {
    let t = load_at + ((now_ms() - load_at) / 1000 + 2) * 1000;
    let secs = (t - load_at) / 1000;
    c.client()
        .database("bench")
        .run_command(
            doc! { "collMod": c.name(), "index": { "name": "at_1", "expireAfterSeconds": secs } },
        )
        .await?;
    Ok(t)
}

pub async fn sleep_until_ms(t: i64) {
    let wait = t - now_ms();
    if wait > 0 {
        tokio::time::sleep(Duration::from_millis(wait as u64)).await;
    }
}

pub async fn purge(args: &Args) -> Result<Outcome> {
    let n = args.docs;
    let target = Target::start(args.uri.as_deref(), args.ebbd.as_ref(), &[])?;
    let (client, c) = connect(&target, "purge").await?;
    let (load_at, load_time) = load_purge_set(&c, n).await?;
    if args.keep > 0 {
        let live = (0..args.keep).map(|i| doc! { "k": (i % 1000) as i32, "payload": PAYLOAD });
        c.insert_many(live).await?;
    }
    let base = deleted(&client).await?;
    let t = make_due(&c, load_at).await?;
    sleep_until_ms(t).await;
    let cpu_at_t = target.cpu();
    let gone = wait_for_deletes(&client, base, n, t).await?;
    let cpu = match (cpu_at_t, target.cpu()) {
        (Some(a), Some(b)) => Some((b - a).as_secs_f64()),
        _ => None,
    };
    let remaining = c.count_documents(doc! {}).await?;
    if remaining != args.keep as u64 {
        bail!(
            "{remaining} documents left after the purge, not {}",
            args.keep
        );
    }
    let peak_rss = target.peak_rss();
    eprintln!("  measuring the raw RocksDB floor for {n} documents");
    let floor = tokio::task::spawn_blocking(move || floor::purge(n)).await??;
    let empty_s = gone.empty_ms / 1000.0;
    let mut out = Outcome::new("purge");
    out.add("docs", n, "");
    out.add("kept_docs", args.keep, "");
    out.add("load_s", load_time.as_secs_f64(), "s");
    out.add("first_delete_after_due_ms", gone.first_delete_ms, "ms");
    out.add("empty_after_due_s", empty_s, "s");
    out.add(
        "purge_rate_docs_per_s",
        (n as f64 / empty_s).round(),
        "docs/s",
    );
    out.add("ebbd_cpu_during_purge_s", cpu, "s");
    out.add("floor_raw_rocksdb_s", floor.as_secs_f64(), "s");
    out.add("ratio_ebb_to_floor", empty_s / floor.as_secs_f64(), "x");
    out.add("ebbd_peak_rss_mib", peak_rss.map(|b| b / (1 << 20)), "MiB");
    out.series = Some(Series {
        title: format!("purge: {n} documents due at T"),
        x_label: "seconds after T".into(),
        y_label: "documents remaining".into(),
        points: gone.points,
    });
    Ok(out)
}

/// How `n` due documents went: the first delete and the last, in ms after
/// their due time T, and documents remaining over time (seconds after T).
pub struct Gone {
    pub first_delete_ms: f64,
    pub empty_ms: f64,
    pub points: Vec<(f64, f64)>,
}

/// Polls `deletedDocuments` every 2 ms from T until it has grown by `n`
/// over `base`.
pub async fn wait_for_deletes(client: &Client, base: i64, n: usize, t: i64) -> Result<Gone> {
    let mut points = vec![(0.0, n as f64)];
    let mut first_delete_ms = None;
    let deadline = Instant::now() + Duration::from_secs(600);
    loop {
        let now = now_ms();
        let gone = (deleted(client).await? - base) as usize;
        let since_t = (now - t) as f64;
        if gone > 0 && first_delete_ms.is_none() {
            first_delete_ms = Some(since_t);
        }
        points.push((since_t / 1000.0, n.saturating_sub(gone) as f64));
        if gone >= n {
            return Ok(Gone {
                first_delete_ms: first_delete_ms.unwrap_or(since_t),
                empty_ms: since_t,
                points,
            });
        }
        if Instant::now() > deadline {
            bail!("expiry did not finish: {gone}/{n} deleted");
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

pub async fn lag(args: &Args) -> Result<Outcome> {
    let env: Vec<(&str, String)> = if args.show_expired {
        vec![("EBB_TTL__HIDE_EXPIRED", "false".to_owned())]
    } else {
        Vec::new()
    };
    let target = Target::start(args.uri.as_deref(), args.ebbd.as_ref(), &env)?;
    let (client, c) = connect(&target, "lag").await?;
    index(&c, doc! { "at": 1 }, Some(0)).await?;
    let (rate, secs) = (args.rate.unwrap_or(10_000), args.duration.unwrap_or(60));
    let per_tick = (rate / 100).max(1);
    let stop = Arc::new(AtomicBool::new(false));
    let inserted = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let writer = {
        let (c, stop, inserted) = (c.clone(), stop.clone(), inserted.clone());
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_millis(10));
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Burst);
            while started.elapsed() < Duration::from_secs(secs) {
                tick.tick().await;
                let due = DateTime::from_millis(now_ms() + 1000);
                let batch: Vec<Document> = (0..per_tick).map(|i| make_doc(due, i as i32)).collect();
                c.insert_many(batch).await?;
                inserted.fetch_add(per_tick, Ordering::SeqCst);
            }
            stop.store(true, Ordering::SeqCst);
            anyhow::Ok(started.elapsed())
        })
    };
    let progress = tokio::spawn(crate::workload::progress(
        "inserted",
        inserted.clone(),
        rate * secs as usize,
    ));
    // Sample the oldest overdue document every 10 ms, from the moment the
    // first documents fall due until a second after the last insert. `now`
    // is read before the query is sent, so anything returned was due
    // before the node looked: a due document returned to a reader. Then
    // count the due documents still stored (explain's keys examined over
    // the due range of the TTL index): the monitor's backlog.
    let mut samples = Vec::new();
    let mut returned_due = 0usize;
    let mut backlog = Vec::new();
    let mut points = Vec::new();
    tokio::time::sleep(Duration::from_millis(1000)).await;
    let mut tick = tokio::time::interval(Duration::from_millis(10));
    let mut drain_until = None;
    loop {
        tick.tick().await;
        let now = now_ms();
        let oldest = c
            .find_one(doc! { "at": { "$lte": DateTime::from_millis(now) } })
            .sort(doc! { "at": 1 })
            .projection(doc! { "at": 1 })
            .await?;
        let lag_ms = match oldest.as_ref().and_then(|d| d.get("at")) {
            Some(Bson::DateTime(at)) => {
                returned_due += 1;
                (now - at.timestamp_millis()).max(0) as f64
            }
            _ => 0.0,
        };
        samples.push(lag_ms);
        backlog.push(stored_due(&client, "lag", now).await? as f64);
        points.push((started.elapsed().as_secs_f64(), lag_ms));
        if stop.load(Ordering::SeqCst) && drain_until.is_none() {
            drain_until = Some(Instant::now() + Duration::from_millis(1500));
        }
        if drain_until.is_some_and(|d| Instant::now() > d) {
            break;
        }
    }
    let writing = writer.await??;
    progress.abort();
    let total = inserted.load(Ordering::SeqCst);
    let achieved = total as f64 / writing.as_secs_f64();
    let runs = crate::status::chunk_runs(&client).await?;
    drop(client);
    samples.sort_by(f64::total_cmp);
    backlog.sort_by(f64::total_cmp);
    let mut out = Outcome::new("lag");
    out.add("hide_expired", !args.show_expired, "");
    out.add("target_rate_docs_per_s", rate, "docs/s");
    out.add("achieved_rate_docs_per_s", achieved.round(), "docs/s");
    out.add("duration_s", secs, "s");
    out.add("samples", samples.len(), "");
    out.add("due_documents_returned", returned_due, "");
    out.add("stored_due_p50", percentile(&backlog, 50.0), "docs");
    out.add("stored_due_p99", percentile(&backlog, 99.0), "docs");
    out.add(
        "stored_due_max",
        backlog.last().copied().unwrap_or_default(),
        "docs",
    );
    out.add("lag_p50_ms", percentile(&samples, 50.0), "ms");
    out.add("lag_p99_ms", percentile(&samples, 99.0), "ms");
    out.add(
        "lag_max_ms",
        samples.last().copied().unwrap_or_default(),
        "ms",
    );
    crate::status::add_chunk_runs(&mut out, "", runs.as_ref());
    out.add(
        "ebbd_peak_rss_mib",
        target.peak_rss().map(|b| b / (1 << 20)),
        "MiB",
    );
    out.series = Some(Series {
        title: format!("lag: oldest due document a reader sees at {rate} docs/s"),
        x_label: "seconds".into(),
        y_label: "lag (ms)".into(),
        points,
    });
    Ok(out)
}

/// Documents of `bench.<coll>` whose `at` is at or before `cutoff` and
/// still stored, read from the TTL index: explain's keys examined over
/// `at <= cutoff`.
async fn stored_due(client: &Client, coll: &str, cutoff: i64) -> Result<i64> {
    let explain = doc! {
        "explain": {
            "find": coll,
            "filter": { "at": { "$lte": DateTime::from_millis(cutoff) } },
            "hint": { "at": 1 },
        },
        "verbosity": "executionStats",
    };
    let reply = client.database("bench").run_command(explain).await?;
    Ok(reply
        .get_document("executionStats")?
        .get_i64("totalKeysExamined")?)
}

pub async fn insert(args: &Args) -> Result<Outcome> {
    let n = args.docs;
    let target = Target::start(args.uri.as_deref(), args.ebbd.as_ref(), &[])?;
    let (_client, c) = connect(&target, "insert").await?;
    index(&c, doc! { "at": 1 }, Some(DAY_SECS)).await?;
    // The floor first, while ebbd is idle: measured after the load, it
    // shared the cores with ebbd's flushes and compactions.
    eprintln!("  measuring the raw RocksDB floor for {n} documents");
    let floor = tokio::task::spawn_blocking(move || floor::insert(n)).await??;
    let at = DateTime::from_millis(now_ms() + DAY_SECS * 1000);
    let batches = encoded_batches(n, at);
    let (cpu_before, client_before) = (target.cpu(), own_cpu());
    let (took, points) = load_encoded(&c, batches, args.clients).await?;
    let cpu = cpu_spent(cpu_before, target.cpu());
    let client_cpu = cpu_spent(client_before, own_cpu());
    let rate = n as f64 / took.as_secs_f64();
    let floor_rate = n as f64 / floor.as_secs_f64();
    let mut out = Outcome::new("insert");
    out.add("docs", n, "");
    out.add("clients", args.clients, "");
    out.add("elapsed_s", took.as_secs_f64(), "s");
    out.add("insert_rate_docs_per_s", rate.round(), "docs/s");
    out.add("ebbd_cpu_s", cpu, "s");
    out.add("client_cpu_s", client_cpu, "s");
    out.add("floor_raw_rocksdb_docs_per_s", floor_rate.round(), "docs/s");
    out.add("ratio_ebb_to_floor", rate / floor_rate, "x");
    out.add(
        "ebbd_peak_rss_mib",
        target.peak_rss().map(|b| b / (1 << 20)),
        "MiB",
    );
    out.series = Some(Series {
        title: format!("insert: {n} documents from {} clients", args.clients),
        x_label: "seconds".into(),
        y_label: "documents inserted".into(),
        points,
    });
    Ok(out)
}

/// The largest value in each `window` of a timeline, at the window's start
/// (seconds after `origin`).
fn window_max<'a>(
    origin: Instant,
    timeline: impl Iterator<Item = &'a (Instant, f64)>,
    window: Duration,
) -> Vec<(f64, f64)> {
    let mut points: Vec<(f64, f64)> = Vec::new();
    for (at, v) in timeline {
        let w = at.duration_since(origin).as_secs_f64();
        let w = (w / window.as_secs_f64()).floor() * window.as_secs_f64();
        match points.last_mut() {
            Some((last, max)) if *last == w => *max = max.max(*v),
            _ => points.push((w, *v)),
        }
    }
    points
}

/// Latencies of find-by-_id and insert_one, in ms, sorted; and each
/// insert's (start, latency in ms) in the order they ran.
struct Latencies {
    find: Vec<f64>,
    insert: Vec<f64>,
    insert_timeline: Vec<(Instant, f64)>,
}

/// Alternates find_one by a random live `_id` and insert_one until `until`
/// says stop.
async fn foreground_ops(
    c: &Collection<Document>,
    ids: &[Bson],
    until: impl Fn() -> bool,
) -> Result<Latencies> {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ now_ms() as u64);
    let mut lat = Latencies {
        find: Vec::new(),
        insert: Vec::new(),
        insert_timeline: Vec::new(),
    };
    let far = DateTime::from_millis(now_ms() + DAY_SECS * 1000);
    while !until() {
        let id = &ids[(rng.next() % ids.len() as u64) as usize];
        let t = Instant::now();
        c.find_one(doc! { "_id": id.clone() }).await?;
        lat.find.push(t.elapsed().as_secs_f64() * 1000.0);
        let t = Instant::now();
        c.insert_one(make_doc(far, 7)).await?;
        let ms = t.elapsed().as_secs_f64() * 1000.0;
        lat.insert.push(ms);
        lat.insert_timeline.push((t, ms));
    }
    lat.find.sort_by(f64::total_cmp);
    lat.insert.sort_by(f64::total_cmp);
    Ok(lat)
}

pub async fn foreground(args: &Args) -> Result<Outcome> {
    let n = args.docs;
    let mut out = Outcome::new("foreground");
    out.add("purge_docs", n, "");
    let runs: Vec<(&str, u64)> = if args.uri.is_some() {
        vec![("unpaced", 0)]
    } else {
        vec![("unpaced", 0), ("paced", args.paced_rate)]
    };
    for (label, rate) in runs {
        let env = [("EBB_TTL__MAX_DELETES_PER_SEC", rate.to_string())];
        let target = Target::start(args.uri.as_deref(), args.ebbd.as_ref(), &env)?;
        let (client, c) = connect(&target, "foreground").await?;
        let far = DateTime::from_millis(now_ms() + DAY_SECS * 1000);
        let live: Vec<Document> = (0..10_000).map(|i| make_doc(far, i)).collect();
        let ids: Vec<Bson> = live
            .iter()
            .map(|d| d.get("_id").cloned().unwrap_or(Bson::Null))
            .collect();
        c.insert_many(live).await?;
        let (load_at, _) = load_purge_set(&c, n).await?;
        // Let the load's flushes and compactions settle, then three seconds
        // of foreground traffic with nothing expiring. A poller reads
        // serverStatus every 5 ms, as the watcher does during the purge, so
        // both measurements carry the same extra load.
        tokio::time::sleep(Duration::from_secs(2)).await;
        let idle_start = Instant::now();
        let idle_end = idle_start + Duration::from_secs(3);
        let poller = {
            let client = client.clone();
            tokio::spawn(async move {
                while Instant::now() < idle_end {
                    deleted(&client).await?;
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
                anyhow::Ok(())
            })
        };
        let idle = foreground_ops(&c, &ids, || Instant::now() > idle_end).await?;
        poller.await??;
        // During: the same traffic while the whole purge set expires.
        let base = deleted(&client).await?;
        let t = make_due(&c, load_at).await?;
        sleep_until_ms(t).await;
        let done = Arc::new(AtomicBool::new(false));
        let watcher = {
            let (client, done) = (client.clone(), done.clone());
            tokio::spawn(async move {
                while (deleted(&client).await? - base) < n as i64 {
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
                done.store(true, Ordering::SeqCst);
                anyhow::Ok(())
            })
        };
        let during = foreground_ops(&c, &ids, || done.load(Ordering::SeqCst)).await?;
        watcher.await??;
        let purge_s = (now_ms() - t) as f64 / 1000.0;
        let runs = crate::status::chunk_runs(&client).await?;
        crate::status::add_chunk_runs(&mut out, &format!("{label}_"), runs.as_ref());
        if label == "unpaced" {
            let timeline = idle.insert_timeline.iter().chain(&during.insert_timeline);
            out.series = Some(Series {
                title: format!(
                    "foreground: insert_one latency, idle, then while {n} documents expire"
                ),
                x_label: "seconds (idle for 3 s, purge from the gap on)".into(),
                y_label: "slowest insert_one per 100 ms (ms)".into(),
                points: window_max(idle_start, timeline, Duration::from_millis(100)),
            });
        }
        out.add(&format!("{label}_rate_limit"), rate, "deletes/s");
        out.add(&format!("{label}_purge_s"), purge_s, "s");
        for (op, idle_l, during_l) in [
            ("find", &idle.find, &during.find),
            ("insert", &idle.insert, &during.insert),
        ] {
            let (i99, d99) = (percentile(idle_l, 99.0), percentile(during_l, 99.0));
            out.add(
                &format!("{label}_{op}_idle_p50_ms"),
                percentile(idle_l, 50.0),
                "ms",
            );
            out.add(&format!("{label}_{op}_idle_p99_ms"), i99, "ms");
            out.add(
                &format!("{label}_{op}_during_p50_ms"),
                percentile(during_l, 50.0),
                "ms",
            );
            out.add(&format!("{label}_{op}_during_p99_ms"), d99, "ms");
            out.add(&format!("{label}_{op}_p99_ratio"), d99 / i99.max(1e-9), "x");
            out.add(&format!("{label}_{op}_during_samples"), during_l.len(), "");
        }
    }
    Ok(out)
}
