//! Commands: one module per family, one dispatch table.
//!
//! A handler takes a [`Request`] (the command document, already framed and
//! validated as BSON), parses its arguments into a typed value (rejecting
//! unknown ones), executes it against the actors or a snapshot, and returns
//! the reply document. Errors become `{ok: 0}` replies in the connection
//! loop; they never close the connection.

pub mod admin;
pub mod aggregate;
pub mod collections;
pub mod count;
pub mod delete;
pub mod explain;
pub mod find;
pub mod find_and_modify;
pub mod handshake;
pub mod indexes;
pub mod insert;
pub mod params;
pub mod query;
pub mod status;
pub mod update;
pub mod write;

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;

use bson::{Document, RawArrayBuf, RawDocumentBuf, rawdoc};

use crate::context::NodeContext;
use crate::error::{CommandError, CommandResult, codes};

/// The connection a command arrived on.
#[derive(Debug)]
pub struct ConnInfo {
    pub id: u32,
    pub peer: SocketAddr,
}

/// One command to execute.
pub struct Request {
    /// The database the command addresses (`$db`, or the OP_QUERY prefix).
    pub db: String,
    pub body: RawDocumentBuf,
    pub node: Arc<NodeContext>,
    pub conn: Arc<ConnInfo>,
}

pub type Reply = Pin<Box<dyn Future<Output = CommandResult> + Send>>;
pub type Handler = fn(Request) -> Reply;

macro_rules! handler {
    ($f:path) => {
        (|r: Request| -> Reply { Box::pin($f(r)) }) as Handler
    };
}

/// The dispatch table: command name (case-sensitive, aliases spelled out)
/// to handler, in alphabetical order.
pub fn lookup(name: &str) -> Option<Handler> {
    Some(match name {
        "aggregate" => handler!(aggregate::aggregate),
        "buildInfo" | "buildinfo" => handler!(admin::build_info),
        "collMod" => handler!(indexes::coll_mod),
        "compact" => handler!(collections::compact),
        "connectionStatus" => handler!(admin::connection_status),
        "count" => handler!(count::count),
        "create" => handler!(collections::create),
        "createIndexes" => handler!(indexes::create_indexes),
        "currentOp" => handler!(status::current_op),
        "dbStats" | "dbstats" => handler!(status::db_stats),
        "collStats" => handler!(status::coll_stats),
        "delete" => handler!(delete::delete),
        "distinct" => handler!(count::distinct),
        "drop" => handler!(collections::drop),
        "dropDatabase" => handler!(collections::drop_database),
        "dropIndexes" | "deleteIndexes" => handler!(indexes::drop_indexes),
        "endSessions" | "killSessions" | "refreshSessions" | "killAllSessions" => {
            handler!(admin::sessions)
        }
        "explain" => handler!(explain::explain),
        "find" => handler!(find::find),
        "findAndModify" | "findandmodify" => handler!(find_and_modify::find_and_modify),
        "getCmdLineOpts" => handler!(admin::get_cmd_line_opts),
        "getLog" => handler!(admin::get_log),
        "getMore" => handler!(find::get_more),
        "getParameter" => handler!(params::get_parameter),
        "hello" | "isMaster" | "ismaster" => handler!(handshake::hello),
        "hostInfo" => handler!(admin::host_info),
        "insert" => handler!(insert::insert),
        "killCursors" => handler!(find::kill_cursors),
        "listCollections" => handler!(collections::list_collections),
        "listCommands" => handler!(admin::list_commands),
        "listDatabases" => handler!(collections::list_databases),
        "listIndexes" => handler!(indexes::list_indexes),
        "ping" => handler!(admin::ping),
        "renameCollection" => handler!(collections::rename_collection),
        "serverStatus" => handler!(status::server_status),
        "setParameter" => handler!(params::set_parameter),
        "update" => handler!(update::update),
        "whatsmyuri" => handler!(admin::whats_my_uri),
        _ => return None,
    })
}

/// Every command name, for `listCommands`.
pub const COMMAND_NAMES: &[&str] = &[
    "aggregate",
    "buildInfo",
    "collMod",
    "collStats",
    "compact",
    "connectionStatus",
    "count",
    "create",
    "createIndexes",
    "currentOp",
    "dbStats",
    "delete",
    "distinct",
    "drop",
    "dropDatabase",
    "dropIndexes",
    "endSessions",
    "explain",
    "find",
    "findAndModify",
    "getCmdLineOpts",
    "getLog",
    "getMore",
    "getParameter",
    "hello",
    "hostInfo",
    "insert",
    "isMaster",
    "killCursors",
    "killSessions",
    "listCollections",
    "listCommands",
    "listDatabases",
    "listIndexes",
    "ping",
    "refreshSessions",
    "renameCollection",
    "serverStatus",
    "setParameter",
    "update",
    "whatsmyuri",
];

/// MongoDB's reply to a command it does not know.
pub fn not_found(name: &str) -> CommandError {
    CommandError::new(
        codes::COMMAND_NOT_FOUND,
        format!("no such command: '{name}'"),
    )
}

/// A success reply: `d` plus `ok: 1.0`.
pub fn ok(mut d: Document) -> CommandResult {
    d.insert("ok", 1.0);
    RawDocumentBuf::try_from(&d).map_err(|e| {
        tracing::error!(error = %e, "reply is not valid BSON");
        CommandError::internal()
    })
}

/// A cursor reply: `{cursor: {firstBatch|nextBatch: [...], id, ns}, ok: 1}`.
pub fn cursor_reply(id: i64, ns: &str, batch: Vec<RawDocumentBuf>, first: bool) -> CommandResult {
    let mut docs = RawArrayBuf::new();
    for d in batch {
        docs.push(d);
    }
    let cursor = if first {
        rawdoc! { "firstBatch": docs, "id": id, "ns": ns }
    } else {
        rawdoc! { "nextBatch": docs, "id": id, "ns": ns }
    };
    Ok(rawdoc! { "cursor": cursor, "ok": 1.0 })
}

/// Checks a collection name as MongoDB does.
pub fn check_collection_name(db: &str, name: &str) -> CommandResult<()> {
    let invalid = name.is_empty()
        || name.contains('\0')
        || name.starts_with('.')
        || (name.contains('$') && !name.starts_with("system.") && !name.starts_with("oplog.$"));
    if invalid || db.len() + 1 + name.len() > 255 {
        return Err(CommandError::new(
            codes::INVALID_NAMESPACE,
            format!("Invalid collection name: {name}"),
        ));
    }
    Ok(())
}

/// Checks a database name as MongoDB does.
pub fn check_db_name(db: &str) -> CommandResult<()> {
    let bad = db.is_empty()
        || db.len() >= 64
        || db
            .chars()
            .any(|c| matches!(c, '/' | '\\' | '.' | ' ' | '"' | '$' | '\0'));
    if bad {
        return Err(CommandError::new(
            codes::INVALID_NAMESPACE,
            format!("Invalid database name: '{db}'"),
        ));
    }
    Ok(())
}
