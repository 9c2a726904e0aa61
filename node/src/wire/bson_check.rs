//! Deep validation of a BSON document received from a client.
//!
//! The `bson` crate checks a document's length prefix and terminator when it is wrapped, but
//! elements only when they are read. Walking every element once here, at the edge, lets the layers
//! above trust any document the wire layer hands them: every length is consistent, every string
//! is UTF-8, every boolean is 0 or 1, and nesting is bounded. The walk keeps an explicit stack of
//! open documents instead of recursing, so a hostile message of a million nested arrays costs a
//! bounded amount of memory and cannot overflow the stack.

use bson::RawDocument;

use super::FramingError;

/// Walks `document` to its last byte, allowing at most `max_depth` levels of nesting (the
/// document itself being level 1).
///
/// The walk reads the bytes itself rather than through the `bson` crate's iterators, which
/// build and check a value for every element and cost an insert a twentieth of the server's
/// CPU; it accepts exactly the documents those iterators read without error (a property test
/// holds the two side by side).
pub(crate) fn check_document(
    document: &RawDocument,
    max_depth: usize,
    what: &'static str,
) -> Result<(), FramingError> {
    Walk {
        bytes: document.as_bytes(),
        what,
    }
    .run(max_depth)
}

/// One document's bytes; `RawDocument` guarantees its length prefix and terminator.
struct Walk<'a> {
    bytes: &'a [u8],
    what: &'static str,
}

/// What a value is made of, by element type: a fixed number of bytes, a length-prefixed string,
/// a nested document, or one of the types with a layout of their own.
enum Shape {
    Fixed(usize),
    Boolean,
    String,
    Document,
    Binary,
    Regex,
    DbPointer,
    CodeWithScope,
}

fn shape(tag: u8) -> Option<Shape> {
    Some(match tag {
        0x06 | 0x0A | 0x7F | 0xFF => Shape::Fixed(0),
        0x10 => Shape::Fixed(4),
        0x01 | 0x09 | 0x11 | 0x12 => Shape::Fixed(8),
        0x07 => Shape::Fixed(12),
        0x13 => Shape::Fixed(16),
        0x08 => Shape::Boolean,
        0x02 | 0x0D | 0x0E => Shape::String,
        0x03 | 0x04 => Shape::Document,
        0x05 => Shape::Binary,
        0x0B => Shape::Regex,
        0x0C => Shape::DbPointer,
        0x0F => Shape::CodeWithScope,
        _ => return None,
    })
}

const MIN_DOCUMENT: usize = 5;
const MIN_CODE_WITH_SCOPE: usize = 4 + 5 + MIN_DOCUMENT;

/// Where the walk goes after an element's value.
enum Next {
    /// The next element starts here.
    At(usize),
    /// A document starts: its first element and its terminator. (The next element of the
    /// enclosing document follows the terminator: a nested document ends its element.)
    Into(usize, usize),
}

impl Walk<'_> {
    fn invalid(&self, reason: impl Into<String>) -> FramingError {
        FramingError::InvalidBson {
            what: self.what,
            reason: reason.into(),
        }
    }

    /// Every element of every nested document, depth first. `end` is the index of the
    /// terminator of the innermost open document; `open` holds the enclosing ones'.
    fn run(&self, max_depth: usize) -> Result<(), FramingError> {
        let mut open: Vec<usize> = Vec::new();
        let mut end = self.bytes.len() - 1;
        let mut at = 4;
        loop {
            if at == end {
                match open.pop() {
                    Some(outer) => (at, end) = (end + 1, outer),
                    None => return Ok(()),
                }
                continue;
            }
            let tag = self.bytes[at];
            let shape = shape(tag).ok_or_else(|| self.invalid(format!("invalid tag: {tag}")))?;
            let value = self.cstring(at + 1, end)?;
            match self.value(shape, value, end)? {
                Next::At(next) => at = next,
                Next::Into(first, terminator) => {
                    if open.len() + 1 >= max_depth {
                        return Err(FramingError::TooDeep);
                    }
                    open.push(end);
                    (at, end) = (first, terminator);
                }
            }
        }
    }

    /// Checks the value of the given shape starting at `at`, inside a document whose
    /// terminator is at `end`.
    fn value(&self, shape: Shape, at: usize, end: usize) -> Result<Next, FramingError> {
        let next = match shape {
            Shape::Fixed(len) => self.within(at, len, end)?,
            Shape::Boolean => {
                let next = self.within(at, 1, end)?;
                match self.bytes[at] {
                    0 | 1 => next,
                    other => {
                        return Err(self.invalid(format!("boolean must be 0 or 1, got {other}")));
                    }
                }
            }
            Shape::String => self.string(at, end)?,
            Shape::Document => {
                let terminator = self.document(at, end)?;
                return Ok(Next::Into(at + 4, terminator));
            }
            Shape::Binary => {
                let len = self.length(at, end)?;
                let next = self.within(at, 4 + 1 + len, end)?;
                if self.bytes[at + 4] == 0x02 {
                    // The old binary subtype repeats the length of its data inside it.
                    let inner = (len >= 4).then(|| self.i32_at(at + 5));
                    if inner.and_then(|n| usize::try_from(n).ok()) != Some(len.wrapping_sub(4)) {
                        return Err(self.invalid("old binary subtype has a wrong inner length"));
                    }
                }
                next
            }
            Shape::Regex => {
                let options = self.cstring(at, end)?;
                self.cstring(options, end)?
            }
            Shape::DbPointer => {
                let id = self.string(at, end)?;
                self.within(id, 12, end)?
            }
            Shape::CodeWithScope => {
                let len = self.length(at, end)?;
                let next = self.within(at, len, end)?;
                if len < MIN_CODE_WITH_SCOPE {
                    return Err(self.invalid("code with scope length too small"));
                }
                // The code, then the scope, which fills the rest of the value exactly.
                let scope = self.string(at + 4, next)?;
                let terminator = self.document(scope, next)?;
                if terminator != next - 1 {
                    return Err(self.invalid("code with scope has a wrong length"));
                }
                return Ok(Next::Into(scope + 4, terminator));
            }
        };
        Ok(Next::At(next))
    }

    /// The index after `len` bytes from `at`, if they lie before `end`.
    fn within(&self, at: usize, len: usize, end: usize) -> Result<usize, FramingError> {
        match at.checked_add(len) {
            Some(next) if next <= end => Ok(next),
            _ => Err(self.invalid("value extends past the end of its document")),
        }
    }

    fn i32_at(&self, at: usize) -> i32 {
        i32::from_le_bytes(self.bytes[at..at + 4].try_into().expect("four bytes"))
    }

    /// A non-negative length prefix at `at`.
    fn length(&self, at: usize, end: usize) -> Result<usize, FramingError> {
        self.within(at, 4, end)?;
        usize::try_from(self.i32_at(at)).map_err(|_| self.invalid("negative length"))
    }

    /// A C string (key or regex part) at `at`: UTF-8, ended by a NUL before `end`. Returns
    /// the index after the NUL.
    fn cstring(&self, at: usize, end: usize) -> Result<usize, FramingError> {
        let bytes = self.bytes.get(at..end).unwrap_or_default();
        let nul = bytes
            .iter()
            .position(|&b| b == 0)
            .ok_or_else(|| self.invalid("C string without a terminator"))?;
        self.utf8(&bytes[..nul])?;
        Ok(at + nul + 1)
    }

    /// A length-prefixed string at `at`: its length counts its NUL, which ends it. Returns
    /// the index after the NUL.
    fn string(&self, at: usize, end: usize) -> Result<usize, FramingError> {
        let len = self.length(at, end)?;
        if len == 0 {
            return Err(self.invalid("string length must count its terminator"));
        }
        let next = self.within(at + 4, len, end)?;
        if self.bytes[next - 1] != 0 {
            return Err(self.invalid("string not null-terminated"));
        }
        self.utf8(&self.bytes[at + 4..next - 1])?;
        Ok(next)
    }

    /// A nested document's header at `at`: a length of at least five bytes, ending before
    /// `end`, on a NUL. Returns the index of that terminator.
    fn document(&self, at: usize, end: usize) -> Result<usize, FramingError> {
        let len = self.length(at, end)?;
        if len < MIN_DOCUMENT {
            return Err(self.invalid(format!("document too small: {len} bytes")));
        }
        let next = self.within(at, len, end)?;
        if self.bytes[next - 1] != 0 {
            return Err(self.invalid("document not null-terminated"));
        }
        Ok(next - 1)
    }

    fn utf8(&self, bytes: &[u8]) -> Result<(), FramingError> {
        std::str::from_utf8(bytes)
            .map(drop)
            .map_err(|_| self.invalid("invalid UTF-8"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::raw::{RawBsonRef, RawIter};
    use bson::{RawDocumentBuf, rawdoc};
    use proptest::prelude::*;

    /// The walk through the `bson` crate's iterators that [`check_document`] replaced: it
    /// reads every value, so a document it reads without error is one the crate accepts.
    fn reference(document: &RawDocument, max_depth: usize) -> Result<(), FramingError> {
        let invalid = |err: bson::error::Error| FramingError::InvalidBson {
            what: "reference",
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
            let children: Option<RawIter<'_>> = match value {
                RawBsonRef::Document(document) => Some(document.iter_elements()),
                RawBsonRef::Array(array) => Some(array.iter_elements()),
                RawBsonRef::JavaScriptCodeWithScope(code) => Some(code.scope.iter_elements()),
                _ => None,
            };
            if let Some(children) = children {
                if open.len() >= max_depth {
                    return Err(FramingError::TooDeep);
                }
                open.push(children);
            }
        }
        Ok(())
    }

    /// Which of the three answers a check gave.
    fn verdict(result: &Result<(), FramingError>) -> &'static str {
        match result {
            Ok(()) => "valid",
            Err(FramingError::TooDeep) => "too deep",
            Err(FramingError::InvalidBson { .. }) => "invalid",
            Err(_) => "other",
        }
    }

    fn len_prefixed(body: &[u8], extra: usize) -> Vec<u8> {
        let mut out = i32::try_from(body.len() + 4 + extra)
            .unwrap()
            .to_le_bytes()
            .to_vec();
        out.extend_from_slice(body);
        out
    }

    fn bson_string(s: &str) -> Vec<u8> {
        let mut out = i32::try_from(s.len() + 1).unwrap().to_le_bytes().to_vec();
        out.extend_from_slice(s.as_bytes());
        out.push(0);
        out
    }

    fn cstring(s: &str) -> Vec<u8> {
        let mut out = s.as_bytes().to_vec();
        out.push(0);
        out
    }

    /// A document's bytes from its elements (tag, key, value bytes).
    fn document(elements: &[(u8, String, Vec<u8>)]) -> Vec<u8> {
        let mut body = Vec::new();
        for (tag, key, value) in elements {
            body.push(*tag);
            body.extend(cstring(key));
            body.extend_from_slice(value);
        }
        body.push(0);
        len_prefixed(&body, 0)
    }

    /// An element's type and value bytes, of every BSON type, nested up to a few levels.
    fn value() -> impl Strategy<Value = (u8, Vec<u8>)> {
        let text = "[a-z\u{e9}]{0,4}";
        let leaf = prop_oneof![
            (
                prop::sample::select(vec![0x01u8, 0x09, 0x11, 0x12]),
                any::<[u8; 8]>()
            )
                .prop_map(|(tag, b)| (tag, b.to_vec())),
            (prop::sample::select(vec![0x02u8, 0x0D, 0x0E]), text)
                .prop_map(|(tag, s)| (tag, bson_string(&s))),
            prop::sample::select(vec![0x06u8, 0x0A, 0x7F, 0xFF]).prop_map(|tag| (tag, vec![])),
            (0u8..2).prop_map(|b| (0x08, vec![b])),
            any::<i32>().prop_map(|n| (0x10, n.to_le_bytes().to_vec())),
            any::<[u8; 12]>().prop_map(|b| (0x07, b.to_vec())),
            any::<[u8; 16]>().prop_map(|b| (0x13, b.to_vec())),
            (0u8..6, prop::collection::vec(any::<u8>(), 0..6)).prop_map(|(subtype, data)| {
                // The old binary subtype repeats the length of the data after it.
                let data = match subtype {
                    2 => [
                        i32::try_from(data.len()).unwrap().to_le_bytes().to_vec(),
                        data,
                    ]
                    .concat(),
                    _ => data,
                };
                let mut out = i32::try_from(data.len()).unwrap().to_le_bytes().to_vec();
                out.push(subtype);
                out.extend(data);
                (0x05, out)
            }),
            ("[a-c]{0,3}", "[imx]{0,2}")
                .prop_map(|(p, o)| (0x0B, [cstring(&p), cstring(&o)].concat())),
            (text, any::<[u8; 12]>())
                .prop_map(|(ns, id)| (0x0C, [bson_string(&ns), id.to_vec()].concat())),
        ];
        leaf.prop_recursive(4, 24, 4, move |inner| {
            let elements = prop::collection::vec(("[a-z_$\u{e9}]{0,3}", inner.clone()), 0..4);
            prop_oneof![
                elements.clone().prop_map(|els| {
                    let els: Vec<_> = els.into_iter().map(|(k, (t, v))| (t, k, v)).collect();
                    (0x03, document(&els))
                }),
                prop::collection::vec(inner, 0..4).prop_map(|vals| {
                    let els: Vec<_> = vals
                        .into_iter()
                        .enumerate()
                        .map(|(i, (t, v))| (t, i.to_string(), v))
                        .collect();
                    (0x04, document(&els))
                }),
                ("[a-z]{0,3}", elements).prop_map(|(code, els)| {
                    let els: Vec<_> = els.into_iter().map(|(k, (t, v))| (t, k, v)).collect();
                    let body = [bson_string(&code), document(&els)].concat();
                    (0x0F, len_prefixed(&body, 0))
                }),
            ]
        })
    }

    /// What is done to one byte of a document: overwritten, often with a value at a boundary
    /// of a type tag, a boolean or UTF-8, or moved by a little, as a length that lies by a few
    /// bytes is.
    #[derive(Debug, Clone)]
    enum Damage {
        Set(u8),
        Add(i8),
    }

    fn damage() -> impl Strategy<Value = Damage> {
        prop_oneof![
            any::<u8>().prop_map(Damage::Set),
            prop::sample::select(vec![0u8, 1, 2, 3, 4, 5, 6, 0x7F, 0x80, 0xC3, 0xFF])
                .prop_map(Damage::Set),
            (-6i8..=6).prop_map(Damage::Add),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(20_000))]

        /// Well-formed documents get the answer the `bson` crate's own walk gives at every depth
        /// limit, and the same documents with a few bytes inside them damaged are refused
        /// exactly when the crate refuses them.
        #[test]
        fn the_walk_agrees_with_the_bson_crate(
            elements in prop::collection::vec(("[a-z_\u{e9}]{0,3}", value()), 0..5),
            damage in prop::collection::vec((any::<prop::sample::Index>(), damage()), 0..4),
            max_depth in 1usize..7,
        ) {
            let elements: Vec<_> = elements.into_iter().map(|(k, (t, v))| (t, k, v)).collect();
            let mut bytes = document(&elements);
            let inside = bytes.len() - 5;
            for (at, damage) in &damage {
                if inside > 0 {
                    let byte = &mut bytes[4 + at.index(inside)];
                    *byte = match damage {
                        Damage::Set(value) => *value,
                        Damage::Add(delta) => byte.wrapping_add_signed(*delta),
                    };
                }
            }
            let document = RawDocument::from_bytes(&bytes).expect("outer framing is kept");
            let ours = check_document(document, max_depth, "test document");
            let theirs = reference(document, max_depth);
            // A damaged document that is also nested too deep may be refused for either; the
            // two walks meet its faults in a different order (the crate reads an element that
            // runs into its document's terminator before refusing the document after it).
            match damage.is_empty() {
                true => prop_assert_eq!(verdict(&ours), verdict(&theirs), "{:?} / {:?}", ours, theirs),
                false => prop_assert_eq!(ours.is_ok(), theirs.is_ok(), "{:?} / {:?}", ours, theirs),
            }
        }
    }

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
