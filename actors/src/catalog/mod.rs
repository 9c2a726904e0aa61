//! The catalog: the actor that owns collection and index metadata and runs
//! DDL one operation at a time (`actor`), and the immutable snapshot of it
//! that everyone else reads (`view`).

mod actor;
mod view;

pub use actor::{
    CatalogActor, CatalogCore, CreateCollection, CreateIndexes, CreateIndexesOutcome,
    DropCollection, DropDatabase, DropIndexes, DropTarget, EnsureCollection, IndexChange,
    IndexChangeOutcome, IndexTarget, MAX_INDEXES, ModifyExpiry, ModifyIndex, ModifyValidation,
    RenameCollection, ValidationChange,
};
pub use view::{CatalogState, CatalogView};
