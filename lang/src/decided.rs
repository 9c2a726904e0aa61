//! What a replica set's primary decides once for a write so that every
//! member applying it gets the same result: the time (`$currentDate`,
//! `$$NOW`), the ObjectIds the server makes itself (documents inserted
//! without `_id`, upserts, time-series buckets), and whether due documents
//! were hidden from the write, as of that time.
//!
//! On a standalone nothing is decided ahead: [`object_id`] is
//! `ObjectId::new()` and [`hiding`] is `None` (the node's own clock
//! decides). While a member applies an entry, [`within`] makes both answer
//! the entry's decisions on that thread, and every batch committed there
//! carries the entry's [`Rider`]: how far the entry is applied commits with
//! its data, so a member that crashes in between never applies a part of
//! it twice.

use std::cell::{Cell, RefCell};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

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
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decided {
    pub at: bson::DateTime,
    pub ids: Seed,
    /// Due documents were hidden from the write as of `at` (the primary
    /// hid due documents when it accepted the write).
    pub hides: bool,
    /// How the member applying the write marks its progress.
    pub rider: Option<Arc<Rider>>,
}

/// How a member applying log entry `index` marks its progress: every batch
/// committed while the entry applies also writes, under [`Rider::KEY`] in
/// the engine's replication `log` family, the entry's index and how many
/// of its batches are committed with this one. A member that crashed in
/// the middle applies the entry again with `skip` set to that count, and
/// the batches already committed are not committed twice.
///
/// It also carries the entry's place in the set's history (`ts`: seconds
/// and counter, as one number; `wall`: the primary's clock) and numbers
/// the document changes the entry makes, in the order it makes them: the
/// change log's keys (`ebb_storage::changes`). A run after a crash makes
/// the same changes in the same order, so they get the same numbers. An
/// entry that commits a transaction names it (`txn`), and its changes say
/// so.
#[derive(Debug)]
pub struct Rider {
    pub index: u64,
    pub skip: u32,
    pub ts: u64,
    pub wall: i64,
    commits: AtomicU32,
    changes: AtomicU32,
    /// The session (`lsid`) and number of the transaction the entry
    /// commits, if it commits one.
    pub txn: std::sync::OnceLock<(bson::RawDocumentBuf, i64)>,
}

impl PartialEq for Rider {
    fn eq(&self, other: &Rider) -> bool {
        (self.index, self.skip) == (other.index, other.skip)
    }
}

impl Eq for Rider {}

impl Rider {
    /// Where the progress is kept.
    pub const KEY: &'static [u8] = b"n/applying";

    /// The rider of entry `index` at time `ts` (written by the primary at
    /// `wall`), past `skip` batches committed before a crash.
    pub fn new(index: u64, skip: u32, ts: u64, wall: i64) -> Rider {
        Rider {
            index,
            skip,
            ts,
            wall,
            commits: AtomicU32::new(0),
            changes: AtomicU32::new(0),
            txn: std::sync::OnceLock::new(),
        }
    }

    /// The number of the entry's next document change (from 0).
    pub fn next_change(&self) -> u32 {
        self.changes.fetch_add(1, Ordering::SeqCst)
    }

    /// For the next batch the entry commits: the progress to write with it,
    /// or `None` when that batch was committed before a crash and must be
    /// dropped.
    pub fn next_commit(&self) -> Option<[u8; 12]> {
        let n = self.commits.fetch_add(1, Ordering::SeqCst) + 1;
        if n <= self.skip {
            return None;
        }
        let mut value = [0u8; 12];
        value[..8].copy_from_slice(&self.index.to_be_bytes());
        value[8..].copy_from_slice(&n.to_be_bytes());
        Some(value)
    }

    /// Whether the batch the entry commits next was committed before a
    /// crash (and will be dropped): what it changes is in the data already.
    pub fn skips_next(&self) -> bool {
        self.commits.load(Ordering::SeqCst) < self.skip
    }

    /// Whether this run of the entry is one after a crash that found every
    /// batch it made committed already: what it computed ran on data that
    /// holds its own effects (an insert finds its documents in place), so
    /// its answer is not the first run's.
    pub fn replayed_in_full(&self) -> bool {
        self.skip > 0 && self.commits.load(Ordering::SeqCst) <= self.skip
    }

    /// The entry and the count of its batches a progress value records.
    pub fn decode(value: &[u8]) -> Option<(u64, u32)> {
        let index = u64::from_be_bytes(value.get(..8)?.try_into().ok()?);
        let n = u32::from_be_bytes(value.get(8..12)?.try_into().ok()?);
        Some((index, n))
    }
}

impl Decided {
    /// The moment as of which due documents are hidden from the write.
    pub fn hide_at(&self) -> Option<i64> {
        self.hides.then(|| self.at.timestamp_millis())
    }

    /// The same decisions with a second sequence of ObjectIds
    /// ([`Seed::fork`]).
    pub fn fork(&self, n: u8) -> Decided {
        Decided {
            ids: self.ids.fork(n),
            ..self.clone()
        }
    }
}

thread_local! {
    static NEXT: Cell<Option<[u8; 12]>> = const { Cell::new(None) };
    static HIDE: Cell<Option<Option<i64>>> = const { Cell::new(None) };
    static RIDER: RefCell<Option<Arc<Rider>>> = const { RefCell::new(None) };
}

/// An ObjectId the server makes: the next of the seed [`within`] set on
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

/// While a member applies a decided write on this thread: the moment as
/// of which due documents are hidden from it (`Some(None)`: nothing is
/// hidden). `None` elsewhere: the node's own clock decides.
pub fn hiding() -> Option<Option<i64>> {
    HIDE.with(Cell::get)
}

/// Whether this thread applies a decided write: a statement then commits
/// once, however large, so its batches are the same on every run.
pub fn applying() -> bool {
    hiding().is_some()
}

/// The rider every batch committed on this thread carries now.
pub fn rider() -> Option<Arc<Rider>> {
    RIDER.with(|r| r.borrow().clone())
}

/// Runs `f` with every batch committed on this thread carrying `rider`.
pub fn riding<R>(rider: Option<Arc<Rider>>, f: impl FnOnce() -> R) -> R {
    if rider.is_none() {
        return f();
    }
    let before = RIDER.with(|r| r.replace(rider));
    let out = f();
    RIDER.with(|r| *r.borrow_mut() = before);
    out
}

/// Runs `f` with this thread applying `decided`: [`object_id`] hands out
/// its seed's sequence, [`hiding`] answers its hiding and commits carry
/// its rider (as if undecided when `decided` is `None`).
pub fn within<R>(decided: Option<Decided>, f: impl FnOnce() -> R) -> R {
    let Some(decided) = decided else {
        return f();
    };
    let ids = NEXT.with(|next| next.replace(Some(decided.ids.0)));
    let hide = HIDE.with(|hide| hide.replace(Some(decided.hide_at())));
    let out = riding(decided.rider.clone(), f);
    NEXT.with(|next| next.set(ids));
    HIDE.with(|h| h.set(hide));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decided(seed: Seed, hides: bool) -> Option<Decided> {
        Some(Decided {
            at: bson::DateTime::from_millis(1_700_000_000_000),
            ids: seed,
            hides,
            rider: None,
        })
    }

    #[test]
    fn a_seed_gives_the_same_ids_wherever_it_is_applied() {
        let seed = Seed::fresh(1_700_000_000_000);
        let here: Vec<ObjectId> = within(decided(seed, false), || {
            (0..3).map(|_| object_id()).collect()
        });
        let there: Vec<ObjectId> = std::thread::spawn(move || {
            within(decided(seed, false), || {
                (0..3).map(|_| object_id()).collect()
            })
        })
        .join()
        .unwrap();
        assert_eq!(here, there);
        assert_eq!(here[0].bytes()[..4], 1_700_000_000u32.to_be_bytes());
        assert_ne!(here[0], here[1]);
        assert_eq!(here[1].bytes()[11], here[0].bytes()[11].wrapping_add(1));
        let forked: ObjectId = within(decided(seed.fork(1), false), object_id);
        assert!(!here.contains(&forked));
        // Outside, ids are fresh again.
        assert!(!here.contains(&object_id()));
    }

    #[test]
    fn a_decided_write_hides_as_the_primary_did_and_only_while_applied() {
        let seed = Seed::fresh(0);
        assert_eq!(hiding(), None, "undecided: the node's clock decides");
        assert_eq!(
            within(decided(seed, true), hiding),
            Some(Some(1_700_000_000_000))
        );
        assert_eq!(within(decided(seed, false), hiding), Some(None));
        assert_eq!(within(None, hiding), None);
        assert_eq!(hiding(), None);
    }

    #[test]
    fn a_rider_rides_only_while_its_write_applies_and_skips_what_was_committed() {
        let rider = Arc::new(Rider::new(7, 1, 0, 0));
        let mut applied = decided(Seed::fresh(0), false).unwrap();
        applied.rider = Some(rider.clone());
        assert_eq!(within(Some(applied), rider_now), Some(rider.clone()));
        assert_eq!(rider_now(), None);
        assert!(rider.skips_next());
        assert_eq!(rider.next_commit(), None, "committed before the crash");
        assert!(!rider.skips_next());
        let second = rider.next_commit().unwrap();
        assert_eq!(Rider::decode(&second), Some((7, 2)));
    }

    fn rider_now() -> Option<Arc<Rider>> {
        super::rider()
    }
}
