//! The update operators: how each one checks its argument when the update
//! is parsed, and what it does to the one element its path leads to when
//! the update is applied.
//!
//! An operator sees a single element (or the absence of one); finding that
//! element, creating parents, conflicts between paths and `_id`
//! immutability are the tree walk's job in `apply`.

use std::cmp::Ordering;

use bson::RawBsonRef;
use bson::raw::RawBson;
use bson::spec::ElementType;

use super::array_ops::{AddToSet, Pop, Pull, PullAll, Push};
use super::env::{Env, Outcome, Site};
use super::render;
use super::tree::Value;
use crate::encoding::arith::Num;
use crate::encoding::cmp::compare_values;
use crate::{Error, ErrorKind, Result};

/// Which operator a top-level key of an update document names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum OpKind {
    AddToSet,
    Bit,
    CurrentDate,
    Inc,
    Max,
    Min,
    Mul,
    Pop,
    Pull,
    PullAll,
    Push,
    Rename,
    Set,
    SetOnInsert,
    Unset,
}

impl OpKind {
    pub(crate) fn from_name(name: &str) -> Option<OpKind> {
        Some(match name {
            "$addToSet" => OpKind::AddToSet,
            "$bit" => OpKind::Bit,
            "$currentDate" => OpKind::CurrentDate,
            "$inc" => OpKind::Inc,
            "$max" => OpKind::Max,
            "$min" => OpKind::Min,
            "$mul" => OpKind::Mul,
            "$pop" => OpKind::Pop,
            "$pull" => OpKind::Pull,
            "$pullAll" => OpKind::PullAll,
            "$push" => OpKind::Push,
            "$rename" => OpKind::Rename,
            "$set" => OpKind::Set,
            "$setOnInsert" => OpKind::SetOnInsert,
            "$unset" => OpKind::Unset,
            _ => return None,
        })
    }
}

/// One parsed operator with its argument, ready to apply at its path.
#[derive(Debug, Clone)]
pub(crate) enum Op {
    Set(RawBson),
    SetOnInsert(RawBson),
    Unset,
    Arith(ArithOp, Num),
    Compare(Ordering, RawBson),
    CurrentDate(DateKind),
    /// The destination of a `$rename`; the value comes from the source
    /// taken out of the document before the walk (slot in `Env::renamed`).
    Rename(usize),
    /// The source of a `$rename`: holds its path for conflict detection.
    Placeholder,
    Push(Push),
    AddToSet(AddToSet),
    Pull(Pull),
    PullAll(PullAll),
    Pop(Pop),
    Bit(Vec<(BitOp, Num)>),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ArithOp {
    Inc,
    Mul,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DateKind {
    Date,
    Timestamp,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BitOp {
    And,
    Or,
    Xor,
}

impl ArithOp {
    fn name(self) -> &'static str {
        match self {
            ArithOp::Inc => "$inc",
            ArithOp::Mul => "$mul",
        }
    }
}

impl Op {
    /// Checks one `field: argument` of an operator. `field` is only used in
    /// messages; the path itself is parsed by the caller.
    pub(crate) fn parse(kind: OpKind, field: &str, arg: RawBsonRef<'_>) -> Result<Op> {
        let owned = || RawBson::from(arg);
        Ok(match kind {
            OpKind::Set => Op::Set(owned()),
            OpKind::SetOnInsert => Op::SetOnInsert(owned()),
            OpKind::Unset => Op::Unset,
            OpKind::Inc | OpKind::Mul => {
                let (op, verb) = match kind {
                    OpKind::Inc => (ArithOp::Inc, "increment"),
                    _ => (ArithOp::Mul, "multiply"),
                };
                let n = Num::from_bson(arg).ok_or_else(|| {
                    Error::type_mismatch(format!(
                        "Cannot {verb} with non-numeric argument: {{{}}}",
                        render::element(field, arg)
                    ))
                })?;
                Op::Arith(op, n)
            }
            OpKind::Max => Op::Compare(Ordering::Greater, owned()),
            OpKind::Min => Op::Compare(Ordering::Less, owned()),
            OpKind::CurrentDate => Op::CurrentDate(parse_current_date(arg)?),
            OpKind::Push => Op::Push(Push::parse(arg)?),
            OpKind::AddToSet => Op::AddToSet(AddToSet::parse(arg)?),
            OpKind::Pull => Op::Pull(Pull::parse(arg)?),
            OpKind::PullAll => Op::PullAll(PullAll::parse(arg)?),
            OpKind::Pop => Op::Pop(Pop::parse(field, arg)?),
            OpKind::Bit => Op::Bit(parse_bit(field, arg)?),
            OpKind::Rename => unreachable!("$rename is parsed by the tree builder"),
        })
    }

    /// Whether the operator does nothing in this update at all.
    fn inert(&self, env: &Env<'_>) -> bool {
        matches!(self, Op::SetOnInsert(_)) && !env.is_insert
    }

    /// Applies the operator to the element its path leads to.
    pub(crate) fn existing<'a>(
        &'a self,
        target: &mut Value<'a>,
        site: &Site<'_>,
        env: &mut Env<'a>,
    ) -> Result<Outcome> {
        if self.inert(env) {
            return Ok(Outcome::Unchanged);
        }
        match self {
            Op::Set(v) | Op::SetOnInsert(v) => {
                Ok(replace_unless_equal(target, v.as_raw_bson_ref()))
            }
            Op::Unset => Ok(Outcome::Removed),
            Op::Arith(op, n) => arith_existing(*op, *n, target, site, env),
            Op::Compare(wins, v) => {
                let v = v.as_raw_bson_ref();
                if target.with_ref(|t| env.cmp().values(v, t)) == *wins {
                    *target = Value::Raw(v);
                    Ok(Outcome::Changed)
                } else {
                    Ok(Outcome::Unchanged)
                }
            }
            Op::CurrentDate(kind) => {
                *target = current_date(*kind, env);
                Ok(Outcome::Changed)
            }
            Op::Rename(slot) => match env.renamed[*slot].take() {
                None => Ok(Outcome::Unchanged),
                Some(v) => {
                    check_rename_destination(site, env)?;
                    // The source is already gone, so the document changed
                    // even if the destination held an equal value.
                    let equal = v.with_ref(|a| target.with_ref(|b| compare_values(a, b)));
                    if equal != Ordering::Equal {
                        *target = v;
                    }
                    Ok(Outcome::Changed)
                }
            },
            Op::Placeholder => Ok(Outcome::Unchanged),
            Op::Push(p) => p.existing(target, site, env),
            Op::AddToSet(a) => a.existing(target, site, env.cmp()),
            Op::Pull(p) => p.existing(target, env.cmp()),
            Op::PullAll(p) => p.existing(target, env.cmp()),
            Op::Pop(p) => p.existing(target, site),
            Op::Bit(ops) => bit_existing(ops, target, site, env),
        }
    }

    /// The value to create when the path leads nowhere, or None when the
    /// operator does nothing to a missing field.
    pub(crate) fn create<'a>(
        &'a self,
        site: &Site<'_>,
        env: &mut Env<'a>,
    ) -> Result<Option<Value<'a>>> {
        if self.inert(env) {
            return Ok(None);
        }
        Ok(match self {
            Op::Set(v) | Op::SetOnInsert(v) | Op::Compare(_, v) => {
                Some(Value::Raw(v.as_raw_bson_ref()))
            }
            Op::Arith(ArithOp::Inc, n) => Some(Value::Owned(n.to_bson())),
            // 0 of the multiplier's type (and sign: -2.0 makes -0.0).
            Op::Arith(ArithOp::Mul, n) => n.mul(Num::Int(0)).map(|z| Value::Owned(z.to_bson())),
            Op::CurrentDate(kind) => Some(current_date(*kind, env)),
            Op::Rename(slot) => match env.renamed[*slot].take() {
                None => None,
                Some(v) => {
                    check_rename_destination(site, env)?;
                    Some(v)
                }
            },
            Op::Push(p) => Some(p.create(env)),
            Op::AddToSet(a) => Some(a.create()),
            Op::Bit(ops) => Some(Value::Owned(apply_bits(ops, Num::Int(0)).to_bson())),
            Op::Unset | Op::Placeholder | Op::Pull(_) | Op::PullAll(_) | Op::Pop(_) => None,
        })
    }

    /// The path runs into `blocker` (a scalar, or an array addressed by a
    /// field name) at component `part`.
    pub(crate) fn blocked(
        &self,
        site: &Site<'_>,
        part: &str,
        blocker: (&str, &Value<'_>),
        env: &Env<'_>,
    ) -> Result<()> {
        if self.inert(env) {
            return Ok(());
        }
        let rendered = || blocker.1.render_element(blocker.0);
        match self {
            Op::Unset | Op::Placeholder => Ok(()),
            Op::Rename(slot) if env.renamed[*slot].is_none() => Ok(()),
            Op::Pull(_) | Op::PullAll(_) | Op::Pop(_) => Err(Error::new(
                ErrorKind::PathNotViable,
                format!(
                    "Cannot use the part ({part}) of ({}) to traverse the element ({{{}}})",
                    site.path.dotted(),
                    rendered()
                ),
            )),
            _ => Err(Error::new(
                ErrorKind::PathNotViable,
                format!("Cannot create field '{part}' in element {{{}}}", rendered()),
            )),
        }
    }
}

/// `$set`'s rule: a value with the same type and bytes changes nothing.
pub(crate) fn replace_unless_equal<'a>(target: &mut Value<'a>, v: RawBsonRef<'a>) -> Outcome {
    if target.binary_equal(v) {
        Outcome::Unchanged
    } else {
        *target = Value::Raw(v);
        Outcome::Changed
    }
}

fn arith_existing<'a>(
    op: ArithOp,
    n: Num,
    target: &mut Value<'a>,
    site: &Site<'_>,
    env: &Env<'a>,
) -> Result<Outcome> {
    let current = target.with_ref(Num::from_bson).ok_or_else(|| {
        Error::type_mismatch(format!(
            "Cannot apply {} to a value of non-numeric type. {} has the field '{}' of non-numeric type {}",
            op.name(),
            env.id_in_braces(),
            site.name(),
            target.type_name()
        ))
    })?;
    let result = match op {
        ArithOp::Inc => n.add(current),
        ArithOp::Mul => n.mul(current),
    }
    .ok_or_else(|| {
        Error::bad_value(format!(
            "Failed to apply {} operations to current value ({}) for document {}",
            op.name(),
            current.debug_string(),
            env.id_in_braces()
        ))
    })?;
    if result.identical(current) {
        return Ok(Outcome::Unchanged);
    }
    *target = Value::Owned(result.to_bson());
    Ok(Outcome::Changed)
}

fn parse_current_date(arg: RawBsonRef<'_>) -> Result<DateKind> {
    match arg {
        // MongoDB sets a date for `false` too.
        RawBsonRef::Boolean(_) => Ok(DateKind::Date),
        RawBsonRef::Document(d) => {
            let mut kind = None;
            for item in d.iter() {
                let (k, v) = item?;
                if k.as_str() != "$type" {
                    return Err(Error::bad_value(format!(
                        "Unrecognized $currentDate option: {}",
                        k.as_str()
                    )));
                }
                kind = match v {
                    RawBsonRef::String("date") => Some(DateKind::Date),
                    RawBsonRef::String("timestamp") => Some(DateKind::Timestamp),
                    _ => kind,
                };
            }
            kind.ok_or_else(|| {
                Error::bad_value(
                    "The '$type' string field is required to be 'date' or 'timestamp': \
                     {$currentDate: {field : {$type: 'date'}}}",
                )
            })
        }
        other => Err(Error::bad_value(format!(
            "{} is not valid type for $currentDate. Please use a boolean ('true') or a $type \
             expression ({{$type: 'timestamp/date'}}).",
            render::type_name(other.element_type())
        ))),
    }
}

fn current_date<'a>(kind: DateKind, env: &mut Env<'a>) -> Value<'a> {
    Value::Owned(match kind {
        DateKind::Date => RawBson::DateTime(env.now),
        DateKind::Timestamp => RawBson::Timestamp(env.next_timestamp()),
    })
}

fn check_rename_destination(site: &Site<'_>, env: &Env<'_>) -> Result<()> {
    match site.array_name {
        Some(array) => Err(Error::bad_value(format!(
            "The destination field cannot be an array element, '{}' in doc with {} has an array \
             field called '{array}'",
            site.path.dotted(),
            env.id_or_no_id()
        ))),
        None => Ok(()),
    }
}

fn parse_bit(field: &str, arg: RawBsonRef<'_>) -> Result<Vec<(BitOp, Num)>> {
    let RawBsonRef::Document(d) = arg else {
        return Err(Error::bad_value(format!(
            "The $bit modifier is not compatible with a {}. You must pass in an embedded \
             document: {{$bit: {{field: {{and/or/xor: #}}}}",
            render::type_name(arg.element_type())
        )));
    };
    let mut ops = Vec::new();
    for item in d.iter() {
        let (k, v) = item?;
        let op = match k.as_str() {
            "and" => BitOp::And,
            "or" => BitOp::Or,
            "xor" => BitOp::Xor,
            other => {
                return Err(Error::bad_value(format!(
                    "The $bit modifier only supports 'and', 'or', and 'xor', not '{other}' which \
                     is an unknown operator: {{{}}}",
                    render::element(other, v)
                )));
            }
        };
        let n = match v {
            RawBsonRef::Int32(_) | RawBsonRef::Int64(_) => Num::from_bson(v).expect("integer"),
            _ => {
                return Err(Error::bad_value(format!(
                    "The $bit modifier field must be an Integer(32/64 bit); a '{}' is not \
                     supported here: {{{}}}",
                    render::type_name(v.element_type()),
                    render::element(k.as_str(), v)
                )));
            }
        };
        ops.push((op, n));
    }
    if ops.is_empty() {
        return Err(Error::bad_value(format!(
            "You must pass in at least one bitwise operation. The format is: \
             {{$bit: {{field: {{and/or/xor: #}}}}, not {{{}}}",
            render::element(field, arg)
        )));
    }
    Ok(ops)
}

/// Applies `$bit` operations in order; int32 with int32 stays int32, any
/// int64 makes an int64.
fn apply_bits(ops: &[(BitOp, Num)], start: Num) -> Num {
    ops.iter().fold(start, |acc, &(op, n)| {
        let f = |a: i64, b: i64| match op {
            BitOp::And => a & b,
            BitOp::Or => a | b,
            BitOp::Xor => a ^ b,
        };
        match (acc, n) {
            (Num::Int(a), Num::Int(b)) => Num::Int(f(a.into(), b.into()) as i32),
            (Num::Int(a), Num::Long(b)) => Num::Long(f(a.into(), b)),
            (Num::Long(a), Num::Int(b)) => Num::Long(f(a, b.into())),
            (Num::Long(a), Num::Long(b)) => Num::Long(f(a, b)),
            _ => unreachable!("$bit works on integers only"),
        }
    })
}

fn bit_existing<'a>(
    ops: &[(BitOp, Num)],
    target: &mut Value<'a>,
    site: &Site<'_>,
    env: &Env<'a>,
) -> Result<Outcome> {
    let current = match target.element_type() {
        ElementType::Int32 | ElementType::Int64 => {
            target.with_ref(Num::from_bson).expect("integer")
        }
        _ => {
            return Err(Error::bad_value(format!(
                "Cannot apply $bit to a value of non-integral type.{} has the field {} of \
                 non-integer type {}",
                env.id_in_braces(),
                site.name(),
                target.type_name()
            )));
        }
    };
    let result = apply_bits(ops, current);
    if result.identical(current) {
        return Ok(Outcome::Unchanged);
    }
    *target = Value::Owned(result.to_bson());
    Ok(Outcome::Changed)
}
