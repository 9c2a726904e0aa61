//! Set operators on arrays: `$setUnion`, `$setIntersection`,
//! `$setDifference`, `$setEquals`, `$setIsSubset`. Arrays are read as sets
//! (duplicates count once, equality is the context's comparison); results
//! built from sets come out in BSON order, as MongoDB's ordered sets do.

use std::cmp::Ordering;

use super::tree::{Arity, OpDef, op};
use super::value::{Cx, Val, array, fail};
use crate::error::{ExprError, Result};

op!(SET_UNION, "$setUnion", Arity::Any, set_union);
op!(
    SET_INTERSECTION,
    "$setIntersection",
    Arity::Any,
    set_intersection
);
op!(
    SET_DIFFERENCE,
    "$setDifference",
    Arity::Exactly(2),
    set_difference
);
op!(SET_EQUALS, "$setEquals", Arity::AtLeast(2), set_equals);
op!(
    SET_IS_SUBSET,
    "$setIsSubset",
    Arity::Exactly(2),
    set_is_subset
);

pub(super) static OPS: &[&OpDef] = &[
    &SET_UNION,
    &SET_INTERSECTION,
    &SET_DIFFERENCE,
    &SET_EQUALS,
    &SET_IS_SUBSET,
];

/// The distinct elements of an array, sorted.
fn to_set<'a>(cx: &Cx<'_>, v: Val<'a>) -> Result<Vec<Val<'a>>> {
    let mut items = v.into_items()?;
    items.sort_by(|a, b| cx.cmp(a, b));
    items.dedup_by(|a, b| cx.cmp(a, b) == Ordering::Equal);
    Ok(items)
}

fn contains(cx: &Cx<'_>, set: &[Val<'_>], v: &Val<'_>) -> bool {
    set.binary_search_by(|x| cx.cmp(x, v)).is_ok()
}

fn not_array(kind: ExprError, message: String) -> crate::error::Error {
    fail(kind, message)
}

fn set_union<'a>(cx: &Cx<'_>, args: Vec<Val<'a>>) -> Result<Val<'a>> {
    let mut all = Vec::new();
    for v in args {
        if v.nullish() {
            return Ok(Val::null());
        }
        if !v.is_array() {
            return Err(not_array(
                ExprError::SetUnionType,
                format!(
                    "All operands of $setUnion must be arrays. One argument is of type: {}",
                    v.type_name()
                ),
            ));
        }
        all.extend(v.into_items()?);
    }
    all.sort_by(|a, b| cx.cmp(a, b));
    all.dedup_by(|a, b| cx.cmp(a, b) == Ordering::Equal);
    Ok(array(all))
}

fn set_intersection<'a>(cx: &Cx<'_>, args: Vec<Val<'a>>) -> Result<Val<'a>> {
    let mut current: Option<Vec<Val<'a>>> = None;
    for v in args {
        if v.nullish() {
            return Ok(Val::null());
        }
        if !v.is_array() {
            return Err(not_array(
                ExprError::SetIntersectionType,
                format!(
                    "All operands of $setIntersection must be arrays. One argument is of type: {}",
                    v.type_name()
                ),
            ));
        }
        let next = to_set(cx, v)?;
        current = Some(match current {
            None => next,
            Some(cur) => cur.into_iter().filter(|x| contains(cx, &next, x)).collect(),
        });
    }
    Ok(array(current.unwrap_or_default()))
}

fn set_difference<'a>(cx: &Cx<'_>, args: Vec<Val<'a>>) -> Result<Val<'a>> {
    let mut args = args.into_iter();
    let lhs = args.next().unwrap_or(Val::Missing);
    let rhs = args.next().unwrap_or(Val::Missing);
    if lhs.nullish() || rhs.nullish() {
        return Ok(Val::null());
    }
    if !lhs.is_array() {
        return Err(not_array(
            ExprError::SetDifferenceFirstType,
            format!(
                "both operands of $setDifference must be arrays. First argument is of type: {}",
                lhs.type_name()
            ),
        ));
    }
    if !rhs.is_array() {
        return Err(not_array(
            ExprError::SetDifferenceSecondType,
            format!(
                "both operands of $setDifference must be arrays. Second argument is of type: {}",
                rhs.type_name()
            ),
        ));
    }
    // Keeps the first array's order, each value once.
    let mut seen = to_set(cx, rhs)?;
    let mut out = Vec::new();
    for v in lhs.into_items()? {
        if !contains(cx, &seen, &v) {
            let at = seen.partition_point(|x| cx.cmp(x, &v) == Ordering::Less);
            seen.insert(at, v.clone());
            out.push(v);
        }
    }
    Ok(array(out))
}

fn set_equals<'a>(cx: &Cx<'_>, args: Vec<Val<'a>>) -> Result<Val<'a>> {
    let mut first: Option<Vec<Val<'a>>> = None;
    for v in args {
        if !v.is_array() {
            return Err(not_array(
                ExprError::SetEqualsType,
                format!(
                    "All operands of $setEquals must be arrays. One argument is of type: {}",
                    v.type_name()
                ),
            ));
        }
        let set = to_set(cx, v)?;
        match &first {
            None => first = Some(set),
            Some(f) => {
                let same = f.len() == set.len()
                    && f.iter()
                        .zip(&set)
                        .all(|(a, b)| cx.cmp(a, b) == Ordering::Equal);
                if !same {
                    return Ok(Val::bool(false));
                }
            }
        }
    }
    Ok(Val::bool(true))
}

fn set_is_subset<'a>(cx: &Cx<'_>, args: Vec<Val<'a>>) -> Result<Val<'a>> {
    let mut args = args.into_iter();
    let lhs = args.next().unwrap_or(Val::Missing);
    let rhs = args.next().unwrap_or(Val::Missing);
    if !lhs.is_array() {
        return Err(not_array(
            ExprError::SetIsSubsetFirstType,
            format!(
                "both operands of $setIsSubset must be arrays. First argument is of type: {}",
                lhs.type_name()
            ),
        ));
    }
    if !rhs.is_array() {
        return Err(not_array(
            ExprError::SetIsSubsetSecondType,
            format!(
                "both operands of $setIsSubset must be arrays. Second argument is of type: {}",
                rhs.type_name()
            ),
        ));
    }
    let set = to_set(cx, rhs)?;
    let subset = lhs.into_items()?.iter().all(|v| contains(cx, &set, v));
    Ok(Val::bool(subset))
}
