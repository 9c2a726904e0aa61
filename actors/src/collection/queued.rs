//! What a collection's writer queues in its [`Schedule`]: write jobs,
//! control jobs that run alone, TTL chunks and the plans made for them.

use std::sync::Arc;

use ebb_storage::engine::Engine;
use ebb_storage::statement::{InsertOutcome, InsertStatement};
use ebb_storage::ttl::{ExpireOutcome, Plan};
use ebb_storage::{Collection, Error, Result};
use tokio::sync::oneshot;

use super::messages::ExpireChunk;
use super::schedule::Schedule;

/// A write job: runs on a blocking thread, returns the acknowledgement to
/// send once the group is durable.
pub(super) type WriteJob = Box<dyn FnOnce(&dyn Engine, &Arc<Collection>) -> Ack + Send>;
/// Sends a job's reply; given the error of the group's WAL sync, if it
/// failed, which then replaces a successful result (the write is not
/// known to be durable, so it must not be acknowledged).
pub(super) type Ack = Box<dyn FnOnce(Option<&Error>) + Send>;

/// A queued write with its durability request (`j: true`).
pub(super) struct Write {
    pub(super) job: Job,
    pub(super) sync: bool,
}

/// What a queued write runs.
pub(super) enum Job {
    Run(WriteJob),
    /// An insert into a time-series collection: consecutive ones in a
    /// group run as one `insert_group`, so they rewrite each open bucket
    /// once between them. It carries what a primary decided for it.
    Measurements(
        InsertStatement,
        Option<ebb_lang::decided::Decided>,
        oneshot::Sender<Result<InsertOutcome>>,
    ),
}

/// Work that runs alone on the writer.
pub(super) enum Control {
    /// Builds the entries of new indexes, then switches to `coll`.
    Build {
        coll: Arc<Collection>,
        new_names: Vec<String>,
        reply: oneshot::Sender<Result<()>>,
    },
    /// Switches to a new collection handle without building anything (dropped
    /// indexes, changed options).
    Switch {
        coll: Arc<Collection>,
        reply: oneshot::Sender<()>,
    },
    /// The collection is being dropped: finish what is queued, refuse the rest.
    Retire { reply: oneshot::Sender<()> },
    /// Lends the writer to another collection's chunk, which writes this
    /// collection's archive (`lend`): runs nothing else until the loan
    /// comes back.
    Lend {
        reply: oneshot::Sender<Result<super::lend::Loan>>,
    },
    /// One turn of the sweep of the index entries expired documents left
    /// queued (`ttl::sweep_step`: reads a few queue items, or deletes a
    /// slice); the next turn is queued after it, behind the writes that
    /// arrived meanwhile.
    Sweep,
}

pub(super) type WriterSchedule = Schedule<Write, Control, Expiry, Planned>;

/// A queued TTL chunk with its reply.
pub(super) struct Expiry {
    pub(super) msg: ExpireChunk,
    pub(super) reply: oneshot::Sender<Result<ExpireOutcome>>,
}

/// A chunk's plan and whether it was made before the chunk arrived.
pub(super) struct Planned {
    pub(super) plan: Plan,
    pub(super) ahead: bool,
}
