//! The consensus library's own storage suite, run against the log and the
//! state machine on RocksDB, with an in-memory [`Apply`] standing for the
//! node.

use std::sync::{Arc, Mutex};

use ebb_storage::engine::Engine;
use ebb_storage::engine::rocks::{RocksEngine, RocksOptions};
use futures::future::BoxFuture;
use openraft::StorageError;
use openraft::testing::{StoreBuilder, Suite};

use crate::log::LogStore;
use crate::machine::{Apply, Machine};
use crate::types::{Applied, Proposal, TypeConfig};

/// Keeps what it applied as its whole state.
#[derive(Default)]
struct Recorder {
    applied: Mutex<Vec<u8>>,
}

impl Apply for Recorder {
    fn apply(&self, index: u64, proposal: Proposal) -> BoxFuture<'_, Applied> {
        let mut state = self.applied.lock().unwrap();
        state.extend_from_slice(&index.to_be_bytes());
        state.extend_from_slice(&proposal.bytes);
        Box::pin(async { Applied::default() })
    }

    fn snapshot(&self) -> BoxFuture<'_, Result<Vec<u8>, String>> {
        let state = self.applied.lock().unwrap().clone();
        Box::pin(async move { Ok(state) })
    }

    fn install(&self, data: Vec<u8>) -> BoxFuture<'_, Result<(), String>> {
        *self.applied.lock().unwrap() = data;
        Box::pin(async { Ok(()) })
    }
}

struct OnRocks;

impl StoreBuilder<TypeConfig, LogStore, Machine, tempfile::TempDir> for OnRocks {
    async fn build(&self) -> Result<(tempfile::TempDir, LogStore, Machine), StorageError<u64>> {
        let dir = tempfile::tempdir().unwrap();
        let engine: Arc<dyn Engine> = Arc::new(
            RocksEngine::open(&RocksOptions {
                path: dir.path().to_path_buf(),
                block_cache_bytes: 1 << 20,
                write_buffer_bytes: 4 << 20,
            })
            .unwrap(),
        );
        let log = LogStore::open(Arc::clone(&engine)).unwrap();
        let (machine, _) = Machine::open(engine, Arc::new(Recorder::default())).unwrap();
        Ok((dir, log, machine))
    }
}

#[test]
fn the_log_and_the_state_machine_pass_the_libraries_storage_suite() {
    Suite::test_all(OnRocks).unwrap();
}
