//! Deep validation of a BSON document received from a client.
//!
//! The `bson` crate checks a document's length prefix and terminator when it is wrapped, but
//! elements only when they are read. Walking every element once here, at the edge, lets the layers
//! above trust any document the wire layer hands them: every length is consistent, every string
//! is UTF-8, every boolean is 0 or 1, and nesting is bounded. The walk keeps an explicit stack of
//! open documents instead of recursing, so a hostile message of a million nested arrays costs a
//! bounded amount of memory and cannot overflow the stack.

use bson::RawDocument;
use bson::raw::{RawBsonRef, RawIter};

use super::FramingError;

/// Walks `document` to its last byte, allowing at most `max_depth` levels of nesting (the
/// document itself being level 1).
pub(crate) fn check_document(
    document: &RawDocument,
    max_depth: usize,
    what: &'static str,
) -> Result<(), FramingError> {
    let invalid = |err: bson::error::Error| FramingError::InvalidBson {
        what,
        reason: err.to_string(),
    };
    let mut open = vec![document.iter_elements()];
    while let Some(elements) = open.last_mut() {
        let Some(element) = elements.next() else {
            open.pop();
            continue;
        };
        let value = element
            .and_then(|element| element.value())
            .map_err(invalid)?;
        if let Some(children) = children(value) {
            if open.len() >= max_depth {
                return Err(FramingError::TooDeep);
            }
            open.push(children);
        }
    }
    Ok(())
}

/// The elements nested inside a value, for the values that contain documents.
fn children(value: RawBsonRef<'_>) -> Option<RawIter<'_>> {
    match value {
        RawBsonRef::Document(document) => Some(document.iter_elements()),
        RawBsonRef::Array(array) => Some(array.iter_elements()),
        RawBsonRef::JavaScriptCodeWithScope(code) => Some(code.scope.iter_elements()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::{RawDocumentBuf, rawdoc};

    fn check(bytes: &[u8]) -> Result<(), FramingError> {
        let document = RawDocument::from_bytes(bytes).expect("outer framing is valid");
        check_document(document, 10, "test document")
    }

    /// `{a: {b: "x"}}`, with the offsets of the length prefixes inside it.
    fn nested_string_document() -> Vec<u8> {
        rawdoc! { "a": { "b": "x" } }.into_bytes()
    }
    const INNER_DOCUMENT_LEN_AT: usize = 7;
    const STRING_LEN_AT: usize = 14;

    #[test]
    fn well_formed_document_of_every_common_type_passes() {
        let document = rawdoc! {
            "double": 1.5, "string": "s", "doc": { "x": 1 }, "array": [1, "two", { "three": 3 }],
            "oid": bson::oid::ObjectId::new(), "bool": true, "date": bson::DateTime::now(),
            "null": null, "int": 1, "long": 2i64, "ts": bson::Timestamp { time: 1, increment: 2 },
        };
        assert!(check(document.as_bytes()).is_ok());
    }

    #[test]
    fn nested_length_that_overruns_its_parent_is_refused() {
        let mut bytes = nested_string_document();
        assert_eq!(bytes[INNER_DOCUMENT_LEN_AT], 14);
        bytes[INNER_DOCUMENT_LEN_AT] = 0x7f;
        let err = check(&bytes).unwrap_err();
        assert!(matches!(
            err,
            FramingError::InvalidBson {
                what: "test document",
                ..
            }
        ));
    }

    #[test]
    fn nested_length_that_stops_short_is_refused() {
        let mut bytes = nested_string_document();
        bytes[INNER_DOCUMENT_LEN_AT] -= 1;
        assert!(matches!(
            check(&bytes),
            Err(FramingError::InvalidBson { .. })
        ));
    }

    #[test]
    fn string_length_that_lies_is_refused() {
        let mut bytes = nested_string_document();
        assert_eq!(bytes[STRING_LEN_AT], 2, "length of \"x\" with its NUL");
        bytes[STRING_LEN_AT] = 3;
        assert!(matches!(
            check(&bytes),
            Err(FramingError::InvalidBson { .. })
        ));
    }

    #[test]
    fn invalid_utf8_string_is_refused() {
        let mut bytes = rawdoc! { "s": "ab" }.into_bytes();
        let at = bytes.len() - 3;
        bytes[at] = 0xff;
        assert!(matches!(
            check(&bytes),
            Err(FramingError::InvalidBson { .. })
        ));
    }

    #[test]
    fn boolean_other_than_zero_or_one_is_refused() {
        let mut bytes = rawdoc! { "b": true }.into_bytes();
        let at = bytes.len() - 2;
        bytes[at] = 2;
        assert!(matches!(
            check(&bytes),
            Err(FramingError::InvalidBson { .. })
        ));
    }

    #[test]
    fn scope_of_code_with_scope_is_walked_too() {
        let code = bson::raw::RawJavaScriptCodeWithScope {
            code: "f()".to_owned(),
            scope: rawdoc! { "b": true },
        };
        let mut bytes = rawdoc! { "js": code }.into_bytes();
        assert!(check(&bytes).is_ok());
        let scope_boolean = bytes.len() - 3;
        bytes[scope_boolean] = 2;
        assert!(matches!(
            check(&bytes),
            Err(FramingError::InvalidBson { .. })
        ));
    }

    #[test]
    fn unknown_element_type_is_refused() {
        let mut bytes = rawdoc! { "x": 1 }.into_bytes();
        bytes[4] = 0x42;
        assert!(matches!(
            check(&bytes),
            Err(FramingError::InvalidBson { .. })
        ));
    }

    fn nested(depth: usize) -> RawDocumentBuf {
        let mut document = rawdoc! {};
        for _ in 1..depth {
            document = rawdoc! { "a": [document] };
        }
        document
    }

    #[test]
    fn nesting_up_to_the_limit_passes() {
        // Each level of `nested` is an array holding a document: two levels.
        let document = nested(5);
        assert!(check_document(&document, 9, "deep").is_ok());
        assert!(matches!(
            check_document(&document, 8, "deep"),
            Err(FramingError::TooDeep)
        ));
    }

    #[test]
    fn hostile_nesting_is_refused_without_recursion() {
        // 100 000 nested empty-key documents: each level is 7 bytes (type, key NUL, length,
        // terminator); a recursive walk would risk the stack long before reaching the bottom.
        let levels = 100_000;
        let mut bytes = Vec::with_capacity(levels * 7 + 5);
        for level in 0..levels {
            let len = i32::try_from((levels - level) * 7 + 5).unwrap();
            bytes.extend_from_slice(&len.to_le_bytes());
            bytes.extend_from_slice(&[0x03, 0]);
        }
        bytes.extend_from_slice(&[5, 0, 0, 0, 0]);
        bytes.extend(std::iter::repeat_n(0, levels));
        let document = RawDocument::from_bytes(&bytes).unwrap();
        assert!(matches!(
            check_document(document, usize::MAX, "deep"),
            Ok(())
        ));
        assert!(matches!(
            check_document(document, 200, "deep"),
            Err(FramingError::TooDeep)
        ));
    }
}
