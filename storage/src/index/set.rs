//! The collection handle every storage operation takes: a collection's
//! catalog record with the key generators of its secondary indexes built
//! once. It is immutable: a DDL change (new index, dropped index, collMod)
//! builds a new set, and the collection's writer switches to it between
//! jobs, so one write never sees two versions of the indexes.

use std::sync::Arc;

use super::keygen::KeyGen;
use crate::catalog::CollectionMeta;
use crate::engine::Cf;
use crate::error::Result;

/// A collection's metadata with its index key generators built once.
#[derive(Debug)]
pub struct IndexSet {
    pub meta: CollectionMeta,
    /// Secondary indexes, in catalog order.
    pub keygens: Vec<KeyGen>,
}

impl IndexSet {
    pub fn new(meta: CollectionMeta) -> Result<Arc<Self>> {
        let keygens = meta
            .secondary_indexes()
            .map(KeyGen::new)
            .collect::<Result<_>>()?;
        Ok(Arc::new(IndexSet { meta, keygens }))
    }

    pub fn ns(&self) -> String {
        self.meta.ns()
    }

    pub fn records(&self) -> Cf {
        Cf::Id(self.meta.id)
    }

    pub fn keygen(&self, index_name: &str) -> Option<&KeyGen> {
        self.keygens.iter().find(|k| k.name == index_name)
    }
}
