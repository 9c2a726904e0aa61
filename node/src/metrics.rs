//! What `/metrics` exposes, in the Prometheus/OpenMetrics text format.
//!
//! Counters the node already keeps (operation counters, connections, the
//! TTL monitor's `metrics.ttl`) are read when a scrape asks, beside the
//! command latency histogram (`latency.rs`). Storage figures are RocksDB's
//! own estimates summed over every collection's families.

use std::sync::atomic::{AtomicU64, Ordering};

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use ebb_storage::ttl;

use crate::context::NodeContext;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OpLabel {
    op: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RunLabel {
    run: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TtlIndexLabel {
    ns: String,
    index: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct NeverLabel {
    ns: String,
    index: String,
    reason: &'static str,
}

fn counter(value: u64) -> Counter {
    let counter = Counter::default();
    counter.inc_by(value);
    counter
}

/// One counter per label value, each read from its atomic.
fn counters<L>(
    values: &[(&'static str, &AtomicU64)],
    label: impl Fn(&'static str) -> L,
) -> Family<L, Counter>
where
    L: Clone + std::hash::Hash + Eq + std::fmt::Debug + EncodeLabelSet + Send + Sync + 'static,
{
    let family = Family::<L, Counter>::default();
    for (name, value) in values {
        family.get_or_create(&label(name)).inc_by(load(value));
    }
    family
}

fn gauge(value: u64) -> Gauge {
    let gauge = Gauge::default();
    gauge.set(i64::try_from(value).unwrap_or(i64::MAX));
    gauge
}

fn load(value: &AtomicU64) -> u64 {
    value.load(Ordering::Relaxed)
}

/// The allocator's own figures: what the process holds live, and what
/// its pages keep resident (freed memory not yet returned included).
#[derive(Default)]
struct Heap {
    allocated: u64,
    resident: u64,
}

impl Heap {
    fn read() -> Heap {
        use tikv_jemalloc_ctl::{epoch, stats};
        // The statistics are a snapshot refreshed by advancing the epoch.
        if epoch::advance().is_err() {
            return Heap::default();
        }
        Heap {
            allocated: stats::allocated::read().unwrap_or(0) as u64,
            resident: stats::resident::read().unwrap_or(0) as u64,
        }
    }
}

/// Storage figures summed over every family of every collection.
#[derive(Default)]
struct StorageTotals {
    sst_bytes: u64,
    memtable_bytes: u64,
    pending_compaction_bytes: u64,
    live_data_bytes: u64,
    memtable_all_bytes: u64,
    table_readers_bytes: u64,
    sweep_queued_entries: u64,
    sweep_held_keys: u64,
}

fn storage_totals(ctx: &NodeContext) -> StorageTotals {
    let mut totals = StorageTotals::default();
    let engine = ctx.shared.engine.as_ref();
    for handle in ctx.view.load().collections.values() {
        totals.sweep_queued_entries += handle.coll.sweep.entries() as u64;
        totals.sweep_held_keys += handle.coll.sweep.held_keys() as u64;
        for index in &handle.coll.meta.indexes {
            let Ok(stats) = engine.stats(ebb_storage::engine::Cf::Id(index.id)) else {
                continue; // dropped between the catalog read and now
            };
            totals.sst_bytes += stats.sst_bytes;
            totals.memtable_bytes += stats.memtable_bytes;
            totals.pending_compaction_bytes += stats.pending_compaction_bytes;
            totals.live_data_bytes += stats.live_data_bytes;
            totals.memtable_all_bytes += stats.memtable_all_bytes;
            totals.table_readers_bytes += stats.table_readers_bytes;
        }
    }
    totals
}

/// Per TTL index that keeps them, the counts of documents it never makes
/// due, by reason (one read each: `ttl::never`).
fn never_expiring(ctx: &NodeContext) -> Family<NeverLabel, Gauge> {
    let family = Family::<NeverLabel, Gauge>::default();
    let engine = ctx.shared.engine.as_ref();
    for handle in ctx.view.load().collections.values() {
        let Some(kg) = ttl::never::counted(&handle.coll) else {
            continue;
        };
        let Ok(Some(tally)) = ttl::never::read(engine, kg) else {
            continue;
        };
        for (reason, n) in tally.by_reason() {
            family
                .get_or_create(&NeverLabel {
                    ns: handle.coll.meta.ns(),
                    index: kg.name.clone(),
                    reason: reason.name(),
                })
                .set(i64::try_from(n).unwrap_or(i64::MAX));
        }
    }
    family
}

/// Per TTL index, the entries due now that the monitor has not deleted
/// yet. Counted on each scrape, so a scrape costs in proportion to the
/// backlog (about 0.2 s per million due documents).
fn due_backlog(ctx: &NodeContext) -> Family<TtlIndexLabel, Gauge> {
    let backlog = Family::<TtlIndexLabel, Gauge>::default();
    let engine = ctx.shared.engine.as_ref();
    let now = ctx.shared.clock.now_millis();
    for handle in ctx.view.load().collections.values() {
        let set = &handle.coll;
        for index in set.meta.indexes.iter().filter(|i| i.is_ttl()) {
            let eas = i64::from(index.expire_after_seconds.unwrap_or(i32::MAX));
            let cutoff = ebb_storage::index::cutoff_millis(now, eas);
            // A collection dropped since the catalog read counts nothing.
            let Ok(due) = ttl::count_due(engine, set, &index.name, cutoff) else {
                continue;
            };
            backlog
                .get_or_create(&TtlIndexLabel {
                    ns: set.meta.ns(),
                    index: index.name.clone(),
                })
                .set(i64::try_from(due).unwrap_or(i64::MAX));
        }
    }
    backlog
}

/// The text a scrape of `/metrics` returns. Reads RocksDB properties, so
/// call it off the async threads.
pub fn render(ctx: &NodeContext) -> String {
    let mut registry = Registry::with_prefix("ebb");
    let ttl = &ctx.shared.ttl;
    for (name, help, value) in [
        (
            "ttl_deleted_documents",
            "Documents (time-series: buckets) the TTL monitor and writes deleted",
            &ttl.deleted_documents,
        ),
        ("ttl_passes", "TTL monitor passes", &ttl.passes),
        ("ttl_sub_passes", "TTL monitor sub-passes", &ttl.sub_passes),
        (
            "ttl_chunks",
            "TTL chunks writers ran for the monitor",
            &ttl.chunks,
        ),
        (
            "ttl_hidden_by_reads",
            "Due documents reads passed over before the monitor deleted them",
            &ttl.hidden_by_reads,
        ),
        (
            "ttl_replaced_by_writes",
            "Due documents deleted by a write taking their _id or unique key",
            &ttl.replaced_by_writes,
        ),
        (
            "ttl_swept_entries",
            "Index entries of expired documents deleted by sweeps after their chunks",
            &ttl.swept,
        ),
        (
            "ttl_replicated_deletes",
            "Documents deleted applying the TTL chunks of the replica set's log",
            &ttl.replicated_deletes,
        ),
        (
            "ttl_mass_expiry_changes",
            "Index changes (collMod) that made more than ttl.mass_expiry_percent of a collection due at once",
            &ttl.mass_changes,
        ),
        (
            "ttl_throttle_micros",
            "Microseconds writers spent on TTL chunks that made writes wait (ttl.overload = throttle)",
            &ttl.throttle_micros,
        ),
        (
            "connections_created",
            "Connections accepted since start",
            &ctx.connections.total_created,
        ),
    ] {
        registry.register(name, help, counter(load(value)));
    }
    let ops = &ctx.opcounters;
    let op = |op| OpLabel { op };
    registry.register(
        "opcounters",
        "Operations by kind, as serverStatus.opcounters",
        counters(
            &[
                ("insert", &ops.insert),
                ("query", &ops.query),
                ("update", &ops.update),
                ("delete", &ops.delete),
                ("getmore", &ops.getmore),
                ("command", &ops.command),
            ],
            op,
        ),
    );
    let writes = &ctx.shared.writes;
    registry.register(
        "documents",
        "Documents written by clients",
        counters(
            &[
                ("inserted", &writes.inserted),
                ("updated", &writes.updated),
                ("deleted", &writes.deleted),
            ],
            op,
        ),
    );
    registry.register(
        "ttl_chunk_runs",
        "How writers ran TTL chunks and the plans they discarded, as serverStatus.metrics.ttl.chunkRuns",
        counters(&ttl.runs.by_name(), |run| RunLabel { run }),
    );
    registry.register(
        "ttl_expiry_lag_seconds",
        "Per TTL chunk, seconds from the due time of the oldest document it deleted to its deletion",
        ttl.expiry_lag.clone(),
    );
    registry.register(
        "ttl_due_backlog",
        "Due documents the TTL monitor has not deleted yet, per TTL index",
        due_backlog(ctx),
    );
    registry.register(
        "ttl_never_expiring_documents",
        "Documents a TTL index never makes due, per index (its collection's only TTL index) and reason",
        never_expiring(ctx),
    );
    registry.register(
        "command_duration_seconds",
        "Time from a command's dispatch to its reply",
        ctx.latencies.family(),
    );
    let totals = storage_totals(ctx);
    let engine_memory = ctx.shared.engine.memory().unwrap_or_default();
    let heap = Heap::read();
    for (name, help, value) in [
        (
            "connections_current",
            "Open client connections",
            load(&ctx.connections.current),
        ),
        (
            "cursors_open",
            "Open cursors",
            ctx.cursors.open_count() as u64,
        ),
        (
            "operations_running",
            "Commands running now",
            ctx.ops.running() as u64,
        ),
        (
            "ttl_monitor_running",
            "1 while the TTL monitor runs",
            u64::from(ttl.running.load(Ordering::Relaxed)),
        ),
        (
            "storage_sst_bytes",
            "Bytes of RocksDB table files",
            totals.sst_bytes,
        ),
        (
            "storage_memtable_bytes",
            "Bytes in RocksDB memtables",
            totals.memtable_bytes,
        ),
        (
            "storage_pending_compaction_bytes",
            "Bytes RocksDB compaction still has to rewrite",
            totals.pending_compaction_bytes,
        ),
        (
            "storage_live_data_bytes",
            "Estimated bytes of live keys and values",
            totals.live_data_bytes,
        ),
        (
            "storage_memtable_all_bytes",
            "Bytes of RocksDB memtables in memory, flushed ones pinned by readers included",
            totals.memtable_all_bytes,
        ),
        (
            "storage_table_readers_bytes",
            "Bytes RocksDB's open table readers hold outside the block cache",
            totals.table_readers_bytes,
        ),
        (
            "storage_block_cache_bytes",
            "Bytes in RocksDB's block cache, the memtables' reservation included",
            engine_memory.block_cache_bytes,
        ),
        (
            "storage_block_cache_pinned_bytes",
            "Bytes of RocksDB's block cache pinned by readers",
            engine_memory.block_cache_pinned_bytes,
        ),
        (
            "ttl_sweep_queued_entries",
            "Index entries and records of expired documents waiting for the sweep",
            totals.sweep_queued_entries,
        ),
        (
            "ttl_sweep_held_keys",
            "Record keys of expired documents held (masked from reads) until the sweep deletes them",
            totals.sweep_held_keys,
        ),
        (
            "memory_allocated_bytes",
            "Bytes the process has allocated and not freed (jemalloc)",
            heap.allocated,
        ),
        (
            "memory_resident_bytes",
            "Bytes of the allocator's pages resident in memory (jemalloc)",
            heap.resident,
        ),
    ] {
        registry.register(name, help, gauge(value));
    }
    let mut text = String::new();
    // Writing into a String cannot fail.
    let _ = encode(&mut text, &registry);
    text
}
