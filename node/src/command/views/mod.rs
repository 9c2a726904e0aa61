//! Read-only views, kept as mongod keeps them: each view is a document of
//! its database's `system.views` collection, `{_id: "<db>.<view>", viewOn,
//! pipeline, collation?}`, written by `create` with `viewOn` and removed by
//! `drop`, so a view replicates as any write does and `listCollections`
//! shows it with `type: "view"`.
//!
//! A read of a view (`find`, `aggregate`, `count`, `distinct`) runs as an
//! aggregation over the collection at the bottom of its chain of views,
//! the pipeline of the view nearest that collection first
//! ([`catalog::resolve`]);
//! its cursor is the view's. Writes and indexes on a view get
//! CommandNotSupportedOnView (166), as on mongod.
//!
//! `catalog` reads the definitions and resolves a view to its collation
//! and pipeline, `define` writes and deletes them, `read` serves the
//! reads of a view.

pub mod catalog;
pub mod define;
pub mod read;
