//! One collection's single writer: the actor (`actor`), the pure decisions
//! of what it runs next (`schedule`), its TTL lookahead (`lookahead`), the
//! messages it takes (`messages`), and the handle readers and writers hold
//! (`handle`).

mod actor;
mod handle;
mod lookahead;
mod messages;
pub mod schedule;

pub use actor::CollectionActor;
pub use handle::CollectionHandle;
pub use messages::{
    BuildIndexes, DeleteDocs, ExpireChunk, InsertDocs, ModifyOne, Retire, SwitchIndexSet,
    UpdateDocs,
};
