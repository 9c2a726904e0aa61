//! When the TTL monitor wakes next: the decision, with no runtime in it.
//!
//! MongoDB's monitor sleeps `ttlMonitorSleepSecs` between passes. With
//! prompt expiry (`ttl.prompt`, the default) ebb wakes earlier, when the
//! earliest Date entry of any TTL index falls due. After a pass in which an
//! index failed, the prompt wake-up backs off — 1 s, then 2 s, 4 s, …, up to
//! [`MAX_BACKOFF`] while failures go on — so a failing index cannot make
//! the monitor spin; the first clean pass resets it. The fixed interval
//! always applies, so the back-off never delays a pass beyond it.

use std::time::Duration;

/// The first delay after a pass with errors.
pub const FIRST_BACKOFF: Duration = Duration::from_secs(1);
/// The longest delay back-off reaches.
pub const MAX_BACKOFF: Duration = Duration::from_secs(60);

/// Consecutive passes that had errors.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    failed_passes: u32,
}

impl Backoff {
    /// Records how a pass went.
    pub fn record(&mut self, had_errors: bool) {
        self.failed_passes = if had_errors {
            self.failed_passes.saturating_add(1)
        } else {
            0
        };
    }

    /// How long to wait at least before the next pass (zero when healthy).
    pub fn delay(&self) -> Duration {
        match self.failed_passes {
            0 => Duration::ZERO,
            n => FIRST_BACKOFF
                .saturating_mul(1 << (n - 1).min(16))
                .min(MAX_BACKOFF),
        }
    }
}

/// What the next wake-up depends on.
#[derive(Debug, Clone, Copy)]
pub struct WakeInputs {
    /// The clock, in millis.
    pub now: i64,
    /// `ttlMonitorSleepSecs`.
    pub sleep_secs: i64,
    /// `ttlMonitorEnabled`.
    pub enabled: bool,
    /// `ttl.prompt`.
    pub prompt: bool,
    /// When the earliest TTL entry falls due, if any index has one.
    pub earliest_due: Option<i64>,
}

/// When to wake next, in millis on the same clock as `now`.
pub fn next_wake(inputs: WakeInputs, backoff: Backoff) -> i64 {
    let WakeInputs {
        now,
        sleep_secs,
        enabled,
        prompt,
        earliest_due,
    } = inputs;
    let interval = now.saturating_add(sleep_secs.saturating_mul(1000));
    match earliest_due {
        Some(due) if enabled && prompt => {
            let not_before = now.saturating_add(backoff.delay().as_millis() as i64);
            interval.min(due.max(not_before))
        }
        _ => interval,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inputs(earliest_due: Option<i64>) -> WakeInputs {
        WakeInputs {
            now: 100_000,
            sleep_secs: 60,
            enabled: true,
            prompt: true,
            earliest_due,
        }
    }

    #[test]
    fn prompt_expiry_wakes_when_the_earliest_entry_falls_due() {
        let healthy = Backoff::default();
        assert_eq!(next_wake(inputs(Some(100_250)), healthy), 100_250);
        // Already due: wake at once.
        assert_eq!(next_wake(inputs(Some(5)), healthy), 100_000);
        // Never later than the fixed interval.
        assert_eq!(next_wake(inputs(Some(10_000_000)), healthy), 160_000);
        assert_eq!(next_wake(inputs(None), healthy), 160_000);
    }

    #[test]
    fn mongodb_interval_without_prompt_expiry_or_when_disabled() {
        let i = WakeInputs {
            prompt: false,
            ..inputs(Some(100_250))
        };
        assert_eq!(next_wake(i, Backoff::default()), 160_000);
        let i = WakeInputs {
            enabled: false,
            ..inputs(Some(100_250))
        };
        assert_eq!(next_wake(i, Backoff::default()), 160_000);
    }

    #[test]
    fn back_off_after_an_error_doubles_and_resets_on_a_clean_pass() {
        let mut b = Backoff::default();
        b.record(true);
        // A due entry does not make a failing monitor spin.
        assert_eq!(next_wake(inputs(Some(0)), b), 101_000);
        b.record(true);
        assert_eq!(next_wake(inputs(Some(0)), b), 102_000);
        b.record(true);
        assert_eq!(b.delay(), Duration::from_secs(4));
        for _ in 0..40 {
            b.record(true);
        }
        assert_eq!(b.delay(), MAX_BACKOFF);
        // The interval still bounds it.
        assert_eq!(next_wake(inputs(Some(0)), b), 160_000);
        b.record(false);
        assert_eq!(b.delay(), Duration::ZERO);
        assert_eq!(next_wake(inputs(Some(0)), b), 100_000);
    }
}
