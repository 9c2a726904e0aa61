//! `$project` with computed fields, and setting computed values into a
//! document (what `$addFields` does too).
//!
//! A `$project` whose values are all 0/1 flags and nested flag documents is
//! a plain [`Projection`]. One that also computes fields (`{a: 1, s:
//! {$add: …}, t: "$b"}`) keeps what its flags include, then sets each
//! computed field, evaluated against the input document, in spec order:
//! replacing a kept field in place, else appended; a missing value
//! (`$$REMOVE`) leaves the field out. Computed fields cannot be mixed with
//! exclusions (except `_id: 0`); computed fields below a top-level one
//! (`{a: {b: {$add: …}}}`, `"a.b": <expr>`) are refused for now.

use std::collections::{HashMap, HashSet};

use bson::{RawBson, RawBsonRef, RawDocument, RawDocumentBuf, rawdoc};

use super::expr::{Env, Expr, cstr};
use crate::error::{Error, ErrorKind, Result};
use crate::query::projection::{Projection, ProjectionKind};
use crate::query::value::element;

/// A parsed `$project` stage.
pub enum Project {
    Plain(Projection),
    Computed(ComputedProjection),
}

/// A `$project` with computed fields.
#[derive(Debug, Clone)]
pub struct ComputedProjection {
    /// What the flags keep; `None` when they keep nothing (not even `_id`).
    keep: Option<Projection>,
    computed: Vec<(String, Expr)>,
}

/// Whether a `$project` value is a flag (include/exclude) or a nested
/// projection rather than an expression.
pub(crate) fn is_flag_or_nested(v: RawBsonRef<'_>) -> bool {
    match v {
        RawBsonRef::Boolean(_)
        | RawBsonRef::Int32(_)
        | RawBsonRef::Int64(_)
        | RawBsonRef::Double(_)
        | RawBsonRef::Decimal128(_) => true,
        RawBsonRef::Document(d) => match d.iter().next() {
            Some(Ok((k, _))) => {
                let k = k.as_str();
                !k.starts_with('$') || matches!(k, "$slice" | "$elemMatch")
            }
            _ => true,
        },
        _ => false,
    }
}

impl Project {
    /// Parses a `$project` specification in a command's environment.
    pub fn parse(spec: &RawDocument, env: &Env) -> Result<Project> {
        let mut flags = RawDocumentBuf::new();
        let mut computed = Vec::new();
        let mut excluded_after_computed = None;
        for item in spec.iter() {
            let (k, v) = element(item)?;
            if is_flag_or_nested(v) {
                let excludes = !matches!(v, RawBsonRef::Document(_))
                    && !crate::query::value::truthy(v)
                    && k != "_id";
                if excludes && !computed.is_empty() && excluded_after_computed.is_none() {
                    excluded_after_computed = Some(k.to_owned());
                }
                flags.append(cstr(k), v);
                continue;
            }
            if k.contains('.') {
                return Err(Error::not_implemented("computed dotted fields in $project"));
            }
            computed.push((k.to_owned(), Expr::parse_in(v, env)?));
        }
        if computed.is_empty() {
            return Ok(Project::Plain(Projection::parse(spec)?));
        }
        if let Some(field) = excluded_after_computed {
            return Err(Error::new(
                ErrorKind::ProjectionExclusionInInclusion,
                format!("Cannot do exclusion on field {field} in inclusion projection"),
            ));
        }
        let keeps_other_fields = flags.iter().any(|item| {
            item.is_ok_and(|(k, _)| k.as_str() != "_id" && !k.as_str().starts_with("_id."))
        });
        let id_excluded = matches!(flags.get("_id"), Ok(Some(v)) if !matches!(v, RawBsonRef::Document(_)) && !crate::query::value::truthy(v));
        let keep = if keeps_other_fields {
            let p = Projection::parse(&flags)?;
            if p.kind() == ProjectionKind::Exclusion {
                return Err(Error::new(
                    ErrorKind::ProjectionExpressionInExclusion,
                    "Cannot use expression other than $meta in exclusion projection",
                ));
            }
            Some(p)
        } else if id_excluded || computed.iter().any(|(k, _)| k == "_id") {
            None
        } else {
            Some(Projection::parse(&rawdoc! { "_id": 1 })?)
        };
        // A computed `_id` leads the document, as mongod puts it.
        computed.sort_by_key(|(k, _)| k != "_id");
        Ok(Project::Computed(ComputedProjection { keep, computed }))
    }
}

impl ComputedProjection {
    pub fn apply(&self, doc: &RawDocument) -> Result<RawDocumentBuf> {
        let base = match &self.keep {
            Some(p) => p.apply(doc),
            None => RawDocumentBuf::new(),
        };
        let mut values = Vec::with_capacity(self.computed.len());
        for (k, e) in &self.computed {
            values.push((k.as_str(), e.eval(doc)?));
        }
        set_fields(&base, values)
    }
}

/// `base` with each (name, value) set: replaced in place when the field
/// exists, appended otherwise; `None` (missing) removes the field.
/// Linear in the fields of both, however many values are set.
pub(super) fn set_fields(
    base: &RawDocument,
    mut values: Vec<(&str, Option<RawBson>)>,
) -> Result<RawDocumentBuf> {
    let mut slots: HashMap<&str, usize> = HashMap::with_capacity(values.len());
    for (i, (name, _)) in values.iter().enumerate() {
        slots.entry(*name).or_insert(i);
    }
    let mut in_base = HashSet::new();
    let mut out = RawDocumentBuf::new();
    for el in base.iter() {
        let (k, v) = el?;
        in_base.insert(k.as_str());
        match slots.get(k.as_str()) {
            Some(&i) => {
                if let Some(v) = values[i].1.take() {
                    out.append(k, v);
                }
            }
            None => out.append(k, v),
        }
    }
    for (k, v) in values {
        if let Some(v) = v
            && !in_base.contains(k)
        {
            out.append(cstr(k), v);
        }
    }
    Ok(out)
}

/// `doc` with `value` at the dotted `path`, as mongod sets `$lookup`'s `as` and
/// `$setWindowFields` outputs: a field on the way that is not a document (an array included) becomes one.
pub(super) fn set_path(doc: &RawDocument, path: &[&str], value: RawBson) -> Result<RawDocumentBuf> {
    let (first, rest) = match path {
        [first] => return set_fields(doc, vec![(first, Some(value))]),
        [first, rest @ ..] => (*first, rest),
        [] => return Ok(doc.to_owned()),
    };
    let empty = RawDocumentBuf::new();
    let child = match doc.get(first)? {
        Some(RawBsonRef::Document(d)) => set_path(d, rest, value)?,
        _ => set_path(&empty, rest, value)?,
    };
    set_fields(doc, vec![(first, Some(RawBson::Document(child)))])
}
