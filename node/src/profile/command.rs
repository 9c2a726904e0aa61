//! The profile entry of one finished command, in mongod's shape (`op`,
//! `ns`, the command as sent, timing, examined counts, the reply's counts
//! or its error, the client and its user), recorded when the profiler
//! wants it. An `update` or `delete` is recorded one entry per statement,
//! as mongod records them (`statement`).

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use bson::RawDocumentBuf;

use super::record::write;
use super::settings::{entry, number, reply_counts};
use super::statement;
use crate::command::{ConnInfo, Op};
use crate::context::NodeContext;
use crate::error::{CommandError, CommandResult};
use crate::ops::OpStats;

/// A command that ran on a profiled database.
pub struct Ran<'a> {
    pub db: &'a str,
    pub op: Op,
    /// The collection the command names, if any.
    pub collection: Option<&'a str>,
    /// The command as sent.
    pub body: &'a RawDocumentBuf,
    pub reply: &'a CommandResult,
    pub elapsed: Duration,
    pub stats: &'a OpStats,
}

/// Records one command in `<db>.system.profile` if the profiler wants it.
pub async fn record_command(ctx: &Arc<NodeContext>, conn: &Arc<ConnInfo>, ran: Ran<'_>) {
    let Ran {
        db,
        op,
        collection,
        body,
        reply,
        elapsed,
        stats,
    } = ran;
    let ns = match collection {
        Some(coll) => format!("{db}.{coll}"),
        None => format!("{db}.$cmd"),
    };
    let millis = elapsed.as_millis() as i64;
    let notes = std::mem::take(&mut *stats.statements.lock().unwrap_or_else(|e| e.into_inner()));
    if reply.is_ok() && !notes.is_empty() {
        for note in notes {
            let mut entry = statement::entry(op, &ns, body, &note, millis, ctx.shared.clock.now());
            if let Some(e) = &note.error {
                error_fields(e, &mut entry);
            }
            submit(ctx, conn, db, entry, millis).await;
        }
        return;
    }
    let op = op.profile_name();
    let command = bson::Document::try_from(body.as_ref()).unwrap_or_default();
    let mut entry = entry(op, &ns, command, millis, ctx.shared.clock.now());
    let keys = stats.keys_examined.load(Ordering::Relaxed);
    let docs = stats.docs_examined.load(Ordering::Relaxed);
    let plan = stats
        .plan_summary
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone();
    if plan.is_some() || keys > 0 || docs > 0 {
        entry.insert("keysExamined", number(keys as i64));
        entry.insert("docsExamined", number(docs as i64));
    }
    match reply {
        Ok(reply) => {
            reply_counts(op, reply, &mut entry);
            entry.insert("responseLength", reply.as_bytes().len() as i32);
        }
        Err(e) => error_fields(e, &mut entry),
    }
    if let Some(plan) = plan {
        entry.insert("planSummary", plan);
    }
    submit(ctx, conn, db, entry, millis).await;
}

/// An error as the profile fields mongod writes for it.
fn error_fields(e: &CommandError, entry: &mut bson::Document) {
    entry.insert("ok", 0.0);
    entry.insert("errMsg", e.errmsg.clone());
    entry.insert("errName", crate::error::code_name(e.code));
    entry.insert("errCode", e.code);
}

/// Adds the fields every entry ends with (the client and its user) and
/// writes the entry if the profiler wants it.
async fn submit(
    ctx: &Arc<NodeContext>,
    conn: &Arc<ConnInfo>,
    db: &str,
    mut entry: bson::Document,
    millis: i64,
) {
    entry.insert("numYield", 0);
    entry.insert("protocol", "op_msg");
    entry.insert("client", conn.peer.ip().to_string());
    // mongod's `allUsers` and `user` ("name@db", or "" without one).
    let user = conn.auth.user();
    let all_users: Vec<bson::Document> = user
        .iter()
        .map(|u| bson::doc! { "user": u.name.user.clone(), "db": u.name.db.clone() })
        .collect();
    entry.insert("allUsers", all_users);
    entry.insert(
        "user",
        user.map_or_else(String::new, |u| format!("{}@{}", u.name.user, u.name.db)),
    );
    let Ok(raw) = RawDocumentBuf::try_from(&entry) else {
        return;
    };
    if ctx.profiler.wants(db, &raw, millis) {
        write(ctx, db, raw).await;
    }
}
