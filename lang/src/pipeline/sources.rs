//! [`Sources`]: how a pipeline reads collections other than its input
//! (`$lookup`, `$unionWith`). Storage cannot open a collection by name — the
//! catalog, the snapshot and the planner's choices belong to the command
//! running the pipeline — so the node implements this trait, and every read
//! of another collection goes through it. Nothing here knows how documents
//! are found; it only says which ones are wanted.

use bson::RawDocumentBuf;

use crate::error::Result;
use crate::query::filter::Filter;

/// The collections of the pipeline's database, as of the pipeline's
/// snapshot.
pub trait Sources {
    /// Feeds `each` the documents of collection `coll` (in the pipeline's
    /// database) that match `filter`, until it returns false. The filter
    /// already carries the pipeline's collation, so the planner may use an
    /// index with the same one. A collection that does not exist has no
    /// documents.
    fn scan(
        &self,
        coll: &str,
        filter: Filter,
        each: &mut dyn FnMut(RawDocumentBuf) -> Result<bool>,
    ) -> Result<()>;
}
