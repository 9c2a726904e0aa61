//! The starting document of an upsert: the equality conditions of the
//! query filter (`{a: 1}`, `{a: {$eq: 1}}`, dotted paths, `$and` of those)
//! laid out as fields, before the update runs on it.
//!
//! MongoDB simplifies the filter first, so a one-element `$in` counts as an
//! equality and a one-branch `$or` as its branch; ranges, `$in` lists,
//! regexes and other operators contribute nothing. Fields are laid out in
//! byte order of their paths, as MongoDB does. Running the update on the
//! result, and generating an `_id`, happen elsewhere.

use std::collections::BTreeMap;

use bson::{RawBsonRef, RawDocument};

use super::tree::{Fields, Value, cstr, field_index};
use crate::{Error, ErrorKind, Result};

/// Which equalities to take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scope {
    /// All of them (operator updates).
    All,
    /// Only `_id` (replacements keep nothing else of the query).
    IdOnly,
}

/// Lays out the filter's equalities as a document.
pub(crate) fn seed<'a>(filter: &'a RawDocument, scope: Scope) -> Result<Value<'a>> {
    let mut equalities = BTreeMap::new();
    collect(filter, scope, &mut equalities)?;
    let mut root = Fields::new();
    for (path, v) in equalities {
        place(&mut root, path, v)?;
    }
    Ok(Value::Doc(root))
}

fn collect<'a>(
    filter: &'a RawDocument,
    scope: Scope,
    out: &mut BTreeMap<&'a str, RawBsonRef<'a>>,
) -> Result<()> {
    for item in filter.iter() {
        let (key, v) = item?;
        let key = key.as_str();
        match (key, v) {
            ("$and", RawBsonRef::Array(branches)) => {
                for branch in branches {
                    if let RawBsonRef::Document(d) = branch? {
                        collect(d, scope, out)?;
                    }
                }
            }
            ("$or", RawBsonRef::Array(branches)) => {
                let mut it = branches.into_iter();
                if let (Some(only), None) = (it.next(), it.next())
                    && let RawBsonRef::Document(d) = only?
                {
                    collect(d, scope, out)?;
                }
            }
            _ if key.starts_with('$') => {}
            _ if scope == Scope::IdOnly && key != "_id" => {}
            _ => {
                for eq in equalities_of(v)? {
                    insert(out, key, eq)?;
                }
            }
        }
    }
    Ok(())
}

/// The values a field's condition pins it to.
fn equalities_of(v: RawBsonRef<'_>) -> Result<Vec<RawBsonRef<'_>>> {
    match v {
        RawBsonRef::RegularExpression(_) => Ok(Vec::new()),
        RawBsonRef::Document(d) if is_operator_document(d)? => {
            let mut out = Vec::new();
            for item in d.iter() {
                match item? {
                    (op, eq) if op.as_str() == "$eq" => out.push(eq),
                    (op, RawBsonRef::Array(list)) if op.as_str() == "$in" => {
                        let mut it = list.into_iter();
                        if let (Some(only), None) = (it.next(), it.next()) {
                            match only? {
                                RawBsonRef::RegularExpression(_) => {}
                                only => out.push(only),
                            }
                        }
                    }
                    _ => {}
                }
            }
            Ok(out)
        }
        other => Ok(vec![other]),
    }
}

/// `{$gt: 1}` is a condition; `{b: 1}` and a DBRef (`{$ref, $id}`) are
/// values to match exactly.
fn is_operator_document(d: &RawDocument) -> Result<bool> {
    Ok(match d.iter().next() {
        Some(item) => {
            let (k, _) = item?;
            k.as_str().starts_with('$') && !matches!(k.as_str(), "$ref" | "$id" | "$db")
        }
        None => false,
    })
}

fn insert<'a>(
    out: &mut BTreeMap<&'a str, RawBsonRef<'a>>,
    path: &'a str,
    v: RawBsonRef<'a>,
) -> Result<()> {
    let conflict = |msg: String| {
        Error::new(
            ErrorKind::NotSingleValueField,
            format!("cannot infer query fields to set, {msg}"),
        )
    };
    if out.contains_key(path) {
        return Err(conflict(format!("path '{path}' is matched twice")));
    }
    for existing in out.keys() {
        if is_ancestor(existing, path) {
            return Err(conflict(format!(
                "both paths '{path}' and '{existing}' are matched"
            )));
        }
        if is_ancestor(path, existing) {
            return Err(conflict(format!(
                "both paths '{existing}' and '{path}' are matched"
            )));
        }
    }
    out.insert(path, v);
    Ok(())
}

fn is_ancestor(prefix: &str, path: &str) -> bool {
    path.len() > prefix.len() && path.starts_with(prefix) && path.as_bytes()[prefix.len()] == b'.'
}

/// Sets `path` to `v`, creating the documents on the way.
fn place<'a>(root: &mut Fields<'a>, path: &'a str, v: RawBsonRef<'a>) -> Result<()> {
    let (parents, last) = match path.rsplit_once('.') {
        Some((parents, last)) => (Some(parents), last),
        None => (None, path),
    };
    let mut fields = root;
    for part in parents.into_iter().flat_map(|p| p.split('.')) {
        let i = match field_index(fields, part) {
            Some(i) => i,
            None => {
                fields.push((cstr(part)?, Value::Doc(Fields::new())));
                fields.len() - 1
            }
        };
        fields = match &mut fields[i].1 {
            Value::Doc(inner) => inner,
            _ => unreachable!("conflicting paths were refused"),
        };
    }
    fields.push((cstr(last)?, Value::Raw(v)));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::update::tree::encode_fields;
    use bson::rawdoc;

    fn seeded(filter: bson::RawDocumentBuf, scope: Scope) -> Result<bson::Document> {
        let Value::Doc(fields) = seed(&filter, scope)? else {
            unreachable!()
        };
        Ok(bson::Document::try_from(encode_fields(&fields).as_ref()).unwrap())
    }

    #[test]
    fn equalities_and_dotted_paths_seed_fields() {
        let filter = rawdoc! {"a": 1, "b.c": 2, "$and": [{"d": 3}], "e": {"$gt": 1}};
        assert_eq!(
            seeded(filter, Scope::All).unwrap(),
            bson::doc! {"a": 1, "b": {"c": 2}, "d": 3}
        );
    }

    #[test]
    fn eq_operator_and_single_in_are_equalities() {
        let filter = rawdoc! {"x": {"$eq": 5}, "y": {"$in": [7]}, "z": {"$in": [1, 2]}, "w": {"$eq": 1, "$lt": 9}};
        assert_eq!(
            seeded(filter, Scope::All).unwrap(),
            bson::doc! {"w": 1, "x": 5, "y": 7}
        );
    }

    #[test]
    fn regex_and_multi_branch_or_seed_nothing() {
        let filter = rawdoc! {"a": bson::Regex { pattern: bson::raw::cstr!("^x").into(), options: bson::raw::cstr!("").into() }, "$or": [{"b": 1}, {"c": 2}]};
        assert_eq!(seeded(filter, Scope::All).unwrap(), bson::doc! {});
        let one = rawdoc! {"$or": [{"b": 1}]};
        assert_eq!(seeded(one, Scope::All).unwrap(), bson::doc! {"b": 1});
    }

    #[test]
    fn embedded_documents_are_values() {
        let filter = rawdoc! {"a": {"b": 1}, "r": {"$ref": "c", "$id": 1}};
        assert_eq!(
            seeded(filter, Scope::All).unwrap(),
            bson::doc! {"a": {"b": 1}, "r": {"$ref": "c", "$id": 1}}
        );
    }

    #[test]
    fn replacement_scope_keeps_only_id() {
        let filter = rawdoc! {"a": 1, "_id": 7};
        assert_eq!(
            seeded(filter, Scope::IdOnly).unwrap(),
            bson::doc! {"_id": 7}
        );
    }

    #[test]
    fn replacement_scope_ignores_conflicts_elsewhere() {
        let filter = rawdoc! {"a": 1, "a.b": 2, "_id": 7};
        assert_eq!(
            seeded(filter, Scope::IdOnly).unwrap(),
            bson::doc! {"_id": 7}
        );
    }

    #[test]
    fn the_same_path_twice_is_refused() {
        let err = seeded(rawdoc! {"a": 1, "$and": [{"a": 2}]}, Scope::All).unwrap_err();
        assert_eq!(err.kind, ErrorKind::NotSingleValueField);
        assert_eq!(
            err.message,
            "cannot infer query fields to set, path 'a' is matched twice"
        );
        let err = seeded(rawdoc! {"a": {"x": 1}, "a.b": 2}, Scope::All).unwrap_err();
        assert_eq!(
            err.message,
            "cannot infer query fields to set, both paths 'a.b' and 'a' are matched"
        );
    }
}
