//! The values of a `$in` or `$nin`, kept sorted and without duplicates in
//! MongoDB's order, so a membership test is a binary search: a filter of a
//! million `_id`s checks each document in twenty comparisons instead of a
//! million (mongod's InMatchExpression keeps its list the same way).
//!
//! The order is the simple (binary) collation's. Under another collation
//! two different strings may be equal, so membership falls back to a
//! linear scan there.

use std::cmp::Ordering;
use std::ops::Deref;

use bson::{RawBson, RawBsonRef};

use crate::encoding::cmp::Cmp;

#[derive(Debug, Clone, PartialEq)]
pub struct InList {
    values: Vec<RawBson>,
    has_null: bool,
}

impl InList {
    pub fn new(mut values: Vec<RawBson>) -> InList {
        values.sort_by(|a, b| Cmp::BINARY.values(a.as_raw_bson_ref(), b.as_raw_bson_ref()));
        values.dedup_by(|a, b| {
            Cmp::BINARY.values(a.as_raw_bson_ref(), b.as_raw_bson_ref()) == Ordering::Equal
        });
        let has_null = values.iter().any(|v| matches!(v, RawBson::Null));
        InList { values, has_null }
    }

    /// Whether `null` is listed (it also matches missing and `undefined`).
    pub fn has_null(&self) -> bool {
        self.has_null
    }

    /// Whether a listed value equals `value` under `cmp`.
    pub fn contains(&self, value: RawBsonRef<'_>, cmp: Cmp<'_>) -> bool {
        if cmp.collation().is_some() {
            return self
                .values
                .iter()
                .any(|v| cmp.values(value, v.as_raw_bson_ref()) == Ordering::Equal);
        }
        self.values
            .binary_search_by(|v| Cmp::BINARY.values(v.as_raw_bson_ref(), value))
            .is_ok()
    }
}

impl Deref for InList {
    type Target = [RawBson];

    fn deref(&self) -> &[RawBson] {
        &self.values
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_of_every_type_are_one_value_and_found_by_any_type() {
        let list = InList::new(vec![
            RawBson::Int32(5),
            RawBson::Double(5.0),
            RawBson::String("a".into()),
            RawBson::Int64(1),
            RawBson::Null,
        ]);
        assert_eq!(list.len(), 4, "5 and 5.0 are one value");
        assert!(list.has_null());
        assert!(list.contains(RawBsonRef::Int64(5), Cmp::BINARY));
        assert!(list.contains(RawBsonRef::Double(1.0), Cmp::BINARY));
        assert!(list.contains(RawBsonRef::String("a"), Cmp::BINARY));
        assert!(!list.contains(RawBsonRef::String("A"), Cmp::BINARY));
        assert!(!list.contains(RawBsonRef::Int32(2), Cmp::BINARY));
    }

    #[test]
    fn a_million_values_in_any_order_are_all_found() {
        let list = InList::new((0..1_000_000).rev().map(RawBson::Int32).collect());
        let found = (0..100_000)
            .filter(|i| list.contains(RawBsonRef::Int32(i * 7), Cmp::BINARY))
            .count();
        assert_eq!(found, 100_000);
        assert!(!list.contains(RawBsonRef::Int32(-1), Cmp::BINARY));
    }
}
