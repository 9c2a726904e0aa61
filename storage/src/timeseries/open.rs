//! The open buckets of a time-series collection, kept in memory between
//! insert statements (each column with its encoder state) so that adding
//! to a bucket neither decodes nor re-encodes what it holds.
//!
//! An entry holds the bytes the bucket was last written as; it is used
//! only when the stored record still has exactly those bytes, so a bucket
//! changed any other way (a delete, expiry, a write that failed to commit)
//! is simply decoded again. Only the collection's writer uses it.

use std::collections::HashMap;
use std::sync::Mutex;

use super::bucket::Bucket;

/// More open buckets than this and the cache starts over (it only saves
/// decoding).
const MAX_OPEN: usize = 20_000;

/// A bucket as last written: its record bytes and the bucket decoded.
type Written = (Vec<u8>, Bucket);

#[derive(Debug, Default)]
pub struct OpenBuckets {
    by_key: Mutex<HashMap<Vec<u8>, Written>>,
}

impl OpenBuckets {
    /// The decoded bucket stored under `key`, if `stored` is what it was
    /// last written as.
    pub fn take(&self, key: &[u8], stored: &[u8]) -> Option<Bucket> {
        let mut map = self.by_key.lock().ok()?;
        match map.remove(key) {
            Some((bytes, bucket)) if bytes == stored => Some(bucket),
            _ => None,
        }
    }

    /// Remembers the bucket written under `key` as `bytes`.
    pub fn put(&self, key: Vec<u8>, bytes: Vec<u8>, bucket: Bucket) {
        if let Ok(mut map) = self.by_key.lock() {
            if map.len() >= MAX_OPEN {
                map.clear();
            }
            map.insert(key, (bytes, bucket));
        }
    }
}
