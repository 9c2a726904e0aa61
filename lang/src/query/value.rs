//! Small helpers the query language shares: field paths as projections
//! and sorts accept them, MongoDB's truthiness, reading numeric arguments,
//! NaN, `$type`'s type names, and reading one element of a client
//! document.

use bson::RawBsonRef;
use bson::error::Error as BsonError;

use crate::error::{Error, ErrorKind, Result};

/// Splits a projection or sort path into components, rejecting what
/// MongoDB's field paths reject. Filters do not use this: a filter may name
/// any field, even `""` or `a..b`.
pub(crate) fn field_path(path: &str) -> Result<Vec<&str>> {
    if path.is_empty() {
        return Err(Error::new(
            ErrorKind::EmptyFieldPath,
            "FieldPath cannot be constructed with empty string",
        ));
    }
    if path.ends_with('.') {
        return Err(Error::new(
            ErrorKind::FieldPathTrailingDot,
            "FieldPath must not end with a '.'.",
        ));
    }
    let components: Vec<&str> = path.split('.').collect();
    for component in &components {
        if component.is_empty() {
            return Err(Error::new(
                ErrorKind::EmptyFieldPathComponent,
                "FieldPath field names may not be empty strings.",
            ));
        }
        // DBRef fields are the one allowed use of a leading `$`.
        if component.starts_with('$') && !matches!(*component, "$id" | "$ref" | "$db") {
            return Err(Error::new(
                ErrorKind::DollarPrefixedFieldPathComponent,
                "FieldPath field names may not start with '$'. \
                 Consider using $getField or $setField.",
            ));
        }
    }
    Ok(components)
}

/// `$type`'s (and `bsonType`'s) names for BSON types, with their type
/// numbers (`-1` is MinKey, `127` MaxKey). `"number"` is not here: it names
/// every numeric type at once.
pub(crate) const TYPE_ALIASES: &[(&str, i32)] = &[
    ("double", 1),
    ("string", 2),
    ("object", 3),
    ("array", 4),
    ("binData", 5),
    ("undefined", 6),
    ("objectId", 7),
    ("bool", 8),
    ("date", 9),
    ("null", 10),
    ("regex", 11),
    ("dbPointer", 12),
    ("javascript", 13),
    ("symbol", 14),
    ("javascriptWithScope", 15),
    ("int", 16),
    ("timestamp", 17),
    ("long", 18),
    ("decimal", 19),
    ("minKey", -1),
    ("maxKey", 127),
];

/// MongoDB's type number for a value (`-1` for MinKey).
pub(crate) fn type_code(value: RawBsonRef<'_>) -> i32 {
    match value.element_type() {
        bson::spec::ElementType::MinKey => -1,
        other => i32::from(other as u8),
    }
}

/// MongoDB's notion of a true value (`$exists: <v>`, projection flags):
/// false, zero, null and undefined are false; everything else is true,
/// NaN included.
pub(crate) fn truthy(value: RawBsonRef<'_>) -> bool {
    match value {
        RawBsonRef::Boolean(b) => b,
        RawBsonRef::Int32(n) => n != 0,
        RawBsonRef::Int64(n) => n != 0,
        RawBsonRef::Double(x) => x != 0.0,
        RawBsonRef::Decimal128(d) => decimal_to_f64(d) != 0.0,
        RawBsonRef::Null | RawBsonRef::Undefined => false,
        _ => true,
    }
}

/// A number as a double (decimals through their text form), `None` for
/// non-numbers. Only used to read small arguments, never to compare values.
pub(crate) fn number_as_f64(value: RawBsonRef<'_>) -> Option<f64> {
    match value {
        RawBsonRef::Int32(n) => Some(f64::from(n)),
        RawBsonRef::Int64(n) => Some(n as f64),
        RawBsonRef::Double(x) => Some(x),
        RawBsonRef::Decimal128(d) => Some(decimal_to_f64(d)),
        _ => None,
    }
}

fn decimal_to_f64(d: bson::Decimal128) -> f64 {
    d.to_string().parse().unwrap_or(f64::NAN)
}

/// Whether a value is a NaN double or decimal.
pub(crate) fn is_nan(value: RawBsonRef<'_>) -> bool {
    match value {
        RawBsonRef::Double(x) => x.is_nan(),
        RawBsonRef::Decimal128(d) => {
            // The five combination bits below the sign are all set only for NaN.
            let high = u64::from_le_bytes(d.bytes()[8..].try_into().unwrap_or([0; 8]));
            (high >> 58) & 0x1f == 0x1f
        }
        _ => false,
    }
}

/// Whether a value is a scalar with a total order inside its type
/// bracket: not null or undefined, not an array, document or regex, not
/// MinKey or MaxKey, not NaN. Null, containers and regexes have matching
/// rules a range of values does not capture, so an index bound and a
/// filter implication both reason only about these.
pub fn ordered_scalar(value: RawBsonRef<'_>) -> bool {
    match value {
        RawBsonRef::Null
        | RawBsonRef::Undefined
        | RawBsonRef::Array(_)
        | RawBsonRef::Document(_)
        | RawBsonRef::RegularExpression(_)
        | RawBsonRef::MinKey
        | RawBsonRef::MaxKey => false,
        other => !is_nan(other),
    }
}

/// Reads one element of a client document, reporting unreadable BSON as a
/// parse failure rather than as corrupt storage.
pub(crate) fn element<'a>(
    item: std::result::Result<(&'a bson::raw::CStr, RawBsonRef<'a>), BsonError>,
) -> Result<(&'a str, RawBsonRef<'a>)> {
    item.map(|(key, value)| (key.as_str(), value))
        .map_err(|e| Error::failed_to_parse(format!("malformed BSON: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_path_rejects_what_mongodb_rejects() {
        let kind = |p: &str| field_path(p).unwrap_err().kind;
        assert_eq!(kind(""), ErrorKind::EmptyFieldPath);
        assert_eq!(kind("a."), ErrorKind::FieldPathTrailingDot);
        assert_eq!(kind("a..b"), ErrorKind::EmptyFieldPathComponent);
        assert_eq!(kind(".a"), ErrorKind::EmptyFieldPathComponent);
        assert_eq!(kind("$a"), ErrorKind::DollarPrefixedFieldPathComponent);
        assert_eq!(kind("a.$b"), ErrorKind::DollarPrefixedFieldPathComponent);
        assert_eq!(field_path("a.$id").unwrap(), vec!["a", "$id"]);
        assert_eq!(field_path("a.b.0").unwrap(), vec!["a", "b", "0"]);
    }

    #[test]
    fn truthiness_follows_mongodb() {
        assert!(!truthy(RawBsonRef::Int32(0)));
        assert!(!truthy(RawBsonRef::Double(-0.0)));
        assert!(truthy(RawBsonRef::Double(f64::NAN)));
        assert!(!truthy(RawBsonRef::Null));
        assert!(truthy(RawBsonRef::String("")));
        assert!(!truthy(RawBsonRef::Boolean(false)));
    }

    #[test]
    fn decimal_nan_is_recognised() {
        let nan: bson::Decimal128 = "NaN".parse().unwrap();
        let one: bson::Decimal128 = "1".parse().unwrap();
        assert!(is_nan(RawBsonRef::Decimal128(nan)));
        assert!(!is_nan(RawBsonRef::Decimal128(one)));
        assert!(is_nan(RawBsonRef::Double(f64::NAN)));
    }
}
