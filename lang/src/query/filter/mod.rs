//! Query filters: parsing a MongoDB 7.0 filter document into an expression
//! tree, and testing documents against it.
//!
//! The tree is public so the planner can see which predicates an index can
//! serve; [`Filter::matches`] is the reference answer any plan must agree
//! with. Matching follows MongoDB's rules exactly: a predicate on a path is
//! tested against every candidate [`super::path`] yields, comparisons only
//! hold within one canonical type bracket, `null` also matches missing and
//! `undefined`, and `$ne`/`$nin`/`$not`/`$exists: false` negate the whole
//! path test rather than each candidate.
//!
//! Supported: `$eq $ne $gt $gte $lt $lte $in $nin $exists $not $all
//! $elemMatch $size $type $regex $mod $bitsAllSet $bitsAllClear $bitsAnySet
//! $bitsAnyClear $and $or $nor $comment $jsonSchema $sampleRate`
//! (regexes also as values, in `$in`/`$nin`/`$all` and under `$not`; the
//! schema itself is `crate::schema`'s), and `$expr`, whose aggregation
//! expression `pipeline::Expr` parses (in the command's
//! [`Env`](crate::pipeline::Env): `$$NOW`, `let`) and evaluates; matching
//! is then fallible, as an expression can fail on a document. String comparisons use the filter's collation.
//! The geo operators (`$geoWithin`, `$geoIntersects`, `$near`,
//! `$nearSphere`) test locations with `crate::geo`; ordering by distance
//! is the planner's. `$where` is refused as mongod refuses it without
//! JavaScript; `$text` as not supported yet. This module does not plan or
//! read storage.
//!
//! The room's files:
//!
//! - `mod.rs`: this header and the public paths (`filter::Filter`,
//!   `filter::Pred`, ...), re-exported from the files below;
//! - `types.rs`: the tree itself ([`Filter`], [`Expr`], [`ExprClause`],
//!   [`Pred`], [`ElemMatch`], [`TypeSet`]) and its small accessors;
//! - `parse.rs`: reading a filter document into that tree, with MongoDB's
//!   errors;
//! - `matcher.rs`: testing documents and values against the tree;
//! - `bits.rs`: the bit test operators' masks and matching;
//! - `implies.rs`: whether one filter's matches are all another's (which
//!   partial indexes a query may use);
//! - `tests.rs`: the unit tests.

mod bits;
mod implies;
mod matcher;
mod parse;
mod types;

pub use bits::{BitTest, Bits};
pub use matcher::text_index_required;
pub(crate) use parse::is_operator_document;
pub use types::{
    ElemMatch, Expr, ExprClause, Filter, GeoPred, GeoTest, Near, Pred, TextClause, TypeSet,
};

#[cfg(test)]
mod tests;
