//! Statement-level writes on one collection: insert, update, delete,
//! findAndModify and index builds (TTL expiry is `crate::ttl`).
//!
//! Each function runs on the collection's single writer (the actor calls it
//! on a blocking thread), finds its targets on a snapshot taken at the start
//! of the statement, writes through a [`Writer`], and commits before the
//! next statement starts, so statement N+1 sees statement N. Batches are
//! committed without a WAL sync: the caller decides durability for the
//! whole group of commands it runs (see the collection actor). Statements are
//! not atomic with one another, as in MongoDB: an ordered command stops at
//! the first error and keeps what came before it.

use std::borrow::Cow;
use std::sync::Arc;
use std::time::Instant;

use bson::{RawBsonRef, RawDocument, RawDocumentBuf};

use crate::collection::Collection;
use crate::engine::{Direction, Engine, KeyRange};
use crate::plan::exec::{Found, QueryCursor};
use crate::plan::{self, Hint, QuerySpec};
use crate::timeseries::rewrite::Rewrites;
use crate::write::writer::{Writer, prepare, prepare_insert, record_key};
use ebb_lang::encoding::collation::Choice;
use ebb_lang::error::{Error, Result};
use ebb_lang::query::filter::Filter;
use ebb_lang::query::interrupt::{self, Interrupt};
use ebb_lang::query::sort::SortSpec;
use ebb_lang::update::{UpdateContext, UpdateSpec};

/// Uncommitted operations after which a long statement commits a chunk.
pub(crate) const CHUNK_OPS: usize = 16 * 1024;

/// Whether a statement commits what it wrote so far before going on: after
/// [`CHUNK_OPS`] operations, except while a replica-set member applies an
/// entry, which commits whole with the record that it is applied.
fn chunk_full(w: &Writer<'_>) -> bool {
    w.pending_ops() >= CHUNK_OPS && !ebb_lang::decided::applying()
}

/// A failed statement of a multi-statement command.
#[derive(Debug, Clone, PartialEq)]
pub struct WriteError {
    pub index: usize,
    pub error: Error,
}

/// Result of an `insert`.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct InsertOutcome {
    pub n: u64,
    pub errors: Vec<WriteError>,
    /// The earliest TTL due time (millis) among the documents written, so
    /// the monitor can be woken for it.
    pub earliest_due: Option<i64>,
}

/// Documents whose records are looked up together before they are
/// inserted (one batched read instead of one read each).
const PREFETCH: usize = 256;

/// Inserts documents in order; `ordered` stops at the first failure.
pub fn insert(
    engine: &dyn Engine,
    coll: &Arc<Collection>,
    docs: Vec<RawDocumentBuf>,
    ordered: bool,
) -> Result<InsertOutcome> {
    let statement = InsertStatement {
        docs: Arc::new(docs),
        ordered,
        bypass_validation: false,
        prepared: false,
    };
    insert_with(engine, coll, statement)
}

/// Runs one insert statement.
pub fn insert_with(
    engine: &dyn Engine,
    coll: &Arc<Collection>,
    statement: InsertStatement,
) -> Result<InsertOutcome> {
    if coll.timeseries.is_some() {
        let mut done = insert_group(engine, coll, vec![statement]);
        return done.pop().unwrap_or_else(|| Ok(InsertOutcome::default()));
    }
    let InsertStatement {
        docs,
        ordered,
        bypass_validation,
        prepared,
    } = statement;
    let mut w = Writer::new(engine, coll)?;
    w.bypass_validation(bypass_validation);
    let first_commit = docs.len().min(CHUNK_OPS);
    let bytes = docs[..first_commit]
        .iter()
        .map(|d| d.as_bytes().len())
        .sum();
    w.reserve(first_commit, bytes);
    let mut out = InsertOutcome::default();
    let mut docs = docs.iter().enumerate().peekable();
    'statement: while docs.peek().is_some() {
        let window: Vec<(usize, Result<Keyed>)> = docs
            .by_ref()
            .take(PREFETCH)
            .map(|(index, doc)| (index, keyed(coll, doc, prepared)))
            .collect();
        let keys = window.iter().filter_map(|(_, d)| d.as_ref().ok());
        w.prefetch(keys.map(|d| d.key.as_slice()))?;
        for (index, keyed) in window {
            match keyed.and_then(|d| w.insert_keyed(&d.doc, d.key)) {
                Ok(()) => out.n += 1,
                Err(error) => {
                    out.errors.push(WriteError { index, error });
                    if ordered {
                        break 'statement;
                    }
                }
            }
            if chunk_full(&w) {
                w.commit(false)?;
            }
        }
    }
    w.commit(false)?;
    out.earliest_due = w.earliest_due();
    Ok(out)
}

/// A document of an insert statement, prepared, with its record key.
struct Keyed<'d> {
    doc: Cow<'d, RawDocument>,
    key: Vec<u8>,
}

/// Prepares `doc` unless it already is, and makes its record key.
fn keyed<'d>(coll: &Collection, doc: &'d RawDocumentBuf, prepared: bool) -> Result<Keyed<'d>> {
    let doc = match prepared {
        true => Cow::Borrowed(doc.as_ref()),
        false => match prepare(doc)? {
            Some(rebuilt) => Cow::Owned(rebuilt),
            None => Cow::Borrowed(doc.as_ref()),
        },
    };
    let key = record_key(coll, &doc)?;
    Ok(Keyed { doc, key })
}

/// One `insert` command's statement.
#[derive(Debug)]
pub struct InsertStatement {
    /// Shared with the sender, which keeps them to send again if the
    /// collection is recreated under it, so sending copies nothing.
    pub docs: Arc<Vec<RawDocumentBuf>>,
    pub ordered: bool,
    pub bypass_validation: bool,
    /// Every document already went through [`prepare_insert`]
    /// (`writer::prepare_statement`, run before the writer).
    pub prepared: bool,
}

/// Insert statements queued together on the writer, run in order. On a
/// time-series collection they share one pass and one commit
/// (`timeseries::insert_statements`): each open bucket they add to is
/// rewritten once for the group instead of once per statement, which is
/// what an insert statement mostly costs there. A failed commit then fails
/// every statement of the group. Elsewhere each runs as [`insert_with`].
pub fn insert_group(
    engine: &dyn Engine,
    coll: &Arc<Collection>,
    statements: Vec<InsertStatement>,
) -> Vec<Result<InsertOutcome>> {
    let Some(opts) = &coll.timeseries else {
        return statements
            .into_iter()
            .map(|s| insert_with(engine, coll, s))
            .collect();
    };
    let n = statements.len();
    let run = || -> Result<Vec<InsertOutcome>> {
        let mut w = Writer::new(engine, coll)?;
        // Time-series collections refuse validators; bypass only what every
        // statement asked to bypass all the same.
        w.bypass_validation(statements.iter().all(|s| s.bypass_validation));
        let batches = statements
            .into_iter()
            .map(|s| (Arc::unwrap_or_clone(s.docs), s.ordered))
            .collect();
        let done = crate::timeseries::insert_statements(engine, &mut w, coll, opts, batches)?;
        w.commit(false)?;
        let earliest_due = w.earliest_due();
        Ok(done
            .into_iter()
            .map(|d| InsertOutcome {
                n: d.n,
                errors: d
                    .errors
                    .into_iter()
                    .map(|(index, error)| WriteError { index, error })
                    .collect(),
                earliest_due,
            })
            .collect())
    };
    match run() {
        Ok(outs) => outs.into_iter().map(Ok).collect(),
        Err(e) => vec![Err(e); n],
    }
}

/// One statement of a `delete` command.
#[derive(Debug, Clone)]
pub struct DeleteStatement {
    pub filter: Filter,
    pub collation: Choice,
    /// `limit: 1`: delete at most one document.
    pub just_one: bool,
    pub hint: Option<Hint>,
    /// When the command's `maxTimeMS` runs out.
    pub deadline: Option<Instant>,
    /// The operation's `killOp` flag, which its query (and a `$where`
    /// script in it) polls.
    pub interrupt: Option<Interrupt>,
}

/// Result of a `delete`.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct DeleteOutcome {
    pub n: u64,
    pub errors: Vec<WriteError>,
    /// What each statement that completed did, in order.
    pub statements: Vec<StatementStats>,
}

/// What one update or delete statement did and read, for its profiler
/// entry (mongod profiles each statement on its own).
#[derive(Debug, Default, Clone, PartialEq)]
pub struct StatementStats {
    /// The statement's index in the batch.
    pub index: usize,
    pub matched: u64,
    pub modified: u64,
    pub upserted: bool,
    pub deleted: u64,
    pub examined: Examined,
}

/// What a statement's search for its targets read, and by which plan.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Examined {
    pub keys: u64,
    pub docs: u64,
    pub plan_summary: String,
}

pub fn delete(
    engine: &dyn Engine,
    coll: &Arc<Collection>,
    statements: Vec<DeleteStatement>,
    ordered: bool,
) -> Result<DeleteOutcome> {
    let mut out = DeleteOutcome::default();
    let mut w = Writer::new(engine, coll)?;
    for (index, st) in statements.into_iter().enumerate() {
        let q = QuerySpec {
            filter: st.filter,
            sort: None,
            hint: st.hint,
        }
        .collated(st.collation.resolve(coll.meta.default_collation()?));
        let limit = st.just_one.then_some(1);
        let before = out.n;
        let result = match &coll.timeseries {
            // Measurements go bucket by bucket once all are found.
            Some(opts) => {
                let mut doomed = Rewrites::default();
                for_each_target(
                    engine,
                    coll,
                    q,
                    limit,
                    (st.deadline, &st.interrupt),
                    |found| doomed.delete(&found.id_key),
                )
                .and_then(|examined| {
                    out.n += doomed.apply(&mut w, coll, opts)?;
                    Ok(examined)
                })
            }
            None => for_each_target(
                engine,
                coll,
                q,
                limit,
                (st.deadline, &st.interrupt),
                |found| {
                    w.remove(&found.id_key, &found.doc)?;
                    out.n += 1;
                    if chunk_full(&w) {
                        w.commit(false)?;
                    }
                    Ok(())
                },
            ),
        };
        w.commit(false)?;
        match result {
            Ok(examined) => out.statements.push(StatementStats {
                index,
                deleted: out.n - before,
                examined,
                ..StatementStats::default()
            }),
            Err(error) => {
                out.errors.push(WriteError { index, error });
                if ordered {
                    break;
                }
            }
        }
    }
    w.commit(false)?;
    Ok(out)
}

/// One statement of an `update` command.
#[derive(Debug, Clone)]
pub struct UpdateStatement {
    pub filter: Filter,
    pub collation: Choice,
    /// The filter as sent, for building an upserted document.
    pub filter_doc: RawDocumentBuf,
    pub update: UpdateSpec,
    pub multi: bool,
    pub upsert: bool,
    pub hint: Option<Hint>,
    /// `bypassDocumentValidation: true` on the command.
    pub bypass_validation: bool,
    /// When the command's `maxTimeMS` runs out.
    pub deadline: Option<Instant>,
    /// The operation's `killOp` flag, which its query (and a `$where`
    /// script in it) polls.
    pub interrupt: Option<Interrupt>,
}

/// Result of an `update`.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct UpdateOutcome {
    pub n: u64,
    pub n_modified: u64,
    /// `(statement index, _id)` of upserted documents.
    pub upserted: Vec<(usize, bson::Bson)>,
    pub errors: Vec<WriteError>,
    pub earliest_due: Option<i64>,
    /// What each statement that completed did, in order.
    pub statements: Vec<StatementStats>,
}

pub fn update(
    engine: &dyn Engine,
    coll: &Arc<Collection>,
    statements: Vec<UpdateStatement>,
    ordered: bool,
    now: bson::DateTime,
) -> Result<UpdateOutcome> {
    let mut out = UpdateOutcome::default();
    let mut w = Writer::new(engine, coll)?;
    for (index, st) in statements.into_iter().enumerate() {
        w.bypass_validation(st.bypass_validation);
        w.replacing(matches!(st.update, UpdateSpec::Replacement(_)));
        let result = update_one_statement(engine, coll, &mut w, &st, index, now, &mut out);
        w.commit(false)?;
        match result {
            Ok(Some(id)) => out.upserted.push((index, id)),
            Ok(None) => {}
            Err(error) => {
                out.errors.push(WriteError { index, error });
                if ordered {
                    break;
                }
            }
        }
    }
    w.commit(false)?;
    out.earliest_due = w.earliest_due();
    Ok(out)
}

/// Applies one update statement; returns the upserted `_id`, if any.
fn update_one_statement(
    engine: &dyn Engine,
    coll: &Arc<Collection>,
    w: &mut Writer<'_>,
    st: &UpdateStatement,
    index: usize,
    now: bson::DateTime,
    out: &mut UpdateOutcome,
) -> Result<Option<bson::Bson>> {
    // The statement's collation also decides `$`, array filters and the
    // operators' comparisons.
    let filter = st
        .filter
        .clone()
        .collated(st.collation.resolve(coll.meta.default_collation()?));
    let ctx = UpdateContext {
        is_insert: false,
        now,
        collation: filter.collation().cloned(),
        // A measurement's `_id` is a field like any other (MongoDB 8.0).
        mutable_id: coll.timeseries.is_some(),
    };
    let q = QuerySpec {
        filter: filter.clone(),
        sort: None,
        hint: st.hint.clone(),
    };
    let limit = (!st.multi).then_some(1);
    let (mut matched, mut modified) = (0u64, 0u64);
    // Measurements change bucket by bucket once all are found.
    let mut rewrites = Rewrites::default();
    let examined = for_each_target(
        engine,
        coll,
        q,
        limit,
        (st.deadline, &st.interrupt),
        |found| {
            matched += 1;
            if let Some(new) = st.update.apply(&found.doc, &filter, &ctx)? {
                match &coll.timeseries {
                    Some(opts) => rewrites.replace(&found.id_key, new, opts)?,
                    None => w.replace(&found.id_key, &found.doc, &new)?,
                }
                modified += 1;
                out.n_modified += 1;
            }
            if chunk_full(w) {
                w.commit(false)?;
            }
            Ok(())
        },
    )?;
    if let Some(opts) = &coll.timeseries {
        rewrites.apply(w, coll, opts)?;
    }
    out.n += matched;
    let mut stats = StatementStats {
        index,
        matched,
        modified,
        examined,
        ..StatementStats::default()
    };
    if matched > 0 || !st.upsert {
        out.statements.push(stats);
        return Ok(None);
    }
    let doc = st.update.upsert_document(
        &st.filter_doc,
        &UpdateContext {
            is_insert: true,
            ..ctx
        },
    )?;
    let (_, id) = insert_upserted(engine, coll, w, doc)?;
    out.n += 1;
    stats.upserted = true;
    out.statements.push(stats);
    Ok(id)
}

/// Inserts the document an upsert built (a measurement into its bucket on
/// a time-series collection); returns it as stored and its `_id`.
fn insert_upserted(
    engine: &dyn Engine,
    coll: &Arc<Collection>,
    w: &mut Writer<'_>,
    doc: RawDocumentBuf,
) -> Result<(RawDocumentBuf, Option<bson::Bson>)> {
    if let Some(opts) = &coll.timeseries {
        return crate::timeseries::rewrite::upsert(engine, w, coll, opts, doc);
    }
    let doc = prepare_insert(doc)?;
    w.insert(&doc)?;
    let id = doc
        .get("_id")?
        .map(|v| bson::Bson::try_from(v).unwrap_or(bson::Bson::Null));
    Ok((doc, id))
}

/// Runs a query on a fresh snapshot and calls `each` for every match,
/// stopping after `limit` (or with MaxTimeMSExpired at the deadline, or
/// as the interrupt says once the operation is killed); returns what the
/// query read.
fn for_each_target(
    engine: &dyn Engine,
    coll: &Arc<Collection>,
    q: QuerySpec,
    limit: Option<u64>,
    (deadline, interrupt): (Option<Instant>, &Option<Interrupt>),
    mut each: impl FnMut(Found) -> Result<()>,
) -> Result<Examined> {
    let _scope = interrupt::Scope::enter(interrupt.clone());
    let plan = plan::plan(&coll.meta, &q)?;
    let snap = engine.snapshot();
    let mut cursor =
        QueryCursor::new(coll, plan, q.filter, q.sort, 0, limit)?.with_deadline(deadline);
    cursor.try_for_each(snap.as_ref(), &mut |found| each(found).map(|()| true))?;
    Ok(Examined {
        keys: cursor.stats.keys_examined,
        docs: cursor.stats.docs_examined,
        plan_summary: cursor.plan_summary().to_owned(),
    })
}

/// A `findAndModify`.
#[derive(Debug, Clone)]
pub struct FindAndModify {
    pub filter: Filter,
    pub collation: Choice,
    pub filter_doc: RawDocumentBuf,
    pub sort: Option<SortSpec>,
    pub hint: Option<Hint>,
    /// `None` = remove.
    pub update: Option<UpdateSpec>,
    /// Return the document after the change.
    pub return_new: bool,
    pub upsert: bool,
    /// `bypassDocumentValidation: true`.
    pub bypass_validation: bool,
    /// When the command's `maxTimeMS` runs out.
    pub deadline: Option<Instant>,
    /// The operation's `killOp` flag, which its query (and a `$where`
    /// script in it) polls.
    pub interrupt: Option<Interrupt>,
}

/// Result of a `findAndModify`.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct FindAndModifyOutcome {
    pub value: Option<RawDocumentBuf>,
    pub n: u64,
    pub updated_existing: bool,
    pub upserted: Option<bson::Bson>,
    pub earliest_due: Option<i64>,
}

pub fn find_and_modify(
    engine: &dyn Engine,
    coll: &Arc<Collection>,
    fam: FindAndModify,
    now: bson::DateTime,
) -> Result<FindAndModifyOutcome> {
    let mut out = FindAndModifyOutcome::default();
    let mut w = Writer::new(engine, coll)?;
    w.bypass_validation(fam.bypass_validation);
    w.replacing(matches!(fam.update, Some(UpdateSpec::Replacement(_))));
    let q = QuerySpec {
        filter: fam.filter.clone(),
        sort: fam.sort.clone(),
        hint: fam.hint.clone(),
    }
    .collated(fam.collation.resolve(coll.meta.default_collation()?));
    let filter = q.filter.clone();
    let mut target = None;
    for_each_target(
        engine,
        coll,
        q,
        Some(1),
        (fam.deadline, &fam.interrupt),
        |found| {
            target = Some(found);
            Ok(())
        },
    )?;
    let ctx = UpdateContext {
        is_insert: false,
        now,
        collation: filter.collation().cloned(),
        mutable_id: coll.timeseries.is_some(),
    };
    // A measurement changes through its bucket (`timeseries::rewrite`).
    let mut rewrites = Rewrites::default();
    match (target, &fam.update) {
        (Some(found), None) => {
            match &coll.timeseries {
                Some(_) => rewrites.delete(&found.id_key)?,
                None => w.remove(&found.id_key, &found.doc)?,
            }
            out.n = 1;
            out.value = Some(found.doc);
        }
        (Some(found), Some(spec)) => {
            let new = spec.apply(&found.doc, &filter, &ctx)?;
            let after = match new {
                Some(new) => {
                    match &coll.timeseries {
                        Some(opts) => rewrites.replace(&found.id_key, new.clone(), opts)?,
                        None => w.replace(&found.id_key, &found.doc, &new)?,
                    }
                    new
                }
                None => found.doc.clone(),
            };
            out.n = 1;
            out.updated_existing = true;
            out.value = Some(if fam.return_new { after } else { found.doc });
        }
        (None, Some(spec)) if fam.upsert => {
            let doc = spec.upsert_document(
                &fam.filter_doc,
                &UpdateContext {
                    is_insert: true,
                    ..ctx
                },
            )?;
            let (doc, id) = insert_upserted(engine, coll, &mut w, doc)?;
            out.n = 1;
            out.upserted = id;
            out.value = fam.return_new.then_some(doc);
        }
        (None, _) => {}
    }
    if let Some(opts) = &coll.timeseries {
        rewrites.apply(&mut w, coll, opts)?;
    }
    w.commit(false)?;
    out.earliest_due = w.earliest_due();
    Ok(out)
}

/// Writes the entries of newly added indexes for every existing document.
/// `coll` already lists the new indexes; `new_names` says which they are.
/// Due documents the build meets are deleted rather than indexed, unless
/// `paced` (a TTL deletion rate is set) and no new index is unique: they
/// are then indexed, stay hidden, and the monitor deletes them at its
/// rate, so a new TTL index that makes much of a collection due does not
/// delete it all at once.
pub fn build_indexes(
    engine: &dyn Engine,
    coll: &Collection,
    new_names: &[String],
    paced: bool,
) -> Result<()> {
    let keygens: Vec<_> = coll
        .keygens
        .iter()
        .filter(|k| new_names.contains(&k.name))
        .collect();
    if keygens.is_empty() {
        return Ok(());
    }
    let delete_due = !paced || keygens.iter().any(|k| k.unique);
    let snap = engine.snapshot();
    let mut cursor = snap.cursor(coll.records(), KeyRange::all(), Direction::Forward)?;
    let mut w = Writer::new(engine, coll)?.keeping_due();
    // A new TTL index that is the collection's only one counts from here.
    let counted = crate::ttl::never::counted(coll).map(|kg| kg.cf);
    if keygens.iter().any(|k| Some(k.cf) == counted) {
        w.count_never_from_zero();
    }
    let mut entries = Vec::new();
    while cursor.valid() {
        let id_key = cursor.key();
        let doc = RawDocument::from_bytes(cursor.value())?;
        // A due document is gone for every reader and write: the build
        // deletes it rather than indexing it, so a unique index is not
        // refused over a document nobody can see.
        if delete_due && w.remove_due(id_key, doc)? {
            cursor.advance();
            continue;
        }
        for kg in &keygens {
            entries.clear();
            kg.keys(doc, id_key, &mut entries)?;
            w.built(kg, doc, &entries);
            let cover = kg.cover_value(doc, entries.len());
            for e in &entries {
                w.put_entry(kg, e, id_key, &cover)?;
            }
        }
        if chunk_full(&w) {
            w.commit(false)?;
        }
        cursor.advance();
    }
    cursor.status()?;
    w.commit(false)
}

/// Reads one document by `_id` on a snapshot (used by tests and tools).
pub fn get_by_id(
    engine: &dyn Engine,
    coll: &Collection,
    id: RawBsonRef<'_>,
) -> Result<Option<RawDocumentBuf>> {
    engine
        .get(coll.records(), &coll.record_key(id))?
        .map(|b| RawDocumentBuf::from_bytes(b).map_err(Error::from))
        .transpose()
}

#[cfg(test)]
mod timeseries_group_tests {
    use std::sync::Arc;

    use bson::{DateTime, RawBsonRef, doc, rawdoc};

    use super::{InsertStatement, insert_group};
    use crate::catalog::CollectionMeta;
    use crate::collection::Collection;
    use crate::engine::rocks::RocksEngine;
    use crate::engine::{Cf, Direction, Engine, KeyRange};
    use crate::timeseries::bucket::{bucket_count, unpack};
    use crate::timeseries::options::{TimeseriesOptions, internal_indexes};

    /// A time-series collection `{timeField: "t", metaField: "m"}`:
    /// buckets in family 10, its internal indexes from 11.
    fn collection() -> (tempfile::TempDir, RocksEngine, Arc<Collection>) {
        let (dir, engine) = crate::testing::temp_engine();
        let opts = TimeseriesOptions::parse(RawBsonRef::Document(
            &rawdoc! { "timeField": "t", "metaField": "m" },
        ))
        .unwrap();
        let options = doc! { "timeseries": opts.to_document() };
        let mut indexes = vec![CollectionMeta::id_index(10)];
        for (i, mut index) in internal_indexes(&options).into_iter().enumerate() {
            index.id = 11 + i as u64;
            indexes.push(index);
        }
        for index in &indexes {
            engine.create_cf(Cf::Id(index.id)).unwrap();
        }
        let meta = crate::testing::meta("c", options, None, indexes);
        (dir, engine, Collection::new(meta).unwrap())
    }

    fn statement(sensor: &str, seconds: std::ops::Range<i64>, ordered: bool) -> InsertStatement {
        InsertStatement {
            docs: seconds
                .map(|s| {
                    if s < 0 {
                        rawdoc! { "m": sensor, "x": s }
                    } else {
                        rawdoc! { "t": DateTime::from_millis(s * 1000), "m": sensor, "x": s }
                    }
                })
                .collect::<Vec<_>>()
                .into(),
            ordered,
            bypass_validation: false,
            prepared: false,
        }
    }

    /// Every stored measurement's `x`, bucket by bucket.
    fn stored(engine: &RocksEngine, coll: &Collection) -> Vec<Vec<i64>> {
        let opts = coll.timeseries.as_ref().unwrap();
        let mut cursor = engine
            .cursor(
                coll.records(),
                KeyRange::new(Vec::new(), None),
                Direction::Forward,
            )
            .unwrap();
        let mut out = Vec::new();
        while cursor.valid() {
            let bucket = bson::RawDocumentBuf::from_bytes(cursor.value().to_vec()).unwrap();
            let xs: Vec<i64> = unpack(&bucket, opts)
                .unwrap()
                .iter()
                .map(|m| m.get_i64("x").unwrap())
                .collect();
            assert_eq!(bucket_count(&bucket).unwrap(), xs.len() as u64);
            out.push(xs);
            cursor.advance();
        }
        out
    }

    #[test]
    fn statements_grouped_on_the_writer_keep_their_own_outcomes() {
        let (_dir, engine, coll) = collection();
        // The second statement's third document has no time: ordered, it
        // stops there; the third statement, unordered, skips its bad one.
        let mut bad = statement("a", 10..13, true);
        Arc::make_mut(&mut bad.docs).insert(2, rawdoc! { "m": "a", "x": 99_i64 });
        let mut skipping = statement("b", 0..3, false);
        Arc::make_mut(&mut skipping.docs).insert(1, rawdoc! { "m": "b", "x": 98_i64 });
        let outs = insert_group(
            &engine,
            &coll,
            vec![statement("a", 0..10, true), bad, skipping],
        );
        let outs: Vec<_> = outs.into_iter().map(Result::unwrap).collect();
        assert_eq!(outs.iter().map(|o| o.n).collect::<Vec<_>>(), vec![10, 2, 3]);
        assert_eq!(outs[1].errors.len(), 1);
        assert_eq!(outs[1].errors[0].index, 2);
        assert_eq!(outs[2].errors.len(), 1);
        assert_eq!(outs[2].errors[0].index, 1);
        let mut buckets = stored(&engine, &coll);
        buckets.sort();
        assert_eq!(buckets, vec![vec![0, 1, 2], (0..12).collect::<Vec<i64>>()]);
    }

    #[test]
    fn grouped_statements_roll_over_and_take_late_measurements_as_single_ones_do() {
        let (_dir, engine, coll) = collection();
        // 1,500 seconds of one sensor in three statements, the middle one
        // late: the first bucket fills at 1,000, the rest opens another.
        let outs = insert_group(
            &engine,
            &coll,
            vec![
                statement("a", 0..500, true),
                statement("a", 1000..1500, true),
                statement("a", 500..1000, true),
            ],
        );
        assert!(outs.iter().all(|o| o.as_ref().unwrap().errors.is_empty()));
        let buckets = stored(&engine, &coll);
        let mut all: Vec<i64> = buckets.iter().flatten().copied().collect();
        all.sort_unstable();
        assert_eq!(all, (0..1500).collect::<Vec<i64>>());
        assert!(buckets.iter().all(|b| b.len() <= 1000));
        assert_eq!(buckets.len(), 2);
        // A later group appends to the open bucket.
        let more = insert_group(&engine, &coll, vec![statement("a", 1500..1510, true)]);
        assert_eq!(more[0].as_ref().unwrap().n, 10);
        assert_eq!(stored(&engine, &coll).iter().flatten().count(), 1510);
    }
}
