//! [`ReplicaSet`]: this node's membership of a replica set, as the node's
//! context holds it.

use std::time::Duration;

use ebb_repl::Replica;

/// This node's membership of a replica set.
pub struct ReplicaSet {
    /// `replication.repl_set_name`.
    pub name: String,
    pub replica: Replica,
    pub election_timeout: Duration,
    pub heartbeat: Duration,
}
