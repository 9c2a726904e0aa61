//! The record keys the sweep queue holds index entries for, which the
//! writer asks about before every insert (`queue::Sweep::holds`): sorted
//! lists, one per committed chunk, behind a Bloom filter.
//!
//! Adding a chunk's keys costs a few bit sets each: the list is sorted and
//! its keys hashed where the chunk was planned, off the writer
//! ([`HeldList`]); a key that is not held is almost always turned away by
//! the filter alone, and the filter's rare false positive costs a binary
//! search per list. A hash set of every key had each chunk of `interleaved`
//! spend about a fifth of its time on the writer hashing into a set of up
//! to a million keys, and hashing the keys on the writer was still a tenth
//! of its commit.

/// Filter bits per key held: with [`PROBES`] probes in one block, about
/// 1 % false positives at the fullest, before the filter doubles.
const BITS_PER_KEY: usize = 12;
const PROBES: u64 = 4;
/// Words per block: 512 bits, a cache line.
const BLOCK_WORDS: usize = 8;
/// The smallest filter: 2^17 bits (16 KiB), room for about 11,000 keys.
const MIN_WORDS: usize = 1 << 11;

/// The filter's hash of a key. Its seeds are fixed, so a list can be
/// hashed on another thread than the one adding it; a key made to collide
/// costs a binary search, never a wrong answer.
const HASHER: ahash::RandomState = ahash::RandomState::with_seeds(
    0x243f_6a88_85a3_08d3,
    0x1319_8a2e_0370_7344,
    0xa409_3822_299f_31d0,
    0x082e_fa98_ec4e_6c89,
);

/// The record keys one chunk queued, sorted, with their filter hashes.
#[derive(Debug, Default)]
pub(super) struct HeldList {
    keys: Vec<Vec<u8>>,
    hashes: Vec<u64>,
}

impl HeldList {
    /// Hashes `sorted`, ascending.
    pub fn new(sorted: Vec<Vec<u8>>) -> Self {
        debug_assert!(sorted.is_sorted(), "held keys come sorted");
        let hashes = sorted.iter().map(|k| HASHER.hash_one(k)).collect();
        HeldList {
            keys: sorted,
            hashes,
        }
    }

    pub fn len(&self) -> usize {
        self.keys.len()
    }
}

/// See the module header.
#[derive(Debug, Default)]
pub(super) struct HeldIds {
    lists: Vec<HeldList>,
    len: usize,
    /// A power-of-two number of bits (none while nothing is held).
    bits: Vec<u64>,
}

impl HeldIds {
    /// Adds the keys one chunk queued.
    pub fn add(&mut self, list: HeldList) {
        if list.keys.is_empty() {
            return;
        }
        self.len += list.len();
        let needed = (self.len * BITS_PER_KEY).div_ceil(64);
        if needed > self.bits.len() {
            // Twice what is needed, so it doubles only now and then; none
            // until a key comes (every collection has one of these).
            let words = (needed * 2).next_power_of_two().max(MIN_WORDS);
            self.bits = vec![0; words];
            let lists = std::mem::take(&mut self.lists);
            for &h in lists.iter().flat_map(|l| &l.hashes) {
                self.set(h);
            }
            self.lists = lists;
        }
        for &h in &list.hashes {
            self.set(h);
        }
        self.lists.push(list);
    }

    /// Whether no key is held.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether `id` is held.
    pub fn contains(&self, id: &[u8]) -> bool {
        self.len > 0
            && self
                .probes(HASHER.hash_one(id))
                .all(|(w, b)| self.bits[w] & b != 0)
            && (self.lists.iter())
                .any(|l| l.keys.binary_search_by(|k| k.as_slice().cmp(id)).is_ok())
    }

    fn set(&mut self, hash: u64) {
        for (w, b) in self.probes(hash) {
            self.bits[w] |= b;
        }
    }

    /// The filter's (word, bit) for a key's hash `h`, all in one 64-byte
    /// block of the filter, so that setting or testing them touches one
    /// cache line: the hash picks the block, its other bits the bits in it.
    fn probes(&self, h: u64) -> impl Iterator<Item = (usize, u64)> + use<> {
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
            held.add(HeldList::new(keys));
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
        held.add(HeldList::new((0..50_000).map(key).collect()));
        let passed = (1_000_000..1_100_000)
            .map(|i| HASHER.hash_one(key(i)))
            .filter(|&h| held.probes(h).all(|(w, b)| held.bits[w] & b != 0))
            .count();
        assert!(passed < 1_000, "{passed} of 100,000 passed the filter");
    }
}
