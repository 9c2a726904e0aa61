//! Which array elements a `$pull` removes.
//!
//! MongoDB reads the `$pull` argument three ways: a plain value removes
//! equal elements; an operator document (`{$gte: 6}`) is a condition on
//! each element; any other document is a query each document element must
//! match (`{score: 8, item: "B"}`). This module covers equality, the
//! comparison operators, `$in`/`$nin`, `$exists` and `$and`/`$or`/`$nor`;
//! other query operators are rejected as not supported yet. It is a stopgap
//! until `$pull` can use the query matcher shared with `find`.

use std::cmp::Ordering;

use bson::raw::RawBson;
use bson::{RawBsonRef, RawDocument};

use crate::encoding::bracket::canonical_type;
use crate::encoding::cmp::Cmp;
use crate::{Error, Result};

/// A parsed `$pull` argument.
#[derive(Debug, Clone)]
pub(crate) enum Condition {
    /// Remove elements equal to the value.
    Equal(RawBson),
    /// Remove elements every operator accepts.
    Ops(Vec<Pred>),
    /// Remove document elements that match the query.
    Query(Vec<Clause>),
}

/// One operator applied to a value.
#[derive(Debug, Clone)]
pub(crate) enum Pred {
    Eq(RawBson),
    Ne(RawBson),
    /// `$gt`/`$gte`/`$lt`/`$lte`: the orderings that satisfy it.
    Cmp(&'static [Ordering], RawBson),
    In(Vec<RawBson>),
    Nin(Vec<RawBson>),
    Exists(bool),
}

/// One clause of a query document.
#[derive(Debug, Clone)]
pub(crate) enum Clause {
    Field(Vec<String>, Vec<Pred>),
    And(Vec<Vec<Clause>>),
    Or(Vec<Vec<Clause>>),
    Nor(Vec<Vec<Clause>>),
}

impl Condition {
    pub(crate) fn parse(arg: RawBsonRef<'_>) -> Result<Condition> {
        match arg {
            RawBsonRef::Document(d) => match first_key(d)? {
                Some(k) if k.starts_with('$') && !is_logical(k) => {
                    Ok(Condition::Ops(parse_ops(d)?))
                }
                _ => Ok(Condition::Query(parse_query(d)?)),
            },
            RawBsonRef::RegularExpression(_) => Err(unsupported("a regular expression")),
            other => Ok(Condition::Equal(RawBson::from(other))),
        }
    }

    pub(crate) fn matches(&self, element: RawBsonRef<'_>, cmp: Cmp<'_>) -> bool {
        match self {
            Condition::Equal(v) => cmp.values(element, v.as_raw_bson_ref()) == Ordering::Equal,
            Condition::Ops(preds) => preds.iter().all(|p| p.holds(&[element], cmp)),
            Condition::Query(clauses) => match element {
                RawBsonRef::Document(d) => all_hold(clauses, d, cmp),
                _ => false,
            },
        }
    }
}

fn unsupported(what: &str) -> Error {
    Error::bad_value(format!("$pull with {what} is not supported yet"))
}

fn is_logical(k: &str) -> bool {
    matches!(k, "$and" | "$or" | "$nor")
}

fn first_key(d: &RawDocument) -> Result<Option<&str>> {
    Ok(match d.iter().next() {
        Some(item) => Some(item?.0.as_str()),
        None => None,
    })
}

fn parse_ops(d: &RawDocument) -> Result<Vec<Pred>> {
    const GT: &[Ordering] = &[Ordering::Greater];
    const GTE: &[Ordering] = &[Ordering::Greater, Ordering::Equal];
    const LT: &[Ordering] = &[Ordering::Less];
    const LTE: &[Ordering] = &[Ordering::Less, Ordering::Equal];
    let mut preds = Vec::new();
    for item in d.iter() {
        let (op, v) = item?;
        let owned = RawBson::from(v);
        preds.push(match op.as_str() {
            "$eq" => Pred::Eq(owned),
            "$ne" => Pred::Ne(owned),
            "$gt" => Pred::Cmp(GT, owned),
            "$gte" => Pred::Cmp(GTE, owned),
            "$lt" => Pred::Cmp(LT, owned),
            "$lte" => Pred::Cmp(LTE, owned),
            "$in" => Pred::In(list(op.as_str(), v)?),
            "$nin" => Pred::Nin(list(op.as_str(), v)?),
            "$exists" => Pred::Exists(truthy(v)),
            other if other.starts_with('$') => return Err(unsupported(other)),
            _ => return Err(unsupported("a mix of operators and fields")),
        });
    }
    Ok(preds)
}

fn list(op: &str, v: RawBsonRef<'_>) -> Result<Vec<RawBson>> {
    let RawBsonRef::Array(a) = v else {
        return Err(Error::bad_value(format!("{op} needs an array")));
    };
    let mut out = Vec::new();
    for item in a {
        match item? {
            RawBsonRef::RegularExpression(_) => return Err(unsupported("a regular expression")),
            x => out.push(RawBson::from(x)),
        }
    }
    Ok(out)
}

fn truthy(v: RawBsonRef<'_>) -> bool {
    match v {
        RawBsonRef::Boolean(b) => b,
        RawBsonRef::Int32(x) => x != 0,
        RawBsonRef::Int64(x) => x != 0,
        RawBsonRef::Double(x) => x != 0.0,
        RawBsonRef::Null | RawBsonRef::Undefined => false,
        _ => true,
    }
}

fn parse_query(d: &RawDocument) -> Result<Vec<Clause>> {
    let mut clauses = Vec::new();
    for item in d.iter() {
        let (k, v) = item?;
        let k = k.as_str();
        if is_logical(k) {
            let RawBsonRef::Array(branches) = v else {
                return Err(Error::bad_value(format!("{k} must be an array")));
            };
            let mut parsed = Vec::new();
            for b in branches {
                match b? {
                    RawBsonRef::Document(q) => parsed.push(parse_query(q)?),
                    _ => {
                        return Err(Error::bad_value(format!(
                            "{k} argument's entries must be objects"
                        )));
                    }
                }
            }
            clauses.push(match k {
                "$and" => Clause::And(parsed),
                "$or" => Clause::Or(parsed),
                _ => Clause::Nor(parsed),
            });
            continue;
        }
        if k.starts_with('$') {
            return Err(unsupported(k));
        }
        let path = k.split('.').map(str::to_owned).collect();
        let preds = match v {
            RawBsonRef::Document(ops) if first_key(ops)?.is_some_and(|f| f.starts_with('$')) => {
                parse_ops(ops)?
            }
            RawBsonRef::RegularExpression(_) => return Err(unsupported("a regular expression")),
            other => vec![Pred::Eq(RawBson::from(other))],
        };
        clauses.push(Clause::Field(path, preds));
    }
    Ok(clauses)
}

fn all_hold(clauses: &[Clause], doc: &RawDocument, cmp: Cmp<'_>) -> bool {
    clauses.iter().all(|c| match c {
        Clause::Field(path, preds) => {
            let mut found = Vec::new();
            values_at(RawBsonRef::Document(doc), path, &mut found);
            preds.iter().all(|p| p.holds(&found, cmp))
        }
        Clause::And(branches) => branches.iter().all(|b| all_hold(b, doc, cmp)),
        Clause::Or(branches) => branches.iter().any(|b| all_hold(b, doc, cmp)),
        Clause::Nor(branches) => !branches.iter().any(|b| all_hold(b, doc, cmp)),
    })
}

/// The values a dotted path reaches, descending into arrays of documents
/// as queries do.
fn values_at<'v>(v: RawBsonRef<'v>, path: &[String], out: &mut Vec<RawBsonRef<'v>>) {
    let Some((part, rest)) = path.split_first() else {
        out.push(v);
        return;
    };
    match v {
        RawBsonRef::Document(d) => {
            if let Ok(Some(child)) = d.get(part) {
                values_at(child, rest, out);
            }
        }
        RawBsonRef::Array(a) => {
            if let Ok(i) = part.parse::<usize>()
                && let Ok(Some(child)) = a.get(i)
            {
                values_at(child, rest, out);
            }
            for item in a.into_iter().flatten() {
                if let RawBsonRef::Document(_) = item {
                    values_at(item, path, out);
                }
            }
        }
        _ => {}
    }
}

impl Pred {
    /// Whether the predicate holds for a field whose values are `found`
    /// (none when the field is missing; an array also offers its elements).
    fn holds(&self, found: &[RawBsonRef<'_>], cmp: Cmp<'_>) -> bool {
        match self {
            Pred::Eq(v) => equals_any(found, v.as_raw_bson_ref(), cmp),
            Pred::Ne(v) => !equals_any(found, v.as_raw_bson_ref(), cmp),
            Pred::Cmp(accepted, v) => {
                let v = v.as_raw_bson_ref();
                candidates(found).any(|c| {
                    canonical_type(&c) == canonical_type(&v) && accepted.contains(&cmp.values(c, v))
                })
            }
            Pred::In(vs) => vs
                .iter()
                .any(|v| equals_any(found, v.as_raw_bson_ref(), cmp)),
            Pred::Nin(vs) => !vs
                .iter()
                .any(|v| equals_any(found, v.as_raw_bson_ref(), cmp)),
            Pred::Exists(wanted) => found.is_empty() != *wanted,
        }
    }
}

/// Each value, and each element of each array value.
fn candidates<'v>(found: &'v [RawBsonRef<'v>]) -> impl Iterator<Item = RawBsonRef<'v>> + 'v {
    found.iter().flat_map(|v| {
        let elements = match v {
            RawBsonRef::Array(a) => a.into_iter().flatten().collect(),
            _ => Vec::new(),
        };
        std::iter::once(*v).chain(elements)
    })
}

/// Equality as a query sees it: null also matches a missing field.
fn equals_any(found: &[RawBsonRef<'_>], v: RawBsonRef<'_>, cmp: Cmp<'_>) -> bool {
    if found.is_empty() {
        return matches!(v, RawBsonRef::Null);
    }
    candidates(found).any(|c| cmp.values(c, v) == Ordering::Equal)
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::{RawDocumentBuf, rawdoc};

    fn cond(doc: RawDocumentBuf) -> Condition {
        Condition::parse(doc.get("c").unwrap().unwrap()).unwrap()
    }

    fn hits(c: &Condition, elements: RawDocumentBuf) -> Vec<bool> {
        let arr = elements.get_array("e").unwrap();
        arr.into_iter()
            .map(|e| c.matches(e.unwrap(), Cmp::BINARY))
            .collect()
    }

    #[test]
    fn plain_value_matches_equal_numbers_of_any_type() {
        let c = cond(rawdoc! {"c": 1});
        assert_eq!(
            hits(&c, rawdoc! {"e": [1, 1.0, 2, "1"]}),
            [true, true, false, false]
        );
    }

    #[test]
    fn operator_document_is_a_condition_on_each_element() {
        let c = cond(rawdoc! {"c": {"$gte": 6}});
        assert_eq!(
            hits(&c, rawdoc! {"e": [5, 6, 7, "8"]}),
            [false, true, true, false]
        );
        let c = cond(rawdoc! {"c": {"$in": ["a", 2]}});
        assert_eq!(hits(&c, rawdoc! {"e": ["a", "b", 2]}), [true, false, true]);
    }

    #[test]
    fn query_document_matches_document_elements_by_their_fields() {
        let c = cond(rawdoc! {"c": {"score": 8, "item": "B"}});
        assert_eq!(
            hits(
                &c,
                rawdoc! {"e": [{"item": "B", "score": 8, "x": 1}, {"item": "B", "score": 7}, 8]}
            ),
            [true, false, false]
        );
        let c = cond(rawdoc! {"c": {"a.b": {"$gt": 1}}});
        assert_eq!(
            hits(
                &c,
                rawdoc! {"e": [{"a": {"b": 2}}, {"a": [{"b": 3}]}, {"a": 1}]}
            ),
            [true, true, false]
        );
    }

    #[test]
    fn unsupported_operators_are_reported() {
        let err =
            Condition::parse(rawdoc! {"c": {"$size": 2}}.get("c").unwrap().unwrap()).unwrap_err();
        assert_eq!(err.message, "$pull with $size is not supported yet");
    }
}
