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
//! - `timeseries`: 100 sensors' measurements into a time-series collection:
//!   ingest rate, bytes per measurement against an ordinary collection,
//!   and how long after every bucket falls due they are all gone.
//!
//! Each prints a table; `--json FILE` writes the figures, `--plot FILE` an
//! SVG of documents remaining / lag over time.

mod args;
mod daemon;
mod floor;
mod report;
mod scenarios;
mod timeseries;
mod workload;

use clap::Parser;

use args::Args;

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let result = runtime.block_on(scenarios::run(&args))?;
    println!("{}", result.table());
    if let Some(path) = &args.json {
        std::fs::write(path, serde_json::to_string_pretty(&result.json())?)?;
    }
    if let (Some(path), Some(series)) = (&args.plot, &result.series) {
        std::fs::write(path, report::svg(series))?;
    }
    Ok(())
}
