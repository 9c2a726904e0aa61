//! One collection's single writer: the actor (`actor`), its TTL half
//! (`expiry`: chunks, plans, the sweep's turns), the pure decisions of what
//! it runs next (`schedule`), its TTL lookahead (`lookahead`), the messages
//! it takes (`messages`), what it queues (`queued`), and the handle readers and writers hold
//! (`handle`).

mod actor;
mod expiry;
mod handle;
mod lookahead;
mod messages;
mod queued;
pub mod schedule;

pub use actor::CollectionActor;
pub use handle::CollectionHandle;
pub use messages::{
    BuildIndexes, DeleteDocs, ExpireChunk, InsertDocs, ModifyOne, Retire, SwitchCollection,
    UpdateDocs,
};
