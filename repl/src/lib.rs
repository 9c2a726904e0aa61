//! Replica sets: ebb's members agree on one log of writes with the
//! `openraft` consensus library, and each applies it in order.
//!
//! This crate owns the consensus: the log and the state machine's
//! bookkeeping in the engine's `log` family (`log`, `machine`), the
//! messages between members (`network`) and [`Replica`], the node's handle
//! on all of it, which also moves the primary (`stepdown`) and changes the
//! members (`reconfig`). What an entry means, and how messages travel, are the
//! node's ([`Apply`], [`Transport`]).

// The library's storage traits return its own error type, 224 bytes; the
// helpers beneath them return the same type rather than boxing and unboxing.
#![allow(clippy::result_large_err)]

mod log;
mod machine;
mod network;
mod pack;
mod reconfig;
mod replica;
pub mod snapshot;
mod stepdown;
mod types;

#[cfg(test)]
mod tests;

pub use machine::Apply;
pub use network::{Rpc, Transport};
pub use reconfig::ReconfigError;
pub use replica::{
    Compaction, InitiateError, ProposeError, Replica, Role, Standing, StartError, Timing, View,
};
pub use stepdown::StepDownError;
pub use types::{Applied, Member, OpTime, Proposal, node_id};
