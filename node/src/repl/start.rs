//! Starting this node as a replica-set member: its consensus, the way its
//! committed entries apply, and how it reaches the other members.

use std::sync::Arc;

use ebb_repl::{Replica, Timing};
use ebb_storage::engine::Engine;

use super::apply::NodeApply;
use super::set::ReplicaSet;
use super::transport::WireTransport;
use crate::context::NodeContext;

/// Starts this node as a member reachable at `host`; committed writes
/// apply to `node`.
pub async fn start(
    node: &Arc<NodeContext>,
    engine: Arc<dyn Engine>,
    host: &str,
) -> Result<Arc<ReplicaSet>, ebb_repl::StartError> {
    let config = &node.config.replication;
    let apply =
        Arc::new(NodeApply::new(Arc::clone(&engine)).map_err(ebb_repl::StartError::Storage)?);
    apply.attach(node);
    let timing = Timing {
        heartbeat: config.heartbeat,
        election: config.election_timeout,
    };
    let transport = Arc::new(WireTransport::default());
    let replica = Replica::start(engine, host, timing, transport, apply).await?;
    tracing::info!(set = %config.repl_set_name, %host, "replica-set member started");
    Ok(Arc::new(ReplicaSet {
        name: config.repl_set_name.clone(),
        replica,
        election_timeout: config.election_timeout,
        heartbeat: config.heartbeat,
        clock: node.shared.clock.clone(),
    }))
}
