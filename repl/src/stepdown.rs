//! Moving the primary, as `replSetStepDown` and `replSetFreeze` do.
//!
//! openraft 0.9 has no leadership transfer, so a primary steps down the
//! way Raft lets it: it takes no more writes, waits until another voter
//! holds its whole log, stops its heartbeats and its own candidacy, and
//! lets the caught-up member's election timeout make that member the
//! primary (a member that holds the whole log is the only kind that can
//! win). A frozen member does not stand for election until its freeze ends.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use openraft::ServerState;

use crate::replica::Replica;

/// Why a primary did not step down.
#[derive(Debug, thiserror::Error)]
pub enum StepDownError {
    #[error("not primary")]
    NotLeader,
    #[error("No electable secondaries caught up as of {0:?}")]
    NoneCaughtUp(Duration),
    #[error("no other member was elected within {0:?}")]
    NotReplaced(Duration),
}

impl Replica {
    /// Steps down from primary: waits at most `catch_up` for another voter
    /// to hold every entry (stepping down anyway when `force`), then stays
    /// out of elections for `stand_down` while another member is elected.
    pub async fn step_down(
        &self,
        catch_up: Duration,
        force: bool,
        stand_down: Duration,
    ) -> Result<(), StepDownError> {
        if self.raft.metrics().borrow().state != ServerState::Leader {
            return Err(StepDownError::NotLeader);
        }
        self.stepping_down.store(true, Ordering::SeqCst);
        let result = self.hand_over(catch_up, force, stand_down).await;
        self.raft.runtime_config().heartbeat(true);
        self.stepping_down.store(false, Ordering::SeqCst);
        result
    }

    async fn hand_over(
        &self,
        catch_up: Duration,
        force: bool,
        stand_down: Duration,
    ) -> Result<(), StepDownError> {
        let caught_up = self.wait_metrics(Some(catch_up), |m| {
            let last = m.last_log_index;
            let voters: Vec<u64> = m.membership_config.membership().voter_ids().collect();
            m.replication.iter().flatten().any(|(id, held)| {
                *id != m.id && held.map(|l| l.index) >= last && voters.contains(id)
            })
        });
        if !caught_up.await && !force {
            return Err(StepDownError::NoneCaughtUp(catch_up));
        }
        let others = {
            let m = self.raft.metrics().borrow().clone();
            m.membership_config
                .membership()
                .voter_ids()
                .any(|id| id != m.id)
        };
        if !others {
            return Err(StepDownError::NoneCaughtUp(catch_up));
        }
        self.freeze(stand_down);
        self.raft.runtime_config().heartbeat(false);
        // The others stand once they miss heartbeats for an election
        // timeout (at most twice the configured one), then vote.
        let wait = 4 * self.timing.election + Duration::from_secs(1);
        match self
            .wait_metrics(Some(wait), |m| m.state != ServerState::Leader)
            .await
        {
            true => Ok(()),
            false => {
                self.freeze(Duration::ZERO);
                Err(StepDownError::NotReplaced(wait))
            }
        }
    }

    /// Keeps this member out of elections for `d` (none: it may stand
    /// again now).
    pub fn freeze(&self, d: Duration) {
        let until = Instant::now() + d;
        *self.freeze.until.lock().expect("freeze lock") = (!d.is_zero()).then_some(until);
        self.raft.runtime_config().elect(d.is_zero());
        if d.is_zero() {
            return;
        }
        let (raft, freeze) = (self.raft.clone(), Arc::clone(&self.freeze));
        tokio::spawn(async move {
            tokio::time::sleep_until(until.into()).await;
            let mut frozen = freeze.until.lock().expect("freeze lock");
            // A later freeze or unfreeze decides instead.
            if *frozen == Some(until) {
                *frozen = None;
                raft.runtime_config().elect(true);
            }
        });
    }
}
