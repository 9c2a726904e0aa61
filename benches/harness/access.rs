//! `access`: what authentication and TLS cost.
//!
//! Three nodes: plain, with `security.authorization` (SCRAM-SHA-256), and
//! with `net.tls.mode = requireTLS` (a CA and server certificate made for
//! the run). On each: the time to open a new client and run its first
//! command (connection, handshake, and the SCRAM conversation or TLS
//! handshake), over `--connections` sequential clients; and on the plain
//! and TLS nodes, the insert rate of `--docs` documents from `--clients`.
//! Ratios are taken against the plain node of the same run.

use std::path::Path;
use std::time::Instant;

use anyhow::Result;
use mongodb::Client;
use mongodb::bson::{DateTime, doc};
use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, IsCa, KeyPair};

use crate::args::Args;
use crate::daemon::Target;
use crate::report::Outcome;
use crate::scenarios::{DAY_SECS, connect};
use crate::workload::{load, make_doc, now_ms, percentile};

const USER: &str = "bench";
const PASSWORD: &str = "bench-password";

/// Writes a CA and a server certificate for 127.0.0.1/localhost into
/// `dir`; returns (CA file, server certificate-and-key file).
fn certificates(dir: &Path) -> Result<(String, String)> {
    let mut ca_params = CertificateParams::new(Vec::<String>::new())?;
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca = CertifiedIssuer::self_signed(ca_params, KeyPair::generate()?)?;
    let key = KeyPair::generate()?;
    let server = CertificateParams::new(vec!["127.0.0.1".into(), "localhost".into()])?
        .signed_by(&key, &ca)?;
    let (ca_path, server_path) = (dir.join("ca.pem"), dir.join("server.pem"));
    std::fs::write(&ca_path, ca.pem())?;
    std::fs::write(
        &server_path,
        format!("{}{}", server.pem(), key.serialize_pem()),
    )?;
    Ok((
        ca_path.display().to_string(),
        server_path.display().to_string(),
    ))
}

/// Milliseconds from creating a client to its first reply, for `n` clients
/// one after another; sorted.
async fn connect_times(uri: &str, n: usize) -> Result<Vec<f64>> {
    let mut times = Vec::with_capacity(n);
    for _ in 0..n {
        let started = Instant::now();
        let client = Client::with_uri_str(uri).await?;
        client
            .database("admin")
            .run_command(doc! { "ping": 1 })
            .await?;
        times.push(started.elapsed().as_secs_f64() * 1000.0);
        client.shutdown().await;
    }
    times.sort_by(f64::total_cmp);
    Ok(times)
}

/// Documents per second inserting `n` documents from `clients`.
async fn insert_rate(target: &Target, n: usize, clients: usize) -> Result<f64> {
    let (_client, c) = connect(target, "access").await?;
    let far = DateTime::from_millis(now_ms() + DAY_SECS * 1000);
    let (elapsed, _) = load(&c, n, clients, move |i| make_doc(far, i as i32)).await?;
    Ok(n as f64 / elapsed.as_secs_f64())
}

/// `uri` with `extra` query options added.
fn with_options(uri: &str, extra: &str) -> String {
    let joiner = if uri.contains('?') { '&' } else { '?' };
    format!("{uri}{joiner}{extra}")
}

pub async fn run(args: &Args) -> Result<Outcome> {
    anyhow::ensure!(
        args.uri.is_none(),
        "access starts its own nodes; --uri is not used"
    );
    let connections = args.connections;
    let mut out = Outcome::new("access");
    out.add("connections", connections, "");

    let plain = Target::start(None, args.ebbd.as_ref(), &[])?;
    let plain_connect = connect_times(&plain.uri, connections).await?;
    let plain_rate = insert_rate(&plain, args.docs, args.clients).await?;
    drop(plain);

    let auth_env = [("EBB_SECURITY__AUTHORIZATION", "enabled".to_owned())];
    let auth = Target::start(None, args.ebbd.as_ref(), &auth_env)?;
    // The first user, through the localhost exception.
    let anonymous = Client::with_uri_str(&auth.uri).await?;
    anonymous
        .database("admin")
        .run_command(doc! { "createUser": USER, "pwd": PASSWORD, "roles": ["root"] })
        .await?;
    anonymous.shutdown().await;
    let credentials = auth
        .uri
        .replacen("mongodb://", &format!("mongodb://{USER}:{PASSWORD}@"), 1);
    let auth_connect =
        connect_times(&with_options(&credentials, "authSource=admin"), connections).await?;
    drop(auth);

    let dir = tempfile::tempdir()?;
    let (ca, server) = certificates(dir.path())?;
    let tls_env = [
        ("EBB_NET__TLS__MODE", "requireTLS".to_owned()),
        ("EBB_NET__TLS__CERTIFICATE_KEY_FILE", server),
    ];
    let mut tls = Target::start(None, args.ebbd.as_ref(), &tls_env)?;
    tls.uri = with_options(&tls.uri, &format!("tls=true&tlsCAFile={ca}"));
    let tls_connect = connect_times(&tls.uri, connections).await?;
    let tls_rate = insert_rate(&tls, args.docs, args.clients).await?;

    for (label, times) in [
        ("plain", &plain_connect),
        ("scram", &auth_connect),
        ("tls", &tls_connect),
    ] {
        out.add(
            &format!("{label}_connect_p50_ms"),
            percentile(times, 50.0),
            "ms",
        );
        out.add(
            &format!("{label}_connect_p99_ms"),
            percentile(times, 99.0),
            "ms",
        );
    }
    let p50 = |t: &Vec<f64>| percentile(t, 50.0);
    out.add(
        "scram_connect_extra_ms",
        p50(&auth_connect) - p50(&plain_connect),
        "ms",
    );
    out.add(
        "tls_connect_extra_ms",
        p50(&tls_connect) - p50(&plain_connect),
        "ms",
    );
    out.add("plain_insert_docs_per_s", plain_rate, "docs/s");
    out.add("tls_insert_docs_per_s", tls_rate, "docs/s");
    out.add("tls_insert_ratio", tls_rate / plain_rate, "x");
    Ok(out)
}
