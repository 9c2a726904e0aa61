//! `CatalogActor`: owns collection and index metadata.
//!
//! Every DDL operation (create/drop collection, database, index; rename;
//! index option and validation changes) runs here, one at a time: each handler returns an
//! `AtomicResponse`, so the next DDL message is not looked at until the
//! current one — including any index build it waits for — has finished.
//! The catalog's state travels through each operation as an owned value
//! ([`CatalogCore`]) and comes back when it completes; nothing else can
//! touch it meanwhile.
//!
//! Order of effects, chosen so a crash at any point leaves a consistent
//! disk: column families are created before the catalog record that names
//! them is written, and dropped after the record that named them is gone.
//! Families no record names are removed at startup.

use std::future::Future;
use std::hash::{BuildHasher, Hasher};
use std::sync::Arc;

use actix::prelude::*;
use ebb_storage::IndexSet;
use ebb_storage::catalog::{self, CollectionMeta, IndexMeta};
use ebb_storage::encoding::display::shell;
use ebb_storage::engine::Cf;
use ebb_storage::validator::{
    ValidationAction, ValidationLevel, Validator, order_validation_options,
};
use ebb_storage::{Error, ErrorKind, Result};
use ebb_storage::{capped, timeseries, ttl};

use super::view::{CatalogState, CatalogView};
use crate::collection::{BuildIndexes, CollectionActor, CollectionHandle, Retire, SwitchIndexSet};
use crate::shared::Shared;

/// MongoDB's limit of indexes per collection.
pub const MAX_INDEXES: usize = 64;

pub struct CatalogActor {
    core: Option<CatalogCore>,
}

/// The catalog's state, moved into each DDL operation and back.
pub struct CatalogCore {
    shared: Arc<Shared>,
    view: Arc<CatalogView>,
    next_id: u64,
    state: CatalogState,
}

impl Actor for CatalogActor {
    type Context = Context<Self>;
}

impl CatalogActor {
    /// Loads the catalog from disk, removes column families no collection
    /// owns (left by a crash mid-DDL), starts one `CollectionActor` per
    /// collection and publishes the catalog in `view`. Must run inside an
    /// actix system.
    pub async fn load(shared: Arc<Shared>, view: Arc<CatalogView>) -> Result<Self> {
        let engine = shared.engine.clone();
        let (metas, next_id, queued) = blocking(move || {
            let metas = catalog::load_collections(engine.as_ref())?;
            let next_id = catalog::load_next_id(engine.as_ref())?;
            let owned: std::collections::HashSet<u64> =
                metas.iter().flat_map(|m| m.column_families()).collect();
            for id in engine.numbered_cfs() {
                if !owned.contains(&id) {
                    tracing::info!(
                        cf = id,
                        "removing column family left by an unfinished operation"
                    );
                    engine.drop_cf(Cf::Id(id))?;
                }
            }
            // Sweep queues of collections dropped before a crash.
            let (queued, unowned): (Vec<u64>, Vec<u64>) =
                ttl::sweep::queued_collections(engine.as_ref())?
                    .into_iter()
                    .partition(|id| owned.contains(id));
            if !unowned.is_empty() {
                let mut batch = engine.batch();
                ttl::sweep::forget(batch.as_mut(), &unowned)?;
                batch.commit(true)?;
            }
            Ok((metas, next_id, queued))
        })
        .await?;
        let mut state = CatalogState::default();
        for meta in metas {
            let set = IndexSet::open(meta, shared.visibility.clone())?;
            if queued.contains(&set.meta.id) {
                // Records expired before the restart may wait for the
                // sweep: the engine passes over them before anyone reads.
                let (engine, queue) = (shared.engine.clone(), set.clone());
                blocking(move || queue.sweep.load(engine.as_ref(), queue.meta.id)).await?;
            }
            if set.timeseries.is_some() {
                let (engine, probe) = (shared.engine.clone(), set.clone());
                if blocking(move || timeseries::holds_extended_range(engine.as_ref(), &probe))
                    .await?
                    && set.enter_extended_range()
                {
                    tracing::warn!(ns = %set.ns(), "time-series collection holds measurements before 1970 or after 2038-01-19T03:14:07Z; the TTL monitor will skip it");
                }
            }
            let actor = CollectionActor::new(shared.clone(), set.clone());
            let inserted = actor.inserts();
            let addr = actor.start();
            state.collections.insert(
                (set.meta.db.clone(), set.meta.name.clone()),
                CollectionHandle {
                    set,
                    addr,
                    inserted,
                },
            );
        }
        view.publish(state.clone());
        Ok(CatalogActor {
            core: Some(CatalogCore {
                shared,
                view,
                next_id,
                state,
            }),
        })
    }

    /// Runs one DDL operation with exclusive use of the catalog state.
    fn ddl<R, Fut>(&mut self, op: impl FnOnce(CatalogCore) -> Fut) -> AtomicResponse<Self, R>
    where
        R: 'static,
        Fut: Future<Output = (CatalogCore, R)> + 'static,
    {
        let core = self.core.take().expect("DDL operations run one at a time");
        AtomicResponse::new(Box::pin(op(core).into_actor(self).map(
            |(core, r), act, _| {
                act.core = Some(core);
                r
            },
        )))
    }
}

/// Runs catalog I/O on the blocking pool.
async fn blocking<T: Send + 'static>(f: impl FnOnce() -> Result<T> + Send + 'static) -> Result<T> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| Error::engine(format!("catalog task failed: {e}")))?
}

fn ns_not_found(db: &str, name: &str) -> Error {
    Error::new(
        ErrorKind::NamespaceNotFound,
        format!("ns not found {db}.{name}"),
    )
}

/// A random version-4 UUID for `listCollections`' `info.uuid`.
fn new_uuid() -> bson::Binary {
    let mut bytes = Vec::with_capacity(16);
    for _ in 0..2 {
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u128(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap_or_default()
                .as_nanos(),
        );
        bytes.extend_from_slice(&h.finish().to_be_bytes());
    }
    bytes[6] = (bytes[6] & 0x0F) | 0x40;
    bytes[8] = (bytes[8] & 0x3F) | 0x80;
    bson::Binary {
        subtype: bson::spec::BinarySubtype::Uuid,
        bytes,
    }
}

impl CatalogCore {
    fn key(db: &str, name: &str) -> (String, String) {
        (db.to_owned(), name.to_owned())
    }

    fn publish(&self) {
        self.view.publish(self.state.clone());
    }

    /// Persists collection records (and the id counter) in one batch.
    async fn persist(
        &self,
        metas: Vec<CollectionMeta>,
        removed: Vec<(String, String)>,
    ) -> Result<()> {
        let engine = self.shared.engine.clone();
        let next_id = self.next_id;
        blocking(move || {
            let mut b = engine.batch();
            let mut n = next_id;
            catalog::allocate_ids(b.as_mut(), &mut n, 0)?;
            for (db, name) in &removed {
                catalog::delete_collection(b.as_mut(), db, name)?;
            }
            for m in &metas {
                catalog::put_collection(b.as_mut(), m)?;
            }
            b.commit(true)
        })
        .await
    }

    async fn create_cfs(&mut self, n: u64) -> Result<Vec<u64>> {
        let first = self.next_id;
        self.next_id += n;
        let engine = self.shared.engine.clone();
        let next_id = self.next_id;
        blocking(move || {
            // Record the high mark first so ids are never reused after a
            // crash, even for families that end up unused.
            let mut b = engine.batch();
            let mut n = next_id;
            catalog::allocate_ids(b.as_mut(), &mut n, 0)?;
            b.commit(true)?;
            for id in first..next_id {
                engine.create_cf(Cf::Id(id))?;
            }
            Ok((first..next_id).collect())
        })
        .await
    }

    async fn drop_cfs(&self, ids: Vec<u64>) -> Result<()> {
        let engine = self.shared.engine.clone();
        blocking(move || {
            for &id in &ids {
                engine.drop_cf(Cf::Id(id))?;
                engine.hidden().unregister(id);
            }
            // A dropped collection's sweep queue (an index has none).
            let mut batch = engine.batch();
            ttl::sweep::forget(batch.as_mut(), &ids)?;
            batch.commit(false)
        })
        .await
    }

    /// Creates a collection; `Ok(false)` when it already existed with the
    /// same options and `allow_existing` is set.
    async fn create_collection(
        &mut self,
        db: &str,
        name: &str,
        options: bson::Document,
        allow_existing: bool,
    ) -> Result<CollectionHandle> {
        if let Some(e) = self.state.get(db, name) {
            if allow_existing || e.set.meta.options == options {
                return Ok(e.clone());
            }
            return Err(Error::new(
                ErrorKind::NamespaceExists,
                format!("Collection {db}.{name} already exists."),
            ));
        }
        // A validator the collection may not have is refused before
        // anything is created.
        let uuid = new_uuid();
        Validator::from_options(db, name, &uuid, &options)?;
        // Time-series and clustered collections carry internal indexes
        // (`timeseries::internal_indexes`), created with the collection.
        let mut internal = timeseries::internal_indexes(&options);
        // A capped collection keeps its insertion order in a family of its
        // own (`capped::order`), allocated last.
        let capped = capped::is_capped(&options);
        let ids = self
            .create_cfs(1 + internal.len() as u64 + u64::from(capped))
            .await?;
        let id = ids[0];
        for (index, cf) in internal.iter_mut().zip(&ids[1..]) {
            index.id = *cf;
        }
        let natural = capped.then(|| ids[ids.len() - 1]);
        let mut id_index = CollectionMeta::id_index(id);
        id_index.settle_collation(options.get_document("collation").ok());
        let mut indexes = vec![id_index];
        indexes.extend(internal);
        let meta = CollectionMeta {
            id,
            db: db.to_owned(),
            name: name.to_owned(),
            uuid,
            options,
            indexes,
            natural,
        };
        self.persist(vec![meta.clone()], vec![]).await?;
        let set = IndexSet::open(meta, self.shared.visibility.clone())?;
        let actor = CollectionActor::new(self.shared.clone(), set.clone());
        let inserted = actor.inserts();
        let addr = actor.start();
        let entry = CollectionHandle {
            set,
            addr,
            inserted,
        };
        self.state
            .collections
            .insert(Self::key(db, name), entry.clone());
        self.publish();
        tracing::info!(ns = %format!("{db}.{name}"), "created collection");
        Ok(entry)
    }

    async fn drop_collection(&mut self, db: &str, name: &str) -> Result<Option<usize>> {
        let Some(entry) = self.state.collections.remove(&Self::key(db, name)) else {
            return Ok(None);
        };
        self.publish();
        // Queued writes finish first; later ones see the collection gone.
        let _ = entry.addr.send(Retire).await;
        self.persist(vec![], vec![Self::key(db, name)]).await?;
        self.drop_cfs(entry.set.meta.column_families()).await?;
        if entry.set.meta.indexes.iter().any(IndexMeta::is_ttl) {
            self.shared.ttl.wake.notify_one();
        }
        tracing::info!(ns = %format!("{db}.{name}"), "dropped collection");
        Ok(Some(entry.set.meta.indexes.len()))
    }

    async fn create_indexes(
        &mut self,
        db: &str,
        name: &str,
        mut requested: Vec<IndexMeta>,
    ) -> Result<CreateIndexesOutcome> {
        let existing: Vec<IndexMeta> = match self.state.get(db, name) {
            Some(e) => e.set.meta.indexes.clone(),
            None => vec![CollectionMeta::id_index(0)],
        };
        let default = self
            .state
            .get(db, name)
            .and_then(|e| e.set.meta.default_collation_spec().cloned());
        for index in &mut requested {
            index.settle_collation(default.as_ref());
        }
        let ns = format!("{db}.{name}");
        let mut to_build: Vec<IndexMeta> = Vec::new();
        let mut skipped = 0;
        for req in requested {
            match check_conflicts(&req, existing.iter().chain(&to_build))? {
                Check::AlreadyExists => skipped += 1,
                Check::New => {
                    if existing.len() + to_build.len() >= MAX_INDEXES {
                        return Err(Error::new(
                            ErrorKind::CannotCreateIndex,
                            format!(
                                "add index fails, too many indexes for {ns} key:{}",
                                shell(&req.key.clone().into())
                            ),
                        ));
                    }
                    to_build.push(req);
                }
            }
        }
        let created_collection = self.state.get(db, name).is_none();
        let entry = self
            .create_collection(db, name, bson::Document::new(), true)
            .await?;
        let before = entry.set.meta.indexes.len();
        if to_build.is_empty() {
            return Ok(CreateIndexesOutcome {
                before,
                after: before,
                created_collection,
                note: Some("all indexes already exist"),
            });
        }
        let ids = self.create_cfs(to_build.len() as u64).await?;
        let mut meta = entry.set.meta.clone();
        let new_names: Vec<String> = to_build.iter().map(|i| i.name.clone()).collect();
        for (mut index, id) in to_build.into_iter().zip(&ids) {
            index.id = *id;
            meta.indexes.push(index);
        }
        let built = match IndexSet::open(meta.clone(), self.shared.visibility.clone()) {
            Ok(set) => {
                let res = entry
                    .addr
                    .send(BuildIndexes {
                        set: set.clone(),
                        new_names: new_names.clone(),
                    })
                    .await;
                res.map_err(|_| {
                    Error::new(
                        ErrorKind::NamespaceNotFound,
                        format!("collection {ns} was dropped"),
                    )
                })
                .and_then(|r| r)
                .map(|()| set)
            }
            Err(e) => Err(e),
        };
        let set = match built {
            Ok(set) => set,
            Err(e) => {
                self.drop_cfs(ids).await?;
                return Err(e);
            }
        };
        self.persist(vec![meta], vec![]).await?;
        let after = set.meta.indexes.len();
        let has_ttl = set.meta.indexes.iter().any(IndexMeta::is_ttl);
        self.state.collections.insert(
            Self::key(db, name),
            CollectionHandle {
                set,
                addr: entry.addr,
                inserted: entry.inserted,
            },
        );
        self.publish();
        if has_ttl {
            self.shared.ttl.wake.notify_one();
        }
        tracing::info!(ns = %ns, indexes = ?new_names, "built indexes");
        Ok(CreateIndexesOutcome {
            before,
            after,
            created_collection,
            note: (skipped > 0).then_some("index already exists"),
        })
    }

    /// Applies a change to one collection's metadata without building
    /// anything: drops of indexes, option changes, renames.
    async fn replace_meta(
        &mut self,
        old: &CollectionHandle,
        meta: CollectionMeta,
        dropped_cfs: Vec<u64>,
    ) -> Result<CollectionHandle> {
        let set = IndexSet::open(meta.clone(), self.shared.visibility.clone())?;
        if old.set.in_extended_range() {
            set.enter_extended_range();
        }
        let old_key = Self::key(&old.set.meta.db, &old.set.meta.name);
        let new_key = Self::key(&meta.db, &meta.name);
        let removed = if old_key != new_key {
            vec![old_key.clone()]
        } else {
            vec![]
        };
        self.persist(vec![meta], removed).await?;
        self.state.collections.remove(&old_key);
        let entry = CollectionHandle {
            set: set.clone(),
            addr: old.addr.clone(),
            inserted: old.inserted.clone(),
        };
        self.state.collections.insert(new_key, entry.clone());
        self.publish();
        let _ = old.addr.send(SwitchIndexSet(set)).await;
        self.drop_cfs(dropped_cfs).await?;
        self.shared.ttl.wake.notify_one();
        Ok(entry)
    }

    async fn drop_indexes(&mut self, db: &str, name: &str, target: DropTarget) -> Result<usize> {
        let Some(entry) = self.state.get(db, name).cloned() else {
            return Err(ns_not_found(db, name));
        };
        let meta = &entry.set.meta;
        let was = meta.indexes.len();
        let doomed: Vec<String> = match &target {
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
            DropTarget::Key(key) => {
                let probe = IndexMeta {
                    key: key.clone(),
                    ..CollectionMeta::id_index(0)
                };
                let matches: Vec<&IndexMeta> = meta
                    .indexes
                    .iter()
                    .filter(|i| same_key(i, &probe))
                    .collect();
                match matches.as_slice() {
                    [] => {
                        return Err(Error::new(
                            ErrorKind::IndexNotFound,
                            format!("can't find index with key: {}", shell(&key.clone().into())),
                        ));
                    }
                    [one] if one.is_id_index() => {
                        return Err(Error::new(
                            ErrorKind::InvalidOptions,
                            "cannot drop _id index",
                        ));
                    }
                    [one] => vec![one.name.clone()],
                    many => {
                        return Err(Error::new(
                            ErrorKind::AmbiguousIndexKeyPattern,
                            format!(
                                "{} indexes found for key: {}, identify by name instead. Conflicting indexes: {}",
                                many.len(),
                                shell(&key.clone().into()),
                                many.iter()
                                    .map(|i| shell(&i.to_spec_doc().into()))
                                    .collect::<Vec<_>>()
                                    .join(", ")
                            ),
                        ));
                    }
                }
            }
        };
        if doomed.is_empty() {
            return Ok(was);
        }
        let mut new_meta = meta.clone();
        let dropped_cfs: Vec<u64> = meta
            .indexes
            .iter()
            .filter(|i| doomed.contains(&i.name))
            .map(|i| i.id)
            .collect();
        new_meta.indexes.retain(|i| !doomed.contains(&i.name));
        self.replace_meta(&entry, new_meta, dropped_cfs).await?;
        Ok(was)
    }

    async fn rename(
        &mut self,
        from: (String, String),
        to: (String, String),
        drop_target: bool,
        stay_temp: bool,
    ) -> Result<()> {
        let Some(entry) = self.state.get(&from.0, &from.1).cloned() else {
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
        if entry.set.timeseries.is_some() {
            return Err(Error::new(
                ErrorKind::IllegalOperation,
                format!(
                    "Renaming a time-series collection is not allowed: {}.{}",
                    from.0, from.1
                ),
            ));
        }
        if self.state.get(&to.0, &to.1).is_some() {
            if !drop_target {
                return Err(Error::new(
                    ErrorKind::NamespaceExists,
                    "target namespace exists",
                ));
            }
            self.drop_collection(&to.0, &to.1).await?;
        }
        let mut meta = entry.set.meta.clone();
        meta.db = to.0;
        meta.name = to.1;
        if !stay_temp {
            meta.options.remove("temp");
        }
        self.replace_meta(&entry, meta, vec![]).await?;
        Ok(())
    }

    async fn modify_index(
        &mut self,
        db: &str,
        name: &str,
        change: IndexChange,
    ) -> Result<IndexChangeOutcome> {
        let Some(entry) = self.state.get(db, name).cloned() else {
            return Err(ns_not_found(db, name));
        };
        let meta = &entry.set.meta;
        let position = match &change.target {
            IndexTarget::Name(n) => meta.indexes.iter().position(|i| &i.name == n),
            IndexTarget::Key(key) => {
                let probe = IndexMeta {
                    key: key.clone(),
                    ..CollectionMeta::id_index(0)
                };
                let found: Vec<usize> = meta
                    .indexes
                    .iter()
                    .enumerate()
                    .filter(|(_, i)| same_key(i, &probe))
                    .map(|(p, _)| p)
                    .collect();
                if found.len() > 1 {
                    return Err(Error::new(
                        ErrorKind::AmbiguousIndexKeyPattern,
                        format!(
                            "index keyPattern {} matches {} indexes, must use index name. Conflicting indexes: {}",
                            shell(&key.clone().into()),
                            found.len(),
                            found
                                .iter()
                                .map(|p| shell(&meta.indexes[*p].to_spec_doc().into()))
                                .collect::<Vec<_>>()
                                .join(", ")
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
        let mut new_meta = meta.clone();
        let index = &mut new_meta.indexes[position];
        let before = index.clone();
        (change.apply)(index)?;
        let after = index.clone();
        if before != after {
            self.replace_meta(&entry, new_meta, vec![]).await?;
        }
        Ok(IndexChangeOutcome { before, after })
    }
}

impl CatalogCore {
    /// `collMod`'s collection-level `expireAfterSeconds` of a time-series
    /// or clustered collection (None: `"off"`). The internal indexes
    /// already exist; only their `expireAfterSeconds` follows the option.
    async fn modify_expiry(&mut self, db: &str, name: &str, secs: Option<i64>) -> Result<()> {
        let Some(entry) = self.state.get(db, name).cloned() else {
            return Err(ns_not_found(db, name));
        };
        let mut meta = entry.set.meta.clone();
        match secs {
            Some(s) => {
                meta.options.insert("expireAfterSeconds", s);
            }
            None => {
                meta.options.remove("expireAfterSeconds");
            }
        }
        for wanted in timeseries::internal_indexes(&meta.options) {
            if let Some(index) = meta.indexes.iter_mut().find(|i| i.name == wanted.name) {
                index.expire_after_seconds = wanted.expire_after_seconds;
            }
        }
        if meta != entry.set.meta {
            self.replace_meta(&entry, meta, vec![]).await?;
            tracing::info!(ns = %format!("{db}.{name}"), expire_after_seconds = ?secs, "changed collection expiry");
        }
        Ok(())
    }

    /// `collMod`'s validation options. A new validator replaces the old one
    /// (an empty one removes it); a new level or action writes both the
    /// level and the action, as mongod stores them.
    async fn modify_validation(
        &mut self,
        db: &str,
        name: &str,
        change: ValidationChange,
    ) -> Result<()> {
        let Some(entry) = self.state.get(db, name).cloned() else {
            return Err(Error::new(
                ErrorKind::NamespaceNotFound,
                format!("ns does not exist: {db}.{name}"),
            ));
        };
        let mut meta = entry.set.meta.clone();
        let options = &mut meta.options;
        match change.validator {
            Some(validator) if validator.is_empty() => {
                options.remove("validator");
            }
            Some(validator) => {
                options.insert("validator", validator);
            }
            None => {}
        }
        if change.level.is_some() || change.action.is_some() {
            let current = |field: &str| options.get_str(field).ok().map(str::to_owned);
            let level = change
                .level
                .map(|l| l.name().to_owned())
                .or_else(|| current("validationLevel"));
            let action = change
                .action
                .map(|a| a.name().to_owned())
                .or_else(|| current("validationAction"));
            options.insert(
                "validationLevel",
                level.unwrap_or_else(|| ValidationLevel::default().name().to_owned()),
            );
            options.insert(
                "validationAction",
                action.unwrap_or_else(|| ValidationAction::default().name().to_owned()),
            );
        }
        order_validation_options(options);
        Validator::from_options(db, name, &meta.uuid, &meta.options)?;
        if meta != entry.set.meta {
            self.replace_meta(&entry, meta, vec![]).await?;
            tracing::info!(ns = %format!("{db}.{name}"), "changed validation options");
        }
        Ok(())
    }
}

fn same_key(a: &IndexMeta, b: &IndexMeta) -> bool {
    let mut a = a.clone();
    a.unique = b.unique;
    a.sparse = b.sparse;
    a.partial_filter = b.partial_filter.clone();
    a.extra = b.extra.clone();
    a.same_signature(b)
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

/// Creates a collection if it does not exist (implicit creation by a
/// write or `createIndexes`).
#[derive(Message)]
#[rtype(result = "Result<CollectionHandle>")]
pub struct EnsureCollection {
    pub db: String,
    pub name: String,
}

/// `create`: fails if the collection exists with other options.
#[derive(Message)]
#[rtype(result = "Result<CollectionHandle>")]
pub struct CreateCollection {
    pub db: String,
    pub name: String,
    pub options: bson::Document,
}

/// `drop`: the number of indexes the collection had, None if it did not exist.
#[derive(Message)]
#[rtype(result = "Result<Option<usize>>")]
pub struct DropCollection {
    pub db: String,
    pub name: String,
}

/// `dropDatabase`.
#[derive(Message)]
#[rtype(result = "Result<()>")]
pub struct DropDatabase {
    pub db: String,
}

#[derive(Message)]
#[rtype(result = "Result<CreateIndexesOutcome>")]
pub struct CreateIndexes {
    pub db: String,
    pub name: String,
    pub indexes: Vec<IndexMeta>,
}

/// `dropIndexes`: the number of indexes before.
#[derive(Message)]
#[rtype(result = "Result<usize>")]
pub struct DropIndexes {
    pub db: String,
    pub name: String,
    pub target: DropTarget,
}

#[derive(Message)]
#[rtype(result = "Result<()>")]
pub struct RenameCollection {
    pub from: (String, String),
    pub to: (String, String),
    pub drop_target: bool,
    /// Keep a temporary collection's `temp` flag (else the renamed
    /// collection is an ordinary one, as mongod's `stayTemp: false`).
    pub stay_temp: bool,
}

/// New validation options for `collMod`; `None` leaves one unchanged.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ValidationChange {
    /// A new validator; an empty document removes the validator.
    pub validator: Option<bson::Document>,
    pub level: Option<ValidationLevel>,
    pub action: Option<ValidationAction>,
}

/// `collMod`'s `validator`, `validationLevel` and `validationAction`.
#[derive(Message)]
#[rtype(result = "Result<()>")]
pub struct ModifyValidation {
    pub db: String,
    pub name: String,
    pub change: ValidationChange,
}

/// `collMod`'s collection-level `expireAfterSeconds` (None: `"off"`).
#[derive(Message)]
#[rtype(result = "Result<()>")]
pub struct ModifyExpiry {
    pub db: String,
    pub name: String,
    pub expire_after_seconds: Option<i64>,
}

impl Handler<ModifyExpiry> for CatalogActor {
    type Result = AtomicResponse<Self, Result<()>>;

    fn handle(&mut self, m: ModifyExpiry, _: &mut Context<Self>) -> Self::Result {
        self.ddl(|mut core| async move {
            let r = core
                .modify_expiry(&m.db, &m.name, m.expire_after_seconds)
                .await;
            (core, r)
        })
    }
}

#[derive(Message)]
#[rtype(result = "Result<IndexChangeOutcome>")]
pub struct ModifyIndex {
    pub db: String,
    pub name: String,
    pub change: IndexChange,
}

impl Handler<EnsureCollection> for CatalogActor {
    type Result = AtomicResponse<Self, Result<CollectionHandle>>;

    fn handle(&mut self, m: EnsureCollection, _: &mut Context<Self>) -> Self::Result {
        self.ddl(|mut core| async move {
            let r = core
                .create_collection(&m.db, &m.name, bson::Document::new(), true)
                .await;
            (core, r)
        })
    }
}

impl Handler<CreateCollection> for CatalogActor {
    type Result = AtomicResponse<Self, Result<CollectionHandle>>;

    fn handle(&mut self, m: CreateCollection, _: &mut Context<Self>) -> Self::Result {
        self.ddl(|mut core| async move {
            let r = core
                .create_collection(&m.db, &m.name, m.options, false)
                .await;
            (core, r)
        })
    }
}

impl Handler<DropCollection> for CatalogActor {
    type Result = AtomicResponse<Self, Result<Option<usize>>>;

    fn handle(&mut self, m: DropCollection, _: &mut Context<Self>) -> Self::Result {
        self.ddl(|mut core| async move {
            let r = core.drop_collection(&m.db, &m.name).await;
            (core, r)
        })
    }
}

impl Handler<DropDatabase> for CatalogActor {
    type Result = AtomicResponse<Self, Result<()>>;

    fn handle(&mut self, m: DropDatabase, _: &mut Context<Self>) -> Self::Result {
        self.ddl(|mut core| async move {
            let names: Vec<String> = core
                .state
                .in_db(&m.db)
                .map(|e| e.set.meta.name.clone())
                .collect();
            for name in names {
                if let Err(e) = core.drop_collection(&m.db, &name).await {
                    return (core, Err(e));
                }
            }
            (core, Ok(()))
        })
    }
}

impl Handler<CreateIndexes> for CatalogActor {
    type Result = AtomicResponse<Self, Result<CreateIndexesOutcome>>;

    fn handle(&mut self, m: CreateIndexes, _: &mut Context<Self>) -> Self::Result {
        self.ddl(|mut core| async move {
            let r = core.create_indexes(&m.db, &m.name, m.indexes).await;
            (core, r)
        })
    }
}

impl Handler<DropIndexes> for CatalogActor {
    type Result = AtomicResponse<Self, Result<usize>>;

    fn handle(&mut self, m: DropIndexes, _: &mut Context<Self>) -> Self::Result {
        self.ddl(|mut core| async move {
            let r = core.drop_indexes(&m.db, &m.name, m.target).await;
            (core, r)
        })
    }
}

impl Handler<RenameCollection> for CatalogActor {
    type Result = AtomicResponse<Self, Result<()>>;

    fn handle(&mut self, m: RenameCollection, _: &mut Context<Self>) -> Self::Result {
        self.ddl(|mut core| async move {
            let r = core.rename(m.from, m.to, m.drop_target, m.stay_temp).await;
            (core, r)
        })
    }
}

impl Handler<ModifyIndex> for CatalogActor {
    type Result = AtomicResponse<Self, Result<IndexChangeOutcome>>;

    fn handle(&mut self, m: ModifyIndex, _: &mut Context<Self>) -> Self::Result {
        self.ddl(|mut core| async move {
            let r = core.modify_index(&m.db, &m.name, m.change).await;
            (core, r)
        })
    }
}

impl Handler<ModifyValidation> for CatalogActor {
    type Result = AtomicResponse<Self, Result<()>>;

    fn handle(&mut self, m: ModifyValidation, _: &mut Context<Self>) -> Self::Result {
        self.ddl(|mut core| async move {
            let r = core.modify_validation(&m.db, &m.name, m.change).await;
            (core, r)
        })
    }
}
