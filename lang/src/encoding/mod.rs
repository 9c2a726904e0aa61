//! BSON values below the query language: the canonical type brackets,
//! MongoDB's comparison order, exact numbers across the four numeric types
//! (comparison in `numeric`, arithmetic in `arith` over the 128-bit decimal
//! of `decimal`), the order-preserving key encoding, and values rendered
//! the way the shell prints them (for error messages), and mongod's hash of
//! a value (`hashed`, a `hashed` index's key).
//!
//! Dependencies run one way: `bracket`, `numeric` and `decimal` stand
//! alone, `arith` builds on `decimal`, `cmp` on `bracket` and `numeric`,
//! `keycode` on `bracket` and `numeric` (its property tests hold it to
//! `cmp`), `display` on nothing here. `collation` (ICU4X collators for
//! MongoDB's `collation` documents) is what `cmp` and `keycode` consult for
//! strings when an operation or index has a collation. Nothing in this folder reads storage
//! or knows collections.

pub mod arith;
pub mod bracket;
pub mod cmp;
pub mod collation;
pub mod decimal;
pub mod display;
pub mod field_names;
pub mod hashed;
pub mod keycode;
pub mod numeric;
