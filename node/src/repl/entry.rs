//! A log entry as the node writes it: a write command, the database it was
//! sent to, and what the primary decided for it (`Decided`: its time and
//! the seed of the ObjectIds it makes), `{db, command, at, ids}`.

use bson::{RawDocument, RawDocumentBuf, rawdoc};
use ebb_lang::decided::{Decided, Seed};
use ebb_repl::Proposal;

/// The entry that carries `command`, sent to `db`, as decided.
pub fn proposal(db: &str, command: RawDocumentBuf, decided: Decided) -> Proposal {
    let ids = bson::Binary {
        subtype: bson::spec::BinarySubtype::Generic,
        bytes: decided.ids.bytes().to_vec(),
    };
    let entry = rawdoc! { "db": db, "command": command, "at": decided.at, "ids": ids };
    Proposal {
        bytes: entry.into_bytes(),
    }
}

/// An entry's database, command and decisions.
pub struct Entry<'a> {
    pub db: &'a str,
    pub command: &'a RawDocument,
    pub decided: Decided,
}

/// Reads an entry [`proposal`] wrote.
pub fn read(entry: &RawDocument) -> Option<Entry<'_>> {
    let ids: [u8; 12] = entry.get_binary("ids").ok()?.bytes.try_into().ok()?;
    Some(Entry {
        db: entry.get_str("db").ok()?,
        command: entry.get_document("command").ok()?,
        decided: Decided {
            at: entry.get_datetime("at").ok()?,
            ids: Seed::from_bytes(ids),
        },
    })
}
