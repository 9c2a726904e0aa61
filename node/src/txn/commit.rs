//! `commitTransaction` and `abortTransaction`, and the log entry a commit
//! is: `{ebbApplyTransaction, lsid, txnNumber, colls, pre, ops}`, every
//! record the transaction wrote as its snapshot held it (`pre`: a digest,
//! or null) and each write of a record in order (`ops`: the new document,
//! or null). Every member applies it in log order through
//! [`apply_transaction`], in one batch (`ebb_storage::write::transaction`):
//! all of it, or nothing and WriteConflict when another write got there
//! first. The entry carries the session and number, so the set's table of
//! retryable writes answers a commit sent again, on any member that
//! becomes primary.

use std::sync::Arc;

use bson::{
    Binary, RawArrayBuf, RawBson, RawBsonRef, RawDocumentBuf, doc, rawdoc, spec::BinarySubtype,
};
use ebb_actors::collection::Lend;
use ebb_storage::engine::Cf;
use ebb_storage::engine::overlay::Overlay;
use ebb_storage::write::archive::archives_to;
use ebb_storage::write::transaction::{self, Change, Expect, digest};

use super::statement::reply_error;
use super::{State, Txn, current, no_such};
use crate::command::{Request, ok};
use crate::error::{CommandError, CommandResult, codes};

fn binary(bytes: Vec<u8>) -> RawBson {
    RawBson::Binary(Binary {
        subtype: BinarySubtype::Generic,
        bytes,
    })
}

fn outside(name: &str) -> CommandError {
    CommandError::new(
        codes::INVALID_OPTIONS,
        format!("{name} must be run within a transaction"),
    )
}

/// `commitTransaction`.
pub async fn commit_transaction(req: Request) -> CommandResult {
    let Some(txn) = current() else {
        return Err(outside("commitTransaction"));
    };
    let Some(set) = req.node.replica_set.get().cloned() else {
        return Err(outside("commitTransaction"));
    };
    let write_concern = req.body.get_document("writeConcern").ok();
    // The drivers' maxCommitTimeMS.
    let max_time = crate::command::query::max_time(&crate::args::Args::open(&req.body)?)?;
    let mut entry = match txn.state() {
        State::Committed => return ok(doc! {}),
        State::Aborted(_) => return Err(no_such(txn.aborted_message())),
        // Committed by an earlier primary, or never: the set's table says.
        State::Unknown => rawdoc! {
            "ebbApplyTransaction": 1,
            "lsid": txn.lsid.clone(),
            "txnNumber": txn.number,
            "retry": true,
        },
        State::Active => match entry_of(&txn, txn.overlay()?.as_ref())? {
            Some(entry) => entry,
            None => {
                req.node.transactions.commit(&txn);
                return ok(doc! {});
            }
        },
    };
    if let Some(wc) = write_concern {
        entry.append(bson::cstr!("writeConcern"), wc.to_owned());
    }
    // An error here (or maxTimeMS running out) leaves the outcome open: the
    // entry may still commit. The transaction stays as it is, and a
    // retried commit proposes it again, which the table of retries
    // answers if the first one applied.
    let commit = crate::repl::replicate(&set, "admin", entry, None);
    let reply = match max_time {
        None => commit.await?,
        Some(limit) => tokio::time::timeout(limit, commit).await.map_err(|_| {
            CommandError::new(
                codes::MAX_TIME_MS_EXPIRED,
                "operation exceeded time limit while committing the transaction",
            )
        })??,
    };
    match reply_error(&reply) {
        None => {
            req.node.transactions.commit(&txn);
            Ok(reply)
        }
        Some(e) => {
            req.node
                .transactions
                .abort(&txn, " because its commit failed");
            Err(e)
        }
    }
}

/// `abortTransaction`.
pub async fn abort_transaction(req: Request) -> CommandResult {
    let Some(txn) = current() else {
        return Err(outside("abortTransaction"));
    };
    match txn.state() {
        State::Active => {
            req.node.transactions.abort(&txn, " by abortTransaction");
            ok(doc! {})
        }
        State::Committed => Err(CommandError::new(
            codes::TRANSACTION_COMMITTED,
            format!(
                "Transaction with {{ txnNumber: {} }} has been committed.",
                txn.number
            ),
        )),
        _ => Err(no_such(txn.aborted_message())),
    }
}

/// The entry that commits `txn`; `None` when it wrote nothing.
fn entry_of(txn: &Txn, overlay: &Overlay) -> CommandResult<Option<RawDocumentBuf>> {
    let touched = txn.touched();
    let records: Vec<u64> = touched
        .iter()
        .map(|t| match t.coll.records() {
            Cf::Id(id) => id,
            _ => u64::MAX,
        })
        .collect();
    let position = |cf: u64| records.iter().position(|r| *r == cf).map(|p| p as i32);
    let mut ops = RawArrayBuf::new();
    let mut any = false;
    for w in overlay.journal() {
        let Some(c) = position(w.cf) else { continue };
        let doc = match w.value {
            Some(v) => RawBson::Document(
                RawDocumentBuf::from_bytes(v).map_err(|_| CommandError::internal())?,
            ),
            None => RawBson::Null,
        };
        ops.push(rawdoc! { "c": c, "k": binary(w.key), "d": doc });
        any = true;
    }
    if !any {
        return Ok(None);
    }
    let mut pre = RawArrayBuf::new();
    for w in overlay.before()? {
        let Some(c) = position(w.cf) else { continue };
        let seen = match w.value {
            Some(v) => binary(digest(&v).to_vec()),
            None => RawBson::Null,
        };
        pre.push(rawdoc! { "c": c, "k": binary(w.key), "h": seen });
    }
    let mut colls = RawArrayBuf::new();
    for t in &touched {
        colls.push(rawdoc! {
            "db": t.db.as_str(),
            "coll": t.name.as_str(),
            "ui": RawBson::Binary(t.coll.meta.uuid.clone()),
        });
    }
    Ok(Some(rawdoc! {
        "ebbApplyTransaction": 1,
        "lsid": txn.lsid.clone(),
        "txnNumber": txn.number,
        "colls": colls,
        "pre": pre,
        "ops": ops,
    }))
}

fn conflict(why: String) -> CommandError {
    CommandError::from(transaction::conflict(why))
}

fn malformed() -> CommandError {
    CommandError::new(codes::BAD_VALUE, "malformed transaction entry")
}

/// Applies a commit's entry on this member (`ebbApplyTransaction`).
pub async fn apply_transaction(req: Request) -> CommandResult {
    let body = req.body;
    if body.get_bool("retry").unwrap_or(false) {
        let n = body.get_i64("txnNumber").unwrap_or_default();
        return Err(no_such(format!(
            "Given transaction number {n} does not match any in-progress transactions."
        )));
    }
    let rider = req.decided.as_ref().and_then(|d| d.rider.clone());
    // Applied before a crash: its one batch is in.
    if rider.as_ref().is_some_and(|r| r.replayed_in_full()) {
        return ok(doc! {});
    }
    // Its changes name the transaction, for change streams.
    if let (Some(rider), Ok(lsid), Ok(n)) =
        (&rider, body.get_document("lsid"), body.get_i64("txnNumber"))
    {
        let _ = rider.txn.set((lsid.to_owned(), n));
    }
    let node = req.node;
    let colls = body.get_array("colls").map_err(|_| malformed())?;
    let mut handles = Vec::new();
    for c in colls {
        let c = c?.as_document().ok_or_else(malformed)?;
        let (db, name) = (c.get_str("db")?, c.get_str("coll")?);
        let ui = c.get_binary("ui")?;
        let handle = node.collection(db, name).ok_or_else(|| {
            conflict(format!(
                "collection {db}.{name} was dropped while a transaction wrote to it"
            ))
        })?;
        handles.push((db.to_owned(), name.to_owned(), ui.bytes.to_vec(), handle));
    }
    // Writers are borrowed in one order: a collection other TTL indexes
    // archive to comes after every source, whose chunk may be waiting for
    // it while holding its own writer.
    let mut order: Vec<usize> = (0..handles.len()).collect();
    let view = node.view.load();
    order.sort_by_key(|&i| {
        let (db, name, _, _) = &handles[i];
        let archive = view.in_db(db).any(|o| archives_to(&o.coll.meta, name));
        (archive, db.clone(), name.clone())
    });
    let mut loans = Vec::with_capacity(handles.len());
    for &i in &order {
        let (db, name, ui, handle) = &handles[i];
        let loan = handle
            .addr
            .send(Lend)
            .await
            .map_err(|_| conflict(format!("collection {db}.{name} was dropped")))??;
        if loan.coll.meta.uuid.bytes != *ui {
            return Err(conflict(format!(
                "collection {db}.{name} changed while a transaction wrote to it"
            )));
        }
        loans.push((i, loan));
    }
    loans.sort_by_key(|(i, _)| *i);
    let lent: Vec<Arc<ebb_storage::Collection>> =
        loans.iter().map(|(_, l)| l.coll.clone()).collect();
    let engine = node.shared.engine.clone();
    let decided = req.decided.clone();
    let dues = tokio::task::spawn_blocking(move || {
        ebb_lang::decided::within(decided, || {
            let mut expect = Vec::new();
            for p in body.get_array("pre").map_err(|_| malformed())? {
                let p = p?.as_document().ok_or_else(malformed)?;
                let seen = match p.get("h")? {
                    Some(RawBsonRef::Binary(b)) => {
                        Some(b.bytes.try_into().map_err(|_| malformed())?)
                    }
                    _ => None,
                };
                expect.push(Expect {
                    coll: usize::try_from(p.get_i32("c")?).map_err(|_| malformed())?,
                    key: p.get_binary("k")?.bytes,
                    seen,
                });
            }
            let mut changes = Vec::new();
            for o in body.get_array("ops").map_err(|_| malformed())? {
                let o = o?.as_document().ok_or_else(malformed)?;
                changes.push(Change {
                    coll: usize::try_from(o.get_i32("c")?).map_err(|_| malformed())?,
                    key: o.get_binary("k")?.bytes,
                    doc: match o.get("d")? {
                        Some(RawBsonRef::Document(d)) => Some(d),
                        _ => None,
                    },
                });
            }
            let n = lent.len();
            if expect.iter().any(|e| e.coll >= n) || changes.iter().any(|c| c.coll >= n) {
                return Err(malformed());
            }
            let colls: Vec<&ebb_storage::Collection> = lent.iter().map(|c| c.as_ref()).collect();
            transaction::commit(engine.as_ref(), &colls, &expect, &changes)
                .map_err(CommandError::from)
        })
    })
    .await
    .map_err(|_| CommandError::internal())??;
    drop(loans);
    if node.shared.policy.prompt {
        for due in dues.into_iter().flatten() {
            node.shared.ttl.note_due(due);
        }
    }
    ok(doc! {})
}
