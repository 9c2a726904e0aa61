//! A capped collection's bounds as the catalog stores them
//! (`{capped: true, size, max}`, listCollections' shape) and the checks
//! `create` and `convertToCapped` apply to them, after mongod 8.0's
//! `CollectionOptions`: `size` is kept as given (8.0 no longer rounds it
//! to 256 bytes), at most 1 PiB; `max` below 2^31, where 0 or less
//! becomes 2^31 − 1 as in mongod (which listCollections then shows).

use bson::{Bson, Document};

use ebb_lang::encoding::display::number;
use ebb_lang::error::{Error, Result};

/// The largest `size` mongod accepts: 1 PiB.
pub const MAX_CAPPED_BYTES: i64 = 1 << 50;

/// `max` must stay below this (mongod: "has to be < 2^31").
pub const MAX_CAPPED_DOCS_LIMIT: i64 = 1 << 31;

/// The bounds of a capped collection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CappedOptions {
    /// Bytes of documents (BSON sizes) the collection keeps at most.
    pub size: i64,
    /// Documents it keeps at most, if `max` was given.
    pub max: Option<i64>,
}

/// Whether stored (or requested) collection options make it capped.
pub fn is_capped(options: &Document) -> bool {
    match options.get("capped") {
        Some(Bson::Boolean(b)) => *b,
        Some(Bson::Int32(n)) => *n != 0,
        Some(Bson::Int64(n)) => *n != 0,
        Some(Bson::Double(n)) => *n != 0.0,
        _ => false,
    }
}

impl CappedOptions {
    /// Checks a requested `size` (already known to be at least 1) and
    /// `max` (0 or less: 2^31 − 1) as mongod does.
    pub fn new(size: i64, max: Option<i64>) -> Result<Self> {
        if size > MAX_CAPPED_BYTES {
            return Err(Error::bad_value("size cannot exceed 1 PB"));
        }
        if let Some(max) = max
            && max >= MAX_CAPPED_DOCS_LIMIT
        {
            return Err(Error::bad_value(
                "max in a capped collection has to be < 2^31 or not set",
            ));
        }
        Ok(CappedOptions {
            size,
            max: max.map(|m| if m <= 0 { i64::from(i32::MAX) } else { m }),
        })
    }

    /// The bounds a catalog record's options hold, if capped.
    pub fn from_stored(options: &Document) -> Option<Self> {
        if !is_capped(options) {
            return None;
        }
        let stored = |field: &str| match options.get(field) {
            Some(Bson::Int32(n)) => Some(i64::from(*n)),
            Some(Bson::Int64(n)) => Some(*n),
            Some(Bson::Double(n)) => Some(*n as i64),
            _ => None,
        };
        Some(CappedOptions {
            size: stored("size").unwrap_or(MAX_CAPPED_BYTES),
            max: stored("max"),
        })
    }

    /// The options to store, first in the record as mongod lists them:
    /// numbers as mongod's `appendNumber` writes them (an int when it
    /// fits).
    pub fn to_document(&self) -> Document {
        let mut d = bson::doc! { "capped": true, "size": number(self.size) };
        if let Some(max) = self.max {
            d.insert("max", number(max));
        }
        d
    }

    /// Whether holding `bytes` in `count` documents exceeds the bounds.
    pub fn exceeded(&self, bytes: u64, count: u64) -> bool {
        bytes > self.size as u64 || self.max.is_some_and(|m| count > m as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_are_checked_as_mongod_checks_them() {
        assert!(CappedOptions::new(MAX_CAPPED_BYTES, None).is_ok());
        let too_big = CappedOptions::new(MAX_CAPPED_BYTES + 1, None).unwrap_err();
        assert_eq!(too_big.message, "size cannot exceed 1 PB");
        assert!(CappedOptions::new(4096, Some(1 << 31)).is_err());
        let unbounded = Some(i64::from(i32::MAX));
        assert_eq!(CappedOptions::new(4096, Some(0)).unwrap().max, unbounded);
        assert_eq!(CappedOptions::new(4096, Some(-3)).unwrap().max, unbounded);
        assert_eq!(CappedOptions::new(4096, None).unwrap().max, None);
    }

    #[test]
    fn stored_options_round_trip() {
        let opts = CappedOptions::new(5000, Some(10)).unwrap();
        let stored = opts.to_document();
        assert_eq!(
            stored,
            bson::doc! { "capped": true, "size": 5000, "max": 10 }
        );
        assert_eq!(CappedOptions::from_stored(&stored), Some(opts));
        assert_eq!(CappedOptions::from_stored(&bson::doc! {}), None);
    }

    #[test]
    fn either_bound_caps() {
        let opts = CappedOptions::new(100, Some(3)).unwrap();
        assert!(!opts.exceeded(100, 3));
        assert!(opts.exceeded(101, 1));
        assert!(opts.exceeded(10, 4));
    }
}
