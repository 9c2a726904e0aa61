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
//! its counts are whole, and estimates each later minute and hour from a
//! sample of its keys: the first [`SAMPLE`] past that moment, scaled by the
//! share of the bucket's time they span (a bucket with no more keys than
//! that is counted whole). A week of a large index is thus read in a
//! bounded number of keys, whatever its size.

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
/// Keys read at most to estimate one bucket past the counted ones.
pub const SAMPLE: u64 = 1024;

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
    /// The buckets after `counted_through` hold estimates from samples.
    pub estimated: bool,
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
        estimated: false,
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
    drop(cursor);
    if out.counted_through < week_end {
        estimate_the_rest(snap, kg, now, &mut out)?;
    }
    Ok(out)
}

/// Adds to each bucket that ends after `out.counted_through` an estimate
/// of the documents falling due in it past that moment (`SAMPLE`).
fn estimate_the_rest(snap: &dyn Snapshot, kg: &KeyGen, now: i64, out: &mut Forecast) -> Result<()> {
    let from = out.counted_through;
    let mut exact = out.exact;
    for (i, m) in out.minutes.iter_mut().enumerate() {
        let end = now + (i as i64 + 1) * MINUTE_MILLIS;
        if end > from {
            let start = (now + i as i64 * MINUTE_MILLIS).max(from);
            let (n, whole) = sample(snap, kg, start, end, &mut exact)?;
            *m += n;
            out.estimated |= !whole;
        }
    }
    for (i, h) in out.hours.iter_mut().enumerate() {
        let end = now + (i as i64 + 1) * HOUR_MILLIS;
        if end > from {
            let start = (now + i as i64 * HOUR_MILLIS).max(from);
            let (n, whole) = sample(snap, kg, start, end, &mut exact)?;
            *h += n;
            out.estimated |= !whole;
        }
    }
    out.exact = exact;
    Ok(())
}

/// The documents of index `kg` falling due in `(start, end]`: counted when
/// there are at most `SAMPLE` keys there (true), else estimated from the
/// first `SAMPLE` (false). `exact` turns false when a key counted may not
/// be its document's earliest.
fn sample(
    snap: &dyn Snapshot,
    kg: &KeyGen,
    start: i64,
    end: i64,
    exact: &mut bool,
) -> Result<(u64, bool)> {
    let secs = kg.expire_after_secs().unwrap_or_default();
    let descending = kg.leading_descending();
    let (lo, hi) = (cutoff_millis(start, secs), cutoff_millis(end, secs));
    // Dates in (lo, hi]: past the keys of dates up to `lo`, up to the end
    // of those up to `hi`; inverted bytes put later dates first.
    let range = match descending {
        false => KeyRange::new(
            keycode::date_range_up_to(lo, false).1,
            Some(keycode::date_range_up_to(hi, false).1),
        ),
        true => KeyRange::new(
            keycode::date_range_up_to(hi, true).0,
            Some(keycode::date_range_up_to(lo, true).0),
        ),
    };
    let mut cursor = snap.cursor(Cf::Id(kg.cf), range, Direction::Forward)?;
    let (mut read, mut docs, mut reached) = (0u64, 0u64, None);
    while cursor.valid() && read < SAMPLE {
        let (key, value) = (cursor.key(), cursor.value());
        read += 1;
        reached = keycode::leading_date(key, descending).or(reached);
        match carry::is_earliest(value, (kg.cf, key), descending) {
            Some(false) => {}
            Some(true) => docs += 1,
            None => {
                *exact = false;
                docs += 1;
            }
        }
        cursor.advance();
    }
    let whole = !cursor.valid();
    cursor.status()?;
    if whole {
        return Ok((docs, true));
    }
    // The sample spans the dates from one end of the bucket to the last
    // one read: the bucket holds about as many per millisecond.
    let spanned = match (reached, descending) {
        (Some(d), false) => d - lo,
        (Some(d), true) => hi - d,
        (None, _) => 0,
    }
    .max(1);
    let scaled = docs as f64 * (hi - lo) as f64 / spanned as f64;
    Ok((scaled.round() as u64, false))
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
        // The fourth falls due at minute 4: counts are whole before it,
        // and the buckets after, each with fewer keys than a sample, are
        // counted whole too.
        assert_eq!(cut.counted_through, 4 * MINUTE_MILLIS - 1);
        assert_eq!(cut.minutes[..6], [1, 1, 1, 1, 1, 0]);
        assert_eq!(cut.hours[0], 5);
        assert!(cut.exact && whole.exact && !cut.estimated && !whole.estimated);
    }

    #[test]
    fn buckets_past_the_budget_are_estimated_from_a_sample_of_their_keys() {
        let (_dir, engine, coll) = setup();
        // A document a second for two hours: 60 a minute, 3,600 an hour.
        let docs = (1..=7200)
            .map(|i| doc! { "_id": i, "at": at(i * 1000) })
            .collect();
        insert(&engine, &coll, docs);
        let kg = coll.keygen("at_1").unwrap();
        let snap = engine.snapshot();
        let cut = forecast(&*snap, kg, 0, 100).unwrap();
        assert_eq!(cut.counted_through, 101_000 - 1);
        // Each minute has fewer keys than a sample: counted whole.
        assert!(cut.minutes.iter().all(|&m| m == 60), "{:?}", cut.minutes);
        // Each hour has more: estimated within 1 %.
        for h in &cut.hours[..2] {
            assert!(h.abs_diff(3600) <= 36, "{:?}", &cut.hours[..3]);
        }
        assert_eq!(cut.hours[2], 0);
        assert!(cut.estimated && cut.exact);
        let whole = forecast(&*snap, kg, 0, u64::MAX).unwrap();
        assert_eq!(whole.hours[..3], [3600, 3600, 0]);
        assert!(!whole.estimated);
    }
}
