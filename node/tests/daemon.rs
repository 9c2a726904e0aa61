//! The `ebbd` binary: starts, serves, stops cleanly on SIGTERM, and refuses
//! a bad configuration with a message naming the key.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use mongodb::bson::{Document, doc};

/// A running `ebbd` child process.
pub struct Daemon {
    pub child: Child,
    pub addr: SocketAddr,
}

impl Drop for Daemon {
    fn drop(&mut self) {
        // Never leave a daemon behind a failed test.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `ebbd` on an ephemeral port and waits for its "ready" line.
pub fn spawn(data: &std::path::Path, extra: &[&str]) -> Daemon {
    let mut child = Command::new(env!("CARGO_BIN_EXE_ebbd"))
        .args(["--port", "0", "--db-path"])
        .arg(data)
        .args(extra)
        .env("EBB_LOG__FORMAT", "text")
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn ebbd");
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if let Some(rest) = line.split("local_addr=").nth(1) {
                let addr = rest
                    .split_whitespace()
                    .next()
                    .unwrap_or_default()
                    .to_owned();
                let _ = tx.send(addr);
            }
        }
    });
    let addr = rx
        .recv_timeout(Duration::from_secs(60))
        .expect("ebbd reports its address");
    Daemon {
        child,
        addr: addr.parse().expect("socket address"),
    }
}

fn terminate(child: &mut Child) -> std::process::ExitStatus {
    let status = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(s) = child.try_wait().unwrap() {
            return s;
        }
        assert!(Instant::now() < deadline, "ebbd did not stop after SIGTERM");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[tokio::test]
async fn ebbd_serves_and_exits_zero_on_sigterm_keeping_data() {
    let dir = tempfile::tempdir().unwrap();
    let mut d = spawn(dir.path(), &[]);
    let uri = format!("mongodb://{}/?directConnection=true", d.addr);
    let client = mongodb::Client::with_uri_str(&uri).await.unwrap();
    let c = client.database("d").collection::<Document>("c");
    c.insert_many((0..100).map(|i| doc! { "i": i }))
        .await
        .unwrap();
    drop(client);
    assert_eq!(terminate(&mut d.child).code(), Some(0));

    let mut d = spawn(dir.path(), &[]);
    let uri = format!("mongodb://{}/?directConnection=true", d.addr);
    let client = mongodb::Client::with_uri_str(&uri).await.unwrap();
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
