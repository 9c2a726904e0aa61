//! Reading values the way the schema keywords do: a document's fields by
//! exact name (property names are not dotted paths), and equality as
//! `enum` and `uniqueItems` see it — MongoDB's comparison (`1`, `1.0` and
//! `NumberLong(1)` are equal) with the fields of documents in any order.
//! Shared by parsing (duplicate `enum` values), matching and explaining.

use std::cmp::Ordering;

use bson::{RawArray, RawBsonRef, RawDocument};

use crate::encoding::cmp::compare_values;
use crate::query::path::elements;

/// Whether two values are equal for `enum` and `uniqueItems`: MongoDB's
/// comparison, with the fields of documents in any order.
pub(super) fn same_value(a: RawBsonRef<'_>, b: RawBsonRef<'_>) -> bool {
    compare_unordered(a, b) == Ordering::Equal
}

/// A total order whose equality is [`same_value`]: documents compare by
/// their fields sorted by name.
fn compare_unordered(a: RawBsonRef<'_>, b: RawBsonRef<'_>) -> Ordering {
    match (a, b) {
        (RawBsonRef::Document(x), RawBsonRef::Document(y)) => {
            let (x, y) = (sorted_fields(x), sorted_fields(y));
            for ((kx, vx), (ky, vy)) in x.iter().zip(&y) {
                let order = kx.cmp(ky).then_with(|| compare_unordered(*vx, *vy));
                if order != Ordering::Equal {
                    return order;
                }
            }
            x.len().cmp(&y.len())
        }
        (RawBsonRef::Array(x), RawBsonRef::Array(y)) => {
            let (mut x, mut y) = (elements(x), elements(y));
            loop {
                match (x.next(), y.next()) {
                    (None, None) => return Ordering::Equal,
                    (None, Some(_)) => return Ordering::Less,
                    (Some(_), None) => return Ordering::Greater,
                    (Some(p), Some(q)) => {
                        let order = compare_unordered(p, q);
                        if order != Ordering::Equal {
                            return order;
                        }
                    }
                }
            }
        }
        _ => compare_values(a, b),
    }
}

/// A document's fields sorted by name.
fn sorted_fields(doc: &RawDocument) -> Vec<(&str, RawBsonRef<'_>)> {
    let mut sorted: Vec<(&str, RawBsonRef<'_>)> = fields(doc).collect();
    sorted.sort_by(|p, q| p.0.cmp(q.0));
    sorted
}

/// The first element of an array equal to an earlier one (by array
/// position of the repeat), found by sorting rather than comparing every
/// pair.
pub(super) fn first_duplicate(array: &RawArray) -> Option<RawBsonRef<'_>> {
    let items: Vec<RawBsonRef<'_>> = elements(array).collect();
    let mut order: Vec<usize> = (0..items.len()).collect();
    order.sort_by(|&i, &j| compare_unordered(items[i], items[j]).then(i.cmp(&j)));
    let mut repeat: Option<usize> = None;
    for pair in order.windows(2) {
        if same_value(items[pair[0]], items[pair[1]]) {
            // Within a run of equal values the indexes ascend, so the
            // second of a pair is a repeat of an earlier element.
            repeat = Some(repeat.map_or(pair[1], |r| r.min(pair[1])));
        }
    }
    repeat.map(|i| items[i])
}

/// The fields of a document (stored documents are valid BSON).
pub(super) fn fields(doc: &RawDocument) -> impl Iterator<Item = (&str, RawBsonRef<'_>)> {
    doc.iter()
        .filter_map(|item| item.ok().map(|(k, v)| (k.as_str(), v)))
}

/// One field of a document by exact name (property names are not paths).
pub(super) fn field<'a>(doc: &'a RawDocument, name: &str) -> Option<RawBsonRef<'a>> {
    doc.get(name).ok().flatten()
}

#[cfg(test)]
mod tests {
    use bson::rawdoc;

    use super::*;

    #[test]
    fn the_first_repeat_in_array_order_is_reported() {
        let a = rawdoc! { "a": ["two", 3, "two", 3] };
        let array = a.get_array("a").unwrap();
        assert_eq!(first_duplicate(array), Some(RawBsonRef::String("two")));
        let b = rawdoc! { "a": [3, "x", "x", 3] };
        assert_eq!(
            first_duplicate(b.get_array("a").unwrap()),
            Some(RawBsonRef::String("x"))
        );
        let c = rawdoc! { "a": [1, 2] };
        assert_eq!(first_duplicate(c.get_array("a").unwrap()), None);
    }

    #[test]
    fn documents_are_equal_with_fields_in_any_order() {
        let d = rawdoc! { "x": { "a": 1, "b": [1, { "c": 2, "d": 3 }] }, "y": { "b": [1.0, { "d": 3, "c": 2 }], "a": 1i64 }, "z": { "a": 1 } };
        let get = |k: &str| d.get(k).unwrap().unwrap();
        assert!(same_value(get("x"), get("y")));
        assert!(!same_value(get("x"), get("z")));
        assert!(!same_value(get("z"), RawBsonRef::Int32(1)));
    }
}
