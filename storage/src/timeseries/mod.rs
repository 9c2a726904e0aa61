//! Time-series collections (and the options of clustered ones):
//! measurements grouped into buckets, one record per bucket.
//!
//! - `options`: the `timeseries`/`clusteredIndex`/`expireAfterSeconds`
//!   options, validated, stored, read back; the internal indexes they imply.
//! - `bucket`: a bucket's document (control block, meta, columns), built,
//!   appended to and unpacked into measurements.
//! - `column`: the compressed encoding of a bucket's columns, appended to
//!   value by value.
//! - `open`: open buckets kept in memory between insert statements.
//! - `insert`: which bucket each measurement goes to, written through the
//!   collection's writer.
//! - `index`: the bucket-level index of an index the user creates.
//! - `rewrite`: deleting and replacing stored measurements (deletes,
//!   updates, findAndModify).
//!
//! Expiry is the ordinary TTL machinery on an internal bucket index
//! (`options::internal_indexes`): nothing here deletes.

pub mod bucket;
pub mod column;
pub mod count;
pub mod index;
pub mod insert;
pub mod open;
pub mod options;
pub mod rewrite;

pub use bucket::{Bucket, unpack};
pub use count::count_measurements;
pub use insert::{
    EXTENDED_RANGE_END_MILLIS, Inserted, holds_extended_range, insert_measurements,
    insert_statements,
};
pub use options::{TimeseriesOptions, internal_indexes};
