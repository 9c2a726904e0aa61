//! `find`'s projection: an inclusion or exclusion [`Projection`] plus the
//! operators only `find` has, as MongoDB 7.0 parses and applies them:
//! `{a: {$slice: n}}` / `{$slice: [skip, limit]}`, `{a: {$elemMatch: …}}`
//! (the first element the sub-filter accepts) and the positional
//! `{"a.$": 1}` (the element the query matched, found by
//! [`matched_position`]).
//!
//! These operators decide no kind of their own: the named fields do, else
//! `$slice` makes an exclusion and `$elemMatch` an inclusion (mongod's
//! order of precedence). In an inclusion a `$slice` or positional path is
//! included like `{a: 1}`; `$elemMatch` results are appended after the
//! included fields, as mongod 4.4+ returns them. Operators are recognised
//! at the top level of the spec only; nested forms (`{a: {b: {$slice: 1}}}`)
//! stay refused by [`Projection`]. Computed fields (MongoDB 4.4+) make
//! the projection an inclusion evaluated as `$project` evaluates it, the
//! operators' paths included; the operators then apply to its result.
//! This module reads no storage and evaluates no aggregation expressions.

use bson::raw::CString;
use bson::{RawArrayBuf, RawBson, RawBsonRef, RawDocument, RawDocumentBuf};

use super::filter::Filter;
use super::path::elements;
use super::positional::matched_position;
use super::projection::{Projection, ProjectionKind};
use super::value::{element, number_as_f64};
use crate::encoding::collation::Collation;
use crate::error::{Error, ErrorKind, ProjectionFault, Result};
use crate::pipeline::{ComputedProjection, Env, Project, is_flag_or_nested};

/// A parsed `find` projection.
#[derive(Debug, Clone)]
pub struct FindProjection {
    base: Projection,
    slices: Vec<Slice>,
    /// `(field, {field: {$elemMatch: …}})`, in spec order.
    elem_matches: Vec<(String, Filter)>,
    /// The path before `.$` of a positional projection.
    positional: Option<Vec<String>>,
    /// `returnKey`: the fields of the plan's index key pattern (and
    /// whether each is `hashed`), whose values replace the document.
    return_key: Option<Vec<(String, bool)>>,
    /// A projection with computed fields, evaluated as `$project` does.
    computed: Option<ComputedProjection>,
    /// Fields set to the document's `$text` score (`{$meta: "textScore"}`),
    /// top-level, after the rest.
    text_scores: Vec<String>,
}

/// `$slice` at a path: `limit` alone (`n` / `-n`) or `[skip, limit]`.
#[derive(Debug, Clone, PartialEq)]
struct Slice {
    path: Vec<String>,
    skip: Option<i32>,
    limit: i32,
}

fn fault(kind: ProjectionFault, message: impl Into<String>) -> Error {
    Error::new(ErrorKind::FindProjection(kind), message)
}

impl FindProjection {
    /// Parses `spec` for a find whose filter is `query` (None where there is
    /// no query, as in `findAndModify` without one).
    pub fn parse(spec: &RawDocument, query: Option<&RawDocument>) -> Result<FindProjection> {
        Self::parse_in(spec, query, &Env::new(bson::DateTime::now()))
    }

    /// [`FindProjection::parse`] in a command's environment: computed
    /// fields (MongoDB 4.4+: `{total: {$add: ["$a", "$b"]}}`, literals)
    /// are aggregation expressions that see its `$$NOW` and `let`.
    pub fn parse_in(
        spec: &RawDocument,
        query: Option<&RawDocument>,
        env: &Env,
    ) -> Result<FindProjection> {
        let computes = spec
            .iter()
            .filter_map(|item| item.ok())
            .any(|(key, value)| {
                !is_flag_or_nested(value)
                    && !is_meta(value)
                    && positional_prefix(key.as_str()).is_none()
            });
        let mut rest = RawDocumentBuf::new();
        let mut slices = Vec::new();
        let mut elem_matches: Vec<(String, Filter)> = Vec::new();
        let mut positional: Option<Vec<String>> = None;
        let mut text_scores = Vec::new();
        for item in spec.iter() {
            let (key, value) = element(item)?;
            if let Some(prefix) = positional_prefix(key) {
                check_positional(
                    key,
                    value,
                    query,
                    positional.is_some(),
                    !elem_matches.is_empty(),
                )?;
                positional = Some(prefix.split('.').map(str::to_owned).collect());
                rest.append(cstring(prefix)?, true);
                continue;
            }
            let operator = match value {
                RawBsonRef::Document(sub) => single_operator(sub),
                _ => None,
            };
            match operator {
                Some(("$slice", argument)) => slices.push(parse_slice(key, argument)?),
                Some(("$meta", RawBsonRef::String("textScore"))) if !key.contains('.') => {
                    text_scores.push(key.to_owned());
                }
                Some(("$meta", _)) => {
                    return Err(Error::bad_value(format!(
                        "ebb projects {{$meta: \"textScore\"}} only, on a top-level field \
                         (field {key})"
                    )));
                }
                Some(("$elemMatch", argument)) => {
                    elem_matches.push(parse_elem_match(key, argument, positional.is_some())?);
                }
                _ => rest.append(cstring(key)?, value),
            }
        }
        if computes {
            // Computed fields make an inclusion, which includes a sliced
            // array as `{a: 1}` would; the operators then apply to what
            // the expressions produced.
            check_collisions(&rest, &slices, &elem_matches)?;
            let mut with_slices = rest.clone();
            for slice in &slices {
                with_slices.append(cstring(&slice.path.join("."))?, true);
            }
            if let Project::Computed(computed) = Project::parse(&with_slices, env)? {
                return Ok(FindProjection {
                    base: Projection::parse_as(&RawDocumentBuf::new(), ProjectionKind::Inclusion)?,
                    slices,
                    elem_matches,
                    positional,
                    return_key: None,
                    computed: Some(computed),
                    text_scores,
                });
            }
        }
        check_collisions(&rest, &slices, &elem_matches)?;
        let default = if slices.is_empty() && !elem_matches.is_empty() {
            ProjectionKind::Inclusion
        } else {
            ProjectionKind::Exclusion
        };
        let mut base = Projection::parse_as(&rest, default)?;
        if base.kind() == ProjectionKind::Inclusion && !slices.is_empty() {
            for slice in &slices {
                rest.append(cstring(&slice.path.join("."))?, true);
            }
            base = Projection::parse_as(&rest, default)?;
        }
        Ok(FindProjection {
            base,
            slices,
            elem_matches,
            positional,
            return_key: None,
            computed: None,
            text_scores,
        })
    }

    /// Whether the projection sets fields to the `$text` score.
    /// The paths a plain inclusion keeps (no `$slice`, `$elemMatch`,
    /// positional `$`, `returnKey`, computed field or `$meta`): a query
    /// can answer it from an index that holds every one of them.
    pub fn included_paths(&self) -> Option<Vec<String>> {
        let plain = self.slices.is_empty()
            && self.elem_matches.is_empty()
            && self.positional.is_none()
            && self.return_key.is_none()
            && self.computed.is_none()
            && self.text_scores.is_empty();
        plain.then(|| self.base.included_paths()).flatten()
    }

    pub fn wants_text_score(&self) -> bool {
        !self.text_scores.is_empty()
    }

    /// `returnKey: true`: each document becomes its key in the index whose
    /// key pattern has `fields` (`{}` for a collection scan, no fields; a
    /// `hashed` field's key is the hash of its value), as mongod returns it
    /// in place of the document and any projection.
    pub fn index_key(fields: Vec<(String, bool)>) -> Result<FindProjection> {
        Ok(FindProjection {
            base: Projection::parse(&RawDocumentBuf::new())?,
            slices: Vec::new(),
            elem_matches: Vec::new(),
            positional: None,
            return_key: Some(fields),
            computed: None,
            text_scores: Vec::new(),
        })
    }

    /// The same projection with `$elemMatch` comparing strings under the
    /// query's collation, as mongod evaluates it.
    pub fn collated(mut self, collation: Option<std::sync::Arc<Collation>>) -> FindProjection {
        self.elem_matches = self
            .elem_matches
            .into_iter()
            .map(|(field, filter)| (field, filter.collated(collation.clone())))
            .collect();
        self
    }

    /// The projected copy of `doc`, which `query` matched.
    pub fn apply(&self, doc: &RawDocument, query: &Filter) -> Result<RawDocumentBuf> {
        self.apply_scored(doc, query, None)
    }

    /// [`FindProjection::apply`] for a document with a `$text` score, which
    /// the projection's `{$meta: "textScore"}` fields are set to.
    pub fn apply_scored(
        &self,
        doc: &RawDocument,
        query: &Filter,
        score: Option<f64>,
    ) -> Result<RawDocumentBuf> {
        let mut out = self.apply_fields(doc, query)?;
        if !self.text_scores.is_empty() {
            let score = score.ok_or_else(text_score_unavailable)?;
            for field in &self.text_scores {
                out = set_value(&out, field, RawBsonRef::Double(score))?;
            }
        }
        Ok(out)
    }

    fn apply_fields(&self, doc: &RawDocument, query: &Filter) -> Result<RawDocumentBuf> {
        if let Some(fields) = &self.return_key {
            return index_key_of(doc, fields);
        }
        let mut out = match &self.computed {
            Some(computed) => computed.apply(doc)?,
            None => self.base.apply(doc),
        };
        if let Some(path) = &self.positional {
            let parts: Vec<&str> = path.iter().map(String::as_str).collect();
            out = positional_in(&out, &parts, || matched_position(query, doc))?;
        }
        for slice in &self.slices {
            let parts: Vec<&str> = slice.path.iter().map(String::as_str).collect();
            out = slice_in(&out, &parts, slice);
        }
        for (field, filter) in &self.elem_matches {
            let matched = match (doc.get(field).ok().flatten(), matched_position(filter, doc)) {
                (Some(RawBsonRef::Array(array)), Some(at)) => elements(array).nth(at),
                _ => None,
            };
            out = set_field(&out, field, matched, self.base.kind())?;
        }
        Ok(out)
    }
}

/// Operator paths may not overlap each other or the named fields (one
/// path, one rule), as mongod's projection tree refuses.
fn check_collisions(
    rest: &RawDocument,
    slices: &[Slice],
    elem_matches: &[(String, Filter)],
) -> Result<()> {
    let mut seen: Vec<String> = rest
        .iter()
        .map_while(|item| item.ok())
        .map(|(k, _)| k.as_str().to_owned())
        .collect();
    let operators = slices
        .iter()
        .map(|s| s.path.join("."))
        .chain(elem_matches.iter().map(|(f, _)| f.clone()));
    for path in operators {
        let overlaps = |other: &String| {
            *other == path
                || other.starts_with(&format!("{path}."))
                || path.starts_with(&format!("{other}."))
        };
        if seen.iter().any(overlaps) {
            return Err(Error::new(
                ErrorKind::ProjectionPathCollision,
                format!("Path collision at {path}"),
            ));
        }
        seen.push(path);
    }
    Ok(())
}

/// The key a document has in an index on `fields`: each field's value, or
/// null where it is missing, or for a hashed field the hash of that. A
/// value reached through an array has one key per element and the scan
/// does not say which one it went through, so that case is refused rather
/// than guessed.
fn index_key_of(doc: &RawDocument, fields: &[(String, bool)]) -> Result<RawDocumentBuf> {
    let mut out = RawDocumentBuf::new();
    for (field, hashed) in fields {
        let mut current = Some(RawBsonRef::Document(doc));
        for part in field.split('.') {
            current = match current {
                Some(RawBsonRef::Document(d)) => d.get(part).ok().flatten(),
                Some(RawBsonRef::Array(_)) => {
                    return Err(Error::not_implemented("returnKey on a multikey index"));
                }
                _ => None,
            };
        }
        match current {
            Some(RawBsonRef::Array(_)) => {
                return Err(Error::not_implemented("returnKey on a multikey index"));
            }
            _ if *hashed => {
                let value = current.unwrap_or(RawBsonRef::Null);
                out.append(cstring(field)?, crate::encoding::hashed::hash64(value));
            }
            Some(value) => out.append(cstring(field)?, value),
            None => out.append(cstring(field)?, RawBson::Null),
        }
    }
    Ok(out)
}

/// The path before a positional `$` (`"a.b.$"` → `"a.b"`, `"a.$.c"` →
/// `"a"`), if the key has one.
fn positional_prefix(key: &str) -> Option<&str> {
    if let Some(at) = key.find(".$.") {
        return Some(&key[..at]);
    }
    key.strip_suffix(".$").or((key == "$").then_some(""))
}

/// mongod's checks of a positional projection, in its order.
fn check_positional(
    key: &str,
    value: RawBsonRef<'_>,
    query: Option<&RawDocument>,
    seen: bool,
    elem_match_seen: bool,
) -> Result<()> {
    match value {
        RawBsonRef::Document(_) => {
            return Err(fault(
                ProjectionFault::PositionalWithObject,
                "positional projection cannot be used with an expression or sub object",
            ));
        }
        RawBsonRef::Boolean(_)
        | RawBsonRef::Int32(_)
        | RawBsonRef::Int64(_)
        | RawBsonRef::Double(_)
        | RawBsonRef::Decimal128(_) => {}
        _ => {
            return Err(fault(
                ProjectionFault::PositionalWithLiteral,
                "positional projection cannot be used with a literal",
            ));
        }
    }
    if !super::value::truthy(value) {
        // An exclusion of `a.$`: FieldPath refuses the `$` component.
        return super::value::field_path(key).map(|_| ());
    }
    if seen {
        return Err(fault(
            ProjectionFault::PositionalTwice,
            "Cannot specify more than one positional projection per query.",
        ));
    }
    if elem_match_seen {
        return Err(fault(
            ProjectionFault::PositionalAfterElemMatch,
            "Cannot specify positional operator and $elemMatch.",
        ));
    }
    let Some(query) = query else {
        return Err(fault(
            ProjectionFault::PositionalWithoutQuery,
            "Projections with a positional operator require a matcher",
        ));
    };
    let match_field = key.split('.').next().unwrap_or("");
    if !names_field(query, match_field) {
        return Err(fault(
            ProjectionFault::PositionalNotInQuery,
            format!("Positional projection '{key}' does not match the query document."),
        ));
    }
    if key.ends_with(".$.") {
        return Err(fault(
            ProjectionFault::PositionalTrailingDot,
            "Path cannot end with '.$.'",
        ));
    }
    let prefix_len = positional_prefix(key).map_or(0, str::len);
    let after = key.get(prefix_len..).unwrap_or("");
    let after = after
        .strip_prefix(".$.")
        .or_else(|| after.strip_prefix(".$"))
        .unwrap_or(after);
    if positional_prefix(after).is_some() || after == "$" {
        return Err(fault(
            ProjectionFault::PositionalOperatorTwice,
            format!("Cannot use positional operator twice: {key}"),
        ));
    }
    Ok(())
}

/// Whether some leaf of the filter document names `field` as its first
/// path component (logical operators are looked through), mongod's
/// condition for a positional projection on `field`.
fn names_field(query: &RawDocument, field: &str) -> bool {
    query
        .iter()
        .map_while(|item| item.ok())
        .any(|(key, value)| match key.as_str() {
            "$and" | "$or" | "$nor" => match value {
                RawBsonRef::Array(clauses) => elements(clauses).any(
                    |clause| matches!(clause, RawBsonRef::Document(d) if names_field(d, field)),
                ),
                _ => false,
            },
            other if other.starts_with('$') => false,
            other => other.split('.').next() == Some(field),
        })
}

/// A one-field document whose field is an operator: `(name, argument)`.
fn single_operator(sub: &RawDocument) -> Option<(&str, RawBsonRef<'_>)> {
    let mut entries = sub.iter();
    match (entries.next(), entries.next()) {
        (Some(Ok((name, argument))), None) if name.as_str().starts_with('$') => {
            Some((name.as_str(), argument))
        }
        _ => None,
    }
}

/// A number as mongod's `numberInt` reads it (truncated, saturated).
fn number_int(value: RawBsonRef<'_>) -> Option<i32> {
    match value {
        RawBsonRef::Int32(n) => Some(n),
        RawBsonRef::Int64(n) => Some(n.clamp(i64::from(i32::MIN), i64::from(i32::MAX)) as i32),
        other => number_as_f64(other).map(|f| f as i32),
    }
}

fn parse_slice(key: &str, argument: RawBsonRef<'_>) -> Result<Slice> {
    let path = super::value::field_path(key)?
        .into_iter()
        .map(str::to_owned)
        .collect();
    if let Some(limit) = number_int(argument) {
        return Ok(Slice {
            path,
            skip: None,
            limit,
        });
    }
    let RawBsonRef::Array(array) = argument else {
        return Err(fault(
            ProjectionFault::SliceArgument,
            "$slice only supports numbers and [skip, limit] arrays",
        ));
    };
    let items: Vec<RawBsonRef<'_>> = elements(array).collect();
    let [skip, limit] = items[..] else {
        return Err(fault(
            ProjectionFault::SliceArrayLength,
            "$slice array argument should be of form [skip, limit]",
        ));
    };
    let skip = number_int(skip).ok_or_else(|| {
        fault(
            ProjectionFault::SliceSkipType,
            format!(
                "$slice expects the skip argument to be a number, got {}",
                crate::encoding::display::type_name(&skip)
            ),
        )
    })?;
    let limit = number_int(limit).ok_or_else(|| {
        fault(
            ProjectionFault::SliceLimitType,
            format!(
                "$slice expects the limit argument to be a number, got {}",
                crate::encoding::display::type_name(&limit)
            ),
        )
    })?;
    if limit <= 0 {
        return Err(fault(
            ProjectionFault::SliceLimitNotPositive,
            format!("$slice limit must be positive, got {limit}"),
        ));
    }
    Ok(Slice {
        path,
        skip: Some(skip),
        limit,
    })
}

fn parse_elem_match(
    key: &str,
    argument: RawBsonRef<'_>,
    after_positional: bool,
) -> Result<(String, Filter)> {
    let RawBsonRef::Document(spec) = argument else {
        return Err(fault(
            ProjectionFault::ElemMatchArgument,
            format!(
                "elemMatch: Invalid argument, object required, but got {}",
                crate::encoding::display::type_name(&argument)
            ),
        ));
    };
    if after_positional {
        return Err(fault(
            ProjectionFault::ElemMatchAfterPositional,
            "Cannot specify positional operator and $elemMatch.",
        ));
    }
    super::value::field_path(key)?;
    if key.contains('.') {
        return Err(fault(
            ProjectionFault::ElemMatchNested,
            "Cannot use $elemMatch projection on a nested field.",
        ));
    }
    let mut inner = RawDocumentBuf::new();
    inner.append(bson::raw::cstr!("$elemMatch"), spec.to_owned());
    let mut filter = RawDocumentBuf::new();
    filter.append(cstring(key)?, inner);
    Ok((key.to_owned(), Filter::parse(&filter)?))
}

fn cstring(key: &str) -> Result<CString> {
    CString::try_from(key).map_err(|_| Error::bad_value(format!("invalid field name {key:?}")))
}

/// mongod's find `$slice` of one array.
fn slice_array(array: &bson::RawArray, slice: &Slice) -> RawArrayBuf {
    let items: Vec<RawBsonRef<'_>> = elements(array).collect();
    let len = items.len() as i64;
    let (start, count) = match slice.skip {
        None if slice.limit < 0 => {
            let start = (len + i64::from(slice.limit)).max(0);
            (start, len - start)
        }
        None => (0, len.min(i64::from(slice.limit))),
        Some(skip) => {
            let start = if skip < 0 {
                (len + i64::from(skip)).max(0)
            } else {
                len.min(i64::from(skip))
            };
            (start, (len - start).min(i64::from(slice.limit)))
        }
    };
    let mut out = RawArrayBuf::new();
    for item in items.into_iter().skip(start as usize).take(count as usize) {
        out.push(item);
    }
    out
}

/// Slices the array at `path` below `doc`, through documents and arrays
/// of documents; values of other types are left as they are.
fn slice_in(doc: &RawDocument, path: &[&str], slice: &Slice) -> RawDocumentBuf {
    let mut out = RawDocumentBuf::new();
    for (key, value) in doc.iter().map_while(|item| item.ok()) {
        let Some((first, rest)) = path.split_first() else {
            out.append(key, value);
            continue;
        };
        if key.as_str() != *first {
            out.append(key, value);
            continue;
        }
        let sliced: RawBson = match value {
            RawBsonRef::Array(array) if rest.is_empty() => {
                RawBson::Array(slice_array(array, slice))
            }
            RawBsonRef::Array(array) => {
                let mut each = RawArrayBuf::new();
                for item in elements(array) {
                    match item {
                        RawBsonRef::Document(sub) => each.push(slice_in(sub, rest, slice)),
                        other => each.push(other),
                    }
                }
                RawBson::Array(each)
            }
            RawBsonRef::Document(sub) if !rest.is_empty() => {
                RawBson::Document(slice_in(sub, rest, slice))
            }
            other => other.into(),
        };
        out.append(key, sliced);
    }
    out
}

/// Replaces the first array along `path` in the projected `doc` by the
/// one-element array of its element at the matched position.
fn positional_in(
    doc: &RawDocument,
    path: &[&str],
    position: impl Fn() -> Option<usize> + Copy,
) -> Result<RawDocumentBuf> {
    let mut out = RawDocumentBuf::new();
    for (key, value) in doc.iter().map_while(|item| item.ok()) {
        let Some((first, rest)) = path.split_first() else {
            out.append(key, value);
            continue;
        };
        if key.as_str() != *first {
            out.append(key, value);
            continue;
        }
        match value {
            RawBsonRef::Array(array) => {
                let Some(at) = position() else {
                    return Err(fault(
                        ProjectionFault::PositionalNoMatch,
                        "positional operator '.$' couldn't find a matching element in the array",
                    ));
                };
                let Some(item) = elements(array).nth(at) else {
                    return Err(fault(
                        ProjectionFault::PositionalMismatch,
                        "positional operator '.$' element mismatch",
                    ));
                };
                let mut one = RawArrayBuf::new();
                one.push(item);
                out.append(key, one);
            }
            RawBsonRef::Document(sub) if !rest.is_empty() => {
                out.append(key, positional_in(sub, rest, position)?);
            }
            other => out.append(key, other),
        }
    }
    Ok(out)
}

/// Sets (or, given None, removes) a top-level field: in place when the
/// document has it and the projection is an exclusion, appended after the
/// other fields in an inclusion (where the base projection left it out).
fn set_field(
    doc: &RawDocument,
    field: &str,
    value: Option<RawBsonRef<'_>>,
    kind: ProjectionKind,
) -> Result<RawDocumentBuf> {
    let one = value.map(|v| {
        let mut array = RawArrayBuf::new();
        array.push(v);
        array
    });
    let mut out = RawDocumentBuf::new();
    let mut placed = false;
    for (key, existing) in doc.iter().map_while(|item| item.ok()) {
        if key.as_str() != field {
            out.append(key, existing);
        } else if let (Some(array), ProjectionKind::Exclusion) = (&one, kind) {
            out.append(key, array.clone());
            placed = true;
        }
    }
    if let (Some(array), false) = (one, placed) {
        out.append(cstring(field)?, array);
    }
    Ok(out)
}

/// Whether a projection value is `{$meta: …}` (find's own operator).
fn is_meta(value: RawBsonRef<'_>) -> bool {
    matches!(value, RawBsonRef::Document(sub) if matches!(single_operator(sub), Some(("$meta", _))))
}

/// `doc` with `field` set to `value`, in its place if it has one, else
/// last.
fn set_value(doc: &RawDocument, field: &str, value: RawBsonRef<'_>) -> Result<RawDocumentBuf> {
    let mut out = RawDocumentBuf::new();
    let mut placed = false;
    for (key, existing) in doc.iter().map_while(|item| item.ok()) {
        if key.as_str() == field {
            out.append(key, value);
            placed = true;
        } else {
            out.append(key, existing);
        }
    }
    if !placed {
        out.append(cstring(field)?, value);
    }
    Ok(out)
}

/// mongod's error for `{$meta: "textScore"}` in a query without `$text`.
pub fn text_score_unavailable() -> Error {
    Error::new(
        ErrorKind::TextScoreUnavailable,
        "query requires text score metadata, but it is not available",
    )
}

#[cfg(test)]
mod tests {
    use bson::rawdoc;

    use super::*;

    fn project(spec: RawDocumentBuf, query: RawDocumentBuf, doc: RawDocumentBuf) -> RawDocumentBuf {
        let filter = Filter::parse(&query).unwrap();
        assert!(filter.matches(&doc).unwrap());
        FindProjection::parse(&spec, Some(&query))
            .unwrap()
            .apply(&doc, &filter)
            .unwrap()
    }

    fn parse_fault(spec: RawDocumentBuf, query: RawDocumentBuf) -> ProjectionFault {
        match FindProjection::parse(&spec, Some(&query)).unwrap_err().kind {
            ErrorKind::FindProjection(f) => f,
            other => panic!("not a projection fault: {other:?}"),
        }
    }

    #[test]
    fn slice_mixes_with_computed_fields() {
        // A computed field makes an inclusion, which includes the sliced
        // array as `{a: 1}` would.
        let doc = rawdoc! { "_id": 1, "a": [1, 2, 3, 4, 5], "b": "x", "c": 1 };
        assert_eq!(
            project(
                rawdoc! { "a": { "$slice": 2 }, "k": { "$literal": 7 } },
                rawdoc! {},
                doc.clone()
            ),
            rawdoc! { "_id": 1, "a": [1, 2], "k": 7 }
        );
        assert_eq!(
            project(
                rawdoc! { "_id": 0, "a": { "$slice": [1, 2] }, "k": { "$add": ["$c", 1] } },
                rawdoc! {},
                doc
            ),
            rawdoc! { "a": [2, 3], "k": 2 }
        );
    }

    #[test]
    fn return_key_is_the_index_key_or_empty_for_a_collection_scan() {
        // jstests/core/query/return_key.js.
        let doc = rawdoc! { "_id": 1, "a": { "b": 3 }, "c": 4 };
        let all = Filter::parse(&rawdoc! {}).unwrap();
        let key = |fields: &[&str]| {
            FindProjection::index_key(fields.iter().map(|f| (f.to_string(), false)).collect())
                .unwrap()
                .apply(&doc, &all)
        };
        assert_eq!(key(&["a.b", "x"]).unwrap(), rawdoc! { "a.b": 3, "x": null });
        assert_eq!(key(&[]).unwrap(), rawdoc! {});
        let multikey = rawdoc! { "_id": 1, "a": [1, 2] };
        let hashed = FindProjection::index_key(vec![("a.b".into(), true)]).unwrap();
        // mongod's hash of 3 is the same as of 3.0 or 3L.
        let three = crate::encoding::hashed::hash64(RawBsonRef::Int64(3));
        assert_eq!(hashed.apply(&doc, &all).unwrap(), rawdoc! { "a.b": three });
        let err = FindProjection::index_key(vec![("a".into(), false)])
            .unwrap()
            .apply(&multikey, &all)
            .unwrap_err();
        assert_eq!(err.kind, ErrorKind::NotImplemented);
    }

    #[test]
    fn slice_forms_match_mongod() {
        // jstests/core/query/projection/slice*.js and the manual's $slice page.
        let doc = || rawdoc! { "_id": 1, "a": [1, 2, 3, 4, 5], "b": 1 };
        let cases = [
            (rawdoc! { "a": { "$slice": 2 } }, vec![1, 2]),
            (rawdoc! { "a": { "$slice": -2 } }, vec![4, 5]),
            (rawdoc! { "a": { "$slice": 0 } }, vec![]),
            (rawdoc! { "a": { "$slice": 9 } }, vec![1, 2, 3, 4, 5]),
            (rawdoc! { "a": { "$slice": -9 } }, vec![1, 2, 3, 4, 5]),
            (rawdoc! { "a": { "$slice": [1, 2] } }, vec![2, 3]),
            (rawdoc! { "a": { "$slice": [-2, 1] } }, vec![4]),
            (rawdoc! { "a": { "$slice": [-9, 2] } }, vec![1, 2]),
            (rawdoc! { "a": { "$slice": [9, 2] } }, vec![]),
            (rawdoc! { "a": { "$slice": 1.9 } }, vec![1]),
        ];
        for (spec, expected) in cases {
            let out = project(spec.clone(), rawdoc! {}, doc());
            let got: Vec<i32> = out
                .get_array("a")
                .unwrap()
                .into_iter()
                .map(|v| v.unwrap().as_i32().unwrap())
                .collect();
            assert_eq!(got, expected, "{spec:?}");
            // $slice alone is an exclusion: the other fields stay.
            assert_eq!(out.get_i32("b").unwrap(), 1);
        }
    }

    #[test]
    fn slice_in_an_inclusion_includes_its_path() {
        // The manual's $slice page: {qty: 1, "details.colors": {$slice: 1}}.
        let doc = rawdoc! {
            "_id": 1, "qty": 5,
            "details": { "colors": ["blue", "red"], "sizes": ["S"] },
            "x": 1,
        };
        let out = project(
            rawdoc! { "qty": 1, "details.colors": { "$slice": 1 } },
            rawdoc! {},
            doc,
        );
        assert_eq!(
            out,
            rawdoc! { "_id": 1, "qty": 5, "details": { "colors": ["blue"] } }
        );
    }

    #[test]
    fn slice_reaches_through_arrays_of_documents_and_leaves_scalars() {
        let doc = rawdoc! { "_id": 1, "a": [{ "b": [1, 2, 3] }, 7], "c": "s" };
        assert_eq!(
            project(
                rawdoc! { "a.b": { "$slice": 1 }, "c": { "$slice": 1 } },
                rawdoc! {},
                doc
            ),
            rawdoc! { "_id": 1, "a": [{ "b": [1] }, 7], "c": "s" }
        );
    }

    #[test]
    fn bad_slices_get_mongods_locations() {
        let q = rawdoc! {};
        for (spec, expected) in [
            (
                rawdoc! { "a": { "$slice": "x" } },
                ProjectionFault::SliceArgument,
            ),
            (
                rawdoc! { "a": { "$slice": [1] } },
                ProjectionFault::SliceArrayLength,
            ),
            (
                rawdoc! { "a": { "$slice": [1, 2, 3] } },
                ProjectionFault::SliceArrayLength,
            ),
            (
                rawdoc! { "a": { "$slice": ["x", 2] } },
                ProjectionFault::SliceSkipType,
            ),
            (
                rawdoc! { "a": { "$slice": [1, "x"] } },
                ProjectionFault::SliceLimitType,
            ),
            (
                rawdoc! { "a": { "$slice": [1, 0] } },
                ProjectionFault::SliceLimitNotPositive,
            ),
            (
                rawdoc! { "a": { "$slice": [1, -1] } },
                ProjectionFault::SliceLimitNotPositive,
            ),
        ] {
            assert_eq!(parse_fault(spec, q.clone()), expected);
        }
    }

    #[test]
    fn elem_match_returns_the_first_matching_element_after_inclusions() {
        // jstests/core/query/projection/elemmatch_projection.js; the manual's
        // $elemMatch (projection) page on field order since 4.4.
        let doc = rawdoc! {
            "_id": 1,
            "a": [{ "x": 1, "y": 1 }, { "x": 2, "y": 1 }, { "x": 2, "y": 2 }],
            "b": 5,
        };
        let spec = rawdoc! { "a": { "$elemMatch": { "x": 2 } }, "b": 1 };
        assert_eq!(
            project(spec, rawdoc! {}, doc.clone()),
            rawdoc! { "_id": 1, "b": 5, "a": [{ "x": 2, "y": 1 }] }
        );
        // Alone it is an inclusion; no match drops the field.
        assert_eq!(
            project(
                rawdoc! { "a": { "$elemMatch": { "x": 3 } } },
                rawdoc! {},
                doc.clone()
            ),
            rawdoc! { "_id": 1 }
        );
        // In an exclusion it replaces the array in place.
        assert_eq!(
            project(
                rawdoc! { "b": 0, "a": { "$elemMatch": { "y": 2 } } },
                rawdoc! {},
                doc
            ),
            rawdoc! { "_id": 1, "a": [{ "x": 2, "y": 2 }] }
        );
    }

    #[test]
    fn operator_paths_may_not_overlap() {
        for spec in [
            rawdoc! { "a": { "$elemMatch": { "x": 1 } }, "a.b": 1 },
            rawdoc! { "a.b": 0, "a": { "$slice": 1 } },
            rawdoc! { "a": { "$slice": 1 }, "a.c": { "$slice": 2 } },
        ] {
            let e = FindProjection::parse(&spec, Some(&rawdoc! {})).unwrap_err();
            assert_eq!(e.kind, ErrorKind::ProjectionPathCollision, "{spec:?}");
        }
    }

    #[test]
    fn bad_elem_matches_get_mongods_locations() {
        let q = rawdoc! { "a": 1 };
        assert_eq!(
            parse_fault(rawdoc! { "a": { "$elemMatch": 1 } }, q.clone()),
            ProjectionFault::ElemMatchArgument
        );
        assert_eq!(
            parse_fault(rawdoc! { "a.b": { "$elemMatch": { "x": 1 } } }, q.clone()),
            ProjectionFault::ElemMatchNested
        );
        assert_eq!(
            parse_fault(
                rawdoc! { "a.$": 1, "b": { "$elemMatch": { "x": 1 } } },
                q.clone()
            ),
            ProjectionFault::ElemMatchAfterPositional
        );
        assert_eq!(
            parse_fault(rawdoc! { "b": { "$elemMatch": { "x": 1 } }, "a.$": 1 }, q),
            ProjectionFault::PositionalAfterElemMatch
        );
    }

    #[test]
    fn positional_returns_the_element_the_query_matched() {
        // The manual's "$ (projection)" page: grades above 85.
        let doc = rawdoc! { "_id": 1, "semester": 1, "grades": [70, 87, 90] };
        assert_eq!(
            project(
                rawdoc! { "grades.$": 1 },
                rawdoc! { "semester": 1, "grades": { "$gte": 85 } },
                doc
            ),
            rawdoc! { "_id": 1, "grades": [87] }
        );
        let doc = rawdoc! { "_id": 1, "a": { "b": [{ "c": 1 }, { "c": 2 }] }, "z": 1 };
        assert_eq!(
            project(rawdoc! { "a.b.$": 1 }, rawdoc! { "a.b.c": 2 }, doc),
            rawdoc! { "_id": 1, "a": { "b": [{ "c": 2 }] } }
        );
    }

    #[test]
    fn positional_on_a_scalar_leaves_it_and_without_a_position_fails() {
        // jstests/core/query/projection/positional_projection.js.
        let doc = rawdoc! { "_id": 1, "a": 3 };
        assert_eq!(
            project(rawdoc! { "a.$": 1 }, rawdoc! { "a": 3 }, doc),
            rawdoc! { "_id": 1, "a": 3 }
        );
        let doc = rawdoc! { "_id": 1, "a": [1, 2], "b": 1 };
        let query = rawdoc! { "a": { "$size": 2 } };
        let filter = Filter::parse(&query).unwrap();
        let err = FindProjection::parse(&rawdoc! { "a.$": 1 }, Some(&query))
            .unwrap()
            .apply(&doc, &filter)
            .unwrap_err();
        assert_eq!(
            err.kind,
            ErrorKind::FindProjection(ProjectionFault::PositionalNoMatch)
        );
    }

    #[test]
    fn bad_positionals_get_mongods_locations() {
        let q = rawdoc! { "a": 1 };
        for (spec, query, expected) in [
            (
                rawdoc! { "a.$": 1 },
                rawdoc! { "b": 1 },
                ProjectionFault::PositionalNotInQuery,
            ),
            (
                rawdoc! { "a.$": 1 },
                rawdoc! {},
                ProjectionFault::PositionalNotInQuery,
            ),
            (
                rawdoc! { "a.$": 1, "b.$": 1 },
                q.clone(),
                ProjectionFault::PositionalTwice,
            ),
            (
                rawdoc! { "a.$": { "x": 1 } },
                q.clone(),
                ProjectionFault::PositionalWithObject,
            ),
            (
                rawdoc! { "a.$": "x" },
                q.clone(),
                ProjectionFault::PositionalWithLiteral,
            ),
            (
                rawdoc! { "a.$.b.$": 1 },
                q.clone(),
                ProjectionFault::PositionalOperatorTwice,
            ),
            (
                rawdoc! { "a.$.": 1 },
                q.clone(),
                ProjectionFault::PositionalTrailingDot,
            ),
        ] {
            assert_eq!(parse_fault(spec, query), expected);
        }
        // The field may be named inside $and/$or.
        assert!(
            FindProjection::parse(
                &rawdoc! { "a.$": 1 },
                Some(&rawdoc! { "$or": [{ "b": 1 }, { "a.x": 1 }] })
            )
            .is_ok()
        );
        let e = FindProjection::parse(&rawdoc! { "a.$": 1 }, None).unwrap_err();
        assert_eq!(
            e.kind,
            ErrorKind::FindProjection(ProjectionFault::PositionalWithoutQuery)
        );
    }
}
