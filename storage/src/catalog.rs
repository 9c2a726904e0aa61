//! Catalog records: what collections and indexes exist, persisted in the
//! `catalog` column family so a restart brings every one of them back.
//!
//! Byte layout of the catalog column family:
//!
//! ```text
//! key                                        value
//! "next_id"                                  u64 big-endian: next free column-family id
//! "coll/" ‖ db ‖ 0x00 ‖ collection name      BSON CollectionMeta (serde)
//! "sweep/" ‖ records cf ‖ seq (u64 BE each)  index entries of expired documents
//!                                            left for the sweep (`ttl::sweep`)
//! ```
//!
//! Database and collection names never contain 0x00 (MongoDB forbids it),
//! so the separator is unambiguous and a prefix scan of `"coll/"` lists
//! every collection in (db, name) order. A database exists while it has a
//! collection, as in MongoDB.
//!
//! This module only encodes and decodes; deciding what may be created is
//! the catalog actor's job.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use ebb_lang::encoding::collation::Collation;

use crate::engine::{Batch, Cf, Direction, Engine, KeyRange};
use crate::{Error, Result};

const NEXT_ID_KEY: &[u8] = b"next_id";
const COLL_PREFIX: &[u8] = b"coll/";
const SWEEP_PREFIX: &[u8] = b"sweep/";
const NEVER_PREFIX: &[u8] = b"never/";

/// The first id handed out; lower ids are reserved.
const FIRST_ID: u64 = 16;

/// Name of the index every collection has on `_id`.
pub const ID_INDEX_NAME: &str = "_id_";

/// Names of ebb's internal indexes (time-series buckets, clustered TTL)
/// start with this; `listIndexes` never shows them and no user index may
/// take such a name.
pub const INTERNAL_PREFIX: &str = "$ebb_";

/// The index option, ebb's own, naming the collection a TTL index archives
/// what it expires to ([`IndexMeta::archive_to`]); kept in `extra`, so
/// `listIndexes` shows it as given.
pub const ARCHIVE_TO: &str = "archiveTo";

/// The key type of a `2dsphere` index (`{loc: "2dsphere"}`).
pub const GEO_2DSPHERE: &str = "2dsphere";
/// The key type of a `2d` index (`{loc: "2d"}`).
pub const GEO_2D: &str = "2d";
/// The last part of a wildcard index's key field (`{"$**": 1}`,
/// `{"a.$**": 1}`).
pub const WILDCARD: &str = "$**";
/// The option of a `{"$**": 1}` index naming the paths it holds.
pub const WILDCARD_PROJECTION: &str = "wildcardProjection";
/// The key-pattern value of a `hashed` index's field.
pub const HASHED: &str = "hashed";
/// The key-pattern value of a text index (`{_fts: "text", _ftsx: 1}`, as
/// mongod keeps every text index's key, its fields in `weights`).
pub const TEXT: &str = "text";

/// One index of a collection.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IndexMeta {
    /// Column family holding the entries. For `_id_` this is the
    /// collection's records family: records are clustered by `_id`.
    pub id: u64,
    pub name: String,
    /// The key pattern exactly as the client gave it (`{a: 1, b: -1}`).
    pub key: bson::Document,
    #[serde(default, skip_serializing_if = "is_false")]
    pub unique: bool,
    #[serde(default, skip_serializing_if = "is_false")]
    pub sparse: bool,
    #[serde(default, skip_serializing_if = "is_false")]
    pub hidden: bool,
    #[serde(
        rename = "partialFilterExpression",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub partial_filter: Option<bson::Document>,
    #[serde(
        rename = "expireAfterSeconds",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub expire_after_seconds: Option<i32>,
    /// Other accepted options echoed by `listIndexes` (e.g. `collation`).
    #[serde(default, skip_serializing_if = "bson::Document::is_empty")]
    pub extra: bson::Document,
}

fn is_false(b: &bool) -> bool {
    !*b
}

impl IndexMeta {
    pub fn is_id_index(&self) -> bool {
        self.name == ID_INDEX_NAME
    }

    /// An index ebb keeps for itself (`timeseries::internal_indexes`).
    pub fn is_internal(&self) -> bool {
        self.name.starts_with(INTERNAL_PREFIX)
    }

    /// The key fields with their directions (`true` = ascending). Any
    /// non-negative number means ascending, a negative one descending, as
    /// for MongoDB's B-tree indexes.
    pub fn fields(&self) -> Vec<(String, bool)> {
        self.key
            .iter()
            .map(|(k, v)| (k.clone(), !is_negative(v)))
            .collect()
    }

    /// Whether this is a geo index: a `2dsphere` or a `2d` one.
    pub fn is_geo(&self) -> bool {
        self.is_sphere() || self.is_flat()
    }

    /// Whether this is a `2dsphere` index (its key holds S2 cells,
    /// `index::geo`).
    pub fn is_sphere(&self) -> bool {
        self.key.values().any(|v| v.as_str() == Some(GEO_2DSPHERE))
    }

    /// Whether this is a `2d` index (its key holds geohashes,
    /// `index::flat`).
    pub fn is_flat(&self) -> bool {
        self.key.values().any(|v| v.as_str() == Some(GEO_2D))
    }

    /// A geo index's location field (the one whose key type is `2dsphere`
    /// or `2d`; the others of a compound geo index are ordinary fields).
    pub fn geo_field(&self) -> Option<&str> {
        self.key
            .iter()
            .find(|(_, v)| matches!(v.as_str(), Some(GEO_2DSPHERE | GEO_2D)))
            .map(|(k, _)| k.as_str())
    }

    /// Whether this is a `hashed` index (its key holds mongod's hash of
    /// its field's value, `ebb_lang::encoding::hashed`).
    pub fn is_hashed(&self) -> bool {
        self.key.values().any(|v| v.as_str() == Some(HASHED))
    }

    /// Whether this is a wildcard index: one numeric key field, `$**` or
    /// a path ending in `.$**` (a text index's `$**` is a text index's).
    pub fn is_wildcard(&self) -> bool {
        self.key.len() == 1
            && !self.is_text()
            && self
                .key
                .keys()
                .all(|k| k == WILDCARD || k.ends_with(".$**"))
    }

    /// Whether this is a plain index: ordinary fields keyed by their values
    /// (no geo, hashed, text or wildcard key), not a TTL index (whose
    /// entries carry `ttl::carry`'s lists), not ebb's own, and without a
    /// collation (whose keys are sort keys): the one kind whose entries can
    /// give their values back (`index::cover`).
    pub fn is_plain(&self) -> bool {
        !self.is_geo()
            && !self.is_hashed()
            && !self.is_text()
            && !self.is_wildcard()
            && !self.is_ttl()
            && !self.is_internal()
            && self.collation().is_ok_and(|c| c.is_none())
    }

    /// Whether this is a text index (its keys hold terms and their scores,
    /// `index::keygen`).
    pub fn is_text(&self) -> bool {
        self.key.values().any(|v| v.as_str() == Some(TEXT))
    }

    /// A text index's definition, read from its options.
    pub fn text_index(&self) -> Option<ebb_lang::text::TextIndex> {
        if !self.is_text() {
            return None;
        }
        let weights = self
            .extra
            .get_document("weights")
            .ok()?
            .iter()
            .map(|(path, w)| {
                (
                    path.clone(),
                    w.as_f64()
                        .or_else(|| w.as_i32().map(f64::from))
                        .or_else(|| w.as_i64().map(|n| n as f64))
                        .unwrap_or(1.0),
                )
            })
            .collect();
        let language =
            |field: &str, default: &str| self.extra.get_str(field).unwrap_or(default).to_owned();
        Some(ebb_lang::text::TextIndex {
            weights,
            default_language: ebb_lang::text::Language::parse(&language(
                "default_language",
                "english",
            ))?,
            language_override: language("language_override", "language"),
        })
    }

    /// Whether this index is a TTL index the monitor acts on.
    pub fn is_ttl(&self) -> bool {
        self.expire_after_seconds.is_some() && self.key.len() == 1 && !self.is_id_index()
    }

    /// Settles the collation of an index being created: the one its spec
    /// named (`{locale: "simple"}` meaning none, even on a collection with
    /// a default), else the collection's `default` (a resolved spec).
    pub fn settle_collation(&mut self, default: Option<&bson::Document>) {
        match self.extra.get_document("collation") {
            Ok(spec) if spec.get_str("locale").ok() == Some("simple") => {
                self.extra.remove("collation");
            }
            Ok(_) => {}
            Err(_) => {
                if let Some(default) = default {
                    self.extra.insert("collation", default.clone());
                }
            }
        }
    }

    /// The collection of the same database this TTL index writes each
    /// document it expires to (ebb's `archiveTo`, `ttl::archive`).
    pub fn archive_to(&self) -> Option<&str> {
        self.extra.get_str(ARCHIVE_TO).ok()
    }

    /// The index's collation: its keys hold this collation's sort keys for
    /// strings. Stored resolved (every field) in `extra.collation`; absent
    /// or `{locale: "simple"}` is none.
    pub fn collation(&self) -> Result<Option<Arc<Collation>>> {
        match self.extra.get_document("collation") {
            Ok(spec) => Collation::from_document(spec),
            Err(_) => Ok(None),
        }
    }
}

impl IndexMeta {
    /// The index as `listIndexes` shows it: `{v: 2, key, name, …options}`.
    pub fn to_spec_doc(&self) -> bson::Document {
        let mut d = bson::doc! { "v": 2, "key": self.key.clone(), "name": self.name.clone() };
        if self.unique && !self.is_id_index() {
            d.insert("unique", true);
        }
        if self.sparse {
            d.insert("sparse", true);
        }
        if self.hidden {
            d.insert("hidden", true);
        }
        if let Some(f) = &self.partial_filter {
            d.insert("partialFilterExpression", f.clone());
        }
        if let Some(s) = self.expire_after_seconds {
            d.insert("expireAfterSeconds", s);
        }
        for (k, v) in &self.extra {
            d.insert(k.clone(), v.clone());
        }
        d
    }

    /// Whether two indexes are the same index for MongoDB: same key
    /// pattern (by value: `1` and `1.0` are equal), uniqueness, sparseness,
    /// partial filter and collation. `expireAfterSeconds` and `hidden` are
    /// not part of it.
    pub fn same_signature(&self, other: &IndexMeta) -> bool {
        same_document(&self.key, &other.key)
            && self.unique == other.unique
            && self.sparse == other.sparse
            && self.partial_filter.as_ref().map(bson_doc_bytes)
                == other.partial_filter.as_ref().map(bson_doc_bytes)
            && self.extra.get("collation") == other.extra.get("collation")
            && self.extra.get(WILDCARD_PROJECTION) == other.extra.get(WILDCARD_PROJECTION)
    }

    /// Whether the options outside the signature are equal too.
    pub fn same_options(&self, other: &IndexMeta) -> bool {
        self.expire_after_seconds == other.expire_after_seconds
            && self.hidden == other.hidden
            && self.archive_to() == other.archive_to()
    }
}

fn bson_doc_bytes(d: &bson::Document) -> Vec<u8> {
    bson::serialize_to_vec(d).unwrap_or_default()
}

/// Whether two key patterns are the same: field names equal in order,
/// directions equal by value (`1` and `1.0` are one pattern).
pub fn same_key_pattern(a: &bson::Document, b: &bson::Document) -> bool {
    same_document(a, b)
}

/// Field names equal in order and values equal in MongoDB's comparison.
fn same_document(a: &bson::Document, b: &bson::Document) -> bool {
    a.len() == b.len()
        && a.iter().zip(b.iter()).all(|((ka, va), (kb, vb))| {
            ka == kb
                && match (
                    bson::RawBson::try_from(va.clone()),
                    bson::RawBson::try_from(vb.clone()),
                ) {
                    (Ok(x), Ok(y)) => ebb_lang::encoding::cmp::compare_values(
                        x.as_raw_bson_ref(),
                        y.as_raw_bson_ref(),
                    )
                    .is_eq(),
                    _ => va == vb,
                }
        })
}

fn is_negative(v: &bson::Bson) -> bool {
    match v {
        bson::Bson::Int32(n) => *n < 0,
        bson::Bson::Int64(n) => *n < 0,
        bson::Bson::Double(n) => *n < 0.0,
        bson::Bson::Decimal128(d) => d.to_string().starts_with('-'),
        _ => false,
    }
}

/// One collection.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CollectionMeta {
    /// Column family holding the records (clustered by `_id`).
    pub id: u64,
    pub db: String,
    pub name: String,
    /// Stable identity reported by `listCollections` (`info.uuid`).
    pub uuid: bson::Binary,
    /// Creation options as given (`capped`, `validator`, …), echoed by
    /// `listCollections`.
    #[serde(default)]
    pub options: bson::Document,
    /// Every index, `_id_` first.
    pub indexes: Vec<IndexMeta>,
    /// A capped collection's insertion-order family (`crate::capped::order`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub natural: Option<u64>,
}

impl CollectionMeta {
    pub fn ns(&self) -> String {
        format!("{}.{}", self.db, self.name)
    }

    pub fn index(&self, name: &str) -> Option<&IndexMeta> {
        self.indexes.iter().find(|i| i.name == name)
    }

    /// The stored (resolved) default collation document, if any.
    pub fn default_collation_spec(&self) -> Option<&bson::Document> {
        self.options.get_document("collation").ok()
    }

    /// The collection's default collation (`create`'s `collation`, stored
    /// resolved): what operations and new indexes that name none use.
    pub fn default_collation(&self) -> Result<Option<Arc<Collation>>> {
        match self.options.get_document("collation") {
            Ok(spec) => Collation::from_document(spec),
            Err(_) => Ok(None),
        }
    }

    /// Secondary indexes (every index but `_id_`).
    pub fn secondary_indexes(&self) -> impl Iterator<Item = &IndexMeta> {
        self.indexes.iter().filter(|i| !i.is_id_index())
    }

    /// A new collection's `_id_` index record.
    pub fn id_index(records_cf: u64) -> IndexMeta {
        IndexMeta {
            id: records_cf,
            name: ID_INDEX_NAME.to_owned(),
            key: bson::doc! { "_id": 1 },
            unique: true,
            sparse: false,
            hidden: false,
            partial_filter: None,
            expire_after_seconds: None,
            extra: bson::Document::new(),
        }
    }

    /// Every column family this collection owns.
    pub fn column_families(&self) -> Vec<u64> {
        let mut ids: Vec<u64> = self.indexes.iter().map(|i| i.id).collect();
        ids.push(self.id);
        ids.extend(self.natural);
        ids.sort_unstable();
        ids.dedup();
        ids
    }
}

fn coll_key(db: &str, name: &str) -> Vec<u8> {
    let mut k = Vec::with_capacity(COLL_PREFIX.len() + db.len() + 1 + name.len());
    k.extend_from_slice(COLL_PREFIX);
    k.extend_from_slice(db.as_bytes());
    k.push(0);
    k.extend_from_slice(name.as_bytes());
    k
}

/// Reads every collection record, in (db, name) order.
pub fn load_collections(engine: &dyn Engine) -> Result<Vec<CollectionMeta>> {
    let mut cursor = engine.cursor(
        Cf::Catalog,
        KeyRange::prefix(COLL_PREFIX),
        Direction::Forward,
    )?;
    let mut out = Vec::new();
    while cursor.valid() {
        let meta: CollectionMeta = bson::deserialize_from_slice(cursor.value())
            .map_err(|e| Error::corrupt(format!("catalog record: {e}")))?;
        out.push(meta);
        cursor.advance();
    }
    cursor.status()?;
    Ok(out)
}

/// Adds the write of a collection record to `batch`.
pub fn put_collection(batch: &mut dyn Batch, meta: &CollectionMeta) -> Result<()> {
    let bytes = bson::serialize_to_vec(meta)
        .map_err(|e| Error::corrupt(format!("cannot encode catalog record: {e}")))?;
    batch.put(Cf::Catalog, &coll_key(&meta.db, &meta.name), &bytes)
}

/// Adds the removal of a collection record to `batch`.
pub fn delete_collection(batch: &mut dyn Batch, db: &str, name: &str) -> Result<()> {
    batch.delete(Cf::Catalog, &coll_key(db, name))
}

/// The key of one item of a collection's sweep queue (`ttl::sweep`).
pub fn sweep_key(records_cf: u64, seq: u64) -> Vec<u8> {
    let mut k = sweep_prefix(records_cf);
    k.extend_from_slice(&seq.to_be_bytes());
    k
}

/// Every item of one collection's sweep queue, in `seq` order.
pub fn sweep_range(records_cf: u64) -> KeyRange {
    KeyRange::prefix(&sweep_prefix(records_cf))
}

/// Where the counts of the documents TTL index `index_cf` never makes due
/// are kept (`ttl::never`).
pub fn never_key(index_cf: u64) -> Vec<u8> {
    let mut k = Vec::with_capacity(NEVER_PREFIX.len() + 8);
    k.extend_from_slice(NEVER_PREFIX);
    k.extend_from_slice(&index_cf.to_be_bytes());
    k
}

/// Every sweep queue of the node, collection by collection.
pub fn sweep_queues() -> KeyRange {
    KeyRange::prefix(SWEEP_PREFIX)
}

/// The collection (records family id) and `seq` of a sweep queue key.
pub fn parse_sweep_key(key: &[u8]) -> Option<(u64, u64)> {
    let rest = key.strip_prefix(SWEEP_PREFIX)?;
    let cf = u64::from_be_bytes(rest.get(..8)?.try_into().ok()?);
    let seq = u64::from_be_bytes(rest.get(8..16)?.try_into().ok()?);
    Some((cf, seq))
}

fn sweep_prefix(records_cf: u64) -> Vec<u8> {
    let mut k = Vec::with_capacity(SWEEP_PREFIX.len() + 16);
    k.extend_from_slice(SWEEP_PREFIX);
    k.extend_from_slice(&records_cf.to_be_bytes());
    k
}

/// Allocates `n` consecutive column-family ids, recording the new high
/// mark in `batch`. `next` is the caller's in-memory copy of the counter.
pub fn allocate_ids(batch: &mut dyn Batch, next: &mut u64, n: u64) -> Result<u64> {
    let first = *next;
    *next += n;
    batch.put(Cf::Catalog, NEXT_ID_KEY, &next.to_be_bytes())?;
    Ok(first)
}

/// Reads the id counter.
pub fn load_next_id(engine: &dyn Engine) -> Result<u64> {
    match engine.get(Cf::Catalog, NEXT_ID_KEY)? {
        None => Ok(FIRST_ID),
        Some(v) => {
            let bytes: [u8; 8] = v
                .as_slice()
                .try_into()
                .map_err(|_| Error::corrupt("catalog next_id is not 8 bytes"))?;
            Ok(u64::from_be_bytes(bytes))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::rocks::{RocksEngine, RocksOptions};

    fn engine(dir: &std::path::Path) -> RocksEngine {
        RocksEngine::open(&RocksOptions {
            path: dir.to_path_buf(),
            block_cache_bytes: 1 << 20,
            write_buffer_bytes: 1 << 20,
        })
        .unwrap()
    }

    fn meta(db: &str, name: &str, id: u64) -> CollectionMeta {
        CollectionMeta {
            id,
            db: db.into(),
            name: name.into(),
            uuid: bson::Binary {
                subtype: bson::spec::BinarySubtype::Uuid,
                bytes: vec![7; 16],
            },
            options: bson::doc! {},
            indexes: vec![CollectionMeta::id_index(id)],
            natural: None,
        }
    }

    #[test]
    fn collections_and_id_counter_survive_reopen() {
        let dir = tempfile::tempdir().unwrap();
        {
            let e = engine(dir.path());
            let mut next = load_next_id(&e).unwrap();
            let mut b = e.batch();
            let id = allocate_ids(b.as_mut(), &mut next, 2).unwrap();
            let mut m = meta("app", "events", id);
            m.indexes.push(IndexMeta {
                id: id + 1,
                name: "at_1".into(),
                key: bson::doc! { "at": 1 },
                unique: false,
                sparse: false,
                hidden: false,
                partial_filter: None,
                expire_after_seconds: Some(3600),
                extra: bson::doc! {},
            });
            put_collection(b.as_mut(), &m).unwrap();
            put_collection(b.as_mut(), &meta("a", "z", 99)).unwrap();
            b.commit(true).unwrap();
        }
        let e = engine(dir.path());
        let all = load_collections(&e).unwrap();
        assert_eq!(
            all.iter().map(|m| m.ns()).collect::<Vec<_>>(),
            vec!["a.z", "app.events"]
        );
        assert_eq!(all[1].indexes[1].expire_after_seconds, Some(3600));
        assert!(all[1].indexes[1].is_ttl());
        assert_eq!(load_next_id(&e).unwrap(), FIRST_ID + 2);
    }

    #[test]
    fn key_directions_follow_sign() {
        let mut i = CollectionMeta::id_index(1);
        i.key = bson::doc! { "a": 1, "b": -1, "c": -1.5 };
        assert_eq!(
            i.fields(),
            vec![("a".into(), true), ("b".into(), false), ("c".into(), false)]
        );
    }
}
