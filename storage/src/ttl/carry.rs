//! What a TTL entry carries: the keys of every index entry of its document
//! (its own index's included, for multikey dates), so a chunk can delete a
//! due document with all its entries without reading the record. Index
//! entries are otherwise empty-valued; only TTL entries carry this.
//!
//! The value names the column families it covers. A chunk uses it only when
//! they are exactly the indexes of the current index set: an index built or
//! dropped since the document was written, or a value written before this
//! format existed (empty), makes the chunk read the record instead, as it
//! always did. Column-family ids are never reused, so equal sets mean equal
//! indexes.
//!
//! Layout: `1` (format), then per index `cf: u64 LE ‖ n: u32 LE` and `n`
//! times `len: u32 LE ‖ key`.

use crate::engine::Cf;
use crate::index::IndexSet;

const FORMAT: u8 = 1;

/// Encodes the value of a document's TTL entries from its entries in every
/// index of the set: `(cf, keys)` in the set's order.
pub fn encode<'a>(entries: impl Iterator<Item = (u64, &'a [Vec<u8>])>) -> Vec<u8> {
    let mut out = vec![FORMAT];
    for (cf, keys) in entries {
        out.extend_from_slice(&cf.to_le_bytes());
        out.extend_from_slice(&(keys.len() as u32).to_le_bytes());
        for k in keys {
            out.extend_from_slice(&(k.len() as u32).to_le_bytes());
            out.extend_from_slice(k);
        }
    }
    out
}

/// The entries a TTL value lists, when it covers exactly the indexes of
/// `set`; `None` otherwise (read the record instead).
pub fn decode<'v>(value: &'v [u8], set: &IndexSet) -> Option<Vec<(Cf, &'v [u8])>> {
    let (&format, mut rest) = value.split_first()?;
    if format != FORMAT {
        return None;
    }
    let mut out = Vec::new();
    let mut covered = 0;
    while !rest.is_empty() {
        let cf = u64::from_le_bytes(rest.get(..8)?.try_into().ok()?);
        let n = u32::from_le_bytes(rest.get(8..12)?.try_into().ok()?);
        rest = &rest[12..];
        // In the set's order, so a stale value fails at the first mismatch.
        if set.keygens.get(covered)?.cf != cf {
            return None;
        }
        covered += 1;
        for _ in 0..n {
            let len = u32::from_le_bytes(rest.get(..4)?.try_into().ok()?) as usize;
            out.push((Cf::Id(cf), rest.get(4..4 + len)?));
            rest = &rest[4 + len..];
        }
    }
    (covered == set.keygens.len()).then_some(out)
}
