//! Change streams: `aggregate` with a first `$changeStream` stage, on a
//! collection, a database (`aggregate: 1`) or the whole set (`admin`,
//! `allChangesForCluster`), read from the change log every member writes
//! as it applies entries (`ebb_storage::changes`).
//!
//! `spec` checks the stage, `token` makes and reads resume tokens,
//! `stream` turns rows into events. The cursor is tailable and awaits
//! data: a `getMore` that finds nothing waits, up to its `maxTimeMS`
//! (1 s by default), for this member to apply another entry. Every
//! batch, even an empty one, carries `postBatchResumeToken`.
//!
//! On a standalone the stage is refused with 40573, as mongod does.

mod spec;
mod stream;
pub mod token;

use std::sync::Arc;
use std::time::Duration;

use bson::{RawArrayBuf, RawDocument, RawDocumentBuf, rawdoc};
use ebb_lang::encoding::collation::Collation;
use ebb_lang::pipeline::{Env, parse_stage_in};

use self::spec::Start;
use self::stream::ChangeStream;
use self::token::Token;
use crate::command::Request;
use crate::context::NodeContext;
use crate::cursor::{OpenCursor, Owner, Source};
use crate::error::{CommandError, CommandResult, codes};

pub use stream::ChangeStream as Stream;

/// A pipeline whose first stage is `$changeStream`, on a replica-set
/// member: the stage documents, else `None` (the pipeline runs as any
/// other, and a standalone refuses the stage there).
pub fn stages<'a>(
    node: &NodeContext,
    pipeline: &'a bson::RawArray,
) -> CommandResult<Option<Vec<&'a RawDocument>>> {
    if node.replica_set().is_none() {
        return Ok(None);
    }
    let first = pipeline.into_iter().next().transpose()?;
    match first {
        Some(bson::RawBsonRef::Document(d)) if is_change_stream(d) => {}
        _ => {
            let later = pipeline
                .into_iter()
                .skip(1)
                .any(|v| matches!(v, Ok(bson::RawBsonRef::Document(d)) if is_change_stream(d)));
            if later {
                return Err(CommandError::new(
                    codes::FIRST_STAGE_ONLY,
                    "$changeStream is only valid as the first stage in a pipeline",
                ));
            }
            return Ok(None);
        }
    }
    let mut docs = Vec::new();
    for v in pipeline {
        match v? {
            bson::RawBsonRef::Document(d) => docs.push(d),
            // The general parse says what is wrong with it.
            _ => return Ok(None),
        }
    }
    Ok(Some(docs))
}

/// Whether a pipeline's first stage is `$changeStream`.
pub fn is_change_stream(first: &RawDocument) -> bool {
    matches!(first.iter().next(), Some(Ok((k, _))) if k.as_str() == "$changeStream")
}

/// On a member applying `req`'s entry, logs what the command is about to
/// do to whole collections (drop, rename, dropDatabase) for the streams
/// (`ebb_storage::changes::log_whole`); elsewhere nothing.
pub fn log_whole(req: &Request, changes: &[ebb_storage::changes::Whole<'_>]) -> CommandResult<()> {
    let Some(rider) = req.decided.as_ref().and_then(|d| d.rider.as_ref()) else {
        return Ok(());
    };
    ebb_storage::changes::log_whole(&*req.node.shared.engine, rider, changes)?;
    Ok(())
}

/// How long a `getMore` without `maxTimeMS` waits for changes.
const DEFAULT_AWAIT: Duration = Duration::from_secs(1);

/// Opens a change stream on `req.db` (`coll`, or the database or set
/// when `None`) for `owner` and answers its first batch.
pub async fn open(
    req: &Request,
    owner: Owner,
    coll: Option<&str>,
    pipeline: &[&RawDocument],
    env: &Env,
    collation: Option<Arc<Collation>>,
    batch_size: usize,
) -> CommandResult {
    // A standalone refuses the stage where it parses it (40573).
    let Some(set) = req.node.replica_set() else {
        return Err(CommandError::internal());
    };
    let (first, rest) = pipeline.split_first().ok_or_else(CommandError::internal)?;
    let spec = spec::parse(
        first
            .get("$changeStream")?
            .ok_or_else(CommandError::internal)?,
    )?;
    let scope = spec::scope(&req.db, coll, &spec)?;
    // A time-series collection is a view of its buckets, for streams too.
    if let Some(c) = coll
        && req
            .node
            .collection(&req.db, c)
            .is_some_and(|e| e.coll.timeseries.is_some())
    {
        return Err(CommandError::new(
            codes::COMMAND_NOT_SUPPORTED_ON_VIEW,
            format!("Namespace {}.{c} is a view, not a collection", req.db),
        ));
    }
    let mut stages = Vec::with_capacity(rest.len());
    for stage in rest {
        spec::follows(stage)?;
        stages.push(parse_stage_in(stage, env)?);
    }
    let applied = set.replica.optime().packed();
    let (seen, first_key) = match spec.start {
        Start::Now => {
            let t = Token::HighWater { ts: applied };
            (t, t.next_key())
        }
        Start::After(t) => (t, t.next_key()),
        Start::At(ts) => (
            Token::HighWater {
                ts: ts.saturating_sub(1),
            },
            ebb_storage::changes::key(ts, 0),
        ),
    };
    let stream = Box::new(ChangeStream::new(
        scope, spec, stages, collation, seen, first_key,
    ));
    let ns = stream.scope.cursor_ns();
    // Even `batchSize: 0` reads, to refuse a start whose history is gone.
    let (batch, stream, _) = read(&req.node, stream, batch_size, applied).await?;
    let seen = stream.seen;
    let id = match stream.invalidated {
        true => 0,
        false => {
            let cursor = OpenCursor::new(ns.clone(), Source::Changes(stream), owner);
            req.node.cursors.register(cursor)
        }
    };
    Ok(reply(id, &ns, batch, seen, true))
}

/// A `getMore` on change stream cursor `id`: the events since its last
/// batch, waiting up to `max_time` for one.
pub async fn get_more(
    node: &Arc<NodeContext>,
    id: i64,
    mut cursor: OpenCursor,
    batch_size: usize,
    max_time: Option<Duration>,
) -> CommandResult {
    let Some(set) = node.replica_set() else {
        return Err(CommandError::internal());
    };
    let max_docs = if batch_size == 0 {
        usize::MAX
    } else {
        batch_size
    };
    let deadline = tokio::time::Instant::now() + max_time.unwrap_or(DEFAULT_AWAIT);
    let mut stream = take(&mut cursor)?;
    let events = loop {
        let applied = set.replica.optime();
        let (events, back, at_end) = read(node, stream, max_docs, applied.packed()).await?;
        stream = back;
        if !events.is_empty() || stream.invalidated {
            break events;
        }
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        // Rows out of scope are left to read: on at once, while time lasts.
        if !at_end {
            if left.is_zero() {
                break events;
            }
            continue;
        }
        let later = (applied.secs, applied.inc.saturating_add(1));
        if left.is_zero() || !set.replica.wait_applied(later, Some(left)).await {
            break events;
        }
    };
    let (seen, ns, invalidated) = (stream.seen, cursor.ns.clone(), stream.invalidated);
    cursor.source = Source::Changes(stream);
    // An invalidated stream ends with its `invalidate` event.
    let id = match invalidated {
        true => 0,
        false => {
            node.cursors.put_back(id, cursor);
            id
        }
    };
    Ok(reply(id, &ns, events, seen, false))
}

fn take(cursor: &mut OpenCursor) -> CommandResult<Box<ChangeStream>> {
    match std::mem::replace(&mut cursor.source, Source::Buffered(Default::default())) {
        Source::Changes(s) => Ok(s),
        _ => Err(CommandError::internal()),
    }
}

/// One batch of `stream`, read on a snapshot off the async threads, and
/// whether it read every row there was.
async fn read(
    node: &Arc<NodeContext>,
    stream: Box<ChangeStream>,
    max_docs: usize,
    applied: u64,
) -> CommandResult<(Vec<RawDocumentBuf>, Box<ChangeStream>, bool)> {
    let reader = node.clone();
    let collections = move |db: &str, coll: &str| reader.collection(db, coll).map(|e| e.coll);
    let batch = node
        .scan(move |snap| stream.read(&collections, snap, max_docs, applied))
        .await?;
    Ok((batch.events, batch.stream, batch.at_end))
}

fn reply(
    id: i64,
    ns: &str,
    events: Vec<RawDocumentBuf>,
    seen: Token,
    first: bool,
) -> RawDocumentBuf {
    let mut docs = RawArrayBuf::new();
    for e in events {
        docs.push(e);
    }
    let mut cursor = RawDocumentBuf::new();
    match first {
        true => cursor.append(bson::raw::cstr!("firstBatch"), docs),
        false => cursor.append(bson::raw::cstr!("nextBatch"), docs),
    }
    cursor.append(bson::raw::cstr!("postBatchResumeToken"), seen.to_document());
    cursor.append(bson::raw::cstr!("id"), id);
    cursor.append(bson::raw::cstr!("ns"), ns);
    rawdoc! { "cursor": cursor, "ok": 1.0 }
}
