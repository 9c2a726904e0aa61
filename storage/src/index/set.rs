//! The collection handle every storage operation takes: a collection's
//! catalog record with the key generators of its secondary indexes and its
//! document validator built once. It is immutable: a DDL change (new
//! index, dropped index, collMod) builds a new set, and the collection's
//! writer switches to it between jobs, so one write never sees two
//! versions of the indexes or of the validator.

use std::sync::Arc;

use bson::RawBsonRef;

use super::keygen::KeyGen;
use crate::catalog::CollectionMeta;
use crate::encoding::collation::Collation;
use crate::encoding::keycode;
use crate::engine::Cf;
use crate::error::Result;
use crate::validator::Validator;

/// A collection's metadata with its index key generators built once.
#[derive(Debug)]
pub struct IndexSet {
    pub meta: CollectionMeta,
    /// Secondary indexes, in catalog order.
    pub keygens: Vec<KeyGen>,
    /// The collection's validator, if it has one.
    pub validator: Option<Validator>,
    /// The `_id_` index's collation (the collection default): record keys
    /// are `_id` encoded in it, so `_id` uniqueness follows it, as in mongod.
    id_collation: Option<Arc<Collation>>,
}

impl IndexSet {
    pub fn new(meta: CollectionMeta) -> Result<Arc<Self>> {
        let keygens = meta
            .secondary_indexes()
            .map(KeyGen::new)
            .collect::<Result<_>>()?;
        let validator = Validator::from_options(&meta.db, &meta.name, &meta.uuid, &meta.options)?;
        let id_collation = match meta.index(crate::catalog::ID_INDEX_NAME) {
            Some(id) => id.collation()?,
            None => None,
        };
        Ok(Arc::new(IndexSet {
            meta,
            keygens,
            validator,
            id_collation,
        }))
    }

    /// The record key of a document whose `_id` is `id`.
    pub fn record_key(&self, id: RawBsonRef<'_>) -> Vec<u8> {
        let mut key = Vec::new();
        keycode::encode_collated(&mut key, id, self.id_collation.as_deref());
        key
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
