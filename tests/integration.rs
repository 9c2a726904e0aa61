//! The workspace's integration tests, linked into one binary.
//!
//! Each module is one area (its own `//!` header says what it checks) and
//! drives real nodes through the real driver. One binary instead of one per
//! file: every test binary links RocksDB and the driver (~70 MB each), and
//! thirty of them made a cold CI build outgrow a small disk and spend minutes
//! linking. Run one area with `cargo test --test integration <module>::`.

mod common;

mod aggregation_stages;
mod aggregation_writes;
mod auth;
mod capped;
mod change_streams;
mod collation;
mod collections;
mod covered;
mod crud;
mod disk_full;
mod expiry_page;
mod expr;
mod find_options;
mod framing;
mod geo;
mod geo_compound;
mod geo_flat;
mod handshake_admin;
mod hashed;
mod import_cycles;
mod indexes;
mod javascript;
mod metrics;
mod model;
mod operations;
mod profiler;
mod regex;
mod replica_set;
mod restart;
mod text;
mod timeseries;
mod timeseries_indexes;
mod timeseries_updates;
mod tls;
mod transactions;
mod ttl_archive;
mod ttl_expiry;
mod ttl_hidden;
mod ttl_indexes;
mod ttl_insight;
mod ttl_monitor;
mod ttl_overload;
mod ttl_sweep;
mod updates;
mod validation;
mod views;
mod wildcard;
mod window_stages;
