//! `ebbd`: the ebb daemon.
//!
//! `ebbd` with no arguments starts on 127.0.0.1:27017 with its data in
//! `./data`; `--config ebb.toml` reads a configuration file (environment
//! variables `EBB_…` and the flags below override it). SIGINT or SIGTERM
//! shut it down in order; it exits 0 when the final flush succeeded and 1
//! when it failed.

use std::path::PathBuf;
use std::sync::Arc;

use clap::Parser;
use ebb_actors::clock::SystemClock;
use ebb_config::{Authorization, Config, LogFormat, Overrides};
use ebb_node::{Node, NodeOptions};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

/// jemalloc serves every allocation of the process, RocksDB's C++ ones
/// included (the unprefixed `malloc`). glibc's allocator spent 12 % of
/// ebbd's samples under churn: memory allocated on one thread (a TTL plan,
/// an insert's documents) and freed on another kept its arenas in their
/// slow paths.
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// jemalloc's options, read when it starts: a background thread returns
/// freed pages to the system within about a second instead of whenever
/// the allocating threads get to it, so ebbd's resident memory follows
/// what it holds (after a burst of expiry, RSS stayed hundreds of MiB
/// above it for tens of seconds).
#[unsafe(export_name = "malloc_conf")]
static MALLOC_CONF: &[u8; 43] = b"background_thread:true,dirty_decay_ms:1000\0";

#[derive(Parser, Debug)]
#[command(
    name = "ebbd",
    version,
    about = "ebb: a MongoDB-compatible document store with first-class expiry"
)]
struct Cli {
    /// TOML configuration file.
    #[arg(long, short = 'c')]
    config: Option<PathBuf>,
    /// Address to listen on (overrides net.bind).
    #[arg(long)]
    bind: Option<String>,
    /// Port to listen on (overrides net.port).
    #[arg(long)]
    port: Option<u16>,
    /// Data directory (overrides storage.path; also `--dbpath`, mongod's
    /// spelling).
    #[arg(long = "db-path", alias = "dbpath")]
    db_path: Option<PathBuf>,
    /// Require authentication and check every command against the user's roles
    /// (sets security.authorization = "enabled", as mongod's --auth).
    #[arg(long)]
    auth: bool,
    /// Run as a member of the named replica set (overrides
    /// replication.repl_set_name, as mongod's --replSet).
    #[arg(long = "replSet")]
    repl_set: Option<String>,
    /// The key replica-set members authenticate to each other with
    /// (overrides security.key_file, as mongod's --keyFile; implies --auth).
    #[arg(long = "keyFile")]
    key_file: Option<PathBuf>,
    /// Run no server-side JavaScript (sets security.javascript_enabled =
    /// false, as mongod's --noscripting).
    #[arg(long = "noscripting")]
    no_scripting: bool,
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let overrides = Overrides {
        config_file: cli.config,
        bind: cli.bind,
        port: cli.port,
        db_path: cli.db_path,
        authorization: cli.auth.then_some(Authorization::Enabled),
        repl_set_name: cli.repl_set,
        key_file: cli.key_file,
        no_scripting: cli.no_scripting,
    };
    let loaded = match Config::load(&overrides) {
        Ok(loaded) => loaded,
        Err(e) => {
            eprintln!("ebbd: {e}");
            std::process::exit(2);
        }
    };
    let config = loaded.config;
    init_logging(&config);
    for var in loaded.ignored_env {
        tracing::warn!(
            %var,
            "ignoring environment variable: it names no setting \
             (settings are EBB_<SECTION>__<KEY>, e.g. EBB_NET__PORT)"
        );
    }
    let argv: Vec<String> = std::env::args().collect();
    let system = actix_rt::System::with_tokio_rt(|| {
        tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .expect("tokio runtime")
    });
    system.block_on(async move {
        let node = Node::start(NodeOptions {
            config,
            clock: Arc::new(SystemClock),
            argv,
            own_process: true,
        })
        .await?;
        tokio::select! {
            () = wait_for_signal() => {}
            () = node.context().shutdown_requested.notified() => {}
        }
        // A node whose final flush failed may have lost acknowledged writes
        // that only the WAL holds: say so with the exit code.
        node.shutdown()
            .await
            .map_err(|e| anyhow::anyhow!("shutdown did not complete: {e}"))
    })
}

fn init_logging(config: &Config) {
    // The consensus library reports every vote and append at `info`; it
    // speaks at `warn` unless the directive names it.
    let level = &config.log.level;
    let filter = match level.contains("openraft") {
        true => tracing_subscriber::EnvFilter::new(level),
        false => tracing_subscriber::EnvFilter::new(format!("{level},openraft=warn")),
    };
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let stderr = tracing_subscriber::fmt::layer()
        .with_ansi(ansi)
        .with_writer(std::io::stderr);
    // What the filter lets through goes to stderr and to getLog's lines.
    let registry = tracing_subscriber::registry()
        .with(filter)
        .with(ebb_node::recent_log::RecentLog);
    match config.log.format {
        LogFormat::Json => registry.with(stderr.json()).init(),
        LogFormat::Text => registry.with(stderr).init(),
    }
}

async fn wait_for_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate()).expect("SIGTERM handler");
    tokio::select! {
        _ = tokio::signal::ctrl_c() => tracing::info!("SIGINT received"),
        _ = term.recv() => tracing::info!("SIGTERM received"),
    }
}
