//! Bounds: the values a query's predicates on one path can match, as
//! intervals in value space ([`Interval`], one type bracket each), turned
//! into key ranges of an index for its direction and collation; and
//! whether an index holds every document a query can match (a partial
//! index whose filter the query implies). The planner's shared tools.

use bson::RawBson;

use crate::catalog::IndexMeta;
use crate::engine::KeyRange;
use ebb_lang::encoding::collation::{self, Collation};
use ebb_lang::encoding::{bracket, keycode};
use ebb_lang::error::Result;
use ebb_lang::query::filter::{Filter, Pred};
use ebb_lang::query::regex::prefix_upper_bound;
use ebb_lang::query::value::ordered_scalar;

/// One end of a value interval.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum End {
    /// The end of the value's type bracket.
    Open,
    Incl(RawBson),
    Excl(RawBson),
}

/// A set of values of one type bracket: `(lower, upper)`.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Interval {
    pub(super) tag: u8,
    pub(super) lower: End,
    pub(super) upper: End,
    /// Bounds in byte order whatever the query's collation (a regex
    /// prefix: regexes never use a collation), so only an index without
    /// one can serve them.
    pub(super) binary: bool,
}

/// The collation an index's keys are ordered by (for `_id_`, the records
/// family's: the collection's default collation).
pub(crate) fn index_collation(index: &IndexMeta) -> Result<Option<std::sync::Arc<Collation>>> {
    index.collation()
}

/// Whether an index in collation `index` can serve these bounds of a query
/// in collation `query`: always when they are the same, and otherwise
/// when no bound is a string (other values are keyed alike in every
/// collation).
pub(super) fn serves(
    index: Option<&Collation>,
    query: Option<&Collation>,
    intervals: &[Interval],
) -> bool {
    if intervals.iter().any(|iv| iv.binary) {
        return index.is_none();
    }
    collation::same(index, query) || intervals.iter().all(|iv| iv.tag != bracket::TAG_STRING)
}

/// Whether `index` holds every document `filter` can match: it has no
/// partial filter, or `filter` implies it (compared, as the index's
/// entries were, under the index's collation `index_coll`).
pub(super) fn holds_every_match(
    index: &IndexMeta,
    index_coll: Option<std::sync::Arc<Collation>>,
    filter: &Filter,
) -> bool {
    let Some(partial) = &index.partial_filter else {
        return true;
    };
    // A stored filter that no longer parses is a reason not to trust the
    // index for unhinted queries, not to fail them.
    bson::RawDocumentBuf::try_from(partial)
        .ok()
        .and_then(|raw| Filter::parse(&raw).ok())
        .is_some_and(|p| filter.implies(&p.collated(index_coll)))
}

/// Whether an index can look this value up (anything else falls back to
/// a scan).
fn indexable(v: &RawBson) -> bool {
    ordered_scalar(v.as_raw_bson_ref())
}

pub(super) fn tag_of(v: &RawBson) -> u8 {
    let mut buf = Vec::with_capacity(16);
    keycode::encode_value(&mut buf, v.as_raw_bson_ref());
    buf[0]
}

/// Equality / `$in` on `path` as point intervals, if every value is
/// indexable.
pub(super) fn point_intervals(preds: &[(&str, &Pred)], path: &str) -> Option<Vec<Interval>> {
    for (p, pred) in preds {
        if *p != path {
            continue;
        }
        let values: Vec<&RawBson> = match pred {
            Pred::Eq(v) => vec![v],
            Pred::In(vs) if !vs.is_empty() => vs.iter().collect(),
            _ => continue,
        };
        if values.iter().all(|v| indexable(v)) {
            return Some(
                values
                    .into_iter()
                    .map(|v| Interval {
                        tag: tag_of(v),
                        lower: End::Incl(v.clone()),
                        upper: End::Incl(v.clone()),
                        binary: false,
                    })
                    .collect(),
            );
        }
    }
    None
}

/// `$gt/$gte/$lt/$lte` on `path` intersected into one interval, strings
/// ordered by `coll`.
pub(super) fn range_intervals(
    preds: &[(&str, &Pred)],
    path: &str,
    coll: Option<&Collation>,
) -> Option<Vec<Interval>> {
    let mut iv: Option<Interval> = None;
    for (p, pred) in preds {
        if *p != path {
            continue;
        }
        let (v, is_lower, end) = match pred {
            Pred::Gt(v) => (v, true, End::Excl(v.clone())),
            Pred::Gte(v) => (v, true, End::Incl(v.clone())),
            Pred::Lt(v) => (v, false, End::Excl(v.clone())),
            Pred::Lte(v) => (v, false, End::Incl(v.clone())),
            _ => continue,
        };
        if !indexable(v) {
            continue;
        }
        let tag = tag_of(v);
        let cur = iv.get_or_insert(Interval {
            tag,
            lower: End::Open,
            upper: End::Open,
            binary: false,
        });
        if cur.tag != tag {
            // Two brackets: nothing can match; an empty interval says so.
            return Some(Vec::new());
        }
        if is_lower {
            cur.lower = tighter(&cur.lower, end, true, coll);
        } else {
            cur.upper = tighter(&cur.upper, end, false, coll);
        }
    }
    iv.map(|i| vec![i])
}

/// A regex with a literal prefix on `path` (`^abc`): the strings from
/// `"abc"` up to (not including) `"abd"`, and the regex value itself (an
/// equal stored regex matches too), as MongoDB bounds it. The regex still
/// checks every candidate.
pub(super) fn regex_intervals(preds: &[(&str, &Pred)], path: &str) -> Option<Vec<Interval>> {
    preds.iter().find_map(|(p, pred)| {
        let Pred::Regex(regex) = pred else {
            return None;
        };
        if *p != path {
            return None;
        }
        let prefix = regex.literal_prefix().filter(|p| !p.is_empty())?;
        let upper = match prefix_upper_bound(&prefix) {
            Some(u) => End::Excl(RawBson::String(u)),
            None => End::Open,
        };
        let value = RawBson::RegularExpression(bson::Regex {
            pattern: regex.pattern().try_into().ok()?,
            options: regex.options().try_into().ok()?,
        });
        Some(vec![
            Interval {
                tag: bracket::TAG_STRING,
                lower: End::Incl(RawBson::String(prefix)),
                upper,
                binary: true,
            },
            Interval {
                tag: bracket::TAG_REGEX,
                lower: End::Incl(value.clone()),
                upper: End::Incl(value),
                binary: true,
            },
        ])
    })
}

fn end_key(e: &End, coll: Option<&Collation>) -> Option<(Vec<u8>, bool)> {
    let encode = |v: &RawBson| {
        let mut key = Vec::new();
        keycode::encode_collated(&mut key, v.as_raw_bson_ref(), coll);
        key
    };
    match e {
        End::Open => None,
        End::Incl(v) => Some((encode(v), true)),
        End::Excl(v) => Some((encode(v), false)),
    }
}

/// The stricter of two ends of the same side.
fn tighter(cur: &End, new: End, lower: bool, coll: Option<&Collation>) -> End {
    let (Some((a, a_incl)), Some((b, b_incl))) = (end_key(cur, coll), end_key(&new, coll)) else {
        return if matches!(cur, End::Open) {
            new
        } else {
            cur.clone()
        };
    };
    let new_wins = match a.cmp(&b) {
        std::cmp::Ordering::Equal => a_incl && !b_incl,
        std::cmp::Ordering::Less => lower,
        std::cmp::Ordering::Greater => !lower,
    };
    if new_wins { new } else { cur.clone() }
}

fn invert(bytes: &[u8]) -> Vec<u8> {
    bytes.iter().map(|b| !b).collect()
}

fn succ(bytes: &[u8]) -> Vec<u8> {
    keycode::prefix_successor(bytes).unwrap_or_else(|| vec![0xFF; bytes.len() + 1])
}

/// The key range holding every entry whose leading field lies in `iv`.
pub(super) fn key_range(iv: &Interval, descending: bool, coll: Option<&Collation>) -> KeyRange {
    let coll = if iv.binary { None } else { coll };
    let lo = end_key(&iv.lower, coll);
    // A point's two ends are one key: encode it once (a collation sort key
    // is the costly part of planning a collated lookup).
    let hi = if iv.lower == iv.upper {
        lo.clone()
    } else {
        end_key(&iv.upper, coll)
    };
    if !descending {
        let lower = match lo {
            None => vec![iv.tag],
            Some((k, true)) => k,
            Some((k, false)) => succ(&k),
        };
        let upper = match hi {
            None => vec![iv.tag + 1],
            Some((k, true)) => succ(&k),
            Some((k, false)) => k,
        };
        KeyRange::new(lower, Some(upper))
    } else {
        let lower = match hi {
            None => vec![!iv.tag],
            Some((k, true)) => invert(&k),
            Some((k, false)) => succ(&invert(&k)),
        };
        let upper = match lo {
            None => vec![(!iv.tag).wrapping_add(1)],
            Some((k, true)) => succ(&invert(&k)),
            Some((k, false)) => invert(&k),
        };
        KeyRange::new(lower, Some(upper))
    }
}

/// An interval in explain notation: `[5, 5]`, `(3, inf.0]`.
pub(super) fn show(iv: &Interval, descending: bool) -> String {
    let val = |e: &End, low: bool| match e {
        End::Incl(v) | End::Excl(v) => bson::Bson::try_from(v.clone())
            .map(|b| ebb_lang::encoding::display::shell(&b))
            .unwrap_or_default(),
        End::Open => bracket_end(iv.tag, low),
    };
    let open = |e: &End| if matches!(e, End::Excl(_)) { "(" } else { "[" };
    let close = |e: &End| if matches!(e, End::Excl(_)) { ")" } else { "]" };
    if descending {
        format!(
            "{}{}, {}{}",
            open(&iv.upper),
            val(&iv.upper, false),
            val(&iv.lower, true),
            close(&iv.lower)
        )
    } else {
        format!(
            "{}{}, {}{}",
            open(&iv.lower),
            val(&iv.lower, true),
            val(&iv.upper, false),
            close(&iv.upper)
        )
    }
}

fn bracket_end(tag: u8, low: bool) -> String {
    let s = match (tag, low) {
        (t, true) if t == bracket::TAG_NUMBER => "-inf.0",
        (t, false) if t == bracket::TAG_NUMBER => "inf.0",
        (t, true) if t == bracket::TAG_STRING => "\"\"",
        (t, false) if t == bracket::TAG_STRING => "{}",
        (t, true) if t == bracket::TAG_DATE => "new Date(-9223372036854775808)",
        (t, false) if t == bracket::TAG_DATE => "new Date(9223372036854775807)",
        (_, true) => "MinKey",
        (_, false) => "MaxKey",
    };
    s.to_owned()
}
