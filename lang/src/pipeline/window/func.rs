//! Window functions: parsing the function of one `$setWindowFields`
//! output (`{$sum: "$x", window: …}` minus the window), with mongod's
//! errors. The `$group` accumulators are window functions as they are
//! (parsed and run by `accumulator`, never copied here); the rest are the
//! functions only a window has: ranks, `$shift`, `$derivative`,
//! `$integral`, `$expMovingAvg`, covariance, `$locf`, `$linearFill`. What
//! each needs of the stage (a window, a `sortBy`) is said here and checked
//! by `spec`; evaluating them over a partition is `partition`'s.

use bson::{RawBson, RawBsonRef, RawDocumentBuf};

use super::super::accumulator::Acc;
use super::super::expr::{Env, Expr, TimeUnit, cstr};
use crate::encoding::display::type_name;
use crate::error::{Error, ErrorKind, Result, StageError};
use crate::query::value::number_as_f64;

/// One parsed window function.
#[derive(Debug, Clone)]
pub(crate) enum Func {
    /// A `$group` accumulator over the window.
    Acc(Acc),
    /// `$rank` (`dense` false) and `$denseRank`.
    Rank {
        dense: bool,
    },
    DocumentNumber,
    /// `$shift`: `output` of the document `by` places away, else `default`.
    Shift {
        output: Expr,
        by: i64,
        default: RawBson,
    },
    /// `$derivative` (`integral` false) and `$integral` of `input` over
    /// the `sortBy` value, per `unit` when it is a date.
    Calculus {
        input: Expr,
        unit: Option<TimeUnit>,
        integral: bool,
    },
    ExpMovingAvg {
        input: Expr,
        alpha: f64,
    },
    /// `$covariancePop` (`sample` false) and `$covarianceSamp`.
    Covariance {
        x: Expr,
        y: Expr,
        sample: bool,
    },
    Locf(Expr),
    LinearFill(Expr),
}

/// What a window function asks of the `window` field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Takes {
    /// Any window, the whole partition by default.
    Window,
    /// A window must be given (`$derivative`).
    Required,
    /// No window: the function looks at its own documents.
    Nothing,
}

/// What a window function asks of the stage's `sortBy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Sorted {
    Any,
    /// Some `sortBy`.
    Required,
    /// A `sortBy` of exactly one field (its values are measured).
    OneField,
}

/// The accumulators that are window functions as well.
const ACCUMULATORS: &[&str] = &[
    "$sum",
    "$avg",
    "$min",
    "$max",
    "$count",
    "$first",
    "$last",
    "$push",
    "$addToSet",
    "$stdDevPop",
    "$stdDevSamp",
    "$firstN",
    "$lastN",
    "$minN",
    "$maxN",
    "$top",
    "$bottom",
    "$topN",
    "$bottomN",
    "$percentile",
    "$median",
];

fn bad_argument(name: &str, message: impl std::fmt::Display) -> Error {
    Error::failed_to_parse(format!("{name} {message}"))
}

/// The fields of an argument document, each looked up once.
fn fields<'a>(
    name: &str,
    arg: RawBsonRef<'a>,
    allowed: &[&str],
) -> Result<Vec<(&'a str, RawBsonRef<'a>)>> {
    let RawBsonRef::Document(d) = arg else {
        return Err(bad_argument(
            name,
            format!("expects an object, but got a {}", type_name(&arg)),
        ));
    };
    let mut out = Vec::new();
    for el in d.iter() {
        let (k, v) = el?;
        if !allowed.contains(&k.as_str()) {
            return Err(bad_argument(
                name,
                format!("got an unexpected argument: {}", k.as_str()),
            ));
        }
        out.push((k.as_str(), v));
    }
    Ok(out)
}

fn get<'a>(fields: &[(&str, RawBsonRef<'a>)], key: &str) -> Option<RawBsonRef<'a>> {
    fields.iter().find(|(k, _)| *k == key).map(|(_, v)| *v)
}

/// A constant the expression `v` folds to (missing as None).
fn constant(v: RawBsonRef<'_>, env: &Env) -> Result<Option<Option<RawBson>>> {
    let e = Expr::parse_in(v, env)?;
    Ok(e.as_constant().map(|c| c.cloned()))
}

/// `unit` of `$derivative`/`$integral`: a week or shorter (mongod's
/// 5490710: longer units have no fixed length).
fn calculus_unit(name: &str, v: Option<RawBsonRef<'_>>) -> Result<Option<TimeUnit>> {
    let Some(v) = v else { return Ok(None) };
    let RawBsonRef::String(s) = v else {
        return Err(bad_argument(
            name,
            format!("'unit' must be a string, but got {}", type_name(&v)),
        ));
    };
    let unit = TimeUnit::parse(s)
        .ok_or_else(|| Error::bad_value(format!("unknown time unit value: {s}")))?;
    if unit.fixed_millis().is_none() {
        return Err(Error::new(
            ErrorKind::Stage(StageError::WindowUnitTooLong),
            format!("unit must be 'week' or smaller, got '{s}'"),
        ));
    }
    Ok(Some(unit))
}

impl Func {
    /// Parses window function `name` with argument `arg`.
    pub(crate) fn parse(name: &str, arg: RawBsonRef<'_>, env: &Env) -> Result<Func> {
        if ACCUMULATORS.contains(&name) {
            let mut spec = RawDocumentBuf::new();
            spec.append(cstr(name), RawBson::from(arg));
            return Ok(Func::Acc(Acc::parse_in(name, (&spec).into(), env)?));
        }
        Ok(match name {
            "$rank" | "$denseRank" | "$documentNumber" => {
                if !matches!(arg, RawBsonRef::Document(d) if d.is_empty()) {
                    return Err(Error::new(
                        ErrorKind::Stage(StageError::RankTakesNoArgument),
                        format!("Window function {name} takes no arguments, but found {{}}"),
                    ));
                }
                match name {
                    "$rank" => Func::Rank { dense: false },
                    "$denseRank" => Func::Rank { dense: true },
                    _ => Func::DocumentNumber,
                }
            }
            "$shift" => {
                let f = fields(name, arg, &["output", "by", "default"])?;
                let Some(output) = get(&f, "output") else {
                    return Err(bad_argument(name, "requires an 'output' expression"));
                };
                let by = get(&f, "by")
                    .and_then(number_as_f64)
                    .filter(|b| b.fract() == 0.0 && b.abs() < 9.0e15)
                    .ok_or_else(|| bad_argument(name, "requires 'by' as an integer value"))?;
                let default = match get(&f, "default") {
                    None => RawBson::Null,
                    Some(d) => match constant(d, env)? {
                        Some(v) => v.unwrap_or(RawBson::Null),
                        None => {
                            return Err(bad_argument(
                                name,
                                "requires 'default' expression to be constant",
                            ));
                        }
                    },
                };
                Func::Shift {
                    output: Expr::parse_in(output, env)?,
                    by: by as i64,
                    default,
                }
            }
            "$derivative" | "$integral" => {
                let f = fields(name, arg, &["input", "unit"])?;
                let Some(input) = get(&f, "input") else {
                    return Err(bad_argument(name, "requires an 'input' expression"));
                };
                Func::Calculus {
                    input: Expr::parse_in(input, env)?,
                    unit: calculus_unit(name, get(&f, "unit"))?,
                    integral: name == "$integral",
                }
            }
            "$expMovingAvg" => {
                let f = fields(name, arg, &["input", "N", "alpha"])?;
                let Some(input) = get(&f, "input") else {
                    return Err(bad_argument(
                        name,
                        "must have exactly one of 'N' or 'alpha'",
                    ));
                };
                let alpha = match (get(&f, "N"), get(&f, "alpha")) {
                    (Some(n), None) => {
                        let n = number_as_f64(n)
                            .filter(|n| n.fract() == 0.0 && *n > 0.0)
                            .ok_or_else(|| bad_argument(name, "'N' must be a positive integer"))?;
                        2.0 / (n + 1.0)
                    }
                    (None, Some(a)) => number_as_f64(a)
                        .filter(|a| *a > 0.0 && *a < 1.0)
                        .ok_or_else(|| {
                            bad_argument(name, "'alpha' must be a number between 0 and 1")
                        })?,
                    _ => {
                        return Err(bad_argument(
                            name,
                            "must have exactly one of 'N' or 'alpha'",
                        ));
                    }
                };
                Func::ExpMovingAvg {
                    input: Expr::parse_in(input, env)?,
                    alpha,
                }
            }
            "$covariancePop" | "$covarianceSamp" => {
                let pair = match arg {
                    RawBsonRef::Array(a) => {
                        let items: Vec<RawBsonRef<'_>> = a.into_iter().collect::<Result<_, _>>()?;
                        match items.as_slice() {
                            [x, y] => Some((Expr::parse_in(*x, env)?, Expr::parse_in(*y, env)?)),
                            _ => None,
                        }
                    }
                    _ => None,
                };
                let Some((x, y)) = pair else {
                    return Err(bad_argument(name, "requires an array of two expressions"));
                };
                Func::Covariance {
                    x,
                    y,
                    sample: name == "$covarianceSamp",
                }
            }
            "$locf" => Func::Locf(Expr::parse_in(arg, env)?),
            "$linearFill" => Func::LinearFill(Expr::parse_in(arg, env)?),
            other => {
                return Err(Error::failed_to_parse(format!(
                    "Unrecognized window function, {other}"
                )));
            }
        })
    }

    /// What the function asks of `window`.
    pub(crate) fn takes(&self) -> Takes {
        match self {
            Func::Acc(_) | Func::Covariance { .. } => Takes::Window,
            Func::Calculus { integral: true, .. } => Takes::Window,
            Func::Calculus { .. } => Takes::Required,
            _ => Takes::Nothing,
        }
    }

    /// What the function asks of `sortBy`.
    pub(crate) fn sorted(&self) -> Sorted {
        match self {
            Func::Acc(_) | Func::Covariance { .. } | Func::DocumentNumber | Func::Locf(_) => {
                Sorted::Any
            }
            Func::Shift { .. } | Func::ExpMovingAvg { .. } => Sorted::Required,
            Func::Rank { .. } | Func::Calculus { .. } | Func::LinearFill(_) => Sorted::OneField,
        }
    }
}
