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
//! TTL chunks and the sweep are this actor's too; how they run is
//! `expiry`'s.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use actix::prelude::*;
use ebb_lang::decided::{Decided, within};
use ebb_storage::engine::Engine;
use ebb_storage::statement::{
    self as ops, DeleteOutcome, FindAndModifyOutcome, InsertOutcome, InsertStatement, UpdateOutcome,
};
use ebb_storage::ttl::ForegroundChunks;
use ebb_storage::{Collection, Error, ErrorKind, Result};
use tokio::sync::oneshot;

use super::lend::{Lend, Loan};
use super::lookahead::Lookahead;
use super::messages::{
    BuildIndexes, DeleteDocs, InsertDocs, ModifyOne, Retire, SwitchCollection, UpdateDocs,
};
use super::schedule::{Action, Schedule};
use crate::shared::{Durability, Shared};

use super::queued::{Ack, Control, Job, Write, WriteJob, WriterSchedule};

/// How a writer finds another collection's writer (the catalog's published
/// view, which this module does not know): its handle and actor, if it
/// exists.
pub type Lookup =
    Arc<dyn Fn(&str, &str) -> Option<(Arc<Collection>, Addr<CollectionActor>)> + Send + Sync>;

pub struct CollectionActor {
    pub(super) shared: Arc<Shared>,
    pub(super) coll: Arc<Collection>,
    /// Shared with the thread running a write group, which takes the next
    /// group from it itself ([`Schedule::next_group`]).
    pub(super) schedule: Arc<Mutex<WriterSchedule>>,
    /// How large TTL chunks may be while foreground writes are active.
    pub(super) foreground_chunks: ForegroundChunks,
    pub(super) lookahead: Lookahead,
    pub(super) retired: bool,
    /// Counts the write jobs that stored new documents, once they are
    /// committed: awaitData cursors wait on it for their next batch.
    pub(super) inserted: tokio::sync::watch::Sender<u64>,
    /// A sweep is queued or running.
    pub(super) sweep_queued: bool,
    /// A timer will look at the sweep queue again.
    pub(super) sweep_timer: bool,
    /// Finds the writer of the archive a TTL index writes to.
    pub(super) lookup: Lookup,
}

impl CollectionActor {
    pub fn new(shared: Arc<Shared>, coll: Arc<Collection>, lookup: Lookup) -> Self {
        let schedule = Arc::new(Mutex::new(Schedule::new(shared.policy)));
        let foreground_chunks = ForegroundChunks::new(&shared.policy);
        CollectionActor {
            shared,
            coll,
            schedule,
            foreground_chunks,
            lookahead: Lookahead::default(),
            retired: false,
            inserted: tokio::sync::watch::Sender::new(0),
            sweep_queued: false,
            sweep_timer: false,
            lookup,
        }
    }

    /// The schedule; never held across an await or a job.
    pub(super) fn schedule(&self) -> MutexGuard<'_, WriterSchedule> {
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
    pub(super) fn pump(&mut self, ctx: &mut Context<Self>) {
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
    pub(super) fn done(&mut self, ctx: &mut Context<Self>) {
        self.schedule().work_done();
        self.pump(ctx);
    }

    /// Runs a group of write jobs on the blocking pool, and then each group
    /// the schedule hands that thread while writes keep coming
    /// ([`Schedule::next_group`]); the writer comes back here only when
    /// something else is next or nothing is queued.
    fn run_writes(&mut self, group: Vec<Write>, ctx: &mut Context<Self>) {
        let engine = self.shared.engine.clone();
        let coll = self.coll.clone();
        let schedule = self.schedule.clone();
        let sync_each = self.shared.durability == Durability::SyncEachWrite;
        let work = tokio::task::spawn_blocking(move || {
            let mut held = Vec::new();
            let mut next = Some(group);
            while let Some(group) = next {
                held.push(run_group(engine.as_ref(), &coll, group, sync_each));
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
                coll,
                new_names,
                reply,
            } => {
                let engine = self.shared.engine.clone();
                let built = coll.clone();
                let paced = self.shared.policy.max_deletes_per_sec > 0;
                let work = tokio::task::spawn_blocking(move || {
                    ops::build_indexes(engine.as_ref(), &built, &new_names, paced)
                });
                ctx.spawn(async move { flatten(work.await) }.into_actor(self).map(
                    move |res, act, ctx| {
                        let switched = res.is_ok();
                        if switched {
                            act.coll = coll;
                        }
                        let _ = reply.send(res);
                        act.done(ctx);
                        if switched {
                            act.queue_sweep(ctx);
                        }
                    },
                ));
            }
            Control::Switch { coll, reply } => {
                self.coll = coll;
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
            Control::Sweep => self.run_sweep(ctx),
            Control::Lend { reply } => {
                let (loan, returned) = Loan::new(self.coll.clone());
                // A borrower that gave up drops the loan, which comes back
                // at once.
                let _ = reply.send(Ok(loan));
                let back = async move {
                    let _ = returned.await;
                };
                ctx.spawn(back.into_actor(self).map(|(), act, ctx| act.done(ctx)));
            }
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
        f: impl FnOnce(&dyn Engine, &Arc<Collection>) -> Result<T> + Send + 'static,
    ) -> oneshot::Receiver<Result<T>> {
        let (tx, rx) = oneshot::channel();
        if self.retired {
            return rx;
        }
        let run: WriteJob = Box::new(move |engine, coll| ack(tx, f(engine, coll)));
        self.queue(ctx, Job::Run(run), sync);
        rx
    }

    /// Queues an insert into a time-series collection (see [`Job`]).
    fn write_measurements(
        &mut self,
        ctx: &mut Context<Self>,
        sync: bool,
        statement: InsertStatement,
        ids: Option<Decided>,
    ) -> oneshot::Receiver<Result<InsertOutcome>> {
        let (tx, rx) = oneshot::channel();
        if !self.retired {
            self.queue(ctx, Job::Measurements(statement, ids, tx), sync);
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
    coll: &Arc<Collection>,
    group: Vec<Write>,
    sync_each: bool,
) -> Duration {
    let started = Instant::now();
    let sync = sync_each || group.iter().any(|w| w.sync);
    let mut replies = Replies::new(sync);
    let mut measurements = Vec::new();
    for w in group {
        match w.job {
            Job::Measurements(statement, ids, tx) => measurements.push((statement, ids, tx)),
            Job::Run(run) => {
                insert_measurements(engine, coll, &mut measurements, &mut replies);
                replies.push(run(engine, coll));
            }
        }
    }
    insert_measurements(engine, coll, &mut measurements, &mut replies);
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
    coll: &Arc<Collection>,
    gathered: &mut Vec<Measurements>,
    replies: &mut Replies,
) {
    // Statements a primary decided run one group per decision.
    while !gathered.is_empty() {
        let decided = gathered[0].1.clone();
        let same = gathered.iter().take_while(|g| g.1 == decided).count();
        let (statements, senders): (Vec<_>, Vec<_>) =
            gathered.drain(..same).map(|(s, _, tx)| (s, tx)).unzip();
        let results = within(decided, || ops::insert_group(engine, coll, statements));
        for (result, tx) in results.into_iter().zip(senders) {
            replies.push(ack(tx, result));
        }
    }
}

/// Time-series inserts waiting for their group: the statement, what a
/// primary decided for it, and who hears back.
type Measurements = (
    InsertStatement,
    Option<Decided>,
    oneshot::Sender<Result<InsertOutcome>>,
);

/// What the writer applies of a write a primary decided: its own sequence
/// of ObjectIds, apart from the one the command's parsing used.
fn writer_ids(decided: Option<Decided>) -> Option<Decided> {
    decided.map(|d| d.fork(1))
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

pub(super) fn flatten<T>(r: std::result::Result<Result<T>, tokio::task::JoinError>) -> Result<T> {
    r.map_err(|e| Error::engine(format!("writer task failed: {e}")))?
}

pub(super) fn dropped() -> Error {
    Error::new(ErrorKind::NamespaceNotFound, "collection was dropped")
}

pub(super) async fn recv<T>(rx: oneshot::Receiver<Result<T>>) -> Result<T> {
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
    pub(super) fn note_due(&self, earliest: Option<i64>) {
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
        let ids = writer_ids(msg.decided);
        let rx = match self.coll.timeseries {
            Some(_) => self.write_measurements(ctx, msg.sync, statement, ids),
            None => self.write(ctx, msg.sync, move |engine, coll| {
                within(ids, || ops::insert_with(engine, coll, statement))
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
        let now = msg
            .decided
            .as_ref()
            .map_or_else(|| self.shared.clock.now(), |d| d.at);
        let ids = writer_ids(msg.decided);
        let rx = self.write(ctx, msg.sync, move |engine, coll| {
            within(ids, || {
                ops::update(engine, coll, msg.statements, msg.ordered, now)
            })
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
        let decided = msg.decided;
        let rx = self.write(ctx, msg.sync, move |engine, coll| {
            within(decided, || {
                ops::delete(engine, coll, msg.statements, msg.ordered)
            })
        });
        self.answer(rx, |act, out| {
            act.shared.writes.deleted.fetch_add(out.n, Relaxed);
        })
    }
}

impl Handler<ModifyOne> for CollectionActor {
    type Result = ResponseActFuture<Self, Result<FindAndModifyOutcome>>;

    fn handle(&mut self, msg: ModifyOne, ctx: &mut Context<Self>) -> Self::Result {
        let now = msg
            .decided
            .as_ref()
            .map_or_else(|| self.shared.clock.now(), |d| d.at);
        let ids = writer_ids(msg.decided);
        let rx = self.write(ctx, msg.sync, move |engine, coll| {
            within(ids, || ops::find_and_modify(engine, coll, msg.request, now))
        });
        self.answer(rx, |act, out| {
            act.note_due(out.earliest_due);
            if out.upserted.is_some() {
                act.note_inserted();
            }
        })
    }
}

impl Handler<Lend> for CollectionActor {
    type Result = ResponseFuture<Result<Loan>>;

    fn handle(&mut self, _: Lend, ctx: &mut Context<Self>) -> Self::Result {
        let (reply, rx) = oneshot::channel();
        self.control(Control::Lend { reply }, ctx);
        Box::pin(recv(rx))
    }
}

impl Handler<BuildIndexes> for CollectionActor {
    type Result = ResponseFuture<Result<()>>;

    fn handle(&mut self, msg: BuildIndexes, ctx: &mut Context<Self>) -> Self::Result {
        let (reply, rx) = oneshot::channel();
        self.control(
            Control::Build {
                coll: msg.coll,
                new_names: msg.new_names,
                reply,
            },
            ctx,
        );
        Box::pin(recv(rx))
    }
}

impl Handler<SwitchCollection> for CollectionActor {
    type Result = ResponseFuture<()>;

    fn handle(&mut self, msg: SwitchCollection, ctx: &mut Context<Self>) -> Self::Result {
        let (reply, rx) = oneshot::channel();
        self.control(Control::Switch { coll: msg.0, reply }, ctx);
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
