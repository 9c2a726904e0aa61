//! [`ReplicaSet`]: this node's membership of a replica set, as the node's
//! context holds it.

use std::sync::Arc;
use std::time::Duration;

use ebb_actors::clock::Clock;
use ebb_repl::Replica;

/// This node's membership of a replica set.
pub struct ReplicaSet {
    /// `replication.repl_set_name`.
    pub name: String,
    pub replica: Replica,
    pub election_timeout: Duration,
    pub heartbeat: Duration,
    /// The node's clock: the time a write is given as the primary accepts
    /// it.
    pub clock: Arc<dyn Clock>,
}
