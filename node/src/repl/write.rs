//! What a member does with a client's command: a write goes through the
//! set's log (on the primary only, answered after its write concern holds),
//! a read needs the primary or a read preference that allows a secondary.

use std::time::Duration;

use bson::{RawBsonRef, RawDocument, RawDocumentBuf, doc};
use ebb_lang::decided::{Decided, Seed};
use ebb_repl::{ProposeError, Role};

use super::entry;
use super::set::ReplicaSet;
use crate::command::LogForm;
use crate::error::{CommandError, CommandResult, codes};

fn not_primary() -> CommandError {
    CommandError::new(codes::NOT_WRITABLE_PRIMARY, "not primary")
}

/// How many of `voters` make a majority: what a commit waits for.
fn majority(voters: usize) -> usize {
    voters / 2 + 1
}

/// What a write's concern asks: how many members must hold it, given
/// `voters`, and for how long to wait for them (no limit without
/// `wtimeout`).
fn asked(body: &RawDocument, voters: usize) -> CommandResult<(usize, Option<Duration>)> {
    let Some(RawBsonRef::Document(wc)) = body.get("writeConcern")? else {
        return Ok((1, None));
    };
    let n = match wc.get("w")? {
        Some(RawBsonRef::String("majority")) => majority(voters),
        Some(RawBsonRef::String(mode)) => {
            return Err(CommandError::new(
                codes::UNKNOWN_REPL_WRITE_CONCERN,
                format!("No write concern mode named '{mode}' found in replica set configuration"),
            ));
        }
        Some(w) => crate::args::as_f64(w).unwrap_or(1.0).trunc() as usize,
        None => 1,
    };
    if n > voters {
        return Err(CommandError::new(
            codes::UNSATISFIABLE_WRITE_CONCERN,
            "Not enough data-bearing nodes",
        ));
    }
    let wtimeout = match wc.get("wtimeout")? {
        Some(t) => crate::args::as_f64(t)
            .map(|ms| ms as u64)
            .filter(|&ms| ms > 0),
        None => None,
    };
    Ok((n, wtimeout.map(Duration::from_millis)))
}

/// Runs a write command through the set: refused unless this member is a
/// writable primary; otherwise put in the form the log holds (`form`),
/// committed by a majority, applied here, and answered as the handler
/// answered, after as many members as its write concern asks hold it.
pub async fn replicate(
    set: &ReplicaSet,
    db: &str,
    body: RawDocumentBuf,
    form: Option<LogForm>,
) -> CommandResult {
    let retryable = body.get("txnNumber")?.is_some();
    // A driver retries a retryable write once on another primary when the
    // server labels the error so.
    let label = |e: CommandError| match retryable {
        true => e.labelled("RetryableWriteError"),
        false => e,
    };
    let view = set.replica.view();
    if !view.writable {
        return Err(label(not_primary()));
    }
    let (wanted, deadline) = asked(&body, view.voters.len())?;
    let body = match form {
        Some(form) => form(db, body)?,
        None => body,
    };
    let at = set.clock.now();
    let decided = Decided {
        at,
        ids: Seed::fresh(at.timestamp_millis()),
        hides: set.hide_due.hide_at().is_some(),
        // Each member makes its own as it applies the entry.
        rider: None,
    };
    let (index, applied) = match set.replica.propose(entry::write(db, body, decided)).await {
        Ok(done) => done,
        Err(ProposeError::NotLeader { .. }) => return Err(label(not_primary())),
        Err(ProposeError::Other(why)) => {
            return Err(label(CommandError::new(
                codes::INTERRUPTED_DUE_TO_REPL_STATE_CHANGE,
                format!("operation was interrupted because of a replication state change: {why}"),
            )));
        }
    };
    let reply = RawDocumentBuf::from_bytes(applied.bytes).map_err(|_| CommandError::internal())?;
    if wanted <= majority(view.voters.len()) {
        return Ok(reply);
    }
    if set.replica.wait_held(index, wanted, deadline).await {
        return Ok(reply);
    }
    let mut reply =
        bson::Document::try_from(reply.as_ref()).map_err(|_| CommandError::internal())?;
    reply.insert(
        "writeConcernError",
        doc! {
            "code": codes::WRITE_CONCERN_FAILED,
            "codeName": crate::error::code_name(codes::WRITE_CONCERN_FAILED),
            "errmsg": "waiting for replication timed out",
            "errInfo": { "wtimeout": true },
        },
    );
    RawDocumentBuf::try_from(&reply).map_err(|_| CommandError::internal())
}

/// Refuses a read on a member that is not the primary unless the client
/// allows reading from secondaries (`$readPreference` other than
/// `primary`).
pub fn check_read(set: &ReplicaSet, body: &RawDocument) -> CommandResult<()> {
    let view = set.replica.view();
    if view.role == Role::Primary {
        return Ok(());
    }
    let mode = match body.get("$readPreference")? {
        Some(RawBsonRef::Document(pref)) => pref.get_str("mode").unwrap_or("primary"),
        _ => "primary",
    };
    if mode != "primary" {
        return Ok(());
    }
    Err(CommandError::new(
        codes::NOT_PRIMARY_NO_SECONDARY_OK,
        "not primary and secondaryOk=false",
    ))
}
