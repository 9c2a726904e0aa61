//! Capped collections: a size (and optionally a document count) bound,
//! insertion order kept, the oldest documents removed as new ones arrive.
//!
//! `options` reads and checks the bounds (`capped`, `size`, `max`) as the
//! catalog record stores them; `order` is the on-disk insertion order (a
//! family of its own beside the records, which stay keyed by `_id`) with
//! the collection's running totals. The writer (`crate::write::writer`)
//! keeps both up to date in the batch of every write, so a capped insert
//! and the removals it causes commit together. This room decides nothing
//! about commands or cursors.

pub mod options;
pub mod order;
pub mod tracker;

pub use options::{CappedOptions, is_capped};
pub use order::Totals;

#[cfg(test)]
mod tests;
