//! `CollectionActor`: the single writer of one collection.
//!
//! Every change to a collection's records and index entries — inserts,
//! updates, deletes, index builds, TTL expiry — is work for this actor, so
//! writes to one collection never race and need no locks. What runs next
//! is decided by the collection's [`Schedule`] (a state machine, tested on
//! its own); this actor only feeds it events and runs the actions it hands
//! out. Work runs on the blocking pool or the TTL threads, never on the
//! arbiter. Writes run in groups (group commit): each job writes its own
//! atomic batch, and when durability asks for it one WAL sync covers the
//! whole group before any of it is acknowledged. Control jobs (a new index
//! set, drop) run alone, between groups, so every write sees exactly one
//! version of the collection's indexes.
//!
//! TTL chunks run on the `ebb-ttl` thread at lowered priority; chunks
//! planned off the writer run on `ebb-ttl-plan` at idle priority and are
//! applied on the blocking pool at normal priority (a write may wait behind
//! the apply, never behind a starved thread). While a chunk commits, the
//! next chunk of the visit is planned (`lookahead`): on `ebb-ttl-ahead`
//! when no foreground write is active, on `ebb-ttl-plan` when one is.
//! A chunk the monitor sends `behind` (seconds late) is never planned: it
//! runs on `ebb-ttl` like a chunk without foreground writes.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use actix::prelude::*;
use ebb_storage::engine::Engine;
use ebb_storage::ttl::{self, ExpireOutcome, ForegroundChunks, Plan};
use ebb_storage::write::statement::{
    self as ops, DeleteOutcome, FindAndModifyOutcome, InsertOutcome, InsertStatement, UpdateOutcome,
};
use ebb_storage::{Error, ErrorKind, IndexSet, Result};
use tokio::sync::oneshot;

use super::lookahead::{Ahead, Lookahead};
use super::messages::{
    BuildIndexes, DeleteDocs, ExpireChunk, InsertDocs, ModifyOne, Retire, SwitchIndexSet,
    UpdateDocs,
};
use super::schedule::{Action, Schedule, plan_patience};
use crate::background::PlanThread;
use crate::shared::{Durability, Shared};

/// A write job: runs on a blocking thread, returns the acknowledgement to
/// send once the group is durable.
type WriteJob = Box<dyn FnOnce(&dyn Engine, &Arc<IndexSet>) -> Ack + Send>;
/// Sends a job's reply; given the error of the group's WAL sync, if it
/// failed, which then replaces a successful result (the write is not
/// known to be durable, so it must not be acknowledged).
type Ack = Box<dyn FnOnce(Option<&Error>) + Send>;

/// A queued write with its durability request (`j: true`).
struct Write {
    job: Job,
    sync: bool,
}

/// What a queued write runs.
enum Job {
    Run(WriteJob),
    /// An insert into a time-series collection: consecutive ones in a
    /// group run as one `insert_group`, so they rewrite each open bucket
    /// once between them.
    Measurements(InsertStatement, oneshot::Sender<Result<InsertOutcome>>),
}

/// Work that runs alone on the writer.
enum Control {
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
    Retire { reply: oneshot::Sender<()> },
    /// One turn of the sweep of the index entries expired documents left
    /// queued (`ttl::sweep_step`: reads a few queue items, or deletes a
    /// slice); the next turn is queued after it, behind the writes that
    /// arrived meanwhile.
    Sweep,
}

/// A queued TTL chunk with its reply.
struct Expiry {
    msg: ExpireChunk,
    reply: oneshot::Sender<Result<ExpireOutcome>>,
}

/// A chunk's plan and whether it was made before the chunk arrived.
struct Planned {
    plan: Plan,
    ahead: bool,
}

type WriterSchedule = Schedule<Write, Control, Expiry, Planned>;

pub struct CollectionActor {
    shared: Arc<Shared>,
    set: Arc<IndexSet>,
    /// Shared with the thread running a write group, which takes the next
    /// group from it itself ([`Schedule::next_group`]).
    schedule: Arc<Mutex<WriterSchedule>>,
    /// How large TTL chunks may be while foreground writes are active.
    foreground_chunks: ForegroundChunks,
    lookahead: Lookahead,
    retired: bool,
    /// Counts the write jobs that stored new documents, once they are
    /// committed: awaitData cursors wait on it for their next batch.
    inserted: tokio::sync::watch::Sender<u64>,
    /// A sweep is queued or running.
    sweep_queued: bool,
    /// A timer will look at the sweep queue again.
    sweep_timer: bool,
}

impl CollectionActor {
    pub fn new(shared: Arc<Shared>, set: Arc<IndexSet>) -> Self {
        let schedule = Arc::new(Mutex::new(Schedule::new(shared.policy)));
        let foreground_chunks = ForegroundChunks::new(&shared.policy);
        CollectionActor {
            shared,
            set,
            schedule,
            foreground_chunks,
            lookahead: Lookahead::default(),
            retired: false,
            inserted: tokio::sync::watch::Sender::new(0),
            sweep_queued: false,
            sweep_timer: false,
        }
    }

    /// The schedule; never held across an await or a job.
    fn schedule(&self) -> MutexGuard<'_, WriterSchedule> {
        lock(&self.schedule)
    }

    /// A receiver that changes after each committed write that stored new
    /// documents (`CollectionHandle::inserted`); take it before `start`.
    pub fn inserts(&self) -> tokio::sync::watch::Receiver<u64> {
        self.inserted.subscribe()
    }

    /// Wakes the cursors waiting for new documents.
    fn note_inserted(&self) {
        self.inserted.send_modify(|n| *n += 1);
    }

    /// Runs whatever the schedule says is ready, until it says nothing is.
    fn pump(&mut self, ctx: &mut Context<Self>) {
        while !self.retired {
            let Some(action) = self.schedule().next(Instant::now()) else {
                break;
            };
            match action {
                Action::Writes(group) => self.run_writes(group, ctx),
                Action::Control(control) => self.run_control(control, ctx),
                Action::Expire {
                    chunk,
                    foreground_active,
                } => self.run_expiry(chunk, foreground_active, ctx),
                Action::Plan { id } => self.plan(id, ctx),
                Action::Apply { chunk, plan } => self.apply(chunk, plan, ctx),
            }
        }
        let discarded = self.schedule().take_discarded();
        let runs = &self.shared.ttl.runs;
        runs.stale_plans.fetch_add(discarded.stale, Relaxed);
        runs.overdue_plans.fetch_add(discarded.overdue, Relaxed);
    }

    /// Marks the running work done and runs what is next.
    fn done(&mut self, ctx: &mut Context<Self>) {
        self.schedule().work_done();
        self.pump(ctx);
    }

    /// Runs a group of write jobs on the blocking pool, and then each group
    /// the schedule hands that thread while writes keep coming
    /// ([`Schedule::next_group`]); the writer comes back here only when
    /// something else is next or nothing is queued.
    fn run_writes(&mut self, group: Vec<Write>, ctx: &mut Context<Self>) {
        let engine = self.shared.engine.clone();
        let set = self.set.clone();
        let schedule = self.schedule.clone();
        let sync_each = self.shared.durability == Durability::SyncEachWrite;
        let work = tokio::task::spawn_blocking(move || {
            let mut held = Vec::new();
            let mut next = Some(group);
            while let Some(group) = next {
                held.push(run_group(engine.as_ref(), &set, group, sync_each));
                next = lock(&schedule).next_group();
            }
            held
        });
        ctx.spawn(work.into_actor(self).map(|held, act, ctx| {
            match held {
                Ok(held) => {
                    let policy = act.shared.policy;
                    for held in held {
                        act.foreground_chunks.group_done(&policy, held);
                    }
                }
                // The thread died inside a group, still holding the writer.
                Err(_) => act.schedule().work_done(),
            }
            act.pump(ctx)
        }));
    }

    fn run_control(&mut self, control: Control, ctx: &mut Context<Self>) {
        match control {
            Control::Build {
                set,
                new_names,
                reply,
            } => {
                let engine = self.shared.engine.clone();
                let built = set.clone();
                let work = tokio::task::spawn_blocking(move || {
                    ops::build_indexes(engine.as_ref(), &built, &new_names)
                });
                ctx.spawn(async move { flatten(work.await) }.into_actor(self).map(
                    move |res, act, ctx| {
                        let switched = res.is_ok();
                        if switched {
                            act.set = set;
                        }
                        let _ = reply.send(res);
                        act.done(ctx);
                        if switched {
                            act.queue_sweep(ctx);
                        }
                    },
                ));
            }
            Control::Switch { set, reply } => {
                self.set = set;
                let _ = reply.send(());
                self.schedule().work_done();
                // The new set reads the queue when it sweeps.
                self.queue_sweep(ctx);
            }
            Control::Retire { reply } => {
                self.retired = true;
                let _ = reply.send(());
                self.schedule().work_done();
                ctx.stop();
            }
            Control::Sweep => {
                let engine = self.shared.engine.clone();
                let set = self.set.clone();
                let policy = self.shared.policy;
                let work = tokio::task::spawn_blocking(move || {
                    ttl::sweep_step(engine.as_ref(), &set, &policy)
                });
                ctx.spawn(async move { flatten(work.await) }.into_actor(self).map(
                    |res, act, ctx| {
                        act.sweep_queued = false;
                        match res {
                            Ok(n) => drop(act.shared.ttl.swept.fetch_add(n, Relaxed)),
                            Err(e) => {
                                tracing::warn!(ns = %act.set.ns(), error = %e, "sweep failed")
                            }
                        }
                        act.done(ctx);
                        act.consider_sweep(ctx);
                    },
                ));
            }
        }
    }

    /// Queues a sweep unless one is queued already. It deletes only what
    /// no TTL plan reads, so plans made before it stay current.
    fn queue_sweep(&mut self, ctx: &mut Context<Self>) {
        if !self.sweep_queued && !self.retired {
            self.sweep_queued = true;
            self.schedule().push_housekeeping(Control::Sweep);
            self.pump(ctx);
        }
    }

    /// Queues a sweep when the queue is due for one (`Sweep::due_in`), or
    /// looks again when it will be.
    fn consider_sweep(&mut self, ctx: &mut Context<Self>) {
        match self.set.sweep.due_in(Instant::now(), &self.shared.policy) {
            Some(wait) if wait.is_zero() => self.queue_sweep(ctx),
            Some(wait) if !self.sweep_timer && !self.sweep_queued => {
                self.sweep_timer = true;
                ctx.run_later(wait, |act, ctx| {
                    act.sweep_timer = false;
                    act.consider_sweep(ctx);
                });
            }
            _ => {}
        }
    }

    /// Runs one TTL chunk on the writer, on the low-priority TTL thread.
    /// Without foreground activity it may take the whole collection at
    /// once (`ttl::expire_all`), and the next chunk is planned while this
    /// one commits (`lookahead`).
    fn run_expiry(&mut self, chunk: Expiry, foreground_active: bool, ctx: &mut Context<Self>) {
        let shared = self.shared.clone();
        let set = self.set.clone();
        let Expiry { msg, reply } = chunk;
        let policy = shared.policy;
        let limit = self.foreground_chunks.limit(msg.limit, foreground_active);
        // The chunk planned ahead is the monitor's next, at the size the
        // writer will allow it.
        let next_limit = self
            .foreground_chunks
            .next_quiet_limit(&policy, msg.next_limit.max(1));
        let whole = msg.whole && !foreground_active;
        let prompt = msg.prompt;
        let epoch = self.schedule().epoch();
        let at_floor = |after: &[u8]| ttl::resumes_at_floor(&set, &msg.index, after);
        let ahead = self.lookahead.take_for_visit(&msg, limit, epoch, &at_floor);
        let look_ahead = !foreground_active
            && policy.max_deletes_per_sec == 0
            && self.lookahead.allowed(Instant::now());
        let work = async move {
            let (planned, late) = match ahead {
                Some(ahead) => match ahead.wait(plan_patience(prompt)).await {
                    Ok(plan) => (plan, false),
                    Err(()) => (None, true),
                },
                None => (None, false),
            };
            let on_writer = shared.clone();
            let job = move |engine: &dyn Engine| {
                if planned.is_none()
                    && whole
                    && let Some(out) =
                        ttl::expire_all(engine, &set, &msg.index, msg.cutoff_millis, &policy)?
                {
                    on_writer.ttl.runs.on_writer.fetch_add(1, Relaxed);
                    return Ok((out, None));
                }
                let runs = &on_writer.ttl.runs;
                let mut plan = match planned {
                    Some(plan) => {
                        runs.ahead.fetch_add(1, Relaxed);
                        plan
                    }
                    None => {
                        runs.on_writer.fetch_add(1, Relaxed);
                        ttl::plan(engine, &set, msg.chunk(limit), &policy)?
                    }
                };
                let next = (look_ahead && plan.follows_ok())
                    .then(|| {
                        let thread = PlanThread::Ahead;
                        plan_next(&on_writer, &set, &msg, next_limit, &mut plan, thread)
                    })
                    .flatten();
                Ok((ttl::apply(engine, &set, plan)?, next))
            };
            // The time the chunk's work took, not the wait for a thread
            // to run it: only the work depends on the chunk's size.
            let timed = move |engine: &dyn Engine| {
                let started = Instant::now();
                let result = job(engine);
                (result, started.elapsed())
            };
            let (result, held) = match shared.background.run(&shared.engine, timed).await {
                Some((result, held)) => (Some(result), held),
                None => (None, Duration::ZERO),
            };
            let more = matches!(&result, Some(Ok((out, _))) if out.more);
            let next = match result {
                Some(Ok((out, next))) => {
                    let _ = reply.send(Ok(out));
                    next
                }
                Some(Err(e)) => {
                    let _ = reply.send(Err(e));
                    None
                }
                None => None,
            };
            (more, held, late, next)
        };
        ctx.spawn(
            work.into_actor(self)
                .map(move |(more, held, late, next), act, ctx| {
                    match foreground_active {
                        true => act.foreground_chunks.record(&policy, more, held),
                        false => act.foreground_chunks.quiet_done(&policy),
                    }
                    if late {
                        act.shared.ttl.runs.overdue_plans.fetch_add(1, Relaxed);
                        act.lookahead.late(Instant::now());
                    }
                    if let Some((chunk, plan)) = next {
                        // Still the epoch the chunk started at: the writer
                        // was busy with it until now.
                        act.lookahead
                            .started(Ahead::new(chunk, next_limit, epoch, plan));
                    }
                    act.done(ctx);
                    act.consider_sweep(ctx);
                }),
        );
    }

    /// Plans chunk `id` on the idle-priority thread while the writer stays
    /// free, unless the plan made while the chunk before it committed is
    /// this chunk's, at this epoch (`lookahead`); if the plan is not back
    /// within its patience ([`plan_patience`]), the schedule sends the chunk
    /// to the writer and drops the late plan.
    fn plan(&mut self, id: u64, ctx: &mut Context<Self>) {
        let (msg, epoch) = {
            let schedule = self.schedule();
            let Some(chunk) = schedule.planning(id) else {
                return;
            };
            (chunk.msg.clone(), schedule.epoch())
        };
        let policy = self.shared.policy;
        let limit = self.foreground_chunks.limit(msg.limit, true);
        let ahead = self.lookahead.take_for(&msg, limit, epoch);
        let patience = plan_patience(msg.prompt);
        let (shared, set) = (self.shared.clone(), self.set.clone());
        let work = async move {
            let made_ahead = ahead.is_some();
            let result = match ahead {
                Some(ahead) => ahead.result().await,
                None => {
                    shared
                        .background
                        .run_idle(&shared.engine, move |engine| {
                            ttl::plan(engine, &set, msg.chunk(limit), &policy)
                        })
                        .await
                }
            };
            (result, made_ahead)
        };
        ctx.spawn(work.into_actor(self).map(move |(result, ahead), act, ctx| {
            // None: the planning thread is gone (shutdown): the chunk
            // is answered as if its collection were gone, which ends
            // the visit.
            let result = result
                .unwrap_or_else(|| Err(dropped()))
                .map(|plan| Planned { plan, ahead });
            if let Some((chunk, e)) = act.schedule().plan_returned(id, result) {
                let _ = chunk.reply.send(Err(e));
            }
            act.pump(ctx);
        }));
        ctx.run_later(patience, move |act, ctx| {
            act.schedule().plan_overdue(id, Instant::now());
            act.pump(ctx);
        });
    }

    /// Applies a plan made at the current epoch. The commit runs at normal
    /// priority: a foreground write may be waiting behind it.
    fn apply(&mut self, chunk: Expiry, planned: Planned, ctx: &mut Context<Self>) {
        let Planned { mut plan, ahead } = planned;
        let runs = &self.shared.ttl.runs;
        match ahead {
            true => runs.ahead.fetch_add(1, Relaxed),
            false => runs.planned.fetch_add(1, Relaxed),
        };
        self.plan_ahead_of(&chunk.msg, &mut plan);
        let engine = self.shared.engine.clone();
        let set = self.set.clone();
        let work = tokio::task::spawn_blocking(move || {
            let started = Instant::now();
            (ttl::apply(engine.as_ref(), &set, plan), started.elapsed())
        });
        ctx.spawn(work.into_actor(self).map(move |joined, act, ctx| {
            let result = match joined {
                Ok((result, held)) => {
                    let more = matches!(&result, Ok(out) if out.more);
                    let policy = act.shared.policy;
                    act.foreground_chunks.record(&policy, more, held);
                    result
                }
                Err(e) => flatten(Err(e)),
            };
            let _ = chunk.reply.send(result);
            act.done(ctx);
            act.consider_sweep(ctx);
        }));
    }

    /// While `plan` (of chunk `msg`) is applied, plans the chunk the monitor
    /// will send next on the idle-priority thread (`lookahead`).
    fn plan_ahead_of(&mut self, msg: &ExpireChunk, plan: &mut Plan) {
        if self.shared.policy.max_deletes_per_sec != 0 || !plan.follows_ok() {
            return;
        }
        let limit = self.foreground_chunks.limit(msg.limit, true);
        if let Some((chunk, rx)) =
            plan_next(&self.shared, &self.set, msg, limit, plan, PlanThread::Idle)
        {
            let epoch = self.schedule().epoch();
            self.lookahead.started(Ahead::new(chunk, limit, epoch, rx));
        }
    }

    /// Queues a control job unless the collection is retired (then dropping
    /// the job drops its reply channel, which the sender sees as "collection
    /// was dropped").
    fn control(&mut self, control: Control, ctx: &mut Context<Self>) {
        if !self.retired {
            self.schedule().push_control(control);
            self.pump(ctx);
        }
    }

    /// Queues a write whose result is sent back through a oneshot.
    fn write<T: Send + 'static>(
        &mut self,
        ctx: &mut Context<Self>,
        sync: bool,
        f: impl FnOnce(&dyn Engine, &Arc<IndexSet>) -> Result<T> + Send + 'static,
    ) -> oneshot::Receiver<Result<T>> {
        let (tx, rx) = oneshot::channel();
        if self.retired {
            return rx;
        }
        let run: WriteJob = Box::new(move |engine, set| ack(tx, f(engine, set)));
        self.queue(ctx, Job::Run(run), sync);
        rx
    }

    /// Queues an insert into a time-series collection (see [`Job`]).
    fn write_measurements(
        &mut self,
        ctx: &mut Context<Self>,
        sync: bool,
        statement: InsertStatement,
    ) -> oneshot::Receiver<Result<InsertOutcome>> {
        let (tx, rx) = oneshot::channel();
        if !self.retired {
            self.queue(ctx, Job::Measurements(statement, tx), sync);
        }
        rx
    }

    fn queue(&mut self, ctx: &mut Context<Self>, job: Job, sync: bool) {
        self.schedule()
            .push_write(Write { job, sync }, Instant::now());
        self.pump(ctx);
    }
}

/// Runs one group of writes; one WAL sync covers it when durability asks
/// for it, and its writers hear back after it. Without a sync each writer
/// hears back as soon as its job committed: held until the group ended, a
/// group's clients all sent their next writes at once, and the writer
/// waited while connections decoded them. Returns how long the group held
/// the writer.
fn run_group(
    engine: &dyn Engine,
    set: &Arc<IndexSet>,
    group: Vec<Write>,
    sync_each: bool,
) -> Duration {
    let started = Instant::now();
    let sync = sync_each || group.iter().any(|w| w.sync);
    let mut replies = Replies::new(sync);
    let mut measurements = Vec::new();
    for w in group {
        match w.job {
            Job::Measurements(statement, tx) => measurements.push((statement, tx)),
            Job::Run(run) => {
                insert_measurements(engine, set, &mut measurements, &mut replies);
                replies.push(run(engine, set));
            }
        }
    }
    insert_measurements(engine, set, &mut measurements, &mut replies);
    let synced = if sync { engine.sync_wal().err() } else { None };
    if let Some(e) = &synced {
        tracing::error!(error = %e, "WAL sync failed");
    }
    replies.synced(synced.as_ref());
    started.elapsed()
}

/// The writer's schedule, locked. A panic never leaves it half changed
/// (its methods do not call out), so a poisoned lock is taken as it is.
fn lock(schedule: &Mutex<WriterSchedule>) -> MutexGuard<'_, WriterSchedule> {
    schedule.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Runs the time-series inserts gathered so far as one group, adding
/// their acknowledgements in order.
fn insert_measurements(
    engine: &dyn Engine,
    set: &Arc<IndexSet>,
    gathered: &mut Vec<(InsertStatement, oneshot::Sender<Result<InsertOutcome>>)>,
    replies: &mut Replies,
) {
    if gathered.is_empty() {
        return;
    }
    let (statements, senders): (Vec<_>, Vec<_>) = gathered.drain(..).unzip();
    for (result, tx) in ops::insert_group(engine, set, statements)
        .into_iter()
        .zip(senders)
    {
        replies.push(ack(tx, result));
    }
}

/// The acknowledgements of a write group's jobs. Without a WAL sync each
/// is sent as soon as its job has committed; with one they wait for it.
struct Replies {
    sync: bool,
    held: Vec<Ack>,
}

impl Replies {
    fn new(sync: bool) -> Self {
        Replies {
            sync,
            held: Vec::new(),
        }
    }

    /// A job has committed.
    fn push(&mut self, ack: Ack) {
        match self.sync {
            true => self.held.push(ack),
            false => ack(None),
        }
    }

    /// The group's sync is done (or there was none): its error, if any,
    /// replaces every held success.
    fn synced(self, failed: Option<&Error>) {
        for ack in self.held {
            ack(failed);
        }
    }
}

/// The acknowledgement sending `result`, or the group's WAL sync error
/// instead of a success.
fn ack<T: Send + 'static>(tx: oneshot::Sender<Result<T>>, result: Result<T>) -> Ack {
    Box::new(move |sync_failed: Option<&Error>| {
        let result = match sync_failed {
            Some(e) if result.is_ok() => Err(e.clone()),
            _ => result,
        };
        let _ = tx.send(result);
    })
}

/// Queues the plan of the chunk after `plan` (of `limit` documents) on
/// `thread`: the chunk the monitor is expected to send next, and the plan's
/// receiver. `None` if that thread is gone.
fn plan_next(
    shared: &Arc<Shared>,
    set: &Arc<IndexSet>,
    msg: &ExpireChunk,
    limit: usize,
    plan: &mut Plan,
    thread: PlanThread,
) -> Option<(ExpireChunk, oneshot::Receiver<Result<Plan>>)> {
    let next = ExpireChunk {
        resume_after: Some(plan.resume_after()?.to_vec()),
        ..msg.clone()
    };
    let gone = plan.take_deleted_ids();
    let (set, policy, planned) = (set.clone(), shared.policy, next.clone());
    let work = move |engine: &dyn Engine| {
        ttl::plan_after(engine, &set, planned.chunk(limit), &policy, gone)
    };
    let rx = shared
        .background
        .submit_plan(thread, &shared.engine, work)?;
    Some((next, rx))
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
        // Entries a chunk queued before a restart are swept now.
        self.queue_sweep(ctx);
    }
}

impl CollectionActor {
    fn note_due(&self, earliest: Option<i64>) {
        // With prompt expiry off the monitor keeps MongoDB's fixed interval.
        if let Some(due) = earliest.filter(|_| self.shared.policy.prompt) {
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
        let statement = InsertStatement {
            docs: msg.docs,
            ordered: msg.ordered,
            bypass_validation: msg.bypass_validation,
            prepared: msg.prepared,
        };
        let rx = match self.set.timeseries {
            Some(_) => self.write_measurements(ctx, msg.sync, statement),
            None => self.write(ctx, msg.sync, move |engine, set| {
                ops::insert_with(engine, set, statement)
            }),
        };
        self.answer(rx, |act, out| {
            act.note_due(out.earliest_due);
            act.shared.writes.inserted.fetch_add(out.n, Relaxed);
            if out.n > 0 {
                act.note_inserted();
            }
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
            if !out.upserted.is_empty() {
                act.note_inserted();
            }
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
        self.answer(rx, |act, out| {
            act.note_due(out.earliest_due);
            if out.upserted.is_some() {
                act.note_inserted();
            }
        })
    }
}

impl Handler<ExpireChunk> for CollectionActor {
    type Result = ResponseFuture<Result<ExpireOutcome>>;

    fn handle(&mut self, msg: ExpireChunk, ctx: &mut Context<Self>) -> Self::Result {
        let (reply, rx) = oneshot::channel();
        if !self.retired {
            let behind = msg.behind;
            self.schedule().push_chunk(Expiry { msg, reply }, behind);
            self.pump(ctx);
        }
        Box::pin(recv(rx))
    }
}

impl Handler<BuildIndexes> for CollectionActor {
    type Result = ResponseFuture<Result<()>>;

    fn handle(&mut self, msg: BuildIndexes, ctx: &mut Context<Self>) -> Self::Result {
        let (reply, rx) = oneshot::channel();
        self.control(
            Control::Build {
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
        self.control(Control::Switch { set: msg.0, reply }, ctx);
        Box::pin(async move {
            let _ = rx.await;
        })
    }
}

impl Handler<Retire> for CollectionActor {
    type Result = ResponseFuture<()>;

    fn handle(&mut self, _: Retire, ctx: &mut Context<Self>) -> Self::Result {
        let (reply, rx) = oneshot::channel();
        self.control(Control::Retire { reply }, ctx);
        Box::pin(async move {
            let _ = rx.await;
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The acknowledgement of a job that succeeded with 7, and where it
    /// is answered.
    fn recorded() -> (Ack, oneshot::Receiver<Result<u32>>) {
        let (tx, rx) = oneshot::channel();
        (ack(tx, Ok(7)), rx)
    }

    #[test]
    fn without_a_sync_each_job_is_answered_as_it_commits() {
        let mut replies = Replies::new(false);
        let (first, mut first_rx) = recorded();
        replies.push(first);
        // The group is still running: a later job has not committed yet.
        assert_eq!(first_rx.try_recv().unwrap().unwrap(), 7);
        replies.synced(None);
    }

    #[test]
    fn with_a_sync_every_answer_waits_for_it_and_carries_its_failure() {
        let mut replies = Replies::new(true);
        let (first, mut first_rx) = recorded();
        let (second, mut second_rx) = recorded();
        replies.push(first);
        replies.push(second);
        assert!(first_rx.try_recv().is_err(), "answered before the sync");
        replies.synced(Some(&Error::engine("disk gone")));
        for rx in [&mut first_rx, &mut second_rx] {
            let err = rx.try_recv().unwrap().unwrap_err();
            assert!(err.to_string().contains("disk gone"), "{err}");
        }
    }
}
