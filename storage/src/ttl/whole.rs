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
use crate::engine::{Cf, Cursor, Direction, Engine, KeyRange, Snapshot, count_rest, key_after};
use crate::index::floor::lowest_possible;
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
    // Counting holds the writer (about 0.2 s per million documents here):
    // beyond this size chunks keep a foreground write from waiting long.
    if engine.stats(coll.records())?.estimated_keys > policy.whole_collection_max_docs {
        return Ok(None);
    }
    // Nothing else writes while this runs (single writer): the snapshot is
    // the collection the range tombstones below remove.
    let snap = engine.snapshot();
    let walk = Walk(snap.as_ref());
    let descending = ttl.leading_descending();
    let (start, end) = keycode::date_range_up_to(cutoff_millis, descending);
    let cf = Cf::Id(ttl.cf);
    let below = KeyRange::new(Vec::new(), Some(start.clone()));
    match walk.first_key(cf, below, Direction::Forward)? {
        Walked::Found(None) => {}
        _ => return Ok(None),
    }
    let last = match walk.first_key(cf, KeyRange::all(), Direction::Reverse)? {
        Walked::Found(Some(last)) if last < end => last,
        _ => return Ok(None),
    };
    // Descending keys hold the newest date first; ascending ones start
    // at the floor, past the tombstones of what expired before.
    let oldest = if descending {
        Some(last)
    } else {
        let from = lowest_possible(ttl.floor(), start);
        match walk.first_key(cf, KeyRange::new(from, None), Direction::Forward)? {
            Walked::Found(oldest) => oldest,
            Walked::GaveUp => return Ok(None),
        }
    };
    let oldest_millis = oldest.and_then(|k| keycode::leading_date(&k, descending));

    let Walked::Found(count) = walk.count(coll.records())? else {
        return Ok(None);
    };
    let mut batch = engine.batch();
    super::never::forget_if_several(batch.as_mut(), coll)?;
    for cf in std::iter::once(coll.records()).chain(coll.keygens.iter().map(|kg| Cf::Id(kg.cf))) {
        match walk.first_key(cf, KeyRange::all(), Direction::Reverse)? {
            Walked::Found(Some(last)) => batch.delete_range(cf, &[], &key_after(&last))?,
            Walked::Found(None) => {}
            // The batch goes uncommitted: nothing is deleted.
            Walked::GaveUp => return Ok(None),
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

/// Deleted entries any one scan of [`expire_all`] steps over before it
/// leaves the collection to chunks (a few milliseconds of walking). A
/// collection that has expired many documents one chunk at a time (a
/// steady stream) holds their tombstones until compaction drops them, and
/// walking them all would hold the writer far longer than the few
/// documents left take in a chunk.
const MAX_TOMBSTONES_WALKED: u64 = 16_384;

/// What a bounded scan found, or that it stepped over more than
/// [`MAX_TOMBSTONES_WALKED`] deleted entries first.
enum Walked<T> {
    Found(T),
    GaveUp,
}

/// Scans of one snapshot that give up past [`MAX_TOMBSTONES_WALKED`]. A
/// scan that ends in an error gives up too: chunks then meet the error
/// themselves, or find nothing wrong.
struct Walk<'s>(&'s dyn Snapshot);

impl Walk<'_> {
    fn cursor(&self, cf: Cf, range: KeyRange, dir: Direction) -> Result<Box<dyn Cursor + '_>> {
        self.0
            .cursor_skipping_at_most(cf, range, dir, MAX_TOMBSTONES_WALKED)
    }

    fn first_key(
        &self,
        cf: Cf,
        range: KeyRange,
        dir: Direction,
    ) -> Result<Walked<Option<Vec<u8>>>> {
        let cursor = self.cursor(cf, range, dir)?;
        let key = cursor.valid().then(|| cursor.key().to_vec());
        Ok(match cursor.status() {
            Ok(()) => Walked::Found(key),
            Err(_) => Walked::GaveUp,
        })
    }

    fn count(&self, cf: Cf) -> Result<Walked<u64>> {
        let mut cursor = self.cursor(cf, KeyRange::all(), Direction::Forward)?;
        Ok(match count_rest(cursor.as_mut()) {
            Ok(n) => Walked::Found(n),
            Err(_) => Walked::GaveUp,
        })
    }
}
