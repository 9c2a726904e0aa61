//! Diagnostics: `serverStatus`, `currentOp`, `killOp`, `top`, `dbStats`, `collStats`.

use std::sync::atomic::Ordering;

use bson::{Document, RawDocumentBuf, doc};
use ebb_actors::collection::CollectionHandle;
use ebb_lang::encoding::display::number;

use super::admin::{VERSION, hostname};
use super::{Request, ok};
use crate::args::Args;
use crate::context::NodeContext;
use crate::error::{CommandError, CommandResult, codes};

fn load(c: &std::sync::atomic::AtomicU64) -> i64 {
    c.load(Ordering::Relaxed) as i64
}

pub async fn server_status(req: Request) -> CommandResult {
    let node = &req.node;
    let ttl = &node.shared.ttl;
    let ops = &node.opcounters;
    let uptime = node.started.elapsed();
    let writes = &node.shared.writes;
    ok(doc! {
        "host": format!("{}:{}", hostname(), node.config.net.port),
        "version": VERSION,
        "process": "ebbd",
        "pid": std::process::id() as i64,
        "uptime": uptime.as_secs_f64(),
        "uptimeMillis": uptime.as_millis() as i64,
        "uptimeEstimate": uptime.as_secs() as i64,
        "localTime": bson::DateTime::from_millis(node.shared.clock.now_millis()),
        "connections": {
            "current": load(&node.connections.current) as i32,
            "available": (node.config.net.max_connections as i64 - load(&node.connections.current)) as i32,
            "totalCreated": load(&node.connections.total_created),
        },
        "opcounters": {
            "insert": load(&ops.insert),
            "query": load(&ops.query),
            "update": load(&ops.update),
            "delete": load(&ops.delete),
            "getmore": load(&ops.getmore),
            "command": load(&ops.command),
        },
        "metrics": {
            "ttl": {
                "deletedDocuments": load(&ttl.deleted_documents),
                "passes": load(&ttl.passes),
                "subPasses": load(&ttl.sub_passes),
                // ebb's own: chunks sent to writers and the time they took.
                "chunks": load(&ttl.chunks),
                "chunkMicros": load(&ttl.chunk_micros),
                // ebb's own: under `ttl.overload = "throttle"`, the time
                // writers spent on chunks that made writes wait.
                "throttleMicros": load(&ttl.throttle_micros),
                // ebb's own: how writers ran them (planned off the writer,
                // planned ahead, or on the writer), the plans discarded, and
                // the chunks sent while the monitor kept up (`prompt`),
                // while it was seconds behind (`behind`) or to throttle
                // writes (`throttled`).
                "chunkRuns": ttl
                    .runs
                    .by_name()
                    .into_iter()
                    .map(|(name, value)| (name.to_owned(), load(value).into()))
                    .collect::<Document>(),
                // ebb's own: whether the monitor runs, how often it woke,
                // and when it plans to wake next (millis since the epoch).
                "monitorRunning": ttl.running.load(Ordering::Relaxed),
                "monitorWakeups": load(&ttl.wakeups),
                "nextWakeMillis": ttl.next_wake_millis.load(Ordering::Relaxed),
                // Due documents reads passed over before the monitor
                // deleted them (a scan of a TTL index starts past its due
                // entries and reads none of them, so counts none), and
                // those writes deleted because they held
                // the `_id` or unique key written (`ttl.hide_expired`).
                "hiddenByReads": load(&ttl.hidden_by_reads),
                "replacedByWrites": load(&ttl.replaced_by_writes),
                // ebb's own: index entries of expired documents the
                // writers' sweeps deleted after their chunks (`ttl::sweep`).
                "sweptEntries": load(&ttl.swept),
                // ebb's own: documents deleted applying the TTL chunks of
                // the set's log (on a secondary, the primary's expiry).
                "replicatedDeletes": load(&ttl.replicated_deletes),
            },
            "document": {
                "inserted": load(&writes.inserted),
                "updated": load(&writes.updated),
                "deleted": load(&writes.deleted),
            },
            "cursor": { "open": { "total": node.cursors.open_count() as i64 } },
        },
        "transactions": {
            "currentOpen": node.transactions.active() as i64,
            "totalStarted": load(&node.transactions.started),
            "totalCommitted": load(&node.transactions.committed),
            "totalAborted": load(&node.transactions.aborted),
        },
        "storageEngine": { "name": "rocksdb", "supportsCommittedReads": true, "persistent": true },
    })
}

/// `currentOp`: the running commands (every connection's with `$all`, this
/// connection's with `$ownOps`) and a running TTL pass, filtered by the
/// command's other fields as a query over the entries, as mongod does.
pub async fn current_op(req: Request) -> CommandResult {
    if req.db != "admin" {
        return Err(CommandError::new(
            codes::UNAUTHORIZED,
            "currentOp may only be run against the admin database.",
        ));
    }
    let args = Args::open(&req.body)?;
    let mut filter = RawDocumentBuf::new();
    let mut own_ops = false;
    for element in req.body.iter().skip(1) {
        let (key, value) = element?;
        match key.as_str() {
            "$all" => {}
            "$ownOps" => own_ops = args.bool("$ownOps")?.unwrap_or(false),
            name if crate::args::GENERIC.contains(&name) => {}
            _ => filter.append(key, value),
        }
    }
    let filter = ebb_lang::query::Filter::parse(&filter)?;
    let entries = operations(&req.node, own_ops.then_some(req.conn.id));
    let mut inprog = Vec::new();
    for entry in entries {
        if filter.matches(&RawDocumentBuf::try_from(&entry)?)? {
            inprog.push(entry);
        }
    }
    ok(doc! { "inprog": inprog })
}

/// The running operations, as `currentOp` and `$currentOp` show them:
/// the commands of connection `only_connection` (every connection's when
/// None) and, for every connection, a running TTL pass and the open
/// transactions between their statements.
pub fn operations(node: &NodeContext, only_connection: Option<u32>) -> Vec<Document> {
    let mut entries = node.ops.describe(only_connection);
    let op = node.shared.ttl.current.lock().expect("ttl op lock").clone();
    if let Some(op) = op.filter(|_| only_connection.is_none()) {
        let secs = (node.shared.clock.now_millis() - op.started_millis).max(0) / 1000;
        entries.push(doc! {
            "type": "op",
            "desc": "TTLMonitor",
            "active": true,
            "op": "remove",
            "ns": op.ns,
            "secs_running": secs,
            "command": { "delete": "", "index": op.index, "ttl": true },
            "numDeleted": op.deleted as i64,
        });
    }
    if only_connection.is_none() {
        entries.extend(
            node.transactions
                .describe(crate::txn::lifetime(&node.shared.params)),
        );
    }
    entries
}

/// `top`: time and operations per collection since the node started.
pub async fn top(req: Request) -> CommandResult {
    if req.db != "admin" {
        return Err(CommandError::new(
            codes::UNAUTHORIZED,
            "top may only be run against the admin database.",
        ));
    }
    Args::parse(&req.body, &[])?;
    let node = &req.node;
    let totals = node.top.report(|ns| {
        ns.split_once('.')
            .is_some_and(|(db, coll)| node.collection(db, coll).is_some())
    });
    ok(doc! { "totals": totals })
}

/// `killOp`: stops the operation with that opid at its next check (it
/// fails with Interrupted); reports success whether or not it ran, as
/// mongod does.
pub async fn kill_op(req: Request) -> CommandResult {
    if req.db != "admin" {
        return Err(CommandError::new(
            codes::UNAUTHORIZED,
            "killOp may only be run against the admin database.",
        ));
    }
    let args = Args::parse(&req.body, &["op"])?;
    let opid = match args.get("op") {
        None => {
            return Err(CommandError::new(
                codes::NO_SUCH_KEY,
                "Missing expected field \"op\"",
            ));
        }
        Some(_) => args.i64("op")?.unwrap_or_default(),
    };
    let Ok(opid) = i32::try_from(opid) else {
        return Err(CommandError::new(
            codes::OP_ID_OUT_OF_RANGE,
            format!("invalid op : {opid}. Op ID cannot be represented with 32 bits"),
        ));
    };
    let killed = req.node.ops.kill(opid as u32);
    tracing::info!(opid, killed, "killOp");
    ok(doc! { "info": "attempting to kill op" })
}

/// Size figures of one collection, from engine estimates: documents,
/// data bytes, bytes per index, total index bytes.
fn collection_sizes(node: &NodeContext, handle: &CollectionHandle) -> (i64, i64, Document, i64) {
    let sizes = handle.sizes(node.shared.engine.as_ref());
    let mut index_sizes = Document::new();
    for (name, bytes) in &sizes.indexes {
        index_sizes.insert(name.clone(), *bytes as i64);
    }
    (
        sizes.documents as i64,
        sizes.data_bytes as i64,
        index_sizes,
        sizes.total_index_bytes() as i64,
    )
}

/// The `scale` of `dbStats`/`collStats`/`$collStats`: a number of at
/// least 1 that divides every byte figure (1 when absent).
pub fn scale(v: Option<bson::RawBsonRef<'_>>) -> CommandResult<i64> {
    let Some(v) = v else {
        return Ok(1);
    };
    match crate::args::as_f64(v) {
        Some(n) if n >= 1.0 => Ok(n as i64),
        Some(_) => Err(CommandError::bad_value("scale has to be >= 1")),
        None => Err(CommandError::new(
            codes::TYPE_MISMATCH,
            format!(
                "scale has to be a number, not {}",
                crate::args::type_name(&v)
            ),
        )),
    }
}

pub async fn db_stats(req: Request) -> CommandResult {
    let args = Args::parse(&req.body, &["scale", "freeStorage"])?;
    let scale = scale(args.get("scale"))?;
    let free_storage = match args.get("freeStorage") {
        Some(bson::RawBsonRef::Boolean(b)) => b,
        Some(v) => crate::args::as_f64(v).is_some_and(|n| n != 0.0),
        None => false,
    };
    let state = req.node.view.load();
    let (mut objects, mut data, mut indexes, mut index_size, mut collections) =
        (0i64, 0i64, 0i64, 0i64, 0i32);
    for e in state.in_db(&req.db) {
        let (count, size, _, idx) = collection_sizes(&req.node, e);
        objects += count;
        data += size;
        indexes += e.coll.meta.indexes.len() as i64;
        index_size += idx;
        collections += 1;
    }
    let mut reply = doc! {
        "db": req.db.clone(),
        "collections": collections,
        "views": 0,
        "objects": objects,
        "avgObjSize": if objects > 0 { data as f64 / objects as f64 } else { 0.0 },
        "dataSize": (data / scale) as f64,
        "storageSize": (data / scale) as f64,
        "indexes": indexes,
        "indexSize": (index_size / scale) as f64,
        "totalSize": ((data + index_size) / scale) as f64,
        "scaleFactor": scale,
    };
    // RocksDB reuses no freed pages in place: space freed by deletes is
    // returned by compaction, so there is never free storage to report.
    if free_storage {
        reply.insert("freeStorageSize", 0.0);
        reply.insert("indexFreeStorageSize", 0.0);
        reply.insert("totalFreeStorageSize", 0.0);
    }
    ok(reply)
}

/// A collection's size figures as `collStats` and `$collStats`'s
/// `storageStats` report them, byte figures divided by `scale`; `count` is
/// the exact number of documents.
pub fn storage_stats(
    node: &NodeContext,
    entry: &CollectionHandle,
    count: i64,
    scale: i64,
) -> Document {
    let (_, size, index_sizes, total_index) = collection_sizes(node, entry);
    let mut scaled_indexes = Document::new();
    for (name, v) in index_sizes {
        scaled_indexes.insert(name, v.as_i64().unwrap_or(0) / scale);
    }
    let mut stats = doc! {
        "size": size / scale,
        "count": count,
        "avgObjSize": if count > 0 { size / count } else { 0 },
        "storageSize": size / scale,
        "freeStorageSize": 0i64,
        "capped": entry.coll.capped.is_some(),
        "nindexes": entry.coll.meta.indexes.iter().filter(|i| !i.is_internal()).count() as i32,
        "indexBuilds": [],
        "totalIndexSize": total_index / scale,
        "totalSize": (size + total_index) / scale,
        "indexSizes": scaled_indexes,
        "scaleFactor": scale,
    };
    // mongod shows a capped collection's bounds (`max` 0 when not given).
    if let Some(capped) = entry.coll.capped {
        stats.insert("max", number(capped.max.unwrap_or(0)));
        stats.insert("maxSize", number(capped.size / scale));
    }
    stats
}

/// The exact number of documents of `entry`.
pub async fn exact_count(node: &NodeContext, entry: &CollectionHandle) -> CommandResult<i64> {
    let handle = entry.clone();
    node.scan(move |snap| Ok(handle.count(snap)? as i64)).await
}

/// `dataSize: "<db>.<coll>"`: the collection's documents and their bytes
/// (RocksDB's estimate, as `collStats`' `size`); a missing collection has
/// none. A key range (`keyPattern`, `min`, `max`) is refused, and so is a
/// namespace of another database than the one the command runs on, whose
/// privileges it is checked against.
pub async fn data_size(req: Request) -> CommandResult {
    let args = Args::parse(&req.body, &["keyPattern", "min", "max"])?;
    let ns = match args.get("dataSize") {
        Some(bson::RawBsonRef::String(ns)) => ns,
        Some(other) => {
            return Err(CommandError::new(
                codes::TYPE_MISMATCH,
                format!(
                    "The field 'dataSize' must be a string, but got {}",
                    crate::args::type_name(&other)
                ),
            ));
        }
        None => return Err(args.missing("dataSize")),
    };
    if ["keyPattern", "min", "max"]
        .iter()
        .any(|f| args.get(f).is_some())
    {
        return Err(CommandError::new(
            codes::NOT_IMPLEMENTED,
            "ebb's dataSize measures whole collections, not a key range (keyPattern, min, max)",
        ));
    }
    let Some((db, name)) = ns.split_once('.').filter(|(db, _)| *db == req.db) else {
        return Err(CommandError::new(
            codes::INVALID_NAMESPACE,
            format!(
                "dataSize runs on the database of its namespace: '{ns}' on '{}'",
                req.db
            ),
        ));
    };
    let started = std::time::Instant::now();
    let (count, size) = match req.node.collection(db, name) {
        Some(entry) => {
            let (_, size, _, _) = collection_sizes(&req.node, &entry);
            (exact_count(&req.node, &entry).await?, size)
        }
        None => (0, 0),
    };
    ok(doc! {
        "size": size,
        "numObjects": count,
        "millis": started.elapsed().as_millis() as i64,
    })
}

pub async fn coll_stats(req: Request) -> CommandResult {
    // `ebbExpiry` is ebb's: the TTL indexes and the documents each never
    // makes due, by reason (`expiry::of_collection`).
    let args = Args::parse(&req.body, &["scale", "ebbExpiry"])?;
    let scale = scale(args.get("scale"))?;
    let expiry = args.bool("ebbExpiry")?.unwrap_or(false);
    let name = args.collection()?;
    let Some(entry) = req.node.collection(&req.db, name) else {
        return Err(CommandError::new(
            codes::NAMESPACE_NOT_FOUND,
            format!("Collection [{}.{name}] not found.", req.db),
        ));
    };
    let count = exact_count(&req.node, &entry).await?;
    let mut reply = doc! { "ns": entry.coll.ns() };
    reply.extend(storage_stats(&req.node, &entry, count, scale));
    if expiry {
        reply.insert(
            "ebbExpiry",
            super::expiry::of_collection(&req, &entry.coll)?,
        );
    }
    ok(reply)
}
