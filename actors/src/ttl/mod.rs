//! The TTL monitor: the actor that runs MongoDB's passes (`monitor`), the
//! decision of when to wake (`wake`), the deletion rate (`pacer`), and the
//! state writers and `serverStatus` share with it (`state`).

mod monitor;
mod pacer;
mod state;
pub mod wake;

pub use monitor::{StopMonitor, TtlError, TtlMonitor};
pub use state::{TtlOp, TtlState};
