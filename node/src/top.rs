//! Time spent and operations run per collection since the node started,
//! as mongod's `top` command reports them. The connection loop records
//! each finished command on a collection that exists (so a client naming
//! made-up collections cannot grow the table); collections dropped since
//! are left out of the report.

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

#[derive(Default)]
pub struct Top {
    rows: Mutex<HashMap<String, Row>>,
}

impl Top {
    /// Records command `name` on `ns` that took `micros`.
    pub fn record(&self, ns: &str, name: &str, micros: u64) {
        let (kind, lock) = match name {
            "find" => (3, READ),
            "getMore" => (4, READ),
            "insert" => (5, WRITE),
            "update" | "findAndModify" | "findandmodify" => (6, WRITE),
            "delete" => (7, WRITE),
            "aggregate" | "count" | "distinct" => (8, READ),
            _ => (8, WRITE),
        };
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
        top.record("d.c", "find", 10);
        top.record("d.c", "insert", 5);
        top.record("d.gone", "find", 1);
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
