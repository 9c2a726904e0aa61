//! The record keys of expired documents that still wait for the sweep:
//! their records, left in place by a chunk (every read passes over them,
//! `engine::held`), or their entries in the indexes the sweep deletes
//! (the writer sweeps before it stores a record at one of them,
//! `queue::Sweep::holds`).
//!
//! Every key held gets an ordinal, in the order chunks queued them; one
//! hash table maps each key's hash to its ordinal, and the keys themselves
//! stay in the lists their chunks made, hashed where the chunk was
//! planned, off the writer ([`HeldList`]): the writer adds a chunk's
//! keys with one table store each (hashing them on the writer was a
//! tenth of a chunk's commit on `interleaved`). The sweep releases the
//! keys below an ordinal. A reader's view ([`HeldKeys::view`]) is the
//! state published when it took it: the lists, the range of ordinals
//! held, and the table, which later keys may join but whose keys a later
//! release never leaves (the table is rebuilt into a new one instead), so
//! a view taken before a release keeps hiding what its snapshot still
//! stores.

use std::sync::{Arc, Mutex, RwLock};

use crate::engine::held::{HeldFamily, HeldView};

/// The table's hash of a key. Its seeds are fixed, so a list can be
/// hashed on another thread than the one adding it; a key made to collide
/// costs a key comparison, never a wrong answer.
const HASHER: ahash::RandomState = ahash::RandomState::with_seeds(
    0x243f_6a88_85a3_08d3,
    0x1319_8a2e_0370_7344,
    0xa409_3822_299f_31d0,
    0x082e_fa98_ec4e_6c89,
);

/// The smallest table: 1,024 slots.
const MIN_SLOTS: usize = 1 << 10;

/// The record keys one chunk queued, with their hashes and their range.
/// The keys lie end to end in one buffer: a backlog past capacity holds
/// millions of them, and a vector per key cost its 24-byte header and
/// an allocation of at least 16 bytes on top of the key's own bytes.
#[derive(Debug, Default)]
pub(super) struct HeldList {
    bytes: Vec<u8>,
    /// Where each key ends in `bytes`.
    ends: Vec<usize>,
    hashes: Vec<u64>,
    least: Vec<u8>,
    greatest: Vec<u8>,
}

impl HeldList {
    /// Hashes `keys`.
    pub fn new(keys: Vec<Vec<u8>>) -> Self {
        let hashes = keys.iter().map(|k| HASHER.hash_one(k)).collect();
        let mut range: Option<(&Vec<u8>, &Vec<u8>)> = None;
        for k in &keys {
            range = Some(range.map_or((k, k), |(lo, hi)| (lo.min(k), hi.max(k))));
        }
        let (least, greatest) =
            range.map_or_else(Default::default, |(lo, hi)| (lo.clone(), hi.clone()));
        let mut bytes = Vec::with_capacity(keys.iter().map(Vec::len).sum());
        let mut ends = Vec::with_capacity(keys.len());
        for k in &keys {
            bytes.extend_from_slice(k);
            ends.push(bytes.len());
        }
        HeldList {
            bytes,
            ends,
            hashes,
            least,
            greatest,
        }
    }

    pub fn len(&self) -> usize {
        self.ends.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// The `i`-th key.
    fn key(&self, i: usize) -> Option<&[u8]> {
        let end = *self.ends.get(i)?;
        let start = i.checked_sub(1).map_or(0, |j| self.ends[j]);
        Some(&self.bytes[start..end])
    }
}

/// See the module header.
#[derive(Debug, Default)]
pub struct HeldKeys {
    current: RwLock<Arc<Held>>,
    /// One change at a time.
    edit: Mutex<()>,
}

/// One published state of the keys held.
#[derive(Debug, Default)]
struct Held {
    table: Arc<RwLock<Table>>,
    /// By ascending first ordinal.
    lists: Arc<Vec<Placed>>,
    /// Ordinals `low..high` are held (those no list covers are not).
    low: u64,
    high: u64,
    /// The least and greatest key of the lists: a key outside is not
    /// held, without a probe. Documents expire oldest first, and `_id`s
    /// mostly grow with time, so a scan of a collection under a steady
    /// stream passes its live records here.
    least: Vec<u8>,
    greatest: Vec<u8>,
}

#[derive(Debug, Clone)]
struct Placed {
    first: u64,
    list: Arc<HeldList>,
}

/// Open addressing, linear probing, at most half full. A slot holds the
/// upper half of a key's hash and its ordinal's offset from `base`, plus
/// one (zero is an empty slot). A key's home slot is the top bits of its
/// hash, which the slot keeps: a larger table takes the slots of a smaller
/// one in order, each to a home at or after the one it had, so it is
/// filled front to back instead of at random (`grown`: re-inserting every
/// key at random was a third of a chunk's commit once a million waited).
#[derive(Debug, Default)]
struct Table {
    base: u64,
    slots: Vec<u64>,
    used: usize,
}

/// The hash bits a slot keeps (its upper half).
const TAG: u64 = !0xffff_ffff;

impl Table {
    /// An empty table with room for `keys` (filled to a quarter at most).
    fn with_room(base: u64, keys: usize) -> Self {
        let slots = (keys * 4).next_power_of_two().clamp(MIN_SLOTS, 1 << 32);
        // Zeroed by writing, not by `vec![0; n]`: fresh zeroed pages map
        // the shared zero page, and a probe's read before its write then
        // cost a second fault and a TLB flush on every other core.
        #[allow(clippy::slow_vector_initialization)]
        let mut zeroed = Vec::with_capacity(slots);
        zeroed.resize(slots, 0);
        Table {
            base,
            slots: zeroed,
            used: 0,
        }
    }

    fn has_room(&self, keys: usize, high: u64) -> bool {
        (self.used + keys) * 2 <= self.slots.len() && high - self.base < u64::from(u32::MAX)
    }

    fn home(&self, hash: u64) -> usize {
        // At least 1,024 slots: the shift is below 64.
        (hash >> (64 - self.slots.len().trailing_zeros())) as usize
    }

    fn insert(&mut self, hash: u64, ordinal: u64) {
        let mask = self.slots.len() - 1;
        let mut i = self.home(hash);
        while self.slots[i] != 0 {
            i = (i + 1) & mask;
        }
        self.slots[i] = (hash & TAG) | (ordinal - self.base + 1);
        self.used += 1;
    }

    /// The ordinals at or above `low` in a new table based there, with
    /// room for `more`.
    fn grown(&self, low: u64, more: usize) -> Table {
        let live = |slot: u64| slot != 0 && self.base + (slot & !TAG) > low;
        let kept = self.slots.iter().filter(|&&s| live(s)).count();
        let mut table = Table::with_room(low, kept + more);
        for &slot in self.slots.iter().filter(|&&s| live(s)) {
            table.insert(slot & TAG, self.base + (slot & !TAG) - 1);
        }
        table
    }

    /// Calls `found` with each ordinal stored under `hash`'s tag until it
    /// returns true.
    fn find(&self, hash: u64, mut found: impl FnMut(u64) -> bool) -> bool {
        if self.slots.is_empty() {
            return false;
        }
        let mask = self.slots.len() - 1;
        let mut i = self.home(hash);
        loop {
            let slot = self.slots[i];
            if slot == 0 {
                return false;
            }
            if slot & TAG == hash & TAG && found(self.base + (slot & !TAG) - 1) {
                return true;
            }
            i = (i + 1) & mask;
        }
    }
}

impl Held {
    fn new(table: Arc<RwLock<Table>>, lists: Vec<Placed>, low: u64, high: u64) -> Self {
        let least = lists.iter().map(|p| &p.list.least).min();
        let greatest = lists.iter().map(|p| &p.list.greatest).max();
        Held {
            least: least.cloned().unwrap_or_default(),
            greatest: greatest.cloned().unwrap_or_default(),
            table,
            lists: Arc::new(lists),
            low,
            high,
        }
    }

    fn key_at(&self, ordinal: u64) -> Option<&[u8]> {
        let i = self
            .lists
            .partition_point(|p| p.first <= ordinal)
            .checked_sub(1)?;
        let p = &self.lists[i];
        let offset = usize::try_from(ordinal - p.first).ok()?;
        p.list.key(offset)
    }

    fn live(&self) -> usize {
        self.lists.iter().map(|p| p.list.len()).sum()
    }

    /// A table of the keys held, with room for `more`.
    fn rebuilt(&self, more: usize) -> Table {
        let table = self.table.read().expect("held keys table");
        table.grown(self.low, more)
    }
}

impl HeldView for Held {
    fn holds(&self, key: &[u8]) -> bool {
        if self.lists.is_empty() || key < self.least.as_slice() || key > self.greatest.as_slice() {
            return false;
        }
        let hash = HASHER.hash_one(key);
        let table = self.table.read().expect("held keys table");
        table.find(hash, |o| {
            (self.low..self.high).contains(&o) && self.key_at(o) == Some(key)
        })
    }
}

impl HeldFamily for HeldKeys {
    fn view(&self) -> Arc<dyn HeldView> {
        self.current()
    }
}

impl HeldKeys {
    fn current(&self) -> Arc<Held> {
        self.current.read().expect("held keys").clone()
    }

    fn publish(&self, held: Held) {
        *self.current.write().expect("held keys") = Arc::new(held);
    }

    /// Holds a chunk's keys; returns the ordinal of its first (what
    /// [`withdraw`](Self::withdraw) takes).
    pub fn add(&self, list: HeldList) -> u64 {
        let _edit = self.edit.lock().expect("held keys edit");
        let cur = self.current();
        let first = cur.high;
        if list.is_empty() {
            return first;
        }
        let high = first + list.len() as u64;
        let fits = cur
            .table
            .read()
            .expect("held keys table")
            .has_room(list.len(), high);
        let table = if fits {
            let mut t = cur.table.write().expect("held keys table");
            for (i, &h) in list.hashes.iter().enumerate() {
                t.insert(h, first + i as u64);
            }
            cur.table.clone()
        } else {
            let mut t = cur.rebuilt(list.len());
            for (i, &h) in list.hashes.iter().enumerate() {
                t.insert(h, first + i as u64);
            }
            Arc::new(RwLock::new(t))
        };
        let mut lists: Vec<Placed> = cur.lists.to_vec();
        lists.push(Placed {
            first,
            list: Arc::new(list),
        });
        self.publish(Held::new(table, lists, cur.low, high));
        first
    }

    /// A chunk whose keys were added from `first` did not commit: they are
    /// not held.
    pub fn withdraw(&self, first: u64) {
        let _edit = self.edit.lock().expect("held keys edit");
        let cur = self.current();
        let lists = (cur.lists.iter())
            .filter(|p| p.first != first)
            .cloned()
            .collect();
        self.publish(Held::new(cur.table.clone(), lists, cur.low, cur.high));
    }

    /// The ordinal the next key added takes: a sweep that began now
    /// releases what is below it when it ends.
    pub fn mark(&self) -> u64 {
        self.current().high
    }

    /// Releases every key below ordinal `end` (the caller holds the
    /// engine's hidden-keys gate, right after the sweep that deleted their
    /// records committed). A table mostly of released keys is rebuilt.
    pub fn release_below(&self, end: u64) {
        let _edit = self.edit.lock().expect("held keys edit");
        let cur = self.current();
        let low = end.clamp(cur.low, cur.high);
        let lists: Vec<Placed> = (cur.lists.iter())
            .filter(|p| p.first + p.list.len() as u64 > low)
            .cloned()
            .collect();
        let mut held = Held::new(cur.table.clone(), lists, low, cur.high);
        let used = cur.table.read().expect("held keys table").used;
        if used > MIN_SLOTS && used > 2 * held.live() {
            held.table = Arc::new(RwLock::new(held.rebuilt(0)));
        }
        self.publish(held);
    }

    /// Releases everything held.
    pub fn clear(&self) {
        self.release_below(u64::MAX);
    }

    /// How many keys are held (those of lists partly released included).
    pub fn len(&self) -> usize {
        self.current().live()
    }

    /// Whether no key is held.
    pub fn is_empty(&self) -> bool {
        self.current().lists.is_empty()
    }

    /// Whether `id` is held.
    pub fn contains(&self, id: &[u8]) -> bool {
        self.current().holds(id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(i: u32) -> Vec<u8> {
        format!("id{i:08}").into_bytes()
    }

    fn list(keys: impl Iterator<Item = u32>) -> HeldList {
        let mut keys: Vec<Vec<u8>> = keys.map(key).collect();
        keys.sort();
        HeldList::new(keys)
    }

    #[test]
    fn held_keys_are_found_and_others_are_not_through_every_growth() {
        let held = HeldKeys::default();
        assert!(!held.contains(&key(1)), "nothing held");
        // Lists of 8,192 interleaved with one another, past several
        // rebuilds of the table.
        for l in 0..40u32 {
            held.add(list((0..8192).map(|i| i * 40 + l)));
        }
        for i in (0..8192 * 40).step_by(97) {
            assert!(held.contains(&key(i)), "key {i} is held");
        }
        let strangers = (8192 * 40..8192 * 40 + 100_000).filter(|&i| held.contains(&key(i)));
        assert_eq!(strangers.count(), 0);
    }

    #[test]
    fn a_release_frees_the_keys_below_its_mark_and_an_older_view_keeps_them() {
        let held = HeldKeys::default();
        held.add(list(0..3000));
        let mark = held.mark();
        held.add(list(3000..4000));
        let before = held.view();
        held.release_below(mark);
        assert!(!held.contains(&key(10)), "released");
        assert!(held.contains(&key(3500)), "added after the mark");
        assert!(before.holds(&key(10)), "a view taken before the release");
        // Keys added again after their release are held again.
        held.add(list(5..6));
        assert!(held.contains(&key(5)));
        assert!(!held.contains(&key(6)));
        held.clear();
        assert!(held.is_empty() && !held.contains(&key(3500)) && !held.contains(&key(5)));
        assert!(before.holds(&key(3500)));
    }

    #[test]
    fn keys_outside_the_range_held_are_answered_without_the_table() {
        let held = HeldKeys::default();
        held.add(list(100..200));
        let mark = held.mark();
        held.add(list(300..400));
        assert!(!held.contains(&key(50)) && !held.contains(&key(450)));
        assert!(!held.contains(&key(250)), "between the lists");
        assert!(
            held.contains(&key(100)) && held.contains(&key(399)),
            "the bounds"
        );
        held.release_below(mark);
        assert!(!held.contains(&key(100)) && !held.contains(&key(199)));
        assert!(held.contains(&key(300)) && held.contains(&key(350)));
    }

    #[test]
    fn withdrawn_keys_are_not_held() {
        let held = HeldKeys::default();
        held.add(list(0..10));
        let first = held.add(list(10..20));
        held.withdraw(first);
        assert!(held.contains(&key(3)));
        assert!(!held.contains(&key(13)));
        held.add(list(20..30));
        assert!(held.contains(&key(25)) && !held.contains(&key(15)));
    }
}
