//! TTL expiry on the storage side: the policy that sizes chunks, one chunk
//! (run on the writer, or planned off it and applied later), a whole
//! collection that is entirely due, the earliest due Date of an index, the
//! sweep of what chunks leave behind, and hiding due documents from
//! readers. When a Date is due and where an index's due entries start are
//! facts about the index (`crate::index`: `rule`, `floor`); docs/expiry.md
//! maps the whole path.
//!
//! Files, in the order a chunk uses them: `carry` (what a TTL entry holds
//! so its document can go without reading the record), `policy` (chunk
//! sizes), `chunk` (scan, decide, encode), `whole` (a collection entirely
//! due), `earliest` (when the next entry falls due), `forecast` (what falls
//! due in the next hour and week, for operators), `never` (how many documents
//! an index never makes due, and why), `sweep`, `queue` and
//! `held` (entries and records left to the sweep, held from every read),
//! `hidden` (which due documents readers pass over). Scheduling — which
//! chunk runs when — belongs to the actors; this module only does the work.

pub(crate) mod carry;
mod chunk;
mod earliest;
pub mod forecast;
mod held;
mod hidden;
pub mod never;
mod policy;
mod queue;
pub mod sweep;
#[cfg(test)]
use hidden::{count_unhidden_capped, due_from_keys};
mod whole;

#[cfg(test)]
mod sweep_tests;
#[cfg(test)]
pub(crate) mod tests;

pub use chunk::{
    Chunk, DeletedIds, ExpireOutcome, Plan, Taken, apply, expire, plan, plan_after,
    resumes_at_floor, take,
};
pub use earliest::{count_due, earliest_date};
pub use hidden::{Due, count_unhidden, outside_due};
pub use policy::{ExpiryPolicy, ForegroundChunks};
pub use queue::Sweep;
pub use sweep::{sweep, sweep_step};
pub use whole::expire_all;
