//! A document opened up for editing: only the containers an update walks
//! into are expanded; every other value stays a borrowed slice of the
//! original bytes until the document is written back.
//!
//! This keeps an update of one field in a large document from decoding the
//! rest of it. The tree knows nothing about update operators.

use bson::raw::{CStr, RawArrayBuf, RawBson};
use bson::spec::ElementType;
use bson::{RawBsonRef, RawDocument, RawDocumentBuf};

use super::render;
use crate::Result;

/// One value of a document being edited.
#[derive(Debug, Clone)]
pub(crate) enum Value<'a> {
    /// Untouched: borrowed from the original document or the update.
    Raw(RawBsonRef<'a>),
    /// A computed scalar (a sum, a date). Never a document or array.
    Owned(RawBson),
    /// A document whose fields may have been edited.
    Doc(Fields<'a>),
    /// An array whose elements may have been edited.
    Arr(Vec<Value<'a>>),
}

/// The fields of an expanded document, in order.
pub(crate) type Fields<'a> = Vec<(&'a CStr, Value<'a>)>;

impl<'a> Value<'a> {
    pub(crate) const NULL: Value<'static> = Value::Raw(RawBsonRef::Null);

    /// Opens a document for editing.
    pub(crate) fn from_document(doc: &'a RawDocument) -> Result<Value<'a>> {
        let mut fields = Vec::new();
        for item in doc.iter() {
            let (k, v) = item?;
            fields.push((k, Value::Raw(v)));
        }
        Ok(Value::Doc(fields))
    }

    /// Expands a borrowed document or array in place so its children can be
    /// edited; scalars are left as they are.
    pub(crate) fn expand(&mut self) -> Result<()> {
        match *self {
            Value::Raw(RawBsonRef::Document(d)) => *self = Value::from_document(d)?,
            Value::Raw(RawBsonRef::Array(a)) => {
                let mut items = Vec::new();
                for item in a {
                    items.push(Value::Raw(item?));
                }
                *self = Value::Arr(items);
            }
            _ => {}
        }
        Ok(())
    }

    pub(crate) fn element_type(&self) -> ElementType {
        match self {
            Value::Raw(r) => r.element_type(),
            Value::Owned(o) => o.element_type(),
            Value::Doc(_) => ElementType::EmbeddedDocument,
            Value::Arr(_) => ElementType::Array,
        }
    }

    pub(crate) fn is_container(&self) -> bool {
        matches!(
            self.element_type(),
            ElementType::EmbeddedDocument | ElementType::Array
        )
    }

    /// Runs `f` on this value as a borrowed BSON value, encoding it first
    /// if it has been edited.
    pub(crate) fn with_ref<R>(&self, f: impl FnOnce(RawBsonRef<'_>) -> R) -> R {
        match self {
            Value::Raw(r) => f(*r),
            Value::Owned(o) => f(o.as_raw_bson_ref()),
            Value::Doc(fields) => f(RawBsonRef::Document(&encode_fields(fields))),
            Value::Arr(items) => f(RawBsonRef::Array(&encode_items(items))),
        }
    }

    /// `name: value` as MongoDB prints it in messages.
    pub(crate) fn render_element(&self, name: &str) -> String {
        self.with_ref(|v| render::element(name, v))
    }

    pub(crate) fn type_name(&self) -> &'static str {
        render::type_name(self.element_type())
    }

    /// Whether two values have the same type and the same bytes, MongoDB's
    /// test for "this `$set` changes nothing".
    pub(crate) fn binary_equal(&self, other: RawBsonRef<'_>) -> bool {
        self.with_ref(|mine| value_bytes(mine) == value_bytes(other))
    }
}

/// Looks a field up by name.
pub(crate) fn field_index(fields: &Fields<'_>, name: &str) -> Option<usize> {
    fields.iter().position(|(k, _)| k.as_str() == name)
}

/// Writes edited fields back to BSON.
pub(crate) fn encode_fields(fields: &Fields<'_>) -> RawDocumentBuf {
    let mut out = RawDocumentBuf::new();
    for (k, v) in fields {
        append(&mut out, k, v);
    }
    out
}

fn encode_items(items: &[Value<'_>]) -> RawArrayBuf {
    let mut out = RawArrayBuf::new();
    for v in items {
        match v {
            Value::Raw(r) => out.push(*r),
            Value::Owned(o) => out.push(o.as_raw_bson_ref()),
            Value::Doc(fields) => out.push(encode_fields(fields)),
            Value::Arr(items) => out.push(encode_items(items)),
        }
    }
    out
}

fn append(out: &mut RawDocumentBuf, key: &CStr, v: &Value<'_>) {
    match v {
        Value::Raw(r) => out.append(key, *r),
        Value::Owned(o) => out.append(key, o.as_raw_bson_ref()),
        Value::Doc(fields) => out.append(key, encode_fields(fields)),
        Value::Arr(items) => out.append(key, encode_items(items)),
    }
}

/// The type byte and encoded bytes of one value, for binary comparison.
pub(crate) fn value_bytes(v: RawBsonRef<'_>) -> Vec<u8> {
    let mut doc = RawDocumentBuf::new();
    doc.append(bson::raw::cstr!(""), v);
    doc.into_bytes()
}

/// A field name taken from a path or filter key, which is a valid C string
/// because it was cut from one.
pub(crate) fn cstr(s: &str) -> Result<&CStr> {
    Ok(<&CStr>::try_from(s)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::rawdoc;

    #[test]
    fn untouched_document_round_trips_byte_for_byte() {
        let doc = rawdoc! {"_id": 1, "a": {"b": [1, {"c": 2}]}, "d": "x"};
        let mut v = Value::from_document(&doc).unwrap();
        if let Value::Doc(fields) = &mut v {
            fields[1].1.expand().unwrap();
            assert!(matches!(fields[1].1, Value::Doc(_)));
            assert_eq!(encode_fields(fields).as_bytes(), doc.as_bytes());
        } else {
            panic!("a document opens as Doc");
        }
    }

    #[test]
    fn int_and_double_are_not_binary_equal() {
        let one = Value::Raw(RawBsonRef::Int32(1));
        assert!(one.binary_equal(RawBsonRef::Int32(1)));
        assert!(!one.binary_equal(RawBsonRef::Double(1.0)));
    }
}
