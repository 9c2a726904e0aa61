//! `$inc` and `$mul` arithmetic with MongoDB's type rules: int32 op int32
//! stays int32 unless it overflows into int64; int64 arithmetic that
//! overflows is an error; any decimal makes a decimal; otherwise any double
//! makes a double.
//!
//! `$sum` and `$avg` in aggregation use the same type (`Num::sum`), so an
//! update and a pipeline never disagree on a result's type or value.
//!
//! Pure arithmetic on numbers; which field the number came from, and what
//! to say when it fails, is the operator's business.

use bson::RawBsonRef;
use bson::raw::RawBson;

use super::decimal::{self, Dec};

/// A BSON number.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Num {
    Int(i32),
    Long(i64),
    Double(f64),
    Decimal(bson::Decimal128),
}

impl Num {
    pub(crate) fn from_bson(v: RawBsonRef<'_>) -> Option<Num> {
        match v {
            RawBsonRef::Int32(x) => Some(Num::Int(x)),
            RawBsonRef::Int64(x) => Some(Num::Long(x)),
            RawBsonRef::Double(x) => Some(Num::Double(x)),
            RawBsonRef::Decimal128(x) => Some(Num::Decimal(x)),
            _ => None,
        }
    }

    pub(crate) fn to_bson(self) -> RawBson {
        match self {
            Num::Int(x) => RawBson::Int32(x),
            Num::Long(x) => RawBson::Int64(x),
            Num::Double(x) => RawBson::Double(x),
            Num::Decimal(x) => RawBson::Decimal128(x),
        }
    }

    /// The sum, or None when int64 arithmetic overflows.
    pub(crate) fn add(self, o: Num) -> Option<Num> {
        self.combine(
            o,
            i32::checked_add,
            i64::checked_add,
            decimal::add,
            |a, b| a + b,
        )
    }

    /// The product, or None when int64 arithmetic overflows.
    pub(crate) fn mul(self, o: Num) -> Option<Num> {
        self.combine(
            o,
            i32::checked_mul,
            i64::checked_mul,
            decimal::mul,
            |a, b| a * b,
        )
    }

    fn combine(
        self,
        o: Num,
        int_op: fn(i32, i32) -> Option<i32>,
        long_op: fn(i64, i64) -> Option<i64>,
        dec_op: fn(Dec, Dec) -> Dec,
        double_op: fn(f64, f64) -> f64,
    ) -> Option<Num> {
        match (self, o) {
            (Num::Int(a), Num::Int(b)) => Some(match int_op(a, b) {
                Some(r) => Num::Int(r),
                // Two int32 operands always fit in int64.
                None => Num::Long(long_op(a.into(), b.into())?),
            }),
            (Num::Int(_) | Num::Long(_), Num::Int(_) | Num::Long(_)) => {
                long_op(self.as_i64(), o.as_i64()).map(Num::Long)
            }
            (Num::Decimal(_), _) | (_, Num::Decimal(_)) => Some(Num::Decimal(decimal::encode(
                dec_op(self.as_dec(), o.as_dec()),
            ))),
            _ => Some(Num::Double(double_op(self.as_f64(), o.as_f64()))),
        }
    }

    /// Same type and same value: the result of an update that changes
    /// nothing. Doubles compare with `==`, so `NaN` is never identical.
    pub(crate) fn identical(self, o: Num) -> bool {
        match (self, o) {
            (Num::Int(a), Num::Int(b)) => a == b,
            (Num::Long(a), Num::Long(b)) => a == b,
            (Num::Double(a), Num::Double(b)) => a == b,
            (Num::Decimal(a), Num::Decimal(b)) => {
                decimal::equal(decimal::decode(a), decimal::decode(b))
            }
            _ => false,
        }
    }

    /// The value with its type, as MongoDB shows it in an overflow message:
    /// `(NumberLong)9223372036854775807`.
    pub(crate) fn debug_string(self) -> String {
        match self {
            Num::Int(x) => format!("(NumberInt){x}"),
            Num::Long(x) => format!("(NumberLong){x}"),
            Num::Double(x) => format!("(NumberDouble){x}"),
            Num::Decimal(x) => format!("(NumberDecimal){x}"),
        }
    }

    fn as_i64(self) -> i64 {
        match self {
            Num::Int(x) => x.into(),
            Num::Long(x) => x,
            _ => unreachable!("only called on integers"),
        }
    }

    fn as_f64(self) -> f64 {
        match self {
            Num::Int(x) => x.into(),
            Num::Long(x) => x as f64,
            Num::Double(x) => x,
            Num::Decimal(_) => unreachable!("decimals never reach double arithmetic"),
        }
    }

    /// The sum as `$sum` and `$avg` keep it: the same type rules as `$inc`,
    /// except that an int64 overflow widens to a double instead of failing.
    pub(crate) fn sum(self, o: Num) -> Num {
        self.add(o).unwrap_or_else(|| {
            // Only int64 arithmetic overflows, and integers convert exactly
            // enough to a double for a running total.
            Num::Double(self.as_f64() + o.as_f64())
        })
    }

    /// The value as a double (decimals through their text form); for
    /// averages, never for comparisons.
    pub(crate) fn to_f64(self) -> f64 {
        match self {
            Num::Decimal(x) => x.to_string().parse().unwrap_or(f64::NAN),
            other => other.as_f64(),
        }
    }

    /// The value as a decimal (doubles rounded to 15 digits, as MongoDB
    /// converts them when they meet a decimal).
    pub(crate) fn to_dec(self) -> Dec {
        self.as_dec()
    }

    fn as_dec(self) -> Dec {
        match self {
            Num::Int(x) => decimal::from_i64(x.into()),
            Num::Long(x) => decimal::from_i64(x),
            Num::Double(x) => decimal::from_f64(x),
            Num::Decimal(x) => decimal::decode(x),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dec(s: &str) -> Num {
        Num::Decimal(s.parse().unwrap())
    }

    fn show(n: Option<Num>) -> String {
        match n {
            None => "overflow".to_owned(),
            Some(Num::Int(x)) => format!("int {x}"),
            Some(Num::Long(x)) => format!("long {x}"),
            Some(Num::Double(x)) => format!("double {x:?}"),
            Some(Num::Decimal(x)) => format!("decimal {x}"),
        }
    }

    #[test]
    fn int32_sum_stays_int32_until_it_overflows() {
        assert_eq!(show(Num::Int(1).add(Num::Int(2))), "int 3");
        assert_eq!(show(Num::Int(i32::MAX).add(Num::Int(1))), "long 2147483648");
        assert_eq!(show(Num::Int(i32::MAX).mul(Num::Int(2))), "long 4294967294");
    }

    #[test]
    fn int64_overflow_is_an_error() {
        assert_eq!(show(Num::Long(i64::MAX).add(Num::Int(1))), "overflow");
        assert_eq!(show(Num::Long(i64::MAX).mul(Num::Long(2))), "overflow");
        assert_eq!(show(Num::Int(1).add(Num::Long(1))), "long 2");
    }

    #[test]
    fn any_double_makes_a_double_and_any_decimal_a_decimal() {
        assert_eq!(show(Num::Int(1).add(Num::Double(0.5))), "double 1.5");
        assert_eq!(show(Num::Long(2).mul(Num::Double(0.5))), "double 1.0");
        assert_eq!(show(dec("1.5").add(Num::Int(1))), "decimal 2.5");
        assert_eq!(
            show(dec("1").add(Num::Double(1.0))),
            "decimal 2.00000000000000"
        );
    }

    #[test]
    fn sum_widens_int64_overflow_to_double_where_inc_fails() {
        assert_eq!(
            show(Some(Num::Long(i64::MAX).sum(Num::Int(1)))),
            "double 9.223372036854776e18"
        );
        assert_eq!(show(Some(dec("0.1").sum(dec("0.2")))), "decimal 0.3");
        assert_eq!(show(Some(Num::Int(1).sum(Num::Int(2)))), "int 3");
    }

    #[test]
    fn identical_needs_same_type_and_value() {
        assert!(Num::Int(1).identical(Num::Int(1)));
        assert!(!Num::Int(1).identical(Num::Long(1)));
        assert!(!Num::Double(f64::NAN).identical(Num::Double(f64::NAN)));
        assert!(dec("1.0").identical(dec("1.00")));
    }
}
