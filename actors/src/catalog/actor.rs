//! `CatalogActor`: owns collection and index metadata and carries out
//! DDL.
//!
//! Every DDL operation (create/drop collection, database, index; rename;
//! index option and validation changes) runs here, one at a time: each
//! handler returns an `AtomicResponse`, so the next DDL message is not
//! looked at until the current one — including any index build it waits
//! for — has finished. The catalog's state travels through each operation
//! as an owned value ([`CatalogCore`]) and comes back when it completes;
//! nothing else can touch it meanwhile.
//!
//! What a request means (its error, whether it is a no-op, the new
//! records, the indexes to build or drop) is decided in `super::decide`;
//! this file carries the decision out: it allocates and drops column
//! families, writes catalog records, starts, switches and retires
//! collection actors, and publishes the catalog.
//!
//! Order of effects, chosen so a crash at any point leaves a consistent
//! disk: column families are created before the catalog record that names
//! them is written, and dropped after the record that named them is gone.
//! Families no record names are removed at startup.

use std::future::Future;
use std::hash::{BuildHasher, Hasher};
use std::sync::Arc;

use actix::prelude::*;
use ebb_storage::Collection;
use ebb_storage::catalog::{self, CollectionMeta, IndexMeta};
use ebb_storage::changes::{Applying, slot};
use ebb_storage::engine::Cf;
use ebb_storage::{Error, ErrorKind, Result};
use ebb_storage::{timeseries, ttl};

use super::decide::collections::{self, Create};
use super::decide::indexes::{
    self, CreateIndexesOutcome, DropTarget, IndexChange, IndexChangeOutcome,
};
use super::decide::options::{self, ValidationChange};
use super::logged::{self, Part, Row};
use super::view::{CatalogState, CatalogView};
use crate::collection::{
    BuildIndexes, CollectionActor, CollectionHandle, Lookup, Retire, SwitchCollection,
};
use crate::shared::Shared;

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
            let coll = Collection::open(meta, shared.hide_due.clone())?;
            if queued.contains(&coll.meta.id) {
                // Records expired before the restart may wait for the
                // sweep: the engine passes over them before anyone reads.
                let (engine, queue) = (shared.engine.clone(), coll.clone());
                blocking(move || queue.sweep.load(engine.as_ref(), queue.meta.id)).await?;
            }
            if coll.timeseries.is_some() {
                let (engine, probe) = (shared.engine.clone(), coll.clone());
                if blocking(move || timeseries::holds_extended_range(engine.as_ref(), &probe))
                    .await?
                    && coll.enter_extended_range()
                {
                    tracing::warn!(ns = %coll.ns(), "time-series collection holds measurements before 1970 or after 2038-01-19T03:14:07Z; the TTL monitor will skip it");
                }
            }
            let actor = CollectionActor::new(shared.clone(), coll.clone(), lookup(&view));
            let inserted = actor.inserts();
            let addr = actor.start();
            state.collections.insert(
                (coll.meta.db.clone(), coll.meta.name.clone()),
                CollectionHandle {
                    coll,
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

/// How a collection's writer finds another's (an archive's) in `view`.
fn lookup(view: &Arc<CatalogView>) -> Lookup {
    let view = view.clone();
    Arc::new(move |db: &str, name: &str| {
        view.load()
            .get(db, name)
            .map(|e| (e.coll.clone(), e.addr.clone()))
    })
}

/// The UUID of a new collection `db.name` (`listCollections`' `info.uuid`,
/// change events' `collectionUUID`): on a replica-set member applying an
/// entry, made from the entry's seed and the name, so every member gives
/// the collection the same one; elsewhere random.
pub fn uuid_of(applying: Option<&Applying>, db: &str, name: &str) -> bson::Binary {
    let Some(Applying { seed, .. }) = applying else {
        return new_uuid();
    };
    // Two FNV-1a hashes with different offsets: stable across builds and
    // platforms, as the members of a set may run different ones.
    let fnv = |offset: u64| {
        let mut h = offset;
        let parts: [&[u8]; 5] = [seed, db.as_bytes(), &[0], name.as_bytes(), &[0]];
        for b in parts.iter().flat_map(|p| p.iter()) {
            h ^= u64::from(*b);
            h = h.wrapping_mul(0x0000_0100_0000_01B3);
        }
        h
    };
    let mut bytes = Vec::with_capacity(16);
    bytes.extend_from_slice(&fnv(0xCBF2_9CE4_8422_2325).to_be_bytes());
    bytes.extend_from_slice(&fnv(0x6C62_272E_07BB_0142).to_be_bytes());
    versioned(bytes)
}

/// A random version-4 UUID.
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
    versioned(bytes)
}

/// 16 bytes as a version-4, RFC 4122 variant UUID.
fn versioned(mut bytes: Vec<u8>) -> bson::Binary {
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
        self.persist_logged(metas, removed, Vec::new()).await
    }

    /// [`persist`](Self::persist), with the change-log rows that say what
    /// changed (on a replica-set member: `changes::catalog_row`) in the
    /// same batch.
    async fn persist_logged(
        &self,
        metas: Vec<CollectionMeta>,
        removed: Vec<(String, String)>,
        rows: Vec<Row>,
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
            for (key, row) in &rows {
                b.put(Cf::Log, key, row)?;
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
                engine.held().unregister(id);
            }
            // A dropped collection's sweep queue (an index has none).
            let mut batch = engine.batch();
            ttl::sweep::forget(batch.as_mut(), &ids)?;
            batch.commit(false)
        })
        .await
    }

    /// Creates a collection unless it exists (with the same options, or
    /// any when `allow_existing` is set); hands back its handle.
    async fn create_collection(
        &mut self,
        db: &str,
        name: &str,
        options: bson::Document,
        allow_existing: bool,
        applying: Option<(&Applying, u32)>,
    ) -> Result<CollectionHandle> {
        let current = self.state.get(db, name).cloned();
        let plan = collections::create_collection(
            record(&current),
            db,
            name,
            options,
            allow_existing,
            || uuid_of(applying.map(|(a, _)| a), db, name),
        )?;
        let new = match (plan, current) {
            (Create::New(new), _) => new,
            (Create::Exists, Some(existing)) => return Ok(existing),
            (Create::Exists, None) => unreachable!("decided on an existing collection"),
        };
        let ids = self.create_cfs(new.families()).await?;
        let meta = new.record(&ids);
        let rows = match applying {
            Some((at, slot)) => logged::created(at, slot, &meta)?,
            None => Vec::new(),
        };
        self.persist_logged(vec![meta.clone()], vec![], rows)
            .await?;
        let coll = Collection::open(meta, self.shared.hide_due.clone())?;
        let actor = CollectionActor::new(self.shared.clone(), coll.clone(), lookup(&self.view));
        let inserted = actor.inserts();
        let addr = actor.start();
        let entry = CollectionHandle {
            coll,
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
        let removal = collections::drop_collection(&entry.coll.meta);
        self.publish();
        // Queued writes finish first; later ones see the collection gone.
        let _ = entry.addr.send(Retire).await;
        self.persist(vec![], vec![Self::key(db, name)]).await?;
        self.drop_cfs(removal.families).await?;
        if removal.wake_ttl {
            self.shared.ttl.wake.notify_one();
        }
        tracing::info!(ns = %format!("{db}.{name}"), "dropped collection");
        Ok(Some(removal.indexes))
    }

    async fn create_indexes(
        &mut self,
        db: &str,
        name: &str,
        requested: Vec<IndexMeta>,
        applying: Option<Applying>,
    ) -> Result<CreateIndexesOutcome> {
        let build = indexes::create_indexes(
            self.state.get(db, name).map(|e| &e.coll.meta),
            db,
            name,
            requested,
        )?;
        let archives = {
            let in_db: Vec<&CollectionMeta> = self.state.in_db(db).map(|e| &e.coll.meta).collect();
            indexes::archives_to_create(&build, db, name, &in_db)?
        };
        for archive in archives {
            let at = applying.as_ref().map(|a| (a, slot::ARCHIVE));
            self.create_collection(db, &archive, bson::Document::new(), true, at)
                .await?;
        }
        let entry = self
            .create_collection(
                db,
                name,
                bson::Document::new(),
                true,
                applying.as_ref().map(|a| (a, slot::CREATE)),
            )
            .await?;
        let before = entry.coll.meta.indexes.len();
        if build.new.is_empty() {
            return Ok(build.outcome(before, before));
        }
        let ns = format!("{db}.{name}");
        let ids = self.create_cfs(build.families()).await?;
        let meta = build.record(&entry.coll.meta, &ids);
        let new_names = build.names();
        let built = match Collection::open(meta.clone(), self.shared.hide_due.clone()) {
            Ok(coll) => {
                let res = entry
                    .addr
                    .send(BuildIndexes {
                        coll: coll.clone(),
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
                .map(|()| coll)
            }
            Err(e) => Err(e),
        };
        let coll = match built {
            Ok(coll) => coll,
            Err(e) => {
                self.drop_cfs(ids).await?;
                return Err(e);
            }
        };
        let rows = match &applying {
            Some(at) => logged::indexes_created(at, &meta, &new_names)?,
            None => Vec::new(),
        };
        self.persist_logged(vec![meta], vec![], rows).await?;
        let after = coll.meta.indexes.len();
        let has_ttl = coll.meta.indexes.iter().any(IndexMeta::is_ttl);
        self.state.collections.insert(
            Self::key(db, name),
            CollectionHandle {
                coll,
                addr: entry.addr,
                inserted: entry.inserted,
            },
        );
        self.publish();
        if has_ttl {
            self.shared.ttl.wake.notify_one();
        }
        tracing::info!(ns = %ns, indexes = ?new_names, "built indexes");
        Ok(build.outcome(before, after))
    }

    /// Applies a change to one collection's metadata without building
    /// anything: drops of indexes, option changes, renames.
    async fn replace_meta(
        &mut self,
        old: &CollectionHandle,
        meta: CollectionMeta,
        dropped_cfs: Vec<u64>,
    ) -> Result<CollectionHandle> {
        self.replace_meta_logged(old, meta, dropped_cfs, Vec::new())
            .await
    }

    /// [`replace_meta`](Self::replace_meta), with the change-log rows that
    /// say what changed in the same batch.
    async fn replace_meta_logged(
        &mut self,
        old: &CollectionHandle,
        meta: CollectionMeta,
        dropped_cfs: Vec<u64>,
        rows: Vec<Row>,
    ) -> Result<CollectionHandle> {
        let coll = Collection::open(meta.clone(), self.shared.hide_due.clone())?;
        if old.coll.in_extended_range() {
            coll.enter_extended_range();
        }
        let old_key = Self::key(&old.coll.meta.db, &old.coll.meta.name);
        let new_key = Self::key(&meta.db, &meta.name);
        let removed = if old_key != new_key {
            vec![old_key.clone()]
        } else {
            vec![]
        };
        self.persist_logged(vec![meta], removed, rows).await?;
        self.state.collections.remove(&old_key);
        let entry = CollectionHandle {
            coll: coll.clone(),
            addr: old.addr.clone(),
            inserted: old.inserted.clone(),
        };
        self.state.collections.insert(new_key, entry.clone());
        self.publish();
        let _ = old.addr.send(SwitchCollection(coll)).await;
        self.drop_cfs(dropped_cfs).await?;
        self.shared.ttl.wake.notify_one();
        Ok(entry)
    }

    async fn drop_indexes(
        &mut self,
        db: &str,
        name: &str,
        target: DropTarget,
        applying: Option<Applying>,
    ) -> Result<usize> {
        let entry = self.state.get(db, name).cloned();
        let drop = indexes::drop_indexes(record(&entry), db, name, &target)?;
        if let (Some(entry), Some(change)) = (entry, drop.change) {
            let rows = match &applying {
                Some(at) => logged::indexes_dropped(at, &entry.coll.meta, &change.record)?,
                None => Vec::new(),
            };
            self.replace_meta_logged(&entry, change.record, change.families, rows)
                .await?;
        }
        Ok(drop.before)
    }

    async fn rename(
        &mut self,
        from: (String, String),
        to: (String, String),
        drop_target: bool,
        stay_temp: bool,
    ) -> Result<()> {
        let source = self.state.get(&from.0, &from.1).cloned();
        let target_exists = self.state.get(&to.0, &to.1).is_some();
        let plan = collections::rename(
            record(&source),
            target_exists,
            &from,
            &to,
            drop_target,
            stay_temp,
        )?;
        if plan.drop_target {
            self.drop_collection(&to.0, &to.1).await?;
        }
        if let Some(source) = source {
            self.replace_meta(&source, plan.record, vec![]).await?;
        }
        Ok(())
    }

    async fn modify_index(
        &mut self,
        db: &str,
        name: &str,
        change: IndexChange,
        applying: Option<Applying>,
    ) -> Result<IndexChangeOutcome> {
        let entry = self.state.get(db, name).cloned();
        let m = indexes::modify_index(record(&entry), db, name, change)?;
        if let (Some(entry), Some(meta)) = (entry, m.record) {
            let rows = match &applying {
                Some(at) => logged::index_modified(at, &entry.coll.meta, &meta, &m.outcome)?,
                None => Vec::new(),
            };
            self.replace_meta_logged(&entry, meta, vec![], rows).await?;
        }
        Ok(m.outcome)
    }

    /// `collMod`'s collection-level `expireAfterSeconds` of a time-series
    /// or clustered collection (None: `"off"`).
    async fn modify_expiry(
        &mut self,
        db: &str,
        name: &str,
        secs: Option<i64>,
        applying: Option<Applying>,
    ) -> Result<()> {
        let entry = self.state.get(db, name).cloned();
        let meta = options::modify_expiry(record(&entry), db, name, secs)?;
        if let (Some(entry), Some(meta)) = (entry, meta) {
            let rows = match &applying {
                Some(at) => logged::options_modified(at, Part::Expiry, &entry.coll.meta, &meta)?,
                None => Vec::new(),
            };
            self.replace_meta_logged(&entry, meta, vec![], rows).await?;
            tracing::info!(ns = %format!("{db}.{name}"), expire_after_seconds = ?secs, "changed collection expiry");
        }
        Ok(())
    }

    /// `collMod`'s validation options.
    async fn modify_images(
        &mut self,
        db: &str,
        name: &str,
        enabled: bool,
        applying: Option<Applying>,
    ) -> Result<()> {
        let entry = self.state.get(db, name).cloned();
        let meta = options::modify_images(record(&entry), db, name, enabled)?;
        if let (Some(entry), Some(meta)) = (entry, meta) {
            let rows = match &applying {
                Some(at) => logged::options_modified(at, Part::Images, &entry.coll.meta, &meta)?,
                None => Vec::new(),
            };
            self.replace_meta_logged(&entry, meta, vec![], rows).await?;
            tracing::info!(ns = %format!("{db}.{name}"), enabled, "changed changeStreamPreAndPostImages");
        }
        Ok(())
    }

    async fn modify_validation(
        &mut self,
        db: &str,
        name: &str,
        change: ValidationChange,
        applying: Option<Applying>,
    ) -> Result<()> {
        let entry = self.state.get(db, name).cloned();
        let meta = options::modify_validation(record(&entry), db, name, change)?;
        if let (Some(entry), Some(meta)) = (entry, meta) {
            let rows = match &applying {
                Some(at) => {
                    logged::options_modified(at, Part::Validation, &entry.coll.meta, &meta)?
                }
                None => Vec::new(),
            };
            self.replace_meta_logged(&entry, meta, vec![], rows).await?;
            tracing::info!(ns = %format!("{db}.{name}"), "changed validation options");
        }
        Ok(())
    }
}

/// The record a decision is made on: the collection's, if it exists.
fn record(entry: &Option<CollectionHandle>) -> Option<&CollectionMeta> {
    entry.as_ref().map(|e| &e.coll.meta)
}

/// Creates a collection if it does not exist (implicit creation by a
/// write or `createIndexes`).
#[derive(Message)]
#[rtype(result = "Result<CollectionHandle>")]
pub struct EnsureCollection {
    pub db: String,
    pub name: String,
    /// On a replica-set member, the entry it applies in (`uuid_of`,
    /// `changes::catalog_row`).
    pub applying: Option<Applying>,
}

/// `create`: fails if the collection exists with other options.
#[derive(Message)]
#[rtype(result = "Result<CollectionHandle>")]
pub struct CreateCollection {
    pub db: String,
    pub name: String,
    pub options: bson::Document,
    /// On a replica-set member, the entry it applies in (`uuid_of`,
    /// `changes::catalog_row`).
    pub applying: Option<Applying>,
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
    /// On a replica-set member, the entry it applies in.
    pub applying: Option<Applying>,
}

/// `dropIndexes`: the number of indexes before.
#[derive(Message)]
#[rtype(result = "Result<usize>")]
pub struct DropIndexes {
    pub db: String,
    pub name: String,
    pub target: DropTarget,
    /// On a replica-set member, the entry it applies in.
    pub applying: Option<Applying>,
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

/// `collMod`'s `validator`, `validationLevel` and `validationAction`.
#[derive(Message)]
#[rtype(result = "Result<()>")]
pub struct ModifyValidation {
    pub db: String,
    pub name: String,
    pub change: ValidationChange,
    /// On a replica-set member, the entry it applies in.
    pub applying: Option<Applying>,
}

/// `collMod`'s `changeStreamPreAndPostImages`.
#[derive(Message)]
#[rtype(result = "Result<()>")]
pub struct ModifyImages {
    pub db: String,
    pub name: String,
    pub enabled: bool,
    /// On a replica-set member, the entry it applies in.
    pub applying: Option<Applying>,
}

impl Handler<ModifyImages> for CatalogActor {
    type Result = AtomicResponse<Self, Result<()>>;

    fn handle(&mut self, m: ModifyImages, _: &mut Context<Self>) -> Self::Result {
        self.ddl(|mut core| async move {
            let r = core
                .modify_images(&m.db, &m.name, m.enabled, m.applying)
                .await;
            (core, r)
        })
    }
}

/// `collMod`'s collection-level `expireAfterSeconds` (None: `"off"`).
#[derive(Message)]
#[rtype(result = "Result<()>")]
pub struct ModifyExpiry {
    pub db: String,
    pub name: String,
    pub expire_after_seconds: Option<i64>,
    /// On a replica-set member, the entry it applies in.
    pub applying: Option<Applying>,
}

impl Handler<ModifyExpiry> for CatalogActor {
    type Result = AtomicResponse<Self, Result<()>>;

    fn handle(&mut self, m: ModifyExpiry, _: &mut Context<Self>) -> Self::Result {
        self.ddl(|mut core| async move {
            let r = core
                .modify_expiry(&m.db, &m.name, m.expire_after_seconds, m.applying)
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
    /// On a replica-set member, the entry it applies in.
    pub applying: Option<Applying>,
}

impl Handler<EnsureCollection> for CatalogActor {
    type Result = AtomicResponse<Self, Result<CollectionHandle>>;

    fn handle(&mut self, m: EnsureCollection, _: &mut Context<Self>) -> Self::Result {
        self.ddl(|mut core| async move {
            let r = core
                .create_collection(
                    &m.db,
                    &m.name,
                    bson::Document::new(),
                    true,
                    m.applying.as_ref().map(|a| (a, slot::CREATE)),
                )
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
                .create_collection(
                    &m.db,
                    &m.name,
                    m.options,
                    false,
                    m.applying.as_ref().map(|a| (a, slot::CREATE)),
                )
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
                .map(|e| e.coll.meta.name.clone())
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
            let r = core
                .create_indexes(&m.db, &m.name, m.indexes, m.applying)
                .await;
            (core, r)
        })
    }
}

impl Handler<DropIndexes> for CatalogActor {
    type Result = AtomicResponse<Self, Result<usize>>;

    fn handle(&mut self, m: DropIndexes, _: &mut Context<Self>) -> Self::Result {
        self.ddl(|mut core| async move {
            let r = core
                .drop_indexes(&m.db, &m.name, m.target, m.applying)
                .await;
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
            let r = core
                .modify_index(&m.db, &m.name, m.change, m.applying)
                .await;
            (core, r)
        })
    }
}

impl Handler<ModifyValidation> for CatalogActor {
    type Result = AtomicResponse<Self, Result<()>>;

    fn handle(&mut self, m: ModifyValidation, _: &mut Context<Self>) -> Self::Result {
        self.ddl(|mut core| async move {
            let r = core
                .modify_validation(&m.db, &m.name, m.change, m.applying)
                .await;
            (core, r)
        })
    }
}
