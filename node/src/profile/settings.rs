//! The profiler's settings (the `profile` command's level per database,
//! the node-wide `slowms` and `sampleRate`, a filter per database), the
//! rule deciding which operations are recorded, and the entry's shape as
//! mongod writes it. Writing entries is `record`'s job.

use std::collections::HashMap;
use std::sync::Mutex;

use bson::{Bson, Document, RawDocumentBuf, doc};
pub use ebb_lang::encoding::display::number;
use ebb_lang::query::filter::Filter;

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
    let n = number(n);
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
