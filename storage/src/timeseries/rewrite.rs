//! Changing stored measurements: the deletes and replacements a statement
//! noted (by the keys its query found them under), applied bucket by
//! bucket through the collection's writer in the statement's batch.
//!
//! A query on a time-series collection names each measurement by its
//! bucket's record key followed by its position (4 bytes, big-endian; see
//! `plan::exec`). Each touched bucket is rebuilt once with its kept
//! measurements in their order (same `_id`, same start, so its expiry
//! does not move); a replaced measurement stays in place when its bucket
//! still takes it (same meta, time within the span, MongoDB's limits) and
//! otherwise moves: to another bucket this statement rebuilt or opened
//! that takes it, else to a new bucket starting at its time rounded down.
//! A bucket left empty is removed as one record. Every bucket write goes
//! through the [`Writer`], so the bucket's index entries (secondary, TTL)
//! change with it; the open-bucket cache (`open`) needs nothing, as it
//! only serves a bucket whose stored bytes are the ones it holds.
//!
//! Moved measurements never go to a stored bucket the statement did not
//! touch: they land together in the buckets it holds, which later inserts
//! find and fill like any other.
//!
//! It must not find the measurements (the statement's query does) nor
//! apply update operators (`ebb_lang::update`).

use std::collections::BTreeMap;

use bson::{Bson, RawBsonRef, RawDocument, RawDocumentBuf};

use super::bucket::{Bucket, measurement_time, unpack};
use super::insert::{EXTENDED_RANGE_END_MILLIS, insert_measurements};
use super::options::TimeseriesOptions;
use crate::collection::Collection;
use crate::write::writer::{Writer, prepare_insert};
use ebb_lang::error::{Error, Result};

/// What happens to one noted measurement: None deletes it.
type Change = Option<RawDocumentBuf>;

/// The measurements a statement changes, per bucket record key.
#[derive(Debug, Default)]
pub struct Rewrites {
    buckets: BTreeMap<Vec<u8>, BTreeMap<u32, Change>>,
}

/// A bucket being rebuilt or opened, with the stored version it replaces.
struct Held {
    key: Vec<u8>,
    stored: Option<RawDocumentBuf>,
    bucket: Bucket,
}

impl Rewrites {
    /// Notes that the measurement found under `measurement_key` goes.
    pub fn delete(&mut self, measurement_key: &[u8]) -> Result<()> {
        self.note(measurement_key, None)
    }

    /// Notes that the measurement found under `measurement_key` becomes
    /// `new`, which must have a Date timeField (MongoDB's BadValue, and
    /// nothing of the statement is stored).
    pub fn replace(
        &mut self,
        measurement_key: &[u8],
        new: RawDocumentBuf,
        opts: &TimeseriesOptions,
    ) -> Result<()> {
        measurement_time(&new, opts)?;
        self.note(measurement_key, Some(new))
    }

    fn note(&mut self, measurement_key: &[u8], change: Change) -> Result<()> {
        let split = measurement_key
            .len()
            .checked_sub(4)
            .ok_or_else(|| Error::corrupt("time-series measurement key"))?;
        let (bucket, pos) = measurement_key.split_at(split);
        let pos = u32::from_be_bytes(pos.try_into().expect("4 bytes"));
        self.buckets
            .entry(bucket.to_vec())
            .or_default()
            .insert(pos, change);
        Ok(())
    }

    /// Writes the noted changes through `w`; returns how many
    /// measurements were deleted.
    pub fn apply(
        self,
        w: &mut Writer<'_>,
        coll: &Collection,
        opts: &TimeseriesOptions,
    ) -> Result<u64> {
        let mut deleted = 0;
        let mut held = Vec::new();
        let mut moving = Vec::new();
        for (key, changes) in self.buckets {
            let Some(stored) = w.get(&key)? else { continue };
            let mut bucket = Bucket::from_raw(&stored, opts)?.emptied(opts);
            for (pos, m) in unpack(&stored, opts)?.into_iter().enumerate() {
                match changes.get(&(pos as u32)) {
                    None => bucket.push(&m, opts)?,
                    Some(None) => deleted += 1,
                    Some(Some(new)) if takes(&bucket, new, opts)? => bucket.push(new, opts)?,
                    Some(Some(new)) => moving.push(new.clone()),
                }
            }
            held.push(Held {
                key,
                stored: Some(stored),
                bucket,
            });
        }
        for m in moving {
            place(m, &mut held, coll, opts)?;
        }
        for h in held {
            match (h.bucket.count, h.stored) {
                (0, Some(old)) => w.remove(&h.key, &old)?,
                (0, None) => {}
                (_, Some(old)) => w.replace(&h.key, &old, &h.bucket.to_raw()?)?,
                (_, None) => w.insert(&h.bucket.to_raw()?)?,
            }
        }
        Ok(deleted)
    }
}

/// Inserts the one measurement an upsert builds (given an `_id` when it
/// has none, as an insert would); returns its `_id`.
pub fn upsert(
    engine: &dyn crate::engine::Engine,
    w: &mut Writer<'_>,
    coll: &Collection,
    opts: &TimeseriesOptions,
    doc: RawDocumentBuf,
) -> Result<(RawDocumentBuf, Option<Bson>)> {
    let doc = prepare_insert(doc)?;
    let id = doc.get("_id")?.map(Bson::try_from).transpose()?;
    let done = insert_measurements(engine, w, coll, opts, vec![doc.clone()], true)?;
    if let Some((_, e)) = done.errors.into_iter().next() {
        return Err(e);
    }
    Ok((doc, id))
}

/// Whether `bucket` takes measurement `m`: the same meta, a time within
/// its span and room under MongoDB's limits.
fn takes(bucket: &Bucket, m: &RawDocument, opts: &TimeseriesOptions) -> Result<bool> {
    Ok(bucket.meta == meta_of(m, opts)? && bucket.accepts(measurement_time(m, opts)?, opts))
}

fn meta_of(m: &RawDocument, opts: &TimeseriesOptions) -> Result<Option<Bson>> {
    match &opts.meta_field {
        Some(f) => Ok(m.get(f)?.map(Bson::try_from).transpose()?),
        None => Ok(None),
    }
}

/// Puts a moved measurement in a held bucket that takes it, or in a new
/// one starting at its time rounded down.
fn place(
    m: RawDocumentBuf,
    held: &mut Vec<Held>,
    coll: &Collection,
    opts: &TimeseriesOptions,
) -> Result<()> {
    let time = measurement_time(&m, opts)?;
    if !(0..=EXTENDED_RANGE_END_MILLIS).contains(&time) && coll.enter_extended_range() {
        tracing::warn!(ns = %coll.ns(), "time-series collection received a measurement before 1970 or after 2038-01-19T03:14:07Z; the TTL monitor will skip it");
    }
    for h in held.iter_mut() {
        if takes(&h.bucket, &m, opts)? {
            return h.bucket.push(&m, opts);
        }
    }
    let mut bucket = Bucket::new(opts.bucket_start(time), meta_of(&m, opts)?, opts);
    bucket.push(&m, opts)?;
    held.push(Held {
        key: coll.record_key(RawBsonRef::ObjectId(bucket.id)),
        stored: None,
        bucket,
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use bson::{DateTime, doc, rawdoc};

    use super::*;
    use crate::catalog::CollectionMeta;
    use crate::engine::rocks::RocksEngine;
    use crate::engine::{Cf, Direction, Engine, KeyRange};
    use crate::timeseries::internal_indexes;

    /// A time-series collection (time `t`, meta `m`) on a temp-dir RocksDB.
    fn collection() -> (tempfile::TempDir, RocksEngine, Arc<Collection>) {
        let (dir, engine) = crate::testing::temp_engine();
        let options = doc! { "timeseries": { "timeField": "t", "metaField": "m", "granularity": "seconds", "bucketMaxSpanSeconds": 3600 } };
        let mut indexes = vec![CollectionMeta::id_index(10)];
        for (i, mut index) in internal_indexes(&options).into_iter().enumerate() {
            index.id = 11 + i as u64;
            indexes.push(index);
        }
        for index in &indexes {
            engine.create_cf(Cf::Id(index.id)).unwrap();
        }
        let meta = crate::testing::meta("w", options, None, indexes);
        (dir, engine, Collection::new(meta).unwrap())
    }

    /// The stored buckets: (record key, meta, measurement `_id`s).
    fn stored(engine: &RocksEngine, coll: &Collection) -> Vec<(Vec<u8>, Bson, Vec<i32>)> {
        let opts = coll.timeseries.as_ref().unwrap();
        let mut c = engine
            .cursor(coll.records(), KeyRange::all(), Direction::Forward)
            .unwrap();
        let mut out = Vec::new();
        while c.valid() {
            let raw = RawDocument::from_bytes(c.value()).unwrap();
            let ids = unpack(raw, opts)
                .unwrap()
                .iter()
                .map(|m| m.get_i32("_id").unwrap())
                .collect();
            let meta = raw.get("meta").unwrap().map(|m| Bson::try_from(m).unwrap());
            out.push((c.key().to_vec(), meta.unwrap_or(Bson::Null), ids));
            c.advance();
        }
        out
    }

    #[test]
    fn a_rewrite_keeps_deletes_and_moves_measurements_in_one_batch() {
        let (_dir, engine, coll) = collection();
        let opts = coll.timeseries.clone().unwrap();
        let t = |s: i64| DateTime::from_millis(1_767_225_600_000 + s * 1000);
        let docs = (0..3)
            .map(|i| rawdoc! { "_id": i, "t": t(i64::from(i)), "m": "a" })
            .collect();
        let mut w = Writer::new(&engine, &coll).unwrap();
        insert_measurements(&engine, &mut w, &coll, &opts, docs, true).unwrap();
        w.commit(false).unwrap();
        let [(key, _, ids)] = stored(&engine, &coll).try_into().unwrap();
        assert_eq!(ids, [0, 1, 2]);
        let at = |pos: u32| [key.as_slice(), &pos.to_be_bytes()].concat();
        let mut r = Rewrites::default();
        r.delete(&at(0)).unwrap();
        r.replace(
            &at(1),
            rawdoc! { "_id": 1, "t": t(1), "m": "a", "x": 5 },
            &opts,
        )
        .unwrap();
        r.replace(&at(2), rawdoc! { "_id": 2, "t": t(2), "m": "b" }, &opts)
            .unwrap();
        assert!(
            r.replace(&at(2), rawdoc! { "_id": 2, "m": "b" }, &opts)
                .is_err()
        );
        let mut w = Writer::new(&engine, &coll).unwrap();
        assert_eq!(r.apply(&mut w, &coll, &opts).unwrap(), 1);
        w.commit(false).unwrap();
        let after = stored(&engine, &coll);
        assert_eq!(after.len(), 2);
        let a = after
            .iter()
            .find(|b| b.1 == Bson::String("a".into()))
            .unwrap();
        assert_eq!((a.0.as_slice(), a.2.as_slice()), (key.as_slice(), &[1][..]));
        let b = after
            .iter()
            .find(|b| b.1 == Bson::String("b".into()))
            .unwrap();
        assert_eq!(b.2, [2]);
        // Emptying a bucket removes it.
        let mut r = Rewrites::default();
        r.delete(&[key.as_slice(), &0u32.to_be_bytes()].concat())
            .unwrap();
        let mut w = Writer::new(&engine, &coll).unwrap();
        r.apply(&mut w, &coll, &opts).unwrap();
        w.commit(false).unwrap();
        assert_eq!(stored(&engine, &coll).len(), 1);
    }
}
