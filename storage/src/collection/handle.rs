//! The collection handle every storage operation takes: a collection's
//! catalog record with the key generators of its secondary indexes and its
//! document validator built once. It is immutable: a DDL change (new
//! index, dropped index, collMod) builds a new handle, and the collection's
//! writer switches to it between jobs, so one write never sees two
//! versions of the indexes or of the validator.
//!
//! It also carries the node's [`HideDue`]: whether, and as of when,
//! documents its TTL indexes make due are hidden from readers and writers
//! (`crate::ttl::hidden`). Every read and write takes the handle, so none can
//! forget the check; a collection without TTL indexes never asks the clock.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::SystemTime;

use bson::{RawBsonRef, RawDocument};

use super::bound::RecordBound;
use super::hide::{HideDue, HideNothing};
use crate::capped::CappedOptions;
use crate::catalog::CollectionMeta;
use crate::engine::Cf;
use crate::index::KeyGen;
use crate::timeseries::TimeseriesOptions;
use crate::timeseries::open::OpenBuckets;
use crate::ttl::Sweep;
use ebb_lang::encoding::collation::Collation;
use ebb_lang::encoding::keycode;
use ebb_lang::error::Result;
use ebb_lang::validator::Validator;

/// A collection's metadata with its index key generators built once.
#[derive(Debug)]
pub struct Collection {
    pub meta: CollectionMeta,
    /// Secondary indexes, in catalog order.
    pub keygens: Vec<KeyGen>,
    /// The collection's validator, if it has one.
    pub validator: Option<Validator>,
    /// The `_id_` index's collation (the collection default): record keys
    /// are `_id` encoded in it, so `_id` uniqueness follows it, as in mongod.
    id_collation: Option<Arc<Collation>>,
    /// Positions in `keygens` of the TTL indexes.
    ttl: Vec<usize>,
    /// For a time-series collection: its options (records are buckets).
    pub timeseries: Option<TimeseriesOptions>,
    /// A time-series collection has received a measurement before 1970 or
    /// after 2038-01-19T03:14:07Z: its buckets neither expire nor hide, as
    /// in MongoDB 7.0–8.0, whose TTL monitor skips such a collection. Set
    /// by inserts, found in the data when the handle is opened for a
    /// collection already holding such buckets.
    extended_range: AtomicBool,
    /// A time-series collection's open buckets, decoded (its writer's).
    pub open_buckets: OpenBuckets,
    /// A capped collection's bounds (its insertion order is `natural()`).
    pub capped: Option<CappedOptions>,
    /// The largest record key stored, or above (its writer's).
    pub record_bound: RecordBound,
    /// What its writer knows of the collection's sweep queue.
    pub sweep: Sweep,
    hide_due: Arc<dyn HideDue>,
    /// Queries that used each index (`meta.indexes` order) since
    /// `accesses_since` (this set's creation): `$indexStats`' `accesses`.
    accesses: Vec<AtomicU64>,
    accesses_since: SystemTime,
}

impl Collection {
    /// A handle whose readers see every document until the monitor deletes
    /// it (MongoDB's behaviour; tests and tools that run no node).
    pub fn new(meta: CollectionMeta) -> Result<Arc<Self>> {
        Self::open(meta, Arc::new(HideNothing))
    }

    /// A handle whose readers pass over the due documents `hide_due` hides.
    pub fn open(meta: CollectionMeta, hide_due: Arc<dyn HideDue>) -> Result<Arc<Self>> {
        let keygens: Vec<KeyGen> = meta
            .secondary_indexes()
            .map(KeyGen::new)
            .collect::<Result<_>>()?;
        let validator = Validator::from_options(&meta.db, &meta.name, &meta.uuid, &meta.options)?;
        let id_collation = match meta.index(crate::catalog::ID_INDEX_NAME) {
            Some(id) => id.collation()?,
            None => None,
        };
        let ttl = (0..keygens.len())
            .filter(|&i| keygens[i].expire_after_secs().is_some())
            .collect();
        let timeseries = TimeseriesOptions::from_stored(&meta.options);
        let meta_len = meta.indexes.len();
        let capped = meta
            .natural
            .and_then(|_| CappedOptions::from_stored(&meta.options));
        Ok(Arc::new(Collection {
            capped,
            extended_range: AtomicBool::new(false),
            open_buckets: OpenBuckets::default(),
            record_bound: RecordBound::default(),
            sweep: Sweep::default(),
            timeseries,
            meta,
            keygens,
            validator,
            id_collation,
            ttl,
            hide_due,
            accesses: (0..meta_len).map(|_| AtomicU64::new(0)).collect(),
            accesses_since: SystemTime::now(),
        }))
    }

    /// Counts one query planned on index `name`.
    pub fn count_access(&self, name: &str) {
        if let Some(i) = self.meta.indexes.iter().position(|m| m.name == name) {
            self.accesses[i].fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Queries planned on index `name`, and since when they are counted.
    pub fn accesses(&self, name: &str) -> (u64, SystemTime) {
        let n = self
            .meta
            .indexes
            .iter()
            .position(|m| m.name == name)
            .map_or(0, |i| self.accesses[i].load(Ordering::Relaxed));
        (n, self.accesses_since)
    }

    /// The same collection read as its stored records: a time-series
    /// collection's buckets as `system.buckets.<name>` shows them.
    pub fn raw_buckets(&self) -> Result<Arc<Self>> {
        let coll = Self::open(self.meta.clone(), self.hide_due.clone())?;
        let mut coll =
            Arc::try_unwrap(coll).map_err(|_| crate::Error::engine("collection handle shared"))?;
        coll.timeseries = None;
        Ok(Arc::new(coll))
    }

    /// Whether this time-series collection is in the extended range: the
    /// TTL monitor skips it (MongoDB 7.0–8.0).
    pub fn in_extended_range(&self) -> bool {
        self.extended_range.load(Ordering::Relaxed)
    }

    /// Marks the collection as in the extended range; true the first time.
    pub fn enter_extended_range(&self) -> bool {
        !self.extended_range.swap(true, Ordering::Relaxed)
    }

    /// The record key of a document whose `_id` is `id`.
    pub fn record_key(&self, id: RawBsonRef<'_>) -> Vec<u8> {
        // Room for an ObjectId's key (13 bytes) and most others, so the
        // encoding does not grow it step by step.
        let mut key = Vec::with_capacity(32);
        keycode::encode_collated(&mut key, id, self.id_collation.as_deref());
        key
    }

    /// The `_id` stored at record key `key`, read from the key itself when
    /// the key says it exactly: an ObjectId, a string outside a collation, a
    /// date. `None` for anything else (numbers of all types share one
    /// encoding, a collation makes a string a sort key): its record says.
    pub fn id_of_key(&self, key: &[u8]) -> Option<bson::RawBson> {
        use bson::RawBson;
        match keycode::decode_value(&mut &key[..]).ok()? {
            id @ (RawBson::ObjectId(_) | RawBson::DateTime(_)) => Some(id),
            id @ RawBson::String(_) if self.id_collation.is_none() => Some(id),
            _ => None,
        }
    }

    pub fn ns(&self) -> String {
        self.meta.ns()
    }

    pub fn records(&self) -> Cf {
        Cf::Id(self.meta.id)
    }

    /// A capped collection's insertion-order family (`capped::order`).
    pub fn natural(&self) -> Option<Cf> {
        self.meta.natural.map(Cf::Id)
    }

    pub fn keygen(&self, index_name: &str) -> Option<&KeyGen> {
        self.keygens.iter().find(|k| k.name == index_name)
    }

    /// The moment as of which due documents are hidden, asked now: None
    /// when the collection has no TTL index or nothing is hidden. While a
    /// decided write applies, the primary's decision.
    pub fn hide_at(&self) -> Option<i64> {
        if self.ttl.is_empty() || self.in_extended_range() {
            return None;
        }
        match ebb_lang::decided::hiding() {
            Some(decided) => decided,
            None => self.hide_due.hide_at(),
        }
    }

    /// [`Collection::hide_at`] for a write that removes the due documents
    /// in its way: nothing is hidden from an undecided write on a
    /// replica-set member.
    pub fn hide_at_for_write(&self) -> Option<i64> {
        if ebb_lang::decided::hiding().is_none() && self.hide_due.writes_are_decided() {
            return None;
        }
        self.hide_at()
    }

    /// Whether any TTL index makes `doc` due at `now_millis`.
    pub fn is_due(&self, doc: &RawDocument, now_millis: i64) -> bool {
        self.ttl_keygens().any(|kg| kg.due_by(doc, now_millis))
    }

    /// The key generators of the TTL indexes.
    pub fn ttl_keygens(&self) -> impl Iterator<Item = &KeyGen> {
        self.ttl.iter().map(|&i| &self.keygens[i])
    }

    /// What hides due documents, and counts what was hidden or replaced.
    pub fn hide_due(&self) -> &Arc<dyn HideDue> {
        &self.hide_due
    }
}
