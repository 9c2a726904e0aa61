//! `$setWindowFields` (and, on top of it, `$fill`, which `fill` rewrites
//! into one): `spec` parses the
//! stage and says how it desugars (partition key, sort), `bounds` the
//! windows, `func` the window functions, `partition` runs them over one
//! sorted partition. The runner (`run`) gathers partitions; the sort before
//! them is an ordinary `$sort` stage.

mod bounds;
mod fill;
mod func;
mod partition;
mod spec;

pub(crate) use fill::parse as parse_fill;
pub(crate) use partition::same_partition;
pub use spec::SetWindowFields;
pub(crate) use spec::{Desugared, PARTITION_FIELD, parse};

#[cfg(test)]
mod tests;
