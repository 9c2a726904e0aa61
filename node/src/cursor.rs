//! Open cursors: what `find`/`aggregate`/`listIndexes` leave for `getMore`.
//!
//! A cursor is a source of further batches plus its namespace. While a
//! `getMore` runs, its cursor is taken out of the table (a concurrent
//! `getMore` on the same id sees CursorNotFound, as MongoDB reports a
//! cursor in use); it goes back unless exhausted. Cursors idle longer than
//! the configured timeout are reaped. Each cursor remembers its [`Owner`]:
//! a connection may hold at most `cursors.max_per_connection` (opening one
//! more closes its least recently used), and ending a session
//! (`endSessions`, `killSessions`) closes the session's cursors, as mongod
//! does when a driver closes its client. A tailable awaitData cursor also
//! holds what its `getMore` waits on ([`AwaitData`]).

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{Duration, Instant};

use bson::RawDocumentBuf;
use ebb_lang::query::find_projection::FindProjection;
use ebb_storage::plan::exec::QueryCursor;

/// Where a cursor's further results come from.
pub enum Source {
    /// A live query, resumed batch by batch on fresh snapshots.
    Query {
        query: Box<QueryCursor>,
        projection: Option<Box<FindProjection>>,
    },
    /// Results computed up front (aggregation output, listings).
    Buffered(std::collections::VecDeque<RawDocumentBuf>),
    /// A change stream (`crate::changes`).
    Changes(Box<crate::changes::Stream>),
}

/// Who opened a cursor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Owner {
    pub connection: u32,
    /// The bytes of the command's `lsid.id` (drivers send one with every
    /// command, the implicit session), if any.
    pub session: Option<Vec<u8>>,
}

pub struct OpenCursor {
    pub ns: String,
    pub source: Source,
    pub owner: Owner,
    /// A tailable cursor's awaitData wait, if it has one.
    pub await_data: Option<AwaitData>,
    last_used: Instant,
}

/// What a tailable awaitData cursor's `getMore` waits on when it finds
/// nothing new: its collection's committed inserts.
pub struct AwaitData {
    pub inserted: tokio::sync::watch::Receiver<u64>,
}

impl OpenCursor {
    pub fn new(ns: String, source: Source, owner: Owner) -> Self {
        OpenCursor {
            ns,
            source,
            owner,
            await_data: None,
            last_used: Instant::now(),
        }
    }
}

pub struct CursorManager {
    open: Mutex<HashMap<i64, OpenCursor>>,
    next_id: AtomicI64,
    idle_timeout: Duration,
    max_per_connection: usize,
}

impl CursorManager {
    pub fn new(idle_timeout: Duration, max_per_connection: usize) -> Self {
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
            max_per_connection,
        }
    }

    /// Registers a cursor and returns its id (never 0). A connection already
    /// holding its maximum loses its least recently used cursor.
    pub fn register(&self, cursor: OpenCursor) -> i64 {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let mut open = self.open.lock().expect("cursor table");
        let connection = cursor.owner.connection;
        let held = open
            .iter()
            .filter(|(_, c)| c.owner.connection == connection);
        if held.clone().count() >= self.max_per_connection
            && let Some((_, oldest)) = held.map(|(id, c)| (c.last_used, *id)).min()
        {
            open.remove(&oldest);
            tracing::warn!(
                connection,
                cursor = oldest,
                "closed the connection's least recently used cursor: cursors.max_per_connection reached"
            );
        }
        open.insert(id, cursor);
        id
    }

    /// Closes the cursors opened in these sessions (`lsid.id` bytes);
    /// returns how many.
    pub fn end_sessions(&self, sessions: &[Vec<u8>]) -> usize {
        let mut open = self.open.lock().expect("cursor table");
        let before = open.len();
        open.retain(|_, c| {
            c.owner
                .session
                .as_ref()
                .is_none_or(|s| !sessions.contains(s))
        });
        before - open.len()
    }

    /// Closes every cursor opened in any session (`killAllSessions`).
    pub fn end_all_sessions(&self) -> usize {
        let mut open = self.open.lock().expect("cursor table");
        let before = open.len();
        open.retain(|_, c| c.owner.session.is_none());
        before - open.len()
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

    fn cursor(connection: u32, session: Option<u8>) -> OpenCursor {
        OpenCursor::new(
            "db.c".into(),
            Source::Buffered(Default::default()),
            Owner {
                connection,
                session: session.map(|s| vec![s]),
            },
        )
    }

    #[test]
    fn taken_cursor_is_not_found_until_put_back() {
        let m = CursorManager::new(Duration::from_secs(60), 10);
        let id = m.register(cursor(1, None));
        assert_ne!(id, 0);
        let c = m.take(id).unwrap();
        assert!(m.take(id).is_none());
        m.put_back(id, c);
        assert!(m.kill(id));
        assert!(!m.kill(id));
    }

    #[test]
    fn idle_cursors_are_reaped() {
        let m = CursorManager::new(Duration::ZERO, 10);
        m.register(cursor(1, None));
        assert_eq!(m.reap(), 1);
        assert_eq!(m.open_count(), 0);
    }

    #[test]
    fn a_connection_past_its_maximum_loses_its_least_recently_used_cursor() {
        let m = CursorManager::new(Duration::from_secs(60), 2);
        let first = m.register(cursor(1, None));
        let second = m.register(cursor(1, None));
        let other = m.register(cursor(2, None));
        // Using the first makes the second the least recently used.
        let c = m.take(first).unwrap();
        m.put_back(first, c);
        let third = m.register(cursor(1, None));
        assert!(m.take(second).is_none(), "closed");
        for id in [first, third, other] {
            assert!(m.take(id).is_some(), "{id} still open");
        }
    }

    #[test]
    fn ending_a_session_closes_its_cursors() {
        let m = CursorManager::new(Duration::from_secs(60), 10);
        let a = m.register(cursor(1, Some(1)));
        let b = m.register(cursor(2, Some(2)));
        let none = m.register(cursor(3, None));
        assert_eq!(m.end_sessions(&[vec![1], vec![9]]), 1);
        assert!(m.take(a).is_none());
        assert_eq!(m.end_all_sessions(), 1);
        assert!(m.take(b).is_none());
        assert!(m.take(none).is_some());
    }
}
