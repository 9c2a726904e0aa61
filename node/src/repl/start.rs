//! Starting this node as a replica-set member: its consensus, the way its
//! committed entries apply, how it reaches the other members, and the way
//! its TTL monitor's chunks go (through the log, while primary); then
//! following its standing for as long as it runs (its configuration, its
//! election, its topology version).

use std::sync::{Arc, Weak};

use ebb_repl::{Compaction, Replica, Role, Timing};
use ebb_storage::engine::Engine;
use tokio_rustls::TlsConnector;

use super::apply::NodeApply;
use super::expiry::{self, LoggedExpiry};
use super::local;
use super::noop;
use super::set::ReplicaSet;
use super::topology::Topology;
use super::transport::WireTransport;
use super::window;
use crate::context::NodeContext;

/// Starts this node as a member reachable at `host`, connecting to the
/// others through `tls` when given; committed writes apply to `node`.
pub async fn start(
    node: &Arc<NodeContext>,
    engine: Arc<dyn Engine>,
    host: &str,
    tls: Option<TlsConnector>,
) -> Result<Arc<ReplicaSet>, ebb_repl::StartError> {
    let config = &node.config.replication;
    let apply =
        Arc::new(NodeApply::new(Arc::clone(&engine)).map_err(ebb_repl::StartError::Storage)?);
    apply.attach(node);
    let crash_before_record = Arc::clone(&apply.crash_before_record);
    let timing = Timing {
        heartbeat: config.heartbeat,
        election: config.election_timeout,
    };
    let transport = WireTransport::new(node.internal_key.clone(), tls);
    let cut = Arc::clone(&transport.cut);
    let removed = Arc::clone(&transport.removed);
    let compaction = Compaction {
        dir: snapshots(&node.config),
        every: config.snapshot_every,
        keep: config.log_kept,
    };
    let replica = Replica::start(
        Arc::clone(&engine),
        host,
        timing,
        compaction,
        Arc::new(transport),
        apply,
    )
    .await?;
    tracing::info!(set = %config.repl_set_name, %host, "replica-set member started");
    let set = Arc::new(ReplicaSet {
        name: config.repl_set_name.clone(),
        replica,
        election_timeout: config.election_timeout,
        heartbeat: config.heartbeat,
        periodic_noop: config.periodic_noop,
        clock: node.shared.clock.clone(),
        hide_due: node.shared.hide_due.clone(),
        fault_points: config.fault_points,
        cut,
        crash_before_record,
        removed,
        topology: Topology::default(),
    });
    node.shared.expiry.attach(Arc::new(LoggedExpiry {
        set: Arc::downgrade(&set),
    }));
    tokio::spawn(follow(Arc::clone(node), Arc::clone(&set)));
    tokio::spawn(noop::periodic(Arc::downgrade(&set)));
    tokio::spawn(follow_topology(Arc::downgrade(&set)));
    tokio::spawn(window::keep(
        Arc::downgrade(&set),
        engine,
        config.oplog_size_mb.saturating_mul(1 << 20),
        config.oplog_min_retention,
    ));
    Ok(set)
}

/// Where a member keeps its snapshots.
pub fn snapshots(config: &ebb_config::Config) -> std::path::PathBuf {
    config.storage.path.join("snapshots")
}

/// Follows this member's standing for as long as the node runs: records
/// each new configuration in `local.system.replset`, and once the member
/// is elected writes its first no-op and wakes the TTL monitor.
async fn follow(node: Arc<NodeContext>, set: Arc<ReplicaSet>) {
    let mut standing = set.replica.standing();
    let mut recorded = None;
    let mut elected_in = None;
    loop {
        let view = set.replica.view();
        if view.role != Role::Uninitiated && recorded != Some(view.config_index) {
            match local::record(&node, &set, &view).await {
                Ok(()) => recorded = Some(view.config_index),
                Err(e) => tracing::warn!(error = ?e, "cannot record the set's configuration"),
            }
        }
        if view.role == Role::Primary {
            if elected_in != Some(view.term) {
                elected_in = Some(view.term);
                noop::elected(&set);
            }
            expiry::wake_as_primary(&node, &set).await;
        }
        standing.changed().await;
    }
}

/// What `hello` shows of the set: when it changes, so does the topology
/// version.
fn hello_shape(set: &ReplicaSet) -> (Role, bool, Option<String>, u64, bool, u64) {
    let view = set.replica.view();
    let removed = set.is_removed(&view);
    let term = if view.role == Role::Primary {
        view.term
    } else {
        0
    };
    let leader = view.leader.map(|m| m.host);
    (
        view.role,
        view.writable,
        leader,
        view.config_index,
        removed,
        term,
    )
}

/// How often whether the primary may take writes is looked at: it changes
/// with time (a quorum's answers), not only with the member's standing,
/// and a new primary is writable a round trip after its election, which
/// drivers waiting in an awaitable `hello` should learn at once.
const WRITABLE_CHECK: std::time::Duration = std::time::Duration::from_millis(20);

/// Counts the changes of what `hello` shows for as long as the node runs.
async fn follow_topology(set: Weak<ReplicaSet>) {
    let Some(first) = set.upgrade() else {
        return;
    };
    let mut standing = first.replica.standing();
    let every = WRITABLE_CHECK.min(first.heartbeat);
    let mut seen = hello_shape(&first);
    drop(first);
    loop {
        tokio::select! {
            () = standing.changed() => {}
            () = tokio::time::sleep(every) => {}
        }
        let Some(set) = set.upgrade() else {
            return;
        };
        let now = hello_shape(&set);
        if now != seen {
            seen = now;
            set.topology.changed();
        }
    }
}
