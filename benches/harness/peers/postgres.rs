//! PostgreSQL as a peer: a table `s (id, expires timestamptz, k, payload)`
//! with indexes on `expires` and `k`, and the usual expiry job: every
//! second, `DELETE … WHERE expires < now()` in batches of 10,000 rows until
//! a batch comes back short. The server runs with `synchronous_commit =
//! off` (ebb acknowledges before its WAL sync too) and 256 MB of shared
//! buffers (ebb's block cache). Documents stored is what was inserted less
//! what the job deleted, both counted here.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use tokio_postgres::{Client, NoTls, Statement};

use super::server::{Server, find_binary, free_port};
use crate::interleaved::Mix;
use crate::steady::Store;
use crate::workload::{PAYLOAD, now_ms};

const BATCH: u64 = 10_000;
const DELETE: &str = "DELETE FROM s WHERE ctid = ANY(ARRAY(\
     SELECT ctid FROM s WHERE expires < now() LIMIT 10000))";
const INSERT: &str = "INSERT INTO s SELECT i, to_timestamp(e / 1000.0), (i % 1000)::int, p \
     FROM unnest($1::int8[], $2::float8[], $3::text[]) AS u(i, e, p)";

pub struct Postgres {
    _server: Server,
    /// One connection per insert worker, then one for the expiry job.
    clients: Vec<(Client, Statement)>,
    inserted: AtomicU64,
    deleted: Arc<AtomicU64>,
}

/// The server binaries' directory: `postgres` on the PATH, else the newest
/// of Debian's `/usr/lib/postgresql/<version>/bin`.
fn bin_dir() -> Option<PathBuf> {
    let mut debian: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .map(|d| d.flatten().map(|e| e.path().join("bin")).collect())
        .unwrap_or_default();
    debian.sort_by(|a, b| b.cmp(a));
    Some(find_binary("postgres", &debian)?.parent()?.to_path_buf())
}

/// PostgreSQL refuses to run as root: as root, its processes run as the
/// `postgres` user the Debian package creates.
fn run_as() -> Result<Option<(u32, u32)>> {
    use std::os::unix::fs::MetadataExt;
    if std::fs::metadata("/proc/self")?.uid() == 0 {
        let passwd = std::fs::read_to_string("/etc/passwd")?;
        let line = passwd
            .lines()
            .find(|l| l.starts_with("postgres:"))
            .context("running as root and there is no postgres user")?;
        let f: Vec<&str> = line.split(':').collect();
        return Ok(Some((f[2].parse()?, f[3].parse()?)));
    }
    Ok(None)
}

impl Postgres {
    /// Starts a fresh cluster on a free port with the table, or `None` when
    /// PostgreSQL is not installed.
    pub async fn start(workers: usize) -> Result<Option<Postgres>> {
        let Some((server, port)) = cluster().await? else {
            return Ok(None);
        };
        connect(port)
            .await?
            .batch_execute(
                "CREATE TABLE s (id bigint PRIMARY KEY, expires timestamptz NOT NULL, \
                 k int NOT NULL, payload text NOT NULL);
                 CREATE INDEX s_expires ON s (expires);
                 CREATE INDEX s_k ON s (k);",
            )
            .await?;
        let mut clients = Vec::new();
        for _ in 0..=workers.max(1) {
            let client = connect(port).await?;
            let insert = client.prepare(INSERT).await?;
            clients.push((client, insert));
        }
        Ok(Some(Postgres {
            _server: server,
            clients,
            inserted: AtomicU64::new(0),
            deleted: Arc::new(AtomicU64::new(0)),
        }))
    }

    fn job_client(&self) -> &Client {
        &self.clients[self.clients.len() - 1].0
    }

    /// One run of the expiry job: batches until one comes back short.
    async fn expire(client: &Client, deleted: &AtomicU64) -> Result<()> {
        loop {
            let n = client.execute(DELETE, &[]).await?;
            deleted.fetch_add(n, Ordering::SeqCst);
            if n < BATCH {
                return Ok(());
            }
        }
    }

    async fn insert_rows(&self, worker: usize, rows: &[(i64, f64)]) -> Result<()> {
        let (client, insert) = &self.clients[worker % (self.clients.len() - 1)];
        let ids: Vec<i64> = rows.iter().map(|r| r.0).collect();
        let expires: Vec<f64> = rows.iter().map(|r| r.1).collect();
        let payloads = vec![PAYLOAD; rows.len()];
        client.execute(insert, &[&ids, &expires, &payloads]).await?;
        self.inserted.fetch_add(rows.len() as u64, Ordering::SeqCst);
        Ok(())
    }

    /// The `interleaved` workload: the rows of `mix` loaded (due ones
    /// expired up to an hour before the load, live ones a day or more
    /// after it) and vacuumed, then the expiry job started at T. Returns
    /// (seconds from T until the job has deleted every due row, seconds
    /// the VACUUM after it took).
    pub async fn interleaved(&self, mix: &Mix) -> Result<(f64, f64)> {
        let load_at = now_ms();
        let rows: Vec<(i64, f64)> = (0..mix.due.len())
            .map(|i| (i as i64, (load_at + mix.offset_ms[i]) as f64))
            .collect();
        for (w, part) in rows.chunks(10_000).enumerate() {
            self.insert_rows(w, part).await?;
        }
        let job = self.job_client();
        job.batch_execute("VACUUM ANALYZE s").await?;
        let n = mix.due_count() as u64;
        let started = Instant::now();
        Postgres::expire(job, &self.deleted).await?;
        let took = started.elapsed().as_secs_f64();
        let deleted = self.deleted.load(Ordering::SeqCst);
        let left: i64 = job.query_one("SELECT count(*) FROM s", &[]).await?.get(0);
        if deleted != n || left != n as i64 {
            bail!("postgres: deleted {deleted} rows and {left} remain; expected {n} and {n}");
        }
        let vacuum = Instant::now();
        job.batch_execute("VACUUM s").await?;
        Ok((took, vacuum.elapsed().as_secs_f64()))
    }

    /// Runs the expiry job every second on the wall clock's second until
    /// `stop` is set.
    pub fn start_job(
        self: &Arc<Self>,
        stop: Arc<AtomicBool>,
    ) -> tokio::task::JoinHandle<Result<()>> {
        let me = self.clone();
        tokio::spawn(async move {
            while !stop.load(Ordering::SeqCst) {
                let wait = 1000 - now_ms().rem_euclid(1000);
                tokio::time::sleep(Duration::from_millis(wait as u64)).await;
                Postgres::expire(me.job_client(), &me.deleted).await?;
            }
            Ok(())
        })
    }
}

/// A fresh PostgreSQL cluster on a free loopback port (its server and
/// port), or `None` when PostgreSQL is not installed: `synchronous_commit
/// = off` and 256 MB of shared buffers, as every peer run uses.
pub async fn cluster() -> Result<Option<(Server, u16)>> {
    use std::os::unix::process::CommandExt;
    let Some(bin) = bin_dir() else {
        return Ok(None);
    };
    let owner = run_as()?;
    let dir = tempfile::tempdir()?;
    let data = dir.path().join("data");
    if let Some((uid, gid)) = owner {
        std::os::unix::fs::chown(dir.path(), Some(uid), Some(gid))?;
    }
    let as_owner = |cmd: &mut std::process::Command| {
        if let Some((uid, gid)) = owner {
            cmd.uid(uid).gid(gid);
        }
    };
    let mut initdb = std::process::Command::new(bin.join("initdb"));
    initdb
        .arg("-D")
        .arg(&data)
        .args(["-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-sync"])
        .stdout(std::process::Stdio::null());
    as_owner(&mut initdb);
    let status = initdb.status().context("running initdb")?;
    if !status.success() {
        bail!("initdb failed: {status}");
    }
    let port = free_port()?;
    let mut cmd = std::process::Command::new(bin.join("postgres"));
    cmd.arg("-D")
        .arg(&data)
        .args(["-p", &port.to_string(), "-k"])
        .arg(dir.path())
        .args(["-c", "listen_addresses=127.0.0.1"])
        .args(["-c", "synchronous_commit=off", "-c", "shared_buffers=256MB"])
        .args(["-c", "max_wal_size=4GB"]);
    as_owner(&mut cmd);
    Ok(Some((Server::spawn(cmd, dir, "-INT")?, port)))
}

pub async fn connect(port: u16) -> Result<Client> {
    let config = format!("host=127.0.0.1 port={port} user=postgres dbname=postgres");
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        match tokio_postgres::connect(&config, NoTls).await {
            Ok((client, connection)) => {
                tokio::spawn(connection);
                return Ok(client);
            }
            Err(_) if Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(100)).await
            }
            Err(e) => bail!("postgres did not accept connections on port {port}: {e}"),
        }
    }
}

impl Store for Postgres {
    async fn insert(&self, worker: usize, first: u64, n: usize, due_ms: i64) -> Result<()> {
        let rows: Vec<(i64, f64)> = (first..first + n as u64)
            .map(|i| (i as i64, due_ms as f64))
            .collect();
        self.insert_rows(worker, &rows).await
    }

    async fn stored(&self) -> Result<u64> {
        let inserted = self.inserted.load(Ordering::SeqCst);
        Ok(inserted.saturating_sub(self.deleted.load(Ordering::SeqCst)))
    }
}
