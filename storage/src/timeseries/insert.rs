//! Inserting measurements: each goes to the bucket of its meta value
//! whose span holds its time, or to a new bucket starting at its time
//! rounded down to `bucketRoundingSeconds`.
//!
//! A statement routes all its measurements first, keeping the buckets it
//! touched in memory, and writes each touched bucket once at the end
//! through the collection's [`Writer`] (so the bucket and its index
//! entries change in one batch, and the TTL index learns its due time as
//! for any write). A bucket not yet touched is found through the internal
//! `{meta, control.min.<time>}` index (or `{control.min.<time>}` without a
//! metaField): the entries whose start lies in `(t − span, t]`, latest
//! first, so a late or out-of-order measurement lands in the bucket that
//! covers it. A full bucket (1000 measurements or MongoDB's size limit)
//! is passed over and a new one opened.
//!
//! It must not decide bucket layout (`bucket`) nor commit.

use std::collections::{HashMap, HashSet};

use bson::{Bson, RawBsonRef, RawDocumentBuf};

use super::bucket::{Bucket, MAX_MEASUREMENTS, bucket_count, measurement_time};
use super::options::{META_INDEX, TIME_INDEX, TimeseriesOptions};
use crate::collection::Collection;
use crate::engine::{Cf, Direction, Engine, KeyRange};
use crate::write::writer::{Writer, prepare_insert};
use ebb_lang::encoding::keycode;
use ebb_lang::error::{Error, Result};

/// The last millisecond of 2038-01-19T03:14:07Z: later (or pre-1970)
/// measurements put a collection in the extended range, which MongoDB
/// 7.0–8.0's TTL monitor skips.
pub const EXTENDED_RANGE_END_MILLIS: i64 = (i32::MAX as i64) * 1000;

/// What an insert of measurements did: how many were stored and which
/// failed (position, error).
#[derive(Debug, Default)]
pub struct Inserted {
    pub n: u64,
    pub errors: Vec<(usize, Error)>,
    /// Whether a stored measurement lies outside 1970..2038.
    pub extended_range: bool,
}

/// A bucket touched by the statement, with the stored version it replaces.
struct Touched {
    bucket: Bucket,
    stored: Option<RawDocumentBuf>,
}

/// The buckets a statement touched, found by their meta value's key
/// encoding (then checked for the exact meta, as stored buckets are).
#[derive(Default)]
struct Catalog {
    buckets: Vec<Touched>,
    by_meta: HashMap<Vec<u8>, Vec<usize>>,
    /// Record keys of the touched buckets.
    keys: HashSet<Vec<u8>>,
}

impl Catalog {
    fn find(
        &self,
        meta_key: &[u8],
        meta: Option<&Bson>,
        time: i64,
        opts: &TimeseriesOptions,
    ) -> Option<usize> {
        self.by_meta.get(meta_key)?.iter().copied().find(|&i| {
            let b = &self.buckets[i].bucket;
            b.meta.as_ref() == meta && b.accepts(time, opts)
        })
    }

    fn holds(&self, id_key: &[u8]) -> bool {
        self.keys.contains(id_key)
    }

    fn add(&mut self, coll: &Collection, meta_key: Vec<u8>, t: Touched) -> usize {
        self.keys
            .insert(coll.record_key(RawBsonRef::ObjectId(t.bucket.id)));
        self.buckets.push(t);
        let i = self.buckets.len() - 1;
        self.by_meta.entry(meta_key).or_default().push(i);
        i
    }
}

/// Inserts `docs` as measurements; `ordered` stops at the first failure.
pub fn insert_measurements(
    engine: &dyn Engine,
    w: &mut Writer<'_>,
    coll: &Collection,
    opts: &TimeseriesOptions,
    docs: Vec<RawDocumentBuf>,
    ordered: bool,
) -> Result<Inserted> {
    let mut done = insert_statements(engine, w, coll, opts, vec![(docs, ordered)])?;
    Ok(done.pop().unwrap_or_default())
}

/// Inserts the measurements of several statements, in order, each
/// (documents, ordered) stopping at its own first failure when ordered.
/// The statements share one pass: a bucket they all add to is written
/// once, so statements that arrive together cost one rewrite of each open
/// bucket rather than one each.
pub fn insert_statements(
    engine: &dyn Engine,
    w: &mut Writer<'_>,
    coll: &Collection,
    opts: &TimeseriesOptions,
    statements: Vec<(Vec<RawDocumentBuf>, bool)>,
) -> Result<Vec<Inserted>> {
    let mut touched = Catalog::default();
    let mut outs = Vec::with_capacity(statements.len());
    for (docs, ordered) in statements {
        let mut out = Inserted::default();
        for (index, doc) in docs.into_iter().enumerate() {
            match route(engine, coll, opts, doc, &mut touched) {
                Ok(extended) => {
                    out.n += 1;
                    out.extended_range |= extended;
                }
                Err(e) => {
                    out.errors.push((index, e));
                    if ordered {
                        break;
                    }
                }
            }
        }
        outs.push(out);
    }
    if outs.iter().any(|o| o.extended_range) && coll.enter_extended_range() {
        tracing::warn!(ns = %coll.ns(), "time-series collection received a measurement before 1970 or after 2038-01-19T03:14:07Z; the TTL monitor will skip it");
    }
    for t in touched.buckets {
        let new = t.bucket.to_raw()?;
        let id_key = coll.record_key(RawBsonRef::ObjectId(t.bucket.id));
        match &t.stored {
            Some(old) => w.replace(&id_key, old, &new)?,
            None => w.insert(&new)?,
        }
        if t.bucket.accepts_more() {
            coll.open_buckets.put(id_key, new.into_bytes(), t.bucket);
        }
    }
    Ok(outs)
}

/// The key encoding of a meta value as the `{meta, …}` index holds it
/// (a missing meta indexes as null).
fn meta_key(meta: Option<&Bson>) -> Result<Vec<u8>> {
    let value = match meta {
        Some(m) => bson::RawBson::try_from(m.clone())?,
        None => bson::RawBson::Null,
    };
    Ok(keycode::encode_key(value.as_raw_bson_ref()))
}

/// Whether a stored time-series collection holds a measurement outside
/// 1970..2038 (read when its collection handle is opened): a bucket starting
/// before the epoch, or one of the buckets starting in the last span
/// whose `control.max.<time>` is past 2038-01-19T03:14:07Z.
pub fn holds_extended_range(engine: &dyn Engine, coll: &Collection) -> Result<bool> {
    let Some(opts) = &coll.timeseries else {
        return Ok(false);
    };
    let Some(kg) = coll.keygen(TIME_INDEX) else {
        return Ok(false);
    };
    let (lower, upper) = keycode::date_range_up_to(i64::MAX, false);
    let dates = KeyRange::new(lower, Some(upper));
    let first = engine.cursor(Cf::Id(kg.cf), dates.clone(), Direction::Forward)?;
    if first.valid() && keycode::leading_date(first.key(), false).is_some_and(|d| d < 0) {
        return Ok(true);
    }
    let mut last = engine.cursor(Cf::Id(kg.cf), dates, Direction::Reverse)?;
    let Some(latest) = last
        .valid()
        .then(|| keycode::leading_date(last.key(), false))
        .flatten()
    else {
        return Ok(false);
    };
    let from = latest.saturating_sub(opts.max_span_secs * 1000);
    while last.valid() {
        if keycode::leading_date(last.key(), false).is_none_or(|d| d < from) {
            break;
        }
        let id_key = kg.id_suffix(last.key())?.to_vec();
        if let Some(bytes) = engine.get(coll.records(), &id_key)? {
            let bucket = RawDocumentBuf::from_bytes(bytes)?;
            let max = bucket
                .get_document("control")
                .and_then(|c| c.get_document("max"))
                .ok()
                .and_then(|m| m.get_datetime(&opts.time_field).ok())
                .map(|d| d.timestamp_millis());
            if max.is_some_and(|m| m > EXTENDED_RANGE_END_MILLIS) {
                return Ok(true);
            }
        }
        last.advance();
    }
    Ok(false)
}

/// Puts one measurement into its bucket; returns whether its time is in
/// the extended range.
fn route(
    engine: &dyn Engine,
    coll: &Collection,
    opts: &TimeseriesOptions,
    doc: RawDocumentBuf,
    touched: &mut Catalog,
) -> Result<bool> {
    let time = measurement_time(&doc, opts)?;
    let doc = prepare_insert(doc)?;
    let meta = match &opts.meta_field {
        Some(f) => doc.get(f)?.map(Bson::try_from).transpose()?,
        None => None,
    };
    let meta_key = meta_key(meta.as_ref())?;
    let slot = match touched.find(&meta_key, meta.as_ref(), time, opts) {
        Some(i) => i,
        None => {
            let found = find_stored(engine, coll, opts, &meta_key, meta.as_ref(), time, touched)?;
            let t = found.unwrap_or_else(|| Touched {
                bucket: Bucket::new(opts.bucket_start(time), meta, opts),
                stored: None,
            });
            touched.add(coll, meta_key, t)
        }
    };
    touched.buckets[slot].bucket.push(&doc, opts)?;
    Ok(!(0..=EXTENDED_RANGE_END_MILLIS).contains(&time))
}

/// A stored bucket of `meta` that can take a measurement at `time` and
/// that the statement has not touched yet.
fn find_stored(
    engine: &dyn Engine,
    coll: &Collection,
    opts: &TimeseriesOptions,
    meta_key: &[u8],
    meta: Option<&Bson>,
    time: i64,
    touched: &Catalog,
) -> Result<Option<Touched>> {
    let index = if opts.meta_field.is_some() {
        META_INDEX
    } else {
        TIME_INDEX
    };
    let Some(kg) = coll.keygen(index) else {
        return Err(Error::corrupt(format!(
            "time-series collection {} lacks its bucket index",
            coll.ns()
        )));
    };
    let prefix = if opts.meta_field.is_some() {
        meta_key.to_vec()
    } else {
        Vec::new()
    };
    let mut lower = prefix.clone();
    keycode::encode_date(
        &mut lower,
        time.saturating_sub(opts.max_span_secs * 1000) + 1,
    );
    let mut upper = prefix;
    keycode::encode_date(&mut upper, time);
    let upper = keycode::prefix_successor(&upper);
    let mut cursor = engine.cursor(
        Cf::Id(kg.cf),
        KeyRange::new(lower, upper),
        Direction::Reverse,
    )?;
    while cursor.valid() {
        let id_key = kg.id_suffix(cursor.key())?.to_vec();
        if !touched.holds(&id_key)
            && let Some(bytes) = engine.get(coll.records(), &id_key)?
        {
            let stored = RawDocumentBuf::from_bytes(bytes)?;
            // A bucket full by count is passed over undecoded: every
            // rollover meets the span's full buckets first.
            if bucket_count(&stored)? >= u64::from(MAX_MEASUREMENTS) {
                cursor.advance();
                continue;
            }
            let bucket = match coll.open_buckets.take(&id_key, stored.as_bytes()) {
                Some(open) => open,
                None => Bucket::from_raw(&stored, opts)?,
            };
            if bucket.meta.as_ref() == meta && bucket.accepts(time, opts) {
                return Ok(Some(Touched {
                    bucket,
                    stored: Some(stored),
                }));
            }
        }
        cursor.advance();
    }
    cursor.status()?;
    Ok(None)
}
