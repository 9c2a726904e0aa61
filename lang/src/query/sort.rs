//! Sort specifications (`{a: 1, "b.c": -1}`) and the order they put
//! documents in, as MongoDB 7.0 defines it for `find`.
//!
//! A document's sort key is the key an index over the sort paths would
//! hold for it that comes first in the sort's order: a missing field sorts
//! as null, an array sorts by its smallest element ascending and its
//! largest descending, an empty array sorts as `undefined` (below null),
//! and two sort paths through different arrays cannot be sorted on.
//!
//! [`SortSpec::compare`] is not a total order on ties: equal keys compare
//! `Equal`, and callers keep input order among them by sorting stably
//! (`slice::sort_by`). This module does not choose indexes or limit memory.

use std::cmp::Ordering;
use std::sync::Arc;

use bson::{RawBsonRef, RawDocument};

use super::path::index_keys;
use super::value::{element, field_path, number_as_f64};
use crate::encoding::cmp::Cmp;
use crate::encoding::collation::Collation;
use crate::error::{Error, ErrorKind, Result};

/// A parsed sort specification, with the collation strings sort by.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SortSpec {
    fields: Vec<(String, bool)>,
    collation: Option<Arc<Collation>>,
    /// Where a `{$meta: "textScore"}` key sits among the fields (it sorts
    /// by the `$text` score, highest first), for the sorts that take one.
    text_score: Option<usize>,
}

/// The values a document sorts by, one per sort field.
#[derive(Debug, Clone, PartialEq)]
pub struct SortKey<'a>(pub Vec<RawBsonRef<'a>>);

impl SortSpec {
    /// Parses a sort document; an empty document means no sort.
    pub fn parse(spec: &RawDocument) -> Result<SortSpec> {
        Self::parse_keys(spec, false)
    }

    /// Parses the sort of a `find` or a `$sort` stage, which may also sort
    /// by the `$text` score (`{score: {$meta: "textScore"}}`).
    pub fn parse_scored(spec: &RawDocument) -> Result<SortSpec> {
        Self::parse_keys(spec, true)
    }

    fn parse_keys(spec: &RawDocument, scored: bool) -> Result<SortSpec> {
        let mut fields = Vec::new();
        let mut text_score = None;
        for item in spec.iter() {
            let (path, value) = element(item)?;
            if scored && is_text_score(value)? {
                text_score = Some(fields.len());
                continue;
            }
            let ascending = direction(path, value)?;
            field_path(path)?;
            fields.push((path.to_owned(), ascending));
        }
        Ok(SortSpec {
            fields,
            collation: None,
            text_score,
        })
    }

    /// The same sort with its `{$meta: "textScore"}` key sorting, highest
    /// first, by the value of `field` (where an aggregation carries the
    /// score).
    pub fn score_from_field(mut self, field: &str) -> SortSpec {
        if let Some(at) = self.text_score.take() {
            self.fields.insert(at, (field.to_owned(), false));
        }
        self
    }

    /// Whether the sort has a `{$meta: "textScore"}` key.
    pub fn by_text_score(&self) -> bool {
        self.text_score.is_some()
    }

    /// Orders two documents with their `$text` scores: the keys in order,
    /// the score (highest first) where the sort names it.
    pub fn compare_scored(&self, a: (&RawDocument, f64), b: (&RawDocument, f64)) -> Ordering {
        let Some(at) = self.text_score else {
            return self.compare(a.0, b.0);
        };
        let by_score = b.1.total_cmp(&a.1);
        let (x, y) = match (self.key(a.0), self.key(b.0)) {
            (Ok(x), Ok(y)) => (x, y),
            (Ok(_), Err(_)) => return Ordering::Less,
            (Err(_), Ok(_)) => return Ordering::Greater,
            (Err(_), Err(_)) => return by_score,
        };
        let at = at.min(self.fields.len());
        self.compare_parts(&x.0[..at], &y.0[..at], &self.fields[..at])
            .then(by_score)
            .then_with(|| self.compare_parts(&x.0[at..], &y.0[at..], &self.fields[at..]))
    }

    /// The sort ordering strings by `collation` (`None`: as bytes).
    pub fn collated(mut self, collation: Option<Arc<Collation>>) -> SortSpec {
        self.collation = collation;
        self
    }

    pub fn collation(&self) -> Option<&Arc<Collation>> {
        self.collation.as_ref()
    }

    /// The sort paths in order, each with `true` for ascending.
    pub fn fields(&self) -> &[(String, bool)] {
        &self.fields
    }

    pub fn is_empty(&self) -> bool {
        self.fields.is_empty() && self.text_score.is_none()
    }

    /// The key `doc` sorts by. Fails when two sort paths run through
    /// different arrays of the document.
    pub fn key<'a>(&self, doc: &'a RawDocument) -> Result<SortKey<'a>> {
        let paths: Vec<&str> = self.fields.iter().map(|(path, _)| path.as_str()).collect();
        let candidates = index_keys(doc, &paths).map_err(|e| match e.kind {
            ErrorKind::CannotIndexParallelArrays => {
                Error::bad_value("cannot sort with keys that are parallel arrays")
            }
            _ => e,
        })?;
        let first = candidates
            .keys
            .into_iter()
            .map(|parts| {
                SortKey(
                    parts
                        .into_iter()
                        .map(|part| part.unwrap_or(RawBsonRef::Null))
                        .collect(),
                )
            })
            .min_by(|a, b| self.compare_keys(a, b));
        Ok(first.unwrap_or_else(|| SortKey(vec![RawBsonRef::Null; paths.len()])))
    }

    /// Orders two keys made by [`SortSpec::key`].
    pub fn compare_keys(&self, a: &SortKey<'_>, b: &SortKey<'_>) -> Ordering {
        self.compare_parts(&a.0, &b.0, &self.fields)
    }

    /// Orders two runs of key values, each under its field's direction.
    fn compare_parts(
        &self,
        a: &[RawBsonRef<'_>],
        b: &[RawBsonRef<'_>],
        fields: &[(String, bool)],
    ) -> Ordering {
        for ((x, y), (_, ascending)) in a.iter().zip(b).zip(fields) {
            let order = Cmp::new(self.collation.as_deref()).values(*x, *y);
            if order != Ordering::Equal {
                return if *ascending { order } else { order.reverse() };
            }
        }
        Ordering::Equal
    }

    /// Orders two documents. Computes both keys on every call: to sort many
    /// documents, make each key once with [`SortSpec::key`] (which also
    /// reports documents that cannot be sorted) and use
    /// [`SortSpec::compare_keys`]. Here a document without a key sorts last.
    pub fn compare(&self, a: &RawDocument, b: &RawDocument) -> Ordering {
        match (self.key(a), self.key(b)) {
            (Ok(x), Ok(y)) => self.compare_keys(&x, &y),
            (Ok(_), Err(_)) => Ordering::Less,
            (Err(_), Ok(_)) => Ordering::Greater,
            (Err(_), Err(_)) => Ordering::Equal,
        }
    }
}

/// Whether a sort value is `{$meta: "textScore"}`; another `$meta` is
/// refused.
fn is_text_score(value: RawBsonRef<'_>) -> Result<bool> {
    let RawBsonRef::Document(doc) = value else {
        return Ok(false);
    };
    let mut items = doc.iter();
    match (items.next().transpose()?, items.next()) {
        (Some((key, RawBsonRef::String("textScore"))), None) if key.as_str() == "$meta" => Ok(true),
        (Some((key, RawBsonRef::String(other))), None) if key.as_str() == "$meta" => {
            Err(Error::bad_value(format!(
                "ebb sorts by {{$meta: \"textScore\"}} only, not \"{other}\""
            )))
        }
        (Some((key, _)), _) if key.as_str() == "$meta" => Err(Error::bad_value(
            "Illegal $meta sort: the $meta value must be a string",
        )),
        _ => Ok(false),
    }
}

/// The direction a sort value asks for: any number that truncates to 1 or
/// -1 (so `1.5` is ascending), as MongoDB reads it.
fn direction(path: &str, value: RawBsonRef<'_>) -> Result<bool> {
    if let RawBsonRef::Document(doc) = value {
        let first = doc.iter().next().and_then(|item| item.ok());
        return Err(match first {
            Some((key, _)) if key.as_str() == "$meta" => {
                Error::bad_value("$meta sort is not supported yet")
            }
            _ => Error::new(
                ErrorKind::SortExpressionNotMeta,
                "$meta is the only expression supported by $sort right now",
            ),
        });
    }
    let truncated = match value {
        RawBsonRef::Int32(n) => i64::from(n),
        RawBsonRef::Int64(n) => n,
        other => match number_as_f64(other) {
            // `as` truncates toward zero, saturates, and reads NaN as 0.
            Some(x) => x as i64,
            None => {
                return Err(Error::new(
                    ErrorKind::IllegalSortKey,
                    format!(
                        "Illegal key in $sort specification: {path}: {}",
                        shell(value)
                    ),
                ));
            }
        },
    };
    match truncated {
        1 => Ok(true),
        -1 => Ok(false),
        _ => Err(Error::new(
            ErrorKind::BadSortOrder,
            "$sort key ordering must be 1 (for ascending) or -1 (for descending)",
        )),
    }
}

/// A value the way the MongoDB shell prints it in messages.
fn shell(value: RawBsonRef<'_>) -> String {
    match value {
        RawBsonRef::String(s) => format!("\"{s}\""),
        RawBsonRef::Boolean(b) => b.to_string(),
        RawBsonRef::Null => "null".to_owned(),
        RawBsonRef::Undefined => "undefined".to_owned(),
        RawBsonRef::MinKey => "MinKey".to_owned(),
        RawBsonRef::MaxKey => "MaxKey".to_owned(),
        RawBsonRef::ObjectId(oid) => format!("ObjectId('{oid}')"),
        other => bson::Bson::try_from(bson::RawBson::from(other))
            .map(|b| b.to_string())
            .unwrap_or_default(),
    }
}

#[cfg(test)]
mod tests {
    use bson::{RawDocumentBuf, rawdoc};

    use super::*;

    fn spec(doc: RawDocumentBuf) -> SortSpec {
        SortSpec::parse(&doc).unwrap()
    }

    fn error(doc: RawDocumentBuf) -> Error {
        SortSpec::parse(&doc).unwrap_err()
    }

    /// The `_id`s of `docs` in sorted order (stable).
    fn sorted_ids(sort: &SortSpec, mut docs: Vec<RawDocumentBuf>) -> Vec<i32> {
        docs.sort_by(|a, b| sort.compare(a, b));
        docs.iter().map(|d| d.get_i32("_id").unwrap()).collect()
    }

    #[test]
    fn directions_accept_any_numeric_type() {
        let sort = spec(rawdoc! { "a": 1, "b": -1_i64, "c": 1.0, "d": -1.9 });
        let fields: Vec<(&str, bool)> = sort
            .fields()
            .iter()
            .map(|(p, a)| (p.as_str(), *a))
            .collect();
        assert_eq!(
            fields,
            vec![("a", true), ("b", false), ("c", true), ("d", false)]
        );
    }

    #[test]
    fn empty_sort_is_no_sort() {
        let sort = spec(rawdoc! {});
        assert!(sort.is_empty());
        assert_eq!(
            sort.compare(&rawdoc! { "a": 1 }, &rawdoc! { "a": 2 }),
            Ordering::Equal
        );
    }

    #[test]
    fn bad_directions_are_rejected() {
        for doc in [
            rawdoc! { "a": 0 },
            rawdoc! { "a": 2 },
            rawdoc! { "a": 0.5 },
            rawdoc! { "a": f64::NAN },
        ] {
            let e = error(doc);
            assert_eq!(e.kind, ErrorKind::BadSortOrder);
            assert_eq!(
                e.message,
                "$sort key ordering must be 1 (for ascending) or -1 (for descending)"
            );
        }
        let e = error(rawdoc! { "asc": "123" });
        assert_eq!(e.kind, ErrorKind::IllegalSortKey);
        assert_eq!(
            e.message,
            "Illegal key in $sort specification: asc: \"123\""
        );
        assert_eq!(
            error(rawdoc! { "a": { "$meta": "textScore" } }).kind,
            ErrorKind::BadValue
        );
        assert_eq!(
            error(rawdoc! { "a": { "x": 1 } }).kind,
            ErrorKind::SortExpressionNotMeta
        );
        assert_eq!(
            error(rawdoc! { "a..b": 1 }).kind,
            ErrorKind::EmptyFieldPathComponent
        );
    }

    #[test]
    fn missing_sorts_as_null_and_empty_array_below_it() {
        let docs = vec![
            rawdoc! { "_id": 1, "a": 1 },
            rawdoc! { "_id": 2 },
            rawdoc! { "_id": 3, "a": null },
            rawdoc! { "_id": 4, "a": [] },
        ];
        assert_eq!(
            sorted_ids(&spec(rawdoc! { "a": 1 }), docs),
            vec![4, 2, 3, 1]
        );
    }

    #[test]
    fn arrays_sort_by_smallest_ascending_and_largest_descending() {
        let docs = vec![
            rawdoc! { "_id": 1, "a": [5, 1] },
            rawdoc! { "_id": 2, "a": 3 },
            rawdoc! { "_id": 3, "a": [2, 10] },
        ];
        assert_eq!(
            sorted_ids(&spec(rawdoc! { "a": 1 }), docs.clone()),
            vec![1, 3, 2]
        );
        assert_eq!(sorted_ids(&spec(rawdoc! { "a": -1 }), docs), vec![3, 1, 2]);
    }

    #[test]
    fn mixed_types_sort_by_type_bracket() {
        let docs = vec![
            rawdoc! { "_id": 1, "a": "x" },
            rawdoc! { "_id": 2, "a": { "b": 1 } },
            rawdoc! { "_id": 3, "a": 2.5 },
            rawdoc! { "_id": 4, "a": true },
            rawdoc! { "_id": 5, "a": 1_i64 },
            rawdoc! { "_id": 6, "a": null },
        ];
        assert_eq!(
            sorted_ids(&spec(rawdoc! { "a": 1 }), docs),
            vec![6, 5, 3, 1, 2, 4]
        );
    }

    #[test]
    fn dotted_paths_sort_through_arrays_of_documents() {
        let docs = vec![
            rawdoc! { "_id": 1, "a": [{ "b": 7 }, { "b": 2 }] },
            rawdoc! { "_id": 2, "a": { "b": 5 } },
            rawdoc! { "_id": 3, "a": [{ "b": 3 }, 9] },
        ];
        // Document 3 also has a branch without `b`, which sorts as null.
        assert_eq!(
            sorted_ids(&spec(rawdoc! { "a.b": 1 }), docs.clone()),
            vec![3, 1, 2]
        );
        assert_eq!(
            sorted_ids(&spec(rawdoc! { "a.b": -1 }), docs),
            vec![1, 2, 3]
        );
    }

    #[test]
    fn ties_keep_input_order_and_later_fields_break_them() {
        let docs = vec![
            rawdoc! { "_id": 1, "a": 1, "b": 1 },
            rawdoc! { "_id": 2, "a": 1, "b": 2 },
            rawdoc! { "_id": 3, "a": 0, "b": 1 },
            rawdoc! { "_id": 4, "a": 1, "b": 1 },
        ];
        assert_eq!(
            sorted_ids(&spec(rawdoc! { "a": -1 }), docs.clone()),
            vec![1, 2, 4, 3]
        );
        assert_eq!(
            sorted_ids(&spec(rawdoc! { "a": -1, "b": -1 }), docs),
            vec![2, 1, 4, 3]
        );
    }

    #[test]
    fn compound_keys_through_one_array_pair_element_by_element() {
        // Per element: (1, 5) and (2, 0); a cross product would offer (1, 0).
        let doc = rawdoc! { "a": [{ "x": 1, "y": 5 }, { "x": 2, "y": 0 }] };
        let sort = spec(rawdoc! { "a.x": 1, "a.y": 1 });
        let key = sort.key(&doc).unwrap();
        assert_eq!(key.0, vec![RawBsonRef::Int32(1), RawBsonRef::Int32(5)]);
    }

    #[test]
    fn parallel_arrays_cannot_be_sorted() {
        let doc = rawdoc! { "a": [1, 2], "b": [3, 4] };
        let e = spec(rawdoc! { "a": 1, "b": 1 }).key(&doc).unwrap_err();
        assert_eq!(e.kind, ErrorKind::BadValue);
        assert_eq!(e.message, "cannot sort with keys that are parallel arrays");
    }

    #[test]
    fn numbers_of_different_types_sort_together() {
        let docs = vec![
            rawdoc! { "_id": 1, "a": 2.5 },
            rawdoc! { "_id": 2, "a": 2 },
            rawdoc! { "_id": 3, "a": 3_i64 },
        ];
        assert_eq!(sorted_ids(&spec(rawdoc! { "a": 1 }), docs), vec![2, 1, 3]);
    }
}
