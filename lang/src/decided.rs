//! What a replica set's primary decides once for a write so that every
//! member applying it gets the same result: the time (`$currentDate`,
//! `$$NOW`) and the ObjectIds the server makes itself (documents inserted
//! without `_id`, upserts, time-series buckets).
//!
//! On a standalone nothing is decided ahead: [`object_id`] is
//! `ObjectId::new()`. While a member applies an entry, [`with_ids`] makes
//! [`object_id`] on that thread hand out the entry's sequence instead.

use std::cell::Cell;

use bson::oid::ObjectId;

/// Where a write's ObjectIds come from: the first one, counted up in its
/// last three bytes as mongod counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Seed([u8; 12]);

impl Seed {
    /// A new seed: the time `at_millis` in seconds, then a fresh
    /// ObjectId's process-unique bytes and counter.
    pub fn fresh(at_millis: i64) -> Seed {
        let mut bytes = ObjectId::new().bytes();
        bytes[..4].copy_from_slice(&(at_millis.div_euclid(1000) as u32).to_be_bytes());
        Seed(bytes)
    }

    pub fn from_bytes(bytes: [u8; 12]) -> Seed {
        Seed(bytes)
    }

    pub fn bytes(self) -> [u8; 12] {
        self.0
    }

    /// Another sequence from the same seed, for a second place that makes
    /// ids for the same write: it differs in the fifth byte.
    pub fn fork(self, n: u8) -> Seed {
        let mut bytes = self.0;
        bytes[8] ^= n;
        Seed(bytes)
    }
}

/// What the primary decided for one write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Decided {
    pub at: bson::DateTime,
    pub ids: Seed,
}

thread_local! {
    static NEXT: Cell<Option<[u8; 12]>> = const { Cell::new(None) };
}

/// An ObjectId the server makes: the next of the seed [`with_ids`] set on
/// this thread, or a fresh one.
pub fn object_id() -> ObjectId {
    NEXT.with(|next| match next.get() {
        None => ObjectId::new(),
        Some(bytes) => {
            let mut after = bytes;
            let counter = u32::from_be_bytes([0, bytes[9], bytes[10], bytes[11]]).wrapping_add(1);
            after[9..].copy_from_slice(&counter.to_be_bytes()[1..]);
            next.set(Some(after));
            ObjectId::from_bytes(bytes)
        }
    })
}

/// Runs `f` with [`object_id`] handing out `seed`'s sequence on this
/// thread (fresh ids when `seed` is `None`).
pub fn with_ids<R>(seed: Option<Seed>, f: impl FnOnce() -> R) -> R {
    let Some(seed) = seed else {
        return f();
    };
    let before = NEXT.with(|next| next.replace(Some(seed.0)));
    let out = f();
    NEXT.with(|next| next.set(before));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seed_gives_the_same_ids_wherever_it_is_applied() {
        let seed = Seed::fresh(1_700_000_000_000);
        let here: Vec<ObjectId> = with_ids(Some(seed), || (0..3).map(|_| object_id()).collect());
        let there: Vec<ObjectId> = std::thread::spawn(move || {
            with_ids(Some(seed), || (0..3).map(|_| object_id()).collect())
        })
        .join()
        .unwrap();
        assert_eq!(here, there);
        assert_eq!(here[0].bytes()[..4], 1_700_000_000u32.to_be_bytes());
        assert_ne!(here[0], here[1]);
        assert_eq!(here[1].bytes()[11], here[0].bytes()[11].wrapping_add(1));
        let forked: ObjectId = with_ids(Some(seed.fork(1)), object_id);
        assert!(!here.contains(&forked));
        // Outside, ids are fresh again.
        assert!(!here.contains(&object_id()));
    }
}
