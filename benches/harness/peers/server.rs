//! A peer's server process: found on the machine (never installed here; see
//! `benches/install-peers.sh`), started on a free loopback port with a
//! temporary data directory, stopped when dropped.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use anyhow::{Context, Result};

pub struct Server {
    child: Child,
    /// Signal that stops the server promptly (PostgreSQL's SIGTERM waits
    /// for clients; SIGINT does not).
    stop_signal: &'static str,
    _dir: tempfile::TempDir,
}

impl Server {
    /// Starts `cmd` (already given its arguments, among them `dir`, which
    /// is removed when the server is dropped).
    pub fn spawn(
        mut cmd: Command,
        dir: tempfile::TempDir,
        stop_signal: &'static str,
    ) -> Result<Server> {
        let child = cmd
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .with_context(|| format!("starting {cmd:?}"))?;
        Ok(Server {
            child,
            stop_signal,
            _dir: dir,
        })
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args([self.stop_signal, &self.child.id().to_string()])
            .status();
        let _ = self.child.wait();
    }
}

/// A loopback port nothing listens on now.
pub fn free_port() -> Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

/// `name` on the PATH, else in the first of `dirs` (glob-free: each is
/// a directory) that holds it.
pub fn find_binary(name: &str, dirs: &[PathBuf]) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(dirs.iter().cloned())
        .map(|d| d.join(name))
        .find(|p| is_executable(p))
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    p.metadata()
        .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}
