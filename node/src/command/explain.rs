//! `explain` of `find`, `aggregate`, `count`, `delete` and `update`: the chosen plan
//! as MongoDB's stage tree, and with `executionStats` the counters of an
//! actual run.

use std::sync::Arc;

use bson::{Bson, Document, RawBsonRef, RawDocument, doc};
use ebb_config::limits::MAX_SORT_BYTES;
use ebb_storage::Collection;
use ebb_storage::catalog::IndexMeta;
use ebb_storage::engine::Direction;
use ebb_storage::plan::exec::QueryCursor;
use ebb_storage::plan::{self, Access, Plan, QuerySpec};

use super::admin::{VERSION, hostname};
use super::find::parse_find;
use super::{Request, ok, query};
use crate::args::Args;
use crate::error::{CommandError, CommandResult, codes};

pub async fn explain(req: Request) -> CommandResult {
    // `ebbExpiry` is ebb's: a find's explain also says when its documents
    // fall due or why they never do (`explainExpiry`).
    let args = Args::parse(&req.body, &["verbosity", "ebbExpiry"])?;
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
    let expiry = args.bool("ebbExpiry")?.unwrap_or(false);
    if expiry && cmd != "find" {
        return Err(CommandError::invalid_options(
            "ebbExpiry explains the expiry of a find's documents only",
        ));
    }
    // A view's plan is its aggregation's, which ebb does not show yet.
    if let Some(Ok((_, RawBsonRef::String(name)))) = inner.iter().next()
        && super::views::catalog::resolve(&req.node, &req.db, name)
            .await?
            .is_some()
    {
        return Err(CommandError::from(ebb_storage::Error::not_implemented(
            "explain of a view",
        )));
    }
    let explained = match cmd.as_str() {
        "find" => explain_find(&req, &inner)?.into(),
        "aggregate" => explain_aggregate(&req, &inner)?,
        "count" => explain_filter(&req, &inner, "query", "COUNT")?.into(),
        "delete" => explain_write(&req, &inner, "deletes")?.into(),
        "update" => explain_write(&req, &inner, "updates")?.into(),
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
    let (ns, run, root) = explained.plan;
    let parsed_query = match explained.query {
        Some(q) => q,
        None => inner
            .get_document("filter")
            .ok()
            .or_else(|| inner.get_document("query").ok())
            .map(|d| Document::try_from(d).unwrap_or_default())
            .unwrap_or_default(),
    };
    let planner = doc! {
        "namespace": ns,
        "parsedQuery": parsed_query,
        "indexFilterSet": false,
        "winningPlan": root,
        "rejectedPlans": [],
    };
    let mut reply = doc! { "explainVersion": "1" };
    // A pipeline whose stages do not all go to the query layer shows
    // the query as its `$cursor` stage, then the stages run after it.
    let split = explained.later_stages.filter(|s| !s.is_empty());
    if split.is_none() {
        reply.insert("queryPlanner", planner.clone());
    }
    reply.insert("command", Document::try_from(inner.as_ref())?);
    reply.insert(
        "serverInfo",
        doc! { "host": hostname(), "port": i32::from(req.node.config.net.port), "version": VERSION, "gitVersion": env!("CARGO_PKG_VERSION") },
    );
    let mut execution = None;
    if verbosity != "queryPlanner"
        && let Some(Run {
            spec,
            plan,
            coll,
            skip,
            limit,
            covered,
        }) = run
    {
        let started = std::time::Instant::now();
        let stats = req
            .node
            .scan(move |snap| {
                let mut cursor =
                    QueryCursor::new(&coll, plan, spec.filter, spec.sort, skip, limit)?;
                if covered {
                    cursor = cursor.covering();
                }
                cursor.for_each(snap, &mut |_| true)?;
                Ok(cursor.stats)
            })
            .await?;
        execution = Some(doc! {
            "executionSuccess": true,
            "nReturned": stats.returned as i64,
            "executionTimeMillis": started.elapsed().as_millis() as i64,
            "totalKeysExamined": stats.keys_examined as i64,
            "totalDocsExamined": stats.docs_examined as i64,
        });
    }
    match split {
        Some(later) => {
            let mut cursor = doc! { "queryPlanner": planner };
            if let Some(e) = execution {
                cursor.insert("executionStats", e);
            }
            let mut stages = vec![Bson::Document(doc! { "$cursor": cursor })];
            stages.extend(later.into_iter().map(Bson::Document));
            reply.insert("stages", stages);
        }
        None => {
            if let Some(e) = execution {
                reply.insert("executionStats", e);
            }
        }
    }
    if expiry {
        reply.insert("ebbExpiry", super::expiry::of_find(&req, &inner).await?);
    }
    ok(reply)
}

/// Namespace, what an `executionStats` run needs (none for a collection
/// that does not exist), and the stage tree.
type PlanParts = (String, Option<Run>, Document);

/// The query an `executionStats` run executes, with the find's skip and
/// limit (mongod's run stops where the command would).
struct Run {
    spec: QuerySpec,
    plan: Plan,
    coll: Arc<Collection>,
    skip: u64,
    limit: Option<u64>,
    /// The index answers alone (`plan::cover`).
    covered: bool,
}

impl Run {
    /// A run of every match.
    fn all(spec: QuerySpec, plan: Plan, coll: &Arc<Collection>) -> Run {
        Run {
            spec,
            plan,
            coll: coll.clone(),
            skip: 0,
            limit: None,
            covered: false,
        }
    }
}

/// What one explained command comes to.
struct Explained {
    plan: PlanParts,
    /// The query as parsed, when it is not the command's `filter`/`query`.
    query: Option<Document>,
    /// An aggregate's stages after the query the planner took.
    later_stages: Option<Vec<Document>>,
}

impl From<PlanParts> for Explained {
    fn from(plan: PlanParts) -> Self {
        Explained {
            plan,
            query: None,
            later_stages: None,
        }
    }
}

/// `aggregate`: its leading `$match` (and a `$sort` right after it) is
/// the query the planner sees, as `aggregate` runs it; the stages after
/// it are listed as given.
fn explain_aggregate(req: &Request, inner: &RawDocument) -> CommandResult<Explained> {
    let args = Args::parse(
        inner,
        &[
            "pipeline",
            "cursor",
            "allowDiskUse",
            "bypassDocumentValidation",
            "collation",
            "hint",
            "let",
        ],
    )?;
    let name = args.collection()?;
    let ns = format!("{}.{name}", req.db);
    let Some(pipeline) = args.array("pipeline")? else {
        return Err(args.missing("pipeline"));
    };
    let mut stages = Vec::new();
    for v in pipeline {
        match v? {
            RawBsonRef::Document(d) => stages.push(d),
            _ => {
                return Err(CommandError::new(
                    codes::TYPE_MISMATCH,
                    "Each element of the 'pipeline' array must be an object",
                ));
            }
        }
    }
    let env = query::env(req, &args)?;
    let mut rest = stages.into_iter().peekable();
    let stage_spec = |d: &RawDocument, name: &str| match d.iter().next() {
        Some(Ok((k, RawBsonRef::Document(spec)))) if k.as_str() == name => Some(spec.to_owned()),
        _ => None,
    };
    let matched = rest.peek().and_then(|d| stage_spec(d, "$match"));
    if matched.is_some() {
        rest.next();
    }
    let sort = rest.peek().and_then(|d| stage_spec(d, "$sort"));
    if sort.is_some() {
        rest.next();
    }
    let later = rest
        .map(|d| Document::try_from(d).map_err(CommandError::from))
        .collect::<CommandResult<Vec<Document>>>()?;
    let query = match &matched {
        Some(m) => Document::try_from(m.as_ref())?,
        None => Document::new(),
    };
    let Some(entry) = req.node.collection(&req.db, name) else {
        return Ok(Explained {
            plan: (ns, None, doc! { "stage": "EOF" }),
            query: Some(query),
            later_stages: Some(later),
        });
    };
    let collation = query::collation(args.get("collation"))?;
    let spec = QuerySpec {
        filter: query::filter(matched.as_deref(), &env)?,
        sort: query::sort(sort.as_deref())?,
        hint: query::hint(args.get("hint"))?,
    }
    .collated(query::resolve(&collation, &entry.coll.meta)?);
    let plan = bucket_plan(&entry.coll, &spec, plan::plan(&entry.coll.meta, &spec)?);
    let root = query_stages(&entry.coll, &plan, &spec, false);
    Ok(Explained {
        plan: (ns, Some(Run::all(spec, plan, &entry.coll)), root),
        query: Some(query),
        later_stages: Some(later),
    })
}

fn explain_find(req: &Request, inner: &RawDocument) -> CommandResult<PlanParts> {
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
        return Ok((ns, None, doc! { "stage": "EOF" }));
    };
    cmd.check_text_score()?;
    let spec = cmd.collated_spec(&entry.coll.meta)?;
    let plan = bucket_plan(&entry.coll, &spec, cmd.plan(&entry.coll.meta, &spec)?);
    let covered = cmd.covered(&entry.coll, &plan, &spec);
    let mut root = match text_stages(&entry.coll, &spec)? {
        Some(text) => text,
        None => query_stages(&entry.coll, &plan, &spec, covered),
    };
    if cmd.skip > 0 {
        root = doc! { "stage": "SKIP", "skipAmount": cmd.skip as i64, "inputStage": root };
    }
    if let Some(l) = cmd.limit {
        root = doc! { "stage": "LIMIT", "limitAmount": l as i64, "inputStage": root };
    }
    if covered {
        root = doc! { "stage": "PROJECTION_COVERED", "inputStage": root };
    } else if cmd.projection.is_some() {
        root = doc! { "stage": "PROJECTION_SIMPLE", "inputStage": root };
    }
    let run = Run {
        skip: cmd.skip,
        limit: cmd.limit,
        covered,
        ..Run::all(spec, plan, &entry.coll)
    };
    Ok((ns, Some(run), root))
}

fn explain_filter(
    req: &Request,
    inner: &RawDocument,
    field: &str,
    stage: &str,
) -> CommandResult<PlanParts> {
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
        return Ok((ns, None, doc! { "stage": "EOF" }));
    };
    let spec = spec.collated(query::resolve(&collation, &entry.coll.meta)?);
    let plan = bucket_plan(&entry.coll, &spec, plan::plan(&entry.coll.meta, &spec)?);
    let mut input = access_stage(&plan);
    if entry.coll.timeseries.is_some() {
        input = doc! { "stage": "UNPACK_TS_BUCKET", "inputStage": input };
    }
    let root = doc! { "stage": stage, "inputStage": input };
    Ok((ns, Some(Run::all(spec, plan, &entry.coll)), root))
}

/// The first statement of a `delete`/`update`: a `DELETE`/`UPDATE` stage
/// over its access path. A multi-document delete is `BATCHED_DELETE`
/// while batched deletes are on (ebb deletes in bounded write batches,
/// as MongoDB's batched delete stage does).
fn explain_write(req: &Request, inner: &RawDocument, field: &str) -> CommandResult<PlanParts> {
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
            None,
            doc! { "stage": stage, "inputStage": { "stage": "EOF" } },
        ));
    };
    let spec = spec.collated(query::resolve(&collation, &entry.coll.meta)?);
    let plan = bucket_plan(&entry.coll, &spec, plan::plan(&entry.coll.meta, &spec)?);
    let mut input = access_stage(&plan);
    if entry.coll.timeseries.is_some() {
        input = doc! { "stage": "UNPACK_TS_BUCKET", "inputStage": input };
    }
    let root = doc! { "stage": stage, "inputStage": input };
    Ok((ns, Some(Run::all(spec, plan, &entry.coll)), root))
}

/// The stages of a query: its access path, the unpacking of buckets on
/// a time-series collection, and a `SORT` when the access path does not
/// yield the order asked for.
fn query_stages(coll: &Collection, plan: &Plan, spec: &QuerySpec, covered: bool) -> Document {
    let mut root = access_stage(plan);
    // A covered plan reads no record: the index scan alone.
    if covered && let Ok(scan) = root.get_document("inputStage") {
        root = scan.clone();
    }
    if coll.timeseries.is_some() {
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
    root
}

/// The stages of a `$text` query, as mongod shows them: `TEXT_MATCH` over
/// `TEXT_OR` over one scan of the text index per term (None without a
/// `$text`).
fn text_stages(coll: &Collection, spec: &QuerySpec) -> CommandResult<Option<Document>> {
    let Some((index, search, _)) = ebb_storage::plan::text::search(&coll.meta, &spec.filter, true)?
    else {
        return Ok(None);
    };
    let [terms, negated_terms, phrases, negated_phrases] = search.parsed();
    let scans: Vec<Document> = terms
        .iter()
        .map(|_| {
            doc! {
                "stage": "IXSCAN", "keyPattern": index.key.clone(), "indexName": index.name.clone(),
                "isMultiKey": true, "isUnique": false, "isSparse": false, "isPartial": index.partial_filter.is_some(),
                "direction": "backward", "indexBounds": {},
            }
        })
        .collect();
    let mut root = doc! {
        "stage": "TEXT_MATCH",
        "indexPrefix": {},
        "indexName": index.name.clone(),
        "parsedTextQuery": {
            "terms": terms,
            "negatedTerms": negated_terms,
            "phrases": phrases,
            "negatedPhrases": negated_phrases,
        },
        "textIndexVersion": 3,
        "inputStage": { "stage": "TEXT_OR", "inputStages": scans },
    };
    if let Some(sort) = spec.sort.as_ref() {
        let mut pattern = Document::new();
        for (f, asc) in sort.fields() {
            pattern.insert(f.clone(), if *asc { 1 } else { -1 });
        }
        if sort.by_text_score() {
            pattern.insert("$computed0", doc! { "$meta": "textScore" });
        }
        root = doc! { "stage": "SORT", "sortPattern": pattern, "memLimit": MAX_SORT_BYTES as i64, "type": "default", "inputStage": root };
    }
    Ok(Some(root))
}

/// A time-series collection's plan is the buckets it reads
/// (`timeseries::prune`), whatever the planner would pick for documents.
fn bucket_plan(coll: &Arc<Collection>, spec: &QuerySpec, plan: Plan) -> Plan {
    match &coll.timeseries {
        Some(ts) => ebb_storage::plan::prune::plan(coll, ts, &spec.filter, plan),
        None => plan,
    }
}

/// The stage tree of an access path.
/// The key pattern an index scan shows: the index's, or for a wildcard
/// index mongod's `{$_path: 1, <path>: 1}` of the path it read.
fn key_pattern(index: &IndexMeta, plan: &Plan) -> Document {
    if !index.is_wildcard() {
        return index.key.clone();
    }
    let direction = index.key.values().next().cloned().unwrap_or(Bson::Int32(1));
    plan.bounds
        .iter()
        .map(|(field, _)| match field.as_str() {
            "$_path" => (field.clone(), Bson::Int32(1)),
            _ => (field.clone(), direction.clone()),
        })
        .collect()
}

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
                "stage": "IXSCAN", "keyPattern": key_pattern(index, plan), "indexName": index.name.clone(),
                "isMultiKey": false, "isUnique": index.unique, "isSparse": index.sparse,
                "isPartial": index.partial_filter.is_some(), "direction": direction(*dir), "indexBounds": bounds,
            },
        },
    }
}
