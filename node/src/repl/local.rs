//! The set's configuration as this member last saw it, in
//! `local.system.replset`, where mongod keeps it. The `local` database is
//! never replicated: every member writes its own copy. A member later run
//! without `--replSet` finds it there and keeps its TTL monitor off, as
//! mongod does (`ebb_actors::runtime`).

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;

use bson::{RawDocumentBuf, rawdoc};
use ebb_repl::{Role, View};

use super::commands::config_doc;
use super::set::ReplicaSet;
use crate::command::{ConnInfo, Request};
use crate::context::NodeContext;
use crate::error::{CommandError, CommandResult};

/// Records `view`'s configuration of `set` on this member.
pub async fn record(node: &Arc<NodeContext>, set: &ReplicaSet, view: &View) -> CommandResult<()> {
    if view.role == Role::Uninitiated {
        return Ok(());
    }
    let config = RawDocumentBuf::try_from(&config_doc(set, view))?;
    let body = rawdoc! {
        "update": "system.replset",
        "updates": [{ "q": { "_id": set.name.as_str() }, "u": config, "upsert": true }],
    };
    let row = crate::command::lookup("update").ok_or_else(CommandError::internal)?;
    let request = Request {
        db: "local".to_owned(),
        body,
        node: Arc::clone(node),
        conn: Arc::new(ConnInfo {
            id: 0,
            peer: SocketAddr::from((Ipv4Addr::UNSPECIFIED, 0)),
            auth: Default::default(),
        }),
        decided: None,
    };
    (row.handler)(request).await.map(drop)
}
