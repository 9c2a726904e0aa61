//! The bit test operators: `$bitsAllSet`, `$bitsAllClear`, `$bitsAnySet`,
//! `$bitsAnyClear`, as mongod parses and matches them.
//!
//! The mask is a non-negative integer, a BinData, or an array of bit
//! positions; all become positions. A candidate is an integral number
//! that fits a 64-bit integer, read in two's complement (so a negative
//! number has every bit from 64 up set), or a BinData, read as a little
//! endian bit string (bits past its end are clear). Anything else, NaN,
//! infinities and fractions included, matches none of them.

use bson::RawBsonRef;

use crate::error::{Error, Result};
use crate::query::path::elements;
use crate::query::value::number_as_f64;

/// Which question a bit test asks of its positions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BitTest {
    AllSet,
    AllClear,
    AnySet,
    AnyClear,
}

/// A parsed bit test.
#[derive(Debug, Clone, PartialEq)]
pub struct Bits {
    pub test: BitTest,
    pub positions: Vec<u32>,
}

impl Bits {
    /// Parses the argument of `op` (one of the four operators).
    pub fn parse(op: &str, arg: RawBsonRef<'_>) -> Result<Bits> {
        let test = match op {
            "$bitsAllSet" => BitTest::AllSet,
            "$bitsAllClear" => BitTest::AllClear,
            "$bitsAnySet" => BitTest::AnySet,
            _ => BitTest::AnyClear,
        };
        let positions = match arg {
            RawBsonRef::Array(array) => {
                let mut positions = Vec::new();
                for item in elements(array) {
                    positions.push(position(item)?);
                }
                positions
            }
            RawBsonRef::Binary(b) => (0..b.bytes.len() * 8)
                .filter(|p| b.bytes[p / 8] >> (p % 8) & 1 == 1)
                .map(|p| p as u32)
                .collect(),
            other => match integral(other) {
                Some(mask) if mask >= 0 => (0..63).filter(|p| mask >> p & 1 == 1).collect(),
                Some(_) => {
                    return Err(Error::bad_value(format!(
                        "{op} bitmask must be a non-negative number, but got: {}",
                        shown(other)
                    )));
                }
                None if number_as_f64(other).is_some() => {
                    return Err(Error::bad_value(format!(
                        "{op} bitmask must be an integer that fits a 64-bit integer, but got: {}",
                        shown(other)
                    )));
                }
                None => {
                    return Err(Error::bad_value(format!(
                        "{op} takes an Array, a number, or a BinData but received: {}",
                        shown(other)
                    )));
                }
            },
        };
        Ok(Bits { test, positions })
    }

    /// Whether the candidate value passes the test.
    pub fn matches(&self, candidate: Option<RawBsonRef<'_>>) -> bool {
        let bit: Box<dyn Fn(u32) -> bool> = match candidate {
            Some(RawBsonRef::Binary(b)) => {
                let bytes = b.bytes;
                Box::new(move |p| {
                    bytes
                        .get(p as usize / 8)
                        .is_some_and(|byte| byte >> (p % 8) & 1 == 1)
                })
            }
            Some(v) => match integral(v) {
                Some(n) => Box::new(move |p| if p < 64 { n >> p & 1 == 1 } else { n < 0 }),
                None => return false,
            },
            None => return false,
        };
        let mut each = self.positions.iter().map(|p| bit(*p));
        match self.test {
            BitTest::AllSet => each.all(|set| set),
            BitTest::AllClear => each.all(|set| !set),
            BitTest::AnySet => each.any(|set| set),
            BitTest::AnyClear => each.any(|set| !set),
        }
    }
}

/// A number's value when it is integral and fits an `i64`.
fn integral(v: RawBsonRef<'_>) -> Option<i64> {
    match v {
        RawBsonRef::Int32(n) => Some(n.into()),
        RawBsonRef::Int64(n) => Some(n),
        other => {
            let x = number_as_f64(other)?;
            (x.is_finite()
                && x.fract() == 0.0
                && (-9_223_372_036_854_775_808.0..9_223_372_036_854_775_808.0).contains(&x))
            .then_some(x as i64)
        }
    }
}

/// One bit position of an array mask.
fn position(v: RawBsonRef<'_>) -> Result<u32> {
    let n = integral(v).ok_or_else(|| {
        Error::bad_value(format!(
            "bit positions must be an integer but got: {}",
            shown(v)
        ))
    })?;
    if n < 0 {
        return Err(Error::bad_value(format!(
            "bit positions cannot be negative but got: {}",
            shown(v)
        )));
    }
    u32::try_from(n)
        .ok()
        .filter(|p| *p <= i32::MAX as u32)
        .ok_or_else(|| {
            Error::bad_value(format!(
                "bit positions cannot be represented as a 32-bit signed integer: {}",
                shown(v)
            ))
        })
}

fn shown(v: RawBsonRef<'_>) -> String {
    bson::Bson::try_from(bson::RawBson::from(v))
        .map(|b| b.to_string())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use bson::rawdoc;

    use super::*;

    fn bits(op: &str, arg: bson::RawBson) -> Bits {
        Bits::parse(op, arg.as_raw_bson_ref()).unwrap()
    }

    /// jstests/core/bittest.js's numbers: which of them each test keeps.
    #[test]
    fn numbers_in_twos_complement() {
        let values: Vec<bson::RawBson> = [0.0, 1.0, 54.0, 88.0, 255.0, 1e18]
            .into_iter()
            .map(bson::RawBson::Double)
            .collect();
        let count = |op: &str, mask: i32| {
            let b = bits(op, bson::RawBson::Int32(mask));
            values
                .iter()
                .filter(|v| b.matches(Some(v.as_raw_bson_ref())))
                .count()
        };
        assert_eq!(count("$bitsAllSet", 0), 6);
        assert_eq!(count("$bitsAllSet", 54), 2);
        assert_eq!(count("$bitsAllClear", 129), 4);
        assert_eq!(count("$bitsAnySet", 0), 0);
        assert_eq!(count("$bitsAnySet", 9), 3);
        assert_eq!(count("$bitsAnyClear", 18), 4);
        let negative: Vec<bson::RawBson> = [0, -1, -54, -1_000_000_000_000_000_000_i64]
            .into_iter()
            .map(bson::RawBson::Int64)
            .collect();
        let far = rawdoc! { "p": [1, 7, 6, 3, 100] };
        let b = Bits::parse("$bitsAllSet", far.get("p").unwrap().unwrap()).unwrap();
        let kept = negative
            .iter()
            .filter(|v| b.matches(Some(v.as_raw_bson_ref())))
            .count();
        assert_eq!(kept, 2, "bits past 63 of a negative number are set");
        for skipped in [f64::NAN, 1.1, f64::INFINITY] {
            let b = bits("$bitsAllSet", bson::RawBson::Int32(0));
            assert!(!b.matches(Some(RawBsonRef::Double(skipped))), "{skipped}");
        }
        assert!(
            !bits("$bitsAllClear", bson::RawBson::Int32(1)).matches(Some(RawBsonRef::String("0")))
        );
    }

    #[test]
    fn masks_that_mongod_refuses() {
        for arg in [
            rawdoc! { "m": -1 },
            rawdoc! { "m": 1.5 },
            rawdoc! { "m": "1" },
            rawdoc! { "m": [-1] },
            rawdoc! { "m": [1.5] },
            rawdoc! { "m": [4_294_967_296_i64] },
        ] {
            assert!(
                Bits::parse("$bitsAnySet", arg.get("m").unwrap().unwrap()).is_err(),
                "{arg:?}"
            );
        }
    }
}
