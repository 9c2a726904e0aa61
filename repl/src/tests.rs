//! The consensus library's own storage suite, run against the log and the
//! state machine on RocksDB, with an [`Apply`] that applies nothing
//! standing for the node.

use std::sync::Arc;

use ebb_storage::engine::Engine;
use ebb_storage::engine::rocks::{RocksEngine, RocksOptions};
use futures::future::BoxFuture;
use openraft::StorageError;
use openraft::testing::{StoreBuilder, Suite};

use crate::log::LogStore;
use crate::machine::{Apply, Machine};
use crate::types::{Applied, OpTime, Proposal, TypeConfig};

/// Applies nothing: the state is what the machine keeps in the engine.
struct Nothing;

impl Apply for Nothing {
    fn apply(&self, _: u64, _: OpTime, _: Proposal) -> BoxFuture<'_, Applied> {
        Box::pin(async { Applied::default() })
    }

    fn restart(&self) -> BoxFuture<'_, Result<(), String>> {
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
        let (machine, _) =
            Machine::open(engine, Arc::new(Nothing), dir.path().join("snapshots")).unwrap();
        Ok((dir, log, machine))
    }
}

#[test]
fn the_log_and_the_state_machine_pass_the_libraries_storage_suite() {
    Suite::test_all(OnRocks).unwrap();
}
