//! TLS on the node's port, as mongod's `net.tls`: the server configuration
//! built once from `[net.tls]` (certificate chain and key, optional client
//! certificate authorities), and what each accepted connection becomes
//! under the mode: plain, TLS, or — with `allowTLS`/`preferTLS` — whichever
//! the client's first bytes show it speaks.
//!
//! Also the HTTPS acceptor of the operators' listener (`http_acceptor`,
//! `net.http.tls`), and the client side replica-set members connect to each other with
//! (`member_connector`): under `preferTLS` and `requireTLS`, as mongod's
//! members, over TLS, trusting `ca_file` and presenting the node's own
//! certificate.
//!
//! rustls with the ring provider (the one the `mongodb` driver builds too).
//! This module knows nothing of messages or commands: it hands the server a
//! byte stream.

use std::os::fd::{AsRawFd, RawFd};
use std::path::Path;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use ebb_config::{Tls, TlsMode};
use rustls::server::{ServerConfig, WebPkiClientVerifier};
use rustls::{ClientConfig, RootCertStore};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use tokio::io::{AsyncRead, ReadBuf, ReadHalf, WriteHalf};
use tokio::net::TcpStream;
use tokio_rustls::server::TlsStream;
use tokio_rustls::{TlsAcceptor, TlsConnector};

/// How long a new connection has to show (and finish) its TLS handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// The node's TLS setup: the mode and, unless disabled, the acceptor.
#[derive(Clone)]
pub struct TlsSetup {
    mode: TlsMode,
    acceptor: Option<TlsAcceptor>,
}

/// A connection after the mode had its say.
pub enum Established {
    Plain(TcpStream),
    Tls(Box<TlsStream<TcpStream>>),
}

impl TlsSetup {
    /// Reads the certificate, key and CA files the config names.
    pub fn from_config(tls: &Tls) -> Result<TlsSetup, String> {
        if tls.mode == TlsMode::Disabled {
            return Ok(TlsSetup {
                mode: tls.mode,
                acceptor: None,
            });
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = ServerConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(|e| format!("TLS: {e}"))?;
        let builder = if tls.ca_file.as_os_str().is_empty() {
            builder.with_no_client_auth()
        } else {
            let mut verifier =
                WebPkiClientVerifier::builder_with_provider(Arc::new(roots(tls)?), provider);
            if tls.allow_connections_without_certificates {
                verifier = verifier.allow_unauthenticated();
            }
            let verifier = verifier
                .build()
                .map_err(|e| format!("net.tls.ca_file {}: {e}", tls.ca_file.display()))?;
            builder.with_client_cert_verifier(verifier)
        };
        let file = &tls.certificate_key_file;
        let key = private_key(file)?;
        let config = builder
            .with_single_cert(certificates(file)?, key)
            .map_err(|e| format!("net.tls.certificate_key_file {}: {e}", file.display()))?;
        Ok(TlsSetup {
            mode: tls.mode,
            acceptor: Some(TlsAcceptor::from(Arc::new(config))),
        })
    }

    /// Turns an accepted TCP connection into what the mode says it is.
    pub async fn establish(&self, stream: TcpStream) -> std::io::Result<Established> {
        let Some(acceptor) = &self.acceptor else {
            return Ok(Established::Plain(stream));
        };
        let handshake = async {
            let tls = match self.mode {
                TlsMode::Disabled => false,
                TlsMode::RequireTls => true,
                TlsMode::AllowTls | TlsMode::PreferTls => starts_tls_handshake(&stream).await?,
            };
            if !tls {
                return Ok(Established::Plain(stream));
            }
            let tls = acceptor.accept(stream).await?;
            Ok(Established::Tls(Box::new(tls)))
        };
        tokio::time::timeout(HANDSHAKE_TIMEOUT, handshake)
            .await
            .map_err(|_| std::io::Error::new(std::io::ErrorKind::TimedOut, "TLS handshake"))?
    }
}

/// The acceptor of the operators' HTTP listener under `net.http.tls`: the
/// node's certificate, and no client certificates (browsers present none).
pub fn http_acceptor(tls: &Tls) -> Result<TlsAcceptor, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let file = &tls.certificate_key_file;
    let key = private_key(file)?;
    let mut config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS: {e}"))?
        .with_no_client_auth()
        .with_single_cert(certificates(file)?, key)
        .map_err(|e| format!("net.tls.certificate_key_file {}: {e}", file.display()))?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(TlsAcceptor::from(Arc::new(config)))
}

/// How this node connects to the other members of its set: over TLS
/// under `preferTLS` and `requireTLS` (mongod's members do; under
/// `allowTLS` they connect plain), trusting the certificates `ca_file`
/// signed and presenting the node's own. None: plain connections.
pub fn member_connector(tls: &Tls) -> Result<Option<TlsConnector>, String> {
    if !matches!(tls.mode, TlsMode::PreferTls | TlsMode::RequireTls) {
        return Ok(None);
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let file = &tls.certificate_key_file;
    let key = private_key(file)?;
    let config = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS: {e}"))?
        .with_root_certificates(roots(tls)?)
        .with_client_auth_cert(certificates(file)?, key)
        .map_err(|e| format!("net.tls.certificate_key_file {}: {e}", file.display()))?;
    Ok(Some(TlsConnector::from(Arc::new(config))))
}

/// The certificate authorities of `ca_file`.
fn roots(tls: &Tls) -> Result<RootCertStore, String> {
    let mut roots = RootCertStore::empty();
    for cert in certificates(&tls.ca_file)? {
        roots
            .add(cert)
            .map_err(|e| format!("net.tls.ca_file {}: {e}", tls.ca_file.display()))?;
    }
    Ok(roots)
}

/// The private key of a PEM file.
fn private_key(file: &Path) -> Result<PrivateKeyDer<'static>, String> {
    PrivateKeyDer::from_pem_file(file).map_err(|e| {
        format!(
            "net.tls.certificate_key_file {}: no private key ({e})",
            file.display()
        )
    })
}

/// Every certificate of a PEM file.
fn certificates(path: &Path) -> Result<Vec<CertificateDer<'static>>, String> {
    let certs = CertificateDer::pem_file_iter(path)
        .and_then(|iter| iter.collect::<Result<Vec<_>, _>>())
        .map_err(|e| format!("{}: {e}", path.display()))?;
    if certs.is_empty() {
        return Err(format!("{}: no certificate", path.display()));
    }
    Ok(certs)
}

/// Whether the client's first bytes are a TLS ClientHello record rather than
/// a wire message: content type 22, version 3.x, handshake type 1. A wire
/// message would need a length and request id matching all of these at
/// once (mongod tells the two apart the same way).
async fn starts_tls_handshake(stream: &TcpStream) -> std::io::Result<bool> {
    let mut head = [0u8; 6];
    loop {
        let n = stream.peek(&mut head).await?;
        if n == 0 {
            return Ok(false);
        }
        if n >= head.len() || head[0] != 0x16 {
            break;
        }
        // Part of a record arrived; wait briefly for the rest of its header
        // (the caller's handshake timeout bounds the wait).
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    Ok(looks_like_client_hello(&head))
}

fn looks_like_client_hello(head: &[u8; 6]) -> bool {
    head[0] == 0x16 && head[1] == 0x03 && head[2] <= 0x04 && head[5] == 0x01
}

/// The read half of a TLS connection with the socket under it, so the
/// connection loop can tell when the peer has gone (`server::Watched`)
/// without reading records it cannot peek at.
pub struct TlsReadHalf {
    inner: ReadHalf<TlsStream<TcpStream>>,
    fd: RawFd,
}

/// Splits an established TLS connection; the socket stays open as long as
/// either half does.
pub fn split(stream: TlsStream<TcpStream>) -> (TlsReadHalf, WriteHalf<TlsStream<TcpStream>>) {
    let fd = stream.get_ref().0.as_raw_fd();
    let (inner, wr) = tokio::io::split(stream);
    (TlsReadHalf { inner, fd }, wr)
}

impl TlsReadHalf {
    /// Resolves once the peer has shut down its side (FIN, or a reset),
    /// whether or not records it sent before (a `close_notify`) are still
    /// unread. Polled every 50 ms: it only runs while a command does.
    pub async fn closed(&self) {
        loop {
            tokio::time::sleep(Duration::from_millis(50)).await;
            if peer_hung_up(self.fd) {
                return;
            }
        }
    }
}

/// Whether the peer of socket `fd` has closed its side or the socket
/// failed (`POLLRDHUP` is set even while unread data is waiting).
fn peer_hung_up(fd: RawFd) -> bool {
    let mut pfd = libc::pollfd {
        fd,
        events: libc::POLLRDHUP,
        revents: 0,
    };
    // SAFETY: one valid pollfd, a zero timeout; `fd` is the socket of the
    // connection this half belongs to, open while the half exists.
    let ready = unsafe { libc::poll(&mut pfd, 1, 0) };
    ready > 0 && pfd.revents & (libc::POLLRDHUP | libc::POLLHUP | libc::POLLERR) != 0
}

impl AsyncRead for TlsReadHalf {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_hello_is_told_from_a_wire_message() {
        assert!(looks_like_client_hello(&[
            0x16, 0x03, 0x01, 0x02, 0x00, 0x01
        ]));
        // An OP_MSG of 0x116 bytes: length 22 in its first byte, request id after.
        assert!(!looks_like_client_hello(&[
            0x16, 0x01, 0x00, 0x00, 0x07, 0x00
        ]));
        assert!(!looks_like_client_hello(&[
            0x16, 0x03, 0x00, 0x00, 0x05, 0x00
        ]));
    }

    #[test]
    fn missing_files_are_reported_with_their_key() {
        let tls = Tls {
            mode: TlsMode::RequireTls,
            certificate_key_file: "/nonexistent/server.pem".into(),
            ..Tls::default()
        };
        let e = TlsSetup::from_config(&tls).err().expect("no such file");
        assert!(e.contains("net.tls.certificate_key_file"), "{e}");
    }
}
