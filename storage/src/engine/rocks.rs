//! The RocksDB implementation of [`Engine`]: the only module in ebb that
//! names `rocksdb`.
//!
//! One database per node. Column families are named `catalog` and, for
//! numbered ones, their id in decimal (`"17"`); the `default` family exists
//! because RocksDB requires it and stays empty. All families share one
//! block cache and one memtable budget, so creating many collections does
//! not multiply memory.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rocksdb::{
    BlockBasedOptions, BoundColumnFamily, Cache, ColumnFamilyDescriptor, DBCompressionType,
    DBRawIteratorWithThreadMode, DBWithThreadMode, MultiThreaded, Options, ReadOptions, WriteBatch,
    WriteBufferManager, WriteOptions,
};

use super::held::{HeldRegistry, Views};
use super::skip_held::{SkipHeld, family, view_of};
use super::{
    Batch, Cf, CfStats, Cursor, Direction, Engine, EngineMemory, KeyRange, SealedBatch, Snapshot,
};
use crate::{Error, ErrorKind, Result};
use ebb_lang::decided::Rider;

type Db = DBWithThreadMode<MultiThreaded>;

const CATALOG_CF: &str = "catalog";
const LOG_CF: &str = "log";

/// Tuning knobs the node passes in from its configuration.
#[derive(Debug, Clone)]
pub struct RocksOptions {
    pub path: PathBuf,
    /// Shared block cache for all column families, memtables included.
    pub block_cache_bytes: usize,
    /// Total memtable budget across all column families: past it, a flush
    /// starts.
    pub write_buffer_bytes: usize,
}

/// A RocksDB database opened for ebb.
pub struct RocksEngine {
    db: Db,
    cf_options: Options,
    held: HeldRegistry,
}

/// RocksDB's error as ebb's: a full disk gets its own kind (the client
/// learns why its write failed), anything else stays an engine error whose
/// text only the log sees.
///
/// After a write fails for lack of space RocksDB stops taking writes (they
/// fail with the same error) and its space manager retries every few
/// seconds; once space is freed it flushes the memtables, starts a new
/// write-ahead log and takes writes again, so no restart is needed.
fn engine_err(e: rocksdb::Error) -> Error {
    let text = e.into_string();
    if text.contains("No space left on device") {
        tracing::error!(error = %text, "write failed: the disk is full");
        return Error::new(
            ErrorKind::OutOfDiskSpace,
            "No space left on device: the write was not applied. Writes resume by themselves \
             within seconds of disk space being freed",
        );
    }
    if text.contains("Writer has previous error") {
        return Error::new(
            ErrorKind::OutOfDiskSpace,
            "Writes are failing since an earlier storage error (the server log says which, \
             often a full disk); the write was not applied",
        );
    }
    Error::engine(text)
}

/// Makes the write-ahead log durable with an empty write batch synced:
/// RocksDB refuses it up front while a write error stands, where a direct
/// WAL sync would touch the failed log file and turn a full disk, which
/// RocksDB recovers from by itself, into a fatal error only a restart clears.
fn sync_wal(db: &Db) -> Result<()> {
    let mut wo = WriteOptions::default();
    wo.set_sync(true);
    db.write_opt(WriteBatch::default(), &wo).map_err(engine_err)
}

fn cf_name(cf: Cf) -> String {
    match cf {
        Cf::Catalog => CATALOG_CF.to_owned(),
        Cf::Log => LOG_CF.to_owned(),
        Cf::Id(id) => id.to_string(),
    }
}

impl RocksEngine {
    /// Opens (or creates) the database at `opts.path` with every column
    /// family found on disk.
    pub fn open(opts: &RocksOptions) -> Result<Self> {
        std::fs::create_dir_all(&opts.path)
            .map_err(|e| Error::engine(format!("cannot create {}: {e}", opts.path.display())))?;
        let cache = Cache::new_lru_cache(opts.block_cache_bytes);
        let cf_options = column_family_options(&cache);

        let mut db_options = cf_options.clone();
        // Compactions and flushes are background work: on a small machine
        // they must not take CPU from foreground requests (the default
        // environment is process-wide, so this is done once per open,
        // idempotently). Flushes at normal priority took the writer's core
        // while it had a group to commit: `ebb-bench insert` ran 8 % faster
        // and the p99 of inserts during an unpaced purge fell from 6.4x to
        // 3.9x idle with them lowered too (BENCHMARKS.md, "One lock per
        // document, and flushes at low priority"). A flush starved for long
        // would stop writes at the memtable limit, and free the cores for
        // itself; a 10-minute churn at 100k docs/s showed no such stall.
        let mut env = rocksdb::Env::new().map_err(engine_err)?;
        env.lower_thread_pool_cpu_priority();
        env.lower_high_priority_thread_pool_cpu_priority();
        db_options.set_env(&env);
        db_options.create_if_missing(true);
        db_options.create_missing_column_families(true);
        db_options.set_max_background_jobs(2);
        // Memtables are charged to the block cache: while low-priority
        // flushes lag behind a stream, the memtables waiting for them take
        // the place of cached blocks instead of adding to them, so the two
        // together stay within the cache's size (the write budget still
        // decides when a flush starts, and nothing stalls writes).
        let memtables = if opts.block_cache_bytes == 0 {
            WriteBufferManager::new_write_buffer_manager(opts.write_buffer_bytes, false)
        } else {
            WriteBufferManager::new_write_buffer_manager_with_cache(
                opts.write_buffer_bytes,
                false,
                cache.clone(),
            )
        };
        db_options.set_write_buffer_manager(&memtables);
        // Bound the WAL so rarely written column families get flushed and
        // old log files can go.
        db_options.set_max_total_wal_size(4 * opts.write_buffer_bytes as u64);
        db_options.set_bytes_per_sync(1 << 20);
        db_options.set_keep_log_file_num(4);

        let mut names = existing_cfs(&db_options, &opts.path);
        for required in ["default", CATALOG_CF] {
            if !names.iter().any(|n| n == required) {
                names.push(required.to_owned());
            }
        }
        let descriptors = names
            .iter()
            .map(|n| ColumnFamilyDescriptor::new(n, cf_options.clone()));
        let db =
            Db::open_cf_descriptors(&db_options, &opts.path, descriptors).map_err(engine_err)?;
        Ok(RocksEngine {
            db,
            cf_options,
            held: HeldRegistry::default(),
        })
    }

    fn handle(&self, cf: Cf) -> Result<Arc<BoundColumnFamily<'_>>> {
        self.db
            .cf_handle(&cf_name(cf))
            .ok_or_else(|| Error::engine(format!("column family {} is missing", cf_name(cf))))
    }
}

fn column_family_options(cache: &Cache) -> Options {
    let mut table = BlockBasedOptions::default();
    table.set_block_cache(cache);
    table.set_bloom_filter(10.0, false);
    table.set_cache_index_and_filter_blocks(true);
    table.set_pin_l0_filter_and_index_blocks_in_cache(true);
    let mut o = Options::default();
    o.set_block_based_table_factory(&table);
    // LZ4 at every level, the bottom one included. Most of what ebb stores
    // expires within minutes, and a compaction into the bottom level is where
    // it meets its tombstones: ZSTD there cost a fifth more compaction CPU
    // under a steady stream (`ebb-bench churn`, BENCHMARKS.md) for files
    // about a fifth smaller.
    o.set_compression_type(DBCompressionType::Lz4);
    o
}

fn existing_cfs(opts: &Options, path: &Path) -> Vec<String> {
    // A fresh directory has no CURRENT file and therefore no families.
    Db::list_cf(opts, path).unwrap_or_default()
}

fn read_options(range: &KeyRange) -> ReadOptions {
    let mut ro = ReadOptions::default();
    if !range.lower.is_empty() {
        ro.set_iterate_lower_bound(range.lower.clone());
    }
    if let Some(upper) = &range.upper {
        ro.set_iterate_upper_bound(upper.clone());
    }
    ro
}

impl Engine for RocksEngine {
    fn create_cf(&self, cf: Cf) -> Result<()> {
        let name = cf_name(cf);
        if self.db.cf_handle(&name).is_some() {
            return Ok(());
        }
        self.db
            .create_cf(&name, &self.cf_options)
            .map_err(engine_err)
    }

    fn drop_cf(&self, cf: Cf) -> Result<()> {
        let name = cf_name(cf);
        if self.db.cf_handle(&name).is_none() {
            return Ok(());
        }
        self.db.drop_cf(&name).map_err(engine_err)
    }

    fn numbered_cfs(&self) -> Vec<u64> {
        let mut ids: Vec<u64> = existing_cfs(&Options::default(), self.db.path())
            .iter()
            .filter_map(|n| n.parse::<u64>().ok())
            .filter(|id| self.db.cf_handle(&id.to_string()).is_some())
            .collect();
        ids.sort_unstable();
        ids
    }

    fn batch(&self) -> Box<dyn Batch + '_> {
        Box::new(RocksBatch {
            engine: self,
            inner: WriteBatch::default(),
            families: Vec::new(),
            pending: Vec::new(),
            bytes: Vec::new(),
            len: 0,
        })
    }

    fn commit_sealed(&self, batch: SealedBatch, sync: bool) -> Result<()> {
        let mut batch = batch
            .into_inner::<WriteBatch>()
            .ok_or_else(|| Error::engine("a batch sealed by another engine".to_owned()))?;
        // A replica-set member applying an entry records how far it got in
        // the same batch, and drops the batches it committed before a crash
        // (`ebb_lang::decided::Rider`).
        if let Some(rider) = ebb_lang::decided::rider() {
            let Some(progress) = rider.next_commit() else {
                return Ok(());
            };
            batch.put_cf(&self.handle(Cf::Log)?, Rider::KEY, progress);
        }
        let mut wo = WriteOptions::default();
        wo.set_sync(sync);
        // A family can be dropped after a write to it was added (its handle
        // keeps it alive while the batch is built). RocksDB would then fail
        // the commit and refuse every later write until the database is
        // reopened. Skipping the dropped family's writes instead commits the
        // batch as if just before the drop, which erased them anyway.
        wo.set_ignore_missing_column_families(true);
        self.db.write_opt(*batch, &wo).map_err(engine_err)
    }

    fn get(&self, cf: Cf, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let h = self.handle(cf)?;
        self.held.read(family(cf), |view| {
            if view.is_some_and(|v| v.holds(key)) {
                return Ok(None);
            }
            self.db.get_cf(&h, key).map_err(engine_err)
        })
    }

    fn multi_get(&self, cf: Cf, keys: &[Vec<u8>]) -> Result<Vec<Option<Vec<u8>>>> {
        let h = self.handle(cf)?;
        self.held.read(family(cf), |view| {
            let found =
                self.db
                    .batched_multi_get_cf_opt(&h, keys.iter(), false, &ReadOptions::default());
            (found.into_iter().zip(keys))
                .map(|(r, key)| match &view {
                    Some(v) if v.holds(key) => Ok(None),
                    _ => r.map(|v| v.map(|s| s.to_vec())).map_err(engine_err),
                })
                .collect()
        })
    }

    fn cursor(&self, cf: Cf, range: KeyRange, dir: Direction) -> Result<Box<dyn Cursor + '_>> {
        let h = self.handle(cf)?;
        self.held.read(family(cf), |view| {
            let iter = self.db.raw_iterator_cf_opt(&h, read_options(&range));
            Ok(SkipHeld::wrap(
                Box::new(RocksCursor::start(iter, range, dir)),
                view,
            ))
        })
    }

    fn count(&self, cf: Cf, range: KeyRange) -> Result<u64> {
        let h = self.handle(cf)?;
        let mut ro = read_options(&range);
        // Blocks read once: caching them would evict what foreground reads
        // use, and grow the heap only to free it again.
        ro.fill_cache(false);
        let mut cursor = self.held.read(family(cf), |view| {
            let iter = self.db.raw_iterator_cf_opt(&h, ro);
            SkipHeld::wrap(
                Box::new(RocksCursor::start(iter, range, Direction::Forward)),
                view,
            )
        });
        super::count_rest(cursor.as_mut())
    }

    fn approximate_size(&self, cf: Cf, range: KeyRange) -> Result<u64> {
        let h = self.handle(cf)?;
        let Some(upper) = &range.upper else {
            return Ok(0);
        };
        let sizes = self
            .db
            .get_approximate_sizes_cf(&h, &[rocksdb::Range::new(&range.lower, upper)]);
        Ok(sizes.first().copied().unwrap_or(0))
    }

    fn snapshot(&self) -> Box<dyn Snapshot + '_> {
        self.held.read_all(|views| {
            Box::new(RocksSnapshot {
                engine: self,
                snap: self.db.snapshot(),
                views,
            })
        })
    }

    fn held(&self) -> &HeldRegistry {
        &self.held
    }

    fn sync_wal(&self) -> Result<()> {
        sync_wal(&self.db)
    }

    fn flush(&self) -> Result<()> {
        let mut names = existing_cfs(&Options::default(), self.db.path());
        names.retain(|n| self.db.cf_handle(n).is_some());
        for name in names {
            if let Some(h) = self.db.cf_handle(&name) {
                self.db.flush_cf(&h).map_err(engine_err)?;
            }
        }
        sync_wal(&self.db)
    }

    fn checkpoint(&self, dir: &Path) -> Result<()> {
        rocksdb::checkpoint::Checkpoint::new(&self.db)
            .and_then(|c| c.create_checkpoint(dir))
            .map_err(engine_err)
    }

    fn compact(&self, cf: Cf, range: Option<KeyRange>) -> Result<()> {
        let h = self.handle(cf)?;
        match range {
            None => self.db.compact_range_cf(&h, None::<&[u8]>, None::<&[u8]>),
            Some(r) => self
                .db
                .compact_range_cf(&h, Some(&r.lower), r.upper.as_deref()),
        }
        Ok(())
    }

    fn stats(&self, cf: Cf) -> Result<CfStats> {
        let h = self.handle(cf)?;
        let prop = |name: &str| -> Result<u64> {
            Ok(self
                .db
                .property_int_value_cf(&h, name)
                .map_err(engine_err)?
                .unwrap_or(0))
        };
        Ok(CfStats {
            estimated_keys: prop("rocksdb.estimate-num-keys")?,
            live_data_bytes: prop("rocksdb.estimate-live-data-size")?,
            sst_bytes: prop("rocksdb.total-sst-files-size")?,
            memtable_bytes: prop("rocksdb.cur-size-all-mem-tables")?,
            pending_compaction_bytes: prop("rocksdb.estimate-pending-compaction-bytes")?,
            memtable_all_bytes: prop("rocksdb.size-all-mem-tables")?,
            table_readers_bytes: prop("rocksdb.estimate-table-readers-mem")?,
        })
    }

    fn memory(&self) -> Result<EngineMemory> {
        // One cache serves every family, so any family's reading is the
        // whole cache's.
        let prop = |name: &str| -> Result<u64> {
            Ok(self
                .db
                .property_int_value(name)
                .map_err(engine_err)?
                .unwrap_or(0))
        };
        Ok(EngineMemory {
            block_cache_bytes: prop("rocksdb.block-cache-usage")?,
            block_cache_pinned_bytes: prop("rocksdb.block-cache-pinned-usage")?,
        })
    }
}

/// A write batch that hands point writes to RocksDB in key order.
///
/// A memtable insert searches the skiplist from a hint left by the previous
/// insert into the same memtable, so keys applied in order cost almost
/// nothing to place while random ones search from the top. A point write
/// whose key is not below the last one its family took goes straight into
/// the RocksDB batch (ascending `_id`s, one due time: most inserts); the
/// first that is below it starts buffering that family's writes, which are
/// applied sorted by key (a stable sort, so two writes of one key keep
/// their order) when the batch is sealed or a range delete comes. So every
/// write of a family that went straight in came before every buffered one,
/// and no write crosses a range delete.
struct RocksBatch<'a> {
    engine: &'a RocksEngine,
    inner: WriteBatch,
    // Handle lookups take a lock inside the rocksdb crate; a batch touches
    // only a few families, so it keeps the handles it has resolved.
    families: Vec<Family<'a>>,
    pending: Vec<PointWrite>,
    /// Keys and values of `pending`, back to back.
    bytes: Vec<u8>,
    len: usize,
}

/// A column family a batch writes to.
struct Family<'a> {
    cf: Cf,
    handle: Arc<BoundColumnFamily<'a>>,
    /// The last key written straight into the RocksDB batch.
    last: Vec<u8>,
    /// Writes to this family are being buffered until the next flush.
    buffering: bool,
}

/// A buffered put (`value` is Some) or delete.
struct PointWrite {
    family: usize,
    key: std::ops::Range<usize>,
    value: Option<std::ops::Range<usize>>,
}

impl<'a> RocksBatch<'a> {
    fn family(&mut self, cf: Cf) -> Result<usize> {
        if let Some(i) = self.families.iter().position(|f| f.cf == cf) {
            return Ok(i);
        }
        let handle = self.engine.handle(cf)?;
        self.families.push(Family {
            cf,
            handle,
            last: Vec::new(),
            buffering: false,
        });
        Ok(self.families.len() - 1)
    }

    fn stash(&mut self, data: &[u8]) -> std::ops::Range<usize> {
        let start = self.bytes.len();
        self.bytes.extend_from_slice(data);
        start..self.bytes.len()
    }

    fn buffer(&mut self, cf: Cf, key: &[u8], value: Option<&[u8]>) -> Result<()> {
        let i = self.family(cf)?;
        self.len += 1;
        let family = &mut self.families[i];
        if !family.buffering && key >= family.last.as_slice() {
            match value {
                Some(v) => self.inner.put_cf(&family.handle, key, v),
                None => self.inner.delete_cf(&family.handle, key),
            }
            family.last.clear();
            family.last.extend_from_slice(key);
            return Ok(());
        }
        family.buffering = true;
        let key = self.stash(key);
        let value = value.map(|v| self.stash(v));
        self.pending.push(PointWrite {
            family: i,
            key,
            value,
        });
        Ok(())
    }

    /// Applies the buffered point writes to the RocksDB batch, sorted by
    /// column family, then by key: the memtables take sorted
    /// keys faster. The writes are split by family first (in one pass)
    /// because each family's keys mostly arrive in order already, which
    /// the stable sort then checks in one pass. A key written twice keeps
    /// its order: the last write wins. Every family then writes straight
    /// through again.
    fn flush_pending(&mut self) {
        let bytes = &self.bytes;
        if !self.pending.is_empty() {
            let mut by_family: Vec<Vec<PointWrite>> = Vec::new();
            by_family.resize_with(self.families.len(), Vec::new);
            for w in self.pending.drain(..) {
                by_family[w.family].push(w);
            }
            for (family, mut writes) in by_family.into_iter().enumerate() {
                writes.sort_by(|a, b| bytes[a.key.clone()].cmp(&bytes[b.key.clone()]));
                let h = &self.families[family].handle;
                for w in writes {
                    let key = &bytes[w.key];
                    match w.value {
                        Some(v) => self.inner.put_cf(h, key, &bytes[v]),
                        None => self.inner.delete_cf(h, key),
                    }
                }
            }
        }
        self.bytes.clear();
        for family in &mut self.families {
            family.buffering = false;
            family.last.clear();
        }
    }
}

impl Batch for RocksBatch<'_> {
    fn put(&mut self, cf: Cf, key: &[u8], value: &[u8]) -> Result<()> {
        self.buffer(cf, key, Some(value))
    }

    fn delete(&mut self, cf: Cf, key: &[u8]) -> Result<()> {
        self.buffer(cf, key, None)
    }

    fn delete_range(&mut self, cf: Cf, from: &[u8], to: &[u8]) -> Result<()> {
        self.flush_pending();
        let i = self.family(cf)?;
        self.inner
            .delete_range_cf(&self.families[i].handle, from, to);
        self.len += 1;
        Ok(())
    }

    fn reserve(&mut self, bytes: usize) {
        // RocksDB's batch can only be sized when it is made; a batch
        // with writes keeps growing as it would have.
        if self.inner.is_empty() {
            self.inner = WriteBatch::with_capacity_bytes(bytes);
        }
    }

    fn len(&self) -> usize {
        self.len
    }

    fn commit(self: Box<Self>, sync: bool) -> Result<()> {
        let engine = self.engine;
        engine.commit_sealed(self.seal(), sync)
    }

    fn seal(mut self: Box<Self>) -> SealedBatch {
        self.flush_pending();
        SealedBatch::new(self.len, Box::new(self.inner))
    }
}

/// A snapshot and the views of the hidden keys taken with it.
struct RocksSnapshot<'a> {
    engine: &'a RocksEngine,
    snap: rocksdb::SnapshotWithThreadMode<'a, Db>,
    views: Views,
}

impl Snapshot for RocksSnapshot<'_> {
    fn get(&self, cf: Cf, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let h = self.engine.handle(cf)?;
        if view_of(&self.views, cf).is_some_and(|v| v.holds(key)) {
            return Ok(None);
        }
        self.snap.get_cf(&h, key).map_err(engine_err)
    }

    fn cursor(&self, cf: Cf, range: KeyRange, dir: Direction) -> Result<Box<dyn Cursor + '_>> {
        let h = self.engine.handle(cf)?;
        let iter = self.snap.raw_iterator_cf_opt(&h, read_options(&range));
        let cursor = Box::new(RocksCursor::start(iter, range, dir));
        Ok(SkipHeld::wrap(cursor, view_of(&self.views, cf)))
    }

    fn bulk_cursor(&self, cf: Cf, range: KeyRange, dir: Direction) -> Result<Box<dyn Cursor + '_>> {
        let h = self.engine.handle(cf)?;
        let mut ro = read_options(&range);
        ro.fill_cache(false);
        let iter = self.snap.raw_iterator_cf_opt(&h, ro);
        let cursor = Box::new(RocksCursor::start(iter, range, dir));
        Ok(SkipHeld::wrap(cursor, view_of(&self.views, cf)))
    }

    fn cursor_skipping_at_most(
        &self,
        cf: Cf,
        range: KeyRange,
        dir: Direction,
        max_skipped: u64,
    ) -> Result<Box<dyn Cursor + '_>> {
        let h = self.engine.handle(cf)?;
        let mut ro = read_options(&range);
        // RocksDB ends the iteration with `Incomplete` past this many.
        ro.set_max_skippable_internal_keys(max_skipped);
        let iter = self.snap.raw_iterator_cf_opt(&h, ro);
        let cursor = Box::new(RocksCursor::start(iter, range, dir));
        Ok(SkipHeld::wrap(cursor, view_of(&self.views, cf)))
    }
}

struct RocksCursor<'a> {
    iter: DBRawIteratorWithThreadMode<'a, Db>,
    range: KeyRange,
    dir: Direction,
}

impl<'a> RocksCursor<'a> {
    fn start(iter: DBRawIteratorWithThreadMode<'a, Db>, range: KeyRange, dir: Direction) -> Self {
        let mut c = RocksCursor { iter, range, dir };
        match dir {
            Direction::Forward => c.iter.seek_to_first(),
            Direction::Reverse => c.iter.seek_to_last(),
        }
        c
    }
}

impl Cursor for RocksCursor<'_> {
    fn valid(&self) -> bool {
        self.iter.valid()
    }

    fn key(&self) -> &[u8] {
        self.iter.key().unwrap_or_default()
    }

    fn value(&self) -> &[u8] {
        self.iter.value().unwrap_or_default()
    }

    fn advance(&mut self) {
        match self.dir {
            Direction::Forward => self.iter.next(),
            Direction::Reverse => self.iter.prev(),
        }
    }

    fn seek(&mut self, key: &[u8]) {
        // A forward target below the range moves up to its lower bound. A
        // reverse target is left to the read options' bounds, which start
        // it at the range's last key when above the range and find nothing
        // below it; raising it to the lower bound would land on the bound's
        // key, past the target.
        match self.dir {
            Direction::Forward => self.iter.seek(key.max(self.range.lower.as_slice())),
            Direction::Reverse => self.iter.seek_for_prev(key),
        }
    }

    fn status(&self) -> Result<()> {
        self.iter.status().map_err(engine_err)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn open(dir: &Path) -> RocksEngine {
        open_sized(dir, 8 << 20, 8 << 20)
    }

    fn open_sized(dir: &Path, block_cache_bytes: usize, write_buffer_bytes: usize) -> RocksEngine {
        RocksEngine::open(&RocksOptions {
            path: dir.to_path_buf(),
            block_cache_bytes,
            write_buffer_bytes,
        })
        .unwrap()
    }

    fn keys(c: &mut dyn Cursor) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        while c.valid() {
            out.push(c.key().to_vec());
            c.advance();
        }
        c.status().unwrap();
        out
    }

    #[test]
    fn memtables_are_charged_to_the_block_cache() {
        let dir = tempfile::tempdir().unwrap();
        let e = open_sized(dir.path(), 16 << 20, 64 << 20);
        e.create_cf(Cf::Id(1)).unwrap();
        let value = vec![7u8; 1000];
        for chunk in 0..10u32 {
            let mut b = e.batch();
            for i in 0..1000u32 {
                b.put(Cf::Id(1), &(chunk * 1000 + i).to_be_bytes(), &value)
                    .unwrap();
            }
            b.commit(false).unwrap();
        }
        // 10 MB in memtables, no flush yet (the budget is 64 MiB), and no
        // block read: what the cache holds is the memtables' reservation.
        let memtables = e.stats(Cf::Id(1)).unwrap().memtable_all_bytes;
        assert!(memtables > 10_000_000, "{memtables}");
        let cache = e.memory().unwrap().block_cache_bytes;
        assert!(cache >= memtables, "cache {cache} < memtables {memtables}");
    }

    #[test]
    fn numbered_families_survive_reopen_and_drop() {
        let dir = tempfile::tempdir().unwrap();
        {
            let e = open(dir.path());
            e.create_cf(Cf::Id(7)).unwrap();
            e.create_cf(Cf::Id(3)).unwrap();
            let mut b = e.batch();
            b.put(Cf::Id(7), b"k", b"v").unwrap();
            b.commit(true).unwrap();
            e.drop_cf(Cf::Id(3)).unwrap();
        }
        let e = open(dir.path());
        assert_eq!(e.numbered_cfs(), vec![7]);
        assert_eq!(e.get(Cf::Id(7), b"k").unwrap(), Some(b"v".to_vec()));
    }

    #[test]
    fn cursors_stay_inside_their_range_both_ways() {
        let dir = tempfile::tempdir().unwrap();
        let e = open(dir.path());
        e.create_cf(Cf::Id(1)).unwrap();
        let mut b = e.batch();
        for k in [b"a", b"b", b"c", b"d"] {
            b.put(Cf::Id(1), k, b"").unwrap();
        }
        b.commit(false).unwrap();
        let range = KeyRange::new(b"b".to_vec(), Some(b"d".to_vec()));
        let mut fwd = e
            .cursor(Cf::Id(1), range.clone(), Direction::Forward)
            .unwrap();
        assert_eq!(keys(fwd.as_mut()), vec![b"b".to_vec(), b"c".to_vec()]);
        let mut rev = e.cursor(Cf::Id(1), range, Direction::Reverse).unwrap();
        assert_eq!(keys(rev.as_mut()), vec![b"c".to_vec(), b"b".to_vec()]);
    }

    #[test]
    fn a_checkpoint_opens_as_the_engine_was_and_does_not_follow_it() {
        let dir = tempfile::tempdir().unwrap();
        let e = open(&dir.path().join("db"));
        e.create_cf(Cf::Id(4)).unwrap();
        let mut b = e.batch();
        b.put(Cf::Id(4), b"x", b"1").unwrap();
        b.put(Cf::Catalog, b"c", b"2").unwrap();
        b.commit(false).unwrap();
        let copy = dir.path().join("copy");
        e.checkpoint(&copy).unwrap();
        let mut b = e.batch();
        b.put(Cf::Id(4), b"y", b"3").unwrap();
        b.commit(false).unwrap();
        drop(e);
        let c = open(&copy);
        assert_eq!(c.numbered_cfs(), vec![4]);
        assert_eq!(c.get(Cf::Id(4), b"x").unwrap(), Some(b"1".to_vec()));
        assert_eq!(c.get(Cf::Id(4), b"y").unwrap(), None);
        assert_eq!(c.get(Cf::Catalog, b"c").unwrap(), Some(b"2".to_vec()));
    }

    #[test]
    fn snapshot_does_not_see_later_writes() {
        let dir = tempfile::tempdir().unwrap();
        let e = open(dir.path());
        e.create_cf(Cf::Id(1)).unwrap();
        let snap = e.snapshot();
        let mut b = e.batch();
        b.put(Cf::Id(1), b"x", b"1").unwrap();
        b.commit(false).unwrap();
        assert_eq!(snap.get(Cf::Id(1), b"x").unwrap(), None);
        assert_eq!(e.get(Cf::Id(1), b"x").unwrap(), Some(b"1".to_vec()));
    }

    #[test]
    fn writes_of_one_key_keep_their_order_and_never_cross_a_range_delete() {
        let dir = tempfile::tempdir().unwrap();
        let e = open(dir.path());
        e.create_cf(Cf::Id(3)).unwrap();
        e.create_cf(Cf::Id(4)).unwrap();
        let mut b = e.batch();
        b.put(Cf::Id(3), b"z", b"1").unwrap();
        b.put(Cf::Id(4), b"a", b"other family").unwrap();
        b.put(Cf::Id(3), b"a", b"1").unwrap();
        b.delete(Cf::Id(4), b"b").unwrap();
        b.delete(Cf::Id(3), b"a").unwrap();
        b.put(Cf::Id(4), b"b", b"put after its delete").unwrap();
        b.put(Cf::Id(3), b"m", b"old").unwrap();
        b.delete_range(Cf::Id(3), b"m", b"n").unwrap();
        b.put(Cf::Id(3), b"m", b"new").unwrap();
        b.commit(false).unwrap();
        assert_eq!(e.get(Cf::Id(3), b"a").unwrap(), None);
        assert_eq!(e.get(Cf::Id(3), b"m").unwrap(), Some(b"new".to_vec()));
        assert_eq!(e.get(Cf::Id(3), b"z").unwrap(), Some(b"1".to_vec()));
        assert_eq!(
            e.get(Cf::Id(4), b"a").unwrap(),
            Some(b"other family".to_vec())
        );
        let last = Some(b"put after its delete".to_vec());
        assert_eq!(e.get(Cf::Id(4), b"b").unwrap(), last);
    }

    #[test]
    fn a_family_that_falls_out_of_order_keeps_the_last_write_of_each_key() {
        let dir = tempfile::tempdir().unwrap();
        let e = open(dir.path());
        e.create_cf(Cf::Id(5)).unwrap();
        let mut b = e.batch();
        // Straight in while ascending, then buffered from the first step back.
        b.put(Cf::Id(5), b"b", b"first").unwrap();
        b.put(Cf::Id(5), b"c", b"first").unwrap();
        b.put(Cf::Id(5), b"a", b"buffered").unwrap();
        b.put(Cf::Id(5), b"c", b"second").unwrap();
        b.delete(Cf::Id(5), b"b").unwrap();
        b.put(Cf::Id(5), b"d", b"buffered too").unwrap();
        b.commit(false).unwrap();
        let got = |k: &[u8]| e.get(Cf::Id(5), k).unwrap();
        assert_eq!(got(b"a"), Some(b"buffered".to_vec()));
        assert_eq!(got(b"b"), None, "the delete came after the put");
        assert_eq!(got(b"c"), Some(b"second".to_vec()));
        assert_eq!(got(b"d"), Some(b"buffered too".to_vec()));
    }

    #[test]
    fn delete_range_removes_half_open_range() {
        let dir = tempfile::tempdir().unwrap();
        let e = open(dir.path());
        e.create_cf(Cf::Id(2)).unwrap();
        let mut b = e.batch();
        for k in [b"a", b"b", b"c"] {
            b.put(Cf::Id(2), k, b"").unwrap();
        }
        b.delete_range(Cf::Id(2), b"a", b"c").unwrap();
        b.commit(false).unwrap();
        let mut c = e
            .cursor(Cf::Id(2), KeyRange::all(), Direction::Forward)
            .unwrap();
        assert_eq!(keys(c.as_mut()), vec![b"c".to_vec()]);
    }

    /// The engine conformance suite, one test per check, each on a
    /// directory of its own.
    mod conformance {
        use super::open;
        use crate::engine::Engine;
        use crate::engine::conformance::{CHECKS, EngineHome};

        struct TempHome(tempfile::TempDir);

        impl EngineHome for TempHome {
            fn open(&self) -> Box<dyn Engine> {
                Box::new(open(self.0.path()))
            }
        }

        macro_rules! conformance_tests {
            ($($check:ident),* $(,)?) => {
                $(
                    #[test]
                    fn $check() {
                        let home = TempHome(tempfile::tempdir().unwrap());
                        crate::engine::conformance::$check(&home);
                    }
                )*

                /// A check added to the suite but not listed here would
                /// silently not run against RocksDB.
                #[test]
                fn every_check_is_listed() {
                    let listed = [$(stringify!($check)),*];
                    let suite: Vec<&str> = CHECKS.iter().map(|(name, _)| *name).collect();
                    assert_eq!(listed.as_slice(), suite.as_slice());
                }
            };
        }

        crate::engine::conformance::for_each_engine_check!(conformance_tests);
    }
}
