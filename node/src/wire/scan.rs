//! A forward-only reader over the bytes of one message body.
//!
//! Every read is bounds-checked and names what it was reading, so a short or lying input turns
//! into a [`FramingError`] that says which structure was wrong, never into a panic. Documents
//! come out fully validated (see [`super::bson_check`]), borrowed from the input.

use bson::RawDocument;
use bson::raw::CStr;

use super::FramingError;
use super::bson_check::check_document;

/// A BSON document is at least its int32 length and the terminating NUL.
const MIN_DOCUMENT_LEN: usize = 5;

pub(crate) struct Scanner<'a> {
    rest: &'a [u8],
}

impl<'a> Scanner<'a> {
    pub(crate) fn new(bytes: &'a [u8]) -> Self {
        Scanner { rest: bytes }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.rest.is_empty()
    }

    /// Fails unless everything has been read.
    pub(crate) fn finish(self, what: &'static str) -> Result<(), FramingError> {
        match self.rest.len() {
            0 => Ok(()),
            count => Err(FramingError::TrailingBytes { what, count }),
        }
    }

    pub(crate) fn take(
        &mut self,
        len: usize,
        what: &'static str,
    ) -> Result<&'a [u8], FramingError> {
        if len > self.rest.len() {
            return Err(FramingError::Overrun { what });
        }
        let (taken, rest) = self.rest.split_at(len);
        self.rest = rest;
        Ok(taken)
    }

    pub(crate) fn u8(&mut self, what: &'static str) -> Result<u8, FramingError> {
        Ok(self.take(1, what)?[0])
    }

    pub(crate) fn u32(&mut self, what: &'static str) -> Result<u32, FramingError> {
        Ok(u32::from_le_bytes(self.array(what)?))
    }

    pub(crate) fn i32(&mut self, what: &'static str) -> Result<i32, FramingError> {
        Ok(i32::from_le_bytes(self.array(what)?))
    }

    fn array<const N: usize>(&mut self, what: &'static str) -> Result<[u8; N], FramingError> {
        let bytes = self.take(N, what)?;
        let mut array = [0; N];
        array.copy_from_slice(bytes);
        Ok(array)
    }

    /// A NUL-terminated UTF-8 string; the NUL is consumed but not returned.
    pub(crate) fn cstr(&mut self, what: &'static str) -> Result<&'a CStr, FramingError> {
        let len = self
            .rest
            .iter()
            .position(|&byte| byte == 0)
            .ok_or(FramingError::Overrun { what })?;
        let bytes = self.take(len + 1, what)?;
        std::str::from_utf8(&bytes[..len])
            .ok()
            .and_then(bson::raw::validate_cstr)
            .ok_or(FramingError::InvalidCString { what })
    }

    /// A whole BSON document, checked to its last byte and to at most `max_depth` levels of
    /// nesting (the document itself being level 1).
    pub(crate) fn document(
        &mut self,
        what: &'static str,
        max_depth: usize,
    ) -> Result<&'a RawDocument, FramingError> {
        let declared = Scanner::new(self.rest).i32(what)?;
        let len = usize::try_from(declared)
            .ok()
            .filter(|&len| len >= MIN_DOCUMENT_LEN)
            .ok_or_else(|| FramingError::InvalidBson {
                what,
                reason: format!(
                    "length prefix {declared} is below the {MIN_DOCUMENT_LEN}-byte minimum"
                ),
            })?;
        let bytes = self.take(len, what)?;
        let document = RawDocument::from_bytes(bytes).map_err(|err| FramingError::InvalidBson {
            what,
            reason: err.to_string(),
        })?;
        check_document(document, max_depth, what)?;
        Ok(document)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::rawdoc;
    use ebb_config::limits::MAX_BSON_DEPTH;

    #[test]
    fn integers_are_little_endian_and_consumed_in_order() {
        let mut scan = Scanner::new(&[7, 1, 0, 0, 0, 0xff, 0xff, 0xff, 0xff]);
        assert_eq!(scan.u8("kind").unwrap(), 7);
        assert_eq!(scan.u32("flags").unwrap(), 1);
        assert_eq!(scan.i32("size").unwrap(), -1);
        assert!(scan.finish("test").is_ok());
    }

    #[test]
    fn reading_past_the_end_names_the_structure() {
        let mut scan = Scanner::new(&[1, 2, 3]);
        let err = scan.i32("flagBits").unwrap_err();
        assert!(matches!(err, FramingError::Overrun { what: "flagBits" }));
    }

    #[test]
    fn cstring_stops_at_the_first_nul() {
        let mut scan = Scanner::new(b"admin.$cmd\0rest");
        assert_eq!(scan.cstr("name").unwrap().as_str(), "admin.$cmd");
        let err = scan.finish("name").unwrap_err();
        assert!(matches!(err, FramingError::TrailingBytes { count: 4, .. }));
    }

    #[test]
    fn unterminated_cstring_is_refused() {
        let err = Scanner::new(b"documents").cstr("identifier").unwrap_err();
        assert!(matches!(err, FramingError::Overrun { what: "identifier" }));
    }

    #[test]
    fn non_utf8_cstring_is_refused() {
        let err = Scanner::new(b"\xff\xfe\0").cstr("identifier").unwrap_err();
        assert!(matches!(err, FramingError::InvalidCString { .. }));
    }

    #[test]
    fn document_is_borrowed_whole_and_the_rest_left() {
        let doc = rawdoc! { "ping": 1 };
        let mut bytes = doc.as_bytes().to_vec();
        bytes.push(9);
        let mut scan = Scanner::new(&bytes);
        assert_eq!(scan.document("body", MAX_BSON_DEPTH).unwrap(), &*doc);
        assert_eq!(scan.u8("next").unwrap(), 9);
    }

    #[test]
    fn document_longer_than_its_container_is_refused() {
        let doc = rawdoc! { "ping": 1 };
        let bytes = &doc.as_bytes()[..doc.as_bytes().len() - 1];
        let err = Scanner::new(bytes)
            .document("body", MAX_BSON_DEPTH)
            .unwrap_err();
        assert!(matches!(err, FramingError::Overrun { what: "body" }));
    }

    #[test]
    fn document_length_below_minimum_is_refused() {
        for declared in [4i32, 0, -5] {
            let mut bytes = declared.to_le_bytes().to_vec();
            bytes.extend_from_slice(&[0; 8]);
            let err = Scanner::new(&bytes)
                .document("body", MAX_BSON_DEPTH)
                .unwrap_err();
            assert!(matches!(
                err,
                FramingError::InvalidBson { what: "body", .. }
            ));
        }
    }

    #[test]
    fn document_without_terminator_is_refused() {
        let err = Scanner::new(&[6, 0, 0, 0, 0, 1])
            .document("body", MAX_BSON_DEPTH)
            .unwrap_err();
        assert!(matches!(err, FramingError::InvalidBson { .. }));
    }
}
