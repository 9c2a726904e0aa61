//! Test-only builders for request frames, shaped like what pymongo, the Node driver and the Rust
//! driver put on the wire, plus ways to break them.

use bson::RawDocument;

use super::header::{OP_MSG, OP_QUERY, encode_frame};
pub(crate) use super::message::{CHECKSUM_PRESENT, EXHAUST_ALLOWED, MORE_TO_COME};

/// An OP_MSG under construction: flag bits, then sections in the order they are added.
#[derive(Default)]
pub(crate) struct OpMsgBuilder {
    flags: u32,
    sections: Vec<u8>,
}

impl OpMsgBuilder {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    pub(crate) fn flags(mut self, flags: u32) -> Self {
        self.flags = flags;
        self
    }

    /// A kind-0 section.
    pub(crate) fn body(self, document: &RawDocument) -> Self {
        self.raw_section(0, document.as_bytes())
    }

    /// A kind-1 section: size, identifier, documents back to back.
    pub(crate) fn sequence(self, identifier: &str, documents: &[&RawDocument]) -> Self {
        let mut content = identifier.as_bytes().to_vec();
        content.push(0);
        for document in documents {
            content.extend_from_slice(document.as_bytes());
        }
        let size = i32::try_from(content.len() + 4).unwrap();
        let mut section = size.to_le_bytes().to_vec();
        section.extend_from_slice(&content);
        self.raw_section(1, &section)
    }

    /// Any section kind with any payload, for malformed frames.
    pub(crate) fn raw_section(mut self, kind: u8, payload: &[u8]) -> Self {
        self.sections.push(kind);
        self.sections.extend_from_slice(payload);
        self
    }

    /// The frame, with a correct CRC-32C appended when the checksum flag is set.
    pub(crate) fn build(&self, request_id: i32) -> Vec<u8> {
        let checksum_len = if self.flags & CHECKSUM_PRESENT != 0 {
            4
        } else {
            0
        };
        let mut frame = encode_frame(
            request_id,
            0,
            OP_MSG,
            &[
                &self.flags.to_le_bytes(),
                &self.sections,
                &[0; 4][..checksum_len],
            ],
        );
        if checksum_len > 0 {
            let content_len = frame.len() - 4;
            let checksum = crc32c::crc32c(&frame[..content_len]);
            frame[content_len..].copy_from_slice(&checksum.to_le_bytes());
        }
        frame
    }
}

/// An OP_QUERY as the legacy handshake sends it (`numberToReturn` -1).
pub(crate) fn op_query(
    request_id: i32,
    full_collection_name: &str,
    query: &RawDocument,
    return_fields_selector: Option<&RawDocument>,
) -> Vec<u8> {
    let mut payload = 0i32.to_le_bytes().to_vec();
    payload.extend_from_slice(full_collection_name.as_bytes());
    payload.push(0);
    payload.extend_from_slice(&0i32.to_le_bytes());
    payload.extend_from_slice(&(-1i32).to_le_bytes());
    payload.extend_from_slice(query.as_bytes());
    if let Some(selector) = return_fields_selector {
        payload.extend_from_slice(selector.as_bytes());
    }
    encode_frame(request_id, 0, OP_QUERY, &[&payload])
}

/// A frame with an arbitrary opcode and payload.
pub(crate) fn raw_frame(request_id: i32, op_code: i32, payload: &[u8]) -> Vec<u8> {
    encode_frame(request_id, 0, op_code, &[payload])
}
