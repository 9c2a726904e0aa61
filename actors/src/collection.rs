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
//!
//! While foreground writes are active, a chunk does its reading without
//! holding the writer: it is planned (scanned, records read, deletions
//! decided: `expire::plan`) on the idle-priority planning thread while
//! foreground groups go on, and only its batch is applied on the writer. A plan is applied only
//! if no foreground job started since it was made (`epoch`), so it never
//! deletes from a state that has changed; a stale plan is made again, and
//! after [`MAX_STALE_PLANS`] the chunk runs whole on the writer. Planning
//! runs at idle CPU priority (it holds nothing a write waits for); a chunk
//! whose plan is not back within [`PLAN_PATIENCE`] (a busy CPU starves the
//! planning thread) runs on the writer at the TTL thread's priority
//! instead, and so do later chunks for [`PLAN_BACKOFF`] and until that plan
//! is back, so expiry always progresses.

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;
use std::time::{Duration, Instant};

use actix::prelude::*;
use bson::RawDocumentBuf;
use ebb_storage::engine::Engine;
use ebb_storage::expire::{ExpireOutcome, Plan};
use ebb_storage::ops::{
    self, DeleteOutcome, DeleteStatement, FindAndModify, FindAndModifyOutcome, InsertOutcome,
    UpdateOutcome, UpdateStatement,
};
use ebb_storage::write::IndexSet;
use ebb_storage::{Error, ErrorKind, Result};
use tokio::sync::oneshot;

use crate::shared::{Durability, Shared};

/// Documents per TTL chunk while foreground writes are active. A write
/// queued behind a chunk waits for its commit (or, for a chunk run on the
/// writer, all of it), so chunks stay small (BENCHMARKS.md, `foreground`:
/// before planning, 128 and 32 cost insert p99 6x and 3.5x idle, 16 2.1x).
const FOREGROUND_CHUNK_DOCS: usize = 16;
/// How recent a foreground write must be to count as activity.
const FOREGROUND_WINDOW: Duration = Duration::from_millis(100);
/// Plans of one chunk discarded for a write in between before the chunk
/// runs on the writer instead.
const MAX_STALE_PLANS: u32 = 2;
/// How long a chunk waits for its plan (the planning thread may be starved
/// by a busy CPU) before it runs on the writer instead, at the TTL
/// thread's priority.
const PLAN_PATIENCE: Duration = Duration::from_millis(50);
/// After a plan ran out of patience, chunks run on the writer for this long
/// before planning is tried again: a CPU that starved one plan is likely
/// still busy.
const PLAN_BACKOFF: Duration = Duration::from_secs(1);

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
    expiry: VecDeque<Expiry>,
    /// Counts foreground jobs started: a plan is applied only at the
    /// epoch it was made at.
    epoch: u64,
    /// The chunk being planned off the writer, with the plan's number.
    planning: Option<(u64, Expiry)>,
    /// Numbers plans, so an abandoned plan's late result is recognised.
    plans: u64,
    /// A plan is out on the planning thread, possibly an abandoned one:
    /// until it is back, chunks run on the writer.
    plan_out: bool,
    /// No planning before this (set when a plan ran out of patience).
    plan_not_before: Option<Instant>,
    /// A planned chunk waiting for its turn on the writer.
    planned: Option<Planned>,
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
            epoch: 0,
            planning: None,
            plans: 0,
            plan_out: false,
            plan_not_before: None,
            planned: None,
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
        let expiry_ready =
            self.planned.is_some() || (!self.expiry.is_empty() && self.planning.is_none());
        if expiry_ready && (self.queue.is_empty() || self.foreground_ran_last) {
            self.foreground_ran_last = false;
            match self.planned.take() {
                Some(p) if p.epoch == self.epoch && Arc::ptr_eq(&p.set, &self.set) => {
                    self.apply(p, ctx)
                }
                Some(mut p) => {
                    p.chunk.stale_plans += 1;
                    self.start_expiry(p.chunk, ctx);
                }
                None => {
                    let chunk = self.expiry.pop_front().expect("checked non-empty");
                    self.start_expiry(chunk, ctx);
                }
            }
            return;
        }
        let Some(front) = self.queue.pop_front() else {
            return;
        };
        self.foreground_ran_last = true;
        self.epoch += 1;
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

    /// Starts a TTL chunk: planned off the writer while foreground writes
    /// are active, otherwise run on the writer.
    fn start_expiry(&mut self, chunk: Expiry, ctx: &mut Context<Self>) {
        let active = self.foreground_active();
        let may_plan = !self.plan_out && self.plan_not_before.is_none_or(|t| Instant::now() >= t);
        if active && chunk.stale_plans < MAX_STALE_PLANS && may_plan {
            self.plan(chunk, ctx);
        } else {
            self.run_expiry(chunk, active, ctx);
        }
    }

    /// Runs one TTL chunk on the writer, on the low-priority background
    /// thread. Without foreground activity it may take the whole
    /// collection at once (`expire::expire_all`).
    fn run_expiry(&mut self, chunk: Expiry, active: bool, ctx: &mut Context<Self>) {
        self.busy = true;
        let shared = self.shared.clone();
        let set = self.set.clone();
        let Expiry { msg, reply, .. } = chunk;
        let limit = chunk_limit(&msg, active);
        let whole = msg.whole && !active;
        let work = async move {
            let engine = shared.engine.clone();
            let result = shared
                .background
                .run(move || {
                    let engine = engine.as_ref();
                    if whole
                        && let Some(deleted) = ebb_storage::expire::expire_all(
                            engine,
                            &set,
                            &msg.index,
                            msg.cutoff_millis,
                        )?
                    {
                        return Ok(ExpireOutcome {
                            deleted,
                            resume_after: None,
                            more: false,
                        });
                    }
                    ebb_storage::expire::expire(
                        engine,
                        &set,
                        &msg.index,
                        msg.cutoff_millis,
                        limit,
                        msg.resume_after.as_deref(),
                    )
                })
                .await;
            if let Some(result) = result {
                let _ = reply.send(result);
            }
        };
        ctx.spawn(work.into_actor(self).map(|_, act, ctx| {
            act.busy = false;
            act.pump(ctx);
        }));
    }

    /// Plans a chunk on the idle-priority thread while the writer stays
    /// free. If the plan is not back within [`PLAN_PATIENCE`], the chunk
    /// goes back to the queue and runs on the writer; the late plan is
    /// dropped.
    fn plan(&mut self, chunk: Expiry, ctx: &mut Context<Self>) {
        self.plans += 1;
        let id = self.plans;
        let (shared, set, epoch) = (self.shared.clone(), self.set.clone(), self.epoch);
        let limit = chunk_limit(&chunk.msg, true);
        let (index, cutoff) = (chunk.msg.index.clone(), chunk.msg.cutoff_millis);
        let resume = chunk.msg.resume_after.clone();
        self.planning = Some((id, chunk));
        self.plan_out = true;
        let planning_set = set.clone();
        let work = async move {
            let engine = shared.engine.clone();
            shared
                .background
                .run_idle(move || {
                    ebb_storage::expire::plan(
                        engine.as_ref(),
                        &planning_set,
                        &index,
                        cutoff,
                        limit,
                        resume.as_deref(),
                    )
                })
                .await
        };
        ctx.spawn(work.into_actor(self).map(move |result, act, ctx| {
            act.plan_out = false;
            let Some(chunk) = act.take_planning(id) else {
                return; // abandoned: the chunk already went to the writer
            };
            match result {
                Some(Ok(plan)) => {
                    act.planned = Some(Planned {
                        chunk,
                        plan,
                        epoch,
                        set,
                    })
                }
                Some(Err(e)) => {
                    let _ = chunk.reply.send(Err(e));
                }
                None => {}
            }
            act.pump(ctx);
        }));
        ctx.run_later(PLAN_PATIENCE, move |act, ctx| {
            if let Some(chunk) = act.take_planning(id) {
                act.plan_not_before = Some(Instant::now() + PLAN_BACKOFF);
                act.expiry.push_front(chunk);
                act.pump(ctx);
            }
        });
    }

    /// The chunk of plan `id`, if that plan is still the one awaited.
    fn take_planning(&mut self, id: u64) -> Option<Expiry> {
        match self.planning.take() {
            Some((current, chunk)) if current == id => Some(chunk),
            other => {
                self.planning = other;
                None
            }
        }
    }

    /// Applies a plan made at the current epoch. The commit runs at normal
    /// priority: a foreground write may be waiting behind it.
    fn apply(&mut self, p: Planned, ctx: &mut Context<Self>) {
        self.busy = true;
        let engine = self.shared.engine.clone();
        let Planned {
            chunk, plan, set, ..
        } = p;
        let work = tokio::task::spawn_blocking(move || {
            ebb_storage::expire::apply(engine.as_ref(), &set, plan)
        });
        ctx.spawn(async move { flatten(work.await) }.into_actor(self).map(
            move |result, act, ctx| {
                let _ = chunk.reply.send(result);
                act.busy = false;
                act.pump(ctx);
            },
        ));
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
}

/// A queued TTL chunk.
struct Expiry {
    msg: ExpireChunk,
    reply: oneshot::Sender<Result<ExpireOutcome>>,
    /// Plans of this chunk discarded because a write came in between.
    stale_plans: u32,
}

/// A chunk planned off the writer, with what it was planned against.
struct Planned {
    chunk: Expiry,
    plan: Plan,
    epoch: u64,
    set: Arc<IndexSet>,
}

/// Documents the chunk may delete: fewer while foreground writes are active.
fn chunk_limit(msg: &ExpireChunk, active: bool) -> usize {
    if active {
        msg.limit.min(FOREGROUND_CHUNK_DOCS)
    } else {
        msg.limit
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

    /// The reply to a queued write; `note` sees a successful outcome first
    /// (due times for the TTL monitor, `serverStatus` counters).
    fn answer<T: 'static>(
        &self,
        rx: oneshot::Receiver<Result<T>>,
        note: impl FnOnce(&Self, &T) + 'static,
    ) -> ResponseActFuture<Self, Result<T>> {
        Box::pin(
            async move { recv(rx).await }
                .into_actor(self)
                .map(|res, act, _| {
                    if let Ok(out) = &res {
                        note(act, out);
                    }
                    res
                }),
        )
    }
}

impl Handler<InsertDocs> for CollectionActor {
    type Result = ResponseActFuture<Self, Result<InsertOutcome>>;

    fn handle(&mut self, msg: InsertDocs, ctx: &mut Context<Self>) -> Self::Result {
        let rx = self.write(ctx, msg.sync, move |engine, set| {
            ops::insert(engine, set, msg.docs, msg.ordered)
        });
        self.answer(rx, |act, out| {
            act.note_due(out.earliest_due);
            act.shared.writes.inserted.fetch_add(out.n, Relaxed);
        })
    }
}

impl Handler<UpdateDocs> for CollectionActor {
    type Result = ResponseActFuture<Self, Result<UpdateOutcome>>;

    fn handle(&mut self, msg: UpdateDocs, ctx: &mut Context<Self>) -> Self::Result {
        let now = self.shared.clock.now();
        let rx = self.write(ctx, msg.sync, move |engine, set| {
            ops::update(engine, set, msg.statements, msg.ordered, now)
        });
        self.answer(rx, |act, out| {
            act.note_due(out.earliest_due);
            act.shared.writes.updated.fetch_add(out.n_modified, Relaxed);
        })
    }
}

impl Handler<DeleteDocs> for CollectionActor {
    type Result = ResponseActFuture<Self, Result<DeleteOutcome>>;

    fn handle(&mut self, msg: DeleteDocs, ctx: &mut Context<Self>) -> Self::Result {
        let rx = self.write(ctx, msg.sync, move |engine, set| {
            ops::delete(engine, set, msg.statements, msg.ordered)
        });
        self.answer(rx, |act, out| {
            act.shared.writes.deleted.fetch_add(out.n, Relaxed);
        })
    }
}

impl Handler<ModifyOne> for CollectionActor {
    type Result = ResponseActFuture<Self, Result<FindAndModifyOutcome>>;

    fn handle(&mut self, msg: ModifyOne, ctx: &mut Context<Self>) -> Self::Result {
        let now = self.shared.clock.now();
        let rx = self.write(ctx, msg.sync, move |engine, set| {
            ops::find_and_modify(engine, set, msg.request, now)
        });
        self.answer(rx, |act, out| act.note_due(out.earliest_due))
    }
}

impl Handler<ExpireChunk> for CollectionActor {
    type Result = ResponseFuture<Result<ExpireOutcome>>;

    fn handle(&mut self, msg: ExpireChunk, ctx: &mut Context<Self>) -> Self::Result {
        let (reply, rx) = oneshot::channel();
        if !self.retired {
            self.expiry.push_back(Expiry {
                msg,
                reply,
                stale_plans: 0,
            });
            self.pump(ctx);
        }
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
