//! `net.tls` end to end: the driver connects over TLS with the test CA, and
//! each mode admits the connections MongoDB's "TLS/SSL Configuration for
//! Clients" / `net.tls.mode` reference pages say it does.

use std::path::Path;
use std::time::Duration;

use crate::common::TestNode;
use crate::common::tls::tls_node;
use ebb_config::TlsMode;
use mongodb::Client;
use mongodb::bson::doc;
use mongodb::options::{ClientOptions, Tls, TlsOptions};

async fn client(node: &TestNode, tls: Option<TlsOptions>) -> Client {
    let mut opts = ClientOptions::parse(node.uri()).await.unwrap();
    opts.server_selection_timeout = Some(Duration::from_secs(2));
    opts.tls = tls.map(Tls::Enabled);
    Client::with_options(opts).unwrap()
}

fn trusting(dir: &Path, client_cert: bool) -> TlsOptions {
    let mut o = TlsOptions::builder()
        .ca_file_path(dir.join("ca.pem"))
        .build();
    if client_cert {
        o.cert_key_file_path = Some(dir.join("client.pem"));
    }
    o
}

async fn pings(c: &Client) -> bool {
    c.database("admin")
        .run_command(doc! { "ping": 1 })
        .await
        .is_ok()
}

// net.tls.mode requireTLS: TLS connections only.
#[tokio::test]
async fn require_tls_admits_only_tls_clients() {
    let certs = tempfile::tempdir().unwrap();
    let node = tls_node(TlsMode::RequireTls, certs.path(), false);
    let secure = client(&node, Some(trusting(certs.path(), false))).await;
    secure
        .database("app")
        .collection("c")
        .insert_one(doc! { "x": 1 })
        .await
        .unwrap();
    assert!(
        !pings(&client(&node, None).await).await,
        "plain client refused"
    );
}

// net.tls.mode allowTLS / preferTLS: both kinds on one port.
#[tokio::test]
async fn allow_and_prefer_tls_admit_both_kinds() {
    for mode in [TlsMode::AllowTls, TlsMode::PreferTls] {
        let certs = tempfile::tempdir().unwrap();
        let node = tls_node(mode, certs.path(), false);
        assert!(
            pings(&client(&node, Some(trusting(certs.path(), false))).await).await,
            "{mode:?} TLS"
        );
        assert!(pings(&client(&node, None).await).await, "{mode:?} plain");
    }
}

// net.tls.CAFile: clients must present a certificate the CA signed.
#[tokio::test]
async fn ca_file_requires_client_certificates() {
    let certs = tempfile::tempdir().unwrap();
    let node = tls_node(TlsMode::RequireTls, certs.path(), true);
    assert!(pings(&client(&node, Some(trusting(certs.path(), true))).await).await);
    assert!(!pings(&client(&node, Some(trusting(certs.path(), false))).await).await);
}

// A certificate that cannot be read stops the node from starting.
#[test]
fn unreadable_certificate_fails_start() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = ebb_config::Config::default();
    config.net.port = 0;
    config.storage.path = dir.path().join("data");
    config.net.tls.mode = TlsMode::RequireTls;
    config.net.tls.certificate_key_file = dir.path().join("missing.pem");
    let started = ebb_node::NodeThread::start(ebb_node::NodeOptions {
        config,
        clock: std::sync::Arc::new(ebb_actors::clock::SystemClock),
        argv: vec![],
        own_process: false,
    });
    let e = started.err().expect("no certificate, no node").to_string();
    assert!(e.contains("net.tls.certificate_key_file"), "{e}");
}
