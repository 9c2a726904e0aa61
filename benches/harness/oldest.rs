//! The read an expiring collection makes hardest: the oldest document by
//! its TTL index (`find().sort({at: 1}).limit(1)`), which starts where the
//! due documents and the tombstones of the expired ones are. Polled every
//! 50 ms while a stream runs, and the same read on an idle collection for
//! comparison; each answer is checked against the clock, so a due document
//! returned is counted.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::Result;
use mongodb::Collection;
use mongodb::bson::{Document, doc};

use crate::workload::{now_ms, percentile};

/// Latencies of the oldest-document read, in ms, and how many answers
/// held a document already due when the read began.
#[derive(Debug, Default)]
pub struct Probe {
    pub ms: Vec<f64>,
    pub due_returned: u64,
}

impl Probe {
    /// (p50, p99) of the latencies.
    pub fn p50_p99(&self) -> (f64, f64) {
        let mut sorted = self.ms.clone();
        sorted.sort_by(f64::total_cmp);
        (percentile(&sorted, 50.0), percentile(&sorted, 99.0))
    }
}

/// One read: its latency in ms, and whether it returned a document due
/// (dated more than `ttl_ms` before the read began).
async fn read(coll: &Collection<Document>, ttl_ms: i64) -> Result<(f64, bool)> {
    let began = now_ms();
    let t = Instant::now();
    let oldest = coll.find_one(doc! {}).sort(doc! { "at": 1 }).await?;
    let ms = t.elapsed().as_secs_f64() * 1000.0;
    let due = oldest
        .and_then(|d| d.get_datetime("at").ok().copied())
        .is_some_and(|at| at.timestamp_millis() + ttl_ms <= began);
    Ok((ms, due))
}

/// Polls the read every 50 ms until `stop` is set.
pub fn spawn(
    coll: Collection<Document>,
    ttl: Duration,
    stop: Arc<AtomicBool>,
) -> tokio::task::JoinHandle<Result<Probe>> {
    tokio::spawn(async move {
        let mut probe = Probe::default();
        while !stop.load(Ordering::Relaxed) {
            let (ms, due) = read(&coll, ttl.as_millis() as i64).await?;
            probe.ms.push(ms);
            probe.due_returned += u64::from(due);
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        Ok(probe)
    })
}

/// The same read `n` times in a row on `coll`.
pub async fn idle(coll: &Collection<Document>, ttl: Duration, n: usize) -> Result<Probe> {
    let mut probe = Probe::default();
    for _ in 0..n {
        let (ms, due) = read(coll, ttl.as_millis() as i64).await?;
        probe.ms.push(ms);
        probe.due_returned += u64::from(due);
    }
    Ok(probe)
}
