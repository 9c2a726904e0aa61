//! What the node as a whole knows of its users beyond their documents: a
//! generation that moves whenever a user management command changes
//! `admin.system.users`, so connections reload the roles they cached, and
//! the lock that makes those commands' read-modify-write steps atomic.
//!
//! It holds no user data and does no I/O (`store.rs` does).

use std::sync::atomic::{AtomicU64, Ordering};

/// The node's user directory state (one per node, in `NodeContext`).
#[derive(Debug, Default)]
pub struct Directory {
    generation: AtomicU64,
    writes: tokio::sync::Mutex<()>,
}

impl Directory {
    /// The current generation: equal generations mean unchanged users.
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// Records that users changed.
    pub fn changed(&self) {
        self.generation.fetch_add(1, Ordering::AcqRel);
    }

    /// Serialises user management commands, so an `updateUser` never
    /// overwrites a concurrent `grantRolesToUser`.
    pub async fn lock(&self) -> tokio::sync::MutexGuard<'_, ()> {
        self.writes.lock().await
    }
}
