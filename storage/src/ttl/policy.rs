//! How TTL work is cut into pieces: every size the writer, the monitor and
//! the storage side use to decide one chunk, built from `config.ttl` in one
//! place ([`ExpiryPolicy::from_config`]).
//!
//! The sizes are measured choices (BENCHMARKS.md has the runs behind them).

use std::time::Duration;

/// The sizes and switches of TTL expiry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExpiryPolicy {
    /// Documents per chunk while the collection has no foreground writes:
    /// a foreground write that arrives waits at most about a millisecond
    /// behind one.
    pub chunk_docs: usize,
    /// Documents per chunk while foreground writes are active. A write
    /// queued behind a chunk waits for its commit (or, for a chunk run on
    /// the writer, all of it), so chunks stay small (`foreground` scenario:
    /// 128 and 32 cost insert p99 6x and 3.5x idle, 16 2.1x).
    pub foreground_chunk_docs: usize,
    /// How recent a foreground write must be to count as activity.
    pub foreground_window: Duration,
    /// Chunks of at least this many documents delete with range tombstones;
    /// smaller ones point by point (see `chunk`).
    pub range_delete_min_docs: usize,
    /// The largest collection (by the engine's estimate) taken whole in one
    /// step (see `whole`): counting it holds the writer.
    pub whole_collection_max_docs: u64,
    /// Deletions per second the monitor may make, 0 = unlimited. A bound
    /// also keeps whole-collection expiry off: a rate is a promise about
    /// deletions per second.
    pub max_deletes_per_sec: u64,
    /// Wake the monitor when the earliest entry falls due (false =
    /// MongoDB's fixed `ttlMonitorSleepSecs` interval).
    pub prompt: bool,
}

impl Default for ExpiryPolicy {
    fn default() -> Self {
        ExpiryPolicy {
            chunk_docs: 1024,
            foreground_chunk_docs: 16,
            foreground_window: Duration::from_millis(100),
            range_delete_min_docs: 512,
            whole_collection_max_docs: 2_000_000,
            max_deletes_per_sec: 0,
            prompt: true,
        }
    }
}

impl ExpiryPolicy {
    /// The policy `config.ttl` asks for.
    pub fn from_config(ttl: &ebb_config::Ttl) -> Self {
        ExpiryPolicy {
            max_deletes_per_sec: ttl.max_deletes_per_sec,
            prompt: ttl.prompt,
            ..ExpiryPolicy::default()
        }
    }

    /// Whether a chunk may take its whole collection at once.
    pub fn allows_whole_collection(&self) -> bool {
        self.max_deletes_per_sec == 0
    }

    /// Documents one chunk may delete, given the visit's own `limit`.
    pub fn chunk_limit(&self, limit: usize, foreground_active: bool) -> usize {
        if foreground_active {
            limit.min(self.foreground_chunk_docs)
        } else {
            limit
        }
    }
}
