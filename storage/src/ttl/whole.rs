//! Whole-collection expiry: when every document of a collection is due (a
//! cache loaded at once, a batch of sessions that share an expiry time),
//! [`expire_all`] deletes the whole collection with one range tombstone per
//! column family instead of chunks: its cost does not grow with the number
//! of documents beyond counting them.
//!
//! It applies only when the index proves it: the TTL index is neither
//! sparse nor partial, so every document has an entry, and its first and
//! last entries both hold Dates due by the cutoff, so every entry between
//! them does too. The writer offers it only when no rate limit applies and
//! no foreground write arrived lately, and only to collections of up to
//! [`ExpiryPolicy::whole_collection_max_docs`], since counting them holds
//! the writer.

use super::ExpireOutcome;
use super::policy::ExpiryPolicy;
use crate::collection::Collection;
use crate::engine::{Cf, Direction, Engine, KeyRange, first_key, key_after};
use ebb_lang::encoding::keycode;
use ebb_lang::error::Result;

/// Deletes every document of the collection when every one of them is due
/// by TTL index `index_name` at `cutoff_millis` (see the module doc);
/// returns what went, or `None` (and deletes nothing) when that cannot be
/// proven from the index's first and last entries.
pub fn expire_all(
    engine: &dyn Engine,
    coll: &Collection,
    index_name: &str,
    cutoff_millis: i64,
    policy: &ExpiryPolicy,
) -> Result<Option<ExpireOutcome>> {
    let Some(ttl) = coll.keygen(index_name) else {
        return Ok(None);
    };
    // A capped collection's order family and totals are left to chunks.
    if !ttl.indexes_every_document() || coll.natural().is_some() {
        return Ok(None);
    }
    let descending = ttl.leading_descending();
    let (start, end) = keycode::date_range_up_to(cutoff_millis, descending);
    let cf = Cf::Id(ttl.cf);
    let below = KeyRange::new(Vec::new(), Some(start));
    if first_key(engine, cf, below, Direction::Forward)?.is_some() {
        return Ok(None);
    }
    let last = match first_key(engine, cf, KeyRange::all(), Direction::Reverse)? {
        Some(last) if last < end => last,
        _ => return Ok(None),
    };
    // Descending keys hold the newest date first.
    let oldest = if descending {
        Some(last)
    } else {
        first_key(engine, cf, KeyRange::all(), Direction::Forward)?
    };
    let oldest_millis = oldest.and_then(|k| keycode::leading_date(&k, descending));

    // Counting holds the writer (about 0.2 s per million documents here):
    // beyond this size chunks keep a foreground write from waiting long.
    if engine.stats(coll.records())?.estimated_keys > policy.whole_collection_max_docs {
        return Ok(None);
    }
    // Nothing else writes while this runs (single writer), so the count is
    // exactly what the range tombstones below remove.
    let count = engine.count(coll.records(), KeyRange::all())?;
    let mut batch = engine.batch();
    for cf in std::iter::once(coll.records()).chain(coll.keygens.iter().map(|kg| Cf::Id(kg.cf))) {
        if let Some(last) = first_key(engine, cf, KeyRange::all(), Direction::Reverse)? {
            batch.delete_range(cf, &[], &key_after(&last))?;
        }
    }
    batch.commit(false)?;
    if let Some(floor) = ttl.floor() {
        floor.raise(end);
    }
    Ok(Some(ExpireOutcome {
        deleted: count,
        resume_after: None,
        more: false,
        oldest_millis,
    }))
}
