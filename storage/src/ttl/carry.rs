//! What a TTL entry carries: the keys of every index entry of its document
//! (its own index's included, for multikey dates), so a chunk can delete a
//! due document with all its entries without reading the record. Index
//! entries are otherwise empty-valued; only TTL entries carry this.
//!
//! The value names the column families it covers. A chunk uses it only when
//! they are exactly the indexes of the current collection handle: an index
//! built or dropped since the document was written, or an empty value (as
//! data from builds without carried keys holds), makes the chunk read the
//! record instead. Column-family ids are never reused, so equal sets mean equal
//! indexes.
//!
//! Layout (format 2): `2`, then per index `cf ‖ n` and `n` times
//! `len ‖ key`, every number a LEB128 varint. In the section of the one TTL
//! index of a set, a document with one entry there writes it as `len = 0`:
//! "the entry that carries this value" (an entry key is never empty, as it
//! ends with the record key), so the common value is a few bytes instead
//! of a second copy of its own key. Format 1, which older data holds, has
//! fixed widths (`cf: u64 LE ‖ n: u32 LE`, `len: u32 LE ‖ key`) and no
//! self-reference; it is read as well.

use crate::collection::Collection;
use crate::engine::Cf;

/// The format written; [`decode`] also reads [`FIXED`].
const FORMAT: u8 = 2;
const FIXED: u8 = 1;

/// Appends to `out` the value of a document's TTL entries from its entries
/// in every index of the collection: `(cf, keys)` in the handle's order. `own` is the
/// family of the TTL index when the collection has only one: a lone entry there is
/// written as a reference to the entry carrying the value.
pub fn encode_into<'a>(
    out: &mut Vec<u8>,
    own: Option<u64>,
    entries: impl Iterator<Item = (u64, &'a [Vec<u8>])>,
) {
    out.push(FORMAT);
    for (cf, keys) in entries {
        put_varint(out, cf);
        put_varint(out, keys.len() as u64);
        if own == Some(cf) && keys.len() == 1 {
            put_varint(out, 0);
            continue;
        }
        for k in keys {
            put_varint(out, k.len() as u64);
            out.extend_from_slice(k);
        }
    }
}

/// The entries a TTL value lists, when it covers exactly the indexes of
/// `coll`; `None` otherwise (read the record instead). `own` is the TTL
/// entry the value was read from: its family and key.
pub fn decode<'v>(
    value: &'v [u8],
    own: (u64, &'v [u8]),
    coll: &Collection,
) -> Option<Vec<(Cf, &'v [u8])>> {
    let mut out = Vec::new();
    let mut covered = 0;
    walk(value, own, |item| {
        match item {
            // In the handle's order, so a stale value fails at the first mismatch.
            Item::Section(cf) => {
                if coll.keygens.get(covered)?.cf != cf {
                    return None;
                }
                covered += 1;
            }
            Item::Key(cf, key) => out.push((Cf::Id(cf), key)),
        }
        Some(())
    })?;
    (covered == coll.keygens.len()).then_some(out)
}

/// Whether TTL entry `own` (family and key), which carries `value`, is
/// the entry of its document with the earliest Date in its own index
/// (`descending`: the index's first field is); None when the value does
/// not list the entries of that index. Reads the value without copying.
pub fn is_earliest(value: &[u8], own: (u64, &[u8]), descending: bool) -> Option<bool> {
    let date = |key: &[u8]| ebb_lang::encoding::keycode::leading_date(key, descending);
    let own_date = date(own.1)?;
    let (mut listed, mut earlier) = (false, false);
    walk(value, own, |item| {
        if let Item::Key(cf, key) = item
            && cf == own.0
        {
            listed = true;
            // Entries of one document differ only in their values.
            earlier |= date(key).is_some_and(|d| (d, key) < (own_date, own.1));
        }
        Some(())
    })?;
    listed.then_some(!earlier)
}

/// What a TTL value lists, in order: each section's family, then its keys.
enum Item<'v> {
    Section(u64),
    Key(u64, &'v [u8]),
}

/// Calls `visit` with every item of `value` (self-references resolved to
/// `own`'s key), stopping with None at the first it refuses or at a value
/// that cannot be read.
fn walk<'v>(
    value: &'v [u8],
    own: (u64, &'v [u8]),
    mut visit: impl FnMut(Item<'v>) -> Option<()>,
) -> Option<()> {
    let (&format, mut rest) = value.split_first()?;
    let fixed = match format {
        FORMAT => false,
        FIXED => true,
        _ => return None,
    };
    while !rest.is_empty() {
        let (cf, n) = match fixed {
            true => (u64_le(&mut rest)?, u64::from(u32_le(&mut rest)?)),
            false => (varint(&mut rest)?, varint(&mut rest)?),
        };
        visit(Item::Section(cf))?;
        for _ in 0..n {
            let len = match fixed {
                true => u64::from(u32_le(&mut rest)?),
                false => varint(&mut rest)?,
            };
            let key = match len {
                0 if !fixed && own.0 == cf => own.1,
                0 => return None,
                len => {
                    let len = usize::try_from(len).ok()?;
                    let key = rest.get(..len)?;
                    rest = &rest[len..];
                    key
                }
            };
            visit(Item::Key(cf, key))?;
        }
    }
    Some(())
}

fn put_varint(out: &mut Vec<u8>, mut n: u64) {
    while n >= 0x80 {
        out.push(n as u8 | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

fn varint(rest: &mut &[u8]) -> Option<u64> {
    let mut n = 0u64;
    for shift in (0..64).step_by(7) {
        let (&b, tail) = rest.split_first()?;
        *rest = tail;
        n |= u64::from(b & 0x7f).checked_shl(shift)?;
        if b & 0x80 == 0 {
            return Some(n);
        }
    }
    None
}

fn u64_le(rest: &mut &[u8]) -> Option<u64> {
    let n = u64::from_le_bytes(rest.get(..8)?.try_into().ok()?);
    *rest = &rest[8..];
    Some(n)
}

fn u32_le(rest: &mut &[u8]) -> Option<u32> {
    let n = u32::from_le_bytes(rest.get(..4)?.try_into().ok()?);
    *rest = &rest[4..];
    Some(n)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use bson::doc;

    use super::*;
    use crate::catalog::{CollectionMeta, IndexMeta};

    /// `_id` (10), a TTL index on `at` (11) and one on `k` (12); with
    /// `second_ttl`, `k_1` is a TTL index too.
    fn indexes(second_ttl: bool) -> Arc<Collection> {
        let index = |id, name: &str, key, ttl: bool| IndexMeta {
            id,
            name: name.into(),
            key,
            unique: false,
            expire_after_seconds: ttl.then_some(0),
            ..CollectionMeta::id_index(0)
        };
        let indexes = vec![
            CollectionMeta::id_index(10),
            index(11, "at_1", doc! { "at": 1 }, true),
            index(12, "k_1", doc! { "k": 1 }, second_ttl),
        ];
        Collection::new(crate::testing::meta("c", doc! {}, None, indexes)).unwrap()
    }

    fn encoded(own: Option<u64>, at: &[&[u8]], k: &[&[u8]]) -> Vec<u8> {
        let at: Vec<Vec<u8>> = at.iter().map(|e| e.to_vec()).collect();
        let k: Vec<Vec<u8>> = k.iter().map(|e| e.to_vec()).collect();
        let mut out = Vec::new();
        encode_into(&mut out, own, [(11, &at[..]), (12, &k[..])].into_iter());
        out
    }

    #[test]
    fn a_lone_entry_of_the_one_ttl_index_is_the_entry_read() {
        let coll = indexes(false);
        let value = encoded(Some(11), &[b"date|id"], &[b"k|id"]);
        assert_eq!(value.len(), 1 + 3 + 3 + 4, "no second copy of its own key");
        let got = decode(&value, (11, b"date|id"), &coll).unwrap();
        assert_eq!(
            got,
            vec![(Cf::Id(11), &b"date|id"[..]), (Cf::Id(12), &b"k|id"[..])]
        );
        // Read through an entry of another family, the reference is unknown.
        assert_eq!(decode(&value, (12, b"k|id"), &coll), None);
    }

    #[test]
    fn several_dates_or_two_ttl_indexes_list_every_key() {
        let coll = indexes(false);
        let value = encoded(Some(11), &[b"d1|id", b"d2|id"], &[b"k|id"]);
        let got = decode(&value, (11, b"d2|id"), &coll).unwrap();
        let listed: Vec<&[u8]> = got.iter().map(|(_, k)| *k).collect();
        assert_eq!(listed, vec![&b"d1|id"[..], b"d2|id", b"k|id"]);

        let two = indexes(true);
        let value = encoded(None, &[b"d|id"], &[b"k|id"]);
        for (cf, own) in [(11, &b"d|id"[..]), (12, b"k|id")] {
            let got = decode(&value, (cf, own), &two).unwrap();
            assert_eq!(got, vec![(Cf::Id(11), &b"d|id"[..]), (Cf::Id(12), b"k|id")]);
        }
    }

    #[test]
    fn values_of_the_fixed_width_format_are_still_read() {
        let mut value = vec![FIXED];
        for (cf, key) in [(11u64, &b"date|id"[..]), (12, b"k|id")] {
            value.extend_from_slice(&cf.to_le_bytes());
            value.extend_from_slice(&1u32.to_le_bytes());
            value.extend_from_slice(&(key.len() as u32).to_le_bytes());
            value.extend_from_slice(key);
        }
        let got = decode(&value, (11, b"other"), &indexes(false)).unwrap();
        assert_eq!(
            got,
            vec![(Cf::Id(11), &b"date|id"[..]), (Cf::Id(12), &b"k|id"[..])]
        );
    }

    #[test]
    fn a_value_that_does_not_cover_the_set_or_is_cut_short_is_refused() {
        let coll = indexes(false);
        let value = encoded(Some(11), &[b"d1|id", b"d2|id"], &[b"k|id"]);
        for end in 0..value.len() {
            assert_eq!(
                decode(&value[..end], (11, b"d|id"), &coll),
                None,
                "cut at {end}"
            );
        }
        let mut only_ttl = Vec::new();
        encode_into(
            &mut only_ttl,
            Some(11),
            [(11, &[b"d|id".to_vec()][..])].into_iter(),
        );
        assert_eq!(decode(&only_ttl, (11, b"d|id"), &coll), None, "k_1 missing");
        assert_eq!(
            decode(&[], (11, b"d|id"), &coll),
            None,
            "written before carrying"
        );
        assert_eq!(
            decode(&[9, 0], (11, b"d|id"), &coll),
            None,
            "unknown format"
        );
    }

    #[test]
    fn varints_round_trip() {
        for n in [0, 1, 127, 128, 300, u64::from(u32::MAX), u64::MAX] {
            let mut out = Vec::new();
            put_varint(&mut out, n);
            let mut rest = &out[..];
            assert_eq!(varint(&mut rest), Some(n));
            assert!(rest.is_empty());
        }
        assert_eq!(varint(&mut &[0x80u8; 11][..]), None, "too long");
    }

    #[test]
    fn only_the_earliest_date_of_a_document_is_its_earliest_entry() {
        let coll = indexes(false);
        let doc = bson::RawDocumentBuf::try_from(&doc! {
            "_id": 1,
            "at": [bson::DateTime::from_millis(2_000), bson::DateTime::from_millis(1_000)],
        })
        .unwrap();
        let mut at = Vec::new();
        coll.keygen("at_1")
            .unwrap()
            .keys(&doc, b"id", &mut at)
            .unwrap();
        assert_eq!(at.len(), 2);
        at.sort_by_key(|k| ebb_lang::encoding::keycode::leading_date(k, false));
        let (early, late) = (at[0].as_slice(), at[1].as_slice());
        let value = encoded(Some(11), &[early, late], &[b"k|id"]);
        assert_eq!(is_earliest(&value, (11, early), false), Some(true));
        assert_eq!(is_earliest(&value, (11, late), false), Some(false));
        // A lone entry refers to itself.
        let lone = encoded(Some(11), &[early], &[]);
        assert_eq!(is_earliest(&lone, (11, early), false), Some(true));
        // A value that lists nothing of the index says nothing.
        assert_eq!(is_earliest(&[], (11, early), false), None);
    }
}
