//! The sweep queue's format and what a collection's writer knows of it
//! (`sweep` says what the queue is for and who uses it).
//!
//! Item layout: `1` (format), then per document `len: u32 LE ‖ record
//! key ‖ n: u32 LE` and `n` times `cf: u64 LE ‖ len: u32 LE ‖ key`. The
//! top bit of `n` ([`RECORD_WAITS`]) says the document's record waits for
//! the sweep too (the chunk left it in place); items written before it
//! existed never set it.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use super::held::{HeldKeys, HeldList};
use super::policy::ExpiryPolicy;
use crate::catalog;
use crate::engine::held::Gate;
use crate::engine::{Cf, Direction, Engine, KeyRange};
use ebb_lang::error::{Error, Result};

const FORMAT: u8 = 1;
/// Set in a document's entry count when its record waits for the sweep.
const RECORD_WAITS: u32 = 1 << 31;

/// Queue items of every collection take their `seq` from one counter,
/// raised past the largest stored one whenever a queue is read, so a new
/// item never overwrites an old one (plans are made off the writer, and
/// two can be in flight).
static NEXT_SEQ: AtomicU64 = AtomicU64::new(0);

/// What a collection's writer knows of its sweep queue: which record keys
/// it holds (registered with the engine, whose reads pass over them), how
/// many entries and records wait, and since when. Lives in the
/// `Collection`, read from the engine when first needed (at startup, for a
/// collection with a queue, before any read).
#[derive(Debug, Default)]
pub struct Sweep {
    state: Mutex<State>,
    held: Arc<HeldKeys>,
    /// Whether `held` is registered with the engine: only while it may
    /// hold a key, so that reads of a collection that leaves nothing to the
    /// sweep (most, and every one under a deletion-rate limit) filter
    /// nothing.
    registered: AtomicBool,
    /// Set, under the lock, whenever the state is known and holds no record
    /// key: every insert asks [`Sweep::holds`], and most collections have
    /// nothing queued, so most inserts read one flag instead of the lock.
    none_held: AtomicBool,
}

/// The locked state; on release it publishes whether anything is held.
struct Locked<'a> {
    state: MutexGuard<'a, State>,
    held: &'a HeldKeys,
    none_held: &'a AtomicBool,
}

impl std::ops::Deref for Locked<'_> {
    type Target = State;
    fn deref(&self) -> &State {
        &self.state
    }
}

impl std::ops::DerefMut for Locked<'_> {
    fn deref_mut(&mut self) -> &mut State {
        &mut self.state
    }
}

impl Drop for Locked<'_> {
    fn drop(&mut self) {
        let none = self.state.loaded && self.held.is_empty();
        self.none_held.store(none, Ordering::Release);
    }
}

#[derive(Debug, Default)]
struct State {
    loaded: bool,
    /// Index entries and records queued.
    entries: usize,
    since: Option<Instant>,
    /// A sweep in turns, under way.
    run: Option<Run>,
}

/// A sweep taken in turns on the writer (`sweep::sweep_step`): the queue
/// as it stood when the sweep began, read a group of items per turn and
/// each group sorted, then deleted a slice per turn in key order across
/// the groups; the record keys held before it began are released when it
/// ends. No turn reads or sorts the whole queue.
#[derive(Debug, Default)]
pub(super) struct Run {
    /// Keys of the queue items read so far, deleted with the last slice.
    pub items: Vec<Vec<u8>>,
    /// The rest of the run's items: reading resumes at `lower`, and items
    /// from `upper` on were queued after the run began (the next run's).
    pub unread: Option<KeyRange>,
    /// The entries read, a sorted group per read turn.
    pub groups: Vec<Sorted>,
    /// The held keys' mark when it began ([`HeldKeys::mark`]).
    pub end: u64,
}

/// Queued index entries in one buffer, sorted by family and key once
/// [`Sorted::sort`] ran, and consumed from the front.
#[derive(Debug, Default)]
pub(super) struct Sorted {
    bytes: Vec<u8>,
    /// Family, start in `bytes` and length of each entry.
    entries: Vec<(u64, usize, usize)>,
    next: usize,
}

impl Sorted {
    pub fn push(&mut self, cf: u64, key: &[u8]) {
        self.entries.push((cf, self.bytes.len(), key.len()));
        self.bytes.extend_from_slice(key);
    }

    fn entry(&self, (cf, start, len): (u64, usize, usize)) -> Entry<'_> {
        (cf, &self.bytes[start..start + len])
    }

    /// Sorts the entries and drops repeats (an item written twice, by a
    /// chunk redone after a crash).
    pub fn sort(&mut self) {
        let mut entries = std::mem::take(&mut self.entries);
        entries.sort_unstable_by(|&a, &b| self.entry(a).cmp(&self.entry(b)));
        entries.dedup_by(|a, b| self.entry(*a) == self.entry(*b));
        self.entries = entries;
    }

    /// Entries not yet consumed.
    pub fn left(&self) -> usize {
        self.entries.len() - self.next
    }
}

/// A queued index entry: its family and key.
type Entry<'a> = (u64, &'a [u8]);

/// Calls `each` with the next `n` entries of `groups` in key order (an
/// entry in two groups once), consuming them; returns how many went.
pub(super) fn take_merged(
    groups: &mut [Sorted],
    n: usize,
    mut each: impl FnMut(u64, &[u8]) -> Result<()>,
) -> Result<usize> {
    let mut next: Vec<usize> = groups.iter().map(|g| g.next).collect();
    let mut taken = 0;
    {
        let groups = &*groups;
        let at = |g: usize, i: usize| groups[g].entries.get(i).map(|&e| groups[g].entry(e));
        // Each group's first entry not consumed, the smallest on top.
        let mut heads: BinaryHeap<Reverse<(Entry, usize)>> = (0..groups.len())
            .filter_map(|g| at(g, next[g]).map(|e| Reverse((e, g))))
            .collect();
        let mut last: Option<Entry> = None;
        while let Some(&Reverse((entry, g))) = heads.peek() {
            // A repeat of the last entry goes with it, past the `n`th too.
            let repeat = last == Some(entry);
            if !repeat && taken == n {
                break;
            }
            heads.pop();
            next[g] += 1;
            if let Some(e) = at(g, next[g]) {
                heads.push(Reverse((e, g)));
            }
            if !repeat {
                each(entry.0, entry.1)?;
                last = Some(entry);
                taken += 1;
            }
        }
    }
    for (group, next) in groups.iter_mut().zip(next) {
        group.next = next;
    }
    Ok(taken)
}

impl Sweep {
    fn state(&self) -> Locked<'_> {
        Locked {
            state: self.state.lock().expect("sweep lock"),
            held: &self.held,
            none_held: &self.none_held,
        }
    }

    /// The state, read from the queue in `engine` if it was not yet.
    fn loaded(&self, engine: &dyn Engine, records_cf: u64) -> Result<Locked<'_>> {
        let mut state = self.state();
        if !state.loaded {
            let mut cursor = engine.cursor(
                Cf::Catalog,
                catalog::sweep_range(records_cf),
                Direction::Forward,
            )?;
            while cursor.valid() {
                if let Some((_, seq)) = catalog::parse_sweep_key(cursor.key()) {
                    NEXT_SEQ.fetch_max(seq + 1, Ordering::Relaxed);
                }
                let mut ids = Vec::new();
                for_each_document(cursor.value(), |id, record, entries| {
                    ids.push(id.to_vec());
                    state.entries += entries.len() + usize::from(record);
                })?;
                self.held.add(HeldList::new(ids));
                cursor.advance();
            }
            cursor.status()?;
            drop(cursor);
            if state.entries > 0 {
                state.since = Some(Instant::now());
            }
            state.loaded = true;
            if !self.held.is_empty() {
                self.register(engine, records_cf);
            }
        }
        Ok(state)
    }

    /// Has the engine pass over the keys held. Lock order: the state, then
    /// the engine's registry, never the other way round.
    fn register(&self, engine: &dyn Engine, records_cf: u64) {
        if !self.registered.swap(true, Ordering::AcqRel) {
            engine.held().register(records_cf, self.held.clone());
        }
    }

    /// Under the registry's gate: once nothing is held, the engine stops
    /// filtering the collection's reads.
    fn unregister_if_empty(&self, gate: &mut Gate<'_>, records_cf: u64) {
        if self.held.is_empty() && self.registered.swap(false, Ordering::AcqRel) {
            gate.unregister(records_cf);
        }
    }

    /// Reads the queue now if it was not yet, and has the engine pass over
    /// the records it holds: done at startup for a collection with a
    /// queue, before anything reads it.
    pub fn load(&self, engine: &dyn Engine, records_cf: u64) -> Result<()> {
        drop(self.loaded(engine, records_cf)?);
        Ok(())
    }

    /// A `seq` for a new queue item of the collection.
    pub(super) fn next_seq(&self, engine: &dyn Engine, records_cf: u64) -> Result<u64> {
        drop(self.loaded(engine, records_cf)?);
        Ok(NEXT_SEQ.fetch_add(1, Ordering::Relaxed))
    }

    /// Whether record key `id` has entries queued: the writer sweeps
    /// before it stores a record there.
    pub fn holds(&self, engine: &dyn Engine, records_cf: u64, id: &[u8]) -> Result<bool> {
        if self.none_held.load(Ordering::Acquire) {
            return Ok(false);
        }
        drop(self.loaded(engine, records_cf)?);
        Ok(self.held.contains(id))
    }

    /// How long until the writer should sweep: `None` with nothing queued
    /// (or nothing known yet), zero when it is due now.
    pub fn due_in(&self, now: Instant, policy: &ExpiryPolicy) -> Option<Duration> {
        let state = self.state();
        if state.run.is_some() {
            return Some(Duration::ZERO);
        }
        let since = state.since?;
        if state.entries >= policy.sweep_entries {
            return Some(Duration::ZERO);
        }
        Some((since + policy.sweep_after).saturating_duration_since(now))
    }

    /// Entries queued, as far as this writer knows.
    pub fn entries(&self) -> usize {
        self.state().entries
    }

    /// Record keys held for the sweep (masked from every read until it
    /// deletes them).
    pub fn held_keys(&self) -> usize {
        self.held.len()
    }

    /// Holds the record keys of a chunk's queue item before the chunk
    /// commits; returns what [`Sweep::queued`] or [`Sweep::not_queued`]
    /// takes once the commit succeeded or failed.
    pub(super) fn hold(
        &self,
        engine: &dyn Engine,
        records_cf: u64,
        queued: Queued,
    ) -> Result<Holding> {
        if queued.ids.is_empty() {
            return Ok(Holding {
                first: None,
                entries: queued.entries,
            });
        }
        let _state = self.loaded(engine, records_cf)?;
        self.register(engine, records_cf);
        Ok(Holding {
            first: Some(self.held.add(queued.ids)),
            entries: queued.entries,
        })
    }

    /// A chunk's queue item is committed.
    pub(super) fn queued(&self, holding: Holding) {
        let mut state = self.state();
        if holding.entries > 0 {
            state.entries += holding.entries;
            state.since.get_or_insert_with(Instant::now);
        }
    }

    /// A chunk's commit failed: its keys are not held.
    pub(super) fn not_queued(&self, holding: Holding) {
        let _state = self.state();
        if let Some(first) = holding.first {
            self.held.withdraw(first);
        }
    }

    /// Everything queued is deleted: the keys held are released under the
    /// engine's hidden-keys gate, then the state is reset.
    pub(super) fn swept(&self, engine: &dyn Engine, records_cf: u64) {
        engine.held().exclusive(|gate| {
            self.held.clear();
            self.unregister_if_empty(gate, records_cf);
        });
        *self.state() = State {
            loaded: true,
            ..State::default()
        };
    }

    /// A sweep run ended: the keys held before it began are released,
    /// under the engine's hidden-keys gate.
    pub(super) fn run_done(&self, engine: &dyn Engine, records_cf: u64, end: u64) {
        engine.held().exclusive(|gate| {
            self.held.release_below(end);
            self.unregister_if_empty(gate, records_cf);
        });
        // Publishes whether anything is still held.
        drop(self.state());
    }

    /// A sweep failed half way: what is queued is read again when next
    /// needed (the keys held stay held until a sweep after it ends).
    pub(super) fn forget(&self) {
        *self.state() = State::default();
    }

    /// A sweep in turns begins: the record keys held so far are released
    /// when it ends, and what chunks queue from now on waits for the next
    /// one. Returns the held keys' mark and the range of queue items the
    /// run deletes.
    pub(super) fn begin_run(
        &self,
        engine: &dyn Engine,
        records_cf: u64,
    ) -> Result<(u64, KeyRange)> {
        let mut state = self.loaded(engine, records_cf)?;
        state.entries = 0;
        state.since = None;
        // Every committed item took its `seq` before this; one a plan in
        // flight took and commits later is read if the run has not passed
        // it, else by the next run, which its record keys wait for.
        let end = NEXT_SEQ.load(Ordering::Relaxed);
        let range = KeyRange::new(
            catalog::sweep_range(records_cf).lower,
            Some(catalog::sweep_key(records_cf, end)),
        );
        Ok((self.held.mark(), range))
    }

    /// The run under way, taken out for its next slice.
    pub(super) fn take_run(&self) -> Option<Run> {
        self.state().run.take()
    }

    /// The run goes on after this slice.
    pub(super) fn keep_run(&self, run: Run) {
        self.state().run = Some(run);
    }
}

/// A chunk's queue items under construction: its entries are stored as
/// items of about `max_entries` each, since a turn of the sweep reads whole
/// items and sorts them while holding the writer
/// (`ExpiryPolicy::sweep_item_entries`).
#[derive(Debug)]
pub(super) struct QueueItem {
    max_entries: usize,
    /// Full items' values.
    full: Vec<Vec<u8>>,
    /// The item being filled, and its entries.
    bytes: Vec<u8>,
    entries: usize,
    /// Entries and records queued in all the items.
    total: usize,
    /// Where the entry count of each document pushed since the last
    /// [`records_wait`](Self::records_wait) is: item (`full.len()` for the
    /// one being filled) and offset.
    counts: Vec<(usize, usize)>,
}

/// What a queue item adds to the writer's [`Sweep`].
#[derive(Debug, Default)]
pub(super) struct Queued {
    ids: HeldList,
    entries: usize,
}

/// A chunk's held keys, until its commit succeeds or fails.
#[derive(Debug)]
pub(super) struct Holding {
    /// The first key's ordinal, if any was held.
    first: Option<u64>,
    entries: usize,
}

impl QueueItem {
    /// Items of about `max_entries` entries (at least one document each).
    pub fn new(max_entries: usize) -> Self {
        QueueItem {
            max_entries,
            full: Vec::new(),
            bytes: Vec::new(),
            entries: 0,
            total: 0,
            counts: Vec::new(),
        }
    }

    /// Queues the entries of the document stored at `id`; a document
    /// without any is not queued. Returns whether it was: its record key
    /// is then one of those [`finish`](Self::finish) is given.
    #[must_use]
    pub fn push<'a>(
        &mut self,
        id: &[u8],
        entries: impl IntoIterator<Item = (u64, &'a [u8])>,
    ) -> bool {
        if self.bytes.is_empty() {
            self.bytes.push(FORMAT);
        }
        let start = self.bytes.len();
        put_bytes(&mut self.bytes, id);
        let count_at = self.bytes.len();
        self.bytes.extend_from_slice(&0u32.to_le_bytes());
        let mut n: u32 = 0;
        for (cf, key) in entries {
            self.bytes.extend_from_slice(&cf.to_le_bytes());
            put_bytes(&mut self.bytes, key);
            n += 1;
        }
        if n == 0 {
            self.bytes.truncate(start);
            return false;
        }
        self.bytes[count_at..count_at + 4].copy_from_slice(&n.to_le_bytes());
        self.counts.push((self.full.len(), count_at));
        self.added(n as usize);
        true
    }

    fn added(&mut self, n: usize) {
        self.total += n;
        self.entries += n;
        if self.entries >= self.max_entries {
            // The next item will be about as large: growing it from empty
            // copied it over and over into fresh pages.
            let next = Vec::with_capacity(self.bytes.len() + self.bytes.len() / 8);
            self.full.push(std::mem::replace(&mut self.bytes, next));
            self.entries = 0;
        }
    }

    /// The bytes of the items so far.
    pub fn byte_len(&self) -> usize {
        self.full.iter().map(Vec::len).sum::<usize>() + self.bytes.len()
    }

    /// The records of the documents pushed so far wait for the sweep too.
    pub fn records_wait(&mut self) {
        for (item, at) in self.counts.drain(..) {
            let bytes = match self.full.get_mut(item) {
                Some(full) => full,
                None => &mut self.bytes,
            };
            let count = &mut bytes[at..at + 4];
            let n = u32::from_le_bytes(count.try_into().expect("four bytes")) | RECORD_WAITS;
            count.copy_from_slice(&n.to_le_bytes());
            self.total += 1;
        }
    }

    /// Queues the record of a document with no entries queued: the chunk
    /// left it in place.
    pub fn push_record(&mut self, id: &[u8]) {
        if self.bytes.is_empty() {
            self.bytes.push(FORMAT);
        }
        put_bytes(&mut self.bytes, id);
        self.bytes.extend_from_slice(&RECORD_WAITS.to_le_bytes());
        self.added(1);
    }

    /// The items' values and what they add to the writer's [`Sweep`],
    /// given the record keys of the documents queued (hashed here, where
    /// the chunk is planned, not on the writer); `None` when nothing was
    /// queued.
    pub fn finish(mut self, held: Vec<Vec<u8>>) -> Option<(Vec<Vec<u8>>, Queued)> {
        if self.total == 0 {
            return None;
        }
        if !self.bytes.is_empty() {
            self.full.push(self.bytes);
        }
        let queued = Queued {
            ids: HeldList::new(held),
            entries: self.total,
        };
        Some((self.full, queued))
    }
}
fn put_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    out.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
    out.extend_from_slice(bytes);
}

/// Calls `each` with every document of a queue item: its record key,
/// whether the record waits too, and its queued entries.
pub(super) fn for_each_document(
    value: &[u8],
    mut each: impl FnMut(&[u8], bool, &[(u64, &[u8])]),
) -> Result<()> {
    let bad = || Error::corrupt("sweep queue item is malformed");
    let (&format, mut rest) = value.split_first().ok_or_else(bad)?;
    if format != FORMAT {
        return Err(bad());
    }
    let mut entries = Vec::new();
    while !rest.is_empty() {
        let (id, after) = take_bytes(rest).ok_or_else(bad)?;
        let n = u32::from_le_bytes(
            after
                .get(..4)
                .ok_or_else(bad)?
                .try_into()
                .map_err(|_| bad())?,
        );
        rest = &after[4..];
        let record = n & RECORD_WAITS != 0;
        entries.clear();
        for _ in 0..n & !RECORD_WAITS {
            let cf = u64::from_le_bytes(
                rest.get(..8)
                    .ok_or_else(bad)?
                    .try_into()
                    .map_err(|_| bad())?,
            );
            let (key, after) = take_bytes(&rest[8..]).ok_or_else(bad)?;
            entries.push((cf, key));
            rest = after;
        }
        each(id, record, &entries);
    }
    Ok(())
}

/// A length-prefixed byte string and what follows it.
fn take_bytes(bytes: &[u8]) -> Option<(&[u8], &[u8])> {
    let len = u32::from_le_bytes(bytes.get(..4)?.try_into().ok()?) as usize;
    let value = bytes.get(4..4 + len)?;
    Some((value, &bytes[4 + len..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chunk_queues_its_entries_in_items_of_bounded_size() {
        let mut item = QueueItem::new(3);
        let mut held = Vec::new();
        for doc in 0u8..5 {
            // Two entries each, and a document with none in between.
            if item.push(&[doc], [(7, &b"a"[..]), (8, &[doc][..])]) {
                held.push(vec![doc]);
            }
            assert!(!item.push(&[100 + doc], []), "nothing to queue");
        }
        let (items, queued) = item.finish(held).unwrap();
        assert_eq!(queued.entries, 10);
        assert_eq!(queued.ids.len(), 5);
        let mut docs = Vec::new();
        for value in &items {
            let mut entries = 0;
            for_each_document(value, |id, _, queued| {
                docs.push(id.to_vec());
                entries += queued.len();
            })
            .unwrap();
            assert!((1..=4).contains(&entries), "{entries} entries in one item");
        }
        assert_eq!(items.len(), 3);
        assert_eq!(docs, (0u8..5).map(|d| vec![d]).collect::<Vec<_>>());
        assert!(QueueItem::new(3).finish(Vec::new()).is_none());
    }

    fn sorted(entries: &[(u64, &str)]) -> Sorted {
        let mut group = Sorted::default();
        for (cf, key) in entries {
            group.push(*cf, key.as_bytes());
        }
        group.sort();
        group
    }

    fn take(groups: &mut [Sorted], n: usize) -> Vec<(u64, String)> {
        let mut out = Vec::new();
        take_merged(groups, n, |cf, key| {
            out.push((cf, String::from_utf8(key.to_vec()).unwrap()));
            Ok(())
        })
        .unwrap();
        out
    }

    #[test]
    fn merged_slices_come_in_family_and_key_order_with_repeats_once() {
        let mut groups = [
            sorted(&[(2, "a"), (1, "c"), (1, "a"), (1, "c")]),
            sorted(&[(1, "b"), (1, "c"), (2, "a"), (1, "d")]),
        ];
        assert_eq!(groups[0].left(), 3, "a repeat within a group is dropped");
        let first = take(&mut groups, 3);
        assert_eq!(first, [(1, "a".into()), (1, "b".into()), (1, "c".into())]);
        assert_eq!(
            groups.iter().map(Sorted::left).sum::<usize>(),
            3,
            "the second group's (1, c) went with the slice that took the first's"
        );
        assert_eq!(take(&mut groups, 3), [(1, "d".into()), (2, "a".into())]);
        assert_eq!(take(&mut groups, 3), []);
    }
}
