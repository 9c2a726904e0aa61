//! ebb-storage: everything ebb keeps on disk and how it is read back.
//!
//! Owns the RocksDB engine (behind a small trait), the order-preserving key
//! encoding, catalog records, document and index reads/writes, query
//! matching, projection, sorting, update operators and index bounds.
//! It knows nothing about actors, sockets or MongoDB's numeric error codes.

pub mod catalog;
pub mod cmp;
pub mod display;
pub mod engine;
pub mod error;
pub mod exec;
pub mod expire;
pub mod index;
pub mod keycode;
pub mod numeric;
pub mod ops;
pub mod plan;
pub mod query;
pub mod update;
pub mod write;

pub use error::{Error, ErrorKind, Result};
