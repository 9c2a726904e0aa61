//! Time spent and operations run per collection since the node started,
//! as mongod's `top` command reports them. Dispatch records each finished
//! command on a collection that exists (so a client naming made-up
//! collections cannot grow the table), in the [`Category`] its row in the
//! command table states; collections dropped since are left out of the
//! report.

use std::collections::HashMap;
use std::sync::Mutex;

use bson::{Document, doc};

/// The columns of one namespace's row, in mongod's order.
const COLUMNS: [&str; 9] = [
    "total",
    "readLock",
    "writeLock",
    "queries",
    "getmore",
    "insert",
    "update",
    "remove",
    "commands",
];

const TOTAL: usize = 0;
const READ: usize = 1;
const WRITE: usize = 2;

/// Microseconds and count per column.
type Row = [(u64, u64); 9];

/// Where `top` accounts a command: its column, and the lock mongod takes
/// for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Category {
    /// `find`: `queries`, read lock.
    Queries,
    /// `getMore`: `getmore`, read lock.
    GetMore,
    /// `insert`, write lock.
    Insert,
    /// `update`, write lock.
    Update,
    /// `remove`, write lock.
    Remove,
    /// `commands`, read lock.
    ReadCommand,
    /// `commands`, write lock: every other command, known or not.
    Command,
}

impl Category {
    /// The category's column and lock column.
    fn columns(self) -> (usize, usize) {
        match self {
            Category::Queries => (3, READ),
            Category::GetMore => (4, READ),
            Category::Insert => (5, WRITE),
            Category::Update => (6, WRITE),
            Category::Remove => (7, WRITE),
            Category::ReadCommand => (8, READ),
            Category::Command => (8, WRITE),
        }
    }
}

#[derive(Default)]
pub struct Top {
    rows: Mutex<HashMap<String, Row>>,
}

impl Top {
    /// Records a command of `category` on `ns` that took `micros`.
    pub fn record(&self, ns: &str, category: Category, micros: u64) {
        let (kind, lock) = category.columns();
        let mut rows = self.rows.lock().expect("top lock");
        let row = rows.entry(ns.to_owned()).or_default();
        for column in [TOTAL, lock, kind] {
            row[column].0 += micros;
            row[column].1 += 1;
        }
    }

    /// `top`'s `totals`, for the namespaces `exists` accepts.
    pub fn report(&self, exists: impl Fn(&str) -> bool) -> Document {
        let rows = self.rows.lock().expect("top lock");
        let mut names: Vec<&String> = rows.keys().filter(|ns| exists(ns)).collect();
        names.sort();
        let mut totals = doc! { "note": "all times in microseconds" };
        for ns in names {
            let mut row = Document::new();
            for (column, (micros, count)) in COLUMNS.iter().zip(rows[ns]) {
                row.insert(
                    *column,
                    doc! { "time": micros as i64, "count": count as i64 },
                );
            }
            totals.insert(ns.clone(), row);
        }
        totals
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_count_in_their_column_their_lock_and_the_total() {
        let top = Top::default();
        top.record("d.c", Category::Queries, 10);
        top.record("d.c", Category::Insert, 5);
        top.record("d.gone", Category::Queries, 1);
        let totals = top.report(|ns| ns == "d.c");
        assert!(totals.get("d.gone").is_none());
        let row = totals.get_document("d.c").unwrap();
        let cell = |c: &str| {
            let d = row.get_document(c).unwrap();
            (d.get_i64("time").unwrap(), d.get_i64("count").unwrap())
        };
        assert_eq!(cell("total"), (15, 2));
        assert_eq!(cell("queries"), (10, 1));
        assert_eq!(cell("readLock"), (10, 1));
        assert_eq!(cell("writeLock"), (5, 1));
        assert_eq!(cell("insert"), (5, 1));
        assert_eq!(cell("remove"), (0, 0));
    }
}
