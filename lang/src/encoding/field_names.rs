//! The top-level field names of a BSON document, read as bytes.
//!
//! The insert path asks of every document only where its `_id` fields
//! are. `bson`'s iterator checks each name as UTF-8 and decodes each value
//! on the way, which the connection already did for every document it
//! received (`wire::bson_check`); this walk only steps over the values.
//! It checks every length it follows against the document's, so malformed
//! bytes end the walk with `None` instead of a wrong answer.

/// The field names of `doc` in order, or `None` at the first element that
/// does not fit in the document.
pub fn field_names(doc: &[u8]) -> FieldNames<'_> {
    FieldNames { doc, at: 4 }
}

/// See [`field_names`].
pub struct FieldNames<'a> {
    doc: &'a [u8],
    at: usize,
}

impl<'a> Iterator for FieldNames<'a> {
    type Item = Option<&'a [u8]>;

    fn next(&mut self) -> Option<Option<&'a [u8]>> {
        let end = self.doc.len().checked_sub(1)?;
        if self.at >= end {
            return None;
        }
        let step = self.step(end);
        if step.is_none() {
            // Malformed: say so once, then stop.
            self.at = end;
        }
        Some(step)
    }
}

impl<'a> FieldNames<'a> {
    /// Reads the element at `self.at` (which ends before `end`, the
    /// document's terminator) and moves past it.
    fn step(&mut self, end: usize) -> Option<&'a [u8]> {
        let doc = self.doc;
        let kind = doc[self.at];
        let name_at = self.at + 1;
        let name_len = doc.get(name_at..end)?.iter().position(|&b| b == 0)?;
        let value = name_at + name_len + 1;
        let len = value_len(kind, doc.get(value..end)?)?;
        self.at = value.checked_add(len).filter(|&next| next <= end)?;
        Some(&doc[name_at..name_at + name_len])
    }
}

/// Bytes taken by a value of BSON type `kind` at the start of `rest`.
fn value_len(kind: u8, rest: &[u8]) -> Option<usize> {
    let int32 = |at: usize| -> Option<usize> {
        let bytes = rest.get(at..at + 4)?;
        usize::try_from(i32::from_le_bytes(bytes.try_into().ok()?)).ok()
    };
    let cstring = |at: usize| rest.get(at..)?.iter().position(|&b| b == 0).map(|n| n + 1);
    Some(match kind {
        0x01 | 0x09 | 0x11 | 0x12 => 8,
        // string, JavaScript code, symbol: length, bytes (with their NUL).
        0x02 | 0x0D | 0x0E => 4 + int32(0)?,
        // document, array, code with scope: a total length.
        0x03 | 0x04 | 0x0F => int32(0)?,
        0x05 => 5 + int32(0)?,
        0x06 | 0x0A | 0x7F | 0xFF => 0,
        0x07 => 12,
        0x08 => 1,
        0x0B => {
            let pattern = cstring(0)?;
            pattern + cstring(pattern)?
        }
        0x0C => 4 + int32(0)? + 12,
        0x10 => 4,
        0x13 => 16,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::raw::cstr;
    use bson::spec::BinarySubtype;
    use bson::{Binary, Bson, DateTime, Decimal128, JavaScriptCodeWithScope, Regex, Timestamp};
    use bson::{RawDocumentBuf, doc, oid::ObjectId};

    fn names(doc: &RawDocumentBuf) -> Vec<String> {
        field_names(doc.as_bytes())
            .map(|n| String::from_utf8(n.expect("well formed").to_vec()).unwrap())
            .collect()
    }

    #[test]
    fn every_type_is_stepped_over() {
        let d = doc! {
            "double": 1.5, "string": "s", "doc": { "a": 1 }, "array": [1, "x"],
            "binary": Binary { subtype: BinarySubtype::Generic, bytes: vec![1, 2, 3] },
            "undefined": Bson::Undefined, "oid": ObjectId::new(), "bool": true,
            "date": DateTime::from_millis(5), "null": Bson::Null,
            "regex": Regex { pattern: cstr!("a.*").to_owned(), options: cstr!("i").to_owned() },
            "code": Bson::JavaScriptCode("f()".into()), "symbol": Bson::Symbol("sym".into()),
            "scope": JavaScriptCodeWithScope { code: "g()".into(), scope: doc! { "x": 1 } },
            "int32": 7, "timestamp": Timestamp { time: 1, increment: 2 }, "int64": 8_i64,
            "decimal": Decimal128::from_bytes([0; 16]), "min": Bson::MinKey, "max": Bson::MaxKey,
            "_id": 1,
        };
        let raw = RawDocumentBuf::try_from(&d).unwrap();
        let expected: Vec<String> = d.keys().cloned().collect();
        assert_eq!(names(&raw), expected);
    }

    #[test]
    fn empty_and_malformed_documents() {
        let empty = RawDocumentBuf::new();
        assert!(names(&empty).is_empty());
        let raw = RawDocumentBuf::try_from(&doc! { "a": "text", "b": 2 }).unwrap();
        let bytes = raw.as_bytes();
        // A string whose length runs past the document.
        let mut long = bytes.to_vec();
        long[7..11].copy_from_slice(&1000_i32.to_le_bytes());
        assert_eq!(field_names(&long).collect::<Vec<_>>(), vec![None]);
        // An unknown type.
        let mut unknown = bytes.to_vec();
        unknown[4] = 0x42;
        assert_eq!(field_names(&unknown).collect::<Vec<_>>(), vec![None]);
        // A name without its terminator.
        let cut = &bytes[..6];
        assert_eq!(field_names(cut).collect::<Vec<_>>(), vec![None]);
        // Too short to hold anything.
        assert_eq!(field_names(&[]).count(), 0);
        assert_eq!(field_names(&[5, 0, 0, 0, 0]).count(), 0);
    }
}
