//! One collection's single writer: the actor (`actor`), its TTL half
//! (`expiry`: chunks, plans, the sweep's turns), the pure decisions of what
//! it runs next (`schedule`), its TTL lookahead (`lookahead`), the loan of a
//! writer to an archiving chunk (`lend`), the messages it takes
//! (`messages`), what it queues (`queued`), and the handle readers and
//! writers hold (`handle`).

mod actor;
mod expiry;
mod handle;
mod lend;
mod lookahead;
mod messages;
mod queued;
pub mod schedule;

pub use actor::{CollectionActor, Lookup};
pub use handle::CollectionHandle;
pub use lend::{Lend, Loan};
pub use messages::{
    BuildIndexes, DeleteDocs, Direct, ExpireChunk, InsertDocs, ModifyOne, Retire, SwitchCollection,
    UpdateDocs,
};
