//! What an index entry carries so that a query can be answered from the
//! index alone (a covered query). A key holds each field's value in the
//! order-preserving encoding, which keeps the value but not always its
//! type (`5`, `NumberLong(5)` and `5.0` are one key). An entry of an
//! ordinary index whose document holds one plain value, or none, at each
//! key field carries the BSON type of each, and the values decoded from
//! the key come back exactly as stored.
//!
//! An entry that cannot answer carries nothing, and a query reads its
//! document: an array along a key path (the entry holds one element), or a
//! value whose type or form the key does not keep (a decimal, `-0.0`, a
//! symbol, a document or an array, whose numbers inside lose their types).
//! Data written before entries carried this is read the same way.
//!
//! Layout: [`FORMAT`], then one byte per key field, in key order: the
//! value's BSON element type, or [`MISSING`].

use bson::spec::ElementType;
use bson::{Bson, RawBson, RawBsonRef, RawDocument, RawDocumentBuf};
use ebb_lang::encoding::keycode;
use ebb_lang::error::{Error, Result};
use ebb_lang::query::path::index_values;

/// The first byte of a value that carries types.
const FORMAT: u8 = 1;
/// The field is absent from the document.
const MISSING: u8 = 0;

/// The value an entry carries for `doc` in an index on `fields` (empty
/// when the entry cannot answer a query).
pub fn value(fields: &[(String, bool)], doc: &RawDocument) -> Vec<u8> {
    let mut out = Vec::with_capacity(1 + fields.len());
    out.push(FORMAT);
    for (path, _) in fields {
        let found = index_values(doc, path);
        if found.multikey {
            return Vec::new();
        }
        match found.values.as_slice() {
            [] => out.push(MISSING),
            [v] if keeps(v) => out.push(v.element_type() as u8),
            _ => return Vec::new(),
        }
    }
    out
}

/// Whether a key gives `v` back exactly, given its type.
fn keeps(v: &RawBsonRef<'_>) -> bool {
    match v {
        RawBsonRef::Double(d) => !(*d == 0.0 && d.is_sign_negative()),
        RawBsonRef::Decimal128(_)
        | RawBsonRef::Symbol(_)
        | RawBsonRef::Document(_)
        | RawBsonRef::Array(_)
        | RawBsonRef::JavaScriptCodeWithScope(_)
        | RawBsonRef::DbPointer(_) => false,
        _ => true,
    }
}

/// The document an entry stands for, holding the key fields alone (the
/// dotted ones nested): `None` when the entry carries no types.
pub fn rebuild(
    fields: &[(String, bool)],
    key: &[u8],
    value: &[u8],
) -> Result<Option<RawDocumentBuf>> {
    let Some((&FORMAT, types)) = value.split_first() else {
        return Ok(None);
    };
    if types.len() != fields.len() {
        return Err(Error::corrupt(
            "an index entry's types do not match its key",
        ));
    }
    let mut input = key;
    let mut doc = bson::Document::new();
    for ((path, ascending), &ty) in fields.iter().zip(types) {
        let decoded = match ascending {
            true => keycode::decode_value(&mut input)?,
            false => keycode::decode_value_desc(&mut input)?,
        };
        if ty == MISSING {
            continue;
        }
        set_path(&mut doc, path, typed(decoded, ty)?);
    }
    Ok(Some(RawDocumentBuf::try_from(&doc).map_err(|e| {
        Error::corrupt(format!("a covered document: {e}"))
    })?))
}

/// A decoded value in its stored type (a key decodes numbers to the
/// narrowest type that holds them exactly).
fn typed(v: RawBson, ty: u8) -> Result<Bson> {
    let bson = Bson::try_from(v).map_err(|e| Error::corrupt(format!("an index key: {e}")))?;
    let number = match bson {
        Bson::Int32(i) => f64::from(i),
        Bson::Int64(i) => i as f64,
        Bson::Double(d) => d,
        other => return Ok(other),
    };
    let exact = |n: i64| n as f64 == number;
    Ok(match ElementType::from(ty) {
        Some(ElementType::Double) => Bson::Double(number),
        Some(ElementType::Int32) if exact(number as i32 as i64) => Bson::Int32(number as i32),
        Some(ElementType::Int64) => match bson {
            Bson::Int64(i) => Bson::Int64(i),
            _ => Bson::Int64(number as i64),
        },
        _ => {
            return Err(Error::corrupt(
                "an index entry's number type is not a number",
            ));
        }
    })
}

/// Sets dotted `path` of `doc` to `value`, making the documents on the way.
fn set_path(doc: &mut bson::Document, path: &str, value: Bson) {
    match path.split_once('.') {
        None => {
            doc.insert(path, value);
        }
        Some((head, rest)) => {
            if !matches!(doc.get(head), Some(Bson::Document(_))) {
                doc.insert(head, bson::Document::new());
            }
            if let Some(Bson::Document(inner)) = doc.get_mut(head) {
                set_path(inner, rest, value);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(doc: &RawDocument, fields: &[(String, bool)]) -> Vec<u8> {
        let mut out = Vec::new();
        for (path, ascending) in fields {
            let v = doc.get(path).unwrap().unwrap_or(RawBsonRef::Null);
            match ascending {
                true => keycode::encode_value(&mut out, v),
                false => keycode::encode_value_desc(&mut out, v),
            }
        }
        out
    }

    #[test]
    fn plain_values_come_back_in_their_own_types() {
        let fields = vec![
            ("i".to_owned(), true),
            ("l".to_owned(), false),
            ("d".to_owned(), true),
            ("s".to_owned(), true),
            ("t".to_owned(), true),
            ("gone".to_owned(), true),
        ];
        let doc = bson::rawdoc! {
            "i": 5, "l": 5i64, "d": 5.0, "s": "five",
            "t": bson::DateTime::from_millis(5), "other": 1,
        };
        let value = value(&fields, &doc);
        let back = rebuild(&fields, &key(&doc, &fields), &value)
            .unwrap()
            .unwrap();
        let want = bson::rawdoc! {
            "i": 5, "l": 5i64, "d": 5.0, "s": "five", "t": bson::DateTime::from_millis(5),
        };
        assert_eq!(back, want);
        // Big integers in a double, and a long past a double's precision.
        let doc =
            bson::rawdoc! { "i": 1, "l": 9_007_199_254_740_993i64, "d": 1e300, "s": "", "t": true };
        let value = super::value(&fields, &doc);
        let back = rebuild(&fields, &key(&doc, &fields), &value)
            .unwrap()
            .unwrap();
        assert_eq!(back.get_i64("l").unwrap(), 9_007_199_254_740_993);
        assert_eq!(back.get_f64("d").unwrap(), 1e300);
    }

    #[test]
    fn what_a_key_cannot_give_back_carries_nothing() {
        let fields = vec![("a".to_owned(), true)];
        for doc in [
            bson::rawdoc! { "a": [1] },
            bson::rawdoc! { "a": { "b": 1 } },
            bson::rawdoc! { "a": -0.0 },
            bson::rawdoc! { "a": bson::Decimal128::from_bytes([0; 16]) },
        ] {
            assert!(value(&fields, &doc).is_empty(), "{doc:?}");
        }
        let nested = vec![("a.b".to_owned(), true)];
        assert!(value(&nested, &bson::rawdoc! { "a": [{ "b": 1 }] }).is_empty());
        let v = value(&nested, &bson::rawdoc! { "a": { "b": 2, "c": 3 } });
        let mut k = Vec::new();
        keycode::encode_value(&mut k, RawBsonRef::Int32(2));
        let back = rebuild(&nested, &k, &v).unwrap().unwrap();
        assert_eq!(back, bson::rawdoc! { "a": { "b": 2 } });
        // An empty value (older data, or an entry that cannot answer).
        assert!(rebuild(&nested, &k, &[]).unwrap().is_none());
    }
}
