//! Secondary indexes: which entry keys a document puts into each index
//! (`keygen`), and the immutable collection handle that holds a
//! collection's catalog record with its key generators (`set`).

mod keygen;
mod set;

pub use keygen::{KeyGen, duplicate_key_error};
pub use set::IndexSet;
