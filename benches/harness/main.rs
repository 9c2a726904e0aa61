//! `ebb-bench`: the load harness.
//!
//! Starts its own `ebbd` on a temp dir (or targets `--uri`), drives it
//! through the Rust `mongodb` driver, and runs one scenario:
//!
//! - `purge`: N documents all due at one instant T; time from T until the
//!   collection is empty, the rate, ebbd's CPU time, and the same deletes
//!   done directly on RocksDB in the same run (the floor).
//! - `lag`: documents inserted at a steady rate, each due one second later;
//!   how long the oldest overdue document waits (p50/p99/max).
//! - `insert`: insert_many in batches of 1,000 from C clients into a
//!   collection with a TTL index; docs/s against raw RocksDB puts.
//! - `foreground`: find-by-_id and insert_one latency while a purge runs,
//!   against the same when idle, without and with `ttl.max_deletes_per_sec`.
//!
//! Each prints a table; `--json FILE` writes the figures, `--plot FILE` an
//! SVG of documents remaining / lag over time.

mod daemon;
mod floor;
mod report;
mod scenarios;
mod workload;

use std::path::PathBuf;

use clap::{Parser, ValueEnum};

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Scenario {
    Purge,
    Lag,
    Insert,
    Foreground,
}

#[derive(Parser, Debug, Clone)]
#[command(name = "ebb-bench", about = "Load harness for ebb")]
pub struct Args {
    /// Which scenario to run.
    #[arg(value_enum)]
    pub scenario: Scenario,
    /// Documents (purge, insert, foreground).
    #[arg(long, default_value_t = 1_000_000)]
    pub docs: usize,
    /// Documents that never fall due, loaded after the due ones (purge).
    /// With any, the collection cannot be expired whole in one step, so the
    /// purge runs chunk by chunk.
    #[arg(long, default_value_t = 0)]
    pub keep: usize,
    /// Insert rate in documents per second (lag).
    #[arg(long, default_value_t = 10_000)]
    pub rate: usize,
    /// Duration in seconds (lag).
    #[arg(long, default_value_t = 60)]
    pub duration: u64,
    /// Concurrent clients (insert).
    #[arg(long, default_value_t = 4)]
    pub clients: usize,
    /// TTL delete-rate limit for the paced half of `foreground`.
    #[arg(long, default_value_t = 200_000)]
    pub paced_rate: u64,
    /// Target a running node instead of starting one (no CPU/RSS figures,
    /// no restart for the paced run).
    #[arg(long)]
    pub uri: Option<String>,
    /// The ebbd binary to start (default: next to this executable).
    #[arg(long)]
    pub ebbd: Option<PathBuf>,
    /// Write machine-readable results here.
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Write an SVG plot here.
    #[arg(long)]
    pub plot: Option<PathBuf>,
}

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
