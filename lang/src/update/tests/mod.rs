//! Behaviour of updates as a driver user sees it: the resulting document
//! (compared byte for byte, so field order and number types count) or the
//! error kind and message. `operators` covers each operator on plain paths,
//! `arrays` the positional forms (`$`, `$[]`, `$[id]`) and `arrayFilters`,
//! `pipeline` pipeline-style updates; `support` holds their helpers.

mod arrays;
mod operators;
mod pipeline;
mod support;
