//! The operations endpoint (`[net.http]`): `/metrics` in the Prometheus text
//! format, read back with a real exposition-format parser, `/healthz` and
//! `/readyz`.

use std::collections::HashMap;

use std::sync::Arc;
use std::time::Duration;

use crate::common::{TestNode, ttl_index};
use ebb_actors::clock::ManualClock;
use mongodb::bson::{DateTime, doc};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// One HTTP/1.1 request: (status, body).
pub(crate) async fn http(addr: std::net::SocketAddr, method: &str, path: &str) -> (u16, String) {
    let mut s = TcpStream::connect(addr).await.unwrap();
    let request = format!("{method} {path} HTTP/1.1\r\nHost: ebb\r\nConnection: close\r\n\r\n");
    s.write_all(request.as_bytes()).await.unwrap();
    let mut response = String::new();
    s.read_to_string(&mut response).await.unwrap();
    let (head, body) = response.split_once("\r\n\r\n").unwrap();
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    (status, body.to_owned())
}

fn node_with_http() -> TestNode {
    node_with_http_and(None)
}

pub(crate) fn node_with_http_and(clock: Option<Arc<ManualClock>>) -> TestNode {
    TestNode::start_with(
        |c| {
            c.net.http.enabled = true;
            c.net.http.port = 0;
        },
        clock,
    )
}

/// The samples of a scrape by name and labels.
pub(crate) fn samples(text: &str) -> HashMap<(String, Vec<(String, String)>), f64> {
    let lines = text.lines().map(|l| Ok(l.to_owned()));
    let scrape = prometheus_parse::Scrape::parse(lines).expect("valid exposition format");
    scrape
        .samples
        .into_iter()
        .map(|s| {
            let mut labels: Vec<(String, String)> = s
                .labels
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            labels.sort();
            let value = match s.value {
                prometheus_parse::Value::Counter(v)
                | prometheus_parse::Value::Gauge(v)
                | prometheus_parse::Value::Untyped(v) => v,
                _ => f64::NAN,
            };
            ((s.metric, labels), value)
        })
        .collect()
}

fn label(k: &str, v: &str) -> Vec<(String, String)> {
    vec![(k.to_owned(), v.to_owned())]
}

#[tokio::test]
async fn metrics_count_what_clients_did() {
    let node = node_with_http();
    let addr = node.node().http_addr().expect("net.http enabled");
    let c = node.coll("m", "c").await;
    for i in 0..3 {
        c.insert_one(doc! { "_id": i }).await.unwrap();
    }
    let (status, text) = http(addr, "GET", "/metrics").await;
    assert_eq!(status, 200);
    let samples = samples(&text);
    let get = |name: &str, labels: Vec<(String, String)>| {
        *samples
            .get(&(name.to_owned(), labels))
            .unwrap_or_else(|| panic!("no {name} in\n{text}"))
    };
    assert_eq!(get("ebb_opcounters_total", label("op", "insert")), 3.0);
    assert_eq!(get("ebb_documents_total", label("op", "inserted")), 3.0);
    assert!(get("ebb_connections_current", vec![]) >= 1.0);
    assert_eq!(get("ebb_ttl_deleted_documents_total", vec![]), 0.0);
    assert_eq!(get("ebb_ttl_monitor_running", vec![]), 1.0);
    assert!(get("ebb_storage_memtable_bytes", vec![]) > 0.0);
    // What memory is made of: memtables (pinned ones too), the block
    // cache, the sweep's queue and held keys, and the allocator's totals.
    assert!(
        get("ebb_storage_memtable_all_bytes", vec![]) >= get("ebb_storage_memtable_bytes", vec![])
    );
    assert!(get("ebb_storage_block_cache_bytes", vec![]) >= 0.0);
    assert_eq!(get("ebb_ttl_sweep_queued_entries", vec![]), 0.0);
    assert_eq!(get("ebb_ttl_sweep_held_keys", vec![]), 0.0);
    let allocated = get("ebb_memory_allocated_bytes", vec![]);
    assert!(allocated > 0.0);
    assert!(get("ebb_memory_resident_bytes", vec![]) >= allocated);
    // The latency histogram of insert holds the three inserts.
    assert!(
        text.contains("ebb_command_duration_seconds_count{command=\"insert\"} 3"),
        "{text}"
    );
}

#[tokio::test]
async fn health_and_readiness_answer_and_other_requests_are_refused() {
    let node = node_with_http();
    let addr = node.node().http_addr().unwrap();
    assert_eq!(
        http(addr, "GET", "/healthz").await,
        (200, "ok\n".to_owned())
    );
    assert_eq!(
        http(addr, "GET", "/readyz").await,
        (200, "ready\n".to_owned())
    );
    assert_eq!(http(addr, "GET", "/nothing").await.0, 404);
    assert_eq!(http(addr, "POST", "/metrics").await.0, 405);
}

#[tokio::test]
async fn the_endpoint_is_off_by_default() {
    let node = TestNode::start();
    assert_eq!(node.node().http_addr(), None);
}

/// The due backlog per TTL index and the expiry-lag histogram (how long
/// after its due time each document was deleted). The manual clock stands still, so the lag is exact.
#[tokio::test]
async fn metrics_show_the_due_backlog_and_how_late_expiry_ran() {
    const T0: i64 = 1_700_000_000_000;
    let node = node_with_http_and(Some(Arc::new(ManualClock::new(T0))));
    let addr = node.node().http_addr().unwrap();
    let c = node.coll("m", "sessions").await;
    ttl_index(&c, doc! { "at": 1 }, 10, None).await;

    let held = node.hold_monitor().await;
    // Five documents due 10 s ago (dated 20 s ago), three not due yet.
    let docs = (0..8).map(|i| {
        let age = if i < 5 { 20_000 } else { 0 };
        doc! { "_id": i, "at": DateTime::from_millis(T0 - age) }
    });
    c.insert_many(docs).await.unwrap();
    let backlog = |text: &str| {
        samples(text)[&(
            "ebb_ttl_due_backlog".to_owned(),
            vec![
                ("index".to_owned(), "at_1".to_owned()),
                ("ns".to_owned(), "m.sessions".to_owned()),
            ],
        )]
    };
    let (_, text) = http(addr, "GET", "/metrics").await;
    assert_eq!(backlog(&text), 5.0, "{text}");
    assert!(
        text.contains("ebb_ttl_expiry_lag_seconds_count 0"),
        "{text}"
    );

    drop(held);
    node.ttl_pass().await;
    let (_, text) = http(addr, "GET", "/metrics").await;
    assert_eq!(backlog(&text), 0.0, "{text}");
    // Every chunk the monitor counted took one of the three paths (the
    // writer counts the path before it answers, so a scrape can only see
    // the path before the chunk).
    let samples_now = samples(&text);
    let value = |name: &str, labels| samples_now[&(name.to_owned(), labels)];
    let runs = |run: &str| value("ebb_ttl_chunk_runs_total", label("run", run));
    let chunks = value("ebb_ttl_chunks_total", vec![]);
    assert!(chunks >= 1.0, "{text}");
    assert!(
        runs("planned") + runs("ahead") + runs("onWriter") >= chunks,
        "{text}"
    );
    assert_eq!(runs("stalePlans"), 0.0, "{text}");
    // No index besides the TTL one: nothing for the sweep.
    assert_eq!(value("ebb_ttl_swept_entries_total", vec![]), 0.0, "{text}");
    // One chunk took the five; its oldest was 10 s overdue.
    assert!(
        text.contains("ebb_ttl_expiry_lag_seconds_count 1"),
        "{text}"
    );
    assert!(
        text.contains("ebb_ttl_expiry_lag_seconds_sum 10.0"),
        "{text}"
    );
    assert!(
        text.contains("ebb_ttl_expiry_lag_seconds_bucket{le=\"16.384\"} 1"),
        "{text}"
    );
    // Once the others' due time passes they make the backlog.
    let held = node.hold_monitor().await;
    node.advance(Duration::from_secs(11));
    let (_, text) = http(addr, "GET", "/metrics").await;
    assert_eq!(backlog(&text), 3.0, "{text}");
    drop(held);
}
