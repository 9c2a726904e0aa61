//! The harness's command line: which scenario, and its sizes and outputs.

use std::path::PathBuf;

use clap::{Parser, ValueEnum};

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Scenario {
    Purge,
    Lag,
    Insert,
    Foreground,
    Interleaved,
    Churn,
    Peers,
    Scans,
    Access,
    Timeseries,
    TimeseriesChurn,
    Aggregation,
    Forecast,
    Geo,
    Text,
    Page,
    Watch,
    Txn,
}

#[derive(Parser, Debug, Clone)]
#[command(name = "ebb-bench", about = "Load harness for ebb")]
pub struct Args {
    /// Which scenario to run.
    #[arg(value_enum)]
    pub scenario: Scenario,
    /// Documents (purge, insert, foreground); due documents, and as many
    /// live ones (interleaved, peers).
    #[arg(long, default_value_t = 1_000_000)]
    pub docs: usize,
    /// Documents that never fall due, loaded after the due ones (purge).
    /// With any, the collection cannot be expired whole in one step, so the
    /// purge runs chunk by chunk.
    #[arg(long, default_value_t = 0)]
    pub keep: usize,
    /// Insert rate in documents per second (lag: 10,000; churn, peers:
    /// 100,000; timeseries-churn: 500,000 measurements).
    #[arg(long)]
    pub rate: Option<usize>,
    /// Duration in seconds (lag: 60; churn, peers, timeseries-churn: 600).
    #[arg(long)]
    pub duration: Option<u64>,
    /// Time to live of each document in seconds (churn, peers,
    /// timeseries-churn: the collection's `expireAfterSeconds`).
    #[arg(long, default_value_t = 10)]
    pub ttl: u64,
    /// Concurrent clients (insert, churn, peers, timeseries; scans: the
    /// scanning clients).
    #[arg(long, default_value_t = 4)]
    pub clients: usize,
    /// Run ebbd with `ttl.hide_expired = false` (lag, churn): readers see due
    /// documents until the monitor deletes them, as in MongoDB.
    #[arg(long)]
    pub show_expired: bool,
    /// Run ebbd with this `ttl.overload` (churn): `backlog` (ebbd's
    /// default) or `throttle`.
    #[arg(long)]
    pub overload: Option<String>,
    /// TTL delete-rate limit for the paced half of `foreground`.
    #[arg(long, default_value_t = 200_000)]
    pub paced_rate: u64,
    /// Target a running node instead of starting one (no CPU/RSS figures,
    /// no restart for the paced run).
    #[arg(long)]
    pub uri: Option<String>,
    /// Measure churn's expiry lag on this member (a secondary of the set
    /// `--uri` names, with `directConnection=true`): the documents it
    /// deleted applying the primary's TTL chunks, against those the
    /// primary stored.
    #[arg(long)]
    pub lag_on: Option<String>,
    /// The ebbd binary to start (default: next to this executable).
    #[arg(long)]
    pub ebbd: Option<PathBuf>,
    /// Which peers to run (peers); a peer whose server binary is missing
    /// is skipped and the report says so (`benches/install-peers.sh`).
    #[arg(long, value_delimiter = ',', default_value = "redis,postgres")]
    pub peers: Vec<String>,
    /// Find the node's expiry capacity (churn): the highest rate whose lag
    /// holds p99 ≤ 100 ms and max ≤ 1 s for a step of `--duration` seconds
    /// (default 30), against the node's insert rate in the same run.
    #[arg(long)]
    pub find_capacity: bool,
    /// Skip the churn half of `peers` (interleaved only).
    #[arg(long)]
    pub no_churn: bool,
    /// Run `interleaved` twice, each on a fresh node: as it is, then with
    /// its TTL index archiving what it expires (`archiveTo`), and report
    /// the archiving run's expiry time against the plain one's.
    #[arg(long)]
    pub archive: bool,
    /// New clients opened one after another (access).
    #[arg(long, default_value_t = 200)]
    pub connections: usize,
    /// Timed runs of each query; the median is reported (aggregation).
    #[arg(long, default_value_t = 5)]
    pub runs: usize,
    /// Write machine-readable results here.
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Write an SVG plot here.
    #[arg(long)]
    pub plot: Option<PathBuf>,
}
