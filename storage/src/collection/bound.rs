//! The largest record key a collection may hold, kept for its writer: an
//! insert whose key lies above it needs no read to know the key is free,
//! which spares the uniqueness lookup for ascending `_id`s (ObjectIds a
//! driver makes, counters, timestamps).
//!
//! The bound is read from the engine the first time it is needed and only
//! ever raised afterwards (a deletion leaves it where it is), by every
//! record key the writer puts, before that put commits. So it may stand
//! above every stored key but never below one. It lives in the
//! collection's `Collection`, which a catalog change replaces; the new set
//! reads it again from what is committed.
//!
//! It also keeps a few gaps below it: when a batch's smallest key lies
//! above the bound, nothing is stored between the bound and that key. Batches
//! from concurrent clients arrive a little out of order (the batch of ids
//! 4,000-4,999 after the one of 5,000-5,999), and the late one's keys fall
//! in such a gap: they too need no read. A put inside a gap moves the gap's
//! lower end up to it, so a gap only ever shrinks.

use std::collections::VecDeque;
use std::sync::Mutex;

use crate::engine::{Cf, Direction, Engine, KeyRange};
use ebb_lang::error::Result;

/// See the module header.
#[derive(Debug, Default)]
pub struct RecordBound(Mutex<Bound>);

/// Gaps kept below the bound: enough for a few clients' batches arriving
/// out of order; the oldest goes first.
const MAX_GAPS: usize = 8;

#[derive(Debug, Default)]
struct Bound {
    /// Whether the engine's largest record key has been read into `last`.
    read: bool,
    /// No record key above this one is stored (None: none is, as far as
    /// `read` says).
    last: Option<Vec<u8>>,
    gaps: VecDeque<Gap>,
    /// No gap reaches above this key (empty: no gap was ever kept), so an
    /// ascending put past it skips the gaps.
    gaps_top: Vec<u8>,
}

/// No record key lies strictly between `lo` and `hi` (an empty `lo` stands
/// below every key).
#[derive(Debug)]
struct Gap {
    lo: Vec<u8>,
    hi: Vec<u8>,
}

impl Gap {
    fn holds(&self, key: &[u8]) -> bool {
        self.lo.as_slice() < key && key < self.hi.as_slice()
    }
}

impl Bound {
    fn read(&mut self, engine: &dyn Engine, records: Cf) -> Result<()> {
        if !self.read {
            let cursor = engine.cursor(records, KeyRange::all(), Direction::Reverse)?;
            if cursor.valid() {
                let stored = cursor.key().to_vec();
                self.last = self.last.take().max(Some(stored));
            } else {
                cursor.status()?;
            }
            self.read = true;
        }
        Ok(())
    }

    fn above(&self, key: &[u8]) -> bool {
        self.last.as_deref().is_none_or(|last| key > last)
    }

    /// Whether no record can be stored at `key`: above the bound or in a gap.
    fn free(&self, key: &[u8]) -> bool {
        self.above(key) || self.gaps.iter().any(|g| g.holds(key))
    }

    /// Notes a record key about to be put. Raising before the commit is
    /// safe: the bound only claims that nothing lies above it. A key below
    /// the bound shrinks the gap it falls in to the part above it.
    fn raise(&mut self, key: &[u8]) {
        match &mut self.last {
            // Reuses the buffer: ascending inserts raise it once each.
            Some(last) if key > last.as_slice() => {
                last.clear();
                last.extend_from_slice(key);
            }
            Some(_) => {}
            None => self.last = Some(key.to_vec()),
        }
        // A gap reaches up to a key above the bound until that key is put.
        if key < self.gaps_top.as_slice() {
            for gap in self.gaps.iter_mut().filter(|g| g.holds(key)) {
                gap.lo.clear();
                gap.lo.extend_from_slice(key);
            }
        }
    }
}

impl RecordBound {
    /// Whether no record key equal to `key` can be stored in `records`:
    /// `key` is above the bound or inside one of its gaps.
    pub fn is_free(&self, engine: &dyn Engine, records: Cf, key: &[u8]) -> Result<bool> {
        let mut bound = self.0.lock().expect("record bound lock");
        bound.read(engine, records)?;
        Ok(bound.free(key))
    }

    /// Notes that nothing is stored between the bound and `key` when `key`
    /// lies above the bound (a batch's smallest key, before it is put).
    pub fn note_gap_below(&self, engine: &dyn Engine, records: Cf, key: &[u8]) -> Result<()> {
        let mut bound = self.0.lock().expect("record bound lock");
        bound.read(engine, records)?;
        if bound.above(key) {
            let lo = bound.last.clone().unwrap_or_default();
            if bound.gaps.len() == MAX_GAPS {
                bound.gaps.pop_front();
            }
            bound.gaps.push_back(Gap {
                lo,
                hi: key.to_vec(),
            });
            if key > bound.gaps_top.as_slice() {
                bound.gaps_top = key.to_vec();
            }
        }
        Ok(())
    }

    /// [`RecordBound::is_free`], then raises the bound past `key`, under one
    /// lock: the insert path asks once per document.
    pub fn claim(&self, engine: &dyn Engine, records: Cf, key: &[u8]) -> Result<bool> {
        let mut bound = self.0.lock().expect("record bound lock");
        bound.read(engine, records)?;
        let free = bound.free(key);
        bound.raise(key);
        Ok(free)
    }

    /// Notes a record key about to be put, read from the engine yet or
    /// not (the tests' way to put a key; the writer claims it).
    #[cfg(test)]
    fn raise(&self, key: &[u8]) {
        self.0.lock().expect("record bound lock").raise(key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An engine with an empty records family.
    fn records() -> (tempfile::TempDir, crate::engine::rocks::RocksEngine, Cf) {
        let (dir, engine) = crate::testing::temp_engine();
        let cf = Cf::Id(10);
        engine.create_cf(cf).unwrap();
        (dir, engine, cf)
    }

    #[test]
    fn the_bound_is_read_once_and_only_raised() {
        let (_dir, engine, cf) = records();
        let bound = RecordBound::default();
        assert!(bound.is_free(&engine, cf, b"a").unwrap(), "nothing stored");

        let (_dir, engine, cf) = records();
        let mut batch = engine.batch();
        batch.put(cf, b"m", b"").unwrap();
        batch.commit(false).unwrap();
        let bound = RecordBound::default();
        // A key put before the first read counts, though not committed.
        bound.raise(b"p");
        assert!(!bound.is_free(&engine, cf, b"m").unwrap());
        assert!(!bound.is_free(&engine, cf, b"p").unwrap());
        assert!(bound.is_free(&engine, cf, b"q").unwrap());
        bound.raise(b"t");
        bound.raise(b"b");
        assert!(!bound.is_free(&engine, cf, b"s").unwrap(), "raised to t");
        assert!(bound.is_free(&engine, cf, b"u").unwrap(), "never lowered");
    }

    #[test]
    fn a_gap_below_a_batch_frees_the_keys_in_it_until_they_are_put() {
        let (_dir, engine, cf) = records();
        let mut batch = engine.batch();
        batch.put(cf, b"c", b"").unwrap();
        batch.commit(false).unwrap();
        let bound = RecordBound::default();
        // The batch k..m arrives first: nothing lies between c and k.
        bound.note_gap_below(&engine, cf, b"k").unwrap();
        for key in [b"k", b"l", b"m"] {
            bound.raise(key);
        }
        assert!(!bound.is_free(&engine, cf, b"c").unwrap(), "stored");
        assert!(!bound.is_free(&engine, cf, b"k").unwrap(), "put");
        assert!(bound.is_free(&engine, cf, b"e").unwrap(), "in the gap");
        assert!(bound.is_free(&engine, cf, b"g").unwrap(), "in the gap");
        // The late batch e..g: each put shrinks the gap to above it.
        bound.raise(b"e");
        assert!(!bound.is_free(&engine, cf, b"e").unwrap(), "put");
        assert!(!bound.is_free(&engine, cf, b"d").unwrap(), "below a put");
        assert!(bound.is_free(&engine, cf, b"g").unwrap());
        // A key between the bound and a gap's upper end, put before that
        // end: the gap shrinks too.
        bound.note_gap_below(&engine, cf, b"x").unwrap();
        bound.raise(b"p");
        assert!(!bound.is_free(&engine, cf, b"p").unwrap(), "put");
        assert!(!bound.is_free(&engine, cf, b"o").unwrap(), "below a put");
        assert!(
            bound.is_free(&engine, cf, b"q").unwrap(),
            "still in the gap"
        );
        // A key above the bound leaves no gap behind a later, lower one.
        bound.note_gap_below(&engine, cf, b"f").unwrap();
        assert!(bound.is_free(&engine, cf, b"g").unwrap(), "the first gap");
    }

    #[test]
    fn only_the_newest_gaps_are_kept() {
        let (_dir, engine, cf) = records();
        let bound = RecordBound::default();
        let key = |i: usize| format!("k{i:03}").into_bytes();
        // Batches of one key, every other one skipped: a gap below each.
        for i in (0..2 * (MAX_GAPS + 2)).step_by(2) {
            bound.note_gap_below(&engine, cf, &key(i + 1)).unwrap();
            bound.raise(&key(i + 1));
        }
        let free = |i| bound.is_free(&engine, cf, &key(i)).unwrap();
        assert!(!free(2), "an evicted gap reads as stored");
        assert!(free(2 * (MAX_GAPS + 1)), "the newest gap is kept");
        assert!(!free(1), "put");
    }
}
