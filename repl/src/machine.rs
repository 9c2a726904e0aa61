//! The state machine: applies committed entries through the node, in log
//! order, and keeps what the library asks of it (the last applied entry
//! and the membership) in the `log` family; builds and installs snapshots
//! (`snapshot`).
//!
//! What an entry means is the node's business ([`Apply`]); this file only
//! hands entries over one at a time and records how far it got, with the
//! [`OpTime`] of the last write applied, recorded in the same batch as the
//! entry's index: a member that applies an entry again after a crash gives
//! it the same time.

use std::path::PathBuf;
use std::sync::Arc;

use ebb_storage::engine::{Cf, Engine};
use futures::future::BoxFuture;
use openraft::storage::{RaftSnapshotBuilder, RaftStateMachine, Snapshot, SnapshotMeta};
use openraft::{
    Entry, EntryPayload, LogId, OptionalSend, StorageError, StorageIOError, StoredMembership,
};

use crate::log::{KEPT, Kept, decode, encode, read_err, write_err};
use crate::snapshot::{self, Pack, SnapshotData};
use crate::types::{Applied, Member, OpTime, Proposal, TypeConfig};

type NodeId = u64;
type Result<T> = std::result::Result<T, StorageError<NodeId>>;

const APPLIED: &[u8] = b"s/applied";
const MEMBERSHIP: &[u8] = b"s/membership";
const OPTIME: &[u8] = b"s/optime";

/// What the node does with committed entries.
pub trait Apply: Send + Sync + 'static {
    /// Applies the entry at `index`, which takes its place in the set's
    /// history at `at`; the answer goes back to the client that proposed
    /// it, when this member is the leader that did.
    fn apply(&self, index: u64, at: OpTime, proposal: Proposal) -> BoxFuture<'_, Applied>;

    /// A snapshot is staged in place of this member's state
    /// ([`snapshot::load_pending`]). The member restarts, to load it
    /// before anything reads its state, and this never returns; or it
    /// answers `Ok` when it keeps nothing of its state in memory, and the
    /// snapshot is loaded at once; or it says why it can do neither.
    fn restart(&self) -> BoxFuture<'_, std::result::Result<(), String>>;
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

    /// The member's state is now a snapshot's, whose last write was at `t`:
    /// the recent times it knew are not all it applied any more.
    fn installed(&self, t: OpTime) {
        let mut recent = self.recent.lock().expect("times lock");
        recent.times.clear();
        recent.all = false;
        drop(recent);
        self.last.send_replace(t);
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
    /// Where its snapshots' checkpoints are.
    snapshots: PathBuf,
}

impl Machine {
    /// The state machine over `engine`, with its snapshots under
    /// `snapshots`, and the times of the writes it applies.
    pub fn open(
        engine: Arc<dyn Engine>,
        apply: Arc<dyn Apply>,
        snapshots: PathBuf,
    ) -> ebb_storage::Result<(Self, Arc<Times>)> {
        let last = last_optime(&*engine)?;
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
            snapshots,
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

    fn keep(&self, kept: &Kept) -> Result<()> {
        let mut batch = self.engine.batch();
        batch
            .put(Cf::Log, KEPT, &encode(kept)?)
            .map_err(write_err)?;
        batch.commit(true).map_err(write_err)
    }

    /// The snapshot in checkpoint `dir`, as the library sends it.
    fn open_snapshot(&self, dir: &str) -> std::io::Result<Box<SnapshotData>> {
        Ok(Box::new(SnapshotData::Sending(Pack::open(
            &self.snapshots.join(dir),
        )?)))
    }
}

fn last_optime(engine: &dyn Engine) -> ebb_storage::Result<OpTime> {
    Ok(match engine.get(Cf::Log, OPTIME)? {
        Some(bytes) => ciborium::from_reader(&bytes[..])
            .map_err(|e| ebb_storage::Error::corrupt(format!("last optime: {e}")))?,
        None => OpTime::default(),
    })
}

/// Builds a snapshot from a checkpoint taken between two entries.
pub struct Builder {
    machine: Machine,
    /// The checkpoint's meta and directory, or why it could not be taken.
    taken: Result<Kept>,
}

fn snapshot_err(e: String) -> StorageError<NodeId> {
    StorageIOError::read_snapshot(None, &std::io::Error::other(e)).into()
}

fn snapshot_io(e: std::io::Error) -> StorageError<NodeId> {
    StorageIOError::read_snapshot(None, &e).into()
}

impl RaftSnapshotBuilder<TypeConfig> for Builder {
    async fn build_snapshot(&mut self) -> Result<Snapshot<TypeConfig>> {
        let kept = std::mem::replace(&mut self.taken, Err(snapshot_err("built".into())))?;
        self.machine.keep(&kept)?;
        let root = self.machine.snapshots.clone();
        let dir = kept.dir.clone();
        tokio::task::spawn_blocking(move || snapshot::remove_others(&root, &dir))
            .await
            .map_err(|e| snapshot_err(e.to_string()))?
            .map_err(snapshot_io)?;
        Ok(Snapshot {
            snapshot: self.machine.open_snapshot(&kept.dir).map_err(snapshot_io)?,
            meta: kept.meta,
        })
    }
}

impl RaftStateMachine<TypeConfig> for Machine {
    type SnapshotBuilder = Builder;

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
                    answers.push(self.apply.apply(id.index, at, proposal).await);
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

    /// Takes the checkpoint here, between two entries, so that it holds
    /// exactly the entries up to the last applied one.
    async fn get_snapshot_builder(&mut self) -> Self::SnapshotBuilder {
        let taken = self.checkpoint().await;
        Builder {
            machine: self.clone(),
            taken,
        }
    }

    async fn begin_receiving_snapshot(&mut self) -> Result<Box<SnapshotData>> {
        let make = async {
            tokio::fs::create_dir_all(&self.snapshots).await?;
            tokio::fs::File::create(snapshot::incoming_pack(&self.snapshots)).await
        };
        Ok(Box::new(SnapshotData::Receiving(
            make.await.map_err(snapshot_io)?,
        )))
    }

    async fn install_snapshot(
        &mut self,
        meta: &SnapshotMeta<NodeId, Member>,
        snapshot: Box<SnapshotData>,
    ) -> Result<()> {
        snapshot::stage(&*self.engine, &self.snapshots, meta, *snapshot)
            .await
            .map_err(write_err)?;
        self.apply.restart().await.map_err(snapshot_err)?;
        let (engine, root) = (Arc::clone(&self.engine), self.snapshots.clone());
        tokio::task::spawn_blocking(move || snapshot::load_pending(&*engine, &root))
            .await
            .map_err(|e| snapshot_err(e.to_string()))?
            .map_err(write_err)?;
        let last = last_optime(&*self.engine).map_err(read_err)?;
        self.times.installed(last);
        Ok(())
    }

    async fn get_current_snapshot(&mut self) -> Result<Option<Snapshot<TypeConfig>>> {
        let Some(kept) = self.get::<Kept>(KEPT)? else {
            return Ok(None);
        };
        match self.open_snapshot(&kept.dir) {
            Ok(snapshot) => Ok(Some(Snapshot {
                meta: kept.meta,
                snapshot,
            })),
            // Not there: one is built when a member needs it.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(snapshot_io(e)),
        }
    }
}

impl Machine {
    /// A checkpoint of the state as the last applied entry left it.
    async fn checkpoint(&mut self) -> Result<Kept> {
        let (applied, membership) = self.applied_state().await?;
        let dir = snapshot::name(applied);
        let (engine, path) = (Arc::clone(&self.engine), self.snapshots.join(&dir));
        let root = self.snapshots.clone();
        tokio::task::spawn_blocking(move || {
            std::fs::create_dir_all(&root)
                .map_err(|e| ebb_storage::Error::engine(e.to_string()))?;
            match path.exists() {
                true => Ok(()),
                false => engine.checkpoint(&path),
            }
        })
        .await
        .map_err(|e| snapshot_err(e.to_string()))?
        .map_err(write_err)?;
        let meta = SnapshotMeta {
            last_log_id: applied,
            last_membership: membership,
            snapshot_id: dir.clone(),
        };
        Ok(Kept { meta, dir })
    }
}
