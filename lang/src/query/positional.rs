//! Which array element made a filter match a document: the position an
//! update's positional operator (`"grades.$"`) stands for.
//!
//! MongoDB records, while matching, the offset of the element at which a
//! predicate's path first ran through an array *implicitly*: `{"a.b": 1}`
//! on `a: [{b: 0}, {b: 1}]` records 1, `{grades: 85}` on
//! `grades: [80, 85]` records 1, `$elemMatch` records the element it
//! accepted. Offsets the query names itself (`{"a.0.b": 1}`) are not
//! recorded. Negations (`$ne`, `$nin`, `$not`, `$exists: false`, `$nor`)
//! never record; `$or` records through the branch that matched; of the
//! clauses of an `$and`, the last that records wins.
//!
//! Every test of a value against a predicate is [`Pred`]'s own (this module
//! only decides where to look), so the position always agrees with
//! [`Filter::matches`]. Nothing here edits documents or knows about updates.

use bson::{RawArray, RawBsonRef, RawDocument};

use super::filter::{Expr, Filter, Pred};
use super::path::{array_index, elements, field};
use crate::encoding::cmp::Cmp;

/// The position recorded while matching `filter` against `doc`, or None
/// when the document does not match or no array was traversed.
pub fn matched_position(filter: &Filter, doc: &RawDocument) -> Option<usize> {
    let (matched, position) = expr(filter.root(), doc, filter.cmp());
    if matched { position } else { None }
}

/// Whether `e` matches, and the position it recorded.
fn expr(e: &Expr, doc: &RawDocument, cmp: Cmp<'_>) -> (bool, Option<usize>) {
    match e {
        Expr::And(children) => {
            let mut position = None;
            for child in children {
                let (matched, p) = expr(child, doc, cmp);
                if !matched {
                    return (false, None);
                }
                position = p.or(position);
            }
            (true, position)
        }
        Expr::Or(children) => children
            .iter()
            .map(|child| expr(child, doc, cmp))
            .find(|(matched, _)| *matched)
            .unwrap_or((false, None)),
        Expr::Path { path, pred } if records(pred) => {
            let parts: Vec<&str> = path.split('.').collect();
            in_document(doc, &parts, pred, cmp)
        }
        // Only documents the filter matched get here, so a `$expr`
        // cannot fail now.
        other => (other.matches(doc, cmp).unwrap_or(false), None),
    }
}

/// Whether a predicate can record a position (negations cannot).
fn records(pred: &Pred) -> bool {
    !matches!(
        pred,
        Pred::Ne(_) | Pred::Nin(_) | Pred::Not(_) | Pred::Exists(false) | Pred::Size(_)
    )
}

/// `pred` at `parts` below `doc`: descends through documents to the first
/// array, where the position is decided.
fn in_document(
    doc: &RawDocument,
    parts: &[&str],
    pred: &Pred,
    cmp: Cmp<'_>,
) -> (bool, Option<usize>) {
    let mut current = doc;
    for (depth, name) in parts.iter().enumerate() {
        let rest = &parts[depth + 1..];
        match field(current, name) {
            Some(RawBsonRef::Array(array)) => return in_array(array, rest, pred, cmp),
            Some(RawBsonRef::Document(sub)) if !rest.is_empty() => current = sub,
            _ => break,
        }
    }
    (pred.matches_at(doc, &parts.join("."), cmp), None)
}

/// `pred` at `rest` below an array reached implicitly.
fn in_array(array: &RawArray, rest: &[&str], pred: &Pred, cmp: Cmp<'_>) -> (bool, Option<usize>) {
    if rest.is_empty() {
        return at_leaf_array(array, pred, cmp);
    }
    let offset = array_index(rest[0]);
    let rest_path = rest.join(".");
    for (i, element) in elements(array).enumerate() {
        if let RawBsonRef::Document(sub) = element
            && pred.matches_at(sub, &rest_path, cmp)
        {
            return (true, Some(i));
        }
        // An offset the query names is not recorded; an array met after it
        // may be.
        if offset == Some(i) {
            let found = after_offset(element, &rest[1..], pred, cmp);
            if found.0 {
                return found;
            }
        }
    }
    (false, None)
}

/// Continues from the element a numeric component selected.
fn after_offset(
    element: RawBsonRef<'_>,
    rest: &[&str],
    pred: &Pred,
    cmp: Cmp<'_>,
) -> (bool, Option<usize>) {
    match element {
        _ if rest.is_empty() => (pred.matches_value(Some(element), cmp), None),
        RawBsonRef::Document(sub) => in_document(sub, rest, pred, cmp),
        RawBsonRef::Array(inner) => in_array(inner, rest, pred, cmp),
        _ => (false, None),
    }
}

/// `pred` on an array at the end of its path: the first element it holds
/// for, else the array as a whole (which records nothing).
fn at_leaf_array(array: &RawArray, pred: &Pred, cmp: Cmp<'_>) -> (bool, Option<usize>) {
    let first = |test: &dyn Fn(RawBsonRef<'_>) -> bool| elements(array).position(test);
    let position = match pred {
        Pred::ElemMatch(condition) => first(&|e| condition.matches_element(e, cmp)),
        // `$all` is a conjunction of equalities: each must hold, and the
        // last one's position is the one recorded.
        Pred::All(values) => {
            let mut position = None;
            for value in values {
                let eq = Pred::Eq(value.clone());
                position = first(&|e| eq.matches_value(Some(e), cmp));
                if position.is_none() && !eq.matches_value(Some(RawBsonRef::Array(array)), cmp) {
                    return (false, None);
                }
            }
            return (!values.is_empty(), position);
        }
        _ => first(&|e| pred.matches_value(Some(e), cmp)),
    };
    match position {
        Some(i) => (true, Some(i)),
        None => (
            pred.matches_value(Some(RawBsonRef::Array(array)), cmp),
            None,
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::{RawDocumentBuf, rawdoc};

    fn position(filter: RawDocumentBuf, doc: RawDocumentBuf) -> Option<usize> {
        let filter = Filter::parse(&filter).unwrap();
        matched_position(&filter, &doc)
    }

    #[test]
    fn leaf_arrays_record_the_matching_element() {
        // Source: the positional `$` update manual page
        // (`{grades: 80}` on `grades: [85, 80, 80]` updates index 1).
        assert_eq!(
            position(rawdoc! {"grades": 80}, rawdoc! {"grades": [85, 80, 80]}),
            Some(1)
        );
        assert_eq!(
            position(
                rawdoc! {"grades": {"$gte": 85}},
                rawdoc! {"grades": [80, 90]}
            ),
            Some(1)
        );
        assert_eq!(position(rawdoc! {"a": [1, 2]}, rawdoc! {"a": [1, 2]}), None);
        assert_eq!(position(rawdoc! {"a": 3}, rawdoc! {"a": [1, 2]}), None);
    }

    #[test]
    fn documents_in_arrays_record_the_outer_element() {
        // Source: the positional `$` manual page ("grades.grade": 85).
        assert_eq!(
            position(rawdoc! {"a.b": 1}, rawdoc! {"a": [{"b": 0}, {"b": [2, 1]}]}),
            Some(1)
        );
        assert_eq!(
            position(
                rawdoc! {"a": {"$elemMatch": {"b": 1, "c": 2}}},
                rawdoc! {"a": [{"b": 1}, {"b": 1, "c": 2}]}
            ),
            Some(1)
        );
    }

    #[test]
    fn named_offsets_are_not_recorded() {
        // Source: jstests/core/write/update/update_array_offset_positional.js.
        assert_eq!(position(rawdoc! {"a.0": 0}, rawdoc! {"a": [0]}), None);
        assert_eq!(
            position(rawdoc! {"a.0.b": 1}, rawdoc! {"a": [{"b": [0, 1]}]}),
            Some(1)
        );
        assert_eq!(
            position(rawdoc! {"a.b.1": 1}, rawdoc! {"a": [{"b": [0, 1]}]}),
            Some(0)
        );
        assert_eq!(
            position(rawdoc! {"a": 1, "b.0": 0}, rawdoc! {"a": [0, 1], "b": [0]}),
            Some(1)
        );
    }

    #[test]
    fn logical_operators_pick_the_recording_clause() {
        let doc = rawdoc! {"a": [5, 6, 7], "b": [1, 2]};
        assert_eq!(
            position(rawdoc! {"$or": [{"a": 9}, {"a": 7}]}, doc.clone()),
            Some(2)
        );
        assert_eq!(position(rawdoc! {"a": 6, "b": 2}, doc.clone()), Some(1));
        assert_eq!(position(rawdoc! {"a": {"$ne": 9}}, doc.clone()), None);
        assert_eq!(position(rawdoc! {"a": 9}, doc.clone()), None);
        assert_eq!(position(rawdoc! {"a": {"$all": [7, 5]}}, doc), Some(0));
    }
}
