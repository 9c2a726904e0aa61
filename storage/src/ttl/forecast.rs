//! What a TTL index will make due: how many documents are due already (the
//! backlog the monitor has yet to delete) and how many fall due in each
//! minute of the next hour and each hour of the next week, counted from
//! the index itself, one key at a time in date order.
//!
//! A document with several dates counts once, at its earliest: its TTL
//! entries carry the keys of all its entries (`carry`), so an entry counts
//! only when it is its document's earliest in this index. An entry whose
//! value does not list them (data written before it did) counts as it is,
//! and the forecast says it may count a document more than once. Counting
//! stops after `budget` keys; the forecast then says up to which moment
//! its counts are whole.

use super::carry;
use crate::engine::{Cf, Direction, KeyRange, Snapshot};
use crate::index::floor::lowest_possible;
use crate::index::{KeyGen, cutoff_millis, due_millis};
use ebb_lang::encoding::keycode;
use ebb_lang::error::Result;

pub const MINUTE_MILLIS: i64 = 60_000;
pub const HOUR_MILLIS: i64 = 60 * MINUTE_MILLIS;
/// Minutes in the first view, hours in the second.
pub const MINUTES: usize = 60;
pub const HOURS: usize = 7 * 24;

/// One TTL index's forecast, from `now`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Forecast {
    /// Documents due at `now` and not yet deleted.
    pub due: u64,
    /// Documents falling due in `(now + i min, now + (i + 1) min]`.
    pub minutes: Vec<u64>,
    /// Documents falling due in `(now + i h, now + (i + 1) h]`.
    pub hours: Vec<u64>,
    /// The counts are whole up to this moment (millis): the end of the
    /// week, or where the budget ran out.
    pub counted_through: i64,
    /// Every counted entry was its document's earliest.
    pub exact: bool,
}

/// The forecast of TTL index `kg` at `now`, reading at most `budget`
/// keys.
pub fn forecast(snap: &dyn Snapshot, kg: &KeyGen, now: i64, budget: u64) -> Result<Forecast> {
    let secs = kg.expire_after_secs().unwrap_or_default();
    let week_end = now.saturating_add(HOURS as i64 * HOUR_MILLIS);
    let mut out = Forecast {
        due: 0,
        minutes: vec![0; MINUTES],
        hours: vec![0; HOURS],
        counted_through: week_end,
        exact: true,
    };
    let descending = kg.leading_descending();
    let (start, end) = keycode::date_range_up_to(cutoff_millis(week_end, secs), descending);
    let start = lowest_possible(kg.floor(), start);
    if start >= end {
        return Ok(out);
    }
    // Inverted bytes put the oldest date of a descending index last.
    let dir = match descending {
        true => Direction::Reverse,
        false => Direction::Forward,
    };
    let mut cursor = snap.cursor(Cf::Id(kg.cf), KeyRange::new(start, Some(end)), dir)?;
    let mut read = 0u64;
    while cursor.valid() {
        let (key, value) = (cursor.key(), cursor.value());
        let Some(date) = keycode::leading_date(key, descending) else {
            cursor.advance();
            continue;
        };
        let due = due_millis(date, secs);
        if read == budget {
            out.counted_through = due.saturating_sub(1).max(now);
            break;
        }
        read += 1;
        match carry::is_earliest(value, (kg.cf, key), descending) {
            Some(false) => {
                cursor.advance();
                continue;
            }
            Some(true) => {}
            None => out.exact = false,
        }
        if due <= now {
            out.due += 1;
        } else {
            let after = due - now - 1;
            if let Some(m) = out.minutes.get_mut((after / MINUTE_MILLIS) as usize) {
                *m += 1;
            }
            if let Some(h) = out.hours.get_mut((after / HOUR_MILLIS) as usize) {
                *h += 1;
            }
        }
        cursor.advance();
    }
    cursor.status()?;
    Ok(out)
}

/// How many documents index `kg` holds a Date for that is at or before
/// cutoff `to` and after cutoff `from` (None: any Date up to `to`), each
/// once, reading at most `budget` keys: what a new `expireAfterSeconds`
/// makes due at once. True with the count when the budget cut it short
/// (the count is then a lower bound).
pub fn due_between(
    snap: &dyn Snapshot,
    kg: &KeyGen,
    from: Option<i64>,
    to: i64,
    budget: u64,
) -> Result<(u64, bool)> {
    let descending = kg.leading_descending();
    let (start, end) = keycode::date_range_up_to(to, descending);
    let start = lowest_possible(kg.floor(), start);
    if start >= end {
        return Ok((0, false));
    }
    let dir = match descending {
        true => Direction::Reverse,
        false => Direction::Forward,
    };
    let mut cursor = snap.cursor(Cf::Id(kg.cf), KeyRange::new(start, Some(end)), dir)?;
    let (mut n, mut read) = (0u64, 0u64);
    while cursor.valid() {
        if read == budget {
            return Ok((n, true));
        }
        read += 1;
        let key = cursor.key();
        let newly = keycode::leading_date(key, descending)
            .is_some_and(|date| from.is_none_or(|from| date > from));
        if newly && carry::is_earliest(cursor.value(), (kg.cf, key), descending) != Some(false) {
            n += 1;
        }
        cursor.advance();
    }
    cursor.status()?;
    Ok((n, false))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::Engine;
    use crate::ttl::tests::{at, insert, setup};
    use bson::doc;

    /// Five documents under TTL index `at_1` (`expireAfterSeconds` 0), due
    /// one a minute from the epoch on.
    fn five_a_minute_apart() -> (
        tempfile::TempDir,
        crate::engine::rocks::RocksEngine,
        std::sync::Arc<crate::Collection>,
    ) {
        let (dir, engine, coll) = setup();
        let docs = (1..=5)
            .map(|i| doc! { "_id": i, "at": at(i * MINUTE_MILLIS) })
            .collect();
        insert(&engine, &coll, docs);
        (dir, engine, coll)
    }

    #[test]
    fn what_a_shorter_ttl_makes_due_at_once_is_counted_between_the_cutoffs() {
        let (_dir, engine, coll) = five_a_minute_apart();
        let kg = coll.keygen("at_1").unwrap();
        let snap = engine.snapshot();
        let minutes = |m: i64| m * MINUTE_MILLIS;
        assert_eq!(
            due_between(&*snap, kg, Some(minutes(1)), minutes(4), 100).unwrap(),
            (3, false)
        );
        assert_eq!(
            due_between(&*snap, kg, None, minutes(4), 100).unwrap(),
            (4, false)
        );
        assert_eq!(
            due_between(&*snap, kg, Some(minutes(5)), minutes(9), 100).unwrap(),
            (0, false)
        );
        assert_eq!(
            due_between(&*snap, kg, None, minutes(9), 2).unwrap(),
            (2, true)
        );
    }

    #[test]
    fn a_forecast_past_its_budget_says_how_far_its_counts_are_whole() {
        let (_dir, engine, coll) = five_a_minute_apart();
        let kg = coll.keygen("at_1").unwrap();
        let snap = engine.snapshot();
        let whole = forecast(&*snap, kg, 0, u64::MAX).unwrap();
        assert_eq!(whole.minutes[..6], [1, 1, 1, 1, 1, 0]);
        assert_eq!(whole.counted_through, HOURS as i64 * HOUR_MILLIS);
        let cut = forecast(&*snap, kg, 0, 3).unwrap();
        assert_eq!(cut.minutes[..6], [1, 1, 1, 0, 0, 0]);
        // The fourth falls due at minute 4: counts are whole before it.
        assert_eq!(cut.counted_through, 4 * MINUTE_MILLIS - 1);
        assert!(cut.exact && whole.exact);
    }
}
