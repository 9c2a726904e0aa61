//! Evaluating a parsed expression against one document: the frame of
//! variable slots, and the nodes that decide what to evaluate (`$cond`,
//! `$and`/`$or` short-circuit, `$ifNull`, `$switch`, `$let`, `$map`,
//! `$filter`, `$reduce`, `onNull`/`onError` fallbacks). Eager operators get
//! their evaluated arguments and do the rest themselves.

use bson::{RawBsonRef, RawDocument};

use super::tree::{CURRENT, Node, ROOT};
use super::value::{Cx, Val, array, document, fail, integral};
use crate::error::{ErrorKind, ExprError, Result};

/// Evaluates `node` with `$$ROOT` bound to `doc`.
pub fn evaluate<'a>(
    node: &Node,
    slots: usize,
    doc: &'a RawDocument,
    cx: &Cx<'_>,
) -> Result<Val<'a>> {
    let mut frame = vec![Val::Missing; slots.max(1)];
    frame[ROOT] = Val::Ref(RawBsonRef::Document(doc));
    eval(node, &mut frame, cx)
}

/// [`evaluate`] with `$$CURRENT` apart from `$$ROOT`, in slot
/// [`CURRENT`].
pub fn evaluate_at<'a>(
    node: &Node,
    slots: usize,
    root: &'a RawDocument,
    current: &'a RawDocument,
    cx: &Cx<'_>,
) -> Result<Val<'a>> {
    let mut frame = vec![Val::Missing; slots.max(2)];
    frame[ROOT] = Val::Ref(RawBsonRef::Document(root));
    frame[CURRENT] = Val::Ref(RawBsonRef::Document(current));
    eval(node, &mut frame, cx)
}

fn eval<'a>(node: &Node, frame: &mut Vec<Val<'a>>, cx: &Cx<'_>) -> Result<Val<'a>> {
    Ok(match node {
        Node::Const(v) => Val::Own(v.clone()),
        Node::Missing => Val::Missing,
        Node::Var(slot, fields) => frame[*slot].clone().path(fields),
        Node::Object(entries) => {
            let mut out = Vec::with_capacity(entries.len());
            for (k, e) in entries {
                out.push((k.clone(), eval(e, frame, cx)?));
            }
            document(out)?
        }
        Node::Array(list) => {
            let mut out = Vec::with_capacity(list.len());
            for e in list {
                out.push(eval(e, frame, cx)?);
            }
            array(out)
        }
        Node::Call(def, args) => {
            let mut values = Vec::with_capacity(args.len());
            for a in args {
                values.push(eval(a, frame, cx)?);
            }
            (def.apply)(cx, values)?
        }
        Node::And(list) => {
            for e in list {
                if !eval(e, frame, cx)?.truthy() {
                    return Ok(Val::bool(false));
                }
            }
            Val::bool(true)
        }
        Node::Or(list) => {
            for e in list {
                if eval(e, frame, cx)?.truthy() {
                    return Ok(Val::bool(true));
                }
            }
            Val::bool(false)
        }
        Node::Cond(parts) => {
            let [c, t, e] = &**parts;
            if eval(c, frame, cx)?.truthy() {
                eval(t, frame, cx)?
            } else {
                eval(e, frame, cx)?
            }
        }
        Node::IfNull(list) => {
            // Every argument but the last is a candidate; the last is the
            // replacement, returned as it is.
            let mut result = Val::null();
            for (i, e) in list.iter().enumerate() {
                result = eval(e, frame, cx)?;
                if i + 1 < list.len() && !result.nullish() {
                    break;
                }
            }
            result
        }
        Node::Switch { branches, default } => {
            for (case, then) in branches {
                if eval(case, frame, cx)?.truthy() {
                    return eval(then, frame, cx);
                }
            }
            match default {
                Some(d) => eval(d, frame, cx)?,
                None => {
                    return Err(fail(
                        ExprError::SwitchNoMatch,
                        "$switch could not find a matching branch for an input, and no default was specified.",
                    ));
                }
            }
        }
        Node::Let { vars, body } => {
            let mut values = Vec::with_capacity(vars.len());
            for (slot, e) in vars {
                values.push((*slot, eval(e, frame, cx)?));
            }
            for (slot, v) in values {
                frame[slot] = v;
            }
            eval(body, frame, cx)?
        }
        Node::Map { input, var, body } => {
            let input = eval(input, frame, cx)?;
            if input.nullish() {
                return Ok(Val::null());
            }
            if !input.is_array() {
                return Err(fail(
                    ExprError::MapInputNotArray,
                    format!("input to $map must be an array not {}", input.type_name()),
                ));
            }
            let mut out = Vec::new();
            for item in input.into_items()? {
                frame[*var] = item;
                out.push(eval(body, frame, cx)?);
            }
            array(out)
        }
        Node::Filter {
            input,
            var,
            cond,
            limit,
        } => {
            let input = eval(input, frame, cx)?;
            let limit = match limit {
                None => None,
                Some(l) => {
                    let l = eval(l, frame, cx)?;
                    if l.nullish() {
                        None
                    } else {
                        Some(filter_limit(&l)?)
                    }
                }
            };
            if input.nullish() {
                return Ok(Val::null());
            }
            if !input.is_array() {
                return Err(fail(
                    ExprError::FilterInputNotArray,
                    format!(
                        "input to $filter must be an array not {}",
                        input.type_name()
                    ),
                ));
            }
            let mut out = Vec::new();
            for item in input.into_items()? {
                if limit.is_some_and(|l| out.len() >= l) {
                    break;
                }
                frame[*var] = item.clone();
                if eval(cond, frame, cx)?.truthy() {
                    out.push(item);
                }
            }
            array(out)
        }
        Node::Reduce {
            input,
            initial,
            this,
            value,
            body,
        } => {
            let input = eval(input, frame, cx)?;
            if input.nullish() {
                return Ok(Val::null());
            }
            if !input.is_array() {
                return Err(fail(
                    ExprError::ReduceInputNotArray,
                    format!(
                        "$reduce requires that 'input' be an array, found: {}",
                        super::value::shown(&input)
                    ),
                ));
            }
            let mut acc = eval(initial, frame, cx)?;
            for item in input.into_items()? {
                frame[*this] = item;
                frame[*value] = acc;
                acc = eval(body, frame, cx)?;
            }
            acc
        }
        Node::Script { source, args } => {
            let mut values = Vec::with_capacity(args.len());
            for a in args {
                values.push(eval(a, frame, cx)?.into_bson_or_null());
            }
            Val::Own(crate::js::call(source, &values)?)
        }
        Node::Guarded {
            op,
            args,
            on_null,
            on_error,
        } => {
            let mut values = Vec::with_capacity(args.len());
            for a in args {
                values.push(eval(a, frame, cx)?);
            }
            let input_nullish = values.first().is_some_and(Val::nullish);
            match (op.apply)(cx, values) {
                Ok(v) => match on_null {
                    Some(fallback) if input_nullish => eval(fallback, frame, cx)?,
                    _ => v,
                },
                Err(e) if e.kind == ErrorKind::ConversionFailure && on_error.is_some() => {
                    match on_error {
                        Some(fallback) => eval(fallback, frame, cx)?,
                        None => return Err(e),
                    }
                }
                Err(e) => return Err(e),
            }
        }
    })
}

/// `$filter`'s `limit`: a positive integral number.
fn filter_limit(l: &Val<'_>) -> Result<usize> {
    let Some(n) = integral(l).filter(|_| l.is_number()) else {
        return Err(fail(
            ExprError::FilterLimitNotIntegral,
            format!(
                "$filter: limit must be represented as a 32-bit integral value: {}",
                super::value::shown(l)
            ),
        ));
    };
    match i32::try_from(n) {
        Ok(n) if n >= 1 => Ok(n as usize),
        Ok(_) => Err(fail(
            ExprError::FilterLimitNotPositive,
            format!("$filter: limit must be greater than 0: {n}"),
        )),
        Err(_) => Err(fail(
            ExprError::FilterLimitNotIntegral,
            format!("$filter: limit must be represented as a 32-bit integral value: {n}"),
        )),
    }
}
