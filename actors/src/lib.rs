//! ebb-actors: the actix actors that own ebb's mutable state.
//!
//! - [`catalog::CatalogActor`] owns collection and index metadata (DDL).
//! - [`collection::CollectionActor`] is the single writer of one collection.
//! - [`ttl::TtlMonitor`] owns the expiry schedule.
//!
//! Reads do not go through actors: they run on engine snapshots using the
//! published catalog in [`shared::Shared`]. This crate knows nothing of the
//! wire protocol or MongoDB's error codes.

pub mod background;
pub mod catalog;
pub mod clock;
pub mod collection;
pub mod params;
pub mod shared;
pub mod ttl;
