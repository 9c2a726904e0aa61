//! `find`, `getMore`, `killCursors`.
//!
//! `find` plans the query, runs the first batch on a snapshot (101
//! documents by default, as mongod), and leaves a cursor when more remain;
//! `getMore` resumes it on a fresh snapshot.

use bson::{RawBsonRef, RawDocumentBuf, doc};
use ebb_config::limits::MAX_BATCH_BYTES;
use ebb_lang::pipeline::Env;
use ebb_lang::query::find_projection::FindProjection;
use ebb_storage::Error as StorageError;
use ebb_storage::engine::Direction;
use ebb_storage::plan::exec::{BatchLimits, QueryCursor};
use ebb_storage::plan::min_max;
use ebb_storage::plan::{self, Hint, QuerySpec};

use super::{Request, check_collection_name, check_db_name, cursor_reply, ok, query};
use crate::args::Args;
use crate::context::NodeContext;
use crate::cursor::{AwaitData, OpenCursor, Owner, Source};
use crate::error::{CommandError, CommandResult, codes};

/// mongod's first batch when the client gives no `batchSize`.
pub const DEFAULT_FIRST_BATCH: usize = 101;

const ARGS: &[&str] = &[
    "filter",
    "sort",
    "projection",
    "hint",
    "skip",
    "limit",
    "batchSize",
    "singleBatch",
    "max",
    "min",
    "returnKey",
    "showRecordId",
    "tailable",
    "oplogReplay",
    "noCursorTimeout",
    "awaitData",
    "allowPartialResults",
    "collation",
    "allowDiskUse",
    "let",
    "readOnce",
];

/// A parsed `find`.
pub struct FindCommand {
    pub name: String,
    pub spec: QuerySpec,
    pub projection: Option<FindProjection>,
    pub skip: u64,
    pub limit: Option<u64>,
    pub batch_size: Option<usize>,
    pub single_batch: bool,
    pub collation: ebb_lang::encoding::collation::Choice,
    /// `maxTimeMS`, spent across the find and its getMores.
    pub max_time: Option<std::time::Duration>,
    /// `returnKey`: index keys instead of documents.
    pub return_key: bool,
    /// `min`/`max` key documents (empty when not given).
    pub min: RawDocumentBuf,
    pub max: RawDocumentBuf,
    /// `allowDiskUse`: a sort past 100 MiB spills to disk instead of
    /// failing with 292.
    pub allow_disk_use: bool,
    /// `tailable`: the cursor stays open at the end of a capped
    /// collection and returns later inserts.
    pub tailable: bool,
    /// `awaitData`: a tailable cursor's `getMore` waits for inserts.
    pub await_data: bool,
}

impl FindCommand {
    /// `{$meta: "textScore"}` in the sort or projection needs a `$text`.
    pub fn check_text_score(&self) -> CommandResult<()> {
        let wants = self.spec.sort.as_ref().is_some_and(|s| s.by_text_score())
            || self
                .projection
                .as_ref()
                .is_some_and(|p| p.wants_text_score());
        if wants && self.spec.filter.text().is_none() {
            return Err(ebb_lang::query::find_projection::text_score_unavailable().into());
        }
        Ok(())
    }

    /// The access path for `spec`: the hinted index between `min` and
    /// `max` when either is given, else the planner's choice.
    pub fn plan(
        &self,
        meta: &ebb_storage::catalog::CollectionMeta,
        spec: &QuerySpec,
    ) -> CommandResult<plan::Plan> {
        if self.min.is_empty() && self.max.is_empty() {
            Ok(plan::plan(meta, spec)?)
        } else {
            Ok(min_max::plan(meta, spec, &self.min, &self.max)?)
        }
    }

    /// Whether `plan` answers this find on `coll` from its index alone
    /// (`plan::cover`): a plain inclusion projection of key fields.
    pub fn covered(
        &self,
        coll: &ebb_storage::Collection,
        plan: &plan::Plan,
        spec: &QuerySpec,
    ) -> bool {
        let projected = match &self.projection {
            Some(p) if !self.return_key => p.included_paths(),
            _ => None,
        };
        projected.is_some_and(|paths| {
            plan::cover::covers(coll, plan, &spec.filter, spec.sort.as_ref(), &paths)
        })
    }

    /// The query with the collation it runs with on `meta`'s collection.
    pub fn collated_spec(
        &self,
        meta: &ebb_storage::catalog::CollectionMeta,
    ) -> CommandResult<QuerySpec> {
        Ok(self
            .spec
            .clone()
            .collated(query::resolve(&self.collation, meta)?))
    }
}

/// Parses `find`; `$expr` in its filter sees `env` (`$$NOW`, `let`).
pub fn parse_find(args: &Args<'_>, db: &str, env: &Env) -> CommandResult<FindCommand> {
    let name = args.collection()?;
    check_db_name(db)?;
    check_collection_name(db, name)?;
    // ebb keeps records by `_id` and has no record ids to show; a made-up
    // number would look like mongod's (a long in insertion order) without
    // being one, so `showRecordId` is refused rather than imitated.
    if args.bool("showRecordId")? == Some(true) {
        return Err(StorageError::not_implemented("showRecordId (ebb has no record ids)").into());
    }
    let tailable = args.bool("tailable")?.unwrap_or(false);
    let await_data = args.bool("awaitData")?.unwrap_or(false);
    if await_data && !tailable {
        return Err(CommandError::failed_to_parse(
            "Cannot set 'awaitData' without also setting 'tailable'",
        ));
    }
    let limit = args.i64("limit")?;
    let mut single_batch = args.bool("singleBatch")?.unwrap_or(false);
    // A negative limit is the legacy "single batch of |n|" form.
    let limit = match limit {
        Some(l) if l < 0 => {
            single_batch = true;
            Some(l.unsigned_abs())
        }
        Some(0) | None => None,
        Some(l) => Some(l as u64),
    };
    if tailable && single_batch {
        return Err(CommandError::bad_value(
            "cannot use tailable option with the 'singleBatch' option",
        ));
    }
    let collation = query::collation(args.get("collation"))?;
    // A `$natural` sort is a collection scan in that direction.
    let mut hint = query::hint(args.get("hint"))?;
    let sort = match query::natural_sort(args.doc("sort")?)? {
        Some(dir) => {
            match &hint {
                None => hint = Some(Hint::Natural(dir)),
                Some(Hint::Natural(d)) if *d == dir => {}
                Some(_) => {
                    return Err(CommandError::bad_value(
                        "a $natural sort cannot be combined with a hint of an index",
                    ));
                }
            }
            None
        }
        None => query::find_sort(args.doc("sort")?)?,
    };
    if tailable && (sort.is_some() || matches!(hint, Some(Hint::Natural(Direction::Reverse)))) {
        return Err(CommandError::bad_value(
            "cannot use tailable option with a sort other than {$natural: 1}",
        ));
    }
    Ok(FindCommand {
        name: name.to_owned(),
        spec: QuerySpec {
            filter: query::filter(args.doc("filter")?, env)?,
            sort,
            hint,
        },
        tailable,
        await_data,
        projection: query::find_projection(args.doc("projection")?, args.doc("filter")?, env)?,
        skip: args.non_negative("skip")?.unwrap_or(0) as u64,
        limit,
        batch_size: args.non_negative("batchSize")?.map(|b| b as usize),
        single_batch,
        collation,
        max_time: query::max_time(args)?,
        return_key: args.bool("returnKey")?.unwrap_or(false),
        allow_disk_use: args.bool("allowDiskUse")?.unwrap_or(false),
        min: args
            .doc("min")?
            .map_or_else(RawDocumentBuf::new, ToOwned::to_owned),
        max: args
            .doc("max")?
            .map_or_else(RawDocumentBuf::new, ToOwned::to_owned),
    })
}

pub async fn find(req: Request) -> CommandResult {
    let args = Args::parse(&req.body, ARGS)?;
    let env = query::env(&req, &args)?;
    let cmd = parse_find(&args, &req.db, &env)?;
    NodeContext::count(&req.node.opcounters.query, 1);
    let ns = format!("{}.{}", req.db, cmd.name);
    cmd.check_text_score()?;
    let Some(entry) = req.node.collection(&req.db, &cmd.name) else {
        if cmd.spec.filter.text().is_some() {
            return Err(CommandError::new(
                codes::INDEX_NOT_FOUND,
                format!("text index required for $text query (no such collection '{ns}')"),
            ));
        }
        return cursor_reply(0, &ns, Vec::new(), true);
    };
    let spec = cmd.collated_spec(&entry.coll.meta)?;
    if spec.filter.text().is_some() {
        return find_text(&req, &entry.coll, cmd, spec, ns).await;
    }
    let plan = cmd.plan(&entry.coll.meta, &spec)?;
    if let Some((path, near)) = spec.filter.near() {
        let near = (path.to_owned(), *near);
        return find_near(&req, &entry.coll, cmd, spec, plan, near, ns).await;
    }
    let covered = cmd.covered(&entry.coll, &plan, &spec);
    let projection = if cmd.return_key {
        Some(return_key(&entry.coll.meta, &plan)?)
    } else {
        cmd.projection
            .map(|p| p.collated(spec.filter.collation().cloned()))
    };
    let query = QueryCursor::new(
        &entry.coll,
        plan,
        spec.filter,
        spec.sort,
        cmd.skip,
        cmd.limit,
    )?
    .with_time_limit(cmd.max_time)
    .with_disk_use(req.node.disk_use(cmd.allow_disk_use));
    let query = if covered { query.covering() } else { query };
    let query = match cmd.tailable {
        true if entry.coll.capped.is_none() => {
            return Err(CommandError::bad_value(
                "error processing query: tailable cursor requested on non capped collection",
            ));
        }
        true => query.tailable()?,
        false => query,
    };
    let first = cmd.batch_size.unwrap_or(DEFAULT_FIRST_BATCH);
    let source = Source::Query {
        query: Box::new(query),
        projection: projection.map(Box::new),
    };
    let mut cursor = OpenCursor::new(ns.clone(), source, cursor_owner(&req));
    if cmd.await_data {
        cursor.await_data = Some(AwaitData {
            inserted: entry.inserted.clone(),
        });
    }
    respond(&req.node, cursor, first, true, cmd.single_batch).await
}

/// A find with `$near` or `$nearSphere`: its documents nearest first
/// (`near`), or in its `sort` when it names one, as mongod orders them;
/// then its `skip`, `limit` and projection, served from one snapshot.
async fn find_near(
    req: &Request,
    coll: &std::sync::Arc<ebb_storage::Collection>,
    cmd: FindCommand,
    spec: QuerySpec,
    plan: plan::Plan,
    near: (String, ebb_lang::query::filter::Near),
    ns: String,
) -> CommandResult {
    if cmd.tailable || cmd.return_key {
        return Err(CommandError::bad_value(
            "$near and $nearSphere cannot be combined with tailable or returnKey",
        ));
    }
    let keep = match &spec.sort {
        Some(_) => None,
        None => cmd.limit.map(|l| l.saturating_add(cmd.skip)),
    };
    let mut found = super::near::ordered(
        &req.node,
        coll,
        plan,
        spec.clone(),
        cmd.max_time,
        near,
        keep,
    )
    .await?;
    if let Some(sort) = &spec.sort {
        found.sort_by(|a, b| sort.compare(&a.1, &b.1));
    }
    respond_ranked(req, cmd, &spec.filter, found, false, ns).await
}

/// A find with `$text`: the documents its text search matches (in `_id`
/// order, or in its `sort`, which may name the score), then its `skip`,
/// `limit` and projection (which may set fields to the score).
async fn find_text(
    req: &Request,
    coll: &std::sync::Arc<ebb_storage::Collection>,
    cmd: FindCommand,
    spec: QuerySpec,
    ns: String,
) -> CommandResult {
    if cmd.tailable || cmd.return_key || !cmd.min.is_empty() || !cmd.max.is_empty() {
        return Err(CommandError::bad_value(
            "$text cannot be combined with tailable, returnKey, min or max",
        ));
    }
    let mut found = super::text::search(&req.node, coll, &spec, cmd.max_time).await?;
    if let Some(sort) = &spec.sort {
        found.sort_by(|a, b| sort.compare_scored((&a.1, a.0), (&b.1, b.0)));
    }
    respond_ranked(req, cmd, &spec.filter, found, true, ns).await
}

/// Answers a find whose documents were gathered and ordered in memory
/// (`$near`, `$text`): its `skip`, `limit` and projection, with each
/// document's score when `scored`, from one buffered cursor.
async fn respond_ranked(
    req: &Request,
    cmd: FindCommand,
    filter: &ebb_lang::query::filter::Filter,
    found: Vec<(f64, RawDocumentBuf)>,
    scored: bool,
    ns: String,
) -> CommandResult {
    let projection = cmd
        .projection
        .map(|p| p.collated(filter.collation().cloned()));
    let skip = usize::try_from(cmd.skip).unwrap_or(usize::MAX);
    let take = cmd
        .limit
        .map_or(usize::MAX, |l| usize::try_from(l).unwrap_or(usize::MAX));
    let mut out = std::collections::VecDeque::new();
    for (rank, doc) in found.into_iter().skip(skip).take(take) {
        out.push_back(match &projection {
            Some(p) => p.apply_scored(&doc, filter, scored.then_some(rank))?,
            None => doc,
        });
    }
    let cursor = OpenCursor::new(ns, Source::Buffered(out), cursor_owner(req));
    let first = cmd.batch_size.unwrap_or(DEFAULT_FIRST_BATCH);
    respond(&req.node, cursor, first, true, cmd.single_batch).await
}

/// Who is opening a cursor: the connection, and the session the driver
/// named (`lsid.id`), whose end closes the cursor.
pub fn cursor_owner(req: &Request) -> Owner {
    let session = req
        .body
        .get_document("lsid")
        .ok()
        .and_then(|lsid| lsid.get_binary("id").ok())
        .map(|id| id.bytes.to_vec());
    Owner {
        connection: req.conn.id,
        session,
    }
}

/// `returnKey`'s shape: the key pattern of the plan's index (`{}` for a
/// collection scan). A collated index keys strings by sort keys, which
/// ebb cannot turn back into mongod's key strings, so it is refused.
fn return_key(
    meta: &ebb_storage::catalog::CollectionMeta,
    plan: &plan::Plan,
) -> CommandResult<FindProjection> {
    let index = plan
        .index_name()
        .and_then(|name| meta.indexes.iter().find(|i| i.name == name));
    let fields = match index {
        None => Vec::new(),
        Some(index) if index.is_geo() => {
            return Err(StorageError::not_implemented("returnKey on a geo index").into());
        }
        Some(index) if index.is_wildcard() => {
            return Err(StorageError::not_implemented("returnKey on a wildcard index").into());
        }
        Some(index) if index.extra.contains_key("collation") => {
            return Err(
                StorageError::not_implemented("returnKey on an index with a collation").into(),
            );
        }
        Some(index) => index
            .key
            .iter()
            .map(|(k, v)| (k.clone(), v.as_str() == Some(ebb_storage::catalog::HASHED)))
            .collect(),
    };
    Ok(FindProjection::index_key(fields)?)
}

/// Runs one batch of an open cursor and replies, registering or dropping
/// the cursor as needed. On a first batch `max_docs` 0 is `batchSize: 0`:
/// an empty batch and a live cursor, nothing run yet (mongod's find and
/// aggregate do the same); on a `getMore` it means no count limit.
pub async fn respond(
    node: &std::sync::Arc<NodeContext>,
    cursor: OpenCursor,
    max_docs: usize,
    first: bool,
    single_batch: bool,
) -> CommandResult {
    respond_as(node, None, cursor, max_docs, first, single_batch, None).await
}

/// [`respond`] for a cursor `id` already registered (a `getMore`);
/// `await_for` is how long an awaitData cursor waits for inserts when it
/// finds nothing new.
async fn respond_as(
    node: &std::sync::Arc<NodeContext>,
    id: Option<i64>,
    cursor: OpenCursor,
    max_docs: usize,
    first: bool,
    single_batch: bool,
    await_for: Option<std::time::Duration>,
) -> CommandResult {
    if first && max_docs == 0 {
        let ns = cursor.ns.clone();
        let id = if single_batch {
            0
        } else {
            node.cursors.register(cursor)
        };
        return cursor_reply(id, &ns, Vec::new(), true);
    }
    let limits = BatchLimits {
        max_docs: if max_docs == 0 { usize::MAX } else { max_docs },
        max_bytes: MAX_BATCH_BYTES,
    };
    // An awaitData getMore notes the inserts committed so far before it
    // reads, so one committed while it reads still wakes it.
    let mut inserted = match (&cursor.await_data, await_for) {
        (Some(a), Some(_)) => {
            let mut rx = a.inserted.clone();
            rx.borrow_and_update();
            Some(rx)
        }
        _ => None,
    };
    let (mut batch, mut exhausted, mut cursor) = next_batch(node, cursor, limits).await?;
    if let (Some(rx), Some(wait)) = (&mut inserted, await_for) {
        let deadline = tokio::time::Instant::now() + wait;
        while batch.is_empty() && !exhausted {
            match tokio::time::timeout_at(deadline, rx.changed()).await {
                Ok(Ok(())) => {
                    rx.borrow_and_update();
                    (batch, exhausted, cursor) = next_batch(node, cursor, limits).await?;
                }
                // Out of time, or the writer is gone (collection dropped).
                Ok(Err(_)) | Err(_) => break,
            }
        }
    }
    let positioned = match &cursor.source {
        Source::Query { query, .. } => !query.is_tailable() || query.positioned(),
        Source::Buffered(_) | Source::Changes(_) => true,
    };
    let ns = cursor.ns.clone();
    // A tailable cursor on an empty collection is not kept, as mongod
    // keeps one only when the collection has records.
    let id = if exhausted || single_batch || !positioned {
        0
    } else {
        match id {
            Some(id) => {
                node.cursors.put_back(id, cursor);
                id
            }
            None => node.cursors.register(cursor),
        }
    };
    cursor_reply(id, &ns, batch, first)
}

/// Runs one batch of `cursor`: (documents, whether it is exhausted, the
/// cursor).
async fn next_batch(
    node: &std::sync::Arc<NodeContext>,
    mut cursor: OpenCursor,
    limits: BatchLimits,
) -> CommandResult<(Vec<RawDocumentBuf>, bool, OpenCursor)> {
    Ok(match cursor.source {
        // Its getMore is `changes::get_more`'s.
        Source::Changes(_) => return Err(CommandError::internal()),
        Source::Buffered(mut queue) => {
            let mut batch = Vec::new();
            let mut bytes = 0;
            while batch.len() < limits.max_docs && bytes < limits.max_bytes {
                let Some(d) = queue.pop_front() else { break };
                bytes += d.as_bytes().len();
                batch.push(d);
            }
            let exhausted = queue.is_empty();
            cursor.source = Source::Buffered(queue);
            (batch, exhausted, cursor)
        }
        Source::Query {
            mut query,
            projection,
        } => {
            let point = query.is_point_lookup();
            let before = query.stats;
            let read = move |snap: &dyn ebb_storage::engine::Snapshot| {
                let found = query.next_batch(snap, limits)?;
                let batch: Vec<RawDocumentBuf> = match &projection {
                    Some(p) => found
                        .iter()
                        .map(|f| p.apply(&f.doc, query.filter()))
                        .collect::<Result<_, _>>()?,
                    None => found.into_iter().map(|f| f.doc).collect(),
                };
                Ok((query, projection, batch))
            };
            let (query, projection, batch) = if point {
                node.read(read).await?
            } else {
                node.scan(read).await?
            };
            crate::ops::note_examined(
                query.stats.keys_examined - before.keys_examined,
                query.stats.docs_examined - before.docs_examined,
                Some(query.plan_summary()),
            );
            let exhausted = query.exhausted();
            cursor.source = Source::Query { query, projection };
            (batch, exhausted, cursor)
        }
    })
}

const GET_MORE_ARGS: &[&str] = &[
    "collection",
    "batchSize",
    "term",
    "lastKnownCommittedOpTime",
];

pub async fn get_more(req: Request) -> CommandResult {
    let args = Args::parse(&req.body, GET_MORE_ARGS)?;
    let id = match args.command_value() {
        RawBsonRef::Int64(id) => id,
        other => return Err(args.wrong_type("getMore", &other, "type 'long'")),
    };
    let Some(coll) = args.str("collection")? else {
        return Err(args.missing("collection"));
    };
    let batch_size = args.non_negative("batchSize")?.unwrap_or(0) as usize;
    let max_time = query::max_time(&args)?;
    NodeContext::count(&req.node.opcounters.getmore, 1);
    let ns = format!("{}.{coll}", req.db);
    let Some(cursor) = req.node.cursors.take(id) else {
        return Err(CommandError::new(
            codes::CURSOR_NOT_FOUND,
            format!("cursor id {id} not found"),
        ));
    };
    if cursor.ns != ns {
        let msg = format!(
            "Requested getMore on namespace '{ns}', but cursor belongs to a different namespace {}",
            cursor.ns
        );
        req.node.cursors.put_back(id, cursor);
        return Err(CommandError::new(codes::UNAUTHORIZED, msg));
    }
    if matches!(cursor.source, Source::Changes(_)) {
        return crate::changes::get_more(&req.node, id, cursor, batch_size, max_time).await;
    }
    // The find's maxTimeMS carries over; a getMore's own is how long an
    // awaitData cursor waits for inserts (1 s by default, as in mongod).
    let await_for = match (&cursor.await_data, max_time) {
        (Some(_), wait) => Some(wait.unwrap_or(DEFAULT_AWAIT)),
        (None, Some(_)) => {
            req.node.cursors.put_back(id, cursor);
            return Err(CommandError::bad_value(
                "cannot set maxTimeMS on getMore command for a non-awaitData cursor",
            ));
        }
        (None, None) => None,
    };
    respond_as(
        &req.node,
        Some(id),
        cursor,
        batch_size,
        false,
        false,
        await_for,
    )
    .await
}

/// How long an awaitData `getMore` without `maxTimeMS` waits.
const DEFAULT_AWAIT: std::time::Duration = std::time::Duration::from_secs(1);

pub async fn kill_cursors(req: Request) -> CommandResult {
    let args = Args::parse(&req.body, &["cursors"])?;
    let Some(ids) = args.array("cursors")? else {
        return Err(args.missing("cursors"));
    };
    let mut killed = Vec::new();
    let mut not_found = Vec::new();
    for v in ids {
        if let RawBsonRef::Int64(id) = v? {
            if req.node.cursors.kill(id) {
                killed.push(id);
            } else {
                not_found.push(id);
            }
        }
    }
    ok(doc! {
        "cursorsKilled": killed,
        "cursorsNotFound": not_found,
        "cursorsAlive": [],
        "cursorsUnknown": [],
    })
}
