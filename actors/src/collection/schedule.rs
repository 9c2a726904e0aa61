//! The collection writer's decisions, as a state machine with no actix and
//! no storage in it: which queued work runs next, and how a TTL chunk runs.
//!
//! Two queues: foreground jobs (writes, which run in groups, and control
//! jobs, which run alone) and TTL chunks. They alternate while both have
//! work, so a foreground write waits for at most the one chunk already
//! running and expiry still gets every other turn.
//!
//! While foreground writes are active (one arrived within the policy's
//! window), a chunk is *planned* off the writer and only its batch is
//! applied on it. A plan is applied only at the epoch it was made at (the
//! epoch counts foreground jobs started, housekeeping such as the TTL
//! sweep aside), so it never deletes from a state that has changed
//! (docs/expiry.md#plan-epoch states the invariant); a stale plan is made again, and after
//! [`MAX_STALE_PLANS`] the chunk runs whole on the writer. A plan not back
//! within its patience ([`plan_patience`]; a busy CPU starves the planning
//! thread) sends its chunk to the writer, and so do later chunks for
//! [`PLAN_BACKOFF`] and until that plan is back, so expiry always
//! progresses. A chunk the monitor sent `behind` (seconds late on its
//! index) or `throttle` is never planned: the idle-priority planning
//! thread gets no CPU while anything else wants it, and a plan that comes
//! back slowly but within its patience would keep each chunk that slow;
//! the writer runs such a chunk itself at normal priority.
//!
//! The owner feeds events in (`push_*`, `*_done`, `plan_returned`,
//! `plan_overdue`) and runs the [`Action`]s [`Schedule::next`] hands out,
//! calling it again until it returns `None`. Time is passed in, never read.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use ebb_storage::ttl::ExpiryPolicy;

/// Plans of one chunk discarded for a write in between before the chunk
/// runs on the writer instead.
pub const MAX_STALE_PLANS: u32 = 2;
/// How long a chunk waits for its plan before it runs on the writer.
pub const PLAN_PATIENCE: Duration = Duration::from_millis(50);
/// The same for a chunk of documents that fell due just now (the monitor
/// is keeping up): a busy CPU that starves planning for longer would make
/// their lag exceed what prompt expiry promises.
pub const PROMPT_PLAN_PATIENCE: Duration = Duration::from_millis(10);

/// After a plan ran out of patience, chunks run on the writer for this long
/// before planning is tried again: a CPU that starved one plan is likely
/// still busy.
pub const PLAN_BACKOFF: Duration = Duration::from_secs(1);

/// How long a chunk waits for its plan: [`PROMPT_PLAN_PATIENCE`] when the
/// monitor is keeping up (`prompt`), else [`PLAN_PATIENCE`], which spares
/// the foreground the writer's planning while a backlog is expired.
pub fn plan_patience(prompt: bool) -> Duration {
    if prompt {
        PROMPT_PLAN_PATIENCE
    } else {
        PLAN_PATIENCE
    }
}

/// Plans thrown away since the owner last asked ([`Schedule::take_discarded`]).
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub struct Discarded {
    /// The writer ran a foreground job between the plan's start and its turn.
    pub stale: u64,
    /// Not back within its patience ([`plan_patience`]).
    pub overdue: u64,
}

/// A foreground job: writes run in groups, control jobs alone.
#[derive(Debug)]
pub enum Job<W, C> {
    Write(W),
    Control(C),
}

/// What the owner must do next.
#[derive(Debug, PartialEq)]
pub enum Action<W, C, T, P> {
    /// Run these writes as one group; then [`Schedule::work_done`].
    Writes(Vec<W>),
    /// Run one control job alone; then [`Schedule::work_done`].
    Control(C),
    /// Run a chunk on the writer; then [`Schedule::work_done`]. While
    /// foreground writes are active it must be small and must not take the
    /// whole collection.
    Expire { chunk: T, foreground_active: bool },
    /// Plan the chunk [`Schedule::planning`] shows, off the writer (the
    /// writer stays free); report with [`Schedule::plan_returned`], and
    /// call [`Schedule::plan_overdue`] after its patience ([`plan_patience`]).
    Plan { id: u64 },
    /// Apply a plan made at the current epoch; then [`Schedule::work_done`].
    Apply { chunk: T, plan: P },
}

/// A chunk with the plans of it discarded so far.
#[derive(Debug)]
struct Pending<T> {
    chunk: T,
    stale_plans: u32,
    /// Sent `behind`: runs on the writer, never planned.
    behind: bool,
}

/// A plan that came back, waiting for its turn on the writer.
#[derive(Debug)]
struct Planned<T, P> {
    pending: Pending<T>,
    plan: P,
    epoch: u64,
}

/// The writer's queues and the state of TTL planning.
#[derive(Debug)]
pub struct Schedule<W, C, T, P> {
    policy: ExpiryPolicy,
    foreground: VecDeque<Job<W, C>>,
    expiry: VecDeque<Pending<T>>,
    /// Foreground jobs started, housekeeping aside; a plan applies only
    /// at its own epoch.
    epoch: u64,
    /// The chunk being planned, with the plan's number.
    planning: Option<(u64, Pending<T>, u64)>,
    /// Numbers plans, so a late result of an abandoned plan is recognised.
    plans: u64,
    /// A plan is out, possibly an abandoned one: until it is back, chunks
    /// run on the writer.
    plan_out: bool,
    /// No planning before this (set when a plan ran out of patience).
    plan_not_before: Option<Instant>,
    planned: Option<Planned<T, P>>,
    /// Whether the last work started came from the foreground queue.
    foreground_ran_last: bool,
    /// Expiry's housekeeping, which alternates with its chunks.
    housekeeping: VecDeque<C>,
    /// Whether the expiry side's last turn went to housekeeping.
    housekeeping_ran_last: bool,
    /// When the last foreground write was queued.
    last_foreground: Option<Instant>,
    /// Work is running on the writer.
    busy: bool,
    discarded: Discarded,
}

impl<W, C, T, P> Schedule<W, C, T, P> {
    pub fn new(policy: ExpiryPolicy) -> Self {
        Schedule {
            policy,
            foreground: VecDeque::new(),
            expiry: VecDeque::new(),
            epoch: 0,
            planning: None,
            plans: 0,
            plan_out: false,
            plan_not_before: None,
            planned: None,
            foreground_ran_last: false,
            housekeeping: VecDeque::new(),
            housekeeping_ran_last: false,
            last_foreground: None,
            busy: false,
            discarded: Discarded::default(),
        }
    }

    /// The plans discarded since the last call.
    pub fn take_discarded(&mut self) -> Discarded {
        std::mem::take(&mut self.discarded)
    }

    /// Queues a write; it counts as foreground activity from `now`.
    pub fn push_write(&mut self, write: W, now: Instant) {
        self.last_foreground = Some(now);
        self.foreground.push_back(Job::Write(write));
    }

    /// Queues a control job (index build, index-set switch, retire).
    pub fn push_control(&mut self, control: C) {
        self.foreground.push_back(Job::Control(control));
    }

    /// Queues expiry's own housekeeping (the TTL sweep): it takes turns
    /// with the chunks on the expiry side, so a foreground write waits for
    /// at most one chunk or one housekeeping job, and it changes nothing a
    /// TTL plan reads, so a plan made before it may be applied after it.
    pub fn push_housekeeping(&mut self, control: C) {
        self.housekeeping.push_back(control);
    }

    /// Queues a TTL chunk; `behind`: the monitor is seconds late on its
    /// index, so it runs on the writer without being planned.
    pub fn push_chunk(&mut self, chunk: T, behind: bool) {
        self.expiry.push_back(Pending {
            chunk,
            stale_plans: 0,
            behind,
        });
    }

    /// The work handed out last has finished on the writer.
    pub fn work_done(&mut self) {
        self.busy = false;
    }

    /// The chunk of plan `id`, while that plan is the one awaited.
    pub fn planning(&self, id: u64) -> Option<&T> {
        match &self.planning {
            Some((current, pending, _)) if *current == id => Some(&pending.chunk),
            _ => None,
        }
    }

    /// Plan `id` came back: `Ok` waits for its turn on the writer. `Err`
    /// hands the chunk back to be answered with the error, unless the
    /// writer ran work since the plan began: the plan then read a state
    /// that has changed (an index dropped under it, say), so it is stale
    /// like any other and the chunk is planned again. A plan that was
    /// abandoned (overdue) is dropped.
    pub fn plan_returned<E>(&mut self, id: u64, result: Result<P, E>) -> Option<(T, E)> {
        self.plan_out = false;
        let (mut pending, epoch) = self.take_planning(id)?;
        match result {
            Ok(plan) => {
                self.planned = Some(Planned {
                    pending,
                    plan,
                    epoch,
                });
                None
            }
            Err(_) if epoch != self.epoch => {
                pending.stale_plans += 1;
                self.discarded.stale += 1;
                self.expiry.push_front(pending);
                None
            }
            Err(e) => Some((pending.chunk, e)),
        }
    }

    /// Plan `id` has not come back within its patience: its chunk goes
    /// back to the front of the queue and runs on the writer, and planning
    /// pauses for [`PLAN_BACKOFF`].
    pub fn plan_overdue(&mut self, id: u64, now: Instant) {
        if let Some((pending, _)) = self.take_planning(id) {
            self.discarded.overdue += 1;
            self.plan_not_before = Some(now + PLAN_BACKOFF);
            self.expiry.push_front(pending);
        }
    }

    /// Foreground jobs started so far: nothing but TTL chunks was written
    /// between two moments with the same epoch.
    pub fn epoch(&self) -> u64 {
        self.epoch
    }

    /// Whether nothing is queued, planned or running.
    pub fn is_idle(&self) -> bool {
        !self.busy
            && self.foreground.is_empty()
            && self.expiry.is_empty()
            && self.planning.is_none()
            && self.planned.is_none()
            && self.housekeeping.is_empty()
    }

    /// The writer's group of writes has ended; if a group of writes would
    /// be [`next`](Self::next), it is handed out here as well, for the
    /// writer to run at once without a round trip through its owner (on a
    /// busy machine each hop waits for a core). Otherwise the writer is
    /// free, as after [`work_done`](Self::work_done), and its owner asks
    /// `next`.
    pub fn next_group(&mut self) -> Option<Vec<W>> {
        self.busy = false;
        if self.expiry_ready() {
            return None;
        }
        match self.foreground.pop_front()? {
            Job::Write(first) => Some(self.start_group(first)),
            control => {
                self.foreground.push_front(control);
                None
            }
        }
    }

    /// Whether a chunk (or its plan) or housekeeping could run on the writer.
    fn expiry_ready(&self) -> bool {
        self.chunk_ready() || !self.housekeeping.is_empty()
    }

    fn chunk_ready(&self) -> bool {
        self.planned.is_some() || (!self.expiry.is_empty() && self.planning.is_none())
    }

    /// The next thing to run, if the writer is free and anything is ready.
    pub fn next(&mut self, now: Instant) -> Option<Action<W, C, T, P>> {
        if self.busy {
            return None;
        }
        let chunk_ready = self.chunk_ready();
        if self.expiry_ready() && (self.foreground.is_empty() || self.foreground_ran_last) {
            self.foreground_ran_last = false;
            if !self.housekeeping.is_empty() && (!chunk_ready || !self.housekeeping_ran_last) {
                self.housekeeping_ran_last = true;
                self.busy = true;
                return self.housekeeping.pop_front().map(Action::Control);
            }
            self.housekeeping_ran_last = false;
            let pending = match self.planned.take() {
                Some(p) if p.epoch == self.epoch => {
                    self.busy = true;
                    return Some(Action::Apply {
                        chunk: p.pending.chunk,
                        plan: p.plan,
                    });
                }
                Some(mut p) => {
                    p.pending.stale_plans += 1;
                    self.discarded.stale += 1;
                    p.pending
                }
                None => self.expiry.pop_front().expect("checked non-empty"),
            };
            return Some(self.start_chunk(pending, now));
        }
        self.start_foreground()
    }

    /// Starts the front foreground job: a control job alone, writes as one
    /// group of all the writes queued before the next control job.
    fn start_foreground(&mut self) -> Option<Action<W, C, T, P>> {
        Some(match self.foreground.pop_front()? {
            Job::Control(c) => {
                self.started_foreground();
                Action::Control(c)
            }
            Job::Write(first) => Action::Writes(self.start_group(first)),
        })
    }

    /// Starts a group of `first` and the writes queued behind it, up to the
    /// next control job.
    fn start_group(&mut self, first: W) -> Vec<W> {
        self.started_foreground();
        let mut group = vec![first];
        while let Some(Job::Write(_)) = self.foreground.front() {
            if let Some(Job::Write(w)) = self.foreground.pop_front() {
                group.push(w);
            }
        }
        group
    }

    fn started_foreground(&mut self) {
        self.foreground_ran_last = true;
        self.epoch += 1;
        self.busy = true;
    }

    /// Plans a chunk while foreground writes are active (unless planning is
    /// backing off, this chunk's plans keep going stale or it was sent
    /// `behind`), else runs it on the writer.
    fn start_chunk(&mut self, pending: Pending<T>, now: Instant) -> Action<W, C, T, P> {
        let active = self.foreground_active(now);
        let may_plan = !self.plan_out && self.plan_not_before.is_none_or(|t| now >= t);
        if active && !pending.behind && pending.stale_plans < MAX_STALE_PLANS && may_plan {
            self.plans += 1;
            self.plan_out = true;
            self.planning = Some((self.plans, pending, self.epoch));
            return Action::Plan { id: self.plans };
        }
        self.busy = true;
        Action::Expire {
            chunk: pending.chunk,
            foreground_active: active,
        }
    }

    /// Whether a foreground write was queued within the policy's window.
    pub fn foreground_active(&self, now: Instant) -> bool {
        self.last_foreground
            .is_some_and(|t| now.saturating_duration_since(t) < self.policy.foreground_window)
    }

    fn take_planning(&mut self, id: u64) -> Option<(Pending<T>, u64)> {
        match self.planning.take() {
            Some((current, pending, epoch)) if current == id => Some((pending, epoch)),
            other => {
                self.planning = other;
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    type S = Schedule<&'static str, &'static str, u32, &'static str>;
    type A = Action<&'static str, &'static str, u32, &'static str>;

    fn schedule() -> (S, Instant) {
        (Schedule::new(ExpiryPolicy::default()), Instant::now())
    }

    const LATER: Duration = Duration::from_secs(5);

    /// A schedule whose writer has just run a write: foreground writes are
    /// active at the returned instant.
    fn after_a_write() -> (S, Instant) {
        let (mut s, t) = schedule();
        s.push_write("w0", t);
        assert_eq!(s.next(t), Some(A::Writes(vec!["w0"])));
        s.work_done();
        (s, t)
    }

    /// The plan `s` starts next at `now`; panics if it starts anything else.
    fn plan_started(s: &mut S, now: Instant) -> u64 {
        let Some(A::Plan { id }) = s.next(now) else {
            panic!("expected a plan")
        };
        id
    }

    /// Hands plan `id` back and checks that the writer applies it to `chunk`.
    fn applied_once_back(s: &mut S, id: u64, now: Instant, chunk: u32) {
        assert_eq!(s.plan_returned::<()>(id, Ok("plan")), None);
        assert_eq!(
            s.next(now),
            Some(A::Apply {
                chunk,
                plan: "plan"
            })
        );
    }

    #[test]
    fn a_chunk_sent_behind_runs_on_the_writer_even_while_writes_are_active() {
        let (mut s, t) = after_a_write();
        s.push_chunk(1, true);
        assert_eq!(
            s.next(t),
            Some(A::Expire {
                chunk: 1,
                foreground_active: true
            })
        );
        s.work_done();
        s.push_chunk(2, false);
        assert!(
            matches!(s.next(t), Some(A::Plan { .. })),
            "caught up: planned"
        );
    }

    #[test]
    fn queued_writes_run_as_one_group_and_a_control_job_alone() {
        let (mut s, t) = schedule();
        s.push_write("w1", t);
        s.push_write("w2", t);
        s.push_control("switch");
        s.push_write("w3", t);
        assert_eq!(s.next(t), Some(A::Writes(vec!["w1", "w2"])));
        assert_eq!(s.next(t), None, "busy until the group is done");
        s.work_done();
        assert_eq!(s.next(t), Some(A::Control("switch")));
        s.work_done();
        assert_eq!(s.next(t), Some(A::Writes(vec!["w3"])));
        s.work_done();
        assert_eq!(s.next(t), None);
        assert!(s.is_idle());
    }

    #[test]
    fn the_writer_takes_the_writes_queued_during_its_group_itself() {
        let (mut s, t) = schedule();
        s.push_write("w1", t);
        assert_eq!(s.next(t), Some(A::Writes(vec!["w1"])));
        s.push_write("w2", t);
        s.push_write("w3", t);
        let epoch = s.epoch();
        assert_eq!(s.next_group(), Some(vec!["w2", "w3"]));
        assert_eq!(s.epoch(), epoch + 1, "a plan made before it is stale");
        assert_eq!(s.next(t), None, "busy with the group it took");
        assert_eq!(s.next_group(), None, "nothing queued");
        assert!(s.is_idle());
        s.push_write("w4", t);
        assert_eq!(s.next(t), Some(A::Writes(vec!["w4"])));
    }

    #[test]
    fn a_group_ending_leaves_chunks_and_control_jobs_to_the_owner() {
        let (mut s, t) = schedule();
        s.push_write("w1", t);
        assert_eq!(s.next(t), Some(A::Writes(vec!["w1"])));
        // A chunk queued during the group has the next turn, as with `next`.
        s.push_chunk(1, true);
        s.push_write("w2", t);
        assert_eq!(s.next_group(), None);
        assert!(matches!(s.next(t), Some(A::Expire { chunk: 1, .. })));
        s.work_done();
        assert_eq!(s.next(t), Some(A::Writes(vec!["w2"])));
        // A control job runs alone, so it is not taken for a group.
        s.push_control("switch");
        s.push_write("w3", t);
        assert_eq!(s.next_group(), None);
        assert_eq!(s.next(t), Some(A::Control("switch")));
        s.work_done();
        assert_eq!(s.next(t), Some(A::Writes(vec!["w3"])));
    }

    #[test]
    fn a_ttl_chunk_yields_to_a_waiting_foreground_write() {
        let (mut s, t) = schedule();
        s.push_chunk(1, false);
        s.push_chunk(2, false);
        let idle = t + LATER;
        // Nothing foreground: the chunk runs on the writer, full size.
        assert_eq!(
            s.next(idle),
            Some(A::Expire {
                chunk: 1,
                foreground_active: false
            })
        );
        // A write arrives while chunk 1 runs: it goes before chunk 2.
        s.push_write("w", idle);
        s.work_done();
        assert_eq!(s.next(idle), Some(A::Writes(vec!["w"])));
        s.work_done();
        // Then expiry gets its turn again, even with another write queued.
        s.push_write("w2", idle);
        assert!(matches!(s.next(idle), Some(A::Plan { .. })));
        // While the plan is out the writer stays free for the write.
        assert_eq!(s.next(idle), Some(A::Writes(vec!["w2"])));
    }

    #[test]
    fn chunks_are_planned_off_the_writer_while_writes_are_active() {
        let (mut s, t) = schedule();
        s.push_write("w", t);
        s.push_chunk(7, false);
        assert_eq!(s.next(t), Some(A::Writes(vec!["w"])));
        s.work_done();
        let id = plan_started(&mut s, t);
        assert_eq!(s.planning(id), Some(&7));
        applied_once_back(&mut s, id, t, 7);
    }

    #[test]
    fn a_stale_plan_is_discarded_and_made_again_then_run_on_the_writer() {
        let (mut s, t) = after_a_write();
        s.push_chunk(9, false);
        for round in 0..MAX_STALE_PLANS {
            let Some(A::Plan { id }) = s.next(t) else {
                panic!("round {round}: expected a plan")
            };
            // A write starts before the plan is applied: the plan is stale.
            s.push_write("w", t);
            assert_eq!(s.next(t), Some(A::Writes(vec!["w"])));
            s.work_done();
            s.plan_returned::<()>(id, Ok("old plan"));
        }
        // The last stale plan is not applied: the chunk runs on the writer.
        assert_eq!(
            s.next(t),
            Some(A::Expire {
                chunk: 9,
                foreground_active: true
            })
        );
        let stale = u64::from(MAX_STALE_PLANS);
        assert_eq!(s.take_discarded(), Discarded { stale, overdue: 0 });
        assert_eq!(s.take_discarded(), Discarded::default(), "counted once");
    }

    #[test]
    fn housekeeping_takes_turns_with_chunks_not_with_writes() {
        let (mut s, t) = schedule();
        let idle = t + LATER;
        s.push_housekeeping("h1");
        s.push_housekeeping("h2");
        s.push_chunk(1, false);
        assert_eq!(s.next(idle), Some(A::Control("h1")));
        s.work_done();
        s.push_write("w", idle);
        // A write waits for one turn of the expiry side, not for all of it.
        assert_eq!(s.next(idle), Some(A::Writes(vec!["w"])));
        s.work_done();
        // Housekeeping ran last: the chunk's turn (planned: writes are
        // active), and the writer is free for housekeeping meanwhile.
        let id = plan_started(&mut s, idle);
        assert_eq!(s.next(idle), Some(A::Control("h2")));
        s.work_done();
        applied_once_back(&mut s, id, idle, 1);
        s.work_done();
        assert!(s.is_idle());
    }

    #[test]
    fn housekeeping_between_a_plan_and_its_turn_leaves_the_plan_current() {
        let (mut s, t) = after_a_write();
        s.push_chunk(3, false);
        let id = plan_started(&mut s, t);
        s.push_housekeeping("sweep");
        assert_eq!(s.next(t), Some(A::Control("sweep")));
        s.work_done();
        applied_once_back(&mut s, id, t, 3);
        assert_eq!(s.take_discarded(), Discarded::default());
    }

    #[test]
    fn a_prompt_chunk_waits_less_for_its_plan_than_a_backlog_chunk() {
        assert_eq!(plan_patience(true), PROMPT_PLAN_PATIENCE);
        assert_eq!(plan_patience(false), PLAN_PATIENCE);
        assert!(PROMPT_PLAN_PATIENCE < PLAN_PATIENCE);
    }

    #[test]
    fn an_overdue_plan_sends_chunks_to_the_writer_and_planning_backs_off() {
        let (mut s, t) = after_a_write();
        s.push_chunk(1, false);
        let id = plan_started(&mut s, t);
        let overdue = t + PLAN_PATIENCE;
        s.plan_overdue(id, overdue);
        assert_eq!(
            s.take_discarded(),
            Discarded {
                stale: 0,
                overdue: 1
            }
        );
        assert_eq!(
            s.next(overdue),
            Some(A::Expire {
                chunk: 1,
                foreground_active: true
            })
        );
        s.work_done();
        // The abandoned plan's late result is dropped.
        assert_eq!(s.plan_returned::<()>(id, Ok("late")), None);
        // Within the back-off, with writes still active, chunks stay on the writer.
        let soon = overdue + Duration::from_millis(10);
        s.push_write("w2", soon);
        s.next(soon);
        s.work_done();
        s.push_chunk(2, false);
        assert_eq!(
            s.next(soon),
            Some(A::Expire {
                chunk: 2,
                foreground_active: true
            })
        );
        s.work_done();
        // After the back-off, planning resumes.
        let after = overdue + PLAN_BACKOFF;
        s.push_write("w3", after);
        s.next(after);
        s.work_done();
        s.push_chunk(3, false);
        assert!(matches!(s.next(after), Some(A::Plan { .. })));
    }

    #[test]
    fn a_failed_plan_hands_its_chunk_back_with_the_error() {
        let (mut s, t) = after_a_write();
        s.push_chunk(4, false);
        let id = plan_started(&mut s, t);
        assert_eq!(s.plan_returned(id, Err("disk")), Some((4, "disk")));
        assert!(s.is_idle());
    }

    #[test]
    fn a_plan_that_failed_while_the_writer_moved_on_is_made_again() {
        let (mut s, t) = after_a_write();
        s.push_chunk(5, false);
        let id = plan_started(&mut s, t);
        // An index switch runs while the plan is out; the plan then fails
        // (its index family is gone): the failure is not the chunk's.
        s.push_control("switch");
        assert_eq!(s.next(t), Some(A::Control("switch")));
        s.work_done();
        assert_eq!(s.plan_returned(id, Err("family dropped")), None);
        assert!(matches!(s.next(t), Some(A::Plan { .. })));
    }

    #[test]
    fn activity_ends_after_the_foreground_window() {
        let (mut s, t) = schedule();
        s.push_write("w", t);
        assert!(s.foreground_active(t));
        assert!(!s.foreground_active(t + ExpiryPolicy::default().foreground_window));
    }
}
