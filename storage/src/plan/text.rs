//! `$text` over a collection's text index: the index it searches (27 when
//! there is none), the documents that hold a positive term (read from the
//! entries of each term) with their scores, and the plan that reads them.
//!
//! An entry is `term ‖ score ‖ _id` (`index::keygen`), so a term's entries
//! are one key range and a document's score for it is in the key. A
//! compound text index's entries start with its prefix fields' values and
//! carry its suffix fields' after the score: a search reads the range of
//! the prefix values the query's equalities give (mongod's 291 without
//! one for each). The filter then decides each candidate (phrases,
//! negations, sensitivity, the rest of the query), as mongod's
//! `TEXT_MATCH` does.

use std::collections::BTreeMap;
use std::sync::Arc;

use bson::RawBson;
use ebb_lang::encoding::{collation, keycode};
use ebb_lang::error::{Error, ErrorKind, Result};
use ebb_lang::query::filter::{Filter, Pred, text_index_required};
use ebb_lang::query::interrupt;
use ebb_lang::text::Search;

use super::{Access, Plan};
use crate::catalog::{CollectionMeta, IndexMeta};
use crate::engine::{Cf, Direction, KeyRange, Snapshot};
use crate::index::{KeyGen, text_entry_score, text_fields_at, text_term_key};

/// The collection's text index (a collection has one at most), unless it
/// is hidden.
pub fn text_index(meta: &CollectionMeta) -> Result<&IndexMeta> {
    meta.indexes
        .iter()
        .find(|i| i.is_text() && !i.hidden)
        .ok_or_else(text_index_required)
}

/// The collection's text index, the search `filter`'s `$text` makes
/// against it and where its entries start (a compound index's prefix
/// values); `from_index` when its documents will come from
/// [`candidates`].
pub fn search<'m>(
    meta: &'m CollectionMeta,
    filter: &Filter,
    from_index: bool,
) -> Result<Option<(&'m IndexMeta, Search, Vec<u8>)>> {
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
    let prefix = prefix(index, filter)?;
    Ok(Some((index, search, prefix)))
}

/// The encoded values `filter`'s equalities give a compound text index's
/// prefix fields (empty for a text index without them): mongod's 291
/// when a field has none, or a string one compared in another collation
/// than the index's.
fn prefix(index: &IndexMeta, filter: &Filter) -> Result<Vec<u8>> {
    let fields = index.fields();
    let (before, _) = text_fields_at(&fields);
    let preds = filter.top_level_predicates();
    let index_coll = index.collation()?;
    let same = collation::same(index_coll.as_deref(), filter.collation().map(|c| &**c));
    let mut out = Vec::new();
    for (path, ascending) in &fields[..before] {
        let value = preds.iter().find_map(|(p, pred)| match pred {
            Pred::Eq(v) if p == path => match v {
                RawBson::Array(_) | RawBson::RegularExpression(_) => None,
                RawBson::String(_) if !same => None,
                v => Some(v),
            },
            _ => None,
        });
        let Some(value) = value else {
            return Err(Error::new(
                ErrorKind::NoQueryExecutionPlans,
                "error processing query: planner returned error :: caused by :: failed to use \
                 text index to satisfy $text query (if text index is compound, are equality \
                 predicates given for all prefix fields?)",
            ));
        };
        let value = value.as_raw_bson_ref();
        match ascending {
            true => keycode::encode_collated(&mut out, value, index_coll.as_deref()),
            false => keycode::encode_collated_desc(&mut out, value, index_coll.as_deref()),
        }
    }
    Ok(out)
}

/// `filter` with its `$text` (if any) bound to the collection's text index,
/// to be decided document by document.
pub fn bind(meta: &CollectionMeta, filter: Filter) -> Result<Filter> {
    if filter.text().is_none() || filter.text_search().is_some() {
        return Ok(filter);
    }
    let (_, search, _) = search(meta, &filter, false)?.ok_or_else(text_index_required)?;
    Ok(filter.with_text_search(Arc::new(search)))
}

/// The documents holding a positive term of `search` among the entries
/// that start with `prefix` ([`search`]'s), by encoded `_id`, each with
/// its score (the sum of its terms' scores).
pub fn candidates(
    snap: &dyn Snapshot,
    index: &IndexMeta,
    search: &Search,
    prefix: &[u8],
) -> Result<BTreeMap<Vec<u8>, f64>> {
    let kg = KeyGen::new(index)?;
    let mut found: BTreeMap<Vec<u8>, f64> = BTreeMap::new();
    for term in &search.terms {
        let prefix = [prefix, &text_term_key(term)].concat();
        let mut cursor = snap.cursor(
            Cf::Id(index.id),
            KeyRange::prefix(&prefix),
            Direction::Forward,
        )?;
        let mut seen = 0u64;
        while cursor.valid() {
            let key = cursor.key();
            let score = text_entry_score(&key[prefix.len()..])
                .ok_or_else(|| ebb_lang::Error::corrupt("a text index entry without its score"))?;
            *found.entry(kg.id_suffix(key)?.to_vec()).or_insert(0.0) += score;
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
