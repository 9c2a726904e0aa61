//! `$bucket` and `$sortByCount`: stages MongoDB defines as a `$group`
//! followed by a `$sort`, parsed here into exactly that sequence after
//! their own arguments are checked, so they behave as the two stages do
//! (`$bucket`'s unmatched value with no default fails as `$switch` does,
//! mongod's 40066). Also `$bucketAuto`, which cuts its sorted input into
//! buckets of about equal size (`granularity` is refused).

use std::cmp::Ordering;

use bson::{RawArrayBuf, RawBson, RawBsonRef, RawDocumentBuf, rawdoc};

use super::accumulator::{Acc, AccState};
use super::expr::{Env, Expr, cstr};
use super::kind::{BucketAuto, ParseStage, Stage};
use crate::encoding::bracket::canonical_type;
use crate::encoding::cmp::{Cmp, compare_values};
use crate::encoding::display::type_name;
use crate::error::{Error, ErrorKind, Result, StageError};
use crate::query::value::number_as_f64;

fn fail(kind: StageError, message: impl Into<String>) -> Error {
    Error::new(ErrorKind::Stage(kind), message)
}

/// Whether `v` is written as an expression (a `$`-path or an operator
/// document), as `groupBy` and `$sortByCount` require.
fn is_expression(v: RawBsonRef<'_>) -> Option<bool> {
    match v {
        RawBsonRef::String(s) => Some(s.starts_with('$')),
        RawBsonRef::Document(d) => Some(matches!(
            d.iter().next(),
            Some(Ok((k, _))) if k.as_str().starts_with('$')
        )),
        _ => None,
    }
}

/// `$sortByCount: <expression>`: groups by it, counts, sorts by the count
/// descending.
pub(super) fn parse_sort_by_count(
    spec: RawBsonRef<'_>,
    env: &Env,
    parse: ParseStage,
) -> Result<Stage> {
    match (spec, is_expression(spec)) {
        (_, Some(true)) => {}
        (RawBsonRef::Document(_), _) => {
            return Err(fail(
                StageError::SortByCountObject,
                "the sortByCount field must be defined as a $-prefixed path or an expression \
                 inside an object",
            ));
        }
        (RawBsonRef::String(_), _) => {
            return Err(fail(
                StageError::SortByCountString,
                "the sortByCount field must be defined as a $-prefixed path or an expression \
                 inside an object",
            ));
        }
        _ => {
            return Err(fail(
                StageError::SortByCountType,
                "the sortByCount field must be specified as a string or as an object",
            ));
        }
    }
    let mut group = RawDocumentBuf::new();
    group.append(cstr("_id"), RawBson::from(spec));
    group.append(cstr("count"), rawdoc! { "$sum": 1 });
    Ok(Stage::Sequence(vec![
        parse(&rawdoc! { "$group": group }, env)?,
        parse(&rawdoc! { "$sort": { "count": -1 } }, env)?,
    ]))
}

/// A constant argument of `$bucket` (a boundary, the default): any
/// expression that folds to a constant.
fn constant(v: RawBsonRef<'_>, env: &Env) -> Result<Option<RawBson>> {
    let e = Expr::parse_in(v, env)?;
    Ok(e.as_constant().map(|c| c.cloned().unwrap_or(RawBson::Null)))
}

/// `$bucket: {groupBy, boundaries, default, output}`: a `$group` whose
/// `_id` is the lower boundary of the bucket `groupBy` falls in (or the
/// default), then a `$sort` on `_id`.
pub(super) fn parse_bucket(spec: RawBsonRef<'_>, env: &Env, parse: ParseStage) -> Result<Stage> {
    let RawBsonRef::Document(d) = spec else {
        return Err(fail(
            StageError::BucketNotObject,
            format!(
                "Argument to $bucket stage must be an object, but found type: {}.",
                type_name(&spec)
            ),
        ));
    };
    let mut group_by = None;
    let mut boundaries: Option<Vec<RawBson>> = None;
    let mut default = None;
    let mut output = None;
    for el in d.iter() {
        let (k, v) = el?;
        match k.as_str() {
            "groupBy" => {
                if is_expression(v) != Some(true) {
                    return Err(fail(
                        StageError::BucketGroupBy,
                        "The $bucket 'groupBy' field must be defined as a $-prefixed path or an \
                         expression",
                    ));
                }
                group_by = Some(v);
            }
            "boundaries" => {
                let RawBsonRef::Array(a) = v else {
                    return Err(fail(
                        StageError::BucketBoundariesNotArray,
                        format!(
                            "The $bucket 'boundaries' field must be an array, but found type: {}.",
                            type_name(&v)
                        ),
                    ));
                };
                let mut values = Vec::new();
                for b in a {
                    let b = b?;
                    let Some(c) = constant(b, env)? else {
                        return Err(fail(
                            StageError::BucketBoundaryNotConstant,
                            "The $bucket 'boundaries' field must be an array of constant values",
                        ));
                    };
                    values.push(c);
                }
                check_boundaries(&values)?;
                boundaries = Some(values);
            }
            "default" => {
                let Some(c) = constant(v, env)? else {
                    return Err(fail(
                        StageError::BucketDefaultNotConstant,
                        "The $bucket 'default' field must be a constant expression",
                    ));
                };
                default = Some(c);
            }
            "output" => match v {
                RawBsonRef::Document(o) => output = Some(o),
                other => {
                    return Err(fail(
                        StageError::BucketOutputNotObject,
                        format!(
                            "The $bucket 'output' field must be an object, but found type: {}.",
                            type_name(&other)
                        ),
                    ));
                }
            },
            other => {
                return Err(fail(
                    StageError::BucketUnknownOption,
                    format!("Unrecognized option to $bucket: {other}."),
                ));
            }
        }
    }
    let (Some(group_by), Some(boundaries)) = (group_by, boundaries) else {
        return Err(fail(
            StageError::BucketMissingRequired,
            "$bucket requires 'groupBy' and 'boundaries' to be specified.",
        ));
    };
    if let Some(dv) = &default {
        check_default(dv, &boundaries)?;
    }
    let mut branches = RawArrayBuf::new();
    for pair in boundaries.windows(2) {
        let (lower, upper) = (pair[0].clone(), pair[1].clone());
        let mut gte = RawArrayBuf::new();
        gte.push(RawBson::from(group_by));
        gte.push(rawdoc! { "$literal": lower.clone() });
        let mut lt = RawArrayBuf::new();
        lt.push(RawBson::from(group_by));
        lt.push(rawdoc! { "$literal": upper });
        branches.push(rawdoc! {
            "case": { "$and": [ { "$gte": gte }, { "$lt": lt } ] },
            "then": { "$literal": lower },
        });
    }
    let mut switch = rawdoc! { "branches": branches };
    if let Some(dv) = default {
        switch.append(cstr("default"), rawdoc! { "$literal": dv });
    }
    let mut group = rawdoc! { "_id": { "$switch": switch } };
    match output {
        Some(o) => {
            for el in o.iter() {
                let (k, v) = el?;
                group.append(k, v);
            }
        }
        None => group.append(cstr("count"), rawdoc! { "$sum": 1 }),
    }
    Ok(Stage::Sequence(vec![
        parse(&rawdoc! { "$group": group }, env)?,
        parse(&rawdoc! { "$sort": { "_id": 1 } }, env)?,
    ]))
}

/// At least two boundaries, of one type bracket, strictly ascending.
fn check_boundaries(values: &[RawBson]) -> Result<()> {
    if values.len() < 2 {
        return Err(fail(
            StageError::BucketTooFewBoundaries,
            format!(
                "The $bucket 'boundaries' field must have at least 2 values, but found {} value(s).",
                values.len()
            ),
        ));
    }
    for (i, pair) in values.windows(2).enumerate() {
        let (lower, upper) = (pair[0].as_raw_bson_ref(), pair[1].as_raw_bson_ref());
        if canonical_type(&lower) != canonical_type(&upper) {
            return Err(fail(
                StageError::BucketBoundaryTypes,
                format!(
                    "All values in the the 'boundaries' option to $bucket must have the same \
                     type. Found conflicting types {} and {}.",
                    type_name(&lower),
                    type_name(&upper)
                ),
            ));
        }
        if compare_values(lower, upper) != Ordering::Less {
            return Err(fail(
                StageError::BucketBoundariesUnsorted,
                format!(
                    "The 'boundaries' option to $bucket must be sorted, but elements {i} and {} \
                     are not in ascending order",
                    i + 1
                ),
            ));
        }
    }
    Ok(())
}

/// A default of the boundaries' type must lie outside them.
fn check_default(default: &RawBson, boundaries: &[RawBson]) -> Result<()> {
    let (Some(lowest), Some(highest)) = (boundaries.first(), boundaries.last()) else {
        return Ok(());
    };
    let d = default.as_raw_bson_ref();
    if canonical_type(&d) != canonical_type(&lowest.as_raw_bson_ref()) {
        return Ok(());
    }
    let below = compare_values(d, lowest.as_raw_bson_ref()) == Ordering::Less;
    let above = compare_values(d, highest.as_raw_bson_ref()) != Ordering::Less;
    if below || above {
        return Ok(());
    }
    Err(fail(
        StageError::BucketDefaultInRange,
        "The $bucket 'default' field must be less than the lowest boundary or greater than or \
         equal to the highest boundary.",
    ))
}

impl BucketAuto {
    /// `$bucketAuto: {groupBy, buckets, output, granularity}`.
    pub(super) fn parse(spec: RawBsonRef<'_>, env: &Env) -> Result<BucketAuto> {
        let RawBsonRef::Document(d) = spec else {
            return Err(fail(
                StageError::BucketAutoNotObject,
                format!(
                    "The argument to $bucketAuto must be an object, but found type: {}",
                    type_name(&spec)
                ),
            ));
        };
        let mut group_by = None;
        let mut buckets = None;
        let mut accs = Vec::new();
        for el in d.iter() {
            let (k, v) = el?;
            match k.as_str() {
                "groupBy" => {
                    if is_expression(v) != Some(true) {
                        return Err(fail(
                            StageError::BucketAutoGroupBy,
                            "The $bucketAuto 'groupBy' field must be defined as a $-prefixed \
                             path or an expression object",
                        ));
                    }
                    group_by = Some(Expr::parse_in(v, env)?);
                }
                "buckets" => {
                    let Some(n) = number_as_f64(v) else {
                        return Err(fail(
                            StageError::BucketAutoBucketsType,
                            format!(
                                "The $bucketAuto 'buckets' field must be a numeric value, but \
                                 found type: {}",
                                type_name(&v)
                            ),
                        ));
                    };
                    if n.fract() != 0.0 || !(f64::from(i32::MIN)..=f64::from(i32::MAX)).contains(&n)
                    {
                        return Err(fail(
                            StageError::BucketAutoBucketsNotInt,
                            format!(
                                "The $bucketAuto 'buckets' field must be representable as a \
                                 32-bit integer, but found {n}"
                            ),
                        ));
                    }
                    buckets = Some(n as i64);
                }
                "output" => {
                    let RawBsonRef::Document(o) = v else {
                        return Err(fail(
                            StageError::BucketAutoOutputNotObject,
                            format!(
                                "The $bucketAuto 'output' field must be an object, but found \
                                 type: {}",
                                type_name(&v)
                            ),
                        ));
                    };
                    for el in o.iter() {
                        let (name, acc) = el?;
                        accs.push((
                            name.as_str().to_owned(),
                            Acc::parse_in(name.as_str(), acc, env)?,
                        ));
                    }
                }
                "granularity" => {
                    if !matches!(v, RawBsonRef::String(_)) {
                        return Err(fail(
                            StageError::BucketAutoGranularityType,
                            format!(
                                "The $bucketAuto 'granularity' field must be a string, but found \
                                 type: {}",
                                type_name(&v)
                            ),
                        ));
                    }
                    return Err(Error::not_implemented("$bucketAuto's 'granularity'"));
                }
                other => {
                    return Err(fail(
                        StageError::BucketAutoUnknownOption,
                        format!("Unrecognized option to $bucketAuto: {other}"),
                    ));
                }
            }
        }
        let (Some(group_by), Some(buckets)) = (group_by, buckets) else {
            return Err(fail(
                StageError::BucketAutoMissingRequired,
                "$bucketAuto requires 'groupBy' and 'buckets' to be specified",
            ));
        };
        if buckets <= 0 {
            return Err(fail(
                StageError::BucketAutoBucketsNotPositive,
                format!(
                    "The $bucketAuto 'buckets' field must be greater than 0, but found: {buckets}"
                ),
            ));
        }
        if accs.is_empty() {
            accs.push((
                "count".to_owned(),
                Acc::parse_in("count", RawBsonRef::Document(&rawdoc! { "$sum": 1 }), env)?,
            ));
        }
        Ok(BucketAuto {
            group_by,
            buckets: buckets as usize,
            accs,
        })
    }

    /// Cuts the input into buckets: sorted by key (missing as null, ties
    /// in input order), about `n / buckets` documents each (the last takes
    /// the rest), a bucket never splitting equal keys. Each bucket's `_id`
    /// is `{min, max}`, `max` being the next bucket's `min` (the last
    /// bucket's own largest key).
    pub(super) fn run(
        &self,
        input: Vec<RawDocumentBuf>,
        cmp: Cmp<'_>,
    ) -> Result<Vec<RawDocumentBuf>> {
        let mut keyed = Vec::with_capacity(input.len());
        for doc in input {
            let key = self.group_by.eval(&doc)?.unwrap_or(RawBson::Null);
            keyed.push((key, doc));
        }
        keyed.sort_by(|a, b| cmp.values(a.0.as_raw_bson_ref(), b.0.as_raw_bson_ref()));
        let approx = ((keyed.len() as f64 / self.buckets as f64).round() as usize).max(1);
        let mut out = Vec::new();
        let mut rest = keyed.into_iter().peekable();
        let mut number = 0;
        while rest.peek().is_some() && number < self.buckets {
            number += 1;
            let last = number == self.buckets;
            let mut members = Vec::new();
            while let Some(next) = rest.next_if(|_| last || members.len() < approx) {
                members.push(next);
            }
            let max_key = members.last().map(|m| m.0.clone()).unwrap_or(RawBson::Null);
            while let Some(next) = rest.next_if(|n| {
                cmp.values(n.0.as_raw_bson_ref(), max_key.as_raw_bson_ref()) == Ordering::Equal
            }) {
                members.push(next);
            }
            let max = rest.peek().map_or(max_key, |n| n.0.clone());
            let min = members
                .first()
                .map(|m| m.0.clone())
                .unwrap_or(RawBson::Null);
            let mut states: Vec<AccState> =
                self.accs.iter().map(|(_, a)| AccState::new(a)).collect();
            for (k, (_, doc)) in members.iter().enumerate() {
                for (state, (_, acc)) in states.iter_mut().zip(&self.accs) {
                    state.add(acc, doc, k == 0, cmp)?;
                }
            }
            let mut bucket = RawDocumentBuf::new();
            bucket.append(cstr("_id"), rawdoc! { "min": min, "max": max });
            for ((name, acc), state) in self.accs.iter().zip(states) {
                bucket.append(cstr(name), state.result_of(acc)?);
            }
            out.push(bucket);
        }
        Ok(out)
    }
}
