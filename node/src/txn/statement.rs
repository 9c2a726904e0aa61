//! The rules a statement of a transaction follows, with mongod's errors:
//! what it must carry, which commands may run, which concerns it may
//! state; and what a statement's outcome does to its transaction.

use bson::{RawBsonRef, RawDocument, RawDocumentBuf};

use super::{Asked, MAX_BYTES, Transactions, Txn};
use crate::error::{CommandError, CommandResult, codes};
use crate::repl::ReplicaSet;

/// The commands a transaction may run (mongod's, less what ebb's
/// transactions do not take yet: creating collections and indexes).
const ALLOWED: &[&str] = &[
    "abortTransaction",
    "aggregate",
    "commitTransaction",
    "delete",
    "distinct",
    "find",
    "findAndModify",
    "findandmodify",
    "getMore",
    "insert",
    "killCursors",
    "update",
];

/// Stages that write or never end, which no transaction runs.
const REFUSED_STAGES: &[&str] = &["$out", "$merge", "$changeStream", "$currentOp"];

/// Errors drivers may run the whole transaction again after.
const TRANSIENT: &[i32] = &[
    codes::WRITE_CONFLICT,
    codes::NO_SUCH_TRANSACTION,
    codes::NOT_WRITABLE_PRIMARY,
    codes::INTERRUPTED_DUE_TO_REPL_STATE_CHANGE,
];

fn invalid(msg: &str) -> CommandError {
    CommandError::new(codes::INVALID_OPTIONS, msg)
}

/// Whether `body` says it is a statement of a transaction.
pub fn in_transaction(body: &RawDocument) -> CommandResult<bool> {
    Ok(body.get("autocommit")?.is_some() || body.get("startTransaction")?.is_some())
}

/// Reads and checks what a statement says of its transaction, before
/// anything runs: refused statements start, continue and abort nothing.
pub fn parse<'a>(
    set: Option<&ReplicaSet>,
    name: &'a str,
    body: &RawDocument,
) -> CommandResult<Asked<'a>> {
    let Some(set) = set else {
        return Err(CommandError::new(
            codes::ILLEGAL_OPERATION,
            "Transaction numbers are only allowed on a replica set member or mongos",
        ));
    };
    match body.get("autocommit")? {
        Some(RawBsonRef::Boolean(false)) => {}
        Some(RawBsonRef::Boolean(true)) => {
            return Err(invalid("Specifying autocommit=true is not allowed."));
        }
        Some(_) => {
            return Err(CommandError::new(
                codes::TYPE_MISMATCH,
                "BSON field 'autocommit' is the wrong type, expected type 'bool'",
            ));
        }
        None => {
            return Err(invalid(
                "'startTransaction' requires 'autocommit: false' to also be specified",
            ));
        }
    }
    let start = match body.get("startTransaction")? {
        None => false,
        Some(RawBsonRef::Boolean(true)) => true,
        Some(RawBsonRef::Boolean(false)) => {
            return Err(invalid("Specifying startTransaction=false is not allowed."));
        }
        Some(_) => {
            return Err(CommandError::new(
                codes::TYPE_MISMATCH,
                "BSON field 'startTransaction' is the wrong type, expected type 'bool'",
            ));
        }
    };
    let number = match body.get("txnNumber")? {
        Some(RawBsonRef::Int64(n)) => n,
        Some(RawBsonRef::Int32(n)) => i64::from(n),
        Some(_) => {
            return Err(CommandError::new(
                codes::TYPE_MISMATCH,
                "BSON field 'txnNumber' is the wrong type, expected type 'long'",
            ));
        }
        None => {
            return Err(invalid(
                "'autocommit' field requires a transaction number to also be specified",
            ));
        }
    };
    let Ok(lsid) = body.get_document("lsid") else {
        return Err(invalid(
            "Transaction numbers are only allowed in the context of a session",
        ));
    };
    let session = lsid
        .get_binary("id")
        .map_err(|_| invalid("lsid.id must be a UUID"))?
        .bytes
        .to_vec();
    if !ALLOWED.contains(&name) {
        return Err(CommandError::new(
            codes::OPERATION_NOT_SUPPORTED_IN_TRANSACTION,
            format!("Cannot run '{name}' in a multi-document transaction."),
        ));
    }
    if name == "aggregate" {
        refuse_stages(body)?;
    }
    let ends = matches!(name, "commitTransaction" | "abortTransaction");
    if !ends && body.get("writeConcern")?.is_some() {
        return Err(invalid(
            "writeConcern is not allowed within a multi-statement transaction",
        ));
    }
    if let Some(rc) = body.get("readConcern")? {
        if !start {
            return Err(invalid(
                "Only the first command in a transaction may specify a readConcern",
            ));
        }
        if let RawBsonRef::Document(rc) = rc
            && let Ok(level) = rc.get_str("level")
            && !matches!(level, "local" | "majority" | "snapshot")
        {
            return Err(invalid(
                "The readConcern level must be either 'local' (default), 'majority' or \
                 'snapshot' in order to run in a transaction",
            ));
        }
    }
    if !set.replica.view().writable {
        return Err(
            CommandError::new(codes::NOT_WRITABLE_PRIMARY, "not primary")
                .labelled("TransientTransactionError"),
        );
    }
    Ok(Asked {
        session,
        lsid: lsid.to_owned(),
        number,
        start,
        name,
    })
}

/// Refuses an aggregation whose pipeline writes or never ends.
fn refuse_stages(body: &RawDocument) -> CommandResult<()> {
    let Ok(pipeline) = body.get_array("pipeline") else {
        return Ok(());
    };
    for stage in pipeline {
        if let Ok(RawBsonRef::Document(stage)) = stage
            && let Some(Ok((name, _))) = stage.into_iter().next()
            && REFUSED_STAGES.contains(&name.as_str())
        {
            return Err(CommandError::new(
                codes::OPERATION_NOT_SUPPORTED_IN_TRANSACTION,
                format!("{name} cannot be used in a transaction"),
            ));
        }
    }
    Ok(())
}

/// Whether a reply reports a failure: an error, or write errors.
fn failed(reply: &CommandResult) -> bool {
    match reply {
        Err(_) => true,
        Ok(doc) => {
            let ok = match doc.get("ok") {
                Ok(Some(v)) => crate::args::as_f64(v).unwrap_or(1.0) != 0.0,
                _ => true,
            };
            !ok || doc.get("writeErrors").ok().flatten().is_some()
        }
    }
}

/// What a statement's outcome does to its transaction: a failed
/// statement aborts it (the commit and the abort end it themselves), and
/// one that grows its writes past [`MAX_BYTES`] too. Errors drivers may
/// retry the transaction after carry `TransientTransactionError`.
pub fn after(all: &Transactions, txn: &Txn, name: &str, reply: CommandResult) -> CommandResult {
    let ends = matches!(name, "commitTransaction" | "abortTransaction");
    if !ends && failed(&reply) {
        all.abort(txn, " because one of its statements failed");
    }
    if !ends
        && reply.is_ok()
        && let Ok(overlay) = txn.overlay()
        && overlay.bytes() > MAX_BYTES
    {
        all.abort(txn, " because its writes grew too large");
        return Err(CommandError::new(
            codes::TRANSACTION_TOO_LARGE,
            format!(
                "Total size of all transaction operations must be less than {MAX_BYTES}. \
                 Actual size is {}",
                overlay.bytes()
            ),
        ));
    }
    reply.map_err(|e| labelled(e, ends))
}

/// `e` with `TransientTransactionError` when drivers may run the
/// transaction again after it.
pub fn labelled(e: CommandError, ends: bool) -> CommandError {
    let has = |label: &str| {
        e.extra
            .as_ref()
            .and_then(|x| x.get_array("errorLabels").ok())
            .is_some_and(|a| a.iter().any(|l| l.as_str() == Some(label)))
    };
    // A commit's retryable errors are the driver's to retry as a commit.
    if TRANSIENT.contains(&e.code)
        && !has("TransientTransactionError")
        && !(ends && has("RetryableWriteError"))
    {
        return e.labelled("TransientTransactionError");
    }
    e
}

/// A reply document's error, when it reports one.
pub fn reply_error(doc: &RawDocumentBuf) -> Option<CommandError> {
    let ok = crate::args::as_f64(doc.get("ok").ok()??).unwrap_or(1.0);
    if ok != 0.0 {
        return None;
    }
    let code = doc.get_i32("code").unwrap_or(codes::INTERNAL_ERROR);
    let msg = doc.get_str("errmsg").unwrap_or("").to_owned();
    let mut e = CommandError::new(code, msg);
    if let Ok(labels) = doc.get_array("errorLabels") {
        for l in labels.into_iter().flatten() {
            if let Some(l) = l.as_str() {
                e = e.labelled(l);
            }
        }
    }
    Some(e)
}
