//! Commands: one module per family, one table (`table`, rows of `row`'s
//! [`Command`]), and dispatch (`dispatch`), which the connection loop hands
//! every command document to.
//!
//! A handler takes a [`Request`] (the command document, already framed and
//! validated as BSON), parses its arguments into a typed value (rejecting
//! unknown ones), executes it against the actors or a snapshot, and returns
//! the reply document. Errors become `{ok: 0}` replies in dispatch; they
//! never close the connection.

pub mod admin;
pub mod aggregate;
pub mod capped;
pub mod checks;
pub mod collections;
pub mod common;
pub mod count;
pub mod delete;
pub mod dispatch;
pub mod expiry;
pub mod explain;
pub mod find;
pub mod find_and_modify;
pub mod foreign;
pub mod handshake;
pub mod indexes;
pub mod insert;
pub mod map_reduce;
pub mod near;
pub mod output;
pub mod params;
pub mod profile;
pub mod query;
pub mod read_concern;
pub mod report;
pub mod row;
pub mod sasl;
pub mod status;
pub mod table;
pub mod text;
pub mod update;
pub mod users;
pub mod validation;
pub mod views;
pub mod write;

pub use common::{
    ConnInfo, Handler, Reply, Request, check_collection_name, check_db_name, check_write_concern,
    cursor_reply, ok,
};
pub use row::{Command, LogForm, Op};
pub use table::{command_names, lookup, not_found};
