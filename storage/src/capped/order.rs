//! The insertion order of a capped collection, kept in a column family of
//! its own (`CollectionMeta::natural`) beside the records, which stay
//! keyed by `_id` so every `_id` lookup, index entry and TTL entry works as
//! in any collection.
//!
//! ```text
//! key                      value
//! 00 ‖ seq : u64 BE        id_key (the record's key)      insertion order
//! 01 ‖ id_key              seq : u64 BE                   a record's position
//! 02                       next_seq ‖ first_seq ‖ bytes ‖ count, each u64 BE
//! ```
//!
//! `seq` grows by one per inserted document and is never reused, so a
//! forward scan of the `00` range is insertion order (`$natural: 1`) and
//! a tailable cursor resumes after the last `seq` it returned. The `01`
//! entries let a removal by `_id` (a delete, a TTL expiry) find the order
//! entry to remove with it. The totals (`02`) are the collection's bytes
//! and documents as the capping rule counts them, and `first_seq`, below
//! which every order entry is gone: finding the oldest document starts
//! there instead of stepping over the tombstones of everything already
//! removed. All three kinds of entry change in the batch of the write that
//! changes the records, so they never disagree with them.

use crate::engine::{Cf, Engine, KeyRange, Snapshot};
use ebb_lang::error::{Error, Result};

const ORDER: u8 = 0x00;
const POSITION: u8 = 0x01;
const TOTALS: u8 = 0x02;

/// The key of the order entry of `seq`.
pub fn order_key(seq: u64) -> Vec<u8> {
    let mut key = Vec::with_capacity(9);
    key.push(ORDER);
    key.extend_from_slice(&seq.to_be_bytes());
    key
}

/// The `seq` of an order entry's key.
pub fn seq_of(order_key: &[u8]) -> Result<u64> {
    match order_key {
        [ORDER, rest @ ..] if rest.len() == 8 => {
            Ok(u64::from_be_bytes(rest.try_into().expect("8 bytes")))
        }
        _ => Err(Error::corrupt("capped order key")),
    }
}

/// The order entries from `seq` on: insertion order.
pub fn range_from(seq: u64) -> KeyRange {
    KeyRange::new(order_key(seq), Some(vec![POSITION]))
}

/// The whole insertion order.
pub fn natural_range() -> KeyRange {
    range_from(0)
}

/// The key of the position entry of the record at `id_key`.
pub fn position_key(id_key: &[u8]) -> Vec<u8> {
    let mut key = Vec::with_capacity(1 + id_key.len());
    key.push(POSITION);
    key.extend_from_slice(id_key);
    key
}

/// The key holding the [`Totals`].
pub const TOTALS_KEY: &[u8] = &[TOTALS];

/// Decodes a position entry's value.
pub fn decode_seq(value: &[u8]) -> Result<u64> {
    let bytes: [u8; 8] = value
        .try_into()
        .map_err(|_| Error::corrupt("capped position entry"))?;
    Ok(u64::from_be_bytes(bytes))
}

/// The `seq` of the record at `id_key`, read from the engine.
pub fn position(engine: &dyn Engine, cf: Cf, id_key: &[u8]) -> Result<Option<u64>> {
    engine
        .get(cf, &position_key(id_key))?
        .map(|v| decode_seq(&v))
        .transpose()
}

/// Whether the order entry of `seq` exists in `snap` (a tailable cursor's
/// position, which capping may have removed).
pub fn holds(snap: &dyn Snapshot, cf: Cf, seq: u64) -> Result<bool> {
    Ok(snap.get(cf, &order_key(seq))?.is_some())
}

/// A capped collection's running totals.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Totals {
    /// The `seq` the next insert takes.
    pub next_seq: u64,
    /// No order entry below this remains.
    pub first_seq: u64,
    /// Bytes of the documents held (their BSON sizes).
    pub bytes: u64,
    /// Documents held.
    pub count: u64,
}

impl Totals {
    /// The committed totals (all zero for a new collection).
    pub fn read(engine: &dyn Engine, cf: Cf) -> Result<Totals> {
        match engine.get(cf, TOTALS_KEY)? {
            None => Ok(Totals::default()),
            Some(v) => Totals::decode(&v),
        }
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(32);
        for n in [self.next_seq, self.first_seq, self.bytes, self.count] {
            out.extend_from_slice(&n.to_be_bytes());
        }
        out
    }

    pub fn decode(bytes: &[u8]) -> Result<Totals> {
        if bytes.len() != 32 {
            return Err(Error::corrupt("capped totals"));
        }
        let n = |i: usize| u64::from_be_bytes(bytes[i * 8..i * 8 + 8].try_into().expect("8 bytes"));
        Ok(Totals {
            next_seq: n(0),
            first_seq: n(1),
            bytes: n(2),
            count: n(3),
        })
    }

    /// Counts a document of `size` bytes gone.
    pub fn forget(&mut self, size: usize) {
        self.bytes = self.bytes.saturating_sub(size as u64);
        self.count = self.count.saturating_sub(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn order_keys_sort_by_seq_and_before_positions() {
        assert!(order_key(1) < order_key(2));
        assert!(order_key(255) < order_key(256));
        assert!(order_key(u64::MAX) < position_key(&[0x00]));
        assert!(natural_range().upper.as_deref() == Some(&[POSITION][..]));
        assert_eq!(seq_of(&order_key(77)).unwrap(), 77);
        assert!(seq_of(&position_key(&[1, 2])).is_err());
    }

    #[test]
    fn golden_bytes() {
        assert_eq!(order_key(258), vec![0, 0, 0, 0, 0, 0, 0, 1, 2]);
        assert_eq!(position_key(&[0x0a, 0x03]), vec![1, 0x0a, 0x03]);
        let t = Totals {
            next_seq: 3,
            first_seq: 1,
            bytes: 80,
            count: 2,
        };
        assert_eq!(Totals::decode(&t.encode()).unwrap(), t);
        assert_eq!(t.encode()[7], 3);
    }
}
