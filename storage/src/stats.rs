//! What a collection's owner asks of storage besides reads and writes:
//! how many documents it holds, whether it is empty, how large it is on
//! disk, and compacting it. These name the collection's column families so
//! nothing above storage has to.

use crate::collection::Collection;
use crate::engine::{Cf, CfStats, Direction, Engine, KeyRange, Snapshot};
use ebb_lang::error::Result;

/// Counts the collection's documents a reader sees, exactly, on a
/// snapshot (due documents are not counted while they are hidden).
pub fn count(snap: &dyn Snapshot, coll: &Collection) -> Result<u64> {
    if coll.timeseries.is_some() {
        return crate::timeseries::count_measurements(snap, coll);
    }
    crate::ttl::count_unhidden(snap, coll)
}

/// Whether the collection holds no document, on a snapshot.
pub fn is_empty(snap: &dyn Snapshot, coll: &Collection) -> Result<bool> {
    let cursor = snap.cursor(coll.records(), KeyRange::all(), Direction::Forward)?;
    let empty = !cursor.valid();
    cursor.status()?;
    Ok(empty)
}

/// Size figures of one collection, from the engine's estimates.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Sizes {
    /// Estimated number of documents.
    pub documents: u64,
    /// Bytes of documents (live data or SST, whichever is larger).
    pub data_bytes: u64,
    /// Bytes of each index, in catalog order (the `_id` index is the
    /// records themselves and counts 0).
    pub indexes: Vec<(String, u64)>,
}

impl Sizes {
    pub fn total_index_bytes(&self) -> u64 {
        self.indexes.iter().map(|(_, b)| b).sum()
    }
}

fn bytes(s: CfStats) -> u64 {
    s.sst_bytes.max(s.live_data_bytes)
}

/// The collection's size figures; a family the engine cannot describe
/// counts as empty.
pub fn sizes(engine: &dyn Engine, coll: &Collection) -> Sizes {
    let records = engine.stats(coll.records()).unwrap_or_default();
    let indexes = coll
        .meta
        .indexes
        .iter()
        .map(|i| {
            let size = if i.is_id_index() {
                0
            } else {
                bytes(engine.stats(Cf::Id(i.id)).unwrap_or_default())
            };
            (i.name.clone(), size)
        })
        .collect();
    // A capped collection counts its documents and their bytes exactly,
    // as its bounds count them (`capped::order`).
    if let Some(cf) = coll.natural()
        && let Ok(totals) = crate::capped::Totals::read(engine, cf)
    {
        return Sizes {
            documents: totals.count,
            data_bytes: totals.bytes,
            indexes,
        };
    }
    Sizes {
        documents: records.estimated_keys,
        data_bytes: bytes(records),
        indexes,
    }
}

/// Bytes on disk of every family of the collection (SST files).
fn sst_bytes(engine: &dyn Engine, coll: &Collection) -> Result<u64> {
    coll.meta
        .column_families()
        .into_iter()
        .map(|cf| engine.stats(Cf::Id(cf)).map(|s| s.sst_bytes))
        .sum()
}

/// Compacts every family of the collection; returns the bytes freed.
pub fn compact(engine: &dyn Engine, coll: &Collection) -> Result<u64> {
    let before = sst_bytes(engine, coll)?;
    for cf in coll.meta.column_families() {
        engine.compact(Cf::Id(cf), None)?;
    }
    Ok(before.saturating_sub(sst_bytes(engine, coll)?))
}
