//! The operations running on the node: what `currentOp` lists and `killOp`
//! stops.
//!
//! Every command gets an opid and an [`Interrupt`] when dispatch starts it
//! ([`Operations::start`]); the returned [`Running`] guard removes it when
//! the command ends, however it ends. The command's reads find the interrupt
//! through [`current`] (a task-local set around the command), and the node
//! enters it around each blocking read (`NodeContext::read`), so a killed
//! operation or one whose client disconnected stops at its next check.
//! Nothing here decides who may kill what: that is the command table's
//! permission check.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use bson::{Document, RawDocumentBuf, doc};
use ebb_lang::query::interrupt::{Interrupt, Why};
use ebb_storage::statement::StatementStats;

use crate::error::CommandError;

tokio::task_local! {
    static CURRENT: Interrupt;
    static STATS: Arc<OpStats>;
}

/// What a command's reads examined and how, for its profiler entry:
/// noted by the commands that run queries ([`note_examined`]), and by
/// `update` and `delete` what each statement did ([`note_statements`]).
#[derive(Debug, Default)]
pub struct OpStats {
    pub keys_examined: AtomicU64,
    pub docs_examined: AtomicU64,
    pub plan_summary: Mutex<Option<String>>,
    pub statements: Mutex<Vec<StatementNote>>,
}

/// One statement of an `update` or `delete`, which the profiler records
/// on its own as mongod does.
#[derive(Debug, Clone)]
pub struct StatementNote {
    /// Its index among the command's statements.
    pub position: usize,
    /// What it did, if it completed.
    pub stats: Option<StatementStats>,
    /// Its write error, if it failed.
    pub error: Option<CommandError>,
}

/// Records what the running command's statements did, in statement
/// order.
pub fn note_statements(mut notes: Vec<StatementNote>) {
    notes.sort_by_key(|n| n.position);
    let _ = STATS.try_with(|s| {
        *s.statements.lock().unwrap_or_else(|e| e.into_inner()) = notes;
    });
}

/// Adds to the running command's examined keys and documents.
pub fn note_examined(keys: u64, docs: u64, plan_summary: Option<&str>) {
    let _ = STATS.try_with(|s| {
        s.keys_examined.fetch_add(keys, Ordering::Relaxed);
        s.docs_examined.fetch_add(docs, Ordering::Relaxed);
        if let Some(p) = plan_summary {
            *s.plan_summary.lock().unwrap_or_else(|e| e.into_inner()) = Some(p.to_owned());
        }
    });
}

/// One running operation.
struct Op {
    connection: u32,
    client: SocketAddr,
    db: String,
    command: RawDocumentBuf,
    started: Instant,
    interrupt: Interrupt,
}

#[derive(Default)]
pub struct Operations {
    next_opid: AtomicU32,
    running: Mutex<BTreeMap<u32, Op>>,
}

/// Keeps an operation listed until dropped.
pub struct Running<'a> {
    ops: &'a Operations,
    opid: u32,
    interrupt: Interrupt,
    stats: Arc<OpStats>,
}

impl Running<'_> {
    /// Runs `command` with this operation's interrupt as [`current`] and
    /// its [`OpStats`] collecting what [`note_examined`] reports.
    pub async fn scope<F: Future>(&self, command: F) -> F::Output {
        let stats = STATS.scope(self.stats.clone(), command);
        CURRENT.scope(self.interrupt.clone(), stats).await
    }

    /// What the command's reads examined.
    pub fn stats(&self) -> &OpStats {
        &self.stats
    }
}

impl Drop for Running<'_> {
    fn drop(&mut self) {
        self.ops.lock().remove(&self.opid);
    }
}

impl Operations {
    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<u32, Op>> {
        // An operation list is still valid after a panic elsewhere.
        self.running.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Lists a command of `connection` as running.
    pub fn start(
        &self,
        connection: u32,
        client: SocketAddr,
        db: &str,
        command: &RawDocumentBuf,
    ) -> Running<'_> {
        let opid = self.next_opid.fetch_add(1, Ordering::Relaxed) + 1;
        let interrupt = Interrupt::default();
        self.lock().insert(
            opid,
            Op {
                connection,
                client,
                db: db.to_owned(),
                command: shown(command),
                started: Instant::now(),
                interrupt: interrupt.clone(),
            },
        );
        Running {
            ops: self,
            opid,
            interrupt,
            stats: Arc::default(),
        }
    }

    /// How many commands are running.
    pub fn running(&self) -> usize {
        self.lock().len()
    }

    /// `killOp`: trips the operation's interrupt; false if no such opid runs.
    pub fn kill(&self, opid: u32) -> bool {
        self.lock()
            .get(&opid)
            .map(|op| op.interrupt.trip(Why::Killed))
            .is_some()
    }

    /// A connection closed: every operation it started stops.
    pub fn disconnected(&self, connection: u32) {
        for op in self.lock().values() {
            if op.connection == connection {
                op.interrupt.trip(Why::Disconnected);
            }
        }
    }

    /// The `currentOp` entries of the running operations, in opid order;
    /// `only_connection` keeps one connection's (`$ownOps`).
    pub fn describe(&self, only_connection: Option<u32>) -> Vec<Document> {
        let now = Instant::now();
        self.lock()
            .iter()
            .filter(|(_, op)| only_connection.is_none_or(|c| c == op.connection))
            .map(|(opid, op)| {
                let running = now.duration_since(op.started);
                let command = Document::try_from(op.command.as_ref()).unwrap_or_default();
                let name = command.keys().next().cloned().unwrap_or_default();
                let ns = match command.get_str(&name) {
                    Ok(coll) => format!("{}.{coll}", op.db),
                    Err(_) => format!("{}.$cmd", op.db),
                };
                doc! {
                    "type": "op",
                    "host": "",
                    "desc": format!("conn{}", op.connection),
                    "connectionId": op.connection as i64,
                    "client": op.client.to_string(),
                    "active": true,
                    "opid": *opid as i64,
                    "secs_running": running.as_secs() as i64,
                    "microsecs_running": running.as_micros() as i64,
                    "op": "command",
                    "ns": ns,
                    "command": command,
                    "killPending": op.interrupt.is_tripped(),
                }
            })
            .collect()
    }
}

/// Commands larger than this show in `currentOp` as their first field only
/// (mongod also truncates large commands there), so listing an insert of
/// 100,000 documents copies a few bytes, not the documents.
const SHOWN_COMMAND_BYTES: usize = 1024;

fn shown(command: &RawDocumentBuf) -> RawDocumentBuf {
    if command.as_bytes().len() <= SHOWN_COMMAND_BYTES {
        return command.clone();
    }
    let mut summary = RawDocumentBuf::new();
    if let Some(Ok((name, value))) = command.iter().next()
        && value.as_document().is_none()
        && value.as_array().is_none()
    {
        summary.append(name, value);
    }
    summary.append(bson::raw::cstr!("$truncated"), true);
    summary
}

/// The interrupt of the command running on this task, if any.
pub fn current() -> Option<Interrupt> {
    CURRENT.try_with(Interrupt::clone).ok()
}
