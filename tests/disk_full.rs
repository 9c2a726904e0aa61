//! A full disk: a write that cannot be stored is
//! refused with OutOfDiskSpace (14031) and a reason, the node writes again
//! by itself once space is freed (no restart), and nothing acknowledged is
//! lost across a restart.
//!
//! The data directory lives on a small tmpfs, which needs root to mount;
//! elsewhere the test says it skipped.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::common::{TestNode, code};
use mongodb::bson::doc;

/// A tmpfs mounted for the test's lifetime.
struct Tmpfs {
    _dir: tempfile::TempDir,
    path: PathBuf,
}

impl Tmpfs {
    fn mount(megabytes: u32) -> Option<Tmpfs> {
        let dir = tempfile::tempdir().ok()?;
        let path = dir.path().to_path_buf();
        let mounted = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={megabytes}m"), "tmpfs"])
            .arg(&path)
            .output()
            .ok()?
            .status
            .success();
        mounted.then_some(Tmpfs { _dir: dir, path })
    }

    fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.path).status();
    }
}

#[tokio::test]
async fn a_full_disk_refuses_writes_clearly_then_writes_resume_once_space_is_freed() {
    let Some(disk) = Tmpfs::mount(120) else {
        eprintln!("skipped: mounting a tmpfs needs root");
        return;
    };
    // Room to free later: RocksDB takes writes again once the free space
    // covers the memtable it reserves (64 MiB here).
    let filler = disk.path().join("filler");
    std::fs::write(&filler, vec![0u8; 80 << 20]).unwrap();
    let data = disk.path().join("data");
    let mut node = TestNode::start_with(|c| c.storage.path = data.clone(), None);
    let c = node.coll("full", "c").await;
    let blob = "x".repeat(100_000);
    let mut acknowledged = 0;
    let error = loop {
        match c.insert_one(doc! { "_id": acknowledged, "b": &blob }).await {
            Ok(_) => acknowledged += 1,
            Err(e) => break e,
        }
        assert!(acknowledged < 2000, "the disk never filled");
    };
    assert_eq!(code(&error), Some(14031), "{error}");
    assert!(
        error.to_string().contains("No space left on device"),
        "{error}"
    );
    // Later writes are refused the same way, not with an internal error.
    let again = c.insert_one(doc! { "_id": -1 }).await.unwrap_err();
    assert_eq!(code(&again), Some(14031), "{again}");

    // RocksDB's space manager retries every 5 s; give it a few rounds.
    std::fs::remove_file(&filler).unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        match c.insert_one(doc! { "_id": "after" }).await {
            Ok(_) => break,
            Err(e) => {
                assert_eq!(code(&e), Some(14031), "{e}");
                assert!(
                    Instant::now() < deadline,
                    "writes did not resume within 30 s of space being freed: {e}"
                );
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // Reads and other writes go on as before the fault.
    c.insert_one(doc! { "_id": "after-2" }).await.unwrap();
    let live = c.count_documents(doc! {}).await.unwrap();
    assert_eq!(live, acknowledged as u64 + 2);

    node.restart();
    let c = node.coll("full", "c").await;
    let stored = c.count_documents(doc! {}).await.unwrap();
    assert_eq!(
        stored,
        acknowledged as u64 + 2,
        "every acknowledged insert survived"
    );
}
