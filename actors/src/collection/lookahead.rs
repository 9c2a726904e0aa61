//! The writer's TTL lookahead: while one chunk's deletions are committed,
//! the next chunk of the same visit is planned (`ttl::plan_after` says why
//! that plan stays valid across the commit before it), so a visit uses both
//! cores of a small machine instead of scanning and committing in turn.
//!
//! - Chunks run on the writer while no foreground write is active: the next
//!   one is planned on `ebb-ttl-ahead` and the writer waits for that plan.
//!   One not back within the schedule's patience for the chunk
//!   ([`plan_patience`]: 10 ms while the monitor keeps up, 50 ms for a
//!   backlog) is dropped, the chunk runs on the writer as usual, and
//!   lookahead pauses for [`PLAN_BACKOFF`]. Documents that have just
//!   fallen due are promised milliseconds, not 50 ms behind a late plan.
//! - Chunks planned off the writer while foreground writes are active: while
//!   a plan is applied, the next one is planned on `ebb-ttl-plan` (idle
//!   priority), and when the monitor's chunk arrives that plan takes the
//!   place of the one the writer would start, with the schedule's patience.
//!
//! A plan made ahead is used only when the writer ran no foreground job
//! since it was started (same epoch: docs/expiry.md#plan-epoch), never under a deletion-rate limit,
//! and only for the chunk it planned: the same index and cutoff, resuming
//! where the last one stopped, and allowed at least as many documents as
//! the plan takes (while chunks grow, a plan made at the last size serves
//! the larger next one). When the monitor's visit ends at its target, the
//! next visit's first chunk starts from the floor, usually with a later
//! cutoff: the writer's own TTL chunks may still take the plan when the
//! floor stands exactly where the plan resumes, and the plan stopped at its
//! limit or the cutoff is the same (a later cutoff only adds documents
//! after those a plan at its limit takes). The writer plans at the size of
//! the chunk the monitor says it sends next (`ExpireChunk::next_limit`),
//! not at the running chunk's: a visit's last chunk is often a remainder,
//! and a plan at its size served the next visit's first chunk with as few
//! documents, which left another remainder, visit after visit.

use std::time::{Duration, Instant};

use ebb_storage::Result;
use ebb_storage::ttl::Plan;
use tokio::sync::oneshot;

use super::messages::ExpireChunk;
use super::schedule::PLAN_BACKOFF;
#[cfg(doc)]
use super::schedule::plan_patience;

/// Whether the floor of the chunk's TTL index stands right after a resume
/// key (`ttl::resumes_at_floor`).
pub type AtFloor<'a> = &'a dyn Fn(&[u8]) -> bool;

/// A plan of the chunk expected next, on its way from the planning thread.
pub struct Ahead {
    chunk: ExpireChunk,
    limit: usize,
    epoch: u64,
    plan: oneshot::Receiver<Result<Plan>>,
    /// Taken for a chunk with a later cutoff: serves it only if it
    /// stopped at its limit.
    needs_more: bool,
}

impl Ahead {
    /// A plan of `chunk` at `limit` documents, started at writer epoch
    /// `epoch`.
    pub fn new(
        chunk: ExpireChunk,
        limit: usize,
        epoch: u64,
        plan: oneshot::Receiver<Result<Plan>>,
    ) -> Self {
        Ahead {
            chunk,
            limit,
            epoch,
            plan,
            needs_more: false,
        }
    }

    /// Whether this plan serves `chunk` at `limit` documents at `epoch`
    /// (see the module doc); `at_floor`, when a new visit may take it, says
    /// whether the floor stands right after a resume key. `Some(true)`: the
    /// plan serves a new visit's chunk, with a later cutoff, if it stopped
    /// at its limit. The `whole` flag does not matter: a chunk with a plan
    /// is not offered the whole collection.
    fn serves(
        &self,
        chunk: &ExpireChunk,
        limit: usize,
        epoch: u64,
        at_floor: Option<AtFloor<'_>>,
    ) -> Option<bool> {
        let planned = &self.chunk;
        if self.epoch != epoch || self.limit > limit || planned.index != chunk.index {
            return None;
        }
        if planned.cutoff_millis == chunk.cutoff_millis
            && planned.resume_after == chunk.resume_after
        {
            return Some(false);
        }
        let new_visit = chunk.resume_after.is_none()
            && planned.cutoff_millis <= chunk.cutoff_millis
            && planned
                .resume_after
                .as_deref()
                .is_some_and(|after| at_floor.is_some_and(|at| at(after)));
        // The same cutoff finds exactly what the plan found; a later one
        // only adds documents after those the plan takes if it stopped at
        // its limit.
        new_visit.then_some(planned.cutoff_millis < chunk.cutoff_millis)
    }

    /// The plan once it comes back; `None` if its thread or engine is gone.
    pub async fn result(self) -> Option<Result<Plan>> {
        self.plan.await.ok()
    }

    /// The plan, if it comes back within `patience` and succeeded;
    /// `Err(())` when it was late.
    pub async fn wait(self, patience: Duration) -> std::result::Result<Option<Plan>, ()> {
        match tokio::time::timeout(patience, self.plan).await {
            Ok(Ok(Ok(plan))) if self.needs_more && !plan.more() => Ok(None),
            Ok(Ok(Ok(plan))) => Ok(Some(plan)),
            // Failed, or dropped with its engine: the writer plans again.
            Ok(_) => Ok(None),
            Err(_) => Err(()),
        }
    }
}

/// The lookahead state of one writer.
#[derive(Default)]
pub struct Lookahead {
    ahead: Option<Ahead>,
    not_before: Option<Instant>,
}

impl Lookahead {
    /// The plan made ahead for `chunk` of `limit` documents at `epoch`, if
    /// any; a plan of anything else is dropped.
    pub fn take_for(&mut self, chunk: &ExpireChunk, limit: usize, epoch: u64) -> Option<Ahead> {
        let ahead = self.ahead.take()?;
        ahead.serves(chunk, limit, epoch, None).map(|_| ahead)
    }

    /// [`take_for`](Self::take_for), where the plan may also serve the
    /// first chunk of the next visit: `at_floor` says whether the floor
    /// stands right after a resume key. Only for a writer that waits for
    /// the plan with [`Ahead::wait`], which checks the plan stopped at its
    /// limit.
    pub fn take_for_visit(
        &mut self,
        chunk: &ExpireChunk,
        limit: usize,
        epoch: u64,
        at_floor: AtFloor<'_>,
    ) -> Option<Ahead> {
        let mut ahead = self.ahead.take()?;
        ahead.needs_more = ahead.serves(chunk, limit, epoch, Some(at_floor))?;
        Some(ahead)
    }

    /// Whether the next chunk may be planned ahead at `now`.
    pub fn allowed(&self, now: Instant) -> bool {
        self.not_before.is_none_or(|t| now >= t)
    }

    /// A lookahead plan was late at `now`: pause.
    pub fn late(&mut self, now: Instant) {
        self.not_before = Some(now + PLAN_BACKOFF);
    }

    /// A plan of the next chunk is on its way.
    pub fn started(&mut self, ahead: Ahead) {
        self.ahead = Some(ahead);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk(resume_after: Option<&[u8]>) -> ExpireChunk {
        ExpireChunk {
            index: "at_1".into(),
            cutoff_millis: 1_000,
            limit: 1024,
            resume_after: resume_after.map(<[u8]>::to_vec),
            whole: true,
            prompt: false,
            behind: false,
            throttle: false,
            next_limit: 1024,
            logged: false,
            rider: None,
        }
    }

    fn ahead(epoch: u64) -> (Ahead, oneshot::Sender<Result<Plan>>) {
        let (tx, rx) = oneshot::channel();
        (Ahead::new(chunk(Some(b"k")), 1024, epoch, rx), tx)
    }

    #[test]
    fn a_plan_made_ahead_serves_only_the_chunk_it_planned_at_its_epoch() {
        let mut l = Lookahead::default();
        l.started(ahead(3).0);
        assert!(l.take_for(&chunk(Some(b"k")), 1024, 3).is_some());
        assert!(
            l.take_for(&chunk(Some(b"k")), 1024, 3).is_none(),
            "taken once"
        );

        l.started(ahead(3).0);
        assert!(
            l.take_for(&chunk(Some(b"k")), 2048, 3).is_some(),
            "a larger chunk takes a plan of fewer documents"
        );
        for (resume, limit, epoch) in [
            (Some(&b"j"[..]), 1024, 3),
            (None, 1024, 3),
            (Some(&b"k"[..]), 512, 3),
            (Some(&b"k"[..]), 1024, 4),
        ] {
            l.started(ahead(3).0);
            assert!(l.take_for(&chunk(resume), limit, epoch).is_none());
        }
        let mut other = chunk(Some(b"k"));
        other.cutoff_millis += 1;
        l.started(ahead(3).0);
        assert!(l.take_for(&other, 1024, 3).is_none());
    }

    #[test]
    fn a_plan_serves_the_next_visit_only_from_where_the_floor_stands() {
        let mut l = Lookahead::default();
        let mut next_visit = chunk(None);
        next_visit.cutoff_millis += 500;
        let at_k = |after: &[u8]| after == b"k";
        l.started(ahead(3).0);
        let taken = l.take_for_visit(&next_visit, 1024, 3, &at_k);
        assert!(
            taken.is_some_and(|a| a.needs_more),
            "only if it stopped at its limit"
        );
        l.started(ahead(3).0);
        assert!(
            l.take_for_visit(&next_visit, 1024, 3, &|_| false).is_none(),
            "the floor is elsewhere"
        );
        l.started(ahead(3).0);
        assert!(l.take_for(&next_visit, 1024, 3).is_none(), "not offered");
        let mut older = chunk(None);
        older.cutoff_millis -= 1;
        l.started(ahead(3).0);
        assert!(l.take_for_visit(&older, 1024, 3, &at_k).is_none());
        l.started(ahead(3).0);
        let same_cutoff = l.take_for_visit(&chunk(None), 1024, 3, &at_k);
        assert!(
            same_cutoff.is_some_and(|a| !a.needs_more),
            "a visit at the same cutoff finds what the plan found"
        );
        l.started(ahead(3).0);
        let same = l.take_for_visit(&chunk(Some(b"k")), 1024, 3, &at_k);
        assert!(same.is_some_and(|a| !a.needs_more), "the chunk it planned");
    }

    #[test]
    fn a_late_plan_pauses_lookahead_for_the_backoff() {
        let mut l = Lookahead::default();
        let t = Instant::now();
        assert!(l.allowed(t));
        l.late(t);
        assert!(!l.allowed(t + PLAN_BACKOFF / 2));
        assert!(l.allowed(t + PLAN_BACKOFF));
    }

    #[tokio::test]
    async fn a_plan_that_does_not_come_back_in_time_is_late() {
        let (a, _tx) = ahead(0);
        assert_eq!(
            a.wait(Duration::from_millis(5)).await.map(|p| p.is_some()),
            Err(())
        );
        let (a, tx) = ahead(0);
        drop(tx);
        assert_eq!(
            a.wait(Duration::from_millis(5)).await.map(|p| p.is_some()),
            Ok(false)
        );
    }
}
