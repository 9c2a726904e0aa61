//! The expiry page's rules at the HTTP level (the browser test,
//! `tests/page/expiry_page.mjs`, checks what it shows): without
//! authorization it is read-only and refuses every form; with
//! authorization it asks for a sign-in, over HTTPS under `net.http.tls`,
//! and a wrong password or a forged form changes nothing.

use std::sync::Arc;

use mongodb::bson::doc;
use rustls::pki_types::ServerName;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::common::TestNode;
use crate::common::tls::certificates;

/// What an HTTP/1.1 exchange answered.
struct Answer {
    status: u16,
    head: String,
    body: String,
}

impl Answer {
    fn header(&self, name: &str) -> Option<&str> {
        self.head.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case(name).then(|| v.trim())
        })
    }
}

async fn exchange(
    mut s: impl AsyncRead + AsyncWrite + Unpin,
    method: &str,
    path: &str,
    cookie: Option<&str>,
    form: Option<&str>,
) -> Answer {
    let mut request = format!("{method} {path} HTTP/1.1\r\nHost: ebb\r\nConnection: close\r\n");
    if let Some(c) = cookie {
        request.push_str(&format!("Cookie: {c}\r\n"));
    }
    if let Some(f) = form {
        request.push_str(&format!(
            "Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\n\r\n{f}",
            f.len()
        ));
    } else {
        request.push_str("\r\n");
    }
    s.write_all(request.as_bytes()).await.unwrap();
    let mut response = Vec::new();
    // A TLS peer may close without close_notify once the body is sent.
    let _ = s.read_to_end(&mut response).await;
    let response = String::from_utf8_lossy(&response).into_owned();
    let (head, body) = response.split_once("\r\n\r\n").unwrap();
    Answer {
        status: head.split(' ').nth(1).unwrap().parse().unwrap(),
        head: head.to_owned(),
        body: body.to_owned(),
    }
}

async fn plain(node: &TestNode, method: &str, path: &str, form: Option<&str>) -> Answer {
    let addr = node.node().http_addr().unwrap();
    exchange(
        TcpStream::connect(addr).await.unwrap(),
        method,
        path,
        None,
        form,
    )
    .await
}

async fn seeded(node: &TestNode, client: &mongodb::Client) {
    let _ = node;
    let coll = client.database("app").collection("sessions");
    client
        .database("app")
        .run_command(doc! {
            "createIndexes": "sessions",
            "indexes": [{ "key": { "expiresAt": 1 }, "name": "expiresAt_1", "expireAfterSeconds": 3600 }],
        })
        .await
        .unwrap();
    coll.insert_many(vec![
        doc! { "u": 1, "expiresAt": "tomorrow" },
        doc! { "u": 2, "expiresAt": mongodb::bson::DateTime::from_millis(mongodb::bson::DateTime::now().timestamp_millis() - 60_000) },
    ])
    .await
    .unwrap();
}

async fn expire_after(client: &mongodb::Client) -> i64 {
    let indexes = client
        .database("app")
        .run_command(doc! { "listIndexes": "sessions" })
        .await
        .unwrap();
    let batch = indexes
        .get_document("cursor")
        .unwrap()
        .get_array("firstBatch")
        .unwrap();
    batch
        .iter()
        .filter_map(|i| i.as_document())
        .find(|i| i.get_str("name").ok() == Some("expiresAt_1"))
        .and_then(|i| i.get("expireAfterSeconds"))
        .and_then(|v| v.as_i32().map(i64::from).or(v.as_i64()))
        .unwrap()
}

#[tokio::test]
async fn without_authorization_the_page_shows_everything_and_changes_nothing() {
    let node = crate::metrics::node_with_http_and(None);
    let client = node.client().await;
    seeded(&node, &client).await;

    let overview = plain(&node, "GET", "/expiry", None).await;
    assert_eq!(overview.status, 200);
    assert!(
        overview.body.contains("data-ns=\"app.sessions\""),
        "{}",
        overview.body
    );
    assert!(
        overview
            .body
            .contains("<span data-reason=\"notADate\">notADate: 1</span>")
    );
    assert!(
        overview
            .header("server-timing")
            .is_some_and(|t| t.starts_with("render;dur="))
    );

    let view = plain(
        &node,
        "GET",
        "/expiry/collection?db=app&coll=sessions",
        None,
    )
    .await;
    assert_eq!(view.status, 200);
    assert!(
        view.body.contains("id=\"minutes-0\""),
        "the forecast is drawn"
    );
    assert!(
        !view.body.contains("id=\"change\""),
        "no change form without authorization"
    );

    for path in ["/expiry/preview", "/expiry/apply"] {
        let refused = plain(
            &node,
            "POST",
            path,
            Some("db=app&coll=sessions&index=expiresAt_1&seconds=1&csrf="),
        )
        .await;
        assert_eq!(refused.status, 403, "{path}");
    }
    assert_eq!(expire_after(&client).await, 3600);
    // There is no one to sign in as.
    let login = plain(&node, "GET", "/expiry/login", None).await;
    assert_eq!(login.status, 303);
    assert_eq!(login.header("location"), Some("/expiry"));
}

#[tokio::test]
async fn with_authorization_the_page_asks_for_a_user_over_https() {
    let dir = tempfile::tempdir().unwrap();
    let (ca, server, _) = certificates(dir.path());
    let node = TestNode::start_with(
        |c| {
            c.security.authorization = ebb_config::Authorization::Enabled;
            c.net.http.enabled = true;
            c.net.http.port = 0;
            c.net.http.tls = true;
            c.net.tls.certificate_key_file = server;
        },
        None,
    );
    node.client()
        .await
        .database("admin")
        .run_command(doc! { "createUser": "ops", "pwd": "ops-pw", "roles": ["root"] })
        .await
        .unwrap();
    let client = node
        .client_as(
            "ops",
            "ops-pw",
            "admin",
            mongodb::options::AuthMechanism::ScramSha256,
        )
        .await;
    seeded(&node, &client).await;

    let mut roots = rustls::RootCertStore::empty();
    let pem = std::fs::read(&ca).unwrap();
    for cert in rustls_pemfile_certs(&pem) {
        roots.add(cert).unwrap();
    }
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots)
    .with_no_client_auth();
    let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
    let addr = node.node().http_addr().unwrap();
    let https = async |method: &str, path: &str, cookie: Option<&str>, form: Option<&str>| {
        let tcp = TcpStream::connect(addr).await.unwrap();
        let name = ServerName::try_from("127.0.0.1").unwrap();
        let tls = connector
            .connect(name, tcp)
            .await
            .expect("the listener speaks TLS");
        exchange(tls, method, path, cookie, form).await
    };

    // Plain HTTP is not served.
    let mut tcp = TcpStream::connect(addr).await.unwrap();
    tcp.write_all(b"GET /expiry HTTP/1.1\r\nHost: ebb\r\n\r\n")
        .await
        .unwrap();
    let mut buf = Vec::new();
    let _ = tcp.read_to_end(&mut buf).await;
    assert!(!String::from_utf8_lossy(&buf).starts_with("HTTP/1.1 200"));

    let asked = https("GET", "/expiry", None, None).await;
    assert_eq!(asked.status, 303);
    assert_eq!(asked.header("location"), Some("/expiry/login"));
    let metrics = https("GET", "/metrics", None, None).await;
    assert_eq!(
        metrics.status, 200,
        "the other endpoints are served over TLS too"
    );

    let wrong = https(
        "POST",
        "/expiry/login",
        None,
        Some("user=ops&password=nope&db=admin"),
    )
    .await;
    assert_eq!(wrong.status, 401);
    assert!(
        wrong.body.contains("Authentication failed"),
        "{}",
        wrong.body
    );
    assert!(wrong.header("set-cookie").is_none());

    let signed = https(
        "POST",
        "/expiry/login",
        None,
        Some("user=ops&password=ops-pw&db=admin"),
    )
    .await;
    assert_eq!(signed.status, 303, "{}", signed.body);
    let cookie = signed.header("set-cookie").unwrap().to_owned();
    assert!(
        cookie.contains("HttpOnly")
            && cookie.contains("SameSite=Strict")
            && cookie.contains("Secure")
    );
    let cookie = cookie.split(';').next().unwrap().to_owned();

    let overview = https("GET", "/expiry", Some(&cookie), None).await;
    assert_eq!(overview.status, 200);
    assert!(overview.body.contains("ops@admin"));
    assert!(overview.body.contains("data-ns=\"app.sessions\""));

    // A form without the visitor's form token is refused; with it, the
    // change is previewed first and only then applied.
    let forged = https(
        "POST",
        "/expiry/apply",
        Some(&cookie),
        Some("db=app&coll=sessions&index=expiresAt_1&seconds=7&csrf=forged"),
    )
    .await;
    assert_eq!(forged.status, 403);
    let view = https(
        "GET",
        "/expiry/collection?db=app&coll=sessions",
        Some(&cookie),
        None,
    )
    .await;
    let csrf = view
        .body
        .split("name=\"csrf\" value=\"")
        .nth(1)
        .and_then(|s| s.split('"').next())
        .unwrap()
        .to_owned();
    let form = format!("db=app&coll=sessions&index=expiresAt_1&seconds=7&csrf={csrf}");
    let unpreviewed = https("POST", "/expiry/apply", Some(&cookie), Some(&form)).await;
    assert!(unpreviewed.body.contains("Preview the change first"));
    assert_eq!(expire_after(&client).await, 3600);
    let preview = https("POST", "/expiry/preview", Some(&cookie), Some(&form)).await;
    assert!(
        preview.body.contains("id=\"due-at-once\" data-value=\"1\""),
        "{}",
        preview.body
    );
    assert_eq!(
        expire_after(&client).await,
        3600,
        "a preview changes nothing"
    );
    let applied = https("POST", "/expiry/apply", Some(&cookie), Some(&form)).await;
    assert!(applied.body.contains("id=\"applied\""), "{}", applied.body);
    assert_eq!(expire_after(&client).await, 7);

    let out = https(
        "POST",
        "/expiry/logout",
        Some(&cookie),
        Some(&format!("csrf={csrf}")),
    )
    .await;
    assert_eq!(out.status, 303);
    let after = https("GET", "/expiry", Some(&cookie), None).await;
    assert_eq!(after.status, 303, "a signed-out token is forgotten");
}

/// The certificates of a PEM file.
fn rustls_pemfile_certs(pem: &[u8]) -> Vec<rustls::pki_types::CertificateDer<'static>> {
    use rustls::pki_types::pem::PemObject;
    rustls::pki_types::CertificateDer::pem_slice_iter(pem)
        .map(|c| c.unwrap())
        .collect()
}
