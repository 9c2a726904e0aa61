//! `convertToCapped` and `cloneCollectionAsCapped`: a collection copied,
//! in its natural order, into a new capped collection (which removes the
//! oldest documents as the copy overfills it, as any insert does), then,
//! for `convertToCapped`, renamed over the source as mongod does it
//! (through a temporary collection; indexes other than `_id` are not
//! carried over, as in mongod).
//!
//! The copy reads the source batch by batch (a fresh snapshot each, as a
//! cursor does) and inserts each batch through the target's writer; it
//! takes no lock on the source, so a write to the source while it runs may
//! or may not be copied (mongod holds an exclusive lock instead).

use std::sync::Arc;

use bson::{RawDocumentBuf, doc};
use ebb_actors::catalog::RenameCollection;
use ebb_actors::collection::{CollectionHandle, InsertDocs};
use ebb_config::limits::MAX_BATCH_BYTES;
use ebb_lang::query::filter::Filter;
use ebb_storage::capped::CappedOptions;
use ebb_storage::engine::Direction;
use ebb_storage::plan::exec::{BatchLimits, QueryCursor};
use ebb_storage::plan::{self, Hint, QuerySpec};

use super::collections::create_collection;
use super::write::send_write;
use super::{Request, check_collection_name, ok};
use crate::args::{Args, as_f64, is_number};
use crate::error::{CommandError, CommandResult, codes};

/// Documents copied per batch.
const COPY_BATCH: usize = 1000;

pub async fn convert_to_capped(req: Request) -> CommandResult {
    let args = Args::parse(&req.body, &["size"])?;
    let name = args.collection()?;
    let opts = size_arg(&args, "convertToCapped")?;
    let source = source(&req, name)?;
    // mongod's temporary name: `tmp<random>.convertToCapped.<name>`.
    let tmp = format!(
        "tmp{:05}.convertToCapped.{name}",
        req.node.shared.clock.now_millis().rem_euclid(100_000)
    );
    // Created `temp`: a copy a crash interrupts is dropped at the next
    // start; the rename makes it an ordinary collection.
    clone(&req, &source, &tmp, opts, true).await?;
    req.node
        .catalog
        .send(RenameCollection {
            from: (req.db.clone(), tmp),
            to: (req.db.clone(), name.to_owned()),
            drop_target: true,
            stay_temp: false,
        })
        .await??;
    ok(doc! {})
}

pub async fn clone_collection_as_capped(req: Request) -> CommandResult {
    let args = Args::parse(&req.body, &["toCollection", "size", "temp"])?;
    let name = args.collection()?;
    let Some(to) = args.str("toCollection")? else {
        return Err(args.missing("toCollection"));
    };
    check_collection_name(&req.db, to)?;
    let opts = size_arg(&args, "cloneCollectionAsCapped")?;
    let source = source(&req, name)?;
    if req.node.collection(&req.db, to).is_some() {
        return Err(CommandError::new(
            codes::NAMESPACE_EXISTS,
            format!(
                "cloneCollectionAsCapped failed - destination collection {}.{to} already exists. source: {}.{name}",
                req.db, req.db
            ),
        ));
    }
    let temp = args.bool("temp")?.unwrap_or(false);
    clone(&req, &source, to, opts, temp).await?;
    ok(doc! {})
}

/// The required `size` (a number, as mongod's IDL has it), checked as
/// `create` checks it.
fn size_arg(args: &Args<'_>, cmd: &str) -> CommandResult<CappedOptions> {
    let Some(v) = args.get("size") else {
        return Err(args.missing("size"));
    };
    if !is_number(&v) {
        return Err(args.wrong_type("size", &v, "types '[long, int, decimal, double]'"));
    }
    let size = as_f64(v).unwrap_or(0.0);
    if size < 0.0 {
        return Err(CommandError::bad_value("size has to be >= 0"));
    }
    tracing::debug!(cmd, size, "capped copy");
    Ok(CappedOptions::new(size as i64, None)?)
}

/// The collection to copy: it must exist and hold documents (not buckets).
fn source(req: &Request, name: &str) -> CommandResult<CollectionHandle> {
    let Some(entry) = req.node.collection(&req.db, name) else {
        return Err(CommandError::new(
            codes::NAMESPACE_NOT_FOUND,
            format!("source collection {}.{name} does not exist", req.db),
        ));
    };
    if entry.coll.timeseries.is_some() {
        return Err(CommandError::new(
            codes::COMMAND_NOT_SUPPORTED_ON_VIEW,
            "cloneCollectionAsCapped not supported for views",
        ));
    }
    Ok(entry)
}

/// Creates capped collection `to` (`temp` when asked: dropped at the next
/// start) and copies `source` into it in natural order.
async fn clone(
    req: &Request,
    source: &CollectionHandle,
    to: &str,
    opts: CappedOptions,
    temp: bool,
) -> CommandResult<()> {
    let mut options = opts.to_document();
    if temp {
        options.insert("temp", true);
    }
    create_collection(req, to, options).await?;
    let spec = QuerySpec {
        filter: Filter::parse(&bson::rawdoc! {})?,
        sort: None,
        hint: Some(Hint::Natural(Direction::Forward)),
    };
    let plan = plan::plan(&source.coll.meta, &spec)?;
    let mut query = QueryCursor::new(&source.coll, plan, spec.filter, None, 0, None)?;
    loop {
        // Each batch reads a fresh snapshot and resumes after the last
        // record copied, as any cursor does.
        let (q, batch) = req
            .node
            .scan(move |snap| {
                let limits = BatchLimits {
                    max_docs: COPY_BATCH,
                    max_bytes: MAX_BATCH_BYTES,
                };
                let batch = query.next_batch(snap, limits)?;
                Ok((query, batch))
            })
            .await?;
        query = q;
        let docs: Vec<RawDocumentBuf> = batch.into_iter().map(|f| f.doc).collect();
        if !docs.is_empty() {
            let docs = Arc::new(docs);
            let outcome = send_write(req, to, false, || InsertDocs {
                docs: Arc::clone(&docs),
                ordered: true,
                sync: false,
                prepared: false,
                decided: req.decided.clone(),
                bypass_validation: true,
            })
            .await?
            .ok_or_else(|| {
                CommandError::new(
                    codes::NAMESPACE_NOT_FOUND,
                    format!("{}.{to} was dropped during the copy", req.db),
                )
            })?;
            if let Some(e) = outcome.errors.into_iter().next() {
                return Err(e.error.into());
            }
        }
        if query.exhausted() {
            return Ok(());
        }
    }
}
