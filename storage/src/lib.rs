//! ebb-storage: everything ebb keeps on disk and how it is read back. The
//! MongoDB language it stores and queries is `ebb_lang`'s.
//!
//! Rooms, from the bottom up (ARCHITECTURE.md draws the map):
//!
//! - `engine`: the key-value engine behind a small trait; only its `rocks`
//!   file names RocksDB.
//! - `catalog`: collection and index records.
//! - `changes`: a replica-set member's change log, the rows change streams
//!   read.
//! - `capped`: capped collections' bounds and insertion order.
//! - `index`: which entry keys a document puts into each index.
//! - `collection`: the collection handle ([`Collection`]) every operation
//!   takes, counts, sizes, compaction and the `validate` check.
//! - `plan`: choosing an access path and running it on snapshots.
//! - `write`: single-document writes and the write statements.
//! - `timeseries`: time-series buckets (options, layout, inserts,
//!   unpacking) and clustered collections' options.
//! - `ttl`: expiry, all of it (rule, policy, floor, chunks, whole
//!   collections).
//!
//! It knows nothing about actors, sockets or MongoDB's numeric error codes.

pub mod capped;
pub mod catalog;
pub mod changes;
pub mod collection;
pub mod engine;
pub mod index;
pub mod integrity;
pub mod plan;
pub mod statement;
pub mod stats;
pub mod timeseries;
pub mod ttl;
pub mod write;

#[cfg(test)]
mod testing;

pub use collection::Collection;
pub use ebb_lang::{Error, ErrorKind, Result};
