//! Time as the TTL monitor and the write path see it.
//!
//! BSON dates are wall-clock milliseconds, so expiry is decided against a
//! wall clock; but tests must be able to move it. Everything that asks
//! "what time is it" for expiry or `$currentDate` goes through [`Clock`].
//! A clock that can jump also says so, so a sleeping monitor re-plans at
//! once instead of waiting out a timer computed from the old time.

use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use tokio::sync::watch;

/// A source of wall-clock time in milliseconds since the Unix epoch.
pub trait Clock: Send + Sync + 'static {
    fn now_millis(&self) -> i64;

    /// A channel that changes whenever the clock jumps (None for the
    /// system clock, which only flows). A watcher marks the value seen
    /// before planning, so a jump during planning is never missed.
    fn jumps(&self) -> Option<watch::Receiver<i64>> {
        None
    }

    fn now(&self) -> bson::DateTime {
        bson::DateTime::from_millis(self.now_millis())
    }
}

/// The operating system's clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_millis(&self) -> i64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_millis() as i64)
            .unwrap_or(0)
    }
}

/// A clock that only moves when told to: for tests.
#[derive(Debug)]
pub struct ManualClock {
    millis: AtomicI64,
    jumped: watch::Sender<i64>,
}

impl ManualClock {
    pub fn new(start_millis: i64) -> Self {
        ManualClock {
            millis: AtomicI64::new(start_millis),
            jumped: watch::Sender::new(start_millis),
        }
    }

    /// Starts at the current system time.
    pub fn starting_now() -> Self {
        Self::new(SystemClock.now_millis())
    }

    pub fn advance(&self, by: std::time::Duration) {
        let by = by.as_millis() as i64;
        let now = self.millis.fetch_add(by, Ordering::SeqCst) + by;
        self.jumped.send_replace(now);
    }

    pub fn set(&self, millis: i64) {
        self.millis.store(millis, Ordering::SeqCst);
        self.jumped.send_replace(millis);
    }
}

impl Clock for ManualClock {
    fn now_millis(&self) -> i64 {
        self.millis.load(Ordering::SeqCst)
    }

    fn jumps(&self) -> Option<watch::Receiver<i64>> {
        Some(self.jumped.subscribe())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manual_clock_moves_only_when_told() {
        let c = ManualClock::new(1_000);
        assert_eq!(c.now_millis(), 1_000);
        c.advance(std::time::Duration::from_secs(2));
        assert_eq!(c.now().timestamp_millis(), 3_000);
        c.set(-5);
        assert_eq!(c.now_millis(), -5);
    }
}
