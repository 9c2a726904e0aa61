//! `watch`: change streams under a stream of writes, on a one-member set
//! the harness starts (or the set `--uri` names). A writer inserts R
//! documents/s (default 10,000) for a duration (default 30 s), each dated
//! when issued, into a collection with a TTL of T (default 10 s); a watcher
//! (the driver's `watch()`) receives the events. Reported: the delivery
//! latency of insert events (receipt − the event's `wallTime`, the
//! primary's clock when it took the write; one machine, one clock), and,
//! once everything inserted has expired, whether the watcher received
//! exactly one delete event per inserted document (missing and duplicated
//! ids counted against the inserted ones).

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Result, bail};
use mongodb::bson::{DateTime, Document, doc};
use mongodb::change_stream::event::OperationType;

use crate::args::Args;
use crate::daemon::Target;
use crate::report::Outcome;
use crate::scenarios::index;
use crate::workload::{PAYLOAD, now_ms, percentile};

pub async fn run(args: &Args) -> Result<Outcome> {
    let rate = args.rate.unwrap_or(10_000);
    let duration = Duration::from_secs(args.duration.unwrap_or(30));
    let ttl = args.ttl;
    let target = match &args.uri {
        Some(uri) => Target::start(Some(uri), None, &[])?,
        None => Target::one_member_set(args.ebbd.as_ref()).await?,
    };
    let client = mongodb::Client::with_uri_str(&target.uri).await?;
    let coll = client.database("bench").collection::<Document>("watch");
    coll.drop().await?;
    index(&coll, doc! { "at": 1 }, Some(ttl as i64)).await?;
    let mut stream = coll.watch().await?;
    let done = Arc::new(AtomicBool::new(false));
    let inserted = Arc::new(AtomicI64::new(0));
    let writer = {
        let (coll, done, inserted) = (coll.clone(), done.clone(), inserted.clone());
        tokio::spawn(async move {
            let tick = Duration::from_millis(10);
            let per_tick = (rate / 100).max(1);
            let mut next_id = 0i64;
            let start = Instant::now();
            let mut ticker = tokio::time::interval(tick);
            ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Burst);
            while start.elapsed() < duration {
                ticker.tick().await;
                let at = DateTime::now();
                let docs: Vec<Document> = (0..per_tick)
                    .map(|_| {
                        next_id += 1;
                        doc! { "_id": next_id, "at": at, "p": PAYLOAD }
                    })
                    .collect();
                coll.insert_many(docs).await?;
                inserted.store(next_id, Ordering::Relaxed);
            }
            done.store(true, Ordering::Relaxed);
            anyhow::Ok(next_id)
        })
    };
    let mut latencies = Vec::new();
    let mut deletes: HashMap<i64, u32> = HashMap::new();
    let mut others = 0u64;
    let mut last_expiry = None;
    loop {
        let total = inserted.load(Ordering::Relaxed);
        let all_deleted = done.load(Ordering::Relaxed) && deletes.len() as i64 >= total;
        if all_deleted {
            break;
        }
        // Everything inserted is due T after the writer stops; the monitor
        // gets a minute past that.
        if done.load(Ordering::Relaxed) {
            let deadline = *last_expiry.get_or_insert_with(|| {
                Instant::now() + Duration::from_secs(ttl) + Duration::from_secs(60)
            });
            if Instant::now() > deadline {
                break;
            }
        }
        let Some(event) = stream.next_if_any().await? else {
            continue;
        };
        let id = event
            .document_key
            .as_ref()
            .and_then(|k| k.get_i64("_id").ok());
        match (&event.operation_type, id) {
            (OperationType::Insert, Some(_)) => {
                if let Some(wall) = event.wall_time {
                    latencies.push((now_ms() - wall.timestamp_millis()) as f64);
                }
            }
            (OperationType::Delete, Some(id)) => *deletes.entry(id).or_default() += 1,
            _ => others += 1,
        }
    }
    let total = writer.await??;
    if latencies.is_empty() {
        bail!("the watcher received no insert event");
    }
    latencies.sort_by(f64::total_cmp);
    let missing = (1..=total).filter(|id| !deletes.contains_key(id)).count();
    let twice = deletes.values().filter(|n| **n > 1).count();
    let mut out = Outcome::new("watch");
    out.add("rate_target", rate as f64, "docs/s");
    out.add(
        "rate_achieved",
        total as f64 / duration.as_secs_f64(),
        "docs/s",
    );
    out.add("inserted", total as f64, "docs");
    out.add("insert_events", latencies.len() as f64, "events");
    out.add("delivery_p50_ms", percentile(&latencies, 50.0), "ms");
    out.add("delivery_p99_ms", percentile(&latencies, 99.0), "ms");
    out.add(
        "delivery_max_ms",
        latencies.last().copied().unwrap_or_default(),
        "ms",
    );
    out.add(
        "delete_events",
        deletes.values().sum::<u32>() as f64,
        "events",
    );
    out.add("expired_without_event", missing as f64, "docs");
    out.add("expired_with_two_events", twice as f64, "docs");
    out.add("other_events", others as f64, "events");
    Ok(out)
}
