//! MongoDB errors: the one place where failures get their `code`,
//! `codeName` and `errmsg`.
//!
//! Storage and actor errors arrive as semantic kinds and are mapped here by
//! [`code_of`]. Engine failures and corruption become InternalError (1)
//! with a generic message: storage details go to the log, never to the
//! client. A command error is an `{ok: 0}` reply; the connection lives on.

use bson::{Document, RawDocumentBuf, doc};
use ebb_storage::{Error as StorageError, ErrorKind};

/// A failed command, as the client will see it.
#[derive(Debug, Clone, PartialEq)]
pub struct CommandError {
    pub code: i32,
    pub errmsg: String,
    /// Extra fields for the reply (e.g. `keyPattern`/`keyValue`).
    pub extra: Option<Box<Document>>,
}

pub type CommandResult<T = RawDocumentBuf> = Result<T, CommandError>;

/// MongoDB's error codes that ebb raises itself (not via a storage kind).
pub mod codes {
    pub const INTERNAL_ERROR: i32 = 1;
    pub const BAD_VALUE: i32 = 2;
    pub const NO_SUCH_KEY: i32 = 4;
    pub const FAILED_TO_PARSE: i32 = 9;
    pub const TYPE_MISMATCH: i32 = 14;
    pub const ILLEGAL_OPERATION: i32 = 20;
    pub const NAMESPACE_NOT_FOUND: i32 = 26;
    pub const INDEX_NOT_FOUND: i32 = 27;
    pub const CURSOR_NOT_FOUND: i32 = 43;
    pub const COMMAND_NOT_FOUND: i32 = 59;
    pub const CANNOT_CREATE_INDEX: i32 = 67;
    pub const INVALID_OPTIONS: i32 = 72;
    pub const INVALID_NAMESPACE: i32 = 73;
    pub const INDEX_OPTIONS_CONFLICT: i32 = 85;
    pub const OPERATION_FAILED: i32 = 96;
    pub const INVALID_INDEX_SPECIFICATION_OPTION: i32 = 197;
    pub const UNKNOWN_FIELD: i32 = 40415;
    pub const MISSING_FIELD: i32 = 40414;
    pub const UNRECOGNIZED_PIPELINE_STAGE: i32 = 40324;
}

/// The codeName MongoDB reports for a code.
pub fn code_name(code: i32) -> String {
    let name = match code {
        1 => "InternalError",
        16 => "InvalidLength",
        13 => "Unauthorized",
        168 => "InvalidPipelineOperator",
        238 => "NotImplemented",
        352 => "UnsupportedOpQueryCommand",
        2 => "BadValue",
        4 => "NoSuchKey",
        9 => "FailedToParse",
        14 => "TypeMismatch",
        20 => "IllegalOperation",
        26 => "NamespaceNotFound",
        27 => "IndexNotFound",
        28 => "PathNotViable",
        34 => "CannotBackfillArray",
        54 => "NotSingleValueField",
        40 => "ConflictingUpdateOperators",
        43 => "CursorNotFound",
        48 => "NamespaceExists",
        52 => "DollarPrefixedFieldName",
        56 => "EmptyFieldName",
        59 => "CommandNotFound",
        66 => "ImmutableField",
        67 => "CannotCreateIndex",
        72 => "InvalidOptions",
        73 => "InvalidNamespace",
        85 => "IndexOptionsConflict",
        86 => "IndexKeySpecsConflict",
        96 => "OperationFailed",
        121 => "DocumentValidationFailure",
        166 => "CommandNotSupportedOnView",
        171 => "CannotIndexParallelArrays",
        181 => "AmbiguousIndexKeyPattern",
        197 => "InvalidIndexSpecificationOption",
        292 => "QueryExceededMemoryLimitNoDiskUseAllowed",
        10334 => "BSONObjectTooLarge",
        11000 => "DuplicateKey",
        17280 => "KeyTooLong",
        other => return format!("Location{other}"),
    };
    name.to_owned()
}

/// The code of each storage error kind.
pub fn code_of(kind: ErrorKind) -> i32 {
    use ErrorKind::*;
    match kind {
        BadValue | BadHint => 2,
        FailedToParse => 9,
        TypeMismatch => 14,
        ImmutableField => 66,
        ConflictingUpdateOperators => 40,
        PathNotViable => 28,
        DollarPrefixedFieldName => 52,
        DuplicateKey => 11000,
        CannotIndexParallelArrays => 171,
        KeyTooLong => 17280,
        BsonObjectTooLarge => 10334,
        NamespaceNotFound => 26,
        NamespaceExists => 48,
        IndexNotFound => 27,
        InvalidIndexSpecificationOption => 197,
        CannotCreateIndex => 67,
        IndexOptionsConflict => 85,
        IndexKeySpecsConflict => 86,
        InvalidOptions => 72,
        InvalidNamespace => 73,
        AmbiguousIndexKeyPattern => 181,
        IllegalOperation => 20,
        QueryExceededMemoryLimit => 292,
        ProjectionInclusionInExclusion => 31253,
        ProjectionExclusionInInclusion => 31254,
        ProjectionPathCollision => 31250,
        ProjectionPathPrefixCollision => 31249,
        EmptySubProjection => 51270,
        IllegalSortKey => 15974,
        BadSortOrder => 15975,
        SortExpressionNotMeta => 17312,
        EmptyFieldPath => 40352,
        FieldPathTrailingDot => 40353,
        EmptyFieldPathComponent => 15998,
        DollarPrefixedFieldPathComponent => 16410,
        EmptyFieldName => 56,
        NotSingleValueField => 54,
        CannotBackfillArray => 34,
        Corrupt | Engine => 1,
    }
}

impl CommandError {
    pub fn new(code: i32, errmsg: impl Into<String>) -> Self {
        CommandError {
            code,
            errmsg: errmsg.into(),
            extra: None,
        }
    }

    pub fn bad_value(msg: impl Into<String>) -> Self {
        Self::new(codes::BAD_VALUE, msg)
    }

    pub fn failed_to_parse(msg: impl Into<String>) -> Self {
        Self::new(codes::FAILED_TO_PARSE, msg)
    }

    pub fn invalid_options(msg: impl Into<String>) -> Self {
        Self::new(codes::INVALID_OPTIONS, msg)
    }

    pub fn internal() -> Self {
        Self::new(codes::INTERNAL_ERROR, "internal error")
    }

    /// The `{ok: 0, errmsg, code, codeName}` reply.
    pub fn to_reply(&self) -> RawDocumentBuf {
        let mut d = doc! {
            "ok": 0.0,
            "errmsg": &self.errmsg,
            "code": self.code,
            "codeName": code_name(self.code),
        };
        if let Some(extra) = &self.extra {
            d.extend(*extra.clone());
        }
        RawDocumentBuf::try_from(&d).expect("error replies are valid BSON")
    }

    /// The entry of a `writeErrors` array.
    pub fn to_write_error(&self, index: usize) -> Document {
        let mut d = doc! { "index": index as i32, "code": self.code, "errmsg": &self.errmsg };
        if let Some(extra) = &self.extra {
            d.extend(*extra.clone());
        }
        d
    }
}

impl From<StorageError> for CommandError {
    fn from(e: StorageError) -> Self {
        let code = code_of(e.kind);
        if code == codes::INTERNAL_ERROR {
            tracing::error!(kind = ?e.kind, error = %e.message, "storage failure");
            return CommandError::internal();
        }
        CommandError {
            code,
            errmsg: e.message,
            extra: e.detail,
        }
    }
}

impl From<actix::MailboxError> for CommandError {
    fn from(e: actix::MailboxError) -> Self {
        tracing::error!(error = %e, "actor unavailable");
        CommandError::internal()
    }
}

impl From<bson::error::Error> for CommandError {
    fn from(e: bson::error::Error) -> Self {
        CommandError::failed_to_parse(format!("invalid BSON: {e}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn engine_failures_hide_their_detail() {
        let e: CommandError = StorageError::engine("IO error: /secret/path").into();
        assert_eq!(e.code, 1);
        assert_eq!(code_name(e.code), "InternalError");
        assert!(!e.errmsg.contains("secret"));
    }

    #[test]
    fn duplicate_key_keeps_message_and_detail() {
        let e: CommandError = StorageError::new(ErrorKind::DuplicateKey, "E11000 dup")
            .with_detail(doc! { "keyPattern": { "a": 1 }, "keyValue": { "a": 1 } })
            .into();
        assert_eq!(
            (e.code, code_name(e.code).as_str()),
            (11000, "DuplicateKey")
        );
        let w = e.to_write_error(3);
        assert_eq!(w.get_i32("index").unwrap(), 3);
        assert!(w.contains_key("keyPattern"));
    }

    #[test]
    fn unnamed_codes_are_locations() {
        assert_eq!(code_name(40415), "Location40415");
    }
}
