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

use crate::catalog::{CollectionMeta, IndexMeta};
use crate::engine::{Direction, KeyRange};
use crate::index::flat::Grid;
use crate::index::{geo, hash_key};
use crate::timeseries::index as ts_index;
use crate::timeseries::options::{META_INDEX, TimeseriesOptions};
use ebb_lang::encoding::collation::{self, Collation};
use ebb_lang::encoding::{bracket, hashed, keycode};
use ebb_lang::error::{Error, ErrorKind, Result};
use ebb_lang::query::filter::{Filter, GeoPred, GeoTest, Near, Pred};
use ebb_lang::query::regex::prefix_upper_bound;
use ebb_lang::query::sort::SortSpec;
use ebb_lang::query::value::ordered_scalar;

/// What the client asked for, already parsed.
#[derive(Debug, Clone)]
pub struct QuerySpec {
    pub filter: Filter,
    pub sort: Option<SortSpec>,
    pub hint: Option<Hint>,
}

impl QuerySpec {
    /// The query comparing strings by `collation` in its filter and sort.
    pub fn collated(mut self, collation: Option<std::sync::Arc<Collation>>) -> QuerySpec {
        self.sort = self.sort.map(|s| s.collated(collation.clone()));
        self.filter = self.filter.collated(collation);
        self
    }
}

/// A `hint`.
#[derive(Debug, Clone, PartialEq)]
pub enum Hint {
    Name(String),
    KeyPattern(bson::Document),
    /// `{$natural: 1}` / `{$natural: -1}`: a collection scan in that order.
    Natural(Direction),
}

/// How documents are reached.
#[derive(Debug, Clone, PartialEq)]
pub enum Access {
    /// Ranges of the records column family (`_id` order); no fetch needed.
    Records {
        ranges: Vec<KeyRange>,
        dir: Direction,
    },
    /// Ranges of a secondary index; each entry's `_id` is fetched.
    Index {
        index: Box<IndexMeta>,
        ranges: Vec<KeyRange>,
        dir: Direction,
    },
    /// A capped collection's insertion order (`capped::order`): its
    /// collection scan; each entry's record is fetched.
    Natural { dir: Direction },
}

/// A chosen plan.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    pub access: Access,
    /// Whether the access path already yields the requested sort order.
    pub sorted_by_access: bool,
    /// Bounds per key field, in MongoDB's explain notation.
    pub bounds: Vec<(String, Vec<String>)>,
    /// For explain: the stage name (`COLLSCAN`, `IXSCAN`, `IDHACK`).
    pub stage: &'static str,
}

impl Plan {
    pub fn index_name(&self) -> Option<&str> {
        match &self.access {
            Access::Index { index, .. } => Some(&index.name),
            Access::Records { .. } if self.stage != "COLLSCAN" => {
                Some(crate::catalog::ID_INDEX_NAME)
            }
            Access::Records { .. } | Access::Natural { .. } => None,
        }
    }
}

/// One end of a value interval.
#[derive(Debug, Clone, PartialEq)]
enum End {
    /// The end of the value's type bracket.
    Open,
    Incl(RawBson),
    Excl(RawBson),
}

/// A set of values of one type bracket: `(lower, upper)`.
#[derive(Debug, Clone, PartialEq)]
struct Interval {
    tag: u8,
    lower: End,
    upper: End,
    /// Bounds in byte order whatever the query's collation (a regex
    /// prefix: regexes never use a collation), so only an index without
    /// one can serve them.
    binary: bool,
}

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

/// The collation an index's keys are ordered by (for `_id_`, the records
/// family's: the collection's default collation).
pub(crate) fn index_collation(index: &IndexMeta) -> Result<Option<std::sync::Arc<Collation>>> {
    index.collation()
}

/// Whether an index in collation `index` can serve these bounds of a query
/// in collation `query`: always when they are the same, and otherwise
/// when no bound is a string (other values are keyed alike in every
/// collation).
fn serves(index: Option<&Collation>, query: Option<&Collation>, intervals: &[Interval]) -> bool {
    if intervals.iter().any(|iv| iv.binary) {
        return index.is_none();
    }
    collation::same(index, query) || intervals.iter().all(|iv| iv.tag != bracket::TAG_STRING)
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
        !i.hidden && leading_field(i) == path && holds_every_match(i, None, &q.filter)
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
                let hinted = Some(hinted).filter(|i| leading_field(i) == *path)?;
                (hinted, ranges_on(hinted)?)
            }
            None => meta
                .indexes
                .iter()
                .filter(|i| {
                    i.is_geo()
                        && !i.hidden
                        && leading_field(i) == *path
                        && holds_every_match(i, None, &q.filter)
                })
                .find_map(|i| Some((i, ranges_on(i)?)))?,
        };
        Some(candidates_plan(index, ranges, path, shown))
    })
}

/// A forward scan of `ranges` of a special index (geo cells, hashes) for
/// candidates the filter then decides, in no useful order; explain shows
/// `shown` as the bounds on `field`.
fn candidates_plan(
    index: &IndexMeta,
    ranges: Vec<KeyRange>,
    field: &str,
    shown: Vec<String>,
) -> Plan {
    Plan {
        access: Access::Index {
            index: Box::new(index.clone()),
            ranges,
            dir: Direction::Forward,
        },
        sorted_by_access: false,
        bounds: vec![(field.to_owned(), shown)],
        stage: "IXSCAN",
    }
}

/// Whether `index` holds every document `filter` can match: it has no
/// partial filter, or `filter` implies it (compared, as the index's
/// entries were, under the index's collation `index_coll`).
fn holds_every_match(
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

/// Whether an index can look this value up (anything else falls back to
/// a scan).
fn indexable(v: &RawBson) -> bool {
    ordered_scalar(v.as_raw_bson_ref())
}

fn tag_of(v: &RawBson) -> u8 {
    let mut buf = Vec::with_capacity(16);
    keycode::encode_value(&mut buf, v.as_raw_bson_ref());
    buf[0]
}

/// Equality / `$in` on `path` as point intervals, if every value is
/// indexable.
fn point_intervals(preds: &[(&str, &Pred)], path: &str) -> Option<Vec<Interval>> {
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
fn range_intervals(
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
fn regex_intervals(preds: &[(&str, &Pred)], path: &str) -> Option<Vec<Interval>> {
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
fn key_range(iv: &Interval, descending: bool, coll: Option<&Collation>) -> KeyRange {
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
fn show(iv: &Interval, descending: bool) -> String {
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
