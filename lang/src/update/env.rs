//! What an operator works with besides its argument: the update's
//! context (insert or not, the time), the environment the walk carries
//! (clock, `_id`, renamed values, whether anything changed), the site an
//! operator is applied at, and what applying it did. Shared by the walk
//! (`apply`) and the operators (`ops`, `array_ops`), so neither imports
//! the other.

use bson::{DateTime, Timestamp};

use std::sync::Arc;

use super::path::FieldPath;
use super::tree::{Value, field_index};
use crate::encoding::cmp::Cmp;
use crate::encoding::collation::Collation;

/// What an update needs to know besides the documents.
#[derive(Debug, Clone)]
pub struct UpdateContext {
    /// The update is building a document to insert (`$setOnInsert` applies).
    pub is_insert: bool,
    /// The time `$currentDate` and empty timestamps take.
    pub now: bson::DateTime,
    /// The statement's collation: `$min`/`$max`, `$addToSet`, `$pull`,
    /// `$pullAll` and `$push`'s `$sort` compare strings with it.
    pub collation: Option<Arc<Collation>>,
    /// `_id` may change like any field: a time-series measurement's
    /// (MongoDB 8.0 lets updates change it); a document's never can.
    pub mutable_id: bool,
}

/// What applying an operator to an existing element did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
    Unchanged,
    Changed,
    /// The element must go (`$unset`); in an array it becomes null.
    Removed,
}

/// Hands out the current time as a date or as distinct timestamps.
#[derive(Debug)]
pub(crate) struct Clock {
    now: DateTime,
    ticks: u32,
}

impl Clock {
    pub(crate) fn new(now: DateTime) -> Clock {
        Clock { now, ticks: 0 }
    }

    /// A timestamp at `now`'s second; each call gets the next increment,
    /// as MongoDB gives each generated timestamp its own tick.
    pub(crate) fn next_timestamp(&mut self) -> Timestamp {
        self.ticks += 1;
        Timestamp {
            time: (self.now.timestamp_millis().max(0) / 1000) as u32,
            increment: self.ticks,
        }
    }
}

/// What the walk carries besides the document.
#[derive(Debug)]
pub(crate) struct Env<'a> {
    pub(crate) is_insert: bool,
    pub(crate) now: DateTime,
    pub(super) clock: Clock,
    /// The document's `_id` before the update, for messages.
    pub(super) id: Option<Value<'a>>,
    /// Each `$rename` source's value, taken out before the walk.
    pub(crate) renamed: Vec<Option<Value<'a>>>,
    /// Whether any operator changed the document.
    pub(super) modified: bool,
    /// Whether a new top-level `$` field is an error (it is not when
    /// building an upsert, where the insert rules apply).
    pub(super) forbid_dollar_fields: bool,
    /// The first field created inside an existing `_id`: the part of its
    /// path that existed.
    pub(super) id_grown: Option<String>,
    /// [`UpdateContext::mutable_id`].
    pub(super) mutable_id: bool,
    collation: Option<Arc<Collation>>,
}

impl<'a> Env<'a> {
    pub(super) fn new(
        ctx: &UpdateContext,
        doc: &Value<'a>,
        renames: usize,
        forbid_dollar_fields: bool,
    ) -> Env<'a> {
        let id = match doc {
            Value::Doc(fields) => field_index(fields, "_id").map(|i| fields[i].1.clone()),
            _ => None,
        };
        Env {
            is_insert: ctx.is_insert,
            now: ctx.now,
            clock: Clock::new(ctx.now),
            id,
            renamed: (0..renames).map(|_| None).collect(),
            modified: false,
            forbid_dollar_fields,
            id_grown: None,
            mutable_id: ctx.mutable_id,
            collation: ctx.collation.clone(),
        }
    }

    /// The comparator of the statement's collation.
    pub(crate) fn cmp(&self) -> Cmp<'_> {
        Cmp::new(self.collation.as_deref())
    }

    /// `{_id: 1}`, or `{no id}`.
    pub(crate) fn id_in_braces(&self) -> String {
        format!("{{{}}}", self.id_or_no_id())
    }

    /// `_id: 1`, or `no id`.
    pub(crate) fn id_or_no_id(&self) -> String {
        self.id
            .as_ref()
            .map_or_else(|| "no id".to_owned(), |id| id.render_element("_id"))
    }

    pub(crate) fn next_timestamp(&mut self) -> Timestamp {
        self.clock.next_timestamp()
    }
}

/// Where an operator is being applied.
#[derive(Debug)]
pub(crate) struct Site<'s> {
    pub(crate) path: &'s FieldPath,
    /// The name of the nearest array above the element, if any.
    pub(crate) array_name: Option<&'s str>,
}

impl Site<'_> {
    /// The element's own field name (or index), for messages.
    pub(crate) fn name(&self) -> &str {
        self.path.part(self.path.len() - 1).as_str()
    }
}
