//! The state machine: applies committed entries through the node, in log
//! order, and keeps what the library asks of it (the last applied entry
//! and the membership) in the `log` family.
//!
//! What an entry means is the node's business ([`Apply`]); this file only
//! hands entries over one at a time and records how far it got, with the
//! [`OpTime`] of the last write applied, recorded in the same batch as the
//! entry's index: a member that applies an entry again after a crash gives
//! it the same time.

use std::io::Cursor;
use std::sync::Arc;

use ebb_storage::engine::{Cf, Engine};
use futures::future::BoxFuture;
use openraft::storage::{RaftSnapshotBuilder, RaftStateMachine, Snapshot, SnapshotMeta};
use openraft::{
    Entry, EntryPayload, LogId, OptionalSend, StorageError, StorageIOError, StoredMembership,
};
use serde::{Deserialize, Serialize};

use crate::log::{decode, encode, read_err, write_err};
use crate::types::{Applied, Member, OpTime, Proposal, TypeConfig};

type NodeId = u64;
type Result<T> = std::result::Result<T, StorageError<NodeId>>;

const APPLIED: &[u8] = b"s/applied";
const MEMBERSHIP: &[u8] = b"s/membership";
const SNAPSHOT: &[u8] = b"s/snapshot";
const OPTIME: &[u8] = b"s/optime";

/// What the node does with committed entries.
pub trait Apply: Send + Sync + 'static {
    /// Applies the entry at `index`; the answer goes back to the client
    /// that proposed it, when this member is the leader that did.
    fn apply(&self, index: u64, proposal: Proposal) -> BoxFuture<'_, Applied>;

    /// The member's whole state, for a member that joins after the log it
    /// needs is gone, or why it cannot be given.
    fn snapshot(&self) -> BoxFuture<'_, std::result::Result<Vec<u8>, String>>;

    /// Replaces the member's state with a [`Apply::snapshot`] of another.
    fn install(&self, data: Vec<u8>) -> BoxFuture<'_, std::result::Result<(), String>>;
}

/// The last snapshot this member built or installed.
#[derive(Serialize, Deserialize)]
struct Kept {
    meta: SnapshotMeta<NodeId, Member>,
    #[serde(with = "serde_bytes")]
    data: Vec<u8>,
}

/// How many recent writes' times a member keeps by index.
const RECENT: usize = 1 << 16;

/// The times of the writes a member applied: the last one, as it changes,
/// and the recent ones by log index (what `replSetGetStatus` shows of the
/// members whose index the leader knows).
pub struct Times {
    last: tokio::sync::watch::Sender<OpTime>,
    recent: std::sync::Mutex<Recent>,
}

/// The recent writes' times, and whether they are all this member applied
/// (none applied before this start, none dropped since).
#[derive(Default)]
struct Recent {
    times: std::collections::VecDeque<(u64, OpTime)>,
    all: bool,
}

impl Times {
    /// The time of the last write applied.
    pub fn last(&self) -> OpTime {
        *self.last.borrow()
    }

    /// Follows the time of the last write applied.
    pub fn watch(&self) -> tokio::sync::watch::Receiver<OpTime> {
        self.last.subscribe()
    }

    /// The time of the last write this member applied at or before log
    /// index `index`, while it is among the recent ones.
    pub fn at(&self, index: u64) -> Option<OpTime> {
        let recent = self.recent.lock().expect("times lock");
        match recent.times.partition_point(|(i, _)| *i <= index) {
            // Before the first kept write: nothing, if that is all there was.
            0 => recent.all.then_some(OpTime::default()),
            after => Some(recent.times[after - 1].1),
        }
    }

    fn applied(&self, index: u64, t: OpTime) {
        let mut recent = self.recent.lock().expect("times lock");
        if recent.times.len() == RECENT {
            recent.times.pop_front();
            recent.all = false;
        }
        recent.times.push_back((index, t));
        drop(recent);
        self.last.send_replace(t);
    }
}

/// The state machine of one member.
#[derive(Clone)]
pub struct Machine {
    engine: Arc<dyn Engine>,
    apply: Arc<dyn Apply>,
    times: Arc<Times>,
}

impl Machine {
    /// The state machine over `engine`, and the times of the writes it
    /// applies.
    pub fn open(
        engine: Arc<dyn Engine>,
        apply: Arc<dyn Apply>,
    ) -> ebb_storage::Result<(Self, Arc<Times>)> {
        let last = match engine.get(Cf::Log, OPTIME)? {
            Some(bytes) => ciborium::from_reader(&bytes[..])
                .map_err(|e| ebb_storage::Error::corrupt(format!("last optime: {e}")))?,
            None => OpTime::default(),
        };
        let times = Arc::new(Times {
            last: tokio::sync::watch::Sender::new(last),
            recent: std::sync::Mutex::new(Recent {
                times: Default::default(),
                all: last == OpTime::default(),
            }),
        });
        let machine = Machine {
            engine,
            apply,
            times: Arc::clone(&times),
        };
        Ok((machine, times))
    }

    fn get<T: serde::de::DeserializeOwned>(&self, key: &[u8]) -> Result<Option<T>> {
        match self.engine.get(Cf::Log, key).map_err(read_err)? {
            Some(bytes) => Ok(Some(decode(&bytes)?)),
            None => Ok(None),
        }
    }

    fn record(
        &self,
        applied: Option<LogId<NodeId>>,
        membership: Option<&StoredMembership<NodeId, Member>>,
        optime: Option<OpTime>,
    ) -> Result<()> {
        let mut batch = self.engine.batch();
        batch
            .put(Cf::Log, APPLIED, &encode(&applied)?)
            .map_err(write_err)?;
        if let Some(t) = optime {
            batch
                .put(Cf::Log, OPTIME, &encode(&t)?)
                .map_err(write_err)?;
        }
        if let Some(m) = membership {
            batch
                .put(Cf::Log, MEMBERSHIP, &encode(m)?)
                .map_err(write_err)?;
        }
        batch.commit(false).map_err(write_err)?;
        if let (Some(id), Some(t)) = (applied, optime) {
            self.times.applied(id.index, t);
        }
        Ok(())
    }

    fn keep(&self, meta: &SnapshotMeta<NodeId, Member>, data: &[u8]) -> Result<()> {
        let kept = Kept {
            meta: meta.clone(),
            data: data.to_vec(),
        };
        let mut batch = self.engine.batch();
        batch
            .put(Cf::Log, SNAPSHOT, &encode(&kept)?)
            .map_err(write_err)?;
        batch.commit(true).map_err(write_err)
    }
}

fn snapshot_err(e: String) -> StorageError<NodeId> {
    StorageIOError::read_snapshot(None, &std::io::Error::other(e)).into()
}

impl RaftSnapshotBuilder<TypeConfig> for Machine {
    async fn build_snapshot(&mut self) -> Result<Snapshot<TypeConfig>> {
        let (applied, membership) = self.applied_state().await?;
        let data = self.apply.snapshot().await.map_err(snapshot_err)?;
        let snapshot_id = match applied {
            Some(id) => format!("{}-{}", id.leader_id.term, id.index),
            None => "empty".to_owned(),
        };
        let meta = SnapshotMeta {
            last_log_id: applied,
            last_membership: membership,
            snapshot_id,
        };
        self.keep(&meta, &data)?;
        Ok(Snapshot {
            meta,
            snapshot: Box::new(Cursor::new(data)),
        })
    }
}

impl RaftStateMachine<TypeConfig> for Machine {
    type SnapshotBuilder = Machine;

    async fn applied_state(
        &mut self,
    ) -> Result<(Option<LogId<NodeId>>, StoredMembership<NodeId, Member>)> {
        let applied = self.get::<Option<LogId<NodeId>>>(APPLIED)?.flatten();
        let membership = self.get(MEMBERSHIP)?.unwrap_or_default();
        Ok((applied, membership))
    }

    async fn apply<I>(&mut self, entries: I) -> Result<Vec<Applied>>
    where
        I: IntoIterator<Item = Entry<TypeConfig>> + OptionalSend,
        I::IntoIter: OptionalSend,
    {
        let mut answers = Vec::new();
        for entry in entries {
            let id = entry.log_id;
            match entry.payload {
                EntryPayload::Blank => {
                    answers.push(Applied::default());
                    self.record(Some(id), None, None)?;
                }
                EntryPayload::Normal(proposal) => {
                    let at = self
                        .times
                        .last()
                        .next(proposal.at_millis, id.leader_id.term);
                    answers.push(self.apply.apply(id.index, proposal).await);
                    self.record(Some(id), None, Some(at))?;
                }
                EntryPayload::Membership(m) => {
                    answers.push(Applied::default());
                    let membership = StoredMembership::new(Some(id), m);
                    self.record(Some(id), Some(&membership), None)?;
                }
            }
        }
        Ok(answers)
    }

    async fn get_snapshot_builder(&mut self) -> Self::SnapshotBuilder {
        self.clone()
    }

    async fn begin_receiving_snapshot(&mut self) -> Result<Box<Cursor<Vec<u8>>>> {
        Ok(Box::new(Cursor::new(Vec::new())))
    }

    async fn install_snapshot(
        &mut self,
        meta: &SnapshotMeta<NodeId, Member>,
        snapshot: Box<Cursor<Vec<u8>>>,
    ) -> Result<()> {
        let data = snapshot.into_inner();
        self.apply
            .install(data.clone())
            .await
            .map_err(snapshot_err)?;
        self.record(meta.last_log_id, Some(&meta.last_membership), None)?;
        self.keep(meta, &data)
    }

    async fn get_current_snapshot(&mut self) -> Result<Option<Snapshot<TypeConfig>>> {
        let Some(kept) = self.get::<Kept>(SNAPSHOT)? else {
            return Ok(None);
        };
        Ok(Some(Snapshot {
            meta: kept.meta,
            snapshot: Box::new(Cursor::new(kept.data)),
        }))
    }
}
