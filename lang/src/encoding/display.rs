//! Values and type names as MongoDB prints them in error messages
//! (`{ a: "x" }`, `ObjectId('…')`, `objectId`), so messages read the same
//! as the server's, and counts as its replies carry them.

use bson::spec::ElementType;
use bson::{Bson, RawBsonRef};

/// A count as mongod's `appendNumber` writes it in replies and
/// catalog options: an int when it fits, else a long.
pub fn number(n: i64) -> Bson {
    match i32::try_from(n) {
        Ok(n) => Bson::Int32(n),
        Err(_) => Bson::Int64(n),
    }
}

/// MongoDB's name for a BSON type, as in `$type` and error messages.
pub fn type_name_of(t: ElementType) -> &'static str {
    match t {
        ElementType::Double => "double",
        ElementType::String => "string",
        ElementType::EmbeddedDocument => "object",
        ElementType::Array => "array",
        ElementType::Binary => "binData",
        ElementType::Undefined => "undefined",
        ElementType::ObjectId => "objectId",
        ElementType::Boolean => "bool",
        ElementType::DateTime => "date",
        ElementType::Null => "null",
        ElementType::RegularExpression => "regex",
        ElementType::DbPointer => "dbPointer",
        ElementType::JavaScriptCode => "javascript",
        ElementType::Symbol => "symbol",
        ElementType::JavaScriptCodeWithScope => "javascriptWithScope",
        ElementType::Int32 => "int",
        ElementType::Timestamp => "timestamp",
        ElementType::Int64 => "long",
        ElementType::Decimal128 => "decimal",
        ElementType::MaxKey => "maxKey",
        ElementType::MinKey => "minKey",
    }
}

/// MongoDB's name for the type of `v`.
pub fn type_name(v: &RawBsonRef<'_>) -> &'static str {
    type_name_of(v.element_type())
}

/// Formats a value the way mongod's error messages show it.
pub fn shell(v: &Bson) -> String {
    match v {
        Bson::String(s) => format!("{s:?}"),
        Bson::Int32(n) => n.to_string(),
        Bson::Int64(n) => n.to_string(),
        Bson::Double(d) => format_double(*d),
        Bson::Boolean(b) => b.to_string(),
        Bson::Null => "null".into(),
        Bson::Undefined => "undefined".into(),
        Bson::ObjectId(o) => format!("ObjectId('{o}')"),
        Bson::DateTime(d) => format!("new Date({})", d.timestamp_millis()),
        Bson::Document(d) => {
            if d.is_empty() {
                return "{}".into();
            }
            let inner = d
                .iter()
                .map(|(k, v)| format!("{k}: {}", shell(v)))
                .collect::<Vec<_>>()
                .join(", ");
            format!("{{ {inner} }}")
        }
        Bson::Array(a) => {
            let inner = a.iter().map(shell).collect::<Vec<_>>().join(", ");
            format!("[ {inner} ]")
        }
        Bson::Decimal128(d) => format!("{d}"),
        Bson::Timestamp(t) => format!("Timestamp({}, {})", t.time, t.increment),
        Bson::MinKey => "MinKey".into(),
        Bson::MaxKey => "MaxKey".into(),
        other => other.to_string(),
    }
}

fn format_double(d: f64) -> String {
    if d.is_nan() {
        "nan.0".into()
    } else if d.is_infinite() {
        if d > 0.0 {
            "inf.0".into()
        } else {
            "-inf.0".into()
        }
    } else if d.fract() == 0.0 && d.abs() < 1e15 {
        format!("{d:.1}")
    } else {
        d.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_like_mongod_messages() {
        let d = bson::doc! { "a": "x", "n": 1, "f": 2.0, "o": { "b": [1, 2] } };
        assert_eq!(
            shell(&Bson::Document(d)),
            r#"{ a: "x", n: 1, f: 2.0, o: { b: [ 1, 2 ] } }"#
        );
    }
}
