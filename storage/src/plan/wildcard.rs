//! Plans over wildcard indexes (`index::wildcard`). A predicate on one
//! path the index holds reads that path's entries within the predicate's
//! value bounds, as mongod plans it (explain's key pattern is
//! `{$_path: 1, <path>: 1}`). Usable: equality, `$in`, ranges and regex
//! prefixes on scalars other than null (a missing path has no entry),
//! equality to an empty document or an array, and `$exists: true` (the
//! path and every path below it, any value). A path with a numeric part
//! (`a.0.b`) may name an array element, whose entries are at the path
//! without that part: it reads the path with and without each numeric
//! part, any value. The filter decides every candidate.

use bson::RawBson;

use super::access::{Plan, QuerySpec};
use super::bounds::{
    End, Interval, holds_every_match, index_collation, key_range, point_intervals, range_intervals,
    regex_intervals, serves, show, tag_of,
};
use crate::catalog::{CollectionMeta, IndexMeta};
use crate::engine::KeyRange;
use crate::index::wildcard::{Wildcard, path_key};
use ebb_lang::encoding::collation::Collation;
use ebb_lang::encoding::keycode;
use ebb_lang::error::{Error, ErrorKind, Result};
use ebb_lang::query::filter::Pred;
use ebb_lang::query::value::ordered_scalar;

/// Numeric parts a path may have for a wildcard index to serve it (each
/// doubles the paths read).
const MAX_NUMERIC_PARTS: usize = 3;

/// Which predicates a search takes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Kind {
    /// Equality and `$in`.
    Points,
    /// Ranges, regex prefixes, `$exists` and numeric paths.
    Ranges,
    /// Either (a hinted index).
    Any,
}

/// The values a plan reads at one path.
enum Values {
    Intervals(Vec<Interval>),
    /// Every value at the path and every path below it.
    All,
}

/// A plan over the first wildcard index that holds every document the
/// query can match and serves one of its predicates of `kind`.
pub(super) fn chosen(meta: &CollectionMeta, q: &QuerySpec, kind: Kind) -> Result<Option<Plan>> {
    for index in meta.indexes.iter().filter(|i| i.is_wildcard() && !i.hidden) {
        let index_coll = index_collation(index)?;
        if !holds_every_match(index, index_coll.clone(), &q.filter) {
            continue;
        }
        if let Some(plan) = plan_on(index, index_coll.as_deref(), q, kind) {
            return Ok(Some(plan));
        }
    }
    Ok(None)
}

/// A plan over the hinted wildcard `index`; mongod's 291 when it serves
/// no predicate of the query.
pub(super) fn hinted(index: &IndexMeta, q: &QuerySpec) -> Result<Plan> {
    let index_coll = index_collation(index)?;
    plan_on(index, index_coll.as_deref(), q, Kind::Any).ok_or_else(|| {
        Error::new(
            ErrorKind::NoQueryExecutionPlans,
            format!(
                "error processing query: planner returned error :: caused by :: the hinted \
                 wildcard index '{}' holds no path the query can use",
                index.name
            ),
        )
    })
}

fn plan_on(
    index: &IndexMeta,
    index_coll: Option<&Collation>,
    q: &QuerySpec,
    kind: Kind,
) -> Option<Plan> {
    let wildcard = Wildcard::of(index)?;
    let preds = q.filter.top_level_predicates();
    let coll = q.filter.collation().map(|c| &**c);
    let descending = index.fields().first().is_some_and(|(_, asc)| !asc);
    // Plain paths first: their bounds are tighter.
    let (plain, numeric): (Vec<&str>, Vec<&str>) = preds
        .iter()
        .map(|(p, _)| *p)
        .partition(|p| numeric_parts(p) == 0);
    for path in plain {
        let values = match values_on(&preds, path, kind, coll) {
            Some(Values::Intervals(ivs)) if serves(index_coll, coll, &ivs) => {
                if !wildcard.holds(path) {
                    continue;
                }
                Values::Intervals(ivs)
            }
            Some(Values::All) if wildcard.may_hold_below(path) => Values::All,
            _ => continue,
        };
        return Some(read(
            index,
            path,
            &[path.to_owned()],
            values,
            descending,
            coll,
        ));
    }
    if kind == Kind::Points {
        return None;
    }
    for path in numeric {
        if numeric_parts(path) > MAX_NUMERIC_PARTS
            || values_on(&preds, path, Kind::Any, coll).is_none()
        {
            continue;
        }
        let paths: Vec<String> = element_paths(path)
            .into_iter()
            .filter(|p| wildcard.may_hold_below(p))
            .collect();
        if !paths.is_empty() {
            return Some(read(index, path, &paths, Values::All, descending, coll));
        }
    }
    None
}

/// The values a predicate on `path` of `kind` reads, if one can use the
/// index.
fn values_on(
    preds: &[(&str, &Pred)],
    path: &str,
    kind: Kind,
    coll: Option<&Collation>,
) -> Option<Values> {
    let points = || {
        point_intervals(preds, path)
            .or_else(|| whole_values(preds, path))
            .map(Values::Intervals)
    };
    let ranges = || {
        range_intervals(preds, path, coll)
            .or_else(|| regex_intervals(preds, path))
            .map(Values::Intervals)
            .or_else(|| {
                preds
                    .iter()
                    .any(|(p, pred)| *p == path && matches!(pred, Pred::Exists(true)))
                    .then_some(Values::All)
            })
    };
    match kind {
        Kind::Points => points(),
        Kind::Ranges => ranges(),
        Kind::Any => points().or_else(ranges),
    }
}

/// An equality to an empty document (keyed as itself) or to an array:
/// the array itself (a nested one is keyed whole) and its first element
/// (each element of a stored array is keyed), as mongod bounds it; an
/// empty array also as `undefined`, as mongod shows it.
fn whole_values(preds: &[(&str, &Pred)], path: &str) -> Option<Vec<Interval>> {
    let point = |v: RawBson| Interval {
        tag: tag_of(&v),
        lower: End::Incl(v.clone()),
        upper: End::Incl(v),
        binary: false,
    };
    preds.iter().find_map(|(p, pred)| {
        let Pred::Eq(v) = pred else { return None };
        if *p != path {
            return None;
        }
        match v {
            RawBson::Document(d) if d.is_empty() => Some(vec![point(v.clone())]),
            RawBson::Array(items) => match items.into_iter().next() {
                None => Some(vec![point(RawBson::Undefined), point(v.clone())]),
                Some(Ok(first)) if ordered_scalar(first) => {
                    let mut ivs = vec![point(RawBson::from(first)), point(v.clone())];
                    ivs.sort_by_key(|iv| iv.tag);
                    Some(ivs)
                }
                Some(_) => None,
            },
            _ => None,
        }
    })
}

/// Whether a part of a path is a number (may be an array position).
fn is_position(part: &str) -> bool {
    !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit())
}

/// How many parts of `path` are numbers.
fn numeric_parts(path: &str) -> usize {
    path.split('.').filter(|part| is_position(part)).count()
}

/// `path` with and without each of its numeric parts: where the entries
/// of an array element it names may be (`a.0.b`: `a.0.b`, `a.b`).
fn element_paths(path: &str) -> Vec<String> {
    let parts: Vec<&str> = path.split('.').collect();
    let numeric: Vec<usize> = (0..parts.len())
        .filter(|i| is_position(parts[*i]))
        .collect();
    let mut out = Vec::new();
    for mask in 0..(1usize << numeric.len()) {
        let kept: Vec<&str> = parts
            .iter()
            .enumerate()
            .filter(|(i, _)| {
                numeric
                    .iter()
                    .position(|n| n == i)
                    .is_none_or(|bit| mask & (1 << bit) == 0)
            })
            .map(|(_, p)| *p)
            .collect();
        out.push(kept.join("."));
    }
    out.sort();
    out.dedup();
    out
}

/// The plan reading `values` at each of `paths` (the query's `path`).
fn read(
    index: &IndexMeta,
    path: &str,
    paths: &[String],
    values: Values,
    descending: bool,
    coll: Option<&Collation>,
) -> Plan {
    let mut ranges = Vec::new();
    let mut shown_paths = Vec::new();
    let shown_values = match &values {
        Values::Intervals(ivs) => ivs.iter().map(|iv| show(iv, descending)).collect(),
        Values::All => vec!["[MinKey, MaxKey]".to_owned()],
    };
    for p in paths {
        let at = path_key(p);
        shown_paths.push(format!("[\"{p}\", \"{p}\"]"));
        match &values {
            Values::Intervals(ivs) => {
                for iv in ivs {
                    let r = key_range(iv, descending, coll);
                    let prefixed = |k: &[u8]| [at.as_slice(), k].concat();
                    ranges.push(KeyRange::new(
                        prefixed(&r.lower),
                        r.upper.as_deref().map(prefixed),
                    ));
                }
            }
            Values::All => {
                ranges.push(KeyRange::new(at.clone(), keycode::prefix_successor(&at)));
                // Below the path: the strings from "p." up to "p/".
                ranges.push(KeyRange::new(
                    path_key(&format!("{p}.")),
                    Some(path_key(&format!("{p}/"))),
                ));
                shown_paths.push(format!("[\"{p}.\", \"{p}/\")"));
            }
        }
    }
    ranges.sort_by(|a, b| a.lower.cmp(&b.lower));
    let bounds = vec![
        ("$_path".to_owned(), shown_paths),
        (path.to_owned(), shown_values),
    ];
    Plan::candidates(index, ranges, bounds)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numeric_parts_name_element_paths() {
        assert_eq!(numeric_parts("a.0.b.12"), 2);
        assert_eq!(element_paths("c.0"), ["c", "c.0"]);
        assert_eq!(element_paths("f.0.g"), ["f.0.g", "f.g"]);
    }
}
