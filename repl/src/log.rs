//! The consensus log in the engine's `log` family: entries under their
//! index, and the member's vote, committed point, purge point and kept
//! snapshot beside them.
//!
//! An append commits one batch with the WAL synced before the library is
//! told the entries are durable: a member that acknowledged an entry to the
//! leader still holds it after `kill -9`.

use std::fmt::Debug;
use std::ops::{Bound, RangeBounds};
use std::sync::Arc;

use ebb_storage::engine::{Cf, Direction, Engine, KeyRange};
use openraft::storage::{LogFlushed, LogState, RaftLogReader, RaftLogStorage, SnapshotMeta};
use openraft::{Entry, LogId, OptionalSend, StorageError, StorageIOError, Vote};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::types::{Member, TypeConfig};

type NodeId = u64;
type Result<T> = std::result::Result<T, StorageError<NodeId>>;

/// Entries are keyed `e` + the index, big-endian, so they sort by index.
pub(crate) const ENTRY: u8 = b'e';
const VOTE: &[u8] = b"m/vote";
const COMMITTED: &[u8] = b"m/committed";
pub(crate) const PURGED: &[u8] = b"m/purged";
/// The snapshot this member built or installed last ([`Kept`]).
pub(crate) const KEPT: &[u8] = b"m/snapshot";

/// The snapshot a member keeps: its meta and the directory of its
/// checkpoint (`snapshot`).
#[derive(Serialize, Deserialize)]
pub(crate) struct Kept {
    pub meta: SnapshotMeta<NodeId, Member>,
    /// The checkpoint's directory, under the member's snapshot directory.
    pub dir: String,
}

pub(crate) fn entry_key(index: u64) -> Vec<u8> {
    let mut k = Vec::with_capacity(9);
    k.push(ENTRY);
    k.extend_from_slice(&index.to_be_bytes());
    k
}

/// The keys of entries `from..` (`to` exclusive, or to the last entry).
fn entry_range(from: u64, to: Option<u64>) -> KeyRange {
    let upper = match to {
        Some(to) => entry_key(to),
        None => vec![ENTRY + 1],
    };
    KeyRange::new(entry_key(from), Some(upper))
}

/// Values stored in the log family and sent between members, as CBOR.
pub(crate) fn encode<T: Serialize>(value: &T) -> Result<Vec<u8>> {
    let mut bytes = Vec::new();
    ciborium::into_writer(value, &mut bytes).map_err(|e| StorageIOError::write(&e))?;
    Ok(bytes)
}

pub(crate) fn decode<T: DeserializeOwned>(bytes: &[u8]) -> Result<T> {
    ciborium::from_reader(bytes).map_err(|e| StorageIOError::read(&e).into())
}

pub(crate) fn read_err(e: ebb_storage::Error) -> StorageError<NodeId> {
    StorageIOError::read(&e).into()
}

pub(crate) fn write_err(e: ebb_storage::Error) -> StorageError<NodeId> {
    StorageIOError::write(&e).into()
}

/// The log of one member.
#[derive(Clone)]
pub struct LogStore {
    engine: Arc<dyn Engine>,
}

impl LogStore {
    /// Opens the log in `engine`, creating its family on first use.
    pub fn open(engine: Arc<dyn Engine>) -> std::result::Result<Self, ebb_storage::Error> {
        engine.create_cf(Cf::Log)?;
        Ok(LogStore { engine })
    }

    fn get<T: DeserializeOwned>(&self, key: &[u8]) -> Result<Option<T>> {
        match self.engine.get(Cf::Log, key).map_err(read_err)? {
            Some(bytes) => Ok(Some(decode(&bytes)?)),
            None => Ok(None),
        }
    }

    fn put<T: Serialize>(&self, key: &[u8], value: &T) -> Result<()> {
        let mut batch = self.engine.batch();
        batch
            .put(Cf::Log, key, &encode(value)?)
            .map_err(write_err)?;
        batch.commit(true).map_err(write_err)
    }

    fn last_entry_id(&self) -> Result<Option<LogId<NodeId>>> {
        let cursor = self
            .engine
            .cursor(Cf::Log, entry_range(0, None), Direction::Reverse)
            .map_err(read_err)?;
        if !cursor.valid() {
            cursor.status().map_err(read_err)?;
            return Ok(None);
        }
        let entry: Entry<TypeConfig> = decode(cursor.value())?;
        Ok(Some(entry.log_id))
    }
}

impl RaftLogReader<TypeConfig> for LogStore {
    async fn try_get_log_entries<RB: RangeBounds<u64> + Clone + Debug + OptionalSend>(
        &mut self,
        range: RB,
    ) -> Result<Vec<Entry<TypeConfig>>> {
        let from = match range.start_bound() {
            Bound::Included(&i) => i,
            Bound::Excluded(&i) => i + 1,
            Bound::Unbounded => 0,
        };
        let to = match range.end_bound() {
            Bound::Included(&i) => Some(i + 1),
            Bound::Excluded(&i) => Some(i),
            Bound::Unbounded => None,
        };
        let mut cursor = self
            .engine
            .cursor(Cf::Log, entry_range(from, to), Direction::Forward)
            .map_err(read_err)?;
        let mut entries = Vec::new();
        while cursor.valid() {
            entries.push(decode(cursor.value())?);
            cursor.advance();
        }
        cursor.status().map_err(read_err)?;
        Ok(entries)
    }
}

impl RaftLogStorage<TypeConfig> for LogStore {
    type LogReader = LogStore;

    async fn get_log_state(&mut self) -> Result<LogState<TypeConfig>> {
        let last_purged_log_id: Option<LogId<NodeId>> = self.get(PURGED)?;
        let last_log_id = self.last_entry_id()?.or(last_purged_log_id);
        Ok(LogState {
            last_purged_log_id,
            last_log_id,
        })
    }

    async fn get_log_reader(&mut self) -> Self::LogReader {
        self.clone()
    }

    async fn save_vote(&mut self, vote: &Vote<NodeId>) -> Result<()> {
        self.put(VOTE, vote)
    }

    async fn read_vote(&mut self) -> Result<Option<Vote<NodeId>>> {
        self.get(VOTE)
    }

    async fn save_committed(&mut self, committed: Option<LogId<NodeId>>) -> Result<()> {
        self.put(COMMITTED, &committed)
    }

    async fn read_committed(&mut self) -> Result<Option<LogId<NodeId>>> {
        Ok(self.get::<Option<LogId<NodeId>>>(COMMITTED)?.flatten())
    }

    async fn append<I>(&mut self, entries: I, callback: LogFlushed<TypeConfig>) -> Result<()>
    where
        I: IntoIterator<Item = Entry<TypeConfig>> + OptionalSend,
        I::IntoIter: OptionalSend,
    {
        let mut batch = self.engine.batch();
        for entry in entries {
            batch
                .put(Cf::Log, &entry_key(entry.log_id.index), &encode(&entry)?)
                .map_err(write_err)?;
        }
        let done = batch.commit(true);
        let reported = done
            .as_ref()
            .map(|_| ())
            .map_err(|e| std::io::Error::other(e.to_string()));
        callback.log_io_completed(reported);
        done.map_err(write_err)
    }

    async fn truncate(&mut self, log_id: LogId<NodeId>) -> Result<()> {
        let range = entry_range(log_id.index, None);
        let mut batch = self.engine.batch();
        batch
            .delete_range(Cf::Log, &range.lower, range.upper.as_deref().unwrap_or(&[]))
            .map_err(write_err)?;
        batch.commit(true).map_err(write_err)
    }

    async fn purge(&mut self, log_id: LogId<NodeId>) -> Result<()> {
        // Never past the snapshot this member holds on disk. The library
        // purges the entries a snapshot from the leader covers as it decides
        // to install it, before the member has staged it: killed in between,
        // the member would start with its log purged past its snapshot,
        // which the library refuses (it panics at startup). The entries
        // left go once the snapshot is loaded (`snapshot::load_pending`).
        let kept = match self.engine.get(Cf::Log, KEPT).map_err(read_err)? {
            Some(bytes) => decode::<Kept>(&bytes)?.meta.last_log_id,
            None => None,
        };
        let log_id = match kept {
            Some(k) if k.index < log_id.index => k,
            _ => log_id,
        };
        let range = entry_range(0, Some(log_id.index + 1));
        let mut batch = self.engine.batch();
        batch
            .put(Cf::Log, PURGED, &encode(&log_id)?)
            .map_err(write_err)?;
        batch
            .delete_range(Cf::Log, &range.lower, range.upper.as_deref().unwrap_or(&[]))
            .map_err(write_err)?;
        batch.commit(true).map_err(write_err)
    }
}
