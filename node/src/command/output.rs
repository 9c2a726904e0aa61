//! The writes of `aggregate`'s last stage, `$out` or `$merge`, once the
//! rest of the pipeline has produced its documents (storage parses the
//! stage and says what each `$merge` document becomes; this file runs the
//! writes through the collections' writers).
//!
//! `$out` writes into a temporary collection of the target's database
//! (`tmp.agg_out.<id>`, created with the target's options and indexes,
//! marked `temp`) and renames it over the target in one catalog step, so
//! readers see the old documents or the new ones, never a mix; on failure
//! the temporary collection is dropped and the target is untouched. A
//! temporary collection a crash left behind is dropped at startup.
//! `$merge` sends each output document as an update (or an insert) to the
//! target's writer, in unordered batches, and reports the first error
//! after the whole output was written, as mongod does.

use std::sync::Arc;

use bson::{Bson, RawDocumentBuf};
use ebb_actors::catalog::{CreateCollection, CreateIndexes, DropCollection, RenameCollection};
use ebb_actors::collection::{CollectionHandle, InsertDocs, UpdateDocs};
use ebb_config::limits::{MAX_BSON_OBJECT_BYTES, MAX_WRITE_BATCH_SIZE};
use ebb_lang::encoding::collation::Choice;
use ebb_lang::error::{ErrorKind, StageError};
use ebb_lang::pipeline::{Env, Merge, MergeWrite, WhenNotMatched, WriteStage};
use ebb_storage::Error as StorageError;
use ebb_storage::statement::{UpdateStatement, WriteError};

use super::write::send_write_in;
use super::{check_collection_name, check_db_name, query};
use crate::context::NodeContext;
use crate::error::{CommandError, CommandResult};

/// The prefix of `$out`'s temporary collections.
pub const TEMP_PREFIX: &str = "tmp.agg_out.";

/// What the writes need from the `aggregate` command.
pub struct WriteContext<'a> {
    pub node: &'a NodeContext,
    /// The command's database (the target's unless the stage names one).
    pub db: &'a str,
    pub env: &'a Env,
    pub collation: &'a Choice,
    pub bypass_validation: bool,
}

/// A write stage with its target resolved and checked, before the
/// pipeline runs (so a bad target fails before any work).
pub struct Prepared {
    stage: WriteStage,
    db: String,
    coll: String,
}

/// Resolves and checks `stage`'s target as mongod does before running.
pub fn prepare(cx: &WriteContext<'_>, stage: WriteStage) -> CommandResult<Prepared> {
    let (db, coll) = match &stage {
        WriteStage::Out(t) => t.resolve(cx.db, "$out")?,
        WriteStage::Merge(m) => m.into.resolve(cx.db, "$merge")?,
    };
    check_db_name(&db)?;
    check_collection_name(&db, &coll)?;
    let existing = cx.node.collection(&db, &coll);
    match (&stage, &existing) {
        (_, Some(e)) if e.coll.timeseries.is_some() => {
            return Err(StorageError::not_implemented(
                "$out or $merge into a time-series collection",
            )
            .into());
        }
        (WriteStage::Out(_), Some(e)) if is_capped(e) => {
            return Err(stage_error(
                StageError::OutCapped,
                format!("namespace '{db}.{coll}' is capped so it can't be used for $out"),
            ));
        }
        (WriteStage::Merge(m), existing) => check_unique_on(cx, m, existing.as_ref())?,
        _ => {}
    }
    Ok(Prepared { stage, db, coll })
}

/// Writes `docs`, the pipeline's output, as the prepared stage says.
pub async fn write(
    cx: &WriteContext<'_>,
    prepared: Prepared,
    docs: Vec<RawDocumentBuf>,
) -> CommandResult<()> {
    match &prepared.stage {
        WriteStage::Out(_) => out(cx, &prepared.db, &prepared.coll, docs).await,
        WriteStage::Merge(m) => merge(cx, m, &prepared.db, &prepared.coll, docs).await,
    }
}

fn stage_error(e: StageError, message: String) -> CommandError {
    StorageError::new(ErrorKind::Stage(e), message).into()
}

fn is_capped(e: &CollectionHandle) -> bool {
    e.coll.capped.is_some()
}

/// `$merge` on fields other than `_id` needs a unique index on exactly
/// those fields (in any order), not partial, with the operation's
/// collation: then no output document can match two target documents.
fn check_unique_on(
    cx: &WriteContext<'_>,
    m: &Merge,
    existing: Option<&CollectionHandle>,
) -> CommandResult<()> {
    if m.on_id_only() {
        return Ok(());
    }
    let supported = match existing {
        None => false,
        Some(e) => {
            let collation = query::resolve(cx.collation, &e.coll.meta)?.map(|c| c.to_document());
            let mut on: Vec<&str> = m.on.iter().map(String::as_str).collect();
            on.sort_unstable();
            let mut found = false;
            for index in &e.coll.meta.indexes {
                let mut fields: Vec<&str> = index.key.keys().map(String::as_str).collect();
                fields.sort_unstable();
                let index_collation = index.collation()?.map(|c| c.to_document());
                if (index.unique || index.is_id_index())
                    && index.partial_filter.is_none()
                    && !index.is_internal()
                    && fields == on
                    && index_collation == collation
                {
                    found = true;
                    break;
                }
            }
            found
        }
    };
    if supported {
        return Ok(());
    }
    Err(stage_error(
        StageError::MergeOnNotUnique,
        "Cannot find index to verify that join fields will be unique".to_owned(),
    ))
}

/// Splits `items` into write batches of at most `MAX_WRITE_BATCH_SIZE`
/// items and about 16 MiB.
fn batches<T>(items: Vec<T>, size: impl Fn(&T) -> usize) -> Vec<Vec<T>> {
    let mut out = Vec::new();
    let (mut batch, mut bytes) = (Vec::new(), 0usize);
    for item in items {
        let n = size(&item);
        if !batch.is_empty()
            && (batch.len() == MAX_WRITE_BATCH_SIZE || bytes + n > MAX_BSON_OBJECT_BYTES)
        {
            out.push(std::mem::take(&mut batch));
            bytes = 0;
        }
        bytes += n;
        batch.push(item);
    }
    if !batch.is_empty() {
        out.push(batch);
    }
    out
}

/// The first write error of a batch as the command's error.
fn first_error(errors: Vec<WriteError>) -> CommandResult<()> {
    match errors.into_iter().min_by_key(|w| w.index) {
        Some(w) => Err(w.error.into()),
        None => Ok(()),
    }
}

async fn out(
    cx: &WriteContext<'_>,
    db: &str,
    coll: &str,
    docs: Vec<RawDocumentBuf>,
) -> CommandResult<()> {
    let temp = format!("{TEMP_PREFIX}{}", bson::oid::ObjectId::new().to_hex());
    let existing = cx.node.collection(db, coll);
    // The target's options and indexes carry over to what replaces it.
    let mut options = existing
        .as_ref()
        .map(|e| e.coll.meta.options.clone())
        .unwrap_or_default();
    options.insert("temp", true);
    cx.node
        .catalog
        .send(CreateCollection {
            db: db.to_owned(),
            name: temp.clone(),
            options,
            applying: None,
        })
        .await??;
    let filled = fill_temp(cx, db, &temp, existing.as_ref(), docs).await;
    let renamed = match filled {
        Ok(()) => cx
            .node
            .catalog
            .send(RenameCollection {
                from: (db.to_owned(), temp.clone()),
                to: (db.to_owned(), coll.to_owned()),
                drop_target: true,
                stay_temp: false,
            })
            .await
            .map_err(CommandError::from)
            .and_then(|r| r.map_err(CommandError::from)),
        Err(e) => Err(e),
    };
    if let Err(e) = renamed {
        drop_temp(cx.node, db, &temp).await;
        return Err(e);
    }
    Ok(())
}

/// The target's indexes and `docs` into the temporary collection.
async fn fill_temp(
    cx: &WriteContext<'_>,
    db: &str,
    temp: &str,
    existing: Option<&CollectionHandle>,
    docs: Vec<RawDocumentBuf>,
) -> CommandResult<()> {
    let indexes: Vec<_> = existing
        .map(|e| {
            e.coll
                .meta
                .indexes
                .iter()
                .filter(|i| !i.is_id_index() && !i.is_internal())
                .cloned()
                .collect()
        })
        .unwrap_or_default();
    if !indexes.is_empty() {
        cx.node
            .catalog
            .send(CreateIndexes {
                db: db.to_owned(),
                name: temp.to_owned(),
                indexes,
                applying: None,
            })
            .await??;
    }
    for batch in batches(docs, |d| d.as_bytes().len()) {
        let batch = Arc::new(batch);
        let outcome = send_write_in(cx.node, db, temp, false, None, || InsertDocs {
            docs: Arc::clone(&batch),
            ordered: true,
            sync: false,
            prepared: false,
            decided: None,
            bypass_validation: cx.bypass_validation,
        })
        .await?
        .ok_or_else(|| {
            CommandError::from(StorageError::new(
                ErrorKind::NamespaceNotFound,
                format!("the temporary collection {db}.{temp} of $out was dropped"),
            ))
        })?;
        first_error(outcome.errors)?;
    }
    Ok(())
}

async fn drop_temp(node: &NodeContext, db: &str, temp: &str) {
    let dropped = node
        .catalog
        .send(DropCollection {
            db: db.to_owned(),
            name: temp.to_owned(),
        })
        .await;
    if !matches!(dropped, Ok(Ok(_))) {
        tracing::warn!(ns = %format!("{db}.{temp}"), "could not drop $out's temporary collection; it goes at the next start");
    }
}

async fn merge(
    cx: &WriteContext<'_>,
    m: &Merge,
    db: &str,
    coll: &str,
    docs: Vec<RawDocumentBuf>,
) -> CommandResult<()> {
    let mut inserts = Vec::new();
    let mut updates = Vec::new();
    for doc in &docs {
        match m.write_for(doc, cx.env)? {
            MergeWrite::Insert(d) => inserts.push(d),
            MergeWrite::Update {
                filter,
                update,
                upsert,
            } => updates.push(UpdateStatement {
                filter: query::filter(Some(&filter), cx.env)?,
                collation: cx.collation.clone(),
                filter_doc: filter,
                update,
                multi: false,
                upsert,
                hint: None,
                bypass_validation: cx.bypass_validation,
                deadline: None,
                interrupt: None,
            }),
        }
    }
    drop(docs);
    let mut first_failure: Option<CommandError> = None;
    let mut unmatched = false;
    for batch in batches(inserts, |d| d.as_bytes().len()) {
        let batch = Arc::new(batch);
        let outcome = send_write_in(cx.node, db, coll, true, None, || InsertDocs {
            docs: Arc::clone(&batch),
            ordered: false,
            sync: false,
            prepared: false,
            decided: None,
            bypass_validation: cx.bypass_validation,
        })
        .await?
        .expect("inserts create their collection");
        if let Err(e) = first_error(outcome.errors) {
            first_failure.get_or_insert(e);
        }
    }
    let inserts_missing = m.when_not_matched == WhenNotMatched::Insert;
    for batch in batches(updates, |s| s.filter_doc.as_bytes().len() + 64) {
        let sent = batch.len() as u64;
        let outcome = send_write_in(cx.node, db, coll, inserts_missing, None, || UpdateDocs {
            statements: batch.clone(),
            ordered: false,
            sync: false,
            decided: None,
        })
        .await?;
        let Some(outcome) = outcome else {
            // No target: nothing matches.
            unmatched |= m.when_not_matched == WhenNotMatched::Fail;
            continue;
        };
        // `n` counts matches and upserts; each statement matches at most one.
        let failed = outcome.errors.len() as u64;
        if m.when_not_matched == WhenNotMatched::Fail && outcome.n + failed < sent {
            unmatched = true;
        }
        if let Err(e) = first_error(outcome.errors) {
            first_failure.get_or_insert(e);
        }
    }
    if let Some(e) = first_failure {
        return Err(e);
    }
    if unmatched {
        return Err(stage_error(
            StageError::MergeNoMatch,
            "$merge could not find a matching document in the target collection for at least \
             one document in the source collection"
                .to_owned(),
        ));
    }
    Ok(())
}

/// Drops the collections created `temp` (those of `$out`s a crash or a
/// restart interrupted), as mongod does at startup.
pub async fn drop_leftover_temps(node: &NodeContext) {
    let view = node.view.load();
    let mut leftovers = Vec::new();
    for db in view.databases() {
        for entry in view.in_db(&db) {
            let meta = &entry.coll.meta;
            if matches!(meta.options.get("temp"), Some(Bson::Boolean(true))) {
                leftovers.push((db.clone(), meta.name.clone()));
            }
        }
    }
    for (db, name) in leftovers {
        tracing::info!(ns = %format!("{db}.{name}"), "dropping a temporary collection left by the last run");
        drop_temp(node, &db, &name).await;
    }
}
