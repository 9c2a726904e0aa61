//! ebb-storage: everything ebb keeps on disk and how it is read back.
//!
//! Owns the RocksDB engine (behind a small trait), the order-preserving key
//! encoding, catalog records, document and index reads/writes, query
//! matching, projection, sorting, update operators and index bounds.
//! It knows nothing about actors, sockets or MongoDB's numeric error codes.

pub mod cmp;
pub mod error;
pub mod numeric;

pub use error::{Error, ErrorKind, Result};
pub mod catalog;
pub mod engine;
pub mod keycode;
pub mod update;
