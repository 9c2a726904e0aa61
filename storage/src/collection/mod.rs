//! The collection as storage sees it.
//!
//! - `handle`: [`Collection`], the handle every storage operation takes: a
//!   collection's catalog record with its index key generators and its
//!   validator built once, and its runtime state (capped bounds, open
//!   buckets, record bound, sweep queue, which due documents readers see).
//! - `stats`: what its owner asks besides reads and writes (counts, sizes,
//!   compaction).
//! - `integrity`: the `validate` command's check of records against
//!   indexes.

pub mod bound;
mod handle;
mod hide;

pub use handle::Collection;
pub use hide::{HideDue, HideNothing};
