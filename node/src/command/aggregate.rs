//! `aggregate`: a pipeline over one collection.
//!
//! The pipeline is parsed by storage (`ebb_storage::pipeline`); a leading
//! `$match` (and a `$sort` right after it) becomes the query the planner
//! sees, so it can use an index; the remaining stages run in memory over
//! that query's documents, within the 100 MiB blocking-stage limit, and the
//! results are returned through a cursor. Stages that read other
//! collections do so through `foreign.rs`. `aggregate: 1` runs a pipeline
//! that starts with `$documents`. This file only parses the command's own
//! arguments and wires the pieces together.

use std::time::Instant;

use bson::RawBsonRef;
use ebb_config::limits::MAX_BSON_OBJECT_BYTES;
use ebb_storage::Error as StorageError;
use ebb_storage::encoding::display::type_name;
use ebb_storage::pipeline::{Pipeline, Stage, check_top_level, parse_stage_in};
use ebb_storage::query::exec::QueryCursor;
use ebb_storage::query::plan::{self, QuerySpec};

use super::find::{cursor_owner, respond};
use super::foreign::ForeignReads;
use super::{Request, check_collection_name, query};
use crate::args::{Args, as_i64};
use crate::context::NodeContext;
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
    // Only a writing stage ($out, $merge) validates documents; ebb has
    // none, so the flag has nothing to bypass (mongod accepts it too).
    args.bool("bypassDocumentValidation")?;
    let explain = args.bool("explain")?.unwrap_or(false);
    if explain {
        return Err(StorageError::not_implemented("aggregate with explain").into());
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
    let mut stages = Vec::new();
    for v in pipeline {
        match v? {
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
    check_top_level(&stages, collectionless)?;
    NodeContext::count(&req.node.opcounters.command, 1);
    let ns = format!("{}.{name}", req.db);
    let collation = query::collation(args.get("collation"))?;
    let hint = query::hint(args.get("hint"))?;
    let max_time = query::max_time(&args)?;
    let allow_disk_use = args.bool("allowDiskUse")?.unwrap_or(false);
    let disk_use = req.node.disk_use(allow_disk_use);
    let deadline = max_time.map(|limit| Instant::now() + limit);
    let (node, db) = (req.node.clone(), req.db.clone());
    let results = match req
        .node
        .collection(&req.db, name)
        .filter(|_| !collectionless)
    {
        // No input: the stages still run ($documents, $unionWith, $facet).
        None => {
            let collation = collation.resolve(None);
            req.node
                .scan(move |snap| {
                    let reads = ForeignReads::new(&node, &db, snap, deadline);
                    let pipeline = Pipeline::new(stages)
                        .with_sources(&reads)
                        .collated(collation)
                        .disk_use(disk_use);
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
            let collation = query::resolve(&collation, &entry.set.meta)?;
            let spec = QuerySpec { filter, sort, hint }.collated(collation.clone());
            let plan = plan::plan(&entry.set.meta, &spec)?;
            let set = entry.set.clone();
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
                    let mut failure = None;
                    cursor.for_each(snap, &mut |found| match pipeline.push(found.doc) {
                        Ok(more) => more,
                        Err(e) => {
                            failure = Some(e);
                            false
                        }
                    })?;
                    if let Some(e) = failure {
                        return Err(e.into());
                    }
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
    let cursor = OpenCursor::new(ns, Source::Buffered(results.into()), cursor_owner(&req));
    respond(&req.node, cursor, batch_size, true, false).await
}
