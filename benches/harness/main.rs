//! `ebb-bench`: the load harness.
//!
//! Starts its own `ebbd` on a temp dir (or targets `--uri`), drives it
//! through the Rust `mongodb` driver, and runs one scenario:
//!
//! - `purge`: N documents all due at one instant T; time from T until the
//!   collection is empty, the rate, ebbd's CPU time, and the same deletes
//!   done directly on RocksDB in the same run (the floor).
//! - `lag`: documents inserted at a steady rate, each due one second later;
//!   a reader polls the oldest due document: how many due documents it was
//!   returned (0 while `ttl.hide_expired` hides them; `--show-expired`
//!   measures MongoDB's behaviour), how long they stayed visible
//!   (p50/p99/max), and how many due documents were still stored.
//! - `insert`: insert_many in batches of 1,000 from C clients into a
//!   collection with a TTL index; docs/s against raw RocksDB puts.
//! - `foreground`: find-by-_id and insert_one latency while a purge runs,
//!   against the same when idle, without and with `ttl.max_deletes_per_sec`.
//! - `interleaved`: N due documents interleaved with N live ones across the
//!   `_id` range; time until the last due one is gone, against raw RocksDB
//!   point deletes of the same keys.
//! - `churn`: a steady stream in with a TTL, for minutes: lag, live set,
//!   SST bytes, RSS, TTL chunk time, and a full scan during the run
//!   against the same scan idle. With `--find-capacity`: the highest rate
//!   whose lag holds its line, against the node's insert rate.
//! - `peers`: `interleaved` and `churn` against Redis and PostgreSQL too,
//!   with ebb/peer ratios (peers not installed are skipped, and said so).
//! - `scans`: find-by-_id latency from one client, idle and while C clients
//!   scan the whole collection over and over.
//! - `access`: the cost of a new connection with SCRAM authentication and
//!   with TLS, and of TLS on the insert rate, against a plain node.
//! - `timeseries`: 100 sensors' measurements into a time-series collection:
//!   ingest rate, bytes per measurement against an ordinary collection,
//!   and how long after every bucket falls due they are all gone.
//! - `timeseries-churn`: `churn`'s stream of measurements into a
//!   time-series collection with a collection-level `expireAfterSeconds`.
//! - `aggregation`: `$group` over N documents and a `$lookup` of 100,000
//!   into 1,000 users, medians of several runs, against the same queries
//!   in PostgreSQL on the same rows.
//! - `forecast`: `expiryForecast` on a TTL index of N documents dated over
//!   the next week, against a hinted `count` of the same keys.
//! - `page`: the expiry page's render time at the server with 1,000
//!   collections, 100 TTL indexes and one TTL index of N documents.
//! - `geo`: N points with and without a `2dsphere` index: the insert rate
//!   with it against without, `$near` with a limit of 100 and `$geoWithin`
//!   of a city-sized square.
//! - `text`: N short posts with and without a text index: the insert rate
//!   with it against without, and two-term `$text` searches sorted by
//!   score with a limit of 20.
//!
//! - `watch`: a change stream on a one-member set under a stream of
//!   inserts with a TTL: delivery latency, and one delete event per
//!   expired document.
//!
//! - `txn`: on a set (`--uri`, or a one-member set it starts), groups of
//!   10 inserts as transactions against the same as `insertMany`s with
//!   `w: "majority"`, and 10 reads by `_id` in a transaction against the
//!   same reads outside one.
//!
//! Each prints a table; `--json FILE` writes the figures, `--plot FILE` an
//! SVG of documents remaining / lag over time.

mod access;
mod aggregation;
mod args;
mod capacity;
mod churn;
mod daemon;
mod floor;
mod forecast;
mod geo;
mod interleaved;
mod oldest;
mod page;
mod peers;
mod report;
mod scans;
mod scenarios;
mod status;
mod steady;
mod text;
mod timeseries;
mod ts_churn;
mod txn;
mod watch;
mod workload;

use anyhow::Result;
use clap::Parser;

use args::{Args, Scenario};
use report::Outcome;

/// Runs the scenario the command line names. The dispatch lives here, above
/// every scenario module, so the modules can share `scenarios`' helpers
/// without importing back into what imports them.
async fn run(args: &Args) -> Result<Outcome> {
    match args.scenario {
        Scenario::Purge => scenarios::purge(args).await,
        Scenario::Lag => scenarios::lag(args).await,
        Scenario::Insert => scenarios::insert(args).await,
        Scenario::Foreground => scenarios::foreground(args).await,
        Scenario::Interleaved => interleaved::run(args).await,
        Scenario::Churn if args.find_capacity => capacity::run(args).await,
        Scenario::Churn => churn::run(args).await,
        Scenario::Peers => peers::run(args).await,
        Scenario::Scans => scans::run(args).await,
        Scenario::Access => access::run(args).await,
        Scenario::Timeseries => timeseries::run(args).await,
        Scenario::TimeseriesChurn => ts_churn::run(args).await,
        Scenario::Aggregation => aggregation::run(args).await,
        Scenario::Forecast => forecast::run(args).await,
        Scenario::Page => page::run(args).await,
        Scenario::Geo => geo::run(args).await,
        Scenario::Text => text::run(args).await,
        Scenario::Watch => watch::run(args).await,
        Scenario::Txn => txn::run(args).await,
    }
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let result = runtime.block_on(run(&args))?;
    println!("{}", result.table());
    if let Some(path) = &args.json {
        std::fs::write(path, serde_json::to_string_pretty(&result.json())?)?;
    }
    if let (Some(path), Some(series)) = (&args.plot, &result.series) {
        std::fs::write(path, report::svg(series))?;
    }
    Ok(())
}
