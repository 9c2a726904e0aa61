//! The operations endpoint (`[net.http]`, off by default): `GET /metrics`
//! (see `metrics.rs`), `GET /healthz` (the process answers),
//! `GET /readyz` (storage answers a read and the node is not shutting
//! down), and the expiry page under `/expiry` (`page`). HTTP/1.1 on its
//! own listener, over TLS with the node's certificate under
//! `net.http.tls`.

use std::net::SocketAddr;
use std::sync::Arc;

use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;
use tokio::sync::watch;

use crate::context::NodeContext;
use crate::metrics;
use crate::page::Page;

/// Accepts connections until `stop` turns true; with `tls`, each speaks
/// HTTPS.
pub async fn serve(
    listener: TcpListener,
    tls: Option<tokio_rustls::TlsAcceptor>,
    ctx: Arc<NodeContext>,
    mut stop: watch::Receiver<bool>,
) {
    let page = Page::start(&ctx, stop.clone());
    loop {
        let (stream, peer) = tokio::select! {
            _ = stop.changed() => return,
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    tracing::warn!(error = %e, "http accept failed");
                    continue;
                }
            },
        };
        let ctx = ctx.clone();
        let stopping = stop.clone();
        let page = page.clone();
        let tls = tls.clone();
        tokio::spawn(async move {
            let secure = tls.is_some();
            let service = service_fn(move |req| {
                answer(
                    ctx.clone(),
                    page.clone(),
                    peer,
                    secure,
                    stopping.clone(),
                    req,
                )
            });
            let served = match tls {
                None => {
                    http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await
                }
                Some(acceptor) => match acceptor.accept(stream).await {
                    Ok(stream) => {
                        http1::Builder::new()
                            .serve_connection(TokioIo::new(stream), service)
                            .await
                    }
                    Err(e) => {
                        tracing::debug!(%peer, error = %e, "https handshake failed");
                        return;
                    }
                },
            };
            if let Err(e) = served {
                tracing::debug!(%peer, error = %e, "http connection ended");
            }
        });
    }
}

async fn answer(
    ctx: Arc<NodeContext>,
    page: Arc<Page>,
    peer: SocketAddr,
    tls: bool,
    stopping: watch::Receiver<bool>,
    req: Request<Incoming>,
) -> Result<Response<Full<Bytes>>, std::convert::Infallible> {
    let path = req.uri().path();
    if path == "/expiry" || path.starts_with("/expiry/") {
        return Ok(crate::page::answer(&page, &ctx, peer, tls, req).await);
    }
    if req.method() != Method::GET {
        return Ok(text(StatusCode::METHOD_NOT_ALLOWED, "only GET\n"));
    }
    Ok(match req.uri().path() {
        "/metrics" => match tokio::task::spawn_blocking(move || metrics::render(&ctx)).await {
            Ok(body) => Response::builder()
                .header(
                    "content-type",
                    "application/openmetrics-text; version=1.0.0; charset=utf-8",
                )
                .body(Full::new(Bytes::from(body)))
                .unwrap_or_else(|_| text(StatusCode::INTERNAL_SERVER_ERROR, "")),
            Err(_) => text(StatusCode::INTERNAL_SERVER_ERROR, "metrics failed\n"),
        },
        "/healthz" => text(StatusCode::OK, "ok\n"),
        "/readyz" => {
            if *stopping.borrow() {
                text(StatusCode::SERVICE_UNAVAILABLE, "shutting down\n")
            } else if storage_answers(&ctx).await {
                text(StatusCode::OK, "ready\n")
            } else {
                text(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "storage is not answering\n",
                )
            }
        }
        _ => text(StatusCode::NOT_FOUND, "not found\n"),
    })
}

/// Whether the engine answers a read of the catalog.
async fn storage_answers(ctx: &NodeContext) -> bool {
    let engine = ctx.shared.engine.clone();
    tokio::task::spawn_blocking(move || {
        engine
            .get(ebb_storage::engine::Cf::Catalog, b"next_id")
            .is_ok()
    })
    .await
    .unwrap_or(false)
}

fn text(status: StatusCode, body: &'static str) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from_static(body.as_bytes())));
    *response.status_mut() = status;
    response
}

/// Binds the endpoint's listener as `net.http` says, if enabled.
pub async fn bind(config: &ebb_config::Http) -> std::io::Result<Option<(TcpListener, SocketAddr)>> {
    if !config.enabled {
        return Ok(None);
    }
    let listener = TcpListener::bind((config.bind.as_str(), config.port)).await?;
    let addr = listener.local_addr()?;
    Ok(Some((listener, addr)))
}
