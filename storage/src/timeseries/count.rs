//! Counting the measurements of a time-series collection without
//! unpacking them: the sum of the visible buckets' `control.count`.

use super::bucket::bucket_count;
use crate::engine::{Direction, KeyRange, Snapshot};
use crate::error::Result;
use crate::index::IndexSet;

/// Measurements in the buckets a reader sees (a due bucket is passed
/// over as a whole while due documents are hidden).
pub fn count_measurements(snap: &dyn Snapshot, set: &IndexSet) -> Result<u64> {
    let hide_at = set.hide_at();
    let mut cursor = snap.cursor(set.records(), KeyRange::all(), Direction::Forward)?;
    let mut n = 0u64;
    while cursor.valid() {
        let bucket = bson::RawDocument::from_bytes(cursor.value())?;
        if hide_at.is_some_and(|now| set.is_due(bucket, now)) {
            set.visibility().note_hidden(1);
        } else {
            n += bucket_count(bucket)?;
        }
        cursor.advance();
    }
    cursor.status()?;
    Ok(n)
}
