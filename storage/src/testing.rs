//! Fixtures for this crate's unit tests: a RocksDB on a temporary directory
//! and the catalog record of a test collection.

use bson::Document;

use crate::catalog::{CollectionMeta, IndexMeta};
use crate::engine::rocks::{RocksEngine, RocksOptions};

/// A RocksDB with small caches in a fresh temporary directory, which lives
/// as long as the returned guard.
pub fn temp_engine() -> (tempfile::TempDir, RocksEngine) {
    let dir = tempfile::tempdir().unwrap();
    let engine = RocksEngine::open(&RocksOptions {
        path: dir.path().to_path_buf(),
        block_cache_bytes: 1 << 20,
        write_buffer_bytes: 4 << 20,
    })
    .unwrap();
    (dir, engine)
}

/// The catalog record of collection `t.<name>` with its records in family
/// 10 (families are the caller's to create).
pub fn meta(
    name: &str,
    options: Document,
    natural: Option<u64>,
    indexes: Vec<IndexMeta>,
) -> CollectionMeta {
    CollectionMeta {
        id: 10,
        db: "t".into(),
        name: name.into(),
        uuid: bson::Binary {
            subtype: bson::spec::BinarySubtype::Uuid,
            bytes: vec![0; 16],
        },
        options,
        natural,
        indexes,
    }
}
