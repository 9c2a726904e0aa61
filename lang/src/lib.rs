//! ebb-lang: MongoDB's language and values, with no storage engine and no
//! actors beneath it.
//!
//! Rooms, from the bottom up (ARCHITECTURE.md draws the map):
//!
//! - `error`: the semantic error type every crate above shares.
//! - `encoding`: type brackets, MongoDB's comparison order, exact numbers,
//!   collation, the order-preserving key encoding.
//! - `geo`: geospatial shapes (GeoJSON, legacy pairs), regions and their
//!   predicates on the sphere.
//! - `js`: server-side JavaScript (`$where`, `$function`,
//!   `$accumulator`) on an embedded, sandboxed engine.
//! - `query`: paths, filters, projections, sorts, regexes, the external
//!   sort.
//! - `text`: text search (languages, terms, a text index's scores,
//!   `$text` queries).
//! - `schema`: `$jsonSchema` (parse, match, explain a failure).
//! - `validator`: a collection's document validator (`validator`,
//!   `validationLevel`, `validationAction`) and its error details.
//! - `pipeline`: aggregation (stages, expressions, accumulators, windows).
//! - `update`: update documents and their operators.
//!
//! It knows nothing about RocksDB, actors, sockets or MongoDB's numeric
//! error codes.

pub mod decided;
pub mod encoding;
pub mod error;
pub mod geo;
pub mod js;
pub mod pipeline;
pub mod query;
pub mod schema;
pub mod text;
pub mod update;
pub mod validator;

pub use error::{Error, ErrorKind, Result};
