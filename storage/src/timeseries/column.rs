//! Compressed columns: how a full bucket stores each field's values.
//!
//! Every bucket is written with its columns compressed: an open bucket is
//! rewritten by each insert statement that adds to it, so what a write
//! costs is the encoded size. Measurements of one sensor change little
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

use crate::error::{Error, Result};

const RAW: u8 = 0;
const DATE: u8 = 1;
const OID: u8 = 2;
const DOUBLE: u8 = 3;
const INT32: u8 = 4;
const INT64: u8 = 5;
const SPARSE: u8 = 0x80;

/// Encodes a column, (position, value) pairs in position order, of a
/// bucket holding `count` measurements.
pub fn encode(col: &[(usize, RawBson)], count: usize) -> Result<Vec<u8>> {
    let values: Vec<RawBsonRef<'_>> = col.iter().map(|(_, v)| v.as_raw_bson_ref()).collect();
    let (kind, payload) = match payload(&values) {
        Some(typed) => typed,
        None => (RAW, to_document(col)?.into_bytes()),
    };
    let sparse = values.len() != count || col.iter().enumerate().any(|(i, (p, _))| i != *p);
    let mut out = vec![if sparse && kind != RAW {
        kind | SPARSE
    } else {
        kind
    }];
    put_varint(&mut out, values.len() as u128);
    if sparse && kind != RAW {
        let mut bitmap = vec![0u8; count.div_ceil(8)];
        for (p, _) in col {
            if let Some(byte) = bitmap.get_mut(p / 8) {
                *byte |= 1 << (p % 8);
            }
        }
        out.extend_from_slice(&bitmap);
    }
    out.extend_from_slice(&payload);
    Ok(out)
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

/// The typed payload of a column whose values all have one encodable
/// type; None for anything else (stored raw).
fn payload(values: &[RawBsonRef<'_>]) -> Option<(u8, Vec<u8>)> {
    let first = values.first()?;
    let mut out = Vec::new();
    match first {
        RawBsonRef::DateTime(_) => {
            let (mut prev, mut delta) = (0i64, 0i64);
            for (i, v) in values.iter().enumerate() {
                let RawBsonRef::DateTime(d) = v else {
                    return None;
                };
                let m = d.timestamp_millis();
                if i == 0 {
                    put_varint(&mut out, zigzag(i128::from(m)));
                } else {
                    let dd = m.wrapping_sub(prev).wrapping_sub(delta);
                    delta = m.wrapping_sub(prev);
                    put_varint(&mut out, zigzag(i128::from(dd)));
                }
                prev = m;
            }
            Some((DATE, out))
        }
        RawBsonRef::ObjectId(_) => {
            let mut prev = 0i128;
            for (i, v) in values.iter().enumerate() {
                let RawBsonRef::ObjectId(o) = v else {
                    return None;
                };
                let now = oid_int(&o.bytes());
                if i == 0 {
                    out.extend_from_slice(&o.bytes());
                } else {
                    put_varint(&mut out, zigzag(now.wrapping_sub(prev)));
                }
                prev = now;
            }
            Some((OID, out))
        }
        RawBsonRef::Double(_) => {
            let doubles: Vec<f64> = values
                .iter()
                .map(|v| match v {
                    RawBsonRef::Double(f) => Some(*f),
                    _ => None,
                })
                .collect::<Option<_>>()?;
            let k = (0..=6u8).find(|k| {
                let scale = 10f64.powi(i32::from(*k));
                doubles.iter().all(|f| scaled(*f, scale).is_some())
            })?;
            let scale = 10f64.powi(i32::from(k));
            out.push(k);
            let mut prev = 0i64;
            for f in doubles {
                let n = scaled(f, scale)?;
                put_varint(&mut out, zigzag(i128::from(n.wrapping_sub(prev))));
                prev = n;
            }
            Some((DOUBLE, out))
        }
        RawBsonRef::Int32(_) | RawBsonRef::Int64(_) => {
            let int32 = matches!(first, RawBsonRef::Int32(_));
            let mut prev = 0i64;
            for v in values {
                let n = match (v, int32) {
                    (RawBsonRef::Int32(n), true) => i64::from(*n),
                    (RawBsonRef::Int64(n), false) => *n,
                    _ => return None,
                };
                put_varint(&mut out, zigzag(i128::from(n.wrapping_sub(prev))));
                prev = n;
            }
            Some((if int32 { INT32 } else { INT64 }, out))
        }
        _ => None,
    }
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
