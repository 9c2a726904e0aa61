//! Evaluating a filter: whether a document matches a [`Filter`], and
//! whether one predicate holds at a path or for one value, by MongoDB's
//! comparison rules (type brackets, null and missing, NaN, MinKey/MaxKey).

use std::cmp::Ordering;

use bson::{RawArray, RawBson, RawBsonRef, RawDocument};

use super::types::{ElemMatch, Expr, Filter, GeoTest, Pred, TypeSet};
use crate::encoding::bracket::canonical_type;
use crate::encoding::cmp::Cmp;
use crate::error::{Error, ErrorKind, Result};
use crate::query::in_list::InList;
use crate::query::path::{LeafArray, any_candidate, elements};
use crate::query::value::{is_nan, number_as_f64, type_code};

impl Filter {
    /// Whether the document matches; fails only when a `$expr` fails on it.
    /// A `$text` needs its search (the collection's text index) bound
    /// first; unbound, it fails as a query without a text index does.
    pub fn matches(&self, doc: &RawDocument) -> Result<bool> {
        if let Some(text) = &self.text {
            let Some(search) = &text.search else {
                return Err(text_index_required());
            };
            if !search.matches(doc)? {
                return Ok(false);
            }
        }
        self.root.matches(doc, self.cmp())
    }
}

impl Expr {
    /// Whether the document matches this node.
    pub fn matches(&self, doc: &RawDocument, cmp: Cmp<'_>) -> Result<bool> {
        Ok(match self {
            Expr::And(children) => {
                for c in children {
                    if !c.matches(doc, cmp)? {
                        return Ok(false);
                    }
                }
                true
            }
            Expr::Or(children) => {
                for c in children {
                    if c.matches(doc, cmp)? {
                        return Ok(true);
                    }
                }
                false
            }
            Expr::Nor(children) => {
                for c in children {
                    if c.matches(doc, cmp)? {
                        return Ok(false);
                    }
                }
                true
            }
            Expr::Path { path, pred } => pred.matches_at(doc, path, cmp),
            Expr::AlwaysTrue => true,
            Expr::AlwaysFalse => false,
            Expr::JsonSchema(schema) => schema.matches(doc),
            Expr::Expr(clause) => clause.expr.truthy_with(doc, &|a, b| cmp.values(a, b))?,
            Expr::Where(source) => crate::js::where_matches(source, doc)?,
        })
    }

    /// Whether a document inside `$elemMatch` matches. `$expr` is refused
    /// below the top level, so nothing here can fail.
    fn matches_nested(&self, doc: &RawDocument, cmp: Cmp<'_>) -> bool {
        self.matches(doc, cmp).unwrap_or(false)
    }
}

impl Pred {
    /// Whether the predicate holds at `path` in `doc`. Negations apply to
    /// the path as a whole: `{a: {$ne: 1}}` rejects `a: [1, 2]`.
    pub fn matches_at(&self, doc: &RawDocument, path: &str, cmp: Cmp<'_>) -> bool {
        let holds_for_some = |test: &mut dyn FnMut(Option<RawBsonRef<'_>>) -> bool| -> bool {
            any_candidate(doc, path, LeafArray::Elements, test)
        };
        match self {
            Pred::Ne(value) => !holds_for_some(&mut |c| compare(Op::Eq, value, c, cmp)),
            Pred::Nin(list) => !holds_for_some(&mut |c| in_list(list, c, cmp)),
            Pred::Exists(false) => !holds_for_some(&mut |c| c.is_some()),
            Pred::Not(preds) => !preds.iter().all(|p| p.matches_at(doc, path, cmp)),
            Pred::AnyOf(preds) => preds.iter().any(|p| p.matches_at(doc, path, cmp)),
            Pred::All(values) => {
                !values.is_empty()
                    && values
                        .iter()
                        .all(|v| holds_for_some(&mut |c| compare(Op::Eq, v, c, cmp)))
            }
            // Array predicates look at an array at the end of the path
            // whole, never at its elements; so does a geo test, for which
            // an array is a legacy pair or a list of locations.
            Pred::ElemMatch(_) | Pred::Size(_) | Pred::Geo(_) => {
                any_candidate(doc, path, LeafArray::Whole, &mut |c| {
                    self.matches_value(c, cmp)
                })
            }
            _ => holds_for_some(&mut |c| self.matches_value(c, cmp)),
        }
    }

    /// Whether the predicate holds for one candidate value (`None` is a
    /// missing value). This is how predicates inside `$elemMatch` see each
    /// element.
    pub fn matches_value(&self, candidate: Option<RawBsonRef<'_>>, cmp: Cmp<'_>) -> bool {
        match self {
            Pred::Eq(v) => compare(Op::Eq, v, candidate, cmp),
            Pred::Ne(v) => !compare(Op::Eq, v, candidate, cmp),
            Pred::Gt(v) => compare(Op::Gt, v, candidate, cmp),
            Pred::Gte(v) => compare(Op::Gte, v, candidate, cmp),
            Pred::Lt(v) => compare(Op::Lt, v, candidate, cmp),
            Pred::Lte(v) => compare(Op::Lte, v, candidate, cmp),
            Pred::In(list) => in_list(list, candidate, cmp),
            Pred::Nin(list) => !in_list(list, candidate, cmp),
            Pred::Exists(exists) => candidate.is_some() == *exists,
            Pred::Not(preds) => !preds.iter().all(|p| p.matches_value(candidate, cmp)),
            Pred::All(values) => {
                !values.is_empty() && values.iter().all(|v| compare(Op::Eq, v, candidate, cmp))
            }
            Pred::ElemMatch(condition) => match candidate {
                Some(RawBsonRef::Array(array)) => condition.matches_array(array, cmp),
                _ => false,
            },
            Pred::Size(size) => match candidate {
                Some(RawBsonRef::Array(array)) => elements(array).count() as i64 == *size,
                _ => false,
            },
            Pred::Mod { divisor, remainder } => candidate
                .and_then(truncated_number)
                .is_some_and(|n| n.checked_rem(*divisor).unwrap_or(0) == *remainder),
            Pred::Type(types) => candidate.is_some_and(|v| types.contains(v)),
            Pred::Bits(bits) => bits.matches(candidate),
            Pred::Regex(regex) => match candidate {
                Some(RawBsonRef::String(s) | RawBsonRef::Symbol(s)) => regex.is_match(s),
                Some(RawBsonRef::RegularExpression(r)) => {
                    r.pattern.as_str() == regex.pattern() && r.options.as_str() == regex.options()
                }
                _ => false,
            },
            Pred::AnyOf(preds) => preds.iter().any(|p| p.matches_value(candidate, cmp)),
            Pred::Geo(geo) => candidate.is_some_and(|v| geo_holds(&geo.0, v)),
        }
    }
}

impl ElemMatch {
    /// Whether some element of the array satisfies the condition.
    pub fn matches_array(&self, array: &RawArray, cmp: Cmp<'_>) -> bool {
        elements(array).any(|element| self.matches_element(element, cmp))
    }

    /// Whether one element satisfies the condition.
    pub fn matches_element(&self, element: RawBsonRef<'_>, cmp: Cmp<'_>) -> bool {
        match self {
            ElemMatch::Document(filter) => match element {
                RawBsonRef::Document(doc) => filter.matches_nested(doc, cmp),
                RawBsonRef::Array(inner) => RawDocument::from_bytes(inner.as_bytes())
                    .is_ok_and(|doc| filter.matches_nested(doc, cmp)),
                _ => false,
            },
            ElemMatch::Value(preds) => preds.iter().all(|p| p.matches_value(Some(element), cmp)),
        }
    }
}

impl TypeSet {
    /// Whether the value is of one of the types.
    pub fn contains(&self, value: RawBsonRef<'_>) -> bool {
        (self.numbers && number_as_f64(value).is_some()) || self.codes.contains(&type_code(value))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Eq,
    Gt,
    Gte,
    Lt,
    Lte,
}

/// MongoDB's comparison of one candidate with an operand. Values of
/// different type brackets never compare, except that null, undefined and
/// missing are equal to each other, and MinKey/MaxKey operands bound
/// everything. NaN equals only NaN and is otherwise unordered.
fn compare(op: Op, operand: &RawBson, candidate: Option<RawBsonRef<'_>>, cmp: Cmp<'_>) -> bool {
    let operand = operand.as_raw_bson_ref();
    // A missing value sits in undefined's bracket.
    let value = candidate.unwrap_or(RawBsonRef::Undefined);
    let (value_type, operand_type) = (canonical_type(&value), canonical_type(&operand));
    if value_type != operand_type {
        let nullish = |t| {
            t == canonical_type(&RawBsonRef::Null) || t == canonical_type(&RawBsonRef::Undefined)
        };
        if nullish(value_type) && nullish(operand_type) {
            return matches!(op, Op::Eq | Op::Gte | Op::Lte);
        }
        return match operand {
            RawBsonRef::MaxKey => matches!(op, Op::Lt | Op::Lte),
            RawBsonRef::MinKey => matches!(op, Op::Gt | Op::Gte),
            _ => false,
        };
    }
    if op != Op::Eq && (is_nan(value) || is_nan(operand)) {
        return matches!(op, Op::Gte | Op::Lte) && is_nan(value) && is_nan(operand);
    }
    let order = cmp.values(value, operand);
    match op {
        Op::Eq => order == Ordering::Equal,
        Op::Gt => order == Ordering::Greater,
        Op::Gte => order != Ordering::Less,
        Op::Lt => order == Ordering::Less,
        Op::Lte => order != Ordering::Greater,
    }
}

/// `$in` for one candidate: equal to a listed value, or missing/undefined
/// when the list holds null.
fn in_list(list: &InList, candidate: Option<RawBsonRef<'_>>, cmp: Cmp<'_>) -> bool {
    let nullish = matches!(candidate, None | Some(RawBsonRef::Undefined));
    if nullish && list.has_null() {
        return true;
    }
    candidate.is_some_and(|value| list.contains(value, cmp))
}

/// A candidate for `$mod`: a finite number truncated toward zero (doubles
/// beyond `i64` saturate, as mongod's coercion does).
fn truncated_number(v: RawBsonRef<'_>) -> Option<i64> {
    match v {
        RawBsonRef::Int32(n) => Some(n.into()),
        RawBsonRef::Int64(n) => Some(n),
        other => number_as_f64(other)
            .filter(|x| x.is_finite())
            .map(|x| x as i64),
    }
}

/// Whether some location in `value` passes the geo test (a value that
/// holds no valid location passes none).
pub(crate) fn geo_holds(test: &GeoTest, value: RawBsonRef<'_>) -> bool {
    let Ok(Some(locations)) = crate::geo::stored_shapes(value) else {
        return false;
    };
    locations.iter().any(|l| match test {
        GeoTest::Within(region) => crate::geo::within(l, region),
        GeoTest::Intersects(shape) => crate::geo::intersects(l, shape),
        GeoTest::Near(near) => near.distance(l).is_some_and(|d| near.admits(d)),
    })
}

/// mongod's error for a `$text` on a collection without a text index.
pub fn text_index_required() -> Error {
    Error::new(
        ErrorKind::IndexNotFound,
        "text index required for $text query",
    )
}
