//! The published catalog: an immutable snapshot of every collection
//! ([`CatalogState`]) behind a lock that is held only to clone an `Arc`.
//! Readers (queries run off the actors) and the TTL monitor see a
//! consistent set of collections and indexes without asking the catalog
//! actor, which publishes a new snapshot after every DDL change.

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};

use crate::collection::CollectionHandle;

/// An immutable view of every collection.
#[derive(Clone, Default)]
pub struct CatalogState {
    pub collections: BTreeMap<(String, String), CollectionHandle>,
}

impl CatalogState {
    pub fn get(&self, db: &str, name: &str) -> Option<&CollectionHandle> {
        self.collections.get(&(db.to_owned(), name.to_owned()))
    }

    /// Collections of one database, in name order.
    pub fn in_db<'a>(&'a self, db: &'a str) -> impl Iterator<Item = &'a CollectionHandle> + 'a {
        self.collections
            .iter()
            .filter(move |((d, _), _)| d == db)
            .map(|(_, e)| e)
    }

    /// Database names, in order, each once.
    pub fn databases(&self) -> Vec<String> {
        let mut dbs: Vec<String> = self.collections.keys().map(|(d, _)| d.clone()).collect();
        dbs.dedup();
        dbs
    }
}

/// The published catalog.
#[derive(Default)]
pub struct CatalogView {
    current: RwLock<Arc<CatalogState>>,
}

impl CatalogView {
    pub fn load(&self) -> Arc<CatalogState> {
        self.current.read().expect("catalog view lock").clone()
    }

    pub(crate) fn publish(&self, state: CatalogState) {
        *self.current.write().expect("catalog view lock") = Arc::new(state);
    }
}
