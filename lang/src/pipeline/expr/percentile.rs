//! `$percentile` and `$median`, as accumulators, window functions and
//! array expressions. mongod 7.0 takes one `method`, `"approximate"`; ebb
//! answers it exactly: among the numeric inputs in order (NaN and
//! non-numbers left out), the value at rank ⌈p·n⌉ (the first at least),
//! as a double, which is what mongod's estimate gives on the sizes its
//! tests check exactly. No number at all gives null.

use bson::{RawBson, RawBsonRef};

use super::tree::{Arity, op};
use super::value::{Cx, Val};
use crate::encoding::arith::Num;
use crate::encoding::display::type_name;
use crate::error::{Error, Result};

/// The percentiles asked for, checked: each in `[0, 1]`.
#[derive(Debug, Clone, PartialEq)]
pub struct Percentiles {
    p: Vec<f64>,
    /// `$median`: one value, not a list of one.
    median: bool,
}

/// What a value is as a constant expression, if it is one: the caller's
/// parser, with the command's variables.
pub type Constant<'c> = &'c mut dyn FnMut(RawBsonRef<'_>) -> Result<Option<RawBson>>;

/// `{input, p, method}` of `$percentile` or `{input, method}` of
/// `$median` (`name`): the raw input and the percentiles. `p` must be a
/// constant (a literal, a `let` variable, an expression of constants).
pub fn parse_spec<'a>(
    name: &str,
    arg: RawBsonRef<'a>,
    constant: Constant<'_>,
) -> Result<(RawBsonRef<'a>, Percentiles)> {
    let bad = |msg: String| Error::failed_to_parse(format!("{name} {msg}"));
    let RawBsonRef::Document(d) = arg else {
        return Err(bad(format!(
            "requires an object, found a {}",
            type_name(&arg)
        )));
    };
    let median = name == "$median";
    let (mut input, mut p, mut method) = (None, None, None);
    for el in d.iter() {
        let (k, v) = el?;
        match k.as_str() {
            "input" => input = Some(v),
            "p" if !median => p = Some(v),
            "method" => method = Some(v),
            other => return Err(bad(format!("found an unknown argument: {other}"))),
        }
    }
    let input = input.ok_or_else(|| bad("requires 'input' to be specified".into()))?;
    match method {
        Some(RawBsonRef::String("approximate")) => {}
        Some(RawBsonRef::String(m @ ("discrete" | "continuous"))) => {
            return Err(Error::not_implemented(&format!("{name} with method '{m}'")));
        }
        Some(RawBsonRef::String(m)) => {
            return Err(bad(format!("'method' must be 'approximate', found '{m}'")));
        }
        Some(other) => {
            return Err(bad(format!(
                "'method' must be a string, found a {}",
                type_name(&other)
            )));
        }
        None => return Err(bad("requires 'method' to be specified".into())),
    }
    let p = match (median, p) {
        (true, _) => vec![0.5],
        (false, None) => return Err(bad("requires 'p' to be specified".into())),
        (false, Some(p)) => constant_ps(name, p, constant)?,
    };
    Ok((input, Percentiles { p, median }))
}

/// `p`'s value, which must be known before any document: a non-empty
/// array of numbers in `[0, 1]`.
fn constant_ps(name: &str, p: RawBsonRef<'_>, constant: Constant<'_>) -> Result<Vec<f64>> {
    let bad = |msg: &str| Error::failed_to_parse(format!("{name} {msg}"));
    let Some(RawBson::Array(items)) = constant(p)? else {
        return Err(bad("'p' must be a constant array of numbers"));
    };
    let mut out = Vec::new();
    for item in &items {
        let item = item?;
        let x = Num::from_bson(item)
            .map(|n| n.to_f64())
            .filter(|x| (0.0..=1.0).contains(x))
            .ok_or_else(|| bad("'p' must hold numbers from 0 to 1"))?;
        out.push(x);
    }
    if out.is_empty() {
        return Err(bad("'p' cannot be an empty array"));
    }
    Ok(out)
}

/// A value as an input number: a number that is not NaN.
pub fn input_number(v: RawBsonRef<'_>) -> Option<f64> {
    Num::from_bson(v)
        .map(|n| n.to_f64())
        .filter(|x| !x.is_nan())
}

impl Percentiles {
    /// The result over `values` (consumed, sorted here).
    pub fn result(&self, mut values: Vec<f64>) -> RawBson {
        values.sort_by(f64::total_cmp);
        let at = |p: f64| match values.len() {
            0 => RawBson::Null,
            n => {
                let rank = ((p * n as f64).ceil() as usize).clamp(1, n);
                RawBson::Double(values[rank - 1])
            }
        };
        if self.median {
            return at(0.5);
        }
        let mut out = bson::RawArrayBuf::new();
        for p in &self.p {
            out.push(at(*p));
        }
        RawBson::Array(out)
    }

    /// The arguments of the array expression after its input.
    pub(super) fn as_args(&self) -> [RawBson; 2] {
        let mut ps = bson::RawArrayBuf::new();
        for p in &self.p {
            ps.push(*p);
        }
        [RawBson::Array(ps), RawBson::Boolean(self.median)]
    }
}

op!(PERCENTILE, "$percentile", Arity::Exactly(3), percentile);

/// The array expression: `[input, p, median]`, its input an array (its
/// numbers) or one value.
fn percentile<'a>(_: &Cx<'_>, args: Vec<Val<'a>>) -> Result<Val<'a>> {
    let p = args[1]
        .as_array()
        .map(|a| a.into_iter().flatten().filter_map(input_number).collect())
        .unwrap_or_default();
    let spec = Percentiles {
        p,
        median: args[2].truthy(),
    };
    let values: Vec<f64> = match args[0].as_array() {
        Some(items) => items
            .into_iter()
            .flatten()
            .filter_map(input_number)
            .collect(),
        None => args[0].get().and_then(input_number).into_iter().collect(),
    };
    Ok(Val::Own(spec.result(values)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranks_follow_mongods_examples() {
        let spec = |p: Vec<f64>| Percentiles { p, median: false };
        let doubles = |v: RawBson| match v {
            RawBson::Array(a) => a
                .into_iter()
                .map(|x| match x.unwrap() {
                    RawBsonRef::Double(d) => Some(d),
                    _ => None,
                })
                .collect::<Vec<_>>(),
            _ => panic!("{v:?}"),
        };
        assert_eq!(
            doubles(spec(vec![0.5, 0.9, 0.1]).result(vec![2.0, 0.0, 1.0])),
            [Some(1.0), Some(2.0), Some(0.0)]
        );
        assert_eq!(
            doubles(spec(vec![0.0, 1.0]).result(vec![10.0, 5.0, 27.0])),
            [Some(5.0), Some(27.0)]
        );
        assert_eq!(doubles(spec(vec![0.5]).result(vec![])), [None]);
        let median = Percentiles {
            p: vec![0.5],
            median: true,
        };
        assert_eq!(median.result(vec![2.0, 1.0]), RawBson::Double(1.0));
        assert_eq!(median.result(vec![]), RawBson::Null);
    }
}
