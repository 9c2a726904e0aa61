//! `$text` in `find` and `aggregate`: the documents of the collection's
//! text index that match the query, each with its score, read on one
//! snapshot. The index gives the candidates and their scores
//! (`ebb_storage::plan::text`); the query's filter, with the search bound,
//! decides each one (phrases, negations, sensitivity, the other
//! predicates), and due documents stay hidden as in any read. The matches
//! are held to be ordered, within a blocking sort's 100 MiB: a search
//! matching more fails as such a sort does.

use std::sync::Arc;

use bson::RawDocumentBuf;
use ebb_config::limits::MAX_SORT_BYTES;
use ebb_lang::query::spill::memory_error;
use ebb_storage::Collection;
use ebb_storage::plan::exec::{BatchLimits, QueryCursor};
use ebb_storage::plan::{QuerySpec, text};

use crate::context::NodeContext;
use crate::error::{CommandError, CommandResult};

/// The documents `spec` (whose filter has a `$text`) matches, with their
/// scores, in `_id` order.
pub async fn search(
    node: &Arc<NodeContext>,
    coll: &Arc<Collection>,
    spec: &QuerySpec,
    max_time: Option<std::time::Duration>,
) -> CommandResult<Vec<(f64, RawDocumentBuf)>> {
    if spec.hint.is_some() {
        return Err(CommandError::bad_value(
            "hint is not allowed with a $text query",
        ));
    }
    let Some((index, search, prefix)) = text::search(&coll.meta, &spec.filter, true)? else {
        return Ok(Vec::new());
    };
    let index = index.clone();
    if !search.has_terms() {
        return Ok(Vec::new());
    }
    let search = Arc::new(search);
    let filter = spec.filter.clone().with_text_search(search.clone());
    let coll = coll.clone();
    let found = node
        .scan(move |snap| {
            let scores = text::candidates(snap, &index, &search, &prefix)?;
            let plan = text::plan(&index, scores.keys().cloned());
            let mut query =
                QueryCursor::new(&coll, plan, filter, None, 0, None)?.with_time_limit(max_time);
            let mut out = Vec::new();
            let mut held = 0usize;
            while !query.exhausted() {
                for f in query.next_batch(snap, BatchLimits::UNLIMITED)? {
                    held += f.doc.as_bytes().len();
                    if held > MAX_SORT_BYTES {
                        return Err(memory_error(MAX_SORT_BYTES).into());
                    }
                    let score = scores.get(&f.id_key).copied().unwrap_or(0.0);
                    out.push((score, f.doc));
                }
            }
            Ok(out)
        })
        .await?;
    Ok(found)
}
