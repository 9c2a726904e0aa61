//! What every command handler shares: the request it receives, the
//! connection it came on, and the reply and name-checking helpers.

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;

use bson::{Document, RawArrayBuf, RawDocumentBuf, rawdoc};

use crate::auth::session::Session;
use crate::context::NodeContext;
use crate::error::{CommandError, CommandResult, codes};

/// The connection a command arrived on.
#[derive(Debug)]
pub struct ConnInfo {
    pub id: u32,
    pub peer: SocketAddr,
    /// Who the connection authenticated as, and any SASL conversation.
    pub auth: Session,
}

/// One command to execute.
pub struct Request {
    /// The database the command addresses (`$db`, or the OP_QUERY prefix).
    pub db: String,
    pub body: RawDocumentBuf,
    pub node: Arc<NodeContext>,
    pub conn: Arc<ConnInfo>,
    /// On a replica-set member applying a write: the time and ObjectIds
    /// the primary decided for it.
    pub decided: Option<ebb_lang::decided::Decided>,
}

impl Request {
    /// The write's time: what the primary decided, or the node's clock.
    pub fn now(&self) -> bson::DateTime {
        self.decided
            .as_ref()
            .map_or_else(|| self.node.shared.clock.now(), |d| d.at)
    }

    /// On a replica-set member applying an entry, what its catalog
    /// changes need of it: where their change-log rows go, and what the
    /// collections it creates take their UUIDs from (the seed the primary
    /// decided), so that every member gives them the same.
    pub fn applying(&self) -> Option<ebb_storage::changes::Applying> {
        let decided = self.decided.as_ref()?;
        let rider = decided.rider.as_ref()?;
        Some(ebb_storage::changes::Applying {
            ts: rider.ts,
            wall: rider.wall,
            seed: decided.ids.bytes(),
        })
    }
}

pub type Reply = Pin<Box<dyn Future<Output = CommandResult> + Send>>;
pub type Handler = fn(Request) -> Reply;

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

/// Refuses a write concern a standalone node cannot satisfy, as mongod
/// does before running the command: `w` above 1 (nothing else holds the
/// data), `w` outside 0..=50, or a tag mode other than `"majority"`.
pub fn check_write_concern(body: &bson::RawDocument) -> CommandResult<()> {
    let Some(bson::RawBsonRef::Document(wc)) = body.get("writeConcern")? else {
        return Ok(());
    };
    match wc.get("w")? {
        Some(
            w @ (bson::RawBsonRef::Int32(_)
            | bson::RawBsonRef::Int64(_)
            | bson::RawBsonRef::Double(_)),
        ) => {
            let n = crate::args::as_f64(w).unwrap_or(0.0).trunc() as i64;
            if !(0..=50).contains(&n) {
                return Err(CommandError::failed_to_parse(format!(
                    "w has to be a non-negative number and not greater than 50; found: {n}"
                )));
            }
            if n > 1 {
                return Err(CommandError::bad_value(
                    "cannot use 'w' > 1 when a host is not replicated",
                ));
            }
        }
        Some(bson::RawBsonRef::String(mode)) if mode != "majority" => {
            return Err(CommandError::bad_value(format!(
                "cannot use non-majority 'w' mode \"{mode}\" when a host is not a member of a replica set"
            )));
        }
        _ => {}
    }
    Ok(())
}
