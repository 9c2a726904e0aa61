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

pub mod rocks;

use crate::Result;

/// A column family.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Cf {
    /// Collection and index metadata, and the id allocator.
    Catalog,
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

    /// Every key that starts with `prefix`.
    pub fn prefix(prefix: &[u8]) -> Self {
        KeyRange {
            lower: prefix.to_vec(),
            upper: crate::encoding::keycode::prefix_successor(prefix),
        }
    }
}

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

/// A consistent point-in-time view for reads.
pub trait Snapshot: Send {
    fn get(&self, cf: Cf, key: &[u8]) -> Result<Option<Vec<u8>>>;
    fn cursor(&self, cf: Cf, range: KeyRange, dir: Direction) -> Result<Box<dyn Cursor + '_>>;
}

/// An atomic group of writes, applied all or nothing by [`Batch::commit`].
pub trait Batch: Send {
    fn put(&mut self, cf: Cf, key: &[u8], value: &[u8]) -> Result<()>;
    fn delete(&mut self, cf: Cf, key: &[u8]) -> Result<()>;
    /// Deletes `[from, to)`.
    fn delete_range(&mut self, cf: Cf, from: &[u8], to: &[u8]) -> Result<()>;
    /// Number of operations added.
    fn len(&self) -> usize;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Applies the batch atomically. With `sync`, the write-ahead log is
    /// flushed to stable storage before returning.
    fn commit(self: Box<Self>, sync: bool) -> Result<()>;
}

/// Engine statistics for `serverStatus` / `collStats`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CfStats {
    pub estimated_keys: u64,
    pub live_data_bytes: u64,
    pub sst_bytes: u64,
}

/// The storage engine.
pub trait Engine: Send + Sync + 'static {
    fn create_cf(&self, cf: Cf) -> Result<()>;
    fn drop_cf(&self, cf: Cf) -> Result<()>;
    /// Ids of every numbered column family present on disk.
    fn numbered_cfs(&self) -> Vec<u64>;

    fn batch(&self) -> Box<dyn Batch + '_>;

    fn get(&self, cf: Cf, key: &[u8]) -> Result<Option<Vec<u8>>>;
    /// Point reads of many keys at once, in order.
    fn multi_get(&self, cf: Cf, keys: &[Vec<u8>]) -> Result<Vec<Option<Vec<u8>>>>;
    /// A cursor over the latest committed state.
    fn cursor(&self, cf: Cf, range: KeyRange, dir: Direction) -> Result<Box<dyn Cursor + '_>>;
    fn snapshot(&self) -> Box<dyn Snapshot + '_>;
    /// Counts the keys of `range` in one bulk scan that leaves the block
    /// cache as it was.
    fn count(&self, cf: Cf, range: KeyRange) -> Result<u64>;

    /// Makes every acknowledged write durable (fsync of the WAL).
    fn sync_wal(&self) -> Result<()>;
    /// Flushes memtables to SST files (used at shutdown).
    fn flush(&self) -> Result<()>;
    /// Compacts a key range of a column family (None = whole CF),
    /// reclaiming space held by deleted keys.
    fn compact(&self, cf: Cf, range: Option<KeyRange>) -> Result<()>;
    fn stats(&self, cf: Cf) -> Result<CfStats>;
}
