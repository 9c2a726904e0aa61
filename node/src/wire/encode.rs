//! The two reply shapes the node sends: OP_MSG for OP_MSG requests, OP_REPLY for OP_QUERY.
//!
//! Drivers are strict about replies: pymongo refuses a reply with the checksum flag or with more
//! than one section, Node refuses a kind-1 section, and both insist `responseTo` echoes the
//! request's id. So each reply is exactly one fixed shape around one document. Whether to reply
//! at all (`moreToCome`) is the connection loop's decision, not ours.

use bson::RawDocument;

use super::header::{OP_MSG, OP_REPLY, encode_frame};

/// `flagBits` 0 (no checksum, no moreToCome) · section kind 0.
const OP_MSG_REPLY_PREFIX: [u8; 5] = [0, 0, 0, 0, 0];

/// `responseFlags` 0 · `cursorID` 0 (int64) · `startingFrom` 0 · `numberReturned` 1.
const OP_REPLY_PREFIX: [u8; 20] = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0];

/// An OP_MSG reply carrying `body` as its single kind-0 section. `response_to` must be the
/// request's `request_id`.
pub fn encode_op_msg_reply(request_id: i32, response_to: i32, body: &RawDocument) -> Vec<u8> {
    encode_frame(
        request_id,
        response_to,
        OP_MSG,
        &[&OP_MSG_REPLY_PREFIX, body.as_bytes()],
    )
}

/// An OP_REPLY carrying `document` as its only document: the answer to an OP_QUERY handshake.
/// Command errors go in the document (`ok: 0`), never in `responseFlags`.
pub fn encode_op_reply(request_id: i32, response_to: i32, document: &RawDocument) -> Vec<u8> {
    encode_frame(
        request_id,
        response_to,
        OP_REPLY,
        &[&OP_REPLY_PREFIX, document.as_bytes()],
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::{Body, decode_frame};
    const DEFAULT_MAX_MESSAGE_LEN: usize = ebb_config::limits::MAX_MESSAGE_BYTES as usize;
    use bson::rawdoc;

    /// `{ok: 1.0}`: 17 bytes.
    const OK_DOCUMENT: [u8; 17] = [
        0x11, 0, 0, 0, // document length
        0x01, b'o', b'k', 0, // double "ok"
        0, 0, 0, 0, 0, 0, 0xf0, 0x3f, // 1.0
        0,    // terminator
    ];

    fn ok() -> bson::RawDocumentBuf {
        let document = rawdoc! { "ok": 1.0 };
        assert_eq!(document.as_bytes(), OK_DOCUMENT);
        document
    }

    #[test]
    fn op_msg_reply_is_flags_zero_and_one_body_section() {
        let mut expected = vec![
            38, 0, 0, 0, // messageLength = 16 + 4 + 1 + 17
            7, 0, 0, 0, // requestID
            0x2a, 0x01, 0, 0, // responseTo = 298
            0xdd, 0x07, 0, 0, // opCode 2013
            0, 0, 0, 0, // flagBits
            0, // section kind 0
        ];
        expected.extend_from_slice(&OK_DOCUMENT);
        assert_eq!(encode_op_msg_reply(7, 298, &ok()), expected);
    }

    #[test]
    fn op_reply_returns_one_document_with_no_cursor() {
        let mut expected = vec![
            53, 0, 0, 0, // messageLength = 16 + 20 + 17
            1, 0, 0, 0, // requestID
            0xff, 0xff, 0xff, 0x7f, // responseTo = i32::MAX
            1, 0, 0, 0, // opCode 1
            0, 0, 0, 0, // responseFlags
            0, 0, 0, 0, 0, 0, 0, 0, // cursorID
            0, 0, 0, 0, // startingFrom
            1, 0, 0, 0, // numberReturned
        ];
        expected.extend_from_slice(&OK_DOCUMENT);
        assert_eq!(encode_op_reply(1, i32::MAX, &ok()), expected);
    }

    #[test]
    fn op_msg_reply_decodes_back_to_its_body() {
        let body = rawdoc! { "ok": 1.0, "cursor": { "id": 0i64, "ns": "db.c", "firstBatch": [] } };
        let frame = encode_op_msg_reply(3, 2, &body);
        let message = decode_frame(&frame, DEFAULT_MAX_MESSAGE_LEN).unwrap();
        assert_eq!(message.request_id, 3);
        let Body::Msg(msg) = message.body else {
            panic!("expected OP_MSG, got {:?}", message.body);
        };
        assert_eq!(msg.command, body);
        assert!(!msg.flags.checksum_present && !msg.flags.more_to_come);
    }
}
