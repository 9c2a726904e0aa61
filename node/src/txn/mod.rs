//! Multi-document transactions on a replica set's primary, as drivers run
//! them: the statements of one session's `txnNumber`, sent with
//! `autocommit: false` (the first with `startTransaction: true`), then
//! `commitTransaction` or `abortTransaction`.
//!
//! A transaction reads and writes an overlay of the engine
//! (`ebb_storage::engine::overlay`): a snapshot taken when it starts, with
//! its own writes laid over it. Its statements run through the handlers
//! every command runs through; the task-local [`current`] sends their
//! reads to the overlay (`NodeContext::read`) and their writes to it
//! instead of the collection's writer (`command::write::send_write_in`),
//! so nobody else sees them and they see nothing committed since. A write
//! to a document a commit changed since the snapshot fails at once
//! (`command::write`). The commit is one entry of the set's log
//! (`commit`), applied by every member in one batch after checking that no
//! document the transaction wrote changed since its snapshot (first
//! committer wins: WriteConflict, with `TransientTransactionError`, so the
//! drivers' `withTransaction` runs it again).
//!
//! The rules of the protocol (`statement`): which commands may run in a
//! transaction, the first statement's `readConcern`, no `writeConcern`
//! before the commit; a statement that fails aborts its transaction, as on
//! mongod. A transaction lives at most `transactionLifetimeLimitSeconds`
//! (the server parameter), its writes at most [`MAX_BYTES`] (mongod's limit
//! on a transaction's operations).

pub mod commit;
pub mod statement;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use bson::RawDocumentBuf;
use ebb_storage::Collection;
use ebb_storage::engine::Engine;
use ebb_storage::engine::overlay::Overlay;

use crate::error::{CommandError, CommandResult, codes};

/// How an aborted transaction's message ends when it outlived
/// `transactionLifetimeLimitSeconds`.
const LIFETIME_EXCEEDED: &str = " because it exceeded transactionLifetimeLimitSeconds";

/// mongod's limit on the size of a transaction's operations.
pub const MAX_BYTES: usize = 16_793_600;

tokio::task_local! {
    static CURRENT: Arc<Txn>;
}

/// The transaction the running statement belongs to, if any.
pub fn current() -> Option<Arc<Txn>> {
    CURRENT.try_with(Arc::clone).ok()
}

/// `transactionLifetimeLimitSeconds`, as the node's parameters say now.
pub fn lifetime(params: &ebb_actors::params::Params) -> Duration {
    match params.get("transactionLifetimeLimitSeconds") {
        Some(ebb_config::ParamValue::Int(secs)) => Duration::from_secs(secs.max(1) as u64),
        _ => Duration::from_secs(60),
    }
}

/// Runs `f` as a statement of `txn`.
pub async fn scope<F: std::future::Future>(txn: Arc<Txn>, f: F) -> F::Output {
    CURRENT.scope(txn, f).await
}

/// Where a transaction is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum State {
    Active,
    Committed,
    /// Aborted, and why (for the statements that come after).
    Aborted(String),
    /// A `commitTransaction` for a transaction this member never ran (a
    /// retry after a failover): the set's table of what committed answers.
    Unknown,
}

/// A collection a transaction wrote, as it found it.
#[derive(Clone)]
pub struct Touched {
    pub db: String,
    pub name: String,
    pub coll: Arc<Collection>,
}

/// One transaction.
pub struct Txn {
    /// The `lsid` as the driver sent it.
    pub lsid: RawDocumentBuf,
    pub number: i64,
    started: Instant,
    state: Mutex<State>,
    /// Its snapshot and writes; gone once it ends.
    overlay: Mutex<Option<Arc<Overlay>>>,
    touched: Mutex<Vec<Touched>>,
    /// One statement at a time.
    pub turn: tokio::sync::Mutex<()>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The session's id as mongod prints it in messages.
fn session_text(session: &[u8]) -> String {
    match <[u8; 16]>::try_from(session) {
        Ok(id) => format!("{{ id: UUID(\"{}\") }}", bson::Uuid::from_bytes(id)),
        Err(_) => "the session".to_owned(),
    }
}

/// NoSuchTransaction, which drivers may run the transaction again on.
pub fn no_such(msg: String) -> CommandError {
    CommandError::new(codes::NO_SUCH_TRANSACTION, msg).labelled("TransientTransactionError")
}

impl Txn {
    /// A transaction in `state`, reading and writing `overlay` (none for
    /// one this member never ran).
    fn new(lsid: RawDocumentBuf, number: i64, state: State, overlay: Option<Overlay>) -> Txn {
        Txn {
            lsid,
            number,
            started: Instant::now(),
            state: Mutex::new(state),
            overlay: Mutex::new(overlay.map(Arc::new)),
            touched: Mutex::default(),
            turn: tokio::sync::Mutex::new(()),
        }
    }

    pub fn state(&self) -> State {
        lock(&self.state).clone()
    }

    /// The transaction's engine while it is active.
    pub fn overlay(&self) -> CommandResult<Arc<Overlay>> {
        lock(&self.overlay)
            .clone()
            .ok_or_else(|| no_such(self.aborted_message()))
    }

    fn aborted_message(&self) -> String {
        let why = match self.state() {
            State::Aborted(why) => why,
            _ => String::new(),
        };
        format!(
            "Transaction with {{ txnNumber: {} }} has been aborted{why}.",
            self.number
        )
    }

    /// Ends the transaction as `state`, letting its snapshot and writes
    /// go; whether it was active.
    fn end(&self, state: State) -> bool {
        let mut s = lock(&self.state);
        if *s != State::Active {
            return false;
        }
        *s = state;
        lock(&self.overlay).take();
        true
    }

    /// Aborts the transaction; `why` ends the message later statements get.
    fn abort(&self, why: &str) -> bool {
        self.end(State::Aborted(why.to_owned()))
    }

    /// Notes that the transaction writes `db.name`, found as `coll`.
    pub fn touch(&self, db: &str, name: &str, coll: &Arc<Collection>) {
        let mut t = lock(&self.touched);
        if !t.iter().any(|c| c.db == db && c.name == name) {
            t.push(Touched {
                db: db.to_owned(),
                name: name.to_owned(),
                coll: coll.clone(),
            });
        }
    }

    /// The collections the transaction wrote, in the order it first did.
    pub fn touched(&self) -> Vec<Touched> {
        lock(&self.touched).clone()
    }

    fn expired(&self, lifetime: Duration) -> bool {
        self.started.elapsed() > lifetime
    }
}

/// Every session's latest transaction, and how many started and ended.
#[derive(Default)]
pub struct Transactions {
    map: Mutex<HashMap<Vec<u8>, Arc<Txn>>>,
    pub started: AtomicU64,
    pub committed: AtomicU64,
    pub aborted: AtomicU64,
}

/// What a statement says of its transaction.
pub struct Asked<'a> {
    pub session: Vec<u8>,
    pub lsid: RawDocumentBuf,
    pub number: i64,
    pub start: bool,
    /// The command's name.
    pub name: &'a str,
}

impl Transactions {
    /// Aborts the active transactions open longer than `lifetime`.
    pub fn reap(&self, lifetime: Duration) {
        for txn in lock(&self.map).values() {
            if txn.expired(lifetime) {
                self.abort(txn, LIFETIME_EXCEEDED);
            }
        }
    }

    /// Aborts `txn`, counted if it was active; `why` ends the message its
    /// later statements get.
    pub fn abort(&self, txn: &Txn, why: &str) {
        if txn.abort(why) {
            self.aborted.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Marks `txn` committed, counted if it was active.
    pub fn commit(&self, txn: &Txn) {
        if txn.end(State::Committed) {
            self.committed.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// The open transactions, as `currentOp` shows a session that holds
    /// one between its statements (each aborted once open `lifetime`).
    pub fn describe(&self, lifetime: Duration) -> Vec<bson::Document> {
        lock(&self.map)
            .values()
            .filter(|t| t.state() == State::Active)
            .map(|t| {
                let open = t.started.elapsed();
                let lsid = bson::Document::try_from(t.lsid.as_ref()).unwrap_or_default();
                bson::doc! {
                    "type": "idleSession",
                    "active": false,
                    "lsid": lsid,
                    "transaction": {
                        "parameters": { "txnNumber": t.number, "autocommit": false },
                        "timeOpenMicros": open.as_micros() as i64,
                        "expiryTime": bson::DateTime::from_system_time(
                            std::time::SystemTime::now() + lifetime.saturating_sub(open),
                        ),
                    },
                }
            })
            .collect()
    }

    /// The transaction a statement belongs to: started (on `engine`'s
    /// state now) or continued, with mongod's errors for a number that
    /// does not fit the session's.
    pub fn enter(
        &self,
        asked: Asked<'_>,
        engine: Arc<dyn Engine>,
        lifetime: Duration,
    ) -> CommandResult<Arc<Txn>> {
        let mut map = lock(&self.map);
        let n = asked.number;
        let existing = map.get(&asked.session).cloned();
        // The reaper may not have come by yet.
        if let Some(t) = &existing
            && t.expired(lifetime)
        {
            self.abort(t, LIFETIME_EXCEEDED);
        }
        if let Some(t) = &existing {
            if t.number > n {
                return Err(CommandError::new(
                    codes::TRANSACTION_TOO_OLD,
                    format!(
                        "Cannot start transaction {n} on session {} because a newer \
                         transaction {} has already started.",
                        session_text(&asked.session),
                        t.number
                    ),
                ));
            }
            if t.number == n {
                return match (t.state(), asked.start) {
                    (State::Active, true) => Err(CommandError::new(
                        codes::CONFLICTING_OPERATION_IN_PROGRESS,
                        format!(
                            "Cannot start transaction {n} on session {} because a transaction \
                             with the same number is in progress.",
                            session_text(&asked.session)
                        ),
                    )),
                    (State::Active, false) => Ok(t.clone()),
                    (State::Committed, _) if asked.name == "commitTransaction" => Ok(t.clone()),
                    (State::Committed, _) => Err(CommandError::new(
                        codes::TRANSACTION_COMMITTED,
                        format!("Transaction with {{ txnNumber: {n} }} has been committed."),
                    )),
                    _ => Err(no_such(t.aborted_message())),
                };
            }
        }
        if !asked.start {
            if asked.name == "commitTransaction" {
                return Ok(Arc::new(Txn::new(asked.lsid, n, State::Unknown, None)));
            }
            return Err(no_such(format!(
                "Given transaction number {n} does not match any in-progress transactions."
            )));
        }
        if let Some(old) = existing {
            self.abort(&old, " because a newer transaction started on its session");
        }
        let overlay = Overlay::new(engine);
        let txn = Arc::new(Txn::new(asked.lsid, n, State::Active, Some(overlay)));
        map.insert(asked.session, txn.clone());
        self.started.fetch_add(1, Ordering::Relaxed);
        Ok(txn)
    }

    /// Aborts and forgets the transactions of the sessions `ids`
    /// (`endSessions`, `killSessions`).
    pub fn end_sessions(&self, ids: &[Vec<u8>]) {
        let mut map = lock(&self.map);
        for id in ids {
            if let Some(t) = map.remove(id) {
                self.abort(&t, " because its session ended");
            }
        }
    }

    /// How many transactions are active now.
    pub fn active(&self) -> usize {
        lock(&self.map)
            .values()
            .filter(|t| t.state() == State::Active)
            .count()
    }
}
