//! ebb-actors: the actix actors that own ebb's mutable state, and the
//! runtime that starts and stops them.
//!
//! - [`runtime::Runtime`] assembles everything from an engine, the config
//!   and a clock, and shuts it down in order.
//! - [`catalog::CatalogActor`] owns collection and index metadata (DDL) and
//!   publishes [`catalog::CatalogView`].
//! - [`collection::CollectionActor`] is the single writer of one
//!   collection; [`collection::schedule`] decides what it runs next.
//! - [`ttl::TtlMonitor`] owns the expiry schedule.
//!
//! Reads do not go through actors: they run on engine snapshots using the
//! published catalog. This crate knows nothing of the wire protocol or
//! MongoDB's error codes.

pub mod background;
pub mod catalog;
pub mod clock;
pub mod collection;
pub mod params;
pub mod runtime;
pub mod shared;
pub mod syncer;
pub mod ttl;
