//! Small administrative commands: `ping`, `shutdown`, `fsync`, `buildInfo`,
//! `hostInfo`, `whatsmyuri`, `getLog`, `getCmdLineOpts` and the session commands
//! (`endSessions`, `killSessions`, `refreshSessions`, `killAllSessions`).

use bson::{RawBsonRef, doc};

use super::common::{Request, ok};
use crate::args::Args;
use crate::auth::users::UserName;
use crate::error::{CommandError, CommandResult, codes};

/// The MongoDB version ebb reports (the feature level it implements).
pub const VERSION: &str = "7.0.0";

pub async fn ping(_req: Request) -> CommandResult {
    ok(doc! {})
}

/// `shutdown`: stops the node as SIGTERM does (in order, exit code 0). On
/// a standalone, `force` and `timeoutSecs` change nothing in mongod either
/// (they concern replica-set primaries and mongos quiescing), so they are
/// accepted and checked for type only.
pub async fn shutdown(req: Request) -> CommandResult {
    if req.db != "admin" {
        return Err(CommandError::new(
            codes::UNAUTHORIZED,
            "shutdown may only be run against the admin database.",
        ));
    }
    let args = Args::parse(&req.body, &["force", "timeoutSecs"])?;
    args.bool("force")?;
    args.non_negative("timeoutSecs")?;
    tracing::info!(client = %req.conn.peer, "shutdown command received");
    req.node.shutdown_requested.notify_one();
    ok(doc! {})
}

/// `fsync`: syncs the WAL, so every write acknowledged so far is durable,
/// and flushes the memtables to table files. `lock: true` (holding writes
/// out while files are copied) is refused: ebb cannot hold writes out.
pub async fn fsync(req: Request) -> CommandResult {
    if req.db != "admin" {
        return Err(CommandError::new(
            codes::UNAUTHORIZED,
            "fsync may only be run against the admin database.",
        ));
    }
    let args = Args::parse(&req.body, &["lock"])?;
    if args.bool("lock")?.unwrap_or(false) {
        return Err(CommandError::new(
            codes::NOT_IMPLEMENTED,
            "ebb cannot lock writes out (fsync with lock: true)",
        ));
    }
    let engine = req.node.shared.engine.clone();
    tokio::task::spawn_blocking(move || {
        engine.sync_wal()?;
        engine.flush()
    })
    .await
    .map_err(|_| CommandError::internal())??;
    ok(doc! { "numFiles": 1 })
}

pub async fn build_info(_req: Request) -> CommandResult {
    ok(doc! {
        "version": VERSION,
        "versionArray": [7, 0, 0, 0],
        "gitVersion": env!("CARGO_PKG_VERSION"),
        "modules": [],
        "allocator": "system",
        "javascriptEngine": "none",
        "sysInfo": "deprecated",
        "bits": 64,
        "debug": cfg!(debug_assertions),
        "maxBsonObjectSize": ebb_config::limits::MAX_BSON_OBJECT_BYTES as i32,
        "storageEngines": ["rocksdb"],
        "buildEnvironment": { "target_os": std::env::consts::OS, "target_arch": std::env::consts::ARCH },
    })
}

pub async fn host_info(_req: Request) -> CommandResult {
    let cores = std::thread::available_parallelism()
        .map(|n| n.get() as i32)
        .unwrap_or(1);
    ok(doc! {
        "system": {
            "currentTime": bson::DateTime::now(),
            "hostname": hostname(),
            "cpuAddrSize": 64,
            "numCores": cores,
            "cpuArch": std::env::consts::ARCH,
        },
        "os": { "type": std::env::consts::OS, "name": std::env::consts::OS, "version": "" },
        "extra": {},
    })
}

/// The machine's host name, for `hostInfo` and `serverStatus`.
pub fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_owned())
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "localhost".to_owned())
}

pub async fn whats_my_uri(req: Request) -> CommandResult {
    ok(doc! { "you": req.conn.peer.to_string() })
}

pub async fn get_log(req: Request) -> CommandResult {
    match req.body.get("getLog")? {
        Some(RawBsonRef::String("*")) => ok(doc! { "names": ["global", "startupWarnings"] }),
        Some(RawBsonRef::String("global")) => {
            let (written, lines) = crate::recent_log::lines();
            ok(doc! { "totalLinesWritten": written as i64, "log": lines })
        }
        // ebb keeps no separate list of startup warnings: its warnings,
        // those at start included, are in the global log.
        Some(RawBsonRef::String("startupWarnings")) => {
            ok(doc! { "totalLinesWritten": 0, "log": [] })
        }
        Some(RawBsonRef::String(other)) => Err(CommandError::bad_value(format!(
            "no RecentEntries named: {other}"
        ))),
        _ => Err(CommandError::new(
            crate::error::codes::TYPE_MISMATCH,
            "Argument to getLog must be of type String",
        )),
    }
}

pub async fn get_cmd_line_opts(req: Request) -> CommandResult {
    let cfg = &req.node.config;
    ok(doc! {
        "argv": req.node.argv.clone(),
        "parsed": {
            "net": { "bindIp": cfg.net.bind.clone(), "port": i32::from(cfg.net.port) },
            "storage": { "dbPath": cfg.storage.path.display().to_string() },
        },
    })
}

/// The sessions a session command lists (its first value, an array), and
/// the command's name for its errors. A session holds no server state in
/// ebb but its cursors, which end with it (mongod kills a session's cursors
/// when the session ends).
fn listed(req: &Request) -> CommandResult<(&str, &bson::RawArray)> {
    let args = Args::parse(&req.body, &[])?;
    let name = args.command_name();
    match args.command_value() {
        RawBsonRef::Array(list) => Ok((name, list)),
        other => Err(CommandError::new(
            codes::TYPE_MISMATCH,
            format!(
                "BSON field '{name}' is the wrong type '{}', expected type 'array'",
                crate::args::type_name(&other)
            ),
        )),
    }
}

/// The ids of the sessions `listed` names (`{id: UUID}` each); `what`
/// names the list in errors.
fn session_ids(listed: &bson::RawArray, what: &str) -> CommandResult<Vec<Vec<u8>>> {
    let mut ids = Vec::new();
    for session in listed {
        let id = session?
            .as_document()
            .and_then(|s| s.get_binary("id").ok())
            .ok_or_else(|| {
                CommandError::new(
                    codes::TYPE_MISMATCH,
                    format!("BSON field '{what}' must list session ids ({{id: UUID}})"),
                )
            })?;
        ids.push(id.bytes.to_vec());
    }
    Ok(ids)
}

/// Logs the cursors a session command closed, and replies.
fn closed_cursors(closed: usize, name: &str) -> CommandResult {
    if closed > 0 {
        tracing::debug!(
            closed,
            command = name,
            "closed the cursors of ended sessions"
        );
    }
    ok(doc! {})
}

/// `endSessions` / `killSessions`: ends the listed sessions and their
/// cursors.
pub async fn end_sessions(req: Request) -> CommandResult {
    let (name, listed) = listed(&req)?;
    let ids = session_ids(listed, name)?;
    req.node.sessions.end(&ids);
    req.node.transactions.end_sessions(&ids);
    closed_cursors(req.node.cursors.end_sessions(&ids), name)
}

/// `refreshSessions`: marks the listed sessions used now. Cursors time out
/// on their own idle clock, so nothing else changes.
pub async fn refresh_sessions(req: Request) -> CommandResult {
    let (name, listed) = listed(&req)?;
    let now = req.node.shared.clock.now_millis();
    let user = req.conn.auth.user().map(|u| u.name);
    for id in session_ids(listed, name)? {
        if req.node.sessions.touch(&id, user.clone(), now).is_err() {
            return Err(CommandError::new(
                codes::TOO_MANY_LOGICAL_SESSIONS,
                "Unable to add session into the cache because the number of active \
                 sessions is too high",
            ));
        }
    }
    ok(doc! {})
}

/// `killAllSessions`: ends every session (an empty list), or those of the
/// listed users, and their cursors.
pub async fn kill_all_sessions(req: Request) -> CommandResult {
    let (name, listed) = listed(&req)?;
    let closed = if listed.is_empty() {
        let ended = req.node.sessions.end_where(|_| true);
        req.node.transactions.end_sessions(&ended);
        req.node.cursors.end_all_sessions()
    } else {
        let users = user_patterns(listed, "killAllSessions")?;
        let ended = req
            .node
            .sessions
            .end_where(|s| s.user.as_ref().is_some_and(|u| users.contains(u)));
        req.node.transactions.end_sessions(&ended);
        req.node.cursors.end_sessions(&ended)
    };
    closed_cursors(closed, name)
}

/// A list of `{user, db}` documents naming users (`killAllSessions`'
/// patterns, `$listLocalSessions`' `users`); `what` names the list in
/// errors.
pub fn user_patterns(list: &bson::RawArray, what: &str) -> CommandResult<Vec<UserName>> {
    let mut users = Vec::new();
    for pattern in list {
        let pattern = pattern?.as_document().ok_or_else(|| {
            CommandError::new(
                codes::TYPE_MISMATCH,
                format!("{what} takes documents {{user, db}}"),
            )
        })?;
        match (pattern.get_str("user"), pattern.get_str("db")) {
            (Ok(user), Ok(db)) => users.push(UserName::new(user, db)),
            _ => {
                return Err(CommandError::new(
                    codes::FAILED_TO_PARSE,
                    format!("{what} entries must name a 'user' and a 'db'"),
                ));
            }
        }
    }
    Ok(users)
}
