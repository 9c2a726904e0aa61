//! Order-preserving key encoding (first cut: only what the engine needs;
//! the full encoding replaces this module).

/// The smallest byte string greater than every string starting with
/// `prefix`; None when no such string exists (all bytes 0xFF).
pub fn prefix_successor(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut out = prefix.to_vec();
    while let Some(last) = out.pop() {
        if last != 0xFF {
            out.push(last + 1);
            return Some(out);
        }
    }
    None
}
