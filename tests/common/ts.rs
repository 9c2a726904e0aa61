//! What the time-series tests share: a node on a manual clock starting at
//! a whole day, and Dates relative to it.

use std::sync::Arc;

use ebb_actors::clock::ManualClock;
use mongodb::bson::{Bson, DateTime};

use super::TestNode;

/// 2026-01-01T00:00:00Z: the manual clock's start.
pub const T0: i64 = 1_767_225_600_000;
pub const SEC: i64 = 1000;
pub const HOUR: i64 = 3600 * SEC;

/// The Date `ms` milliseconds after the epoch.
pub fn at(ms: i64) -> Bson {
    Bson::DateTime(DateTime::from_millis(ms))
}

/// A node whose clock stands at [`T0`] until a test moves it.
pub fn node() -> TestNode {
    TestNode::start_with_clock(Arc::new(ManualClock::new(T0)))
}
