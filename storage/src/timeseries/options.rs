//! A time-series or clustered collection's options: parsed from `create`
//! (with MongoDB's validation and error kinds), stored in the catalog
//! record's `options` exactly as `listCollections` shows them, and read
//! back typed. Also the internal indexes such a collection carries, so the
//! catalog actor and `collMod` derive them from one rule.
//!
//! This module decides what the options mean; it stores and reads nothing.

use bson::{Bson, Document, RawBsonRef, RawDocument, doc};

use crate::catalog::{CollectionMeta, IndexMeta};
use ebb_lang::error::{Error, ErrorKind, Result};

/// The buckets' TTL index: `{control.min.<timeField>: 1}`.
pub const TIME_INDEX: &str = "$ebb_bucket_time";
/// The buckets' lookup index: `{meta: 1, control.min.<timeField>: 1}`.
pub const META_INDEX: &str = "$ebb_bucket_meta_time";
/// A clustered collection's TTL index on `_id`.
pub const CLUSTERED_TTL_INDEX: &str = "$ebb_clustered_ttl";

/// The largest `bucketMaxSpanSeconds`/`bucketRoundingSeconds` (one year).
const MAX_SPAN_SECS: i64 = 365 * 24 * 3600;

/// MongoDB's bucketing granularities.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Granularity {
    Seconds,
    Minutes,
    Hours,
}

impl Granularity {
    fn parse(s: &str) -> Option<Self> {
        match s {
            "seconds" => Some(Granularity::Seconds),
            "minutes" => Some(Granularity::Minutes),
            "hours" => Some(Granularity::Hours),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Granularity::Seconds => "seconds",
            Granularity::Minutes => "minutes",
            Granularity::Hours => "hours",
        }
    }

    /// (bucketMaxSpanSeconds, bucketRoundingSeconds), MongoDB's table.
    pub fn span_and_rounding(self) -> (i64, i64) {
        match self {
            Granularity::Seconds => (3600, 60),
            Granularity::Minutes => (86_400, 3600),
            Granularity::Hours => (2_592_000, 86_400),
        }
    }
}

/// A time-series collection's `timeseries` options, settled.
#[derive(Debug, Clone, PartialEq)]
pub struct TimeseriesOptions {
    pub time_field: String,
    pub meta_field: Option<String>,
    /// None when the client chose the span and rounding itself.
    pub granularity: Option<Granularity>,
    pub max_span_secs: i64,
    pub rounding_secs: i64,
}

impl TimeseriesOptions {
    /// Parses and validates `create`'s `timeseries` value.
    pub fn parse(value: RawBsonRef<'_>) -> Result<Self> {
        let RawBsonRef::Document(d) = value else {
            return Err(Error::type_mismatch(
                "BSON field 'timeseries' is the wrong type, expected type 'object'",
            ));
        };
        let mut time_field = None;
        let mut meta_field = None;
        let mut granularity = None;
        let mut span = None;
        let mut rounding = None;
        for el in d {
            let (k, v) = el?;
            let k = k.as_str();
            match k {
                "timeField" => time_field = Some(field_name(k, v)?),
                "metaField" => meta_field = Some(field_name(k, v)?),
                "granularity" => {
                    let RawBsonRef::String(s) = v else {
                        return Err(wrong_type(k, "string"));
                    };
                    granularity = Some(Granularity::parse(s).ok_or_else(|| {
                        Error::bad_value(format!(
                            "Enumeration value '{s}' for field 'timeseries.granularity' is not a valid value."
                        ))
                    })?);
                }
                "bucketMaxSpanSeconds" => span = Some(seconds(k, v)?),
                "bucketRoundingSeconds" => rounding = Some(seconds(k, v)?),
                other => {
                    return Err(Error::new(
                        ErrorKind::UnknownField,
                        format!("BSON field 'timeseries.{other}' is an unknown field."),
                    ));
                }
            }
        }
        let Some(time_field) = time_field else {
            return Err(Error::new(
                ErrorKind::MissingField,
                "BSON field 'timeseries.timeField' is missing but a required field",
            ));
        };
        if time_field.contains('.') {
            return Err(invalid(
                "The 'timeField' cannot contain embedded '.' characters",
            ));
        }
        if let Some(meta) = &meta_field {
            if meta.contains('.') {
                return Err(invalid(
                    "The 'metaField' cannot contain embedded '.' characters",
                ));
            }
            if *meta == time_field {
                return Err(invalid(
                    "The 'metaField' and 'timeField' cannot be the same field",
                ));
            }
        }
        let (granularity, max_span_secs, rounding_secs) = match (granularity, span, rounding) {
            (Some(_), _, Some(_)) => {
                return Err(invalid(
                    "Timeseries 'bucketRoundingSeconds' cannot be set with 'granularity'",
                ));
            }
            (Some(g), Some(s), None) if s != g.span_and_rounding().0 => {
                return Err(invalid(format!(
                    "Timeseries 'bucketMaxSpanSeconds' is not configurable to a value other than the default of {} for the provided granularity",
                    g.span_and_rounding().0
                )));
            }
            (g, None, None) => {
                let g = g.unwrap_or(Granularity::Seconds);
                let (s, r) = g.span_and_rounding();
                (Some(g), s, r)
            }
            (Some(g), Some(_), None) => {
                let (s, r) = g.span_and_rounding();
                (Some(g), s, r)
            }
            (None, Some(s), Some(r)) => {
                if s != r {
                    return Err(invalid(
                        "Timeseries 'bucketMaxSpanSeconds' and 'bucketRoundingSeconds' fields must be equal",
                    ));
                }
                if !(1..=MAX_SPAN_SECS).contains(&s) {
                    return Err(invalid(format!(
                        "Timeseries 'bucketMaxSpanSeconds' and 'bucketRoundingSeconds' must be between 1 and {MAX_SPAN_SECS}"
                    )));
                }
                (None, s, r)
            }
            (None, _, _) => {
                return Err(invalid(
                    "Timeseries 'bucketMaxSpanSeconds' and 'bucketRoundingSeconds' need to be set alongside each other",
                ));
            }
        };
        Ok(TimeseriesOptions {
            time_field,
            meta_field,
            granularity,
            max_span_secs,
            rounding_secs,
        })
    }

    /// The options as stored and as `listCollections` shows them.
    pub fn to_document(&self) -> Document {
        let mut d = doc! { "timeField": self.time_field.clone() };
        if let Some(m) = &self.meta_field {
            d.insert("metaField", m.clone());
        }
        match self.granularity {
            Some(g) => {
                d.insert("granularity", g.name());
                d.insert("bucketMaxSpanSeconds", self.max_span_secs as i32);
            }
            None => {
                d.insert("bucketRoundingSeconds", self.rounding_secs as i32);
                d.insert("bucketMaxSpanSeconds", self.max_span_secs as i32);
            }
        }
        d
    }

    /// Reads the stored form back (written by [`Self::to_document`]).
    pub fn from_stored(options: &Document) -> Option<Self> {
        let ts = options.get_document("timeseries").ok()?;
        let raw = bson::RawDocumentBuf::try_from(ts).ok()?;
        TimeseriesOptions::parse(RawBsonRef::Document(&raw)).ok()
    }

    /// The path of the buckets' minimum time.
    pub fn min_time_path(&self) -> String {
        format!("control.min.{}", self.time_field)
    }

    /// A bucket's start for a measurement at `millis`: rounded down to
    /// `bucketRoundingSeconds`.
    pub fn bucket_start(&self, millis: i64) -> i64 {
        let unit = self.rounding_secs * 1000;
        millis.div_euclid(unit) * unit
    }
}

/// Parses a collection-level `expireAfterSeconds` (`create` or `collMod`):
/// a number from 0 up to the current seconds since the epoch, truncated.
pub fn parse_expire_after(value: RawBsonRef<'_>, now_secs: i64) -> Result<i64> {
    let secs = match value {
        RawBsonRef::Int32(n) => i64::from(n),
        RawBsonRef::Int64(n) => n,
        RawBsonRef::Double(f) if f.is_finite() => f.trunc() as i64,
        RawBsonRef::Double(_) => i64::MIN,
        RawBsonRef::Decimal128(d) => d
            .to_string()
            .parse::<f64>()
            .map(|f| f.trunc() as i64)
            .unwrap_or(i64::MIN),
        _ => {
            return Err(Error::type_mismatch(
                "BSON field 'expireAfterSeconds' is the wrong type, expected a number",
            ));
        }
    };
    if secs < 0 {
        return Err(invalid(format!(
            "TTL index 'expireAfterSeconds' option must be within an acceptable range, try a non-negative value instead (got {secs})"
        )));
    }
    if secs > now_secs {
        return Err(invalid(format!(
            "TTL index 'expireAfterSeconds' option must be within an acceptable range, try a lower number instead (got {secs})"
        )));
    }
    Ok(secs)
}

/// Validates `create`'s `clusteredIndex` and returns it as stored and
/// shown: `{v: 2, key: {_id: 1}, name: "_id_", unique: true}`.
pub fn parse_clustered_index(value: RawBsonRef<'_>) -> Result<Document> {
    let RawBsonRef::Document(d) = value else {
        return Err(invalid(
            "The 'clusteredIndex' option must be {key: {_id: 1}, unique: true} on a collection that is not a time-series buckets collection",
        ));
    };
    let mut key_ok = false;
    let mut unique = None;
    let mut name = "_id_".to_owned();
    for el in d {
        let (k, v) = el?;
        match (k.as_str(), v) {
            ("key", RawBsonRef::Document(key)) => key_ok = is_id_key(key),
            ("key", _) => return Err(wrong_type_of("clusteredIndex.key", "object")),
            ("unique", RawBsonRef::Boolean(b)) => unique = Some(b),
            ("unique", _) => return Err(wrong_type_of("clusteredIndex.unique", "bool")),
            ("name", RawBsonRef::String(s)) => name = s.to_owned(),
            ("name", _) => return Err(wrong_type_of("clusteredIndex.name", "string")),
            ("v", RawBsonRef::Int32(2) | RawBsonRef::Int64(2)) => {}
            ("v", _) => return Err(invalid("Invalid clusteredIndex 'v' field, must be 2")),
            (other, _) => {
                return Err(Error::new(
                    ErrorKind::UnknownField,
                    format!("BSON field 'clusteredIndex.{other}' is an unknown field."),
                ));
            }
        }
    }
    match unique {
        None => {
            return Err(Error::new(
                ErrorKind::MissingField,
                "BSON field 'clusteredIndex.unique' is missing but a required field",
            ));
        }
        Some(false) => {
            return Err(invalid("The clusteredIndex option requires unique: true"));
        }
        Some(true) => {}
    }
    if !key_ok {
        return Err(invalid(
            "The clusteredIndex option is only supported for key: {_id: 1}",
        ));
    }
    Ok(doc! { "v": 2, "key": { "_id": 1 }, "name": name, "unique": true })
}

fn is_id_key(key: &RawDocument) -> bool {
    let fields: Vec<_> = key.iter().collect();
    match fields.as_slice() {
        [Ok((k, v))] if k.as_str() == "_id" => match v {
            RawBsonRef::Int32(n) => *n == 1,
            RawBsonRef::Int64(n) => *n == 1,
            RawBsonRef::Double(f) => *f == 1.0,
            _ => false,
        },
        _ => false,
    }
}

/// The collection-level `expireAfterSeconds` stored in `options`.
pub fn stored_expire_after(options: &Document) -> Option<i64> {
    match options.get("expireAfterSeconds")? {
        Bson::Int64(n) => Some(*n),
        Bson::Int32(n) => Some(i64::from(*n)),
        _ => None,
    }
}

/// The internal indexes a time-series or clustered collection with these
/// options carries (ids 0: the caller assigns them). Every such collection
/// has them whether or not it expires, so `collMod` only changes an
/// index's `expireAfterSeconds` and never builds one.
///
/// - time series: `{control.min.<time>: 1}`, TTL with the collection's
///   `expireAfterSeconds + bucketMaxSpanSeconds` (a bucket goes when even
///   its latest possible measurement is due), and, with a metaField,
///   `{meta: 1, control.min.<time>: 1}` to find a measurement's bucket;
/// - clustered: `{_id: 1}` over Date `_id`s from the epoch on (mongod's
///   scan starts at the epoch), TTL with `expireAfterSeconds`.
pub fn internal_indexes(options: &Document) -> Vec<IndexMeta> {
    let eas = stored_expire_after(options);
    let blank = |name: &str, key: Document| IndexMeta {
        id: 0,
        name: name.to_owned(),
        key,
        ..CollectionMeta::id_index(0)
    };
    if let Some(ts) = TimeseriesOptions::from_stored(options) {
        let mut time = blank(TIME_INDEX, doc! { ts.min_time_path(): 1 });
        time.unique = false;
        time.expire_after_seconds = eas.map(|e| bucket_expire_after(e, ts.max_span_secs));
        let mut out = vec![time];
        if ts.meta_field.is_some() {
            let mut meta = blank(META_INDEX, doc! { "meta": 1, ts.min_time_path(): 1 });
            meta.unique = false;
            out.push(meta);
        }
        return out;
    }
    if options.contains_key("clusteredIndex") {
        let mut ttl = blank(CLUSTERED_TTL_INDEX, doc! { "_id": 1 });
        ttl.unique = false;
        ttl.partial_filter = Some(doc! { "_id": { "$gte": bson::DateTime::from_millis(0) } });
        ttl.expire_after_seconds = eas.map(|e| i32::try_from(e).unwrap_or(i32::MAX));
        return vec![ttl];
    }
    Vec::new()
}

/// The `expireAfterSeconds` of a bucket-level TTL index: a bucket is due
/// when `min time + span + expireAfterSeconds ≤ now`.
pub fn bucket_expire_after(eas: i64, span_secs: i64) -> i32 {
    i32::try_from(eas.saturating_add(span_secs)).unwrap_or(i32::MAX)
}

fn field_name(k: &str, v: RawBsonRef<'_>) -> Result<String> {
    let RawBsonRef::String(s) = v else {
        return Err(wrong_type(k, "string"));
    };
    if s.contains('\0') {
        return Err(Error::bad_value(format!(
            "The '{k}' cannot contain embedded null characters"
        )));
    }
    if s.is_empty() {
        return Err(invalid(format!("The '{k}' cannot be empty")));
    }
    if s.starts_with('$') {
        return Err(invalid(format!("The '{k}' cannot start with '$'")));
    }
    Ok(s.to_owned())
}

fn seconds(k: &str, v: RawBsonRef<'_>) -> Result<i64> {
    match v {
        RawBsonRef::Int32(n) => Ok(i64::from(n)),
        RawBsonRef::Int64(n) => Ok(n),
        RawBsonRef::Double(f) if f.fract() == 0.0 && f.is_finite() => Ok(f as i64),
        _ => Err(wrong_type(k, "int")),
    }
}

fn wrong_type(k: &str, expected: &str) -> Error {
    wrong_type_of(&format!("timeseries.{k}"), expected)
}

fn wrong_type_of(path: &str, expected: &str) -> Error {
    Error::type_mismatch(format!(
        "BSON field '{path}' is the wrong type, expected type '{expected}'"
    ))
}

pub(crate) fn invalid(message: impl Into<String>) -> Error {
    Error::new(ErrorKind::InvalidOptions, message)
}

#[cfg(test)]
mod tests {
    use bson::rawdoc;

    use super::*;

    fn parse(d: bson::RawDocumentBuf) -> Result<TimeseriesOptions> {
        TimeseriesOptions::parse(RawBsonRef::Document(&d))
    }

    #[test]
    fn granularity_sets_span_and_rounding() {
        let o = parse(rawdoc! { "timeField": "t", "granularity": "hours" }).unwrap();
        assert_eq!((o.max_span_secs, o.rounding_secs), (2_592_000, 86_400));
        let o = parse(rawdoc! { "timeField": "t" }).unwrap();
        assert_eq!(o.granularity, Some(Granularity::Seconds));
        assert_eq!(
            o.to_document(),
            doc! { "timeField": "t", "granularity": "seconds", "bucketMaxSpanSeconds": 3600 }
        );
    }

    #[test]
    fn invalid_options_get_mongods_kinds() {
        let kind = |d| parse(d).unwrap_err().kind;
        assert_eq!(kind(rawdoc! { "timeField": 1 }), ErrorKind::TypeMismatch);
        assert_eq!(
            kind(rawdoc! { "timeField": "a.b" }),
            ErrorKind::InvalidOptions
        );
        assert_eq!(
            kind(rawdoc! { "timeField": "t", "metaField": "t" }),
            ErrorKind::InvalidOptions
        );
        assert_eq!(
            kind(rawdoc! { "timeField": "t", "bucketMaxSpanSeconds": 10 }),
            ErrorKind::InvalidOptions
        );
        assert_eq!(
            kind(
                rawdoc! { "timeField": "t", "granularity": "minutes", "bucketMaxSpanSeconds": 3600 }
            ),
            ErrorKind::InvalidOptions
        );
        assert_eq!(kind(rawdoc! { "timeField": "\0t" }), ErrorKind::BadValue);
        assert_eq!(
            kind(rawdoc! { "timeField": "t", "x": 1 }),
            ErrorKind::UnknownField
        );
        assert_eq!(kind(rawdoc! { "metaField": "m" }), ErrorKind::MissingField);
    }

    #[test]
    fn expire_after_is_bounded_by_now() {
        let now = 1_800_000_000;
        assert_eq!(
            parse_expire_after(RawBsonRef::Int64(100), now).unwrap(),
            100
        );
        assert_eq!(
            parse_expire_after(RawBsonRef::Int64(-10), now)
                .unwrap_err()
                .kind,
            ErrorKind::InvalidOptions
        );
        assert_eq!(
            parse_expire_after(RawBsonRef::Int64(10_000_000_000), now)
                .unwrap_err()
                .kind,
            ErrorKind::InvalidOptions
        );
        assert_eq!(
            parse_expire_after(RawBsonRef::String(""), now)
                .unwrap_err()
                .kind,
            ErrorKind::TypeMismatch
        );
    }

    #[test]
    fn buckets_start_at_the_rounded_down_time() {
        let o = parse(rawdoc! { "timeField": "t", "granularity": "hours" }).unwrap();
        assert_eq!(o.bucket_start(86_400_000 + 5), 86_400_000);
        assert_eq!(o.bucket_start(-1), -86_400_000);
    }
}
