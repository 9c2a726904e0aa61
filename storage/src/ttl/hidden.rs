//! What readers see: a document that any TTL index of its collection makes
//! due is absent from the moment it falls due, whether or not the monitor
//! has deleted it yet. Redis gives this guarantee by checking on access;
//! MongoDB leaves due documents visible until its monitor's next pass.
//!
//! The rule is the monitor's own (`KeyGen::due_by`), which is MongoDB's: a
//! document is due when one of its entries in a TTL index holds a Date at
//! or before `now - expireAfterSeconds`. So what a reader sees at `now` is
//! exactly what the monitor would leave after a pass at `now`.
//!
//! Who decides whether to hide, and as of when, is the node's
//! [`HideDue`] (the TTL monitor's clock; nothing while the monitor is
//! off or `ttl.hide_expired` is false); every collection handle carries it
//! (`Collection::hide_at`). Documents are checked where they are in hand:
//! the query executor (which lists a batch's due documents from the TTL
//! indexes' due ranges first, [`Due`], and checks dates one by one only
//! past [`MAX_DUE_LISTED`]), the writer's collisions.
//! Counts answered from keys alone subtract the due entries of the TTL
//! indexes ([`count_unhidden`]).

use crate::collection::Collection;
use crate::engine::{Cf, Cursor, Direction, KeyRange, KeySet, Snapshot, count_rest};
use crate::index::KeyGen;
use ebb_lang::encoding::keycode;
use ebb_lang::error::Result;

/// Due documents counted from TTL index keys before a count falls back to
/// checking every document (the ids are held in memory to deduplicate).
const MAX_DUE_FROM_KEYS: usize = 100_000;

/// The documents of the collection a reader sees, counted on `snap`: all
/// records minus the due ones, which are read from the TTL indexes' due
/// ranges (an index-only count), or by checking every document when more
/// than `MAX_DUE_FROM_KEYS` are due.
pub fn count_unhidden(snap: &dyn Snapshot, coll: &Collection) -> Result<u64> {
    count_unhidden_capped(snap, coll, MAX_DUE_FROM_KEYS)
}

/// [`count_unhidden`], counting at most `cap` due documents from keys.
pub(super) fn count_unhidden_capped(
    snap: &dyn Snapshot,
    coll: &Collection,
    cap: usize,
) -> Result<u64> {
    let mut records = snap.cursor(coll.records(), KeyRange::all(), Direction::Forward)?;
    let Some(now) = coll.hide_at() else {
        return count_rest(records.as_mut());
    };
    if let Some(due) = due_from_keys(snap, coll, now, cap)? {
        let all = count_rest(records.as_mut())?;
        coll.hide_due().note_hidden(due);
        return Ok(all.saturating_sub(due));
    }
    let (mut visible, mut hidden) = (0u64, 0u64);
    while records.valid() {
        let doc = bson::RawDocument::from_bytes(records.value())?;
        if coll.is_due(doc, now) {
            hidden += 1;
        } else {
            visible += 1;
        }
        records.advance();
    }
    records.status()?;
    coll.hide_due().note_hidden(hidden);
    Ok(visible)
}

/// How many distinct documents the TTL indexes' due ranges name at `now`,
/// or None past `cap`.
pub(super) fn due_from_keys(
    snap: &dyn Snapshot,
    coll: &Collection,
    now: i64,
    cap: usize,
) -> Result<Option<u64>> {
    Ok(due_ids(snap, coll, now, cap)?.map(|ids| ids.len() as u64))
}

/// The record keys of the documents due at `now` on `snap` (from the TTL
/// indexes' due ranges), or None past `cap`. Scans from the start of the
/// Date bracket, not from an index's floor: the floor moves with the live
/// state and may already have passed entries this snapshot still holds.
/// The expired entries the monitor deleted lie there as tombstones until
/// compaction (millions under a steady stream); stepping over them would
/// cost every batch of every reader more than checking its documents'
/// dates, so past [`MAX_TOMBSTONES_WALKED`] of them this is None too (an
/// engine error on the way ends in None as well: the documents' own reads
/// will report it).
fn due_ids(snap: &dyn Snapshot, coll: &Collection, now: i64, cap: usize) -> Result<Option<KeySet>> {
    let mut ids: KeySet = KeySet::default();
    for kg in coll.ttl_keygens() {
        let mut cursor = due_entries(snap, kg, now)?;
        while cursor.valid() {
            let id = kg.id_suffix(cursor.key())?;
            if !ids.contains(id) {
                if ids.len() >= cap {
                    return Ok(None);
                }
                ids.insert(id.to_vec());
            }
            cursor.advance();
        }
        if cursor.status().is_err() {
            return Ok(None);
        }
    }
    Ok(Some(ids))
}

/// Due documents a reader of one snapshot passes over, known before it
/// reads any: the TTL indexes' due ranges are read first (usually empty,
/// or a handful of documents the monitor is about to delete).
#[derive(Debug)]
pub enum Due {
    /// No document is due: nothing to check.
    Nothing,
    /// Exactly these record keys are due (sorted).
    Ids(Vec<Vec<u8>>),
    /// Too many to list: check each document's dates (`Collection::is_due`).
    Check(i64),
}

/// Due record keys a reader lists before falling back to checking
/// documents one by one.
const MAX_DUE_LISTED: usize = 4096;

impl Due {
    /// What is due on `snap` at `now`, for a reader.
    pub fn on(snap: &dyn Snapshot, coll: &Collection, now: i64) -> Result<Due> {
        Ok(match due_ids(snap, coll, now, MAX_DUE_LISTED)? {
            Some(ids) if ids.is_empty() => Due::Nothing,
            Some(ids) => {
                let mut ids: Vec<Vec<u8>> = ids.into_iter().collect();
                ids.sort_unstable();
                Due::Ids(ids)
            }
            None => Due::Check(now),
        })
    }

    /// What is due for a reader's next batch, given what was due for its
    /// last: once the due ranges were too long to list, the batches after
    /// check dates straight away instead of walking them again (under a
    /// steady stream they stay too long, and walking `MAX_TOMBSTONES_WALKED`
    /// deleted entries before every batch of a scan made it several times
    /// slower). Checking dates is right at any `now`; listing only saves
    /// the checks.
    pub fn again(&self, snap: &dyn Snapshot, coll: &Collection, now: i64) -> Result<Due> {
        match self {
            Due::Check(_) => Ok(Due::Check(now)),
            Due::Nothing | Due::Ids(_) => Due::on(snap, coll, now),
        }
    }

    /// Whether the document at `id_key` is due: a comparison with the
    /// listed range's ends for most documents.
    pub fn holds(&self, coll: &Collection, id_key: &[u8], doc: &bson::RawDocument) -> bool {
        match self {
            Due::Nothing => false,
            Due::Ids(ids) => {
                let (Some(first), Some(last)) = (ids.first(), ids.last()) else {
                    return false;
                };
                id_key >= first.as_slice()
                    && id_key <= last.as_slice()
                    && ids.binary_search_by(|k| k.as_slice().cmp(id_key)).is_ok()
            }
            Due::Check(now) => coll.is_due(doc, *now),
        }
    }
}

/// The parts of `range`, a range of TTL index `kg`, outside its entries
/// due at `now`, in the order a scan in `dir` visits them. A document with
/// an entry there is due, hence hidden, so a reader scanning the index
/// need not step over them: under a steady stream they are the backlog
/// and, before it, the tombstones of everything expired since the last
/// compaction, and a read of the oldest document by the index walked them
/// all (hundreds of times its idle time). Right for every later `now` of
/// the same reader too: what is due stays due.
pub fn outside_due(kg: &KeyGen, range: &KeyRange, now: i64, dir: Direction) -> Vec<KeyRange> {
    let (start, end) = due_bracket(kg, now);
    let overlaps = range.lower < end && range.upper.as_ref().is_none_or(|u| *u > start);
    if !overlaps {
        return vec![range.clone()];
    }
    let mut parts = Vec::with_capacity(2);
    if range.lower < start {
        parts.push(KeyRange::new(range.lower.clone(), Some(start)));
    }
    if range.upper.as_ref().is_none_or(|u| *u > end) {
        parts.push(KeyRange::new(end, range.upper.clone()));
    }
    if dir == Direction::Reverse {
        parts.reverse();
    }
    parts
}

/// The keys `[start, end)` of TTL index `kg`'s entries due at `now`.
fn due_bracket(kg: &KeyGen, now: i64) -> (Vec<u8>, Vec<u8>) {
    let secs = kg.expire_after_secs().unwrap_or(0);
    let cutoff = crate::index::cutoff_millis(now, secs);
    keycode::date_range_up_to(cutoff, kg.leading_descending())
}

/// The entries of TTL index `kg` due at `now`, on `snap`.
fn due_entries<'s>(snap: &'s dyn Snapshot, kg: &KeyGen, now: i64) -> Result<Box<dyn Cursor + 's>> {
    let (start, end) = due_bracket(kg, now);
    snap.cursor_skipping_at_most(
        Cf::Id(kg.cf),
        KeyRange::new(start, Some(end)),
        Direction::Forward,
        MAX_TOMBSTONES_WALKED,
    )
}

/// Deleted entries a due-range scan steps over before the reader checks
/// documents' dates instead (about a millisecond of walking).
const MAX_TOMBSTONES_WALKED: u64 = 16_384;
