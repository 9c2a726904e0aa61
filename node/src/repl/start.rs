//! Starting this node as a replica-set member: its consensus, the way its
//! committed entries apply, how it reaches the other members, and the way
//! its TTL monitor's chunks go (through the log, while primary).

use std::sync::Arc;

use ebb_repl::{Replica, Role, Timing};
use ebb_storage::engine::Engine;

use super::apply::NodeApply;
use super::expiry::{self, LoggedExpiry};
use super::local;
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
    let transport = WireTransport::default();
    let cut = Arc::clone(&transport.cut);
    let removed = Arc::clone(&transport.removed);
    let replica = Replica::start(engine, host, timing, Arc::new(transport), apply).await?;
    tracing::info!(set = %config.repl_set_name, %host, "replica-set member started");
    let set = Arc::new(ReplicaSet {
        name: config.repl_set_name.clone(),
        replica,
        election_timeout: config.election_timeout,
        heartbeat: config.heartbeat,
        clock: node.shared.clock.clone(),
        hide_due: node.shared.hide_due.clone(),
        fault_points: config.fault_points,
        cut,
        removed,
    });
    node.shared.expiry.attach(Arc::new(LoggedExpiry {
        set: Arc::downgrade(&set),
    }));
    tokio::spawn(follow(Arc::clone(node), Arc::clone(&set)));
    Ok(set)
}

/// Follows this member's standing for as long as the node runs: records
/// each new configuration in `local.system.replset`, and wakes the TTL
/// monitor once the member is elected.
async fn follow(node: Arc<NodeContext>, set: Arc<ReplicaSet>) {
    let mut standing = set.replica.standing();
    let mut recorded = None;
    loop {
        let view = set.replica.view();
        if view.role != Role::Uninitiated && recorded != Some(view.config_index) {
            match local::record(&node, &set, &view).await {
                Ok(()) => recorded = Some(view.config_index),
                Err(e) => tracing::warn!(error = ?e, "cannot record the set's configuration"),
            }
        }
        if view.role == Role::Primary {
            expiry::wake_as_primary(&node, &set).await;
        }
        standing.changed().await;
    }
}
