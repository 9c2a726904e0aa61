//! Compressed columns: how a bucket stores each field's values.
//!
//! Every bucket is written with its columns compressed: an open bucket is
//! rewritten by each insert statement that adds to it, so what a write
//! costs is the encoded size. An open bucket keeps each column as a
//! [`Column`], the encoding so far plus what the next delta needs, so a
//! statement encodes only the values it adds. Measurements of one sensor change little
//! from one to the next, so each column is delta-encoded by type and
//! RocksDB's block compression squeezes the near-constant deltas:
//!
//! ```text
//! column   := kind (u8) ‖ varint(values) ‖ [bitmap] ‖ payload
//!             kind bit 0x80: a bitmap of ⌈count/8⌉ bytes follows, bit i
//!             set when measurement i has the field (else every one has it)
//! kind 0   raw:      the column's BSON document {"<pos>": value, …}
//! kind 1   Date:     zigzag varint of the first millis, then zigzag
//!                    varints of the delta of deltas
//! kind 2   ObjectId: the first 12 bytes, then zigzag varints (as i128)
//!                    of the difference to the previous id, big-endian
//! kind 3   double:   u8 k, then zigzag varints of the deltas of v·10^k,
//!                    when every value is exactly such an integer over 10^k
//!                    (k ≤ 6, |v·10^k| < 2^53, no -0.0)
//! kind 4   int32:    zigzag varints of the deltas
//! kind 5   int64:    zigzag varints of the deltas
//! ```
//!
//! It must not know buckets (that is `bucket`): it maps one column's values
//! to bytes and back, and decoding gives back exactly the values encoded.

use bson::oid::ObjectId;
use bson::{DateTime, RawBson, RawBsonRef, RawDocument, RawDocumentBuf};

use ebb_lang::error::{Error, Result};

const RAW: u8 = 0;
const DATE: u8 = 1;
const OID: u8 = 2;
const DOUBLE: u8 = 3;
const INT32: u8 = 4;
const INT64: u8 = 5;
const SPARSE: u8 = 0x80;

/// A column being appended to: its encoding so far and the state the
/// next value's delta needs. An open bucket is written by every insert
/// statement that adds to it, so adding a value must cost that value's
/// bytes, not the column's: the encodings are append-only, and a value
/// that does not fit the column's kind (another type, or a double needing
/// a finer scale) re-encodes the column once as a whole.
///
/// [`Column::to_bytes`] gives exactly what encoding the same values in
/// one go gives.
#[derive(Debug, Clone, Default)]
pub struct Column {
    /// The values' positions, ascending.
    positions: Vec<u32>,
    /// Whether every position so far is the value's index (no gaps).
    dense: bool,
    state: State,
    /// The typed payload so far (unused by a raw column).
    payload: Vec<u8>,
}

/// The kind of a column and what its next delta is taken against.
#[derive(Debug, Clone, Default)]
enum State {
    #[default]
    Empty,
    Date {
        prev: i64,
        delta: i64,
    },
    Oid {
        prev: i128,
    },
    Double {
        k: u8,
        scale: f64,
        prev: i64,
    },
    Int {
        int32: bool,
        prev: i64,
    },
    Raw(RawDocumentBuf),
}

impl Column {
    /// A column of (position, value) pairs in position order, encoded as
    /// a whole: the kind is chosen from every value.
    pub fn from_values(values: &[(usize, RawBson)]) -> Result<Column> {
        let refs: Vec<RawBsonRef<'_>> = values.iter().map(|(_, v)| v.as_raw_bson_ref()).collect();
        let mut col = Column {
            dense: true,
            state: plan(&refs),
            ..Column::default()
        };
        if let State::Double { k, .. } = col.state {
            col.payload.push(k);
        }
        for (pos, v) in values {
            if !col.append(*pos, v.as_raw_bson_ref())? {
                return Err(Error::corrupt(
                    "time-series column: planned kind refused a value",
                ));
            }
        }
        Ok(col)
    }

    /// A stored column of a bucket holding `count` measurements, ready to
    /// be appended to.
    pub fn from_bytes(bytes: &[u8], count: usize) -> Result<Column> {
        Column::from_values(&decode(bytes, count)?)
    }

    /// Appends the value of the measurement at `pos` (after every position
    /// already in the column).
    pub fn push(&mut self, pos: usize, v: RawBsonRef<'_>) -> Result<()> {
        if self.positions.is_empty() {
            *self = Column::from_values(&[(pos, RawBson::from(v))])?;
            return Ok(());
        }
        if self.append(pos, v)? {
            return Ok(());
        }
        let mut all = self.values()?;
        all.push((pos, RawBson::from(v)));
        *self = Column::from_values(&all)?;
        Ok(())
    }

    /// How many values the column holds.
    pub fn len(&self) -> usize {
        self.positions.len()
    }

    /// Whether the column holds no value.
    pub fn is_empty(&self) -> bool {
        self.positions.is_empty()
    }

    /// The encoded column of a bucket holding `count` measurements (the
    /// layout in the module comment).
    pub fn to_bytes(&self, count: usize) -> Vec<u8> {
        let n = self.positions.len();
        let sparse = !self.dense || n != count;
        let kind = match self.state {
            State::Empty | State::Raw(_) => RAW,
            State::Date { .. } => DATE,
            State::Oid { .. } => OID,
            State::Double { .. } => DOUBLE,
            State::Int { int32: true, .. } => INT32,
            State::Int { int32: false, .. } => INT64,
        };
        let typed = kind != RAW;
        let mut out = Vec::with_capacity(16 + count.div_ceil(8) + self.payload.len());
        out.push(if sparse && typed { kind | SPARSE } else { kind });
        put_varint(&mut out, n as u128);
        match &self.state {
            State::Raw(doc) => out.extend_from_slice(doc.as_bytes()),
            State::Empty => out.extend_from_slice(RawDocumentBuf::new().as_bytes()),
            _ => {
                if sparse {
                    let mut bitmap = vec![0u8; count.div_ceil(8)];
                    for &p in &self.positions {
                        if let Some(byte) = bitmap.get_mut(p as usize / 8) {
                            *byte |= 1 << (p % 8);
                        }
                    }
                    out.extend_from_slice(&bitmap);
                }
                out.extend_from_slice(&self.payload);
            }
        }
        out
    }

    /// The column's (position, value) pairs.
    pub fn values(&self) -> Result<Vec<(usize, RawBson)>> {
        let count = self.positions.last().map_or(0, |p| *p as usize + 1);
        decode(&self.to_bytes(count), count)
    }

    /// Appends `v` at `pos` when it fits the column's kind; false (and
    /// nothing changed) when it does not.
    fn append(&mut self, pos: usize, v: RawBsonRef<'_>) -> Result<bool> {
        let first = self.positions.is_empty();
        let out = &mut self.payload;
        match (&mut self.state, v) {
            (State::Date { prev, delta }, RawBsonRef::DateTime(d)) => {
                let m = d.timestamp_millis();
                if first {
                    put_varint(out, zigzag(i128::from(m)));
                } else {
                    let dd = m.wrapping_sub(*prev).wrapping_sub(*delta);
                    *delta = m.wrapping_sub(*prev);
                    put_varint(out, zigzag(i128::from(dd)));
                }
                *prev = m;
            }
            (State::Oid { prev }, RawBsonRef::ObjectId(o)) => {
                let bytes = o.bytes();
                let now = oid_int(&bytes);
                if first {
                    out.extend_from_slice(&bytes);
                } else {
                    put_varint(out, zigzag(now.wrapping_sub(*prev)));
                }
                *prev = now;
            }
            (State::Double { scale, prev, .. }, RawBsonRef::Double(f)) => {
                let Some(n) = scaled(f, *scale) else {
                    return Ok(false);
                };
                put_varint(out, zigzag(i128::from(n.wrapping_sub(*prev))));
                *prev = n;
            }
            (State::Int { int32, prev }, v) => {
                let n = match (v, *int32) {
                    (RawBsonRef::Int32(n), true) => i64::from(n),
                    (RawBsonRef::Int64(n), false) => n,
                    _ => return Ok(false),
                };
                put_varint(out, zigzag(i128::from(n.wrapping_sub(*prev))));
                *prev = n;
            }
            (State::Raw(doc), v) => {
                let key = pos.to_string();
                doc.append(<&bson::raw::CStr>::try_from(key.as_str())?, v);
            }
            _ => return Ok(false),
        }
        self.dense &= pos == self.positions.len();
        self.positions
            .push(u32::try_from(pos).map_err(|_| Error::corrupt("time-series column position"))?);
        Ok(true)
    }
}

/// The kind a column of these values is encoded as (a double column's
/// scale the smallest that holds every value exactly); raw for anything
/// else.
fn plan(values: &[RawBsonRef<'_>]) -> State {
    let Some(first) = values.first() else {
        return State::Raw(RawDocumentBuf::new());
    };
    let same = |f: fn(&RawBsonRef<'_>) -> bool| values.iter().all(f);
    match first {
        RawBsonRef::DateTime(_) if same(|v| matches!(v, RawBsonRef::DateTime(_))) => {
            State::Date { prev: 0, delta: 0 }
        }
        RawBsonRef::ObjectId(_) if same(|v| matches!(v, RawBsonRef::ObjectId(_))) => {
            State::Oid { prev: 0 }
        }
        RawBsonRef::Double(_) if same(|v| matches!(v, RawBsonRef::Double(_))) => (0..=6u8)
            .find(|k| {
                let scale = 10f64.powi(i32::from(*k));
                values
                    .iter()
                    .all(|v| matches!(v, RawBsonRef::Double(f) if scaled(*f, scale).is_some()))
            })
            .map_or(State::Raw(RawDocumentBuf::new()), |k| State::Double {
                k,
                scale: 10f64.powi(i32::from(k)),
                prev: 0,
            }),
        RawBsonRef::Int32(_) if same(|v| matches!(v, RawBsonRef::Int32(_))) => State::Int {
            int32: true,
            prev: 0,
        },
        RawBsonRef::Int64(_) if same(|v| matches!(v, RawBsonRef::Int64(_))) => State::Int {
            int32: false,
            prev: 0,
        },
        _ => State::Raw(RawDocumentBuf::new()),
    }
}

/// Encodes a column, (position, value) pairs in position order, of a
/// bucket holding `count` measurements.
pub fn encode(col: &[(usize, RawBson)], count: usize) -> Result<Vec<u8>> {
    Ok(Column::from_values(col)?.to_bytes(count))
}

/// Decodes a column of a bucket holding `count` measurements into
/// (position, value) pairs in position order.
pub fn decode(bytes: &[u8], count: usize) -> Result<Vec<(usize, RawBson)>> {
    let corrupt = || Error::corrupt("time-series column");
    let mut input = bytes;
    let kind = *input.first().ok_or_else(corrupt)?;
    input = &input[1..];
    let n = get_varint(&mut input)? as usize;
    let positions: Vec<usize> = if kind & SPARSE != 0 {
        let len = count.div_ceil(8);
        let bitmap = input.get(..len).ok_or_else(corrupt)?;
        input = &input[len..];
        (0..count)
            .filter(|p| bitmap[p / 8] & (1 << (p % 8)) != 0)
            .collect()
    } else {
        (0..n).collect()
    };
    if kind == RAW {
        let col = RawDocument::from_bytes(input)?;
        return col
            .iter()
            .map(|el| {
                let (k, v) = el?;
                let pos = k.as_str().parse().map_err(|_| corrupt())?;
                Ok((pos, RawBson::from(v)))
            })
            .collect();
    }
    let mut values = Vec::with_capacity(n);
    match kind & !SPARSE {
        DATE => {
            let (mut prev, mut delta) = (0i64, 0i64);
            for i in 0..n {
                let d = unzigzag(get_varint(&mut input)?) as i64;
                if i == 0 {
                    prev = d;
                } else {
                    delta = delta.wrapping_add(d);
                    prev = prev.wrapping_add(delta);
                }
                values.push(RawBson::DateTime(DateTime::from_millis(prev)));
            }
        }
        OID => {
            let first: [u8; 12] = input
                .get(..12)
                .and_then(|b| b.try_into().ok())
                .ok_or_else(corrupt)?;
            input = &input[12..];
            let mut prev = oid_int(&first);
            values.push(RawBson::ObjectId(ObjectId::from_bytes(first)));
            for _ in 1..n {
                prev = prev.wrapping_add(unzigzag(get_varint(&mut input)?));
                values.push(RawBson::ObjectId(ObjectId::from_bytes(int_oid(prev))));
            }
        }
        DOUBLE => {
            let k = *input.first().ok_or_else(corrupt)?;
            input = &input[1..];
            let scale = 10f64.powi(i32::from(k));
            let mut prev = 0i64;
            for _ in 0..n {
                prev = prev.wrapping_add(unzigzag(get_varint(&mut input)?) as i64);
                values.push(RawBson::Double(prev as f64 / scale));
            }
        }
        INT32 | INT64 => {
            let mut prev = 0i64;
            for _ in 0..n {
                prev = prev.wrapping_add(unzigzag(get_varint(&mut input)?) as i64);
                values.push(if kind & !SPARSE == INT32 {
                    RawBson::Int32(prev as i32)
                } else {
                    RawBson::Int64(prev)
                });
            }
        }
        _ => return Err(corrupt()),
    }
    if positions.len() != values.len() {
        return Err(corrupt());
    }
    Ok(positions.into_iter().zip(values).collect())
}

/// `f · scale` as an integer when dividing it back gives exactly `f`.
fn scaled(f: f64, scale: f64) -> Option<i64> {
    let n = (f * scale).round();
    if !f.is_finite() || n.abs() >= 9_007_199_254_740_992.0 || (f == 0.0 && f.is_sign_negative()) {
        return None;
    }
    let n = n as i64;
    ((n as f64 / scale).to_bits() == f.to_bits()).then_some(n)
}

fn oid_int(b: &[u8; 12]) -> i128 {
    let mut wide = [0u8; 16];
    wide[4..].copy_from_slice(b);
    i128::from_be_bytes(wide)
}

fn int_oid(n: i128) -> [u8; 12] {
    let wide = n.to_be_bytes();
    let mut out = [0u8; 12];
    out.copy_from_slice(&wide[4..]);
    out
}

fn zigzag(n: i128) -> u128 {
    ((n << 1) ^ (n >> 127)) as u128
}

fn unzigzag(n: u128) -> i128 {
    ((n >> 1) as i128) ^ -((n & 1) as i128)
}

fn put_varint(out: &mut Vec<u8>, mut v: u128) {
    loop {
        let byte = (v & 0x7F) as u8;
        v >>= 7;
        if v == 0 {
            out.push(byte);
            return;
        }
        out.push(byte | 0x80);
    }
}

fn get_varint(input: &mut &[u8]) -> Result<u128> {
    let mut v: u128 = 0;
    let mut shift = 0;
    loop {
        let (&byte, rest) = input
            .split_first()
            .ok_or_else(|| Error::corrupt("time-series column varint"))?;
        *input = rest;
        if shift > 126 {
            return Err(Error::corrupt("time-series column varint"));
        }
        v |= u128::from(byte & 0x7F) << shift;
        if byte & 0x80 == 0 {
            return Ok(v);
        }
        shift += 7;
    }
}

/// A column document from (position, value) pairs.
pub fn to_document(values: &[(usize, RawBson)]) -> Result<RawDocumentBuf> {
    let mut d = RawDocumentBuf::new();
    for (pos, v) in values {
        let key = pos.to_string();
        d.append(<&bson::raw::CStr>::try_from(key.as_str())?, v.clone());
    }
    Ok(d)
}

#[cfg(test)]
mod tests {
    use bson::rawdoc;

    use super::*;

    fn round_trip(col: RawDocumentBuf, count: usize) -> usize {
        let values: Vec<(usize, RawBson)> = col
            .iter()
            .map(|el| {
                let (k, v) = el.unwrap();
                (k.as_str().parse().unwrap(), RawBson::from(v))
            })
            .collect();
        let bytes = encode(&values, count).unwrap();
        let back = to_document(&decode(&bytes, count).unwrap()).unwrap();
        assert_eq!(back, col);
        let mut appended = Column::default();
        for (pos, v) in &values {
            appended.push(*pos, v.as_raw_bson_ref()).unwrap();
        }
        assert_eq!(
            appended.to_bytes(count),
            bytes,
            "appending gives the whole encoding"
        );
        let reopened = Column::from_bytes(&bytes, count).unwrap();
        assert_eq!(reopened.to_bytes(count), bytes);
        bytes.len()
    }

    #[test]
    fn typed_columns_round_trip_exactly() {
        let mut dates = RawDocumentBuf::new();
        let mut oids = RawDocumentBuf::new();
        let mut temps = RawDocumentBuf::new();
        let mut ints = RawDocumentBuf::new();
        let base = ObjectId::new();
        let mut b = base.bytes();
        for i in 0..1000usize {
            let k = i.to_string();
            let k = <&bson::raw::CStr>::try_from(k.as_str()).unwrap();
            dates.append(
                k,
                DateTime::from_millis(1_767_225_600_000 + i as i64 * 1000),
            );
            b[11] = b[11].wrapping_add(100);
            oids.append(k, ObjectId::from_bytes(b));
            temps.append(k, (2000 + (i * 7919) % 1000) as f64 / 100.0);
            ints.append(k, (i as i32) * 3 - 700);
        }
        assert!(round_trip(dates, 1000) < 1010);
        assert!(round_trip(oids, 1000) < 2100);
        assert!(round_trip(temps, 1000) < 2100);
        round_trip(ints, 1000);
    }

    #[test]
    fn a_value_the_kind_cannot_take_re_encodes_the_column() {
        // A finer scale, then another type, then more of the same.
        round_trip(rawdoc! { "0": 1.0, "1": 2.5, "2": 2.25, "3": 0.125 }, 4);
        round_trip(rawdoc! { "0": 1.5, "1": 3, "2": 2.0 }, 3);
        round_trip(rawdoc! { "0": 1, "1": 2, "2": 3_i64, "3": 4 }, 4);
        round_trip(rawdoc! { "1": 1.5, "2": f64::NAN, "4": 2.0 }, 6);
        // A column's count grows past its values: the bitmap appears.
        let mut c = Column::default();
        c.push(0, RawBsonRef::Int32(7)).unwrap();
        assert_eq!(c.to_bytes(1)[0], INT32);
        assert_eq!(c.to_bytes(3)[0], INT32 | SPARSE);
        assert_eq!(
            decode(&c.to_bytes(3), 3).unwrap(),
            vec![(0, RawBson::Int32(7))]
        );
    }

    #[test]
    fn sparse_mixed_and_awkward_columns_round_trip() {
        round_trip(rawdoc! { "0": 1.5, "2": 2.25, "7": -3.0 }, 9);
        round_trip(rawdoc! { "0": 1, "1": "two", "2": 3.0 }, 3);
        round_trip(rawdoc! { "0": 0.1, "1": f64::NAN, "2": -0.0 }, 3);
        round_trip(rawdoc! { "0": 1e300, "1": 1.0 / 3.0 }, 2);
        round_trip(rawdoc! { "1": i64::MIN, "3": i64::MAX }, 4);
        round_trip(
            rawdoc! { "0": DateTime::from_millis(i64::MIN), "1": DateTime::from_millis(i64::MAX) },
            2,
        );
    }
}
