//! What a committed entry does on this member: the write command the
//! primary accepted, run through the same handler a client's command runs
//! through, in log order (a TTL chunk runs on its collection's writer:
//! `expiry`).
//!
//! Every member runs the same commands in the same order on the same data,
//! with the time and ObjectIds the primary decided (`entry`), so every
//! member holds the same documents;
//! the primary's reply to its client is what the handler answered there.
//! A retryable write that already ran is answered from the table of
//! retries instead (`retries`).
//!
//! Every batch an entry commits records how many of its batches are in
//! (`Rider`); a member that crashed in the middle applies the entry again
//! from the start, and the batches already committed are dropped instead
//! of committed twice (a `$push` or `$inc` is not applied twice).

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};

use bson::{RawDocumentBuf, rawdoc};
use ebb_repl::{Applied, Apply, OpTime, Proposal};
use futures::future::BoxFuture;

use ebb_lang::decided::{Decided, Rider};
use ebb_storage::engine::{Cf, Engine};

use super::entry::{self, Entry};
use super::retries::{Attempt, Retries, Seen};
use crate::command::{ConnInfo, Request};
use crate::context::NodeContext;
use crate::error::{CommandError, codes};

/// Runs committed entries on this node.
pub struct NodeApply {
    node: OnceLock<Weak<NodeContext>>,
    engine: Arc<dyn Engine>,
    retries: Retries,
    /// The entry applying when the member last stopped, and how many of
    /// its batches were in.
    interrupted: Mutex<Option<(u64, u32)>>,
    /// The test-only fail point `ebbCrashBeforeRetryRecord` (`fault`): the
    /// process aborts once a retryable write has applied, before its reply
    /// is recorded.
    pub crash_before_record: Arc<AtomicBool>,
}

impl NodeApply {
    /// Applies entries to the data in `engine`, with the retryable writes it
    /// recorded.
    pub fn new(engine: Arc<dyn Engine>) -> ebb_storage::Result<Self> {
        let retries = Retries::load(&*engine)?;
        let interrupted = engine
            .get(Cf::Log, Rider::KEY)?
            .and_then(|value| Rider::decode(&value));
        Ok(NodeApply {
            node: OnceLock::new(),
            engine,
            retries,
            interrupted: Mutex::new(interrupted),
            crash_before_record: Arc::default(),
        })
    }

    /// Entries apply to `node` from now on (the node is built after the
    /// member starts, so entries wait for it).
    pub fn attach(&self, node: &Arc<NodeContext>) {
        let _ = self.node.set(Arc::downgrade(node));
    }

    /// How entry `index` marks its progress as it applies: from the
    /// start, or past the batches it committed before a crash (only the
    /// first entry applied after a start can have any).
    fn rider(&self, index: u64, at: OpTime, wall: i64) -> Arc<Rider> {
        let skip = match self.interrupted.lock().unwrap().take() {
            Some((at, n)) if at == index => n,
            _ => 0,
        };
        Arc::new(Rider::new(index, skip, at.packed(), wall))
    }

    async fn run(&self, index: u64, at: OpTime, proposal: Proposal) -> RawDocumentBuf {
        let Some(node) = self.node.get().and_then(Weak::upgrade) else {
            return CommandError::internal().to_reply();
        };
        let entry = match RawDocumentBuf::from_bytes(proposal.bytes) {
            Ok(e) => e,
            Err(_) => return CommandError::internal().to_reply(),
        };
        let rider = self.rider(index, at, proposal.at_millis);
        let (db, command, decided) = match entry::read(&entry) {
            Some(Entry::Write {
                db,
                command,
                decided,
            }) => (
                db,
                command,
                Decided {
                    rider: Some(rider),
                    ..decided
                },
            ),
            Some(Entry::Expire {
                db,
                collection,
                mut chunk,
            }) => {
                chunk.rider = Some(rider);
                return super::expiry::apply(&node, db, collection, chunk).await;
            }
            Some(Entry::Noop) => return rawdoc! { "ok": 1.0 },
            None => return CommandError::internal().to_reply(),
        };
        let name = crate::command::dispatch::command_name(command);
        let Some(row) = crate::command::lookup(&name) else {
            return crate::command::not_found(&name).to_reply();
        };
        let attempt = Attempt::of(command);
        if let Some(attempt) = &attempt {
            match self.retries.seen(attempt) {
                Seen::New => {}
                Seen::Done(reply) => return reply,
                Seen::TooOld(e) => return e.to_reply(),
            }
        }
        let conn = Arc::new(ConnInfo {
            id: 0,
            peer: SocketAddr::from((Ipv4Addr::UNSPECIFIED, 0)),
            auth: Default::default(),
        });
        let rider = decided.rider.clone();
        let request = Request {
            db: db.to_owned(),
            body: command.to_owned(),
            node,
            conn,
            decided: Some(decided),
        };
        let reply = match (row.handler)(request).await {
            Ok(reply) => reply,
            // Not recorded: a retry runs it again, as on mongod.
            Err(e) => return e.to_reply(),
        };
        let Some(attempt) = attempt else {
            return reply;
        };
        if self.crash_before_record.load(Ordering::SeqCst) {
            std::process::abort();
        }
        // Run again after a crash that came between the write's last batch
        // and the record of its reply, the write found its own effects and
        // answered for them (an insert, a duplicate key): a retry is told
        // its history is gone instead, as mongod tells it.
        let reply = match rider.is_some_and(|r| r.replayed_in_full()) {
            true => CommandError::new(
                codes::INCOMPLETE_TRANSACTION_HISTORY,
                "Incomplete history detected for this retryable write: it was applied before \
                 this member restarted, and its reply was not recorded",
            )
            .to_reply(),
            false => reply,
        };
        if let Err(e) = self.retries.record(&*self.engine, attempt, &reply) {
            tracing::error!(error = %e, "cannot record a retryable write");
        }
        reply
    }
}

impl Apply for NodeApply {
    fn apply(&self, index: u64, at: OpTime, proposal: Proposal) -> BoxFuture<'_, Applied> {
        Box::pin(async move {
            Applied {
                bytes: self.run(index, at, proposal).await.into_bytes(),
            }
        })
    }

    /// Replaces this process with ebbd started again with the same
    /// arguments: the start loads the staged snapshot before anything
    /// reads the data, and builds every collection's state from it.
    fn restart(&self) -> BoxFuture<'_, Result<(), String>> {
        Box::pin(async move {
            let Some(node) = self.node.get().and_then(Weak::upgrade) else {
                return Err("the node is not running".to_owned());
            };
            if !node.own_process {
                return Err("a node inside another program cannot restart".to_owned());
            }
            tracing::warn!("restarting to load a snapshot of the set's data");
            self.engine.sync_wal().map_err(|e| e.to_string())?;
            use std::os::unix::process::CommandExt;
            let mut argv = node.argv.iter();
            let mut command = std::process::Command::new("/proc/self/exe");
            if let Some(arg0) = argv.next() {
                command.arg0(arg0);
            }
            let err = command.args(argv).exec();
            Err(format!("cannot restart: {err}"))
        })
    }
}
