//! Trigonometric operators: `$sin`, `$cos`, `$tan`, their inverses and
//! hyperbolic forms, `$atan2`, `$degreesToRadians` and `$radiansToDegrees`.
//!
//! As in mongod: a number in, a double out, null for null or missing, and
//! NaN through unchanged; an argument outside the function's domain fails
//! and names the domain. A Decimal128 argument is refused rather than
//! computed through a double, as `arith`'s transcendental functions are.

use super::tree::{Arity, OpDef, op};
use super::value::{Cx, Val, fail};
use crate::encoding::arith::Num;
use crate::error::{Error, ExprError, Result};

op!(SIN, "$sin", Arity::Exactly(1), sin);
op!(COS, "$cos", Arity::Exactly(1), cos);
op!(TAN, "$tan", Arity::Exactly(1), tan);
op!(ASIN, "$asin", Arity::Exactly(1), asin);
op!(ACOS, "$acos", Arity::Exactly(1), acos);
op!(ATAN, "$atan", Arity::Exactly(1), atan);
op!(SINH, "$sinh", Arity::Exactly(1), sinh);
op!(COSH, "$cosh", Arity::Exactly(1), cosh);
op!(TANH, "$tanh", Arity::Exactly(1), tanh);
op!(ASINH, "$asinh", Arity::Exactly(1), asinh);
op!(ACOSH, "$acosh", Arity::Exactly(1), acosh);
op!(ATANH, "$atanh", Arity::Exactly(1), atanh);
op!(ATAN2, "$atan2", Arity::Exactly(2), atan2);
op!(
    TO_RADIANS,
    "$degreesToRadians",
    Arity::Exactly(1),
    to_radians
);
op!(
    TO_DEGREES,
    "$radiansToDegrees",
    Arity::Exactly(1),
    to_degrees
);

pub(super) static OPS: &[&OpDef] = &[
    &SIN,
    &COS,
    &TAN,
    &ASIN,
    &ACOS,
    &ATAN,
    &SINH,
    &COSH,
    &TANH,
    &ASINH,
    &ACOSH,
    &ATANH,
    &ATAN2,
    &TO_RADIANS,
    &TO_DEGREES,
];

/// Where a function is defined (NaN is always let through).
#[derive(Clone, Copy)]
enum Domain {
    /// Every number.
    All,
    /// Every finite number: `(-inf,inf)`.
    Finite,
    /// `[-1,1]`.
    UnitInterval,
    /// `[1,inf]`.
    FromOne,
}

impl Domain {
    fn holds(self, x: f64) -> bool {
        x.is_nan()
            || match self {
                Domain::All => true,
                Domain::Finite => x.is_finite(),
                Domain::UnitInterval => (-1.0..=1.0).contains(&x),
                Domain::FromOne => x >= 1.0,
            }
    }

    fn shown(self) -> &'static str {
        match self {
            Domain::All => "(-inf,inf)",
            Domain::Finite => "(-inf,inf)",
            Domain::UnitInterval => "[-1,1]",
            Domain::FromOne => "[1,inf]",
        }
    }
}

/// The argument as a double: `None` for null or missing.
fn number(name: &str, v: &Val<'_>) -> Result<Option<(f64, Num)>> {
    if v.nullish() {
        return Ok(None);
    }
    match v.num() {
        Some(Num::Decimal(_)) => Err(Error::not_implemented(&format!("{name} of a Decimal128"))),
        Some(n) => Ok(Some((n.to_f64(), n))),
        None => Err(fail(
            ExprError::NumericArgType,
            format!("{name} only supports numeric types, not {}", v.type_name()),
        )),
    }
}

/// A number as mongod prints it in these errors.
fn shown(x: f64, n: Num) -> String {
    match n {
        Num::Int(i) => i.to_string(),
        Num::Long(l) => l.to_string(),
        _ if x == f64::INFINITY => "inf".to_owned(),
        _ if x == f64::NEG_INFINITY => "-inf".to_owned(),
        _ => x.to_string(),
    }
}

fn unary<'a>(name: &str, args: &[Val<'_>], domain: Domain, f: fn(f64) -> f64) -> Result<Val<'a>> {
    let Some((x, n)) = number(name, &args[0])? else {
        return Ok(Val::null());
    };
    if !domain.holds(x) {
        return Err(fail(
            ExprError::TrigOutOfDomain,
            format!(
                "cannot apply {name} to {}, value must be in {}",
                shown(x, n),
                domain.shown()
            ),
        ));
    }
    Ok(Val::double(f(x)))
}

macro_rules! unary_op {
    ($f:ident, $name:literal, $domain:expr, $apply:expr) => {
        fn $f<'a>(_: &Cx<'_>, args: Vec<Val<'a>>) -> Result<Val<'a>> {
            unary($name, &args, $domain, $apply)
        }
    };
}

unary_op!(sin, "$sin", Domain::Finite, f64::sin);
unary_op!(cos, "$cos", Domain::Finite, f64::cos);
unary_op!(tan, "$tan", Domain::Finite, f64::tan);
unary_op!(asin, "$asin", Domain::UnitInterval, f64::asin);
unary_op!(acos, "$acos", Domain::UnitInterval, f64::acos);
unary_op!(atan, "$atan", Domain::All, f64::atan);
unary_op!(sinh, "$sinh", Domain::All, f64::sinh);
unary_op!(cosh, "$cosh", Domain::All, f64::cosh);
unary_op!(tanh, "$tanh", Domain::All, f64::tanh);
unary_op!(asinh, "$asinh", Domain::All, f64::asinh);
unary_op!(acosh, "$acosh", Domain::FromOne, f64::acosh);
unary_op!(atanh, "$atanh", Domain::UnitInterval, f64::atanh);
unary_op!(
    to_radians,
    "$degreesToRadians",
    Domain::All,
    f64::to_radians
);
unary_op!(
    to_degrees,
    "$radiansToDegrees",
    Domain::All,
    f64::to_degrees
);

fn atan2<'a>(_: &Cx<'_>, args: Vec<Val<'a>>) -> Result<Val<'a>> {
    let (y, x) = (&args[0], &args[1]);
    if y.nullish() || x.nullish() {
        return Ok(Val::null());
    }
    let message = || {
        format!(
            "$atan2 only supports numeric types, not {} and {}",
            y.type_name(),
            x.type_name()
        )
    };
    if !y.is_number() {
        return Err(fail(ExprError::Atan2YType, message()));
    }
    if !x.is_number() {
        return Err(fail(ExprError::Atan2XType, message()));
    }
    let (Some((y, _)), Some((x, _))) = (number("$atan2", y)?, number("$atan2", x)?) else {
        return Ok(Val::null());
    };
    Ok(Val::double(y.atan2(x)))
}
