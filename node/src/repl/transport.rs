//! How members' consensus messages travel: as the `ebbRaft` command on the
//! port clients use, over connections this member keeps to each other one.
//!
//! A connection carries one message at a time; a member that is written to
//! while a message is out opens another. A connection that failed is
//! dropped, so the next message reconnects. Under `net.tls` `preferTLS`
//! or `requireTLS` connections are TLS (`tls::member_connector`). With
//! `security.key_file` each new connection first authenticates as the
//! internal user (SCRAM-SHA-256, checking the other member's signature
//! too), as mongod's members do. The test-only fail point
//! `ebbCutReplication` stops every message both ways (`cut`).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bson::{RawBsonRef, RawDocumentBuf, rawdoc};
use ebb_repl::{Rpc, Transport};
use futures::future::BoxFuture;
use rustls_pki_types::ServerName;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

use crate::auth::internal::{self, InternalKey};
use crate::error::codes;
use crate::wire::encode_op_msg_reply;

/// Idle connections kept per member.
const POOL: usize = 4;

/// A connection to another member: plain or TLS.
trait Connection: AsyncRead + AsyncWrite + Unpin + Send {}

impl<T: AsyncRead + AsyncWrite + Unpin + Send> Connection for T {}

type Stream = Box<dyn Connection>;

/// Messages to other members over their client port.
#[derive(Default, Clone)]
pub struct WireTransport {
    /// The key connections authenticate with, when the set has one.
    key: Option<Arc<InternalKey>>,
    /// How connections become TLS, when they do.
    tls: Option<TlsConnector>,
    idle: Arc<Mutex<HashMap<String, Vec<Stream>>>>,
    next_id: Arc<AtomicI32>,
    /// The `ebbCutReplication` fail point: nothing is sent while it is on.
    pub cut: Arc<AtomicBool>,
    /// Set when a member answers that this one is not in the set's
    /// configuration.
    pub removed: Arc<AtomicBool>,
}

fn other(e: impl std::fmt::Display) -> std::io::Error {
    std::io::Error::other(e.to_string())
}

/// Sends `command` on `stream` and reads the reply's body.
async fn round_trip(
    stream: &mut Stream,
    request_id: i32,
    command: &RawDocumentBuf,
) -> std::io::Result<RawDocumentBuf> {
    let frame = encode_op_msg_reply(request_id, 0, command);
    stream.write_all(&frame).await?;
    let mut len = [0u8; 4];
    stream.read_exact(&mut len).await?;
    let len = i32::from_le_bytes(len);
    // Header (16), flag bits (4), one section kind byte, then the body.
    if len < 21 {
        return Err(other(format!("a reply of {len} bytes")));
    }
    let mut rest = vec![0u8; len as usize - 4];
    stream.read_exact(&mut rest).await?;
    RawDocumentBuf::from_bytes(rest[17..].to_vec()).map_err(other)
}

impl WireTransport {
    /// A transport whose connections authenticate with `key` and go over
    /// TLS through `tls`, each if given.
    pub fn new(key: Option<Arc<InternalKey>>, tls: Option<TlsConnector>) -> WireTransport {
        WireTransport {
            key,
            tls,
            ..WireTransport::default()
        }
    }

    /// A new connection to `host`, over TLS when the node's mode says so.
    async fn connect(&self, host: &str) -> std::io::Result<Stream> {
        let tcp = TcpStream::connect(host).await?;
        tcp.set_nodelay(true)?;
        let Some(tls) = &self.tls else {
            return Ok(Box::new(tcp));
        };
        let name = host.rsplit_once(':').map_or(host, |(name, _port)| name);
        let name = name.trim_start_matches('[').trim_end_matches(']');
        let name = ServerName::try_from(name.to_owned()).map_err(other)?;
        Ok(Box::new(tls.connect(name, tcp).await?))
    }

    /// Authenticates a new connection as the internal user.
    async fn authenticate(&self, stream: &mut Stream, key: &InternalKey) -> std::io::Result<()> {
        let binary = |bytes: Vec<u8>| bson::Binary {
            subtype: bson::spec::BinarySubtype::Generic,
            bytes,
        };
        let payload = |reply: &RawDocumentBuf| -> std::io::Result<Vec<u8>> {
            match reply.get("payload").map_err(other)? {
                Some(RawBsonRef::Binary(b)) => Ok(b.bytes.to_vec()),
                _ => Err(other(reply.get_str("errmsg").unwrap_or("no SASL payload"))),
            }
        };
        let (mut conversation, first) = key.client();
        let start = rawdoc! {
            "saslStart": 1,
            "mechanism": internal::MECHANISM.name(),
            "payload": binary(first),
            "options": { "skipEmptyExchange": true },
            "$db": internal::DB,
        };
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let reply = round_trip(stream, id, &start).await?;
        let client_final = conversation.prove(&payload(&reply)?).map_err(other)?;
        let proof = rawdoc! {
            "saslContinue": 1,
            "conversationId": 1,
            "payload": binary(client_final),
            "$db": internal::DB,
        };
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let reply = round_trip(stream, id, &proof).await?;
        conversation.verify(&payload(&reply)?).map_err(other)?;
        if reply.get_bool("done").ok() != Some(true) {
            return Err(other("the SASL conversation did not end"));
        }
        Ok(())
    }

    async fn call_on(&self, host: String, rpc: Rpc, body: Vec<u8>) -> std::io::Result<Vec<u8>> {
        if self.cut.load(Ordering::Relaxed) {
            self.idle.lock().unwrap().clear();
            return Err(std::io::Error::new(
                std::io::ErrorKind::ConnectionRefused,
                "replication is cut (fail point ebbCutReplication)",
            ));
        }
        let pooled = self.idle.lock().unwrap().get_mut(&host).and_then(Vec::pop);
        let mut stream = match pooled {
            Some(s) => s,
            None => {
                let mut s = self.connect(&host).await?;
                if let Some(key) = &self.key {
                    self.authenticate(&mut s, key)
                        .await
                        .map_err(|e| other(format!("authentication to {host} failed: {e}")))?;
                }
                s
            }
        };
        let command = rawdoc! {
            "ebbRaft": rpc.name(),
            "body": bson::Binary { subtype: bson::spec::BinarySubtype::Generic, bytes: body },
            "$db": "admin",
        };
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let reply = round_trip(&mut stream, id, &command).await?;
        match reply.get("body").map_err(other)? {
            Some(RawBsonRef::Binary(b)) => {
                let answer = b.bytes.to_vec();
                let mut idle = self.idle.lock().unwrap();
                let kept = idle.entry(host).or_default();
                if kept.len() < POOL {
                    kept.push(stream);
                }
                Ok(answer)
            }
            _ => {
                if reply.get_i32("code").ok() == Some(codes::INVALID_REPLICA_SET_CONFIG) {
                    self.removed.store(true, Ordering::Relaxed);
                }
                let why = reply.get_str("errmsg").unwrap_or("no answer");
                Err(other(format!("{} refused: {why}", rpc.name())))
            }
        }
    }
}

impl Transport for WireTransport {
    fn call(
        &self,
        host: &str,
        rpc: Rpc,
        body: Vec<u8>,
        timeout: Duration,
    ) -> BoxFuture<'static, std::io::Result<Vec<u8>>> {
        let this = self.clone();
        let host = host.to_owned();
        Box::pin(async move {
            tokio::time::timeout(timeout, this.call_on(host, rpc, body))
                .await
                .map_err(|_| std::io::Error::new(std::io::ErrorKind::TimedOut, "timed out"))?
        })
    }
}
