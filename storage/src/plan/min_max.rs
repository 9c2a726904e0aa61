//! `find`'s `min` and `max`: a scan of the hinted index from the key `min`
//! (inclusive) to the key `max` (exclusive), as MongoDB plans them.
//!
//! Each bound is a key document naming exactly the index's key fields in
//! order (`{a: 2, b: "x"}` for index `{a: 1, b: -1}`); an empty or absent
//! bound is that end of the index. Bounds become entry-key prefixes
//! encoded as the index encodes its keys (descending fields inverted,
//! strings by the index's collation), so "from min to max" is one key
//! range: an entry whose values equal `min` sorts after the bare `min`
//! prefix (its `_id` follows), and one whose values equal `max` after the
//! `max` prefix, so it is left out. The filter still checks every
//! document. This module only plans; `exec` runs the plan.

use bson::{RawBsonRef, RawDocument};

use super::{Access, Hint, Plan, QuerySpec, hinted_index, index_collation};
use crate::catalog::{CollectionMeta, IndexMeta};
use crate::engine::{Direction, KeyRange};
use ebb_lang::encoding::collation::{self, Collation};
use ebb_lang::encoding::keycode;
use ebb_lang::error::{Error, ErrorKind, Result};

/// The plan for `spec` restricted to the hinted index between `min` and
/// `max` (either may be empty, not both).
pub fn plan(
    meta: &CollectionMeta,
    spec: &QuerySpec,
    min: &RawDocument,
    max: &RawDocument,
) -> Result<Plan> {
    if !min.is_empty() && !max.is_empty() && field_names(min) != field_names(max) {
        return Err(Error::new(
            ErrorKind::MinMaxFieldsDiffer,
            "min and max must have the same field names",
        ));
    }
    let index = match &spec.hint {
        Some(hint @ (Hint::Name(_) | Hint::KeyPattern(_))) => hinted_index(meta, hint)?,
        _ => None,
    };
    let Some(index) = index else {
        return Err(Error::new(
            ErrorKind::MinMaxWithoutHint,
            "When using min()/max() a hint of which index to use must be provided",
        ));
    };
    let index_coll = index_collation(index)?;
    let query_coll = spec.filter.collation().map(|c| &**c);
    // A wildcard index's keys are paths and values, not its key pattern's.
    for bound in [min, max] {
        if index.is_wildcard()
            || (!bound.is_empty() && !compatible(bound, index, index_coll.as_deref(), query_coll))
        {
            return Err(Error::new(
                ErrorKind::MinMaxIncompatibleIndex,
                "The index chosen is not compatible with min/max",
            ));
        }
    }
    let lower = encode(min, index, index_coll.as_deref());
    let upper = (!max.is_empty()).then(|| encode(max, index, index_coll.as_deref()));
    if upper.as_ref().is_some_and(|upper| &lower >= upper) {
        return Err(Error::new(
            ErrorKind::MinMaxOutOfOrder,
            "The value provided for min() does not come before the value provided for max() \
             in the hinted index",
        ));
    }
    let ranges = vec![KeyRange::new(lower, upper)];
    let dir = Direction::Forward;
    let access = if index.is_id_index() {
        Access::Records { ranges, dir }
    } else {
        Access::Index {
            index: Box::new(index.clone()),
            ranges,
            dir,
        }
    };
    Ok(Plan {
        access,
        sorted_by_access: false,
        bounds: Vec::new(),
        stage: "IXSCAN",
    })
}

fn field_names(doc: &RawDocument) -> Vec<&str> {
    doc.iter()
        .map_while(|item| item.ok())
        .map(|(k, _)| k.as_str())
        .collect()
}

/// mongod's test: the bound names the key pattern's fields, in order, and
/// needs no collation the index does not have for its strings.
fn compatible(
    bound: &RawDocument,
    index: &IndexMeta,
    index_coll: Option<&Collation>,
    query_coll: Option<&Collation>,
) -> bool {
    let fields = index.fields();
    let names = field_names(bound);
    if names.len() != fields.len() || names.iter().zip(&fields).any(|(n, (f, _))| n != f) {
        return false;
    }
    collation::same(index_coll, query_coll)
        || bound.iter().map_while(|item| item.ok()).all(|(_, v)| {
            !matches!(
                v,
                RawBsonRef::String(_)
                    | RawBsonRef::Symbol(_)
                    | RawBsonRef::Document(_)
                    | RawBsonRef::Array(_)
            )
        })
}

/// The entry-key prefix of a bound (empty for an empty bound: the start).
fn encode(bound: &RawDocument, index: &IndexMeta, coll: Option<&Collation>) -> Vec<u8> {
    let mut key = Vec::new();
    for ((_, value), (_, ascending)) in bound.iter().map_while(|item| item.ok()).zip(index.fields())
    {
        if ascending {
            keycode::encode_collated(&mut key, value, coll);
        } else {
            keycode::encode_collated_desc(&mut key, value, coll);
        }
    }
    key
}

#[cfg(test)]
mod tests {
    use bson::{doc, rawdoc};

    use super::*;
    use ebb_lang::query::filter::Filter;

    fn meta() -> CollectionMeta {
        let mut ab = CollectionMeta::id_index(12);
        ab.name = "a_1_b_-1".into();
        ab.key = doc! { "a": 1, "b": -1 };
        ab.unique = false;
        crate::testing::meta("c", doc! {}, None, vec![CollectionMeta::id_index(10), ab])
    }

    fn spec(hint: Option<Hint>) -> QuerySpec {
        QuerySpec {
            filter: Filter::parse(&rawdoc! {}).unwrap(),
            sort: None,
            hint,
        }
    }

    fn kind(r: Result<Plan>) -> ErrorKind {
        r.unwrap_err().kind
    }

    #[test]
    fn min_max_errors_follow_mongod() {
        // jstests/core/query/min_max/*.js.
        let m = meta();
        let hinted = spec(Some(Hint::KeyPattern(doc! { "a": 1, "b": -1 })));
        assert_eq!(
            kind(plan(
                &m,
                &spec(None),
                &rawdoc! { "a": 1, "b": 1 },
                &rawdoc! {}
            )),
            ErrorKind::MinMaxWithoutHint
        );
        assert_eq!(
            kind(plan(&m, &hinted, &rawdoc! { "a": 1 }, &rawdoc! {})),
            ErrorKind::MinMaxIncompatibleIndex
        );
        assert_eq!(
            kind(plan(&m, &hinted, &rawdoc! { "b": 1, "a": 1 }, &rawdoc! {})),
            ErrorKind::MinMaxIncompatibleIndex
        );
        assert_eq!(
            kind(plan(
                &m,
                &hinted,
                &rawdoc! { "a": 1, "b": 1 },
                &rawdoc! { "a": 1, "c": 1 }
            )),
            ErrorKind::MinMaxFieldsDiffer
        );
        assert_eq!(
            kind(plan(
                &m,
                &hinted,
                &rawdoc! { "a": 2, "b": 1 },
                &rawdoc! { "a": 1, "b": 1 }
            )),
            ErrorKind::MinMaxOutOfOrder
        );
        // Descending b: {a: 1, b: 5} comes before {a: 1, b: 1}.
        assert!(
            plan(
                &m,
                &hinted,
                &rawdoc! { "a": 1, "b": 5 },
                &rawdoc! { "a": 1, "b": 1 }
            )
            .is_ok()
        );
    }

    #[test]
    fn id_bounds_are_a_record_range() {
        let m = meta();
        let hinted = spec(Some(Hint::Name("_id_".into())));
        let p = plan(&m, &hinted, &rawdoc! { "_id": 3 }, &rawdoc! { "_id": 7 }).unwrap();
        let Access::Records { ranges, .. } = p.access else {
            panic!("not a record range")
        };
        let mut lower = Vec::new();
        keycode::encode_collated(&mut lower, RawBsonRef::Int32(3), None);
        assert_eq!(ranges[0].lower, lower);
    }
}
