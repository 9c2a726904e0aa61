//! Pipeline stages: parsing one stage document into a [`Stage`], with
//! MongoDB's errors for malformed specifications. Stages ebb does not run
//! yet are refused by name (not implemented), never skipped. Which stages
//! an update pipeline may hold is decided here too ([`parse_update_stage`]).
//! Stages that nest pipelines get this parser handed to theirs.

use bson::{RawBson, RawBsonRef, RawDocument, RawDocumentBuf};

use super::accumulator::Acc;
use super::expr::{Env, Expr, cstr};
use super::kind::{BucketAuto, Densify, GraphLookup, Lookup, Stage, UnionWith};
use super::project::Project;
use super::{bucket, facet, sample, window};
use crate::encoding::display::type_name;
use crate::error::{Error, ErrorKind, Result, StageError};
use crate::query::filter::Filter;
use crate::query::projection::Projection;
use crate::query::sort::SortSpec;
use crate::query::value::number_as_f64;

/// Stages MongoDB has that ebb refuses by name.
const KNOWN_UNIMPLEMENTED: &[&str] = &[
    "$geoNear",
    "$listSessions",
    "$planCacheStats",
    "$search",
    "$searchMeta",
    "$changeStreamSplitLargeEvent",
    "$listSearchIndexes",
];

/// Parses one stage document, with only `$$NOW` (taken now) defined.
pub fn parse_stage(stage: &RawDocument) -> Result<Stage> {
    parse_stage_in(stage, &Env::new(bson::DateTime::now()))
}

/// Parses one stage document in a command's environment (`$$NOW`, `let`).
pub fn parse_stage_in(stage: &RawDocument, env: &Env) -> Result<Stage> {
    let mut it = stage.iter();
    let (Some(Ok((name, spec))), None) = (it.next(), it.next()) else {
        return Err(Error::new(
            ErrorKind::StageNotOneField,
            "A pipeline stage specification object must contain exactly one field.",
        ));
    };
    let name = name.as_str();
    let doc_spec = || match spec {
        RawBsonRef::Document(d) => Ok(d),
        other => Err(Error::new(
            ErrorKind::StageSpecNotObject,
            format!(
                "the {name} specification must be an object, not {}",
                type_name(&other)
            ),
        )),
    };
    let count_arg = |what: &str| -> Result<u64> {
        match number_as_f64(spec).map(f64::trunc) {
            Some(n) if (0.0..9.2e18).contains(&n) => Ok(n as u64),
            _ => Err(Error::new(
                ErrorKind::StageCountArgument,
                format!("invalid argument to {what} stage: expected a non-negative number"),
            )),
        }
    };
    Ok(match name {
        "$match" => {
            // A pipeline's `$match` never runs `$where`, whatever the
            // server allows (`$function` inside `$expr` it may).
            let where_refused = || {
                Error::bad_value("$where is not allowed inside of a $match aggregation expression")
            };
            let filter = Filter::parse_in(doc_spec()?, env).map_err(|e| {
                if e.kind == ErrorKind::JavaScriptDisabled && e.message.contains("$where") {
                    where_refused()
                } else {
                    e
                }
            })?;
            if filter.has_where() {
                return Err(where_refused());
            }
            // Ordering by distance is the `$geoNear` stage's.
            if filter.has_near() {
                return Err(Error::bad_value(
                    "$geoNear, $near, and $nearSphere are not allowed in this context",
                ));
            }
            Stage::Match(filter)
        }
        "$sort" => Stage::Sort(
            SortSpec::parse_scored(doc_spec()?)?.score_from_field(crate::text::SCORE_FIELD),
        ),
        "$skip" => Stage::Skip(count_arg("$skip")?),
        "$limit" => match count_arg("$limit")? {
            0 => {
                return Err(Error::new(
                    ErrorKind::LimitNotPositive,
                    "the limit must be positive",
                ));
            }
            n => Stage::Limit(n),
        },
        "$project" => match Project::parse(doc_spec()?, env).map_err(|e| invalid(name, e))? {
            Project::Plain(p) => Stage::Project(p),
            Project::Computed(p) => Stage::ProjectComputed(p),
        },
        "$unset" => Stage::Project(Projection::parse(&unset_as_exclusion(spec)?)?),
        "$addFields" | "$set" => {
            let mut fields = Vec::new();
            for el in doc_spec()?.iter() {
                let (k, v) = el?;
                if k.as_str().contains('.') {
                    return Err(Error::not_implemented("dotted field names in $addFields"));
                }
                fields.push((
                    k.as_str().to_owned(),
                    Expr::parse_in(v, env).map_err(|e| invalid(name, e))?,
                ));
            }
            Stage::AddFields(fields)
        }
        "$replaceWith" => Stage::ReplaceRoot {
            new_root: Expr::parse_in(spec, env)?,
            what: "'replacement document' ",
        },
        "$replaceRoot" => parse_replace_root(spec, env)?,
        "$redact" => Stage::Redact(Expr::parse_with_current(spec, env)?),
        // A change stream reads the oplog of a replica set; mongod on a
        // standalone refuses it whatever it watches.
        "$changeStream" => {
            doc_spec()?;
            return Err(Error::new(
                ErrorKind::Stage(StageError::ChangeStreamNeedsReplicaSet),
                "The $changeStream stage is only supported on replica sets",
            ));
        }
        "$unwind" => parse_unwind(spec)?,
        "$count" => match spec {
            RawBsonRef::String(f) if !f.is_empty() && !f.starts_with('$') && !f.contains('.') => {
                Stage::Count(f.to_owned())
            }
            _ => {
                return Err(Error::new(
                    ErrorKind::CountFieldInvalid,
                    "the count field must be a non-empty string without '$' or '.'",
                ));
            }
        },
        "$group" => {
            let d = doc_spec()?;
            let Some(id) = d.get("_id")? else {
                return Err(Error::new(
                    ErrorKind::GroupWithoutId,
                    "a group specification must include an _id",
                ));
            };
            let id = Expr::parse_in(id, env)?;
            let mut accs = Vec::new();
            for el in d.iter() {
                let (k, v) = el?;
                if k.as_str() != "_id" {
                    accs.push((k.as_str().to_owned(), Acc::parse_in(k.as_str(), v, env)?));
                }
            }
            Stage::Group { id, accs }
        }
        "$densify" => Stage::Densify(Box::new(Densify::parse(spec)?)),
        "$graphLookup" => Stage::GraphLookup(Box::new(GraphLookup::parse(spec, env)?)),
        "$lookup" => Stage::Lookup(Box::new(Lookup::parse(spec, env, parse_stage_in)?)),
        "$unionWith" => Stage::UnionWith(Box::new(UnionWith::parse(spec, env, parse_stage_in)?)),
        "$documents" => Stage::Documents(Expr::parse_in(spec, env)?),
        "$facet" => facet::parse(spec, env, parse_stage_in)?,
        "$bucket" => bucket::parse_bucket(spec, env, parse_stage_in)?,
        "$bucketAuto" => Stage::BucketAuto(Box::new(BucketAuto::parse(spec, env)?)),
        "$sortByCount" => bucket::parse_sort_by_count(spec, env, parse_stage_in)?,
        "$sample" => sample::parse(spec)?,
        "$setWindowFields" => Stage::Sequence(window_stages(window::parse(spec, env)?)),
        "$fill" => {
            let fill = window::parse_fill(spec, env)?;
            let mut stages = Vec::new();
            if let Some(w) = fill.window {
                stages.extend(window_stages(w));
            }
            if !fill.values.is_empty() {
                stages.push(Stage::AddFields(fill.values));
            }
            Stage::Sequence(stages)
        }
        // The node's reporting sources are taken off the front of a
        // command's pipeline (`command::report`); here one is misplaced.
        "$collStats" | "$indexStats" | "$currentOp" | "$listLocalSessions" => {
            return Err(super::sub::not_first(name));
        }
        // A command's last stage is taken off before the rest is parsed
        // (`write_stage`); one reaching here stands before another stage.
        "$out" | "$merge" => return Err(super::sub::not_last(name)),
        other if KNOWN_UNIMPLEMENTED.contains(&other) => {
            return Err(Error::not_implemented(&format!("the {other} stage")));
        }
        other => {
            return Err(Error::new(
                ErrorKind::UnrecognizedPipelineStage,
                format!("Unrecognized pipeline stage name: '{other}'"),
            ));
        }
    })
}

/// The stages MongoDB allows in a pipeline-style update.
const UPDATE_STAGES: &[&str] = &[
    "$addFields",
    "$set",
    "$project",
    "$unset",
    "$replaceRoot",
    "$replaceWith",
    "$fill",
];

/// Parses one stage of a pipeline-style update: a stage MongoDB does not
/// allow there is refused with InvalidOptions once its specification has
/// parsed (ebb refusing it as not implemented elsewhere changes nothing).
pub fn parse_update_stage(stage: &RawDocument, env: &Env) -> Result<Stage> {
    let name = match stage.iter().next() {
        Some(Ok((name, _))) => name.as_str(),
        _ => "",
    };
    let not_allowed = || {
        Error::new(
            ErrorKind::InvalidOptions,
            format!("{name} is not allowed to be used within an update"),
        )
    };
    match parse_stage_in(stage, env) {
        Ok(_)
        | Err(Error {
            kind:
                ErrorKind::NotImplemented
                | ErrorKind::Stage(
                    StageError::WriteStageNotLast | StageError::ChangeStreamNeedsReplicaSet,
                ),
            ..
        }) if !UPDATE_STAGES.contains(&name) => Err(not_allowed()),
        other => other,
    }
}

/// `$setWindowFields` as the stages it runs as: the partition key set,
/// the sort, the window stage.
fn window_stages(d: window::Desugared) -> Vec<Stage> {
    let mut stages = Vec::with_capacity(3);
    if let Some(key) = d.partition {
        stages.push(Stage::AddFields(vec![(
            window::PARTITION_FIELD.to_owned(),
            key,
        )]));
    }
    if let Some(sort) = d.sort {
        stages.push(Stage::Sort(sort));
    }
    stages.push(Stage::Window(Box::new(d.stage)));
    stages
}

/// `$replaceRoot: {newRoot: <expression>}`.
fn parse_replace_root(spec: RawBsonRef<'_>, env: &Env) -> Result<Stage> {
    let RawBsonRef::Document(d) = spec else {
        return Err(Error::new(
            ErrorKind::ReplaceRootSpecNotObject,
            format!(
                "expected an object as specification for $replaceRoot stage, got {}",
                type_name(&spec)
            ),
        ));
    };
    let mut new_root = None;
    for el in d.iter() {
        let (k, v) = el?;
        if k.as_str() != "newRoot" {
            return Err(Error::new(
                ErrorKind::UnknownField,
                format!(
                    "BSON field '$replaceRoot.{}' is an unknown field.",
                    k.as_str()
                ),
            ));
        }
        new_root = Some(Expr::parse_in(v, env)?);
    }
    let Some(new_root) = new_root else {
        return Err(Error::new(
            ErrorKind::MissingField,
            "BSON field '$replaceRoot.newRoot' is missing but a required field",
        ));
    };
    Ok(Stage::ReplaceRoot {
        new_root,
        what: "'newRoot' expression ",
    })
}

/// An expression error inside `$project`/`$addFields`/`$set`, as mongod
/// reports it: prefixed with the stage that failed to parse.
fn invalid(stage: &str, e: Error) -> Error {
    match e.kind {
        ErrorKind::Expression(_)
        | ErrorKind::InvalidPipelineOperator
        | ErrorKind::FailedToParse
        | ErrorKind::InvalidFieldPathExpression => Error {
            message: format!("Invalid {stage} :: caused by :: {}", e.message),
            ..e
        },
        _ => e,
    }
}

/// `$unset: "a"` or `["a", "b"]` as the exclusion projection it means.
fn unset_as_exclusion(spec: RawBsonRef<'_>) -> Result<RawDocumentBuf> {
    let mut exclude = RawDocumentBuf::new();
    match spec {
        RawBsonRef::String(f) => exclude.append(cstr(f), 0),
        RawBsonRef::Array(a) => {
            for v in a {
                match v? {
                    RawBsonRef::String(f) => exclude.append(cstr(f), 0),
                    _ => {
                        return Err(Error::new(
                            ErrorKind::UnsetSpecElement,
                            "$unset specification must be a string or an array containing only string values",
                        ));
                    }
                }
            }
        }
        _ => {
            return Err(Error::new(
                ErrorKind::UnsetSpecType,
                "$unset specification must be a string or an array",
            ));
        }
    }
    Ok(exclude)
}

fn parse_unwind(spec: RawBsonRef<'_>) -> Result<Stage> {
    let shown = |v: RawBsonRef<'_>| {
        bson::Bson::try_from(RawBson::from(v))
            .map(|b| b.to_string())
            .unwrap_or_default()
    };
    let (path, preserve_empty, index_field) = match spec {
        RawBsonRef::String(p) => (Some(p.to_owned()), false, None),
        RawBsonRef::Document(d) => {
            let (mut path, mut preserve, mut index) = (None, false, None);
            for item in d.iter() {
                let (key, value) = item?;
                match (key.as_str(), value) {
                    ("path", RawBsonRef::String(p)) => path = Some(p.to_owned()),
                    ("path", other) => {
                        return Err(Error::new(
                            ErrorKind::UnwindPathType,
                            format!(
                                "expected a string as the path for $unwind stage, got {}",
                                type_name(&other)
                            ),
                        ));
                    }
                    ("preserveNullAndEmptyArrays", RawBsonRef::Boolean(b)) => preserve = b,
                    ("preserveNullAndEmptyArrays", other) => {
                        return Err(Error::new(
                            ErrorKind::UnwindPreserveType,
                            format!(
                                "expected a boolean for the preserveNullAndEmptyArrays option to $unwind stage, got {}",
                                type_name(&other)
                            ),
                        ));
                    }
                    ("includeArrayIndex", RawBsonRef::String(f)) if !f.is_empty() => {
                        if f.starts_with('$') {
                            return Err(Error::new(
                                ErrorKind::UnwindIndexWithDollar,
                                format!(
                                    "includeArrayIndex option to $unwind stage should not be prefixed with a '$': {f}"
                                ),
                            ));
                        }
                        index = Some(f.to_owned());
                    }
                    ("includeArrayIndex", other) => {
                        return Err(Error::new(
                            ErrorKind::UnwindIndexType,
                            format!(
                                "expected a non-empty string for the includeArrayIndex option to $unwind stage, got {}",
                                shown(other)
                            ),
                        ));
                    }
                    (other, _) => {
                        return Err(Error::new(
                            ErrorKind::UnwindUnknownOption,
                            format!("unrecognized option to $unwind stage: {other}"),
                        ));
                    }
                }
            }
            (path, preserve, index)
        }
        _ => {
            return Err(Error::new(
                ErrorKind::UnwindSpecType,
                "expected either a string or an object as specification for $unwind stage",
            ));
        }
    };
    let Some(path) = path else {
        return Err(Error::new(
            ErrorKind::UnwindWithoutPath,
            "no path specified to $unwind stage",
        ));
    };
    let Some(path) = path.strip_prefix('$') else {
        return Err(Error::new(
            ErrorKind::UnwindPathWithoutDollar,
            "path option to $unwind stage should be prefixed with a '$'",
        ));
    };
    crate::query::value::field_path(path)?;
    Ok(Stage::Unwind {
        path: path.to_owned(),
        preserve_empty,
        index_field,
    })
}
