//! ebb-storage: everything ebb keeps on disk and how it is read back.
//!
//! Rooms, from the bottom up (ARCHITECTURE.md draws the map):
//!
//! - `engine`: the key-value engine behind a small trait; only its `rocks`
//!   file names RocksDB.
//! - `encoding`: type brackets, MongoDB's comparison order, exact numbers,
//!   the order-preserving key encoding.
//! - `catalog`: collection and index records.
//! - `capped`: capped collections' bounds and insertion order.
//! - `query`: the query language (paths, filters, projection, sort), the
//!   planner and the executor.
//! - `schema`: `$jsonSchema` (parse, match, explain a failure).
//! - `validator`: a collection's document validator (`validator`,
//!   `validationLevel`, `validationAction`) and its error details.
//! - `update`: update documents and their operators.
//! - `pipeline`: aggregation (stages, expressions, accumulators).
//! - `index`: index entry keys and the collection handle ([`IndexSet`]).
//! - `write`: single-document writes and the write statements.
//! - `timeseries`: time-series buckets (options, layout, inserts,
//!   unpacking) and clustered collections' options.
//! - `ttl`: expiry, all of it (rule, policy, floor, chunks, whole
//!   collections).
//! - `collection`: what a collection's owner asks of storage besides
//!   writes (counts, sizes, compaction).
//!
//! It knows nothing about actors, sockets or MongoDB's numeric error codes.

pub mod capped;
pub mod catalog;
pub mod collection;
pub mod encoding;
pub mod engine;
pub mod error;
pub mod index;
pub mod integrity;
pub mod pipeline;
pub mod query;
pub mod schema;
pub mod timeseries;
pub mod ttl;
pub mod update;
pub mod validator;
pub mod write;

#[cfg(test)]
mod testing;

pub use error::{Error, ErrorKind, Result};
pub use index::IndexSet;
