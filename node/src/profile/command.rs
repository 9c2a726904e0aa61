//! The profile entry of one finished command, in mongod's shape (`op`,
//! `ns`, the command as sent, timing, examined counts, the reply's counts
//! or its error, the client and its user), recorded when the profiler
//! wants it.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use bson::RawDocumentBuf;

use super::record::write;
use super::settings::{entry, number, reply_counts};
use crate::command::{ConnInfo, Op};
use crate::context::NodeContext;
use crate::error::CommandResult;
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
    let op = op.profile_name();
    let millis = elapsed.as_millis() as i64;
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
        Err(e) => {
            entry.insert("ok", 0.0);
            entry.insert("errMsg", e.errmsg.clone());
            entry.insert("errName", crate::error::code_name(e.code));
            entry.insert("errCode", e.code);
        }
    }
    if let Some(plan) = plan {
        entry.insert("planSummary", plan);
    }
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
