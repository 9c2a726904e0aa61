//! What a TTL index holds ahead of the monitor: its earliest Date, which
//! the monitor reads after a pass to know when the next entry falls due
//! (prompt expiry), and how many entries are due and not yet deleted (the
//! backlog `/metrics` shows). Both start at the index's floor, so they do
//! not walk the tombstones of earlier passes.

use crate::collection::Collection;
use crate::engine::{Cf, Direction, Engine, KeyRange, first_key};
use crate::index::floor::lowest_possible;
use ebb_lang::encoding::keycode;
use ebb_lang::error::Result;

/// The earliest Date in a TTL index (its first entry in the Date bracket),
/// for scheduling the next wake-up.
pub fn earliest_date(
    engine: &dyn Engine,
    coll: &Collection,
    index_name: &str,
) -> Result<Option<i64>> {
    let Some(kg) = coll.keygen(index_name) else {
        return Ok(None);
    };
    let descending = kg.leading_descending();
    let (start, end) = keycode::date_range_up_to(i64::MAX, descending);
    let start = lowest_possible(kg.floor(), start);
    if start >= end {
        return Ok(None);
    }
    // Inverted bytes put the oldest date of a descending index last.
    let dir = if descending {
        Direction::Reverse
    } else {
        Direction::Forward
    };
    let first = first_key(engine, Cf::Id(kg.cf), KeyRange::new(start, Some(end)), dir)?;
    Ok(first.and_then(|key| keycode::leading_date(&key, descending)))
}

/// How many entries of a TTL index hold a Date at or before
/// `cutoff_millis`: the due documents the monitor has not deleted yet (a
/// document with several due Dates counts once per Date). Counts them, so
/// it costs in proportion to the backlog.
pub fn count_due(
    engine: &dyn Engine,
    coll: &Collection,
    index_name: &str,
    cutoff_millis: i64,
) -> Result<u64> {
    let Some(kg) = coll.keygen(index_name) else {
        return Ok(0);
    };
    let (start, end) = keycode::date_range_up_to(cutoff_millis, kg.leading_descending());
    let start = lowest_possible(kg.floor(), start);
    if start >= end {
        return Ok(0);
    }
    engine.count(Cf::Id(kg.cf), KeyRange::new(start, Some(end)))
}
