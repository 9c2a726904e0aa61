//! Retryable writes: the last write each logical session ran with a
//! `txnNumber`, and its reply, so a driver that sends the same write again
//! (after a lost connection or a failover) is answered, not applied twice.
//!
//! The table changes only as committed entries apply, in log order, so
//! every member holds the same one and a new primary answers retries of
//! writes the old one committed. Each row is kept in the engine's `log`
//! family under `t/` and the session id, and loaded at start.

use std::collections::HashMap;
use std::sync::Mutex;

use bson::{RawBsonRef, RawDocument, RawDocumentBuf, rawdoc};
use ebb_storage::engine::{Cf, Direction, Engine, KeyRange};

use crate::error::{CommandError, codes};

const PREFIX: &[u8] = b"t/";

/// A write's session and number, when it is a retryable write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attempt {
    pub session: Vec<u8>,
    pub txn_number: i64,
}

impl Attempt {
    /// The attempt `command` states (`lsid.id` and `txnNumber`), if any.
    pub fn of(command: &RawDocument) -> Option<Attempt> {
        let txn_number = match command.get("txnNumber").ok()?? {
            RawBsonRef::Int64(n) => n,
            RawBsonRef::Int32(n) => i64::from(n),
            _ => return None,
        };
        let session = command.get_document("lsid").ok()?.get_binary("id").ok()?;
        Some(Attempt {
            session: session.bytes.to_vec(),
            txn_number,
        })
    }
}

/// What the table says of an attempt.
pub enum Seen {
    /// Not run yet: run it, then [`Retries::record`] it.
    New,
    /// Run before: its reply.
    Done(RawDocumentBuf),
    /// The session has run a later write since.
    TooOld(CommandError),
}

/// The sessions' last retryable writes.
#[derive(Default)]
pub struct Retries {
    rows: Mutex<HashMap<Vec<u8>, (i64, RawDocumentBuf)>>,
}

fn key(session: &[u8]) -> Vec<u8> {
    [PREFIX, session].concat()
}

impl Retries {
    /// The table as `engine` holds it.
    pub fn load(engine: &dyn Engine) -> ebb_storage::Result<Retries> {
        engine.create_cf(Cf::Log)?;
        let mut rows = HashMap::new();
        let mut cursor = engine.cursor(Cf::Log, KeyRange::prefix(PREFIX), Direction::Forward)?;
        while cursor.valid() {
            let row = RawDocumentBuf::from_bytes(cursor.value().to_vec())
                .map_err(|e| ebb_storage::Error::engine(e.to_string()))?;
            if let (Ok(n), Ok(reply)) = (row.get_i64("txnNumber"), row.get_document("reply")) {
                rows.insert(cursor.key()[PREFIX.len()..].to_vec(), (n, reply.to_owned()));
            }
            cursor.advance();
        }
        cursor.status()?;
        Ok(Retries {
            rows: Mutex::new(rows),
        })
    }

    pub fn seen(&self, attempt: &Attempt) -> Seen {
        let rows = self.rows.lock().unwrap();
        match rows.get(&attempt.session) {
            Some((n, reply)) if *n == attempt.txn_number => Seen::Done(reply.clone()),
            Some((n, _)) if *n > attempt.txn_number => Seen::TooOld(CommandError::new(
                codes::TRANSACTION_TOO_OLD,
                format!(
                    "Retryable write with txnNumber {} is prohibited on session because a newer \
                     retryable write with txnNumber {n} has already started on this session.",
                    attempt.txn_number
                ),
            )),
            _ => Seen::New,
        }
    }

    /// Records that `attempt` ran and answered `reply`.
    pub fn record(
        &self,
        engine: &dyn Engine,
        attempt: Attempt,
        reply: &RawDocumentBuf,
    ) -> ebb_storage::Result<()> {
        let row = rawdoc! { "txnNumber": attempt.txn_number, "reply": reply.clone() };
        let mut batch = engine.batch();
        batch.put(Cf::Log, &key(&attempt.session), row.as_bytes())?;
        batch.commit(false)?;
        self.rows
            .lock()
            .unwrap()
            .insert(attempt.session, (attempt.txn_number, reply.clone()));
        Ok(())
    }
}
