//! The messages a collection's writer takes: verbs with typed results.

use ebb_lang::decided::Decided;
use std::sync::Arc;

use actix::Message;
use bson::RawDocumentBuf;
use ebb_storage::statement::{
    DeleteOutcome, DeleteStatement, FindAndModify, FindAndModifyOutcome, InsertOutcome,
    UpdateOutcome, UpdateStatement,
};
use ebb_storage::ttl::ExpireOutcome;
use ebb_storage::{Collection, Result};

/// Inserts documents.
#[derive(Message)]
#[rtype(result = "Result<InsertOutcome>")]
pub struct InsertDocs {
    /// Shared with the sender (see `InsertStatement::docs`).
    pub docs: Arc<Vec<RawDocumentBuf>>,
    pub ordered: bool,
    /// `j: true`: durable before acknowledged.
    pub sync: bool,
    /// `bypassDocumentValidation: true`.
    pub bypass_validation: bool,
    /// Every document already went through `prepare_insert`
    /// (`ebb_storage::write::writer::prepare_statement`).
    pub prepared: bool,
    /// What a replica set's primary decided for the write (its ObjectIds).
    pub decided: Option<Decided>,
}

/// Updates documents.
#[derive(Message)]
#[rtype(result = "Result<UpdateOutcome>")]
pub struct UpdateDocs {
    pub statements: Vec<UpdateStatement>,
    pub ordered: bool,
    pub sync: bool,
    /// What a replica set's primary decided for the write (its time and
    /// ObjectIds).
    pub decided: Option<Decided>,
}

/// Deletes documents.
#[derive(Message)]
#[rtype(result = "Result<DeleteOutcome>")]
pub struct DeleteDocs {
    pub statements: Vec<DeleteStatement>,
    pub ordered: bool,
    pub sync: bool,
    /// What a replica set's primary decided for the write (which due
    /// documents it hid).
    pub decided: Option<Decided>,
}

/// Finds one document and changes or removes it.
#[derive(Message)]
#[rtype(result = "Result<FindAndModifyOutcome>")]
pub struct ModifyOne {
    pub request: FindAndModify,
    pub sync: bool,
    /// What a replica set's primary decided for the write (its time and
    /// ObjectIds).
    pub decided: Option<Decided>,
}

/// Deletes one chunk of expired documents of a TTL index.
#[derive(Message, Clone)]
#[rtype(result = "Result<ExpireOutcome>")]
pub struct ExpireChunk {
    pub index: String,
    pub cutoff_millis: i64,
    pub limit: usize,
    pub resume_after: Option<Vec<u8>>,
    /// The chunk may instead delete the whole collection at once when every
    /// document in it is due (`ttl::expire_all`): set when no rate limit
    /// applies. The writer ignores it while foreground writes are active.
    pub whole: bool,
    /// The monitor is keeping up with this index: its last chunk deleted
    /// documents that had fallen due just before. The writer then waits
    /// less for the chunk's plan
    /// ([`plan_patience`](super::schedule::plan_patience)): these
    /// documents' lag is what prompt expiry promises, and a backlog's chunks
    /// (the flag unset) give the foreground the longer patience.
    pub prompt: bool,
    /// The monitor is seconds behind on this index: its last chunk deleted
    /// documents more than [`BEHIND`](crate::ttl::BEHIND) after
    /// they fell due. The writer then runs the chunk itself, at normal
    /// priority, instead of planning it at idle priority: a busy CPU
    /// starves the planning thread.
    pub behind: bool,
    /// Under `ttl.overload = "throttle"`, the monitor is late on this index
    /// (its last chunk deleted documents more than
    /// [`KEEPING_UP`](crate::ttl::KEEPING_UP) after they fell due): the
    /// writer runs the chunk itself, as for `behind`, and sizes it to
    /// delete faster than the writes it alternates with insert
    /// (`ForegroundChunks::throttled`), which slows them.
    pub throttle: bool,
    /// The limit of the monitor's next chunk of this index if this one
    /// deletes all it may: the visit's next, or the next visit's first
    /// when this one reaches the visit's target. The writer plans the next
    /// chunk ahead at this size (or its own smaller one), so that the plan
    /// serves it instead of leaving a remainder planned on the writer.
    pub next_limit: usize,
    /// The chunk comes from a replica set's log: every member deletes what
    /// it names on the same data, so the writer runs it exactly as sent
    /// (never smaller while foreground writes run, never the whole
    /// collection at once, never planned ahead).
    pub logged: bool,
    /// For a chunk from the log: how the member marks its progress
    /// (`ebb_lang::decided::Rider`).
    pub rider: Option<Arc<ebb_lang::decided::Rider>>,
}

impl ExpireChunk {
    /// Whether the writer runs this chunk itself at normal priority,
    /// never planning it: sent `behind` or `throttle`.
    pub fn urgent(&self) -> bool {
        self.behind || self.throttle
    }

    /// The storage-side chunk, at most `limit` documents.
    pub fn chunk(&self, limit: usize) -> ebb_storage::ttl::Chunk<'_> {
        ebb_storage::ttl::Chunk {
            index: &self.index,
            cutoff_millis: self.cutoff_millis,
            limit,
            resume_after: self.resume_after.as_deref(),
        }
    }
}

/// Builds new indexes, then uses `coll` (which lists them).
#[derive(Message)]
#[rtype(result = "Result<()>")]
pub struct BuildIndexes {
    pub coll: Arc<Collection>,
    pub new_names: Vec<String>,
}

/// Uses a new collection handle from now on.
#[derive(Message)]
#[rtype(result = "()")]
pub struct SwitchCollection(pub Arc<Collection>);

/// Finishes queued work and stops.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Retire;

/// A write a transaction runs itself, on its own engine (a snapshot with
/// its writes laid over it, `ebb_storage::engine::overlay`), instead of
/// sending it to the collection's writer: nothing it writes reaches the
/// collection until the transaction commits.
pub trait Direct: Message<Result = Result<Self::Output>> {
    type Output;
    /// Runs the write on `engine` at time `now`.
    fn direct(
        self,
        engine: &dyn ebb_storage::engine::Engine,
        coll: &Arc<Collection>,
        now: bson::DateTime,
    ) -> Result<Self::Output>;
}

impl Direct for InsertDocs {
    type Output = InsertOutcome;

    fn direct(
        self,
        engine: &dyn ebb_storage::engine::Engine,
        coll: &Arc<Collection>,
        _now: bson::DateTime,
    ) -> Result<InsertOutcome> {
        let statement = ebb_storage::statement::InsertStatement {
            docs: self.docs,
            ordered: self.ordered,
            bypass_validation: self.bypass_validation,
            prepared: self.prepared,
        };
        ebb_storage::statement::insert_with(engine, coll, statement)
    }
}

impl Direct for UpdateDocs {
    type Output = UpdateOutcome;

    fn direct(
        self,
        engine: &dyn ebb_storage::engine::Engine,
        coll: &Arc<Collection>,
        now: bson::DateTime,
    ) -> Result<UpdateOutcome> {
        ebb_storage::statement::update(engine, coll, self.statements, self.ordered, now)
    }
}

impl Direct for DeleteDocs {
    type Output = DeleteOutcome;

    fn direct(
        self,
        engine: &dyn ebb_storage::engine::Engine,
        coll: &Arc<Collection>,
        _now: bson::DateTime,
    ) -> Result<DeleteOutcome> {
        ebb_storage::statement::delete(engine, coll, self.statements, self.ordered)
    }
}

impl Direct for ModifyOne {
    type Output = FindAndModifyOutcome;

    fn direct(
        self,
        engine: &dyn ebb_storage::engine::Engine,
        coll: &Arc<Collection>,
        now: bson::DateTime,
    ) -> Result<FindAndModifyOutcome> {
        ebb_storage::statement::find_and_modify(engine, coll, self.request, now)
    }
}
