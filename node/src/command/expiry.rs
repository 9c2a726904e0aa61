//! ebb's own commands about expiry; neither changes anything.
//!
//! - `{explainExpiry: <collection>, filter: {…}, limit: <n>}`: for the
//!   documents a filter matches, when each TTL index of the collection makes
//!   them due, or why it never does (no date at the field, a string or an
//!   epoch number instead of a Date, an array without a date, excluded by
//!   the partial filter), and whether the TTL monitor deletes here at all.
//!   Due documents are shown too (they are hidden from every other read).
//! - `{expiryForecast: <collection>, maxKeys: <n>}`: per TTL index, the
//!   documents due and not yet deleted, and how many fall due in each
//!   minute of the next hour and each hour of the next week
//!   (`ttl::forecast`), counting at most `maxKeys` index keys per index
//!   (500,000 unless named); past them the reply says up to when its
//!   counts are whole, and the later buckets are estimated from a sample of
//!   the index (`estimated: true`).
//!
//! Also what an index change makes due at once: a new `expireAfterSeconds`
//! ([`made_due`], for `collMod`) or new TTL indexes ([`made_due_by_new`],
//! for `createIndexes`); both commands report it with `dryRun` and warn of
//! it.

use bson::{Bson, Document, doc};
use ebb_storage::engine::{Direction, KeyRange};
use ebb_storage::index::{Expiry, cutoff_millis};
use ebb_storage::ttl::forecast;

use super::{Request, check_collection_name, ok, query};
use crate::args::Args;
use crate::error::{CommandError, CommandResult, codes};

/// Documents shown when the command names no `limit`.
const DEFAULT_LIMIT: i64 = 100;
/// The most documents one command shows.
const MAX_LIMIT: i64 = 10_000;
/// The most index keys a forecast counts per TTL index before it
/// estimates the rest; also the most a `maxKeys` may ask for.
const FORECAST_BUDGET: u64 = 2_000_000;
/// The keys a forecast counts when the command names no `maxKeys`: a
/// large index's forecast then answers in about a tenth of a second.
const FORECAST_DEFAULT: u64 = 500_000;

/// The collection a command names, if it exists and is not time series.
fn collection(req: &Request, name: &str) -> CommandResult<std::sync::Arc<ebb_storage::Collection>> {
    let Some(entry) = req.node.collection(&req.db, name) else {
        return Err(CommandError::new(
            codes::NAMESPACE_NOT_FOUND,
            format!("ns does not exist: {}.{name}", req.db),
        ));
    };
    if entry.coll.timeseries.is_some() {
        let command = Args::open(&req.body).map_or("", |a| a.command_name());
        return Err(ebb_storage::Error::not_implemented(&format!(
            "{command} on a time-series collection (its measurements expire by bucket)"
        ))
        .into());
    }
    Ok(entry.coll.clone())
}

/// A TTL index as both commands show it.
fn shown_index(kg: &ebb_storage::index::KeyGen) -> Document {
    doc! {
        "name": &kg.name,
        "field": kg.leading_field().unwrap_or_default(),
        "expireAfterSeconds": kg.expire_after_secs().unwrap_or_default(),
    }
}

/// How many documents TTL index `kg` of `coll` never makes due, by
/// reason; null when it does not count them (`ttl::never`).
fn never_counts(
    req: &Request,
    coll: &ebb_storage::Collection,
    kg: &ebb_storage::index::KeyGen,
) -> CommandResult<Bson> {
    if ebb_storage::ttl::never::counted(coll).is_none_or(|c| c.cf != kg.cf) {
        return Ok(Bson::Null);
    }
    let Some(tally) = ebb_storage::ttl::never::read(req.node.shared.engine.as_ref(), kg)? else {
        return Ok(Bson::Null);
    };
    let mut out = Document::new();
    for (reason, n) in tally.by_reason() {
        out.insert(reason.name(), n as i64);
    }
    Ok(Bson::Document(out))
}

/// What `ebbExpiry` (ebb's, asked for) adds to `collStats`, `$collStats`
/// and `$indexStats` about TTL index `kg` of `coll`: its
/// `expireAfterSeconds` and the documents it never makes due, by reason.
pub fn of_index(
    req: &Request,
    coll: &ebb_storage::Collection,
    kg: &ebb_storage::index::KeyGen,
) -> CommandResult<Document> {
    let mut shown = shown_index(kg);
    shown.insert("neverExpire", never_counts(req, coll, kg)?);
    Ok(shown)
}

/// What `ebbExpiry` adds to `collStats` and `$collStats`: [`of_index`] of
/// each TTL index of `coll`.
pub fn of_collection(req: &Request, coll: &ebb_storage::Collection) -> CommandResult<Document> {
    let indexes = coll
        .ttl_keygens()
        .map(|kg| of_index(req, coll, kg).map(Bson::Document))
        .collect::<CommandResult<Vec<_>>>()?;
    Ok(doc! { "ttlIndexes": indexes })
}

pub async fn explain_expiry(req: Request) -> CommandResult {
    let args = Args::parse(&req.body, &["filter", "limit"])?;
    let name = args.collection()?;
    check_collection_name(&req.db, name)?;
    let limit = args.i64("limit")?.unwrap_or(DEFAULT_LIMIT);
    ok(explained_expiry(&req, name, args.doc("filter")?, limit).await?)
}

/// What `explain` with `ebbExpiry` adds to the explain of `find`: what
/// `explainExpiry` answers for its filter, up to its limit (or the
/// command's own).
pub async fn of_find(req: &Request, find: &bson::RawDocument) -> CommandResult<Document> {
    let args = Args::open(find)?;
    let name = args.collection()?;
    let limit = match args.i64("limit")? {
        Some(n) if n != 0 => n.unsigned_abs().min(MAX_LIMIT as u64) as i64,
        _ => DEFAULT_LIMIT,
    };
    explained_expiry(req, name, args.doc("filter")?, limit).await
}

/// `explainExpiry`'s answer for collection `name`, `filter` and `limit`.
async fn explained_expiry(
    req: &Request,
    name: &str,
    filter: Option<&bson::RawDocument>,
    limit: i64,
) -> CommandResult<Document> {
    let filter = query::filter(filter, &query::env_now(req))?;
    if !(1..=MAX_LIMIT).contains(&limit) {
        return Err(CommandError::bad_value(format!(
            "limit must be between 1 and {MAX_LIMIT}, got {limit}"
        )));
    }
    let coll = collection(req, name)?;
    let now = req.now().timestamp_millis();
    let mut indexes = Vec::new();
    for kg in coll.ttl_keygens() {
        let mut shown = shown_index(kg);
        shown.insert("neverExpire", never_counts(req, &coll, kg)?);
        indexes.push(Bson::Document(shown));
    }
    let scanned = coll.clone();
    let (documents, more) = req
        .node
        .scan(move |snap| {
            let mut out = Vec::new();
            let mut records =
                snap.cursor(scanned.records(), KeyRange::all(), Direction::Forward)?;
            while records.valid() {
                let doc = bson::RawDocument::from_bytes(records.value())?;
                if filter.matches(doc)? {
                    if out.len() as i64 == limit {
                        return Ok((out, true));
                    }
                    out.push(Bson::Document(explained(&scanned, doc, now)?));
                }
                records.advance();
            }
            records.status()?;
            Ok((out, false))
        })
        .await?;
    let shared = &req.node.shared;
    let monitor = doc! {
        "enabled": shared.params.ttl_monitor_enabled(),
        "running": shared.ttl.running.load(std::sync::atomic::Ordering::Relaxed),
    };
    Ok(doc! {
        "now": bson::DateTime::from_millis(now),
        "ttlIndexes": indexes,
        "monitor": monitor,
        "documents": documents,
        "more": more,
    })
}

/// One document: its `_id`, and what each TTL index makes of it.
fn explained(
    coll: &ebb_storage::Collection,
    doc: &bson::RawDocument,
    now: i64,
) -> CommandResult<Document> {
    let id = match doc.get("_id")? {
        Some(id) => Bson::try_from(id)?,
        None => Bson::Null,
    };
    let mut expiry = Vec::new();
    for kg in coll.ttl_keygens() {
        let field = kg.leading_field().unwrap_or_default();
        let mut shown = doc! { "index": &kg.name, "field": field };
        match kg.expiry(doc) {
            Some(Expiry::At { date, due }) => {
                shown.insert("date", bson::DateTime::from_millis(date));
                shown.insert("dueAt", bson::DateTime::from_millis(due));
                shown.insert("due", kg.due_by(doc, now));
            }
            Some(Expiry::Never(why)) => {
                shown.insert("never", why.name());
                shown.insert("why", why.explain(field));
            }
            None => continue,
        }
        expiry.push(Bson::Document(shown));
    }
    Ok(doc! { "_id": id, "expiry": expiry })
}

pub async fn expiry_forecast(req: Request) -> CommandResult {
    let args = Args::parse(&req.body, &["maxKeys"])?;
    let name = args.collection()?;
    check_collection_name(&req.db, name)?;
    let budget = match args.i64("maxKeys")? {
        None => FORECAST_DEFAULT,
        Some(n) if (1..=FORECAST_BUDGET as i64).contains(&n) => n as u64,
        Some(n) => {
            return Err(CommandError::bad_value(format!(
                "maxKeys must be between 1 and {FORECAST_BUDGET}, got {n}"
            )));
        }
    };
    let coll = collection(&req, name)?;
    let now = req.now().timestamp_millis();
    let forecasts = req
        .node
        .scan(move |snap| {
            let mut out = Vec::new();
            for kg in coll.ttl_keygens() {
                let f = forecast::forecast(snap, kg, now, budget)?;
                out.push((shown_index(kg), f));
            }
            Ok(out)
        })
        .await?;
    let counts = |v: &[u64]| v.iter().map(|&n| n as i64).collect::<Vec<_>>();
    let indexes: Vec<Bson> = forecasts
        .into_iter()
        .map(|(mut shown, f)| {
            shown.insert("due", f.due as i64);
            shown.insert("nextHour", doc! { "perMinute": counts(&f.minutes) });
            shown.insert("nextWeek", doc! { "perHour": counts(&f.hours) });
            shown.insert(
                "countedThrough",
                bson::DateTime::from_millis(f.counted_through),
            );
            shown.insert("exact", f.exact);
            shown.insert("estimated", f.estimated);
            Bson::Document(shown)
        })
        .collect();
    ok(doc! { "now": bson::DateTime::from_millis(now), "ttlIndexes": indexes })
}

/// What a new `expireAfterSeconds` of one index makes due at once.
#[derive(Debug, Clone, Copy)]
pub struct MadeDue {
    /// Documents not due now that would be due at once.
    pub documents: u64,
    /// `documents` is a lower bound: counting stopped at the budget.
    pub at_least: bool,
    /// The collection's documents a reader sees now.
    pub of: u64,
}

impl MadeDue {
    /// Whether it is more than `percent` of the collection.
    pub fn more_than(&self, percent: u8) -> bool {
        self.documents * 100 > self.of * u64::from(percent)
    }
}

/// What setting `expireAfterSeconds` of index `index` of `coll` to
/// `secs` would make due at once, now.
pub async fn made_due(
    req: &Request,
    coll: std::sync::Arc<ebb_storage::Collection>,
    index: &str,
    secs: i32,
) -> CommandResult<MadeDue> {
    let index = index.to_owned();
    let now = req.now().timestamp_millis();
    req.node
        .scan(move |snap| {
            let kg = coll.keygen(&index).ok_or_else(CommandError::internal)?;
            let from = kg.expire_after_secs().map(|old| cutoff_millis(now, old));
            let to = cutoff_millis(now, i64::from(secs));
            let (documents, at_least) = match from {
                Some(from) if from >= to => (0, false),
                _ => forecast::due_between(snap, kg, from, to, FORECAST_BUDGET)?,
            };
            let of = ebb_storage::stats::count(snap, &coll)?;
            Ok(MadeDue {
                documents,
                at_least,
                of,
            })
        })
        .await
}

/// What creating the TTL indexes among `new` on `coll` would make due at
/// once, now, each by itself: per index, its name and the count, read in
/// one scan of the collection's documents.
pub async fn made_due_by_new(
    req: &Request,
    coll: std::sync::Arc<ebb_storage::Collection>,
    new: &[ebb_storage::catalog::IndexMeta],
) -> CommandResult<Vec<(String, MadeDue)>> {
    let keygens = new
        .iter()
        .filter(|i| i.is_ttl())
        .map(ebb_storage::index::KeyGen::new)
        .collect::<Result<Vec<_>, _>>()?;
    if keygens.is_empty() {
        return Ok(Vec::new());
    }
    let now = req.now().timestamp_millis();
    req.node
        .scan(move |snap| {
            let mut due = vec![0u64; keygens.len()];
            let mut of = 0u64;
            let mut records =
                snap.bulk_cursor(coll.records(), KeyRange::all(), Direction::Forward)?;
            while records.valid() {
                let doc = bson::RawDocument::from_bytes(records.value())?;
                // What is due already is hidden and not the change's doing.
                if !coll.is_due(doc, now) {
                    of += 1;
                    for (n, kg) in due.iter_mut().zip(&keygens) {
                        *n += u64::from(kg.due_by(doc, now));
                    }
                }
                records.advance();
            }
            records.status()?;
            Ok(keygens
                .iter()
                .zip(due)
                .map(|(kg, documents)| {
                    let made = MadeDue {
                        documents,
                        at_least: false,
                        of,
                    };
                    (kg.name.clone(), made)
                })
                .collect())
        })
        .await
}
