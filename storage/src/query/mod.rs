//! The query language, as MongoDB 7.0 defines it for `find`: dotted paths,
//! filters, projections and sort specifications, each parsed once from raw
//! BSON into a typed form and then applied to raw documents.
//!
//! Every ordering and equality of BSON values goes through
//! `encoding::cmp`; nothing here compares values another way. The language
//! files (`path`, `filter`, `regex`, `projection`, `sort`, with `value`'s small
//! helpers) do not read storage, choose indexes or know MongoDB's numeric
//! error codes: parse errors carry semantic [`crate::ErrorKind`]s. `positional` finds the
//! array element a filter matched (what an update's `$` stands for);
//! `find_projection` adds find's `$slice`, `$elemMatch` and positional `$`
//! to `projection`; `min_max` plans `find`'s `min`/`max` index bounds. `plan`
//! chooses an access path from the parsed forms and the collection's
//! indexes; `exec` runs a plan on engine snapshots, batch by batch, stopping when its
//! deadline passes or `interrupt` says the operation was killed.

pub mod exec;
pub mod filter;
pub mod find_projection;
pub mod found;
pub mod in_list;
pub mod interrupt;
pub mod min_max;
pub mod path;
pub mod plan;
pub mod positional;
pub mod projection;
pub mod regex;
pub mod sort;
pub mod spill;
pub(crate) mod value;

pub use filter::{ElemMatch, Expr, Filter, Pred, TypeSet};
pub use projection::{Projection, ProjectionKind};
pub use sort::{SortKey, SortSpec};
