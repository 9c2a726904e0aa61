//! The largest record key a collection may hold, kept for its writer: an
//! insert whose key lies above it needs no read to know the key is free,
//! which spares the uniqueness lookup for ascending `_id`s (ObjectIds a
//! driver makes, counters, timestamps).
//!
//! The bound is read from the engine the first time it is needed and only
//! ever raised afterwards (a deletion leaves it where it is), by every
//! record key the writer puts, before that put commits. So it may stand
//! above every stored key but never below one. It lives in the
//! collection's `IndexSet`, which a catalog change replaces; the new set
//! reads it again from what is committed.

use std::sync::Mutex;

use crate::engine::{Cf, Direction, Engine, KeyRange};
use crate::error::Result;

/// See the module header.
#[derive(Debug, Default)]
pub struct RecordBound(Mutex<Bound>);

#[derive(Debug, Default)]
struct Bound {
    /// Whether the engine's largest record key has been read into `last`.
    read: bool,
    /// No record key above this one is stored (None: none is, as far as
    /// `read` says).
    last: Option<Vec<u8>>,
}

impl RecordBound {
    /// Whether no record key at or above `key` can be stored in `records`:
    /// `key` is above the bound.
    pub fn is_above(&self, engine: &dyn Engine, records: Cf, key: &[u8]) -> Result<bool> {
        let mut bound = self.0.lock().expect("record bound lock");
        if !bound.read {
            let cursor = engine.cursor(records, KeyRange::all(), Direction::Reverse)?;
            if cursor.valid() {
                let stored = cursor.key().to_vec();
                bound.last = bound.last.take().max(Some(stored));
            } else {
                cursor.status()?;
            }
            bound.read = true;
        }
        Ok(bound.last.as_deref().is_none_or(|last| key > last))
    }

    /// Notes a record key about to be put, read from the engine yet or
    /// not. Raising before the commit is safe: the bound only claims that
    /// nothing lies above it.
    pub fn raise(&self, key: &[u8]) {
        let mut bound = self.0.lock().expect("record bound lock");
        match &mut bound.last {
            // Reuses the buffer: ascending inserts raise it once each.
            Some(last) if key > last.as_slice() => {
                last.clear();
                last.extend_from_slice(key);
            }
            Some(_) => {}
            None => bound.last = Some(key.to_vec()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bound_is_read_once_and_only_raised() {
        let (_dir, engine) = crate::testing::temp_engine();
        let cf = Cf::Id(10);
        engine.create_cf(cf).unwrap();
        let bound = RecordBound::default();
        assert!(bound.is_above(&engine, cf, b"a").unwrap(), "nothing stored");

        let (_dir, engine) = crate::testing::temp_engine();
        engine.create_cf(cf).unwrap();
        let mut batch = engine.batch();
        batch.put(cf, b"m", b"").unwrap();
        batch.commit(false).unwrap();
        let bound = RecordBound::default();
        // A key put before the first read counts, though not committed.
        bound.raise(b"p");
        assert!(!bound.is_above(&engine, cf, b"m").unwrap());
        assert!(!bound.is_above(&engine, cf, b"p").unwrap());
        assert!(bound.is_above(&engine, cf, b"q").unwrap());
        bound.raise(b"t");
        bound.raise(b"b");
        assert!(!bound.is_above(&engine, cf, b"s").unwrap(), "raised to t");
        assert!(bound.is_above(&engine, cf, b"u").unwrap(), "never lowered");
    }
}
