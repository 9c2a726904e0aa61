//! The MongoDB wire protocol framing: the first of the node's three hops
//! (bytes → [`Message`] → command → reply).
//!
//! This module owns the byte layout of the messages drivers send (OP_MSG, plus OP_QUERY for the
//! legacy `isMaster` handshake) and of the replies we send back (OP_MSG, and OP_REPLY only as
//! the answer to an OP_QUERY). It hands the next layer one validated `RawDocumentBuf` per
//! request, with OP_MSG document sequences already merged into it, and it never lets a client
//! crash the server: lengths are checked before anything is allocated, every BSON document is
//! walked to its end without recursion, and anything malformed is a [`FramingError`].
//!
//! It must not know about commands: it neither reads command names nor decides what to answer
//! (an OP_QUERY is handed up as it came). Most framing errors mean the byte stream can no longer
//! be trusted to be in step with the client, so the connection loop logs them at `debug` and
//! closes that one connection. A malformed OP_MSG that was read to its end and that mongod
//! answers comes up as [`Incoming::Refused`], and the loop replies with the error (its code
//! comes from `crate::error`) before reading on. Command errors are the dispatcher's `{ok: 0}`
//! replies, not ours.

mod bson_check;
mod decode;
mod encode;
mod error;
mod header;
mod message;
mod read;
mod scan;
#[cfg(test)]
mod testing;

pub use decode::decode_frame;
pub use encode::{encode_op_msg_reply, encode_op_reply};
pub use error::FramingError;
pub use message::{Body, Message, MsgFlags, OpMsg, OpQuery};
pub use read::{Incoming, read_message};
