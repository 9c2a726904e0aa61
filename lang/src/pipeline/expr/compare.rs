//! Comparison operators (`$eq $ne $gt $gte $lt $lte $cmp`) and `$min`/`$max`
//! as expressions. Every comparison goes through the context's comparator
//! (BSON order, missing as `undefined`), the hook a collation will use.

use std::cmp::Ordering;

use super::tree::{Arity, OpDef, op};
use super::value::{Cx, Val};
use crate::error::Result;

op!(EQ, "$eq", Arity::Exactly(2), eq);
op!(NE, "$ne", Arity::Exactly(2), ne);
op!(GT, "$gt", Arity::Exactly(2), gt);
op!(GTE, "$gte", Arity::Exactly(2), gte);
op!(LT, "$lt", Arity::Exactly(2), lt);
op!(LTE, "$lte", Arity::Exactly(2), lte);
op!(CMP, "$cmp", Arity::Exactly(2), cmp);
op!(MIN, "$min", Arity::Any, min);
op!(MAX, "$max", Arity::Any, max);

pub(super) static OPS: &[&OpDef] = &[&EQ, &NE, &GT, &GTE, &LT, &LTE, &CMP, &MIN, &MAX];

fn order(cx: &Cx<'_>, args: &[Val<'_>]) -> Ordering {
    cx.cmp(&args[0], &args[1])
}

fn eq<'a>(cx: &Cx<'_>, args: Vec<Val<'a>>) -> Result<Val<'a>> {
    Ok(Val::bool(order(cx, &args).is_eq()))
}

fn ne<'a>(cx: &Cx<'_>, args: Vec<Val<'a>>) -> Result<Val<'a>> {
    Ok(Val::bool(order(cx, &args).is_ne()))
}

fn gt<'a>(cx: &Cx<'_>, args: Vec<Val<'a>>) -> Result<Val<'a>> {
    Ok(Val::bool(order(cx, &args).is_gt()))
}

fn gte<'a>(cx: &Cx<'_>, args: Vec<Val<'a>>) -> Result<Val<'a>> {
    Ok(Val::bool(order(cx, &args).is_ge()))
}

fn lt<'a>(cx: &Cx<'_>, args: Vec<Val<'a>>) -> Result<Val<'a>> {
    Ok(Val::bool(order(cx, &args).is_lt()))
}

fn lte<'a>(cx: &Cx<'_>, args: Vec<Val<'a>>) -> Result<Val<'a>> {
    Ok(Val::bool(order(cx, &args).is_le()))
}

fn cmp<'a>(cx: &Cx<'_>, args: Vec<Val<'a>>) -> Result<Val<'a>> {
    Ok(Val::int(match order(cx, &args) {
        Ordering::Less => -1,
        Ordering::Equal => 0,
        Ordering::Greater => 1,
    }))
}

/// `$min`/`$max` of the elements of a single array argument, or of the
/// arguments; null, undefined and missing are skipped, and none left is
/// null.
fn extreme<'a>(cx: &Cx<'_>, args: Vec<Val<'a>>, want: Ordering) -> Result<Val<'a>> {
    let values = if args.len() == 1 && args[0].is_array() {
        args.into_iter()
            .next()
            .map(Val::into_items)
            .transpose()?
            .unwrap_or_default()
    } else {
        args
    };
    let mut best: Option<Val<'a>> = None;
    for v in values.into_iter().filter(|v| !v.nullish()) {
        let better = match &best {
            None => true,
            Some(b) => cx.cmp(&v, b) == want,
        };
        if better {
            best = Some(v);
        }
    }
    Ok(best.unwrap_or_else(Val::null))
}

fn min<'a>(cx: &Cx<'_>, args: Vec<Val<'a>>) -> Result<Val<'a>> {
    extreme(cx, args, Ordering::Less)
}

fn max<'a>(cx: &Cx<'_>, args: Vec<Val<'a>>) -> Result<Val<'a>> {
    extreme(cx, args, Ordering::Greater)
}
