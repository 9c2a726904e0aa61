//! The 16-byte standard message header, and the one function that frames any outgoing message.
//!
//! Layout (all little-endian int32): `messageLength` (including these 16 bytes) · `requestID` ·
//! `responseTo` · `opCode`. Parsing checks the length and the opcode so that a caller can refuse
//! a message before reading, or allocating for, its body.

use super::FramingError;

pub(crate) const HEADER_LEN: usize = 16;

pub(crate) const OP_REPLY: i32 = 1;
pub(crate) const OP_QUERY: i32 = 2004;
pub(crate) const OP_MSG: i32 = 2013;

/// The opcodes a client may send us. Everything else is refused, including OP_COMPRESSED (we
/// never advertise a compressor, so drivers never send it) and the legacy opcodes no driver sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RequestOp {
    Query,
    Msg,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Header {
    /// Checked to lie within `HEADER_LEN..=max_len`.
    pub(crate) message_length: usize,
    pub(crate) request_id: i32,
    pub(crate) op: RequestOp,
}

impl Header {
    /// Reads a request header, refusing lengths outside `16..=max_len` and opcodes a client may
    /// not send us.
    pub(crate) fn parse(bytes: &[u8; HEADER_LEN], max_len: usize) -> Result<Header, FramingError> {
        let field = |index: usize| {
            let start = index * 4;
            i32::from_le_bytes([
                bytes[start],
                bytes[start + 1],
                bytes[start + 2],
                bytes[start + 3],
            ])
        };
        let length = field(0);
        let message_length = match usize::try_from(length) {
            Ok(len) if len < HEADER_LEN => return Err(FramingError::TooShort { length }),
            Ok(len) if len > max_len => {
                return Err(FramingError::TooLong {
                    length,
                    max: max_len,
                });
            }
            Ok(len) => len,
            Err(_) => return Err(FramingError::TooShort { length }),
        };
        let op = match field(3) {
            OP_QUERY => RequestOp::Query,
            OP_MSG => RequestOp::Msg,
            other => return Err(FramingError::UnknownOpcode(other)),
        };
        Ok(Header {
            message_length,
            request_id: field(1),
            op,
        })
    }
}

/// Builds a complete message: a header whose length covers `parts`, then `parts` in order.
///
/// # Panics
///
/// If the message would exceed `i32::MAX` bytes. Replies are capped far below that by the
/// command layer (a single BSON document cannot exceed it either), so this is a bug, not input.
pub(crate) fn encode_frame(
    request_id: i32,
    response_to: i32,
    op_code: i32,
    parts: &[&[u8]],
) -> Vec<u8> {
    let total = HEADER_LEN + parts.iter().map(|part| part.len()).sum::<usize>();
    let length = i32::try_from(total).expect("a wire message cannot exceed i32::MAX bytes");
    let mut frame = Vec::with_capacity(total);
    for field in [length, request_id, response_to, op_code] {
        frame.extend_from_slice(&field.to_le_bytes());
    }
    for part in parts {
        frame.extend_from_slice(part);
    }
    frame
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(length: i32, op_code: i32) -> [u8; HEADER_LEN] {
        let mut bytes = [0; HEADER_LEN];
        bytes[0..4].copy_from_slice(&length.to_le_bytes());
        bytes[4..8].copy_from_slice(&42i32.to_le_bytes());
        bytes[12..16].copy_from_slice(&op_code.to_le_bytes());
        bytes
    }

    #[test]
    fn header_fields_are_little_endian() {
        let parsed = Header::parse(&header(300, 2013), 1000).unwrap();
        assert_eq!(
            parsed,
            Header {
                message_length: 300,
                request_id: 42,
                op: RequestOp::Msg,
            }
        );
    }

    #[test]
    fn length_below_header_size_is_refused() {
        for length in [0, 15, -1, i32::MIN] {
            let err = Header::parse(&header(length, 2013), 1000).unwrap_err();
            assert!(matches!(err, FramingError::TooShort { length: l } if l == length));
        }
    }

    #[test]
    fn length_above_maximum_is_refused() {
        let err = Header::parse(&header(1001, 2013), 1000).unwrap_err();
        assert!(matches!(
            err,
            FramingError::TooLong {
                length: 1001,
                max: 1000
            }
        ));
        assert!(Header::parse(&header(1000, 2013), 1000).is_ok());
    }

    #[test]
    fn only_op_msg_and_op_query_are_accepted() {
        assert_eq!(
            Header::parse(&header(16, 2004), 1000).unwrap().op,
            RequestOp::Query
        );
        for op_code in [1, 2001, 2002, 2005, 2006, 2007, 2012, 0, -1] {
            let err = Header::parse(&header(16, op_code), 1000).unwrap_err();
            assert!(matches!(err, FramingError::UnknownOpcode(c) if c == op_code));
        }
    }

    #[test]
    fn frame_length_counts_header_and_every_part() {
        let frame = encode_frame(5, 9, OP_REPLY, &[b"ab", b"", b"cde"]);
        assert_eq!(
            frame,
            [
                21, 0, 0, 0, // messageLength
                5, 0, 0, 0, // requestID
                9, 0, 0, 0, // responseTo
                1, 0, 0, 0, // opCode
                b'a', b'b', b'c', b'd', b'e',
            ]
        );
    }
}
