//! Dispatch: one command document, from the connection loop to its reply.
//!
//! Looks the command up in the table, settles the database it addresses,
//! authorizes it (`auth::check`), refreshes its session, refuses what a
//! standalone cannot do (transactions, write concerns above `w: 1`), on a
//! replica-set member sends writes through the set's log and checks reads
//! against the read preference (`repl`), runs its handler under
//! `currentOp`, and keeps the books its row states:
//! opcounters, `top`, the latency histogram, the users cache, and the
//! profiler. Errors become `{ok: 0}` replies; they never close the
//! connection.

use std::sync::Arc;
use std::time::Instant;

use bson::{RawBsonRef, RawDocument, RawDocumentBuf};
use tracing::Instrument;

use super::common::{ConnInfo, Request, check_write_concern};
use super::row::{Command, OnASet, Op};
use super::table;
use crate::auth;
use crate::context::NodeContext;
use crate::error::{CommandError, CommandResult, codes};
use crate::profile;
use crate::top::Category;

/// Runs one command document (OP_MSG's body, `db` from its `$db`) and turns
/// any error into its reply.
pub async fn run(
    ctx: &Arc<NodeContext>,
    conn: &Arc<ConnInfo>,
    db: Option<String>,
    body: RawDocumentBuf,
) -> RawDocumentBuf {
    let name = command_name(&body);
    let command = table::lookup(&name);
    let span = tracing::debug_span!("command", name = %name);
    let target = accounted_to(db.as_deref(), &name, command, &body);
    // An awaitable `hello` waits by design: mongod keeps it out of the
    // latency figures, and so does ebb.
    let awaits = matches!(body.get("maxAwaitTimeMS"), Ok(Some(_)));
    async move {
        let started = Instant::now();
        let result = execute(ctx, conn, db, &name, command, body).await;
        let elapsed = started.elapsed();
        if !awaits {
            ctx.latencies
                .observe(if command.is_some() { &name } else { "unknown" }, elapsed);
        }
        // Accounted once the command ran, so the insert that created a
        // collection counts; commands naming no collection that exists
        // are not kept. A command the table does not know counts as an
        // ordinary command.
        if let Some((db, coll)) = target
            && ctx.collection(&db, &coll).is_some()
        {
            let category = command.map_or(Category::Command, |c| c.top);
            ctx.top.record(
                &format!("{db}.{coll}"),
                category,
                elapsed.as_micros() as u64,
            );
        }
        let elapsed_us = elapsed.as_micros() as u64;
        let mut reply = match result {
            Ok(reply) => {
                tracing::debug!(elapsed_us, "ok");
                reply
            }
            Err(e) => {
                tracing::debug!(elapsed_us, code = e.code, errmsg = %e.errmsg, "failed");
                e.to_reply()
            }
        };
        if let Some(set) = ctx.replica_set() {
            crate::repl::time::stamp(set, &mut reply);
        }
        reply
    }
    .instrument(span)
    .await
}

/// Runs a command that arrived as a legacy OP_QUERY on `<db>.$cmd`: only
/// the commands whose row allows it (the drivers' first handshake).
pub async fn run_op_query(
    ctx: &Arc<NodeContext>,
    conn: &Arc<ConnInfo>,
    db: &str,
    query: RawDocumentBuf,
) -> RawDocumentBuf {
    let name = command_name(&query);
    if table::lookup(&name).is_some_and(|c| c.op_query) {
        return run(ctx, conn, Some(db.to_owned()), query).await;
    }
    CommandError::new(
        codes::UNSUPPORTED_OP_QUERY_COMMAND,
        format!(
            "Unsupported OP_QUERY command: {name}. The client driver may require an upgrade. \
             For more details see https://dochub.mongodb.org/core/legacy-opcode-removal"
        ),
    )
    .to_reply()
}

/// The command's name: the document's first key ("" when it has none).
pub fn command_name(body: &RawDocument) -> String {
    body.iter()
        .next()
        .and_then(|e| e.ok())
        .map(|(k, _)| k.as_str().to_owned())
        .unwrap_or_default()
}

/// The collection command `name` runs on: the string in its row's
/// collection field, or else in its first field.
fn collection_of<'a>(
    name: &'a str,
    command: Option<&Command>,
    body: &'a RawDocument,
) -> Option<&'a str> {
    let field = command.and_then(|c| c.collection_field).unwrap_or(name);
    match body.get(field) {
        Ok(Some(RawBsonRef::String(coll))) => Some(coll),
        _ => None,
    }
}

/// The collection a command names, as `(db, collection)`: what `top`
/// accounts the command to.
fn accounted_to(
    db: Option<&str>,
    name: &str,
    command: Option<&Command>,
    body: &RawDocumentBuf,
) -> Option<(String, String)> {
    let db = match (db, body.get("$db")) {
        (Some(db), _) => db,
        (None, Ok(Some(RawBsonRef::String(db)))) => db,
        _ => return None,
    };
    collection_of(name, command, body).map(|coll| (db.to_owned(), coll.to_owned()))
}

async fn execute(
    ctx: &Arc<NodeContext>,
    conn: &Arc<ConnInfo>,
    db: Option<String>,
    name: &str,
    command: Option<&'static Command>,
    body: RawDocumentBuf,
) -> CommandResult {
    if name.is_empty() {
        return Err(CommandError::failed_to_parse("empty command document"));
    }
    let db = match db {
        Some(db) => db,
        None => match body.get("$db")? {
            Some(RawBsonRef::String(db)) => db.to_owned(),
            _ => {
                return Err(CommandError::new(
                    codes::OP_MSG_WITHOUT_DB,
                    "OP_MSG requests require a $db argument",
                ));
            }
        },
    };
    let Some(command) = command else {
        return Err(table::not_found(name));
    };
    auth::check::authorize(ctx, &conn.auth, conn.peer, &db, name, &body, || {
        command.need(&db, &body)
    })
    .await?;
    if command.touches_session {
        touch_session(ctx, conn, &body)?;
    }
    let set = ctx.replica_set();
    // A statement of a multi-document transaction (`crate::txn`).
    let asked = match crate::txn::statement::in_transaction(&body)? {
        true => Some(crate::txn::statement::parse(set, name, &body)?),
        false => None,
    };
    // The `local` database is this member's own: never replicated. A
    // transaction's statements write its overlay; its commit is the entry.
    let logged =
        asked.is_none() && set.is_some() && command.on_a_set == OnASet::Logged && db != "local";
    let retryable = logged;
    for field in ["startTransaction", "autocommit", "txnNumber"] {
        if asked.is_some() || body.get(field)?.is_none() || (field == "txnNumber" && retryable) {
            continue;
        }
        let errmsg = match set {
            None => "Transaction numbers are only allowed on a replica set member or mongos",
            Some(_) => "Transaction numbers are only allowed with the write commands",
        };
        return Err(CommandError::new(codes::ILLEGAL_OPERATION, errmsg));
    }
    match set {
        None => check_write_concern(&body)?,
        Some(_) if asked.is_some() => {}
        Some(_) if !logged && command.on_a_set == OnASet::Logged => {}
        Some(set) => match command.on_a_set {
            OnASet::Logged => {}
            OnASet::Local if command.reads() => crate::repl::check_read(set, &body)?,
            OnASet::Local => {}
        },
    }
    let data = command.reads() || command.on_a_set == OnASet::Logged;
    super::read_concern::check(set, name, &body, data, asked.is_some()).await?;
    // Started after the read concern's wait, so its snapshot holds what
    // the client asked to read after.
    let txn = match asked {
        Some(asked) => Some(
            ctx.transactions
                .enter(
                    asked,
                    ctx.shared.engine.clone(),
                    crate::txn::lifetime(&ctx.shared.params),
                )
                .map_err(|e| crate::txn::statement::labelled(e, false))?,
        ),
        None => None,
    };
    if command.op == Op::Command {
        NodeContext::count(&ctx.opcounters.command, 1);
    }
    let reloads_users = command.users.reloads(&db, &body);
    let running = ctx.ops.start(conn.id, conn.peer, &db, &body);
    // The command as sent, kept only when its database is profiled.
    let profiled = ctx.profiler.active(&db).then(|| (db.clone(), body.clone()));
    let started = Instant::now();
    let reply = if logged {
        let set = ctx
            .replica_set
            .get()
            .expect("a logged command runs on a set")
            .clone();
        running
            .scope(Box::pin(async move {
                crate::repl::replicate(&set, &db, body, command.log_form).await
            }))
            .await
    } else if let Some(txn) = txn {
        // One statement of a transaction at a time.
        let _turn = txn.turn.lock().await;
        let statement = (command.handler)(Request {
            db,
            body,
            node: ctx.clone(),
            conn: conn.clone(),
            decided: None,
        });
        let reply = running
            .scope(crate::txn::scope(txn.clone(), statement))
            .await;
        crate::txn::statement::after(&ctx.transactions, &txn, name, reply)
    } else {
        running
            .scope((command.handler)(Request {
                db,
                body,
                node: ctx.clone(),
                conn: conn.clone(),
                decided: None,
            }))
            .await
    };
    if reloads_users {
        ctx.users.changed();
    }
    if let Some((db, body)) = profiled {
        let ran = profile::Ran {
            db: &db,
            op: command.op,
            collection: collection_of(name, Some(command), &body),
            body: &body,
            reply: &reply,
            elapsed: started.elapsed(),
            stats: running.stats(),
        };
        profile::record_command(ctx, conn, ran).await;
    }
    reply
}

/// Refreshes the session the command's `lsid` names, if any.
fn touch_session(ctx: &NodeContext, conn: &ConnInfo, body: &RawDocument) -> CommandResult<()> {
    let Ok(lsid) = body.get_document("lsid") else {
        return Ok(());
    };
    let Ok(id) = lsid.get_binary("id") else {
        return Ok(());
    };
    let user = conn.auth.user().map(|u| u.name);
    let now = ctx.shared.clock.now_millis();
    if ctx.sessions.touch(id.bytes, user, now).is_err() {
        return Err(CommandError::new(
            codes::TOO_MANY_LOGICAL_SESSIONS,
            format!(
                "Unable to add session into the cache because the number of active sessions \
                 is too high ({} sessions)",
                crate::sessions::MAX_SESSIONS
            ),
        ));
    }
    Ok(())
}
