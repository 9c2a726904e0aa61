//! How a query reaches its documents: choosing an access path from the
//! parsed query and the collection's indexes, and running it on snapshots.
//!
//! - `choose`: the planner proper (hint, `_id` lookups, a secondary index's
//!   bounds or order, a collection scan); its types are this room's face.
//! - `min_max`: `find`'s `min`/`max` as one key range of the hinted index.
//! - `text`: a `$text` query's index, candidates and scores.
//! - `prune`: which buckets a query on a time-series collection reads.
//! - `exec`: a plan run batch by batch on fresh snapshots, resumable across
//!   `getMore`s.
//!
//! The query language itself (filters, projections, sorts) is `ebb_lang`'s;
//! nothing here parses.

mod choose;
pub mod exec;
pub mod min_max;
pub mod prune;
pub mod text;

pub use choose::*;
