//! The node's side of replica sets: starting this member (`start`), sending
//! writes through the set's log and checking reads (`write`), the commands
//! and `hello` fields that show the set to drivers and mongosh
//! (`commands`), the commands that move the primary (`elections`) and
//! change the members (`reconfig`).
//!
//! The consensus itself is `ebb-repl`'s. A member applies every committed
//! write through the handler a standalone runs it with (`apply`, reading
//! `entry`, answering retried writes from `retries`); TTL deletes come
//! from the primary's monitor through the log (`expiry`); its members talk
//! over the port clients use (`transport`); each member keeps the set's
//! configuration in `local.system.replset` (`local`); a test-only fail
//! point partitions a member (`fault`). The set's time, as replies and
//! `hello` show it, is `time`'s; the primary's no-op entries keep it moving
//! (`noop`); `topology` versions what `hello` says, for drivers' awaitable
//! `hello`; `window` keeps the change log change streams read within its
//! size.

mod apply;
pub mod commands;
pub mod elections;
mod entry;
mod expiry;
pub mod fault;
mod local;
mod noop;
pub mod reconfig;
mod retries;
mod set;
mod start;
pub mod time;
pub mod topology;
mod transport;
mod window;
mod write;

pub use set::ReplicaSet;
pub use start::{snapshots, start};
pub use write::{check_read, replicate};
