//! The TTL monitor: the actor that runs MongoDB's passes (`monitor`), the
//! decision of when to wake (`wake`), the deletion rate (`pacer`), the
//! state writers and `serverStatus` share with it (`state`), and what
//! readers see of documents it has yet to delete (`hide`: as of when due
//! documents are hidden), and where its chunks go (`route`: the writer, or
//! a replica set's log).

mod hide;
mod monitor;
mod pacer;
mod route;
mod state;
pub mod wake;

pub use hide::HideAsMonitor;
pub use monitor::{BEHIND, KEEPING_UP, StopMonitor, TtlError, TtlMonitor};
pub use route::{ExpiryRoute, Routing};
pub use state::{TtlOp, TtlState, TtlVisit};
