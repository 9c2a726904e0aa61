//! The `ebbd` under test: a child process on a temp dir, whose CPU time
//! and peak memory are read from /proc.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use anyhow::{Context, Result, bail};

/// A started ebbd (or a node given by URI).
pub struct Target {
    pub uri: String,
    /// The operators' HTTP listener's `host:port`, when ebbd runs one.
    pub http: Option<String>,
    child: Option<Child>,
    _dir: Option<tempfile::TempDir>,
}

impl Target {
    /// Starts ebbd with `env` on a fresh temp dir, or uses `uri`.
    pub fn start(
        uri: Option<&str>,
        ebbd: Option<&PathBuf>,
        env: &[(&str, String)],
    ) -> Result<Target> {
        if let Some(uri) = uri {
            return Ok(Target {
                uri: uri.to_owned(),
                http: None,
                child: None,
                _dir: None,
            });
        }
        Self::spawn(ebbd, &["--port", "0"], env)
    }

    /// Starts ebbd as the one member of set `rs0`, initiated, and waits
    /// until it is primary.
    pub async fn one_member_set(ebbd: Option<&PathBuf>) -> Result<Target> {
        let port = std::net::TcpListener::bind("127.0.0.1:0")?
            .local_addr()?
            .port()
            .to_string();
        let mut target = Self::spawn(ebbd, &["--port", &port, "--replSet", "rs0"], &[])?;
        let host = format!("127.0.0.1:{port}");
        let client = mongodb::Client::with_uri_str(&target.uri).await?;
        client
            .database("admin")
            .run_command(mongodb::bson::doc! {
                "replSetInitiate": { "_id": "rs0", "members": [{ "_id": 0, "host": &host }] },
            })
            .await?;
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        loop {
            let hello = client
                .database("admin")
                .run_command(mongodb::bson::doc! { "hello": 1 })
                .await?;
            if hello.get_bool("isWritablePrimary").unwrap_or(false) {
                break;
            }
            if std::time::Instant::now() > deadline {
                bail!("the one-member set elected no primary");
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        target.uri = format!("mongodb://{host}/?replicaSet=rs0");
        Ok(target)
    }

    /// Starts ebbd with `args` and `env` on a fresh temp dir.
    fn spawn(ebbd: Option<&PathBuf>, args: &[&str], env: &[(&str, String)]) -> Result<Target> {
        let bin = match ebbd {
            Some(p) => p.clone(),
            None => std::env::current_exe()?.with_file_name("ebbd"),
        };
        let dir = tempfile::tempdir()?;
        let mut child = Command::new(&bin)
            .args(args)
            .arg("--db-path")
            .arg(dir.path().join("data"))
            .env("EBB_LOG__LEVEL", "warn,ebb_node::server=info")
            .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
            .stderr(Stdio::piped())
            .spawn()
            .with_context(|| format!("starting {}", bin.display()))?;
        let stderr = child.stderr.take().expect("piped");
        let (tx, rx) = std::sync::mpsc::channel();
        let (http_tx, http_rx) = std::sync::mpsc::channel();
        let word_after = |line: &str, key: &str| {
            let rest = line.split(key).nth(1)?;
            Some(
                rest.split_whitespace()
                    .next()
                    .unwrap_or_default()
                    .to_owned(),
            )
        };
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if line.contains("operations endpoint") {
                    if let Some(addr) = word_after(&line, " addr=") {
                        let _ = http_tx.send(addr);
                    }
                } else if let Some(addr) = word_after(&line, "local_addr=") {
                    let _ = tx.send(addr);
                } else if line.contains("ERROR") {
                    eprintln!("ebbd: {line}");
                }
            }
        });
        let Ok(addr) = rx.recv_timeout(Duration::from_secs(60)) else {
            let _ = child.kill();
            bail!("ebbd did not report its address");
        };
        Ok(Target {
            uri: format!("mongodb://{addr}/?directConnection=true"),
            // The endpoint reports itself before the node does.
            http: http_rx.try_recv().ok(),
            child: Some(child),
            _dir: Some(dir),
        })
    }

    fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// ebbd's CPU time so far (user + system), if it is our child.
    pub fn cpu(&self) -> Option<Duration> {
        process_cpu(&self.pid()?.to_string())
    }

    /// ebbd's resident memory now, in bytes.
    pub fn rss(&self) -> Option<u64> {
        self.status_kib("VmRSS:").map(|k| k * 1024)
    }

    /// Bytes of SST files in ebbd's data directory.
    pub fn sst_bytes(&self) -> Option<u64> {
        let dir = self._dir.as_ref()?.path().join("data");
        let mut total = 0;
        let mut stack = vec![dir];
        while let Some(d) = stack.pop() {
            for entry in std::fs::read_dir(&d).ok()?.flatten() {
                let path = entry.path();
                if path.is_dir() {
                    stack.push(path);
                } else if path.extension().is_some_and(|e| e == "sst") {
                    // A file compaction just removed is simply not counted.
                    total += entry.metadata().map(|m| m.len()).unwrap_or(0);
                }
            }
        }
        Some(total)
    }

    fn status_kib(&self, field: &str) -> Option<u64> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid()?)).ok()?;
        let line = status.lines().find(|l| l.starts_with(field))?;
        line.split_whitespace().nth(1)?.parse::<u64>().ok()
    }

    /// ebbd's peak resident memory in bytes.
    pub fn peak_rss(&self) -> Option<u64> {
        self.status_kib("VmHWM:").map(|k| k * 1024)
    }
}

/// This harness's own CPU time so far (user + system): the client's share
/// of the machine.
pub fn own_cpu() -> Option<Duration> {
    process_cpu("self")
}

/// Seconds of CPU between two readings of [`own_cpu`] or `Target::cpu`
/// (`None` where either is unknown).
pub fn cpu_spent(before: Option<Duration>, after: Option<Duration>) -> Option<f64> {
    after.zip(before).map(|(a, b)| (a - b).as_secs_f64())
}

/// A process's CPU time so far (user + system) from /proc/`pid`/stat.
fn process_cpu(pid: &str) -> Option<Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the parenthesised command name; utime and stime are
    // the 12th and 13th of them, in clock ticks (100 per second here).
    let after = stat.rsplit_once(')')?.1;
    let fields: Vec<&str> = after.split_whitespace().collect();
    let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    Some(Duration::from_millis(ticks * 10))
}

impl Drop for Target {
    fn drop(&mut self) {
        if let Some(child) = &mut self.child {
            let _ = Command::new("kill")
                .args(["-TERM", &child.id().to_string()])
                .status();
            let _ = child.wait();
        }
    }
}
