//! Covered queries: a plan over an ordinary index answers from the index
//! alone when the query needs nothing else — the projection keeps only
//! key fields (`_id` excluded unless it is one), and the filter and any
//! sort read only key fields. Each entry that carries its values' types
//! (`index::cover`) is then turned back into a document of the key fields
//! and the record is never read; an entry that carries none (an array
//! along a key path, older data) has its record read instead.

use ebb_lang::query::filter::Filter;
use ebb_lang::query::sort::SortSpec;

use super::{Access, Plan};
use crate::collection::Collection;

/// Whether `plan` can answer a query on `coll` from its index: the
/// `projected` paths (a plain inclusion's), the filter's and the sort's
/// all among the index's key fields.
pub fn covers(
    coll: &Collection,
    plan: &Plan,
    filter: &Filter,
    sort: Option<&SortSpec>,
    projected: &[String],
) -> bool {
    let Access::Index { index, .. } = &plan.access else {
        return false;
    };
    if coll.timeseries.is_some() || !index.is_plain() {
        return false;
    }
    let fields: Vec<&str> = index.key.keys().map(String::as_str).collect();
    let sort_fields = sort
        .filter(|_| !plan.sorted_by_access)
        .map_or(&[][..], |s| s.fields());
    projected.iter().all(|p| fields.contains(&p.as_str()))
        && sort_fields
            .iter()
            .all(|(f, _)| fields.contains(&f.as_str()))
        && sort.is_none_or(|s| !s.by_text_score())
        && filter.reads_only(&fields)
}
