//! Changing the set's members, as `replSetReconfig` (`rs.add`,
//! `rs.remove`) does: one voter added or removed at a time, as mongod
//! allows without `force`. A new member first joins as a learner and
//! catches up from the log (the whole log: it is never purged), then the
//! configuration that names it as a voter is committed.

use std::collections::BTreeSet;

use openraft::error::{ClientWriteError, RaftError};

use crate::replica::Replica;
use crate::types::{Member, node_id};

/// Why the members were not changed.
#[derive(Debug, thiserror::Error)]
pub enum ReconfigError {
    #[error("not primary")]
    NotLeader,
    #[error("Non force replica set reconfig can only add or remove at most 1 voting member")]
    TooMany,
    #[error("the _id of member {0} cannot change")]
    IdChanged(String),
    #[error("{0}")]
    Other(String),
}

fn failed(e: RaftError<u64, ClientWriteError<u64, Member>>) -> ReconfigError {
    match e {
        RaftError::APIError(ClientWriteError::ForwardToLeader(_)) => ReconfigError::NotLeader,
        e => ReconfigError::Other(e.to_string()),
    }
}

impl Replica {
    /// Makes `members` the set's voters. Returns once the new
    /// configuration is committed (an added member has caught up first).
    pub async fn reconfigure(&self, members: Vec<Member>) -> Result<(), ReconfigError> {
        let metrics = self.raft.metrics().borrow().clone();
        let current = metrics.membership_config.membership();
        let before: BTreeSet<u64> = current.voter_ids().collect();
        let after: BTreeSet<u64> = members.iter().map(|m| node_id(&m.host)).collect();
        for m in &members {
            if let Some(known) = current.get_node(&node_id(&m.host))
                && known.member_id != m.member_id
            {
                return Err(ReconfigError::IdChanged(m.host.clone()));
            }
        }
        if before.symmetric_difference(&after).count() > 1 {
            return Err(ReconfigError::TooMany);
        }
        for m in &members {
            let id = node_id(&m.host);
            if !before.contains(&id) {
                self.raft
                    .add_learner(id, m.clone(), true)
                    .await
                    .map_err(failed)?;
            }
        }
        self.raft
            .change_membership(after, false)
            .await
            .map_err(failed)?;
        Ok(())
    }
}
