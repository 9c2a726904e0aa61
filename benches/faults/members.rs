//! The set under test: three `ebbd --replSet rs0` processes on loopback
//! ports, each with its own data directory and log, that the harness kills
//! (`SIGKILL`), pauses (`SIGSTOP`/`SIGCONT`) and partitions (the
//! `ebbCutReplication` fail point) one at a time.

use std::fs::File;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use mongodb::Client;
use mongodb::bson::{Document, doc};

/// How quickly members notice a lost primary: short, so faults follow one
/// another quickly.
pub struct Timing {
    pub election: Duration,
    pub heartbeat: Duration,
}

pub struct Member {
    pub port: u16,
    dir: PathBuf,
    log: PathBuf,
    child: Option<Child>,
}

fn free_port() -> Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

impl Member {
    pub fn host(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    pub fn log(&self) -> &Path {
        &self.log
    }

    pub fn running(&self) -> bool {
        self.child.is_some()
    }

    fn pid(&self) -> Option<i32> {
        self.child.as_ref().map(|c| c.id() as i32)
    }

    /// A client of this member alone, reading from it whatever its state.
    pub async fn direct(&self) -> Result<Client> {
        let uri = format!(
            "mongodb://{}/?directConnection=true&readPreference=secondaryPreferred\
             &serverSelectionTimeoutMS=2000&connectTimeoutMS=1000",
            self.host()
        );
        Ok(Client::with_uri_str(uri).await?)
    }

    pub async fn admin(&self, command: Document) -> Result<Document> {
        let client = self.direct().await?;
        let reply = tokio::time::timeout(
            Duration::from_secs(5),
            client.database("admin").run_command(command),
        )
        .await
        .context("the member did not answer within 5 s")??;
        Ok(reply)
    }

    /// Kills the process at once (`kill -9`).
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Stops or resumes the process (`SIGSTOP` / `SIGCONT`).
    pub fn signal(&self, pause: bool) {
        if let Some(pid) = self.pid() {
            let sig = if pause { libc::SIGSTOP } else { libc::SIGCONT };
            // SAFETY: `pid` is our own child, still running (not reaped).
            unsafe { libc::kill(pid, sig) };
        }
    }

    /// Cuts or heals the member's replication traffic.
    pub async fn cut(&self, on: bool) -> Result<()> {
        let mode = if on { "alwaysOn" } else { "off" };
        self.admin(doc! { "configureFailPoint": "ebbCutReplication", "mode": mode })
            .await
            .map(drop)
    }
}

/// Three members, not yet initiated.
pub struct Set {
    pub members: Vec<Member>,
    ebbd: PathBuf,
    timing: Timing,
}

impl Set {
    pub fn start(ebbd: &Path, root: &Path, timing: Timing) -> Result<Set> {
        let mut members = Vec::new();
        for _ in 0..3 {
            let port = free_port()?;
            members.push(Member {
                port,
                dir: root.join(format!("m{port}")),
                log: root.join(format!("m{port}.log")),
                child: None,
            });
        }
        let mut set = Set {
            members,
            ebbd: ebbd.to_owned(),
            timing,
        };
        for i in 0..3 {
            set.spawn(i)?;
        }
        Ok(set)
    }

    /// Starts member `i` (again) on its data directory.
    pub fn spawn(&mut self, i: usize) -> Result<()> {
        let m = &self.members[i];
        let log = File::options().create(true).append(true).open(&m.log)?;
        let child = Command::new(&self.ebbd)
            .args([
                "--port",
                &m.port.to_string(),
                "--replSet",
                "rs0",
                "--db-path",
            ])
            .arg(&m.dir)
            .env(
                "EBB_REPLICATION__ELECTION_TIMEOUT",
                humantime(self.timing.election),
            )
            .env(
                "EBB_REPLICATION__HEARTBEAT",
                humantime(self.timing.heartbeat),
            )
            // Snapshots often and a short log: a member killed or cut off
            // for a while comes back through a snapshot, not only the log.
            .env("EBB_REPLICATION__SNAPSHOT_EVERY", "500")
            .env("EBB_REPLICATION__LOG_KEPT", "50")
            .env("EBB_REPLICATION__FAULT_POINTS", "true")
            .env("EBB_LOG__LEVEL", "warn")
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .with_context(|| format!("cannot start {}", self.ebbd.display()))?;
        let port = m.port;
        self.members[i].child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(60);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            if Instant::now() > deadline {
                bail!(
                    "member {port} did not start: see {}",
                    self.members[i].log.display()
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(())
    }

    pub fn hosts(&self) -> Vec<String> {
        self.members.iter().map(Member::host).collect()
    }

    pub async fn initiate(&self) -> Result<()> {
        let members: Vec<Document> = self
            .members
            .iter()
            .enumerate()
            .map(|(i, m)| doc! { "_id": i as i32, "host": m.host() })
            .collect();
        self.members[0]
            .admin(doc! { "replSetInitiate": { "_id": "rs0", "members": members } })
            .await
            .map(drop)
    }

    /// The member that calls itself a writable primary now, if any.
    pub async fn primary(&self) -> Option<usize> {
        for (i, m) in self.members.iter().enumerate() {
            if !m.running() {
                continue;
            }
            if let Ok(h) = m.admin(doc! { "hello": 1 }).await
                && h.get_bool("isWritablePrimary").ok() == Some(true)
            {
                return Some(i);
            }
        }
        None
    }
}

impl Drop for Set {
    fn drop(&mut self) {
        for m in &mut self.members {
            m.signal(false);
            m.kill();
        }
    }
}

fn humantime(d: Duration) -> String {
    format!("{}ms", d.as_millis())
}
