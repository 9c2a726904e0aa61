//! What the overview shows, read straight from the published catalog and
//! one snapshot: per database, the collections that expire documents
//! (TTL indexes, or a time series' `expireAfterSeconds`), their estimated
//! documents, each TTL index's due backlog (counted up to a bound) and
//! never-expiring counts. Nothing here scans a collection, so the
//! overview costs in proportion to the TTL indexes, not the documents.

use std::collections::BTreeMap;

use ebb_storage::index::cutoff_millis;
use ebb_storage::ttl;

use crate::context::NodeContext;
use crate::error::CommandResult;

/// The most due entries counted per index; past it the page says "at least".
const BACKLOG_BUDGET: u64 = 100_000;

/// One TTL index as the overview shows it.
pub struct IndexRow {
    pub name: String,
    pub field: String,
    pub expire_after_secs: i64,
    /// Due documents not yet deleted, and whether counting stopped short.
    pub backlog: (u64, bool),
    /// Never-expiring documents by reason, when the index keeps them.
    pub never: Option<Vec<(&'static str, u64)>>,
}

/// A collection that expires documents.
pub struct CollectionRow {
    pub name: String,
    /// RocksDB's estimate of its records (buckets, for a time series).
    pub documents: u64,
    /// A time series' `expireAfterSeconds` (its buckets expire).
    pub timeseries_expiry: Option<i64>,
    pub indexes: Vec<IndexRow>,
}

/// One database.
#[derive(Default)]
pub struct DatabaseRow {
    pub expiring: Vec<CollectionRow>,
    /// Collections without expiry, counted and not listed.
    pub without_expiry: usize,
}

/// The databases `shows` admits, by name.
pub async fn read(
    ctx: &NodeContext,
    shows: impl Fn(&str) -> bool,
) -> CommandResult<BTreeMap<String, DatabaseRow>> {
    let view = ctx.view.load();
    let mut out: BTreeMap<String, DatabaseRow> = BTreeMap::new();
    let mut expiring = Vec::new();
    for handle in view.collections.values() {
        let meta = &handle.coll.meta;
        if !shows(&meta.db) {
            continue;
        }
        let db = out.entry(meta.db.clone()).or_default();
        let ts_expiry = handle
            .coll
            .timeseries
            .as_ref()
            .and_then(|_| meta.options.get("expireAfterSeconds"))
            .and_then(|v| match v {
                bson::Bson::Int32(n) => Some(i64::from(*n)),
                bson::Bson::Int64(n) => Some(*n),
                _ => None,
            });
        if handle.coll.ttl_keygens().next().is_none() && ts_expiry.is_none() {
            db.without_expiry += 1;
            continue;
        }
        expiring.push((handle.coll.clone(), ts_expiry));
    }
    drop(view);
    let engine = ctx.shared.engine.clone();
    let now = ctx.shared.clock.now_millis();
    let rows = ctx
        .scan(move |snap| {
            let mut rows = Vec::with_capacity(expiring.len());
            for (coll, ts_expiry) in expiring {
                let counted = ttl::never::counted(&coll).map(|kg| kg.cf);
                let mut indexes = Vec::new();
                for kg in coll.ttl_keygens() {
                    let eas = kg.expire_after_secs().unwrap_or_default();
                    let backlog = ttl::forecast::due_between(
                        snap,
                        kg,
                        None,
                        cutoff_millis(now, eas),
                        BACKLOG_BUDGET,
                    )?;
                    let never = match counted == Some(kg.cf) {
                        true => ttl::never::read(engine.as_ref(), kg)?
                            .map(|t| t.by_reason().map(|(r, n)| (r.name(), n)).collect()),
                        false => None,
                    };
                    indexes.push(IndexRow {
                        name: kg.name.clone(),
                        field: kg.leading_field().unwrap_or_default().to_owned(),
                        expire_after_secs: eas,
                        backlog,
                        never,
                    });
                }
                let documents = engine
                    .stats(coll.records())
                    .unwrap_or_default()
                    .estimated_keys;
                rows.push((
                    coll.meta.db.clone(),
                    CollectionRow {
                        name: coll.meta.name.clone(),
                        documents,
                        timeseries_expiry: ts_expiry,
                        indexes,
                    },
                ));
            }
            Ok(rows)
        })
        .await?;
    for (db, row) in rows {
        out.entry(db).or_default().expiring.push(row);
    }
    for db in out.values_mut() {
        db.expiring.sort_by(|a, b| a.name.cmp(&b.name));
    }
    Ok(out)
}
