//! Running the real `ebbd` binary from tests: spawn it on an ephemeral
//! port, find the address it reports, stop it politely or kill it.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

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
pub fn spawn(data: &std::path::Path, env: &[(&str, &str)]) -> Daemon {
    let mut child = Command::new(env!("CARGO_BIN_EXE_ebbd"))
        .args(["--port", "0", "--db-path"])
        .arg(data)
        .envs(env.iter().copied())
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

pub fn terminate(child: &mut Child) -> std::process::ExitStatus {
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

impl Daemon {
    pub fn uri(&self) -> String {
        format!("mongodb://{}/?directConnection=true", self.addr)
    }

    pub async fn client(&self) -> mongodb::Client {
        mongodb::Client::with_uri_str(self.uri())
            .await
            .expect("client")
    }
}
