//! Turning one complete frame into a [`Message`]: OP_MSG (flags, checksum, sections, document
//! sequences merged into the command) and OP_QUERY (the legacy handshake).
//!
//! Pure and synchronous: the bytes are already in memory, and reading them off a socket is
//! [`super::read`]'s business. Nothing here interprets the command.

use bson::raw::{CStr, RawArrayBuf};
use bson::{RawDocument, RawDocumentBuf};

use super::header::{HEADER_LEN, Header, RequestOp};
use super::message::{CHECKSUM_PRESENT, EXHAUST_ALLOWED, MORE_TO_COME};
use super::scan::Scanner;
use super::{Body, FramingError, Message, MsgFlags, OpMsg, OpQuery};
use ebb_config::limits::MAX_BSON_DEPTH;

/// The low 16 flag bits are "required": a receiver that does not know one must refuse the
/// message. The high 16 are optional and may be ignored.
const REQUIRED_BITS: u32 = 0xffff;
const KNOWN_REQUIRED_BITS: u32 = CHECKSUM_PRESENT | MORE_TO_COME;

const FLAGS_LEN: usize = 4;
const CHECKSUM_LEN: usize = 4;

/// A document in a sequence becomes an element of an array field of the command, two levels
/// below it.
const SEQUENCE_DOCUMENT_MAX_DEPTH: usize = MAX_BSON_DEPTH - 2;

/// Decodes one complete message (header included). `max_len` bounds `messageLength` as in
/// [`super::read_message`].
pub fn decode_frame(frame: &[u8], max_len: usize) -> Result<Message, FramingError> {
    let header_bytes = frame
        .first_chunk::<HEADER_LEN>()
        .ok_or(FramingError::Overrun {
            what: "message header",
        })?;
    let header = Header::parse(header_bytes, max_len)?;
    if frame.len() != header.message_length {
        return Err(FramingError::LengthMismatch {
            declared: header.message_length,
            actual: frame.len(),
        });
    }
    let body = match header.op {
        RequestOp::Msg => Body::Msg(decode_op_msg(frame)?),
        RequestOp::Query => Body::Query(decode_op_query(&frame[HEADER_LEN..])?),
    };
    Ok(Message {
        request_id: header.request_id,
        body,
    })
}

/// Layout after the header: `uint32 flagBits` · sections… · optional `uint32 crc32c`.
fn decode_op_msg(frame: &[u8]) -> Result<OpMsg, FramingError> {
    let mut scan = Scanner::new(&frame[HEADER_LEN..]);
    let flags = parse_flags(scan.u32("OP_MSG flagBits")?)?;
    let content = if flags.checksum_present {
        verified_content(frame)?
    } else {
        frame
    };
    let sections = Scanner::new(&content[HEADER_LEN + FLAGS_LEN..]);
    Ok(OpMsg {
        flags,
        command: decode_sections(sections)?,
    })
}

fn parse_flags(bits: u32) -> Result<MsgFlags, FramingError> {
    let unknown = bits & REQUIRED_BITS & !KNOWN_REQUIRED_BITS;
    if unknown != 0 {
        return Err(FramingError::UnknownRequiredFlags(unknown));
    }
    Ok(MsgFlags {
        checksum_present: bits & CHECKSUM_PRESENT != 0,
        more_to_come: bits & MORE_TO_COME != 0,
        exhaust_allowed: bits & EXHAUST_ALLOWED != 0,
    })
}

/// The frame without its trailing CRC-32C, once the checksum (computed over everything before
/// it, header included) has been verified.
fn verified_content(frame: &[u8]) -> Result<&[u8], FramingError> {
    let content_len = frame
        .len()
        .checked_sub(CHECKSUM_LEN)
        .filter(|&len| len >= HEADER_LEN + FLAGS_LEN)
        .ok_or(FramingError::Overrun {
            what: "OP_MSG checksum",
        })?;
    let (content, checksum) = frame.split_at(content_len);
    let declared = u32::from_le_bytes([checksum[0], checksum[1], checksum[2], checksum[3]]);
    let computed = crc32c::crc32c(content);
    if declared != computed {
        return Err(FramingError::ChecksumMismatch { declared, computed });
    }
    Ok(content)
}

/// A kind-1 section: a named run of documents.
struct Sequence<'a> {
    identifier: &'a CStr,
    documents: Vec<&'a RawDocument>,
}

/// Sections may come in any order: exactly one kind-0 body, any number of kind-1 sequences.
fn decode_sections(mut scan: Scanner<'_>) -> Result<RawDocumentBuf, FramingError> {
    let mut body = None;
    let mut sequences = Vec::new();
    while !scan.is_empty() {
        match scan.u8("OP_MSG section kind")? {
            0 => {
                let document = scan.document("OP_MSG body", MAX_BSON_DEPTH)?;
                if body.replace(document).is_some() {
                    return Err(FramingError::DuplicateBody);
                }
            }
            1 => sequences.push(decode_sequence(&mut scan)?),
            kind => return Err(FramingError::UnknownSectionKind(kind)),
        }
    }
    merge(body.ok_or(FramingError::MissingBody)?, &sequences)
}

/// Layout: `int32 size` (counting itself, not the kind byte) · `cstring identifier` ·
/// documents back to back until `size` is used up.
fn decode_sequence<'a>(scan: &mut Scanner<'a>) -> Result<Sequence<'a>, FramingError> {
    let size = scan.i32("OP_MSG document sequence size")?;
    let content_len = usize::try_from(size)
        .ok()
        .and_then(|size| size.checked_sub(4))
        .ok_or(FramingError::BadSequenceSize(size))?;
    let mut content = Scanner::new(scan.take(content_len, "OP_MSG document sequence")?);
    let identifier = content.cstr("OP_MSG document sequence identifier")?;
    let mut documents = Vec::new();
    while !content.is_empty() {
        documents.push(content.document(
            "document in an OP_MSG sequence",
            SEQUENCE_DOCUMENT_MAX_DEPTH,
        )?);
    }
    Ok(Sequence {
        identifier,
        documents,
    })
}

/// The body with each sequence appended as an array field named by its identifier. A field
/// may arrive one way or the other, never both, nor twice.
fn merge(body: &RawDocument, sequences: &[Sequence<'_>]) -> Result<RawDocumentBuf, FramingError> {
    for (index, sequence) in sequences.iter().enumerate() {
        let name = sequence.identifier.as_str();
        let repeated = sequences[..index]
            .iter()
            .any(|earlier| earlier.identifier.as_str() == name);
        if repeated {
            return Err(FramingError::DuplicateSequence(name.to_owned()));
        }
        if body_has_field(body, name) {
            return Err(FramingError::SequenceInBody(name.to_owned()));
        }
    }
    let mut command = body.to_owned();
    for sequence in sequences {
        let array: RawArrayBuf = sequence.documents.iter().copied().collect();
        command.append(sequence.identifier, array);
    }
    Ok(command)
}

/// `body` has already been validated, so its keys can be read without error.
fn body_has_field(body: &RawDocument, name: &str) -> bool {
    body.iter_elements()
        .flatten()
        .any(|element| element.key().as_str() == name)
}

/// Layout after the header: `int32 flags` · `cstring fullCollectionName` · `int32 numberToSkip` ·
/// `int32 numberToReturn` · `document query` · optional `document returnFieldsSelector`.
fn decode_op_query(payload: &[u8]) -> Result<OpQuery, FramingError> {
    let mut scan = Scanner::new(payload);
    let flags = scan.i32("OP_QUERY flags")?;
    let full_collection_name = scan
        .cstr("OP_QUERY fullCollectionName")?
        .as_str()
        .to_owned();
    let number_to_skip = scan.i32("OP_QUERY numberToSkip")?;
    let number_to_return = scan.i32("OP_QUERY numberToReturn")?;
    let query = scan.document("OP_QUERY query", MAX_BSON_DEPTH)?.to_owned();
    let return_fields_selector = if scan.is_empty() {
        None
    } else {
        Some(
            scan.document("OP_QUERY returnFieldsSelector", MAX_BSON_DEPTH)?
                .to_owned(),
        )
    };
    scan.finish("OP_QUERY returnFieldsSelector")?;
    Ok(OpQuery {
        flags,
        full_collection_name,
        number_to_skip,
        number_to_return,
        query,
        return_fields_selector,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    const DEFAULT_MAX_MESSAGE_LEN: usize = ebb_config::limits::MAX_MESSAGE_BYTES as usize;
    use crate::wire::testing::{
        CHECKSUM_PRESENT, EXHAUST_ALLOWED, MORE_TO_COME, OpMsgBuilder, op_query, raw_frame,
    };
    use bson::rawdoc;

    fn decode(frame: &[u8]) -> Result<Message, FramingError> {
        decode_frame(frame, DEFAULT_MAX_MESSAGE_LEN)
    }

    fn op_msg(frame: &[u8]) -> OpMsg {
        match decode(frame).unwrap().body {
            Body::Msg(msg) => msg,
            other => panic!("expected OP_MSG, got {other:?}"),
        }
    }

    fn op_msg_error(builder: OpMsgBuilder) -> FramingError {
        decode(&builder.build(1)).unwrap_err()
    }

    fn insert_body() -> RawDocumentBuf {
        rawdoc! { "insert": "users", "ordered": true, "$db": "test" }
    }

    #[test]
    fn body_only_message_is_the_command() {
        let hello = rawdoc! { "isMaster": 1, "helloOk": true, "$db": "admin" };
        let frame = OpMsgBuilder::new().body(&hello).build(42);
        let message = decode(&frame).unwrap();
        assert_eq!(message.request_id, 42);
        assert_eq!(
            message.body,
            Body::Msg(OpMsg {
                flags: MsgFlags::default(),
                command: hello,
            })
        );
    }

    #[test]
    fn document_sequence_is_merged_into_the_command_as_an_array() {
        let frame = OpMsgBuilder::new()
            .body(&insert_body())
            .sequence(
                "documents",
                &[&rawdoc! { "_id": 1 }, &rawdoc! { "_id": 2, "a": "x" }],
            )
            .build(1);
        let expected = rawdoc! {
            "insert": "users", "ordered": true, "$db": "test",
            "documents": [{ "_id": 1 }, { "_id": 2, "a": "x" }],
        };
        assert_eq!(op_msg(&frame).command, expected);
    }

    #[test]
    fn sequence_before_the_body_gives_the_same_command() {
        let documents = [&*rawdoc! { "_id": 1 }];
        let body_first = OpMsgBuilder::new()
            .body(&insert_body())
            .sequence("documents", &documents)
            .build(1);
        let sequence_first = OpMsgBuilder::new()
            .sequence("documents", &documents)
            .body(&insert_body())
            .build(1);
        assert_eq!(op_msg(&body_first), op_msg(&sequence_first));
    }

    #[test]
    fn several_sequences_become_fields_in_wire_order() {
        let frame = OpMsgBuilder::new()
            .body(&rawdoc! { "bulkWrite": 1, "$db": "admin" })
            .sequence("ops", &[&rawdoc! { "insert": 0, "document": { "x": 1 } }])
            .sequence("nsInfo", &[&rawdoc! { "ns": "test.users" }])
            .build(1);
        let expected = rawdoc! {
            "bulkWrite": 1, "$db": "admin",
            "ops": [{ "insert": 0, "document": { "x": 1 } }],
            "nsInfo": [{ "ns": "test.users" }],
        };
        assert_eq!(op_msg(&frame).command, expected);
    }

    #[test]
    fn empty_sequence_becomes_an_empty_array() {
        let frame = OpMsgBuilder::new()
            .body(&insert_body())
            .sequence("documents", &[])
            .build(1);
        let command = op_msg(&frame).command;
        assert!(command.get_array("documents").unwrap().is_empty());
    }

    #[test]
    fn checksummed_message_is_verified_and_stripped() {
        let frame = OpMsgBuilder::new()
            .flags(CHECKSUM_PRESENT)
            .body(&insert_body())
            .sequence("documents", &[&rawdoc! { "_id": 1 }])
            .build(1);
        let msg = op_msg(&frame);
        assert!(msg.flags.checksum_present);
        assert_eq!(
            msg.command
                .get_array("documents")
                .unwrap()
                .into_iter()
                .count(),
            1
        );
    }

    #[test]
    fn more_to_come_is_exposed_so_no_reply_is_sent() {
        let frame = OpMsgBuilder::new()
            .flags(MORE_TO_COME)
            .body(&insert_body())
            .build(1);
        let message = decode(&frame).unwrap();
        assert!(!message.expects_reply());
    }

    #[test]
    fn exhaust_allowed_and_unknown_optional_bits_are_accepted() {
        let frame = OpMsgBuilder::new()
            .flags(EXHAUST_ALLOWED | (1 << 31) | (1 << 20))
            .body(&rawdoc! { "hello": 1, "$db": "admin" })
            .build(1);
        let msg = op_msg(&frame);
        assert!(msg.flags.exhaust_allowed);
        assert!(!msg.flags.more_to_come && !msg.flags.checksum_present);
    }

    #[test]
    fn legacy_handshake_query_exposes_database_and_query() {
        let ismaster = rawdoc! { "ismaster": 1, "helloOk": true, "client": { "driver": { "name": "nodejs" } } };
        let message = decode(&op_query(9, "admin.$cmd", &ismaster, None)).unwrap();
        assert_eq!(message.request_id, 9);
        let Body::Query(query) = message.body else {
            panic!("expected OP_QUERY");
        };
        assert_eq!(query.db(), Some("admin"));
        assert_eq!(query.number_to_skip, 0);
        assert_eq!(query.number_to_return, -1);
        assert_eq!(query.query, ismaster);
        assert_eq!(query.return_fields_selector, None);
    }

    #[test]
    fn query_keeps_its_return_fields_selector() {
        let selector = rawdoc! { "ok": 1 };
        let frame = op_query(1, "admin.$cmd", &rawdoc! { "isMaster": 1 }, Some(&selector));
        let Body::Query(query) = decode(&frame).unwrap().body else {
            panic!("expected OP_QUERY");
        };
        assert_eq!(query.return_fields_selector, Some(selector));
    }

    #[test]
    fn bytes_after_the_query_documents_are_refused() {
        let mut frame = op_query(
            1,
            "admin.$cmd",
            &rawdoc! { "isMaster": 1 },
            Some(&rawdoc! {}),
        );
        frame.push(0);
        frame[0] += 1;
        assert!(matches!(
            decode(&frame),
            Err(FramingError::TrailingBytes { count: 1, .. })
        ));
    }

    #[test]
    fn query_collection_name_must_be_utf8() {
        let mut frame = op_query(1, "admin.$cmd", &rawdoc! { "isMaster": 1 }, None);
        let first_letter_of_name = 16 + 4;
        frame[first_letter_of_name] = 0xff;
        assert!(matches!(
            decode(&frame),
            Err(FramingError::InvalidCString { .. })
        ));
    }

    #[test]
    fn unknown_required_flag_bit_is_refused() {
        for bit in [2, 3, 15] {
            let err = op_msg_error(OpMsgBuilder::new().flags(1 << bit).body(&insert_body()));
            assert!(matches!(err, FramingError::UnknownRequiredFlags(bits) if bits == 1 << bit));
        }
    }

    #[test]
    fn checksum_that_does_not_match_is_refused() {
        let mut frame = OpMsgBuilder::new()
            .flags(CHECKSUM_PRESENT)
            .body(&rawdoc! { "ping": 1, "$db": "admin" })
            .build(1);
        // Upper-case the "i" of "admin": still valid BSON, so only the checksum can tell.
        let letter = frame.len() - 4 - 4;
        assert_eq!(frame[letter], b'i');
        frame[letter] = b'I';
        assert!(matches!(
            decode(&frame),
            Err(FramingError::ChecksumMismatch { .. })
        ));
    }

    #[test]
    fn checksum_flag_without_room_for_a_checksum_is_refused() {
        let frame = raw_frame(1, 2013, &[1, 0, 0, 0, 0, 0]);
        assert!(matches!(
            decode(&frame),
            Err(FramingError::Overrun {
                what: "OP_MSG checksum"
            })
        ));
    }

    #[test]
    fn unknown_section_kind_is_refused() {
        let err = op_msg_error(
            OpMsgBuilder::new()
                .body(&insert_body())
                .raw_section(2, &[5, 0, 0, 0, 0]),
        );
        assert!(matches!(err, FramingError::UnknownSectionKind(2)));
    }

    #[test]
    fn message_without_body_is_refused() {
        assert!(matches!(
            op_msg_error(OpMsgBuilder::new()),
            FramingError::MissingBody
        ));
        let only_sequence = OpMsgBuilder::new().sequence("documents", &[&rawdoc! {}]);
        assert!(matches!(
            op_msg_error(only_sequence),
            FramingError::MissingBody
        ));
    }

    #[test]
    fn second_body_is_refused() {
        let err = op_msg_error(
            OpMsgBuilder::new()
                .body(&insert_body())
                .body(&insert_body()),
        );
        assert!(matches!(err, FramingError::DuplicateBody));
    }

    #[test]
    fn repeated_sequence_identifier_is_refused() {
        let twice = OpMsgBuilder::new()
            .body(&insert_body())
            .sequence("documents", &[&rawdoc! { "_id": 1 }])
            .sequence("documents", &[&rawdoc! { "_id": 2 }]);
        assert!(matches!(
            op_msg_error(twice),
            FramingError::DuplicateSequence(name) if name == "documents"
        ));
    }

    #[test]
    fn sequence_named_like_a_body_field_is_refused() {
        let both_ways = OpMsgBuilder::new()
            .body(&rawdoc! { "insert": "users", "documents": [], "$db": "test" })
            .sequence("documents", &[&rawdoc! { "_id": 1 }]);
        assert!(matches!(
            op_msg_error(both_ways),
            FramingError::SequenceInBody(name) if name == "documents"
        ));
    }

    /// A kind-1 section whose payload is `size` followed by `rest`, verbatim.
    fn sequence_with_size(size: i32, rest: &[u8]) -> OpMsgBuilder {
        let mut payload = size.to_le_bytes().to_vec();
        payload.extend_from_slice(rest);
        OpMsgBuilder::new()
            .body(&insert_body())
            .raw_section(1, &payload)
    }

    #[test]
    fn sequence_size_smaller_than_its_own_field_is_refused() {
        for size in [3, 0, -1, i32::MIN] {
            let err = op_msg_error(sequence_with_size(size, b"documents\0"));
            assert!(matches!(err, FramingError::BadSequenceSize(s) if s == size));
        }
    }

    #[test]
    fn sequence_size_beyond_the_message_is_refused() {
        let err = op_msg_error(sequence_with_size(100, b"documents\0"));
        assert!(matches!(
            err,
            FramingError::Overrun {
                what: "OP_MSG document sequence"
            }
        ));
    }

    #[test]
    fn sequence_size_that_cuts_the_identifier_is_refused() {
        let err = op_msg_error(sequence_with_size(8, b"documents\0"));
        assert!(matches!(
            err,
            FramingError::Overrun {
                what: "OP_MSG document sequence identifier"
            }
        ));
    }

    #[test]
    fn document_cut_by_the_sequence_size_is_refused() {
        let mut rest = b"documents\0".to_vec();
        rest.extend_from_slice(rawdoc! { "_id": 1 }.as_bytes());
        let size = i32::try_from(4 + rest.len() - 1).unwrap();
        let err = op_msg_error(sequence_with_size(size, &rest));
        assert!(matches!(
            err,
            FramingError::Overrun {
                what: "document in an OP_MSG sequence"
            }
        ));
    }

    #[test]
    fn body_longer_than_the_frame_is_refused() {
        let mut frame = OpMsgBuilder::new().body(&insert_body()).build(1);
        frame.truncate(frame.len() - 3);
        frame[0] -= 3;
        assert!(matches!(
            decode(&frame),
            Err(FramingError::Overrun {
                what: "OP_MSG body"
            })
        ));
    }

    #[test]
    fn body_whose_inner_length_lies_is_refused() {
        let body = rawdoc! { "find": "users", "filter": { "a": 1 }, "$db": "test" };
        let mut bytes = body.into_bytes();
        let filter_len_at = 4 + 1 + "find\0".len() + 4 + "users\0".len() + 1 + "filter\0".len();
        assert_eq!(
            bytes[filter_len_at], 12,
            "the filter document's length prefix"
        );
        bytes[filter_len_at] = 13;
        let frame = OpMsgBuilder::new().raw_section(0, &bytes).build(1);
        assert!(matches!(
            decode(&frame),
            Err(FramingError::InvalidBson {
                what: "OP_MSG body",
                ..
            })
        ));
    }

    fn nested(depth: usize) -> RawDocumentBuf {
        (1..depth).fold(rawdoc! {}, |inner, _| rawdoc! { "a": inner })
    }

    #[test]
    fn sequence_documents_count_their_depth_inside_the_command() {
        let deepest_body = OpMsgBuilder::new().body(&nested(MAX_BSON_DEPTH)).build(1);
        assert!(decode(&deepest_body).is_ok());
        let too_deep_body = OpMsgBuilder::new().body(&nested(MAX_BSON_DEPTH + 1));
        assert!(matches!(op_msg_error(too_deep_body), FramingError::TooDeep));

        let deepest_document = nested(MAX_BSON_DEPTH - 2);
        let frame = OpMsgBuilder::new()
            .body(&insert_body())
            .sequence("documents", &[&deepest_document])
            .build(1);
        assert!(decode(&frame).is_ok());
        let too_deep_document = nested(MAX_BSON_DEPTH - 1);
        let err = op_msg_error(
            OpMsgBuilder::new()
                .body(&insert_body())
                .sequence("documents", &[&too_deep_document]),
        );
        assert!(matches!(err, FramingError::TooDeep));
    }

    #[test]
    fn frame_must_be_exactly_its_declared_length() {
        let mut frame = OpMsgBuilder::new().body(&insert_body()).build(1);
        frame.push(0);
        assert!(matches!(
            decode(&frame),
            Err(FramingError::LengthMismatch { .. })
        ));
        assert!(matches!(
            decode(&frame[..10]),
            Err(FramingError::Overrun {
                what: "message header"
            })
        ));
    }

    #[test]
    fn compressed_and_legacy_opcodes_are_refused() {
        for op_code in [2012, 2001, 2002, 2005, 2006, 2007, 1] {
            let frame = raw_frame(1, op_code, &[0; 8]);
            assert!(matches!(decode(&frame), Err(FramingError::UnknownOpcode(c)) if c == op_code));
        }
    }
}
