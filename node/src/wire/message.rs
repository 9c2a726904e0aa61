//! The decoded request types the wire layer hands to the dispatcher.
//!
//! These are plain data: no parsing and no I/O here, and nothing about what a command means.

use bson::RawDocumentBuf;

/// OP_MSG flag bits (the wire-protocol spec §1.3).
pub(crate) const CHECKSUM_PRESENT: u32 = 1 << 0;
pub(crate) const MORE_TO_COME: u32 = 1 << 1;
pub(crate) const EXHAUST_ALLOWED: u32 = 1 << 16;

/// One request read from a connection.
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    /// The client's id for this request; a reply carries it back as `responseTo`.
    pub request_id: i32,
    pub body: Body,
}

/// What the request carried, by opcode.
#[derive(Debug, Clone, PartialEq)]
pub enum Body {
    /// OP_MSG (2013): every command after the handshake, and the handshake of newer drivers.
    Msg(OpMsg),
    /// OP_QUERY (2004): only the legacy `isMaster` handshake, answered with OP_REPLY.
    Query(OpQuery),
}

/// An OP_MSG request, its document sequences already merged into `command`.
#[derive(Debug, Clone, PartialEq)]
pub struct OpMsg {
    pub flags: MsgFlags,
    /// The body section, followed by one array field per document sequence, named by the
    /// sequence's identifier (so `insert` arrives with `documents` however the driver sent it).
    pub command: RawDocumentBuf,
}

/// The OP_MSG flag bits the protocol defines.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct MsgFlags {
    /// The request ended with a CRC-32C, which was verified and stripped.
    pub checksum_present: bool,
    /// Fire-and-forget (an unacknowledged write): the request must get no reply at all, or the
    /// client would pair that reply with its next request.
    pub more_to_come: bool,
    /// The client would accept a stream of replies; the server may ignore it, and we do.
    pub exhaust_allowed: bool,
}

/// An OP_QUERY request, as it came.
#[derive(Debug, Clone, PartialEq)]
pub struct OpQuery {
    pub flags: i32,
    /// `<db>.$cmd` for a command; anything else is a legacy query we do not serve.
    pub full_collection_name: String,
    pub number_to_skip: i32,
    pub number_to_return: i32,
    pub query: RawDocumentBuf,
    pub return_fields_selector: Option<RawDocumentBuf>,
}

impl Message {
    /// Whether the client waits for an answer. `false` for an OP_MSG with `moreToCome`.
    pub fn expects_reply(&self) -> bool {
        match &self.body {
            Body::Msg(msg) => !msg.flags.more_to_come,
            Body::Query(_) => true,
        }
    }
}

impl OpQuery {
    /// The database a command query addresses: the part of `full_collection_name` before
    /// `.$cmd`, or `None` when the query is not a command.
    pub fn db(&self) -> Option<&str> {
        self.full_collection_name
            .strip_suffix(".$cmd")
            .filter(|db| !db.is_empty())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::rawdoc;

    fn query_on(full_collection_name: &str) -> OpQuery {
        OpQuery {
            flags: 0,
            full_collection_name: full_collection_name.to_owned(),
            number_to_skip: 0,
            number_to_return: -1,
            query: rawdoc! { "isMaster": 1 },
            return_fields_selector: None,
        }
    }

    #[test]
    fn command_query_names_its_database() {
        assert_eq!(query_on("admin.$cmd").db(), Some("admin"));
        assert_eq!(query_on("my.db.$cmd").db(), Some("my.db"));
    }

    #[test]
    fn non_command_query_has_no_database() {
        assert_eq!(query_on("test.users").db(), None);
        assert_eq!(query_on(".$cmd").db(), None);
    }

    #[test]
    fn more_to_come_means_no_reply() {
        let message = |more_to_come| Message {
            request_id: 7,
            body: Body::Msg(OpMsg {
                flags: MsgFlags {
                    more_to_come,
                    ..MsgFlags::default()
                },
                command: rawdoc! { "insert": "c" },
            }),
        };
        assert!(message(false).expects_reply());
        assert!(!message(true).expects_reply());
    }

    #[test]
    fn op_query_always_expects_a_reply() {
        let message = Message {
            request_id: 1,
            body: Body::Query(query_on("admin.$cmd")),
        };
        assert!(message.expects_reply());
    }
}
