//! [`ReplicaSet`]: this node's membership of a replica set, as the node's
//! context holds it.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use ebb_actors::clock::Clock;
use ebb_repl::{Replica, Role, View};
use ebb_storage::collection::HideDue;

use super::topology::Topology;

/// This node's membership of a replica set.
pub struct ReplicaSet {
    /// `replication.repl_set_name`.
    pub name: String,
    pub replica: Replica,
    pub election_timeout: Duration,
    pub heartbeat: Duration,
    /// `replication.periodic_noop`.
    pub periodic_noop: Duration,
    /// The node's clock: the time a write is given as the primary accepts
    /// it.
    pub clock: Arc<dyn Clock>,
    /// Whether the node hides due documents now: a write the primary
    /// accepts hides them on every member as of its time, or on none.
    pub hide_due: Arc<dyn HideDue>,
    /// `replication.fault_points`: `configureFailPoint` may cut this
    /// member off.
    pub fault_points: bool,
    /// The `ebbCutReplication` fail point: no message to or from the other
    /// members while it is on.
    pub cut: Arc<AtomicBool>,
    /// The `ebbCrashBeforeRetryRecord` fail point (`apply`).
    pub crash_before_record: Arc<AtomicBool>,
    /// Whether a member refused this one's vote as not in the set's
    /// configuration (it was removed), until a leader sends it the log.
    pub removed: Arc<AtomicBool>,
    /// What `hello` shows, versioned for the awaitable `hello`.
    pub topology: Topology,
}

impl ReplicaSet {
    /// Whether this member, as `view` shows it, was removed from the set
    /// (a primary is in its own configuration, whatever a vote said).
    pub fn is_removed(&self, view: &View) -> bool {
        view.role != Role::Primary && self.removed.load(Ordering::Relaxed)
    }
}
