//! The TTL half of a collection's writer: running the chunks the monitor
//! sends, planning them off the writer, applying plans, planning the next
//! chunk ahead (`lookahead`), and the sweep's turns.
//!
//! A chunk runs in one of two ways, as the [`Schedule`](super::schedule)
//! says. Without foreground writes it runs on the writer itself, on the
//! `ebb-ttl` thread at lowered priority, or, for a chunk sent `behind`,
//! on the blocking pool at normal priority ([`CollectionActor::run_expiry`]):
//! a plan made ahead is used if it is back within its patience, otherwise
//! the chunk is planned there and then, or the whole collection goes at
//! once (`ttl::expire_all`). With foreground writes it is planned on
//! `ebb-ttl-plan` at idle priority while the writer stays free
//! ([`CollectionActor::plan`]), then applied on the blocking pool at normal
//! priority ([`CollectionActor::apply`]), so a write waits behind the
//! commit, never behind a starved thread. While a chunk commits, the next
//! chunk of the visit is planned: on `ebb-ttl-ahead` when no foreground
//! write is active, on `ebb-ttl-plan` when one is. A plan is applied only
//! at the epoch it was made (docs/expiry.md#plan-epoch).

use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;
use std::time::{Duration, Instant};

use actix::prelude::*;
use ebb_lang::decided::riding;
use ebb_storage::engine::Engine;
use ebb_storage::ttl::{self, ExpireOutcome, ExpiryPolicy, Plan};
use ebb_storage::write::archive::{self, Archive};
use ebb_storage::{Collection, Result};
use tokio::sync::oneshot;

use super::actor::{CollectionActor, Lookup, dropped, flatten, recv};
use super::lend::{Lend, Loan};
use super::lookahead::Ahead;
use super::messages::ExpireChunk;
use super::queued::{Control, Expiry, Planned};
use super::schedule::plan_patience;
use crate::background::PlanThread;
use crate::shared::Shared;

/// The chunk the monitor is expected to send next, with its plan's
/// receiver.
type Next = (ExpireChunk, oneshot::Receiver<Result<Plan>>);

/// A chunk run on the writer: what [`WriterChunk::run`] needs on the TTL
/// thread.
struct WriterChunk {
    shared: Arc<Shared>,
    coll: Arc<Collection>,
    msg: ExpireChunk,
    policy: ExpiryPolicy,
    /// The chunk's size, as the writer allows it now.
    limit: usize,
    /// The size the next chunk is planned at.
    next_limit: usize,
    /// The whole collection may go at once.
    whole: bool,
    /// The next chunk may be planned while this one commits.
    look_ahead: bool,
    /// The index archives what it expires: the archive's writer, lent,
    /// and the time the documents expire at.
    archive: Option<(Loan, i64)>,
}

impl WriterChunk {
    /// Deletes the chunk, from `planned` when a plan made ahead came back
    /// in time, and queues the plan of the next one when allowed; an
    /// archiving chunk writes its copies in the same batch, and answers the
    /// archive's earliest new due time.
    fn run(
        self,
        engine: &dyn Engine,
        planned: Option<Plan>,
    ) -> Result<(ExpireOutcome, Option<Next>, Option<i64>)> {
        let Self {
            shared,
            coll,
            msg,
            policy,
            ..
        } = &self;
        if let Some((loan, at_millis)) = &self.archive {
            shared.ttl.runs.on_writer.fetch_add(1, Relaxed);
            let archive = Archive {
                coll: &loan.coll,
                at_millis: *at_millis,
            };
            let done = archive::expire(engine, coll, msg.chunk(self.limit), policy, archive)?;
            return Ok((done.outcome, None, done.earliest_due));
        }
        let runs = &shared.ttl.runs;
        if planned.is_none()
            && self.whole
            && let Some(out) = ttl::expire_all(engine, coll, &msg.index, msg.cutoff_millis, policy)?
        {
            runs.on_writer.fetch_add(1, Relaxed);
            return Ok((out, None, None));
        }
        let mut plan = match planned {
            Some(plan) => {
                runs.ahead.fetch_add(1, Relaxed);
                plan
            }
            None => {
                runs.on_writer.fetch_add(1, Relaxed);
                ttl::plan(engine, coll, msg.chunk(self.limit), policy)?
            }
        };
        let next = (self.look_ahead && plan.follows_ok())
            .then(|| {
                plan_next(
                    shared,
                    coll,
                    msg,
                    self.next_limit,
                    &mut plan,
                    PlanThread::Ahead,
                )
            })
            .flatten();
        Ok((ttl::apply(engine, coll, plan)?, next, None))
    }
}

/// What a chunk run on the writer left for the actor.
struct Ran {
    /// Expired entries remain beyond it.
    more: bool,
    /// How long its work held the writer.
    held: Duration,
    /// Its plan made ahead did not come back within its patience.
    late: bool,
    next: Option<Next>,
    /// The earliest due time among the copies it archived.
    archive_due: Option<i64>,
}

impl CollectionActor {
    /// Runs one TTL chunk on the writer: on the low-priority TTL thread,
    /// or at normal priority if the monitor sent it `behind` (writes wait
    /// for it, so it must not wait for a busy CPU).
    /// Without foreground activity it may take the whole collection at
    /// once (`ttl::expire_all`), and the next chunk is planned while this
    /// one commits (`lookahead`).
    pub(super) fn run_expiry(
        &mut self,
        chunk: Expiry,
        foreground_active: bool,
        ctx: &mut Context<Self>,
    ) {
        let Expiry { msg, reply } = chunk;
        let policy = self.shared.policy;
        let limit = self.chunk_limit(&msg, foreground_active);
        // The chunk planned ahead is the monitor's next, at the size the
        // writer will allow it.
        let next_limit = self
            .foreground_chunks
            .next_quiet_limit(&policy, msg.next_limit.max(1));
        let epoch = self.schedule().epoch();
        let at_floor = |after: &[u8]| ttl::resumes_at_floor(&self.coll, &msg.index, after);
        // An archiving chunk reads what it deletes and writes the copies
        // with the archive's writer lent: never planned off the writer,
        // never the whole collection at once.
        let archive = self.archive_of(&msg.index);
        let ahead = match msg.logged || archive.is_some() {
            true => None,
            false => self.lookahead.take_for_visit(&msg, limit, epoch, &at_floor),
        };
        let (prompt, urgent, throttle) = (msg.prompt, msg.urgent(), msg.throttle);
        let mut job = WriterChunk {
            shared: self.shared.clone(),
            coll: self.coll.clone(),
            whole: msg.whole && !foreground_active && archive.is_none(),
            look_ahead: !foreground_active
                && !msg.logged
                && archive.is_none()
                && policy.max_deletes_per_sec == 0
                && self.lookahead.allowed(Instant::now()),
            msg,
            policy,
            limit,
            next_limit,
            archive: None,
        };
        let shared = self.shared.clone();
        let (lookup, db) = (self.lookup.clone(), self.coll.meta.db.clone());
        let work = async move {
            if let Some(name) = archive {
                match borrow(&lookup, &db, &name).await {
                    Ok(loan) => {
                        // A chunk from the log expires at its entry's time.
                        let at = match &job.msg.rider {
                            Some(rider) => rider.wall,
                            None => shared.clock.now_millis(),
                        };
                        job.archive = Some((loan, at));
                    }
                    Err(e) => {
                        let _ = reply.send(Err(e));
                        return Ran {
                            more: false,
                            held: Duration::ZERO,
                            late: false,
                            next: None,
                            archive_due: None,
                        };
                    }
                }
            }
            let (planned, late) = match ahead {
                Some(ahead) => match ahead.wait(plan_patience(prompt)).await {
                    Ok(plan) => (plan, false),
                    Err(()) => (None, true),
                },
                None => (None, false),
            };
            // The time the chunk's work took, not the wait for a thread to
            // run it: only the work depends on the chunk's size.
            let timed = move |engine: &dyn Engine| {
                let started = Instant::now();
                let rider = job.msg.rider.clone();
                let ran = riding(rider, || job.run(engine, planned));
                (ran, started.elapsed())
            };
            let ran = match urgent {
                true => {
                    let engine = shared.engine.clone();
                    tokio::task::spawn_blocking(move || timed(engine.as_ref()))
                        .await
                        .ok()
                }
                false => shared.background.run(&shared.engine, timed).await,
            };
            let (result, held) = match ran {
                Some((result, held)) => (Some(result), held),
                None => (None, Duration::ZERO),
            };
            let more = matches!(&result, Some(Ok((out, _, _))) if out.more);
            let (next, archive_due) = match result {
                Some(Ok((out, next, archive_due))) => {
                    let _ = reply.send(Ok(out));
                    (next, archive_due)
                }
                Some(Err(e)) => {
                    let _ = reply.send(Err(e));
                    (None, None)
                }
                None => (None, None),
            };
            Ran {
                more,
                held,
                late,
                next,
                archive_due,
            }
        };
        ctx.spawn(work.into_actor(self).map(move |ran, act, ctx| {
            act.expiry_ran(ran, foreground_active, throttle, next_limit, epoch, ctx)
        }));
    }

    /// Books a chunk run on the writer, keeps the plan of the next one, and
    /// runs what is next.
    fn expiry_ran(
        &mut self,
        ran: Ran,
        foreground_active: bool,
        throttle: bool,
        next_limit: usize,
        epoch: u64,
        ctx: &mut Context<Self>,
    ) {
        let policy = self.shared.policy;
        match (foreground_active, throttle) {
            (true, true) => {
                self.foreground_chunks.throttled(&policy, ran.more);
                let micros = ran.held.as_micros() as u64;
                self.shared.ttl.throttle_micros.fetch_add(micros, Relaxed);
            }
            (true, false) => self.foreground_chunks.record(&policy, ran.more, ran.held),
            (false, _) => self.foreground_chunks.quiet_done(&policy),
        }
        self.note_due(ran.archive_due);
        if ran.late {
            self.shared.ttl.runs.overdue_plans.fetch_add(1, Relaxed);
            self.lookahead.late(Instant::now());
        }
        if let Some((chunk, plan)) = ran.next {
            // Still the epoch the chunk started at: the writer was busy
            // with it until now.
            self.lookahead
                .started(Ahead::new(chunk, next_limit, epoch, plan));
        }
        self.done(ctx);
        self.consider_sweep(ctx);
    }

    /// The collection TTL index `index` archives what it expires to, if it
    /// does (`archiveTo`).
    fn archive_of(&self, index: &str) -> Option<String> {
        let meta = self.coll.meta.indexes.iter().find(|i| i.name == index)?;
        meta.archive_to().map(str::to_owned)
    }

    /// The size `msg` runs at: smaller while foreground writes are active,
    /// unless it comes from the set's log.
    fn chunk_limit(&self, msg: &ExpireChunk, foreground_active: bool) -> usize {
        match msg.logged {
            true => msg.limit,
            false => self.foreground_chunks.limit(msg.limit, foreground_active),
        }
    }

    /// Plans chunk `id` on the idle-priority thread while the writer stays
    /// free, unless the plan made while the chunk before it committed is
    /// this chunk's, at this epoch (`lookahead`); if the plan is not back
    /// within its patience ([`plan_patience`]), the schedule sends the chunk
    /// to the writer and drops the late plan.
    pub(super) fn plan(&mut self, id: u64, ctx: &mut Context<Self>) {
        let (msg, epoch) = {
            let schedule = self.schedule();
            let Some(chunk) = schedule.planning(id) else {
                return;
            };
            (chunk.msg.clone(), schedule.epoch())
        };
        let policy = self.shared.policy;
        let limit = self.chunk_limit(&msg, true);
        let ahead = match msg.logged {
            true => None,
            false => self.lookahead.take_for(&msg, limit, epoch),
        };
        let patience = plan_patience(msg.prompt);
        let (shared, coll) = (self.shared.clone(), self.coll.clone());
        let work = async move {
            let made_ahead = ahead.is_some();
            let result = match ahead {
                Some(ahead) => ahead.result().await,
                None => {
                    shared
                        .background
                        .run_idle(&shared.engine, move |engine| {
                            ttl::plan(engine, &coll, msg.chunk(limit), &policy)
                        })
                        .await
                }
            };
            (result, made_ahead)
        };
        ctx.spawn(work.into_actor(self).map(move |(result, ahead), act, ctx| {
            // None: the planning thread is gone (shutdown): the chunk is
            // answered as if its collection were gone, which ends the visit.
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
    pub(super) fn apply(&mut self, chunk: Expiry, planned: Planned, ctx: &mut Context<Self>) {
        let Planned { mut plan, ahead } = planned;
        let runs = &self.shared.ttl.runs;
        match ahead {
            true => runs.ahead.fetch_add(1, Relaxed),
            false => runs.planned.fetch_add(1, Relaxed),
        };
        self.plan_ahead_of(&chunk.msg, &mut plan);
        let engine = self.shared.engine.clone();
        let coll = self.coll.clone();
        let rider = chunk.msg.rider.clone();
        let work = tokio::task::spawn_blocking(move || {
            let started = Instant::now();
            let applied = riding(rider, || ttl::apply(engine.as_ref(), &coll, plan));
            (applied, started.elapsed())
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
        if self.shared.policy.max_deletes_per_sec != 0 || msg.logged || !plan.follows_ok() {
            return;
        }
        let limit = self.foreground_chunks.limit(msg.limit, true);
        if let Some((chunk, rx)) =
            plan_next(&self.shared, &self.coll, msg, limit, plan, PlanThread::Idle)
        {
            let epoch = self.schedule().epoch();
            self.lookahead.started(Ahead::new(chunk, limit, epoch, rx));
        }
    }

    /// Queues a sweep unless one is queued already. It deletes only what
    /// no TTL plan reads, so plans made before it stay current.
    pub(super) fn queue_sweep(&mut self, ctx: &mut Context<Self>) {
        if !self.sweep_queued && !self.retired {
            self.sweep_queued = true;
            self.schedule().push_housekeeping(Control::Sweep);
            self.pump(ctx);
        }
    }

    /// Queues a sweep when the queue is due for one (`Sweep::due_in`), or
    /// looks again when it will be.
    pub(super) fn consider_sweep(&mut self, ctx: &mut Context<Self>) {
        match self.coll.sweep.due_in(Instant::now(), &self.shared.policy) {
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

    /// Runs one turn of the sweep (`ttl::sweep_step`) on the blocking pool.
    pub(super) fn run_sweep(&mut self, ctx: &mut Context<Self>) {
        let engine = self.shared.engine.clone();
        let coll = self.coll.clone();
        let policy = self.foreground_chunks.sweep_turn(&self.shared.policy);
        let work =
            tokio::task::spawn_blocking(move || ttl::sweep_step(engine.as_ref(), &coll, &policy));
        ctx.spawn(
            async move { flatten(work.await) }
                .into_actor(self)
                .map(|res, act, ctx| {
                    act.sweep_queued = false;
                    match res {
                        Ok(n) => drop(act.shared.ttl.swept.fetch_add(n, Relaxed)),
                        Err(e) => {
                            tracing::warn!(ns = %act.coll.ns(), error = %e, "sweep failed")
                        }
                    }
                    act.done(ctx);
                    act.consider_sweep(ctx);
                }),
        );
    }
}

/// The writer of the archive `name` of database `db`, lent
/// (`super::lend`).
async fn borrow(lookup: &Lookup, db: &str, name: &str) -> Result<Loan> {
    let missing = || {
        ebb_storage::Error::new(
            ebb_storage::ErrorKind::IllegalOperation,
            format!(
                "the archive {db}.{name} does not exist: the documents this TTL index expires \
                 wait, hidden, until it is created again"
            ),
        )
    };
    let (_, addr) = lookup(db, name).ok_or_else(missing)?;
    // Dropped meanwhile: its writer is gone, or retired before it lent.
    addr.send(Lend)
        .await
        .map_err(|_| missing())?
        .map_err(|_| missing())
}

/// Queues the plan of the chunk after `plan` (of `limit` documents) on
/// `thread`: the chunk the monitor is expected to send next, and the plan's
/// receiver. `None` if that thread is gone.
fn plan_next(
    shared: &Arc<Shared>,
    coll: &Arc<Collection>,
    msg: &ExpireChunk,
    limit: usize,
    plan: &mut Plan,
    thread: PlanThread,
) -> Option<Next> {
    let next = ExpireChunk {
        resume_after: Some(plan.resume_after()?.to_vec()),
        ..msg.clone()
    };
    let gone = plan.take_deleted_ids();
    let (coll, policy, planned) = (coll.clone(), shared.policy, next.clone());
    let work = move |engine: &dyn Engine| {
        ttl::plan_after(engine, &coll, planned.chunk(limit), &policy, gone)
    };
    let rx = shared
        .background
        .submit_plan(thread, &shared.engine, work)?;
    Some((next, rx))
}

impl Handler<ExpireChunk> for CollectionActor {
    type Result = ResponseFuture<Result<ExpireOutcome>>;

    fn handle(&mut self, msg: ExpireChunk, ctx: &mut Context<Self>) -> Self::Result {
        let (reply, rx) = oneshot::channel();
        if !self.retired {
            // A chunk from the log runs on the writer, never planned off it:
            // it numbers its change rows as it runs, in the same order on
            // every member (`ebb_storage::changes`). An archiving chunk
            // runs there too, with the archive's writer lent to it.
            let on_writer = msg.urgent() || msg.logged || self.archive_of(&msg.index).is_some();
            self.schedule().push_chunk(Expiry { msg, reply }, on_writer);
            self.pump(ctx);
        }
        Box::pin(recv(rx))
    }
}
