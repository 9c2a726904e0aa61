//! A model test: random operation sequences run against a real node and
//! against an in-memory model of one collection, compared after every
//! step, with clean restarts in between; a failing sequence is shrunk to a
//! minimal one.
//!
//! Each case starts a fresh node whose TTL monitor reads a manual clock
//! (starting at [`T0`]) and runs up to 40 operations, mostly over `_id`s
//! 0..20 and `v` values 0..10 so that duplicate keys happen often: single
//! and batched inserts (ordered and unordered), `$set`/`$inc`/`$unset`
//! updates and replacements by `_id` (some upserting, some rewriting a
//! document as it is, with or without its `_id`), deletes, a TTL index on
//! `exp` (either direction, maybe partial on `v`; its `expireAfterSeconds`
//! changed with `collMod`; dropped), a secondary index on `v` (maybe
//! unique), bulk batches of hundreds of documents sharing one `exp` (for
//! the monitor's large-chunk and whole-collection paths), clock jumps,
//! restarts (with the monitor enabled or not) and the monitor turned off
//! and on at runtime. `exp` holds a Date, two Dates, a Date mixed with a
//! string, a non-Date (string, number, null, Timestamp), the smallest or
//! largest Date, or nothing; one case in three writes nothing but Dates.
//!
//! The model predicts every write's outcome (error codes and the position
//! of each failed document in a batch, matched/modified/upserted and
//! deleted counts) and, after every step, the collection's contents, field
//! order included. Reads through each secondary index (hinted) must return
//! what a collection scan (`$natural` hint) returns and what the model
//! predicts; after index changes and restarts, `listIndexes` must match.
//!
//! # Expiry in the model
//!
//! The model clock is the manual clock; it moves only at a clock-jump step.
//! A document is *due* when some TTL index holds it (its partial filter
//! matches) and the earliest Date in `exp` (a Date, or the Dates of an
//! array) satisfies `date + expireAfterSeconds <= now`, as in MongoDB.
//! Non-Date values never expire.
//!
//! While the monitor is off (`ttlMonitorEnabled` false, set at runtime or
//! in the configuration a restart reads) due documents stay, as ordinary
//! documents. Turning it off waits until the monitor has looked at the
//! parameter, so no pass is still running.
//!
//! While it is on, the model removes after every step, whatever the step
//! was, the documents due at the current clock: those a jump made due,
//! those written already due (prompt expiry), those that fell due while the
//! monitor was off, those an index creation, a `collMod`, or a change of
//! `v` into a partial filter made due. They are hidden at once
//! (`ttl.hide_expired`) and the monitor deletes them asynchronously, so
//! the check polls until the node shows exactly the model and stores no
//! more documents than it (explain's count of the records a scan
//! examines); at every poll each document the model keeps must be there
//! unchanged, and only the documents just removed may linger. They must go
//! within [`PROMPT_DEADLINE`] without help (the jump or the write wakes
//! the monitor); a complete monitor pass that leaves one fails at once.
//! After a step that may give the monitor work (a clock jump, a TTL index
//! created or changed, the monitor turned on, a restart) the check also
//! waits for a complete pass and compares again, so a premature deletion
//! shows at the step that caused it. So nothing due survives a step while
//! the monitor is on, and the next operation does not race the monitor,
//! with two exceptions:
//!
//! - A clock jump may carry *moves*: right after the jump, while the
//!   monitor deletes, `$set`s that move documents an hour past the new
//!   time. A document that fell due is hidden from the moment it is due
//!   (`ttl.hide_expired`, on by default), so its move matches nothing,
//!   whether or not the monitor has deleted it yet.
//! - A batch may insert a document that is due on arrival and, later in the
//!   same batch, one colliding with it (same `_id`, or same `v` under a
//!   unique index). The due document is hidden at once, so the later one
//!   replaces it instead of failing with a duplicate key.
//!
//! `EBB_MODEL_CASES` sets the number of cases (default 16); `--nocapture`
//! shows a tally of what the cases exercised. Failures are not persisted to
//! disk; the panic message carries the shrunk sequence up to the failing
//! step, and the first mismatch.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::common::{TestNode, code};
use ebb_actors::clock::ManualClock;
use ebb_config::ParamValue;
use futures::TryStreamExt;
use mongodb::bson::{Bson, DateTime, Document, Timestamp, doc};
use mongodb::error::ErrorKind;
use mongodb::options::{Hint, IndexOptions};
use mongodb::{Client, Collection, Database, IndexModel};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestError, TestRunner};

/// 2026-01-01T00:00:00Z: the manual clock's start.
const T0: i64 = 1_767_225_600_000;
const DB: &str = "model";
const COLL: &str = "c";
/// How long the monitor may take to delete what falls due at a step
/// (prompt expiry: it is woken by the clock jump or by the write; it takes
/// milliseconds, this leaves room for a loaded machine).
const PROMPT_DEADLINE: Duration = Duration::from_secs(2);
/// How long a nudged monitor may take to run a complete pass.
const DEADLINE: Duration = Duration::from_secs(10);
/// How far past the clock [`Op::Advance`] moves documents.
const MOVED_BY_MS: i64 = 3_600_000;
const DUP_KEY: i32 = 11000;
const INDEX_NOT_FOUND: i32 = 27;
const OPTIONS_CONFLICT: i32 = 85;
const KEY_SPECS_CONFLICT: i32 = 86;

// ---------------------------------------------------------------------------
// Operations

/// A value for `exp`; Date offsets are milliseconds from the clock's time
/// when the operation runs.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Exp {
    Missing,
    Date(i64),
    /// An array of two Dates: the earlier one decides.
    Dates(i64, i64),
    /// `["soon", Date]`: the non-Date element is ignored.
    Mixed(i64),
    Null,
    Text,
    /// The same instant as epoch milliseconds (an Int64): never expires.
    Millis(i64),
    Timestamp,
    MinDate,
    MaxDate,
}

impl Exp {
    fn value(self, now: i64) -> Option<Bson> {
        let at = |off: i64| Bson::DateTime(DateTime::from_millis(now + off));
        Some(match self {
            Exp::Missing => return None,
            Exp::Date(a) => at(a),
            Exp::Dates(a, b) => Bson::Array(vec![at(a), at(b)]),
            Exp::Mixed(a) => Bson::Array(vec![Bson::String("soon".into()), at(a)]),
            Exp::Null => Bson::Null,
            Exp::Text => Bson::String("2020-01-01T00:00:00Z".into()),
            Exp::Millis(a) => Bson::Int64(now + a),
            Exp::Timestamp => Bson::Timestamp(Timestamp {
                time: 1,
                increment: 1,
            }),
            Exp::MinDate => Bson::DateTime(DateTime::MIN),
            Exp::MaxDate => Bson::DateTime(DateTime::MAX),
        })
    }
}

#[derive(Clone, Debug)]
struct NewDoc {
    id: i32,
    v: Option<i32>,
    exp: Exp,
}

impl NewDoc {
    fn build(&self, now: i64) -> Document {
        let mut d = doc! { "_id": self.id };
        d.extend(fields(self.v, self.exp, now));
        d
    }
}

/// The fields after `_id`: `v` then `exp`, each when present.
fn fields(v: Option<i32>, exp: Exp, now: i64) -> Document {
    let mut d = Document::new();
    if let Some(v) = v {
        d.insert("v", v);
    }
    if let Some(e) = exp.value(now) {
        d.insert("exp", e);
    }
    d
}

#[derive(Clone, Debug)]
enum Op {
    Insert(NewDoc),
    InsertMany {
        docs: Vec<NewDoc>,
        ordered: bool,
    },
    SetV {
        id: i32,
        v: i32,
        upsert: bool,
    },
    IncV {
        id: i32,
        by: i32,
        upsert: bool,
    },
    /// `$set` of `exp`, or `$unset` for [`Exp::Missing`].
    SetExp {
        id: i32,
        exp: Exp,
        upsert: bool,
    },
    Replace {
        id: i32,
        v: Option<i32>,
        exp: Exp,
        upsert: bool,
    },
    /// `replaceOne({_id}, <the document as it is>)`, the replacement with
    /// or without its `_id`: a no-op only in the first form.
    Rewrite {
        id: i32,
        with_id: bool,
    },
    DeleteOne {
        id: i32,
    },
    /// `deleteMany({v: {$lt: below}})`.
    DeleteMany {
        below: i32,
    },
    /// `createIndex({exp: ±1}, {expireAfterSeconds, partialFilterExpression:
    /// {v: {$gte: partial}}})`.
    CreateTtl {
        descending: bool,
        secs: u32,
        partial: Option<i32>,
    },
    CollModTtl {
        descending: bool,
        secs: u32,
    },
    DropTtl {
        descending: bool,
    },
    CreateVIndex {
        unique: bool,
    },
    DropVIndex,
    /// `count` documents `{_id: first + k * stride, v: _id, exp}` in one
    /// unordered batch: enough for the monitor's large-chunk paths (range
    /// deletes, whole-collection expiry); strides interleave batches.
    Bulk {
        first: i32,
        count: i32,
        stride: i32,
        exp: Exp,
    },
    /// Moves the clock forward; then, while the monitor deletes what fell
    /// due, moves the documents `moves` an hour past the new time, one
    /// `$set` at a time.
    Advance {
        ms: i64,
        moves: Vec<i32>,
    },
    /// `setParameter ttlMonitorEnabled` at runtime.
    SetMonitor {
        enabled: bool,
    },
    /// A clean shutdown and a start on the same data, with the monitor
    /// enabled or not in the configuration (a runtime `setParameter` does
    /// not outlive a restart).
    Restart {
        monitor: bool,
    },
}

fn ttl_name(descending: bool) -> &'static str {
    if descending { "exp_-1" } else { "exp_1" }
}

fn offset() -> impl Strategy<Value = i64> {
    (-12i64..=24).prop_map(|k| k * 500)
}

/// Values for `exp`; a case that is `dates_only` writes nothing but Dates,
/// so whole collections fall due at once (the monitor's fast path for a
/// collection entirely due needs every index entry to be a due Date).
fn exp(dates_only: bool) -> BoxedStrategy<Exp> {
    if dates_only {
        return prop_oneof![
            8 => offset().prop_map(Exp::Date),
            2 => (offset(), offset()).prop_map(|(a, b)| Exp::Dates(a, b)),
            1 => Just(Exp::MinDate),
        ]
        .boxed();
    }
    prop_oneof![
        1 => Just(Exp::Missing),
        8 => offset().prop_map(Exp::Date),
        2 => (offset(), offset()).prop_map(|(a, b)| Exp::Dates(a, b)),
        1 => offset().prop_map(Exp::Mixed),
        1 => Just(Exp::Null),
        1 => Just(Exp::Text),
        1 => offset().prop_map(Exp::Millis),
        1 => Just(Exp::Timestamp),
        1 => Just(Exp::MinDate),
        1 => Just(Exp::MaxDate),
    ]
    .boxed()
}

fn id() -> impl Strategy<Value = i32> {
    0i32..20
}

fn v() -> impl Strategy<Value = Option<i32>> {
    prop::option::weighted(0.9, 0i32..10)
}

fn new_doc(dates_only: bool) -> impl Strategy<Value = NewDoc> {
    (id(), v(), exp(dates_only)).prop_map(|(id, v, exp)| NewDoc { id, v, exp })
}

/// A batch; some share one `exp` (a cache loaded at once).
fn batch(dates_only: bool) -> impl Strategy<Value = Op> {
    let docs = prop::collection::vec(new_doc(dates_only), 1..6);
    let shared = prop::option::weighted(0.4, exp(dates_only));
    (docs, any::<bool>(), shared).prop_map(|(mut docs, ordered, shared)| {
        if let Some(exp) = shared {
            docs.iter_mut().for_each(|d| d.exp = exp);
        }
        Op::InsertMany { docs, ordered }
    })
}

fn op(dates_only: bool) -> impl Strategy<Value = Op> {
    let upsert = any::<bool>;
    let secs = || 0u32..=5;
    prop_oneof![
        6 => new_doc(dates_only).prop_map(Op::Insert),
        4 => batch(dates_only),
        2 => (id(), 0i32..10, upsert())
            .prop_map(|(id, v, upsert)| Op::SetV { id, v, upsert }),
        2 => (id(), -3i32..=3, upsert())
            .prop_map(|(id, by, upsert)| Op::IncV { id, by, upsert }),
        3 => (id(), exp(dates_only), upsert())
            .prop_map(|(id, exp, upsert)| Op::SetExp { id, exp, upsert }),
        2 => (id(), v(), exp(dates_only), upsert())
            .prop_map(|(id, v, exp, upsert)| Op::Replace { id, v, exp, upsert }),
        1 => (id(), any::<bool>()).prop_map(|(id, with_id)| Op::Rewrite { id, with_id }),
        2 => id().prop_map(|id| Op::DeleteOne { id }),
        1 => (0i32..10).prop_map(|below| Op::DeleteMany { below }),
        5 => (any::<bool>(), secs(), prop::option::weighted(0.3, 0i32..10))
            .prop_map(|(descending, secs, partial)| Op::CreateTtl { descending, secs, partial }),
        1 => (any::<bool>(), secs())
            .prop_map(|(descending, secs)| Op::CollModTtl { descending, secs }),
        1 => any::<bool>().prop_map(|descending| Op::DropTtl { descending }),
        2 => any::<bool>().prop_map(|unique| Op::CreateVIndex { unique }),
        1 => Just(Op::DropVIndex),
        1 => (1000i32..1003, 100i32..1500, 1i32..=3, exp(dates_only))
            .prop_map(|(first, count, stride, exp)| Op::Bulk { first, count, stride, exp }),
        5 => (0i64..=20, prop::collection::vec(moved(), 0..8))
            .prop_map(|(k, moves)| Op::Advance { ms: k * 500, moves }),
        1 => any::<bool>().prop_map(|enabled| Op::SetMonitor { enabled }),
        2 => prop::bool::weighted(0.75).prop_map(|monitor| Op::Restart { monitor }),
    ]
}

/// A document to move while the monitor runs: one of the small key space
/// or of a bulk batch.
fn moved() -> impl Strategy<Value = i32> {
    prop_oneof![id(), 1000i32..2500]
}

/// A case: up to 40 operations, one case in three writing Dates only.
fn sequence() -> impl Strategy<Value = Vec<Op>> {
    prop::bool::weighted(0.35)
        .prop_flat_map(|dates_only| prop::collection::vec(op(dates_only), 1..=40))
}

impl Op {
    /// Whether the monitor (if enabled) may find new work because of this
    /// step: the check then waits for a whole pass and compares again.
    fn wakes_monitor(&self) -> bool {
        matches!(
            self,
            Op::Advance { .. }
                | Op::CreateTtl { .. }
                | Op::CollModTtl { .. }
                | Op::SetMonitor { enabled: true }
                | Op::Restart { .. }
        )
    }
}

/// What a step reported; the model predicts it and the node must agree.
#[derive(Clone, Debug, PartialEq)]
enum Outcome {
    Ok,
    /// A command or single write failed with this code.
    Code(i32),
    /// A batch insert: (position, code) of each failed document.
    Inserted(Vec<(usize, i32)>),
    /// The (matched, modified) counts of the moves racing the monitor.
    Moved(Vec<(u64, u64)>),
    Updated {
        matched: u64,
        modified: u64,
        upserted: bool,
    },
    Deleted(u64),
}

// ---------------------------------------------------------------------------
// The model

#[derive(Clone, Copy, Debug, PartialEq)]
struct Ttl {
    secs: u32,
    partial: Option<i32>,
}

#[derive(Debug)]
struct Model {
    now: i64,
    docs: BTreeMap<i32, Document>,
    /// TTL indexes on `exp`, by direction (`true`: descending).
    ttl: BTreeMap<bool, Ttl>,
    /// The index on `v`: `Some(unique)`.
    v_index: Option<bool>,
    /// Whether the monitor runs (`ttlMonitorEnabled`); while it does not,
    /// due documents stay, as ordinary documents.
    monitor: bool,
}

fn v_of(d: &Document) -> Option<i32> {
    match d.get("v") {
        Some(Bson::Int32(v)) => Some(*v),
        _ => None,
    }
}

/// The earliest Date in `exp`: a Date, or the Dates of an array.
fn earliest_date(d: &Document) -> Option<i64> {
    match d.get("exp")? {
        Bson::DateTime(t) => Some(t.timestamp_millis()),
        Bson::Array(a) => a
            .iter()
            .filter_map(|e| match e {
                Bson::DateTime(t) => Some(t.timestamp_millis()),
                _ => None,
            })
            .min(),
        _ => None,
    }
}

/// Equal values in the same field order (what a byte comparison sees).
fn same_doc(a: &Document, b: &Document) -> bool {
    a.len() == b.len() && a.iter().zip(b.iter()).all(|(x, y)| x == y)
}

impl Model {
    fn new() -> Model {
        Model {
            now: T0,
            docs: BTreeMap::new(),
            ttl: BTreeMap::new(),
            v_index: None,
            monitor: true,
        }
    }

    fn is_due(&self, d: &Document) -> bool {
        let Some(date) = earliest_date(d) else {
            return false;
        };
        self.ttl.values().any(|t| {
            let held = t.partial.is_none_or(|p| v_of(d).is_some_and(|v| v >= p));
            held && i128::from(date) + i128::from(t.secs) * 1000 <= i128::from(self.now)
        })
    }

    /// Whether `d` would duplicate another document's `v` under a unique
    /// index (a missing `v` is null there, so two missing ones collide).
    fn v_collides(&self, d: &Document) -> bool {
        let id = d.get("_id");
        self.v_index == Some(true)
            && self
                .docs
                .values()
                .any(|o| o.get("_id") != id && o.get("v") == d.get("v"))
    }

    fn has_dup_v(&self) -> bool {
        let mut seen = Vec::new();
        for d in self.docs.values() {
            let v = d.get("v").cloned();
            if seen.contains(&v) {
                return true;
            }
            seen.push(v);
        }
        false
    }

    /// Removes and returns the documents due at the current clock, if the
    /// monitor runs.
    fn expire(&mut self) -> Vec<Document> {
        if !self.monitor {
            return Vec::new();
        }
        let due: Vec<i32> = self
            .docs
            .iter()
            .filter(|(_, d)| self.is_due(d))
            .map(|(id, _)| *id)
            .collect();
        due.iter().filter_map(|id| self.docs.remove(id)).collect()
    }

    /// An update by `_id`. MongoDB counts a matched document as not
    /// modified when an operator update leaves it byte-identical, but a
    /// replacement only when the replacement document itself is
    /// byte-identical to the stored one, `_id` included (`noop_if_same`):
    /// rewriting a document's fields without its `_id` counts as modified.
    fn update(
        &mut self,
        id: i32,
        upsert: bool,
        noop_if_same: bool,
        change: impl Fn(&mut Document),
    ) -> Outcome {
        let (mut new, old) = match self.docs.get(&id) {
            Some(old) => (old.clone(), Some(old.clone())),
            None if upsert => (doc! { "_id": id }, None),
            None => {
                return Outcome::Updated {
                    matched: 0,
                    modified: 0,
                    upserted: false,
                };
            }
        };
        change(&mut new);
        if self.v_collides(&new) {
            return Outcome::Code(DUP_KEY);
        }
        self.docs.insert(id, new.clone());
        match old {
            Some(old) => Outcome::Updated {
                matched: 1,
                modified: u64::from(!(noop_if_same && same_doc(&old, &new))),
                upserted: false,
            },
            None => Outcome::Updated {
                matched: 0,
                modified: 0,
                upserted: true,
            },
        }
    }

    /// An `insert` command: ordered stops at the first duplicate key,
    /// unordered skips only the duplicates.
    fn insert_batch(&mut self, docs: Vec<Document>, ordered: bool) -> Outcome {
        let mut errors = Vec::new();
        for (i, d) in docs.into_iter().enumerate() {
            // A due document is gone for writes too: a later document of
            // the batch takes its `_id` or unique `v`.
            if self.monitor {
                self.expire();
            }
            if self.docs.contains_key(&id_of(&d)) || self.v_collides(&d) {
                errors.push((i, DUP_KEY));
                if ordered {
                    break;
                }
                continue;
            }
            self.docs.insert(id_of(&d), d);
        }
        Outcome::Inserted(errors)
    }

    /// Applies `op` and returns the outcome the node must have reported.
    fn apply(&mut self, op: &Op) -> Outcome {
        let now = self.now;
        match op {
            Op::Insert(d) => match self.insert_batch(vec![d.build(now)], true) {
                Outcome::Inserted(errors) if errors.is_empty() => Outcome::Ok,
                _ => Outcome::Code(DUP_KEY),
            },
            Op::InsertMany { docs, ordered } => {
                self.insert_batch(docs.iter().map(|d| d.build(now)).collect(), *ordered)
            }
            Op::SetV { id, v, upsert } => self.update(*id, *upsert, true, |d| {
                d.insert("v", *v);
            }),
            Op::IncV { id, by, upsert } => self.update(*id, *upsert, true, |d| {
                let v = v_of(d).unwrap_or(0) + by;
                d.insert("v", v);
            }),
            Op::SetExp { id, exp, upsert } => {
                self.update(*id, *upsert, true, |d| match exp.value(now) {
                    Some(e) => {
                        d.insert("exp", e);
                    }
                    None => {
                        d.remove("exp");
                    }
                })
            }
            Op::Replace { id, v, exp, upsert } => self.update(*id, *upsert, false, |d| {
                *d = doc! { "_id": *id };
                d.extend(fields(*v, *exp, now));
            }),
            Op::Rewrite { id, with_id } => self.update(*id, false, *with_id, |_| {}),
            Op::DeleteOne { id } => Outcome::Deleted(u64::from(self.docs.remove(id).is_some())),
            Op::DeleteMany { below } => {
                let before = self.docs.len();
                self.docs.retain(|_, d| v_of(d).is_none_or(|v| v >= *below));
                Outcome::Deleted((before - self.docs.len()) as u64)
            }
            Op::CreateTtl {
                descending,
                secs,
                partial,
            } => match self.ttl.get(descending) {
                Some(t) if t.partial != *partial => Outcome::Code(KEY_SPECS_CONFLICT),
                Some(t) if t.secs != *secs => Outcome::Code(OPTIONS_CONFLICT),
                Some(_) => Outcome::Ok,
                None => {
                    self.ttl.insert(
                        *descending,
                        Ttl {
                            secs: *secs,
                            partial: *partial,
                        },
                    );
                    Outcome::Ok
                }
            },
            Op::CollModTtl { descending, secs } => match self.ttl.get_mut(descending) {
                Some(t) => {
                    t.secs = *secs;
                    Outcome::Ok
                }
                None => Outcome::Code(INDEX_NOT_FOUND),
            },
            Op::DropTtl { descending } => match self.ttl.remove(descending) {
                Some(_) => Outcome::Ok,
                None => Outcome::Code(INDEX_NOT_FOUND),
            },
            Op::CreateVIndex { unique } => match self.v_index {
                Some(u) if u != *unique => Outcome::Code(KEY_SPECS_CONFLICT),
                Some(_) => Outcome::Ok,
                None if *unique && self.has_dup_v() => Outcome::Code(DUP_KEY),
                None => {
                    self.v_index = Some(*unique);
                    Outcome::Ok
                }
            },
            Op::DropVIndex => match self.v_index.take() {
                Some(_) => Outcome::Ok,
                None => Outcome::Code(INDEX_NOT_FOUND),
            },
            Op::Bulk {
                first,
                count,
                stride,
                exp,
            } => self.insert_batch(bulk(*first, *count, *stride, *exp, now), false),
            Op::Advance { ms, moves } => {
                self.now += ms;
                let mut out = Vec::new();
                for id in moves {
                    let Some(old) = self.docs.get(id).cloned() else {
                        out.push((0, 0));
                        continue;
                    };
                    if self.monitor && self.is_due(&old) {
                        // Hidden from the moment it fell due: deleted or
                        // not, the move cannot match it.
                        count(&TALLY.moves_hidden, 1);
                        self.docs.remove(id);
                        out.push((0, 0));
                        continue;
                    }
                    let mut new = old.clone();
                    new.insert("exp", DateTime::from_millis(self.now + MOVED_BY_MS));
                    out.push((1, u64::from(!same_doc(&old, &new))));
                    self.docs.insert(*id, new);
                }
                Outcome::Moved(out)
            }
            Op::SetMonitor { enabled } | Op::Restart { monitor: enabled } => {
                self.monitor = *enabled;
                Outcome::Ok
            }
        }
    }

    /// `listIndexes` as the model sees it, in the shape [`describe_index`]
    /// gives.
    fn indexes(&self) -> Vec<String> {
        let mut out = vec![index_line("_id_", false, None, None)];
        if let Some(unique) = self.v_index {
            out.push(index_line("v_1", unique, None, None));
        }
        for (descending, t) in &self.ttl {
            out.push(index_line(
                ttl_name(*descending),
                false,
                Some(i64::from(t.secs)),
                t.partial,
            ));
        }
        out.sort();
        out
    }

    /// The reads to try through each secondary index.
    fn probes(&self) -> Vec<Probe> {
        let mut out = Vec::new();
        if self.v_index.is_some() {
            out.extend([
                Probe::V(None, Some(3)),
                Probe::V(Some(3), Some(7)),
                Probe::V(Some(7), None),
                Probe::VNull,
            ]);
        }
        for (descending, t) in &self.ttl {
            out.push(Probe::HasDate(*descending, t.partial));
            if t.partial.is_none() {
                out.push(Probe::ExpNull(*descending));
            }
        }
        out
    }
}

/// The documents of [`Op::Bulk`].
fn bulk(first: i32, count: i32, stride: i32, exp: Exp, now: i64) -> Vec<Document> {
    (0..count)
        .map(|k| {
            let id = first + k * stride;
            let mut d = doc! { "_id": id };
            d.extend(fields(Some(id), exp, now));
            d
        })
        .collect()
}

fn id_of(d: &Document) -> i32 {
    d.get_i32("_id").expect("model documents have an int _id")
}

fn index_line(name: &str, unique: bool, ttl: Option<i64>, partial: Option<i32>) -> String {
    format!("{name} unique={unique} expireAfterSeconds={ttl:?} partial_v_gte={partial:?}")
}

/// A read through one index: its filter, the index it is hinted to, and
/// which documents it must return.
#[derive(Clone, Copy, Debug)]
enum Probe {
    /// `{v: {$gte: lo, $lt: hi}}` through `v_1`.
    V(Option<i32>, Option<i32>),
    /// `{v: null}` through `v_1`: documents without `v`.
    VNull,
    /// `{[v: {$gte: p},] exp: {$gte: <smallest Date>}}` through a TTL index
    /// (a partial one only with a filter that implies its own).
    HasDate(bool, Option<i32>),
    /// `{exp: null}` through a non-partial TTL index.
    ExpNull(bool),
}

impl Probe {
    fn index(self) -> &'static str {
        match self {
            Probe::V(..) | Probe::VNull => "v_1",
            Probe::HasDate(d, _) | Probe::ExpNull(d) => ttl_name(d),
        }
    }

    fn filter(self) -> Document {
        match self {
            Probe::V(lo, hi) => {
                let mut range = Document::new();
                if let Some(lo) = lo {
                    range.insert("$gte", lo);
                }
                if let Some(hi) = hi {
                    range.insert("$lt", hi);
                }
                doc! { "v": range }
            }
            Probe::VNull => doc! { "v": Bson::Null },
            Probe::HasDate(_, partial) => {
                let mut f = Document::new();
                if let Some(p) = partial {
                    f.insert("v", doc! { "$gte": p });
                }
                f.insert("exp", doc! { "$gte": DateTime::MIN });
                f
            }
            Probe::ExpNull(_) => doc! { "exp": Bson::Null },
        }
    }

    fn matches(self, d: &Document) -> bool {
        match self {
            Probe::V(lo, hi) => {
                v_of(d).is_some_and(|v| lo.is_none_or(|lo| v >= lo) && hi.is_none_or(|hi| v < hi))
            }
            Probe::VNull => d.get("v").is_none(),
            Probe::HasDate(_, partial) => {
                partial.is_none_or(|p| v_of(d).is_some_and(|v| v >= p))
                    && earliest_date(d).is_some()
            }
            Probe::ExpNull(_) => matches!(d.get("exp"), None | Some(Bson::Null)),
        }
    }
}

// ---------------------------------------------------------------------------
// The node

/// The node under test. (The client is declared first so it is dropped
/// before the node shuts down.)
struct System {
    client: Client,
    node: TestNode,
    clock: Arc<ManualClock>,
}

impl System {
    async fn start() -> Result<System, String> {
        let clock = Arc::new(ManualClock::new(T0));
        let node = TestNode::start_with(|_| {}, Some(clock.clone()));
        let client = connect(&node).await?;
        let sys = System {
            client,
            node,
            clock,
        };
        sys.db()
            .create_collection(COLL)
            .await
            .map_err(|e| format!("create collection: {e}"))?;
        Ok(sys)
    }

    fn db(&self) -> Database {
        self.client.database(DB)
    }

    fn coll(&self) -> Collection<Document> {
        self.db().collection(COLL)
    }

    async fn restart(&mut self, monitor: bool) -> Result<(), String> {
        self.node
            .config
            .set_parameter
            .set("ttlMonitorEnabled", ParamValue::Bool(monitor))
            .map_err(|e| format!("config: {e}"))?;
        self.client.clone().shutdown().await;
        self.node.restart();
        self.client = connect(&self.node).await?;
        Ok(())
    }

    /// Runs one step; `Err` is an error the model has no outcome for.
    async fn run(&mut self, op: &Op, model: &Model) -> Result<Outcome, String> {
        let now = model.now;
        let c = self.coll();
        let by_id = |id: i32| doc! { "_id": id };
        Ok(match op {
            Op::Insert(d) => unit(c.insert_one(d.build(now)).await)?,
            Op::InsertMany { docs, ordered } => {
                let docs = docs.iter().map(|d| d.build(now)).collect();
                insert_batch(&c, docs, *ordered).await?
            }
            Op::SetV { id, v, upsert } => updated(
                c.update_one(by_id(*id), doc! { "$set": { "v": *v } })
                    .upsert(*upsert)
                    .await,
            )?,
            Op::IncV { id, by, upsert } => updated(
                c.update_one(by_id(*id), doc! { "$inc": { "v": *by } })
                    .upsert(*upsert)
                    .await,
            )?,
            Op::SetExp { id, exp, upsert } => {
                let update = match exp.value(now) {
                    Some(e) => doc! { "$set": { "exp": e } },
                    None => doc! { "$unset": { "exp": "" } },
                };
                updated(c.update_one(by_id(*id), update).upsert(*upsert).await)?
            }
            Op::Replace { id, v, exp, upsert } => updated(
                c.replace_one(by_id(*id), fields(*v, *exp, now))
                    .upsert(*upsert)
                    .await,
            )?,
            Op::Rewrite { id, with_id } => {
                let mut replacement = model.docs.get(id).cloned().unwrap_or_default();
                if !with_id {
                    replacement.remove("_id");
                }
                updated(c.replace_one(by_id(*id), replacement).await)?
            }
            Op::DeleteOne { id } => match c.delete_one(by_id(*id)).await {
                Ok(r) => Outcome::Deleted(r.deleted_count),
                Err(e) => return Err(format!("delete_one: {e}")),
            },
            Op::DeleteMany { below } => {
                match c.delete_many(doc! { "v": { "$lt": *below } }).await {
                    Ok(r) => Outcome::Deleted(r.deleted_count),
                    Err(e) => return Err(format!("delete_many: {e}")),
                }
            }
            Op::CreateTtl {
                descending,
                secs,
                partial,
            } => {
                let mut o = IndexOptions::builder()
                    .expire_after(Duration::from_secs(u64::from(*secs)))
                    .build();
                o.partial_filter_expression = partial.map(|p| doc! { "v": { "$gte": p } });
                let key = doc! { "exp": if *descending { -1 } else { 1 } };
                unit(
                    c.create_index(IndexModel::builder().keys(key).options(o).build())
                        .await,
                )?
            }
            Op::CollModTtl { descending, secs } => unit(
                self.db()
                    .run_command(doc! {
                        "collMod": COLL,
                        "index": { "name": ttl_name(*descending), "expireAfterSeconds": *secs as i32 },
                    })
                    .await,
            )?,
            Op::DropTtl { descending } => unit(c.drop_index(ttl_name(*descending)).await)?,
            Op::CreateVIndex { unique } => {
                let o = IndexOptions::builder().unique(*unique).build();
                unit(
                    c.create_index(IndexModel::builder().keys(doc! { "v": 1 }).options(o).build())
                        .await,
                )?
            }
            Op::DropVIndex => unit(c.drop_index("v_1").await)?,
            Op::Bulk {
                first,
                count,
                stride,
                exp,
            } => insert_batch(&c, bulk(*first, *count, *stride, *exp, now), false).await?,
            Op::Advance { ms, moves } => {
                self.clock.advance(Duration::from_millis(*ms as u64));
                let later = DateTime::from_millis(now + ms + MOVED_BY_MS);
                let mut out = Vec::new();
                for id in moves {
                    let r = c
                        .update_one(by_id(*id), doc! { "$set": { "exp": later } })
                        .await
                        .map_err(|e| format!("move {id}: {e}"))?;
                    out.push((r.matched_count, r.modified_count));
                }
                Outcome::Moved(out)
            }
            Op::SetMonitor { enabled } => {
                let cmd = doc! { "setParameter": 1, "ttlMonitorEnabled": *enabled };
                let r = unit(self.client.database("admin").run_command(cmd).await)?;
                if !*enabled {
                    self.quiesce().await?;
                }
                r
            }
            Op::Restart { monitor } => {
                self.restart(*monitor).await?;
                Outcome::Ok
            }
        })
    }

    /// The collection's documents by `_id`.
    async fn contents(&self) -> Result<BTreeMap<i32, Document>, String> {
        let docs = self.find(doc! {}, None).await?;
        let mut out = BTreeMap::new();
        for d in docs {
            let id = d
                .get_i32("_id")
                .map_err(|_| format!("a document without an int _id: {d}"))?;
            out.insert(id, d);
        }
        Ok(out)
    }

    /// Documents stored, hidden or not: the records a full `_id` scan
    /// examines (explain's `totalKeysExamined`).
    async fn stored(&self) -> Result<usize, String> {
        let explain = doc! {
            "explain": { "find": COLL, "filter": {}, "hint": { "_id": 1 } },
            "verbosity": "executionStats",
        };
        let reply = self
            .db()
            .run_command(explain)
            .await
            .map_err(|e| format!("explain: {e}"))?;
        reply
            .get_document("executionStats")
            .and_then(|s| s.get_i64("totalKeysExamined"))
            .map(|n| n as usize)
            .map_err(|e| format!("explain: {e}"))
    }

    async fn find(&self, filter: Document, hint: Option<Hint>) -> Result<Vec<Document>, String> {
        let shown = format!("find({filter}) hint {hint:?}");
        let coll = self.coll();
        let mut find = coll.find(filter).sort(doc! { "_id": 1 });
        if let Some(hint) = hint {
            find = find.hint(hint);
        }
        find.await
            .map_err(|e| format!("{shown}: {e}"))?
            .try_collect()
            .await
            .map_err(|e| format!("{shown}: {e}"))
    }

    async fn indexes(&self) -> Result<Vec<String>, String> {
        let r = self
            .db()
            .run_command(doc! { "listIndexes": COLL, "cursor": {} })
            .await
            .map_err(|e| format!("listIndexes: {e}"))?;
        let batch = r
            .get_document("cursor")
            .and_then(|c| c.get_array("firstBatch"))
            .map_err(|e| format!("listIndexes reply {r}: {e}"))?;
        let mut out = Vec::new();
        for spec in batch {
            let spec = spec
                .as_document()
                .ok_or("an index spec that is not a document")?;
            out.push(describe_index(spec)?);
        }
        out.sort();
        Ok(out)
    }

    async fn ttl_passes(&self) -> Result<i64, String> {
        self.ttl_counter("passes").await
    }

    /// A counter of `serverStatus.metrics.ttl`.
    async fn ttl_counter(&self, name: &str) -> Result<i64, String> {
        let s = self
            .client
            .database("admin")
            .run_command(doc! { "serverStatus": 1 })
            .await
            .map_err(|e| format!("serverStatus: {e}"))?;
        s.get_document("metrics")
            .and_then(|m| m.get_document("ttl"))
            .and_then(|t| t.get_i64(name))
            .map_err(|e| format!("serverStatus.metrics.ttl.{name}: {e}"))
    }

    /// Returns once a just-disabled monitor has looked at the parameter
    /// twice (woken by zero-length clock jumps): a pass that was running
    /// has ended, and no other starts.
    async fn quiesce(&self) -> Result<(), String> {
        let start = self.ttl_counter("monitorWakeups").await?;
        let deadline = Instant::now() + DEADLINE;
        loop {
            self.clock.advance(Duration::ZERO);
            if self.ttl_counter("monitorWakeups").await? >= start + 2 {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err(format!("the monitor did not wake within {DEADLINE:?}"));
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// Returns once a complete monitor pass started after this call has
    /// ended (passes grew by two), nudging the monitor with zero-length
    /// clock jumps (the clock does not move).
    async fn full_pass(&self) -> Result<(), String> {
        let start = self.ttl_passes().await?;
        let deadline = Instant::now() + DEADLINE;
        loop {
            self.clock.advance(Duration::ZERO);
            if self.ttl_passes().await? >= start + 2 {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err(format!("no complete TTL pass within {DEADLINE:?}"));
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

/// An `insert` command's outcome: the position and code of each failure.
async fn insert_batch(
    c: &Collection<Document>,
    docs: Vec<Document>,
    ordered: bool,
) -> Result<Outcome, String> {
    match c.insert_many(docs).ordered(ordered).await {
        Ok(_) => Ok(Outcome::Inserted(vec![])),
        Err(e) => match e.kind.as_ref() {
            ErrorKind::InsertMany(m) if m.write_concern_error.is_none() => Ok(Outcome::Inserted(
                m.write_errors
                    .iter()
                    .flatten()
                    .map(|w| (w.index, w.code))
                    .collect(),
            )),
            _ => Err(format!("insert_many: {e}")),
        },
    }
}

async fn connect(node: &TestNode) -> Result<Client, String> {
    Client::with_uri_str(node.uri())
        .await
        .map_err(|e| format!("connect: {e}"))
}

fn describe_index(spec: &Document) -> Result<String, String> {
    let name = spec
        .get_str("name")
        .map_err(|_| format!("index without a name: {spec}"))?;
    let unique = name != "_id_" && spec.get_bool("unique").unwrap_or(false);
    let ttl = match spec.get("expireAfterSeconds") {
        None => None,
        Some(Bson::Int32(n)) => Some(i64::from(*n)),
        Some(Bson::Int64(n)) => Some(*n),
        Some(other) => return Err(format!("{name}: expireAfterSeconds {other}")),
    };
    let partial = match spec.get_document("partialFilterExpression") {
        Err(_) => None,
        Ok(f) => Some(
            f.get_document("v")
                .and_then(|v| v.get_i32("$gte"))
                .map_err(|_| format!("{name}: partialFilterExpression {f}"))?,
        ),
    };
    Ok(index_line(name, unique, ttl, partial))
}

fn is_error(o: &Outcome) -> bool {
    match o {
        Outcome::Code(_) => true,
        Outcome::Inserted(errors) => !errors.is_empty(),
        _ => false,
    }
}

fn error_outcome(e: mongodb::error::Error) -> Result<Outcome, String> {
    code(&e)
        .map(Outcome::Code)
        .ok_or_else(|| format!("not a server error: {e}"))
}

fn unit<T>(r: mongodb::error::Result<T>) -> Result<Outcome, String> {
    match r {
        Ok(_) => Ok(Outcome::Ok),
        Err(e) => error_outcome(e),
    }
}

fn updated(r: mongodb::error::Result<mongodb::results::UpdateResult>) -> Result<Outcome, String> {
    match r {
        Ok(r) => Ok(Outcome::Updated {
            matched: r.matched_count,
            modified: r.modified_count,
            upserted: r.upserted_id.is_some(),
        }),
        Err(e) => error_outcome(e),
    }
}

// ---------------------------------------------------------------------------
// Comparing

/// The first difference between the node's documents and the model's.
/// Documents in `lingering` may still be on the node (the monitor has not
/// deleted them yet); `Ok(true)` means none of them is left.
fn compare(
    node: &BTreeMap<i32, Document>,
    model: &BTreeMap<i32, Document>,
    lingering: &[Document],
) -> Result<bool, String> {
    let mut settled = true;
    let ids = node
        .keys()
        .chain(model.keys())
        .collect::<std::collections::BTreeSet<_>>();
    for id in ids {
        match (node.get(id), model.get(id)) {
            (Some(n), Some(m)) if same_doc(n, m) => {}
            (Some(n), Some(m)) => {
                return Err(format!("_id {id} differs: node has {n}, model has {m}"));
            }
            (None, Some(m)) => {
                return Err(format!("_id {id} is missing from the node: model has {m}"));
            }
            (Some(n), None) => match lingering.iter().find(|l| l.get("_id") == n.get("_id")) {
                Some(l) if same_doc(n, l) => settled = false,
                Some(l) => {
                    return Err(format!(
                        "_id {id} is due and not yet deleted, but differs: node has {n}, model had {l}"
                    ));
                }
                None => return Err(format!("_id {id} is extra on the node: {n}")),
            },
            (None, None) => unreachable!(),
        }
    }
    Ok(settled)
}

/// Waits until the node shows exactly the model, `expired` documents
/// allowed to linger meanwhile. They must go without help within
/// [`PROMPT_DEADLINE`] (the jump or the write wakes the monitor); after
/// that the monitor is nudged, only to tell a late deletion from none.
/// Gives up as soon as a whole pass has run since the step and left them.
async fn settle(sys: &System, model: &Model, expired: &[Document]) -> Result<(), String> {
    let start = Instant::now();
    let passes = sys.ttl_passes().await?;
    let mut late = false;
    loop {
        // The counter first: a pass that ended before the contents were
        // read had its deletions in them.
        let passes_now = sys.ttl_passes().await?;
        // Due documents are hidden at once; the monitor must still delete
        // them (a dropped TTL index would show them again).
        let settled = compare(&sys.contents().await?, &model.docs, expired)?
            && sys.stored().await? == model.docs.len();
        let why = if settled && !late {
            let waited = start.elapsed().as_millis() as u64;
            TALLY.longest_wait_ms.fetch_max(waited, Ordering::Relaxed);
            return Ok(());
        } else if settled {
            format!("only a nudged monitor deleted (not within {PROMPT_DEADLINE:?})")
        } else if passes_now >= passes + 2 {
            "a complete TTL pass ran after the step and left".to_owned()
        } else if start.elapsed() > DEADLINE {
            format!("no TTL pass completed within {DEADLINE:?} and left")
        } else {
            if start.elapsed() > PROMPT_DEADLINE {
                late = true;
                sys.clock.advance(Duration::ZERO);
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
            continue;
        };
        let due: Vec<String> = expired.iter().take(10).map(|d| d.to_string()).collect();
        let more = expired.len().saturating_sub(due.len());
        return Err(format!(
            "{why} the {} documents due (clock at T0+{} ms): {}{}",
            expired.len(),
            model.now - T0,
            due.join(", "),
            if more > 0 {
                format!(" and {more} more")
            } else {
                String::new()
            }
        ));
    }
}

/// Every index read returns what a collection scan and the model return.
async fn check_reads(sys: &System, model: &Model) -> Result<(), String> {
    for probe in model.probes() {
        let filter = probe.filter();
        let through_index = sys
            .find(filter.clone(), Some(Hint::Name(probe.index().into())))
            .await?;
        let scanned = sys
            .find(filter.clone(), Some(Hint::Keys(doc! { "$natural": 1 })))
            .await?;
        let ids = |docs: &[Document]| docs.iter().map(id_of).collect::<Vec<_>>();
        let expected: Vec<i32> = model
            .docs
            .iter()
            .filter(|(_, d)| probe.matches(d))
            .map(|(id, _)| *id)
            .collect();
        let (via, scan) = (ids(&through_index), ids(&scanned));
        if via != scan || scan != expected {
            return Err(format!(
                "find({filter}): through {} gives _ids {via:?}, a collection scan {scan:?}, the model {expected:?}",
                probe.index()
            ));
        }
    }
    Ok(())
}

async fn check_indexes(sys: &System, model: &Model) -> Result<(), String> {
    let (node, expected) = (sys.indexes().await?, model.indexes());
    if node != expected {
        return Err(format!(
            "listIndexes differs:\n    node:  {node:?}\n    model: {expected:?}"
        ));
    }
    Ok(())
}

/// Runs one sequence; `Err` describes the first mismatch.
async fn run_sequence(ops: &[Op]) -> Result<(), String> {
    count(&TALLY.cases, 1);
    let mut sys = System::start().await?;
    let mut model = Model::new();
    for (step, op) in ops.iter().enumerate() {
        let at = |e: String| format!("step {step} {op:?}: {e}");
        let got = sys.run(op, &model).await.map_err(at)?;
        let expected = model.apply(op);
        if got != expected {
            return Err(at(format!(
                "node reported {got:?}, model predicts {expected:?}"
            )));
        }
        let expired = model.expire();
        count(&TALLY.steps, 1);
        count(&TALLY.errors, usize::from(is_error(&got)));
        count(
            &TALLY.restarts,
            usize::from(matches!(op, Op::Restart { .. })),
        );
        count(&TALLY.expired, expired.len());
        if !op.wakes_monitor() {
            count(&TALLY.expired_on_write, expired.len());
        }
        if model.docs.is_empty() {
            count(&TALLY.expired_whole, expired.len());
        }
        if matches!(op, Op::SetMonitor { .. } | Op::Restart { .. }) {
            count(&TALLY.expired_after_outage, expired.len());
        }
        if expired.is_empty() && !op.wakes_monitor() {
            compare(&sys.contents().await.map_err(at)?, &model.docs, &[]).map_err(at)?;
        } else {
            settle(&sys, &model, &expired).await.map_err(at)?;
        }
        if op.wakes_monitor() && model.monitor {
            sys.full_pass().await.map_err(at)?;
            compare(&sys.contents().await.map_err(at)?, &model.docs, &[])
                .map_err(|e| at(format!("after a full TTL pass: {e}")))?;
        }
        check_reads(&sys, &model).await.map_err(at)?;
        if matches!(
            op,
            Op::Restart { .. }
                | Op::CreateTtl { .. }
                | Op::CollModTtl { .. }
                | Op::DropTtl { .. }
                | Op::CreateVIndex { .. }
                | Op::DropVIndex
        ) {
            check_indexes(&sys, &model).await.map_err(at)?;
        }
    }
    Ok(())
}

/// What the cases exercised, printed at the end (`--nocapture`) to show
/// the generator reaches the interesting states.
struct Tally {
    cases: AtomicU64,
    steps: AtomicU64,
    errors: AtomicU64,
    expired: AtomicU64,
    expired_on_write: AtomicU64,
    expired_whole: AtomicU64,
    restarts: AtomicU64,
    longest_wait_ms: AtomicU64,
    moves_hidden: AtomicU64,
    expired_after_outage: AtomicU64,
}

static TALLY: Tally = Tally {
    cases: AtomicU64::new(0),
    steps: AtomicU64::new(0),
    errors: AtomicU64::new(0),
    expired: AtomicU64::new(0),
    expired_on_write: AtomicU64::new(0),
    expired_whole: AtomicU64::new(0),
    restarts: AtomicU64::new(0),
    longest_wait_ms: AtomicU64::new(0),
    moves_hidden: AtomicU64::new(0),
    expired_after_outage: AtomicU64::new(0),
};

fn count(counter: &AtomicU64, n: usize) {
    counter.fetch_add(n as u64, Ordering::Relaxed);
}

impl fmt::Display for Tally {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = |c: &AtomicU64| c.load(Ordering::Relaxed);
        write!(
            f,
            "{} cases, {} steps, {} error outcomes, {} restarts; {} documents expired \
             ({} due when written, {} in steps that emptied the collection, {} when \
             the monitor came back); \
             longest wait for the monitor {} ms; moves of due documents (hidden): {}",
            n(&self.cases),
            n(&self.steps),
            n(&self.errors),
            n(&self.restarts),
            n(&self.expired),
            n(&self.expired_on_write),
            n(&self.expired_whole),
            n(&self.expired_after_outage),
            n(&self.longest_wait_ms),
            n(&self.moves_hidden),
        )
    }
}

/// The step a failure names (`run_sequence` starts each with "step N ").
fn failing_step(reason: &str) -> Option<usize> {
    reason
        .strip_prefix("step ")?
        .split(' ')
        .next()?
        .parse()
        .ok()
}

struct Sequence<'a>(&'a [Op]);

impl fmt::Display for Sequence<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, op) in self.0.iter().enumerate() {
            writeln!(f, "  {i:>2}: {op:?}")?;
        }
        Ok(())
    }
}

fn cases() -> u32 {
    std::env::var("EBB_MODEL_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(16)
}

#[test]
fn random_operations_with_restarts_match_the_model() {
    let config = Config {
        cases: cases(),
        failure_persistence: None,
        // Each shrink step starts a node: bound the search in time too.
        max_shrink_iters: 1024,
        max_shrink_time: 10 * 60 * 1000,
        ..Config::default()
    };
    let mut runner = TestRunner::new(config);
    let result = runner.run(&sequence(), |ops| {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("tokio runtime");
        rt.block_on(run_sequence(&ops)).map_err(TestCaseError::fail)
    });
    match result {
        Ok(()) => eprintln!("model test: {TALLY}"),
        Err(TestError::Fail(reason, ops)) => {
            // The steps after the failing one never ran.
            let ran = failing_step(reason.message()).map_or(ops.len(), |s| s + 1);
            let ops = &ops[..ran.min(ops.len())];
            panic!(
                "the node disagrees with the model.\nminimal sequence ({} ops):\n{}first mismatch: {reason}",
                ops.len(),
                Sequence(ops)
            )
        }
        Err(e) => panic!("{e}"),
    }
}
