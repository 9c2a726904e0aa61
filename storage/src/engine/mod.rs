//! The key-value engine seen by the rest of ebb: a small trait over ordered
//! column families, atomic write batches, point reads, bounded iterators and
//! snapshots.
//!
//! Everything above this trait is written against it; only [`rocks`] names
//! `rocksdb`. Column families are addressed by [`Cf`]: the catalog, or a
//! numeric id allocated by the catalog (one per collection's records and
//! one per index). User-supplied names never reach the engine.
//!
//! Every iterator has an upper bound: a scan states the range it needs and
//! the engine never reads past it (RocksDB then skips tombstones beyond the
//! bound instead of walking them).

pub mod conformance;
pub mod held;
pub mod overlay;
pub mod rocks;
mod skip_held;

use crate::Result;

/// A column family.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Cf {
    /// Collection and index metadata, and the id allocator. It exists from
    /// the first open; callers never create or drop it.
    Catalog,
    /// A replica-set member's consensus log: its entries and its vote. It
    /// is created when the member starts replicating; a standalone node
    /// never has one.
    Log,
    /// Records of one collection or entries of one index.
    Id(u64),
}

/// Iteration direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    Forward,
    Reverse,
}

/// A key range `[lower, upper)`. Both bounds are always given so no scan is
/// unbounded; use [`KeyRange::all`] for a whole column family.
///
/// Keys order bytewise (unsigned, a prefix before its extensions, the empty
/// key first). A range whose lower bound is not below its upper one is empty.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyRange {
    pub lower: Vec<u8>,
    /// Exclusive; `None` means "to the end of the column family", which is
    /// still a bound RocksDB knows (the CF's last key).
    pub upper: Option<Vec<u8>>,
}

impl KeyRange {
    pub fn new(lower: Vec<u8>, upper: Option<Vec<u8>>) -> Self {
        KeyRange { lower, upper }
    }

    pub fn all() -> Self {
        KeyRange {
            lower: Vec::new(),
            upper: None,
        }
    }

    /// Whether the range is exactly the keys that start with `lower`
    /// (as [`KeyRange::prefix`] builds it).
    pub fn is_point(&self) -> bool {
        self.upper.is_some()
            && self.upper == ebb_lang::encoding::keycode::prefix_successor(&self.lower)
    }

    /// Every key that starts with `prefix`.
    pub fn prefix(prefix: &[u8]) -> Self {
        KeyRange {
            lower: prefix.to_vec(),
            upper: ebb_lang::encoding::keycode::prefix_successor(prefix),
        }
    }
}

/// A set of engine keys (record keys, index entries) held in memory,
/// hashed with ahash: its keys are the hot path of expiry and multikey
/// scans, where SipHash showed in profiles. ahash's keys are random per
/// process, so clients cannot choose colliding keys.
pub type KeySet = std::collections::HashSet<Vec<u8>, ahash::RandomState>;

/// The smallest key strictly greater than `key`: an exclusive upper bound
/// that still includes `key`.
pub fn key_after(key: &[u8]) -> Vec<u8> {
    let mut k = Vec::with_capacity(key.len() + 1);
    k.extend_from_slice(key);
    k.push(0);
    k
}

/// A positioned cursor over one column family. It starts on the first key
/// of its range in its direction.
pub trait Cursor {
    fn valid(&self) -> bool;
    /// Current key; only while `valid()`.
    fn key(&self) -> &[u8];
    /// Current value; only while `valid()`.
    fn value(&self) -> &[u8];
    fn advance(&mut self);
    /// Repositions at `key` (or the first key after it, in the cursor's
    /// direction), staying inside the range.
    fn seek(&mut self, key: &[u8]);
    /// The engine error that ended iteration, if any.
    fn status(&self) -> Result<()>;
}

/// Advances `cursor` to the end of its range, counting the keys it passes.
pub fn count_rest(cursor: &mut dyn Cursor) -> Result<u64> {
    let mut n = 0;
    while cursor.valid() {
        n += 1;
        cursor.advance();
    }
    cursor.status()?;
    Ok(n)
}

/// The first key of `range` in direction `dir`, if the range holds any.
pub fn first_key(
    engine: &dyn Engine,
    cf: Cf,
    range: KeyRange,
    dir: Direction,
) -> Result<Option<Vec<u8>>> {
    let cursor = engine.cursor(cf, range, dir)?;
    let key = cursor.valid().then(|| cursor.key().to_vec());
    cursor.status()?;
    Ok(key)
}

/// A consistent point-in-time view for reads: later commits, flushes and
/// compactions never change what it reads.
pub trait Snapshot: Send + Sync {
    fn get(&self, cf: Cf, key: &[u8]) -> Result<Option<Vec<u8>>>;
    fn cursor(&self, cf: Cf, range: KeyRange, dir: Direction) -> Result<Box<dyn Cursor + '_>>;
    /// A cursor for a scan of a whole family (a collection scan): the
    /// blocks it reads are not kept in the block cache, so one scan
    /// neither evicts what point reads use nor grows the heap by the
    /// cache's size.
    fn bulk_cursor(&self, cf: Cf, range: KeyRange, dir: Direction) -> Result<Box<dyn Cursor + '_>> {
        self.cursor(cf, range, dir)
    }
    /// A cursor that gives up (its `status()` is an error) once it has
    /// stepped over `max_skipped` deleted entries: for callers with a
    /// cheaper way to the same answer than walking tombstones.
    fn cursor_skipping_at_most(
        &self,
        cf: Cf,
        range: KeyRange,
        dir: Direction,
        max_skipped: u64,
    ) -> Result<Box<dyn Cursor + '_>>;
}

/// An atomic group of writes, applied all or nothing by [`Batch::commit`].
///
/// Writes apply in the order they were added: the later write of a key wins,
/// and a range delete removes keys put before it in the batch, not after.
/// Nothing is visible before the commit; a batch dropped uncommitted is lost.
pub trait Batch: Send {
    fn put(&mut self, cf: Cf, key: &[u8], value: &[u8]) -> Result<()>;
    fn delete(&mut self, cf: Cf, key: &[u8]) -> Result<()>;
    /// Deletes `[from, to)`.
    fn delete_range(&mut self, cf: Cf, from: &[u8], to: &[u8]) -> Result<()>;
    /// A hint that about `bytes` more of keys and values are coming: an
    /// engine may allocate for them now instead of growing its buffer
    /// step by step (each step copies it into fresh memory).
    fn reserve(&mut self, bytes: usize) {
        let _ = bytes;
    }
    /// Number of operations added.
    fn len(&self) -> usize;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Applies the batch atomically. With `sync`, the write-ahead log is
    /// flushed to stable storage before returning.
    fn commit(self: Box<Self>, sync: bool) -> Result<()>;
    /// Finishes the batch without committing it: the writes are encoded
    /// and the batch no longer borrows the engine, so one thread can build
    /// it and another commit it later ([`Engine::commit_sealed`]).
    fn seal(self: Box<Self>) -> SealedBatch;
}

/// A [`Batch`] with all its writes added, detached from the engine that
/// built it. Committed with [`Engine::commit_sealed`] (all or nothing, like
/// [`Batch::commit`]); dropped uncommitted, it changes nothing.
pub struct SealedBatch {
    len: usize,
    inner: Box<dyn std::any::Any + Send>,
}

impl SealedBatch {
    /// Wraps an engine's own finished batch.
    pub(crate) fn new(len: usize, inner: Box<dyn std::any::Any + Send>) -> Self {
        SealedBatch { len, inner }
    }

    /// Number of operations added.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The engine's own batch, if it is of type `T`.
    pub(crate) fn into_inner<T: 'static>(self) -> Option<Box<T>> {
        self.inner.downcast().ok()
    }
}

impl std::fmt::Debug for SealedBatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SealedBatch({} operations)", self.len)
    }
}

/// Engine statistics for `serverStatus` / `collStats`: estimates, good for
/// sizes and thresholds, never for exact counts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CfStats {
    /// About how many live keys the family holds.
    pub estimated_keys: u64,
    /// About how many bytes its live keys and values take.
    pub live_data_bytes: u64,
    /// Bytes of its files on disk (0 for an engine that keeps none).
    pub sst_bytes: u64,
    /// Bytes its memtables hold.
    pub memtable_bytes: u64,
    /// Bytes compaction estimates it still has to rewrite.
    pub pending_compaction_bytes: u64,
    /// Bytes of its memtables still in memory, flushed ones that a
    /// reader's iterator or snapshot pins included.
    pub memtable_all_bytes: u64,
    /// Bytes its open table files' readers hold outside the block cache.
    pub table_readers_bytes: u64,
}

/// Memory the engine holds for all families together.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EngineMemory {
    /// Bytes in the block cache.
    pub block_cache_bytes: u64,
    /// Bytes of the block cache pinned by readers (not evictable now).
    pub block_cache_pinned_bytes: u64,
}

/// The storage engine.
///
/// A method naming a family that does not exist (never created, or dropped)
/// returns an error. Dropping the engine closes it: opening the same data
/// again finds every batch it committed, synced or not.
pub trait Engine: Send + Sync + 'static {
    /// Creating a family that exists is a no-op that keeps its keys.
    fn create_cf(&self, cf: Cf) -> Result<()>;
    /// Drops a family and its keys (creating its id again gives an empty
    /// family); dropping one that does not exist is a no-op. A batch that
    /// wrote to it and commits after the drop applies whole or not at all,
    /// and leaves the engine usable.
    fn drop_cf(&self, cf: Cf) -> Result<()>;
    /// Ids of every numbered column family present on disk.
    fn numbered_cfs(&self) -> Vec<u64>;

    fn batch(&self) -> Box<dyn Batch + '_>;
    /// Commits a batch this engine built and sealed, from any thread; a
    /// family dropped since the batch was built loses its writes, as if the
    /// batch had committed just before the drop.
    fn commit_sealed(&self, batch: SealedBatch, sync: bool) -> Result<()>;

    fn get(&self, cf: Cf, key: &[u8]) -> Result<Option<Vec<u8>>>;
    /// Point reads of many keys at once: one answer per key, in the order of
    /// `keys`.
    fn multi_get(&self, cf: Cf, keys: &[Vec<u8>]) -> Result<Vec<Option<Vec<u8>>>>;
    /// A cursor over the latest committed state.
    fn cursor(&self, cf: Cf, range: KeyRange, dir: Direction) -> Result<Box<dyn Cursor + '_>>;
    fn snapshot(&self) -> Box<dyn Snapshot + '_>;
    /// Counts the keys of `range` in one bulk scan that leaves the block
    /// cache as it was.
    fn count(&self, cf: Cf, range: KeyRange) -> Result<u64>;
    /// About how many bytes the keys of `range` take in the engine's files,
    /// from their index blocks without reading the keys (what memtables
    /// hold is not counted). A range without an upper bound counts nothing.
    fn approximate_size(&self, cf: Cf, range: KeyRange) -> Result<u64>;

    /// Makes every acknowledged write durable (fsync of the WAL).
    fn sync_wal(&self) -> Result<()>;
    /// Flushes memtables to SST files (used at shutdown).
    fn flush(&self) -> Result<()>;
    /// Writes a consistent copy of every family, as they are now, to the
    /// new directory `dir`, which an engine can open as its own. Files
    /// that do not change are linked, not copied: a checkpoint costs a
    /// flush and a few links, and holds on to files the engine would
    /// otherwise delete until it is removed.
    fn checkpoint(&self, dir: &std::path::Path) -> Result<()>;
    /// Compacts a key range of a column family (None = whole CF),
    /// reclaiming space held by deleted keys.
    fn compact(&self, cf: Cf, range: Option<KeyRange>) -> Result<()>;
    fn stats(&self, cf: Cf) -> Result<CfStats>;

    /// Memory the engine holds beyond any one family (its block cache).
    fn memory(&self) -> Result<EngineMemory>;
    /// The keys every read of this engine answers as absent
    /// ([`held`]).
    fn held(&self) -> &held::HeldRegistry;
    /// Whether what commits here stays out of the engine's data (a
    /// transaction's [`overlay`]): state kept in memory beside the data
    /// must not change on such a commit.
    fn detached(&self) -> bool {
        false
    }
}
