//! Canonical type brackets: the order MongoDB gives BSON types before it
//! looks at values (MinKey < undefined < null < numbers < strings/symbols <
//! objects < arrays < binData < ObjectId < bool < Date < Timestamp < regex <
//! DBPointer < code < code-with-scope < MaxKey).
//!
//! The bracket numbers are also the key encoding's type tags, so the
//! comparator (`cmp`) and the encoding (`keycode`) share them from here and
//! cannot disagree. **Persisted:** the tag values are on disk in every key.
//! Also holds the two DBPointer helpers both need, since the bson crate
//! keeps a DBPointer's parts private.

use bson::RawBsonRef;

pub const TAG_MINKEY: u8 = 0x01;
pub const TAG_UNDEFINED: u8 = 0x02;
pub const TAG_NULL: u8 = 0x05;
pub const TAG_NUMBER: u8 = 0x0A;
/// Strings and symbols.
pub const TAG_STRING: u8 = 0x0F;
pub const TAG_OBJECT: u8 = 0x14;
pub const TAG_ARRAY: u8 = 0x19;
pub const TAG_BINARY: u8 = 0x1E;
pub const TAG_OBJECTID: u8 = 0x23;
pub const TAG_BOOL: u8 = 0x28;
pub const TAG_DATE: u8 = 0x2D;
pub const TAG_TIMESTAMP: u8 = 0x2F;
pub const TAG_REGEX: u8 = 0x32;
pub const TAG_DBPOINTER: u8 = 0x37;
pub const TAG_CODE: u8 = 0x3C;
pub const TAG_CODE_WITH_SCOPE: u8 = 0x41;
pub const TAG_MAXKEY: u8 = 0x7F;

/// The canonical type bracket of a value; smaller sorts first. The bracket
/// numbers are the key encoding's type tags, so the two cannot disagree.
pub fn canonical_type(v: &RawBsonRef<'_>) -> u8 {
    match v {
        RawBsonRef::MinKey => TAG_MINKEY,
        RawBsonRef::Undefined => TAG_UNDEFINED,
        RawBsonRef::Null => TAG_NULL,
        RawBsonRef::Int32(_)
        | RawBsonRef::Int64(_)
        | RawBsonRef::Double(_)
        | RawBsonRef::Decimal128(_) => TAG_NUMBER,
        RawBsonRef::String(_) | RawBsonRef::Symbol(_) => TAG_STRING,
        RawBsonRef::Document(_) => TAG_OBJECT,
        RawBsonRef::Array(_) => TAG_ARRAY,
        RawBsonRef::Binary(_) => TAG_BINARY,
        RawBsonRef::ObjectId(_) => TAG_OBJECTID,
        RawBsonRef::Boolean(_) => TAG_BOOL,
        RawBsonRef::DateTime(_) => TAG_DATE,
        RawBsonRef::Timestamp(_) => TAG_TIMESTAMP,
        RawBsonRef::RegularExpression(_) => TAG_REGEX,
        RawBsonRef::DbPointer(_) => TAG_DBPOINTER,
        RawBsonRef::JavaScriptCode(_) => TAG_CODE,
        RawBsonRef::JavaScriptCodeWithScope(_) => TAG_CODE_WITH_SCOPE,
        RawBsonRef::MaxKey => TAG_MAXKEY,
    }
}

/// The namespace and ObjectId of a DBPointer, which the bson crate keeps
/// private; read back through its raw encoding.
pub(crate) fn db_pointer_parts(p: bson::raw::RawDbPointerRef<'_>) -> (Vec<u8>, [u8; 12]) {
    let mut doc = bson::RawDocumentBuf::new();
    doc.append(bson::raw::cstr!("p"), RawBsonRef::DbPointer(p));
    let bytes = doc.as_bytes();
    let value = &bytes[DB_POINTER_VALUE_AT..bytes.len() - 1];
    let (namespace, oid) = value.split_at(value.len() - 12);
    // the namespace is an i32-length-prefixed, NUL-terminated BSON string
    let namespace = &namespace[4..namespace.len() - 1];
    let mut id = [0u8; 12];
    id.copy_from_slice(oid);
    (namespace.to_vec(), id)
}

/// Builds a DBPointer (the bson crate has no public constructor) by
/// reading it from a one-field document in BSON's wire layout.
pub(crate) fn make_db_pointer(namespace: &str, id: [u8; 12]) -> crate::Result<bson::RawBson> {
    let mut value = Vec::with_capacity(namespace.len() + 17);
    value.extend(((namespace.len() + 1) as i32).to_le_bytes());
    value.extend(namespace.as_bytes());
    value.push(0);
    value.extend(id);
    let mut bytes = Vec::with_capacity(value.len() + 8);
    bytes.extend(((DB_POINTER_VALUE_AT + value.len() + 1) as i32).to_le_bytes());
    bytes.extend([bson::spec::ElementType::DbPointer as u8, b'p', 0]);
    bytes.extend(value);
    bytes.push(0);
    let doc = bson::RawDocumentBuf::from_bytes(bytes)?;
    let pointer = doc
        .get("p")?
        .ok_or_else(|| crate::Error::corrupt("DBPointer did not round-trip"))?;
    Ok(pointer.into())
}

/// layout of `{p: <DBPointer>}`: i32 len | 0x0C | "p\0" | value | 0x00
const DB_POINTER_VALUE_AT: usize = 7;
