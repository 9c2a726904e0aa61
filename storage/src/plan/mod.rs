//! How a query reaches its documents: choosing an access path from the
//! parsed query and the collection's indexes, and running it on snapshots.
//!
//! - `access`: what a plan is (the query it answers, the path it takes);
//!   its types are this room's face.
//! - `bounds`: a predicate's values as intervals and an index's key ranges.
//! - `choose`: the planner proper (hint, `_id` lookups, a secondary index's
//!   bounds or order, a collection scan).
//! - `min_max`: `find`'s `min`/`max` as one key range of the hinted index.
//! - `text`: a `$text` query's index, candidates and scores.
//! - `wildcard`: plans over a wildcard index, one path's entries.
//! - `cover`: whether a plan's index answers a query alone.
//! - `prune`: which buckets a query on a time-series collection reads.
//! - `exec`: a plan run batch by batch on fresh snapshots, resumable across
//!   `getMore`s.
//!
//! The query language itself (filters, projections, sorts) is `ebb_lang`'s;
//! nothing here parses.

mod access;
mod bounds;
mod choose;
pub mod cover;
pub mod exec;
pub mod min_max;
pub mod prune;
pub mod text;
mod wildcard;

pub use access::*;
pub(crate) use bounds::index_collation;
pub use choose::*;
