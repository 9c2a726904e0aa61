//! A full disk (issue 13, storage faults): a write that cannot be stored is
//! refused with OutOfDiskSpace (14031) and a reason, nothing acknowledged
//! is lost, and the node writes again once space is freed and it restarts.
//!
//! The data directory lives on a small tmpfs, which needs root to mount;
//! elsewhere the test says it skipped.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{TestNode, code};
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
async fn a_full_disk_refuses_writes_clearly_and_loses_nothing_acknowledged() {
    let Some(disk) = Tmpfs::mount(40) else {
        eprintln!("skipped: mounting a tmpfs needs root");
        return;
    };
    // Room to free later.
    let filler = disk.path().join("filler");
    std::fs::write(&filler, vec![0u8; 12 << 20]).unwrap();
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
        assert!(acknowledged < 1000, "the disk never filled");
    };
    assert_eq!(code(&error), Some(14031), "{error}");
    assert!(
        error.to_string().contains("No space left on device"),
        "{error}"
    );
    // Later writes are refused the same way, not with an internal error.
    let again = c.insert_one(doc! { "_id": -1 }).await.unwrap_err();
    assert_eq!(code(&again), Some(14031), "{again}");

    std::fs::remove_file(&filler).unwrap();
    node.restart();
    let c = node.coll("full", "c").await;
    let stored = c.count_documents(doc! {}).await.unwrap();
    assert_eq!(
        stored, acknowledged as u64,
        "every acknowledged insert survived"
    );
    c.insert_one(doc! { "_id": "after" }).await.unwrap();
}
