//! Which buckets a query on a time-series collection reads. Every
//! measurement read is still checked against the whole filter, so a plan
//! here only narrows the scan, as an index does for documents.
//!
//! A measurement at `t` lies in a bucket whose start is in `(t − span, t]`
//! (buckets never take a measurement outside their span), so a filter's
//! Date bounds `[lo, hi]` on the timeField become the bucket-start range
//! `(lo − span, hi]` of the internal `{control.min.<time>}` index; an
//! equality on the metaField becomes the prefix of the internal
//! `{meta, control.min.<time>}` index, with the same start range after it.
//! Otherwise a user's index led by the metaField (or a subfield; bucket
//! key `meta…`) serves that field's equality, `$in` or range as the
//! planner would serve it on documents (a bucket's `meta` is every one of
//! its measurements' metaField value); then the time bounds alone.
//! Anything else scans every bucket. A hinted user index (the planner
//! reads it whole) is kept as given, and so is the internal `{meta, time}`
//! index hinted as mongod's `{<meta>: 1, <time>: 1}`.
//!
//! It must not filter measurements (the cursor does).

use std::sync::Arc;

use bson::RawBson;

use crate::collection::Collection;
use crate::engine::{Direction, KeyRange};
use crate::plan::{self as planner, Access, Plan, QuerySpec};
use crate::timeseries::index::user_key;
use crate::timeseries::options::{META_INDEX, TIME_INDEX, TimeseriesOptions};
use ebb_lang::encoding::keycode;
use ebb_lang::query::filter::{Filter, Pred};

/// The plan of a query on a time-series collection's measurements;
/// `given` is the planner's, kept when it reads a hinted user index.
pub fn plan(
    coll: &Arc<Collection>,
    opts: &TimeseriesOptions,
    filter: &Filter,
    given: Plan,
) -> Plan {
    if let Access::Index { index, .. } = &given.access
        && (user_key(index).is_some() || index.name == META_INDEX)
    {
        return given;
    }
    let preds = filter.top_level_predicates();
    let (mut lo, mut hi) = (i64::MIN, i64::MAX);
    let mut meta: Option<&RawBson> = None;
    for (path, pred) in &preds {
        if *path == opts.time_field {
            match pred {
                Pred::Eq(RawBson::DateTime(d)) => {
                    lo = lo.max(d.timestamp_millis());
                    hi = hi.min(d.timestamp_millis());
                }
                Pred::Gt(RawBson::DateTime(d)) | Pred::Gte(RawBson::DateTime(d)) => {
                    lo = lo.max(d.timestamp_millis());
                }
                Pred::Lt(RawBson::DateTime(d)) | Pred::Lte(RawBson::DateTime(d)) => {
                    hi = hi.min(d.timestamp_millis());
                }
                _ => {}
            }
        } else if opts.meta_field.as_deref() == Some(*path)
            && let Pred::Eq(v) = pred
            && !matches!(v, RawBson::Array(_))
        {
            meta = Some(v);
        }
    }
    let bounded = lo > i64::MIN || hi < i64::MAX;
    if meta.is_none()
        && let Some(plan) = meta_index_plan(coll, opts, filter)
    {
        return plan;
    }
    let index = match (meta, bounded) {
        (Some(_), _) => coll.meta.index(META_INDEX),
        (None, true) => coll.meta.index(TIME_INDEX),
        (None, false) => None,
    };
    let Some(index) = index else {
        return Plan {
            access: Access::Records {
                ranges: vec![KeyRange::all()],
                dir: Direction::Forward,
            },
            sorted_by_access: false,
            bounds: Vec::new(),
            stage: "COLLSCAN",
        };
    };
    let span = opts.max_span_secs * 1000;
    let start_lo = if lo == i64::MIN {
        i64::MIN
    } else {
        lo.saturating_sub(span).saturating_add(1)
    };
    let mut lower = Vec::new();
    let mut upper = Vec::new();
    let mut bounds = Vec::new();
    if let Some(m) = meta {
        keycode::encode_value(&mut lower, m.as_raw_bson_ref());
        upper.clone_from(&lower);
        bounds.push((
            "meta".to_owned(),
            vec![format!(
                "[{}, {}]",
                ebb_lang::encoding::display::shell(
                    &bson::Bson::try_from(m.clone()).unwrap_or(bson::Bson::Null)
                ),
                ebb_lang::encoding::display::shell(
                    &bson::Bson::try_from(m.clone()).unwrap_or(bson::Bson::Null)
                )
            )],
        ));
    }
    let (date_lo, date_hi) = keycode::date_range_up_to(hi, false);
    if start_lo == i64::MIN {
        lower.extend_from_slice(&date_lo);
    } else {
        keycode::encode_date(&mut lower, start_lo);
    }
    upper.extend_from_slice(&date_hi);
    bounds.push((
        opts.min_time_path(),
        vec![format!("[{}, {}]", show_date(start_lo), show_date(hi))],
    ));
    Plan {
        access: Access::Index {
            index: Box::new(index.clone()),
            ranges: vec![KeyRange::new(lower, Some(upper))],
            dir: Direction::Forward,
        },
        sorted_by_access: false,
        bounds,
        stage: "IXSCAN",
    }
}

fn show_date(millis: i64) -> String {
    match millis {
        i64::MIN => "MinKey".to_owned(),
        i64::MAX => "MaxKey".to_owned(),
        m => ebb_lang::encoding::display::shell(&bson::Bson::DateTime(
            bson::DateTime::from_millis(m),
        )),
    }
}

/// A scan of a user's index led by the metaField or one of its
/// subfields, for the filter's predicates on that field: the planner runs
/// on stand-ins carrying the user's key patterns (a bucket's `meta` value
/// is its measurements' metaField value, so the bounds are the same
/// bytes), then the real bucket index is put back in the plan.
fn meta_index_plan(coll: &Collection, opts: &TimeseriesOptions, filter: &Filter) -> Option<Plan> {
    let meta = opts.meta_field.as_deref()?;
    let led_by_meta = |k: &bson::Document| {
        k.keys()
            .next()
            .is_some_and(|f| f == meta || f.strip_prefix(meta).is_some_and(|r| r.starts_with('.')))
    };
    let candidates: Vec<_> = coll
        .meta
        .indexes
        .iter()
        .filter(|i| user_key(i).is_some_and(led_by_meta))
        .collect();
    if candidates.is_empty() {
        return None;
    }
    let mut stand_ins = coll.meta.clone();
    stand_ins.indexes = candidates
        .iter()
        .map(|i| {
            let mut s = (*i).clone();
            s.key = user_key(i).cloned().unwrap_or_default();
            s.extra.remove(crate::timeseries::index::USER_SPEC);
            s
        })
        .collect();
    let q = QuerySpec {
        filter: filter.clone(),
        sort: None,
        hint: None,
    };
    let plan = planner::plan(&stand_ins, &q).ok()?;
    let Access::Index { index, ranges, dir } = plan.access else {
        return None;
    };
    let real = candidates.into_iter().find(|i| i.name == index.name)?;
    let mut fields = real.key.keys();
    let mut bounds = Vec::new();
    if let (Some(first), Some((_, shown))) = (fields.next(), plan.bounds.into_iter().next()) {
        bounds.push((first.clone(), shown));
    }
    bounds.extend(fields.map(|f| (f.clone(), vec!["[MinKey, MaxKey]".to_owned()])));
    Some(Plan {
        access: Access::Index {
            index: Box::new(real.clone()),
            ranges,
            dir,
        },
        sorted_by_access: false,
        bounds,
        stage: "IXSCAN",
    })
}
