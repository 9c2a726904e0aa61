//! [`Replica`]: one member of a replica set, as the node sees it. It owns
//! the consensus library's handle and answers in the set's terms: who
//! leads, whether this member may take writes, what the members hold.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use ebb_storage::engine::Engine;
use openraft::error::{ClientWriteError, InitializeError, RaftError};
use openraft::{Config, ServerState, SnapshotPolicy};

use crate::log::LogStore;
use crate::machine::{Apply, Machine, Times};
use crate::network::{Network, Rpc, Transport};
use crate::types::{Applied, Member, OpTime, Proposal, Raft, node_id};

/// How quickly members notice a lost leader.
#[derive(Debug, Clone, Copy)]
pub struct Timing {
    /// A leader sends at least one message this often.
    pub heartbeat: Duration,
    /// A leader no majority answered for this long stops taking writes; a
    /// follower that heard nothing for a random time in
    /// `[1.2 × election, 1.6 × election)` stands for election. At most two
    /// fifths of it may pass between heartbeats.
    pub election: Duration,
}

impl Default for Timing {
    fn default() -> Self {
        Timing {
            heartbeat: Duration::from_millis(500),
            election: Duration::from_millis(2000),
        }
    }
}

/// When a member snapshots its state, and how much of its log it keeps.
#[derive(Debug, Clone)]
pub struct Compaction {
    /// Where its snapshots' checkpoints are.
    pub dir: std::path::PathBuf,
    /// A snapshot is taken after this many entries since the last.
    pub every: u64,
    /// Entries a snapshot holds that are still kept in the log, for
    /// members a little behind.
    pub keep: u64,
}

/// Why a member could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("cannot open the replication log: {0}")]
    Storage(#[from] ebb_storage::Error),
    #[error("cannot start consensus: {0}")]
    Raft(String),
}

/// Why a set could not be initiated here.
#[derive(Debug, thiserror::Error)]
pub enum InitiateError {
    #[error("already initialized")]
    AlreadyInitialized,
    #[error("{0}")]
    Other(String),
}

/// Why a proposal was not applied.
#[derive(Debug, thiserror::Error)]
pub enum ProposeError {
    /// This member does not lead; `leader` is the one that does, if known.
    #[error("not primary")]
    NotLeader { leader: Option<String> },
    #[error("{0}")]
    Other(String),
}

/// A member's role, in MongoDB's words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Not in any configuration yet (mongod: no valid config).
    Uninitiated,
    Primary,
    Secondary,
    /// Standing for election, or in a configuration that does not name it.
    Other,
}

/// What this member knows of the set right now.
#[derive(Debug, Clone)]
pub struct View {
    pub role: Role,
    /// Whether this member leads, is not stepping down, and a majority
    /// answered it within an election timeout: only then does it take
    /// writes.
    pub writable: bool,
    pub term: u64,
    pub leader: Option<Member>,
    /// This member, as the configuration names it.
    pub me: Member,
    /// Voting members, by `_id`.
    pub voters: Vec<Member>,
    /// Members that replicate but do not vote yet.
    pub learners: Vec<Member>,
    /// Index of the configuration's entry (grows with every change).
    pub config_index: u64,
    pub last_applied: u64,
    /// The time of the last write this member applied.
    pub optime: OpTime,
    pub last_log: u64,
    /// On the leader: the last index each member is known to hold, and
    /// the time of the last write at or before it (while recent).
    pub matched: BTreeMap<String, (u64, Option<OpTime>)>,
}

/// Until when a member stays out of elections (`stepdown`).
#[derive(Debug, Default)]
pub(crate) struct Freeze {
    pub(crate) until: std::sync::Mutex<Option<std::time::Instant>>,
}

/// How long a member may take to take in one chunk of a snapshot (a few
/// megabytes; the last one is also unpacked) before the leader sends the
/// snapshot again from the start. A heartbeat's time is far too short for
/// a member busy loading its last one.
const SNAPSHOT_CHUNK_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// One member of a replica set.
pub struct Replica {
    pub(crate) raft: Raft,
    host: String,
    pub(crate) timing: Timing,
    /// Stepping down: no more writes are taken.
    pub(crate) stepping_down: AtomicBool,
    pub(crate) freeze: Arc<Freeze>,
    /// The times of the writes applied here.
    times: Arc<Times>,
}

impl Replica {
    /// Starts the member reachable at `host`, with its log and state in
    /// `engine`. A member that was in a set before rejoins it.
    pub async fn start(
        engine: Arc<dyn Engine>,
        host: &str,
        timing: Timing,
        compaction: Compaction,
        transport: Arc<dyn Transport>,
        apply: Arc<dyn Apply>,
    ) -> Result<Replica, StartError> {
        let election = timing.election.as_millis() as u64;
        // openraft's follower stands once it has heard nothing for its
        // leader lease (the maximum) plus a random timeout in [min, max):
        // here [1.2, 1.6) × `election`. The old primary stops calling
        // itself writable after one `election`, before any other member
        // stands.
        let config = Config {
            cluster_name: "ebb".into(),
            heartbeat_interval: timing.heartbeat.as_millis() as u64,
            election_timeout_min: election * 2 / 5,
            election_timeout_max: election * 4 / 5,
            install_snapshot_timeout: SNAPSHOT_CHUNK_TIMEOUT.as_millis() as u64,
            snapshot_policy: SnapshotPolicy::LogsSinceLast(compaction.every),
            max_in_snapshot_log_to_keep: compaction.keep,
            purge_batch_size: (compaction.every / 10).max(1),
            enable_tick: true,
            ..Default::default()
        };
        let config = Arc::new(
            config
                .validate()
                .map_err(|e| StartError::Raft(e.to_string()))?,
        );
        let log = LogStore::open(Arc::clone(&engine))?;
        let (machine, times) = Machine::open(engine, apply, compaction.dir)?;
        let network = Network { transport };
        let raft = Raft::new(node_id(host), config, network, log, machine)
            .await
            .map_err(|e| StartError::Raft(e.to_string()))?;
        Ok(Replica {
            raft,
            host: host.to_owned(),
            timing,
            stepping_down: AtomicBool::new(false),
            freeze: Arc::default(),
            times,
        })
    }

    /// This member's address.
    pub fn host(&self) -> &str {
        &self.host
    }

    /// Makes `members` the set's first configuration, from this member.
    pub async fn initiate(&self, members: Vec<Member>) -> Result<(), InitiateError> {
        let members: BTreeMap<u64, Member> =
            members.into_iter().map(|m| (node_id(&m.host), m)).collect();
        match self.raft.initialize(members).await {
            Ok(()) => Ok(()),
            Err(RaftError::APIError(InitializeError::NotAllowed(_))) => {
                Err(InitiateError::AlreadyInitialized)
            }
            Err(e) => Err(InitiateError::Other(e.to_string())),
        }
    }

    /// Commits `proposal` through the set and answers what applying it
    /// answered here, with its index. Only the leader takes proposals.
    pub async fn propose(&self, proposal: Proposal) -> Result<(u64, Applied), ProposeError> {
        match self.raft.client_write(proposal).await {
            Ok(r) => Ok((r.log_id.index, r.data)),
            Err(RaftError::APIError(ClientWriteError::ForwardToLeader(f))) => {
                Err(ProposeError::NotLeader {
                    leader: f.leader_node.map(|m| m.host),
                })
            }
            Err(e) => Err(ProposeError::Other(e.to_string())),
        }
    }

    /// Waits until `members` members (this one among them) hold entry
    /// `index`, at most `deadline` (forever without one); whether they do.
    pub async fn wait_held(&self, index: u64, members: usize, deadline: Option<Duration>) -> bool {
        let held = |m: &openraft::RaftMetrics<u64, Member>| {
            let others = m
                .replication
                .iter()
                .flatten()
                .filter(|(id, log)| **id != m.id && log.is_some_and(|l| l.index >= index))
                .count();
            let mine = m.last_log_index.is_some_and(|i| i >= index);
            others + usize::from(mine) >= members
        };
        self.wait_metrics(deadline, held).await
    }

    /// Waits until the metrics satisfy `ok`, at most `deadline` (forever
    /// without one); whether they did.
    pub(crate) async fn wait_metrics(
        &self,
        deadline: Option<Duration>,
        ok: impl Fn(&openraft::RaftMetrics<u64, Member>) -> bool,
    ) -> bool {
        let mut metrics = self.raft.metrics();
        let wait = async {
            loop {
                if ok(&metrics.borrow_and_update()) {
                    return true;
                }
                if metrics.changed().await.is_err() {
                    return false;
                }
            }
        };
        match deadline {
            Some(d) => tokio::time::timeout(d, wait).await.unwrap_or(false),
            None => wait.await,
        }
    }

    /// The time of the last write this member applied.
    pub fn optime(&self) -> OpTime {
        self.times.last()
    }

    /// Waits until this member has applied a write at timestamp `ts` or
    /// later, at most `deadline` (forever without one); whether it has.
    pub async fn wait_applied(&self, ts: (u32, u32), deadline: Option<Duration>) -> bool {
        let mut optime = self.times.watch();
        let wait = async { optime.wait_for(|t| t.ts() >= ts).await.is_ok() };
        match deadline {
            Some(d) => tokio::time::timeout(d, wait).await.unwrap_or(false),
            None => wait.await,
        }
    }

    /// Answers a message from another member.
    pub async fn serve(&self, rpc: Rpc, body: &[u8]) -> std::io::Result<Vec<u8>> {
        crate::network::serve(&self.raft, rpc, body).await
    }

    /// Confirms that this member still leads (a quorum answers its
    /// heartbeat) and waits until it has applied everything committed
    /// when it was asked: reads that follow see every write acknowledged
    /// before (Raft's read index).
    pub async fn linearize(&self) -> Result<(), String> {
        self.raft
            .ensure_linearizable()
            .await
            .map(drop)
            .map_err(|e| e.to_string())
    }

    /// What this member knows of the set now.
    pub fn view(&self) -> View {
        let m = self.raft.metrics().borrow().clone();
        let membership = m.membership_config.membership();
        let voter_ids: BTreeSet<u64> = membership.voter_ids().collect();
        let mut voters = Vec::new();
        let mut learners = Vec::new();
        for (id, member) in membership.nodes() {
            if voter_ids.contains(id) {
                voters.push(member.clone());
            } else {
                learners.push(member.clone());
            }
        }
        voters.sort_by_key(|m| m.member_id);
        learners.sort_by_key(|m| m.member_id);
        let me = membership
            .get_node(&m.id)
            .cloned()
            .unwrap_or_else(|| Member {
                host: self.host.clone(),
                member_id: -1,
            });
        let configured = voter_ids.contains(&m.id);
        let role = match m.state {
            _ if membership.nodes().next().is_none() => Role::Uninitiated,
            ServerState::Leader => Role::Primary,
            ServerState::Follower if configured => Role::Secondary,
            _ => Role::Other,
        };
        let fresh = |ms: u64| ms < self.timing.election.as_millis() as u64;
        let writable = role == Role::Primary
            && m.millis_since_quorum_ack.is_some_and(fresh)
            && !self.stepping_down.load(Ordering::SeqCst);
        let leader = m
            .current_leader
            .and_then(|id| membership.get_node(&id).cloned());
        let matched = m
            .replication
            .iter()
            .flatten()
            .filter_map(|(id, log)| {
                let member = membership.get_node(id)?;
                let index = log.map_or(0, |l| l.index);
                Some((member.host.clone(), (index, self.times.at(index))))
            })
            .collect();
        View {
            role,
            writable,
            term: m.current_term,
            leader,
            me,
            voters,
            learners,
            config_index: m.membership_config.log_id().map_or(0, |l| l.index),
            last_applied: m.last_applied.map_or(0, |l| l.index),
            optime: self.optime(),
            last_log: m.last_log_index.unwrap_or(0),
            matched,
        }
    }

    /// Follows this member's standing in the set.
    pub fn standing(&self) -> Standing {
        let metrics = self.raft.metrics();
        let seen = Standing::of(&metrics.borrow());
        Standing { metrics, seen }
    }

    /// Stops taking part in the set (at shutdown).
    pub async fn shutdown(&self) {
        if let Err(e) = self.raft.shutdown().await {
            tracing::warn!("replication did not stop cleanly: {e}");
        }
    }
}

/// A member's state, term, leader and configuration as they change
/// ([`Replica::standing`]).
pub struct Standing {
    metrics: tokio::sync::watch::Receiver<openraft::RaftMetrics<u64, Member>>,
    seen: (ServerState, u64, Option<u64>, u64),
}

impl Standing {
    fn of(m: &openraft::RaftMetrics<u64, Member>) -> (ServerState, u64, Option<u64>, u64) {
        let config = m.membership_config.log_id().map_or(0, |l| l.index);
        (m.state, m.current_term, m.current_leader, config)
    }

    /// Waits until the state, the term, the leader or the configuration
    /// differs from when this was last asked; pends forever once the
    /// member stops.
    pub async fn changed(&mut self) {
        loop {
            if self.metrics.changed().await.is_err() {
                return std::future::pending().await;
            }
            let now = Self::of(&self.metrics.borrow_and_update());
            if now != self.seen {
                self.seen = now;
                return;
            }
        }
    }
}
