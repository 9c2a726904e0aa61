//! Aggregation expressions, MongoDB's language of computed values: field
//! paths, literals, variables (`$$ROOT`, `$$CURRENT`, `$$NOW`, `$$REMOVE`,
//! `$let`, a command's `let`) and the operators, parsed once into a tree
//! and evaluated per document.
//!
//! The rooms: `tree` (the parsed form), `value` (values, missing, the
//! comparison hook), `vars` (a command's variables and variable names),
//! `lets` (evaluating a command's `let`), `parse`, `fold` (constant
//! folding), `eval` (the evaluator and the operators that bind variables
//! or stop early), `table` (eager operators by name) and one file per
//! operator family: `arith`, `trig`, `bits`, `random`, `compare`, `logic`, `string`,
//! `array`, `set`, `object`, `convert`, `date`, `regex` (on the query
//! language's regex engine), `percentile` (also the accumulators'). `compiled` holds [`Expr`], what callers keep. Errors carry
//! semantic kinds (`ExprError`); the node maps them to mongod's codes.

mod arith;
mod array;
mod bits;
mod compare;
mod compiled;
mod convert;
mod date;
mod eval;
mod fold;
mod lets;
mod logic;
mod object;
mod parse;
pub(crate) mod percentile;
mod random;
mod regex;
mod set;
mod string;
mod table;
mod tree;
mod trig;
mod value;
mod vars;

#[cfg(test)]
mod tests;

pub use compiled::Expr;
pub use date::Unit as TimeUnit;
pub(crate) use value::cstr;
pub use value::{Comparator, binary_order};
pub use vars::Env;
pub(crate) use vars::valid_for_write;
