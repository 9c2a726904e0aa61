//! ebb-node: the MongoDB-speaking front of ebb.
//!
//! Three hops, each a change of type: bytes → [`wire::Message`] →
//! a command's typed arguments ([`command`]) → a reply document, executed
//! against the actors (writes, DDL) or an engine snapshot (reads). Only
//! this crate knows the wire protocol and MongoDB's error codes
//! ([`error`]). The daemon binary is `ebbd` (`src/main.rs`).

pub mod args;
pub mod auth;
pub mod changes;
pub mod command;
pub mod context;
pub mod cursor;
pub mod embed;
pub mod error;
pub mod http;
pub mod latency;
pub mod metrics;
pub mod ops;
pub mod page;
pub mod profile;
pub mod recent_log;
pub mod repl;
pub mod server;
pub mod sessions;
pub mod tls;
pub mod top;
pub mod txn;
pub mod wire;

pub use embed::NodeThread;
pub use server::{Node, NodeOptions, StartError};
