//! Reads of a view: `find`, `count` and `distinct` become an aggregation
//! of the view (`aggregate` itself reads a view's collection with its
//! stages first), answered with the view's cursor. These handlers take
//! every `find`, `count` and `distinct` and hand a collection's to the
//! collection's own handler.

use bson::{Bson, Document, RawBsonRef, RawDocumentBuf, doc};

use super::catalog::{Resolved, read_collation, resolve};
use crate::args::Args;
use crate::command::{Request, ok};
use crate::error::{CommandError, CommandResult, codes};

/// Runs `pipeline` (after the view's own) as an aggregation of view
/// `name`, answered as `aggregate` answers: the view's cursor.
async fn aggregate_on(
    req: &Request,
    name: &str,
    pipeline: Vec<Document>,
    collation: Option<Document>,
    batch_size: Option<i64>,
    extra: &[(&str, Bson)],
) -> CommandResult {
    let mut body = doc! {
        "aggregate": name,
        "pipeline": pipeline,
        "cursor": match batch_size {
            Some(n) => doc! { "batchSize": n },
            None => doc! {},
        },
    };
    if let Some(c) = collation {
        body.insert("collation", c);
    }
    for (k, v) in extra {
        body.insert(*k, v.clone());
    }
    let body = RawDocumentBuf::try_from(&body).map_err(|_| CommandError::internal())?;
    crate::command::aggregate::aggregate(Request {
        db: req.db.clone(),
        body,
        node: req.node.clone(),
        conn: req.conn.clone(),
        decided: None,
    })
    .await
}

/// The options of `find` a view takes: each becomes a stage, or passes on
/// to the aggregation. The others are refused (OptionNotSupportedOnView).
const FIND_ON_VIEW: &[&str] = &[
    "filter",
    "sort",
    "projection",
    "skip",
    "limit",
    "batchSize",
    "singleBatch",
    "collation",
    "hint",
    "let",
    "allowDiskUse",
];

fn document(v: RawBsonRef<'_>) -> CommandResult<Document> {
    match v {
        RawBsonRef::Document(d) => Ok(Document::try_from(d)?),
        _ => Err(CommandError::new(
            codes::TYPE_MISMATCH,
            "expected an object",
        )),
    }
}

/// `find` on a view: its filter, sort, skip, limit and projection as
/// stages after the view's.
async fn find_view(req: &Request, name: &str, view: &Resolved) -> CommandResult {
    let mut extra: Vec<(&str, Bson)> = Vec::new();
    let mut given: Vec<(&str, RawBsonRef<'_>)> = Vec::new();
    for el in req.body.iter().skip(1) {
        let (k, v) = el?;
        let k = k.as_str();
        if matches!(k, "maxTimeMS" | "comment") {
            extra.push((k, Bson::try_from(v)?));
        } else if crate::args::GENERIC.contains(&k) {
            continue;
        } else if !FIND_ON_VIEW.contains(&k) {
            return Err(CommandError::new(
                codes::OPTION_NOT_SUPPORTED_ON_VIEW,
                format!("the find option '{k}' is not supported on a view"),
            ));
        } else {
            given.push((k, v));
        }
    }
    let get = |k: &str| given.iter().find(|(g, _)| *g == k).map(|(_, v)| *v);
    for k in ["hint", "let", "allowDiskUse"] {
        if let Some(v) = get(k) {
            extra.push((k, Bson::try_from(v)?));
        }
    }
    // The stages in find's order: filter, sort, skip, limit, projection.
    let mut stages = Vec::new();
    if let Some(f) = get("filter") {
        stages.push(doc! { "$match": document(f)? });
    }
    if let Some(s) = get("sort")
        .map(document)
        .transpose()?
        .filter(|s| !s.is_empty())
    {
        stages.push(doc! { "$sort": s });
    }
    if let Some(skip) = get("skip").and_then(crate::args::as_i64).filter(|s| *s > 0) {
        stages.push(doc! { "$skip": skip });
    }
    let limit = get("limit").and_then(crate::args::as_i64).unwrap_or(0);
    if limit != 0 {
        stages.push(doc! { "$limit": limit.unsigned_abs() as i64 });
    }
    if let Some(p) = get("projection")
        .map(document)
        .transpose()?
        .filter(|p| !p.is_empty())
    {
        stages.push(doc! { "$project": p });
    }
    // A negative limit, or singleBatch, is one batch that closes the cursor.
    let single = limit < 0 || matches!(get("singleBatch"), Some(RawBsonRef::Boolean(true)));
    let batch_size = match (get("batchSize").and_then(crate::args::as_i64), single) {
        (b, false) => b,
        (b, true) => Some(b.unwrap_or(i64::from(i32::MAX))),
    };
    let collation = read_collation(view, get("collation"))?;
    let reply = aggregate_on(req, name, stages, collation, batch_size, &extra).await?;
    if !single {
        return Ok(reply);
    }
    let mut reply = Document::try_from(reply.as_ref())?;
    if let Ok(cursor) = reply.get_document_mut("cursor") {
        cursor.insert("id", 0i64);
    }
    RawDocumentBuf::try_from(&reply).map_err(|_| CommandError::internal())
}

/// The only document of a one-batch aggregation's reply, if any.
fn only_result(reply: &RawDocumentBuf) -> CommandResult<Option<Document>> {
    let batch = reply.get_document("cursor")?.get_array("firstBatch")?;
    match batch.into_iter().next() {
        Some(d) => Ok(Some(document(d?)?)),
        None => Ok(None),
    }
}

/// `count` on a view.
async fn count_view(req: &Request, name: &str, view: &Resolved, args: &Args<'_>) -> CommandResult {
    let mut stages = Vec::new();
    if let Some(q) = args.doc("query")? {
        stages.push(doc! { "$match": Document::try_from(q)? });
    }
    if let Some(skip) = args.i64("skip")?.filter(|s| *s > 0) {
        stages.push(doc! { "$skip": skip });
    }
    if let Some(limit) = args.i64("limit")?.map(i64::unsigned_abs).filter(|l| *l > 0) {
        stages.push(doc! { "$limit": limit as i64 });
    }
    stages.push(doc! { "$count": "n" });
    let collation = read_collation(view, args.get("collation"))?;
    let reply = aggregate_on(req, name, stages, collation, None, &[]).await?;
    let n = only_result(&reply)?
        .and_then(|d| match d.get("n") {
            Some(Bson::Int32(n)) => Some(i64::from(*n)),
            Some(Bson::Int64(n)) => Some(*n),
            _ => None,
        })
        .unwrap_or(0);
    ok(doc! { "n": n as i32 })
}

/// `distinct` on a view: the values at `key` in the view's documents
/// that match, an array's elements each on its own.
async fn distinct_view(
    req: &Request,
    name: &str,
    view: &Resolved,
    args: &Args<'_>,
    key: &str,
) -> CommandResult {
    let mut stages = Vec::new();
    if let Some(q) = args.doc("query")? {
        stages.push(doc! { "$match": Document::try_from(q)? });
    }
    stages.push(doc! { "$project": { "_id": 0, "v": format!("${key}") } });
    stages.push(doc! { "$unwind": { "path": "$v", "preserveNullAndEmptyArrays": false } });
    stages.push(doc! { "$group": { "_id": null, "values": { "$addToSet": "$v" } } });
    let collation = read_collation(view, args.get("collation"))?;
    let reply = aggregate_on(req, name, stages, collation, None, &[]).await?;
    let values = only_result(&reply)?
        .and_then(|d| d.get_array("values").ok().cloned())
        .unwrap_or_default();
    ok(doc! { "values": values })
}

/// The collection or view a read names (its command's value).
fn named(req: &Request) -> Option<String> {
    match req.body.iter().next()?.ok()?.1 {
        RawBsonRef::String(s) => Some(s.to_owned()),
        _ => None,
    }
}

/// The view a read names, resolved; None for a collection.
async fn view_of(req: &Request) -> CommandResult<Option<(String, Resolved)>> {
    let Some(name) = named(req) else {
        return Ok(None);
    };
    Ok(resolve(&req.node, &req.db, &name).await?.map(|v| (name, v)))
}

/// `find`, of a view or a collection.
pub async fn find(req: Request) -> CommandResult {
    match view_of(&req).await? {
        Some((name, view)) => {
            crate::context::NodeContext::count(&req.node.opcounters.query, 1);
            find_view(&req, &name, &view).await
        }
        None => crate::command::find::find(req).await,
    }
}

/// `count`, of a view or a collection.
pub async fn count(req: Request) -> CommandResult {
    let Some((name, view)) = view_of(&req).await? else {
        return crate::command::count::count(req).await;
    };
    let args = Args::parse(
        &req.body,
        &["query", "limit", "skip", "hint", "collation", "fields"],
    )?;
    count_view(&req, &name, &view, &args).await
}

/// `distinct`, of a view or a collection.
pub async fn distinct(req: Request) -> CommandResult {
    let Some((name, view)) = view_of(&req).await? else {
        return crate::command::count::distinct(req).await;
    };
    let args = Args::parse(&req.body, &["key", "query", "collation", "hint"])?;
    let Some(key) = args.str("key")? else {
        return Err(args.missing("key"));
    };
    distinct_view(&req, &name, &view, &args, key).await
}
