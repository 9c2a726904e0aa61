//! The floor of an ascending TTL index: a key below which its Date bracket
//! is known to hold nothing.
//!
//! Point tombstones stay until compaction drops them, and a scan from the
//! start of the Date bracket walks every one of them: under a steady stream
//! of expiries each pass would walk all the tombstones of the passes before
//! it. A chunk that scanned from the floor raises it past what it deleted;
//! every write that puts an entry lowers it to that entry (the key
//! generator does it, see `index::keygen`). Scans and the earliest-due
//! lookup start at the floor. A descending TTL index keeps its oldest dates
//! at the end of the bracket, where the scan stops, and has no floor.

use std::sync::Mutex;

/// Where the expired entries of an ascending TTL index can start: no key
/// of the Date bracket sorts below it. Unknown (the bracket's start) until
/// a chunk has scanned from the bottom. Lives in the index's `KeyGen`, so a
/// new collection handle (DDL, collMod) starts unknown again.
#[derive(Debug, Default)]
pub struct Floor(Mutex<Option<Vec<u8>>>);

impl Floor {
    /// A write puts `key` into the index.
    pub fn lower(&self, key: &[u8]) {
        let mut floor = self.0.lock().expect("floor lock");
        if floor.as_deref().is_some_and(|f| key < f) {
            *floor = Some(key.to_vec());
        }
    }

    /// The lowest key that can exist in `[start, ...)`.
    pub(crate) fn base(&self, start: Vec<u8>) -> Vec<u8> {
        match &*self.0.lock().expect("floor lock") {
            Some(f) if *f > start => f.clone(),
            _ => start,
        }
    }

    /// Whether the floor is exactly `key`.
    pub(crate) fn is_at(&self, key: &[u8]) -> bool {
        self.0.lock().expect("floor lock").as_deref() == Some(key)
    }

    /// Nothing below `key` is left.
    pub(crate) fn raise(&self, key: Vec<u8>) {
        *self.0.lock().expect("floor lock") = Some(key);
    }
}

/// The lowest key at or above `start` that an index with `floor` can hold:
/// the floor, when there is one above `start`.
pub fn lowest_possible(floor: Option<&Floor>, start: Vec<u8>) -> Vec<u8> {
    match floor {
        Some(floor) => floor.base(start),
        None => start,
    }
}
