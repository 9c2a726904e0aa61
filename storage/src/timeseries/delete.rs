//! Deleting measurements. A query on a time-series collection names each
//! measurement by its bucket's record key followed by its position (4
//! bytes, big-endian; see `query::exec`). A bucket all of whose
//! measurements go is removed as one record; otherwise it is rewritten
//! without them (same `_id`, same start, so its expiry does not move).
//!
//! It must not find the targets (the statement's query does).

use std::collections::BTreeMap;

use bson::RawDocumentBuf;

use super::bucket::{Bucket, unpack};
use super::options::TimeseriesOptions;
use crate::error::{Error, Result};
use crate::write::writer::Writer;

/// Positions to delete, per bucket record key.
#[derive(Debug, Default)]
pub struct Doomed {
    buckets: BTreeMap<Vec<u8>, Vec<u32>>,
}

impl Doomed {
    /// Notes one measurement found by a query (its key from the cursor).
    pub fn note(&mut self, measurement_key: &[u8]) -> Result<()> {
        let split = measurement_key
            .len()
            .checked_sub(4)
            .ok_or_else(|| Error::corrupt("time-series measurement key"))?;
        let (bucket, pos) = measurement_key.split_at(split);
        let pos = u32::from_be_bytes(pos.try_into().expect("4 bytes"));
        self.buckets.entry(bucket.to_vec()).or_default().push(pos);
        Ok(())
    }

    /// Removes the noted measurements through `w`; returns how many.
    pub fn apply(self, w: &mut Writer<'_>, opts: &TimeseriesOptions) -> Result<u64> {
        let mut n = 0;
        for (key, mut positions) in self.buckets {
            let Some(stored) = w.get(&key)? else { continue };
            positions.sort_unstable();
            positions.dedup();
            let measurements = unpack(&stored, opts)?;
            let keep: Vec<&RawDocumentBuf> = measurements
                .iter()
                .enumerate()
                .filter(|(i, _)| positions.binary_search(&(*i as u32)).is_err())
                .map(|(_, m)| m)
                .collect();
            n += (measurements.len() - keep.len()) as u64;
            if keep.is_empty() {
                w.remove(&key, &stored)?;
                continue;
            }
            let old = Bucket::from_raw(&stored, opts)?;
            let mut bucket = old.emptied(opts);
            for m in keep {
                bucket.push(m, opts)?;
            }
            w.replace(&key, &stored, &bucket.to_raw()?)?;
        }
        Ok(n)
    }
}
