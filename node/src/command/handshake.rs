//! `hello` / `isMaster` / `ismaster`: how drivers discover what we are.
//!
//! A standalone, field for field as drivers require (see the wire-protocol
//! spec §2.2), and on a replica-set member its set's fields (`repl::commands`): int32 size limits (the configured message limit), wire versions 0..21 (MongoDB 7.0), a
//! session timeout so drivers use sessions, and no `compression`. A member
//! adds its `topologyVersion` and answers an awaitable `hello`
//! (`topologyVersion` and `maxAwaitTimeMS`) when what it says changes
//! (`repl::topology`); a standalone shows none, so drivers poll it, and
//! answers such a `hello` at once.

use bson::{RawBsonRef, doc};
use ebb_config::limits::{MAX_BSON_OBJECT_BYTES, MAX_WRITE_BATCH_SIZE};

use super::{Request, ok};
use crate::error::CommandResult;

pub const MIN_WIRE_VERSION: i32 = 0;
pub const MAX_WIRE_VERSION: i32 = 21;

/// `hello`.
pub async fn hello(req: Request) -> CommandResult {
    reply(req, false).await
}

/// `isMaster` / `ismaster`: `hello`'s legacy spelling, answering
/// `ismaster` (and `helloOk` when asked) instead of `isWritablePrimary`.
pub async fn is_master(req: Request) -> CommandResult {
    reply(req, true).await
}

async fn reply(req: Request, legacy: bool) -> CommandResult {
    let hello_ok = matches!(req.body.get("helloOk"), Ok(Some(RawBsonRef::Boolean(true))));
    let awaited = crate::repl::topology::awaited(&req.body)?;
    let (writable, set) = match req.node.replica_set() {
        Some(set) => {
            if let Some(awaited) = &awaited {
                set.topology.wait(awaited).await?;
            }
            let (writable, mut fields) = crate::repl::commands::hello_fields(set);
            fields.insert("topologyVersion", set.topology.version());
            (writable, Some(fields))
        }
        None => (true, None),
    };
    let mut d = doc! {};
    if legacy {
        d.insert("ismaster", writable);
    } else {
        d.insert("isWritablePrimary", writable);
    }
    if let Some(fields) = set {
        d.extend(fields);
    }
    if legacy && hello_ok {
        d.insert("helloOk", true);
    }
    d.extend(doc! {
        "maxBsonObjectSize": MAX_BSON_OBJECT_BYTES as i32,
        // The configured limit: a driver sizes its batches by it, so it
        // must never advertise more than the node accepts.
        "maxMessageSizeBytes": req.node.config.net.max_message_bytes as i32,
        "maxWriteBatchSize": MAX_WRITE_BATCH_SIZE as i32,
        "localTime": bson::DateTime::now(),
        "logicalSessionTimeoutMinutes": 30,
        "connectionId": req.conn.id as i32,
        "minWireVersion": MIN_WIRE_VERSION,
        "maxWireVersion": MAX_WIRE_VERSION,
        "readOnly": false,
    });
    super::sasl::hello_fields(&req, &mut d).await?;
    ok(d)
}
