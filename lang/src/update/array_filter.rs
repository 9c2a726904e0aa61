//! The `arrayFilters` of an update: one query filter per identifier, each
//! deciding which elements a `$[<identifier>]` path component stands for.
//!
//! A filter is an ordinary query filter whose paths all start with its
//! identifier (`{"i.grade": {$gte: 85}}`, `{i: {$gte: 100}}`); an element
//! is tested by matching the filter against `{<identifier>: element}` with
//! the query module's matcher, so arrays, `null` and type brackets behave
//! exactly as they do in `find`. Parsing follows MongoDB 7.0's rules and
//! messages; which paths use which identifier is the plan's business.

use std::collections::BTreeMap;

use bson::{RawBsonRef, RawDocument, RawDocumentBuf};

use super::tree::cstr;
use crate::encoding::cmp::Cmp;
use crate::query::filter::{Expr, Filter};
use crate::{Error, Result};

/// The parsed `arrayFilters`, by identifier.
#[derive(Debug, Clone, Default)]
pub(crate) struct ArrayFilters {
    by_id: BTreeMap<String, Filter>,
}

impl ArrayFilters {
    /// Parses every filter, refusing a filter without exactly one top-level
    /// field name, a badly formed identifier, and two filters for one
    /// identifier.
    pub(crate) fn parse(docs: &[&RawDocument]) -> Result<ArrayFilters> {
        let mut by_id = BTreeMap::new();
        for doc in docs {
            let (id, filter) = parse_one(doc).map_err(|e| {
                Error::new(
                    e.kind,
                    format!("Error parsing array filter :: caused by :: {}", e.message),
                )
            })?;
            if by_id.contains_key(&id) {
                return Err(Error::failed_to_parse(format!(
                    "Found multiple array filters with the same top-level field name {id}"
                )));
            }
            by_id.insert(id, filter);
        }
        Ok(ArrayFilters { by_id })
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.by_id.is_empty()
    }

    pub(crate) fn contains(&self, id: &str) -> bool {
        self.by_id.contains_key(id)
    }

    /// The identifiers, in byte order (the order MongoDB reports them in).
    pub(crate) fn ids(&self) -> impl Iterator<Item = &str> {
        self.by_id.keys().map(String::as_str)
    }

    /// Whether the filter for `id` accepts `element`. An identifier
    /// without a filter accepts nothing (parsing refuses such paths).
    pub(crate) fn accepts(&self, id: &str, element: RawBsonRef<'_>, cmp: Cmp<'_>) -> Result<bool> {
        let Some(filter) = self.by_id.get(id) else {
            return Ok(false);
        };
        let mut probe = RawDocumentBuf::new();
        probe.append(cstr(id)?, element);
        filter.root().matches(&probe, cmp)
    }
}

fn parse_one(doc: &RawDocument) -> Result<(String, Filter)> {
    let filter = Filter::parse(doc)?;
    let mut id = None;
    top_level_name(filter.root(), &mut id)?;
    let Some(id) = id else {
        return Err(Error::failed_to_parse(
            "Cannot use an expression without a top-level field name in arrayFilters",
        ));
    };
    let mut chars = id.chars();
    let well_formed = chars.next().is_some_and(|c| c.is_ascii_lowercase())
        && chars.all(|c| c.is_ascii_alphanumeric());
    if !well_formed {
        return Err(Error::bad_value(format!(
            "The top-level field name must be an alphanumeric string beginning with a lowercase \
             letter, found '{id}'"
        )));
    }
    Ok((id, filter))
}

/// The one first path component every predicate of the filter starts with
/// (logical operators are looked through).
fn top_level_name(expr: &Expr, found: &mut Option<String>) -> Result<()> {
    match expr {
        Expr::And(children) | Expr::Or(children) | Expr::Nor(children) => children
            .iter()
            .try_for_each(|child| top_level_name(child, found)),
        Expr::Path { path, .. } => {
            let name = path.split('.').next().unwrap_or(path);
            match found {
                Some(other) if other != name => Err(Error::failed_to_parse(format!(
                    "Expected a single top-level field name, found '{other}' and '{name}'"
                ))),
                Some(_) => Ok(()),
                None => {
                    *found = Some(name.to_owned());
                    Ok(())
                }
            }
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorKind;
    use bson::rawdoc;

    fn parse(filters: &[RawDocumentBuf]) -> Result<ArrayFilters> {
        let refs: Vec<&RawDocument> = filters.iter().map(|d| d.as_ref()).collect();
        ArrayFilters::parse(&refs)
    }

    fn error(filters: &[RawDocumentBuf]) -> (ErrorKind, String) {
        let e = parse(filters).unwrap_err();
        (e.kind, e.message)
    }

    #[test]
    fn identifier_is_the_first_component_of_every_path() {
        let f = parse(&[
            rawdoc! {"i.grade": {"$gte": 85}},
            rawdoc! {"$or": [{"j": 0}, {"$and": [{}]}]},
        ])
        .unwrap();
        assert_eq!(f.ids().collect::<Vec<_>>(), ["i", "j"]);
        let doc = rawdoc! {"e": {"grade": 90}};
        let element = doc.get("e").unwrap().unwrap();
        assert!(f.accepts("i", element, Cmp::BINARY).unwrap());
        // `{$and: [{}]}` holds for every element.
        assert!(f.accepts("j", element, Cmp::BINARY).unwrap());
        assert!(!f.accepts("k", element, Cmp::BINARY).unwrap());
    }

    #[test]
    fn elements_match_as_query_values() {
        // Source: update_arrayFilters.js ("$addToSet" with `{i: 0}` on
        // arrays of arrays, "$min" with `{"i.b": 0}`).
        let f = parse(&[rawdoc! {"i": 0}]).unwrap();
        let doc = rawdoc! {"a": [[0], [1], 0.0, "0"]};
        let hits: Vec<bool> = doc
            .get_array("a")
            .unwrap()
            .into_iter()
            .map(|e| f.accepts("i", e.unwrap(), Cmp::BINARY).unwrap())
            .collect();
        assert_eq!(hits, [true, false, true, false]);
    }

    #[test]
    fn malformed_filters_get_mongodb_errors() {
        // Source: jstests/core/write/update/update_arrayFilters.js.
        assert_eq!(
            error(&[rawdoc! {"i": 0, "j": 0}]),
            (
                ErrorKind::FailedToParse,
                "Error parsing array filter :: caused by :: Expected a single top-level field \
                 name, found 'i' and 'j'"
                    .to_owned()
            )
        );
        assert_eq!(
            error(&[rawdoc! {"$alwaysTrue": 1}]),
            (
                ErrorKind::FailedToParse,
                "Error parsing array filter :: caused by :: Cannot use an expression without a \
                 top-level field name in arrayFilters"
                    .to_owned()
            )
        );
        assert_eq!(
            error(&[rawdoc! {"I": 0}]),
            (
                ErrorKind::BadValue,
                "Error parsing array filter :: caused by :: The top-level field name must be an \
                 alphanumeric string beginning with a lowercase letter, found 'I'"
                    .to_owned()
            )
        );
        assert_eq!(error(&[rawdoc! {"i_x": 0}]).0, ErrorKind::BadValue);
        let (kind, message) = error(&[rawdoc! {"$i": 0}]);
        assert_eq!(kind, ErrorKind::BadValue);
        assert!(
            message.contains("unknown top level operator: $i"),
            "{message}"
        );
        assert_eq!(
            error(&[rawdoc! {"i": 0}, rawdoc! {"j": 0}, rawdoc! {"i": 1}]),
            (
                ErrorKind::FailedToParse,
                "Found multiple array filters with the same top-level field name i".to_owned()
            )
        );
    }
}
