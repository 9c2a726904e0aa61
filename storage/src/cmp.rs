//! MongoDB's BSON comparison order, the reference every ordered structure
//! in ebb must agree with (sorts, range predicates, index keys).
//!
//! Values compare first by canonical type bracket (MinKey < undefined < null
//! < numbers < strings/symbols < objects < arrays < binData < ObjectId < bool
//! < Date < Timestamp < regex < DBPointer < code < code-with-scope < MaxKey),
//! then within the bracket. All numeric types share one bracket and compare
//! by mathematical value.

use std::cmp::Ordering;

use bson::RawBsonRef;

use crate::numeric;

/// The canonical type bracket of a value; smaller sorts first.
pub fn canonical_type(v: &RawBsonRef<'_>) -> u8 {
    match v {
        RawBsonRef::MinKey => 1,
        RawBsonRef::Undefined => 2,
        RawBsonRef::Null => 5,
        RawBsonRef::Int32(_)
        | RawBsonRef::Int64(_)
        | RawBsonRef::Double(_)
        | RawBsonRef::Decimal128(_) => 10,
        RawBsonRef::String(_) | RawBsonRef::Symbol(_) => 15,
        RawBsonRef::Document(_) => 20,
        RawBsonRef::Array(_) => 25,
        RawBsonRef::Binary(_) => 30,
        RawBsonRef::ObjectId(_) => 35,
        RawBsonRef::Boolean(_) => 40,
        RawBsonRef::DateTime(_) => 45,
        RawBsonRef::Timestamp(_) => 47,
        RawBsonRef::RegularExpression(_) => 50,
        RawBsonRef::DbPointer(_) => 55,
        RawBsonRef::JavaScriptCode(_) => 60,
        RawBsonRef::JavaScriptCodeWithScope(_) => 65,
        RawBsonRef::MaxKey => 127,
    }
}

/// Compares two values in MongoDB's order.
pub fn compare_values(a: RawBsonRef<'_>, b: RawBsonRef<'_>) -> Ordering {
    let (ta, tb) = (canonical_type(&a), canonical_type(&b));
    if ta != tb {
        return ta.cmp(&tb);
    }
    match (a, b) {
        (
            RawBsonRef::String(x) | RawBsonRef::Symbol(x),
            RawBsonRef::String(y) | RawBsonRef::Symbol(y),
        ) => x.as_bytes().cmp(y.as_bytes()),
        (RawBsonRef::Document(x), RawBsonRef::Document(y)) => compare_documents(x, y),
        (RawBsonRef::Array(x), RawBsonRef::Array(y)) => compare_arrays(x, y),
        (RawBsonRef::Binary(x), RawBsonRef::Binary(y)) => x
            .bytes
            .len()
            .cmp(&y.bytes.len())
            .then_with(|| u8::from(x.subtype).cmp(&u8::from(y.subtype)))
            .then_with(|| x.bytes.cmp(y.bytes)),
        (RawBsonRef::ObjectId(x), RawBsonRef::ObjectId(y)) => x.bytes().cmp(&y.bytes()),
        (RawBsonRef::Boolean(x), RawBsonRef::Boolean(y)) => x.cmp(&y),
        (RawBsonRef::DateTime(x), RawBsonRef::DateTime(y)) => {
            x.timestamp_millis().cmp(&y.timestamp_millis())
        }
        (RawBsonRef::Timestamp(x), RawBsonRef::Timestamp(y)) => {
            (x.time, x.increment).cmp(&(y.time, y.increment))
        }
        (RawBsonRef::RegularExpression(x), RawBsonRef::RegularExpression(y)) => x
            .pattern
            .as_str()
            .as_bytes()
            .cmp(y.pattern.as_str().as_bytes())
            .then_with(|| {
                x.options
                    .as_str()
                    .as_bytes()
                    .cmp(y.options.as_str().as_bytes())
            }),
        (RawBsonRef::JavaScriptCode(x), RawBsonRef::JavaScriptCode(y)) => {
            x.as_bytes().cmp(y.as_bytes())
        }
        (RawBsonRef::JavaScriptCodeWithScope(x), RawBsonRef::JavaScriptCodeWithScope(y)) => x
            .code
            .as_bytes()
            .cmp(y.code.as_bytes())
            .then_with(|| compare_documents(x.scope, y.scope)),
        (RawBsonRef::DbPointer(x), RawBsonRef::DbPointer(y)) => {
            db_pointer_bytes(x).cmp(&db_pointer_bytes(y))
        }
        (x, y) if ta == 10 => numeric::compare(x, y),
        // MinKey, MaxKey, null and undefined are alone in their brackets.
        _ => Ordering::Equal,
    }
}

/// Compares documents element by element: type bracket, then field name,
/// then value; a document that is a prefix of another sorts first.
pub fn compare_documents(a: &bson::RawDocument, b: &bson::RawDocument) -> Ordering {
    let mut ia = a.iter();
    let mut ib = b.iter();
    loop {
        match (ia.next(), ib.next()) {
            (None, None) => return Ordering::Equal,
            (None, Some(_)) => return Ordering::Less,
            (Some(_), None) => return Ordering::Greater,
            (Some(Ok((ka, va))), Some(Ok((kb, vb)))) => {
                let ord = canonical_type(&va)
                    .cmp(&canonical_type(&vb))
                    .then_with(|| ka.as_str().as_bytes().cmp(kb.as_str().as_bytes()))
                    .then_with(|| compare_values(va, vb));
                if ord != Ordering::Equal {
                    return ord;
                }
            }
            // Stored documents are validated on the way in; a malformed tail
            // sorts after a well-formed one so the order stays total.
            (Some(Err(_)), Some(Err(_))) => return Ordering::Equal,
            (Some(Err(_)), _) => return Ordering::Greater,
            (_, Some(Err(_))) => return Ordering::Less,
        }
    }
}

/// Compares arrays element by element; a prefix sorts first.
pub fn compare_arrays(a: &bson::RawArray, b: &bson::RawArray) -> Ordering {
    let mut ia = a.into_iter();
    let mut ib = b.into_iter();
    loop {
        match (ia.next(), ib.next()) {
            (None, None) => return Ordering::Equal,
            (None, Some(_)) => return Ordering::Less,
            (Some(_), None) => return Ordering::Greater,
            (Some(Ok(va)), Some(Ok(vb))) => {
                let ord = compare_values(va, vb);
                if ord != Ordering::Equal {
                    return ord;
                }
            }
            (Some(Err(_)), Some(Err(_))) => return Ordering::Equal,
            (Some(Err(_)), _) => return Ordering::Greater,
            (_, Some(Err(_))) => return Ordering::Less,
        }
    }
}

/// The namespace and ObjectId of a DBPointer, which the bson crate keeps
/// private; read back through its raw encoding.
pub(crate) fn db_pointer_bytes(p: bson::raw::RawDbPointerRef<'_>) -> Vec<u8> {
    let mut doc = bson::RawDocumentBuf::new();
    doc.append(bson::raw::cstr!("p"), RawBsonRef::DbPointer(p));
    // layout: i32 len | 0x0C | "p\0" | i32 strlen | ns\0 | 12-byte oid | 0x00
    let bytes = doc.as_bytes();
    bytes[7..bytes.len() - 1].to_vec()
}
