//! The database profiler: which operations are recorded (`profile`
//! command: a level per database — 0 off, 1 slow or filtered, 2 all —
//! with the node-wide `slowms` and `sampleRate`, and a per-database
//! `filter`), the entries in mongod's shape, and writing them to
//! `<db>.system.profile`, a capped collection of 1 MiB created on the
//! first write as mongod creates it.
//!
//! Entries are written through the collection's writer after the
//! operation, before its reply, so a client that reads `system.profile`
//! after an operation finds it. Operations on `system.profile` itself are
//! not recorded, as in mongod. This module decides nothing about
//! permissions: the `profile` command's own check does.

use std::collections::HashMap;
use std::sync::Mutex;

use bson::{Bson, Document, RawDocumentBuf, doc};
use ebb_actors::catalog::CreateCollection;
use ebb_actors::collection::InsertDocs;
use ebb_storage::capped::CappedOptions;
use ebb_storage::query::filter::Filter;

use crate::context::NodeContext;

/// The profile collection's name.
pub const PROFILE_COLLECTION: &str = "system.profile";

/// mongod's size for a `system.profile` it creates: 1 MiB.
pub const PROFILE_BYTES: i64 = 1024 * 1024;

/// mongod's default `slowms`.
pub const DEFAULT_SLOW_MS: i64 = 100;

/// The profiler's settings.
pub struct Profiler {
    settings: Mutex<Settings>,
}

struct Settings {
    levels: HashMap<String, i32>,
    filters: HashMap<String, (Document, Filter)>,
    slow_ms: i64,
    sample_rate: f64,
}

/// The settings one database sees (what `profile` reports).
#[derive(Debug, Clone, PartialEq)]
pub struct Status {
    pub level: i32,
    pub slow_ms: i64,
    pub sample_rate: f64,
    pub filter: Option<Document>,
}

/// A change asked by the `profile` command; None leaves a setting as is.
pub struct Change {
    pub level: Option<i32>,
    pub slow_ms: Option<i64>,
    pub sample_rate: Option<f64>,
    /// Some(None) is `filter: "unset"`.
    pub filter: Option<Option<(Document, Filter)>>,
}

impl Default for Profiler {
    fn default() -> Self {
        Profiler {
            settings: Mutex::new(Settings {
                levels: HashMap::new(),
                filters: HashMap::new(),
                slow_ms: DEFAULT_SLOW_MS,
                sample_rate: 1.0,
            }),
        }
    }
}

impl Profiler {
    fn lock(&self) -> std::sync::MutexGuard<'_, Settings> {
        self.settings.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The settings `db` sees.
    pub fn status(&self, db: &str) -> Status {
        let s = self.lock();
        Status {
            level: s.levels.get(db).copied().unwrap_or(0),
            slow_ms: s.slow_ms,
            sample_rate: s.sample_rate,
            filter: s.filters.get(db).map(|(d, _)| d.clone()),
        }
    }

    /// Applies a change; returns the settings before it.
    pub fn change(&self, db: &str, change: Change) -> Status {
        let was = self.status(db);
        let mut s = self.lock();
        if let Some(level) = change.level {
            s.levels.insert(db.to_owned(), level);
        }
        if let Some(ms) = change.slow_ms {
            s.slow_ms = ms;
        }
        if let Some(rate) = change.sample_rate {
            s.sample_rate = rate;
        }
        match change.filter {
            Some(Some(filter)) => {
                s.filters.insert(db.to_owned(), filter);
            }
            Some(None) => {
                s.filters.remove(db);
            }
            None => {}
        }
        was
    }

    /// Whether anything of `db` may be recorded (level 1 or 2).
    pub fn active(&self, db: &str) -> bool {
        self.lock().levels.get(db).is_some_and(|l| *l > 0)
    }

    /// Whether `entry`, an operation of `millis`, is recorded: always at
    /// level 2; at level 1 when the database's filter matches it, or,
    /// without a filter, when it took at least `slowms` and falls in the
    /// `sampleRate` sample.
    pub fn wants(&self, db: &str, entry: &RawDocumentBuf, millis: i64) -> bool {
        let s = self.lock();
        match s.levels.get(db).copied().unwrap_or(0) {
            2 => true,
            1 => {
                if let Some((_, filter)) = s.filters.get(db) {
                    return filter.matches(entry).unwrap_or(false);
                }
                if millis < s.slow_ms {
                    return false;
                }
                s.sample_rate >= 1.0 || rand::random::<f64>() < s.sample_rate
            }
            _ => false,
        }
    }
}

/// Writes `entry` to `<db>.system.profile`, creating it (capped, 1 MiB)
/// when missing. A failure is logged, never the operation's.
pub async fn write(node: &NodeContext, db: &str, entry: RawDocumentBuf) {
    let handle = match node.collection(db, PROFILE_COLLECTION) {
        Some(h) => Some(h),
        None => {
            let options = CappedOptions::new(PROFILE_BYTES, None)
                .map(|c| c.to_document())
                .unwrap_or_default();
            let created = node
                .catalog
                .send(CreateCollection {
                    db: db.to_owned(),
                    name: PROFILE_COLLECTION.to_owned(),
                    options,
                })
                .await;
            if let Ok(Err(e)) = created {
                tracing::debug!(db, error = %e.message, "system.profile not created");
            }
            node.collection(db, PROFILE_COLLECTION)
        }
    };
    let Some(handle) = handle else { return };
    let sent = handle
        .addr
        .send(InsertDocs {
            docs: vec![entry],
            ordered: true,
            sync: false,
            bypass_validation: true,
        })
        .await;
    if !matches!(sent, Ok(Ok(_))) {
        tracing::debug!(db, "profile entry not written");
    }
}

/// Records the TTL monitor's deletes in the profile of databases being
/// profiled, until `stop` changes: an entry per visit to a TTL index,
/// `op: "remove"` with `ndeleted`, its index and cutoff in `command`
/// (mongod does not document its own shape for these).
pub async fn record_ttl_deletes(
    node: std::sync::Arc<NodeContext>,
    mut stop: tokio::sync::watch::Receiver<bool>,
) {
    let mut visits = node.shared.ttl.visits.subscribe();
    loop {
        let visit = tokio::select! {
            _ = stop.changed() => return,
            v = visits.recv() => v,
        };
        let visit = match visit {
            Ok(v) => v,
            Err(tokio::sync::broadcast::error::RecvError::Lagged(n)) => {
                tracing::debug!(missed = n, "profiler missed TTL visits");
                continue;
            }
            Err(_) => return,
        };
        if !node.profiler.active(&visit.db) || visit.collection == PROFILE_COLLECTION {
            continue;
        }
        let command = doc! {
            "delete": visit.collection.clone(),
            "ttlIndex": visit.index.clone(),
            "expireBefore": bson::DateTime::from_millis(visit.cutoff_millis),
        };
        let ns = format!("{}.{}", visit.db, visit.collection);
        let millis = visit.millis as i64;
        let mut e = entry("remove", &ns, command, millis, node.shared.clock.now());
        e.insert("ndeleted", visit.deleted as i64);
        e.insert("appName", "TTLMonitor");
        e.insert("client", "");
        e.insert("allUsers", Vec::<Bson>::new());
        e.insert("user", "");
        let Ok(raw) = RawDocumentBuf::try_from(&e) else {
            continue;
        };
        if node.profiler.wants(&visit.db, &raw, millis) {
            write(&node, &visit.db, raw).await;
        }
    }
}

/// What mongod's profiler calls an operation (`op`).
pub fn op_name(command: &str) -> &'static str {
    match command {
        "find" => "query",
        "getMore" => "getmore",
        "insert" => "insert",
        "update" => "update",
        "delete" => "remove",
        _ => "command",
    }
}

/// A reply's counts as profile fields: `nreturned` for cursors,
/// `ninserted`, `nMatched`/`nModified`, `ndeleted` for writes.
pub fn reply_counts(op: &str, reply: &RawDocumentBuf, entry: &mut Document) {
    let Ok(reply) = Document::try_from(reply.as_ref()) else {
        return;
    };
    if let Ok(cursor) = reply.get_document("cursor") {
        let batch = cursor
            .get_array("firstBatch")
            .or_else(|_| cursor.get_array("nextBatch"));
        if let Ok(batch) = batch {
            entry.insert("nreturned", batch.len() as i32);
        }
        if let Ok(id) = cursor.get_i64("id") {
            entry.insert("cursorExhausted", id == 0);
        }
        return;
    }
    let n = match reply.get("n") {
        Some(Bson::Int32(n)) => i64::from(*n),
        Some(Bson::Int64(n)) => *n,
        _ => return,
    };
    match op {
        "insert" => {
            entry.insert("ninserted", n);
        }
        "remove" => {
            entry.insert("ndeleted", n);
        }
        "update" => {
            entry.insert("nMatched", n);
            if let Some(m) = reply.get("nModified") {
                entry.insert("nModified", m.clone());
            }
        }
        _ => {}
    }
}

/// The entry common to every operation, as mongod's profiler writes it.
pub fn entry(op: &str, ns: &str, command: Document, millis: i64, ts: bson::DateTime) -> Document {
    doc! {
        "op": op,
        "ns": ns,
        "command": command,
        "millis": millis,
        "ts": ts,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_decide_what_is_recorded() {
        let p = Profiler::default();
        let entry = RawDocumentBuf::try_from(&doc! { "op": "query", "millis": 5 }).unwrap();
        assert!(!p.wants("app", &entry, 500));
        let was = p.change(
            "app",
            Change {
                level: Some(1),
                slow_ms: Some(10),
                sample_rate: None,
                filter: None,
            },
        );
        assert_eq!((was.level, was.slow_ms), (0, DEFAULT_SLOW_MS));
        assert!(!p.wants("app", &entry, 5));
        assert!(p.wants("app", &entry, 10));
        assert!(!p.wants("other", &entry, 500));
        let filter = Filter::parse(&bson::rawdoc! { "op": "insert" }).unwrap();
        p.change(
            "app",
            Change {
                level: None,
                slow_ms: None,
                sample_rate: None,
                filter: Some(Some((doc! { "op": "insert" }, filter))),
            },
        );
        assert!(
            !p.wants("app", &entry, 500),
            "the filter decides at level 1"
        );
        p.change(
            "app",
            Change {
                level: Some(2),
                slow_ms: None,
                sample_rate: None,
                filter: None,
            },
        );
        assert!(p.wants("app", &entry, 0));
    }
}
