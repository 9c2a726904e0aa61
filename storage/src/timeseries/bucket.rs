//! One bucket: the measurements of one meta value within one time span,
//! stored as one record of the collection's records family.
//!
//! Record layout (BSON, MongoDB's bucket shape, with `control.count` so
//! readers need not count), columns shown uncompressed:
//!
//! ```text
//! { _id:     ObjectId(timestamp = bucket start in seconds, 8 unique bytes),
//!   control: { version: 2,
//!              min: { <field>: smallest value, …, <time>: bucket start },
//!              max: { <field>: largest value, … },
//!              count: <measurements> },
//!   meta:    <metaField value>            (absent without a metaField value)
//!   data:    { <field>: { "0": v₀, "1": v₁, … }, … } }   column-wise
//! }
//! ```
//!
//! `control.min.<time>` is the bucket's start (the first measurement's
//! time rounded down to `bucketRoundingSeconds`), as in mongod: the TTL
//! index on it gives the bucket rule (`options::internal_indexes`). A
//! column holds only the measurements that have the field; its keys are
//! the measurements' positions. Min and max are MongoDB's order
//! (`encoding::cmp`) over whole top-level values.
//!
//! Buckets are written with `control.version: 2` and every column
//! compressed, as mongod 7.0+ keeps them: `data.<field>` is then binary
//! subtype 0x80 in `column`'s encoding (the layout above, with each column
//! document replaced by its encoding). Readers take either form.
//!
//! This module builds and reads bucket documents; it does not decide
//! which bucket a measurement goes to (`insert`) nor read the engine.

use std::cmp::Ordering;

use bson::raw::{CStr, cstr};
use bson::{
    Bson, DateTime, RawBinaryRef, RawBson, RawBsonRef, RawDocument, RawDocumentBuf, oid::ObjectId,
};

use super::column::{self, Column};
use super::options::TimeseriesOptions;
use ebb_lang::encoding::cmp::compare_values;
use ebb_lang::error::{Error, Result};

/// The binary subtype of a compressed column (ebb's encoding, `column`;
/// not MongoDB's BSONColumn, whose subtype is 7).
const COLUMN_SUBTYPE: bson::spec::BinarySubtype = bson::spec::BinarySubtype::UserDefined(0x80);

/// MongoDB's cap on measurements per bucket.
pub const MAX_MEASUREMENTS: u32 = 1000;
/// MongoDB's cap on a bucket's (uncompressed) size.
pub const MAX_BUCKET_BYTES: usize = 125 * 1024;

/// A bucket opened for appending. Columns stay encoded (`column::Column`
/// keeps what the next delta needs), so appending a measurement encodes
/// its values and writing the bucket copies the columns' bytes: an open
/// bucket is never re-encoded value by value.
#[derive(Debug, Clone)]
pub struct Bucket {
    pub id: ObjectId,
    /// Start of the span (millis): `control.min.<time>`.
    pub start: i64,
    pub meta: Option<Bson>,
    pub count: u32,
    min: Vec<(String, RawBson)>,
    max: Vec<(String, RawBson)>,
    /// Columns in the order fields first appeared.
    data: Vec<(String, Column)>,
    /// Bytes the columns would take uncompressed (MongoDB's size limit).
    raw_bytes: usize,
}

impl Bucket {
    /// An empty bucket starting at `start` millis.
    pub fn new(start: i64, meta: Option<Bson>, opts: &TimeseriesOptions) -> Self {
        let fresh = ebb_lang::decided::object_id().bytes();
        let mut id = [0u8; 12];
        // The timestamp is the start in seconds, as mongod's bucket ids
        // (wrapping for dates outside 1970..2106).
        id[..4].copy_from_slice(&((start.div_euclid(1000)) as u32).to_be_bytes());
        id[4..].copy_from_slice(&fresh[4..]);
        Bucket {
            id: ObjectId::from_bytes(id),
            start,
            meta,
            count: 0,
            min: vec![(
                opts.time_field.clone(),
                RawBson::DateTime(DateTime::from_millis(start)),
            )],
            max: Vec::new(),
            data: Vec::new(),
            raw_bytes: 0,
        }
    }

    /// The same bucket (id, start, meta) without measurements.
    pub fn emptied(&self, opts: &TimeseriesOptions) -> Self {
        let mut b = Bucket::new(self.start, self.meta.clone(), opts);
        b.id = self.id;
        b
    }

    /// Whether MongoDB's limits let the bucket take more measurements.
    pub fn accepts_more(&self) -> bool {
        self.count < MAX_MEASUREMENTS && self.raw_bytes < MAX_BUCKET_BYTES
    }

    /// Whether the bucket can take a measurement at `millis` (its span,
    /// MongoDB's limits).
    pub fn accepts(&self, millis: i64, opts: &TimeseriesOptions) -> bool {
        millis >= self.start
            && millis < self.start.saturating_add(opts.max_span_secs * 1000)
            && self.accepts_more()
    }

    /// Appends a measurement (its metaField is left out: it is the
    /// bucket's `meta`).
    pub fn push(&mut self, m: &RawDocument, opts: &TimeseriesOptions) -> Result<()> {
        let pos = self.count as usize;
        for el in m {
            let (k, v) = el?;
            let name = k.as_str();
            if opts.meta_field.as_deref() == Some(name) {
                continue;
            }
            // The time minimum is the bucket's start, never widened.
            if name != opts.time_field {
                widen(&mut self.min, name, v, Ordering::Less);
            }
            widen(&mut self.max, name, v, Ordering::Greater);
            self.raw_bytes += value_bytes(v) + 5;
            match self.data.iter_mut().find(|(f, _)| f == name) {
                Some((_, col)) => col.push(pos, v)?,
                None => {
                    let mut col = Column::default();
                    col.push(pos, v)?;
                    self.data.push((name.to_owned(), col));
                }
            }
        }
        self.count += 1;
        Ok(())
    }

    /// The bucket document, its columns compressed (`column`): a write
    /// of the bucket costs its compressed size, not its raw size, so the
    /// many rewrites of an open bucket stay cheap.
    pub fn to_raw(&self) -> Result<RawDocumentBuf> {
        let mut control = RawDocumentBuf::new();
        control.append(cstr!("version"), 2);
        control.append(cstr!("min"), &bounds(&self.min)?);
        control.append(cstr!("max"), &bounds(&self.max)?);
        control.append(cstr!("count"), self.count as i32);
        let mut d = RawDocumentBuf::new();
        d.append(cstr!("_id"), self.id);
        d.append(cstr!("control"), &control);
        if let Some(m) = &self.meta {
            d.append(cstr!("meta"), RawBson::try_from(m.clone())?);
        }
        let mut data = RawDocumentBuf::new();
        for (f, col) in &self.data {
            let bytes = col.to_bytes(self.count as usize);
            data.append(
                <&CStr>::try_from(f.as_str())?,
                RawBinaryRef {
                    subtype: COLUMN_SUBTYPE,
                    bytes: &bytes,
                },
            );
        }
        d.append(cstr!("data"), &data);
        Ok(d)
    }

    /// Reads a stored bucket back for appending.
    pub fn from_raw(raw: &RawDocument, opts: &TimeseriesOptions) -> Result<Self> {
        let corrupt = |what: &str| Error::corrupt(format!("time-series bucket: {what}"));
        let id = raw.get_object_id("_id").map_err(|_| corrupt("_id"))?;
        let control = raw
            .get_document("control")
            .map_err(|_| corrupt("control"))?;
        let min = fields(control.get_document("min").map_err(|_| corrupt("min"))?)?;
        let start = match min.iter().find(|(k, _)| *k == opts.time_field) {
            Some((_, RawBson::DateTime(d))) => d.timestamp_millis(),
            _ => return Err(corrupt("min time")),
        };
        let count = control.get_i32("count").map_err(|_| corrupt("count"))? as u32;
        let mut data = Vec::new();
        let mut raw_bytes = 0;
        for el in raw.get_document("data").map_err(|_| corrupt("data"))? {
            let (k, v) = el?;
            let values = column_values(v, count as usize)?;
            raw_bytes += values
                .iter()
                .map(|(_, v)| value_bytes(v.as_raw_bson_ref()) + 5)
                .sum::<usize>();
            data.push((k.as_str().to_owned(), Column::from_values(&values)?));
        }
        Ok(Bucket {
            id,
            start,
            meta: raw.get("meta")?.map(Bson::try_from).transpose()?,
            count,
            max: fields(control.get_document("max").map_err(|_| corrupt("max"))?)?,
            min,
            data,
            raw_bytes,
        })
    }
}

/// The encoded size of a value (its BSON element without the key).
fn value_bytes(v: RawBsonRef<'_>) -> usize {
    match v {
        RawBsonRef::String(s) => s.len() + 5,
        RawBsonRef::Document(d) => d.as_bytes().len(),
        RawBsonRef::Array(a) => a.as_bytes().len(),
        RawBsonRef::Binary(b) => b.bytes.len() + 5,
        RawBsonRef::ObjectId(_) => 12,
        RawBsonRef::Decimal128(_) => 16,
        RawBsonRef::Boolean(_) => 1,
        RawBsonRef::Int32(_) => 4,
        RawBsonRef::Null | RawBsonRef::Undefined | RawBsonRef::MinKey | RawBsonRef::MaxKey => 0,
        _ => 8,
    }
}

/// A stored column's (position, value) pairs: a column document or a
/// compressed column.
fn column_values(col: RawBsonRef<'_>, count: usize) -> Result<Vec<(usize, RawBson)>> {
    match col {
        RawBsonRef::Document(col) => col
            .iter()
            .map(|el| {
                let (pos, v) = el?;
                let pos = pos
                    .as_str()
                    .parse()
                    .map_err(|_| Error::corrupt("time-series bucket: position"))?;
                Ok((pos, RawBson::from(v)))
            })
            .collect(),
        RawBsonRef::Binary(b) if b.subtype == COLUMN_SUBTYPE => column::decode(b.bytes, count),
        _ => Err(Error::corrupt("time-series bucket: column")),
    }
}

fn fields(d: &RawDocument) -> Result<Vec<(String, RawBson)>> {
    d.iter()
        .map(|el| {
            let (k, v) = el?;
            Ok((k.as_str().to_owned(), RawBson::from(v)))
        })
        .collect()
}

fn bounds(values: &[(String, RawBson)]) -> Result<RawDocumentBuf> {
    let mut d = RawDocumentBuf::new();
    for (k, v) in values {
        d.append(<&CStr>::try_from(k.as_str())?, v.clone());
    }
    Ok(d)
}

/// Sets `bound[k]` to `v` when `v` is beyond it in the direction `toward`
/// (MongoDB's order over whole values).
fn widen(bound: &mut Vec<(String, RawBson)>, k: &str, v: RawBsonRef<'_>, toward: Ordering) {
    match bound.iter_mut().find(|(f, _)| f == k) {
        Some((_, cur)) => {
            if compare_values(v, cur.as_raw_bson_ref()) == toward {
                *cur = RawBson::from(v);
            }
        }
        None => bound.push((k.to_owned(), RawBson::from(v))),
    }
}

/// How many measurements a stored bucket holds (`control.count`).
pub fn bucket_count(raw: &RawDocument) -> Result<u64> {
    let control = raw
        .get_document("control")
        .map_err(|_| Error::corrupt("time-series bucket: control"))?;
    let n = control
        .get_i32("count")
        .map_err(|_| Error::corrupt("time-series bucket: count"))?;
    Ok(n.max(0) as u64)
}

/// The measurements of a stored bucket, in position order, as mongod
/// shows them: timeField first, then the metaField, then the other
/// fields in the order they first appeared in the bucket.
pub fn unpack(raw: &RawDocument, opts: &TimeseriesOptions) -> Result<Vec<RawDocumentBuf>> {
    let corrupt = |what: &str| Error::corrupt(format!("time-series bucket: {what}"));
    let control = raw
        .get_document("control")
        .map_err(|_| corrupt("control"))?;
    let count = control
        .get_i32("count")
        .map_err(|_| corrupt("count"))?
        .max(0) as usize;
    let data = raw.get_document("data").map_err(|_| corrupt("data"))?;
    let meta = raw.get("meta")?;
    let mut out: Vec<RawDocumentBuf> = (0..count).map(|_| RawDocumentBuf::new()).collect();
    // Time first, then meta, then the rest: columns are walked in that
    // order and each appends to the measurements it holds a value for.
    if let Some(col) = data.get(&opts.time_field)? {
        append_column(&mut out, &opts.time_field, col)?;
    }
    if let (Some(name), Some(m)) = (&opts.meta_field, meta) {
        let name = <&bson::raw::CStr>::try_from(name.as_str())?;
        for doc in &mut out {
            doc.append(name, m);
        }
    }
    for el in data {
        let (k, v) = el?;
        if k.as_str() == opts.time_field {
            continue;
        }
        append_column(&mut out, k.as_str(), v)?;
    }
    Ok(out)
}

/// Appends a column's values (a document, or a compressed column) to the
/// measurements at their positions.
fn append_column(out: &mut [RawDocumentBuf], field: &str, col: RawBsonRef<'_>) -> Result<()> {
    let field = <&CStr>::try_from(field)?;
    for (pos, v) in column_values(col, out.len())? {
        if let Some(doc) = out.get_mut(pos) {
            doc.append(field, v);
        }
    }
    Ok(())
}

/// The measurement's time (millis), or MongoDB's error when the timeField
/// is missing or not a Date.
pub fn measurement_time(m: &RawDocument, opts: &TimeseriesOptions) -> Result<i64> {
    match m.get(&opts.time_field)? {
        Some(RawBsonRef::DateTime(d)) => Ok(d.timestamp_millis()),
        _ => Err(Error::bad_value(format!(
            "'{}' must be present and contain a valid BSON UTC datetime value",
            opts.time_field
        ))),
    }
}

#[cfg(test)]
mod tests {
    use bson::{Document, doc, rawdoc};

    use super::*;

    fn opts() -> TimeseriesOptions {
        TimeseriesOptions::parse(RawBsonRef::Document(
            &rawdoc! { "timeField": "t", "metaField": "m" },
        ))
        .unwrap()
    }

    #[test]
    fn a_bucket_round_trips_and_unpacks_its_measurements() {
        let o = opts();
        let mut b = Bucket::new(60_000, Some(Bson::String("a".into())), &o);
        let t1 = DateTime::from_millis(61_000);
        let t2 = DateTime::from_millis(62_000);
        b.push(&rawdoc! { "t": t1, "m": "a", "x": 5 }, &o).unwrap();
        b.push(&rawdoc! { "t": t2, "m": "a", "y": "s" }, &o)
            .unwrap();
        let raw = b.to_raw().unwrap();
        let back = Bucket::from_raw(&raw, &o).unwrap();
        assert_eq!(back.count, 2);
        assert_eq!(back.start, 60_000);
        let ms = unpack(&raw, &o).unwrap();
        assert_eq!(
            Document::try_from(ms[0].as_ref()).unwrap(),
            doc! { "t": t1, "m": "a", "x": 5 }
        );
        assert_eq!(
            Document::try_from(ms[1].as_ref()).unwrap(),
            doc! { "t": t2, "m": "a", "y": "s" }
        );
        let control = raw.get_document("control").unwrap();
        assert_eq!(
            control
                .get_document("min")
                .unwrap()
                .get_datetime("t")
                .unwrap(),
            DateTime::from_millis(60_000)
        );
        assert_eq!(
            control
                .get_document("max")
                .unwrap()
                .get_datetime("t")
                .unwrap(),
            t2
        );
    }

    #[test]
    fn a_bucket_accepts_only_its_span() {
        let o = opts();
        let b = Bucket::new(0, None, &o);
        assert!(b.accepts(3_599_999, &o));
        assert!(!b.accepts(3_600_000, &o));
        assert!(!b.accepts(-1, &o));
    }
}
