//! Find projections: which fields of a matched document go back to the
//! client, as MongoDB 7.0 parses and applies them.
//!
//! A projection is either an inclusion (`{a: 1}`: only the named paths,
//! plus `_id` unless `_id: 0`) or an exclusion (`{a: 0}`: everything but the
//! named paths); only a top-level `_id` may go against the grain. Dotted
//! paths and nested specs (`{"a.b": 1}`, `{a: {b: 1}}`) reach into embedded
//! documents and into every document of an array. Output keeps the
//! document's own field order.
//!
//! find's own operators (`$slice`, `$elemMatch`, positional `$`) live in
//! `find_projection`, which builds on this; here they, `$meta` and computed
//! values are rejected as not supported. This module does not read storage or
//! evaluate aggregation expressions.

use std::collections::HashMap;

use bson::{RawArrayBuf, RawBson, RawBsonRef, RawDocument, RawDocumentBuf};

use super::path::elements;
use super::value::{element, field_path, truthy};
use crate::error::{Error, ErrorKind, Result};

/// Whether a projection keeps only what it names or drops what it names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProjectionKind {
    Inclusion,
    Exclusion,
}

/// A parsed find projection.
#[derive(Debug, Clone, PartialEq)]
pub struct Projection {
    kind: ProjectionKind,
    fields: Fields,
}

/// The named children of one level of the projection. Output follows the
/// document's order, so the spec's order is not kept; a map keeps parsing
/// and applying a spec of many fields linear in its size.
type Fields = HashMap<String, Node>;

#[derive(Debug, Clone, PartialEq)]
enum Node {
    /// Keep (`true`) or drop (`false`) the whole value.
    Keep(bool),
    /// Project inside the value.
    Children(Fields),
}

impl Projection {
    /// Parses a projection document, rejecting what MongoDB 7.0 rejects.
    pub fn parse(spec: &RawDocument) -> Result<Projection> {
        Self::parse_as(spec, ProjectionKind::Exclusion)
    }

    /// Parses a projection whose kind is `default` when no field decides
    /// it (find's `$slice` and `$elemMatch` decide it without naming one).
    pub(crate) fn parse_as(spec: &RawDocument, default: ProjectionKind) -> Result<Projection> {
        let mut parser = Parser::default();
        let mut fields = Fields::new();
        for item in spec.iter() {
            let (key, value) = element(item)?;
            parser.id_named |= key == "_id" || key.starts_with("_id.");
            parser.element(&mut fields, key, value, true)?;
        }
        // Only `_id` was named (or nothing): `{_id: 1}` includes, anything
        // else excludes.
        let kind = parser.kind.unwrap_or(if parser.id_included {
            ProjectionKind::Inclusion
        } else {
            default
        });
        match kind {
            ProjectionKind::Inclusion if !parser.id_named => {
                fields.insert("_id".to_owned(), Node::Keep(true));
            }
            // `_id: 1` in an exclusion just means "do not exclude it".
            ProjectionKind::Exclusion if parser.id_included => {
                fields.remove("_id");
            }
            _ => {}
        }
        Ok(Projection { kind, fields })
    }

    pub fn kind(&self) -> ProjectionKind {
        self.kind
    }

    /// Whether the projection returns documents unchanged (`{}`).
    pub fn is_empty(&self) -> bool {
        self.kind == ProjectionKind::Exclusion && self.fields.is_empty()
    }

    /// The paths an inclusion projection keeps (`_id` among them unless
    /// `_id: 0`), in no order; `None` for an exclusion.
    pub fn included_paths(&self) -> Option<Vec<String>> {
        fn walk(fields: &Fields, prefix: &str, out: &mut Vec<String>) {
            for (name, node) in fields {
                let path = match prefix {
                    "" => name.clone(),
                    _ => format!("{prefix}.{name}"),
                };
                match node {
                    Node::Keep(true) => out.push(path),
                    Node::Keep(false) => {}
                    Node::Children(children) => walk(children, &path, out),
                }
            }
        }
        if self.kind != ProjectionKind::Inclusion {
            return None;
        }
        let mut out = Vec::new();
        walk(&self.fields, "", &mut out);
        Some(out)
    }

    /// The projected copy of a document.
    pub fn apply(&self, doc: &RawDocument) -> RawDocumentBuf {
        project_document(doc, &self.fields, self.kind)
    }
}

fn project_document(doc: &RawDocument, fields: &Fields, kind: ProjectionKind) -> RawDocumentBuf {
    let mut out = RawDocumentBuf::new();
    for (key, value) in doc.iter().map_while(|item| item.ok()) {
        match fields.get(key.as_str()) {
            Some(Node::Keep(keep)) => {
                if *keep {
                    out.append(key, value);
                }
            }
            Some(Node::Children(children)) => {
                if let Some(projected) = project_value(value, children, kind) {
                    out.append(key, projected);
                }
            }
            None => {
                if kind == ProjectionKind::Exclusion {
                    out.append(key, value);
                }
            }
        }
    }
    out
}

/// A value under a nested projection: documents are projected, arrays are
/// projected element by element, and other values have no fields to keep
/// (so an inclusion drops them and an exclusion leaves them alone).
fn project_value(
    value: RawBsonRef<'_>,
    children: &Fields,
    kind: ProjectionKind,
) -> Option<RawBson> {
    match value {
        RawBsonRef::Document(doc) => Some(RawBson::Document(project_document(doc, children, kind))),
        RawBsonRef::Array(array) => {
            let mut out = RawArrayBuf::new();
            for item in elements(array) {
                if let Some(projected) = project_value(item, children, kind) {
                    out.push(projected);
                }
            }
            Some(RawBson::Array(out))
        }
        other => (kind == ProjectionKind::Exclusion).then(|| other.into()),
    }
}

/// What parsing has learned so far.
#[derive(Default)]
struct Parser {
    kind: Option<ProjectionKind>,
    /// Some key is `_id` or starts with `_id.`.
    id_named: bool,
    /// A top-level `_id` is included.
    id_included: bool,
}

impl Parser {
    fn element(
        &mut self,
        parent: &mut Fields,
        key: &str,
        value: RawBsonRef<'_>,
        at_root: bool,
    ) -> Result<()> {
        let is_id = at_root && key == "_id";
        match value {
            RawBsonRef::Document(sub) => {
                reject_positional(key)?;
                self.sub_projection(parent, key, sub)
            }
            RawBsonRef::Boolean(_)
            | RawBsonRef::Int32(_)
            | RawBsonRef::Int64(_)
            | RawBsonRef::Double(_)
            | RawBsonRef::Decimal128(_) => {
                let include = truthy(value);
                if include {
                    reject_positional(key)?;
                }
                insert(parent, key, Node::Keep(include))?;
                if is_id {
                    self.id_included = include;
                    return Ok(());
                }
                self.set_kind(key, include)
            }
            _ => {
                reject_positional(key)?;
                Err(Error::not_implemented(&format!(
                    "projecting a literal value (field {key}) in find"
                )))
            }
        }
    }

    /// `{a: {b: 1}}`, or an operator such as `{a: {$slice: 2}}`.
    fn sub_projection(&mut self, parent: &mut Fields, key: &str, sub: &RawDocument) -> Result<()> {
        let mut entries = sub.iter();
        if let (Some(Ok((op, _))), None) = (entries.next(), entries.next())
            && op.as_str().starts_with('$')
        {
            let op = op.as_str();
            return Err(match op {
                "$slice" | "$elemMatch" | "$meta" => {
                    Error::bad_value(format!("{op} projection is not supported yet"))
                }
                _ => Error::not_implemented(&format!("the projection expression {op} in find")),
            });
        }
        if sub.is_empty() {
            return Err(Error::new(
                ErrorKind::EmptySubProjection,
                "An empty sub-projection is not a valid value. Found empty object at path",
            ));
        }
        let children = children_at(parent, key)?;
        for item in sub.iter() {
            let (child_key, child_value) = element(item)?;
            self.element(children, child_key, child_value, false)?;
        }
        Ok(())
    }

    /// Records an inclusion or exclusion, rejecting a mix of the two.
    fn set_kind(&mut self, key: &str, include: bool) -> Result<()> {
        let wanted = if include {
            ProjectionKind::Inclusion
        } else {
            ProjectionKind::Exclusion
        };
        match self.kind {
            Some(kind) if kind != wanted => Err(if include {
                Error::new(
                    ErrorKind::ProjectionInclusionInExclusion,
                    format!("Cannot do inclusion on field {key} in exclusion projection"),
                )
            } else {
                Error::new(
                    ErrorKind::ProjectionExclusionInInclusion,
                    format!("Cannot do exclusion on field {key} in inclusion projection"),
                )
            }),
            _ => {
                self.kind = Some(wanted);
                Ok(())
            }
        }
    }
}

/// Positional projection (`a.$`) needs the query's match position, which
/// ebb does not track yet.
fn reject_positional(key: &str) -> Result<()> {
    if key == "$" || key.ends_with(".$") || key.contains(".$.") {
        return Err(Error::bad_value(
            "positional projection ($) is not supported yet",
        ));
    }
    Ok(())
}

/// Adds a leaf at the dotted `key` below `parent`.
fn insert(parent: &mut Fields, key: &str, node: Node) -> Result<()> {
    let components = field_path(key)?;
    let (last, init) = components.split_last().unwrap_or((&"", &[]));
    let level = descend(parent, init, key, &components)?;
    if level.contains_key(*last) {
        return Err(collision(key));
    }
    level.insert((*last).to_owned(), node);
    Ok(())
}

/// The children of the nested projection at the dotted `key`, created if
/// need be; a nested spec merges with one already there.
fn children_at<'f>(parent: &'f mut Fields, key: &str) -> Result<&'f mut Fields> {
    let components = field_path(key)?;
    descend(parent, &components, key, &components)
}

/// Walks (creating) nested levels along `path`. Meeting a leaf on the way
/// means the spec names both a path and something below it.
fn descend<'f>(
    mut level: &'f mut Fields,
    path: &[&str],
    key: &str,
    components: &[&str],
) -> Result<&'f mut Fields> {
    for (depth, name) in path.iter().enumerate() {
        let node = level
            .entry((*name).to_owned())
            .or_insert_with(|| Node::Children(Fields::new()));
        level = match node {
            Node::Children(children) => children,
            Node::Keep(_) if depth + 1 == components.len() => return Err(collision(key)),
            Node::Keep(_) => {
                return Err(Error::new(
                    ErrorKind::ProjectionPathPrefixCollision,
                    format!(
                        "Path collision at {key} remaining portion {}",
                        components[1..].join(".")
                    ),
                ));
            }
        };
    }
    Ok(level)
}

fn collision(key: &str) -> Error {
    Error::new(
        ErrorKind::ProjectionPathCollision,
        format!("Path collision at {key}"),
    )
}

#[cfg(test)]
mod tests {
    use bson::{RawDocumentBuf, rawdoc};

    use super::*;

    fn project(spec: RawDocumentBuf, doc: RawDocumentBuf) -> RawDocumentBuf {
        Projection::parse(&spec).unwrap().apply(&doc)
    }

    fn error(spec: RawDocumentBuf) -> Error {
        Projection::parse(&spec).unwrap_err()
    }

    #[test]
    fn inclusion_keeps_named_fields_and_id() {
        let doc = rawdoc! { "_id": 1, "a": 1, "b": 2, "c": 3 };
        assert_eq!(
            project(rawdoc! { "a": 1, "c": true }, doc),
            rawdoc! { "_id": 1, "a": 1, "c": 3 }
        );
    }

    #[test]
    fn inclusion_can_drop_id() {
        let doc = rawdoc! { "_id": 1, "a": 1, "b": 2 };
        assert_eq!(
            project(rawdoc! { "a": 1, "_id": 0 }, doc),
            rawdoc! { "a": 1 }
        );
    }

    #[test]
    fn inclusion_keeps_document_order_not_spec_order() {
        let doc = rawdoc! { "_id": 1, "a": 1, "b": 2 };
        assert_eq!(
            project(rawdoc! { "b": 1, "a": 1 }, doc),
            rawdoc! { "_id": 1, "a": 1, "b": 2 }
        );
    }

    #[test]
    fn a_spec_of_many_fields_parses_and_applies_in_linear_time() {
        let name = |n: &str| bson::raw::CString::try_from(n).unwrap();
        // 200,000 named fields: comparing each with every other (as a list
        // would) takes minutes; a map takes milliseconds.
        let mut spec = RawDocumentBuf::new();
        for i in 0..200_000 {
            spec.append(name(&format!("f{i}")), 1);
        }
        spec.append(name("n.inner"), 1);
        let p = Projection::parse(&spec).unwrap();
        assert_eq!(p.kind(), ProjectionKind::Inclusion);
        let doc = rawdoc! { "_id": 7, "g": 1, "f5": "five", "n": { "inner": 2, "other": 3 }, "f199999": true };
        assert_eq!(
            p.apply(&doc),
            rawdoc! { "_id": 7, "f5": "five", "n": { "inner": 2 }, "f199999": true }
        );
        spec.append(name("f17"), 0);
        assert_eq!(
            Projection::parse(&spec).unwrap_err().kind,
            ErrorKind::ProjectionPathCollision
        );
    }

    #[test]
    fn exclusion_drops_named_fields_only() {
        let doc = rawdoc! { "_id": 1, "a": 1, "b": 2 };
        assert_eq!(
            project(rawdoc! { "a": 0 }, doc),
            rawdoc! { "_id": 1, "b": 2 }
        );
    }

    #[test]
    fn id_alone_decides_the_kind() {
        let doc = rawdoc! { "_id": 1, "a": 1 };
        assert_eq!(
            project(rawdoc! { "_id": 0 }, doc.clone()),
            rawdoc! { "a": 1 }
        );
        assert_eq!(project(rawdoc! { "_id": 1 }, doc), rawdoc! { "_id": 1 });
    }

    #[test]
    fn id_included_in_an_exclusion_is_kept() {
        let doc = rawdoc! { "_id": 1, "a": 1, "b": 2 };
        let spec = rawdoc! { "_id": 1, "a": 0 };
        assert_eq!(
            Projection::parse(&spec).unwrap().kind(),
            ProjectionKind::Exclusion
        );
        assert_eq!(project(spec, doc), rawdoc! { "_id": 1, "b": 2 });
    }

    #[test]
    fn numeric_and_boolean_flags_are_equivalent() {
        let doc = rawdoc! { "_id": 1, "a": 1, "b": 2 };
        for flag in [
            RawBson::Int64(5),
            RawBson::Double(-1.5),
            RawBson::Boolean(true),
            RawBson::Decimal128("2".parse().unwrap()),
        ] {
            let mut spec = RawDocumentBuf::new();
            spec.append(bson::raw::cstr!("a"), flag);
            assert_eq!(project(spec, doc.clone()), rawdoc! { "_id": 1, "a": 1 });
        }
        assert_eq!(
            project(rawdoc! { "a": false }, doc.clone()),
            rawdoc! { "_id": 1, "b": 2 }
        );
        assert_eq!(
            project(rawdoc! { "a": 0.0 }, doc),
            rawdoc! { "_id": 1, "b": 2 }
        );
    }

    #[test]
    fn empty_projection_returns_the_document() {
        let doc = rawdoc! { "_id": 1, "a": { "b": [1, 2] } };
        let projection = Projection::parse(&rawdoc! {}).unwrap();
        assert!(projection.is_empty());
        assert_eq!(projection.apply(&doc), doc);
    }

    #[test]
    fn dotted_inclusion_reaches_into_arrays_of_documents() {
        let doc = rawdoc! {
            "_id": 1,
            "a": [{ "b": 1, "c": 2 }, 5, { "c": 3 }, [{ "b": 4, "d": 0 }]],
            "x": 1,
        };
        assert_eq!(
            project(rawdoc! { "a.b": 1 }, doc),
            rawdoc! { "_id": 1, "a": [{ "b": 1 }, {}, [{ "b": 4 }]] }
        );
    }

    #[test]
    fn dotted_inclusion_on_a_scalar_drops_the_field() {
        let doc = rawdoc! { "_id": 1, "a": 4 };
        assert_eq!(project(rawdoc! { "a.b": 1 }, doc), rawdoc! { "_id": 1 });
        let doc = rawdoc! { "_id": 1, "a": {} };
        assert_eq!(
            project(rawdoc! { "a.b": 1 }, doc),
            rawdoc! { "_id": 1, "a": {} }
        );
    }

    #[test]
    fn dotted_inclusion_matches_mongodb_examples() {
        // Cases from MongoDB's null-semantics test, projected with {_id: 0, "a.b": 1}.
        let spec = || rawdoc! { "_id": 0, "a.b": 1 };
        for (doc, expected) in [
            (rawdoc! { "_id": 1, "a": {} }, rawdoc! { "a": {} }),
            (rawdoc! { "_id": 1, "a": null }, rawdoc! {}),
            (rawdoc! { "_id": 1, "a": [[]] }, rawdoc! { "a": [[]] }),
            (
                rawdoc! { "_id": 1, "a": [1, "s", null, 4] },
                rawdoc! { "a": [] },
            ),
            (
                rawdoc! { "_id": 1, "a": [{ "b": 3 }, {}] },
                rawdoc! { "a": [{ "b": 3 }, {}] },
            ),
        ] {
            assert_eq!(project(spec(), doc), expected);
        }
    }

    #[test]
    fn dotted_exclusion_keeps_scalars_in_arrays() {
        let doc = rawdoc! { "_id": 1, "a": [{ "b": 1, "c": 2 }, 5] };
        assert_eq!(
            project(rawdoc! { "a.b": 0 }, doc),
            rawdoc! { "_id": 1, "a": [{ "c": 2 }, 5] }
        );
    }

    #[test]
    fn nested_spec_equals_dotted_spec() {
        let doc = rawdoc! { "_id": 1, "a": { "b": 1, "c": 2, "d": 3 } };
        assert_eq!(
            project(rawdoc! { "a": { "b": 1, "d": 1 } }, doc.clone()),
            project(rawdoc! { "a.b": 1, "a.d": 1 }, doc)
        );
    }

    #[test]
    fn id_subfield_suppresses_the_default_id() {
        let doc = rawdoc! { "_id": { "x": 1, "y": 2 }, "a": 1 };
        assert_eq!(
            project(rawdoc! { "_id.x": 1 }, doc),
            rawdoc! { "_id": { "x": 1 } }
        );
    }

    #[test]
    fn mixing_inclusion_and_exclusion_is_rejected() {
        let e = error(rawdoc! { "a": 1, "b": 0 });
        assert_eq!(e.kind, ErrorKind::ProjectionExclusionInInclusion);
        assert_eq!(
            e.message,
            "Cannot do exclusion on field b in inclusion projection"
        );
        let e = error(rawdoc! { "b": 0, "a": 1 });
        assert_eq!(e.kind, ErrorKind::ProjectionInclusionInExclusion);
        assert_eq!(
            e.message,
            "Cannot do inclusion on field a in exclusion projection"
        );
        let e = error(rawdoc! { "a": 1, "_id.x": 0 });
        assert_eq!(e.kind, ErrorKind::ProjectionExclusionInInclusion);
    }

    #[test]
    fn path_collisions_are_rejected() {
        let e = error(rawdoc! { "a": 1, "a.b": 1 });
        assert_eq!(e.kind, ErrorKind::ProjectionPathPrefixCollision);
        assert_eq!(e.message, "Path collision at a.b remaining portion b");
        let e = error(rawdoc! { "a.b": 1, "a": 1 });
        assert_eq!(e.kind, ErrorKind::ProjectionPathCollision);
        assert_eq!(e.message, "Path collision at a");
        let e = error(rawdoc! { "a": { "b": 1 }, "a.b": 1 });
        assert_eq!(e.kind, ErrorKind::ProjectionPathCollision);
        assert_eq!(e.message, "Path collision at a.b");
    }

    #[test]
    fn operators_and_literals_are_not_supported_yet() {
        for spec in [
            rawdoc! { "a": { "$slice": 1 } },
            rawdoc! { "a": { "$elemMatch": { "b": 1 } } },
            rawdoc! { "a": { "$meta": "textScore" } },
            rawdoc! { "a.$": 1 },
        ] {
            assert_eq!(error(spec).kind, ErrorKind::BadValue);
        }
        // Computed fields in find (4.4+) are refused, not mistaken for
        // inclusions.
        for spec in [
            rawdoc! { "a": { "$add": [1, 2] } },
            rawdoc! { "a": "literal" },
            rawdoc! { "a": null },
        ] {
            assert_eq!(error(spec).kind, ErrorKind::NotImplemented);
        }
    }

    #[test]
    fn bad_paths_are_rejected() {
        assert_eq!(error(rawdoc! { "": 1 }).kind, ErrorKind::EmptyFieldPath);
        assert_eq!(
            error(rawdoc! { "a..b": 1 }).kind,
            ErrorKind::EmptyFieldPathComponent
        );
        assert_eq!(
            error(rawdoc! { "$a": 1 }).kind,
            ErrorKind::DollarPrefixedFieldPathComponent
        );
        assert_eq!(
            error(rawdoc! { "a.$": 0 }).kind,
            ErrorKind::DollarPrefixedFieldPathComponent
        );
        assert_eq!(
            error(rawdoc! { "a": {} }).kind,
            ErrorKind::EmptySubProjection
        );
    }
}
