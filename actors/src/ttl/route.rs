//! Where the monitor's chunks go. On a standalone, straight to the
//! collection's writer. On a replica-set member, through the set's log
//! ([`ExpiryRoute`], which the node provides): the chunk, cutoff and all,
//! is an entry every member applies to the same data, so every member
//! deletes the same documents and none decides by its own clock. Only a
//! writable primary sends chunks; on the other members the monitor's
//! passes delete nothing.

use std::sync::{Arc, OnceLock};

use futures::future::BoxFuture;

use ebb_storage::Result;
use ebb_storage::ttl::ExpireOutcome;

use crate::collection::ExpireChunk;

/// A replica set's way for TTL chunks.
pub trait ExpiryRoute: Send + Sync {
    /// Whether this member may expire documents now: it is the primary
    /// and a majority answered it recently.
    fn may_expire(&self) -> bool;

    /// Commits `chunk` of collection `db.collection` through the set and
    /// answers what applying it did here; `None` once this member no
    /// longer leads (the pass ends there).
    fn expire(
        &self,
        db: &str,
        collection: &str,
        chunk: ExpireChunk,
    ) -> BoxFuture<'_, Option<Result<ExpireOutcome>>>;
}

/// Whether this node is a replica-set member, and its route once the set
/// is running.
#[derive(Default)]
pub struct Routing {
    member: bool,
    route: OnceLock<Arc<dyn ExpiryRoute>>,
}

impl Routing {
    /// A replica-set member's: nothing expires until [`Routing::attach`].
    pub fn member() -> Routing {
        Routing {
            member: true,
            route: OnceLock::new(),
        }
    }

    /// Chunks go through `route` from now on.
    pub fn attach(&self, route: Arc<dyn ExpiryRoute>) {
        let _ = self.route.set(route);
    }

    /// The set's route; `None` on a standalone.
    pub fn route(&self) -> Option<&Arc<dyn ExpiryRoute>> {
        self.route.get()
    }

    /// Whether the monitor may delete now: always on a standalone, on a
    /// member only while it is a writable primary.
    pub fn may_expire(&self) -> bool {
        match self.route.get() {
            Some(route) => route.may_expire(),
            None => !self.member,
        }
    }

    pub fn is_member(&self) -> bool {
        self.member
    }
}
