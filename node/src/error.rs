//! MongoDB errors: the one place where failures get their `code`,
//! `codeName` and `errmsg`.
//!
//! Storage and actor errors arrive as semantic kinds and are mapped here by
//! [`code_of`]. Engine failures and corruption become InternalError (1)
//! with a generic message: storage details go to the log, never to the
//! client. A command error is an `{ok: 0}` reply; the connection lives on.

use bson::{Document, RawDocumentBuf, doc};
use ebb_lang::error::{ExprError, StageError};
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

/// Declares MongoDB's error codes once: each line is the constant, its
/// number and its `codeName`. Nothing else in ebb writes a code number.
macro_rules! code_table {
    ($($name:ident = $code:literal, $code_name:literal;)*) => {
        /// MongoDB's error codes ebb reports.
        pub mod codes {
            $(pub const $name: i32 = $code;)*
        }

        /// The codeName MongoDB reports for a code (`Location<n>` for codes
        /// that have no name, as mongod does).
        pub fn code_name(code: i32) -> String {
            match code {
                $($code => $code_name.to_owned(),)*
                other => format!("Location{other}"),
            }
        }
    };
}

code_table! {
    INTERNAL_ERROR = 1, "InternalError";
    BAD_VALUE = 2, "BadValue";
    NO_SUCH_KEY = 4, "NoSuchKey";
    FAILED_TO_PARSE = 9, "FailedToParse";
    USER_NOT_FOUND = 11, "UserNotFound";
    UNAUTHORIZED = 13, "Unauthorized";
    TYPE_MISMATCH = 14, "TypeMismatch";
    INVALID_LENGTH = 16, "InvalidLength";
    INVALID_BSON = 22, "InvalidBSON";
    PROTOCOL_ERROR = 17, "ProtocolError";
    AUTHENTICATION_FAILED = 18, "AuthenticationFailed";
    ILLEGAL_OPERATION = 20, "IllegalOperation";
    NAMESPACE_NOT_FOUND = 26, "NamespaceNotFound";
    INDEX_NOT_FOUND = 27, "IndexNotFound";
    JS_INTERPRETER_FAILURE = 139, "JSInterpreterFailure";
    PATH_NOT_VIABLE = 28, "PathNotViable";
    ROLE_NOT_FOUND = 31, "RoleNotFound";
    CANNOT_BACKFILL_ARRAY = 34, "CannotBackfillArray";
    CONFLICTING_UPDATE_OPERATORS = 40, "ConflictingUpdateOperators";
    CURSOR_NOT_FOUND = 43, "CursorNotFound";
    CAPPED_POSITION_LOST = 136, "CappedPositionLost";
    CANNOT_BUILD_INDEX_KEYS = 133, "CannotBuildIndexKeys";
    MAX_TIME_MS_EXPIRED = 50, "MaxTimeMSExpired";
    CLIENT_DISCONNECT = 279, "ClientDisconnect";
    OUT_OF_DISK_SPACE = 14031, "OutOfDiskSpace";
    INTERRUPTED = 11601, "Interrupted";
    NAMESPACE_EXISTS = 48, "NamespaceExists";
    DOLLAR_PREFIXED_FIELD_NAME = 52, "DollarPrefixedFieldName";
    NOT_SINGLE_VALUE_FIELD = 54, "NotSingleValueField";
    EMPTY_FIELD_NAME = 56, "EmptyFieldName";
    COMMAND_NOT_FOUND = 59, "CommandNotFound";
    IMMUTABLE_FIELD = 66, "ImmutableField";
    CANNOT_CREATE_INDEX = 67, "CannotCreateIndex";
    INVALID_OPTIONS = 72, "InvalidOptions";
    INVALID_NAMESPACE = 73, "InvalidNamespace";
    INDEX_OPTIONS_CONFLICT = 85, "IndexOptionsConflict";
    INDEX_KEY_SPECS_CONFLICT = 86, "IndexKeySpecsConflict";
    NO_REPLICATION_ENABLED = 76, "NoReplicationEnabled";
    NOT_A_REPLICA_SET = 123, "NotAReplicaSet";
    INVALID_REPLICA_SET_CONFIG = 93, "InvalidReplicaSetConfig";
    NEW_REPLICA_SET_CONFIGURATION_INCOMPATIBLE = 103, "NewReplicaSetConfigurationIncompatible";
    NOT_YET_INITIALIZED = 94, "NotYetInitialized";
    OPERATION_FAILED = 96, "OperationFailed";
    UNSATISFIABLE_WRITE_CONCERN = 100, "UnsatisfiableWriteConcern";
    WRITE_CONCERN_FAILED = 64, "WriteConcernFailed";
    UNKNOWN_REPL_WRITE_CONCERN = 79, "UnknownReplWriteConcern";
    TRANSACTION_TOO_OLD = 225, "TransactionTooOld";
    WRITE_CONFLICT = 112, "WriteConflict";
    NO_SUCH_TRANSACTION = 251, "NoSuchTransaction";
    TRANSACTION_COMMITTED = 256, "TransactionCommitted";
    OPERATION_NOT_SUPPORTED_IN_TRANSACTION = 263, "OperationNotSupportedInTransaction";
    TRANSACTION_TOO_LARGE = 257, "TransactionTooLarge";
    CONFLICTING_OPERATION_IN_PROGRESS = 117, "ConflictingOperationInProgress";
    INCOMPLETE_TRANSACTION_HISTORY = 217, "IncompleteTransactionHistory";
    NOT_WRITABLE_PRIMARY = 10107, "NotWritablePrimary";
    INTERRUPTED_DUE_TO_REPL_STATE_CHANGE = 11602, "InterruptedDueToReplStateChange";
    NOT_PRIMARY_NO_SECONDARY_OK = 13435, "NotPrimaryNoSecondaryOk";
    ALREADY_INITIALIZED = 23, "AlreadyInitialized";
    NOT_SECONDARY = 95, "NotSecondary";
    HOST_UNREACHABLE = 6, "HostUnreachable";
    EXCEEDED_TIME_LIMIT = 262, "ExceededTimeLimit";
    DOCUMENT_VALIDATION_FAILURE = 121, "DocumentValidationFailure";
    COMMAND_NOT_SUPPORTED_ON_VIEW = 166, "CommandNotSupportedOnView";
    VIEW_DEPTH_LIMIT_EXCEEDED = 165, "ViewDepthLimitExceeded";
    OPTION_NOT_SUPPORTED_ON_VIEW = 167, "OptionNotSupportedOnView";
    GRAPH_CONTAINS_CYCLE = 142, "GraphContainsCycle";
    INCOMPATIBLE_COLLATION_VERSION = 161, "IncompatibleCollationVersion";
    INVALID_PIPELINE_OPERATOR = 168, "InvalidPipelineOperator";
    CANNOT_INDEX_PARALLEL_ARRAYS = 171, "CannotIndexParallelArrays";
    AMBIGUOUS_INDEX_KEY_PATTERN = 181, "AmbiguousIndexKeyPattern";
    INVALID_INDEX_SPECIFICATION_OPTION = 197, "InvalidIndexSpecificationOption";
    NOT_IMPLEMENTED = 238, "NotImplemented";
    NO_MATCHING_DOCUMENT = 47, "NoMatchingDocument";
    INVALID_RESUME_TOKEN = 260, "InvalidResumeToken";
    CHANGE_STREAM_FATAL_ERROR = 280, "ChangeStreamFatalError";
    CHANGE_STREAM_HISTORY_LOST = 286, "ChangeStreamHistoryLost";
    FIRST_STAGE_ONLY = 40602, "Location40602";
    CHANGE_STREAM_TWO_STARTS = 40674, "Location40674";
    CHANGE_STREAM_BOTH_TOKENS = 50865, "Location50865";
    QUERY_EXCEEDED_MEMORY_LIMIT = 292, "QueryExceededMemoryLimitNoDiskUseAllowed";
    NO_QUERY_EXECUTION_PLANS = 291, "NoQueryExecutionPlans";
    CANNOT_EXTRACT_GEO_KEYS = 16755, "Location16755";
    HASHED_ARRAY = 16766, "Location16766";
    TWO_GEO_FIELDS = 16800, "Location16800";
    FLAT_NOT_FIRST = 16801, "Location16801";
    FLAT_NOT_A_LOCATION = 16804, "Location16804";
    FLAT_EMPTY_LOCATION = 13067, "Location13067";
    FLAT_ONE_ELEMENT = 13068, "Location13068";
    FLAT_NOT_NUMBERS = 13026, "Location13026";
    FLAT_OUT_OF_RANGE = 13027, "Location13027";
    TEXT_LANGUAGE_TYPE = 17261, "Location17261";
    TEXT_LANGUAGE_UNSUPPORTED = 17262, "Location17262";
    TEXT_SCORE_UNAVAILABLE = 40218, "Location40218";
    TEXT_MATCH_NOT_FIRST = 17313, "Location17313";
    HASHED_UNIQUE = 16764, "Location16764";
    MECHANISM_UNAVAILABLE = 334, "MechanismUnavailable";
    TOO_MANY_LOGICAL_SESSIONS = 261, "TooManyLogicalSessions";
    UNSUPPORTED_OP_QUERY_COMMAND = 352, "UnsupportedOpQueryCommand";
    OVERFLOW = 15, "Overflow";
    CONVERSION_FAILURE = 241, "ConversionFailure";
    BSON_OBJECT_TOO_LARGE = 10334, "BSONObjectTooLarge";
    DUPLICATE_KEY = 11000, "DuplicateKey";
    // Locations: codes mongod raises at one place in its source, without a
    // name (codeName `Location<n>`).
    SORT_KEY_ILLEGAL = 15974, "Location15974";
    SORT_ORDER_BAD = 15975, "Location15975";
    GROUP_UNKNOWN_OPERATOR = 15952, "Location15952";
    GROUP_WITHOUT_ID = 15955, "Location15955";
    STAGE_COUNT_ARGUMENT = 15956, "Location15956";
    LIMIT_NOT_POSITIVE = 15958, "Location15958";
    STAGE_SPEC_NOT_OBJECT = 15959, "Location15959";
    UNWIND_SPEC_TYPE = 15981, "Location15981";
    FIELD_PATH_EMPTY_COMPONENT = 15998, "Location15998";
    FIELD_PATH_DOLLAR_COMPONENT = 16410, "Location16410";
    INVALID_FIELD_PATH_EXPRESSION = 16872, "Location16872";
    DISTINCT_TOO_BIG = 17217, "Location17217";
    KEY_TOO_LONG = 17280, "KeyTooLong";
    SORT_EXPRESSION_NOT_META = 17312, "Location17312";
    UNWIND_WITHOUT_PATH = 28812, "Location28812";
    UNWIND_PATH_WITHOUT_DOLLAR = 28818, "Location28818";
    UNWIND_PATH_TYPE = 28808, "Location28808";
    UNWIND_PRESERVE_TYPE = 28809, "Location28809";
    UNWIND_INDEX_TYPE = 28810, "Location28810";
    UNWIND_UNKNOWN_OPTION = 28811, "Location28811";
    UNWIND_INDEX_WITH_DOLLAR = 28822, "Location28822";
    UNSET_SPEC_TYPE = 31002, "Location31002";
    UNSET_SPEC_ELEMENT = 31120, "Location31120";
    PROJECTION_PATH_PREFIX_COLLISION = 31249, "Location31249";
    PROJECTION_PATH_COLLISION = 31250, "Location31250";
    PROJECTION_EXPRESSION_IN_EXCLUSION = 31252, "Location31252";
    AWAITABLE_HELLO_PAIR = 31368, "Location31368";
    TOPOLOGY_VERSION_NEGATIVE = 31372, "Location31372";
    TOPOLOGY_VERSION_FROM_THE_FUTURE = 31382, "Location31382";
    PROJECTION_INCLUSION_IN_EXCLUSION = 31253, "Location31253";
    PROJECTION_EXCLUSION_IN_INCLUSION = 31254, "Location31254";
    PROJECTION_ELEM_MATCH_AFTER_POSITIONAL = 31255, "Location31255";
    PROJECTION_POSITIONAL_AFTER_ELEM_MATCH = 31256, "Location31256";
    PROJECTION_SLICE_SKIP_TYPE = 31257, "Location31257";
    PROJECTION_SLICE_LIMIT_TYPE = 31258, "Location31258";
    PROJECTION_SLICE_LIMIT_NOT_POSITIVE = 31259, "Location31259";
    PROJECTION_POSITIONAL_TRAILING_DOT = 31270, "Location31270";
    PROJECTION_POSITIONAL_WITH_OBJECT = 31271, "Location31271";
    PROJECTION_SLICE_ARRAY_LENGTH = 31272, "Location31272";
    PROJECTION_SLICE_ARGUMENT = 31273, "Location31273";
    PROJECTION_ELEM_MATCH_ARGUMENT = 31274, "Location31274";
    PROJECTION_ELEM_MATCH_NESTED = 31275, "Location31275";
    PROJECTION_POSITIONAL_TWICE = 31276, "Location31276";
    PROJECTION_POSITIONAL_NOT_IN_QUERY = 31277, "Location31277";
    PROJECTION_POSITIONAL_OPERATOR_TWICE = 31287, "Location31287";
    PROJECTION_POSITIONAL_WITH_LITERAL = 31308, "Location31308";
    COUNT_FIELD_INVALID = 40156, "Location40156";
    REPLACE_ROOT_NOT_OBJECT = 40228, "Location40228";
    REPLACE_ROOT_SPEC_NOT_OBJECT = 40229, "Location40229";
    GROUP_FIELD_NOT_ACCUMULATOR = 40234, "Location40234";
    GROUP_FIELD_NOT_ONE_ACCUMULATOR = 40238, "Location40238";
    STAGE_NOT_ONE_FIELD = 40323, "Location40323";
    UNRECOGNIZED_PIPELINE_STAGE = 40324, "Location40324";
    FIELD_PATH_EMPTY = 40352, "Location40352";
    FIELD_PATH_TRAILING_DOT = 40353, "Location40353";
    MISSING_FIELD = 40414, "Location40414";
    UNKNOWN_FIELD = 40415, "Location40415";
    OP_MSG_WITHOUT_DB = 40571, "Location40571";
    OP_MSG_TWO_BODIES = 40430, "Location40430";
    OP_MSG_DUPLICATE_SEQUENCE = 40431, "Location40431";
    OP_MSG_UNKNOWN_SECTION = 40432, "Location40432";
    OP_MSG_SEQUENCE_IN_BODY = 40433, "Location40433";
    OP_MSG_WITHOUT_BODY = 40587, "Location40587";
    OP_ID_OUT_OF_RANGE = 26823, "Location26823";
    REGEX_OPTIONS_TWICE = 51075, "Location51075";
    REGEX_INVALID = 51091, "Location51091";
    REGEX_OPTIONS_INVALID = 51108, "Location51108";
    CONSTANTS_NEED_PIPELINE = 51198, "Location51198";
    PROJECTION_POSITIONAL_WITHOUT_QUERY = 51050, "Location51050";
    USER_ALREADY_EXISTS = 51003, "Location51003";
    MIN_MAX_WITHOUT_HINT = 51173, "Location51173";
    VALUE_BELOW_MINIMUM = 51024, "Location51024";
    MIN_MAX_INCOMPATIBLE_INDEX = 51174, "Location51174";
    MIN_MAX_OUT_OF_ORDER = 51175, "Location51175";
    MIN_MAX_FIELDS_DIFFER = 51176, "Location51176";
    PROJECTION_POSITIONAL_NO_MATCH = 51246, "Location51246";
    PROJECTION_POSITIONAL_MISMATCH = 51247, "Location51247";
    EMPTY_SUB_PROJECTION = 51270, "Location51270";
    WILDCARD_PROJECTION_VALUE = 51271, "Location51271";
    ALREADY_AUTHENTICATED = 5626701, "Location5626701";
    OP_QUERY_NOT_A_COMMAND = 5739101, "Location5739101";
    NO_JAVASCRIPT_ENGINE = 6108304, "Location6108304";
}

/// Declares the code of every expression failure: one line per
/// `ExprError` variant (mongod's location codes, `Location<n>`).
macro_rules! expr_code_table {
    ($($kind:ident = $code:literal,)*) => {
        /// MongoDB's code for an expression failure.
        pub fn expr_code(e: ExprError) -> i32 {
            match e {
                $(ExprError::$kind => $code,)*
            }
        }
    };
}

expr_code_table! {
    // Operators and arguments
    OperatorNotAlone = 15983,
    ArgCount = 16020,
    ArgCountRange = 28667,
    ArgCountAtLeast = 17045,
    UndefinedVariable = 17276,
    VariableUnavailable = 51144,
    DuplicateObjectField = 16406,
    FieldNameDot = 16412,
    FieldNameNul = 16411,
    LetReadsDocument = 4890500,
    LetSetsSystemVariable = 4738901,
    // Arithmetic
    AddType = 16554,
    AddTwoDates = 16612,
    SubtractType = 16556,
    SubtractFromDate = 16613,
    MultiplyType = 16555,
    DivideByZero = 16608,
    DivideType = 16609,
    ModByZero = 16610,
    ModType = 16611,
    NumericArgType = 28765,
    AbsOfLongMin = 28680,
    RoundType = 51081,
    RoundPrecisionNotIntegral = 51082,
    RoundPrecisionRange = 51083,
    RoundInvalidConversion = 51080,
    SqrtNegative = 28714,
    LnNotPositive = 28766,
    Log10NotPositive = 28761,
    LogArgType = 28756,
    LogBaseType = 28757,
    LogArgNotPositive = 28758,
    LogBaseInvalid = 28759,
    PowBaseType = 28762,
    PowExponentType = 28763,
    PowZeroNegative = 28764,
    TrigOutOfDomain = 50989,
    Atan2YType = 51044,
    Atan2XType = 51045,
    RandArguments = 3040500,
    // Conditionals and variables
    CondUnknownArgument = 17083,
    CondMissingIf = 17080,
    CondMissingThen = 17081,
    CondMissingElse = 17082,
    IfNullArgs = 1257300,
    SwitchNotObject = 40060,
    SwitchBranchesNotArray = 40061,
    SwitchBranchNotObject = 40062,
    SwitchBranchUnknownArgument = 40063,
    SwitchBranchMissingCase = 40064,
    SwitchBranchMissingThen = 40065,
    SwitchNoMatch = 40066,
    SwitchUnknownArgument = 40067,
    SwitchNoBranches = 40068,
    LetNotObject = 16874,
    LetUnknownArgument = 16875,
    LetMissingVars = 16876,
    LetMissingIn = 16877,
    LetVarsNotObject = 10065,
    AllElementsTrueType = 17040,
    AnyElementTrueType = 17041,
    // Arrays
    MapNotObject = 16878,
    MapUnknownArgument = 16879,
    MapMissingInput = 16880,
    MapMissingIn = 16882,
    MapInputNotArray = 16883,
    FilterNotObject = 28646,
    FilterUnknownArgument = 28647,
    FilterMissingInput = 28648,
    FilterMissingCond = 28650,
    FilterInputNotArray = 28651,
    FilterLimitNotIntegral = 327391,
    FilterLimitNotPositive = 327392,
    ReduceNotObject = 40075,
    ReduceUnknownArgument = 40076,
    ReduceMissingInput = 40077,
    ReduceMissingInitial = 40078,
    ReduceMissingIn = 40079,
    ReduceInputNotArray = 40080,
    SizeNotArray = 17124,
    ArrayElemAtNotArray = 28689,
    ArrayElemAtIndexType = 28690,
    ArrayElemAtIndexNotIntegral = 28691,
    InNotArray = 40081,
    IndexOfArrayNotArray = 40090,
    TsSecondNotTimestamp = 5687301,
    TsIncrementNotTimestamp = 5687302,
    BinarySizeType = 51276,
    BsonSizeType = 31393,
    IndexOfBoundNotIntegral = 40096,
    IndexOfBoundNegative = 40097,
    SliceNotArray = 28724,
    SliceSecondType = 28725,
    SliceSecondNotIntegral = 28726,
    SliceThirdType = 28727,
    SliceThirdNotIntegral = 28728,
    SliceThirdNotPositive = 28729,
    ConcatArraysType = 28664,
    ReverseArrayNotArray = 34435,
    RangeStartType = 34443,
    RangeStartNotIntegral = 34444,
    RangeEndType = 34445,
    RangeEndNotIntegral = 34446,
    RangeStepType = 34447,
    RangeStepNotIntegral = 34448,
    RangeStepZero = 34449,
    SortArrayNotObject = 2942500,
    SortArrayUnknownArgument = 2942501,
    SortArrayMissingInput = 2942502,
    SortArrayMissingSortBy = 2942503,
    SortArrayInputNotArray = 2942504,
    SortArraySortByInvalid = 2942505,
    ZipNotObject = 34460,
    ZipInputsNotArray = 34461,
    ZipDefaultsNotArray = 34462,
    ZipLongestNotBool = 34463,
    ZipUnknownArgument = 34464,
    ZipNoInputs = 34465,
    ZipDefaultsWithoutLongest = 34466,
    ZipDefaultsLength = 34467,
    ZipInputNotArray = 34468,
    // Sets
    SetUnionType = 17043,
    SetIntersectionType = 17047,
    SetDifferenceFirstType = 17048,
    SetDifferenceSecondType = 17049,
    SetEqualsType = 17044,
    SetIsSubsetFirstType = 17046,
    SetIsSubsetSecondType = 17042,
    // Strings
    ConcatType = 16702,
    StringConversion = 16007,
    SubstrStartType = 16034,
    SubstrLengthType = 16035,
    SubstrStartNegative = 50752,
    SubstrStartContinuation = 28656,
    SubstrEndContinuation = 28657,
    SubstrCpStartType = 34450,
    SubstrCpStartNotIntegral = 34451,
    SubstrCpLengthType = 34452,
    SubstrCpLengthNotIntegral = 34453,
    SubstrCpLengthNegative = 34454,
    SubstrCpStartNegative = 34455,
    StrLenBytesType = 34473,
    StrLenCpType = 34471,
    SplitInputType = 40085,
    SplitSeparatorType = 40086,
    SplitEmptySeparator = 40087,
    IndexOfBytesInputType = 40091,
    IndexOfBytesTokenType = 40092,
    IndexOfCpInputType = 40093,
    IndexOfCpTokenType = 40094,
    TrimNotObject = 50696,
    TrimUnknownArgument = 50694,
    TrimMissingInput = 50695,
    TrimInputType = 50699,
    TrimCharsType = 50700,
    ReplaceNotObject = 51751,
    ReplaceUnknownArgument = 51750,
    ReplaceMissingInput = 51749,
    ReplaceMissingFind = 51748,
    ReplaceMissingReplacement = 51747,
    ReplaceInputType = 51746,
    ReplaceFindType = 51745,
    ReplaceReplacementType = 51744,
    RegexNotObject = 51103,
    RegexUnknownArgument = 31024,
    RegexMissingInput = 31022,
    RegexMissingRegex = 31023,
    RegexInputType = 51104,
    RegexRegexType = 51105,
    RegexOptionsType = 51106,
    RegexOptionsTwice = 51107,
    RegexInvalid = 51111,
    // Objects
    MergeObjectsType = 40400,
    ObjectToArrayType = 40390,
    ArrayToObjectType = 40386,
    ArrayToObjectElementType = 40398,
    ArrayToObjectMixedArray = 40396,
    ArrayToObjectPairLength = 40397,
    ArrayToObjectPairKeyType = 40395,
    ArrayToObjectMixedObject = 40391,
    ArrayToObjectKeyCount = 40392,
    ArrayToObjectMissingKey = 40393,
    ArrayToObjectKeyType = 40394,
    ArrayToObjectKeyNul = 4940400,
    GetFieldUnknownArgument = 3041701,
    GetFieldMissingField = 3041702,
    GetFieldFieldType = 3041704,
    SetFieldNotObject = 4161100,
    SetFieldUnknownArgument = 4161101,
    SetFieldMissingField = 4161102,
    SetFieldMissingValue = 4161103,
    SetFieldMissingInput = 4161109,
    SetFieldInputType = 4161105,
    SetFieldFieldNotConstant = 4161106,
    SetFieldFieldType = 4161107,
    // Dates
    DateConversion = 16006,
    TimeZoneType = 40517,
    UnknownTimeZone = 40485,
    DateOutOfRange = 2,
    DatePartUnknownOption = 40535,
    DatePartArrayLength = 40536,
    DatePartMissingDate = 40539,
    DateToStringNotObject = 18629,
    DateToStringUnknownArgument = 18534,
    DateToStringMissingDate = 18628,
    DateToStringFormatType = 18533,
    FormatUnmatchedPercent = 18535,
    FormatInvalidSpecifier = 18536,
    FormatYearRange = 18537,
    DateFromStringNotObject = 40540,
    DateFromStringUnknownArgument = 40541,
    DateFromStringMissingDate = 40542,
    DateFromStringFormatType = 40684,
    DateToPartsNotObject = 40524,
    DateToPartsUnknownArgument = 40520,
    DateToPartsMissingDate = 40522,
    DateToPartsIsoType = 40521,
    DateFromPartsNotObject = 40519,
    DateFromPartsUnknownArgument = 40518,
    DateFromPartsNoYear = 40516,
    DateFromPartsMixedNatural = 40489,
    DateFromPartsMixedIso = 40525,
    DatePartNotInteger = 40515,
    DatePartRange = 31034,
    DateFromPartsYearRange = 40523,
    DateFromPartsIsoYearRange = 31095,
    DateArithNotObject = 5166400,
    DateArithUnknownArgument = 5166401,
    DateArithMissingArgument = 5166402,
    DateArithStartType = 5166403,
    DateArithAmountType = 5166405,
    DateArithOverflow = 5976500,
    DateDiffNotObject = 5166301,
    DateDiffUnknownArgument = 5166302,
    DateDiffMissingArgument = 5166303,
    DateDiffDateType = 5166307,
    DateTruncNotObject = 5439007,
    DateTruncUnknownArgument = 5439008,
    DateTruncMissingArgument = 5439009,
    DateTruncDateType = 5439012,
    DateUnitType = 5439013,
    DateUnitUnknown = 5439014,
    DateTruncBinSizeType = 5439015,
    StartOfWeekType = 5439016,
    DateTruncBinSizeNotPositive = 5439017,
    StartOfWeekUnknown = 5439018,
}

/// MongoDB's code for each misuse of a stage (mongod's location codes).
pub fn stage_code(e: StageError) -> i32 {
    use StageError::*;
    match e {
        RedactAnswer => 17053,
        WriteStageInLookup => 51047,
        WriteStageInUnionWith => 31441,
        NotAllowedInFacet => 40600,
        LookupTooLarge => 4568,
        FacetTooLarge => 4031700,
        NotFirstStage => 40602,
        DocumentsNotArray => 5858203,
        ChangeStreamNeedsReplicaSet => 40573,
        FacetSpecNotObject => 40169,
        FacetNotArray => 40170,
        FacetStageNotObject => 40171,
        BucketNotObject => 40201,
        BucketGroupBy => 40202,
        BucketBoundariesNotArray => 40200,
        BucketBoundaryNotConstant => 40191,
        BucketTooFewBoundaries => 40192,
        BucketBoundaryTypes => 40193,
        BucketBoundariesUnsorted => 40194,
        BucketDefaultNotConstant => 40195,
        BucketOutputNotObject => 40196,
        BucketUnknownOption => 40197,
        BucketMissingRequired => 40198,
        BucketDefaultInRange => 40199,
        BucketAutoNotObject => 40240,
        BucketAutoGroupBy => 40239,
        BucketAutoBucketsType => 40241,
        BucketAutoBucketsNotInt => 40242,
        BucketAutoBucketsNotPositive => 40243,
        BucketAutoOutputNotObject => 40244,
        BucketAutoUnknownOption => 40245,
        BucketAutoMissingRequired => 40246,
        BucketAutoGranularityType => 40261,
        MinMaxNNotObject => 5787900,
        FirstLastNNotObject => 5787801,
        AccNUnknownArgument => 5787901,
        AccNMissingN => 5787906,
        AccNMissingInput => 5787907,
        AccNNotNumeric => 5787902,
        AccNNotIntegral => 5787903,
        AccNNotPositive => 5787908,
        TopNotObject => 5788001,
        TopUnknownArgument => 5788002,
        TopMissingN => 5788003,
        TopMissingOutput => 5788004,
        TopMissingSortBy => 5788005,
        SortByCountObject => 40147,
        SortByCountString => 40148,
        SortByCountType => 40149,
        SampleNotObject => 28745,
        SampleSizeType => 28746,
        SampleSizeNotPositive => 28747,
        SampleUnknownOption => 28748,
        SampleWithoutSize => 28749,
        WriteStageNotLast => 40601,
        OutArgumentType => 16990,
        OutSpecialCollection => 17385,
        OutInternalDatabase => 31321,
        OutCapped => 17152,
        MergeArgumentType => 51182,
        MergeIntoType => 51178,
        MergeWhenMatchedType => 51191,
        MergeModes => 51181,
        MergeLetWithoutPipeline => 51199,
        MergeLetRedefinesNew => 51273,
        MergeOnType => 51186,
        MergeOnEmpty => 51187,
        MergeOnElementType => 51134,
        MergeOnDuplicate => 31465,
        MergeOnFieldMissing => 51132,
        MergeOnFieldArray => 51185,
        MergeOnNotUnique => 51183,
        MergeSpecialCollection => 31319,
        MergeInternalDatabase => 31320,
        MergeNoMatch => 13113,
        GraphLookupNotString => 40103,
        GraphLookupRestrictNotObject => 40185,
        GraphLookupUnknownArgument => 40104,
        GraphLookupMissingArgument => 40105,
        GraphLookupTooLarge => 40099,
        GraphLookupMaxDepthNotNumber => 40100,
        GraphLookupMaxDepthNegative => 40101,
        GraphLookupMaxDepthNotIntegral => 40102,
        DensifyPartitionHoldsField => 8993000,
        DensifyFieldInPartition => 9554500,
        DensifyStepNotPositive => 5733401,
        DensifyBoundsOrder => 5733402,
        DensifyBoundsLength => 5733403,
        DensifyPartitionWithoutFields => 5733408,
        DensifyUnitWithNumbers => 5733409,
        DensifyMixedBounds => 5733406,
        DensifyDateStepNotWhole => 6586400,
        DensifyValueType => 5733201,
        DensifyTooMany => 5897900,
        WindowBoundsBackwards => 5339900,
        DocumentWindowSort => 5339901,
        RangeWindowSort => 5339902,
        RankTakesNoWindow => 5371601,
        RankSort => 5371602,
        RankTakesNoArgument => 5371603,
        WindowOutputConflict => 6307900,
        RangeKeyNotNumber => 5429413,
        RangeKeyNotDate => 5429513,
        CalculusUnitNeedsDate => 5624900,
        CalculusDateNeedsUnit => 5624901,
        WindowUnitTooLong => 5490710,
        LinearFillSort => 605001,
        LinearFillRepeatedSort => 6050106,
        WindowPartitionTooLarge => 5643011,
    }
}

/// The code of each storage error kind.
pub fn code_of(kind: ErrorKind) -> i32 {
    use ErrorKind::*;
    use codes::*;
    match kind {
        BadValue | BadHint => BAD_VALUE,
        FailedToParse => FAILED_TO_PARSE,
        TypeMismatch => TYPE_MISMATCH,
        ImmutableField => IMMUTABLE_FIELD,
        ConflictingUpdateOperators => CONFLICTING_UPDATE_OPERATORS,
        PathNotViable => PATH_NOT_VIABLE,
        DollarPrefixedFieldName => DOLLAR_PREFIXED_FIELD_NAME,
        DuplicateKey => DUPLICATE_KEY,
        CannotIndexParallelArrays => CANNOT_INDEX_PARALLEL_ARRAYS,
        KeyTooLong => KEY_TOO_LONG,
        BsonObjectTooLarge => BSON_OBJECT_TOO_LARGE,
        NamespaceNotFound => NAMESPACE_NOT_FOUND,
        NamespaceExists => NAMESPACE_EXISTS,
        IndexNotFound => INDEX_NOT_FOUND,
        NoSuchKey => NO_SUCH_KEY,
        TextScoreUnavailable => TEXT_SCORE_UNAVAILABLE,
        TextLanguage => TEXT_LANGUAGE_UNSUPPORTED,
        TextLanguageType => TEXT_LANGUAGE_TYPE,
        InvalidIndexSpecificationOption => INVALID_INDEX_SPECIFICATION_OPTION,
        CannotCreateIndex => CANNOT_CREATE_INDEX,
        IndexOptionsConflict => INDEX_OPTIONS_CONFLICT,
        IndexKeySpecsConflict => INDEX_KEY_SPECS_CONFLICT,
        InvalidOptions => INVALID_OPTIONS,
        InvalidNamespace => INVALID_NAMESPACE,
        AmbiguousIndexKeyPattern => AMBIGUOUS_INDEX_KEY_PATTERN,
        IllegalOperation => ILLEGAL_OPERATION,
        QueryExceededMemoryLimit => QUERY_EXCEEDED_MEMORY_LIMIT,
        NoQueryExecutionPlans => NO_QUERY_EXECUTION_PLANS,
        CannotExtractGeoKeys => CANNOT_EXTRACT_GEO_KEYS,
        HashedArray => HASHED_ARRAY,
        CannotBuildIndexKeys => CANNOT_BUILD_INDEX_KEYS,
        FlatNotALocation => FLAT_NOT_A_LOCATION,
        FlatEmptyLocation => FLAT_EMPTY_LOCATION,
        FlatOneElement => FLAT_ONE_ELEMENT,
        FlatNotNumbers => FLAT_NOT_NUMBERS,
        FlatOutOfRange => FLAT_OUT_OF_RANGE,
        ProjectionInclusionInExclusion => PROJECTION_INCLUSION_IN_EXCLUSION,
        ProjectionExclusionInInclusion => PROJECTION_EXCLUSION_IN_INCLUSION,
        ProjectionPathCollision => PROJECTION_PATH_COLLISION,
        ProjectionExpressionInExclusion => PROJECTION_EXPRESSION_IN_EXCLUSION,
        ProjectionPathPrefixCollision => PROJECTION_PATH_PREFIX_COLLISION,
        EmptySubProjection => EMPTY_SUB_PROJECTION,
        IllegalSortKey => SORT_KEY_ILLEGAL,
        BadSortOrder => SORT_ORDER_BAD,
        SortExpressionNotMeta => SORT_EXPRESSION_NOT_META,
        EmptyFieldPath => FIELD_PATH_EMPTY,
        FieldPathTrailingDot => FIELD_PATH_TRAILING_DOT,
        EmptyFieldPathComponent => FIELD_PATH_EMPTY_COMPONENT,
        DollarPrefixedFieldPathComponent => FIELD_PATH_DOLLAR_COMPONENT,
        EmptyFieldName => EMPTY_FIELD_NAME,
        NotSingleValueField => NOT_SINGLE_VALUE_FIELD,
        CannotBackfillArray => CANNOT_BACKFILL_ARRAY,
        NotImplemented => NOT_IMPLEMENTED,
        WriteConflict => WRITE_CONFLICT,
        OperationNotSupportedInTransaction => OPERATION_NOT_SUPPORTED_IN_TRANSACTION,
        TransactionTooLarge => TRANSACTION_TOO_LARGE,
        ViewDepthLimitExceeded => VIEW_DEPTH_LIMIT_EXCEEDED,
        InvalidRegex => REGEX_INVALID,
        InvalidRegexOptions => REGEX_OPTIONS_INVALID,
        RegexOptionsTwice => REGEX_OPTIONS_TWICE,
        MissingField => MISSING_FIELD,
        UnknownField => UNKNOWN_FIELD,
        IncompatibleCollationVersion => INCOMPATIBLE_COLLATION_VERSION,
        InvalidFieldPathExpression => INVALID_FIELD_PATH_EXPRESSION,
        InvalidPipelineOperator => INVALID_PIPELINE_OPERATOR,
        StageNotOneField => STAGE_NOT_ONE_FIELD,
        UnrecognizedPipelineStage => UNRECOGNIZED_PIPELINE_STAGE,
        StageSpecNotObject => STAGE_SPEC_NOT_OBJECT,
        StageCountArgument => STAGE_COUNT_ARGUMENT,
        LimitNotPositive => LIMIT_NOT_POSITIVE,
        GroupWithoutId => GROUP_WITHOUT_ID,
        GroupFieldNotAccumulator => GROUP_FIELD_NOT_ACCUMULATOR,
        GroupFieldNotOneAccumulator => GROUP_FIELD_NOT_ONE_ACCUMULATOR,
        UnknownGroupOperator => GROUP_UNKNOWN_OPERATOR,
        UnsetSpecType => UNSET_SPEC_TYPE,
        UnsetSpecElement => UNSET_SPEC_ELEMENT,
        UnwindSpecType => UNWIND_SPEC_TYPE,
        UnwindWithoutPath => UNWIND_WITHOUT_PATH,
        UnwindPathWithoutDollar => UNWIND_PATH_WITHOUT_DOLLAR,
        UnwindPathType => UNWIND_PATH_TYPE,
        UnwindPreserveType => UNWIND_PRESERVE_TYPE,
        UnwindIndexType => UNWIND_INDEX_TYPE,
        UnwindUnknownOption => UNWIND_UNKNOWN_OPTION,
        UnwindIndexWithDollar => UNWIND_INDEX_WITH_DOLLAR,
        CountFieldInvalid => COUNT_FIELD_INVALID,
        DocumentValidationFailure => DOCUMENT_VALIDATION_FAILURE,
        ReplaceRootNotObject => REPLACE_ROOT_NOT_OBJECT,
        ReplaceRootSpecNotObject => REPLACE_ROOT_SPEC_NOT_OBJECT,
        Expression(e) => expr_code(e),
        Stage(e) => stage_code(e),
        ConversionFailure => CONVERSION_FAILURE,
        Overflow => OVERFLOW,
        JavaScriptDisabled => NO_JAVASCRIPT_ENGINE,
        JsInterpreterFailure => JS_INTERPRETER_FAILURE,
        FindProjection(fault) => projection_fault_code(fault),
        MaxTimeMsExpired => MAX_TIME_MS_EXPIRED,
        Interrupted => INTERRUPTED,
        CappedPositionLost => CAPPED_POSITION_LOST,
        ClientDisconnect => CLIENT_DISCONNECT,
        MinMaxWithoutHint => MIN_MAX_WITHOUT_HINT,
        MinMaxIncompatibleIndex => MIN_MAX_INCOMPATIBLE_INDEX,
        MinMaxOutOfOrder => MIN_MAX_OUT_OF_ORDER,
        MinMaxFieldsDiffer => MIN_MAX_FIELDS_DIFFER,
        OutOfDiskSpace => OUT_OF_DISK_SPACE,
        Corrupt | Engine => INTERNAL_ERROR,
    }
}

/// The mongod location of each misuse of a find-only projection operator.
fn projection_fault_code(fault: ebb_lang::error::ProjectionFault) -> i32 {
    use codes::*;
    use ebb_lang::error::ProjectionFault::*;
    match fault {
        SliceArrayLength => PROJECTION_SLICE_ARRAY_LENGTH,
        SliceSkipType => PROJECTION_SLICE_SKIP_TYPE,
        SliceLimitType => PROJECTION_SLICE_LIMIT_TYPE,
        SliceLimitNotPositive => PROJECTION_SLICE_LIMIT_NOT_POSITIVE,
        SliceArgument => PROJECTION_SLICE_ARGUMENT,
        ElemMatchArgument => PROJECTION_ELEM_MATCH_ARGUMENT,
        ElemMatchAfterPositional => PROJECTION_ELEM_MATCH_AFTER_POSITIONAL,
        PositionalAfterElemMatch => PROJECTION_POSITIONAL_AFTER_ELEM_MATCH,
        ElemMatchNested => PROJECTION_ELEM_MATCH_NESTED,
        PositionalTwice => PROJECTION_POSITIONAL_TWICE,
        PositionalWithoutQuery => PROJECTION_POSITIONAL_WITHOUT_QUERY,
        PositionalNotInQuery => PROJECTION_POSITIONAL_NOT_IN_QUERY,
        PositionalTrailingDot => PROJECTION_POSITIONAL_TRAILING_DOT,
        PositionalOperatorTwice => PROJECTION_POSITIONAL_OPERATOR_TWICE,
        PositionalWithObject => PROJECTION_POSITIONAL_WITH_OBJECT,
        PositionalWithLiteral => PROJECTION_POSITIONAL_WITH_LITERAL,
        PositionalNoMatch => PROJECTION_POSITIONAL_NO_MATCH,
        PositionalMismatch => PROJECTION_POSITIONAL_MISMATCH,
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

    /// 59: no command of that name (or not on this node).
    pub fn command_not_found(name: &str) -> Self {
        Self::new(
            codes::COMMAND_NOT_FOUND,
            format!("no such command: '{name}'"),
        )
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

    /// The same error with `label` in its `errorLabels`.
    pub fn labelled(mut self, label: &str) -> Self {
        let extra = self.extra.get_or_insert_with(Default::default);
        let mut labels = match extra.remove("errorLabels") {
            Some(bson::Bson::Array(a)) => a,
            _ => Vec::new(),
        };
        labels.push(label.into());
        extra.insert("errorLabels", labels);
        self
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

impl From<&crate::wire::FramingError> for CommandError {
    /// The reply to a malformed OP_MSG that mongod answers
    /// ([`crate::wire::FramingError::is_answered`]), with mongod's code and wording.
    fn from(e: &crate::wire::FramingError) -> Self {
        use crate::wire::FramingError as F;
        let (code, errmsg) = match e {
            F::DuplicateBody => (
                codes::OP_MSG_TWO_BODIES,
                "Multiple body sections in message".to_owned(),
            ),
            F::DuplicateSequence(_) => (codes::OP_MSG_DUPLICATE_SEQUENCE, e.to_string()),
            F::SequenceInBody(_) => (codes::OP_MSG_SEQUENCE_IN_BODY, e.to_string()),
            F::UnknownSectionKind(kind) => (
                codes::OP_MSG_UNKNOWN_SECTION,
                format!("Unknown section kind {kind}"),
            ),
            F::MissingBody => (
                codes::OP_MSG_WITHOUT_BODY,
                "OP_MSG messages must have a body".to_owned(),
            ),
            F::InvalidBson { .. } => (codes::INVALID_BSON, e.to_string()),
            F::TooDeep => (
                codes::OVERFLOW,
                "BSONObj exceeds maximum nested object depth".to_owned(),
            ),
            // Lengths and strings that overrun their section: mongod's buffer
            // reader reports these as Overflow.
            _ => (codes::OVERFLOW, e.to_string()),
        };
        CommandError::new(code, errmsg)
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
    fn validation_failures_carry_err_info_in_write_errors_and_replies() {
        let e: CommandError = StorageError::new(
            ErrorKind::DocumentValidationFailure,
            "Document failed validation",
        )
        .with_detail(doc! { "errInfo": { "failingDocumentId": 1, "details": {} } })
        .into();
        assert_eq!(
            (e.code, code_name(e.code).as_str()),
            (121, "DocumentValidationFailure")
        );
        let w = e.to_write_error(0);
        assert_eq!(
            w.get_document("errInfo")
                .unwrap()
                .get_i32("failingDocumentId")
                .unwrap(),
            1
        );
        let reply = e.to_reply();
        assert!(reply.get_document("errInfo").is_ok());
        assert_eq!(code_of(ErrorKind::InvalidRegex), 51091);
    }

    #[test]
    fn unnamed_codes_are_locations() {
        assert_eq!(code_name(codes::UNKNOWN_FIELD), "Location40415");
        assert_eq!(code_name(12345), "Location12345");
    }

    #[test]
    fn every_storage_kind_has_a_code_with_a_name() {
        assert_eq!(code_of(ErrorKind::NotImplemented), 238);
        assert_eq!(
            code_name(code_of(ErrorKind::NotImplemented)),
            "NotImplemented"
        );
        assert_eq!(code_of(ErrorKind::UnrecognizedPipelineStage), 40324);
        assert_eq!(code_name(code_of(ErrorKind::DuplicateKey)), "DuplicateKey");
    }
}
