//! Snapshots: a member's whole state at one log index, for a member the
//! log can no longer bring up to date (it joined after the entries it
//! needs were purged, or fell that far behind).
//!
//! A snapshot is an engine checkpoint (`Engine::checkpoint`): a flush and
//! links to the engine's files, taken between two entries, so its state is
//! exactly the entries up to the one it names. It is sent as one stream,
//! a [`Pack`] (`pack`): a header naming the checkpoint's files and their sizes,
//! then the files, read where they lie. The member that receives it
//! unpacks it beside its own data and marks it staged (`m/install`);
//! [`load_pending`] then replaces the member's state with the snapshot's,
//! before anything reads that state: at start, or at once when nothing of
//! it is kept in memory. A crash in the middle loads it again from the
//! start.
//!
//! The state is every family but the log's, and in the log's family every
//! key but the log's entries (`e`…) and the member's own keys (`m/`…: its
//! vote, its committed and purged points, its kept snapshot). The member
//! keeps its vote, and of its log only what follows the snapshot, when
//! its entry at the snapshot's index is the snapshot's.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use ebb_storage::engine::rocks::{RocksEngine, RocksOptions};
use ebb_storage::engine::{Cf, Direction, Engine, KeyRange};
use openraft::storage::SnapshotMeta;
use openraft::{Entry, LogId};
use tokio::io::AsyncWriteExt;

use crate::log::{ENTRY, KEPT, Kept, PURGED, decode, encode, entry_key};
use crate::pack::unpack;
pub use crate::pack::{Pack, SnapshotData};
use crate::types::{Member, TypeConfig};

type NodeId = u64;
type Meta = SnapshotMeta<NodeId, Member>;

/// A snapshot received and unpacked, not loaded yet: its meta.
const INSTALL: &[u8] = b"m/install";
/// Where a snapshot being received is unpacked.
const INCOMING: &str = "incoming";
/// Writes of a load are committed about this many bytes at a time.
const LOAD_BATCH: usize = 4 << 20;

/// The directory name of the snapshot ending at `applied`.
pub(crate) fn name(applied: Option<LogId<NodeId>>) -> String {
    match applied {
        Some(id) => format!("{}-{}", id.leader_id.term, id.index),
        None => "empty".to_owned(),
    }
}

/// Whether `key` of the log's family is state (in a snapshot).
fn is_state(key: &[u8]) -> bool {
    key.first() != Some(&ENTRY) && !key.starts_with(b"m/")
}

/// The file a snapshot being received is written to.
pub(crate) fn incoming_pack(root: &Path) -> PathBuf {
    root.join(format!("{INCOMING}.pack"))
}

fn engine_io(e: io::Error) -> ebb_storage::Error {
    ebb_storage::Error::engine(format!("snapshot: {e}"))
}

/// Stages the snapshot `meta` received in `data` for [`load_pending`]:
/// unpacked under `root`, and marked in `engine`.
pub(crate) async fn stage(
    engine: &dyn Engine,
    root: &Path,
    meta: &Meta,
    data: SnapshotData,
) -> ebb_storage::Result<()> {
    let pack = incoming_pack(root);
    match data {
        SnapshotData::Receiving(mut file) => {
            file.flush().await.map_err(engine_io)?;
            file.sync_all().await.map_err(engine_io)?;
        }
        // A snapshot handed over whole (the library's own tests do this).
        SnapshotData::Sending(mut from) => {
            let mut to = tokio::fs::File::create(&pack).await.map_err(engine_io)?;
            tokio::io::copy(&mut from, &mut to)
                .await
                .map_err(engine_io)?;
            to.sync_all().await.map_err(engine_io)?;
        }
    }
    let dir = root.join(INCOMING);
    tokio::task::spawn_blocking(move || {
        unpack(&pack, &dir)?;
        fs::remove_file(&pack)
    })
    .await
    .map_err(|e| ebb_storage::Error::engine(e.to_string()))?
    .map_err(engine_io)?;
    let mut batch = engine.batch();
    batch.put(Cf::Log, INSTALL, &encode(meta).map_err(storage_err)?)?;
    batch.commit(true)
}

fn storage_err(e: openraft::StorageError<NodeId>) -> ebb_storage::Error {
    ebb_storage::Error::engine(e.to_string())
}

/// Loads a snapshot staged in `engine` (its files under `root`) in place
/// of the state `engine` holds, if one is; whether one was.
pub fn load_pending(engine: &dyn Engine, root: &Path) -> ebb_storage::Result<bool> {
    engine.create_cf(Cf::Log)?;
    let Some(bytes) = engine.get(Cf::Log, INSTALL)? else {
        return Ok(false);
    };
    let meta: Meta = decode(&bytes).map_err(storage_err)?;
    let kept = name(meta.last_log_id);
    let (incoming, dir) = (root.join(INCOMING), root.join(&kept));
    let from = if incoming.exists() { &incoming } else { &dir };
    tracing::info!(snapshot = %kept, "loading a snapshot of the set's data");
    let source = RocksEngine::open(&RocksOptions {
        path: from.clone(),
        block_cache_bytes: 8 << 20,
        write_buffer_bytes: 8 << 20,
    })?;
    replace(engine, &source)?;
    drop(source);
    if from == &incoming {
        if dir.exists() {
            fs::remove_dir_all(&dir).map_err(engine_io)?;
        }
        fs::rename(&incoming, &dir).map_err(engine_io)?;
    }
    trim_log(engine, meta.last_log_id)?;
    let mut batch = engine.batch();
    let kept = Kept { meta, dir: kept };
    batch.put(Cf::Log, KEPT, &encode(&kept).map_err(storage_err)?)?;
    batch.delete(Cf::Log, INSTALL)?;
    batch.commit(true)?;
    remove_others(root, &kept.dir).map_err(engine_io)?;
    tracing::info!(snapshot = %kept.dir, "snapshot loaded");
    Ok(true)
}

/// Removes every checkpoint under `root` but `keep` (and one arriving).
pub(crate) fn remove_others(root: &Path, keep: &str) -> io::Result<()> {
    for entry in fs::read_dir(root)? {
        let entry = entry?;
        let name = entry.file_name();
        if entry.file_type()?.is_dir() && name != keep && name != INCOMING {
            fs::remove_dir_all(entry.path())?;
        }
    }
    Ok(())
}

/// Replaces the state in `engine` with the state in `source`.
fn replace(engine: &dyn Engine, source: &dyn Engine) -> ebb_storage::Result<()> {
    for id in engine.numbered_cfs() {
        engine.drop_cf(Cf::Id(id))?;
    }
    let log_state = [
        KeyRange::new(Vec::new(), Some(vec![ENTRY])),
        KeyRange::new(vec![ENTRY + 1], None),
    ];
    let mut batch = Batched::new(engine);
    for (cf, range) in [(Cf::Catalog, KeyRange::all())]
        .into_iter()
        .chain(log_state.clone().map(|r| (Cf::Log, r)))
    {
        let mut cursor = engine.cursor(cf, range, Direction::Forward)?;
        while cursor.valid() {
            if cf != Cf::Log || is_state(cursor.key()) {
                batch.delete(cf, cursor.key())?;
            }
            cursor.advance();
        }
        cursor.status()?;
    }
    let numbered = source.numbered_cfs();
    for &id in &numbered {
        engine.create_cf(Cf::Id(id))?;
    }
    let ranges = numbered
        .into_iter()
        .map(|id| (Cf::Id(id), KeyRange::all()))
        .chain([(Cf::Catalog, KeyRange::all())])
        .chain(log_state.map(|r| (Cf::Log, r)));
    for (cf, range) in ranges {
        let mut cursor = source.cursor(cf, range, Direction::Forward)?;
        while cursor.valid() {
            if cf != Cf::Log || is_state(cursor.key()) {
                batch.put(cf, cursor.key(), cursor.value())?;
            }
            cursor.advance();
        }
        cursor.status()?;
    }
    batch.finish()
}

/// Writes committed a few megabytes at a time.
struct Batched<'a> {
    engine: &'a dyn Engine,
    batch: Box<dyn ebb_storage::engine::Batch + 'a>,
    bytes: usize,
}

impl<'a> Batched<'a> {
    fn new(engine: &'a dyn Engine) -> Self {
        Batched {
            engine,
            batch: engine.batch(),
            bytes: 0,
        }
    }

    fn put(&mut self, cf: Cf, key: &[u8], value: &[u8]) -> ebb_storage::Result<()> {
        self.batch.put(cf, key, value)?;
        self.grew(key.len() + value.len())
    }

    fn delete(&mut self, cf: Cf, key: &[u8]) -> ebb_storage::Result<()> {
        self.batch.delete(cf, key)?;
        self.grew(key.len())
    }

    fn grew(&mut self, by: usize) -> ebb_storage::Result<()> {
        self.bytes += by;
        if self.bytes >= LOAD_BATCH {
            std::mem::replace(&mut self.batch, self.engine.batch()).commit(false)?;
            self.bytes = 0;
        }
        Ok(())
    }

    fn finish(self) -> ebb_storage::Result<()> {
        self.batch.commit(false)
    }
}

/// Drops the log's entries up to `last`, and every later one unless the
/// entry at `last`'s index is `last` (they follow the snapshot then).
fn trim_log(engine: &dyn Engine, last: Option<LogId<NodeId>>) -> ebb_storage::Result<()> {
    let Some(last) = last else {
        return Ok(());
    };
    let follows = match engine.get(Cf::Log, &entry_key(last.index))? {
        Some(bytes) => decode::<Entry<TypeConfig>>(&bytes)
            .map(|e| e.log_id == last)
            .unwrap_or(false),
        None => false,
    };
    let upper = if follows {
        entry_key(last.index + 1)
    } else {
        vec![ENTRY + 1]
    };
    let mut batch = engine.batch();
    batch.delete_range(Cf::Log, &entry_key(0), &upper)?;
    batch.put(Cf::Log, PURGED, &encode(&last).map_err(storage_err)?)?;
    batch.commit(true)
}
