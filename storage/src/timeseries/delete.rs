//! Deleting measurements: each noted measurement leaves its bucket; a
//! bucket all of whose measurements go is removed as one record, the
//! others are rewritten without them (same `_id`, same start, so their
//! expiry does not move). The rewriting is `rewrite`'s.
//!
//! It must not find the targets (the statement's query does).

use super::options::TimeseriesOptions;
use super::rewrite::Rewrites;
use crate::error::Result;
use crate::index::IndexSet;
use crate::write::writer::Writer;

/// The measurements a delete statement found.
#[derive(Debug, Default)]
pub struct Doomed {
    rewrites: Rewrites,
}

impl Doomed {
    /// Notes one measurement found by a query (its key from the cursor).
    pub fn note(&mut self, measurement_key: &[u8]) -> Result<()> {
        self.rewrites.delete(measurement_key)
    }

    /// Removes the noted measurements through `w`; returns how many.
    pub fn apply(
        self,
        w: &mut Writer<'_>,
        set: &IndexSet,
        opts: &TimeseriesOptions,
    ) -> Result<u64> {
        self.rewrites.apply(w, set, opts)
    }
}
