//! The array operators: `$push` (with `$each`, `$position`, `$sort`,
//! `$slice`), `$addToSet`, `$pull`, `$pullAll` and `$pop`.
//!
//! Each works on the one array the tree walk hands it and never looks
//! elsewhere in the document. Element equality is always
//! `crate::encoding::cmp::compare_values` (so 1 and 1.0 are the same element, as in
//! MongoDB).

use std::cmp::Ordering;

use bson::RawBsonRef;
use bson::raw::RawBson;
use bson::spec::ElementType;

use super::env::{Env, Outcome, Site};
use super::pull::Condition;
use super::render;
use super::tree::Value;
use crate::encoding::cmp::{Cmp, compare_values};
use crate::{Error, Result};

/// A parsed `$push` argument.
#[derive(Debug, Clone)]
pub(crate) struct Push {
    values: Vec<RawBson>,
    position: i64,
    slice: i64,
    sort: Option<Sort>,
}

/// A `$push` `$sort` clause.
#[derive(Debug, Clone)]
enum Sort {
    /// Sort the elements themselves: true for ascending.
    Whole(bool),
    /// Sort documents by fields: dotted path components and ascending.
    Pattern(Vec<(Vec<String>, bool)>),
}

const PUSH_CLAUSES: [&str; 4] = ["$each", "$slice", "$sort", "$position"];

impl Push {
    pub(crate) fn parse(arg: RawBsonRef<'_>) -> Result<Push> {
        let mut push = Push {
            values: vec![RawBson::from(arg)],
            position: i64::MAX,
            slice: i64::MAX,
            sort: None,
        };
        let RawBsonRef::Document(clauses) = arg else {
            return Ok(push);
        };
        if clauses.get("$each")?.is_none() {
            return Ok(push);
        }
        let mut seen = Vec::new();
        for item in clauses.iter() {
            let (name, v) = item?;
            let name = name.as_str();
            if !PUSH_CLAUSES.contains(&name) {
                return Err(Error::bad_value(format!(
                    "Unrecognized clause in $push: {name}"
                )));
            }
            if seen.contains(&name) {
                return Err(Error::bad_value(format!("Only one {name} is supported.")));
            }
            seen.push(name);
            match name {
                "$each" => {
                    let RawBsonRef::Array(each) = v else {
                        return Err(Error::bad_value(format!(
                            "The argument to $each in $push must be an array but it was of type: {}",
                            render::type_name(v.element_type())
                        )));
                    };
                    push.values = each
                        .into_iter()
                        .map(|e| e.map(RawBson::from))
                        .collect::<std::result::Result<_, _>>()?;
                }
                "$slice" => {
                    push.slice = integer(v).ok_or_else(|| {
                        Error::bad_value(format!(
                            "The value for $slice must be an integer value but was given type: {}",
                            render::type_name(v.element_type())
                        ))
                    })?;
                }
                "$position" => {
                    push.position = integer(v).ok_or_else(|| {
                        Error::bad_value(format!(
                            "The value for $position must be an integer value, not of type: {}",
                            render::type_name(v.element_type())
                        ))
                    })?;
                }
                _ => push.sort = Some(Sort::parse(v)?),
            }
        }
        Ok(push)
    }

    pub(crate) fn existing<'a>(
        &'a self,
        target: &mut Value<'a>,
        site: &Site<'_>,
        env: &Env<'a>,
    ) -> Result<Outcome> {
        if target.element_type() != ElementType::Array {
            return Err(Error::bad_value(format!(
                "The field '{}' must be an array but is of type {} in document {}",
                site.path.dotted(),
                target.type_name(),
                env.id_in_braces()
            )));
        }
        target.expand()?;
        let Value::Arr(items) = target else {
            unreachable!("an expanded array is Arr")
        };
        Ok(self.push_into(items, env.cmp()))
    }

    pub(crate) fn create<'a>(&'a self, env: &Env<'a>) -> Value<'a> {
        let mut items = Vec::new();
        self.push_into(&mut items, env.cmp());
        Value::Arr(items)
    }

    fn push_into<'a>(&'a self, items: &mut Vec<Value<'a>>, cmp: Cmp<'_>) -> Outcome {
        let mut changed = !self.values.is_empty();
        let len = items.len() as i64;
        let at = match self.position {
            p if p >= len => len,
            p if p >= 0 => p,
            p if -p < len => len + p,
            _ => 0,
        } as usize;
        items.splice(
            at..at,
            self.values.iter().map(|v| Value::Raw(v.as_raw_bson_ref())),
        );
        if let Some(sort) = &self.sort {
            sort.apply(items, cmp);
            changed = true;
        }
        let keep = usize::try_from(self.slice.unsigned_abs()).unwrap_or(usize::MAX);
        if items.len() > keep {
            let excess = items.len() - keep;
            if self.slice >= 0 {
                items.truncate(keep);
            } else {
                items.drain(..excess);
            }
            changed = true;
        }
        if changed {
            Outcome::Changed
        } else {
            Outcome::Unchanged
        }
    }
}

impl Sort {
    fn parse(v: RawBsonRef<'_>) -> Result<Sort> {
        const BAD_DIRECTION: &str = "The $sort element value must be either 1 or -1";
        match v {
            RawBsonRef::Document(pattern) => {
                let mut fields = Vec::new();
                for item in pattern.iter() {
                    let (field, dir) = item?;
                    let ascending =
                        direction(dir).ok_or_else(|| Error::bad_value(BAD_DIRECTION))?;
                    let field = field.as_str();
                    if field.is_empty() {
                        return Err(Error::bad_value("The $sort field cannot be empty"));
                    }
                    if field.split('.').any(str::is_empty) {
                        return Err(Error::bad_value(format!(
                            "The $sort field is a dotted field but has an empty part: {field}"
                        )));
                    }
                    fields.push((field.split('.').map(str::to_owned).collect(), ascending));
                }
                if fields.is_empty() {
                    return Err(Error::bad_value(
                        "The $sort pattern is empty when it should be a set of fields.",
                    ));
                }
                Ok(Sort::Pattern(fields))
            }
            _ if is_number(v) => direction(v)
                .map(Sort::Whole)
                .ok_or_else(|| Error::bad_value(BAD_DIRECTION)),
            _ => Err(Error::bad_value(
                "The $sort is invalid: use 1/-1 to sort the whole element, or {field:1/-1} to \
                 sort embedded fields",
            )),
        }
    }

    fn apply(&self, items: &mut [Value<'_>], cmp: Cmp<'_>) {
        match self {
            Sort::Whole(ascending) => items.sort_by(|a, b| {
                let ord = a.with_ref(|x| b.with_ref(|y| cmp.values(x, y)));
                if *ascending { ord } else { ord.reverse() }
            }),
            Sort::Pattern(fields) => {
                // Non-documents, and documents missing a field, sort as null.
                let key = |v: &Value<'_>| -> Vec<RawBson> {
                    v.with_ref(|r| {
                        fields
                            .iter()
                            .map(|(path, _)| lookup(r, path).map_or(RawBson::Null, RawBson::from))
                            .collect()
                    })
                };
                let mut keyed: Vec<(Vec<RawBson>, Value<'_>)> =
                    items.iter().map(|v| (key(v), v.clone())).collect();
                keyed.sort_by(|(ka, _), (kb, _)| {
                    for ((a, b), (_, ascending)) in ka.iter().zip(kb).zip(fields) {
                        let ord = cmp.values(a.as_raw_bson_ref(), b.as_raw_bson_ref());
                        if ord != Ordering::Equal {
                            return if *ascending { ord } else { ord.reverse() };
                        }
                    }
                    Ordering::Equal
                });
                for (slot, (_, v)) in items.iter_mut().zip(keyed) {
                    *slot = v;
                }
            }
        }
    }
}

/// Follows a dotted path through documents (and numeric indexes into arrays).
fn lookup<'v>(v: RawBsonRef<'v>, path: &[String]) -> Option<RawBsonRef<'v>> {
    path.iter().try_fold(v, |cur, part| match cur {
        RawBsonRef::Document(d) => d.get(part).ok().flatten(),
        RawBsonRef::Array(a) => a.get(part.parse().ok()?).ok().flatten(),
        _ => None,
    })
}

/// 1 or -1 as a sort direction: true for ascending.
fn direction(v: RawBsonRef<'_>) -> Option<bool> {
    let x = match v {
        RawBsonRef::Int32(x) => f64::from(x),
        RawBsonRef::Int64(x) => x as f64,
        RawBsonRef::Double(x) => x,
        RawBsonRef::Decimal128(d) => d.to_string().parse().ok()?,
        _ => return None,
    };
    if x == 1.0 {
        Some(true)
    } else if x == -1.0 {
        Some(false)
    } else {
        None
    }
}

/// A number that is a whole int64, as MongoDB reads `$slice`, `$position`
/// and `$pop` arguments.
fn integer(v: RawBsonRef<'_>) -> Option<i64> {
    integer_or_reason(v).ok()
}

/// Why `v` is not a whole int64, in MongoDB's words (without the element).
fn integer_or_reason(v: RawBsonRef<'_>) -> std::result::Result<i64, &'static str> {
    let as_double = match v {
        RawBsonRef::Int32(x) => return Ok(x.into()),
        RawBsonRef::Int64(x) => return Ok(x),
        RawBsonRef::Double(x) => x,
        RawBsonRef::Decimal128(d) => d.to_string().parse::<f64>().unwrap_or(f64::NAN),
        _ => return Err("Expected a number in: "),
    };
    if as_double.is_nan() {
        return Err("Expected an integer, but found NaN in: ");
    }
    // 2^63 as a double is the first value past i64::MAX.
    if !(-9_223_372_036_854_775_808.0..9_223_372_036_854_775_808.0).contains(&as_double) {
        return Err("Cannot represent as a 64-bit integer: ");
    }
    if as_double.fract() != 0.0 {
        return Err("Expected an integer: ");
    }
    Ok(as_double as i64)
}

fn is_number(v: RawBsonRef<'_>) -> bool {
    matches!(
        v,
        RawBsonRef::Int32(_)
            | RawBsonRef::Int64(_)
            | RawBsonRef::Double(_)
            | RawBsonRef::Decimal128(_)
    )
}

/// Opens an existing array for editing, or fails with `message`.
fn array_items<'t, 'a>(
    target: &'t mut Value<'a>,
    message: impl FnOnce(&Value<'a>) -> Error,
) -> Result<&'t mut Vec<Value<'a>>> {
    if target.element_type() != ElementType::Array {
        return Err(message(target));
    }
    target.expand()?;
    match target {
        Value::Arr(items) => Ok(items),
        _ => unreachable!("an expanded array is Arr"),
    }
}

fn contains(items: &[Value<'_>], v: RawBsonRef<'_>, cmp: Cmp<'_>) -> bool {
    items
        .iter()
        .any(|item| item.with_ref(|x| cmp.values(x, v)) == Ordering::Equal)
}

/// A parsed `$addToSet` argument, duplicates already removed.
#[derive(Debug, Clone)]
pub(crate) struct AddToSet {
    values: Vec<RawBson>,
}

impl AddToSet {
    pub(crate) fn parse(arg: RawBsonRef<'_>) -> Result<AddToSet> {
        let mut candidates = vec![arg];
        if let RawBsonRef::Document(d) = arg
            && let Some(first) = d.iter().next()
            && first.as_ref().is_ok_and(|(k, _)| k.as_str() == "$each")
        {
            let (_, each) = first?;
            let RawBsonRef::Array(each) = each else {
                return Err(Error::type_mismatch(format!(
                    "The argument to $each in $addToSet must be an array but it was of type {}",
                    render::type_name(each.element_type())
                )));
            };
            if d.iter().count() > 1 {
                return Err(Error::bad_value(format!(
                    "Found unexpected fields after $each in $addToSet: {}",
                    render::value(arg)
                )));
            }
            candidates = each.into_iter().collect::<std::result::Result<_, _>>()?;
        }
        let mut values: Vec<RawBson> = Vec::new();
        for c in candidates {
            if !values
                .iter()
                .any(|v| compare_values(v.as_raw_bson_ref(), c) == Ordering::Equal)
            {
                values.push(RawBson::from(c));
            }
        }
        Ok(AddToSet { values })
    }

    pub(crate) fn existing<'a>(
        &'a self,
        target: &mut Value<'a>,
        site: &Site<'_>,
        cmp: Cmp<'_>,
    ) -> Result<Outcome> {
        let items = array_items(target, |t| {
            Error::bad_value(format!(
                "Cannot apply $addToSet to non-array field. Field named '{}' has non-array type {}",
                site.name(),
                t.type_name()
            ))
        })?;
        let mut outcome = Outcome::Unchanged;
        for v in &self.values {
            let v = v.as_raw_bson_ref();
            if !contains(items, v, cmp) {
                items.push(Value::Raw(v));
                outcome = Outcome::Changed;
            }
        }
        Ok(outcome)
    }

    pub(crate) fn create(&self) -> Value<'_> {
        Value::Arr(
            self.values
                .iter()
                .map(|v| Value::Raw(v.as_raw_bson_ref()))
                .collect(),
        )
    }
}

const PULL_NON_ARRAY: &str = "Cannot apply $pull to a non-array value";

/// Removes the elements `doomed` picks; Changed when any went.
fn cull<'a>(target: &mut Value<'a>, doomed: impl Fn(RawBsonRef<'_>) -> bool) -> Result<Outcome> {
    let items = array_items(target, |_| Error::bad_value(PULL_NON_ARRAY))?;
    let before = items.len();
    items.retain(|item| !item.with_ref(&doomed));
    Ok(if items.len() == before {
        Outcome::Unchanged
    } else {
        Outcome::Changed
    })
}

/// A parsed `$pull` argument.
#[derive(Debug, Clone)]
pub(crate) struct Pull {
    condition: Condition,
}

impl Pull {
    pub(crate) fn parse(arg: RawBsonRef<'_>) -> Result<Pull> {
        Ok(Pull {
            condition: Condition::parse(arg)?,
        })
    }

    pub(crate) fn existing(&self, target: &mut Value<'_>, cmp: Cmp<'_>) -> Result<Outcome> {
        cull(target, |v| self.condition.matches(v, cmp))
    }
}

/// A parsed `$pullAll` argument.
#[derive(Debug, Clone)]
pub(crate) struct PullAll {
    values: Vec<RawBson>,
}

impl PullAll {
    pub(crate) fn parse(arg: RawBsonRef<'_>) -> Result<PullAll> {
        let RawBsonRef::Array(values) = arg else {
            return Err(Error::bad_value(format!(
                "$pullAll requires an array argument but was given a {}",
                render::type_name(arg.element_type())
            )));
        };
        Ok(PullAll {
            values: values
                .into_iter()
                .map(|v| v.map(RawBson::from))
                .collect::<std::result::Result<_, _>>()?,
        })
    }

    pub(crate) fn existing(&self, target: &mut Value<'_>, cmp: Cmp<'_>) -> Result<Outcome> {
        cull(target, |v| {
            self.values
                .iter()
                .any(|x| cmp.values(x.as_raw_bson_ref(), v) == Ordering::Equal)
        })
    }
}

/// A parsed `$pop`: which end to remove from.
#[derive(Debug, Clone)]
pub(crate) struct Pop {
    front: bool,
}

impl Pop {
    pub(crate) fn parse(field: &str, arg: RawBsonRef<'_>) -> Result<Pop> {
        let n = integer_or_reason(arg).map_err(|reason| {
            Error::failed_to_parse(format!("{reason}{}", render::element(field, arg)))
        })?;
        match n {
            1 => Ok(Pop { front: false }),
            -1 => Ok(Pop { front: true }),
            other => Err(Error::failed_to_parse(format!(
                "$pop expects 1 or -1, found: {other}"
            ))),
        }
    }

    pub(crate) fn existing(&self, target: &mut Value<'_>, site: &Site<'_>) -> Result<Outcome> {
        let items = array_items(target, |t| {
            Error::type_mismatch(format!(
                "Path '{}' contains an element of non-array type '{}'",
                site.path.dotted(),
                t.type_name()
            ))
        })?;
        if items.is_empty() {
            return Ok(Outcome::Unchanged);
        }
        if self.front {
            items.remove(0);
        } else {
            items.pop();
        }
        Ok(Outcome::Changed)
    }
}
