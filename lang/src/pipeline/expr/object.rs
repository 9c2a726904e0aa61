//! Object operators: `$mergeObjects`, `$objectToArray`, `$arrayToObject`,
//! `$getField`, `$setField` and `$unsetField` (a `$setField` to
//! `$$REMOVE`). Field names here are data, so they may contain dots or
//! start with `$`.

use bson::{RawBson, RawBsonRef};

use super::tree::{Arity, Node, OpDef, op};
use super::value::{Cx, Val, document, fail, fields, shown};
use crate::error::{ExprError, Result};

op!(MERGE_OBJECTS, "$mergeObjects", Arity::Any, merge_objects);
op!(
    OBJECT_TO_ARRAY,
    "$objectToArray",
    Arity::Exactly(1),
    object_to_array
);
op!(
    ARRAY_TO_OBJECT,
    "$arrayToObject",
    Arity::Exactly(1),
    array_to_object
);
op!(GET_FIELD, "$getField", Arity::Exactly(2), get_field);
op!(SET_FIELD, "$setField", Arity::Exactly(3), set_field);

pub(super) static OPS: &[&OpDef] = &[&MERGE_OBJECTS, &OBJECT_TO_ARRAY, &ARRAY_TO_OBJECT];

/// Sets `name` in an ordered field list: replaced in place if present,
/// appended otherwise; a missing value removes it.
fn set<'a>(out: &mut Vec<(String, Val<'a>)>, name: &str, value: Val<'a>) {
    match out.iter().position(|(k, _)| k == name) {
        Some(i) if value.is_missing() => {
            out.remove(i);
        }
        Some(i) => out[i].1 = value,
        None if value.is_missing() => {}
        None => out.push((name.to_owned(), value)),
    }
}

/// The fields of a document value, keeping borrowed values borrowed.
fn entries<'a>(v: Val<'a>) -> Result<Vec<(String, Val<'a>)>> {
    Ok(match v {
        Val::Ref(RawBsonRef::Document(d)) => fields(d)?
            .into_iter()
            .map(|(k, v)| (k.to_owned(), Val::Ref(v)))
            .collect(),
        Val::Own(RawBson::Document(d)) => fields(&d)?
            .into_iter()
            .map(|(k, v)| (k.to_owned(), Val::Own(v.into())))
            .collect(),
        _ => Vec::new(),
    })
}

fn merge_objects<'a>(_: &Cx<'_>, args: Vec<Val<'a>>) -> Result<Val<'a>> {
    let mut out = Vec::new();
    for v in args {
        if v.nullish() {
            continue;
        }
        if v.as_document().is_none() {
            return Err(fail(
                ExprError::MergeObjectsType,
                format!(
                    "$mergeObjects requires object inputs, but input {} is of type {}",
                    shown(&v),
                    v.type_name()
                ),
            ));
        }
        for (k, value) in entries(v)? {
            set(&mut out, &k, value);
        }
    }
    document(out)
}

fn object_to_array<'a>(_: &Cx<'_>, args: Vec<Val<'a>>) -> Result<Val<'a>> {
    let v = args.into_iter().next().unwrap_or(Val::Missing);
    if v.nullish() {
        return Ok(Val::null());
    }
    if v.as_document().is_none() {
        return Err(fail(
            ExprError::ObjectToArrayType,
            format!(
                "$objectToArray requires a document input, found: {}",
                v.type_name()
            ),
        ));
    }
    let mut pairs = Vec::new();
    for (k, value) in entries(v)? {
        pairs.push(document([
            ("k".to_owned(), Val::string(k)),
            ("v".to_owned(), value),
        ])?);
    }
    Ok(super::value::array(pairs))
}

fn array_to_object<'a>(_: &Cx<'_>, args: Vec<Val<'a>>) -> Result<Val<'a>> {
    let v = args.into_iter().next().unwrap_or(Val::Missing);
    if v.nullish() {
        return Ok(Val::null());
    }
    if !v.is_array() {
        return Err(fail(
            ExprError::ArrayToObjectType,
            format!(
                "$arrayToObject requires an array input, found: {}",
                v.type_name()
            ),
        ));
    }
    let items = v.into_items()?;
    let mut out: Vec<(String, Val<'a>)> = Vec::new();
    let pairs = match items.first() {
        None => return document(out),
        Some(first) if first.is_array() => true,
        Some(first) if first.as_document().is_some() => false,
        Some(first) => {
            return Err(fail(
                ExprError::ArrayToObjectElementType,
                format!(
                    "Unrecognised input type format for $arrayToObject: {}",
                    first.type_name()
                ),
            ));
        }
    };
    for item in items {
        let (key, value) = if pairs {
            if !item.is_array() {
                return Err(fail(
                    ExprError::ArrayToObjectMixedArray,
                    format!(
                        "$arrayToObject requires a consistent input format. Elements must all be arrays or all be objects. Array was detected, now found: {}",
                        item.type_name()
                    ),
                ));
            }
            let pair = item.into_items()?;
            if pair.len() != 2 {
                return Err(fail(
                    ExprError::ArrayToObjectPairLength,
                    format!(
                        "$arrayToObject requires an array of size 2 arrays,found array of size: {}",
                        pair.len()
                    ),
                ));
            }
            let mut pair = pair.into_iter();
            let (k, v) = (
                pair.next().unwrap_or(Val::Missing),
                pair.next().unwrap_or(Val::Missing),
            );
            let Some(k) = k.as_str().map(str::to_owned) else {
                return Err(fail(
                    ExprError::ArrayToObjectPairKeyType,
                    format!(
                        "$arrayToObject requires an array of key-value pairs, where the key must be of type string. Found key type: {}",
                        k.type_name()
                    ),
                ));
            };
            (k, v)
        } else {
            if item.as_document().is_none() {
                return Err(fail(
                    ExprError::ArrayToObjectMixedObject,
                    format!(
                        "$arrayToObject requires a consistent input format. Elements must all be arrays or all be objects. Object was detected, now found: {}",
                        item.type_name()
                    ),
                ));
            }
            let kv = entries(item)?;
            if kv.len() != 2 {
                return Err(fail(
                    ExprError::ArrayToObjectKeyCount,
                    format!(
                        "$arrayToObject requires an object keys of 'k' and 'v'. Found incorrect number of keys:{}",
                        kv.len()
                    ),
                ));
            }
            let find = |name: &str| kv.iter().find(|(n, _)| n == name).map(|(_, v)| v.clone());
            let (Some(k), Some(v)) = (find("k"), find("v")) else {
                return Err(fail(
                    ExprError::ArrayToObjectMissingKey,
                    "$arrayToObject requires an object with keys 'k' and 'v'. Missing either or both keys from input",
                ));
            };
            let Some(k) = k.as_str().map(str::to_owned) else {
                return Err(fail(
                    ExprError::ArrayToObjectKeyType,
                    format!(
                        "$arrayToObject requires an object with keys 'k' and 'v', where the value of 'k' must be of type string. Found type: {}",
                        k.type_name()
                    ),
                ));
            };
            (k, v)
        };
        if key.contains('\0') {
            return Err(fail(
                ExprError::ArrayToObjectKeyNul,
                "Key field cannot contain an embedded null byte",
            ));
        }
        set(&mut out, &key, value);
    }
    document(out)
}

/// Checks `$setField`/`$unsetField`'s `field`: a constant string.
pub(super) fn check_field_name_arg(name: &str, field: &Node) -> Result<()> {
    if name == "$getField" {
        return Ok(());
    }
    match field {
        Node::Const(RawBson::String(_)) => Ok(()),
        Node::Const(other) => Err(fail(
            ExprError::SetFieldFieldType,
            format!(
                "{name} requires 'field' to evaluate to type String, but got {}",
                crate::encoding::display::type_name(&other.as_raw_bson_ref())
            ),
        )),
        _ => Err(fail(
            ExprError::SetFieldFieldNotConstant,
            format!(
                "{name} requires 'field' to evaluate to a constant, but got a non-constant argument"
            ),
        )),
    }
}

/// `[field, input]`.
fn get_field<'a>(_: &Cx<'_>, args: Vec<Val<'a>>) -> Result<Val<'a>> {
    let mut args = args.into_iter();
    let field = args.next().unwrap_or(Val::Missing);
    let input = args.next().unwrap_or(Val::Missing);
    let Some(name) = field.as_str().map(str::to_owned) else {
        return Err(fail(
            ExprError::GetFieldFieldType,
            format!(
                "$getField requires 'field' to evaluate to type String, but got {}",
                field.type_name()
            ),
        ));
    };
    if matches!(input.get(), Some(RawBsonRef::Null | RawBsonRef::Undefined)) {
        return Ok(Val::null());
    }
    if input.as_document().is_none() {
        return Ok(Val::Missing);
    }
    Ok(entries(input)?
        .into_iter()
        .find(|(k, _)| *k == name)
        .map_or(Val::Missing, |(_, v)| v))
}

/// `[field, input, value]`; a missing value removes the field.
fn set_field<'a>(_: &Cx<'_>, args: Vec<Val<'a>>) -> Result<Val<'a>> {
    let mut args = args.into_iter();
    let field = args.next().unwrap_or(Val::Missing);
    let input = args.next().unwrap_or(Val::Missing);
    let value = args.next().unwrap_or(Val::Missing);
    if input.nullish() {
        return Ok(Val::null());
    }
    if input.as_document().is_none() {
        return Err(fail(
            ExprError::SetFieldInputType,
            format!(
                "$setField requires 'input' to evaluate to type Object, but got {}",
                input.type_name()
            ),
        ));
    }
    let name = field.as_str().unwrap_or_default().to_owned();
    let mut out = entries(input)?;
    set(&mut out, &name, value);
    document(out)
}
