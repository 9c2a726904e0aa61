//! The database profiler: which operations are recorded (`settings`:
//! the `profile` command's level per database — 0 off, 1 slow or
//! filtered, 2 all — with the node-wide `slowms` and `sampleRate` and a
//! per-database `filter`), the entries in mongod's shape (a command's in
//! `command`; an update's or delete's one per statement, `statement`), and
//! writing them to `<db>.system.profile` (`record`).
//!
//! Entries of commands are written through the collection's writer after
//! the operation, before its reply (`command::dispatch`), so a client that
//! reads `system.profile` after an operation finds it. Commands on
//! `system.profile` itself (a `find`, a count's `aggregate`) are recorded
//! like any other, as in mongod, so a read of the profile sees the reads
//! before it; TTL deletes from it are not. Nothing here decides
//! permissions: the `profile` command's own check does.

pub mod command;
pub mod record;
pub mod settings;
pub mod statement;

pub use command::{Ran, record_command};
pub use record::{record_ttl_deletes, write};
pub use settings::{Change, PROFILE_COLLECTION, Profiler, Status, entry, reply_counts};
