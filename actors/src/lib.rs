//! ebb-actors: the actix actors that own ebb's mutable state.
pub mod clock;
