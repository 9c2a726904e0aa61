//! `$group` accumulators: `$sum`, `$avg`, `$min`, `$max`, `$first`,
//! `$last`, `$push`, `$addToSet` and `$count`, parsed from a group field
//! and kept as running state per group.
//!
//! `$sum` and `$avg` add with the same number type as `$inc`
//! (`encoding::arith`), so the two never disagree on a result's type or
//! value (Decimal128 included); only an int64 overflow differs, widening
//! to a double as MongoDB's `$sum` does instead of failing as `$inc` does.

use bson::{RawArrayBuf, RawBson, RawBsonRef, RawDocument};

use super::expr::{Env, Expr};
use crate::encoding::arith::Num;
use crate::encoding::cmp::Cmp;
use crate::error::{Error, ErrorKind, Result};

/// One parsed accumulator.
#[derive(Debug, Clone)]
pub enum Acc {
    Sum(Expr),
    Avg(Expr),
    Min(Expr),
    Max(Expr),
    First(Expr),
    Last(Expr),
    Push(Expr),
    AddToSet(Expr),
}

impl Acc {
    /// Parses the accumulator of group field `name` (`$$NOW` taken now).
    pub fn parse(name: &str, spec: RawBsonRef<'_>) -> Result<Acc> {
        Acc::parse_in(name, spec, &Env::new(bson::DateTime::now()))
    }

    /// Parses the accumulator of group field `name` in a command's
    /// environment.
    pub fn parse_in(name: &str, spec: RawBsonRef<'_>, env: &Env) -> Result<Acc> {
        let RawBsonRef::Document(d) = spec else {
            return Err(Error::new(
                ErrorKind::GroupFieldNotAccumulator,
                format!("The field '{name}' must be an accumulator object"),
            ));
        };
        let mut it = d.iter();
        let (Some(Ok((op, arg))), None) = (it.next(), it.next()) else {
            return Err(Error::new(
                ErrorKind::GroupFieldNotOneAccumulator,
                format!("The field '{name}' must specify one accumulator"),
            ));
        };
        let e = || Expr::parse_in(arg, env);
        Ok(match op.as_str() {
            "$sum" => Acc::Sum(e()?),
            "$avg" => Acc::Avg(e()?),
            "$min" => Acc::Min(e()?),
            "$max" => Acc::Max(e()?),
            "$first" => Acc::First(e()?),
            "$last" => Acc::Last(e()?),
            "$push" => Acc::Push(e()?),
            "$addToSet" => Acc::AddToSet(e()?),
            "$count" => Acc::Sum(Expr::constant(RawBson::Int32(1))),
            other if other.starts_with('$') => {
                return Err(Error::not_implemented(&format!(
                    "the accumulator '{other}'"
                )));
            }
            other => {
                return Err(Error::new(
                    ErrorKind::UnknownGroupOperator,
                    format!("unknown group operator '{other}'"),
                ));
            }
        })
    }
}

/// The running state of one accumulator in one group.
#[derive(Debug, Clone)]
pub(crate) enum AccState {
    Sum(Num),
    /// Sum and count of the numbers seen.
    Avg(Num, u64),
    Pick(Option<RawBson>),
    List(Vec<RawBson>),
}

/// A value as a number, if it is one.
fn number(v: &RawBson) -> Option<Num> {
    Num::from_bson(v.as_raw_bson_ref())
}

impl AccState {
    pub fn new(acc: &Acc) -> Self {
        match acc {
            Acc::Sum(_) => AccState::Sum(Num::Int(0)),
            Acc::Avg(_) => AccState::Avg(Num::Int(0), 0),
            Acc::Min(_) | Acc::Max(_) | Acc::First(_) | Acc::Last(_) => AccState::Pick(None),
            Acc::Push(_) | Acc::AddToSet(_) => AccState::List(Vec::new()),
        }
    }

    /// Adds one document of the group; `first_seen` when it opened it.
    /// `$min`, `$max` and `$addToSet` compare strings with `cmp` (the
    /// pipeline's collation).
    pub fn add(
        &mut self,
        acc: &Acc,
        doc: &RawDocument,
        first_seen: bool,
        cmp: Cmp<'_>,
    ) -> Result<()> {
        match (self, acc) {
            (AccState::Sum(n), Acc::Sum(e)) => {
                if let Some(x) = e.eval(doc)?.as_ref().and_then(number) {
                    *n = n.sum(x);
                }
            }
            (AccState::Avg(sum, count), Acc::Avg(e)) => {
                if let Some(x) = e.eval(doc)?.as_ref().and_then(number) {
                    *sum = sum.sum(x);
                    *count += 1;
                }
            }
            (AccState::Pick(cur), Acc::Min(e) | Acc::Max(e)) => {
                let want_less = matches!(acc, Acc::Min(_));
                if let Some(v) = e
                    .eval(doc)?
                    .filter(|v| !matches!(v, RawBson::Null | RawBson::Undefined))
                {
                    let better = match cur {
                        None => true,
                        Some(c) => {
                            let ord = cmp.values(v.as_raw_bson_ref(), c.as_raw_bson_ref());
                            if want_less { ord.is_lt() } else { ord.is_gt() }
                        }
                    };
                    if better {
                        *cur = Some(v);
                    }
                }
            }
            (AccState::Pick(cur), Acc::First(e)) if first_seen => {
                *cur = Some(e.eval(doc)?.unwrap_or(RawBson::Null));
            }
            (AccState::Pick(cur), Acc::Last(e)) => {
                *cur = Some(e.eval(doc)?.unwrap_or(RawBson::Null))
            }
            (AccState::List(list), Acc::Push(e)) => {
                if let Some(v) = e.eval(doc)? {
                    list.push(v);
                }
            }
            (AccState::List(list), Acc::AddToSet(e)) => {
                if let Some(v) = e.eval(doc)?
                    && !list
                        .iter()
                        .any(|x| cmp.values(x.as_raw_bson_ref(), v.as_raw_bson_ref()).is_eq())
                {
                    list.push(v);
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// The group's value for this accumulator.
    pub fn result(self) -> RawBson {
        match self {
            AccState::Sum(n) => n.to_bson(),
            AccState::Avg(_, 0) => RawBson::Null,
            AccState::Avg(sum, count) => RawBson::Double(sum.to_f64() / count as f64),
            AccState::Pick(v) => v.unwrap_or(RawBson::Null),
            AccState::List(list) => {
                let mut a = RawArrayBuf::new();
                for v in list {
                    a.push(v);
                }
                RawBson::Array(a)
            }
        }
    }
}
