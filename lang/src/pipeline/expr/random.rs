//! `$rand`: a double drawn uniformly from [0, 1) at every evaluation, so
//! never folded into a constant (`fold`). It takes no arguments: `{$rand:
//! {}}`, as in mongod.

use bson::RawBsonRef;

use super::tree::{Arity, OpDef, op};
use super::value::{Cx, Val, fail};
use crate::error::{ExprError, Result};

op!(RAND, "$rand", Arity::Exactly(1), rand_value);

pub(super) static OPS: &[&OpDef] = &[&RAND];

/// Operators whose value changes from one evaluation to the next.
pub(super) const VOLATILE: &[&str] = &["$rand"];

fn rand_value<'a>(_: &Cx<'_>, args: Vec<Val<'a>>) -> Result<Val<'a>> {
    match args[0].get() {
        Some(RawBsonRef::Document(d)) if d.is_empty() => Ok(Val::double(rand::random::<f64>())),
        _ => Err(fail(
            ExprError::RandArguments,
            "$rand does not currently accept arguments",
        )),
    }
}
