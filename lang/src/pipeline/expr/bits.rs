//! Bitwise operators on integers: `$bitAnd`, `$bitOr`, `$bitXor` over any
//! number of ints and longs, and `$bitNot`.
//!
//! As in mongod: the result is a long when any operand is one, else an
//! int; null or missing anywhere (in order) makes it null; any other type,
//! doubles and decimals included, fails with TypeMismatch.

use bson::RawBsonRef;

use super::tree::{Arity, OpDef, op};
use super::value::{Cx, Val};
use crate::error::{Error, Result};

op!(BIT_AND, "$bitAnd", Arity::Any, bit_and);
op!(BIT_OR, "$bitOr", Arity::Any, bit_or);
op!(BIT_XOR, "$bitXor", Arity::Any, bit_xor);
op!(BIT_NOT, "$bitNot", Arity::Exactly(1), bit_not);

pub(super) static OPS: &[&OpDef] = &[&BIT_AND, &BIT_OR, &BIT_XOR, &BIT_NOT];

/// Folds the operands with `f` from `identity`.
fn fold<'a>(
    name: &str,
    args: &[Val<'_>],
    identity: i64,
    f: fn(i64, i64) -> i64,
) -> Result<Val<'a>> {
    let mut acc = identity;
    let mut long = false;
    for v in args {
        match v.get() {
            Some(RawBsonRef::Int32(n)) => acc = f(acc, i64::from(n)),
            Some(RawBsonRef::Int64(n)) => {
                acc = f(acc, n);
                long = true;
            }
            _ if v.nullish() => return Ok(Val::null()),
            _ => {
                return Err(Error::type_mismatch(format!(
                    "All operands of {name} must be ints or longs, but got {}",
                    v.type_name()
                )));
            }
        }
    }
    // Ints stay within 32 bits under and, or and xor.
    Ok(if long {
        Val::long(acc)
    } else {
        Val::int(acc as i32)
    })
}

fn bit_and<'a>(_: &Cx<'_>, args: Vec<Val<'a>>) -> Result<Val<'a>> {
    fold("$bitAnd", &args, -1, |a, b| a & b)
}

fn bit_or<'a>(_: &Cx<'_>, args: Vec<Val<'a>>) -> Result<Val<'a>> {
    fold("$bitOr", &args, 0, |a, b| a | b)
}

fn bit_xor<'a>(_: &Cx<'_>, args: Vec<Val<'a>>) -> Result<Val<'a>> {
    fold("$bitXor", &args, 0, |a, b| a ^ b)
}

fn bit_not<'a>(_: &Cx<'_>, args: Vec<Val<'a>>) -> Result<Val<'a>> {
    let v = &args[0];
    match v.get() {
        Some(RawBsonRef::Int32(n)) => Ok(Val::int(!n)),
        Some(RawBsonRef::Int64(n)) => Ok(Val::long(!n)),
        _ if v.nullish() => Ok(Val::null()),
        _ => Err(Error::type_mismatch(format!(
            "$bitNot only supports int and long, not: {}",
            v.type_name()
        ))),
    }
}
