//! Counting the measurements of a time-series collection without
//! unpacking them: the sum of the visible buckets' `control.count`.

use super::bucket::bucket_count;
use crate::collection::Collection;
use crate::engine::{Direction, KeyRange, Snapshot};
use ebb_lang::error::Result;

/// Measurements in the buckets a reader sees (a due bucket is passed
/// over as a whole while due documents are hidden).
pub fn count_measurements(snap: &dyn Snapshot, coll: &Collection) -> Result<u64> {
    let hide_at = coll.hide_at();
    let mut cursor = snap.cursor(coll.records(), KeyRange::all(), Direction::Forward)?;
    let mut n = 0u64;
    while cursor.valid() {
        let bucket = bson::RawDocument::from_bytes(cursor.value())?;
        if hide_at.is_some_and(|now| coll.is_due(bucket, now)) {
            coll.hide_due().note_hidden(1);
        } else {
            n += bucket_count(bucket)?;
        }
        cursor.advance();
    }
    cursor.status()?;
    Ok(n)
}
