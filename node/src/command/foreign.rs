//! Reads of collections other than the one a command names: what
//! `$lookup` and `$unionWith` see. [`ForeignReads`] is the node's
//! [`Sources`] for a pipeline; every document it hands out comes from a
//! cursor built by [`foreign_cursor`], the one place such cursors are made,
//! the way `aggregate` builds its own: the collection's collection handle from the
//! published catalog, a plan from the planner (so an equality `$lookup` on
//! an indexed `foreignField` is point lookups, not a scan per document),
//! the command's snapshot and its `maxTimeMS` deadline.

use std::time::Instant;

use bson::RawDocumentBuf;
use ebb_lang::pipeline::Sources;
use ebb_lang::query::filter::Filter;
use ebb_storage::engine::Snapshot;
use ebb_storage::plan::exec::QueryCursor;
use ebb_storage::plan::{self, QuerySpec};

use crate::context::NodeContext;

/// The collections of one database, read on one snapshot.
pub struct ForeignReads<'a> {
    node: &'a NodeContext,
    db: &'a str,
    snap: &'a dyn Snapshot,
    /// When the command's `maxTimeMS` runs out.
    deadline: Option<Instant>,
}

impl<'a> ForeignReads<'a> {
    pub fn new(
        node: &'a NodeContext,
        db: &'a str,
        snap: &'a dyn Snapshot,
        deadline: Option<Instant>,
    ) -> Self {
        ForeignReads {
            node,
            db,
            snap,
            deadline,
        }
    }
}

impl Sources for ForeignReads<'_> {
    fn scan(
        &self,
        coll: &str,
        filter: Filter,
        each: &mut dyn FnMut(RawDocumentBuf) -> ebb_storage::Result<bool>,
    ) -> ebb_storage::Result<()> {
        let Some(mut cursor) = foreign_cursor(self.node, self.db, coll, filter, self.deadline)?
        else {
            // A view is not read through another collection's stages yet:
            // refused rather than read as an empty collection.
            if super::views::catalog::defined(self.node, self.db, coll, self.snap)? {
                return Err(ebb_storage::Error::not_implemented(&format!(
                    "reading the view {}.{coll} from $lookup, $graphLookup or $unionWith",
                    self.db
                )));
            }
            return Ok(());
        };
        let mut failure = None;
        cursor.for_each(self.snap, &mut |found| match each(found.doc) {
            Ok(more) => more,
            Err(e) => {
                failure = Some(e);
                false
            }
        })?;
        failure.map_or(Ok(()), Err)
    }
}

/// The cursor over the documents of `db.coll` matching `filter` (which
/// carries the pipeline's collation), planned on the collection's indexes;
/// None when the collection does not exist. Every read of another
/// collection's documents is built here.
pub fn foreign_cursor(
    node: &NodeContext,
    db: &str,
    coll: &str,
    filter: Filter,
    deadline: Option<Instant>,
) -> ebb_storage::Result<Option<QueryCursor>> {
    let Some(entry) = node.collection(db, coll) else {
        return Ok(None);
    };
    let spec = QuerySpec {
        filter,
        sort: None,
        hint: None,
    };
    let plan = plan::plan(&entry.coll.meta, &spec)?;
    let cursor =
        QueryCursor::new(&entry.coll, plan, spec.filter, None, 0, None)?.with_deadline(deadline);
    Ok(Some(cursor))
}
