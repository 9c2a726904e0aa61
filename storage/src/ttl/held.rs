//! The record keys the sweep queue holds index entries for, which the
//! writer asks about before every insert (`queue::Sweep::holds`): sorted
//! lists, one per committed chunk, behind a Bloom filter.
//!
//! Adding a chunk's keys costs a few bit sets each (the list is sorted
//! where the chunk was planned, off the writer); a key that is not held is
//! almost always turned away by the filter alone, and the filter's rare
//! false positive costs a binary search per list. A hash set of every key
//! had each chunk of `interleaved` spend about a fifth of its time on the
//! writer hashing into a set of up to a million keys.

/// Filter bits per key held: with [`PROBES`] probes in one block, about
/// 1 % false positives at the fullest, before the filter doubles.
const BITS_PER_KEY: usize = 12;
const PROBES: u64 = 4;
/// Words per block: 512 bits, a cache line.
const BLOCK_WORDS: usize = 8;
/// The smallest filter: 2^17 bits (16 KiB), room for about 11,000 keys.
const MIN_WORDS: usize = 1 << 11;

/// See the module header.
#[derive(Debug)]
pub(super) struct HeldIds {
    /// Each sorted.
    lists: Vec<Vec<Vec<u8>>>,
    len: usize,
    /// A power-of-two number of bits (none while nothing is held).
    bits: Vec<u64>,
    hasher: ahash::RandomState,
}

impl Default for HeldIds {
    fn default() -> Self {
        HeldIds {
            lists: Vec::new(),
            len: 0,
            bits: Vec::new(),
            hasher: ahash::RandomState::new(),
        }
    }
}

impl HeldIds {
    /// Adds the keys one chunk queued, `sorted` ascending.
    pub fn add(&mut self, sorted: Vec<Vec<u8>>) {
        debug_assert!(sorted.is_sorted(), "held keys come sorted");
        if sorted.is_empty() {
            return;
        }
        self.len += sorted.len();
        let needed = (self.len * BITS_PER_KEY).div_ceil(64);
        if needed > self.bits.len() {
            // Twice what is needed, so it doubles only now and then; none
            // until a key comes (every collection has one of these).
            let words = (needed * 2).next_power_of_two().max(MIN_WORDS);
            self.bits = vec![0; words];
            let lists = std::mem::take(&mut self.lists);
            for key in lists.iter().flatten() {
                self.set(key);
            }
            self.lists = lists;
        }
        for key in &sorted {
            self.set(key);
        }
        self.lists.push(sorted);
    }

    /// Whether no key is held.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether `id` is held.
    pub fn contains(&self, id: &[u8]) -> bool {
        self.len > 0
            && self.probes(id).all(|(w, b)| self.bits[w] & b != 0)
            && self
                .lists
                .iter()
                .any(|l| l.binary_search_by(|k| k.as_slice().cmp(id)).is_ok())
    }

    fn set(&mut self, key: &[u8]) {
        for (w, b) in self.probes(key) {
            self.bits[w] |= b;
        }
    }

    /// The filter's (word, bit) for `key`, all in one 64-byte block of
    /// the filter, so that setting or testing them touches one cache line:
    /// one hash picks the block, its other bits the bits in it.
    fn probes(&self, key: &[u8]) -> impl Iterator<Item = (usize, u64)> + use<> {
        let h = self.hasher.hash_one(key);
        let blocks = (self.bits.len() / BLOCK_WORDS) as u64;
        let first = ((h & (blocks - 1)) as usize) * BLOCK_WORDS;
        // Bits for the block's insides, mixed apart from the ones that
        // picked the block.
        let inside = (h ^ (h >> 31)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        (0..PROBES).map(move |i| {
            let bit = (inside >> (9 * i)) & 0x1ff;
            (first + (bit / 64) as usize, 1u64 << (bit % 64))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(i: u32) -> Vec<u8> {
        format!("id{i:08}").into_bytes()
    }

    #[test]
    fn held_keys_are_found_and_others_are_not_through_every_growth() {
        let mut held = HeldIds::default();
        assert!(!held.contains(&key(1)), "nothing held");
        // Lists of 8,192 interleaved with one another, past several
        // doublings of the filter.
        for list in 0..40u32 {
            let keys: Vec<Vec<u8>> = (0..8192).map(|i| key(i * 40 + list)).collect();
            held.add(keys);
        }
        for i in (0..8192 * 40).step_by(97) {
            assert!(held.contains(&key(i)), "key {i} is held");
        }
        let strangers = (8192 * 40..8192 * 40 + 100_000).filter(|&i| held.contains(&key(i)));
        assert_eq!(strangers.count(), 0, "false positives end in the lists");
    }

    #[test]
    fn the_filter_turns_away_almost_every_key_not_held() {
        let mut held = HeldIds::default();
        held.add((0..50_000).map(key).collect());
        let passed = (1_000_000..1_100_000)
            .filter(|&i| held.probes(&key(i)).all(|(w, b)| held.bits[w] & b != 0))
            .count();
        assert!(passed < 1_000, "{passed} of 100,000 passed the filter");
    }
}
