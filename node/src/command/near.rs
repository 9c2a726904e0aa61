//! Results nearest first: a `find` whose filter has `$near` or
//! `$nearSphere`, and the `$geoNear` stage (its options, and the distance
//! and location it sets on each document). The planner narrows the
//! candidates with the geo index on the path (the circle of
//! `$maxDistance`, or the whole index); the filter admits those within the
//! distances; this orders them by the distance of each document's nearest
//! location, on one snapshot.

use std::sync::Arc;

use bson::RawDocumentBuf;
use ebb_lang::geo::{EARTH_RADIUS_METERS, stored_shapes};
use ebb_lang::query::filter::Near;
use ebb_lang::query::path::{LeafArray, any_candidate};
use ebb_storage::Collection;
use ebb_storage::plan::exec::{BatchLimits, QueryCursor};
use ebb_storage::plan::{self, Plan, QuerySpec};

use crate::context::NodeContext;
use crate::error::{CommandError, CommandResult, codes};

/// The documents `spec` matches over `plan`, each with its distance from
/// the center of `near` (on `path`), nearest first; at most `keep` of
/// them when it is given. With `keep` and no `$maxDistance`, the search
/// starts near the center (`plan::near_reach`) and widens (the radius four
/// times over) until it holds `keep` documents no farther than its radius,
/// each of which is then nearer than anything outside it; every search
/// reads one snapshot.
pub async fn ordered(
    node: &Arc<NodeContext>,
    coll: &Arc<Collection>,
    plan: Plan,
    spec: QuerySpec,
    max_time: Option<std::time::Duration>,
    (path, near): (String, Near),
    keep: Option<u64>,
) -> CommandResult<Vec<(f64, RawDocumentBuf)>> {
    let keep = keep.map(|k| usize::try_from(k).unwrap_or(usize::MAX));
    let widening = keep.filter(|_| near.max.is_none());
    let coll = coll.clone();
    let found = node
        .scan(move |snap| {
            let Some(wanted) = widening else {
                return Ok(gather(snap, &coll, plan, &spec, max_time, &path, &near)?);
            };
            // The radius, four times over until the circle holds enough
            // (or everything).
            let (mut radius, everything) = plan::near_reach(&coll.meta, &spec, &path, &near);
            let unit = if near.geojson {
                EARTH_RADIUS_METERS
            } else {
                1.0
            };
            loop {
                let whole = radius >= everything;
                let within = (!whole).then_some(radius);
                let plan = plan::near_plan_within(&coll.meta, &spec, &path, &near, within)?;
                let mut found = gather(snap, &coll, plan, &spec, max_time, &path, &near)?;
                found.retain(|(d, _)| whole || *d <= radius * unit);
                if whole || found.len() >= wanted {
                    return Ok(found);
                }
                radius *= 4.0;
            }
        })
        .await?;
    let mut found = found;
    found.sort_by(|a, b| a.0.total_cmp(&b.0));
    if let Some(keep) = keep {
        found.truncate(keep);
    }
    Ok(found)
}

/// Every document `plan` and the filter of `spec` give, with its distance.
fn gather(
    snap: &dyn ebb_storage::engine::Snapshot,
    coll: &Arc<Collection>,
    plan: Plan,
    spec: &QuerySpec,
    max_time: Option<std::time::Duration>,
    path: &str,
    near: &Near,
) -> ebb_storage::Result<Vec<(f64, RawDocumentBuf)>> {
    let mut query =
        QueryCursor::new(coll, plan, spec.filter.clone(), None, 0, None)?.with_time_limit(max_time);
    let limits = BatchLimits {
        max_docs: usize::MAX,
        max_bytes: usize::MAX,
    };
    let mut out = Vec::new();
    while !query.exhausted() {
        for f in query.next_batch(snap, limits)? {
            out.push((distance(&f.doc, path, near), f.doc));
        }
    }
    Ok(out)
}

/// The distance of the nearest location of `doc` at `path` (infinite when
/// it has none the query can measure).
pub fn distance(doc: &bson::RawDocument, path: &str, near: &Near) -> f64 {
    let mut nearest = f64::INFINITY;
    any_candidate(doc, path, LeafArray::Whole, &mut |value| {
        if let Some(Ok(Some(locations))) = value.map(stored_shapes) {
            for l in &locations {
                if let Some(d) = near.distance(l) {
                    nearest = nearest.min(d);
                }
            }
        }
        false
    });
    nearest
}

/// A parsed `$geoNear` stage.
pub struct GeoNear {
    /// Its `query`, with the distance test on `key` added.
    filter: RawDocumentBuf,
    key: Option<String>,
    distance_field: String,
    include_locs: Option<String>,
    multiplier: f64,
}

const STAGE_FIELDS: &[&str] = &[
    "near",
    "distanceField",
    "spherical",
    "maxDistance",
    "minDistance",
    "query",
    "key",
    "includeLocs",
    "distanceMultiplier",
];

fn field_name(stage: &bson::RawDocument, field: &str) -> CommandResult<Option<String>> {
    match stage.get(field)? {
        None => Ok(None),
        Some(bson::RawBsonRef::String(s)) if !s.is_empty() && !s.starts_with('$') => {
            Ok(Some(s.to_owned()))
        }
        Some(_) => Err(CommandError::new(
            codes::TYPE_MISMATCH,
            format!("$geoNear requires that '{field}' be a field path without a leading '$'"),
        )),
    }
}

fn non_negative(stage: &bson::RawDocument, field: &str) -> CommandResult<Option<f64>> {
    match stage.get(field)? {
        None => Ok(None),
        Some(v) => match crate::args::as_f64(v) {
            Some(n) if n >= 0.0 => Ok(Some(n)),
            _ => Err(CommandError::bad_value(format!(
                "$geoNear's {field} must be a non-negative number"
            ))),
        },
    }
}

/// Parses `{$geoNear: {...}}` (the stage's document).
pub fn parse_geo_near(spec: bson::RawBsonRef<'_>) -> CommandResult<GeoNear> {
    let bson::RawBsonRef::Document(stage) = spec else {
        return Err(CommandError::new(
            codes::FAILED_TO_PARSE,
            "$geoNear must be an object",
        ));
    };
    for el in stage.iter() {
        let (k, _) = el?;
        if !STAGE_FIELDS.contains(&k.as_str()) {
            return Err(CommandError::new(
                codes::UNKNOWN_FIELD,
                format!("BSON field '$geoNear.{}' is an unknown field.", k.as_str()),
            ));
        }
    }
    let Some(distance_field) = field_name(stage, "distanceField")? else {
        return Err(CommandError::new(
            codes::FAILED_TO_PARSE,
            "$geoNear requires a 'distanceField' option as a String",
        ));
    };
    let Some(near) = stage.get("near")? else {
        return Err(CommandError::new(
            codes::FAILED_TO_PARSE,
            "$geoNear requires a 'near' option as an Array",
        ));
    };
    let geojson =
        matches!(near, bson::RawBsonRef::Document(d) if d.get("type").ok().flatten().is_some());
    let spherical = match stage.get("spherical")? {
        None => false,
        Some(bson::RawBsonRef::Boolean(b)) => b,
        Some(_) => {
            return Err(CommandError::new(
                codes::TYPE_MISMATCH,
                "$geoNear requires that 'spherical' be a boolean",
            ));
        }
    };
    let (max, min) = (
        non_negative(stage, "maxDistance")?,
        non_negative(stage, "minDistance")?,
    );
    // A GeoJSON point measures in meters on the sphere; a legacy pair in
    // radians on the sphere (`spherical`) or on the plane.
    let near = bson::Bson::try_from(near)?;
    let mut test = bson::Document::new();
    let op = if geojson || spherical {
        "$nearSphere"
    } else {
        "$near"
    };
    let bounds = |d: &mut bson::Document| {
        if let Some(m) = max {
            d.insert("$maxDistance", m);
        }
        if let Some(m) = min {
            d.insert("$minDistance", m);
        }
    };
    match geojson {
        true => {
            let mut inner = bson::doc! { "$geometry": near };
            bounds(&mut inner);
            test.insert(op, inner);
        }
        false => {
            test.insert(op, near);
            bounds(&mut test);
        }
    }
    let query = match stage.get("query")? {
        None => bson::rawdoc! {},
        Some(bson::RawBsonRef::Document(q)) => q.to_owned(),
        Some(_) => {
            return Err(CommandError::new(
                codes::TYPE_MISMATCH,
                "$geoNear requires that 'query' be an object",
            ));
        }
    };
    Ok(GeoNear {
        filter: bson::RawDocumentBuf::try_from(
            &bson::doc! { "query": bson::Document::try_from(query.as_ref())?, "test": test },
        )?,
        key: field_name(stage, "key")?,
        distance_field,
        include_locs: field_name(stage, "includeLocs")?,
        multiplier: non_negative(stage, "distanceMultiplier")?.unwrap_or(1.0),
    })
}

/// The documents a `$geoNear` stage yields on `db.coll`: nearest first,
/// with their distance (and location, when asked) set.
pub async fn geo_near(
    req: &super::Request,
    coll_name: &str,
    stage: GeoNear,
    env: &ebb_lang::pipeline::Env,
    collation: Option<Arc<ebb_lang::encoding::collation::Collation>>,
    max_time: Option<std::time::Duration>,
) -> CommandResult<Vec<RawDocumentBuf>> {
    let no_index = || {
        CommandError::new(
            codes::INDEX_NOT_FOUND,
            "$geoNear requires a 2d or 2dsphere index, but none were found",
        )
    };
    let Some(entry) = req.node.collection(&req.db, coll_name) else {
        return Err(no_index());
    };
    let geo: Vec<&str> = entry
        .coll
        .meta
        .indexes
        .iter()
        .filter_map(|i| i.geo_field())
        .collect();
    let key = match (&stage.key, geo.as_slice()) {
        (Some(k), _) if geo.contains(&k.as_str()) => k.clone(),
        (Some(k), _) => {
            return Err(CommandError::new(
                codes::INDEX_NOT_FOUND,
                format!("$geoNear found no 2d or 2dsphere index on the key '{k}'"),
            ));
        }
        (None, [one]) => (*one).to_owned(),
        (None, []) => return Err(no_index()),
        (None, _) => {
            return Err(CommandError::new(
                codes::INDEX_NOT_FOUND,
                format!(
                    "There is more than one 2d or 2dsphere index on {}.{coll_name}; unsure which \
                     to use for $geoNear",
                    req.db
                ),
            ));
        }
    };
    let test = stage.filter.get_document("test")?;
    let query = stage.filter.get_document("query")?;
    let mut on_key = bson::Document::new();
    on_key.insert(key.clone(), bson::Document::try_from(test)?);
    let filter_doc = bson::RawDocumentBuf::try_from(&bson::doc! {
        "$and": [bson::Document::try_from(query)?, on_key],
    })?;
    let spec = QuerySpec {
        filter: super::query::filter(Some(&filter_doc), env)?,
        sort: None,
        hint: None,
    }
    .collated(collation);
    let Some((_, near)) = spec.filter.near() else {
        return Err(CommandError::internal());
    };
    let near_test = *near;
    let near = (key.clone(), near_test);
    let plan = match ebb_storage::plan::plan(&entry.coll.meta, &spec) {
        Err(e) if e.kind == ebb_storage::ErrorKind::NoQueryExecutionPlans => return Err(no_index()),
        other => other?,
    };
    let found = ordered(&req.node, &entry.coll, plan, spec, max_time, near, None).await?;
    found
        .into_iter()
        .map(|(d, doc)| {
            let mut out = bson::Document::try_from(doc.as_ref())?;
            if let Some(locs) = &stage.include_locs
                && let Some(v) = location_value(&doc, &key, &near_test)
            {
                set_path(&mut out, locs, v);
            }
            set_path(
                &mut out,
                &stage.distance_field,
                bson::Bson::Double(d * stage.multiplier),
            );
            Ok(RawDocumentBuf::try_from(&out)?)
        })
        .collect()
}

/// The location `includeLocs` shows: the value at `path`, or, for a list
/// of locations there, the one nearest the center.
fn location_value(doc: &bson::RawDocument, path: &str, near: &Near) -> Option<bson::Bson> {
    let mut found = None;
    any_candidate(doc, path, LeafArray::Whole, &mut |v| {
        found = v.map(|v| nearest_of(v, near));
        found.is_some()
    });
    found.flatten()
}

fn nearest_of(value: bson::RawBsonRef<'_>, near: &Near) -> Option<bson::Bson> {
    let measure = |v: bson::RawBsonRef<'_>| -> Option<f64> {
        let locations = stored_shapes(v).ok()??;
        let ds = locations.iter().filter_map(|l| near.distance(l));
        ds.reduce(f64::min)
    };
    let one_location = matches!(value, bson::RawBsonRef::Document(_))
        || stored_shapes(value)
            .ok()
            .flatten()
            .is_some_and(|l| l.len() == 1);
    let bson::RawBsonRef::Array(items) = value else {
        return bson::Bson::try_from(value).ok();
    };
    if one_location {
        return bson::Bson::try_from(value).ok();
    }
    let mut best: Option<(f64, bson::RawBsonRef<'_>)> = None;
    for item in items.into_iter().flatten() {
        if let Some(d) = measure(item)
            && best.is_none_or(|(b, _)| d < b)
        {
            best = Some((d, item));
        }
    }
    best.and_then(|(_, v)| bson::Bson::try_from(v).ok())
}

/// Sets dotted `path` of `doc` to `value`, making the documents on the way.
fn set_path(doc: &mut bson::Document, path: &str, value: bson::Bson) {
    match path.split_once('.') {
        None => {
            doc.insert(path, value);
        }
        Some((head, rest)) => {
            if !matches!(doc.get(head), Some(bson::Bson::Document(_))) {
                doc.insert(head, bson::Document::new());
            }
            if let Some(bson::Bson::Document(inner)) = doc.get_mut(head) {
                set_path(inner, rest, value);
            }
        }
    }
}
