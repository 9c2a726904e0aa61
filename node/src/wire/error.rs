//! Why a byte stream or one message of it was refused. Most variants mean the connection is
//! out of step with its client or is being abused, so the only remedy is to close it. Where
//! mongod answers a malformed OP_MSG that was read to its end (a second body, an unknown
//! section kind, invalid BSON), [`FramingError::is_answered`] says so and the connection loop
//! replies with the error before reading on. None carries document contents (they are logged).

use std::io;

use ebb_config::limits::MAX_BSON_DEPTH;

#[derive(Debug, thiserror::Error)]
pub enum FramingError {
    #[error("reading from the connection failed: {0}")]
    Io(#[from] io::Error),

    #[error("connection closed after {received} of the {expected} bytes of a message")]
    ConnectionClosed { received: usize, expected: usize },

    #[error("only {received} bytes of a message arrived within {patience:?}")]
    Stalled {
        received: usize,
        patience: std::time::Duration,
    },

    #[error("messageLength {length} is shorter than the 16-byte header")]
    TooShort { length: i32 },

    #[error("messageLength {length} exceeds the maximum of {max} bytes")]
    TooLong { length: i32, max: usize },

    #[error("the frame is {actual} bytes but its header declares {declared}")]
    LengthMismatch { declared: usize, actual: usize },

    #[error("opcode {0} is not supported")]
    UnknownOpcode(i32),

    #[error("OP_MSG sets unknown required flag bits {0:#x}")]
    UnknownRequiredFlags(u32),

    #[error("OP_MSG checksum {declared:#010x} does not match its content ({computed:#010x})")]
    ChecksumMismatch { declared: u32, computed: u32 },

    #[error("OP_MSG section kind {0} is unknown")]
    UnknownSectionKind(u8),

    #[error("OP_MSG has no body section")]
    MissingBody,

    #[error("OP_MSG has more than one body section")]
    DuplicateBody,

    #[error("OP_MSG document sequence declares an impossible size {0}")]
    BadSequenceSize(i32),

    /// Two document sequences share an identifier.
    #[error("Duplicate document sequence: {0}")]
    DuplicateSequence(String),

    /// A document sequence names a field the body already has.
    #[error("Duplicate field between body and document sequence {0}")]
    SequenceInBody(String),

    #[error("{what} extends past the end of its enclosing structure")]
    Overrun { what: &'static str },

    #[error("{count} unexpected bytes after the {what}")]
    TrailingBytes { what: &'static str, count: usize },

    #[error("{what} is not a valid UTF-8 C string")]
    InvalidCString { what: &'static str },

    #[error("{what} is not valid BSON: {reason}")]
    InvalidBson { what: &'static str, reason: String },

    #[error("BSON is nested more than {} levels deep", MAX_BSON_DEPTH)]
    TooDeep,
}

impl FramingError {
    /// Whether mongod answers this error with an error reply and keeps the connection: the
    /// faults of an OP_MSG's content that it reports to the client. Faults in the header, the
    /// stream or the flag bits (unknown required flags, a wrong checksum) close the
    /// connection without a reply, as in mongod.
    pub fn is_answered(&self) -> bool {
        match self {
            FramingError::Io(_)
            | FramingError::ConnectionClosed { .. }
            | FramingError::Stalled { .. }
            | FramingError::TooShort { .. }
            | FramingError::TooLong { .. }
            | FramingError::LengthMismatch { .. }
            | FramingError::UnknownOpcode(_)
            | FramingError::UnknownRequiredFlags(_)
            | FramingError::ChecksumMismatch { .. } => false,
            FramingError::UnknownSectionKind(_)
            | FramingError::MissingBody
            | FramingError::DuplicateBody
            | FramingError::BadSequenceSize(_)
            | FramingError::DuplicateSequence(_)
            | FramingError::SequenceInBody(_)
            | FramingError::Overrun { .. }
            | FramingError::TrailingBytes { .. }
            | FramingError::InvalidCString { .. }
            | FramingError::InvalidBson { .. }
            | FramingError::TooDeep => true,
        }
    }
}
