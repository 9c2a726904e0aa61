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

/// `getLog: "global"` returns the lines the node logged, in mongod's
/// structured shape, and counts them.
#[tokio::test]
async fn get_log_returns_the_nodes_recent_lines() {
    let dir = tempfile::tempdir().unwrap();
    let mut d = spawn(dir.path(), &[("EBB_LOG__LEVEL", "info")]);
    let client = d.client().await;
    let admin = client.database("admin");
    let reply = admin
        .run_command(doc! { "getLog": "global" })
        .await
        .unwrap();
    let written = reply.get_i64("totalLinesWritten").unwrap();
    let log = reply.get_array("log").unwrap();
    assert!(written >= 1 && log.len() as i64 <= written, "{reply}");
    let lines: Vec<serde_json::Value> = log
        .iter()
        .map(|l| serde_json::from_str(l.as_str().unwrap()).unwrap())
        .collect();
    let ready = lines
        .iter()
        .find(|l| l["msg"] == "ebbd ready")
        .unwrap_or_else(|| panic!("no ready line in {lines:?}"));
    assert_eq!(ready["s"], "I");
    assert!(ready["t"]["$date"].as_str().unwrap().ends_with('Z'));
    assert!(
        ready["attr"]["local_addr"]
            .as_str()
            .unwrap()
            .contains(&d.addr.port().to_string())
    );
    let names = admin.run_command(doc! { "getLog": "*" }).await.unwrap();
    assert_eq!(names.get_array("names").unwrap().len(), 2);
    drop(client);
    assert_eq!(terminate(&mut d.child).code(), Some(0));
}
