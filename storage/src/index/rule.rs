//! The expiry rule in one place: a document is due by a TTL index once a
//! Date its indexed field holds, plus the index's `expireAfterSeconds`, is
//! at or before now. Equivalently, every entry whose Date is at or before
//! `now - expireAfterSeconds` (the cutoff) is due. Arithmetic saturates:
//! dates near the ends of the i64 range neither wrap nor panic.

/// When a document indexed at `date_millis` falls due.
pub fn due_millis(date_millis: i64, expire_after_secs: i64) -> i64 {
    date_millis.saturating_add(expire_after_secs.saturating_mul(1000))
}

/// The latest Date that is due at `now_millis`.
pub fn cutoff_millis(now_millis: i64, expire_after_secs: i64) -> i64 {
    now_millis.saturating_sub(expire_after_secs.saturating_mul(1000))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn due_and_cutoff_agree_and_saturate() {
        assert_eq!(due_millis(1_000, 2), 3_000);
        assert_eq!(cutoff_millis(3_000, 2), 1_000);
        assert_eq!(due_millis(i64::MAX - 1, 10), i64::MAX);
        assert_eq!(cutoff_millis(i64::MIN + 1, 10), i64::MIN);
    }
}
