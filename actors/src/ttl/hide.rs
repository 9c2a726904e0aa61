//! The node's [`HideDue`]: due documents are hidden as of the TTL
//! monitor's clock while the monitor runs and is enabled and
//! `ttl.hide_expired` is on. With `ttlMonitorEnabled: false` nothing
//! expires and nothing is hidden, as in mongod; on a node whose monitor does
//! not run (a former replica-set member) nothing is hidden either. Every
//! replica-set member runs the monitor (only the primary's deletes), so a
//! secondary hides by its own clock what its primary has yet to delete,
//! and never serves an expired document.

use std::sync::Arc;
use std::sync::atomic::Ordering::{Relaxed, SeqCst};

use ebb_storage::collection::HideDue;

use super::TtlState;
use crate::clock::Clock;
use crate::params::Params;

/// Hides due documents as the monitor would delete them now.
pub struct HideAsMonitor {
    pub clock: Arc<dyn Clock>,
    pub params: Arc<Params>,
    pub ttl: Arc<TtlState>,
    /// `ttl.hide_expired`.
    pub hide_expired: bool,
    /// This node is a replica-set member: its writes hide as their
    /// primary decided.
    pub member: bool,
}

impl std::fmt::Debug for HideAsMonitor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MonitorVisibility")
            .field("hide_expired", &self.hide_expired)
            .finish_non_exhaustive()
    }
}

impl HideDue for HideAsMonitor {
    fn hide_at(&self) -> Option<i64> {
        let hiding =
            self.hide_expired && self.ttl.running.load(SeqCst) && self.params.ttl_monitor_enabled();
        hiding.then(|| self.clock.now_millis())
    }

    fn writes_are_decided(&self) -> bool {
        self.member
    }

    fn note_hidden(&self, n: u64) {
        self.ttl.hidden_by_reads.fetch_add(n, Relaxed);
    }

    fn note_replaced(&self, n: u64) {
        self.ttl.replaced_by_writes.fetch_add(n, Relaxed);
        self.ttl.deleted_documents.fetch_add(n, Relaxed);
    }
}
