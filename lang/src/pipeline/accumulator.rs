//! `$group` accumulators: `$sum`, `$avg`, `$min`, `$max`, `$first`,
//! `$last`, `$push`, `$addToSet`, `$count`, `$stdDevPop`, `$stdDevSamp` and
//! `$mergeObjects`, parsed from a group field and kept as running state per
//! group; the ones that keep several values (`$firstN`, `$top`, …) are
//! parsed and run by `ranked`.
//!
//! `$sum` and `$avg` add with the same number type as `$inc`
//! (`encoding::arith`), so the two never disagree on a result's type or
//! value (Decimal128 included); only an int64 overflow differs, widening
//! to a double as MongoDB's `$sum` does instead of failing as `$inc` does.

use bson::{RawArrayBuf, RawBson, RawBsonRef, RawDocument};

use super::expr::percentile::{self, Percentiles, input_number};
use super::expr::{Env, Expr};
use super::ranked::{KeepN, TopN};
use crate::encoding::arith::Num;
use crate::encoding::cmp::Cmp;
use crate::encoding::decimal;
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
    /// `$stdDevPop` (`sample` false) and `$stdDevSamp`.
    StdDev {
        e: Expr,
        sample: bool,
    },
    MergeObjects(Expr),
    KeepN(Box<KeepN>),
    TopN(Box<TopN>),
    /// `$accumulator`: server-side JavaScript (`crate::js`).
    Script(Box<ScriptAcc>),
    /// `$percentile` and `$median` (`expr::percentile`).
    Percentile(Expr, Box<Percentiles>),
}

/// A parsed `$accumulator`.
#[derive(Debug, Clone)]
pub struct ScriptAcc {
    init: String,
    init_args: Vec<Expr>,
    accumulate: String,
    accumulate_args: Vec<Expr>,
    finalize: Option<String>,
}

impl ScriptAcc {
    fn parse(arg: RawBsonRef<'_>, env: &Env) -> Result<ScriptAcc> {
        if !env.javascript() {
            return Err(crate::js::disabled("$accumulator"));
        }
        let RawBsonRef::Document(d) = arg else {
            return Err(Error::failed_to_parse(
                "$accumulator expects an object as an argument",
            ));
        };
        let mut spec = ScriptAcc {
            init: String::new(),
            init_args: Vec::new(),
            accumulate: String::new(),
            accumulate_args: Vec::new(),
            finalize: None,
        };
        let (mut merge, mut lang) = (false, false);
        let code = |name: &str, v: RawBsonRef<'_>| match v {
            RawBsonRef::String(c) | RawBsonRef::JavaScriptCode(c) => Ok(c.to_owned()),
            _ => Err(Error::failed_to_parse(format!(
                "$accumulator '{name}' must be a string or a function"
            ))),
        };
        let exprs = |name: &str, v: RawBsonRef<'_>| match v {
            RawBsonRef::Array(items) => items
                .into_iter()
                .map(|item| Expr::parse_in(item.map_err(|e| Error::corrupt(e.to_string()))?, env))
                .collect::<Result<Vec<_>>>(),
            _ => Err(Error::failed_to_parse(format!(
                "$accumulator '{name}' must be an array"
            ))),
        };
        for item in d.iter() {
            let (k, v) = item?;
            match k.as_str() {
                "init" => spec.init = code("init", v)?,
                "initArgs" => spec.init_args = exprs("initArgs", v)?,
                "accumulate" => spec.accumulate = code("accumulate", v)?,
                "accumulateArgs" => spec.accumulate_args = exprs("accumulateArgs", v)?,
                // Groups are never merged here: each is accumulated whole.
                "merge" => merge = code("merge", v).is_ok(),
                "finalize" => spec.finalize = Some(code("finalize", v)?),
                "lang" => lang = matches!(v, RawBsonRef::String("js")),
                other => {
                    return Err(Error::failed_to_parse(format!(
                        "$accumulator got an unrecognized field: {other}"
                    )));
                }
            }
        }
        for (missing, name) in [
            (spec.init.is_empty(), "init"),
            (spec.accumulate.is_empty(), "accumulate"),
            (!merge, "merge"),
            (!lang, "lang"),
        ] {
            if missing {
                return Err(Error::failed_to_parse(format!(
                    "$accumulator missing required argument '{name}'"
                )));
            }
        }
        Ok(spec)
    }

    /// Adds one document to the group's state (made by `init` on the
    /// group's first document).
    fn add(&self, state: &mut Option<RawBson>, doc: &RawDocument) -> Result<()> {
        let eval_all = |exprs: &[Expr]| -> Result<Vec<RawBson>> {
            exprs
                .iter()
                .map(|e| Ok(e.eval(doc)?.unwrap_or(RawBson::Null)))
                .collect()
        };
        let current = match state.take() {
            Some(s) => s,
            None => crate::js::call(&self.init, &eval_all(&self.init_args)?)?,
        };
        let mut args = vec![current];
        args.extend(eval_all(&self.accumulate_args)?);
        *state = Some(crate::js::call(&self.accumulate, &args)?);
        Ok(())
    }

    /// The group's value: `finalize` of the state, or the state.
    fn result(&self, state: Option<RawBson>) -> Result<RawBson> {
        let state = match state {
            Some(s) => s,
            None => crate::js::call(&self.init, &[])?,
        };
        match &self.finalize {
            Some(f) => crate::js::call(f, &[state]),
            None => Ok(state),
        }
    }
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
            "$stdDevPop" => Acc::StdDev {
                e: e()?,
                sample: false,
            },
            "$stdDevSamp" => Acc::StdDev {
                e: e()?,
                sample: true,
            },
            "$mergeObjects" => Acc::MergeObjects(e()?),
            "$firstN" | "$lastN" | "$minN" | "$maxN" => {
                Acc::KeepN(Box::new(KeepN::parse(op.as_str(), arg, env)?))
            }
            "$top" | "$bottom" | "$topN" | "$bottomN" => {
                Acc::TopN(Box::new(TopN::parse(op.as_str(), arg, env)?))
            }
            "$accumulator" => Acc::Script(Box::new(ScriptAcc::parse(arg, env)?)),
            "$percentile" | "$median" => {
                let mut constant = |v: RawBsonRef<'_>| {
                    Ok(Expr::parse_in(v, env)?.as_constant().flatten().cloned())
                };
                let (input, spec) = percentile::parse_spec(op.as_str(), arg, &mut constant)?;
                Acc::Percentile(Expr::parse_in(input, env)?, Box::new(spec))
            }
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

impl Acc {
    /// The same accumulator ordering strings by `collation` (`$top`'s
    /// `sortBy`; the others compare through the group's comparator).
    pub(crate) fn collated(
        self,
        collation: Option<std::sync::Arc<crate::encoding::collation::Collation>>,
    ) -> Acc {
        match self {
            Acc::TopN(t) => Acc::TopN(Box::new(t.collated(collation))),
            other => other,
        }
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
    /// Count, mean and sum of squared deviations of the numbers seen
    /// (Welford's running form).
    Moments(u64, f64, f64),
    /// Fields merged so far, in first-seen order.
    Merged(Vec<(String, RawBson)>),
    /// Documents kept in `sortBy` order, with their outputs.
    Ranked(Vec<(bson::RawDocumentBuf, RawBson)>),
    /// An `$accumulator`'s state, once `init` made it.
    Script(Option<RawBson>),
    /// The numbers seen (`$percentile`, `$median`).
    Numbers(Vec<f64>),
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
            Acc::Push(_) | Acc::AddToSet(_) | Acc::KeepN(_) => AccState::List(Vec::new()),
            Acc::StdDev { .. } => AccState::Moments(0, 0.0, 0.0),
            Acc::MergeObjects(_) => AccState::Merged(Vec::new()),
            Acc::TopN(_) => AccState::Ranked(Vec::new()),
            Acc::Script(_) => AccState::Script(None),
            Acc::Percentile(..) => AccState::Numbers(Vec::new()),
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
            (AccState::Moments(count, mean, m2), Acc::StdDev { e, .. }) => {
                if let Some(x) = e.eval(doc)?.as_ref().and_then(number) {
                    let x = x.to_f64();
                    *count += 1;
                    let delta = x - *mean;
                    *mean += delta / *count as f64;
                    *m2 += delta * (x - *mean);
                }
            }
            (AccState::Merged(fields), Acc::MergeObjects(e)) => merge_into(fields, e.eval(doc)?)?,
            (AccState::List(kept), Acc::KeepN(k)) => k.add(kept, doc, cmp)?,
            (AccState::Ranked(ranked), Acc::TopN(t)) => t.add(ranked, doc)?,
            (AccState::Script(state), Acc::Script(s)) => s.add(state, doc)?,
            (AccState::Numbers(seen), Acc::Percentile(e, _)) => {
                let value = e.eval(doc)?;
                if let Some(x) = value
                    .as_ref()
                    .and_then(|v| input_number(v.as_raw_bson_ref()))
                {
                    seen.push(x);
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// The group's value for accumulator `acc`.
    pub fn result_of(self, acc: &Acc) -> Result<RawBson> {
        Ok(match (self, acc) {
            (AccState::Moments(count, _, m2), Acc::StdDev { sample, .. }) => {
                let n = if *sample {
                    count.saturating_sub(1)
                } else {
                    count
                };
                if n == 0 {
                    RawBson::Null
                } else {
                    RawBson::Double((m2 / n as f64).sqrt())
                }
            }
            (AccState::Ranked(ranked), Acc::TopN(t)) => t.result(ranked),
            (AccState::Script(state), Acc::Script(s)) => s.result(state)?,
            (AccState::Numbers(seen), Acc::Percentile(_, spec)) => spec.result(seen),
            (state, _) => state.result(),
        })
    }

    /// The group's value, for states that need no accumulator to say it.
    fn result(self) -> RawBson {
        match self {
            AccState::Sum(n) => n.to_bson(),
            AccState::Avg(_, 0) => RawBson::Null,
            // A decimal anywhere makes the mean a decimal, as in mongod.
            AccState::Avg(Num::Decimal(sum), count) => {
                let count = decimal::from_i64(count as i64);
                RawBson::Decimal128(decimal::encode(decimal::div(decimal::decode(sum), count)))
            }
            AccState::Avg(sum, count) => RawBson::Double(sum.to_f64() / count as f64),
            AccState::Pick(v) => v.unwrap_or(RawBson::Null),
            AccState::List(list) => {
                let mut a = RawArrayBuf::new();
                for v in list {
                    a.push(v);
                }
                RawBson::Array(a)
            }
            AccState::Merged(fields) => {
                let mut d = bson::RawDocumentBuf::new();
                for (k, v) in fields {
                    d.append(super::expr::cstr(&k), v);
                }
                RawBson::Document(d)
            }
            // Only reached through result_of, which handles both.
            AccState::Moments(..)
            | AccState::Ranked(_)
            | AccState::Script(_)
            | AccState::Numbers(_) => RawBson::Null,
        }
    }
}

/// `$mergeObjects`: a document's fields replace earlier values of the
/// same name (keeping their place); null and missing are skipped.
fn merge_into(fields: &mut Vec<(String, RawBson)>, value: Option<RawBson>) -> Result<()> {
    match value {
        None | Some(RawBson::Null) | Some(RawBson::Undefined) => Ok(()),
        Some(RawBson::Document(d)) => {
            for el in d.iter() {
                let (k, v) = el?;
                let v = RawBson::from(v);
                match fields.iter_mut().find(|(name, _)| name == k.as_str()) {
                    Some((_, old)) => *old = v,
                    None => fields.push((k.as_str().to_owned(), v)),
                }
            }
            Ok(())
        }
        Some(other) => Err(Error::new(
            ErrorKind::Expression(crate::error::ExprError::MergeObjectsType),
            format!(
                "$mergeObjects requires object inputs, but input is of type {}",
                crate::encoding::display::type_name(&other.as_raw_bson_ref())
            ),
        )),
    }
}
