//! The read an expiring collection makes hardest: the oldest document by
//! its TTL index (`find().sort({at: 1}).limit(1)`), which starts where the
//! due documents and the tombstones of the expired ones are. Polled every
//! 50 ms while a stream runs, and the same read on an idle collection for
//! comparison; each answer is checked against the clock, so a due document
//! returned is counted.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::Result;
use mongodb::bson::{Document, doc};
use mongodb::{Client, Collection};

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
    uri: &str,
    coll: &Collection<Document>,
    ttl: Duration,
    stop: Arc<AtomicBool>,
) -> tokio::task::JoinHandle<Result<Probe>> {
    reader(uri, coll, move |coll| async move {
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
pub async fn idle(
    uri: &str,
    coll: &Collection<Document>,
    ttl: Duration,
    n: usize,
) -> Result<Probe> {
    reader(uri, coll, move |coll| async move {
        let mut probe = Probe::default();
        for _ in 0..n {
            let (ms, due) = read(&coll, ttl.as_millis() as i64).await?;
            probe.ms.push(ms);
            probe.due_returned += u64::from(due);
        }
        Ok(probe)
    })
    .await?
}

/// Runs `reads` as another application would: on a thread and runtime of
/// its own, through a client of its own, so the harness's inserting tasks
/// and their connection pool never delay a read (at 100k documents/s they
/// kept the harness's runtime busy enough to add milliseconds to it).
fn reader<F, Fut>(
    uri: &str,
    coll: &Collection<Document>,
    reads: F,
) -> tokio::task::JoinHandle<Result<Probe>>
where
    F: FnOnce(Collection<Document>) -> Fut + Send + 'static,
    Fut: Future<Output = Result<Probe>>,
{
    let uri = uri.to_owned();
    let ns = coll.namespace();
    tokio::task::spawn_blocking(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        runtime.block_on(async move {
            let client = Client::with_uri_str(&uri).await?;
            reads(client.database(&ns.db).collection(&ns.coll)).await
        })
    })
}
