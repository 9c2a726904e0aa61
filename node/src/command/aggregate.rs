//! `aggregate`: a pipeline over one collection.
//!
//! The pipeline is parsed by storage (`ebb_lang::pipeline`); a leading
//! `$match` (and a `$sort` right after it) becomes the query the planner
//! sees, so it can use an index; the remaining stages run in memory over
//! that query's documents, within the 100 MiB blocking-stage limit, and the
//! results are returned through a cursor. Stages that read other
//! collections do so through `foreign.rs`. `aggregate: 1` runs a pipeline
//! that starts with `$documents`. A last `$out` or `$merge` stage writes
//! the output (`output.rs`) and the cursor is empty. This file only parses
//! the command's own arguments and wires the pieces together.

use std::time::Instant;

use bson::RawBsonRef;
use ebb_config::limits::MAX_BSON_OBJECT_BYTES;
use ebb_lang::encoding::display::type_name;
use ebb_lang::pipeline::{
    Pipeline, Stage, check_top_level, parse_stage_in, parse_write_stage, write_stage_name,
};
use ebb_lang::text::SCORE_FIELD;
use ebb_storage::plan::exec::QueryCursor;
use ebb_storage::plan::{self, QuerySpec};

use super::find::{cursor_owner, respond};
use super::foreign::ForeignReads;
use super::output::{self, WriteContext};
use super::report;
use super::{Request, check_collection_name, query};
use crate::args::{Args, as_i64};
use crate::cursor::{OpenCursor, Source};
use crate::error::{CommandError, CommandResult, codes};

const ARGS: &[&str] = &[
    "pipeline",
    "cursor",
    "explain",
    "allowDiskUse",
    "bypassDocumentValidation",
    "collation",
    "hint",
    "let",
];

pub async fn aggregate(req: Request) -> CommandResult {
    let args = Args::parse(&req.body, ARGS)?;
    // `aggregate: 1` runs a pipeline that reads no collection of its own
    // (it starts with $documents).
    let collectionless = as_i64(args.command_value()) == Some(1);
    let name = match args.command_value() {
        RawBsonRef::String(s) => s,
        _ if collectionless => "$cmd.aggregate",
        _ => {
            return Err(CommandError::new(
                codes::INVALID_NAMESPACE,
                "ebb does not support database-level aggregation; name a collection",
            ));
        }
    };
    if !collectionless {
        check_collection_name(&req.db, name)?;
    }
    let Some(pipeline) = args.array("pipeline")? else {
        return Err(args.missing("pipeline"));
    };
    // A view reads the collection at the bottom of its chain, its
    // stages first; the cursor stays the view's.
    let view = match collectionless {
        true => None,
        false => super::views::catalog::resolve(&req.node, &req.db, name).await?,
    };
    let combined;
    let pipeline = match &view {
        Some(v) => {
            combined = super::views::catalog::combined(v, pipeline)?;
            &*combined
        }
        None => pipeline,
    };
    let ns = format!("{}.{name}", req.db);
    let name = view.as_ref().map_or(name, |v| v.source.as_str());
    // Only a writing stage ($out, $merge) validates documents.
    let bypass_validation = args.bool("bypassDocumentValidation")?.unwrap_or(false);
    let explain = args.bool("explain")?.unwrap_or(false);
    if explain {
        // The legacy form: what `{explain: {aggregate: …}}` shows at
        // `queryPlanner` verbosity.
        let mut inner = bson::RawDocumentBuf::new();
        for el in req.body.iter() {
            let (k, v) = el?;
            if k.as_str() != "explain" && !k.as_str().starts_with('$') {
                inner.append(k, v);
            }
        }
        let body = bson::rawdoc! { "explain": inner, "verbosity": "queryPlanner" };
        return super::explain::explain(Request { body, ..req }).await;
    }
    let Some(cursor_opts) = args.doc("cursor")? else {
        return Err(CommandError::failed_to_parse(
            "The 'cursor' option is required, except for aggregate with the explain argument",
        ));
    };
    let batch_size = match cursor_opts.get("batchSize")? {
        Some(v) => as_i64(v).filter(|n| *n >= 0).ok_or_else(|| {
            CommandError::bad_value("cursor.batchSize must be a non-negative number")
        })? as usize,
        None => super::find::DEFAULT_FIRST_BATCH,
    };
    let env = query::env(&req, &args)?;
    let collation = match &view {
        Some(v) => match super::views::catalog::read_collation(v, args.get("collation"))? {
            Some(c) => {
                let c = bson::RawDocumentBuf::try_from(&c).map_err(|_| CommandError::internal())?;
                query::collation(Some(RawBsonRef::Document(&c)))?
            }
            None => query::collation(None)?,
        },
        None => query::collation(args.get("collation"))?,
    };
    if let Some(change_stages) = crate::changes::stages(&req.node, pipeline)? {
        if view.is_some() {
            return Err(CommandError::new(
                codes::COMMAND_NOT_SUPPORTED_ON_VIEW,
                format!("Namespace {ns} is a view, not a collection"),
            ));
        }
        let coll = (!collectionless).then_some(name);
        let resolved = match coll.and_then(|c| req.node.collection(&req.db, c)) {
            Some(entry) => query::resolve(&collation, &entry.coll.meta)?,
            None => collation.resolve(None),
        };
        let owner = cursor_owner(&req);
        return crate::changes::open(
            &req,
            owner,
            coll,
            &change_stages,
            &env,
            resolved,
            batch_size,
        )
        .await;
    }
    let mut stages = Vec::new();
    let mut write_stage = None;
    let mut report = None;
    let mut geo_near = None;
    let count = pipeline.into_iter().count();
    for (i, v) in pipeline.into_iter().enumerate() {
        match v? {
            RawBsonRef::Document(d) if first_key(d) == Some("$geoNear") => {
                if i != 0 {
                    return Err(CommandError::new(
                        codes::FIRST_STAGE_ONLY,
                        "$geoNear is only valid as the first stage in a pipeline",
                    ));
                }
                let spec = d.get("$geoNear")?.ok_or_else(CommandError::internal)?;
                geo_near = Some(super::near::parse_geo_near(spec)?);
            }
            RawBsonRef::Document(d) if i + 1 == count && write_stage_name(d).is_some() => {
                write_stage = Some(parse_write_stage(d, &env)?);
            }
            RawBsonRef::Document(d) if i == 0 && report::is_report(d) => {
                report = Some(report::parse(d)?);
            }
            RawBsonRef::Document(d) => stages.push(parse_stage_in(d, &env)?),
            other => {
                return Err(CommandError::new(
                    codes::TYPE_MISMATCH,
                    format!(
                        "Each element of the 'pipeline' array must be an object, not {}",
                        type_name(&other)
                    ),
                ));
            }
        }
    }
    // `$text` searches the collection: only the first stage may.
    let text_first = matches!(stages.first(), Some(Stage::Match(f)) if f.text().is_some())
        && report.is_none()
        && geo_near.is_none();
    let later_text = stages
        .iter()
        .skip(usize::from(text_first))
        .any(|s| matches!(s, Stage::Match(f) if f.text().is_some()));
    if later_text {
        return Err(CommandError::new(
            codes::TEXT_MATCH_NOT_FIRST,
            "$match with $text is only allowed as the first pipeline stage",
        ));
    }
    let wants_score = asks_text_score(pipeline);
    if wants_score && !text_first {
        return Err(ebb_lang::query::find_projection::text_score_unavailable().into());
    }
    // A reporting stage, or `$geoNear`, is the pipeline's source, as
    // `$documents` is.
    check_top_level(
        &stages,
        collectionless && report.is_none() && geo_near.is_none(),
    )?;
    let write_cx = WriteContext {
        node: &req.node,
        db: &req.db,
        env: &env,
        collation: &collation,
        bypass_validation,
    };
    if write_stage.is_some() && req.node.replica_set().is_some() {
        return Err(CommandError::new(
            codes::ILLEGAL_OPERATION,
            "$out and $merge are not supported on ebb's replica sets yet",
        ));
    }
    let write_stage = match write_stage {
        Some(stage) => Some(output::prepare(&write_cx, stage)?),
        None => None,
    };
    let hint = query::hint(args.get("hint"))?;
    let max_time = query::max_time(&args)?;
    let allow_disk_use = args.bool("allowDiskUse")?.unwrap_or(false);
    let disk_use = req.node.disk_use(allow_disk_use);
    let deadline = max_time.map(|limit| Instant::now() + limit);
    let (node, db) = (req.node.clone(), req.db.clone());
    let pipeline_collation = collation.clone();
    let source = match (report, geo_near) {
        (Some(report), _) => {
            Some(report::documents(&req, (!collectionless).then_some(name), report).await?)
        }
        (None, Some(stage)) => {
            let resolved = match req.node.collection(&req.db, name) {
                Some(entry) => query::resolve(&collation, &entry.coll.meta)?,
                None => collation.resolve(None),
            };
            let near = super::near::geo_near(&req, name, stage, &env, resolved, max_time);
            Some(near.await?)
        }
        (None, None) if text_first => {
            let Some(entry) = req.node.collection(&req.db, name) else {
                return Err(CommandError::new(
                    codes::INDEX_NOT_FOUND,
                    format!("text index required for $text query (no such collection '{ns}')"),
                ));
            };
            let Stage::Match(filter) = stages.remove(0) else {
                return Err(CommandError::internal());
            };
            let collation = query::resolve(&collation, &entry.coll.meta)?;
            let spec = QuerySpec {
                filter,
                sort: None,
                hint: hint.clone(),
            }
            .collated(collation);
            let found = super::text::search(&req.node, &entry.coll, &spec, max_time).await?;
            let mut docs = Vec::with_capacity(found.len());
            for (score, doc) in found {
                docs.push(match wants_score {
                    true => with_score(doc, score)?,
                    false => doc,
                });
            }
            Some(docs)
        }
        (None, None) => None,
    };
    let results = match req
        .node
        .collection(&req.db, name)
        .filter(|_| !collectionless && source.is_none())
    {
        // The stages run over a reporting stage's documents, or over no
        // input at all ($documents, $unionWith, $facet still produce).
        None => {
            let collation = match req.node.collection(&req.db, name) {
                Some(entry) => query::resolve(&pipeline_collation, &entry.coll.meta)?,
                None => pipeline_collation.resolve(None),
            };
            let source = source.unwrap_or_default();
            req.node
                .scan(move |snap| {
                    let reads = ForeignReads::new(&node, &db, snap, deadline);
                    let mut pipeline = Pipeline::new(stages)
                        .carrying_text_score(wants_score)
                        .with_sources(&reads)
                        .collated(collation)
                        .disk_use(disk_use);
                    for doc in source {
                        if !pipeline.push(doc)? {
                            break;
                        }
                    }
                    Ok(pipeline.finish()?)
                })
                .await?
        }
        Some(entry) => {
            let mut rest = stages.into_iter().peekable();
            let filter = match rest.next_if(|s| matches!(s, Stage::Match(_))) {
                Some(Stage::Match(f)) => f,
                _ => query::filter(None, &env)?,
            };
            let sort = match rest.next_if(|s| matches!(s, Stage::Sort(_))) {
                Some(Stage::Sort(s)) => Some(s),
                _ => None,
            };
            let rest: Vec<Stage> = rest.collect();
            let collation = query::resolve(&pipeline_collation, &entry.coll.meta)?;
            let spec = QuerySpec { filter, sort, hint }.collated(collation.clone());
            let plan = plan::plan(&entry.coll.meta, &spec)?;
            let set = entry.coll.clone();
            req.node
                .scan(move |snap| {
                    let mut cursor = QueryCursor::new(&set, plan, spec.filter, spec.sort, 0, None)?
                        .with_time_limit(max_time)
                        .with_disk_use(disk_use.clone());
                    let reads = ForeignReads::new(&node, &db, snap, deadline);
                    let mut pipeline = Pipeline::new(rest)
                        .with_sources(&reads)
                        .collated(collation)
                        .disk_use(disk_use);
                    cursor.try_for_each(snap, &mut |found| pipeline.push(found.doc))?;
                    Ok(pipeline.finish()?)
                })
                .await?
        }
    };
    if let Some(big) = results
        .iter()
        .find(|d| d.as_bytes().len() > MAX_BSON_OBJECT_BYTES)
    {
        return Err(CommandError::new(
            codes::BSON_OBJECT_TOO_LARGE,
            format!(
                "BSONObj size: {} is invalid. Size must be between 0 and {MAX_BSON_OBJECT_BYTES}",
                big.as_bytes().len()
            ),
        ));
    }
    let results = match wants_score {
        true => results
            .into_iter()
            .map(without_score)
            .collect::<CommandResult<Vec<_>>>()?,
        false => results,
    };
    // A writing stage returns no documents: its cursor is empty.
    let results = match write_stage {
        Some(prepared) => {
            output::write(&write_cx, prepared, results).await?;
            Vec::new()
        }
        None => results,
    };
    let cursor = OpenCursor::new(ns, Source::Buffered(results.into()), cursor_owner(&req));
    respond(&req.node, cursor, batch_size, true, false).await
}

/// Whether a stage of the pipeline asks for the `$text` score (a
/// `{$meta: "textScore"}` anywhere in it).
fn asks_text_score(pipeline: &bson::RawArray) -> bool {
    fn walk(v: RawBsonRef<'_>) -> bool {
        match v {
            RawBsonRef::Document(d) => d.iter().flatten().any(|(k, v)| {
                (k.as_str() == "$meta" && matches!(v, RawBsonRef::String("textScore"))) || walk(v)
            }),
            RawBsonRef::Array(a) => a.into_iter().flatten().any(walk),
            _ => false,
        }
    }
    pipeline.into_iter().flatten().any(walk)
}

/// `doc` carrying its `$text` score for the stages
/// (`ebb_lang::text::SCORE_FIELD`).
fn with_score(doc: bson::RawDocumentBuf, score: f64) -> CommandResult<bson::RawDocumentBuf> {
    let mut doc = doc;
    doc.append(
        bson::raw::CString::try_from(SCORE_FIELD).map_err(|_| CommandError::internal())?,
        score,
    );
    Ok(doc)
}

/// `doc` without the score the stages carried, wherever a stage left it
/// (nested by `$facet`, `$group`'s `$push: "$$ROOT"`).
fn without_score(doc: bson::RawDocumentBuf) -> CommandResult<bson::RawDocumentBuf> {
    let needle = SCORE_FIELD.as_bytes();
    if !doc.as_bytes().windows(needle.len()).any(|w| w == needle) {
        return Ok(doc);
    }
    let mut value = bson::Document::try_from(doc.as_ref())?;
    fn strip(d: &mut bson::Document) {
        d.remove(SCORE_FIELD);
        for (_, v) in d.iter_mut() {
            strip_value(v);
        }
    }
    fn strip_value(v: &mut bson::Bson) {
        match v {
            bson::Bson::Document(d) => strip(d),
            bson::Bson::Array(a) => a.iter_mut().for_each(strip_value),
            _ => {}
        }
    }
    strip(&mut value);
    Ok(bson::RawDocumentBuf::try_from(&value)?)
}

/// The name of a stage document's first field (its stage).
fn first_key(stage: &bson::RawDocument) -> Option<&str> {
    stage.iter().next()?.ok().map(|(k, _)| k.as_str())
}
