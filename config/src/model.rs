//! The configuration's shape: every section and key with its default (the
//! same values the shipped `ebb.toml` spells out), and the checks a loaded
//! configuration must pass ([`Config::validate`]).

use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::error::ConfigError;
use crate::limits::MAX_MESSAGE_BYTES;
use crate::params::ServerParameters;
use crate::units::{ByteSize, LogFormat, SyncPolicy};

/// The whole configuration. `Config::default()` equals the shipped `ebb.toml`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    pub net: Net,
    pub storage: Storage,
    pub ttl: Ttl,
    pub cursors: Cursors,
    pub log: Log,
    pub security: Security,
    pub replication: Replication,
    /// MongoDB's server parameters under MongoDB's names (`[setParameter]`).
    #[serde(rename = "setParameter")]
    pub set_parameter: ServerParameters,
}

/// `[net]`: where and how clients connect.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Net {
    /// Address to listen on.
    pub bind: String,
    /// TCP port; 0 asks the OS for a free one (used by tests).
    pub port: u16,
    /// Connections beyond this are refused.
    pub max_connections: usize,
    /// Largest accepted wire message, at most [`MAX_MESSAGE_BYTES`].
    pub max_message_bytes: u32,
    /// Listening on an address other than loopback while `security.authorization`
    /// is disabled is refused unless this is true (mongod only warns).
    pub allow_unauthenticated_remote: bool,
    /// A message whose first byte has arrived must be complete within this long,
    /// or the connection is closed (a stalled client cannot hold a connection).
    #[serde(with = "crate::units::humantime_text")]
    pub read_timeout: Duration,
    /// A new connection must finish its TLS handshake and send its first
    /// complete message within this long.
    #[serde(with = "crate::units::humantime_text")]
    pub handshake_timeout: Duration,
    /// `[net.tls]`: encrypted connections.
    pub tls: Tls,
    /// `[net.http]`: the operations endpoint (Prometheus metrics, health).
    pub http: Http,
}

impl Default for Net {
    fn default() -> Self {
        Self {
            bind: "127.0.0.1".to_string(),
            port: 27017,
            max_connections: 10_000,
            max_message_bytes: MAX_MESSAGE_BYTES,
            allow_unauthenticated_remote: false,
            read_timeout: Duration::from_secs(30),
            handshake_timeout: Duration::from_secs(10),
            tls: Tls::default(),
            http: Http::default(),
        }
    }
}

/// `[net.http]`: an HTTP listener serving `/metrics` (Prometheus text format),
/// `/healthz`, `/readyz` and the expiry page under `/expiry`. Off by default.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Http {
    pub enabled: bool,
    /// Address to listen on; the same loopback rule as `net.bind` applies.
    pub bind: String,
    /// TCP port; 0 lets the OS pick a free one.
    pub port: u16,
    /// Serve HTTPS with the node's certificate (`net.tls.certificate_key_file`).
    pub tls: bool,
}

impl Default for Http {
    fn default() -> Self {
        Self {
            enabled: false,
            bind: "127.0.0.1".to_string(),
            port: 28017,
            tls: false,
        }
    }
}

/// Whether `address` (a `net.bind` value) reaches only this machine: a
/// loopback IP or the name `localhost`. Any other name may resolve to a
/// public address, so it counts as remote.
pub fn is_loopback(address: &str) -> bool {
    let address = address.trim();
    let unbracketed = address.trim_start_matches('[').trim_end_matches(']');
    address.eq_ignore_ascii_case("localhost")
        || unbracketed
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// `[net.tls]`: MongoDB's `net.tls` settings.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Tls {
    /// Which connections speak TLS.
    pub mode: TlsMode,
    /// PEM file with the server's certificate chain and private key
    /// (mongod's `certificateKeyFile`); required unless `mode` is disabled.
    pub certificate_key_file: PathBuf,
    /// PEM file of the certificate authorities that sign client certificates
    /// (mongod's `CAFile`); when set, clients must present a certificate it
    /// signed, unless `allow_connections_without_certificates`. Empty: no
    /// client certificates are requested.
    pub ca_file: PathBuf,
    /// With `ca_file`: accept clients that present no certificate (a
    /// certificate presented is still verified).
    pub allow_connections_without_certificates: bool,
}

/// MongoDB's `net.tls.mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum TlsMode {
    /// Plain TCP only.
    #[default]
    #[serde(rename = "disabled")]
    Disabled,
    /// Both TLS and plain connections are accepted.
    #[serde(rename = "allowTLS")]
    AllowTls,
    /// Both are accepted (mongod differs from allowTLS only in its own
    /// outgoing connections, which ebb does not make).
    #[serde(rename = "preferTLS")]
    PreferTls,
    /// TLS connections only.
    #[serde(rename = "requireTLS")]
    RequireTls,
}

/// `[storage]`: the RocksDB instance.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Storage {
    /// Data directory, created if missing.
    pub path: PathBuf,
    /// When the write-ahead log is synced.
    pub sync: SyncPolicy,
    /// Block cache shared by every column family; 0 disables caching.
    /// Memtables are charged to it, so the two together stay within it.
    pub block_cache: ByteSize,
    /// Total memtable budget across all column families: past it, a flush
    /// starts.
    pub write_buffer: ByteSize,
}

impl Default for Storage {
    fn default() -> Self {
        Self {
            path: PathBuf::from("./data"),
            sync: SyncPolicy::Interval(Duration::from_millis(100)),
            block_cache: ByteSize::mib(256),
            write_buffer: ByteSize::mib(64),
        }
    }
}

/// `[ttl]`: how the TTL monitor schedules itself, beyond MongoDB's server parameters.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Ttl {
    /// Wake when the earliest TTL entry falls due; false sleeps MongoDB's plain
    /// `ttlMonitorSleepSecs` between passes.
    pub prompt: bool,
    /// Upper bound on TTL deletions per second; 0 means unlimited. With a
    /// bound, a collection that is entirely due is never deleted at once.
    pub max_deletes_per_sec: u64,
    /// Hide a document from every read and write from the moment a TTL index
    /// makes it due, before the monitor deletes it; false keeps MongoDB's
    /// "visible until deleted".
    pub hide_expired: bool,
    /// The longest the secondary-index entries of expired documents wait
    /// before their collection's writer deletes them in one sorted batch
    /// (the sweep); readers never see them meanwhile. Under
    /// `max_deletes_per_sec` they go with their documents instead.
    #[serde(with = "crate::units::humantime_text")]
    pub sweep_after: Duration,
    /// What expiry does when documents fall due faster than it can delete
    /// them.
    pub overload: Overload,
    /// A `collMod` or `createIndexes` that makes more than this share of a
    /// collection due at once (percent) is logged as a warning and counted
    /// in `/metrics`; it still succeeds, as in mongod.
    pub mass_expiry_percent: u8,
}

impl Default for Ttl {
    fn default() -> Self {
        Self {
            prompt: true,
            max_deletes_per_sec: 0,
            hide_expired: true,
            sweep_after: Duration::from_secs(2),
            overload: Overload::Backlog,
            mass_expiry_percent: 10,
        }
    }
}

/// `ttl.overload`: expiry's policy past its capacity.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Overload {
    /// Writes go on at their pace and due documents wait, hidden from
    /// reads; what the backlog costs in memory stays bounded, and it drains
    /// at full speed once the inflow drops.
    #[default]
    Backlog,
    /// Writes to a collection whose expiry is late wait behind its TTL
    /// chunks, so its inflow slows to what expiry deletes and the lag
    /// stays bounded.
    Throttle,
}

/// `[cursors]`: server-side cursor lifetime.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Cursors {
    /// An idle cursor is closed after this long (MongoDB's `cursorTimeoutMillis`).
    #[serde(with = "crate::units::humantime_text")]
    pub idle_timeout: Duration,
    /// Open cursors one connection may hold; opening another closes that
    /// connection's least recently used one.
    pub max_per_connection: usize,
}

impl Default for Cursors {
    fn default() -> Self {
        Self {
            idle_timeout: Duration::from_secs(10 * 60),
            max_per_connection: 1000,
        }
    }
}

/// `[log]`: what is logged and how.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Log {
    /// A `tracing_subscriber::EnvFilter` directive, e.g. `"info"` or `"info,ebb_storage=debug"`.
    pub level: String,
    /// Line format.
    pub format: LogFormat,
}

impl Default for Log {
    fn default() -> Self {
        Self {
            level: "info".to_string(),
            format: LogFormat::Text,
        }
    }
}

/// `[replication]`: membership of a replica set (mongod's `replication`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Replication {
    /// The set's name (mongod's `replication.replSetName`, `--replSet`); empty
    /// runs a standalone node.
    pub repl_set_name: String,
    /// `host:port` under which clients and the other members reach this one,
    /// when it is not `net.bind` and `net.port` (behind NAT, in a container).
    pub advertise: String,
    /// A leader heard from by no majority for this long stops taking writes,
    /// and a member that heard from no leader for between 1.2 and 1.6 times
    /// this long stands for election.
    #[serde(with = "crate::units::humantime_text")]
    pub election_timeout: Duration,
    /// How often the leader reaches every member, with or without writes.
    #[serde(with = "crate::units::humantime_text")]
    pub heartbeat: Duration,
    /// A primary that applied no write for this long writes a no-op entry,
    /// so that every member's `lastWrite` stays fresh for drivers'
    /// `maxStalenessSeconds` (mongod's `periodicNoopIntervalSecs`).
    #[serde(with = "crate::units::humantime_text")]
    pub periodic_noop: Duration,
    /// A member snapshots its state (an engine checkpoint under
    /// `storage.path`) after this many log entries since its last one, and
    /// purges the log the snapshot holds.
    pub snapshot_every: u64,
    /// Entries a snapshot holds that stay in the log, so that a member a
    /// little behind catches up from the log instead of a snapshot.
    pub log_kept: u64,
    /// The change log's window, which change streams read (mongod's
    /// `replication.oplogSizeMB`): past about this many megabytes, the
    /// oldest changes are trimmed away, and a stream that needs them gets
    /// ChangeStreamHistoryLost.
    pub oplog_size_mb: u64,
    /// Changes kept at least this long whatever the window's size (mongod's
    /// `storage.oplogMinRetentionHours`).
    #[serde(with = "crate::units::humantime_text")]
    pub oplog_min_retention: Duration,
    /// Test-only: the member takes `configureFailPoint` for
    /// `ebbCutReplication`, which cuts its messages to and from the other
    /// members (the fault harness partitions members with it).
    pub fault_points: bool,
}

impl Default for Replication {
    fn default() -> Self {
        Self {
            repl_set_name: String::new(),
            advertise: String::new(),
            election_timeout: Duration::from_secs(2),
            heartbeat: Duration::from_millis(500),
            periodic_noop: Duration::from_secs(10),
            snapshot_every: 100_000,
            log_kept: 10_000,
            oplog_size_mb: 1024,
            oplog_min_retention: Duration::ZERO,
            fault_points: false,
        }
    }
}

impl Replication {
    /// Whether this node is a replica-set member.
    pub fn enabled(&self) -> bool {
        !self.repl_set_name.is_empty()
    }
}

/// `[security]`: who may connect and what they may do.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Security {
    /// MongoDB's `security.authorization`: when enabled, every command but the
    /// handshake and authentication ones needs an authenticated user whose roles
    /// allow it.
    pub authorization: Authorization,
    /// MongoDB's `security.keyFile`: the shared key replica-set members
    /// authenticate to each other with; empty for none. Setting it implies
    /// `authorization = "enabled"`, as in mongod.
    pub key_file: PathBuf,
    /// MongoDB's `security.javascriptEnabled`: whether `$where`,
    /// `$function` and `$accumulator` run server-side JavaScript; off, they
    /// are refused as a mongod started with `--noscripting` refuses them.
    pub javascript_enabled: bool,
}

impl Default for Security {
    fn default() -> Self {
        Security {
            authorization: Authorization::default(),
            key_file: PathBuf::new(),
            javascript_enabled: true,
        }
    }
}

/// Whether commands are checked against the authenticated users' roles.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Authorization {
    /// Every client may run every command (MongoDB's default).
    #[default]
    Disabled,
    Enabled,
}

impl Config {
    /// Applies what one setting implies for another: a key file turns
    /// authorization on, as mongod's `security.keyFile` does. Loading calls
    /// this before [`Config::validate`].
    pub fn settle(&mut self) {
        if !self.security.key_file.as_os_str().is_empty() {
            self.security.authorization = Authorization::Enabled;
        }
    }

    /// Checks the ranges the types cannot express. Loading calls this; call it again after
    /// changing a `Config` in code.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let net = &self.net;
        require(!net.bind.trim().is_empty(), "net.bind", "must not be empty")?;
        let open = self.security.authorization == Authorization::Disabled
            && !net.allow_unauthenticated_remote;
        for (key, address) in [("net.bind", &net.bind), ("net.http.bind", &net.http.bind)] {
            require(
                !open || is_loopback(address),
                key,
                format!(
                    "\"{address}\" is not a loopback address and security.authorization is \
                     disabled: anyone who can reach it could read and drop every database. \
                     Enable authorization (--auth), bind 127.0.0.1, or set \
                     net.allow_unauthenticated_remote = true"
                ),
            )?;
        }
        require(
            !net.read_timeout.is_zero(),
            "net.read_timeout",
            "must be greater than 0",
        )?;
        require(
            !net.handshake_timeout.is_zero(),
            "net.handshake_timeout",
            "must be greater than 0",
        )?;
        require(
            net.max_connections > 0,
            "net.max_connections",
            "must be greater than 0",
        )?;
        require(
            (1..=MAX_MESSAGE_BYTES).contains(&net.max_message_bytes),
            "net.max_message_bytes",
            format!(
                "must be between 1 and {MAX_MESSAGE_BYTES}, got {}",
                net.max_message_bytes
            ),
        )?;
        require(
            net.tls.mode == TlsMode::Disabled
                || !net.tls.certificate_key_file.as_os_str().is_empty(),
            "net.tls.certificate_key_file",
            "must be set when net.tls.mode is not \"disabled\"",
        )?;
        require(
            !net.http.tls || !net.tls.certificate_key_file.as_os_str().is_empty(),
            "net.http.tls",
            "needs net.tls.certificate_key_file, the certificate the listener presents",
        )?;
        let repl = &self.replication;
        require(
            repl.heartbeat * 5 < repl.election_timeout * 2 && !repl.heartbeat.is_zero(),
            "replication.heartbeat",
            "must be greater than 0 and shorter than two fifths of replication.election_timeout",
        )?;
        require(
            !repl.periodic_noop.is_zero(),
            "replication.periodic_noop",
            "must be greater than 0",
        )?;
        require(
            repl.snapshot_every > 0,
            "replication.snapshot_every",
            "must be greater than 0",
        )?;
        require(
            !repl.enabled()
                || self.security.authorization == Authorization::Disabled
                || !self.security.key_file.as_os_str().is_empty(),
            "replication.repl_set_name",
            "a replica set with security.authorization enabled needs security.key_file: \
             members authenticate to each other with it",
        )?;
        require(
            !repl.enabled()
                || !matches!(net.tls.mode, TlsMode::PreferTls | TlsMode::RequireTls)
                || !net.tls.ca_file.as_os_str().is_empty(),
            "net.tls.ca_file",
            "a replica set with net.tls.mode \"preferTLS\" or \"requireTLS\" needs it: \
             members connect to each other over TLS and verify each other's certificates \
             against it",
        )?;
        require(
            (1..=100).contains(&self.ttl.mass_expiry_percent),
            "ttl.mass_expiry_percent",
            "must be between 1 and 100",
        )?;
        let storage = &self.storage;
        require(
            !storage.path.as_os_str().is_empty(),
            "storage.path",
            "must not be empty",
        )?;
        require(
            storage.sync != SyncPolicy::Interval(Duration::ZERO),
            "storage.sync",
            r#"the interval must be greater than 0 (use "always" to sync every write)"#,
        )?;
        require(
            storage.write_buffer.bytes() > 0,
            "storage.write_buffer",
            "must be greater than 0",
        )?;
        require(
            !self.cursors.idle_timeout.is_zero(),
            "cursors.idle_timeout",
            "must be greater than 0",
        )?;
        require(
            self.cursors.max_per_connection > 0,
            "cursors.max_per_connection",
            "must be greater than 0",
        )?;
        tracing_subscriber::EnvFilter::try_new(&self.log.level)
            .map(drop)
            .map_err(|error| {
                ConfigError::invalid(
                    "log.level",
                    format!("not a log filter ({error}): \"{}\"", self.log.level),
                )
            })
    }
}

fn require(holds: bool, key: &str, message: impl Into<String>) -> Result<(), ConfigError> {
    if holds {
        Ok(())
    } else {
        Err(ConfigError::invalid(key, message))
    }
}
