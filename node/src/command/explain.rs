//! `explain` of `find`, `count`, `delete` and `update`: the chosen plan
//! as MongoDB's stage tree, and with `executionStats` the counters of an
//! actual run.

use std::sync::Arc;

use bson::{Bson, Document, RawBsonRef, RawDocument, doc};
use ebb_config::limits::MAX_SORT_BYTES;
use ebb_storage::IndexSet;
use ebb_storage::engine::Direction;
use ebb_storage::query::exec::QueryCursor;
use ebb_storage::query::plan::{self, Access, Plan, QuerySpec};

use super::admin::{VERSION, hostname};
use super::find::parse_find;
use super::{Request, ok, query};
use crate::args::Args;
use crate::error::{CommandError, CommandResult, codes};

pub async fn explain(req: Request) -> CommandResult {
    let args = Args::parse(&req.body, &["verbosity"])?;
    let inner = match args.command_value() {
        RawBsonRef::Document(d) => d.to_owned(),
        other => return Err(args.wrong_type("explain", &other, "type 'object'")),
    };
    let verbosity = args.str("verbosity")?.unwrap_or("allPlansExecution");
    if !matches!(
        verbosity,
        "queryPlanner" | "executionStats" | "allPlansExecution"
    ) {
        return Err(CommandError::bad_value(format!(
            "verbosity string must be one of {{'queryPlanner', 'executionStats', 'allPlansExecution'}}, got {verbosity}"
        )));
    }
    let cmd = inner
        .iter()
        .next()
        .and_then(|e| e.ok())
        .map(|(k, _)| k.as_str().to_owned())
        .unwrap_or_default();
    let explained = match cmd.as_str() {
        "find" => explain_find(&req, &inner)?,
        "count" => explain_filter(&req, &inner, "query", "COUNT")?,
        "delete" => explain_write(&req, &inner, "deletes")?,
        "update" => explain_write(&req, &inner, "updates")?,
        "" => {
            return Err(CommandError::failed_to_parse(
                "explain command requires a nested object",
            ));
        }
        other => {
            return Err(CommandError::new(
                codes::COMMAND_NOT_FOUND,
                format!("Explain failed due to unknown command: {other}"),
            ));
        }
    };
    let (ns, run, root) = explained;
    let mut reply = doc! {
        "explainVersion": "1",
        "queryPlanner": {
            "namespace": ns,
            "parsedQuery": Bson::Document(inner.get_document("filter").ok().or_else(|| inner.get_document("query").ok()).map(|d| Document::try_from(d).unwrap_or_default()).unwrap_or_default()),
            "indexFilterSet": false,
            "winningPlan": root,
            "rejectedPlans": [],
        },
        "command": Document::try_from(inner.as_ref())?,
        "serverInfo": { "host": hostname(), "port": i32::from(req.node.config.net.port), "version": VERSION, "gitVersion": env!("CARGO_PKG_VERSION") },
    };
    if verbosity != "queryPlanner"
        && let (Some(spec), Some(plan), Some(set)) = run
    {
        let started = std::time::Instant::now();
        let stats = req
            .node
            .scan(move |snap| {
                let mut cursor = QueryCursor::new(&set, plan, spec.filter, spec.sort, 0, None)?;
                cursor.for_each(snap, &mut |_| true)?;
                Ok(cursor.stats)
            })
            .await?;
        reply.insert(
            "executionStats",
            doc! {
                "executionSuccess": true,
                "nReturned": stats.returned as i64,
                "executionTimeMillis": started.elapsed().as_millis() as i64,
                "totalKeysExamined": stats.keys_examined as i64,
                "totalDocsExamined": stats.docs_examined as i64,
            },
        );
    }
    ok(reply)
}

type Explained = (
    String,
    (Option<QuerySpec>, Option<Plan>, Option<Arc<IndexSet>>),
    Document,
);

fn explain_find(req: &Request, inner: &RawDocument) -> CommandResult<Explained> {
    let args = Args::parse(
        inner,
        &[
            "filter",
            "sort",
            "projection",
            "hint",
            "skip",
            "limit",
            "batchSize",
            "singleBatch",
            "collation",
            "allowDiskUse",
            "let",
            "noCursorTimeout",
            "allowPartialResults",
            "max",
            "min",
            "returnKey",
            "showRecordId",
            "tailable",
            "awaitData",
            "readOnce",
            "oplogReplay",
        ],
    )?;
    let env = query::env(req, &args)?;
    let cmd = parse_find(&args, &req.db, &env)?;
    let ns = format!("{}.{}", req.db, cmd.name);
    let Some(entry) = req.node.collection(&req.db, &cmd.name) else {
        return Ok((ns, (None, None, None), doc! { "stage": "EOF" }));
    };
    let spec = cmd.collated_spec(&entry.set.meta)?;
    let plan = bucket_plan(&entry.set, &spec, cmd.plan(&entry.set.meta, &spec)?);
    let mut root = access_stage(&plan);
    if entry.set.timeseries.is_some() {
        root = doc! { "stage": "UNPACK_TS_BUCKET", "inputStage": root };
    }
    if !plan.sorted_by_access
        && let Some(sort) = &spec.sort
    {
        let pattern: Document = sort
            .fields()
            .iter()
            .map(|(f, asc)| (f.clone(), Bson::Int32(if *asc { 1 } else { -1 })))
            .collect();
        root = doc! { "stage": "SORT", "sortPattern": pattern, "memLimit": MAX_SORT_BYTES as i64, "type": "simple", "inputStage": root };
    }
    if cmd.skip > 0 {
        root = doc! { "stage": "SKIP", "skipAmount": cmd.skip as i64, "inputStage": root };
    }
    if let Some(l) = cmd.limit {
        root = doc! { "stage": "LIMIT", "limitAmount": l as i64, "inputStage": root };
    }
    if cmd.projection.is_some() {
        root = doc! { "stage": "PROJECTION_SIMPLE", "inputStage": root };
    }
    Ok((ns, (Some(spec), Some(plan), Some(entry.set.clone())), root))
}

fn explain_filter(
    req: &Request,
    inner: &RawDocument,
    field: &str,
    stage: &str,
) -> CommandResult<Explained> {
    let args = Args::parse(
        inner,
        &[field, "limit", "skip", "hint", "collation", "fields"],
    )?;
    let name = args.collection()?;
    let ns = format!("{}.{name}", req.db);
    let collation = query::collation(args.get("collation"))?;
    let spec = QuerySpec {
        filter: query::filter(args.doc(field)?, &query::env_now(req))?,
        sort: None,
        hint: query::hint(args.get("hint"))?,
    };
    let Some(entry) = req.node.collection(&req.db, name) else {
        return Ok((ns, (None, None, None), doc! { "stage": "EOF" }));
    };
    let spec = spec.collated(query::resolve(&collation, &entry.set.meta)?);
    let plan = bucket_plan(&entry.set, &spec, plan::plan(&entry.set.meta, &spec)?);
    let mut input = access_stage(&plan);
    if entry.set.timeseries.is_some() {
        input = doc! { "stage": "UNPACK_TS_BUCKET", "inputStage": input };
    }
    let root = doc! { "stage": stage, "inputStage": input };
    Ok((ns, (Some(spec), Some(plan), Some(entry.set.clone())), root))
}

/// The first statement of a `delete`/`update`: a `DELETE`/`UPDATE` stage
/// over its access path. A multi-document delete is `BATCHED_DELETE`
/// while batched deletes are on (ebb deletes in bounded write batches,
/// as MongoDB's batched delete stage does).
fn explain_write(req: &Request, inner: &RawDocument, field: &str) -> CommandResult<Explained> {
    let args = Args::parse(
        inner,
        &[field, "ordered", "let", "bypassDocumentValidation"],
    )?;
    let name = args.collection()?;
    let ns = format!("{}.{name}", req.db);
    let statements = super::write::documents(&args, field)?;
    let st = statements[0];
    let filter = st
        .get_document("q")
        .map_err(|_| CommandError::failed_to_parse("statement has no 'q' document"))?;
    let collation = query::collation(st.get("collation")?)?;
    let spec = QuerySpec {
        filter: query::filter(Some(filter), &query::env(req, &args)?)?,
        sort: None,
        hint: query::hint(st.get("hint")?)?,
    };
    let stage = if field == "deletes" {
        let multi = matches!(st.get("limit")?, Some(v) if crate::args::as_i64(v) == Some(0));
        if multi && req.node.shared.params.ttl_monitor_batch_deletes() {
            "BATCHED_DELETE"
        } else {
            "DELETE"
        }
    } else {
        "UPDATE"
    };
    let Some(entry) = req.node.collection(&req.db, name) else {
        return Ok((
            ns,
            (None, None, None),
            doc! { "stage": stage, "inputStage": { "stage": "EOF" } },
        ));
    };
    let spec = spec.collated(query::resolve(&collation, &entry.set.meta)?);
    let plan = bucket_plan(&entry.set, &spec, plan::plan(&entry.set.meta, &spec)?);
    let mut input = access_stage(&plan);
    if entry.set.timeseries.is_some() {
        input = doc! { "stage": "UNPACK_TS_BUCKET", "inputStage": input };
    }
    let root = doc! { "stage": stage, "inputStage": input };
    Ok((ns, (Some(spec), Some(plan), Some(entry.set.clone())), root))
}

/// A time-series collection's plan is the buckets it reads
/// (`timeseries::prune`), whatever the planner would pick for documents.
fn bucket_plan(set: &Arc<IndexSet>, spec: &QuerySpec, plan: Plan) -> Plan {
    match &set.timeseries {
        Some(ts) => ebb_storage::timeseries::prune::plan(set, ts, &spec.filter),
        None => plan,
    }
}

/// The stage tree of an access path.
pub fn access_stage(plan: &Plan) -> Document {
    let direction = |d: Direction| {
        if d == Direction::Forward {
            "forward"
        } else {
            "backward"
        }
    };
    let bounds: Document = plan
        .bounds
        .iter()
        .map(|(f, b)| (f.clone(), Bson::from(b.clone())))
        .collect();
    match (&plan.access, plan.stage) {
        (Access::Natural { dir }, _) | (Access::Records { dir, .. }, "COLLSCAN") => {
            doc! { "stage": "COLLSCAN", "direction": direction(*dir) }
        }
        (Access::Records { .. }, "IDHACK") => doc! { "stage": "IDHACK" },
        (Access::Records { dir, .. }, _) => doc! {
            "stage": "FETCH",
            "inputStage": {
                "stage": "IXSCAN", "keyPattern": { "_id": 1 }, "indexName": "_id_", "isMultiKey": false,
                "isUnique": true, "direction": direction(*dir), "indexBounds": bounds,
            },
        },
        (Access::Index { index, dir, .. }, _) => doc! {
            "stage": "FETCH",
            "inputStage": {
                "stage": "IXSCAN", "keyPattern": index.key.clone(), "indexName": index.name.clone(),
                "isMultiKey": false, "isUnique": index.unique, "isSparse": index.sparse,
                "isPartial": index.partial_filter.is_some(), "direction": direction(*dir), "indexBounds": bounds,
            },
        },
    }
}
