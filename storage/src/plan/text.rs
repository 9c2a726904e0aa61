//! `$text` over a collection's text index: the index it searches (27 when
//! there is none), the documents that hold a positive term (read from the
//! entries of each term) with their scores, and the plan that reads them.
//!
//! An entry is `term ‖ score ‖ _id` (`index::keygen`), so a term's entries
//! are one key range and a document's score for it is in the key. The
//! filter then decides each candidate (phrases, negations, sensitivity,
//! the rest of the query), as mongod's `TEXT_MATCH` does.

use std::collections::BTreeMap;
use std::sync::Arc;

use ebb_lang::error::Result;
use ebb_lang::query::filter::{Filter, text_index_required};
use ebb_lang::query::interrupt;
use ebb_lang::text::Search;

use super::{Access, Plan};
use crate::catalog::{CollectionMeta, IndexMeta};
use crate::engine::{Cf, Direction, KeyRange, Snapshot};
use crate::index::{SCORE_BYTES, text_entry_score, text_term_key};

/// The collection's text index (a collection has one at most), unless it
/// is hidden.
pub fn text_index(meta: &CollectionMeta) -> Result<&IndexMeta> {
    meta.indexes
        .iter()
        .find(|i| i.is_text() && !i.hidden)
        .ok_or_else(text_index_required)
}

/// The collection's text index and the search `filter`'s `$text` makes
/// against it; `from_index` when its documents will come from
/// [`candidates`].
pub fn search<'m>(
    meta: &'m CollectionMeta,
    filter: &Filter,
    from_index: bool,
) -> Result<Option<(&'m IndexMeta, Search)>> {
    let Some(query) = filter.text() else {
        return Ok(None);
    };
    let index = text_index(meta)?;
    let definition = index.text_index().ok_or_else(text_index_required)?;
    let search = Search::new(query, &definition);
    let search = if from_index {
        search.from_index()
    } else {
        search
    };
    Ok(Some((index, search)))
}

/// `filter` with its `$text` (if any) bound to the collection's text index,
/// to be decided document by document.
pub fn bind(meta: &CollectionMeta, filter: Filter) -> Result<Filter> {
    if filter.text().is_none() || filter.text_search().is_some() {
        return Ok(filter);
    }
    let (_, search) = search(meta, &filter, false)?.ok_or_else(text_index_required)?;
    Ok(filter.with_text_search(Arc::new(search)))
}

/// The documents holding a positive term of `search`, by encoded `_id`,
/// each with its score (the sum of its terms' scores).
pub fn candidates(
    snap: &dyn Snapshot,
    index: &IndexMeta,
    search: &Search,
) -> Result<BTreeMap<Vec<u8>, f64>> {
    let mut found: BTreeMap<Vec<u8>, f64> = BTreeMap::new();
    for term in &search.terms {
        let prefix = text_term_key(term);
        let mut cursor = snap.cursor(
            Cf::Id(index.id),
            KeyRange::prefix(&prefix),
            Direction::Forward,
        )?;
        let mut seen = 0u64;
        while cursor.valid() {
            let rest = &cursor.key()[prefix.len()..];
            let score = text_entry_score(rest)
                .ok_or_else(|| ebb_lang::Error::corrupt("a text index entry without its score"))?;
            let rest = &rest[SCORE_BYTES..];
            *found.entry(rest.to_vec()).or_insert(0.0) += score;
            cursor.advance();
            seen += 1;
            if seen.is_multiple_of(1024) {
                interrupt::check_current()?;
            }
        }
        cursor.status()?;
    }
    Ok(found)
}

/// The plan reading the candidates' records, in `_id` order.
pub fn plan(index: &IndexMeta, ids: impl Iterator<Item = Vec<u8>>) -> Plan {
    Plan {
        access: Access::Records {
            ranges: ids.map(|id| KeyRange::prefix(&id)).collect(),
            dir: Direction::Forward,
        },
        sorted_by_access: false,
        bounds: vec![(index.name.clone(), Vec::new())],
        stage: "TEXT_MATCH",
    }
}
