//! The storage crate's error type.
//!
//! Errors are semantic: a [`ErrorKind`] says *what* went wrong in terms a
//! MongoDB user would recognise (a bad value, a type mismatch, a duplicate
//! key), and the message says it in words. MongoDB's numeric codes are not
//! known here; `ebb-node` maps each kind to its `code`/`codeName` in one table.
//! Engine failures carry the engine's text for logs only: the node reports
//! them as InternalError without the detail.

use std::fmt;

/// What kind of failure this is, named after the MongoDB error it becomes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// An argument has an acceptable type but an unacceptable value.
    BadValue,
    /// A command, query or update document could not be parsed.
    FailedToParse,
    /// A value has the wrong BSON type.
    TypeMismatch,
    /// An update tried to change `_id`.
    ImmutableField,
    /// Two update operators touch the same path.
    ConflictingUpdateOperators,
    /// An update path runs through a value that cannot hold fields.
    PathNotViable,
    /// An update path is empty or has an empty component (`a..b`).
    EmptyFieldName,
    /// An upsert's query pins the same field (or a field and its parent)
    /// more than once, so its starting document is ambiguous.
    NotSingleValueField,
    /// An update would pad an array with too many nulls.
    CannotBackfillArray,
    /// A `$`-prefixed or otherwise invalid field name in a stored document.
    DollarPrefixedFieldName,
    /// A unique index already holds the key.
    DuplicateKey,
    /// A compound index key would need the cross product of two arrays.
    CannotIndexParallelArrays,
    /// A value is too large to be indexed or stored.
    KeyTooLong,
    /// A document is larger than the 16 MiB limit.
    BsonObjectTooLarge,
    /// The collection or database does not exist.
    NamespaceNotFound,
    /// The collection already exists.
    NamespaceExists,
    /// The named index does not exist.
    IndexNotFound,
    /// A required field is missing.
    NoSuchKey,
    /// `{$meta: "textScore"}` where the query has no `$text`.
    TextScoreUnavailable,
    /// A document or a `$text` query names a language text search does
    /// not know.
    TextLanguage,
    /// A document's language override field holds no string.
    TextLanguageType,
    /// An index option is not valid.
    InvalidIndexSpecificationOption,
    /// The index cannot be created.
    CannotCreateIndex,
    /// An index with the same key pattern exists with other options.
    IndexOptionsConflict,
    /// An index with the same name exists with another key pattern.
    IndexKeySpecsConflict,
    /// Options are not valid for this command.
    InvalidOptions,
    /// A namespace name is not valid.
    InvalidNamespace,
    /// A key pattern matches more than one index.
    AmbiguousIndexKeyPattern,
    /// The operation is not allowed in this situation.
    IllegalOperation,
    /// A hint names an index that cannot be used.
    BadHint,
    /// No plan can run the query (a `$near` without a geo index to order
    /// by).
    NoQueryExecutionPlans,
    /// A document's value at a `2dsphere` index's field is no valid
    /// location.
    CannotExtractGeoKeys,
    /// A `2d` index's field holds a list of locations with something that
    /// is no location in it (mongod's 16804).
    FlatNotALocation,
    /// A location at a `2d` index's field is empty (13067).
    FlatEmptyLocation,
    /// A location at a `2d` index's field has one value (13068).
    FlatOneElement,
    /// A location at a `2d` index's field is not two numbers (13026).
    FlatNotNumbers,
    /// A location at a `2d` index's field lies outside its bounds (13027).
    FlatOutOfRange,
    /// A `hashed` index met an array at its field.
    HashedArray,
    /// A value an index cannot key (an array at a compound text index's
    /// ordinary field); mongod's CannotBuildIndexKeys, 133.
    CannotBuildIndexKeys,
    /// The sort would exceed the in-memory sort limit.
    QueryExceededMemoryLimit,
    /// A find projection mixes inclusion into an exclusion projection
    /// (`{a: 0, b: 1}`); MongoDB's location 31253.
    ProjectionInclusionInExclusion,
    /// A find projection mixes exclusion into an inclusion projection
    /// (`{a: 1, b: 0}`); MongoDB's location 31254.
    ProjectionExclusionInInclusion,
    /// A `$project` computes a field in an exclusion projection; location
    /// 31252.
    ProjectionExpressionInExclusion,
    /// A projection names the same path twice, or a path below one it
    /// already names whole (`{"a.b": 1, a: 1}`); MongoDB's location 31250.
    ProjectionPathCollision,
    /// A projection names a path below one it already names whole
    /// (`{a: 1, "a.b": 1}`); MongoDB's location 31249.
    ProjectionPathPrefixCollision,
    /// A projection has an empty sub-projection (`{a: {}}`); MongoDB's
    /// location 51270.
    EmptySubProjection,
    /// A sort value is neither a number nor a `$meta` document; MongoDB's
    /// location 15974.
    IllegalSortKey,
    /// A numeric sort value is not 1 or -1; MongoDB's location 15975.
    BadSortOrder,
    /// A sort value is a document other than `{$meta: …}`; MongoDB's
    /// location 17312.
    SortExpressionNotMeta,
    /// A projection or sort path is the empty string; MongoDB's location
    /// 40352.
    EmptyFieldPath,
    /// A projection or sort path ends with a dot; MongoDB's location 40353.
    FieldPathTrailingDot,
    /// A projection or sort path has an empty component (`a..b`); MongoDB's
    /// location 15998.
    EmptyFieldPathComponent,
    /// A projection or sort path has a component starting with `$`;
    /// MongoDB's location 16410.
    DollarPrefixedFieldPathComponent,
    /// A feature ebb does not implement yet (refused rather than ignored).
    NotImplemented,
    /// A transaction's write met a change committed since its snapshot.
    WriteConflict,
    /// The operation cannot run inside a multi-document transaction.
    OperationNotSupportedInTransaction,
    /// A transaction's writes outgrew what one commit may carry.
    TransactionTooLarge,
    /// A chain of views is deeper than 20, or loops.
    ViewDepthLimitExceeded,
    /// An aggregation field path (`"$a..b"`, `"$"`) is not valid; MongoDB's
    /// location 16872.
    InvalidFieldPathExpression,
    /// An expression operator (`{$foo: …}`) is not recognised.
    InvalidPipelineOperator,
    /// A pipeline element is not a one-field document; location 40323.
    StageNotOneField,
    /// The stage name is not recognised; location 40324.
    UnrecognizedPipelineStage,
    /// A stage that takes a document was given something else; 15959.
    StageSpecNotObject,
    /// `$skip`/`$limit` got a negative or non-numeric value; 15956.
    StageCountArgument,
    /// `$limit: 0`; location 15958.
    LimitNotPositive,
    /// A `$group` has no `_id`; location 15955.
    GroupWithoutId,
    /// A `$group` field is not an accumulator document; location 40234.
    GroupFieldNotAccumulator,
    /// A `$group` field names more than one accumulator; location 40238.
    GroupFieldNotOneAccumulator,
    /// A `$group` field names an unknown accumulator; location 15952.
    UnknownGroupOperator,
    /// `$unset` is neither a string nor an array; location 31002.
    UnsetSpecType,
    /// A `$unset` array holds a non-string; location 31120.
    UnsetSpecElement,
    /// `$unwind` is neither a string nor a document; location 15981.
    UnwindSpecType,
    /// `$unwind` names no path; location 28812.
    UnwindWithoutPath,
    /// An `$unwind` path does not start with `$`; location 28818.
    UnwindPathWithoutDollar,
    /// `$unwind`'s `path` is not a string; location 28808.
    UnwindPathType,
    /// `preserveNullAndEmptyArrays` is not a boolean; location 28809.
    UnwindPreserveType,
    /// `includeArrayIndex` is not a non-empty string; location 28810.
    UnwindIndexType,
    /// An `$unwind` option ebb and mongod do not know; location 28811.
    UnwindUnknownOption,
    /// `includeArrayIndex` starts with `$`; location 28822.
    UnwindIndexWithDollar,
    /// `$count`'s field is empty, `$`-prefixed or dotted; location 40156.
    CountFieldInvalid,
    /// A regular expression does not compile; location 51091.
    InvalidRegex,
    /// A regex option letter is not one of `imxsu`; location 51108.
    InvalidRegexOptions,
    /// Options given both in a regex value and in `$options`; 51075.
    RegexOptionsTwice,
    /// A required field of an options document is missing; 40414.
    MissingField,
    /// An options document has a field it does not define; 40415.
    UnknownField,
    /// A collation names a collator version ebb does not have.
    IncompatibleCollationVersion,
    /// A write would store a document its collection's validator rejects.
    DocumentValidationFailure,
    /// `$replaceRoot`'s new root is not a document; location 40228.
    ReplaceRootNotObject,
    /// `$replaceRoot` was given something other than a document; 40229.
    ReplaceRootSpecNotObject,
    /// An aggregation expression failed to parse or to evaluate.
    Expression(ExprError),
    /// A stage that reads other collections, nests pipelines or groups
    /// into buckets was misused or outgrew its limit.
    Stage(StageError),
    /// A value cannot be converted to the type asked for (`$convert`,
    /// `$dateFromString`); the failure `onError` catches.
    ConversionFailure,
    /// Arithmetic left the range of its type (a date in `$add`).
    Overflow,
    /// `$where` needs server-side JavaScript, which ebb does not run (as a
    /// mongod started with scripting disabled).
    JavaScriptDisabled,
    /// A server-side script threw, or ran out of memory.
    JsInterpreterFailure,
    /// A find-only projection operator (`$slice`, `$elemMatch`, positional
    /// `$`) in a form mongod refuses.
    FindProjection(ProjectionFault),
    /// `min`/`max` without a hint naming an index; location 51173.
    MinMaxWithoutHint,
    /// `min`/`max` whose fields are not the hinted index's key pattern
    /// (or whose strings need another collation); location 51174.
    MinMaxIncompatibleIndex,
    /// `min` does not come before `max` in the hinted index; 51175.
    MinMaxOutOfOrder,
    /// `min` and `max` name different fields; location 51176.
    MinMaxFieldsDiffer,
    /// The operation ran past its `maxTimeMS`.
    MaxTimeMsExpired,
    /// `killOp` stopped the operation.
    Interrupted,
    /// The client of the operation disconnected.
    ClientDisconnect,
    /// Capping removed the document a tailable cursor stood on.
    CappedPositionLost,
    /// The data on disk is not what this version wrote.
    Corrupt,
    /// A write failed for lack of disk space, or was refused because the
    /// engine's log writer failed before (after a full disk, it stays
    /// failed until the node restarts).
    OutOfDiskSpace,
    /// The storage engine failed.
    Engine,
}

/// How a find-only projection operator was misused; each is one of
/// mongod's locations, named in the node's code table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ProjectionFault {
    /// `$slice: [..]` without exactly two elements (31272).
    SliceArrayLength,
    /// `$slice: [skip, limit]` with a non-numeric skip (31257).
    SliceSkipType,
    /// `$slice: [skip, limit]` with a non-numeric limit (31258).
    SliceLimitType,
    /// `$slice: [skip, limit]` with a limit of 0 or less (31259).
    SliceLimitNotPositive,
    /// `$slice` given neither a number nor an array (31273).
    SliceArgument,
    /// `$elemMatch` given something other than a document (31274).
    ElemMatchArgument,
    /// `$elemMatch` after a positional projection (31255).
    ElemMatchAfterPositional,
    /// A positional projection after `$elemMatch` (31256).
    PositionalAfterElemMatch,
    /// `$elemMatch` on a dotted path (31275).
    ElemMatchNested,
    /// Two positional projections (31276).
    PositionalTwice,
    /// A positional projection with no query to take a position from (51050).
    PositionalWithoutQuery,
    /// A positional projection on a field the query does not name (31277).
    PositionalNotInQuery,
    /// A path ending in `.$.` (31270).
    PositionalTrailingDot,
    /// A path using `$` twice (31287).
    PositionalOperatorTwice,
    /// A positional path given a sub-document or expression (31271).
    PositionalWithObject,
    /// A positional path given a literal (31308).
    PositionalWithLiteral,
    /// The document's array has no recorded matching position (51246).
    PositionalNoMatch,
    /// The recorded position is past the end of the array (51247).
    PositionalMismatch,
}

/// A storage-layer error: a kind plus a message for the client.
#[derive(Debug, Clone, PartialEq)]
pub struct Error {
    pub kind: ErrorKind,
    pub message: String,
    /// Extra structured detail some errors carry to the client
    /// (the duplicate key's pattern and value).
    pub detail: Option<Box<bson::Document>>,
}

impl Error {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Error {
            kind,
            message: message.into(),
            detail: None,
        }
    }

    pub fn with_detail(mut self, detail: bson::Document) -> Self {
        self.detail = Some(Box::new(detail));
        self
    }

    pub fn bad_value(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::BadValue, message)
    }

    pub fn failed_to_parse(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::FailedToParse, message)
    }

    pub fn type_mismatch(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::TypeMismatch, message)
    }

    pub fn corrupt(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Corrupt, message)
    }

    pub fn engine(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Engine, message)
    }

    /// Refuses what ebb does not do yet: `"<what> is not implemented in ebb"`.
    pub fn not_implemented(what: &str) -> Self {
        Self::new(
            ErrorKind::NotImplemented,
            format!("{what} is not implemented in ebb"),
        )
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

impl From<bson::error::Error> for Error {
    fn from(e: bson::error::Error) -> Self {
        Error::corrupt(format!("malformed BSON: {e}"))
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// A misused or oversized aggregation stage (`$lookup`, `$unionWith`,
/// `$documents`, `$facet`, `$bucket`, `$bucketAuto`, `$sortByCount`,
/// `$sample`): one variant for each place mongod reports a distinct code
/// (`ebb-node` maps each to it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StageError {
    /// `$redact`'s expression gave something other than `$$DESCEND`,
    /// `$$PRUNE` or `$$KEEP`.
    RedactAnswer,
    /// `$out`/`$merge` inside `$lookup`'s pipeline.
    WriteStageInLookup,
    /// `$out`/`$merge` inside `$unionWith`'s pipeline.
    WriteStageInUnionWith,
    /// A stage `$facet` may not hold, at any depth.
    NotAllowedInFacet,
    /// The documents one `$lookup` joins to one input document outgrew
    /// the intermediate-document limit.
    LookupTooLarge,
    /// `$facet`'s output document outgrew the intermediate-document limit.
    FacetTooLarge,
    /// A stage that must come first (`$documents`) came later.
    NotFirstStage,
    /// `$documents` did not evaluate to an array.
    DocumentsNotArray,
    /// `$changeStream` on a node that is not a replica set member (ebb
    /// is a standalone).
    ChangeStreamNeedsReplicaSet,
    FacetSpecNotObject,
    FacetNotArray,
    FacetStageNotObject,
    BucketNotObject,
    BucketGroupBy,
    BucketBoundariesNotArray,
    BucketBoundaryNotConstant,
    BucketTooFewBoundaries,
    BucketBoundaryTypes,
    BucketBoundariesUnsorted,
    BucketDefaultNotConstant,
    BucketOutputNotObject,
    BucketUnknownOption,
    BucketMissingRequired,
    BucketDefaultInRange,
    BucketAutoNotObject,
    BucketAutoGroupBy,
    BucketAutoBucketsType,
    BucketAutoBucketsNotInt,
    BucketAutoBucketsNotPositive,
    BucketAutoOutputNotObject,
    BucketAutoUnknownOption,
    BucketAutoMissingRequired,
    BucketAutoGranularityType,
    MinMaxNNotObject,
    FirstLastNNotObject,
    AccNUnknownArgument,
    AccNMissingN,
    AccNMissingInput,
    AccNNotNumeric,
    AccNNotIntegral,
    AccNNotPositive,
    TopNotObject,
    TopUnknownArgument,
    TopMissingN,
    TopMissingOutput,
    TopMissingSortBy,
    SortByCountObject,
    SortByCountString,
    SortByCountType,
    SampleNotObject,
    SampleSizeType,
    SampleSizeNotPositive,
    SampleUnknownOption,
    SampleWithoutSize,
    /// `$out`/`$merge` before the last stage.
    WriteStageNotLast,
    OutArgumentType,
    OutSpecialCollection,
    OutInternalDatabase,
    /// `$out` into a capped collection.
    OutCapped,
    MergeArgumentType,
    MergeIntoType,
    MergeWhenMatchedType,
    MergeModes,
    MergeLetWithoutPipeline,
    MergeLetRedefinesNew,
    MergeOnType,
    MergeOnEmpty,
    MergeOnElementType,
    MergeOnDuplicate,
    MergeOnFieldMissing,
    MergeOnFieldArray,
    /// No unique index on the target covers exactly the `on` fields.
    MergeOnNotUnique,
    MergeSpecialCollection,
    MergeInternalDatabase,
    /// `whenNotMatched: "fail"` met an output document with no match.
    MergeNoMatch,
    /// `$graphLookup`'s field names and `as` must be strings (40103).
    GraphLookupNotString,
    GraphLookupRestrictNotObject,
    GraphLookupUnknownArgument,
    GraphLookupMissingArgument,
    /// The documents found outgrew the memory limit (40099).
    GraphLookupTooLarge,
    GraphLookupMaxDepthNotNumber,
    GraphLookupMaxDepthNegative,
    GraphLookupMaxDepthNotIntegral,
    DensifyPartitionHoldsField,
    DensifyFieldInPartition,
    DensifyStepNotPositive,
    DensifyBoundsOrder,
    DensifyBoundsLength,
    DensifyPartitionWithoutFields,
    DensifyUnitWithNumbers,
    DensifyMixedBounds,
    DensifyDateStepNotWhole,
    /// A value of the densified field that is not the range's type.
    DensifyValueType,
    /// More than mongod's 500,000 generated documents (5897900).
    DensifyTooMany,
    /// A window's lower bound after its upper (5339900).
    WindowBoundsBackwards,
    /// A document window other than the whole partition without `sortBy`
    /// (5339901).
    DocumentWindowSort,
    /// A range window without a `sortBy` of one field (5339902).
    RangeWindowSort,
    /// `$rank`/`$denseRank`/`$documentNumber` given a window (5371601).
    RankTakesNoWindow,
    /// A rank function without a `sortBy` of one field (5371602).
    RankSort,
    /// A rank function given an argument (5371603).
    RankTakesNoArgument,
    /// Two `$setWindowFields` outputs on overlapping paths (6307900).
    WindowOutputConflict,
    /// A range window over a non-numeric `sortBy` value (5429413).
    RangeKeyNotNumber,
    /// A time range window over a `sortBy` value that is no date (5429513).
    RangeKeyNotDate,
    /// `$derivative`/`$integral` with `unit` over a non-date (5624900).
    CalculusUnitNeedsDate,
    /// `$derivative`/`$integral` over dates without `unit` (5624901).
    CalculusDateNeedsUnit,
    /// A `unit` longer than a week for `$derivative`/`$integral` (5490710).
    WindowUnitTooLong,
    /// `$linearFill` without a `sortBy` of one field (605001).
    LinearFillSort,
    /// `$linearFill` over repeated `sortBy` values (6050106).
    LinearFillRepeatedSort,
    /// One `$setWindowFields` partition outgrew the memory limit (5643011).
    WindowPartitionTooLarge,
}

/// A failed aggregation expression: one variant for each place mongod
/// reports a distinct code (`ebb-node` maps each to it). Variants are named
/// after what went wrong; their messages are mongod's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ExprError {
    // Operators and arguments
    OperatorNotAlone,
    ArgCount,
    ArgCountRange,
    ArgCountAtLeast,
    UndefinedVariable,
    VariableUnavailable,
    DuplicateObjectField,
    FieldNameDot,
    FieldNameNul,
    LetReadsDocument,
    LetSetsSystemVariable,
    // Arithmetic
    AddType,
    AddTwoDates,
    SubtractType,
    SubtractFromDate,
    MultiplyType,
    DivideByZero,
    DivideType,
    ModByZero,
    ModType,
    NumericArgType,
    AbsOfLongMin,
    RoundType,
    RoundPrecisionNotIntegral,
    RoundPrecisionRange,
    RoundInvalidConversion,
    SqrtNegative,
    LnNotPositive,
    Log10NotPositive,
    LogArgType,
    LogBaseType,
    LogArgNotPositive,
    LogBaseInvalid,
    PowBaseType,
    PowExponentType,
    PowZeroNegative,
    TrigOutOfDomain,
    Atan2YType,
    Atan2XType,
    RandArguments,
    // Conditionals and variables
    CondUnknownArgument,
    CondMissingIf,
    CondMissingThen,
    CondMissingElse,
    IfNullArgs,
    SwitchNotObject,
    SwitchBranchesNotArray,
    SwitchBranchNotObject,
    SwitchBranchUnknownArgument,
    SwitchBranchMissingCase,
    SwitchBranchMissingThen,
    SwitchNoMatch,
    SwitchUnknownArgument,
    SwitchNoBranches,
    LetNotObject,
    LetUnknownArgument,
    LetMissingVars,
    LetMissingIn,
    LetVarsNotObject,
    AllElementsTrueType,
    AnyElementTrueType,
    // Arrays
    MapNotObject,
    MapUnknownArgument,
    MapMissingInput,
    MapMissingIn,
    MapInputNotArray,
    FilterNotObject,
    FilterUnknownArgument,
    FilterMissingInput,
    FilterMissingCond,
    FilterInputNotArray,
    FilterLimitNotIntegral,
    FilterLimitNotPositive,
    ReduceNotObject,
    ReduceUnknownArgument,
    ReduceMissingInput,
    ReduceMissingInitial,
    ReduceMissingIn,
    ReduceInputNotArray,
    SizeNotArray,
    ArrayElemAtNotArray,
    ArrayElemAtIndexType,
    ArrayElemAtIndexNotIntegral,
    InNotArray,
    IndexOfArrayNotArray,
    TsSecondNotTimestamp,
    TsIncrementNotTimestamp,
    BinarySizeType,
    BsonSizeType,
    IndexOfBoundNotIntegral,
    IndexOfBoundNegative,
    SliceNotArray,
    SliceSecondType,
    SliceSecondNotIntegral,
    SliceThirdType,
    SliceThirdNotIntegral,
    SliceThirdNotPositive,
    ConcatArraysType,
    ReverseArrayNotArray,
    RangeStartType,
    RangeStartNotIntegral,
    RangeEndType,
    RangeEndNotIntegral,
    RangeStepType,
    RangeStepNotIntegral,
    RangeStepZero,
    SortArrayNotObject,
    SortArrayUnknownArgument,
    SortArrayMissingInput,
    SortArrayMissingSortBy,
    SortArrayInputNotArray,
    SortArraySortByInvalid,
    ZipNotObject,
    ZipInputsNotArray,
    ZipDefaultsNotArray,
    ZipLongestNotBool,
    ZipUnknownArgument,
    ZipNoInputs,
    ZipDefaultsWithoutLongest,
    ZipDefaultsLength,
    ZipInputNotArray,
    // Sets
    SetUnionType,
    SetIntersectionType,
    SetDifferenceFirstType,
    SetDifferenceSecondType,
    SetEqualsType,
    SetIsSubsetFirstType,
    SetIsSubsetSecondType,
    // Strings
    ConcatType,
    StringConversion,
    SubstrStartType,
    SubstrLengthType,
    SubstrStartNegative,
    SubstrStartContinuation,
    SubstrEndContinuation,
    SubstrCpStartType,
    SubstrCpStartNotIntegral,
    SubstrCpLengthType,
    SubstrCpLengthNotIntegral,
    SubstrCpLengthNegative,
    SubstrCpStartNegative,
    StrLenBytesType,
    StrLenCpType,
    SplitInputType,
    SplitSeparatorType,
    SplitEmptySeparator,
    IndexOfBytesInputType,
    IndexOfBytesTokenType,
    IndexOfCpInputType,
    IndexOfCpTokenType,
    TrimNotObject,
    TrimUnknownArgument,
    TrimMissingInput,
    TrimInputType,
    TrimCharsType,
    ReplaceNotObject,
    ReplaceUnknownArgument,
    ReplaceMissingInput,
    ReplaceMissingFind,
    ReplaceMissingReplacement,
    ReplaceInputType,
    ReplaceFindType,
    ReplaceReplacementType,
    RegexNotObject,
    RegexUnknownArgument,
    RegexMissingInput,
    RegexMissingRegex,
    RegexInputType,
    RegexRegexType,
    RegexOptionsType,
    RegexOptionsTwice,
    RegexInvalid,
    // Objects
    MergeObjectsType,
    ObjectToArrayType,
    ArrayToObjectType,
    ArrayToObjectElementType,
    ArrayToObjectMixedArray,
    ArrayToObjectPairLength,
    ArrayToObjectPairKeyType,
    ArrayToObjectMixedObject,
    ArrayToObjectKeyCount,
    ArrayToObjectMissingKey,
    ArrayToObjectKeyType,
    ArrayToObjectKeyNul,
    GetFieldUnknownArgument,
    GetFieldMissingField,
    GetFieldFieldType,
    SetFieldNotObject,
    SetFieldUnknownArgument,
    SetFieldMissingField,
    SetFieldMissingValue,
    SetFieldMissingInput,
    SetFieldInputType,
    SetFieldFieldNotConstant,
    SetFieldFieldType,
    // Dates
    DateConversion,
    TimeZoneType,
    UnknownTimeZone,
    DateOutOfRange,
    DatePartUnknownOption,
    DatePartArrayLength,
    DatePartMissingDate,
    DateToStringNotObject,
    DateToStringUnknownArgument,
    DateToStringMissingDate,
    DateToStringFormatType,
    FormatUnmatchedPercent,
    FormatInvalidSpecifier,
    FormatYearRange,
    DateFromStringNotObject,
    DateFromStringUnknownArgument,
    DateFromStringMissingDate,
    DateFromStringFormatType,
    DateToPartsNotObject,
    DateToPartsUnknownArgument,
    DateToPartsMissingDate,
    DateToPartsIsoType,
    DateFromPartsNotObject,
    DateFromPartsUnknownArgument,
    DateFromPartsNoYear,
    DateFromPartsMixedNatural,
    DateFromPartsMixedIso,
    DatePartNotInteger,
    DatePartRange,
    DateFromPartsYearRange,
    DateFromPartsIsoYearRange,
    DateArithNotObject,
    DateArithUnknownArgument,
    DateArithMissingArgument,
    DateArithStartType,
    DateArithAmountType,
    DateArithOverflow,
    DateDiffNotObject,
    DateDiffUnknownArgument,
    DateDiffMissingArgument,
    DateDiffDateType,
    DateTruncNotObject,
    DateTruncUnknownArgument,
    DateTruncMissingArgument,
    DateTruncDateType,
    DateUnitType,
    DateUnitUnknown,
    DateTruncBinSizeType,
    StartOfWeekType,
    DateTruncBinSizeNotPositive,
    StartOfWeekUnknown,
}
