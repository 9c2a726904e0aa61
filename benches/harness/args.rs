//! The harness's command line: which scenario, and its sizes and outputs.

use std::path::PathBuf;

use clap::{Parser, ValueEnum};

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Scenario {
    Purge,
    Lag,
    Insert,
    Foreground,
    Timeseries,
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
    /// Run ebbd with `ttl.hide_expired = false` (lag): readers see due
    /// documents until the monitor deletes them, as in MongoDB.
    #[arg(long)]
    pub show_expired: bool,
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
