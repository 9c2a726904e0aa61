//! Pipelines inside stages (`$lookup`, `$unionWith`, `$facet`): parsing
//! them with mongod's restrictions on what they may hold, and running one
//! over another collection's documents (through [`Sources`], the only way a
//! pipeline reads a collection it was not given) or over its own leading
//! `$documents`. Also the rules for where `$documents` may stand in a
//! command's own pipeline.
//!
//! The restrictions are checked on the stages as written, before anything
//! is parsed, so a forbidden stage is reported as forbidden even when ebb
//! would not run it anywhere (`$out`, `$merge`).

use bson::{RawArray, RawBson, RawBsonRef, RawDocumentBuf, rawdoc};

use super::expr::Env;
use super::kind::{ParseStage, Stage, SubPipeline, UnionWith};
use super::run::Outer;
use super::sources::Sources;
use crate::encoding::display::type_name;
use crate::error::{Error, ErrorKind, Result, StageError};
use crate::query::filter::Filter;

/// The stage a nested pipeline stands in, for its restrictions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Within {
    Lookup,
    UnionWith,
    Facet,
}

/// Stages that write, which no nested pipeline may hold.
const WRITE_STAGES: &[&str] = &["$out", "$merge"];

/// Stages `$facet` may not hold at any depth: writers, sources of their own
/// and stages that must run first or alone.
const NOT_IN_FACET: &[&str] = &[
    "$facet",
    "$out",
    "$merge",
    "$documents",
    "$geoNear",
    "$collStats",
    "$indexStats",
    "$planCacheStats",
    "$search",
    "$searchMeta",
    "$vectorSearch",
    "$changeStream",
    "$currentOp",
    "$listSessions",
    "$listLocalSessions",
    "$listSearchIndexes",
];

impl SubPipeline {
    /// Parses the pipeline `spec` of a stage standing in `within`, in
    /// `env`.
    pub(super) fn parse(
        spec: &RawArray,
        env: &Env,
        within: Within,
        parse: ParseStage,
    ) -> Result<SubPipeline> {
        let raw = stage_documents(spec, within)?;
        check_allowed(&raw, within)?;
        let stages = parse_all(&raw, env, parse)?;
        Ok(SubPipeline {
            raw,
            stages,
            env: env.clone(),
            parse,
        })
    }

    /// Whether the pipeline reads its own `$documents` rather than a
    /// collection.
    pub(super) fn starts_with_documents(&self) -> bool {
        matches!(self.stages.first(), Some(Stage::Documents(_)))
    }

    /// The stages with each pending variable bound to its value for one
    /// input document: parsed again, so the values are constants as a
    /// command's `let` variables are.
    pub(super) fn bound(&self, vars: Vec<(&str, Option<RawBson>)>) -> Result<Vec<Stage>> {
        let mut env = self.env.clone();
        for (name, value) in vars {
            env.bind(name, value);
        }
        match self.raw.first().and_then(|m| implied_equalities(m, &env)) {
            Some(narrowed) => {
                let mut raw = self.raw.clone();
                raw[0] = narrowed;
                parse_all(&raw, &env, self.parse)
            }
            None => parse_all(&self.raw, &env, self.parse),
        }
    }
}

/// A leading `{$match: {$expr: …}}` whose expression requires `$field` to
/// equal a constant or a bound variable (`{$eq: ["$f", "$$v"]}`, alone or
/// inside `$and`) as the same match with `{f: {$eq: v}}` ANDed to it: the
/// query predicate holds for every document the expression accepts (it
/// also matches arrays holding the value, and missing for null), so the
/// result is unchanged and the planner can use an index on `f` — the
/// classic `let` + `$expr` join stays a point lookup per document.
fn implied_equalities(stage: &bson::RawDocument, env: &Env) -> Option<RawDocumentBuf> {
    let (name, spec) = stage_name(stage)?;
    let (RawBsonRef::Document(m), "$match") = (spec, name) else {
        return None;
    };
    let expr = m.get("$expr").ok()??;
    let mut found = Vec::new();
    required_equalities(expr, env, &mut found);
    if found.is_empty() {
        return None;
    }
    let mut all = bson::RawArrayBuf::new();
    all.push(m.to_owned());
    for (path, value) in found {
        let mut eq = RawDocumentBuf::new();
        eq.append(super::expr::cstr("$eq"), value);
        let mut clause = RawDocumentBuf::new();
        clause.append(super::expr::cstr(path), eq);
        all.push(clause);
    }
    Some(rawdoc! { "$match": { "$and": all } })
}

fn required_equalities<'a>(expr: RawBsonRef<'a>, env: &Env, found: &mut Vec<(&'a str, RawBson)>) {
    let RawBsonRef::Document(d) = expr else {
        return;
    };
    let mut it = d.iter();
    let (Some(Ok((op, RawBsonRef::Array(args)))), None) = (it.next(), it.next()) else {
        return;
    };
    let args: Vec<RawBsonRef<'a>> = args.into_iter().filter_map(|a| a.ok()).collect();
    match (op.as_str(), args.as_slice()) {
        ("$and", items) => {
            for item in items {
                required_equalities(*item, env, found);
            }
        }
        ("$eq", [a, b]) => {
            if let Some(pair) = field_equals(*a, *b, env).or_else(|| field_equals(*b, *a, env)) {
                found.push(pair);
            }
        }
        _ => {}
    }
}

/// `("f", value)` when `field` is `"$f"` (a plain field path) and `value`
/// is a bound variable or a literal a query can compare with.
fn field_equals<'a>(
    field: RawBsonRef<'a>,
    value: RawBsonRef<'_>,
    env: &Env,
) -> Option<(&'a str, RawBson)> {
    let RawBsonRef::String(f) = field else {
        return None;
    };
    let path = f.strip_prefix('$').filter(|p| !p.starts_with('$'))?;
    if path.split('.').any(|c| c.is_empty() || c.starts_with('$')) {
        return None;
    }
    let value = match value {
        RawBsonRef::String(v) if v.starts_with("$$") => env.var(&v[2..])??.clone(),
        RawBsonRef::String(v) if v.starts_with('$') => return None,
        RawBsonRef::Document(_) | RawBsonRef::Array(_) => return None,
        literal => literal.into(),
    };
    let plain = match &value {
        RawBson::Undefined => false,
        // An operator-looking document would be read as an operator.
        RawBson::Document(d) => {
            !matches!(d.iter().next(), Some(Ok((k, _))) if k.as_str().starts_with('$'))
        }
        _ => true,
    };
    plain.then_some((path, value))
}

/// The elements of a nested pipeline, each a document.
fn stage_documents(spec: &RawArray, within: Within) -> Result<Vec<RawDocumentBuf>> {
    let mut raw = Vec::new();
    for v in spec {
        match v? {
            RawBsonRef::Document(d) => raw.push(d.to_owned()),
            other if within == Within::Facet => {
                return Err(Error::new(
                    ErrorKind::Stage(StageError::FacetStageNotObject),
                    format!(
                        "elements of arrays in $facet spec must be non-empty objects, argument \
                         contained an element of type {}",
                        type_name(&other)
                    ),
                ));
            }
            other => {
                return Err(Error::type_mismatch(format!(
                    "Each element of the 'pipeline' array must be an object, not {}",
                    type_name(&other)
                )));
            }
        }
    }
    Ok(raw)
}

/// Parses nested stages; `$documents` may only come first.
fn parse_all(raw: &[RawDocumentBuf], env: &Env, parse: ParseStage) -> Result<Vec<Stage>> {
    let mut stages = Vec::with_capacity(raw.len());
    for (i, d) in raw.iter().enumerate() {
        let stage = parse(d, env)?;
        if i > 0 && matches!(stage, Stage::Documents(_)) {
            return Err(not_first("$documents"));
        }
        stages.push(stage);
    }
    Ok(stages)
}

pub(super) fn not_first(name: &str) -> Error {
    Error::new(
        ErrorKind::Stage(StageError::NotFirstStage),
        format!("{name} is only valid as the first stage in a pipeline"),
    )
}

/// The error for a writing stage (`$out`, `$merge`) anywhere but last.
pub(super) fn not_last(name: &str) -> Error {
    Error::new(
        ErrorKind::Stage(StageError::WriteStageNotLast),
        format!("{name} can only be the final stage in the pipeline"),
    )
}

/// The name of a stage as written, if it is a one-field document.
fn stage_name(d: &bson::RawDocument) -> Option<(&str, RawBsonRef<'_>)> {
    match d.iter().next() {
        Some(Ok((name, spec))) => Some((name.as_str(), spec)),
        _ => None,
    }
}

/// mongod's restrictions on what a pipeline standing in `within` holds.
fn check_allowed(raw: &[RawDocumentBuf], within: Within) -> Result<()> {
    for d in raw {
        let Some((name, spec)) = stage_name(d) else {
            continue;
        };
        match within {
            Within::Lookup if WRITE_STAGES.contains(&name) => {
                return Err(Error::new(
                    ErrorKind::Stage(StageError::WriteStageInLookup),
                    format!("{name} is not allowed to be used within a $lookup stage"),
                ));
            }
            Within::UnionWith if WRITE_STAGES.contains(&name) => {
                return Err(Error::new(
                    ErrorKind::Stage(StageError::WriteStageInUnionWith),
                    format!("{name} is not allowed within a $unionWith's sub-pipeline"),
                ));
            }
            Within::Facet => {
                if let Some(offender) = not_in_facet(name, spec, None) {
                    return Err(Error::new(
                        ErrorKind::Stage(StageError::NotAllowedInFacet),
                        format!("{offender} is not allowed to be used within a $facet stage"),
                    ));
                }
            }
            _ => {}
        }
    }
    Ok(())
}

/// The stage that keeps `name` out of a `$facet`, as mongod names it: the
/// stage itself, or a stage of its own pipeline "inside of" it.
fn not_in_facet(name: &str, spec: RawBsonRef<'_>, parent: Option<&str>) -> Option<String> {
    if NOT_IN_FACET.contains(&name) {
        return Some(match parent {
            Some(p) => format!("{name} inside of {p}"),
            None => name.to_owned(),
        });
    }
    let nested = match (name, spec) {
        ("$lookup" | "$unionWith", RawBsonRef::Document(d)) => match d.get("pipeline") {
            Ok(Some(RawBsonRef::Array(a))) => a,
            _ => return None,
        },
        _ => return None,
    };
    nested.into_iter().find_map(|v| match v {
        Ok(RawBsonRef::Document(d)) => {
            stage_name(d).and_then(|(n, s)| not_in_facet(n, s, Some(name)))
        }
        _ => None,
    })
}

/// Where `$documents` may stand in a command's own pipeline: first, and
/// only in a database-level `aggregate: 1` (`collectionless`), whose
/// pipeline must start with it.
pub fn check_top_level(stages: &[Stage], collectionless: bool) -> Result<()> {
    let invalid_namespace = |msg: &str| Error::new(ErrorKind::InvalidNamespace, msg.to_owned());
    match stages.first() {
        Some(Stage::Documents(_)) if !collectionless => {
            return Err(invalid_namespace(
                "$documents can only be run with {aggregate: 1}",
            ));
        }
        Some(Stage::Documents(_)) => {}
        _ if collectionless => {
            return Err(invalid_namespace(
                "{aggregate: 1} is not valid for this pipeline: it must start with $documents",
            ));
        }
        _ => {}
    }
    if stages
        .iter()
        .skip(1)
        .any(|s| matches!(s, Stage::Documents(_)))
    {
        return Err(not_first("$documents"));
    }
    Ok(())
}

/// Runs `stages` nested in `outer`: over their leading `$documents` (which
/// must also pass `filter`), else over the documents of `coll` that match
/// `filter`, or the pipeline's leading `$match` when there is no filter (so
/// the planner sees it and may use an index). Returns the output.
pub(super) fn run_over(
    outer: &Outer<'_>,
    coll: Option<&str>,
    filter: Option<Filter>,
    mut stages: Vec<Stage>,
    overflow: Option<StageError>,
) -> Result<Vec<RawDocumentBuf>> {
    if matches!(stages.first(), Some(Stage::Documents(_))) {
        if let Some(f) = filter {
            stages.insert(1, Stage::Match(f));
        }
        return outer.pipeline(stages, overflow).finish();
    }
    let Some(coll) = coll else {
        // Parsing requires a collection unless $documents comes first.
        return Err(Error::failed_to_parse(
            "a nested pipeline without $documents must name a collection",
        ));
    };
    let filter = match filter {
        Some(f) => f,
        None if matches!(stages.first(), Some(Stage::Match(_))) => match stages.remove(0) {
            Stage::Match(f) => f,
            _ => unreachable!("matched above"),
        },
        None => Filter::parse(&rawdoc! {})?,
    };
    let sources: &dyn Sources = outer.sources()?;
    let mut pipeline = outer.pipeline(stages, overflow);
    sources.scan(coll, filter.collated(outer.collation()), &mut |doc| {
        pipeline.push(doc)
    })?;
    pipeline.finish()
}

impl UnionWith {
    /// `$unionWith: "coll"` or `{coll, pipeline}`.
    pub(super) fn parse(spec: RawBsonRef<'_>, env: &Env, parse: ParseStage) -> Result<UnionWith> {
        let (coll, pipeline) = match spec {
            RawBsonRef::String(c) => (Some(c.to_owned()), None),
            RawBsonRef::Document(d) => {
                let mut coll = None;
                let mut pipeline = None;
                for el in d.iter() {
                    let (k, v) = el?;
                    match (k.as_str(), v) {
                        ("coll", RawBsonRef::String(c)) => coll = Some(c.to_owned()),
                        ("pipeline", RawBsonRef::Array(a)) => pipeline = Some(a),
                        ("coll" | "pipeline", other) => {
                            return Err(Error::type_mismatch(format!(
                                "BSON field '$unionWith.{}' is the wrong type '{}'",
                                k.as_str(),
                                type_name(&other)
                            )));
                        }
                        (other, _) => {
                            return Err(Error::new(
                                ErrorKind::UnknownField,
                                format!("BSON field '$unionWith.{other}' is an unknown field."),
                            ));
                        }
                    }
                }
                (coll, pipeline)
            }
            other => {
                return Err(Error::failed_to_parse(format!(
                    "the $unionWith stage specification must be an object or string, but found {}",
                    type_name(&other)
                )));
            }
        };
        let empty = bson::RawArrayBuf::new();
        let pipeline =
            SubPipeline::parse(pipeline.unwrap_or(&empty), env, Within::UnionWith, parse)?;
        if coll.is_none() && !pipeline.starts_with_documents() {
            return Err(Error::failed_to_parse(
                "$unionWith stage without explicit collection must have a pipeline with \
                 $documents as first stage",
            ));
        }
        if let Some(c) = &coll {
            check_collection_name(c, "$unionWith")?;
        }
        Ok(UnionWith { coll, pipeline })
    }

    /// Feeds `next` the documents `$unionWith` adds after its input: a
    /// collection's documents straight from the scan when there is no
    /// pipeline, else the pipeline's output.
    pub(super) fn run(
        &self,
        outer: &Outer<'_>,
        next: &mut dyn FnMut(RawDocumentBuf) -> Result<()>,
    ) -> Result<()> {
        if let (Some(coll), true) = (&self.coll, self.pipeline.stages.is_empty()) {
            let all = Filter::parse(&rawdoc! {})?;
            return outer
                .sources()?
                .scan(coll, all, &mut |d| next(d).map(|()| true));
        }
        let stages = self.pipeline.stages.clone();
        for d in run_over(outer, self.coll.as_deref(), None, stages, None)? {
            next(d)?;
        }
        Ok(())
    }
}

/// A collection name a nested stage reads: not empty, no `$`.
pub(super) fn check_collection_name(name: &str, stage: &str) -> Result<()> {
    if name.is_empty() || name.contains('$') || name.contains('\0') {
        return Err(Error::new(
            ErrorKind::InvalidNamespace,
            format!("{stage} names an invalid collection: '{name}'"),
        ));
    }
    Ok(())
}
