//! The eager operators by name: every family's `OPS` list in one place,
//! so the parser finds `$add` without knowing which file owns it.

use super::tree::OpDef;
use super::{arith, array, bits, compare, convert, logic, object, random, set, string, trig};

/// The eager operator called `name`.
pub(super) fn lookup(name: &str) -> Option<&'static OpDef> {
    [
        arith::OPS,
        trig::OPS,
        bits::OPS,
        random::OPS,
        compare::OPS,
        logic::OPS,
        string::OPS,
        array::OPS,
        set::OPS,
        object::OPS,
        convert::OPS,
    ]
    .into_iter()
    .flatten()
    .copied()
    .find(|d| d.name == name)
}
