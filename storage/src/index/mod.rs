//! Secondary indexes: which entry keys a document puts into each index
//! (`keygen`; a `2dsphere` index's S2 cells, `geo`; a `2d` index's
//! geohashes, `flat`; the types an entry carries to answer a covered
//! query, `cover`; a wildcard index's paths and leaves, `wildcard`).
//! The collection handle that holds them is `collection`'s.

mod cover;
pub mod flat;
pub mod floor;
pub mod geo;
mod keygen;
mod rule;
pub mod wildcard;

pub use floor::Floor;
pub use keygen::{
    Expiry, KeyGen, NeverDue, SCORE_BYTES, duplicate_key_error, hash_key, text_entry_score,
    text_fields_at, text_term_key,
};
pub use rule::{cutoff_millis, due_millis};
