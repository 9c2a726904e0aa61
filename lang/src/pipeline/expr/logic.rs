//! Boolean operators that evaluate all their arguments: `$not`,
//! `$allElementsTrue`, `$anyElementTrue`. (`$and`, `$or`, `$cond`,
//! `$ifNull` and `$switch` stop early, so the evaluator runs them.)

use super::tree::{Arity, OpDef, op};
use super::value::{Cx, Val, fail};
use crate::error::{ExprError, Result};

op!(NOT, "$not", Arity::Exactly(1), not);
op!(
    ALL_ELEMENTS_TRUE,
    "$allElementsTrue",
    Arity::Exactly(1),
    all_elements_true
);
op!(
    ANY_ELEMENT_TRUE,
    "$anyElementTrue",
    Arity::Exactly(1),
    any_element_true
);

pub(super) static OPS: &[&OpDef] = &[&NOT, &ALL_ELEMENTS_TRUE, &ANY_ELEMENT_TRUE];

fn not<'a>(_: &Cx<'_>, args: Vec<Val<'a>>) -> Result<Val<'a>> {
    Ok(Val::bool(!args[0].truthy()))
}

fn elements<'a>(name: &str, kind: ExprError, args: Vec<Val<'a>>) -> Result<Vec<Val<'a>>> {
    let v = args.into_iter().next().unwrap_or(Val::Missing);
    if !v.is_array() {
        return Err(fail(
            kind,
            format!(
                "{name}'s argument must be an array, but is {}",
                v.type_name()
            ),
        ));
    }
    v.into_items()
}

fn all_elements_true<'a>(_: &Cx<'_>, args: Vec<Val<'a>>) -> Result<Val<'a>> {
    let items = elements("$allElementsTrue", ExprError::AllElementsTrueType, args)?;
    Ok(Val::bool(items.iter().all(Val::truthy)))
}

fn any_element_true<'a>(_: &Cx<'_>, args: Vec<Val<'a>>) -> Result<Val<'a>> {
    let items = elements("$anyElementTrue", ExprError::AnyElementTrueType, args)?;
    Ok(Val::bool(items.iter().any(Val::truthy)))
}
