//! Keys the engine answers as absent before their tombstones are written.
//!
//! A collection's TTL expiry marks the records of expired documents dead
//! (its sweep queue lists them) and deletes them later, in bulk
//! (`ttl::sweep`). Until then every read of the records family must pass
//! over them, whoever reads: a query, a count, the writer itself. So the
//! engine does it, for every point read, multi-get, cursor, count and
//! snapshot of a family that has keys registered here, and no read path
//! can forget.
//!
//! A reader takes its view of the hidden keys and opens its read (creates
//! the snapshot or iterator, or does the point read) under one read lock.
//! Keys become hidden before the batch that marks them dead commits (a
//! read in between passes over documents about to go, as one a moment
//! later would), and stop being hidden only after the batch that deleted
//! their records committed, under the write lock ([`HeldRegistry::exclusive`]),
//! and before any record is stored there again: a reader never pairs a
//! view that still hides a key with a state where a new record was stored
//! there since, nor a view that no longer hides it with a state where the
//! dead record is still stored.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, RwLock};

/// A family's hidden keys, as registered by their owner.
pub trait HeldFamily: Send + Sync {
    /// The keys hidden now (or hidden since), for one reader's use.
    fn view(&self) -> Arc<dyn HeldView>;
}

/// One reader's view of a family's hidden keys.
pub trait HeldView: Send + Sync {
    fn holds(&self, key: &[u8]) -> bool;
}

/// The engine's registry of hidden keys, by family id; see the module doc.
#[derive(Default)]
pub struct HeldRegistry {
    families: RwLock<HashMap<u64, Arc<dyn HeldFamily>>>,
    /// How many families are registered: reads of an engine without any
    /// take no lock.
    registered: AtomicUsize,
}

impl std::fmt::Debug for HeldRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Hidden({} families)",
            self.registered.load(Ordering::Relaxed)
        )
    }
}

/// The registry while [`HeldRegistry::exclusive`] holds it.
pub struct Gate<'a> {
    families: &'a mut HashMap<u64, Arc<dyn HeldFamily>>,
    registered: &'a AtomicUsize,
}

impl Gate<'_> {
    /// Family `cf` hides nothing any more (its keys were all released).
    pub fn unregister(&mut self, cf: u64) {
        self.families.remove(&cf);
        self.registered
            .store(self.families.len(), Ordering::Release);
    }
}

/// The views a reader took, by family.
pub(crate) type Views = Vec<(u64, Arc<dyn HeldView>)>;

impl HeldRegistry {
    /// Makes `keys` the hidden keys of family `cf`, replacing any before.
    pub fn register(&self, cf: u64, keys: Arc<dyn HeldFamily>) {
        let mut families = self.families.write().expect("hidden keys lock");
        families.insert(cf, keys);
        self.registered.store(families.len(), Ordering::Release);
    }

    /// The hidden keys registered for family `cf`.
    pub fn registered(&self, cf: u64) -> Option<Arc<dyn HeldFamily>> {
        self.families
            .read()
            .expect("hidden keys lock")
            .get(&cf)
            .cloned()
    }

    /// Family `cf` hides nothing any more (it was dropped).
    pub fn unregister(&self, cf: u64) {
        let mut families = self.families.write().expect("hidden keys lock");
        families.remove(&cf);
        self.registered.store(families.len(), Ordering::Release);
    }

    /// Runs `release` while no reader takes a view or opens a read: the
    /// release of keys whose records are deleted (see the module doc).
    /// `release` must not read the engine nor take a lock that is held
    /// while registering.
    pub fn exclusive<T>(&self, release: impl FnOnce(&mut Gate<'_>) -> T) -> T {
        let mut families = self.families.write().expect("hidden keys lock");
        let mut gate = Gate {
            families: &mut families,
            registered: &self.registered,
        };
        release(&mut gate)
    }

    /// Opens a read of numbered family `family` (none: the catalog) with
    /// the view it must filter by, if any.
    pub(crate) fn read<T>(
        &self,
        family: Option<u64>,
        open: impl FnOnce(Option<Arc<dyn HeldView>>) -> T,
    ) -> T {
        let Some(id) = family else {
            return open(None);
        };
        if self.registered.load(Ordering::Acquire) == 0 {
            return open(None);
        }
        let families = self.families.read().expect("hidden keys lock");
        open(families.get(&id).map(|keys| keys.view()))
    }

    /// Opens a read of every family (a snapshot) with the views it must
    /// filter by.
    pub(crate) fn read_all<T>(&self, open: impl FnOnce(Views) -> T) -> T {
        if self.registered.load(Ordering::Acquire) == 0 {
            return open(Vec::new());
        }
        let families = self.families.read().expect("hidden keys lock");
        let views = families.iter().map(|(&cf, k)| (cf, k.view())).collect();
        open(views)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Odd;
    impl HeldView for Odd {
        fn holds(&self, key: &[u8]) -> bool {
            key.last().is_some_and(|b| b % 2 == 1)
        }
    }
    impl HeldFamily for Odd {
        fn view(&self) -> Arc<dyn HeldView> {
            Arc::new(Odd)
        }
    }

    #[test]
    fn only_registered_numbered_families_are_filtered() {
        let held = HeldRegistry::default();
        assert!(held.read(Some(7), |v| v.is_none()));
        held.register(7, Arc::new(Odd));
        assert!(held.read(Some(7), |v| v.is_some_and(|v| v.holds(&[3]))));
        assert!(held.read(Some(8), |v| v.is_none()));
        assert!(held.read(None, |v| v.is_none()));
        assert_eq!(held.read_all(|v| v.len()), 1);
        held.unregister(7);
        assert!(held.read(Some(7), |v| v.is_none()));
    }
}
