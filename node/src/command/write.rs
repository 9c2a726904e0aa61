//! What the write commands share: finding (or implicitly creating) the
//! target collection, retrying once when a concurrent `drop` retired its
//! writer, and building replies with `writeErrors`.

use bson::{Document, RawBsonRef, RawDocument, doc};
use ebb_actors::catalog::EnsureCollection;
use ebb_actors::collection::CollectionHandle;
use ebb_actors::collection::{CollectionActor, Direct};
use ebb_config::limits::MAX_WRITE_BATCH_SIZE;
use ebb_storage::ErrorKind;
use ebb_storage::statement::{StatementStats, WriteError};

use super::{Request, check_collection_name, check_db_name};
use crate::args::{Args, type_name};
use crate::context::NodeContext;
use crate::error::{CommandError, CommandResult, codes};

/// The collection a write targets; created if `create` and missing.
pub async fn target(
    req: &Request,
    name: &str,
    create: bool,
) -> CommandResult<Option<CollectionHandle>> {
    target_in(&req.node, &req.db, name, create, req.applying()).await
}

/// [`target`] in database `db` (a writing stage may name another).
/// `applying`: on a replica-set member, the entry that creates a collection
/// (`Request::applying`).
pub async fn target_in(
    node: &NodeContext,
    db: &str,
    name: &str,
    create: bool,
    applying: Option<ebb_storage::changes::Applying>,
) -> CommandResult<Option<CollectionHandle>> {
    check_db_name(db)?;
    check_collection_name(db, name)?;
    // A time-series collection's buckets change only through its
    // measurements (ebb does not take raw bucket writes).
    if name.starts_with(crate::context::BUCKETS_PREFIX) {
        return Err(CommandError::from(ebb_storage::Error::not_implemented(
            "writing to a time-series buckets collection directly",
        )));
    }
    if let Some(e) = node.collection(db, name) {
        return Ok(Some(e));
    }
    super::views::catalog::refuse_write(node, db, name).await?;
    if !create {
        return Ok(None);
    }
    let entry = node
        .catalog
        .send(EnsureCollection {
            db: db.to_owned(),
            name: name.to_owned(),
            applying,
        })
        .await??;
    Ok(Some(entry))
}

/// Whether an actor error means the collection went away under the write
/// (so the write should find or create it again).
fn collection_gone<T>(r: &Result<Result<T, ebb_storage::Error>, actix::MailboxError>) -> bool {
    match r {
        Err(_) => true,
        Ok(Err(e)) => e.kind == ErrorKind::NamespaceNotFound,
        Ok(Ok(_)) => false,
    }
}

/// How many times a write chases a collection that concurrent `drop`s
/// keep removing before giving up.
const MAX_ATTEMPTS: usize = 8;

/// Sends a write to the collection's writer. When a concurrent `drop`
/// retires the writer first, a creating write (insert, upsert) finds or
/// creates the collection again and retries; any other write has nothing
/// left to change and returns `None`, as it does for a missing collection.
pub async fn send_write<M, T>(
    req: &Request,
    name: &str,
    create: bool,
    message: impl Fn() -> M,
) -> CommandResult<Option<T>>
where
    M: Direct<Output = T> + Send + 'static,
    T: Send + 'static,
    CollectionActor: actix::Handler<M>,
{
    send_write_in(&req.node, &req.db, name, create, req.applying(), message).await
}

/// [`send_write`] to a collection of database `db`.
pub async fn send_write_in<M, T>(
    node: &NodeContext,
    db: &str,
    name: &str,
    create: bool,
    applying: Option<ebb_storage::changes::Applying>,
    message: impl Fn() -> M,
) -> CommandResult<Option<T>>
where
    M: Direct<Output = T> + Send + 'static,
    T: Send + 'static,
    CollectionActor: actix::Handler<M>,
{
    if let Some(txn) = crate::txn::current() {
        return write_in_transaction(node, &txn, db, name, create, message()).await;
    }
    for _ in 0..MAX_ATTEMPTS {
        let Some(entry) = target_in(node, db, name, create, applying).await? else {
            return Ok(None);
        };
        let r = entry.addr.send(message()).await;
        if !collection_gone(&r) {
            return Ok(Some(r??));
        }
        if !create {
            return Ok(None);
        }
    }
    Err(CommandError::new(
        codes::NAMESPACE_NOT_FOUND,
        format!("collection {db}.{name} was dropped during the write"),
    ))
}

/// A transaction's write: run on its overlay, never on the collection's
/// writer. It neither creates collections nor writes to capped,
/// time-series or system collections, as mongod's transactions do not.
async fn write_in_transaction<M, T>(
    node: &NodeContext,
    txn: &crate::txn::Txn,
    db: &str,
    name: &str,
    create: bool,
    message: M,
) -> CommandResult<Option<T>>
where
    M: Direct<Output = T> + Send + 'static,
    T: Send + 'static,
{
    let refuse = |msg: String| {
        Err(CommandError::new(
            codes::OPERATION_NOT_SUPPORTED_IN_TRANSACTION,
            msg,
        ))
    };
    let ns = format!("{db}.{name}");
    if name.starts_with("system.") {
        return refuse(format!(
            "Cannot write to system collection {ns} within a transaction."
        ));
    }
    let Some(entry) = target_in(node, db, name, false, None).await? else {
        if create {
            return refuse(format!(
                "Cannot create namespace {ns} in multi-document transaction."
            ));
        }
        return Ok(None);
    };
    let coll = entry.coll.clone();
    if coll.capped.is_some() {
        return refuse(format!(
            "Collection '{ns}' is a capped collection. Writes in transactions are not allowed \
             on capped collections."
        ));
    }
    if coll.timeseries.is_some() {
        return refuse(format!(
            "Cannot write to the time-series collection {ns} in a multi-document transaction."
        ));
    }
    let overlay = txn.overlay()?;
    txn.touch(db, name, &coll);
    let now = node.shared.clock.now();
    let interrupt = crate::ops::current();
    let engine = node.shared.engine.clone();
    let out = tokio::task::spawn_blocking(move || {
        let _scope = ebb_lang::query::interrupt::Scope::enter(interrupt);
        let from = overlay.landed();
        let out = message.direct(overlay.as_ref(), &coll, now)?;
        // A document this statement wrote that a commit changed since the
        // snapshot: the conflict is known now, as mongod reports it, not
        // only at the commit.
        for (key, before) in overlay.written_since(coll.records(), from)? {
            if engine.get(coll.records(), &key)? != before {
                return Err(ebb_storage::write::transaction::conflict(format!(
                    "a document of {} changed since the transaction's snapshot",
                    coll.ns()
                )));
            }
        }
        Ok(out)
    })
    .await
    .map_err(|_| CommandError::internal())?
    .map_err(CommandError::from)?;
    Ok(Some(out))
}

/// The documents of an array argument (`documents`, `updates`, `deletes`),
/// whether they came in the body or as an OP_MSG document sequence.
pub fn documents<'a>(args: &Args<'a>, field: &str) -> CommandResult<Vec<&'a RawDocument>> {
    let Some(array) = args.array(field)? else {
        return Err(args.missing(field));
    };
    let mut out = Vec::new();
    for (i, v) in array.into_iter().enumerate() {
        match v? {
            RawBsonRef::Document(d) => out.push(d),
            other => {
                return Err(CommandError::new(
                    codes::TYPE_MISMATCH,
                    format!(
                        "BSON field '{}.{field}.{i}' is the wrong type '{}', expected type 'object'",
                        args.command_name(),
                        type_name(&other)
                    ),
                ));
            }
        }
    }
    if out.is_empty() || out.len() > MAX_WRITE_BATCH_SIZE {
        return Err(CommandError::new(
            codes::INVALID_LENGTH,
            format!(
                "Write batch sizes must be between 1 and {MAX_WRITE_BATCH_SIZE}. Got {} operations.",
                out.len()
            ),
        ));
    }
    Ok(out)
}

/// Adds `writeErrors` to a reply when there are any. `errors` carry the
/// statement index already mapped to the client's numbering.
pub fn with_write_errors(mut reply: Document, mut errors: Vec<(usize, CommandError)>) -> Document {
    if !errors.is_empty() {
        errors.sort_by_key(|(i, _)| *i);
        let list: Vec<Document> = errors.iter().map(|(i, e)| e.to_write_error(*i)).collect();
        reply.insert("writeErrors", list);
    }
    reply
}

/// Maps storage write errors of a sub-batch back to the client's statement
/// indexes (`positions[i]` is the client index of sub-batch statement i).
pub fn map_errors(errors: Vec<WriteError>, positions: &[usize]) -> Vec<(usize, CommandError)> {
    errors
        .into_iter()
        .map(|w| (positions[w.index], CommandError::from(w.error)))
        .collect()
}

/// Tells the profiler what each statement of an `update` or `delete` did:
/// those the collection ran (`ran`, numbered within the sub-batch that
/// `positions` maps), or, where there was no collection to run them on,
/// each statement sent as matching nothing; and those that failed.
pub fn note_statements(
    ran: Option<Vec<StatementStats>>,
    positions: &[usize],
    errors: &[(usize, CommandError)],
) {
    use crate::ops::StatementNote;
    let mut notes: Vec<StatementNote> = match ran {
        Some(ran) => ran
            .into_iter()
            .map(|s| StatementNote {
                position: positions[s.index],
                stats: Some(s),
                error: None,
            })
            .collect(),
        None => positions
            .iter()
            .enumerate()
            .map(|(index, &position)| StatementNote {
                position,
                stats: Some(StatementStats {
                    index,
                    ..StatementStats::default()
                }),
                error: None,
            })
            .collect(),
    };
    notes.extend(errors.iter().map(|(position, e)| StatementNote {
        position: *position,
        stats: None,
        error: Some(e.clone()),
    }));
    crate::ops::note_statements(notes);
}

/// A statement that ran out of `maxTimeMS` fails the whole command, as an
/// interruption does in mongod (it is never a mere write error).
pub fn interrupted(errors: &[(usize, CommandError)]) -> CommandResult<()> {
    match errors
        .iter()
        .find(|(_, e)| e.code == codes::MAX_TIME_MS_EXPIRED)
    {
        Some((_, e)) => Err(CommandError::new(e.code, e.errmsg.clone())),
        None => Ok(()),
    }
}

/// `{n: …}` plus `writeErrors`.
pub fn n_reply(n: u64, errors: Vec<(usize, CommandError)>) -> Document {
    with_write_errors(doc! { "n": n as i64 as i32 }, errors)
}

/// Checks `ordered`-style booleans for the write commands.
pub fn ordered(args: &Args<'_>) -> CommandResult<bool> {
    Ok(args.bool("ordered")?.unwrap_or(true))
}

/// The filters of an `arrayFilters` argument (`field` is its full name
/// in messages, `update.updates.arrayFilters`). Null reads as absent, as
/// in MongoDB 8.
pub fn array_filters<'a>(
    v: Option<RawBsonRef<'a>>,
    field: &str,
) -> CommandResult<Vec<&'a RawDocument>> {
    let wrong_type = |at: String, got: &RawBsonRef<'_>, expected: &str| {
        CommandError::new(
            codes::TYPE_MISMATCH,
            format!(
                "BSON field '{at}' is the wrong type '{}', expected type '{expected}'",
                type_name(got)
            ),
        )
    };
    match v {
        None | Some(RawBsonRef::Null) => Ok(Vec::new()),
        Some(RawBsonRef::Array(list)) => {
            let mut out = Vec::new();
            for (i, item) in list.into_iter().enumerate() {
                match item? {
                    RawBsonRef::Document(d) => out.push(d),
                    other => return Err(wrong_type(format!("{field}.{i}"), &other, "object")),
                }
            }
            Ok(out)
        }
        Some(other) => Err(wrong_type(field.to_owned(), &other, "array")),
    }
}

/// The statements of an `update` or `delete`: those that parsed, with
/// their positions in the command, and the write errors of those that did
/// not (an ordered command stops at the first).
pub struct Statements<T> {
    /// Statements received (for `opcounters`).
    pub received: usize,
    pub parsed: Vec<T>,
    pub positions: Vec<usize>,
    pub errors: Vec<(usize, CommandError)>,
}

/// Parses each statement of `field`: `parse` returns a command error for a
/// malformed statement (the whole command fails, as MongoDB's parser does)
/// or the statement's own result (an error there is that statement's write
/// error).
pub fn statements<T>(
    args: &Args<'_>,
    field: &str,
    ordered: bool,
    mut parse: impl FnMut(&RawDocument) -> CommandResult<CommandResult<T>>,
) -> CommandResult<Statements<T>> {
    let raw = documents(args, field)?;
    let mut out = Statements {
        received: raw.len(),
        parsed: Vec::new(),
        positions: Vec::new(),
        errors: Vec::new(),
    };
    for (i, st) in raw.iter().enumerate() {
        match parse(st)? {
            Ok(s) => {
                out.parsed.push(s);
                out.positions.push(i);
            }
            Err(e) => {
                out.errors.push((i, e));
                if ordered {
                    break;
                }
            }
        }
    }
    Ok(out)
}
