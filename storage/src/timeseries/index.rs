//! Secondary indexes of a time-series collection: the bucket-level index
//! mongod builds for an index the user creates on the measurements, and
//! the user's spec kept beside it so `listIndexes`, `dropIndexes` by key
//! pattern and `hint` speak the user's key pattern.
//!
//! The translation (mongod's, `timeseries_index.js`):
//!
//! ```text
//! user key            bucket key
//! <meta>: d           meta: d
//! <meta>.<sub>: d     meta.<sub>: d
//! <time>: 1           control.min.<time>: 1, control.max.<time>: 1
//! <time>: -1          control.max.<time>: -1, control.min.<time>: -1
//! <field>: 1          control.min.<field>: 1, control.max.<field>: 1
//! <field>: -1         control.max.<field>: -1, control.min.<field>: -1
//! ```
//!
//! compound keys translate field by field. A partial TTL index on the
//! timeField (MongoDB 7.0+) becomes `{control.min.<time>: d}` with the
//! filter moved onto `meta` and `expireAfterSeconds + span`. Refused as
//! mongod refuses: `unique` (72), `sparse` over a measurement field (72),
//! special index types on measurements or the time (67), TTL other than
//! that partial one (72); a `partialFilterExpression` naming measurement
//! fields is not implemented (238): mongod rewrites it into bounds on
//! `control`, ebb only moves meta filters.
//!
//! The bucket index is an ordinary index over the bucket records, so the
//! collection's writer keeps it with every bucket write, rewrite and
//! expiry. This module decides specs only; it reads and writes nothing.

use bson::{Bson, Document, doc};

use super::options::{TimeseriesOptions, bucket_expire_after, invalid};
use crate::catalog::IndexMeta;
use ebb_lang::encoding::display::shell;
use ebb_lang::error::{Error, ErrorKind, Result};

/// Where a time-series index keeps the spec the user gave: `{key,
/// partialFilterExpression?, expireAfterSeconds?}` (`listIndexes` shows
/// these instead of the bucket-level ones).
pub const USER_SPEC: &str = "timeseriesUserSpec";

/// The bucket-level index of an index created on a time-series
/// collection; `user` carries the spec as given and parsed.
pub fn bucket_index(user: &IndexMeta, opts: &TimeseriesOptions) -> Result<IndexMeta> {
    if user.unique {
        return Err(invalid(
            "Unique indexes are not supported on time-series collections",
        ));
    }
    let mut key = bucket_key(&user.key, opts)?;
    if user.sparse && user.key.keys().any(|f| is_measurement(f, opts)) {
        return Err(invalid(
            "Sparse indexes are not supported on time-series measurements",
        ));
    }
    let meta_filter = |f: &Document| {
        opts.meta_field
            .as_deref()
            .and_then(|m| rewrite_meta_filter(f, m))
    };
    let mut expire_after_seconds = None;
    let filter = match (user.expire_after_seconds, &user.partial_filter) {
        (Some(eas), filter) => {
            if user.key.len() != 1 {
                return Err(Error::new(
                    ErrorKind::CannotCreateIndex,
                    "TTL indexes are single-field indexes, compound indexes do not support TTL",
                ));
            }
            let filter = filter.as_ref().and_then(meta_filter).ok_or_else(|| {
                invalid("TTL indexes on time-series collections require a partialFilterExpression on the metaField")
            })?;
            let (field, direction) = user.key.iter().next().expect("one field");
            if *field != opts.time_field {
                return Err(invalid(
                    "TTL indexes on non-time fields are not supported on time-series collections",
                ));
            }
            key = doc! { opts.min_time_path(): direction.clone() };
            expire_after_seconds = Some(bucket_expire_after(i64::from(eas), opts.max_span_secs));
            Some(filter)
        }
        (None, Some(f)) => Some(meta_filter(f).ok_or_else(|| {
            Error::not_implemented(
                "a partialFilterExpression on measurement fields of a time-series index (only the metaField)",
            )
        })?),
        (None, None) => None,
    };
    let mut spec = doc! { "key": user.key.clone() };
    if let Some(f) = &user.partial_filter {
        spec.insert("partialFilterExpression", f.clone());
    }
    if let Some(eas) = user.expire_after_seconds {
        spec.insert("expireAfterSeconds", eas);
    }
    let mut extra = user.extra.clone();
    extra.insert(USER_SPEC, spec);
    Ok(IndexMeta {
        key,
        partial_filter: filter,
        expire_after_seconds,
        extra,
        ..user.clone()
    })
}

/// The `{<meta>: 1, <time>: 1}` index mongod creates with a collection
/// that has a metaField, as (name, key): ebb's internal bucket lookup
/// index (`options::META_INDEX`), shown and hinted under these.
pub fn meta_time_index(opts: &TimeseriesOptions) -> Option<(String, Document)> {
    let m = opts.meta_field.as_deref()?;
    let t = &opts.time_field;
    Some((format!("{m}_1_{t}_1"), doc! { m: 1, t.as_str(): 1 }))
}

/// The user's key pattern of a time-series index (None for indexes that
/// are not one: `_id_`, ebb's internal ones).
pub fn user_key(index: &IndexMeta) -> Option<&Document> {
    index
        .extra
        .get_document(USER_SPEC)
        .ok()?
        .get_document("key")
        .ok()
}

/// A time-series index as `listIndexes` shows it: the stored spec with
/// the user's key, filter and `expireAfterSeconds` in place of the
/// bucket-level ones. None for an index that is not a user's.
pub fn shown_spec(index: &IndexMeta) -> Option<Document> {
    let user = index.extra.get_document(USER_SPEC).ok()?;
    let mut shown = index.to_spec_doc();
    shown.remove(USER_SPEC);
    for field in ["key", "partialFilterExpression", "expireAfterSeconds"] {
        match user.get(field) {
            Some(v) => {
                shown.insert(field, v.clone());
            }
            None => {
                shown.remove(field);
            }
        }
    }
    Some(shown)
}

/// Whether a key-pattern field names a measurement (neither the time nor
/// the metaField or one of its subfields).
fn is_measurement(field: &str, opts: &TimeseriesOptions) -> bool {
    field != opts.time_field && meta_path(field, opts).is_none()
}

/// `meta` or `meta.<sub>` for the metaField or one of its subfields.
fn meta_path(field: &str, opts: &TimeseriesOptions) -> Option<String> {
    let meta = opts.meta_field.as_deref()?;
    if field == meta {
        return Some("meta".to_owned());
    }
    let sub = field.strip_prefix(meta)?.strip_prefix('.')?;
    Some(format!("meta.{sub}"))
}

/// The bucket-level key pattern of a user's key pattern (the table in
/// the module comment), or CannotCreateIndex as mongod words it.
fn bucket_key(user: &Document, opts: &TimeseriesOptions) -> Result<Document> {
    let refuse = |what: &str, field: &str, v: &Bson| {
        Error::new(
            ErrorKind::CannotCreateIndex,
            format!(
                "BadValue: Invalid index spec for time-series collection: {}. Indexes on {what} must be ascending or descending (numbers only): {field}: {}",
                shell(&Bson::Document(user.clone())),
                shell(v)
            ),
        )
    };
    let mut out = Document::new();
    for (field, v) in user {
        if let Some(path) = meta_path(field, opts) {
            out.insert(path, v.clone());
            continue;
        }
        let Some(descending) = direction(v) else {
            let what = if *field == opts.time_field {
                "the time field"
            } else {
                "measurement fields"
            };
            return Err(refuse(what, field, v));
        };
        let min = format!("control.min.{field}");
        let max = format!("control.max.{field}");
        let (first, second) = if descending { (max, min) } else { (min, max) };
        out.insert(first, v.clone());
        out.insert(second, v.clone());
    }
    Ok(out)
}

/// Some(descending) for a numeric key direction, None for anything else.
fn direction(v: &Bson) -> Option<bool> {
    match v {
        Bson::Int32(n) => Some(*n < 0),
        Bson::Int64(n) => Some(*n < 0),
        Bson::Double(f) => Some(*f < 0.0),
        Bson::Decimal128(d) => Some(d.to_string().starts_with('-')),
        _ => None,
    }
}

/// A filter naming only the metaField (or its subfields), with every path
/// moved onto the buckets' `meta`; None if it names anything else.
fn rewrite_meta_filter(filter: &Document, meta: &str) -> Option<Document> {
    let mut out = Document::new();
    for (k, v) in filter {
        if k == "$and" {
            let Bson::Array(clauses) = v else { return None };
            let rewritten = clauses
                .iter()
                .map(|c| match c {
                    Bson::Document(d) => rewrite_meta_filter(d, meta).map(Bson::Document),
                    _ => None,
                })
                .collect::<Option<Vec<_>>>()?;
            out.insert(k.clone(), rewritten);
        } else if k == meta {
            out.insert("meta", v.clone());
        } else if let Some(rest) = k.strip_prefix(meta).and_then(|r| r.strip_prefix('.')) {
            out.insert(format!("meta.{rest}"), v.clone());
        } else {
            return None;
        }
    }
    (!out.is_empty()).then_some(out)
}

#[cfg(test)]
mod tests {
    use bson::{RawBsonRef, rawdoc};

    use super::*;
    use crate::catalog::CollectionMeta;

    fn opts() -> TimeseriesOptions {
        TimeseriesOptions::parse(RawBsonRef::Document(
            &rawdoc! { "timeField": "t", "metaField": "m" },
        ))
        .unwrap()
    }

    fn user(key: Document) -> IndexMeta {
        IndexMeta {
            name: "i".into(),
            key,
            unique: false,
            ..CollectionMeta::id_index(0)
        }
    }

    #[test]
    fn keys_translate_as_mongod_translates_them() {
        let o = opts();
        let cases = [
            (doc! { "m": 1 }, doc! { "meta": 1 }),
            (doc! { "m.a": -1 }, doc! { "meta.a": -1 }),
            (
                doc! { "t": 1 },
                doc! { "control.min.t": 1, "control.max.t": 1 },
            ),
            (
                doc! { "t": -1 },
                doc! { "control.max.t": -1, "control.min.t": -1 },
            ),
            (
                doc! { "m.a": 1, "x": -1 },
                doc! { "meta.a": 1, "control.max.x": -1, "control.min.x": -1 },
            ),
        ];
        for (key, bucket) in cases {
            let b = bucket_index(&user(key.clone()), &o).unwrap();
            assert_eq!(b.key, bucket);
            assert_eq!(user_key(&b), Some(&key));
            assert_eq!(shown_spec(&b).unwrap().get_document("key").unwrap(), &key);
        }
    }

    #[test]
    fn refusals_carry_mongods_kinds() {
        let o = opts();
        let kind = |i: IndexMeta| bucket_index(&i, &o).unwrap_err().kind;
        let unique = IndexMeta {
            unique: true,
            ..user(doc! { "m": 1 })
        };
        assert_eq!(kind(unique), ErrorKind::InvalidOptions);
        let sparse = IndexMeta {
            sparse: true,
            ..user(doc! { "m": 1, "x": 1 })
        };
        assert_eq!(kind(sparse), ErrorKind::InvalidOptions);
        let sparse_meta = IndexMeta {
            sparse: true,
            ..user(doc! { "t": 1, "m.a": 1 })
        };
        assert!(bucket_index(&sparse_meta, &o).is_ok());
        assert_eq!(
            kind(user(doc! { "x": "hashed" })),
            ErrorKind::CannotCreateIndex
        );
        let ttl_on_meta = IndexMeta {
            expire_after_seconds: Some(5),
            ..user(doc! { "m": 1 })
        };
        assert_eq!(kind(ttl_on_meta), ErrorKind::InvalidOptions);
        let partial_on_data = IndexMeta {
            partial_filter: Some(doc! { "x": { "$gt": 5 } }),
            ..user(doc! { "m": 1 })
        };
        assert_eq!(kind(partial_on_data), ErrorKind::NotImplemented);
    }

    #[test]
    fn a_partial_ttl_index_moves_onto_the_buckets() {
        let o = opts();
        let ttl = IndexMeta {
            name: "t_1".into(),
            partial_filter: Some(doc! { "m.site": { "$eq": "NYC" } }),
            expire_after_seconds: Some(60),
            ..user(doc! { "t": 1 })
        };
        let b = bucket_index(&ttl, &o).unwrap();
        assert_eq!(b.key, doc! { "control.min.t": 1 });
        assert_eq!(
            b.partial_filter,
            Some(doc! { "meta.site": { "$eq": "NYC" } })
        );
        assert_eq!(b.expire_after_seconds, Some(3660));
        let shown = shown_spec(&b).unwrap();
        assert_eq!(shown.get_i32("expireAfterSeconds").unwrap(), 60);
        assert_eq!(
            shown.get_document("partialFilterExpression").unwrap(),
            &doc! { "m.site": { "$eq": "NYC" } }
        );
        let on_data = IndexMeta {
            partial_filter: Some(doc! { "m": 1, "x": 2 }),
            ..ttl.clone()
        };
        assert_eq!(
            bucket_index(&on_data, &o).unwrap_err().kind,
            ErrorKind::InvalidOptions
        );
        let compound = IndexMeta {
            key: doc! { "t": 1, "m": 1 },
            ..ttl
        };
        assert_eq!(
            bucket_index(&compound, &o).unwrap_err().kind,
            ErrorKind::CannotCreateIndex
        );
    }
}
