//! `CollectionActor`: the single writer of one collection.
//!
//! Every change to a collection's records and index entries — inserts,
//! updates, deletes, index builds, TTL expiry — is a job in this actor's
//! queue, so writes to one collection never race and need no locks. Jobs
//! run on the blocking pool (never on the arbiter). While one group of jobs
//! runs, new jobs queue up; the next group takes all of them at once (group
//! commit): each job writes its own atomic batch, and when durability asks
//! for it, one WAL sync covers the whole group before any of it is
//! acknowledged.
//!
//! Control jobs (a new index set, drop) run alone, between groups, so every
//! write sees exactly one version of the collection's indexes.
//!
//! TTL chunks wait in a queue of their own and alternate with foreground
//! groups: while both have work, a foreground write waits for at most the
//! one chunk already running, and expiry still gets every other turn, so
//! neither can starve the other (MongoDB runs TTL deletes at low priority
//! for the same reason).

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

use actix::prelude::*;
use bson::RawDocumentBuf;
use ebb_storage::engine::Engine;
use ebb_storage::expire::ExpireOutcome;
use ebb_storage::ops::{
    self, DeleteOutcome, DeleteStatement, FindAndModify, FindAndModifyOutcome, InsertOutcome,
    UpdateOutcome, UpdateStatement,
};
use ebb_storage::write::IndexSet;
use ebb_storage::{Error, ErrorKind, Result};
use tokio::sync::oneshot;

use crate::shared::{Durability, Shared};

/// Documents per TTL chunk while foreground writes are active. A write
/// queued behind a chunk waits for all of it; at 16 documents that is a few
/// tens of microseconds (BENCHMARKS.md, `foreground`: 128 and 32 cost
/// insert p99 6x and 3.5x idle, 16 costs 1.7x).
const FOREGROUND_CHUNK_DOCS: usize = 16;
/// How recent a foreground write must be to count as activity.
const FOREGROUND_WINDOW: Duration = Duration::from_millis(100);

/// A write job: runs on a blocking thread, returns the acknowledgement to
/// send once the group is durable.
type WriteJob = Box<dyn FnOnce(&dyn Engine, &IndexSet) -> Ack + Send>;
/// Sends a job's reply.
type Ack = Box<dyn FnOnce() + Send>;

enum Job {
    Write {
        run: WriteJob,
        sync: bool,
    },
    /// Builds the entries of new indexes, then switches to `set`.
    Build {
        set: Arc<IndexSet>,
        new_names: Vec<String>,
        reply: oneshot::Sender<Result<()>>,
    },
    /// Switches to a new index set without building anything (dropped
    /// indexes, changed options).
    Switch {
        set: Arc<IndexSet>,
        reply: oneshot::Sender<()>,
    },
    /// The collection is being dropped: finish what is queued, refuse the rest.
    Retire {
        reply: oneshot::Sender<()>,
    },
}

pub struct CollectionActor {
    shared: Arc<Shared>,
    set: Arc<IndexSet>,
    queue: VecDeque<Job>,
    /// TTL chunks, served alternately with `queue`.
    expiry: VecDeque<WriteJob>,
    /// Whether the last thing run came from `queue`.
    foreground_ran_last: bool,
    /// When the last foreground write was queued.
    last_foreground: Option<Instant>,
    busy: bool,
    retired: bool,
}

impl CollectionActor {
    pub fn new(shared: Arc<Shared>, set: Arc<IndexSet>) -> Self {
        CollectionActor {
            shared,
            set,
            queue: VecDeque::new(),
            expiry: VecDeque::new(),
            foreground_ran_last: false,
            last_foreground: None,
            busy: false,
            retired: false,
        }
    }

    fn enqueue(&mut self, job: Job, ctx: &mut Context<Self>) {
        if self.retired {
            // The collection is gone (its column families may be dropped
            // already): dropping the job drops its reply channel, which the
            // sender sees as "collection was dropped".
            return;
        }
        self.queue.push_back(job);
        self.pump(ctx);
    }

    /// Starts the next group of jobs if none is running.
    fn pump(&mut self, ctx: &mut Context<Self>) {
        if self.busy {
            return;
        }
        let expiry_turn =
            !self.expiry.is_empty() && (self.queue.is_empty() || self.foreground_ran_last);
        if expiry_turn {
            let job = self.expiry.pop_front().expect("checked non-empty");
            self.foreground_ran_last = false;
            self.run_expiry(job, ctx);
            return;
        }
        let Some(front) = self.queue.pop_front() else {
            return;
        };
        self.foreground_ran_last = true;
        let engine = self.shared.engine.clone();
        match front {
            Job::Write { run, sync } => {
                let mut jobs = vec![run];
                let mut sync = sync;
                while let Some(Job::Write { .. }) = self.queue.front() {
                    if let Some(Job::Write { run, sync: s }) = self.queue.pop_front() {
                        jobs.push(run);
                        sync |= s;
                    }
                }
                self.run_writes(jobs, sync, ctx);
            }
            Job::Build {
                set: new_set,
                new_names,
                reply,
            } => {
                self.busy = true;
                let built = new_set.clone();
                let work = tokio::task::spawn_blocking(move || {
                    ops::build_indexes(engine.as_ref(), &built, &new_names)
                });
                ctx.spawn(async move { flatten(work.await) }.into_actor(self).map(
                    move |res, act, ctx| {
                        if res.is_ok() {
                            act.set = new_set;
                        }
                        let _ = reply.send(res);
                        act.busy = false;
                        act.pump(ctx);
                    },
                ));
            }
            Job::Switch {
                set: new_set,
                reply,
            } => {
                self.set = new_set;
                let _ = reply.send(());
                self.busy = false;
                self.pump(ctx);
            }
            Job::Retire { reply } => {
                self.retired = true;
                let _ = reply.send(());
                self.busy = false;
                ctx.stop();
            }
        }
    }

    /// Runs a group of write jobs on the blocking pool; one WAL sync covers
    /// the group when durability asks for it.
    fn run_writes(&mut self, jobs: Vec<WriteJob>, sync: bool, ctx: &mut Context<Self>) {
        self.busy = true;
        let engine = self.shared.engine.clone();
        let set = self.set.clone();
        let sync = sync || self.shared.durability == Durability::SyncEachWrite;
        let group = tokio::task::spawn_blocking(move || {
            let acks: Vec<Ack> = jobs
                .into_iter()
                .map(|job| job(engine.as_ref(), &set))
                .collect();
            if sync && let Err(e) = engine.sync_wal() {
                tracing::error!(error = %e, "WAL sync failed");
            }
            for ack in acks {
                ack();
            }
        });
        ctx.spawn(
            async move {
                let _ = group.await;
            }
            .into_actor(self)
            .map(|_, act, ctx| {
                act.busy = false;
                act.pump(ctx);
            }),
        );
    }

    /// Runs one TTL chunk on the low-priority background thread.
    fn run_expiry(&mut self, job: WriteJob, ctx: &mut Context<Self>) {
        self.busy = true;
        let shared = self.shared.clone();
        let set = self.set.clone();
        let chunk = async move {
            let engine = shared.engine.clone();
            if let Some(ack) = shared
                .background
                .run(move || job(engine.as_ref(), &set))
                .await
            {
                ack();
            }
        };
        ctx.spawn(chunk.into_actor(self).map(|_, act, ctx| {
            act.busy = false;
            act.pump(ctx);
        }));
    }

    /// Whether foreground writes arrived lately: TTL chunks then shrink so
    /// a write never waits long behind one.
    fn foreground_active(&self) -> bool {
        self.last_foreground
            .is_some_and(|t| t.elapsed() < FOREGROUND_WINDOW)
    }

    /// Queues a write whose result is sent back through a oneshot.
    fn write<T: Send + 'static>(
        &mut self,
        ctx: &mut Context<Self>,
        sync: bool,
        f: impl FnOnce(&dyn Engine, &IndexSet) -> Result<T> + Send + 'static,
    ) -> oneshot::Receiver<Result<T>> {
        self.last_foreground = Some(Instant::now());
        let (tx, rx) = oneshot::channel();
        let run: WriteJob = Box::new(move |engine, set| {
            let result = f(engine, set);
            Box::new(move || {
                let _ = tx.send(result);
            })
        });
        self.enqueue(Job::Write { run, sync }, ctx);
        rx
    }

    /// Queues a TTL chunk (see the module doc for how it is scheduled).
    fn expire(
        &mut self,
        ctx: &mut Context<Self>,
        f: impl FnOnce(&dyn Engine, &IndexSet) -> Result<ExpireOutcome> + Send + 'static,
    ) -> oneshot::Receiver<Result<ExpireOutcome>> {
        let (tx, rx) = oneshot::channel();
        if self.retired {
            return rx;
        }
        self.expiry.push_back(Box::new(move |engine, set| {
            let result = f(engine, set);
            Box::new(move || {
                let _ = tx.send(result);
            })
        }));
        self.pump(ctx);
        rx
    }
}

fn flatten<T>(r: std::result::Result<Result<T>, tokio::task::JoinError>) -> Result<T> {
    r.map_err(|e| Error::engine(format!("writer task failed: {e}")))?
}

fn dropped() -> Error {
    Error::new(ErrorKind::NamespaceNotFound, "collection was dropped")
}

async fn recv<T>(rx: oneshot::Receiver<Result<T>>) -> Result<T> {
    rx.await.unwrap_or_else(|_| Err(dropped()))
}

impl Actor for CollectionActor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        // Writers back-pressure through `send().await`; the queue inside the
        // actor is where group commit happens.
        ctx.set_mailbox_capacity(1024);
    }
}

/// Inserts documents.
#[derive(Message)]
#[rtype(result = "Result<InsertOutcome>")]
pub struct InsertDocs {
    pub docs: Vec<RawDocumentBuf>,
    pub ordered: bool,
    /// `j: true`: durable before acknowledged.
    pub sync: bool,
}

/// Updates documents.
#[derive(Message)]
#[rtype(result = "Result<UpdateOutcome>")]
pub struct UpdateDocs {
    pub statements: Vec<UpdateStatement>,
    pub ordered: bool,
    pub sync: bool,
}

/// Deletes documents.
#[derive(Message)]
#[rtype(result = "Result<DeleteOutcome>")]
pub struct DeleteDocs {
    pub statements: Vec<DeleteStatement>,
    pub ordered: bool,
    pub sync: bool,
}

/// Finds one document and changes or removes it.
#[derive(Message)]
#[rtype(result = "Result<FindAndModifyOutcome>")]
pub struct ModifyOne {
    pub request: FindAndModify,
    pub sync: bool,
}

/// Deletes one chunk of expired documents of a TTL index.
#[derive(Message)]
#[rtype(result = "Result<ExpireOutcome>")]
pub struct ExpireChunk {
    pub index: String,
    pub cutoff_millis: i64,
    pub limit: usize,
    pub resume_after: Option<Vec<u8>>,
    /// The chunk may instead delete the whole collection at once when every
    /// document in it is due (`expire::expire_all`): set when no rate limit
    /// applies. The writer ignores it while foreground writes are active.
    pub whole: bool,
}

/// Builds new indexes, then uses `set` (which lists them).
#[derive(Message)]
#[rtype(result = "Result<()>")]
pub struct BuildIndexes {
    pub set: Arc<IndexSet>,
    pub new_names: Vec<String>,
}

/// Uses a new index set from now on.
#[derive(Message)]
#[rtype(result = "()")]
pub struct SwitchIndexSet(pub Arc<IndexSet>);

/// Finishes queued work and stops.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Retire;

impl CollectionActor {
    fn note_due(&self, earliest: Option<i64>) {
        // With prompt expiry off the monitor keeps MongoDB's fixed interval.
        if let Some(due) = earliest.filter(|_| self.shared.ttl_prompt) {
            self.shared.ttl.note_due(due);
        }
    }
}

impl Handler<InsertDocs> for CollectionActor {
    type Result = ResponseActFuture<Self, Result<InsertOutcome>>;

    fn handle(&mut self, msg: InsertDocs, ctx: &mut Context<Self>) -> Self::Result {
        let rx = self.write(ctx, msg.sync, move |engine, set| {
            ops::insert(engine, set, msg.docs, msg.ordered)
        });
        Box::pin(
            async move { recv(rx).await }
                .into_actor(self)
                .map(|res, act, _| {
                    if let Ok(out) = &res {
                        act.note_due(out.earliest_due);
                        act.shared
                            .writes
                            .inserted
                            .fetch_add(out.n, std::sync::atomic::Ordering::Relaxed);
                    }
                    res
                }),
        )
    }
}

impl Handler<UpdateDocs> for CollectionActor {
    type Result = ResponseActFuture<Self, Result<UpdateOutcome>>;

    fn handle(&mut self, msg: UpdateDocs, ctx: &mut Context<Self>) -> Self::Result {
        let now = self.shared.clock.now();
        let rx = self.write(ctx, msg.sync, move |engine, set| {
            ops::update(engine, set, msg.statements, msg.ordered, now)
        });
        Box::pin(
            async move { recv(rx).await }
                .into_actor(self)
                .map(|res, act, _| {
                    if let Ok(out) = &res {
                        act.note_due(out.earliest_due);
                        act.shared
                            .writes
                            .updated
                            .fetch_add(out.n_modified, std::sync::atomic::Ordering::Relaxed);
                    }
                    res
                }),
        )
    }
}

impl Handler<DeleteDocs> for CollectionActor {
    type Result = ResponseActFuture<Self, Result<DeleteOutcome>>;

    fn handle(&mut self, msg: DeleteDocs, ctx: &mut Context<Self>) -> Self::Result {
        let rx = self.write(ctx, msg.sync, move |engine, set| {
            ops::delete(engine, set, msg.statements, msg.ordered)
        });
        Box::pin(
            async move { recv(rx).await }
                .into_actor(self)
                .map(|res, act, _| {
                    if let Ok(out) = &res {
                        act.shared
                            .writes
                            .deleted
                            .fetch_add(out.n, std::sync::atomic::Ordering::Relaxed);
                    }
                    res
                }),
        )
    }
}

impl Handler<ModifyOne> for CollectionActor {
    type Result = ResponseActFuture<Self, Result<FindAndModifyOutcome>>;

    fn handle(&mut self, msg: ModifyOne, ctx: &mut Context<Self>) -> Self::Result {
        let now = self.shared.clock.now();
        let rx = self.write(ctx, msg.sync, move |engine, set| {
            ops::find_and_modify(engine, set, msg.request, now)
        });
        Box::pin(
            async move { recv(rx).await }
                .into_actor(self)
                .map(|res, act, _| {
                    if let Ok(out) = &res {
                        act.note_due(out.earliest_due);
                    }
                    res
                }),
        )
    }
}

impl Handler<ExpireChunk> for CollectionActor {
    type Result = ResponseFuture<Result<ExpireOutcome>>;

    fn handle(&mut self, msg: ExpireChunk, ctx: &mut Context<Self>) -> Self::Result {
        let active = self.foreground_active();
        let limit = if active {
            msg.limit.min(FOREGROUND_CHUNK_DOCS)
        } else {
            msg.limit
        };
        let whole = msg.whole && !active;
        let rx = self.expire(ctx, move |engine, set| {
            if whole
                && let Some(deleted) =
                    ebb_storage::expire::expire_all(engine, set, &msg.index, msg.cutoff_millis)?
            {
                return Ok(ExpireOutcome {
                    deleted,
                    resume_after: None,
                    more: false,
                });
            }
            ebb_storage::expire::expire(
                engine,
                set,
                &msg.index,
                msg.cutoff_millis,
                limit,
                msg.resume_after.as_deref(),
            )
        });
        Box::pin(recv(rx))
    }
}

impl Handler<BuildIndexes> for CollectionActor {
    type Result = ResponseFuture<Result<()>>;

    fn handle(&mut self, msg: BuildIndexes, ctx: &mut Context<Self>) -> Self::Result {
        let (reply, rx) = oneshot::channel();
        self.enqueue(
            Job::Build {
                set: msg.set,
                new_names: msg.new_names,
                reply,
            },
            ctx,
        );
        Box::pin(recv(rx))
    }
}

impl Handler<SwitchIndexSet> for CollectionActor {
    type Result = ResponseFuture<()>;

    fn handle(&mut self, msg: SwitchIndexSet, ctx: &mut Context<Self>) -> Self::Result {
        let (reply, rx) = oneshot::channel();
        self.enqueue(Job::Switch { set: msg.0, reply }, ctx);
        Box::pin(async move {
            let _ = rx.await;
        })
    }
}

impl Handler<Retire> for CollectionActor {
    type Result = ResponseFuture<()>;

    fn handle(&mut self, _: Retire, ctx: &mut Context<Self>) -> Self::Result {
        let (reply, rx) = oneshot::channel();
        self.enqueue(Job::Retire { reply }, ctx);
        Box::pin(async move {
            let _ = rx.await;
        })
    }
}
