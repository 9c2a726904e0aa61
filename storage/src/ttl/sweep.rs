//! The sweep: the index entries of expired documents, deleted later and
//! in bulk instead of inside each chunk.
//!
//! A chunk deletes a due document's record and its TTL entries at once.
//! Its entries in the indexes that allow it ([`defers`]: not unique, not
//! TTL, not internal, in a collection that is neither capped nor
//! time-series) are left in place: the chunk writes them, with the
//! documents' record keys, as one item of the collection's sweep queue
//! (`catalog::sweep_key`), in the batch that deletes the records. The
//! sweep deletes the queued entries sorted by family and key, and the
//! items with them. Made chunk by chunk into a random index, these point
//! deletes would be most of a chunk's cost under a steady stream
//! (BENCHMARKS.md, "The sweep").
//!
//! Until the sweep, an entry whose document is gone stays in its index.
//! Three rules keep it out of every answer:
//!
//! - readers answer from records: an index scan fetches the record of
//!   each entry and passes over an entry whose record is missing
//!   (`plan::exec`); a covered read answers from entries alone only in a
//!   snapshot where the collection has nothing queued ([`nothing_queued`]);
//! - the writer sweeps before it stores a record under an id that has
//!   queued entries (`Writer::insert_keyed` asks [`Sweep::holds`]): the new
//!   document may share an entry with the old one, which the sweep would
//!   then delete. So in every snapshot, an entry whose record exists
//!   belongs to that record;
//! - `validate` counts queued entries as accounted for (`integrity`).
//!
//! The queue lives in the catalog family and commits with the chunk, so a
//! crash keeps or loses both. After a restart, or in a new collection handle, the
//! writer's [`Sweep`] reads the queue back. A dropped collection's queue
//! goes with it; entries of a dropped index are passed over.
//!
//! The collection's writer sweeps once `ExpiryPolicy::sweep_entries` are
//! queued or the oldest has waited `sweep_after`, when it starts, and
//! when it takes a new collection handle; the actor decides when
//! ([`Sweep::due_in`]) and runs the sweep in turns no longer than a chunk
//! ([`sweep_step`]): a few queue items read and sorted per turn, then a
//! slice of entries deleted per turn in key order across them.
//! `queue` holds the item format and the writer's [`Sweep`].

use crate::catalog::{self, INTERNAL_PREFIX};
use crate::collection::Collection;
use crate::engine::{Batch, Cf, Direction, Engine, KeyRange, Snapshot};
use crate::index::KeyGen;
use ebb_lang::error::{Error, Result};

use super::policy::ExpiryPolicy;
pub use super::queue::Sweep;
use super::queue::{QueueItem, Queued, Run, Sorted, for_each_document, take_merged};

/// Whether a chunk leaves `kg`'s entries to the sweep. Not under a
/// deletion-rate limit ([`ExpiryPolicy::defers_index_deletes`]) nor while
/// the queue is full ([`ExpiryPolicy::sweep_max_entries`]). A unique
/// index must drop an expired document's key at once (an insert of another
/// document would meet it), and a TTL index's entries are what chunks
/// scan; internal indexes belong to time-series and clustered
/// collections, whose chunks delete everything themselves.
pub fn defers(policy: &ExpiryPolicy, coll: &Collection, kg: &KeyGen) -> bool {
    queue_has_room(policy, coll)
        && coll.natural().is_none()
        && coll.timeseries.is_none()
        && !kg.unique
        && kg.expire_after_secs().is_none()
        && !kg.name.starts_with(INTERNAL_PREFIX)
}

/// Whether a chunk leaves the records of the documents it expires to the
/// sweep when they are not one contiguous run: whenever it defers index
/// entries at all (see [`defers`]).
pub fn defers_records(policy: &ExpiryPolicy, coll: &Collection) -> bool {
    queue_has_room(policy, coll) && coll.natural().is_none() && coll.timeseries.is_none()
}

/// Whether chunks may queue anything: not under a deletion-rate limit, and
/// not while the queue holds `ExpiryPolicy::sweep_max_entries` (expiry far
/// behind: the queue and the keys held for it must not grow with the
/// backlog).
fn queue_has_room(policy: &ExpiryPolicy, coll: &Collection) -> bool {
    policy.defers_index_deletes() && coll.sweep.entries() < policy.sweep_max_entries
}

/// Adds a chunk's queue items to `out`, the batch that deletes its
/// documents (`held`: the record keys of the documents queued);
/// what the writer's [`Sweep`] holds while `out` commits.
pub(super) fn write(
    item: QueueItem,
    held: Vec<Vec<u8>>,
    engine: &dyn Engine,
    coll: &Collection,
    out: &mut dyn Batch,
) -> Result<Queued> {
    let Some((items, queued)) = item.finish(held) else {
        return Ok(Queued::default());
    };
    for bytes in items {
        let seq = coll.sweep.next_seq(engine, coll.meta.id)?;
        out.put(Cf::Catalog, &catalog::sweep_key(coll.meta.id, seq), &bytes)?;
    }
    Ok(queued)
}

/// Deletes every queued entry of the collection, and the queue, in one
/// batch sorted by family and key; returns how many entries went. Runs on
/// the collection's writer, which calls it before it stores a record
/// under a queued record key.
pub fn sweep(engine: &dyn Engine, coll: &Collection) -> Result<u64> {
    let all = || -> Result<u64> {
        let mut run = Run {
            unread: Some(catalog::sweep_range(coll.meta.id)),
            ..Run::default()
        };
        read_group(engine, coll, &mut run, usize::MAX)?;
        let (batch, deleted, _) = delete_slice(engine, &mut run, usize::MAX)?;
        if !batch.is_empty() {
            batch.commit(false)?;
        }
        coll.sweep.swept(engine, coll.meta.id);
        Ok(deleted)
    };
    let all = all();
    if all.is_err() {
        coll.sweep.forget();
    }
    all
}

/// One turn of the writer's sweep, which holds the writer no longer than
/// a TTL chunk does: while the run's queue items are not all read, it
/// reads the next ones, about `policy.sweep_read` entries, and sorts them;
/// then it deletes the next `policy.sweep_slice` entries in key order
/// across what was read, and with the last slice the items themselves.
/// Returns how many entries went (none in a reading turn). Entries
/// deleted twice (a crash between turns, or a full [`sweep`] in between)
/// cost nothing.
pub fn sweep_step(engine: &dyn Engine, coll: &Collection, policy: &ExpiryPolicy) -> Result<u64> {
    let step = || -> Result<(u64, Option<Run>)> {
        let mut run = match coll.sweep.take_run() {
            Some(run) => run,
            None => {
                let (end, unread) = coll.sweep.begin_run(engine, coll.meta.id)?;
                Run {
                    end,
                    unread: Some(unread),
                    ..Run::default()
                }
            }
        };
        if run.unread.is_some() {
            read_group(engine, coll, &mut run, policy.sweep_read.max(1))?;
            let left: usize = run.groups.iter().map(Sorted::left).sum();
            if run.unread.is_some() || left > 0 {
                return Ok((0, Some(run)));
            }
        }
        let (batch, deleted, last) = delete_slice(engine, &mut run, policy.sweep_slice.max(1))?;
        if !batch.is_empty() {
            batch.commit(false)?;
        }
        if !last {
            return Ok((deleted, Some(run)));
        }
        coll.sweep.run_done(engine, coll.meta.id, run.end);
        Ok((deleted, None))
    };
    match step() {
        Ok((deleted, run)) => {
            if let Some(run) = run {
                coll.sweep.keep_run(run);
            }
            Ok(deleted)
        }
        Err(e) => {
            coll.sweep.forget();
            Err(e)
        }
    }
}

/// The batch that deletes the next `n` entries of what `run` read, in key
/// order, and with the last of them the run's queue items; how many
/// entries it deletes and whether the run is then done.
fn delete_slice<'e>(
    engine: &'e dyn Engine,
    run: &mut Run,
    n: usize,
) -> Result<(Box<dyn Batch + 'e>, u64, bool)> {
    let mut batch = engine.batch();
    let deleted = take_merged(&mut run.groups, n, |cf, key| batch.delete(Cf::Id(cf), key))?;
    let last = run.groups.iter().all(|g| g.left() == 0);
    if last {
        for item in &run.items {
            batch.delete(Cf::Catalog, item)?;
        }
    }
    Ok((batch, deleted as u64, last))
}

/// Reads the run's next queue items, until about `budget` entries, and
/// adds their entries in the indexes the collection still has to the run
/// as one sorted group.
fn read_group(engine: &dyn Engine, coll: &Collection, run: &mut Run, budget: usize) -> Result<()> {
    let Some(range) = run.unread.take() else {
        return Ok(());
    };
    let live: Vec<u64> = coll.keygens.iter().map(|kg| kg.cf).collect();
    let upper = range.upper.clone();
    let mut group = Sorted::default();
    let mut read = 0usize;
    let mut cursor = engine.cursor(Cf::Catalog, range, Direction::Forward)?;
    while cursor.valid() && read < budget {
        run.items.push(cursor.key().to_vec());
        for_each_document(cursor.value(), |id, record, queued| {
            read += queued.len() + usize::from(record);
            if record {
                group.push(coll.meta.id, id);
            }
            // An index dropped since has no entries left to delete.
            for (cf, key) in queued {
                if live.contains(cf) {
                    group.push(*cf, key);
                }
            }
        })?;
        cursor.advance();
    }
    cursor.status()?;
    if cursor.valid() {
        run.unread = Some(KeyRange::new(cursor.key().to_vec(), upper));
    }
    drop(cursor);
    group.sort();
    if group.left() > 0 {
        run.groups.push(group);
    }
    Ok(())
}

/// Whether `coll`'s collection has nothing queued on `snap`: every index
/// entry there belongs to a record, so a covered read may answer from
/// entries alone (`plan::cover`).
pub fn nothing_queued(snap: &dyn Snapshot, coll: &Collection) -> Result<bool> {
    let cursor = snap.cursor(
        Cf::Catalog,
        catalog::sweep_range(coll.meta.id),
        Direction::Forward,
    )?;
    cursor.status()?;
    Ok(!cursor.valid())
}

/// The queued entries of `coll`'s collection still in its indexes on
/// `snap`, per index in `set.keygens` order (`validate`).
pub fn pending_on(snap: &dyn Snapshot, coll: &Collection) -> Result<Vec<u64>> {
    let mut pending = vec![0u64; coll.keygens.len()];
    let mut cursor = snap.cursor(
        Cf::Catalog,
        catalog::sweep_range(coll.meta.id),
        Direction::Forward,
    )?;
    let mut queued: Vec<(usize, Vec<u8>)> = Vec::new();
    while cursor.valid() {
        for_each_document(cursor.value(), |_, _, entries| {
            for (cf, key) in entries {
                if let Some(i) = coll.keygens.iter().position(|kg| kg.cf == *cf) {
                    queued.push((i, key.to_vec()));
                }
            }
        })?;
        cursor.advance();
    }
    cursor.status()?;
    drop(cursor);
    queued.sort_unstable();
    queued.dedup();
    for (i, key) in queued {
        if snap.get(Cf::Id(coll.keygens[i].cf), &key)?.is_some() {
            pending[i] += 1;
        }
    }
    Ok(pending)
}

/// Adds the removal of the sweep queues of the collections whose records
/// are `records_cfs` to `batch` (a dropped collection's).
pub fn forget(batch: &mut dyn Batch, records_cfs: &[u64]) -> Result<()> {
    for &cf in records_cfs {
        let range = catalog::sweep_range(cf);
        let upper = range
            .upper
            .ok_or_else(|| Error::corrupt("sweep range without end"))?;
        batch.delete_range(Cf::Catalog, &range.lower, &upper)?;
    }
    Ok(())
}

/// The collections (records family ids) that have a sweep queue.
pub fn queued_collections(engine: &dyn Engine) -> Result<Vec<u64>> {
    let mut out: Vec<u64> = Vec::new();
    let mut cursor = engine.cursor(Cf::Catalog, catalog::sweep_queues(), Direction::Forward)?;
    while cursor.valid() {
        if let Some((cf, _)) = catalog::parse_sweep_key(cursor.key())
            && out.last() != Some(&cf)
        {
            out.push(cf);
        }
        cursor.advance();
    }
    cursor.status()?;
    Ok(out)
}
