//! `$jsonSchema` in MongoDB's dialect of JSON Schema (draft 4 with
//! `bsonType`): parsing a schema once (`parse`, into the tree of `tree`),
//! testing values against it (`validate`) and explaining a failure the way
//! mongod's `errInfo.details` does (`explain`). `pattern` holds the one
//! regular-expression engine the keywords use; `top` is the operator as
//! filters and validators see it; `value` reads fields and compares values
//! as the keywords do.
//!
//! This module knows documents and schemas only: not filters, collections
//! or MongoDB's numeric error codes.

mod explain;
mod parse;
mod pattern;
mod top;
mod tree;
mod validate;
mod value;

pub use top::JsonSchema;
