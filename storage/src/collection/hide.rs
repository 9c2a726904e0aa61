//! The question every reader and writer of a collection with TTL indexes
//! asks the node: are due documents hidden, and as of when? The node
//! answers it (the TTL monitor's clock and switches); storage only asks.
//! `crate::ttl::hidden` explains what is done with the answer.
//!
//! A replica-set member applying a write its primary decided hides as the
//! primary did (`ebb_lang::decided::hiding`), never by its own clock:
//! every member must find the same documents for the write.

/// Whether due documents are hidden, and as of when.
pub trait HideDue: Send + Sync + std::fmt::Debug {
    /// The time (millis, the TTL monitor's clock) as of which documents
    /// due are hidden; None while nothing is hidden.
    fn hide_at(&self) -> Option<i64>;

    /// Whether a write that no primary decided hides nothing: on a
    /// replica-set member every write comes decided through the log, and
    /// the others (index builds) must not depend on this member's clock.
    fn writes_are_decided(&self) -> bool {
        false
    }

    /// A read passed over `n` due documents.
    fn note_hidden(&self, _n: u64) {}

    /// A write deleted `n` due documents whose `_id` or unique key it took.
    fn note_replaced(&self, _n: u64) {}
}

/// MongoDB's behaviour: a document is visible until it is deleted.
#[derive(Debug, Default, Clone, Copy)]
pub struct HideNothing;

impl HideDue for HideNothing {
    fn hide_at(&self) -> Option<i64> {
        None
    }
}
