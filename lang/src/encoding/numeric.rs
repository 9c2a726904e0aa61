//! Exact values of BSON numbers, and their comparison across int32, int64,
//! double and decimal128 (one type bracket in MongoDB's order).
//!
//! [`Exact`] holds any BSON number without rounding: a class (NaN, ±∞, zero,
//! negative, positive) and, for non-zero finite values, `±0.d₁d₂…dₙ × 10^e`
//! with `d₁ ≠ 0` and `dₙ ≠ 0`. Every double has a finite decimal expansion
//! (it is `m·2^k`, and `2^-k = 5^k / 10^k`), so doubles expand exactly, as
//! do int64s and decimal128s. Equal values have equal `Exact`s whatever their
//! BSON type, which is what lets the key encoding give `5`, `NumberLong(5)`,
//! `5.0` and `NumberDecimal("5.00")` the same bytes.
//!
//! Order: NaN (double or decimal, any sign or payload) sorts below every other
//! number and equals NaN; `-0 == 0`; `-∞ < finite < +∞`.
//!
//! Deliberate difference from MongoDB: when it compares a double with a
//! decimal128, MongoDB first rounds the double to 34 significant digits, so
//! it can call distinct values equal (the double nearest 0.1 "equals"
//! `NumberDecimal("0.1000000000000000055511151231257827")`). ebb compares
//! exact values, so the order is a true total order that an on-disk key
//! encoding can reproduce byte for byte.
//!
//! This module does not know about bytes on disk; `keycode` owns the layout.

use std::cmp::Ordering;

use bson::{Decimal128, RawBson, RawBsonRef};

/// The coarse class of a number, in sort order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Class {
    NaN,
    NegativeInfinity,
    Negative,
    Zero,
    Positive,
    PositiveInfinity,
}

/// The exact mathematical value of a BSON number.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Exact {
    class: Class,
    /// Decimal exponent of `0.d₁d₂…dₙ`; zero unless the class is finite and non-zero.
    exponent: i32,
    /// Significant digits (each 0..=9), no leading or trailing zero; empty
    /// unless the class is finite and non-zero.
    digits: Vec<u8>,
}

/// Largest decimal128 coefficient (34 nines); larger encodings mean zero.
const DECIMAL_MAX_COEFFICIENT: u128 = 9_999_999_999_999_999_999_999_999_999_999_999;
const DECIMAL_MAX_DIGITS: usize = 34;
const DECIMAL_EXPONENT_BIAS: i32 = 6176;
const DECIMAL_MIN_EXPONENT: i32 = -6176;
const DECIMAL_MAX_EXPONENT: i32 = 6111;

impl Exact {
    pub const NAN: Exact = Exact::special(Class::NaN);
    pub const NEGATIVE_INFINITY: Exact = Exact::special(Class::NegativeInfinity);
    pub const ZERO: Exact = Exact::special(Class::Zero);
    pub const POSITIVE_INFINITY: Exact = Exact::special(Class::PositiveInfinity);

    const fn special(class: Class) -> Exact {
        Exact {
            class,
            exponent: 0,
            digits: Vec::new(),
        }
    }

    /// A non-zero finite value `±0.digits × 10^exponent`; None unless the
    /// digits are normalised (non-empty, each 0..=9, first and last non-zero),
    /// so that every value has exactly one `Exact`.
    pub fn finite(negative: bool, exponent: i32, digits: Vec<u8>) -> Option<Exact> {
        let normalised = digits.first().is_some_and(|&d| d != 0)
            && digits.last().is_some_and(|&d| d != 0)
            && digits.iter().all(|&d| d <= 9);
        normalised.then_some(Exact {
            class: if negative {
                Class::Negative
            } else {
                Class::Positive
            },
            exponent,
            digits,
        })
    }

    /// The exact value of a numeric BSON value; None for any other type.
    pub fn from_bson(v: RawBsonRef<'_>) -> Option<Exact> {
        match v {
            RawBsonRef::Int32(x) => Some(Exact::from_i64(x.into())),
            RawBsonRef::Int64(x) => Some(Exact::from_i64(x)),
            RawBsonRef::Double(x) => Some(Exact::from_f64(x)),
            RawBsonRef::Decimal128(d) => Some(Exact::from_decimal128(d)),
            _ => None,
        }
    }

    pub fn from_i64(x: i64) -> Exact {
        from_scaled(x < 0, digits_of(x.unsigned_abs().into()), 0)
    }

    pub fn from_f64(x: f64) -> Exact {
        if x.is_nan() {
            return Exact::NAN;
        }
        if x.is_infinite() {
            return if x > 0.0 {
                Exact::POSITIVE_INFINITY
            } else {
                Exact::NEGATIVE_INFINITY
            };
        }
        // Integral doubles in i64 range (the common case) need no big arithmetic.
        if x.fract() == 0.0 && x.abs() < TWO_POW_63 {
            return Exact::from_i64(x as i64);
        }
        let (mantissa, binary_exponent) = decompose(x);
        let (digits, scale) = if binary_exponent >= 0 {
            (big_digits(mantissa, 2, binary_exponent.unsigned_abs()), 0)
        } else {
            // m·2^-k = m·5^k / 10^k
            let k = binary_exponent.unsigned_abs();
            (big_digits(mantissa, 5, k), -(k as i32))
        };
        from_scaled(x < 0.0, digits, scale)
    }

    /// Decodes IEEE 754-2008 decimal128 in the BID encoding BSON uses
    /// (little-endian): sign bit, combination field, 14-bit exponent biased
    /// by 6176, 113-bit coefficient. Non-canonical coefficients (above
    /// 10^34 - 1, including every one in the `11` combination form) mean zero.
    pub fn from_decimal128(d: Decimal128) -> Exact {
        let bits = u128::from_le_bytes(d.bytes());
        let negative = bits >> 127 == 1;
        match (bits >> 122) & 0b1_1111 {
            0b1_1111 => return Exact::NAN,
            0b1_1110 if negative => return Exact::NEGATIVE_INFINITY,
            0b1_1110 => return Exact::POSITIVE_INFINITY,
            _ => {}
        }
        if (bits >> 125) & 0b11 == 0b11 {
            return Exact::ZERO;
        }
        let biased_exponent = ((bits >> 113) & 0x3FFF) as i32;
        let coefficient = bits & ((1u128 << 113) - 1);
        if coefficient > DECIMAL_MAX_COEFFICIENT {
            return Exact::ZERO;
        }
        from_scaled(
            negative,
            digits_of(coefficient),
            biased_exponent - DECIMAL_EXPONENT_BIAS,
        )
    }

    pub fn class(&self) -> Class {
        self.class
    }

    /// Decimal exponent `e` of `0.d₁d₂…dₙ × 10^e` (zero for non-finite or zero values).
    pub fn exponent(&self) -> i32 {
        self.exponent
    }

    /// Significant digits, most significant first (empty for non-finite or zero values).
    pub fn digits(&self) -> &[u8] {
        &self.digits
    }

    fn is_negative(&self) -> bool {
        matches!(self.class, Class::Negative | Class::NegativeInfinity)
    }

    /// The value in its canonical BSON type: int32 if integral and in range,
    /// else int64, else double if exactly representable, else decimal128.
    /// NaN and ±∞ become doubles, zero becomes int32 0. None only when no
    /// BSON type holds the value exactly (never for a value read from BSON).
    pub fn to_bson(&self) -> Option<RawBson> {
        match self.class {
            Class::NaN => return Some(RawBson::Double(f64::NAN)),
            Class::NegativeInfinity => return Some(RawBson::Double(f64::NEG_INFINITY)),
            Class::PositiveInfinity => return Some(RawBson::Double(f64::INFINITY)),
            Class::Zero => return Some(RawBson::Int32(0)),
            Class::Negative | Class::Positive => {}
        }
        if let Some(i) = self.to_i64() {
            return Some(match i32::try_from(i) {
                Ok(small) => RawBson::Int32(small),
                Err(_) => RawBson::Int64(i),
            });
        }
        if let Some(f) = self.to_f64_exact() {
            return Some(RawBson::Double(f));
        }
        self.to_decimal128().map(RawBson::Decimal128)
    }

    /// The value as an i64 if it is an integer in range.
    fn to_i64(&self) -> Option<i64> {
        let n = self.digits.len() as i32;
        // Below 10^19 every integer fits in i128 comfortably; i64 ends near 9.2·10^18.
        if self.exponent < n || self.exponent > 19 {
            return None;
        }
        let magnitude = self.integer_coefficient()? * 10u128.pow((self.exponent - n) as u32);
        let signed = if self.is_negative() {
            -(magnitude as i128)
        } else {
            magnitude as i128
        };
        i64::try_from(signed).ok()
    }

    /// The value as a double if some double equals it exactly.
    fn to_f64_exact(&self) -> Option<f64> {
        // Outside these bounds no double can hold the value (doubles span
        // about 4.9e-324..1.8e308 with at most 767 significant digits).
        if !(-330..=310).contains(&self.exponent) || self.digits.len() > 770 {
            return None;
        }
        let mut text = String::with_capacity(self.digits.len() + 8);
        if self.is_negative() {
            text.push('-');
        }
        text.extend(self.digits.iter().map(|&d| char::from(b'0' + d)));
        text.push_str(&format!("e{}", self.exponent - self.digits.len() as i32));
        // Rust parses with correct rounding; the value is exact iff it expands back to itself.
        let f: f64 = text.parse().ok()?;
        (f.is_finite() && Exact::from_f64(f) == *self).then_some(f)
    }

    /// The value as a canonical decimal128 if one holds it exactly.
    fn to_decimal128(&self) -> Option<Decimal128> {
        let n = self.digits.len() as i32;
        let mut exponent = self.exponent - n;
        // Above the largest exponent the coefficient can take trailing zeros instead ("clamping").
        let padding = (exponent - DECIMAL_MAX_EXPONENT).max(0);
        if n + padding > DECIMAL_MAX_DIGITS as i32 || exponent - padding < DECIMAL_MIN_EXPONENT {
            return None;
        }
        exponent -= padding;
        let coefficient = self.integer_coefficient()? * 10u128.pow(padding as u32);
        let biased = (exponent + DECIMAL_EXPONENT_BIAS) as u128;
        let sign = u128::from(self.is_negative()) << 127;
        let bits = sign | biased << 113 | coefficient;
        Some(Decimal128::from_bytes(bits.to_le_bytes()))
    }

    /// The digits read as an integer, if there are at most 34 of them.
    fn integer_coefficient(&self) -> Option<u128> {
        (self.digits.len() <= DECIMAL_MAX_DIGITS).then(|| {
            self.digits
                .iter()
                .fold(0u128, |acc, &d| acc * 10 + u128::from(d))
        })
    }

    /// Orders magnitudes of two non-zero finite values: a larger exponent
    /// wins, then digit by digit; without trailing zeros a prefix is smaller.
    fn cmp_magnitude(&self, other: &Exact) -> Ordering {
        (self.exponent, &self.digits[..]).cmp(&(other.exponent, &other.digits[..]))
    }
}

impl Ord for Exact {
    fn cmp(&self, other: &Exact) -> Ordering {
        self.class.cmp(&other.class).then_with(|| match self.class {
            Class::Positive => self.cmp_magnitude(other),
            Class::Negative => other.cmp_magnitude(self),
            _ => Ordering::Equal,
        })
    }
}

impl PartialOrd for Exact {
    fn partial_cmp(&self, other: &Exact) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// Compares two numeric values by mathematical value, exactly.
///
/// Same-type integers and doubles, and integer/double pairs, take fast
/// paths; anything involving decimal128 goes through [`Exact`]. Callers pass
/// numbers only; any other value compares as NaN.
pub fn compare(a: RawBsonRef<'_>, b: RawBsonRef<'_>) -> Ordering {
    match (Fast::of(a), Fast::of(b)) {
        (Fast::Int(i), Fast::Int(j)) => i.cmp(&j),
        (Fast::Float(x), Fast::Float(y)) => compare_f64(x, y),
        (Fast::Int(i), Fast::Float(y)) => compare_i64_f64(i, y),
        (Fast::Float(x), Fast::Int(j)) => compare_i64_f64(j, x).reverse(),
        _ => exact_or_nan(a).cmp(&exact_or_nan(b)),
    }
}

/// The machine form of a number, where one exists, for the fast paths.
enum Fast {
    Int(i64),
    Float(f64),
    Other,
}

impl Fast {
    fn of(v: RawBsonRef<'_>) -> Fast {
        match v {
            RawBsonRef::Int32(x) => Fast::Int(x.into()),
            RawBsonRef::Int64(x) => Fast::Int(x),
            RawBsonRef::Double(x) => Fast::Float(x),
            _ => Fast::Other,
        }
    }
}

fn exact_or_nan(v: RawBsonRef<'_>) -> Exact {
    Exact::from_bson(v).unwrap_or(Exact::NAN)
}

/// Doubles with NaN lowest and equal to itself; IEEE already has -0 == 0.
fn compare_f64(x: f64, y: f64) -> Ordering {
    x.partial_cmp(&y)
        .unwrap_or_else(|| x.is_nan().cmp(&y.is_nan()).reverse())
}

const TWO_POW_63: f64 = 9_223_372_036_854_775_808.0;

/// Compares an integer with a double exactly: casting either way would round.
fn compare_i64_f64(i: i64, f: f64) -> Ordering {
    if f.is_nan() {
        return Ordering::Greater;
    }
    if f >= TWO_POW_63 {
        return Ordering::Less;
    }
    if f < -TWO_POW_63 {
        return Ordering::Greater;
    }
    // |trunc(f)| ≤ 2^63 fits i64 exactly here; the fraction breaks a tie.
    let whole = f.trunc();
    i.cmp(&(whole as i64))
        .then_with(|| whole.partial_cmp(&f).unwrap_or(Ordering::Equal))
}

/// A finite non-zero double as `(m, k)` with value `m · 2^k` and `m` odd.
fn decompose(x: f64) -> (u64, i32) {
    let bits = x.to_bits();
    let biased = ((bits >> 52) & 0x7FF) as i32;
    let fraction = bits & ((1u64 << 52) - 1);
    let (mantissa, exponent) = if biased == 0 {
        (fraction, -1074) // subnormal
    } else {
        (fraction | 1 << 52, biased - 1075)
    };
    let shift = mantissa.trailing_zeros();
    (mantissa >> shift, exponent + shift as i32)
}

/// Builds an [`Exact`] from `±int(digits) × 10^scale`, where `digits` are
/// decimal digits, most significant first, possibly with zeros either end.
fn from_scaled(negative: bool, mut digits: Vec<u8>, scale: i32) -> Exact {
    let leading = digits.iter().take_while(|&&d| d == 0).count();
    digits.drain(..leading);
    let exponent = digits.len() as i32 + scale;
    while digits.last() == Some(&0) {
        digits.pop();
    }
    if digits.is_empty() {
        return Exact::ZERO;
    }
    Exact {
        class: if negative {
            Class::Negative
        } else {
            Class::Positive
        },
        exponent,
        digits,
    }
}

/// Decimal digits of `n`, most significant first (empty for 0).
fn digits_of(mut n: u128) -> Vec<u8> {
    let mut digits = Vec::with_capacity(40);
    while n > 0 {
        digits.push((n % 10) as u8);
        n /= 10;
    }
    digits.reverse();
    digits
}

const LIMB: u64 = 1_000_000_000;

/// Decimal digits of `m · base^power` for base 2 or 5, in base-10^9 limbs
/// (little-endian) multiplied by the largest power of `base` below 2^32.
fn big_digits(m: u64, base: u64, power: u32) -> Vec<u8> {
    let step = if base == 2 { 31 } else { 13 };
    let mut limbs = vec![m % LIMB, m / LIMB];
    let mut remaining = power;
    while remaining > 0 {
        let k = remaining.min(step);
        multiply_limbs(&mut limbs, base.pow(k));
        remaining -= k;
    }
    let mut digits = Vec::with_capacity(limbs.len() * 9);
    for limb in limbs.iter().rev() {
        digits.extend((0..9).rev().map(|i| (limb / 10u64.pow(i) % 10) as u8));
    }
    digits
}

fn multiply_limbs(limbs: &mut Vec<u64>, factor: u64) {
    let mut carry = 0;
    for limb in limbs.iter_mut() {
        let product = *limb * factor + carry;
        *limb = product % LIMB;
        carry = product / LIMB;
    }
    while carry > 0 {
        limbs.push(carry % LIMB);
        carry /= LIMB;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn dec(s: &str) -> Decimal128 {
        s.parse().unwrap()
    }

    fn cmp(a: RawBson, b: RawBson) -> Ordering {
        compare(a.as_raw_bson_ref(), b.as_raw_bson_ref())
    }

    fn exact(text: &str) -> Exact {
        Exact::from_decimal128(dec(text))
    }

    #[test]
    fn int64_above_two_pow_53_beats_the_double_it_rounds_to() {
        let two_53 = 9_007_199_254_740_992i64;
        assert_eq!(
            cmp(RawBson::Int64(two_53 + 1), RawBson::Double(two_53 as f64)),
            Ordering::Greater
        );
        assert_eq!(
            cmp(RawBson::Double(two_53 as f64), RawBson::Int64(two_53 + 1)),
            Ordering::Less
        );
        assert_eq!(
            cmp(RawBson::Int64(two_53), RawBson::Double(two_53 as f64)),
            Ordering::Equal
        );
    }

    #[test]
    fn int64_extremes_compare_exactly_with_doubles() {
        assert_eq!(
            cmp(RawBson::Int64(i64::MAX), RawBson::Double(TWO_POW_63)),
            Ordering::Less
        );
        assert_eq!(
            cmp(RawBson::Int64(i64::MIN), RawBson::Double(-TWO_POW_63)),
            Ordering::Equal
        );
        assert_eq!(
            cmp(RawBson::Int64(-1), RawBson::Double(-0.5)),
            Ordering::Less
        );
        assert_eq!(
            cmp(RawBson::Int64(0), RawBson::Double(-0.5)),
            Ordering::Greater
        );
    }

    #[test]
    fn one_is_one_in_every_type() {
        let ones = [
            RawBson::Int32(1),
            RawBson::Int64(1),
            RawBson::Double(1.0),
            RawBson::Decimal128(dec("1")),
            RawBson::Decimal128(dec("1.000")),
            RawBson::Decimal128(dec("0.01E2")),
        ];
        for a in &ones {
            for b in &ones {
                assert_eq!(cmp(a.clone(), b.clone()), Ordering::Equal, "{a:?} vs {b:?}");
            }
        }
    }

    #[test]
    fn nan_sorts_below_negative_infinity_and_equals_every_nan() {
        let nans = [
            RawBson::Double(f64::NAN),
            RawBson::Double(-f64::NAN),
            RawBson::Decimal128(dec("NaN")),
        ];
        for a in &nans {
            for b in &nans {
                assert_eq!(cmp(a.clone(), b.clone()), Ordering::Equal);
            }
            for other in [
                RawBson::Double(f64::NEG_INFINITY),
                RawBson::Decimal128(dec("-Infinity")),
                RawBson::Int64(i64::MIN),
            ] {
                assert_eq!(cmp(a.clone(), other), Ordering::Less);
            }
        }
    }

    #[test]
    fn negative_zero_equals_zero() {
        assert_eq!(
            cmp(RawBson::Double(-0.0), RawBson::Int32(0)),
            Ordering::Equal
        );
        assert_eq!(
            cmp(RawBson::Decimal128(dec("-0E+10")), RawBson::Double(0.0)),
            Ordering::Equal
        );
    }

    #[test]
    fn decimal_tenth_is_below_the_double_nearest_a_tenth() {
        // 0.1 as a double is 0.1000000000000000055511151231257827021181583404541015625.
        assert_eq!(
            cmp(RawBson::Decimal128(dec("0.1")), RawBson::Double(0.1)),
            Ordering::Less
        );
        assert_eq!(
            cmp(
                RawBson::Decimal128(dec("0.1000000000000000055511151231257827")),
                RawBson::Double(0.1)
            ),
            Ordering::Less
        );
        assert_eq!(
            cmp(
                RawBson::Decimal128(dec("0.1000000000000000055511151231257828")),
                RawBson::Double(0.1)
            ),
            Ordering::Greater
        );
    }

    #[test]
    fn doubles_expand_to_their_exact_decimal_value() {
        assert!(Exact::from_f64(0.1) > exact("1000000000000000055511151231257827E-34"));
        assert_eq!(Exact::from_f64(0.5), exact("0.5"));
        assert_eq!(Exact::from_f64(-1e300).exponent(), 301);
        let smallest = Exact::from_f64(5e-324);
        assert_eq!(smallest.exponent(), -323);
        assert_eq!(smallest.digits().len(), 751);
        assert_eq!(&smallest.digits()[..6], &[4, 9, 4, 0, 6, 5]);
        assert_eq!(Exact::from_f64(TWO_POW_63), exact("9223372036854775808"));
    }

    #[test]
    fn decimal_edges_decode() {
        assert_eq!(exact("1E-6176").exponent(), -6175);
        assert_eq!(exact("1E+6144").exponent(), 6145);
        assert_eq!(
            exact("9.999999999999999999999999999999999E+6144")
                .digits()
                .len(),
            34
        );
        assert_eq!(exact("-Infinity"), Exact::NEGATIVE_INFINITY);
        assert_eq!(exact("Infinity"), Exact::POSITIVE_INFINITY);
        let mut negative_nan = dec("NaN").bytes();
        negative_nan[15] |= 0x80;
        assert_eq!(
            Exact::from_decimal128(Decimal128::from_bytes(negative_nan)),
            Exact::NAN
        );
        assert_eq!(exact("0E+6111"), Exact::ZERO);
    }

    #[test]
    fn non_canonical_decimal_coefficients_mean_zero() {
        // Coefficient 10^34 in the plain form, and the `11` combination form.
        let too_big = (6176u128 << 113) | 10u128.pow(34);
        let eleven_form = (0b11u128 << 125) | (6176u128 << 111) | 5;
        for bits in [too_big, eleven_form] {
            let d = Decimal128::from_bytes(bits.to_le_bytes());
            assert_eq!(Exact::from_decimal128(d), Exact::ZERO);
        }
    }

    #[test]
    fn canonical_type_prefers_int32_then_int64_then_double_then_decimal() {
        let canon = |v: RawBson| Exact::from_bson(v.as_raw_bson_ref()).unwrap().to_bson();
        assert_eq!(
            canon(RawBson::Decimal128(dec("5.00"))),
            Some(RawBson::Int32(5))
        );
        assert_eq!(canon(RawBson::Double(-0.0)), Some(RawBson::Int32(0)));
        assert_eq!(
            canon(RawBson::Double(3e9)),
            Some(RawBson::Int64(3_000_000_000))
        );
        assert_eq!(
            canon(RawBson::Decimal128(dec("0.5"))),
            Some(RawBson::Double(0.5))
        );
        assert_eq!(canon(RawBson::Double(1e300)), Some(RawBson::Double(1e300)));
        assert_eq!(
            canon(RawBson::Decimal128(dec("0.1"))),
            Some(RawBson::Decimal128(dec("1E-1")))
        );
        // Clamped: 10^6144 needs a padded coefficient to fit the exponent range.
        let big = canon(RawBson::Decimal128(dec("1E+6144"))).unwrap();
        assert_eq!(
            compare(
                big.as_raw_bson_ref(),
                RawBson::Decimal128(dec("1E+6144")).as_raw_bson_ref()
            ),
            Ordering::Equal
        );
    }

    #[test]
    fn finite_rejects_unnormalised_digits() {
        assert!(Exact::finite(false, 1, vec![]).is_none());
        assert!(Exact::finite(false, 1, vec![0, 1]).is_none());
        assert!(Exact::finite(false, 1, vec![1, 0]).is_none());
        assert!(Exact::finite(false, 1, vec![10]).is_none());
        assert!(Exact::finite(true, 1, vec![1, 2]).is_some());
    }

    /// Reads bson's own decimal128 text ("-1.05E+3", "NaN") as an Exact,
    /// an independent check of the bit-level decoding.
    fn exact_from_text(text: &str) -> Exact {
        match text.trim_start_matches('-') {
            "NaN" => return Exact::NAN,
            "Infinity" if text.starts_with('-') => return Exact::NEGATIVE_INFINITY,
            "Infinity" => return Exact::POSITIVE_INFINITY,
            _ => {}
        }
        let negative = text.starts_with('-');
        let body = text.trim_start_matches('-');
        let (mantissa, exp) = match body.split_once('E') {
            Some((m, e)) => (m, e.parse::<i32>().unwrap()),
            None => (body, 0),
        };
        let (whole, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
        let digits = whole
            .bytes()
            .chain(fraction.bytes())
            .map(|b| b - b'0')
            .collect();
        from_scaled(negative, digits, exp - fraction.len() as i32)
    }

    fn total_f64(x: f64, y: f64) -> Ordering {
        match (x.is_nan(), y.is_nan()) {
            (true, true) => Ordering::Equal,
            (true, false) => Ordering::Less,
            (false, true) => Ordering::Greater,
            _ => x.partial_cmp(&y).unwrap(),
        }
    }

    fn any_double() -> impl Strategy<Value = f64> {
        prop_oneof![
            any::<u64>().prop_map(f64::from_bits),
            any::<i64>().prop_map(|i| i as f64),
            (-4i32..4).prop_map(|i| f64::from(i) / 2.0),
        ]
    }

    proptest! {
        #[test]
        fn exact_order_of_doubles_matches_ieee(x in any_double(), y in any_double()) {
            prop_assert_eq!(Exact::from_f64(x).cmp(&Exact::from_f64(y)), total_f64(x, y));
        }

        #[test]
        fn exact_order_of_integers_matches_i64(x in any::<i64>(), y in any::<i64>()) {
            prop_assert_eq!(Exact::from_i64(x).cmp(&Exact::from_i64(y)), x.cmp(&y));
        }

        #[test]
        fn integer_double_fast_path_agrees_with_exact(i in any::<i64>(), f in any_double()) {
            prop_assert_eq!(
                compare(RawBsonRef::Int64(i), RawBsonRef::Double(f)),
                Exact::from_i64(i).cmp(&Exact::from_f64(f))
            );
            let near = i as f64;
            prop_assert_eq!(
                compare(RawBsonRef::Int64(i), RawBsonRef::Double(near)),
                Exact::from_i64(i).cmp(&Exact::from_f64(near))
            );
        }

        #[test]
        fn decimal_bits_decode_like_bson_prints_them(bytes in any::<[u8; 16]>()) {
            let d = Decimal128::from_bytes(bytes);
            prop_assert_eq!(Exact::from_decimal128(d), exact_from_text(&d.to_string()));
        }

        #[test]
        fn canonical_bson_keeps_the_exact_value(bytes in any::<[u8; 16]>(), f in any_double()) {
            for n in [Exact::from_decimal128(Decimal128::from_bytes(bytes)), Exact::from_f64(f)] {
                let back = n.to_bson().expect("every BSON number has a canonical type");
                prop_assert_eq!(Exact::from_bson(back.as_raw_bson_ref()), Some(n));
            }
        }
    }
}
