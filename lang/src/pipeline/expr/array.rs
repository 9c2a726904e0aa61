//! Array operators: `$size`, `$arrayElemAt`, `$first`, `$last`, `$in`,
//! `$indexOfArray`, `$slice`, `$concatArrays`, `$reverseArray`, `$range`,
//! `$isArray`, `$sortArray`, `$zip`. (`$map`, `$filter` and `$reduce`
//! bind variables, so the evaluator runs them.)

use bson::RawBsonRef;

use super::tree::{Arity, OpDef, op};
use super::value::{Cx, Val, array, fail, integral, integral32, shown};
use crate::error::{ExprError, Result};
use crate::query::sort::SortSpec;

op!(SIZE, "$size", Arity::Exactly(1), size);
op!(
    ARRAY_ELEM_AT,
    "$arrayElemAt",
    Arity::Exactly(2),
    array_elem_at
);
op!(FIRST, "$first", Arity::Exactly(1), first);
op!(LAST, "$last", Arity::Exactly(1), last);
op!(IN, "$in", Arity::Exactly(2), in_);
op!(
    INDEX_OF_ARRAY,
    "$indexOfArray",
    Arity::Between(2, 4),
    index_of_array
);
op!(SLICE, "$slice", Arity::Between(2, 3), slice);
op!(CONCAT_ARRAYS, "$concatArrays", Arity::Any, concat_arrays);
op!(
    REVERSE_ARRAY,
    "$reverseArray",
    Arity::Exactly(1),
    reverse_array
);
op!(RANGE, "$range", Arity::Between(2, 3), range);
op!(IS_ARRAY, "$isArray", Arity::Exactly(1), is_array);
op!(SORT_ARRAY, "$sortArray", Arity::Exactly(2), sort_array);
op!(ZIP, "$zip", Arity::AtLeast(3), zip);

pub(super) static OPS: &[&OpDef] = &[
    &SIZE,
    &ARRAY_ELEM_AT,
    &FIRST,
    &LAST,
    &IN,
    &INDEX_OF_ARRAY,
    &SLICE,
    &CONCAT_ARRAYS,
    &REVERSE_ARRAY,
    &RANGE,
    &IS_ARRAY,
];

fn size<'a>(_: &Cx<'_>, args: Vec<Val<'a>>) -> Result<Val<'a>> {
    match args[0].as_array() {
        Some(a) => Ok(Val::int_or_long(a.into_iter().count() as i64)),
        None => Err(fail(
            ExprError::SizeNotArray,
            format!(
                "The argument to $size must be an array, but was of type: {}",
                args[0].type_name()
            ),
        )),
    }
}

/// The element at `i` (negative counts from the end), missing when out of
/// range.
fn element_at<'a>(items: Vec<Val<'a>>, i: i64) -> Val<'a> {
    let len = items.len() as i64;
    let i = if i < 0 { len + i } else { i };
    if i < 0 || i >= len {
        return Val::Missing;
    }
    items.into_iter().nth(i as usize).unwrap_or(Val::Missing)
}

fn array_elem_at<'a>(_: &Cx<'_>, args: Vec<Val<'a>>) -> Result<Val<'a>> {
    let mut args = args.into_iter();
    let (arr, index) = (
        args.next().unwrap_or(Val::Missing),
        args.next().unwrap_or(Val::Missing),
    );
    if arr.nullish() || index.nullish() {
        return Ok(Val::null());
    }
    if !arr.is_array() {
        return Err(fail(
            ExprError::ArrayElemAtNotArray,
            format!(
                "$arrayElemAt's first argument must be an array, but is {}",
                arr.type_name()
            ),
        ));
    }
    if !index.is_number() {
        return Err(fail(
            ExprError::ArrayElemAtIndexType,
            format!(
                "$arrayElemAt's second argument must be a numeric value, but is {}",
                index.type_name()
            ),
        ));
    }
    let Some(i) = integral32(&index) else {
        return Err(fail(
            ExprError::ArrayElemAtIndexNotIntegral,
            format!(
                "$arrayElemAt's second argument must be representable as a 32-bit integer: {}",
                shown(&index)
            ),
        ));
    };
    Ok(element_at(arr.into_items()?, i.into()))
}

fn end<'a>(name: &str, args: Vec<Val<'a>>, last: bool) -> Result<Val<'a>> {
    let arr = args.into_iter().next().unwrap_or(Val::Missing);
    if arr.nullish() {
        return Ok(Val::null());
    }
    if !arr.is_array() {
        return Err(fail(
            ExprError::ArrayElemAtNotArray,
            format!(
                "{name}'s argument must be an array, but is {}",
                arr.type_name()
            ),
        ));
    }
    Ok(element_at(arr.into_items()?, if last { -1 } else { 0 }))
}

fn first<'a>(_: &Cx<'_>, args: Vec<Val<'a>>) -> Result<Val<'a>> {
    end("$first", args, false)
}

fn last<'a>(_: &Cx<'_>, args: Vec<Val<'a>>) -> Result<Val<'a>> {
    end("$last", args, true)
}

fn in_<'a>(cx: &Cx<'_>, args: Vec<Val<'a>>) -> Result<Val<'a>> {
    let (needle, hay) = (&args[0], &args[1]);
    if !hay.is_array() {
        return Err(fail(
            ExprError::InNotArray,
            format!(
                "$in requires an array as a second argument, found: {}",
                hay.type_name()
            ),
        ));
    }
    let found = hay.clone().into_items()?.iter().any(|v| cx.eq(needle, v));
    Ok(Val::bool(found))
}

/// A start or end bound of `$indexOfArray`.
fn array_bound(what: &str, v: &Val<'_>) -> Result<usize> {
    let Some(n) = integral(v).filter(|_| v.is_number()) else {
        return Err(fail(
            ExprError::IndexOfBoundNotIntegral,
            format!(
                "$indexOfArray requires an integral {what}, found a value of type: {}, with value: {}",
                v.type_name(),
                shown(v)
            ),
        ));
    };
    if n < 0 {
        return Err(fail(
            ExprError::IndexOfBoundNegative,
            format!("$indexOfArray requires a nonnegative {what}, found: {n}"),
        ));
    }
    Ok(usize::try_from(n).unwrap_or(usize::MAX))
}

fn index_of_array<'a>(cx: &Cx<'_>, args: Vec<Val<'a>>) -> Result<Val<'a>> {
    let arr = &args[0];
    if arr.nullish() {
        return Ok(Val::null());
    }
    if !arr.is_array() {
        return Err(fail(
            ExprError::IndexOfArrayNotArray,
            format!(
                "$indexOfArray requires an array as a first argument, found: {}",
                arr.type_name()
            ),
        ));
    }
    let items = arr.clone().into_items()?;
    let start = match args.get(2) {
        Some(v) => array_bound("starting index", v)?,
        None => 0,
    };
    let end = match args.get(3) {
        Some(v) => array_bound("ending index", v)?.min(items.len()),
        None => items.len(),
    };
    let found = (start..end).find(|&i| cx.eq(&items[i], &args[1]));
    Ok(Val::int_or_long(found.map_or(-1, |i| i as i64)))
}

fn slice<'a>(_: &Cx<'_>, args: Vec<Val<'a>>) -> Result<Val<'a>> {
    let (arr, second) = (&args[0], &args[1]);
    if arr.nullish() || second.nullish() {
        return Ok(Val::null());
    }
    if !arr.is_array() {
        return Err(fail(
            ExprError::SliceNotArray,
            format!(
                "First argument to $slice must be an array, but is of type: {}",
                arr.type_name()
            ),
        ));
    }
    if !second.is_number() {
        return Err(fail(
            ExprError::SliceSecondType,
            format!(
                "Second argument to $slice must be a numeric value, but is of type: {}",
                second.type_name()
            ),
        ));
    }
    let Some(n) = integral32(second) else {
        return Err(fail(
            ExprError::SliceSecondNotIntegral,
            format!(
                "Second argument to $slice can't be represented as a 32-bit integer: {}",
                shown(second)
            ),
        ));
    };
    let items = arr.clone().into_items()?;
    let len = items.len() as i64;
    let (start, end) = match args.get(2) {
        None => {
            let n = i64::from(n);
            if n >= 0 {
                (0, n.min(len))
            } else {
                ((len + n).max(0), len)
            }
        }
        Some(count) => {
            let start = i64::from(n);
            let start = if start < 0 {
                (len + start).max(0)
            } else {
                start.min(len)
            };
            if count.nullish() {
                return Ok(Val::null());
            }
            if !count.is_number() {
                return Err(fail(
                    ExprError::SliceThirdType,
                    format!(
                        "Third argument to $slice must be numeric, but is of type: {}",
                        count.type_name()
                    ),
                ));
            }
            let Some(c) = integral32(count) else {
                return Err(fail(
                    ExprError::SliceThirdNotIntegral,
                    format!(
                        "Third argument to $slice can't be represented as a 32-bit integer: {}",
                        shown(count)
                    ),
                ));
            };
            if c <= 0 {
                return Err(fail(
                    ExprError::SliceThirdNotPositive,
                    format!("Third argument to $slice must be positive: {c}"),
                ));
            }
            (start, (start + i64::from(c)).min(len))
        }
    };
    Ok(array(
        items
            .into_iter()
            .skip(start as usize)
            .take((end - start).max(0) as usize),
    ))
}

fn concat_arrays<'a>(_: &Cx<'_>, args: Vec<Val<'a>>) -> Result<Val<'a>> {
    let mut out = Vec::new();
    for v in args {
        if v.nullish() {
            return Ok(Val::null());
        }
        if !v.is_array() {
            return Err(fail(
                ExprError::ConcatArraysType,
                format!("$concatArrays only supports arrays, not {}", v.type_name()),
            ));
        }
        out.extend(v.into_items()?);
    }
    Ok(array(out))
}

fn reverse_array<'a>(_: &Cx<'_>, args: Vec<Val<'a>>) -> Result<Val<'a>> {
    let v = args.into_iter().next().unwrap_or(Val::Missing);
    if v.nullish() {
        return Ok(Val::null());
    }
    if !v.is_array() {
        return Err(fail(
            ExprError::ReverseArrayNotArray,
            format!(
                "The argument to $reverseArray must be an array, but was of type: {}",
                v.type_name()
            ),
        ));
    }
    let mut items = v.into_items()?;
    items.reverse();
    Ok(array(items))
}

fn range<'a>(_: &Cx<'_>, args: Vec<Val<'a>>) -> Result<Val<'a>> {
    let bound = |v: &Val<'_>, which: &str, kinds: (ExprError, ExprError)| -> Result<i64> {
        if !v.is_number() {
            return Err(fail(
                kinds.0,
                format!(
                    "$range requires a numeric {which} value, found value of type: {}",
                    v.type_name()
                ),
            ));
        }
        integral32(v).map(i64::from).ok_or_else(|| {
            fail(
                kinds.1,
                format!(
                    "$range requires a{} {which} value that can be represented as a 32-bit integer, found value: {}",
                    if which == "ending" { "n" } else { "" },
                    shown(v)
                ),
            )
        })
    };
    let start = bound(
        &args[0],
        "starting",
        (ExprError::RangeStartType, ExprError::RangeStartNotIntegral),
    )?;
    let end = bound(
        &args[1],
        "ending",
        (ExprError::RangeEndType, ExprError::RangeEndNotIntegral),
    )?;
    let step = match args.get(2) {
        None => 1,
        Some(s) => {
            let step = bound(
                s,
                "step",
                (ExprError::RangeStepType, ExprError::RangeStepNotIntegral),
            )?;
            if step == 0 {
                return Err(fail(
                    ExprError::RangeStepZero,
                    "$range requires a non-zero step value",
                ));
            }
            step
        }
    };
    let mut out = Vec::new();
    let mut i = start;
    while (step > 0 && i < end) || (step < 0 && i > end) {
        out.push(Val::int_or_long(i));
        i += step;
    }
    Ok(array(out))
}

fn is_array<'a>(_: &Cx<'_>, args: Vec<Val<'a>>) -> Result<Val<'a>> {
    Ok(Val::bool(args[0].is_array()))
}

/// Checks `$sortArray`'s `sortBy`: 1, -1, or a sort document.
pub(super) fn check_sort_by(v: RawBsonRef<'_>) -> Result<()> {
    match v {
        RawBsonRef::Document(d) => SortSpec::parse(d).map(|_| ()),
        other if matches!(integral(&Val::Ref(other)), Some(1 | -1)) => Ok(()),
        _ => Err(fail(
            ExprError::SortArraySortByInvalid,
            "$sortArray requires sortBy to be either 1, -1, or an object of sort specifications",
        )),
    }
}

/// `[input, sortBy]` (sortBy checked while parsing).
fn sort_array<'a>(cx: &Cx<'_>, args: Vec<Val<'a>>) -> Result<Val<'a>> {
    let mut args = args.into_iter();
    let input = args.next().unwrap_or(Val::Missing);
    let sort_by = args.next().unwrap_or(Val::Missing);
    if input.nullish() {
        return Ok(Val::null());
    }
    if !input.is_array() {
        return Err(fail(
            ExprError::SortArrayInputNotArray,
            format!(
                "The input argument to $sortArray must be an array, but was of type: {}",
                input.type_name()
            ),
        ));
    }
    let mut items = input.into_items()?;
    match sort_by.as_document() {
        Some(spec) => {
            let spec = SortSpec::parse(spec)?;
            let empty = bson::RawDocumentBuf::new();
            items.sort_by(|a, b| {
                let da = a.as_document().unwrap_or(&empty);
                let db = b.as_document().unwrap_or(&empty);
                spec.compare(da, db)
            });
        }
        None => {
            let descending = integral(&sort_by) == Some(-1);
            items.sort_by(|a, b| {
                let o = cx.cmp(a, b);
                if descending { o.reverse() } else { o }
            });
        }
    }
    Ok(array(items))
}

/// `[useLongestLength, n, inputs…, defaults…]`.
fn zip<'a>(_: &Cx<'_>, args: Vec<Val<'a>>) -> Result<Val<'a>> {
    let longest = args[0].truthy();
    let n = integral(&args[1]).unwrap_or(0).max(0) as usize;
    let mut rest = args.into_iter().skip(2);
    let mut columns = Vec::with_capacity(n);
    for _ in 0..n {
        let v = rest.next().unwrap_or(Val::Missing);
        if v.nullish() {
            return Ok(Val::null());
        }
        if !v.is_array() {
            return Err(fail(
                ExprError::ZipInputNotArray,
                format!("$zip found a non-array expression in input: {}", shown(&v)),
            ));
        }
        columns.push(v.into_items()?);
    }
    let defaults: Vec<Val<'a>> = rest.collect();
    let lengths = columns.iter().map(Vec::len);
    let rows = if longest {
        lengths.max().unwrap_or(0)
    } else {
        lengths.min().unwrap_or(0)
    };
    let mut out = Vec::with_capacity(rows);
    for r in 0..rows {
        let row = columns.iter().enumerate().map(|(c, col)| match col.get(r) {
            Some(v) => v.clone(),
            None => defaults.get(c).cloned().unwrap_or_else(Val::null),
        });
        out.push(array(row));
    }
    Ok(array(out))
}
