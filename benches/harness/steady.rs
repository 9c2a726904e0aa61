//! A steady stream in and a steady stream expiring, against any store:
//! documents issued every 10 ms at a fixed rate, each due a fixed time
//! after it is issued, inserted by a few concurrent workers, while a
//! sampler reads how many documents the store holds and turns that into
//! expiry lag. Used by `churn` (ebb) and `peers` (Redis, PostgreSQL), so
//! all three are driven and measured the same way.
//!
//! Lag without reading the store's clock: the harness knows how many
//! documents it issued due by each instant (the timeline), and the store
//! says how many it holds. Stored minus issued-not-yet-due is the backlog
//! of due documents; deleting in due order (all three do), the oldest of
//! them is the backlog-th from the newest due one, whose due time the
//! timeline gives. Inserts still in flight count as issued but not stored,
//! so the backlog is underestimated by at most one tick per worker.

use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Result;
use tokio::sync::mpsc;

use crate::workload::{now_ms, percentile};

/// A store under a steady stream.
pub trait Store: Send + Sync + 'static {
    /// Inserts `n` documents numbered from `first`, each due at `due_ms`,
    /// on the connection of `worker`.
    fn insert(
        &self,
        worker: usize,
        first: u64,
        n: usize,
        due_ms: i64,
    ) -> impl Future<Output = Result<()>> + Send;
    /// Documents stored now, due or not.
    fn stored(&self) -> impl Future<Output = Result<u64>> + Send;
    /// When documents issued due at `due_ms` are due for this store: later
    /// where the store expires them in groups (time-series buckets).
    fn due(&self, due_ms: i64) -> i64 {
        due_ms
    }
}

/// How long sampling goes on past the last due time while a backlog
/// drains.
pub const DRAIN_LIMIT: Duration = Duration::from_secs(600);

/// The stream's shape.
#[derive(Debug, Clone, Copy)]
pub struct Stream {
    pub rate: usize,
    pub duration: Duration,
    pub ttl: Duration,
    pub workers: usize,
}

/// Documents issued, tick by tick: (due time, documents issued up to and
/// including this tick). Appended in due order by the one producer.
#[derive(Default)]
struct Timeline(Mutex<Vec<(i64, u64)>>);

impl Timeline {
    fn push(&self, due_ms: i64, n: u64) {
        let mut ticks = self.0.lock().expect("timeline lock");
        let before = ticks.last().map_or(0, |t| t.1);
        ticks.push((due_ms, before + n));
    }

    /// (documents issued due by `now`, documents issued in all).
    fn issued(&self, now: i64) -> (u64, u64) {
        let ticks = self.0.lock().expect("timeline lock");
        let k = ticks.partition_point(|t| t.0 <= now);
        let due = if k == 0 { 0 } else { ticks[k - 1].1 };
        (due, ticks.last().map_or(0, |t| t.1))
    }

    /// How long the oldest of `backlog` stored due documents has been due
    /// at `now`, in ms.
    fn lag(&self, now: i64, backlog: u64) -> f64 {
        if backlog == 0 {
            return 0.0;
        }
        let ticks = self.0.lock().expect("timeline lock");
        let k = ticks.partition_point(|t| t.0 <= now);
        let due = if k == 0 { 0 } else { ticks[k - 1].1 };
        let oldest = due.saturating_sub(backlog);
        let j = ticks
            .partition_point(|t| t.1 <= oldest)
            .min(k.saturating_sub(1));
        ticks.get(j).map_or(0.0, |t| (now - t.0).max(0) as f64)
    }
}

/// One sample of the sampler: seconds since the stream started, lag of
/// the oldest stored due document (ms), the backlog, documents stored.
#[derive(Debug, Clone, Copy)]
pub struct Sample {
    pub at_s: f64,
    pub lag_ms: f64,
    pub backlog: u64,
    pub stored: u64,
}

/// What one stream run measured.
pub struct Run {
    pub achieved_rate: f64,
    pub inserted: u64,
    pub samples: Vec<Sample>,
    /// When the inserts stopped, seconds after the start.
    pub stopped_at_s: f64,
}

impl Run {
    /// Lag percentiles (p50, p99, max) over samples taken after the first
    /// documents fell due, until a second after the last did (not while a
    /// backlog left then drains).
    pub fn lag(&self, ttl: Duration) -> (f64, f64, f64) {
        let until = self.stopped_at_s + ttl.as_secs_f64() + 1.0;
        let mut lags: Vec<f64> = self
            .samples
            .iter()
            .filter(|s| s.at_s >= ttl.as_secs_f64() && s.at_s <= until)
            .map(|s| s.lag_ms)
            .collect();
        lags.sort_by(f64::total_cmp);
        (
            percentile(&lags, 50.0),
            percentile(&lags, 99.0),
            lags.last().copied().unwrap_or_default(),
        )
    }

    /// How fast a backlog left when the inserts stopped went: documents
    /// deleted per second from the stop until no due document was stored,
    /// and that time in seconds. `None` when less than a second of the
    /// stream was due and stored at the stop (nothing worth timing), or
    /// when the backlog had not drained by the end of sampling.
    pub fn drain(&self) -> Option<(f64, f64)> {
        let stop = self.samples.iter().find(|s| s.at_s >= self.stopped_at_s)?;
        if (stop.backlog as f64) < self.achieved_rate {
            return None;
        }
        let empty = self
            .samples
            .iter()
            .find(|s| s.at_s > stop.at_s && s.backlog == 0)?;
        let secs = empty.at_s - stop.at_s;
        Some((stop.stored.saturating_sub(empty.stored) as f64 / secs, secs))
    }

    /// The largest backlog of stored due documents seen.
    pub fn backlog_max(&self) -> u64 {
        self.samples.iter().map(|s| s.backlog).max().unwrap_or(0)
    }

    /// Lag p50/p99/max and median stored documents per `window`, at the
    /// window's start: (seconds, p50, p99, max, stored).
    pub fn windows(&self, window: Duration) -> Vec<(f64, f64, f64, f64, f64)> {
        let w = window.as_secs_f64();
        let mut out = Vec::new();
        let mut i = 0;
        while i < self.samples.len() {
            let start = (self.samples[i].at_s / w).floor() * w;
            let mut lags = Vec::new();
            let mut stored = Vec::new();
            while i < self.samples.len() && self.samples[i].at_s < start + w {
                lags.push(self.samples[i].lag_ms);
                stored.push(self.samples[i].stored as f64);
                i += 1;
            }
            lags.sort_by(f64::total_cmp);
            stored.sort_by(f64::total_cmp);
            out.push((
                start,
                percentile(&lags, 50.0),
                percentile(&lags, 99.0),
                lags.last().copied().unwrap_or_default(),
                percentile(&stored, 50.0),
            ));
        }
        out
    }

    /// Documents stored while inserting, after the first ones fell due plus
    /// `settle`: (min, median, max).
    pub fn live_set(&self, ttl: Duration, settle: Duration) -> (f64, f64, f64) {
        let from = (ttl + settle).as_secs_f64();
        let mut stored: Vec<f64> = self
            .samples
            .iter()
            .filter(|s| s.at_s >= from && s.at_s <= self.stopped_at_s)
            .map(|s| s.stored as f64)
            .collect();
        stored.sort_by(f64::total_cmp);
        (
            stored.first().copied().unwrap_or_default(),
            percentile(&stored, 50.0),
            stored.last().copied().unwrap_or_default(),
        )
    }
}

/// Runs the stream against `store`, sampling every 10 ms until a second
/// after the last document fell due, and on while a backlog drains (at
/// most [`DRAIN_LIMIT`] more).
pub async fn drive<S: Store>(store: Arc<S>, stream: Stream) -> Result<Run> {
    let per_tick = (stream.rate / 100).max(1);
    let ttl_ms = stream.ttl.as_millis() as i64;
    let timeline = Arc::new(Timeline::default());
    let acked = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let started = Instant::now();
    let (tx, rx) = mpsc::channel::<(u64, usize, i64)>(4 * stream.workers.max(1));
    let rx = Arc::new(tokio::sync::Mutex::new(rx));
    let mut workers = Vec::new();
    for w in 0..stream.workers.max(1) {
        let (store, rx, acked) = (store.clone(), rx.clone(), acked.clone());
        workers.push(tokio::spawn(async move {
            loop {
                let job = rx.lock().await.recv().await;
                let Some((first, n, due)) = job else {
                    return anyhow::Ok(());
                };
                store.insert(w, first, n, due).await?;
                acked.fetch_add(n as u64, Ordering::SeqCst);
            }
        }));
    }
    let producer = {
        let (timeline, stop, store) = (timeline.clone(), stop.clone(), store.clone());
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_millis(10));
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Burst);
            let mut next = 0u64;
            while started.elapsed() < stream.duration {
                tick.tick().await;
                let due = now_ms() + ttl_ms;
                timeline.push(store.due(due), per_tick as u64);
                if tx.send((next, per_tick, due)).await.is_err() {
                    break;
                }
                next += per_tick as u64;
            }
            stop.store(true, Ordering::SeqCst);
            started.elapsed()
        })
    };
    let progress = {
        let acked = acked.clone();
        let total = stream.rate as u64 * stream.duration.as_secs();
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(Duration::from_secs(1)).await;
                eprintln!(
                    "  {:>4} s: inserted {}/{total}",
                    started.elapsed().as_secs(),
                    acked.load(Ordering::SeqCst)
                );
            }
        })
    };
    let mut samples = Vec::new();
    let mut tick = tokio::time::interval(Duration::from_millis(10));
    let mut until = None;
    loop {
        tick.tick().await;
        let now = now_ms();
        let stored = store.stored().await?;
        let (due, issued) = timeline.issued(now);
        let backlog = stored.saturating_sub(issued - due);
        samples.push(Sample {
            at_s: started.elapsed().as_secs_f64(),
            lag_ms: timeline.lag(now, backlog),
            backlog,
            stored,
        });
        if stop.load(Ordering::SeqCst) && until.is_none() {
            until = Some(Instant::now() + stream.ttl + Duration::from_secs(1));
        }
        if until.is_some_and(|u| {
            let now = Instant::now();
            now > u && (backlog == 0 || now > u + DRAIN_LIMIT)
        }) {
            break;
        }
    }
    let writing = producer.await?;
    for w in workers {
        w.await??;
    }
    progress.abort();
    let inserted = acked.load(Ordering::SeqCst);
    Ok(Run {
        achieved_rate: inserted as f64 / writing.as_secs_f64(),
        inserted,
        samples,
        stopped_at_s: writing.as_secs_f64(),
    })
}

#[cfg(test)]
mod tests {
    use super::{Run, Sample, Timeline};

    fn sample(at_s: f64, backlog: u64, stored: u64) -> Sample {
        Sample {
            at_s,
            lag_ms: 0.0,
            backlog,
            stored,
        }
    }

    #[test]
    fn drain_is_the_rate_from_the_stop_until_nothing_due_is_stored() {
        let run = |samples| Run {
            achieved_rate: 1000.0,
            inserted: 0,
            samples,
            stopped_at_s: 10.0,
        };
        // 5,000 due at the stop, 9,000 stored; none due and 1,000 stored
        // two seconds later: 4,000 documents/s.
        let backlog = run(vec![
            sample(9.0, 4000, 8000),
            sample(10.0, 5000, 9000),
            sample(11.0, 2000, 5000),
            sample(12.0, 0, 1000),
            sample(13.0, 0, 0),
        ]);
        assert_eq!(backlog.drain(), Some((4000.0, 2.0)));
        // Less than a second of the stream due at the stop: nothing to time.
        let small = run(vec![sample(10.0, 999, 3000), sample(10.5, 0, 2000)]);
        assert_eq!(small.drain(), None);
        // Still a backlog when sampling ended.
        let left = run(vec![sample(10.0, 5000, 9000), sample(11.0, 10, 10)]);
        assert_eq!(left.drain(), None);
    }

    #[test]
    fn lag_is_the_age_of_the_oldest_stored_due_document() {
        let t = Timeline::default();
        for due in [100, 110, 120, 130] {
            t.push(due, 10);
        }
        // At 125, 30 documents are due (ticks 100, 110, 120).
        assert_eq!(t.issued(125), (30, 40));
        assert_eq!(t.lag(125, 0), 0.0);
        // 5 still stored: all from the tick due at 120.
        assert_eq!(t.lag(125, 5), 5.0);
        // 15 stored: the oldest is from the tick due at 110.
        assert_eq!(t.lag(125, 15), 15.0);
        // More than were ever due: the oldest tick.
        assert_eq!(t.lag(125, 99), 25.0);
    }
}
