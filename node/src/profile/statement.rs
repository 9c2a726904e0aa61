//! The profile entry of one statement of an `update` or `delete`: mongod
//! records each statement on its own, with `op` "update" or "remove", the
//! statement as `command` in the order and with the defaults mongod's
//! parser gives it (`{q, u, …, multi, upsert}`, `{q, limit, …}`), and the
//! statement's own counts.

use bson::{Bson, Document, RawBsonRef, RawDocument};

use super::settings::{entry as common_entry, number};
use crate::command::Op;
use crate::ops::StatementNote;

/// An update statement's fields in mongod's order; `multi` and `upsert`
/// are always shown (false when not given).
const UPDATE_FIELDS: &[&str] = &[
    "q",
    "u",
    "c",
    "arrayFilters",
    "hint",
    "multi",
    "upsert",
    "upsertSupplied",
    "collation",
];

/// A delete statement's fields in mongod's order.
const DELETE_FIELDS: &[&str] = &["q", "limit", "hint", "collation"];

/// The entry of the statement `note` describes, of command `body`.
pub fn entry(
    op: Op,
    ns: &str,
    body: &RawDocument,
    note: &StatementNote,
    millis: i64,
    ts: bson::DateTime,
) -> Document {
    let (array, fields, defaults): (&str, &[&str], &[&str]) = match op {
        Op::Update => ("updates", UPDATE_FIELDS, &["multi", "upsert"]),
        _ => ("deletes", DELETE_FIELDS, &[]),
    };
    let statement = body
        .get_array(array)
        .ok()
        .and_then(|a| a.into_iter().nth(note.position))
        .and_then(|v| match v {
            Ok(RawBsonRef::Document(d)) => Some(d),
            _ => None,
        });
    let mut command = Document::new();
    for &field in fields {
        match statement.and_then(|s| s.get(field).ok().flatten()) {
            Some(v) => {
                if let Ok(v) = Bson::try_from(v) {
                    command.insert(field, v);
                }
            }
            None if defaults.contains(&field) => {
                command.insert(field, false);
            }
            None => {}
        }
    }
    let mut entry = common_entry(op.profile_name(), ns, command, millis, ts);
    if let Some(s) = &note.stats {
        entry.insert("keysExamined", number(s.examined.keys as i64));
        entry.insert("docsExamined", number(s.examined.docs as i64));
        match op {
            Op::Update => {
                entry.insert("nMatched", number(s.matched as i64));
                entry.insert("nModified", number(s.modified as i64));
                entry.insert("nUpserted", number(i64::from(s.upserted)));
            }
            _ => {
                entry.insert("ndeleted", number(s.deleted as i64));
            }
        }
        if !s.examined.plan_summary.is_empty() {
            entry.insert("planSummary", s.examined.plan_summary.clone());
        }
    }
    entry
}
