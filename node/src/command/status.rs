//! Diagnostics: `serverStatus`, `currentOp`, `killOp`, `dbStats`, `collStats`.

use std::sync::atomic::Ordering;

use bson::{Document, RawDocumentBuf, doc};
use ebb_actors::collection::CollectionHandle;
use ebb_storage::encoding::display::number;

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
                // ebb's own: whether the monitor runs, how often it woke,
                // and when it plans to wake next (millis since the epoch).
                "monitorRunning": ttl.running.load(Ordering::Relaxed),
                "monitorWakeups": load(&ttl.wakeups),
                "nextWakeMillis": ttl.next_wake_millis.load(Ordering::Relaxed),
                // Due documents reads passed over before the monitor
                // deleted them, and those writes deleted because they held
                // the `_id` or unique key written (`ttl.hide_expired`).
                "hiddenByReads": load(&ttl.hidden_by_reads),
                "replacedByWrites": load(&ttl.replaced_by_writes),
            },
            "document": {
                "inserted": load(&writes.inserted),
                "updated": load(&writes.updated),
                "deleted": load(&writes.deleted),
            },
            "cursor": { "open": { "total": node.cursors.open_count() as i64 } },
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
    let filter = ebb_storage::query::Filter::parse(&filter)?;
    let node = &req.node;
    let mut entries = node.ops.describe(own_ops.then_some(req.conn.id));
    let op = node.shared.ttl.current.lock().expect("ttl op lock").clone();
    if let Some(op) = op.filter(|_| !own_ops) {
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
    let mut inprog = Vec::new();
    for entry in entries {
        if filter.matches(&RawDocumentBuf::try_from(&entry)?)? {
            inprog.push(entry);
        }
    }
    ok(doc! { "inprog": inprog })
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

pub async fn db_stats(req: Request) -> CommandResult {
    Args::parse(&req.body, &["scale", "freeStorage"])?;
    let state = req.node.view.load();
    let (mut objects, mut data, mut indexes, mut index_size, mut collections) =
        (0i64, 0i64, 0i64, 0i64, 0i32);
    for e in state.in_db(&req.db) {
        let (count, size, _, idx) = collection_sizes(&req.node, e);
        objects += count;
        data += size;
        indexes += e.set.meta.indexes.len() as i64;
        index_size += idx;
        collections += 1;
    }
    ok(doc! {
        "db": req.db.clone(),
        "collections": collections,
        "views": 0,
        "objects": objects,
        "avgObjSize": if objects > 0 { data as f64 / objects as f64 } else { 0.0 },
        "dataSize": data as f64,
        "storageSize": data as f64,
        "indexes": indexes,
        "indexSize": index_size as f64,
        "totalSize": (data + index_size) as f64,
        "scaleFactor": 1,
    })
}

pub async fn coll_stats(req: Request) -> CommandResult {
    let args = Args::parse(&req.body, &["scale"])?;
    let name = args.collection()?;
    let Some(entry) = req.node.collection(&req.db, name) else {
        return Err(CommandError::new(
            codes::NAMESPACE_NOT_FOUND,
            format!("Collection [{}.{name}] not found.", req.db),
        ));
    };
    let (count, size, index_sizes, total_index) = collection_sizes(&req.node, &entry);
    let mut reply = doc! {
        "ns": entry.set.ns(),
        "count": count,
        "size": size,
        "storageSize": size,
        "nindexes": entry.set.meta.indexes.len() as i32,
        "totalIndexSize": total_index,
        "totalSize": size + total_index,
        "indexSizes": index_sizes,
        "scaleFactor": 1,
        "capped": entry.set.capped.is_some(),
    };
    // mongod shows a capped collection's bounds (`max` 0 when not given).
    if let Some(capped) = entry.set.capped {
        reply.insert("max", number(capped.max.unwrap_or(0)));
        reply.insert("maxSize", number(capped.size));
    }
    ok(reply)
}
