//! Redis as a peer: each document a string key with the 100-byte payload
//! and an absolute expiry (`SET … PXAT`), removed by Redis's active expiry
//! (default `hz 10`, `active-expire-effort 1`: what users get). Documents
//! stored is `DBSIZE`, which counts a key until expiry reclaims it.

use std::time::{Duration, Instant};

use anyhow::{Result, bail};
use redis::aio::MultiplexedConnection;

use super::server::{Server, find_binary, free_port};
use crate::interleaved::Mix;
use crate::steady::Store;
use crate::workload::{PAYLOAD, now_ms};

pub struct Redis {
    _server: Server,
    con: MultiplexedConnection,
}

fn key(i: u64) -> String {
    format!("s:{i}")
}

impl Redis {
    /// Starts `redis-server` on a free port, or `None` when it is not
    /// installed.
    pub async fn start() -> Result<Option<Redis>> {
        let Some(bin) = find_binary("redis-server", &[]) else {
            return Ok(None);
        };
        let port = free_port()?;
        let dir = tempfile::tempdir()?;
        let mut cmd = std::process::Command::new(bin);
        cmd.args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no", "--daemonize", "no"])
            .args(["--enable-debug-command", "local", "--loglevel", "warning"])
            .arg("--dir")
            .arg(dir.path());
        let server = Server::spawn(cmd, dir, "-TERM")?;
        let client = redis::Client::open(format!("redis://127.0.0.1:{port}/"))?;
        let deadline = Instant::now() + Duration::from_secs(30);
        let con = loop {
            match client.get_multiplexed_async_connection().await {
                Ok(con) => break con,
                Err(_) if Instant::now() < deadline => {
                    tokio::time::sleep(Duration::from_millis(50)).await
                }
                Err(e) => bail!("redis-server did not answer on port {port}: {e}"),
            }
        };
        Ok(Some(Redis {
            _server: server,
            con,
        }))
    }

    async fn dbsize(&self) -> Result<u64> {
        Ok(redis::cmd("DBSIZE")
            .query_async(&mut self.con.clone())
            .await?)
    }

    async fn active_expire(&self, on: bool) -> Result<()> {
        redis::cmd("DEBUG")
            .arg("SET-ACTIVE-EXPIRE")
            .arg(on as u8)
            .query_async::<()>(&mut self.con.clone())
            .await?;
        Ok(())
    }

    /// Sends `command key(i) … at` for each `(i, at)`, pipelined 1,000 at a
    /// time from four tasks.
    async fn each(&self, command: &'static str, jobs: Vec<(u64, i64)>) -> Result<()> {
        let mut tasks = Vec::new();
        let per_task = jobs.len().div_ceil(4).max(1);
        for part in jobs.chunks(per_task) {
            let (mut con, part) = (self.con.clone(), part.to_vec());
            tasks.push(tokio::spawn(async move {
                for chunk in part.chunks(1000) {
                    let mut p = redis::pipe();
                    for &(i, at) in chunk {
                        let c = p.cmd(command).arg(key(i));
                        if command == "SET" {
                            c.arg(PAYLOAD).arg("PXAT");
                        }
                        c.arg(at).ignore();
                    }
                    p.query_async::<()>(&mut con).await?;
                }
                anyhow::Ok(())
            }));
        }
        for t in tasks {
            t.await??;
        }
        Ok(())
    }

    /// The `interleaved` workload: the keys of `mix` loaded with active
    /// expiry off, the live ones expiring a day or more ahead; the due ones
    /// then given expiries spread over a second that has passed before
    /// active expiry is turned on at T (a key set to expire in the past is
    /// deleted at once, so they cannot be loaded already due). Returns
    /// seconds from T until only the live keys are left.
    pub async fn interleaved(&self, mix: &Mix) -> Result<f64> {
        self.active_expire(false).await?;
        let load_at = now_ms();
        let all = (0..mix.due.len())
            .map(|i| {
                let ahead = if mix.due[i] {
                    3_600_000
                } else {
                    mix.offset_ms[i]
                };
                (i as u64, load_at + ahead)
            })
            .collect();
        self.each("SET", all).await?;
        // Give the due keys expiries in a second that starts once as long
        // again as the load took has passed: setting them takes less.
        let due_from = now_ms() + (now_ms() - load_at) + 1000;
        let due: Vec<(u64, i64)> = (0..mix.due.len())
            .filter(|&i| mix.due[i])
            .map(|i| (i as u64, due_from + (-mix.offset_ms[i]) % 1000))
            .collect();
        self.each("PEXPIREAT", due).await?;
        let live = mix.due_count() as u64;
        if self.dbsize().await? != 2 * live {
            bail!("redis: due keys expired before T; the load was too slow");
        }
        let t = due_from + 1000;
        tokio::time::sleep(Duration::from_millis((t - now_ms()).max(0) as u64)).await;
        let started = Instant::now();
        self.active_expire(true).await?;
        let deadline = started + Duration::from_secs(600);
        loop {
            let n = self.dbsize().await?;
            if n <= live {
                if n < live {
                    bail!("redis: {n} keys left, fewer than the {live} live ones");
                }
                return Ok(started.elapsed().as_secs_f64());
            }
            if Instant::now() > deadline {
                bail!("redis: {} due keys still stored after 600 s", n - live);
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    }
}

impl Store for Redis {
    async fn insert(&self, _worker: usize, first: u64, n: usize, due_ms: i64) -> Result<()> {
        let mut p = redis::pipe();
        for i in first..first + n as u64 {
            p.cmd("SET")
                .arg(key(i))
                .arg(PAYLOAD)
                .arg("PXAT")
                .arg(due_ms)
                .ignore();
        }
        p.query_async::<()>(&mut self.con.clone()).await?;
        Ok(())
    }

    async fn stored(&self) -> Result<u64> {
        self.dbsize().await
    }
}
