//! `peers`: the `interleaved` and `churn` workloads against ebb, Redis and
//! PostgreSQL on this machine in one run, then ebb/peer ratios. Each peer
//! is started here on a loopback port with a temporary data directory
//! (`server`) and driven through its own client crate (`redis`,
//! `postgres`); nothing is installed here: a peer whose server binary is
//! missing is skipped, and the report says so (`benches/install-peers.sh`
//! installs both from Debian).

pub mod postgres;
mod redis;
mod server;

use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use anyhow::Result;

use crate::args::Args;
use crate::churn::Ebb;
use crate::daemon::Target;
use crate::interleaved::Mix;
use crate::report::Outcome;
use crate::steady::{self, Run, Stream};
use crate::workload::now_ms;

use self::postgres::Postgres;
use self::redis::Redis;

pub async fn run(args: &Args) -> Result<Outcome> {
    let n = args.docs;
    let mut out = Outcome::new("peers");
    let wanted = |p: &str| args.peers.iter().any(|w| w == p);
    let missing = |out: &mut Outcome, peer: &str, binary: &str| {
        eprintln!(
            "  {peer}: {binary} is not installed; skipped (benches/install-peers.sh installs it)"
        );
        out.add(peer, format!("skipped: {binary} not installed"), "");
    };

    eprintln!("interleaved, ebb: {n} due among {} documents", 2 * n);
    let ebb = crate::interleaved::run(args).await?;
    let ebb_s = ebb.get("last_due_gone_after_s").unwrap_or(f64::NAN);
    out.add("interleaved_docs_due", n, "");
    out.add("interleaved_ebb_s", ebb_s, "s");
    out.add("interleaved_floor_s", ebb.get("floor_raw_rocksdb_s"), "s");
    let mix = Mix::new(n, now_ms() as u64);
    if wanted("redis") {
        eprintln!("interleaved, redis");
        match Redis::start().await? {
            None => missing(&mut out, "redis", "redis-server"),
            Some(r) => {
                let s = r.interleaved(&mix).await?;
                out.add("interleaved_redis_s", s, "s");
                out.add("ratio_interleaved_ebb_to_redis", ebb_s / s, "x");
            }
        }
    }
    if wanted("postgres") {
        eprintln!("interleaved, postgres");
        match Postgres::start(args.clients).await? {
            None => missing(&mut out, "postgres", "postgres"),
            Some(p) => {
                let (s, vacuum) = p.interleaved(&mix).await?;
                out.add("interleaved_postgres_s", s, "s");
                out.add("interleaved_postgres_vacuum_after_s", vacuum, "s");
                out.add("ratio_interleaved_ebb_to_postgres", ebb_s / s, "x");
            }
        }
    }
    if args.no_churn {
        return Ok(out);
    }

    let stream = Stream {
        rate: args.rate.unwrap_or(100_000),
        duration: Duration::from_secs(args.duration.unwrap_or(600)),
        ttl: Duration::from_secs(args.ttl),
        workers: args.clients,
    };
    out.add("churn_target_rate_docs_per_s", stream.rate, "docs/s");
    out.add("churn_duration_s", stream.duration.as_secs(), "s");
    out.add("churn_ttl_s", stream.ttl.as_secs(), "s");
    eprintln!("churn, ebb");
    let ebb = {
        let target = Target::start(args.uri.as_deref(), args.ebbd.as_ref(), &[])?;
        let store = Arc::new(Ebb::new(&target, "churn", stream.ttl).await?);
        steady::drive(store, stream).await?
    };
    let ebb_p99 = report_churn(&mut out, "ebb", &ebb, stream);
    if wanted("redis") {
        eprintln!("churn, redis");
        if let Some(r) = Redis::start().await? {
            let run = steady::drive(Arc::new(r), stream).await?;
            let p99 = report_churn(&mut out, "redis", &run, stream);
            out.add(
                "ratio_churn_lag_p99_ebb_to_redis",
                ebb_p99 / p99.max(1e-9),
                "x",
            );
            out.add(
                "ratio_churn_rate_ebb_to_redis",
                ebb.achieved_rate / run.achieved_rate,
                "x",
            );
        }
    }
    if wanted("postgres") {
        eprintln!("churn, postgres");
        if let Some(p) = Postgres::start(args.clients).await? {
            let p = Arc::new(p);
            let stop = Arc::new(AtomicBool::new(false));
            let job = p.start_job(stop.clone());
            let run = steady::drive(p, stream).await;
            stop.store(true, std::sync::atomic::Ordering::SeqCst);
            job.await??;
            let run = run?;
            let p99 = report_churn(&mut out, "postgres", &run, stream);
            out.add(
                "ratio_churn_lag_p99_ebb_to_postgres",
                ebb_p99 / p99.max(1e-9),
                "x",
            );
            out.add(
                "ratio_churn_rate_ebb_to_postgres",
                ebb.achieved_rate / run.achieved_rate,
                "x",
            );
        }
    }
    Ok(out)
}

/// Adds one store's churn figures; returns its lag p99.
fn report_churn(out: &mut Outcome, name: &str, run: &Run, stream: Stream) -> f64 {
    let (p50, p99, max) = run.lag(stream.ttl);
    let (_, live, _) = run.live_set(stream.ttl, Duration::from_secs(2));
    out.add(
        &format!("churn_{name}_rate_docs_per_s"),
        run.achieved_rate.round(),
        "docs/s",
    );
    out.add(&format!("churn_{name}_lag_p50_ms"), p50, "ms");
    out.add(&format!("churn_{name}_lag_p99_ms"), p99, "ms");
    out.add(&format!("churn_{name}_lag_max_ms"), max, "ms");
    out.add(
        &format!("churn_{name}_live_over_expected"),
        live / (run.achieved_rate * stream.ttl.as_secs_f64()).max(1.0),
        "x",
    );
    p99
}
