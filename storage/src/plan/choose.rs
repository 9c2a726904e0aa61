//! The query planner: how a query reaches its documents.
//!
//! Records are clustered by `_id`, so the `_id_` index is the records
//! column family itself and an `_id` range is a record range. A secondary
//! index serves equality, `$in` and ranges on its leading field, and a sort
//! that matches its key pattern; every candidate is still checked against
//! the whole filter, so an index only ever narrows the scan — results are
//! identical with and without it. Bounds are computed in value space
//! ([`Interval`]) and turned into key ranges for the field's direction.
//!
//! Choices, in order: a hint; `_id` equality or `$in` (point lookups); a
//! secondary index with equality/`$in` on its leading field; one with a
//! range; an index that provides the requested sort; a collection scan.
//! Hidden and sparse indexes are used only when hinted (a sparse index
//! does not hold every document); a partial index when the query's filter
//! implies the index's (`Filter::implies`), so it holds every document the
//! query can match, or when hinted.
//!
//! Collations: an index with a collation holds sort keys for strings, so
//! it serves string bounds and sorts only for a query with the same
//! collation (as in MongoDB); bounds of other types are the same bytes in
//! every collation. Records are keyed by `_id` in the collection's
//! default collation (the `_id_` index's, as in mongod), so string `_id`
//! lookups and `_id` order serve queries with that collation.

use bson::{RawBson, RawBsonRef};

use super::access::{Access, Hint, Plan, QuerySpec};
use super::bounds::{
    Interval, holds_every_match, index_collation, key_range, point_intervals, range_intervals,
    regex_intervals, serves, show,
};
use super::wildcard;
use crate::catalog::{CollectionMeta, IndexMeta};
use crate::engine::{Direction, KeyRange};
use crate::index::flat::Grid;
use crate::index::{geo, hash_key};
use crate::timeseries::index as ts_index;
use crate::timeseries::options::{META_INDEX, TimeseriesOptions};
use ebb_lang::encoding::collation::{self, Collation};
use ebb_lang::encoding::{hashed, keycode};
use ebb_lang::error::{Error, ErrorKind, Result};
use ebb_lang::query::filter::{GeoPred, GeoTest, Near, Pred};
use ebb_lang::query::sort::SortSpec;

/// Chooses a plan.
pub fn plan(meta: &CollectionMeta, q: &QuerySpec) -> Result<Plan> {
    q.filter.check_near()?;
    if let Some((path, near)) = q.filter.near() {
        return near_plan(meta, q, path, near);
    }
    if let Some(hint) = &q.hint {
        return plan_hinted(meta, q, hint);
    }
    let preds = q.filter.top_level_predicates();
    let coll = q.filter.collation().map(|c| &**c);
    let id_coll = match meta.index(crate::catalog::ID_INDEX_NAME) {
        Some(id) => index_collation(id)?,
        None => None,
    };
    if let Some(intervals) = point_intervals(&preds, "_id")
        && serves(id_coll.as_deref(), coll, &intervals)
    {
        return Ok(records_plan(intervals, q, id_coll.as_deref()));
    }
    if let Some(plan) = geo_plan(meta, q, None) {
        return Ok(plan);
    }
    let mut usable = Vec::new();
    for index in meta.indexes.iter().filter(|i| general_purpose(i)) {
        let index_coll = index_collation(index)?;
        if holds_every_match(index, index_coll.clone(), &q.filter) {
            usable.push((index, index_coll));
        }
    }
    for want_points in [true, false] {
        if !want_points && let Some(plan) = hashed_plan(meta, q, None) {
            return Ok(plan);
        }
        for (index, index_coll) in &usable {
            let field = leading_field(index);
            let intervals = if want_points {
                point_intervals(&preds, &field)
            } else {
                range_intervals(&preds, &field, coll).or_else(|| regex_intervals(&preds, &field))
            };
            if let Some(intervals) = intervals
                && serves(index_coll.as_deref(), coll, &intervals)
            {
                return Ok(index_plan(index, intervals, q));
            }
        }
        let kind = match want_points {
            true => wildcard::Kind::Points,
            false => wildcard::Kind::Ranges,
        };
        if let Some(plan) = wildcard::chosen(meta, q, kind)? {
            return Ok(plan);
        }
    }
    if let Some(sort) = &q.sort {
        for (index, index_coll) in &usable {
            if let Some(dir) = sort_direction(index, sort)
                && collation::same(index_coll.as_deref(), sort.collation().map(|c| &**c))
            {
                return Ok(whole_index_plan(index, dir, true));
            }
        }
    }
    Ok(collscan(meta, Direction::Forward))
}

/// The index a hint names (None for `$natural`); BadHint when there is
/// no such index or it is hidden (a hidden index cannot be hinted, as in
/// mongod: jstests/core/index/hidden_index.js, timeseries_index.js).
pub(crate) fn hinted_index<'m>(
    meta: &'m CollectionMeta,
    hint: &Hint,
) -> Result<Option<&'m IndexMeta>> {
    // mongod's `{<meta>: 1, <time>: 1}` index is ebb's internal one.
    let meta_time = TimeseriesOptions::from_stored(&meta.options)
        .and_then(|ts| ts_index::meta_time_index(&ts))
        .filter(|(name, key)| match hint {
            Hint::Name(n) => n == name,
            Hint::KeyPattern(k) => k == key,
            Hint::Natural(_) => false,
        });
    if meta_time.is_some() {
        return Ok(meta.index(META_INDEX));
    }
    let index = match hint {
        Hint::Natural(_) => return Ok(None),
        Hint::Name(name) => meta.indexes.iter().find(|i| &i.name == name),
        // A time-series index is also named by the user's key pattern.
        Hint::KeyPattern(key) => meta
            .indexes
            .iter()
            .find(|i| &i.key == key || ts_index::user_key(i) == Some(key)),
    };
    match index.filter(|i| !i.hidden) {
        Some(index) => Ok(Some(index)),
        None => Err(Error::new(
            ErrorKind::BadHint,
            "hint provided does not correspond to an existing index",
        )),
    }
}

fn plan_hinted(meta: &CollectionMeta, q: &QuerySpec, hint: &Hint) -> Result<Plan> {
    if let Hint::Natural(dir) = hint {
        return Ok(collscan(meta, *dir));
    }
    let Some(index) = hinted_index(meta, hint)? else {
        return Ok(collscan(meta, Direction::Forward));
    };
    // A time-series index holds buckets: the filter's bounds are on
    // measurements, so the hinted index is read whole
    // (`timeseries::prune` keeps this plan).
    if ts_index::user_key(index).is_some() || index.name == META_INDEX {
        return Ok(whole_index_plan(index, Direction::Forward, false));
    }
    // A geo index's keys are cells: its ranges come from a geo predicate,
    // else it is read whole (every document with a location).
    if index.is_geo() {
        return Ok(geo_plan(meta, q, Some(index))
            .unwrap_or_else(|| whole_index_plan(index, Direction::Forward, false)));
    }
    // A wildcard index's keys are paths and values: a predicate on a path
    // it holds finds them.
    if index.is_wildcard() {
        return wildcard::hinted(index, q);
    }
    // A hashed index's keys are hashes: only equality finds them.
    if index.is_hashed() {
        return Ok(hashed_plan(meta, q, Some(index))
            .unwrap_or_else(|| whole_index_plan(index, Direction::Forward, false)));
    }
    let preds = q.filter.top_level_predicates();
    let field = leading_field(index);
    let coll = q.filter.collation().map(|c| &**c);
    let index_coll = index_collation(index)?;
    let intervals = point_intervals(&preds, &field)
        .or_else(|| range_intervals(&preds, &field, coll))
        .or_else(|| regex_intervals(&preds, &field))
        .filter(|iv| serves(index_coll.as_deref(), coll, iv));
    match intervals {
        Some(intervals) => Ok(index_plan(index, intervals, q)),
        None => {
            let dir = q
                .sort
                .as_ref()
                .filter(|s| collation::same(index_coll.as_deref(), s.collation().map(|c| &**c)))
                .and_then(|s| sort_direction(index, s));
            Ok(whole_index_plan(
                index,
                dir.unwrap_or(Direction::Forward),
                dir.is_some(),
            ))
        }
    }
}

/// An index the planner may choose by itself: not hidden, not sparse, and
/// over documents (a time-series index and ebb's internal ones are over
/// buckets: `timeseries::prune` chooses those).
fn general_purpose(i: &IndexMeta) -> bool {
    !i.hidden
        && !i.sparse
        && ts_index::user_key(i).is_none()
        && !i.is_internal()
        && !i.is_geo()
        && !i.is_hashed()
        && !i.is_text()
        && !i.is_wildcard()
}

/// A plan over a `hashed` index (the one `hinted`, or the first that
/// holds every match) for an equality or `$in` on its field: a point per
/// value's hash; the filter decides each candidate, as two values may
/// share a hash (2.1 and 2.9 do). `{field: null}` also finds documents
/// without the field, whose entry is null's hash, and `undefined`'s.
fn hashed_plan(meta: &CollectionMeta, q: &QuerySpec, hinted: Option<&IndexMeta>) -> Option<Plan> {
    // A collation compares strings by their sort keys; the hashes are of
    // the strings themselves.
    if q.filter.collation().is_some() {
        return None;
    }
    let preds = q.filter.top_level_predicates();
    let candidates: Vec<&IndexMeta> = match hinted {
        Some(index) => vec![index],
        None => meta
            .indexes
            .iter()
            .filter(|i| i.is_hashed() && !i.hidden && holds_every_match(i, None, &q.filter))
            .collect(),
    };
    for index in candidates {
        let field = leading_field(index);
        for (path, pred) in &preds {
            if *path != field {
                continue;
            }
            let values: Vec<RawBsonRef<'_>> = match pred {
                Pred::Eq(v) => vec![v.as_raw_bson_ref()],
                Pred::In(vs) if !vs.is_empty() => vs.iter().map(RawBson::as_raw_bson_ref).collect(),
                _ => continue,
            };
            let null = values.iter().any(|v| matches!(v, RawBsonRef::Null));
            // An array is never at a hashed field, and a pattern is no
            // value to hash; a sparse index has no entry for a missing field.
            if values
                .iter()
                .any(|v| matches!(v, RawBsonRef::Array(_) | RawBsonRef::RegularExpression(_)))
                || (null && index.sparse)
            {
                continue;
            }
            let mut hashes: Vec<i64> = values.iter().map(|v| hashed::hash64(*v)).collect();
            if null {
                hashes.push(hashed::hash64(RawBsonRef::Undefined));
            }
            hashes.sort_unstable();
            hashes.dedup();
            let ranges = hashes
                .iter()
                .map(|h| {
                    let key = hash_key(*h);
                    let upper = keycode::prefix_successor(&key);
                    KeyRange::new(key, upper)
                })
                .collect();
            let shown = hashes.iter().map(|h| format!("[{h}, {h}]")).collect();
            return Some(candidates_plan(index, ranges, &field, shown));
        }
    }
    None
}

/// The candidates of a `$near` or `$nearSphere` on `path`: the cells of
/// the circle its `$maxDistance` draws, or, without one, the whole geo
/// index on the path; ordering them by distance is the caller's (the
/// filter bounds each candidate's). A `2dsphere` index serves a search on
/// the sphere, a `2d` index one on the plane or one on the sphere from a
/// legacy pair; without such an index, mongod's 291.
fn near_plan(meta: &CollectionMeta, q: &QuerySpec, path: &str, near: &Near) -> Result<Plan> {
    let radius = near.max.map(|max| match near.geojson {
        true => max / ebb_lang::geo::EARTH_RADIUS_METERS,
        false => max,
    });
    near_plan_within(meta, q, path, near, radius)
}

/// The geo index a `$near` on `path` reads, if there is one.
fn near_index<'a>(
    meta: &'a CollectionMeta,
    q: &QuerySpec,
    path: &str,
    near: &Near,
) -> Option<&'a IndexMeta> {
    let usable = |i: &&IndexMeta| {
        !i.hidden && i.geo_field() == Some(path) && holds_every_match(i, None, &q.filter)
    };
    let sphere = || {
        meta.indexes
            .iter()
            .filter(usable)
            .find(|i| i.is_sphere() && near.spherical)
    };
    let flat = || {
        meta.indexes
            .iter()
            .filter(usable)
            .find(|i| i.is_flat() && !near.geojson)
    };
    sphere().or_else(flat)
}

/// How far a widening `$near` search on `path` starts (its first radius)
/// and how far it must reach to have read everything, in the units of its
/// plan's radius: radians on the sphere, the grid's units on the plane.
pub fn near_reach(meta: &CollectionMeta, q: &QuerySpec, path: &str, near: &Near) -> (f64, f64) {
    match near_index(meta, q, path, near).and_then(Grid::of) {
        Some(grid) if !near.spherical => {
            let width = grid.width();
            (width / 65_536.0, width * std::f64::consts::SQRT_2)
        }
        _ => (1e-4, std::f64::consts::PI),
    }
}

/// The plan of a `$near` (as [`plan`] makes it) within `radius` of the
/// center (`None`: everywhere; radians on the sphere, the grid's units on
/// the plane), for a caller that widens the search until it has the
/// nearest it needs.
pub fn near_plan_within(
    meta: &CollectionMeta,
    q: &QuerySpec,
    path: &str,
    near: &Near,
    radius: Option<f64>,
) -> Result<Plan> {
    let Some(index) = near_index(meta, q, path, near) else {
        return Err(Error::new(
            ErrorKind::NoQueryExecutionPlans,
            "error processing query: planner returned error :: caused by :: unable to find \
             index for $geoNear query",
        ));
    };
    let region = |radius: f64| match near.spherical {
        true => ebb_lang::geo::Region::Cap {
            center: near.center,
            radians: radius,
        },
        false => ebb_lang::geo::Region::Circle {
            center: near.center,
            radius,
        },
    };
    let whole = || Ok(whole_index_plan(index, Direction::Forward, false));
    let Some(radius) = radius else {
        return whole();
    };
    let (ranges, shown) = match Grid::of(index) {
        Some(grid) => match grid.bounds(&region(radius)) {
            Some((lo, hi)) => grid.ranges(lo, hi),
            None => return whole(),
        },
        None if radius >= std::f64::consts::PI => return whole(),
        None => geo::ranges(&geo::query_cells(Some(&region(radius)), None).unwrap_or_default()),
    };
    Ok(candidates_plan(index, ranges, path, shown))
}

/// A plan over a geo index for a `$geoWithin` or `$geoIntersects` on its
/// field: on a `2dsphere` index, the ranges of the S2 cells covering the
/// query's shape (`index::geo`); on a `2d` index, the grid cells covering
/// the region's bounds (`index::flat`). The filter decides each candidate.
fn geo_plan(meta: &CollectionMeta, q: &QuerySpec, index: Option<&IndexMeta>) -> Option<Plan> {
    let preds = q.filter.top_level_predicates();
    preds.iter().find_map(|(path, pred)| {
        let Pred::Geo(GeoPred(test)) = pred else {
            return None;
        };
        let ranges_on = |index: &IndexMeta| match (&**test, Grid::of(index)) {
            (GeoTest::Near(_), _) => None,
            (GeoTest::Within(region), Some(grid)) => {
                grid.bounds(region).map(|(lo, hi)| grid.ranges(lo, hi))
            }
            (GeoTest::Intersects(_), Some(_)) => None,
            (GeoTest::Within(region), None) => {
                geo::query_cells(Some(region), None).map(|c| geo::ranges(&c))
            }
            (GeoTest::Intersects(shape), None) => {
                geo::query_cells(None, Some(shape)).map(|c| geo::ranges(&c))
            }
        };
        let (index, (ranges, shown)) = match index {
            Some(hinted) => {
                let hinted = Some(hinted).filter(|i| i.geo_field() == Some(*path))?;
                (hinted, ranges_on(hinted)?)
            }
            None => meta
                .indexes
                .iter()
                .filter(|i| {
                    i.is_geo()
                        && !i.hidden
                        && i.geo_field() == Some(*path)
                        && holds_every_match(i, None, &q.filter)
                })
                .find_map(|i| Some((i, ranges_on(i)?)))?,
        };
        Some(candidates_plan(index, ranges, path, shown))
    })
}

/// [`Plan::candidates`] of a special index (geo cells, hashes) with
/// `shown` as the bounds on `field` (its other fields, a compound geo
/// index's, unbounded).
fn candidates_plan(
    index: &IndexMeta,
    ranges: Vec<KeyRange>,
    field: &str,
    shown: Vec<String>,
) -> Plan {
    let bounds = index
        .key
        .keys()
        .map(|k| match k == field {
            true => (k.clone(), shown.clone()),
            false => (k.clone(), vec!["[MinKey, MaxKey]".to_owned()]),
        })
        .collect();
    Plan::candidates(index, ranges, bounds)
}

fn leading_field(index: &IndexMeta) -> String {
    index.key.keys().next().cloned().unwrap_or_default()
}

/// A collection scan: in `_id` order, or in insertion order on a capped
/// collection (its natural order, as mongod's).
fn collscan(meta: &CollectionMeta, dir: Direction) -> Plan {
    let access = match meta.natural {
        Some(_) => Access::Natural { dir },
        None => Access::Records {
            ranges: vec![KeyRange::all()],
            dir,
        },
    };
    Plan {
        access,
        sorted_by_access: false,
        bounds: Vec::new(),
        stage: "COLLSCAN",
    }
}

/// Whether scanning `index` in some direction yields `sort`'s order:
/// the sort is a prefix of the key pattern with all directions equal or
/// all reversed.
fn sort_direction(index: &IndexMeta, sort: &SortSpec) -> Option<Direction> {
    let fields = index.fields();
    let wanted = sort.fields();
    if wanted.is_empty() || wanted.len() > fields.len() {
        return None;
    }
    let same = wanted
        .iter()
        .zip(&fields)
        .all(|((p, a), (q, b))| p == q && a == b);
    let reversed = wanted
        .iter()
        .zip(&fields)
        .all(|((p, a), (q, b))| p == q && a != b);
    match (same, reversed) {
        (true, _) => Some(Direction::Forward),
        (_, true) => Some(Direction::Reverse),
        _ => None,
    }
}

fn whole_index_plan(index: &IndexMeta, dir: Direction, sorted: bool) -> Plan {
    let bounds = index
        .fields()
        .into_iter()
        .map(|(f, _)| (f, vec!["[MinKey, MaxKey]".to_owned()]))
        .collect();
    if index.is_id_index() {
        return Plan {
            access: Access::Records {
                ranges: vec![KeyRange::all()],
                dir,
            },
            sorted_by_access: sorted,
            bounds,
            stage: "IXSCAN",
        };
    }
    Plan {
        access: Access::Index {
            index: Box::new(index.clone()),
            ranges: vec![KeyRange::all()],
            dir,
        },
        sorted_by_access: sorted,
        bounds,
        stage: "IXSCAN",
    }
}

/// A plan over `index` for `intervals` of its leading field. The caller
/// checked ([`serves`]) that the query's collation encodes the bounds as
/// the index does.
fn index_plan(index: &IndexMeta, intervals: Vec<Interval>, q: &QuerySpec) -> Plan {
    let descending = !index.fields().first().is_some_and(|(_, asc)| *asc);
    let coll = q.filter.collation().map(|c| &**c);
    let index_coll = index_collation(index).ok().flatten();
    let sort_dir = q.sort.as_ref().and_then(|s| {
        // Only a sort on the leading field alone is served by a ranged scan:
        // later fields are ordered only within one leading value.
        (s.fields().len() == 1
            && collation::same(index_coll.as_deref(), s.collation().map(|c| &**c)))
        .then(|| sort_direction(index, s))
        .flatten()
    });
    let dir = sort_dir.unwrap_or(Direction::Forward);
    let mut ranges: Vec<KeyRange> = intervals
        .iter()
        .map(|iv| key_range(iv, descending, coll))
        .collect();
    ranges.sort_by(|a, b| a.lower.cmp(&b.lower));
    if dir == Direction::Reverse {
        ranges.reverse();
    }
    let mut bounds = vec![(
        leading_field(index),
        intervals.iter().map(|iv| show(iv, descending)).collect(),
    )];
    bounds.extend(
        index
            .fields()
            .into_iter()
            .skip(1)
            .map(|(f, _)| (f, vec!["[MinKey, MaxKey]".to_owned()])),
    );
    if index.is_id_index() {
        return Plan {
            access: Access::Records { ranges, dir },
            sorted_by_access: sort_dir.is_some(),
            bounds,
            stage: "IXSCAN",
        };
    }
    Plan {
        access: Access::Index {
            index: Box::new(index.clone()),
            ranges,
            dir,
        },
        sorted_by_access: sort_dir.is_some(),
        bounds,
        stage: "IXSCAN",
    }
}

/// `_id` point lookups in the records family, whose keys are in the
/// `_id` collation `id_coll` (the caller checked that it serves them).
fn records_plan(intervals: Vec<Interval>, q: &QuerySpec, id_coll: Option<&Collation>) -> Plan {
    let coll = q.filter.collation().map(|c| &**c);
    let mut ranges: Vec<KeyRange> = intervals
        .iter()
        .map(|iv| key_range(iv, false, coll))
        .collect();
    ranges.sort_by(|a, b| a.lower.cmp(&b.lower));
    let sorted = q.sort.as_ref().is_some_and(|s| {
        s.fields() == [("_id".to_owned(), true)]
            && collation::same(id_coll, s.collation().map(|c| &**c))
    });
    Plan {
        access: Access::Records {
            ranges,
            dir: Direction::Forward,
        },
        sorted_by_access: sorted,
        bounds: vec![(
            "_id".to_owned(),
            intervals.iter().map(|iv| show(iv, false)).collect(),
        )],
        stage: "IDHACK",
    }
}
