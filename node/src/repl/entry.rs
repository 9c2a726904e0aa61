//! A log entry as the node writes it: a write command and the database it
//! was sent to, `{db, command}`.

use bson::{RawDocumentBuf, rawdoc};
use ebb_repl::Proposal;

/// The entry that carries `command`, sent to `db`.
pub fn proposal(db: &str, command: &RawDocumentBuf) -> Proposal {
    let entry = rawdoc! { "db": db, "command": command.clone() };
    Proposal {
        bytes: entry.into_bytes(),
    }
}
