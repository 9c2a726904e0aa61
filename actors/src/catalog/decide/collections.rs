//! `create` (and a write's implicit creation), `drop` and
//! `renameCollection`: whether the request is refused, a no-op, or which
//! record the collection gets.

use ebb_lang::validator::Validator;
use ebb_storage::catalog::{CollectionMeta, IndexMeta};
use ebb_storage::timeseries::{self, TimeseriesOptions};
use ebb_storage::{Error, ErrorKind, Result, capped};

/// What `create` does.
#[derive(Debug, Clone, PartialEq)]
pub enum Create {
    /// The collection exists with the requested options, or any existing
    /// one will do: nothing changes.
    Exists,
    /// Create its column families, then write its record.
    New(NewCollection),
}

/// A collection about to be created, short of its column-family ids.
#[derive(Debug, Clone, PartialEq)]
pub struct NewCollection {
    db: String,
    name: String,
    uuid: bson::Binary,
    options: bson::Document,
    /// Time-series and clustered collections carry internal indexes
    /// (`timeseries::internal_indexes`), created with the collection.
    internal: Vec<IndexMeta>,
    /// A capped collection keeps its insertion order in a family of its
    /// own (`capped::order`), allocated last.
    capped: bool,
}

impl NewCollection {
    /// How many column families it needs: its records, one per internal
    /// index, and a capped collection's insertion order.
    pub fn families(&self) -> u64 {
        1 + self.internal.len() as u64 + u64::from(self.capped)
    }

    /// Its record, given [`families`](Self::families) new ids in order.
    pub fn record(self, ids: &[u64]) -> CollectionMeta {
        let id = ids[0];
        let mut internal = self.internal;
        for (index, cf) in internal.iter_mut().zip(&ids[1..]) {
            index.id = *cf;
        }
        let natural = self.capped.then(|| ids[ids.len() - 1]);
        let mut id_index = CollectionMeta::id_index(id);
        id_index.settle_collation(self.options.get_document("collation").ok());
        let mut indexes = vec![id_index];
        indexes.extend(internal);
        CollectionMeta {
            id,
            db: self.db,
            name: self.name,
            uuid: self.uuid,
            options: self.options,
            indexes,
            natural,
        }
    }
}

/// `create` of `db.name` with `options` (a write's implicit creation sets
/// `allow_existing`: any existing collection will do). `new_uuid` gives
/// the new collection's identity; it is called only when there is none.
pub fn create_collection(
    current: Option<&CollectionMeta>,
    db: &str,
    name: &str,
    options: bson::Document,
    allow_existing: bool,
    new_uuid: impl FnOnce() -> bson::Binary,
) -> Result<Create> {
    if let Some(meta) = current {
        if allow_existing || meta.options == options {
            return Ok(Create::Exists);
        }
        return Err(Error::new(
            ErrorKind::NamespaceExists,
            format!("Collection {db}.{name} already exists."),
        ));
    }
    // A validator the collection may not have is refused before anything
    // is created.
    let uuid = new_uuid();
    Validator::from_options(db, name, &uuid, &options)?;
    let internal = timeseries::internal_indexes(&options);
    let capped = capped::is_capped(&options);
    Ok(Create::New(NewCollection {
        db: db.to_owned(),
        name: name.to_owned(),
        uuid,
        options,
        internal,
        capped,
    }))
}

/// What `drop` of an existing collection does once its record is gone.
#[derive(Debug, Clone, PartialEq)]
pub struct Removal {
    /// Column families to drop.
    pub families: Vec<u64>,
    /// It had a TTL index: the TTL monitor looks at its indexes again.
    pub wake_ttl: bool,
    /// `drop`'s reply: how many indexes it had.
    pub indexes: usize,
}

/// `drop` of the collection `meta` describes (a missing one is no error:
/// the actor replies that there was none).
pub fn drop_collection(meta: &CollectionMeta) -> Removal {
    Removal {
        families: meta.column_families(),
        wake_ttl: meta.indexes.iter().any(IndexMeta::is_ttl),
        indexes: meta.indexes.len(),
    }
}

/// What `renameCollection` does.
#[derive(Debug, Clone, PartialEq)]
pub struct Rename {
    /// The target exists and `dropTarget` was given: drop it first.
    pub drop_target: bool,
    /// The source's record under its new name, replacing the old one.
    pub record: CollectionMeta,
}

/// `renameCollection` of `from` (whose record is `source`) to `to`;
/// `target_exists` says whether `to` names a collection. Without
/// `stay_temp` the renamed collection loses its `temp` flag.
pub fn rename(
    source: Option<&CollectionMeta>,
    target_exists: bool,
    from: &(String, String),
    to: &(String, String),
    drop_target: bool,
    stay_temp: bool,
) -> Result<Rename> {
    let Some(source) = source else {
        return Err(Error::new(
            ErrorKind::NamespaceNotFound,
            format!("Source collection {}.{} does not exist", from.0, from.1),
        ));
    };
    if from == to {
        return Err(Error::new(
            ErrorKind::IllegalOperation,
            "Can't rename a collection to itself",
        ));
    }
    if TimeseriesOptions::from_stored(&source.options).is_some() {
        return Err(Error::new(
            ErrorKind::IllegalOperation,
            format!(
                "Renaming a time-series collection is not allowed: {}.{}",
                from.0, from.1
            ),
        ));
    }
    if target_exists && !drop_target {
        return Err(Error::new(
            ErrorKind::NamespaceExists,
            "target namespace exists",
        ));
    }
    let mut record = source.clone();
    record.db = to.0.clone();
    record.name = to.1.clone();
    if !stay_temp {
        record.options.remove("temp");
    }
    Ok(Rename {
        drop_target: target_exists,
        record,
    })
}
