//! One writer lent to another: a TTL chunk of an archiving index writes
//! its copies into the archive collection in the batch that deletes the
//! originals (`ebb_storage::write::archive`), so for that moment the
//! chunk's writer is the archive's writer too. The archive's actor lends
//! itself as a control job: it runs nothing of its own until the [`Loan`]
//! is dropped, so the archive still has one writer at a time.
//!
//! An archive never archives in turn (the catalog refuses it), so a writer
//! that borrows is never lent while it waits: no two writers wait on each
//! other.

use std::sync::Arc;

use actix::Message;
use ebb_storage::{Collection, Result};
use tokio::sync::oneshot;

/// Asks a writer to lend itself; answered once it runs nothing else.
#[derive(Message)]
#[rtype(result = "Result<Loan>")]
pub struct Lend;

/// A lent writer: it takes its own work again once this is dropped.
pub struct Loan {
    /// The lender's collection handle, the one its own writes use.
    pub coll: Arc<Collection>,
    _back: oneshot::Sender<()>,
}

impl Loan {
    /// A loan of the writer of `coll`, and what its lender waits on.
    pub(super) fn new(coll: Arc<Collection>) -> (Loan, oneshot::Receiver<()>) {
        let (back, returned) = oneshot::channel();
        (Loan { coll, _back: back }, returned)
    }
}
