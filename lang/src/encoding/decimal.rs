//! Decimal128 addition and multiplication for `$inc` and `$mul`, rounded
//! half-to-even to 34 significant digits as IEEE 754-2008 (and MongoDB)
//! round them.
//!
//! Only the arithmetic updates need: decode, encode, add, multiply, numeric
//! equality and the conversions from int/long/double. Ordering of decimals
//! belongs to `crate::encoding::numeric`.
//!
//! Layout (BID encoding, the one BSON uses), as a little-endian u128:
//!
//! ```text
//! bit 127      sign
//! bits 126-122 11111 = NaN, 11110 = infinity
//! bits 126-113 biased exponent (bias 6176) when bits 126-125 != 11
//! bits 112-0   coefficient (canonical values are < 10^34)
//! ```

use bson::Decimal128;

const MAX_COEFF: u128 = 9_999_999_999_999_999_999_999_999_999_999_999;
const EXP_MIN: i32 = -6176;
const EXP_MAX: i32 = 6111;
const BIAS: i32 = 6176;

/// A decoded decimal.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Dec {
    NaN,
    Inf { neg: bool },
    Finite { neg: bool, coeff: u128, exp: i32 },
}

pub(crate) fn decode(d: Decimal128) -> Dec {
    let bits = u128::from_le_bytes(d.bytes());
    let neg = bits >> 127 == 1;
    match (bits >> 122) & 0x1f {
        0x1f => Dec::NaN,
        0x1e => Dec::Inf { neg },
        _ if (bits >> 125) & 0b11 == 0b11 => Dec::Finite {
            // The large-coefficient form can only hold coefficients above
            // 10^34, which are non-canonical and read as zero.
            neg,
            coeff: 0,
            exp: ((bits >> 111) & 0x3fff) as i32 - BIAS,
        },
        _ => {
            let coeff = bits & ((1u128 << 113) - 1);
            Dec::Finite {
                neg,
                coeff: if coeff > MAX_COEFF { 0 } else { coeff },
                exp: ((bits >> 113) & 0x3fff) as i32 - BIAS,
            }
        }
    }
}

pub(crate) fn encode(d: Dec) -> Decimal128 {
    let bits = match d {
        Dec::NaN => 0x1fu128 << 122,
        Dec::Inf { neg } => (u128::from(neg) << 127) | (0x1eu128 << 122),
        Dec::Finite { neg, coeff, exp } => {
            (u128::from(neg) << 127) | (((exp + BIAS) as u128) << 113) | coeff
        }
    };
    Decimal128::from_bytes(bits.to_le_bytes())
}

pub(crate) fn from_i64(v: i64) -> Dec {
    Dec::Finite {
        neg: v < 0,
        coeff: u128::from(v.unsigned_abs()),
        exp: 0,
    }
}

/// A double as MongoDB converts it when it meets a decimal: rounded to 15
/// significant digits, keeping trailing zeros (0.1 becomes 0.100000000000000).
pub(crate) fn from_f64(x: f64) -> Dec {
    if x.is_nan() {
        return Dec::NaN;
    }
    if x.is_infinite() {
        return Dec::Inf { neg: x < 0.0 };
    }
    let neg = x.is_sign_negative();
    if x == 0.0 {
        return Dec::Finite {
            neg,
            coeff: 0,
            exp: 0,
        };
    }
    let sci = format!("{:.14e}", x.abs());
    let (mantissa, exp) = sci
        .split_once('e')
        .expect("scientific format has an exponent");
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    Dec::Finite {
        neg,
        coeff: digits.parse().expect("15 decimal digits fit in u128"),
        exp: exp.parse::<i32>().expect("exponent is an integer") - 14,
    }
}

pub(crate) fn add(a: Dec, b: Dec) -> Dec {
    match (a, b) {
        (Dec::NaN, _) | (_, Dec::NaN) => Dec::NaN,
        (Dec::Inf { neg: x }, Dec::Inf { neg: y }) if x != y => Dec::NaN,
        (Dec::Inf { .. }, _) => a,
        (_, Dec::Inf { .. }) => b,
        (
            Dec::Finite {
                neg: an,
                coeff: ac,
                exp: ae,
            },
            Dec::Finite {
                neg: bn,
                coeff: bc,
                exp: be,
            },
        ) => {
            if ae >= be {
                add_finite((an, ac, ae), (bn, bc, be))
            } else {
                add_finite((bn, bc, be), (an, ac, ae))
            }
        }
    }
}

/// Adds two finite decimals, `a` having the larger exponent.
fn add_finite(a: (bool, u128, i32), b: (bool, u128, i32)) -> Dec {
    let ((an, ac, ae), (bn, bc, be)) = (a, b);
    if ac == 0 && bc == 0 {
        // The exact result of a sum of zeros takes the smaller exponent and
        // is negative only when both are.
        return Dec::Finite {
            neg: an && bn,
            coeff: 0,
            exp: be,
        };
    }
    if ac == 0 {
        return Dec::Finite {
            neg: bn,
            coeff: bc,
            exp: be,
        };
    }
    // Line the operands up on b's exponent, but shift a by at most 40
    // digits (so it stays within 256 bits); what b loses below that point
    // can only matter as a sticky bit for rounding.
    let gap = (ae - be) as u32;
    let shift = gap.min(40);
    let rest = gap - shift;
    let a_wide = Wide::from(ac).mul_pow10(shift);
    let (b_wide, sticky) = match rest {
        0 => (Wide::from(bc), false),
        r if r > 38 => (Wide::ZERO, bc != 0),
        r => {
            let p = 10u128.pow(r);
            (Wide::from(bc / p), bc % p != 0)
        }
    };
    let exp = ae - shift as i32;
    if an == bn {
        return round(an, a_wide.add(b_wide), exp, sticky);
    }
    match a_wide.cmp(&b_wide) {
        std::cmp::Ordering::Equal if !sticky => Dec::Finite {
            neg: false,
            coeff: 0,
            exp: be,
        },
        std::cmp::Ordering::Greater | std::cmp::Ordering::Equal => {
            // a - (b + f) with 0 < f < 1 is (a - b - 1) + (1 - f).
            let diff = a_wide.sub(b_wide);
            let diff = if sticky {
                diff.sub(Wide::from(1))
            } else {
                diff
            };
            round(an, diff, exp, sticky)
        }
        std::cmp::Ordering::Less => round(bn, b_wide.sub(a_wide), exp, sticky),
    }
}

pub(crate) fn mul(a: Dec, b: Dec) -> Dec {
    match (a, b) {
        (Dec::NaN, _) | (_, Dec::NaN) => Dec::NaN,
        (Dec::Inf { neg: x }, other) | (other, Dec::Inf { neg: x }) => match other {
            Dec::Finite { coeff: 0, .. } => Dec::NaN,
            Dec::Finite { neg: y, .. } | Dec::Inf { neg: y } => Dec::Inf { neg: x != y },
            Dec::NaN => Dec::NaN,
        },
        (
            Dec::Finite {
                neg: an,
                coeff: ac,
                exp: ae,
            },
            Dec::Finite {
                neg: bn,
                coeff: bc,
                exp: be,
            },
        ) => round(an != bn, Wide::product(ac, bc), ae + be, false),
    }
}

/// Numeric equality: 1.0 equals 1.00, +0 equals -0, NaN equals nothing.
pub(crate) fn equal(a: Dec, b: Dec) -> bool {
    match (a, b) {
        (Dec::Inf { neg: x }, Dec::Inf { neg: y }) => x == y,
        (Dec::Finite { .. }, Dec::Finite { neg, coeff, exp }) => {
            matches!(
                add(
                    a,
                    Dec::Finite {
                        neg: !neg,
                        coeff,
                        exp
                    }
                ),
                Dec::Finite { coeff: 0, .. }
            )
        }
        _ => false,
    }
}

/// How a result is rounded to the digits it may keep.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Rounding {
    HalfEven,
    TowardZero,
    Floor,
    Ceiling,
}

pub(crate) fn is_zero(d: Dec) -> bool {
    matches!(d, Dec::Finite { coeff: 0, .. })
}

pub(crate) fn negate(d: Dec) -> Dec {
    match d {
        Dec::NaN => Dec::NaN,
        Dec::Inf { neg } => Dec::Inf { neg: !neg },
        Dec::Finite { neg, coeff, exp } => Dec::Finite {
            neg: !neg,
            coeff,
            exp,
        },
    }
}

pub(crate) fn sub(a: Dec, b: Dec) -> Dec {
    add(a, negate(b))
}

/// The number of decimal digits of `n` (1 for 0).
fn digit_count(mut n: u128) -> u32 {
    let mut d = 1;
    while n >= 10 {
        n /= 10;
        d += 1;
    }
    d
}

/// The quotient, rounded half-to-even to 34 digits; an exact quotient takes
/// the exponent closest to `exp(a) - exp(b)`, as IEEE 754 prefers. The
/// caller rules out division by zero.
pub(crate) fn div(a: Dec, b: Dec) -> Dec {
    match (a, b) {
        (Dec::NaN, _) | (_, Dec::NaN) => Dec::NaN,
        (Dec::Inf { .. }, Dec::Inf { .. }) => Dec::NaN,
        (Dec::Inf { neg: x }, Dec::Finite { neg: y, .. }) => Dec::Inf { neg: x != y },
        (Dec::Finite { neg: x, .. }, Dec::Inf { neg: y }) => Dec::Finite {
            neg: x != y,
            coeff: 0,
            exp: EXP_MIN,
        },
        (
            Dec::Finite {
                neg: an,
                coeff: ac,
                exp: ae,
            },
            Dec::Finite {
                neg: bn,
                coeff: bc,
                exp: be,
            },
        ) => {
            let neg = an != bn;
            let ideal = ae - be;
            if bc == 0 {
                return if ac == 0 { Dec::NaN } else { Dec::Inf { neg } };
            }
            if ac == 0 {
                return Dec::Finite {
                    neg,
                    coeff: 0,
                    exp: ideal.clamp(EXP_MIN, EXP_MAX),
                };
            }
            // Scale the dividend so the quotient has at least 35 digits:
            // enough to round to 34 with the remainder as sticky bit.
            let shift = (34 + digit_count(bc) + 1).saturating_sub(digit_count(ac));
            let num = Wide::from(ac).mul_pow10(shift);
            let (q, r) = num.div_wide(bc);
            let exp = ideal - shift as i32;
            let rounded = round(neg, q, exp, r != 0);
            // An exact quotient drops trailing zeros back toward the ideal
            // exponent.
            match rounded {
                Dec::Finite {
                    neg,
                    mut coeff,
                    mut exp,
                } if r == 0 && exact_after_round(q, coeff) => {
                    while exp < ideal && coeff != 0 && coeff % 10 == 0 {
                        coeff /= 10;
                        exp += 1;
                    }
                    Dec::Finite { neg, coeff, exp }
                }
                other => other,
            }
        }
    }
}

/// Whether rounding `q` to `kept` dropped only zero digits.
fn exact_after_round(q: Wide, kept: u128) -> bool {
    let mut w = q;
    let mut dropped_nonzero = false;
    while w.exceeds(MAX_COEFF) {
        let (next, digit) = w.div_small(10);
        dropped_nonzero |= digit != 0;
        w = next;
    }
    !dropped_nonzero && w.low() == kept
}

/// The remainder of `a / b` truncated toward zero (`fmod`): exact, with
/// the sign of `a`. The caller rules out a zero divisor.
pub(crate) fn rem(a: Dec, b: Dec) -> Dec {
    match (a, b) {
        (Dec::NaN, _) | (_, Dec::NaN) | (Dec::Inf { .. }, _) => Dec::NaN,
        (Dec::Finite { .. }, Dec::Inf { .. }) => a,
        (
            Dec::Finite {
                neg,
                coeff: ac,
                exp: ae,
            },
            Dec::Finite {
                coeff: bc, exp: be, ..
            },
        ) => {
            if bc == 0 {
                return Dec::NaN;
            }
            if ae >= be {
                // ac·10^(ae-be) mod bc, one digit at a time.
                let mut r = ac % bc;
                for _ in 0..(ae - be) {
                    r = Wide::from(r).mul_small(10).div_wide(bc).1;
                }
                Dec::Finite {
                    neg,
                    coeff: r,
                    exp: be,
                }
            } else {
                let gap = (be - ae) as u32;
                let divisor = if gap <= 38 {
                    bc.checked_mul(10u128.pow(gap))
                } else {
                    None
                };
                match divisor {
                    Some(d) => Dec::Finite {
                        neg,
                        coeff: ac % d,
                        exp: ae,
                    },
                    // The divisor is larger than the dividend.
                    None => a,
                }
            }
        }
    }
}

/// The value rounded to exponent `exp` (a multiple of 10^exp); `NaN` when
/// the result would need more than 34 digits.
pub(crate) fn quantize(d: Dec, exp: i32, mode: Rounding) -> Dec {
    let Dec::Finite {
        neg,
        coeff,
        exp: de,
    } = d
    else {
        return d;
    };
    if de >= exp {
        let gap = (de - exp) as u32;
        let scaled = Wide::from(coeff).mul_pow10(gap.min(40));
        if gap > 40 || (coeff != 0 && scaled.exceeds(MAX_COEFF)) {
            return if coeff == 0 {
                Dec::Finite { neg, coeff: 0, exp }
            } else {
                Dec::NaN
            };
        }
        return Dec::Finite {
            neg,
            coeff: scaled.low(),
            exp,
        };
    }
    let gap = (exp - de) as u32;
    let (q, rem_nonzero, half) = if gap > 38 {
        // Everything is dropped: the value is below one unit of 10^exp.
        (0u128, coeff != 0, std::cmp::Ordering::Less)
    } else {
        let p = 10u128.pow(gap);
        let (q, r) = (coeff / p, coeff % p);
        (q, r != 0, (r * 2).cmp(&p))
    };
    let up = match mode {
        Rounding::TowardZero => false,
        Rounding::Floor => neg && rem_nonzero,
        Rounding::Ceiling => !neg && rem_nonzero,
        Rounding::HalfEven => match half {
            std::cmp::Ordering::Greater => true,
            std::cmp::Ordering::Equal => q % 2 == 1,
            std::cmp::Ordering::Less => false,
        },
    };
    let q = if up { q + 1 } else { q };
    if q > MAX_COEFF {
        return Dec::NaN;
    }
    Dec::Finite { neg, coeff: q, exp }
}

/// The value as an integer, rounded with `mode`; `None` for NaN, infinity
/// or a value outside `i64`.
pub(crate) fn to_i64(d: Dec, mode: Rounding) -> Option<i64> {
    match quantize(d, 0, mode) {
        Dec::Finite { neg, coeff, exp: 0 } => {
            if neg {
                if coeff <= i64::MAX as u128 + 1 {
                    Some((coeff as i128).wrapping_neg() as i64)
                } else {
                    None
                }
            } else {
                i64::try_from(coeff).ok()
            }
        }
        _ => None,
    }
}

/// The value as the nearest double.
pub(crate) fn to_f64(d: Dec) -> f64 {
    encode(d).to_string().parse().unwrap_or(f64::NAN)
}

/// A double as a decimal with 34 significant digits (as close as a decimal
/// gets to the binary value), the conversion `$round` and `$trunc` use.
pub(crate) fn from_f64_34(x: f64) -> Dec {
    if !x.is_finite() || x == 0.0 {
        return from_f64(x);
    }
    let sci = format!("{:.33e}", x.abs());
    let (mantissa, exp) = sci
        .split_once('e')
        .expect("scientific format has an exponent");
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    Dec::Finite {
        neg: x < 0.0,
        coeff: digits.parse().expect("34 decimal digits fit in u128"),
        exp: exp.parse::<i32>().expect("exponent is an integer") - 33,
    }
}

/// Rounds `coeff × 10^exp` (plus a fraction of a unit when `sticky`) to 34
/// digits and the exponent range, half to even.
fn round(neg: bool, mut coeff: Wide, mut exp: i32, mut sticky: bool) -> Dec {
    let mut last = 0u64;
    while coeff.exceeds(MAX_COEFF) || exp < EXP_MIN {
        if coeff.is_zero() {
            // Every further digit dropped is a zero.
            sticky |= last != 0;
            last = 0;
            exp = EXP_MIN;
            break;
        }
        let (q, r) = coeff.div_small(10);
        sticky |= last != 0;
        last = r;
        coeff = q;
        exp += 1;
    }
    let mut c = coeff.low();
    if last > 5 || (last == 5 && (sticky || c % 2 == 1)) {
        c += 1;
        if c > MAX_COEFF {
            c /= 10;
            exp += 1;
        }
    }
    if exp > EXP_MAX {
        if c == 0 {
            exp = EXP_MAX;
        }
        while exp > EXP_MAX && c != 0 && c * 10 <= MAX_COEFF {
            c *= 10;
            exp -= 1;
        }
        if exp > EXP_MAX {
            return Dec::Inf { neg };
        }
    }
    Dec::Finite { neg, coeff: c, exp }
}

/// An unsigned 256-bit integer, just wide enough for a product of two
/// 34-digit coefficients or a coefficient shifted 40 digits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Wide {
    hi: u128,
    lo: u128,
}

impl From<u128> for Wide {
    fn from(lo: u128) -> Self {
        Wide { hi: 0, lo }
    }
}

impl Wide {
    const ZERO: Wide = Wide { hi: 0, lo: 0 };

    fn is_zero(self) -> bool {
        self == Wide::ZERO
    }

    fn exceeds(self, limit: u128) -> bool {
        self.hi != 0 || self.lo > limit
    }

    fn low(self) -> u128 {
        debug_assert_eq!(self.hi, 0);
        self.lo
    }

    fn add(self, o: Wide) -> Wide {
        let (lo, carry) = self.lo.overflowing_add(o.lo);
        Wide {
            hi: self.hi + o.hi + u128::from(carry),
            lo,
        }
    }

    fn sub(self, o: Wide) -> Wide {
        let (lo, borrow) = self.lo.overflowing_sub(o.lo);
        Wide {
            hi: self.hi - o.hi - u128::from(borrow),
            lo,
        }
    }

    fn limbs(self) -> [u64; 4] {
        [
            self.lo as u64,
            (self.lo >> 64) as u64,
            self.hi as u64,
            (self.hi >> 64) as u64,
        ]
    }

    fn from_limbs(l: [u64; 4]) -> Wide {
        Wide {
            lo: u128::from(l[0]) | (u128::from(l[1]) << 64),
            hi: u128::from(l[2]) | (u128::from(l[3]) << 64),
        }
    }

    fn mul_small(self, m: u64) -> Wide {
        let mut out = [0u64; 4];
        let mut carry = 0u128;
        for (i, limb) in self.limbs().into_iter().enumerate() {
            let t = u128::from(limb) * u128::from(m) + carry;
            out[i] = t as u64;
            carry = t >> 64;
        }
        Wide::from_limbs(out)
    }

    fn mul_pow10(self, n: u32) -> Wide {
        let mut w = self;
        let mut left = n;
        while left > 0 {
            let step = left.min(19);
            w = w.mul_small(10u64.pow(step));
            left -= step;
        }
        w
    }

    fn product(a: u128, b: u128) -> Wide {
        let (a_limbs, b_limbs) = ([a as u64, (a >> 64) as u64], [b as u64, (b >> 64) as u64]);
        let mut out = [0u64; 4];
        for (i, &x) in a_limbs.iter().enumerate() {
            let mut carry = 0u128;
            for (j, &y) in b_limbs.iter().enumerate() {
                let t = u128::from(x) * u128::from(y) + u128::from(out[i + j]) + carry;
                out[i + j] = t as u64;
                carry = t >> 64;
            }
            out[i + 2] = carry as u64;
        }
        Wide::from_limbs(out)
    }

    /// Division by a divisor below 2^127 (every coefficient is): the
    /// quotient and the remainder.
    fn div_wide(self, d: u128) -> (Wide, u128) {
        let mut q = Wide::ZERO;
        let mut r: u128 = 0;
        for i in (0..256).rev() {
            let bit = if i >= 128 {
                (self.hi >> (i - 128)) & 1
            } else {
                (self.lo >> i) & 1
            };
            r = (r << 1) | bit;
            if r >= d {
                r -= d;
                if i >= 128 {
                    q.hi |= 1 << (i - 128);
                } else {
                    q.lo |= 1 << i;
                }
            }
        }
        (q, r)
    }

    fn div_small(self, d: u64) -> (Wide, u64) {
        let mut out = [0u64; 4];
        let mut rem = 0u128;
        let limbs = self.limbs();
        for i in (0..4).rev() {
            let cur = (rem << 64) | u128::from(limbs[i]);
            out[i] = (cur / u128::from(d)) as u64;
            rem = cur % u128::from(d);
        }
        (Wide::from_limbs(out), rem as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(s: &str) -> Dec {
        decode(s.parse::<Decimal128>().unwrap())
    }

    fn s(x: Dec) -> String {
        encode(x).to_string()
    }

    #[test]
    fn decode_encode_round_trips() {
        for v in [
            "0",
            "-0",
            "1.5",
            "12345678901234567890123456789012.34",
            "1E+6111",
            "NaN",
        ] {
            let dec: Decimal128 = v.parse().unwrap();
            assert_eq!(encode(decode(dec)).bytes(), dec.bytes(), "{v}");
        }
    }

    #[test]
    fn addition_keeps_the_smaller_exponent() {
        assert_eq!(s(add(d("1.5"), d("2.25"))), "3.75");
        assert_eq!(s(add(d("1.0"), d("1"))), "2.0");
        assert_eq!(s(add(d("5"), d("-5"))), "0");
        assert_eq!(s(add(d("-1.5"), d("0.5"))), "-1.0");
    }

    #[test]
    fn addition_rounds_half_to_even_at_34_digits() {
        // 34 nines + 1 carries into 35 digits and rounds back.
        let nines = "9999999999999999999999999999999999";
        assert_eq!(
            s(add(d(nines), d("1"))),
            "1.000000000000000000000000000000000E+34"
        );
        // A tiny addend only rounds.
        assert_eq!(s(add(d(nines), d("1E-40"))), nines);
        assert_eq!(
            s(add(d("1234567890123456789012345678901234"), d("0.5"))),
            "1234567890123456789012345678901234"
        );
        assert_eq!(
            s(add(d("1234567890123456789012345678901233"), d("0.5"))),
            "1234567890123456789012345678901234"
        );
        assert_eq!(
            s(add(d("1234567890123456789012345678901234"), d("0.50001"))),
            "1234567890123456789012345678901235"
        );
        assert_eq!(
            s(add(d("1E+34"), d("-1"))),
            "9999999999999999999999999999999999"
        );
        // 10^40 - 10^-10 needs a borrow from the sticky fraction, then
        // rounds back up.
        assert_eq!(
            s(add(d("1E+40"), d("-1E-10"))),
            "1.000000000000000000000000000000000E+40"
        );
        assert_eq!(
            s(add(
                d("1.000000000000000000000000000000001E+40"),
                d("-6E+5")
            )),
            "1.000000000000000000000000000000001E+40"
        );
    }

    #[test]
    fn multiplication_rounds_wide_products() {
        assert_eq!(s(mul(d("1.5"), d("2"))), "3.0");
        assert_eq!(s(mul(d("-2.5"), from_i64(0))), "-0.0");
        let big = "9999999999999999999999999999999999";
        assert_eq!(
            s(mul(d(big), d(big))),
            "9.999999999999999999999999999999998E+67"
        );
        assert_eq!(s(mul(d("1E+6000"), d("1E+6000"))), "Infinity");
    }

    #[test]
    fn doubles_convert_to_fifteen_digits() {
        assert_eq!(s(from_f64(0.1)), "0.100000000000000");
        assert_eq!(s(from_f64(1.0)), "1.00000000000000");
        assert_eq!(s(from_f64(-2.5)), "-2.50000000000000");
        assert_eq!(s(from_f64(0.0)), "0");
    }

    #[test]
    fn division_keeps_the_ideal_exponent_when_exact() {
        assert_eq!(s(div(d("10"), d("2.5"))), "4");
        assert_eq!(s(div(from_f64(12.5), d("2.5"))), "5.000000000000");
        assert_eq!(s(div(d("12.5"), d("5"))), "2.5");
        assert_eq!(
            s(div(d("1"), d("3"))),
            "0.3333333333333333333333333333333333"
        );
        assert_eq!(
            s(div(d("2"), d("3"))),
            "0.6666666666666666666666666666666667"
        );
        assert_eq!(
            s(div(d("9223372036854775807"), d("1"))),
            "9223372036854775807"
        );
        assert_eq!(s(div(d("-1"), d("8"))), "-0.125");
    }

    #[test]
    fn remainder_has_the_dividend_sign() {
        assert_eq!(s(rem(d("10"), d("3"))), "1");
        assert_eq!(s(rem(d("-10"), d("3"))), "-1");
        assert_eq!(s(rem(d("5.5"), d("2"))), "1.5");
        assert_eq!(s(rem(d("1"), d("1E+50"))), "1");
        assert_eq!(s(rem(d("1E+5"), d("7"))), "5");
    }

    #[test]
    fn quantize_rounds_with_the_mode_asked() {
        assert_eq!(s(quantize(d("2.5"), 0, Rounding::HalfEven)), "2");
        assert_eq!(s(quantize(d("3.5"), 0, Rounding::HalfEven)), "4");
        assert_eq!(s(quantize(d("-2.7"), 0, Rounding::TowardZero)), "-2");
        assert_eq!(s(quantize(d("-2.1"), 0, Rounding::Floor)), "-3");
        assert_eq!(s(quantize(d("2.1"), 0, Rounding::Ceiling)), "3");
        assert_eq!(s(quantize(d("1.5"), -3, Rounding::HalfEven)), "1.500");
        assert_eq!(s(quantize(d("1234"), 2, Rounding::HalfEven)), "1.2E+3");
        assert_eq!(
            to_i64(d("-9223372036854775808"), Rounding::TowardZero),
            Some(i64::MIN)
        );
        assert_eq!(to_i64(d("9223372036854775808"), Rounding::TowardZero), None);
        assert_eq!(s(from_f64_34(2.675)), "2.674999999999999822364316059974954");
    }

    #[test]
    fn equality_is_numeric() {
        assert!(equal(d("1.0"), d("1.00")));
        assert!(equal(d("0"), d("-0")));
        assert!(!equal(d("1"), d("1.000000000000000000000000000000001")));
        assert!(!equal(d("NaN"), d("NaN")));
    }
}
