//! `createIndexes`, `dropIndexes` and `collMod` of one index: MongoDB's
//! rules for requested indexes against existing ones, which index a name
//! or key pattern means, and the record each change leaves.

use ebb_lang::encoding::display::shell;
use ebb_storage::catalog::{self, CollectionMeta, IndexMeta};
use ebb_storage::write::archive;
use ebb_storage::{Error, ErrorKind, Result};

use super::ns_not_found;

/// MongoDB's limit of indexes per collection.
pub const MAX_INDEXES: usize = 64;

/// What `createIndexes` reports.
#[derive(Debug, Clone, PartialEq)]
pub struct CreateIndexesOutcome {
    pub before: usize,
    pub after: usize,
    pub created_collection: bool,
    pub note: Option<&'static str>,
}

/// Which indexes `dropIndexes` removes.
#[derive(Debug, Clone, PartialEq)]
pub enum DropTarget {
    /// `"*"`: every index but `_id_`.
    All,
    Names(Vec<String>),
    Key(bson::Document),
}

/// How `collMod` names an index.
#[derive(Debug, Clone, PartialEq)]
pub enum IndexTarget {
    Name(String),
    Key(bson::Document),
}

/// Edits one index record in place; an error leaves the catalog unchanged.
pub type IndexEdit = Box<dyn FnOnce(&mut IndexMeta) -> Result<()> + Send>;

/// A change to one index's options (`collMod`). `apply` validates against
/// the current index and edits it; an error leaves the catalog unchanged.
pub struct IndexChange {
    pub target: IndexTarget,
    pub apply: IndexEdit,
}

/// The index before and after a change.
#[derive(Debug, Clone, PartialEq)]
pub struct IndexChangeOutcome {
    pub before: IndexMeta,
    pub after: IndexMeta,
}

/// What `createIndexes` builds.
#[derive(Debug, Clone, PartialEq)]
pub struct IndexBuild {
    /// The indexes to build, in request order, collation settled; their
    /// ids are not assigned yet.
    pub new: Vec<IndexMeta>,
    /// Requested indexes that exist already, exactly as requested.
    pub skipped: usize,
    /// There is no such collection: it is created (with no options) first.
    pub creates_collection: bool,
}

impl IndexBuild {
    /// How many column families the new indexes need.
    pub fn families(&self) -> u64 {
        self.new.len() as u64
    }

    /// The names of the new indexes.
    pub fn names(&self) -> Vec<String> {
        self.new.iter().map(|i| i.name.clone()).collect()
    }

    /// The collection's record `current` with the new indexes added, in
    /// the families `ids` (one each, in order).
    pub fn record(&self, current: &CollectionMeta, ids: &[u64]) -> CollectionMeta {
        let mut meta = current.clone();
        for (index, id) in self.new.iter().zip(ids) {
            meta.indexes.push(IndexMeta {
                id: *id,
                ..index.clone()
            });
        }
        meta
    }

    /// What the command reports, given the collection's index counts
    /// before and after.
    pub fn outcome(&self, before: usize, after: usize) -> CreateIndexesOutcome {
        let note = if self.new.is_empty() {
            Some("all indexes already exist")
        } else {
            (self.skipped > 0).then_some("index already exists")
        };
        CreateIndexesOutcome {
            before,
            after,
            created_collection: self.creates_collection,
            note,
        }
    }
}

/// `createIndexes` on `db.name` (record `current`, `None` when it does not
/// exist yet). Requested indexes that name no collation take the
/// collection's default.
pub fn create_indexes(
    current: Option<&CollectionMeta>,
    db: &str,
    name: &str,
    mut requested: Vec<IndexMeta>,
) -> Result<IndexBuild> {
    let id_only;
    let existing: &[IndexMeta] = match current {
        Some(meta) => &meta.indexes,
        None => {
            id_only = [CollectionMeta::id_index(0)];
            &id_only
        }
    };
    let default = current.and_then(CollectionMeta::default_collation_spec);
    for index in &mut requested {
        index.settle_collation(default);
        if index.is_hashed() && index.extra.contains_key("collation") {
            return Err(Error::new(
                ErrorKind::CannotCreateIndex,
                format!(
                    "ebb does not support a hashed index with a collation (key pattern {})",
                    shell(&index.key.clone().into())
                ),
            ));
        }
    }
    let ns = format!("{db}.{name}");
    let mut new: Vec<IndexMeta> = Vec::new();
    let mut skipped = 0;
    for req in requested {
        match check_conflicts(&req, existing.iter().chain(&new))? {
            Check::AlreadyExists => skipped += 1,
            Check::New => {
                if existing.len() + new.len() >= MAX_INDEXES {
                    return Err(Error::new(
                        ErrorKind::CannotCreateIndex,
                        format!(
                            "add index fails, too many indexes for {ns} key:{}",
                            shell(&req.key.clone().into())
                        ),
                    ));
                }
                new.push(req);
            }
        }
    }
    Ok(IndexBuild {
        new,
        skipped,
        creates_collection: current.is_none(),
    })
}

/// The archives the new indexes of `build` on `db.name` write to (ebb's
/// `archiveTo`) that do not exist yet, each once, to be created before the
/// build; refused where a collection cannot be an archive
/// (`write::archive::check_target`), and a unique index is refused on a
/// collection that is one. `in_db` is every collection of `db`.
pub fn archives_to_create(
    build: &IndexBuild,
    db: &str,
    name: &str,
    in_db: &[&CollectionMeta],
) -> Result<Vec<String>> {
    let find = |n: &str| in_db.iter().copied().find(|m| m.name == n);
    if let Some(unique) = build.new.iter().find(|i| i.unique)
        && let Some(source) = in_db.iter().find(|m| archive::archives_to(m, name))
    {
        return Err(Error::new(
            ErrorKind::CannotCreateIndex,
            format!(
                "{db}.{name} is the archive of a TTL index of {db}.{}: the unique index {} \
                 could refuse an archived document",
                source.name, unique.name
            ),
        ));
    }
    let mut missing = Vec::new();
    for target in build.new.iter().filter_map(IndexMeta::archive_to) {
        archive::check_target(db, name, target, find(target), in_db.iter().copied())?;
        if find(target).is_none() && !missing.iter().any(|m| m == target) {
            missing.push(target.to_owned());
        }
    }
    Ok(missing)
}

enum Check {
    New,
    AlreadyExists,
}

/// MongoDB's rules for a requested index against existing ones.
fn check_conflicts<'a>(
    req: &IndexMeta,
    existing: impl Iterator<Item = &'a IndexMeta>,
) -> Result<Check> {
    let show = |i: &IndexMeta| shell(&i.to_spec_doc().into());
    for e in existing {
        let same_sig = req.same_signature(e);
        if e.name == req.name {
            if !same_sig {
                return Err(Error::new(
                    ErrorKind::IndexKeySpecsConflict,
                    format!(
                        "An existing index has the same name as the requested index. When index names are not specified, they are auto generated and can cause conflicts. Please refer to our documentation. Requested index: {}, existing index: {}",
                        show(req),
                        show(e)
                    ),
                ));
            }
            if !req.same_options(e) {
                return Err(Error::new(
                    ErrorKind::IndexOptionsConflict,
                    format!(
                        "An equivalent index already exists with the same name but different options. Requested index: {}, existing index: {}",
                        show(req),
                        show(e)
                    ),
                ));
            }
            return Ok(Check::AlreadyExists);
        }
        if same_sig {
            if !req.same_options(e) {
                return Err(Error::new(
                    ErrorKind::IndexOptionsConflict,
                    format!(
                        "An equivalent index already exists with a different name and options. Requested index: {}, existing index: {}",
                        show(req),
                        show(e)
                    ),
                ));
            }
            return Err(Error::new(
                ErrorKind::IndexOptionsConflict,
                format!("Index already exists with a different name: {}", e.name),
            ));
        }
    }
    Ok(Check::New)
}

/// The positions of the indexes whose key pattern is `key`, whatever
/// their other options.
fn with_key(meta: &CollectionMeta, key: &bson::Document) -> Vec<usize> {
    let probe = IndexMeta {
        key: key.clone(),
        ..CollectionMeta::id_index(0)
    };
    meta.indexes
        .iter()
        .enumerate()
        .filter(|(_, i)| same_key(i, &probe))
        .map(|(p, _)| p)
        .collect()
}

fn same_key(a: &IndexMeta, b: &IndexMeta) -> bool {
    let mut a = a.clone();
    a.unique = b.unique;
    a.sparse = b.sparse;
    a.partial_filter = b.partial_filter.clone();
    a.extra = b.extra.clone();
    a.same_signature(b)
}

/// The indexes at `positions`, as mongod lists them in an error.
fn show_all(meta: &CollectionMeta, positions: &[usize]) -> String {
    positions
        .iter()
        .map(|p| shell(&meta.indexes[*p].to_spec_doc().into()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// What `dropIndexes` does.
#[derive(Debug, Clone, PartialEq)]
pub struct IndexDrop {
    /// The command's reply: how many indexes the collection had.
    pub before: usize,
    /// The change, `None` when there is nothing to drop.
    pub change: Option<Dropped>,
}

/// Indexes dropped from a collection.
#[derive(Debug, Clone, PartialEq)]
pub struct Dropped {
    /// The collection's record without them.
    pub record: CollectionMeta,
    /// Their column families, dropped once `record` is written.
    pub families: Vec<u64>,
}

/// `dropIndexes` on `db.name` (record `current`). Internal indexes are
/// invisible to it: `"*"` leaves them and a name finds none of them.
pub fn drop_indexes(
    current: Option<&CollectionMeta>,
    db: &str,
    name: &str,
    target: &DropTarget,
) -> Result<IndexDrop> {
    let Some(meta) = current else {
        return Err(ns_not_found(db, name));
    };
    let before = meta.indexes.len();
    let doomed: Vec<String> = match target {
        DropTarget::All => meta
            .secondary_indexes()
            .filter(|i| !i.is_internal())
            .map(|i| i.name.clone())
            .collect(),
        DropTarget::Names(names) => {
            for n in names {
                if n == catalog::ID_INDEX_NAME {
                    return Err(Error::new(
                        ErrorKind::InvalidOptions,
                        "cannot drop _id index",
                    ));
                }
                if meta.index(n).is_none_or(IndexMeta::is_internal) {
                    return Err(Error::new(
                        ErrorKind::IndexNotFound,
                        format!("index not found with name [{n}]"),
                    ));
                }
            }
            names.clone()
        }
        DropTarget::Key(key) => match with_key(meta, key).as_slice() {
            [] => {
                return Err(Error::new(
                    ErrorKind::IndexNotFound,
                    format!("can't find index with key: {}", shell(&key.clone().into())),
                ));
            }
            [one] if meta.indexes[*one].is_id_index() => {
                return Err(Error::new(
                    ErrorKind::InvalidOptions,
                    "cannot drop _id index",
                ));
            }
            [one] => vec![meta.indexes[*one].name.clone()],
            many => {
                return Err(Error::new(
                    ErrorKind::AmbiguousIndexKeyPattern,
                    format!(
                        "{} indexes found for key: {}, identify by name instead. Conflicting indexes: {}",
                        many.len(),
                        shell(&key.clone().into()),
                        show_all(meta, many)
                    ),
                ));
            }
        },
    };
    if doomed.is_empty() {
        return Ok(IndexDrop {
            before,
            change: None,
        });
    }
    let families: Vec<u64> = meta
        .indexes
        .iter()
        .filter(|i| doomed.contains(&i.name))
        .map(|i| i.id)
        .collect();
    let mut record = meta.clone();
    record.indexes.retain(|i| !doomed.contains(&i.name));
    Ok(IndexDrop {
        before,
        change: Some(Dropped { record, families }),
    })
}

/// What `collMod` of one index does.
#[derive(Debug, Clone, PartialEq)]
pub struct IndexModification {
    /// The command's reply.
    pub outcome: IndexChangeOutcome,
    /// The collection's new record, `None` when the index is unchanged.
    pub record: Option<CollectionMeta>,
}

/// `collMod` of one index of `db.name` (record `current`).
pub fn modify_index(
    current: Option<&CollectionMeta>,
    db: &str,
    name: &str,
    change: IndexChange,
) -> Result<IndexModification> {
    let Some(meta) = current else {
        return Err(ns_not_found(db, name));
    };
    let position = match &change.target {
        IndexTarget::Name(n) => meta.indexes.iter().position(|i| &i.name == n),
        IndexTarget::Key(key) => {
            let found = with_key(meta, key);
            if found.len() > 1 {
                return Err(Error::new(
                    ErrorKind::AmbiguousIndexKeyPattern,
                    format!(
                        "index keyPattern {} matches {} indexes, must use index name. Conflicting indexes: {}",
                        shell(&key.clone().into()),
                        found.len(),
                        show_all(meta, &found)
                    ),
                ));
            }
            found.first().copied()
        }
    };
    let Some(position) = position else {
        let what = match &change.target {
            IndexTarget::Name(n) => n.clone(),
            IndexTarget::Key(k) => shell(&k.clone().into()),
        };
        return Err(Error::new(
            ErrorKind::IndexNotFound,
            format!("cannot find index {what} for ns {db}.{name}"),
        ));
    };
    let mut record = meta.clone();
    let index = &mut record.indexes[position];
    let before = index.clone();
    (change.apply)(index)?;
    let after = index.clone();
    let record = (before != after).then_some(record);
    Ok(IndexModification {
        outcome: IndexChangeOutcome { before, after },
        record,
    })
}
