//! How TTL work is cut into pieces: every size the writer, the monitor and
//! the storage side use to decide one chunk, built from `config.ttl` in one
//! place ([`ExpiryPolicy::from_config`]).
//!
//! The sizes are measured choices (BENCHMARKS.md has the runs behind them).

use std::time::Duration;

/// The sizes and switches of TTL expiry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExpiryPolicy {
    /// Documents in the first chunk after foreground writes stop: a write
    /// that arrives soon after waits at most about a millisecond behind it.
    pub chunk_docs: usize,
    /// The most documents a chunk grows to while no foreground write
    /// comes: each chunk in a row without one doubles the next, from
    /// [`chunk_docs`](Self::chunk_docs). A chunk deletes its records in key
    /// order, and the wider the sorted run, the less each memtable insert
    /// searches: deleting 1 M scattered keys of 2 M straight on RocksDB
    /// took 0.91 us a key in sorted batches of 8,192, 0.55 us in batches of
    /// 32,768 (BENCHMARKS.md). `interleaved` went in 1.4 s at 8,192 against
    /// 2.0 s at 1,024, and 32,768 pays once the next chunk is planned
    /// across visits too. A write that arrives during one waits for its
    /// commit, about 20 ms, once: chunks start small again after it.
    pub quiet_chunk_max_docs: usize,
    /// Documents per chunk while foreground writes are active, at first
    /// and whenever a chunk holds the writer too long. A write queued
    /// behind a chunk waits for its commit (or, for a chunk run on the
    /// writer, all of it), so chunks start small (`foreground` scenario,
    /// fixed sizes: 128 and 32 cost insert p99 6x and 3.5x idle, 16 2.1x).
    pub foreground_chunk_docs: usize,
    /// The most documents a chunk may grow to while foreground writes are
    /// active and expiry is behind (see [`ForegroundChunks`]). At 512,
    /// chunks at `churn` 150k/s stayed at the cap, each 5 ms on the writer
    /// against write groups that held it longer, and the backlog grew
    /// without end (lag p99 11 s); with the cap at 4,096 they reached it
    /// within a write group's time (lag p99 0.76 s), at 16,384 they settle
    /// below it (BENCHMARKS.md, "churn"). Chunks never grow under a
    /// deletion-rate limit: an operator who set one chose foreground
    /// latency over expiry speed.
    pub foreground_chunk_max_docs: usize,
    /// How long a chunk may hold the writer while foreground writes are
    /// active: chunks grow while they take less than half of it and
    /// shrink when they take more (`foreground` and `churn` scenarios:
    /// 250 µs let chunks reach ~130 documents and cost insert p99 about
    /// 1.9x idle; 100 µs, ~30 documents, 1.5x; BENCHMARKS.md). Longer
    /// while the writer's write groups take longer ([`ForegroundChunks`]).
    pub foreground_hold_budget: Duration,
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
    /// `ttl.overload = "throttle"`: a collection's writes wait behind its
    /// TTL chunks while its expiry is late (see [`ForegroundChunks::throttled`]).
    pub throttle: bool,
    /// Queued index entries of expired documents that make the writer
    /// sweep at once (`sweep`): 50,000 per sorted batch kept most of the
    /// gain of never deleting them at `churn` 100k/s (BENCHMARKS.md).
    pub sweep_entries: usize,
    /// The longest a queued entry waits for the sweep (`ttl.sweep_after`).
    pub sweep_after: Duration,
    /// Entries one turn of the sweep deletes (`sweep::sweep_step`), and
    /// about how many one turn reads from the queue and sorts before the
    /// deleting begins: 256 and 512 hold the writer about as long as a
    /// chunk under foreground writes (~120 µs). The whole queue read in
    /// one turn held it 6-10 ms and slices of 1,024 entries 250 µs, and the
    /// writes queued behind them set insert p99 during a purge
    /// (`foreground` scenario, BENCHMARKS.md, "The sweep").
    pub sweep_slice: usize,
    /// Queued entries one reading turn of the sweep takes (see above).
    pub sweep_read: usize,
    /// The most entries the sweep queue may hold: past it, chunks delete
    /// every entry and record themselves instead of queueing them, so the
    /// record keys held for the queue stay bounded however far expiry
    /// falls behind (1.47 M were held under overloaded churn before the
    /// sweep's turns grew with the chunks). Room for a purge of a million
    /// scattered documents (a record and an entry each): at 250,000,
    /// `interleaved` deleted most entries point by point.
    pub sweep_max_entries: usize,
    /// The most entries a chunk writes into one queue item: a reading
    /// turn takes whole items, so a chunk's entries are split into items
    /// of this many, which holds a turn to what a chunk of 8,192 documents
    /// gave it before chunks grew to 32,768. Much smaller items would make
    /// thousands of groups for the deleting turns to merge.
    pub sweep_item_entries: usize,
}

impl Default for ExpiryPolicy {
    fn default() -> Self {
        ExpiryPolicy {
            chunk_docs: 1024,
            quiet_chunk_max_docs: 32_768,
            foreground_chunk_docs: 16,
            foreground_chunk_max_docs: 16_384,
            foreground_hold_budget: Duration::from_micros(100),
            foreground_window: Duration::from_millis(100),
            range_delete_min_docs: 512,
            whole_collection_max_docs: 2_000_000,
            max_deletes_per_sec: 0,
            prompt: true,
            throttle: false,
            sweep_entries: 50_000,
            sweep_after: Duration::from_secs(2),
            sweep_slice: 256,
            sweep_read: 512,
            sweep_item_entries: 8192,
            sweep_max_entries: 2_000_000,
        }
    }
}

impl ExpiryPolicy {
    /// The policy `config.ttl` asks for.
    pub fn from_config(ttl: &ebb_config::Ttl) -> Self {
        ExpiryPolicy {
            max_deletes_per_sec: ttl.max_deletes_per_sec,
            prompt: ttl.prompt,
            sweep_after: ttl.sweep_after,
            throttle: ttl.overload == ebb_config::Overload::Throttle,
            ..ExpiryPolicy::default()
        }
    }

    /// Whether a chunk may take its whole collection at once.
    pub fn allows_whole_collection(&self) -> bool {
        self.max_deletes_per_sec == 0
    }

    /// Whether chunks leave plain index entries to the sweep. Not under a
    /// deletion-rate limit: a rate is asked for to spare the foreground,
    /// and in the paced `foreground` scenario the sweep's extra work on
    /// the writer raised insert p99 from 1.57x to 2.4x idle at the median
    /// (BENCHMARKS.md, "The sweep"), while a bounded rate gains little from
    /// cheaper chunks.
    pub fn defers_index_deletes(&self) -> bool {
        self.max_deletes_per_sec == 0
    }
}

/// The size of chunks while foreground writes are active, one per
/// collection writer. Fixed small chunks cap expiry under a steady stream
/// of writes at a few tens of thousands of documents a second (each chunk
/// is a round trip through the monitor, the planning thread and the
/// writer); a writer that is behind sizes each chunk so that applying it
/// holds the writer about as long as its budget.
///
/// The budget is the policy's, or the time the writer's recent write
/// groups held it, whichever is longer. Chunks and write groups take turns
/// on the writer, so a chunk held to the policy's budget while each group
/// takes longer deletes fewer documents per turn than the group inserts,
/// and under a heavy stream expiry falls behind for good. A write that
/// arrives during a chunk so long waits no longer than it would behind
/// the group before it, while writes that come alone (short groups) keep
/// the policy's budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ForegroundChunks {
    docs: usize,
    /// Recent write groups' time on the writer (a moving average).
    group_held: Duration,
    /// The size of the next chunk while no foreground write is active
    /// (see [`ExpiryPolicy::quiet_chunk_max_docs`]).
    quiet_docs: usize,
    /// The size the last chunk ran at, by whichever rule applied.
    last_docs: usize,
}

impl ForegroundChunks {
    pub fn new(policy: &ExpiryPolicy) -> Self {
        ForegroundChunks {
            docs: policy.foreground_chunk_docs,
            group_held: Duration::ZERO,
            quiet_docs: policy.chunk_docs,
            last_docs: policy.foreground_chunk_docs,
        }
    }

    /// The policy for one turn of the sweep: a turn that alternates with
    /// chunks deletes at least as many entries as the last chunk could
    /// queue, so the sweep keeps up with expiry however large chunks grow
    /// (at the policy's slices of 256 under chunks of thousands, the queue,
    /// and the record keys held for it, grew without bound).
    pub fn sweep_turn(&self, policy: &ExpiryPolicy) -> ExpiryPolicy {
        // A document may queue its record and an entry of each deferred
        // index: two per document covers the common shape (one secondary
        // index), and the queue's bound covers the rest.
        let slice = policy.sweep_slice.max(2 * self.last_docs);
        ExpiryPolicy {
            sweep_slice: slice,
            sweep_read: policy.sweep_read.max(2 * slice),
            ..*policy
        }
    }

    /// Learns how long a group of foreground writes held the writer.
    pub fn group_done(&mut self, policy: &ExpiryPolicy, held: Duration) {
        // Each group counts for a quarter: one long group (a bulk insert)
        // lifts the budget for a few turns, not for good.
        self.group_held = (self.group_held * 3 + held) / 4;
        self.quiet_docs = policy.chunk_docs;
    }

    /// How long the next chunk may hold the writer.
    pub fn budget(&self, policy: &ExpiryPolicy) -> Duration {
        policy.foreground_hold_budget.max(self.group_held)
    }

    /// Documents one chunk may delete, given the visit's own `limit`.
    pub fn limit(&self, limit: usize, foreground_active: bool) -> usize {
        match foreground_active {
            true => limit.min(self.docs),
            false => limit.min(self.quiet_docs),
        }
    }

    /// A chunk ran with no foreground write active: the next may be twice
    /// as large.
    pub fn quiet_done(&mut self, policy: &ExpiryPolicy) {
        // No stream to keep up with: the sweep takes the policy's small
        // turns and catches up after the purge (turns as large as quiet
        // chunks made `interleaved` 3x slower).
        self.last_docs = 0;
        self.quiet_docs = self.next_quiet(policy);
    }

    /// Documents the chunk after the running one may delete if that one
    /// runs with no foreground write active ([`quiet_done`](Self::quiet_done)
    /// follows it), given the visit's `limit` for it.
    pub fn next_quiet_limit(&self, policy: &ExpiryPolicy, limit: usize) -> usize {
        limit.min(self.next_quiet(policy))
    }

    fn next_quiet(&self, policy: &ExpiryPolicy) -> usize {
        let max = policy.quiet_chunk_max_docs.max(policy.chunk_docs);
        (self.quiet_docs * 2).min(max)
    }

    /// Learns from a chunk sent to throttle its collection's writes (its
    /// expiry late under `ttl.overload = "throttle"`): while due documents
    /// remain beyond it, the next is twice as large, however long it held
    /// the writer. Writes and chunks take turns on the writer, so the
    /// writes slow down until each turn of theirs brings no more documents
    /// than a chunk deletes, and the lag stops growing.
    pub fn throttled(&mut self, policy: &ExpiryPolicy, more: bool) {
        self.quiet_docs = policy.chunk_docs;
        self.last_docs = self.docs;
        if more {
            self.docs = (self.docs * 2).min(policy.foreground_chunk_max_docs);
        }
    }

    /// Learns from a chunk that held the writer for `held` while
    /// foreground writes were active: `more` says it stopped at its limit
    /// with due documents left, i.e. expiry is behind.
    ///
    /// The next size is this one scaled by budget / held, at most halved or
    /// doubled per chunk, so a chunk behind the stream settles where it
    /// holds the writer about as long as a write group does: expiry and the
    /// writes it must keep up with share the writer evenly.
    pub fn record(&mut self, policy: &ExpiryPolicy, more: bool, held: Duration) {
        self.quiet_docs = policy.chunk_docs;
        self.last_docs = self.docs;
        let budget = self.budget(policy);
        let grow = more && policy.max_deletes_per_sec == 0;
        if held <= budget && !grow {
            return;
        }
        let scale = budget.as_secs_f64() / held.as_secs_f64().max(1e-9);
        let docs = (self.docs as f64 * scale.clamp(0.5, 2.0)) as usize;
        self.docs = docs.clamp(
            policy.foreground_chunk_docs,
            policy.foreground_chunk_max_docs,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FAST: Duration = Duration::from_micros(20);
    const SLOW: Duration = Duration::from_millis(2);

    #[test]
    fn chunks_grow_while_behind_and_cheap_up_to_the_cap() {
        let policy = ExpiryPolicy::default();
        let mut c = ForegroundChunks::new(&policy);
        assert_eq!(c.limit(1024, true), 16);
        assert_eq!(
            c.limit(8192, false),
            1024,
            "no foreground: chunks start at chunk_docs"
        );
        c.record(&policy, true, FAST);
        assert_eq!(c.limit(1024, true), 32);
        for _ in 0..10 {
            c.record(&policy, true, FAST);
        }
        assert_eq!(c.limit(1024, true), 1024);
        assert_eq!(c.limit(1 << 20, true), policy.foreground_chunk_max_docs);
        assert_eq!(c.limit(100, true), 100, "never past the visit's own limit");
    }

    #[test]
    fn chunks_behind_settle_where_they_hold_the_writer_as_long_as_a_write_group() {
        let policy = ExpiryPolicy::default();
        let mut c = ForegroundChunks::new(&policy);
        let group = Duration::from_millis(2);
        for _ in 0..32 {
            c.group_done(&policy, group);
        }
        // A chunk costs 1 µs a document here.
        for _ in 0..20 {
            let docs = c.limit(1 << 20, true);
            c.record(&policy, true, Duration::from_micros(docs as u64));
        }
        let docs = c.limit(1 << 20, true);
        assert!((1500..=2500).contains(&docs), "settled at {docs}");
        let slow = Duration::from_micros(4 * docs as u64);
        c.record(&policy, true, slow);
        assert_eq!(c.limit(1 << 20, true), docs / 2, "at most halved at once");
    }

    #[test]
    fn a_sweep_turn_deletes_twice_as_many_entries_as_the_last_chunk_had_documents() {
        let policy = ExpiryPolicy::default();
        let mut c = ForegroundChunks::new(&policy);
        let turn = c.sweep_turn(&policy);
        assert_eq!(
            (turn.sweep_slice, turn.sweep_read),
            (256, 512),
            "small chunks: the policy's"
        );
        for _ in 0..8 {
            c.record(&policy, true, FAST);
        }
        c.record(&policy, true, FAST);
        let turn = c.sweep_turn(&policy);
        assert_eq!(turn.sweep_slice, 8192);
        assert_eq!(turn.sweep_read, 16384);
        for _ in 0..3 {
            c.quiet_done(&policy);
        }
        assert_eq!(
            c.sweep_turn(&policy).sweep_slice,
            256,
            "the last quiet chunk's size"
        );
    }

    #[test]
    fn quiet_chunks_double_up_to_their_cap_and_start_over_after_a_write() {
        let policy = ExpiryPolicy::default();
        let mut c = ForegroundChunks::new(&policy);
        let max = policy.quiet_chunk_max_docs;
        let mut sizes = Vec::new();
        for _ in 0..7 {
            sizes.push(c.limit(max, false));
            c.quiet_done(&policy);
        }
        assert_eq!(sizes, vec![1024, 2048, 4096, 8192, 16384, 32768, 32768]);
        assert_eq!(
            c.limit(3000, false),
            3000,
            "never past the visit's own limit"
        );
        c.group_done(&policy, Duration::from_micros(50));
        assert_eq!(c.limit(max, false), 1024, "a write group: small again");
        c.quiet_done(&policy);
        c.record(&policy, true, FAST);
        assert_eq!(
            c.limit(max, false),
            1024,
            "a chunk beside writes: small again"
        );
        assert_eq!(c.limit(max, true), 32, "the foreground size is its own");
    }

    #[test]
    fn chunks_keep_their_size_when_caught_up_or_at_the_budget() {
        let policy = ExpiryPolicy::default();
        let mut c = ForegroundChunks::new(&policy);
        c.record(&policy, true, FAST);
        c.record(&policy, false, FAST);
        assert_eq!(c.limit(1024, true), 32, "caught up: no reason to grow");
        c.record(&policy, true, policy.foreground_hold_budget);
        assert_eq!(
            c.limit(1024, true),
            32,
            "at the budget: the size it should be"
        );
    }

    #[test]
    fn long_write_groups_lift_the_budget_and_short_ones_bring_it_back() {
        let policy = ExpiryPolicy::default();
        let mut c = ForegroundChunks::new(&policy);
        let group = Duration::from_millis(1);
        let chunk = Duration::from_micros(400);
        c.record(&policy, true, chunk);
        assert_eq!(c.limit(1024, true), 16, "over the policy's budget alone");
        for _ in 0..8 {
            c.group_done(&policy, group);
        }
        assert!(c.budget(&policy) > Duration::from_micros(800));
        c.record(&policy, true, chunk);
        assert_eq!(c.limit(1024, true), 32, "within half of the groups' time");
        for _ in 0..16 {
            c.group_done(&policy, Duration::from_micros(10));
        }
        assert_eq!(c.budget(&policy), policy.foreground_hold_budget);
        c.record(&policy, true, chunk);
        assert_eq!(c.limit(1024, true), 16, "short groups: the policy's budget");
    }

    #[test]
    fn chunks_that_throttle_double_while_due_documents_remain_however_long_they_hold() {
        let policy = ExpiryPolicy::default();
        let mut c = ForegroundChunks::new(&policy);
        c.throttled(&policy, true);
        c.throttled(&policy, true);
        assert_eq!(c.limit(1 << 20, true), 64);
        c.throttled(&policy, false);
        assert_eq!(c.limit(1 << 20, true), 64, "caught up: no reason to grow");
        for _ in 0..16 {
            c.throttled(&policy, true);
        }
        assert_eq!(c.limit(1 << 20, true), policy.foreground_chunk_max_docs);
        // Released: the next chunk that holds the writer too long shrinks.
        c.record(&policy, false, SLOW);
        assert_eq!(c.limit(1 << 20, true), policy.foreground_chunk_max_docs / 2);
    }

    #[test]
    fn chunks_stay_small_under_a_deletion_rate_limit() {
        let policy = ExpiryPolicy {
            max_deletes_per_sec: 200_000,
            ..ExpiryPolicy::default()
        };
        let mut c = ForegroundChunks::new(&policy);
        for _ in 0..4 {
            c.record(&policy, true, FAST);
        }
        assert_eq!(c.limit(1024, true), 16);
    }

    #[test]
    fn a_chunk_that_holds_the_writer_too_long_halves_the_size_down_to_the_floor() {
        let policy = ExpiryPolicy::default();
        let mut c = ForegroundChunks::new(&policy);
        for _ in 0..4 {
            c.record(&policy, true, FAST);
        }
        assert_eq!(c.limit(1024, true), 256);
        c.record(&policy, true, SLOW);
        assert_eq!(c.limit(1024, true), 128);
        for _ in 0..10 {
            c.record(&policy, false, SLOW);
        }
        assert_eq!(c.limit(1024, true), 16);
    }
}
