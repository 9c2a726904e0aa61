//! Pacing TTL deletions to `ttl.max_deletes_per_sec`: after `n` deletions
//! the next chunk may start `n / rate` seconds later, and a chunk holds at
//! most 10 ms worth of deletions so the rate stays smooth. Unused credit is
//! capped at 100 ms, so a quiet period does not allow a burst.

use std::time::{Duration, Instant};

/// Credit a quiet period may bank.
const MAX_CREDIT: Duration = Duration::from_millis(100);

#[derive(Debug)]
pub struct Pacer {
    per_sec: u64,
    next: Instant,
}

impl Pacer {
    pub fn new(per_sec: u64) -> Self {
        Pacer {
            per_sec,
            next: Instant::now(),
        }
    }

    /// Whether no rate applies.
    pub fn unlimited(&self) -> bool {
        self.per_sec == 0
    }

    /// How long to wait before a chunk may start at `now`, and the chunk
    /// size to use given the visit's own `limit`.
    pub fn admit(&mut self, limit: u64, now: Instant) -> (Duration, u64) {
        if self.unlimited() {
            return (Duration::ZERO, limit.max(1));
        }
        if self.next + MAX_CREDIT < now {
            self.next = now - MAX_CREDIT;
        }
        let wait = self.next.saturating_duration_since(now);
        (wait, limit.min((self.per_sec / 100).max(1)).max(1))
    }

    /// Waits until a chunk may start; returns the chunk size to use.
    pub async fn wait_for(&mut self, limit: u64) -> u64 {
        let (wait, size) = self.admit(limit, Instant::now());
        if !wait.is_zero() {
            tokio::time::sleep(wait).await;
        }
        size
    }

    /// Records deletions made.
    pub fn spent(&mut self, deleted: u64) {
        if self.per_sec > 0 {
            self.next += Duration::from_secs_f64(deleted as f64 / self.per_sec as f64);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unlimited_never_waits() {
        let mut p = Pacer::new(0);
        let now = Instant::now();
        p.spent(1_000_000);
        assert_eq!(p.admit(1024, now), (Duration::ZERO, 1024));
    }

    #[test]
    fn a_rate_spaces_chunks_and_caps_their_size() {
        let mut p = Pacer::new(1000);
        let now = p.next;
        // 10 ms worth at 1000/s is 10 documents.
        assert_eq!(p.admit(1024, now), (Duration::ZERO, 10));
        p.spent(10);
        assert_eq!(p.admit(1024, now).0, Duration::from_millis(10));
    }

    #[test]
    fn quiet_periods_bank_at_most_a_hundred_milliseconds() {
        let mut p = Pacer::new(1000);
        let later = p.next + Duration::from_secs(10);
        assert_eq!(p.admit(1024, later).0, Duration::ZERO);
        p.spent(200);
        // 200 deletions cost 200 ms, of which 100 ms were banked.
        assert_eq!(p.admit(1024, later).0, Duration::from_millis(100));
    }
}
