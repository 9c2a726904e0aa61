//! The write path: single-document writes through one collection's
//! [`Writer`] (`writer`), the copies an archiving TTL index writes of what
//! it expires (`archive`), a transaction's commit (`transaction`), and the
//! statements of the write commands built
//! on it (`statement`). Everything here runs on the collection's single
//! writer, except `writer::prepare_statement`, which a connection runs on
//! an insert's documents before they reach it.

pub mod archive;
pub mod transaction;
pub mod writer;

pub use writer::{Writer, check_id, prepare_insert};

#[cfg(test)]
mod tests;
