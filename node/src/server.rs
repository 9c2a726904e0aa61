//! The node's lifecycle and its connections.
//!
//! [`Node::start`] opens the engine, starts the actors' [`Runtime`] on it
//! (catalog, one writer per collection, TTL monitor, WAL syncer), the
//! cursor reaper, and accepts connections. Each connection is a task that
//! first becomes plain or TLS as `net.tls.mode` says (`tls.rs`), then
//! reads one message, hands its command to `command::dispatch` (OP_MSG, or
//! a legacy OP_QUERY on `<db>.$cmd`), writes one reply (none for
//! `moreToCome`), and repeats. A malformed OP_MSG that mongod answers gets
//! an error reply; any other framing error, a message that stalls past
//! `net.read_timeout`, or a new connection silent past
//! `net.handshake_timeout` closes that connection only.
//!
//! [`Node::shutdown`] is ordered and bounded: stop accepting, let every
//! connection finish its current command, then shut the runtime down (TTL
//! monitor between chunks, every collection's writer drained, WAL synced,
//! engine flushed).

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use bson::rawdoc;
use ebb_actors::clock::Clock;
use ebb_actors::runtime::Runtime;
use ebb_config::Config;
use ebb_storage::engine::Engine;
use ebb_storage::engine::rocks::{RocksEngine, RocksOptions};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinSet;
use tracing::Instrument;

use crate::auth::internal::InternalKey;
use crate::command::{ConnInfo, dispatch};
use crate::context::NodeContext;
use crate::error::{CommandError, codes};
use crate::profile;
use crate::tls::{Established, TlsSetup};
use crate::wire::{self, Body, Message, OpMsg, OpQuery};

/// How long shutdown waits for connections to finish their command.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(10);

/// Why the node could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("cannot open storage at {path}: {source}")]
    Storage {
        path: String,
        source: ebb_storage::Error,
    },
    #[error("cannot set up TLS: {0}")]
    Tls(String),
    #[error("cannot read security.key_file: {0}")]
    KeyFile(String),
    #[error("cannot listen for HTTP on {addr}: {source}")]
    HttpBind {
        addr: String,
        source: std::io::Error,
    },
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: String,
        source: std::io::Error,
    },
}

/// What a node is started with.
pub struct NodeOptions {
    pub config: Config,
    pub clock: Arc<dyn Clock>,
    /// The command line, for `getCmdLineOpts`.
    pub argv: Vec<String>,
    /// The node is the whole process (ebbd), started with `argv`: a
    /// replica-set member restarts it to load a snapshot.
    pub own_process: bool,
}

/// A running node.
pub struct Node {
    ctx: Arc<NodeContext>,
    runtime: Runtime,
    local_addr: SocketAddr,
    http_addr: Option<SocketAddr>,
    stop: watch::Sender<bool>,
    accept: tokio::task::JoinHandle<JoinSet<()>>,
    background: Vec<tokio::task::JoinHandle<()>>,
}

impl Node {
    /// Starts a node. Must run inside an actix system.
    pub async fn start(opts: NodeOptions) -> Result<Node, StartError> {
        let config = Arc::new(opts.config);
        let tls = TlsSetup::from_config(&config.net.tls).map_err(StartError::Tls)?;
        let internal_key = match config.security.key_file.as_os_str().is_empty() {
            true => None,
            false => Some(Arc::new(
                InternalKey::read(&config.security.key_file).map_err(StartError::KeyFile)?,
            )),
        };
        let path = config.storage.path.clone();
        let rocks = RocksOptions {
            path: path.clone(),
            block_cache_bytes: config.storage.block_cache.bytes() as usize,
            write_buffer_bytes: config.storage.write_buffer.bytes() as usize,
        };
        let storage_err = |source| StartError::Storage {
            path: path.display().to_string(),
            source,
        };
        let engine: Arc<dyn Engine> = Arc::new(
            tokio::task::spawn_blocking(move || RocksEngine::open(&rocks))
                .await
                .map_err(|e| storage_err(ebb_storage::Error::engine(e.to_string())))?
                .map_err(storage_err)?,
        );
        if config.replication.enabled() {
            let (engine, dir) = (Arc::clone(&engine), crate::repl::snapshots(&config));
            tokio::task::spawn_blocking(move || ebb_repl::snapshot::load_pending(&*engine, &dir))
                .await
                .map_err(|e| storage_err(ebb_storage::Error::engine(e.to_string())))?
                .map_err(storage_err)?;
        }
        let runtime = Runtime::start(engine, &config, opts.clock)
            .await
            .map_err(storage_err)?;
        let ctx = Arc::new(NodeContext::new(
            &runtime,
            config.clone(),
            opts.argv,
            opts.own_process,
            internal_key,
        ));
        crate::command::output::drop_leftover_temps(&ctx).await;

        let addr = format!("{}:{}", config.net.bind, config.net.port);
        let listener = TcpListener::bind(&addr)
            .await
            .map_err(|source| StartError::Bind {
                addr: addr.clone(),
                source,
            })?;
        let local_addr = listener
            .local_addr()
            .map_err(|source| StartError::Bind { addr, source })?;
        let http = crate::http::bind(&config.net.http)
            .await
            .map_err(|source| StartError::HttpBind {
                addr: format!("{}:{}", config.net.http.bind, config.net.http.port),
                source,
            })?;
        if config.replication.enabled() {
            let host = match config.replication.advertise.as_str() {
                "" => format!("{}:{}", config.net.bind, local_addr.port()),
                advertised => advertised.to_owned(),
            };
            let members_tls =
                crate::tls::member_connector(&config.net.tls).map_err(StartError::Tls)?;
            let set = crate::repl::start(&ctx, runtime.shared.engine.clone(), &host, members_tls)
                .await
                .map_err(|e| storage_err(ebb_storage::Error::engine(e.to_string())))?;
            let _ = ctx.replica_set.set(set);
        }
        let (stop, stop_rx) = watch::channel(false);
        let accept = tokio::spawn(accept_loop(listener, tls, ctx.clone(), stop_rx.clone()));
        let mut background = vec![
            tokio::spawn(reap_cursors(ctx.clone(), stop_rx.clone())),
            tokio::spawn(reap_transactions(ctx.clone(), stop_rx.clone())),
            tokio::spawn(profile::record_ttl_deletes(ctx.clone(), stop_rx.clone())),
        ];
        let https = match config.net.http.tls {
            true => Some(crate::tls::http_acceptor(&config.net.tls).map_err(StartError::Tls)?),
            false => None,
        };
        let http_addr = http.map(|(listener, addr)| {
            background.push(tokio::spawn(crate::http::serve(
                listener,
                https,
                ctx.clone(),
                stop_rx,
            )));
            tracing::info!(%addr, "operations endpoint (/metrics, /healthz, /readyz, /expiry) ready");
            addr
        });
        tracing::info!(%local_addr, path = %config.storage.path.display(), "ebbd ready");
        Ok(Node {
            ctx,
            runtime,
            local_addr,
            http_addr,
            stop,
            accept,
            background,
        })
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Where the operations endpoint listens, when `net.http` enables it.
    pub fn http_addr(&self) -> Option<SocketAddr> {
        self.http_addr
    }

    pub fn context(&self) -> &Arc<NodeContext> {
        &self.ctx
    }

    /// Stops the node in order; returns when the engine is flushed, or why
    /// the final WAL sync and flush failed (the daemon then exits non-zero).
    pub async fn shutdown(self) -> Result<(), ebb_storage::Error> {
        tracing::info!("shutting down");
        if let Some(set) = self.ctx.replica_set() {
            set.replica.shutdown().await;
        }
        let _ = self.stop.send(true);
        if let Ok(mut connections) = self.accept.await {
            let drained = tokio::time::timeout(DRAIN_TIMEOUT, async {
                while connections.join_next().await.is_some() {}
            })
            .await;
            if drained.is_err() {
                tracing::warn!("connections still busy after the drain timeout; closing them");
                connections.abort_all();
            }
        }
        for task in self.background {
            task.abort();
        }
        match self.runtime.shutdown().await {
            Ok(()) => {
                tracing::info!("storage flushed; shutdown complete");
                Ok(())
            }
            Err(e) => {
                tracing::error!(error = %e, "flush at shutdown failed");
                Err(e)
            }
        }
    }
}

async fn accept_loop(
    listener: TcpListener,
    tls: TlsSetup,
    ctx: Arc<NodeContext>,
    mut stop: watch::Receiver<bool>,
) -> JoinSet<()> {
    let mut connections = JoinSet::new();
    let mut next_id: u32 = 1;
    loop {
        tokio::select! {
            _ = stop.changed() => break,
            accepted = listener.accept() => {
                let (stream, peer) = match accepted {
                    Ok(a) => a,
                    Err(e) => {
                        tracing::warn!(error = %e, "accept failed");
                        tokio::time::sleep(Duration::from_millis(10)).await;
                        continue;
                    }
                };
                let current = ctx.connections.current.load(Ordering::Relaxed) as usize;
                if current >= ctx.config.net.max_connections {
                    tracing::warn!(%peer, current, "connection refused: max_connections reached");
                    continue;
                }
                let _ = stream.set_nodelay(true);
                let conn = Arc::new(ConnInfo {
                    id: next_id,
                    peer,
                    auth: Default::default(),
                });
                next_id = next_id.wrapping_add(1).max(1);
                let span = tracing::debug_span!("conn", id = conn.id, %peer);
                connections.spawn(
                    connect(stream, tls.clone(), conn, ctx.clone(), stop.clone()).instrument(span),
                );
                // Reap finished connection tasks so the set stays small.
                while connections.try_join_next().is_some() {}
            }
        }
    }
    connections
}

/// Establishes the connection as `net.tls.mode` says (plain or TLS), then
/// serves it.
async fn connect(
    stream: TcpStream,
    tls: TlsSetup,
    conn: Arc<ConnInfo>,
    ctx: Arc<NodeContext>,
    stop: watch::Receiver<bool>,
) {
    let handshake = ctx.config.net.handshake_timeout;
    let established = match tokio::time::timeout(handshake, tls.establish(stream)).await {
        Ok(established) => established,
        Err(_) => {
            tracing::debug!(
                ?handshake,
                "closing a connection whose TLS handshake stalled"
            );
            return;
        }
    };
    match established {
        Ok(Established::Plain(stream)) => {
            let (rd, wr) = stream.into_split();
            serve(rd, wr, conn, ctx, stop).await;
        }
        Ok(Established::Tls(stream)) => {
            let (rd, wr) = crate::tls::split(*stream);
            serve(rd, wr, conn, ctx, stop).await;
        }
        Err(e) => tracing::debug!(error = %e, "connection closed before it was established"),
    }
}

/// The read half of a connection, which can tell when its peer has closed
/// without consuming what the peer sent.
trait Watched: AsyncRead + Unpin {
    /// Resolves once the peer has closed the connection; never, if data is
    /// waiting (the next message has begun) or the transport cannot tell.
    fn closed(&mut self) -> impl Future<Output = ()>;
}

impl Watched for tokio::net::tcp::OwnedReadHalf {
    async fn closed(&mut self) {
        let mut byte = [0u8; 1];
        match self.peek(&mut byte).await {
            Ok(0) | Err(_) => {}
            Ok(_) => std::future::pending().await,
        }
    }
}

/// TLS records cannot be peeked without decrypting them, so a TLS
/// connection watches its socket's hang-up flag instead.
impl Watched for crate::tls::TlsReadHalf {
    async fn closed(&mut self) {
        crate::tls::TlsReadHalf::closed(self).await
    }
}

async fn serve(
    mut rd: impl Watched,
    mut wr: impl AsyncWrite + Unpin,
    conn: Arc<ConnInfo>,
    ctx: Arc<NodeContext>,
    mut stop: watch::Receiver<bool>,
) {
    ctx.connections.current.fetch_add(1, Ordering::Relaxed);
    ctx.connections
        .total_created
        .fetch_add(1, Ordering::Relaxed);
    tracing::debug!("connection open");
    let net = &ctx.config.net;
    let max = net.max_message_bytes as usize;
    let mut reply_id: i32 = 1;
    let mut buf = Vec::new();
    // The first message (the driver's handshake) must arrive whole within
    // the handshake timeout; later ones may be awaited for ever, but once
    // begun must finish within the read timeout.
    let mut first = Some(tokio::time::Instant::now() + net.handshake_timeout);
    loop {
        let read = async {
            let next = wire::read_message(&mut rd, &mut buf, max, net.read_timeout);
            match first.take() {
                Some(deadline) => tokio::time::timeout_at(deadline, next).await.unwrap_or(Err(
                    wire::FramingError::Stalled {
                        received: 0,
                        patience: net.handshake_timeout,
                    },
                )),
                None => next.await,
            }
        };
        // Cancelling a half-read message leaves the stream mid-frame, so a
        // shutdown that interrupts a read closes the connection (break).
        let msg = tokio::select! {
            _ = stop.changed() => break,
            m = read => m,
        };
        let msg = match msg {
            Ok(Some(wire::Incoming::Message(m))) => m,
            Ok(Some(wire::Incoming::Refused { request_id, error })) => {
                tracing::debug!(%error, "refusing a malformed message");
                reply_id = reply_id.wrapping_add(1);
                let reply = CommandError::from(&error).to_reply();
                let reply = wire::encode_op_msg_reply(reply_id, request_id, &reply);
                if let Err(e) = wr.write_all(&reply).await {
                    tracing::debug!(error = %e, "write failed");
                    break;
                }
                continue;
            }
            Ok(None) => break,
            Err(e) => {
                tracing::debug!(error = %e, "closing connection after a framing error");
                break;
            }
        };
        // While the command runs, watch for the client going away: its
        // operations are interrupted, and the loop ends once they stop.
        let handled = handle(&ctx, &conn, msg, &mut reply_id);
        tokio::pin!(handled);
        let reply = tokio::select! {
            reply = &mut handled => reply,
            () = rd.closed() => {
                tracing::debug!("client disconnected during a command; interrupting it");
                ctx.ops.disconnected(conn.id);
                handled.await;
                break;
            }
        };
        let Some(reply) = reply else {
            continue;
        };
        if let Err(e) = wr.write_all(&reply).await {
            tracing::debug!(error = %e, "write failed");
            break;
        }
    }
    ctx.connections.current.fetch_sub(1, Ordering::Relaxed);
    tracing::debug!("connection closed");
}

/// Runs one message; returns the reply bytes, or None when the client
/// asked for no reply.
async fn handle(
    ctx: &Arc<NodeContext>,
    conn: &Arc<ConnInfo>,
    msg: Message,
    reply_id: &mut i32,
) -> Option<Vec<u8>> {
    let request_id = msg.request_id;
    *reply_id = reply_id.wrapping_add(1);
    match msg.body {
        Body::Msg(OpMsg { flags, command }) => {
            let reply = dispatch::run(ctx, conn, None, command).await;
            if flags.more_to_come {
                return None;
            }
            Some(wire::encode_op_msg_reply(*reply_id, request_id, &reply))
        }
        Body::Query(OpQuery {
            full_collection_name,
            query,
            ..
        }) => {
            let reply = match full_collection_name.strip_suffix(".$cmd") {
                Some(db) => dispatch::run_op_query(ctx, conn, db, query).await,
                None => {
                    rawdoc! { "$err": "OP_QUERY is only supported for commands", "code": codes::OP_QUERY_NOT_A_COMMAND, "ok": 0.0 }
                }
            };
            Some(wire::encode_op_reply(*reply_id, request_id, &reply))
        }
    }
}

/// Aborts transactions past their lifetime each second, letting their
/// snapshots and writes go.
async fn reap_transactions(ctx: Arc<NodeContext>, mut stop: watch::Receiver<bool>) {
    loop {
        tokio::select! {
            _ = stop.changed() => return,
            _ = tokio::time::sleep(Duration::from_secs(1)) => {
                ctx.transactions.reap(crate::txn::lifetime(&ctx.shared.params));
            }
        }
    }
}

async fn reap_cursors(ctx: Arc<NodeContext>, mut stop: watch::Receiver<bool>) {
    let every = (ctx.config.cursors.idle_timeout / 10)
        .clamp(Duration::from_millis(100), Duration::from_secs(60));
    loop {
        tokio::select! {
            _ = stop.changed() => return,
            _ = tokio::time::sleep(every) => {
                let reaped = ctx.cursors.reap();
                if reaped > 0 {
                    tracing::debug!(reaped, "reaped idle cursors");
                }
            }
        }
    }
}
