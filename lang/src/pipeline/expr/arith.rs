//! Arithmetic operators: `$add` (numbers and one date), `$subtract`
//! (numbers and dates), `$multiply`, `$divide`, `$mod`, `$abs`, `$ceil`,
//! `$floor`, `$round`, `$trunc`, `$sqrt`, `$pow`, `$exp`, `$ln`, `$log`,
//! `$log10`, and `$sum`/`$avg` as expressions.
//!
//! Result types follow MongoDB: the narrowest of int, long, double and
//! decimal that the operands call for, widening on overflow. Decimals use
//! `encoding::decimal`; the transcendental functions of a decimal are
//! refused rather than computed through a double.

use bson::{RawBson, RawBsonRef};

use super::tree::{Arity, OpDef, op};
use super::value::{Cx, Val, fail, integral};
use crate::encoding::arith::Num;
use crate::encoding::decimal::{self, Dec, Rounding};
use crate::error::{Error, ErrorKind, ExprError, Result};

op!(ADD, "$add", Arity::Any, add);
op!(SUBTRACT, "$subtract", Arity::Exactly(2), subtract);
op!(MULTIPLY, "$multiply", Arity::Any, multiply);
op!(DIVIDE, "$divide", Arity::Exactly(2), divide);
op!(MOD, "$mod", Arity::Exactly(2), modulo);
op!(ABS, "$abs", Arity::Exactly(1), abs);
op!(CEIL, "$ceil", Arity::Exactly(1), ceil);
op!(FLOOR, "$floor", Arity::Exactly(1), floor);
op!(ROUND, "$round", Arity::Between(1, 2), round);
op!(TRUNC, "$trunc", Arity::Between(1, 2), trunc);
op!(SQRT, "$sqrt", Arity::Exactly(1), sqrt);
op!(POW, "$pow", Arity::Exactly(2), pow);
op!(EXP, "$exp", Arity::Exactly(1), exp);
op!(LN, "$ln", Arity::Exactly(1), ln);
op!(LOG, "$log", Arity::Exactly(2), log);
op!(LOG10, "$log10", Arity::Exactly(1), log10);
op!(SUM, "$sum", Arity::Any, sum);
op!(AVG, "$avg", Arity::Any, avg);

pub(super) static OPS: &[&OpDef] = &[
    &ADD, &SUBTRACT, &MULTIPLY, &DIVIDE, &MOD, &ABS, &CEIL, &FLOOR, &ROUND, &TRUNC, &SQRT, &POW,
    &EXP, &LN, &LOG, &LOG10, &SUM, &AVG,
];

fn dec(d: Dec) -> Val<'static> {
    Val::Own(RawBson::Decimal128(decimal::encode(d)))
}

/// An i128 integer result: int when it fits and `narrow`, long when it
/// fits, else a double.
fn integer(n: i128, narrow: bool) -> Val<'static> {
    match (i32::try_from(n), i64::try_from(n)) {
        (Ok(i), _) if narrow => Val::int(i),
        (_, Ok(l)) => Val::long(l),
        _ => Val::double(n as f64),
    }
}

fn add<'a>(_: &Cx<'_>, args: Vec<Val<'a>>) -> Result<Val<'a>> {
    let mut ints: i128 = 0;
    let mut doubles = 0.0f64;
    let mut decimals: Option<Dec> = None;
    let (mut any_long, mut any_double) = (false, false);
    let mut date = false;
    for v in &args {
        match v.get() {
            Some(RawBsonRef::Int32(n)) => ints += i128::from(n),
            Some(RawBsonRef::Int64(n)) => {
                ints += i128::from(n);
                any_long = true;
            }
            Some(RawBsonRef::Double(x)) => {
                doubles += x;
                any_double = true;
            }
            Some(RawBsonRef::Decimal128(d)) => {
                let d = decimal::decode(d);
                decimals = Some(decimals.map_or(d, |t| decimal::add(t, d)));
            }
            Some(RawBsonRef::DateTime(t)) => {
                if date {
                    return Err(fail(
                        ExprError::AddTwoDates,
                        "only one date allowed in an $add expression",
                    ));
                }
                date = true;
                ints += i128::from(t.timestamp_millis());
            }
            _ if v.nullish() => return Ok(Val::null()),
            _ => {
                return Err(fail(
                    ExprError::AddType,
                    format!(
                        "$add only supports numeric or date types, not {}",
                        v.type_name()
                    ),
                ));
            }
        }
    }
    if date {
        let millis = match decimals {
            Some(d) => {
                let rest = decimal::from_f64(ints as f64 + doubles);
                decimal::to_i64(decimal::add(d, rest), Rounding::HalfEven)
            }
            None if any_double => {
                let total = ints as f64 + doubles;
                (total.is_finite() && total.abs() < 9.2e18).then_some(total as i64)
            }
            None => i64::try_from(ints).ok(),
        };
        return match millis {
            Some(m) => Ok(Val::date(m)),
            None => Err(Error::new(ErrorKind::Overflow, "date overflow in $add")),
        };
    }
    if let Some(d) = decimals {
        let rest = if any_double {
            decimal::from_f64(ints as f64 + doubles)
        } else {
            int_dec(ints)
        };
        return Ok(dec(decimal::add(d, rest)));
    }
    if any_double {
        return Ok(Val::double(ints as f64 + doubles));
    }
    Ok(integer(ints, !any_long))
}

/// An integer total as a decimal, exactly.
fn int_dec(n: i128) -> Dec {
    match i64::try_from(n) {
        Ok(l) => decimal::from_i64(l),
        Err(_) => decimal::add(
            decimal::mul(
                decimal::from_i64((n >> 32) as i64),
                decimal::from_i64(1 << 32),
            ),
            decimal::from_i64((n & 0xffff_ffff) as i64),
        ),
    }
}

/// The wider of two numeric types, as `$subtract` and `$multiply` choose.
fn widest(a: Num, b: Num) -> u8 {
    rank(a).max(rank(b))
}

fn rank(n: Num) -> u8 {
    match n {
        Num::Int(_) => 0,
        Num::Long(_) => 1,
        Num::Double(_) => 2,
        Num::Decimal(_) => 3,
    }
}

fn as_i64(n: Num) -> i64 {
    match n {
        Num::Int(x) => x.into(),
        Num::Long(x) => x,
        Num::Double(x) => x as i64,
        Num::Decimal(d) => decimal::to_i64(decimal::decode(d), Rounding::TowardZero).unwrap_or(0),
    }
}

fn as_f64(n: Num) -> f64 {
    n.to_f64()
}

fn subtract<'a>(_: &Cx<'_>, args: Vec<Val<'a>>) -> Result<Val<'a>> {
    let (lhs, rhs) = (&args[0], &args[1]);
    if let (Some(a), Some(b)) = (lhs.num(), rhs.num()) {
        return Ok(match widest(a, b) {
            3 => dec(decimal::sub(a.to_dec(), b.to_dec())),
            2 => Val::double(as_f64(a) - as_f64(b)),
            1 => match as_i64(a).checked_sub(as_i64(b)) {
                Some(r) => Val::long(r),
                None => Val::double(as_f64(a) - as_f64(b)),
            },
            _ => Val::int_or_long(as_i64(a) - as_i64(b)),
        });
    }
    if lhs.nullish() || rhs.nullish() {
        return Ok(Val::null());
    }
    if let Some(RawBsonRef::DateTime(l)) = lhs.get() {
        return match (rhs.get(), rhs.num()) {
            (Some(RawBsonRef::DateTime(r)), _) => Ok(Val::long(
                l.timestamp_millis().wrapping_sub(r.timestamp_millis()),
            )),
            (_, Some(n)) => Ok(Val::date(
                l.timestamp_millis().wrapping_sub(round_millis(n)),
            )),
            _ => Err(fail(
                ExprError::SubtractFromDate,
                format!("cant $subtract a {} from a Date", rhs.type_name()),
            )),
        };
    }
    Err(fail(
        ExprError::SubtractType,
        format!(
            "cant $subtract a {} from a {}",
            rhs.type_name(),
            lhs.type_name()
        ),
    ))
}

/// A number of milliseconds to move a date by.
fn round_millis(n: Num) -> i64 {
    match n {
        Num::Double(x) => x.round() as i64,
        Num::Decimal(d) => decimal::to_i64(decimal::decode(d), Rounding::HalfEven).unwrap_or(0),
        other => as_i64(other),
    }
}

fn multiply<'a>(_: &Cx<'_>, args: Vec<Val<'a>>) -> Result<Val<'a>> {
    let mut long_product: Option<i64> = Some(1);
    let mut double_product = 1.0f64;
    let mut decimal_product: Option<Dec> = None;
    let mut widest_rank = 0u8;
    for v in &args {
        let Some(n) = v.num() else {
            if v.nullish() {
                return Ok(Val::null());
            }
            return Err(fail(
                ExprError::MultiplyType,
                format!(
                    "$multiply only supports numeric types, not {}",
                    v.type_name()
                ),
            ));
        };
        let before = widest_rank;
        widest_rank = widest_rank.max(rank(n));
        if widest_rank == 3 {
            let so_far = match decimal_product {
                Some(d) => d,
                None if before == 2 => decimal::from_f64(double_product),
                None => decimal::from_i64(long_product.unwrap_or(0)),
            };
            decimal_product = Some(decimal::mul(so_far, n.to_dec()));
            continue;
        }
        let x = as_f64(n);
        double_product *= x;
        long_product = if x.is_finite() {
            long_product.and_then(|p| p.checked_mul(as_i64(n)))
        } else {
            None
        };
        if long_product.is_none() {
            widest_rank = widest_rank.max(2);
        }
    }
    Ok(match (widest_rank, decimal_product, long_product) {
        (3, Some(d), _) => dec(d),
        (2, _, _) | (_, _, None) => Val::double(double_product),
        (1, _, Some(p)) => Val::long(p),
        (_, _, Some(p)) => Val::int_or_long(p),
    })
}

fn divide<'a>(_: &Cx<'_>, args: Vec<Val<'a>>) -> Result<Val<'a>> {
    let (lhs, rhs) = (&args[0], &args[1]);
    if let (Some(a), Some(b)) = (lhs.num(), rhs.num()) {
        let zero = || fail(ExprError::DivideByZero, "can't $divide by zero");
        if matches!(a, Num::Decimal(_)) || matches!(b, Num::Decimal(_)) {
            let d = b.to_dec();
            if decimal::is_zero(d) {
                return Err(zero());
            }
            return Ok(dec(decimal::div(a.to_dec(), d)));
        }
        let denominator = as_f64(b);
        if denominator == 0.0 {
            return Err(zero());
        }
        return Ok(Val::double(as_f64(a) / denominator));
    }
    if lhs.nullish() || rhs.nullish() {
        return Ok(Val::null());
    }
    Err(fail(
        ExprError::DivideType,
        format!(
            "$divide only supports numeric types, not {} and {}",
            lhs.type_name(),
            rhs.type_name()
        ),
    ))
}

fn modulo<'a>(_: &Cx<'_>, args: Vec<Val<'a>>) -> Result<Val<'a>> {
    let (lhs, rhs) = (&args[0], &args[1]);
    if let (Some(a), Some(b)) = (lhs.num(), rhs.num()) {
        let zero = || fail(ExprError::ModByZero, "can't $mod by zero");
        if matches!(a, Num::Decimal(_)) || matches!(b, Num::Decimal(_)) {
            let d = b.to_dec();
            if decimal::is_zero(d) {
                return Err(zero());
            }
            return Ok(dec(decimal::rem(a.to_dec(), d)));
        }
        let right = as_f64(b);
        if right == 0.0 {
            return Err(zero());
        }
        let right_integral = integral(rhs).is_some();
        if matches!(a, Num::Double(_)) || (matches!(b, Num::Double(_)) && !right_integral) {
            return Ok(Val::double(as_f64(a) % right));
        }
        if matches!(a, Num::Long(_)) || matches!(b, Num::Long(_)) {
            return Ok(Val::long(as_i64(a).checked_rem(as_i64(b)).unwrap_or(0)));
        }
        let (l, r) = (as_i64(a) as i32, as_i64(b) as i32);
        return Ok(Val::int(l.checked_rem(r).unwrap_or(0)));
    }
    if lhs.nullish() || rhs.nullish() {
        return Ok(Val::null());
    }
    Err(fail(
        ExprError::ModType,
        format!(
            "$mod only supports numeric types, not {} and {}",
            lhs.type_name(),
            rhs.type_name()
        ),
    ))
}

/// The one numeric argument of a single-number operator; `None` when it is
/// nullish (the result is then null).
fn single(name: &str, args: &[Val<'_>]) -> Result<Option<Num>> {
    let v = &args[0];
    if v.nullish() {
        return Ok(None);
    }
    match v.num() {
        Some(n) => Ok(Some(n)),
        None => Err(fail(
            ExprError::NumericArgType,
            format!("{name} only supports numeric types, not {}", v.type_name()),
        )),
    }
}

fn abs<'a>(_: &Cx<'_>, args: Vec<Val<'a>>) -> Result<Val<'a>> {
    let Some(n) = single("$abs", &args)? else {
        return Ok(Val::null());
    };
    Ok(match n {
        Num::Int(x) => Val::int_or_long(i64::from(x).abs()),
        Num::Long(x) => match x.checked_abs() {
            Some(a) => Val::long(a),
            None => {
                return Err(fail(
                    ExprError::AbsOfLongMin,
                    "can't take $abs of long long min",
                ));
            }
        },
        Num::Double(x) => Val::double(x.abs()),
        Num::Decimal(d) => {
            let d = decimal::decode(d);
            dec(match d {
                Dec::Finite { coeff, exp, .. } => Dec::Finite {
                    neg: false,
                    coeff,
                    exp,
                },
                Dec::Inf { .. } => Dec::Inf { neg: false },
                Dec::NaN => Dec::NaN,
            })
        }
    })
}

fn ceil<'a>(_: &Cx<'_>, args: Vec<Val<'a>>) -> Result<Val<'a>> {
    integral_rounding("$ceil", args, f64::ceil, Rounding::Ceiling)
}

fn floor<'a>(_: &Cx<'_>, args: Vec<Val<'a>>) -> Result<Val<'a>> {
    integral_rounding("$floor", args, f64::floor, Rounding::Floor)
}

fn integral_rounding<'a>(
    name: &str,
    args: Vec<Val<'a>>,
    double_op: fn(f64) -> f64,
    mode: Rounding,
) -> Result<Val<'a>> {
    let Some(n) = single(name, &args)? else {
        return Ok(Val::null());
    };
    Ok(match n {
        Num::Double(x) => Val::double(double_op(x)),
        Num::Decimal(d) => dec(decimal::quantize(decimal::decode(d), 0, mode)),
        _ => args.into_iter().next().unwrap_or(Val::Missing),
    })
}

fn round<'a>(_: &Cx<'_>, args: Vec<Val<'a>>) -> Result<Val<'a>> {
    round_or_trunc("$round", args, Rounding::HalfEven)
}

fn trunc<'a>(_: &Cx<'_>, args: Vec<Val<'a>>) -> Result<Val<'a>> {
    round_or_trunc("$trunc", args, Rounding::TowardZero)
}

fn round_or_trunc<'a>(name: &str, args: Vec<Val<'a>>, mode: Rounding) -> Result<Val<'a>> {
    let v = &args[0];
    if v.nullish() {
        return Ok(Val::null());
    }
    let Some(n) = v.num() else {
        return Err(fail(
            ExprError::RoundType,
            format!("{name} only supports numeric types, not {}", v.type_name()),
        ));
    };
    let mut places = 0i64;
    if let Some(p) = args.get(1) {
        if p.nullish() {
            return Ok(Val::null());
        }
        let Some(x) = integral(p).filter(|_| p.is_number()) else {
            return Err(fail(
                ExprError::RoundPrecisionNotIntegral,
                format!("precision argument to  {name} must be a integral value"),
            ));
        };
        if !(-20..=100).contains(&x) {
            return Err(fail(
                ExprError::RoundPrecisionRange,
                format!("cannot apply {name} with precision value {x} value must be in [-20, 100]"),
            ));
        }
        places = x;
    }
    let exp = -(places as i32);
    Ok(match n {
        Num::Decimal(d) => {
            let d = decimal::decode(d);
            if matches!(d, Dec::Inf { .. }) {
                return Ok(args.into_iter().next().unwrap_or(Val::Missing));
            }
            dec(decimal::quantize(d, exp, mode))
        }
        Num::Double(x) => {
            if !x.is_finite() {
                return Ok(Val::double(x));
            }
            Val::double(decimal::to_f64(decimal::quantize(
                decimal::from_f64_34(x),
                exp,
                mode,
            )))
        }
        Num::Int(_) | Num::Long(_) => {
            if places >= 0 {
                return Ok(args.into_iter().next().unwrap_or(Val::Missing));
            }
            let x = as_i64(n);
            let out = decimal::to_i64(decimal::quantize(decimal::from_i64(x), exp, mode), mode);
            let Some(out) = out else {
                return Err(fail(
                    ExprError::RoundInvalidConversion,
                    format!(
                        "invalid conversion from Decimal128 result in {name} resulting from arguments: [{x}, {places}]"
                    ),
                ));
            };
            if matches!(n, Num::Long(_)) {
                Val::long(out)
            } else {
                Val::int_or_long(out)
            }
        }
    })
}

/// Refuses a transcendental function of a decimal: computing it through a
/// double would return digits MongoDB does not.
fn decimal_refused(name: &str) -> Error {
    Error::not_implemented(&format!("{name} of a Decimal128"))
}

fn sqrt<'a>(_: &Cx<'_>, args: Vec<Val<'a>>) -> Result<Val<'a>> {
    let Some(n) = single("$sqrt", &args)? else {
        return Ok(Val::null());
    };
    if matches!(n, Num::Decimal(_)) {
        return Err(decimal_refused("$sqrt"));
    }
    let x = as_f64(n);
    if x < 0.0 {
        return Err(fail(
            ExprError::SqrtNegative,
            "$sqrt's argument must be greater than or equal to 0",
        ));
    }
    Ok(Val::double(x.sqrt()))
}

fn exp<'a>(_: &Cx<'_>, args: Vec<Val<'a>>) -> Result<Val<'a>> {
    let Some(n) = single("$exp", &args)? else {
        return Ok(Val::null());
    };
    if matches!(n, Num::Decimal(_)) {
        return Err(decimal_refused("$exp"));
    }
    Ok(Val::double(as_f64(n).exp()))
}

fn ln<'a>(_: &Cx<'_>, args: Vec<Val<'a>>) -> Result<Val<'a>> {
    let Some(n) = single("$ln", &args)? else {
        return Ok(Val::null());
    };
    if matches!(n, Num::Decimal(_)) {
        return Err(decimal_refused("$ln"));
    }
    let x = as_f64(n);
    if !(x > 0.0 || x.is_nan()) {
        return Err(fail(
            ExprError::LnNotPositive,
            format!(
                "$ln's argument must be a positive number, but is {}",
                show_f64(x)
            ),
        ));
    }
    Ok(Val::double(x.ln()))
}

fn log10<'a>(_: &Cx<'_>, args: Vec<Val<'a>>) -> Result<Val<'a>> {
    let Some(n) = single("$log10", &args)? else {
        return Ok(Val::null());
    };
    if matches!(n, Num::Decimal(_)) {
        return Err(decimal_refused("$log10"));
    }
    let x = as_f64(n);
    if !(x > 0.0 || x.is_nan()) {
        return Err(fail(
            ExprError::Log10NotPositive,
            format!(
                "$log10's argument must be a positive number, but is {}",
                show_f64(x)
            ),
        ));
    }
    Ok(Val::double(x.log10()))
}

fn log<'a>(_: &Cx<'_>, args: Vec<Val<'a>>) -> Result<Val<'a>> {
    let (arg, base) = (&args[0], &args[1]);
    if arg.nullish() || base.nullish() {
        return Ok(Val::null());
    }
    let Some(a) = arg.num() else {
        return Err(fail(
            ExprError::LogArgType,
            format!("$log's argument must be numeric, not {}", arg.type_name()),
        ));
    };
    let Some(b) = base.num() else {
        return Err(fail(
            ExprError::LogBaseType,
            format!("$log's base must be numeric, not {}", base.type_name()),
        ));
    };
    if matches!(a, Num::Decimal(_)) || matches!(b, Num::Decimal(_)) {
        return Err(decimal_refused("$log"));
    }
    let (x, y) = (as_f64(a), as_f64(b));
    if !(x > 0.0 || x.is_nan()) {
        return Err(fail(
            ExprError::LogArgNotPositive,
            format!(
                "$log's argument must be a positive number, but is {}",
                show_f64(x)
            ),
        ));
    }
    if !((y > 0.0 && y != 1.0) || y.is_nan()) {
        return Err(fail(
            ExprError::LogBaseInvalid,
            format!(
                "$log's base must be a positive number not equal to 1, but is {}",
                show_f64(y)
            ),
        ));
    }
    Ok(Val::double(x.ln() / y.ln()))
}

fn pow<'a>(_: &Cx<'_>, args: Vec<Val<'a>>) -> Result<Val<'a>> {
    let (base, exponent) = (&args[0], &args[1]);
    if base.nullish() || exponent.nullish() {
        return Ok(Val::null());
    }
    let Some(b) = base.num() else {
        return Err(fail(
            ExprError::PowBaseType,
            format!("$pow's base must be numeric, not {}", base.type_name()),
        ));
    };
    let Some(e) = exponent.num() else {
        return Err(fail(
            ExprError::PowExponentType,
            format!(
                "$pow's exponent must be numeric, not {}",
                exponent.type_name()
            ),
        ));
    };
    if matches!(b, Num::Decimal(_)) || matches!(e, Num::Decimal(_)) {
        return Err(decimal_refused("$pow"));
    }
    let (bd, ed) = (as_f64(b), as_f64(e));
    if bd == 0.0 && ed < 0.0 {
        return Err(fail(
            ExprError::PowZeroNegative,
            "$pow cannot take a base of 0 and a negative exponent",
        ));
    }
    if matches!(b, Num::Double(_)) || matches!(e, Num::Double(_)) {
        return Ok(Val::double(bd.powf(ed)));
    }
    let long = matches!(b, Num::Long(_)) || matches!(e, Num::Long(_));
    let (bl, el) = (as_i64(b), as_i64(e));
    let exact = match bl {
        0 => Some(if el == 0 { 1 } else { 0 }),
        1 => Some(1),
        -1 => Some(if el % 2 == 0 { 1 } else { -1 }),
        _ if !(0..=63).contains(&el) => None,
        _ => bl.checked_pow(el as u32),
    };
    Ok(match exact {
        Some(r) if long => Val::long(r),
        Some(r) => Val::int_or_long(r),
        None => Val::double((bl as f64).powf(el as f64)),
    })
}

/// A double the way mongod prints one in these messages.
fn show_f64(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{}", x as i64)
    } else {
        format!("{x}")
    }
}

/// The numbers `$sum`/`$avg` add: the elements of a single array argument,
/// or the arguments themselves; anything else is skipped.
fn addends(args: Vec<Val<'_>>) -> Result<Vec<Num>> {
    let values = if args.len() == 1 && args[0].is_array() {
        args.into_iter()
            .next()
            .map(Val::into_items)
            .transpose()?
            .unwrap_or_default()
    } else {
        args
    };
    Ok(values.iter().filter_map(Val::num).collect())
}

fn sum<'a>(_: &Cx<'_>, args: Vec<Val<'a>>) -> Result<Val<'a>> {
    let total = addends(args)?
        .into_iter()
        .fold(Num::Int(0), |acc, n| acc.sum(n));
    Ok(Val::number(total))
}

fn avg<'a>(_: &Cx<'_>, args: Vec<Val<'a>>) -> Result<Val<'a>> {
    let nums = addends(args)?;
    if nums.is_empty() {
        return Ok(Val::null());
    }
    let count = nums.len();
    let total = nums.into_iter().fold(Num::Int(0), |acc, n| acc.sum(n));
    Ok(match total {
        Num::Decimal(d) => dec(decimal::div(
            decimal::decode(d),
            decimal::from_i64(count as i64),
        )),
        other => Val::double(other.to_f64() / count as f64),
    })
}
