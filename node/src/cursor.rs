//! Open cursors: what `find`/`aggregate`/`listIndexes` leave for `getMore`.
//!
//! A cursor is a source of further batches plus its namespace. While a
//! `getMore` runs, its cursor is taken out of the table (a concurrent
//! `getMore` on the same id sees CursorNotFound, as MongoDB reports a
//! cursor in use); it goes back unless exhausted. Cursors idle longer than
//! the configured timeout are reaped.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{Duration, Instant};

use bson::RawDocumentBuf;
use ebb_storage::query::exec::QueryCursor;
use ebb_storage::query::find_projection::FindProjection;

/// Where a cursor's further results come from.
pub enum Source {
    /// A live query, resumed batch by batch on fresh snapshots.
    Query {
        query: Box<QueryCursor>,
        projection: Option<FindProjection>,
    },
    /// Results computed up front (aggregation output, listings).
    Buffered(std::collections::VecDeque<RawDocumentBuf>),
}

pub struct OpenCursor {
    pub ns: String,
    pub source: Source,
    last_used: Instant,
}

impl OpenCursor {
    pub fn new(ns: String, source: Source) -> Self {
        OpenCursor {
            ns,
            source,
            last_used: Instant::now(),
        }
    }
}

pub struct CursorManager {
    open: Mutex<HashMap<i64, OpenCursor>>,
    next_id: AtomicI64,
    idle_timeout: Duration,
}

impl CursorManager {
    pub fn new(idle_timeout: Duration) -> Self {
        // Ids start at a per-process offset so a client reconnecting to a
        // restarted node does not hit a new cursor with an old id.
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_micros() as i64)
            .unwrap_or(1)
            & 0x0000_7FFF_FFFF_FFFF;
        CursorManager {
            open: Mutex::new(HashMap::new()),
            next_id: AtomicI64::new(seed.max(1)),
            idle_timeout,
        }
    }

    /// Registers a cursor and returns its id (never 0).
    pub fn register(&self, cursor: OpenCursor) -> i64 {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        self.open.lock().expect("cursor table").insert(id, cursor);
        id
    }

    /// Takes a cursor out for a `getMore`.
    pub fn take(&self, id: i64) -> Option<OpenCursor> {
        self.open.lock().expect("cursor table").remove(&id)
    }

    /// Puts a cursor back after a `getMore` that did not exhaust it.
    pub fn put_back(&self, id: i64, mut cursor: OpenCursor) {
        cursor.last_used = Instant::now();
        self.open.lock().expect("cursor table").insert(id, cursor);
    }

    /// `killCursors`: whether the id was open.
    pub fn kill(&self, id: i64) -> bool {
        self.open
            .lock()
            .expect("cursor table")
            .remove(&id)
            .is_some()
    }

    pub fn open_count(&self) -> usize {
        self.open.lock().expect("cursor table").len()
    }

    /// Drops cursors idle past the timeout; returns how many.
    pub fn reap(&self) -> usize {
        let mut open = self.open.lock().expect("cursor table");
        let before = open.len();
        let timeout = self.idle_timeout;
        open.retain(|_, c| c.last_used.elapsed() < timeout);
        before - open.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn taken_cursor_is_not_found_until_put_back() {
        let m = CursorManager::new(Duration::from_secs(60));
        let id = m.register(OpenCursor::new(
            "db.c".into(),
            Source::Buffered(Default::default()),
        ));
        assert_ne!(id, 0);
        let c = m.take(id).unwrap();
        assert!(m.take(id).is_none());
        m.put_back(id, c);
        assert!(m.kill(id));
        assert!(!m.kill(id));
    }

    #[test]
    fn idle_cursors_are_reaped() {
        let m = CursorManager::new(Duration::ZERO);
        m.register(OpenCursor::new(
            "db.c".into(),
            Source::Buffered(Default::default()),
        ));
        assert_eq!(m.reap(), 1);
        assert_eq!(m.open_count(), 0);
    }
}
