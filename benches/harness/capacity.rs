//! `churn --find-capacity`: the node's expiry capacity, the highest churn
//! rate whose expiry lag stays within the line (p99 ≤ 100 ms, max ≤ 1 s),
//! as a fraction of the same node's insert rate measured in the same run.
//!
//! Steps of `churn`'s stream (each `--duration` seconds, default 30, TTL
//! `--ttl`, into a fresh collection once the last step's documents are all
//! gone) start at `--rate` (default 10,000 documents/s) and grow by a
//! quarter while the line holds (a step that breaks it is run once more,
//! and counts as broken only if it breaks again); from the first that breaks it, the
//! gap between the last rate that held and the first that did not is
//! halved until it is within 5 % of the rate that held. A step whose
//! clients could not send 95 % of its rate breaks the line too: the
//! harness, not the node, set the pace. The insert rate comes last:
//! `insert`'s load (`--docs` documents from `--clients` clients, batches
//! of 1,000 encoded before the clock starts) into a collection with a TTL
//! index, on the same node.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Result, bail};
use mongodb::bson::{DateTime, doc};
use serde_json::json;

use crate::args::Args;
use crate::churn::Ebb;
use crate::daemon::Target;
use crate::report::{Outcome, Series};
use crate::scenarios::{DAY_SECS, connect, index};
use crate::steady::{self, Store, Stream};
use crate::workload::{encoded_batches, load_encoded, now_ms};

/// The lag line a rate must hold for a whole step.
const P99_LINE_MS: f64 = 100.0;
const MAX_LINE_MS: f64 = 1000.0;
/// Each step after one that held, until one breaks the line.
const GROWTH: f64 = 1.25;
/// The search ends when the gap is this fraction of the rate that held.
const PRECISION: f64 = 0.05;
const MAX_STEPS: usize = 24;
/// How long the documents of a finished step may take to be gone.
const DRAIN_DEADLINE: Duration = Duration::from_secs(180);

/// One step of the search.
struct Step {
    rate: usize,
    achieved: f64,
    p99_ms: f64,
    max_ms: f64,
    held: bool,
}

pub async fn run(args: &Args) -> Result<Outcome> {
    let duration = Duration::from_secs(args.duration.unwrap_or(30));
    let ttl = Duration::from_secs(args.ttl);
    let target = Arc::new(Target::start(args.uri.as_deref(), args.ebbd.as_ref(), &[])?);
    let mut steps: Vec<Step> = Vec::new();
    let mut rate = args.rate.unwrap_or(10_000).max(1);
    for n in 0..MAX_STEPS {
        let store = Arc::new(Ebb::new(&target, &format!("capacity_{n}"), ttl).await?);
        drained(store.as_ref()).await?;
        eprintln!(
            "  step {}: {rate} docs/s for {} s",
            n + 1,
            duration.as_secs()
        );
        let stream = Stream {
            rate,
            duration,
            ttl,
            workers: args.clients,
        };
        let run = steady::drive(store.clone(), stream).await?;
        let (_, p99_ms, max_ms) = run.lag(ttl);
        let held = p99_ms <= P99_LINE_MS
            && max_ms <= MAX_LINE_MS
            && run.achieved_rate >= 0.95 * rate as f64;
        eprintln!("    lag p99 {p99_ms:.0} ms, max {max_ms:.0} ms: held {held}");
        steps.push(Step {
            rate,
            achieved: run.achieved_rate,
            p99_ms,
            max_ms,
            held,
        });
        match next_rate(&steps) {
            Some(next) => rate = next,
            None => break,
        }
        drained(store.as_ref()).await?;
    }
    let capacity = steps.iter().filter(|s| s.held).map(|s| s.rate).max();
    let insert_rate = insert_rate(&target, args.docs, args.clients).await?;

    let mut out = Outcome::new("churn --find-capacity");
    out.add("step_s", duration.as_secs(), "s");
    out.add("ttl_s", ttl.as_secs(), "s");
    out.add("steps", steps.len(), "");
    out.add("capacity_docs_per_s", capacity, "docs/s");
    out.add("insert_rate_docs_per_s", insert_rate.round(), "docs/s");
    out.add(
        "capacity_over_insert_rate",
        capacity.map(|c| c as f64 / insert_rate),
        "x",
    );
    out.timeline = Some(json!({
        "steps": steps.iter().map(|s| json!({
            "rate": s.rate, "achieved": s.achieved.round(), "lag_p99_ms": s.p99_ms,
            "lag_max_ms": s.max_ms, "held": s.held,
        })).collect::<Vec<_>>(),
    }));
    out.series = Some(Series {
        title: format!(
            "churn --find-capacity: expiry lag p99 per step ({} s, TTL {} s)",
            duration.as_secs(),
            ttl.as_secs()
        ),
        x_label: "churn rate (docs/s)".into(),
        y_label: "lag p99 (ms)".into(),
        points: steps.iter().map(|s| (s.rate as f64, s.p99_ms)).collect(),
    });
    Ok(out)
}

/// The rate of the next step, or `None` when the search is done. A step
/// that breaks the line is run again before it counts: one stall (a
/// compaction, the other process) must not end the search.
fn next_rate(steps: &[Step]) -> Option<usize> {
    let last = steps.last()?;
    let tries = steps.iter().filter(|s| s.rate == last.rate).count();
    if !last.held && tries == 1 && steps.len() < MAX_STEPS {
        return Some(last.rate);
    }
    let held = steps.iter().filter(|s| s.held).map(|s| s.rate).max();
    // A rate that broke below one that held later was noise: the search
    // goes on above the highest rate that held.
    let above = |s: &&Step| held.is_none_or(|h| s.rate > h);
    let broke = steps
        .iter()
        .filter(|s| !s.held)
        .filter(above)
        .map(|s| s.rate)
        .min();
    let next = match (held, broke) {
        (Some(h), None) => (h as f64 * GROWTH).ceil() as usize,
        (None, Some(b)) => b / 2,
        (Some(h), Some(b)) if (b - h) as f64 > PRECISION * h as f64 => h + (b - h) / 2,
        _ => return None,
    };
    (next > 0 && steps.len() < MAX_STEPS).then_some(next)
}

/// Waits until the node stores none of the documents streamed so far.
async fn drained(store: &Ebb) -> Result<()> {
    let started = Instant::now();
    loop {
        let stored = store.stored().await?;
        if stored == 0 {
            return Ok(());
        }
        if started.elapsed() > DRAIN_DEADLINE {
            bail!(
                "{stored} documents still stored {} s after the step",
                DRAIN_DEADLINE.as_secs()
            );
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The node's insert rate: `n` documents in batches of 1,000 from
/// `clients` clients, encoded before the clock starts, into a collection
/// with a TTL index whose documents never fall due during the run.
async fn insert_rate(target: &Target, n: usize, clients: usize) -> Result<f64> {
    eprintln!("  measuring the node's insert rate with {n} documents");
    let (_client, coll) = connect(target, "capacity_insert").await?;
    index(&coll, doc! { "at": 1 }, Some(DAY_SECS)).await?;
    let at = DateTime::from_millis(now_ms() + DAY_SECS * 1000);
    let batches = encoded_batches(n, at);
    let (took, _) = load_encoded(&coll, batches, clients).await?;
    Ok(n as f64 / took.as_secs_f64())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(rate: usize, held: bool) -> Step {
        Step {
            rate,
            achieved: rate as f64,
            p99_ms: 0.0,
            max_ms: 0.0,
            held,
        }
    }

    #[test]
    fn the_search_grows_then_halves_the_gap_to_five_percent() {
        let mut steps = vec![step(10_000, true)];
        assert_eq!(next_rate(&steps), Some(12_500));
        steps.push(step(12_500, false));
        assert_eq!(next_rate(&steps), Some(12_500), "once more");
        steps.push(step(12_500, false));
        assert_eq!(next_rate(&steps), Some(11_250));
        steps.push(step(11_250, true));
        assert_eq!(next_rate(&steps), Some(11_875));
        steps.push(step(11_875, true));
        assert_eq!(next_rate(&steps), Some(12_187));
        steps.push(step(12_187, true));
        // 12,500 − 12,187 = 313 ≤ 5 % of 12,187: done.
        assert_eq!(next_rate(&steps), None);
    }

    #[test]
    fn a_step_that_breaks_once_and_holds_on_its_second_try_held() {
        let steps = [step(10_000, true), step(12_500, false), step(12_500, true)];
        assert_eq!(next_rate(&steps), Some(15_625));
    }

    #[test]
    fn a_rate_that_broke_below_one_that_held_is_passed_over() {
        let steps = [
            step(10_000, false),
            step(10_000, false),
            step(5_000, true),
            step(7_500, true),
        ];
        // Between 7,500 (held) and 10,000 (broke).
        assert_eq!(next_rate(&steps), Some(8_750));
        let noisy = [step(8_000, false), step(8_000, false), step(9_000, true)];
        // Nothing broke above 9,000 yet: grow.
        assert_eq!(next_rate(&noisy), Some(11_250));
    }

    #[test]
    fn a_first_step_that_breaks_halves_the_rate() {
        let twice = |rate| [step(rate, false), step(rate, false)];
        assert_eq!(next_rate(&twice(10_000)), Some(5_000));
        assert_eq!(next_rate(&twice(1)), None);
    }
}
