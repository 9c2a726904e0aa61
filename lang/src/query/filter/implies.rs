//! Whether every document one filter matches is matched by another: how
//! the planner learns that a partial index holds every document a query
//! can return (mongod's subset test for partial filter expressions).
//!
//! The test is sound and deliberately incomplete: a "no" only costs an
//! index, a wrong "yes" would lose documents. The implied filter may be
//! made of `$and`, `$or` and predicates on paths that hold when *some*
//! value at the path satisfies them (`$eq`, `$gt`, `$gte`, `$lt`, `$lte`,
//! `$in`, `$exists: true`, `$type`); each such predicate must follow from
//! one top-level predicate of the implying filter on the same path. That
//! predicate-by-predicate rule is what makes arrays safe: a value that
//! satisfies the query's predicate satisfies the index's too. Strings
//! compare under a collation, so a string bound only follows from one
//! compared under the same collation.

use std::cmp::Ordering;

use bson::RawBson;

use super::types::{Expr, Filter, Pred};
use crate::encoding::bracket::{TAG_STRING, canonical_type};
use crate::encoding::cmp::Cmp;
use crate::encoding::collation;
use crate::query::value::ordered_scalar;

impl Filter {
    /// Whether every document this filter matches also matches `other`
    /// (when this answers `false`, they may or may not).
    pub fn implies(&self, other: &Filter) -> bool {
        let rule = Rule {
            same_collation: collation::same(self.collation.as_deref(), other.collation.as_deref()),
            cmp: Cmp::new(self.collation.as_deref()),
        };
        let ours = self.top_level_predicates();
        rule.implies(&ours, &other.root)
    }
}

struct Rule<'c> {
    /// Whether both filters compare strings alike.
    same_collation: bool,
    cmp: Cmp<'c>,
}

impl Rule<'_> {
    fn implies(&self, ours: &[(&str, &Pred)], theirs: &Expr) -> bool {
        match theirs {
            Expr::And(children) => children.iter().all(|c| self.implies(ours, c)),
            Expr::Or(children) => children.iter().any(|c| self.implies(ours, c)),
            Expr::AlwaysTrue => true,
            Expr::Path { path, pred } => ours
                .iter()
                .any(|(p, q)| p == path && self.pred_implies(q, pred)),
            Expr::Nor(_)
            | Expr::AlwaysFalse
            | Expr::JsonSchema(_)
            | Expr::Expr(_)
            | Expr::Where(_) => false,
        }
    }

    /// Whether every value satisfying `q` satisfies `p`.
    fn pred_implies(&self, q: &Pred, p: &Pred) -> bool {
        if !holds_for_some_value(p) {
            return false;
        }
        if matches!(p, Pred::Exists(true)) {
            return never_matches_missing(q);
        }
        match q {
            Pred::Eq(w) => self.value_satisfies(w, p),
            Pred::In(list) => !list.is_empty() && list.iter().all(|w| self.value_satisfies(w, p)),
            Pred::Gt(w) | Pred::Gte(w) | Pred::Lt(w) | Pred::Lte(w) => self.range_implies(q, w, p),
            Pred::Type(ours) => match p {
                Pred::Type(theirs) => {
                    (!ours.numbers || theirs.numbers)
                        && ours.codes.iter().all(|c| theirs.codes.contains(c))
                }
                _ => false,
            },
            _ => false,
        }
    }

    /// Whether `p` holds for a path holding the scalar `w` (and so for
    /// any value the query compares equal to `w`).
    fn value_satisfies(&self, w: &RawBson, p: &Pred) -> bool {
        scalar(w)
            && self.comparable(w)
            && p.matches_value(Some(w.as_raw_bson_ref()), self.cmp)
            && operands(p).iter().all(|v| self.comparable(v))
    }

    /// Whether the values of the bound `q` (on `w`) all satisfy the bound
    /// `p`: the same type bracket, on the same side, no looser.
    fn range_implies(&self, q: &Pred, w: &RawBson, p: &Pred) -> bool {
        let v = match p {
            Pred::Gt(v) | Pred::Gte(v) | Pred::Lt(v) | Pred::Lte(v) => v,
            Pred::Type(types) => {
                return types.numbers
                    && scalar(w)
                    && types.contains(w.as_raw_bson_ref())
                    && numeric(w);
            }
            _ => return false,
        };
        let (w_ref, v_ref) = (w.as_raw_bson_ref(), v.as_raw_bson_ref());
        if !scalar(w) || !scalar(v) || canonical_type(&w_ref) != canonical_type(&v_ref) {
            return false;
        }
        if !self.comparable(w) {
            return false;
        }
        let order = self.cmp.values(w_ref, v_ref);
        match (q, p) {
            (Pred::Gt(_), Pred::Gt(_) | Pred::Gte(_)) => order != Ordering::Less,
            (Pred::Gte(_), Pred::Gt(_)) => order == Ordering::Greater,
            (Pred::Gte(_), Pred::Gte(_)) => order != Ordering::Less,
            (Pred::Lt(_), Pred::Lt(_) | Pred::Lte(_)) => order != Ordering::Greater,
            (Pred::Lte(_), Pred::Lt(_)) => order == Ordering::Less,
            (Pred::Lte(_), Pred::Lte(_)) => order != Ordering::Greater,
            _ => false,
        }
    }

    /// A string compares alike in both filters only under one collation.
    fn comparable(&self, v: &RawBson) -> bool {
        self.same_collation || canonical_type(&v.as_raw_bson_ref()) != TAG_STRING
    }
}

/// Predicates that hold when some value at the path satisfies them (not
/// the negations, which hold over the whole path).
fn holds_for_some_value(p: &Pred) -> bool {
    matches!(
        p,
        Pred::Eq(_)
            | Pred::Gt(_)
            | Pred::Gte(_)
            | Pred::Lt(_)
            | Pred::Lte(_)
            | Pred::In(_)
            | Pred::Exists(true)
            | Pred::Type(_)
    )
}

/// A predicate no document missing the path (or holding null there)
/// satisfies, so it implies `$exists: true`.
fn never_matches_missing(q: &Pred) -> bool {
    match q {
        Pred::Eq(w) | Pred::Gt(w) | Pred::Gte(w) | Pred::Lt(w) | Pred::Lte(w) => scalar(w),
        Pred::In(list) => !list.is_empty() && !list.has_null() && list.iter().all(scalar),
        Pred::Exists(true)
        | Pred::Type(_)
        | Pred::Regex(_)
        | Pred::ElemMatch(_)
        | Pred::Size(_) => true,
        Pred::Mod { .. } | Pred::Bits(_) => true,
        _ => false,
    }
}

/// The values a predicate compares with.
fn operands(p: &Pred) -> Vec<&RawBson> {
    match p {
        Pred::Eq(v) | Pred::Gt(v) | Pred::Gte(v) | Pred::Lt(v) | Pred::Lte(v) => vec![v],
        Pred::In(list) => list.iter().collect(),
        _ => Vec::new(),
    }
}

/// The values whose comparisons the rules above reason about.
fn scalar(v: &RawBson) -> bool {
    ordered_scalar(v.as_raw_bson_ref())
}

fn numeric(v: &RawBson) -> bool {
    matches!(
        v,
        RawBson::Double(_) | RawBson::Int32(_) | RawBson::Int64(_) | RawBson::Decimal128(_)
    )
}

#[cfg(test)]
mod tests {
    use bson::{RawDocumentBuf, rawdoc};

    use super::*;

    fn filter(doc: RawDocumentBuf) -> Filter {
        Filter::parse(&doc).expect("a filter")
    }

    fn implies(query: RawDocumentBuf, partial: RawDocumentBuf) -> bool {
        filter(query).implies(&filter(partial))
    }

    #[test]
    fn bounds_follow_from_tighter_bounds_and_values_in_range() {
        let partial = rawdoc! { "a": { "$lte": 1.5 } };
        assert!(implies(rawdoc! { "x": 6, "a": 1 }, partial.clone()));
        assert!(implies(
            rawdoc! { "x": 6, "a": { "$lte": 1 } },
            partial.clone()
        ));
        assert!(implies(rawdoc! { "a": { "$lt": 1.5 } }, partial.clone()));
        assert!(implies(rawdoc! { "a": { "$in": [0, 1] } }, partial.clone()));
        assert!(!implies(
            rawdoc! { "x": 6, "a": { "$lt": 1.6 } },
            partial.clone()
        ));
        assert!(!implies(rawdoc! { "x": 6 }, partial.clone()));
        assert!(!implies(rawdoc! { "a": { "$gt": 0 } }, partial.clone()));
        assert!(
            !implies(rawdoc! { "a": "1" }, partial.clone()),
            "another type bracket"
        );
        assert!(!implies(rawdoc! { "a": { "$in": [1, null] } }, partial));
        let from = rawdoc! { "a": { "$gte": 10 } };
        assert!(implies(
            rawdoc! { "a": { "$gt": 10, "$lt": 100 } },
            from.clone()
        ));
        assert!(!implies(
            rawdoc! { "a": { "$gt": 0, "$lt": 10 } },
            from.clone()
        ));
        assert!(!implies(rawdoc! { "a": { "$lt": 0 } }, from));
        assert!(implies(
            rawdoc! { "a": { "$gte": 3 } },
            rawdoc! { "a": { "$gt": 2 } }
        ));
        assert!(!implies(
            rawdoc! { "a": { "$gte": 2 } },
            rawdoc! { "a": { "$gt": 2 } }
        ));
    }

    #[test]
    fn lists_branches_and_existence() {
        let listed = rawdoc! { "a": { "$in": [3, 5] } };
        assert!(implies(rawdoc! { "x": 2, "a": 3 }, listed.clone()));
        assert!(implies(rawdoc! { "a": { "$in": [5, 3] } }, listed.clone()));
        assert!(!implies(rawdoc! { "a": { "$lt": 6 } }, listed.clone()));
        assert!(!implies(rawdoc! { "a": 4 }, listed));
        let either = rawdoc! { "$or": [{ "a": 3 }, { "$and": [{ "a": 5 }, { "b": 5 }] }] };
        assert!(implies(rawdoc! { "x": 4, "a": 3 }, either.clone()));
        assert!(implies(rawdoc! { "x": 5, "a": 5, "b": 5 }, either.clone()));
        assert!(!implies(rawdoc! { "x": 2, "a": 5 }, either.clone()));
        assert!(!implies(rawdoc! { "x": 3, "a": 5, "b": 1 }, either));
        let exists = rawdoc! { "b": { "$exists": true } };
        assert!(implies(rawdoc! { "b": 1 }, exists.clone()));
        assert!(implies(
            rawdoc! { "b": { "$type": "string" } },
            exists.clone()
        ));
        assert!(!implies(rawdoc! { "b": null }, exists.clone()));
        assert!(!implies(rawdoc! { "b": { "$ne": 1 } }, exists));
        assert!(implies(
            rawdoc! { "k": { "$type": "int" } },
            rawdoc! { "k": { "$type": ["int", "string"] } }
        ));
        assert!(implies(
            rawdoc! { "n": { "$gt": 5 } },
            rawdoc! { "n": { "$type": "number" } }
        ));
    }

    #[test]
    fn negations_and_strings_across_collations_are_never_implied() {
        // {a: [1, 2]} matches {a: 1} but not {a: {$ne: 2}}.
        assert!(!implies(rawdoc! { "a": 1 }, rawdoc! { "a": { "$ne": 2 } }));
        assert!(!implies(
            rawdoc! { "a": 1 },
            rawdoc! { "a": { "$nin": [2] } }
        ));
        assert!(!implies(
            rawdoc! { "a": 1 },
            rawdoc! { "a": { "$exists": false } }
        ));
        let kind = rawdoc! { "kind": "cart" };
        assert!(implies(rawdoc! { "kind": "cart" }, kind.clone()));
        let folded = crate::encoding::collation::Collation::from_document(
            &bson::doc! { "locale": "en", "strength": 2 },
        )
        .expect("a collation");
        let query = filter(rawdoc! { "kind": "cart" }).collated(folded);
        assert!(
            !query.implies(&filter(kind)),
            "{{kind: 'CART'}} matches the query, not the index"
        );
        assert!(implies(rawdoc! {}, rawdoc! {}));
        assert!(!implies(rawdoc! {}, rawdoc! { "a": 1 }));
    }
}
