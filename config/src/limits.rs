//! MongoDB's size limits, in one place. Every crate that enforces or
//! advertises a limit reads it from here; `hello` advertises the
//! configured message limit (`net.max_message_bytes`, at most
//! [`MAX_MESSAGE_BYTES`]) and these fixed ones.

/// The largest wire message the node accepts: MongoDB's
/// `maxMessageSizeBytes`. Drivers size their batches by what `hello`
/// advertises, so the configured limit may be lowered but never raised.
pub const MAX_MESSAGE_BYTES: u32 = 48_000_000;

/// The largest document MongoDB stores or returns: `maxBsonObjectSize`.
pub const MAX_BSON_OBJECT_BYTES: usize = 16 * 1024 * 1024;

/// The most statements one write command may carry: `maxWriteBatchSize`.
pub const MAX_WRITE_BATCH_SIZE: usize = 100_000;

/// Memory a blocking sort or an aggregation stage may use without
/// `allowDiskUse` (MongoDB's `internalQueryMaxBlockingSortMemoryUsageBytes`).
pub const MAX_SORT_BYTES: usize = 100 * 1024 * 1024;

/// Bytes of documents in one cursor batch: a reply must stay under
/// [`MAX_BSON_OBJECT_BYTES`] with room for its envelope.
pub const MAX_BATCH_BYTES: usize = MAX_BSON_OBJECT_BYTES - 64 * 1024;

/// The deepest nesting of documents and arrays a request may contain,
/// counting the command document itself as depth 1. Enforcing it at the
/// wire lets the layers above walk documents recursively without risking
/// the stack.
pub const MAX_BSON_DEPTH: usize = 200;

/// The deepest nesting a stored document may have, counting the document
/// itself as level 1; empty documents and arrays add no level. The manual's
/// "no more than 100 levels of nesting for BSON documents".
pub const MAX_STORED_DEPTH: usize = 100;
