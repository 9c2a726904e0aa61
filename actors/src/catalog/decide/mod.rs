//! The catalog's DDL decisions, free of actix and of the engine: what a
//! request means given the catalog as it stands. Each decision returns
//! MongoDB's error, or a plain description of what to do (nothing, the
//! records to write, the column families to create or retire, the indexes
//! to build), which the catalog actor (`super::actor`) carries out.
//!
//! A decision takes the current record of the collection it concerns
//! (`None`: there is no such collection) and the parsed request. Column
//! family ids are the actor's to allocate: a decision that needs new
//! families says how many, and turns the ids into records once they exist.
//!
//! - `collections`: `create` (and a write's implicit creation), `drop`,
//!   `renameCollection`;
//! - `indexes`: `createIndexes`, `dropIndexes`, `collMod` of one index;
//! - `options`: `collMod` of a collection's expiry and validation options.
//!
//! This file holds only what they share.

pub mod collections;
pub mod indexes;
pub mod options;
#[cfg(test)]
mod tests;

use ebb_storage::{Error, ErrorKind};

/// The error of a command on a collection that does not exist.
fn ns_not_found(db: &str, name: &str) -> Error {
    Error::new(
        ErrorKind::NamespaceNotFound,
        format!("ns not found {db}.{name}"),
    )
}
