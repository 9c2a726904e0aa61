//! The catalog: the actor that owns collection and index metadata and runs
//! DDL one operation at a time (`actor`), the pure decisions of what each
//! DDL request means (`decide`), the change-log rows of each change on a
//! replica set (`logged`), and the immutable snapshot of the catalog that
//! everyone else reads (`view`).

mod actor;
mod decide;
mod logged;
mod view;

pub use actor::{
    CatalogActor, CatalogCore, CreateCollection, CreateIndexes, DropCollection, DropDatabase,
    DropIndexes, EnsureCollection, ModifyExpiry, ModifyImages, ModifyIndex, ModifyValidation,
    RenameCollection,
};
pub use decide::indexes::{
    CreateIndexesOutcome, DropTarget, IndexChange, IndexChangeOutcome, IndexEdit, IndexTarget,
    MAX_INDEXES, archives_to_create, create_indexes, modify_index,
};
pub use decide::options::ValidationChange;
pub use view::{CatalogState, CatalogView};
