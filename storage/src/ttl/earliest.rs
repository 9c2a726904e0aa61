//! The earliest Date a TTL index holds: what the monitor reads after a
//! pass to know when the next entry falls due (prompt expiry). It starts at
//! the index's floor, so it does not walk the tombstones of earlier passes.

use super::floor::lowest_possible;
use crate::encoding::keycode;
use crate::engine::{Cf, Direction, Engine, KeyRange, first_key};
use crate::error::Result;
use crate::index::IndexSet;

/// The earliest Date in a TTL index (its first entry in the Date bracket),
/// for scheduling the next wake-up.
pub fn earliest_date(engine: &dyn Engine, set: &IndexSet, index_name: &str) -> Result<Option<i64>> {
    let Some(kg) = set.keygen(index_name) else {
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
