//! The `ebbd` binary: starts, serves, stops cleanly on SIGTERM, and refuses
//! a bad configuration with a message naming the key.

mod support;

use std::process::Command;

use mongodb::bson::{Document, doc};
use support::{spawn, terminate};

#[tokio::test]
async fn ebbd_serves_and_exits_zero_on_sigterm_keeping_data() {
    let dir = tempfile::tempdir().unwrap();
    let mut d = spawn(dir.path(), &[]);
    let client = d.client().await;
    let c = client.database("d").collection::<Document>("c");
    c.insert_many((0..100).map(|i| doc! { "i": i }))
        .await
        .unwrap();
    drop(client);
    assert_eq!(terminate(&mut d.child).code(), Some(0));

    let mut d = spawn(dir.path(), &[]);
    let client = d.client().await;
    let n = client
        .database("d")
        .collection::<Document>("c")
        .count_documents(doc! {})
        .await
        .unwrap();
    assert_eq!(n, 100);
    assert_eq!(terminate(&mut d.child).code(), Some(0));
}

#[test]
fn bad_config_exits_nonzero_naming_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("ebb.toml");
    std::fs::write(&cfg, "[storage]\nsyncc = \"always\"\n").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_ebbd"))
        .arg("--config")
        .arg(&cfg)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("storage.syncc"), "stderr: {err}");
}
