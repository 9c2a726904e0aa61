//! Reads of collections other than the one a command names: what
//! `$lookup` and `$unionWith` see. [`ForeignReads`] is the node's
//! [`Sources`] for a pipeline; every document it hands out comes from a
//! cursor built by [`foreign_cursor`], the one place such cursors are made,
//! the way `aggregate` builds its own: the collection's collection handle from the
//! published catalog, a plan from the planner (so an equality `$lookup` on
//! an indexed `foreignField` is point lookups, not a scan per document),
//! the command's snapshot and its `maxTimeMS` deadline. A view is read as
//! the collection at the bottom of its chain through the views' stages.

use std::time::Instant;

use bson::RawDocumentBuf;
use ebb_lang::pipeline::{Env, Pipeline, Sources, parse_stage_in};
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
        if self.node.collection(self.db, coll).is_none()
            && let Some(view) =
                super::views::catalog::resolve_on(self.node, self.db, coll, self.snap)?
        {
            return self.scan_view(view, filter, each);
        }
        let Some(mut cursor) = foreign_cursor(self.node, self.db, coll, filter, self.deadline)?
        else {
            return Ok(());
        };
        cursor.try_for_each(self.snap, &mut |found| each(found.doc))
    }
}

impl ForeignReads<'_> {
    /// A view's documents matching `filter`: the collection at the bottom
    /// of its chain through the views' stages, on the same snapshot.
    fn scan_view(
        &self,
        view: super::views::catalog::Resolved,
        filter: Filter,
        each: &mut dyn FnMut(RawDocumentBuf) -> ebb_storage::Result<bool>,
    ) -> ebb_storage::Result<()> {
        let env = Env::new(self.node.shared.clock.now());
        let stages = view
            .pipeline
            .iter()
            .map(|s| parse_stage_in(s, &env))
            .collect::<ebb_storage::Result<Vec<_>>>()?;
        let mut pipeline = Pipeline::new(stages)
            .with_sources(self)
            .collated(filter.collation().cloned());
        let all = Filter::parse(&bson::rawdoc! {})?;
        if let Some(mut cursor) =
            foreign_cursor(self.node, self.db, &view.source, all, self.deadline)?
        {
            cursor.try_for_each(self.snap, &mut |found| pipeline.push(found.doc))?;
        }
        for doc in pipeline.finish()? {
            if filter.matches(&doc)? && !each(doc)? {
                break;
            }
        }
        Ok(())
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
