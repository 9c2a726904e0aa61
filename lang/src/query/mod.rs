//! The query language, as MongoDB 7.0 defines it for `find`: dotted paths,
//! filters, projections and sort specifications, each parsed once from raw
//! BSON into a typed form and then applied to raw documents.
//!
//! Every ordering and equality of BSON values goes through
//! `encoding::cmp`; nothing here compares values another way. Nothing here
//! reads storage, chooses indexes or knows MongoDB's numeric error codes:
//! parse errors carry semantic [`crate::ErrorKind`]s. `positional` finds the
//! array element a filter matched (what an update's `$` stands for);
//! `find_projection` adds find's `$slice`, `$elemMatch` and positional `$`
//! to `projection`; `spill` is the external merge sort a large sort falls
//! back to; `interrupt` says when an operation was killed or ran out of
//! time. Choosing an index and running a plan are `ebb_storage::plan`'s.

pub mod filter;
pub mod find_projection;
pub mod found;
pub mod in_list;
pub mod interrupt;
pub mod path;
pub mod positional;
pub mod projection;
pub mod regex;
pub mod sort;
pub mod spill;
pub mod value;

pub use filter::{ElemMatch, Expr, Filter, Pred, TypeSet};
pub use projection::{Projection, ProjectionKind};
pub use sort::{SortKey, SortSpec};
