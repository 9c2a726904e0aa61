//! ebb-config: the node's configuration, read once and validated into a typed [`Config`].
//!
//! This crate is the only place configuration is read: a TOML file (see `ebb.toml` at the
//! repository root, which lists every key with its default), `EBB_*` environment variables,
//! then command-line [`Overrides`] passed in by the daemon. It is also the one table of
//! MongoDB's TTL server parameters ([`params`]), which the node's `setParameter` and
//! `getParameter` commands use at runtime. No other crate reads the environment, and this
//! crate does no I/O beyond reading the config file and the process environment in
//! [`Config::load`]; it knows nothing of storage, actors or the wire protocol.
//!
//! Environment variables map onto keys by stripping `EBB_` and splitting on `__`, matching
//! each segment case-insensitively: `EBB_NET__PORT=27018`, `EBB_STORAGE__PATH=/x`,
//! `EBB_TTL__MAX_DELETES_PER_SEC=5000`, `EBB_SETPARAMETER__TTLMONITORSLEEPSECS=1`.

mod error;
pub mod limits;
mod load;
mod model;
pub mod params;
mod units;

#[cfg(test)]
mod tests;

pub use error::ConfigError;
pub use load::{Loaded, Overrides};
pub use model::{
    Authorization, Config, Cursors, Http, Log, Net, Overload, Security, Storage, Tls, TlsMode, Ttl,
    is_loopback,
};
pub use params::{
    Bound, ParamError, ParamInput, ParamSpec, ParamValue, SERVER_PARAMS, ServerParameters,
};
pub use units::{ByteSize, LogFormat, SyncPolicy};
