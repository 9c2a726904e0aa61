//! `page`: how long the expiry page takes to render at the server on a
//! node with many collections.
//!
//! Creates 1,000 collections over 10 databases, 100 of them with a TTL
//! index and 100 documents each, and one more, `bench.page`, with `--docs`
//! documents dated evenly over the next week under a TTL index. Then asks
//! for the overview (`/expiry`) and the big collection's view (its
//! forecast and an explain of its first documents) five times each and
//! reports the medians of the node's own `server-timing` header and of the
//! wall time the client saw, and how many TTL indexes the overview listed
//! (all of them, or the figure means nothing).

use anyhow::{Context, Result, bail};
use mongodb::bson::{DateTime, doc};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::args::Args;
use crate::daemon::Target;
use crate::report::Outcome;
use crate::scenarios::{connect, index};
use crate::workload::{load_encoded, now_ms, percentile, spread_over};

const WEEK_MS: i64 = 7 * 24 * 3_600_000;
const RUNS: usize = 5;
const DATABASES: usize = 10;
const COLLECTIONS: usize = 1_000;
const TTL_COLLECTIONS: usize = 100;

pub async fn run(args: &Args) -> Result<Outcome> {
    if args.uri.is_some() {
        bail!("page starts its own ebbd (it needs the HTTP listener)");
    }
    let env = [
        ("EBB_NET__HTTP__ENABLED", "true".to_owned()),
        ("EBB_NET__HTTP__PORT", "0".to_owned()),
    ];
    let target = Target::start(None, args.ebbd.as_ref(), &env)?;
    let http = target
        .http
        .clone()
        .context("ebbd did not report its HTTP address")?;
    let (client, big) = connect(&target, "page").await?;
    eprintln!("  creating {COLLECTIONS} collections, {TTL_COLLECTIONS} with a TTL index");
    for i in 0..COLLECTIONS {
        let db = client.database(&format!("page{}", i % DATABASES));
        let name = format!("c{i}");
        db.create_collection(&name).await?;
        if i % (COLLECTIONS / TTL_COLLECTIONS) == 0 {
            let c = db.collection(&name);
            index(&c, doc! { "at": 1 }, Some(3600)).await?;
            let at = DateTime::from_millis(now_ms() + WEEK_MS);
            c.insert_many((0..100).map(|k| doc! { "at": at, "k": k }))
                .await?;
        }
    }
    let n = args.docs;
    index(&big, doc! { "at": 1 }, Some(60)).await?;
    let start = now_ms() + 120_000;
    let batches = spread_over(n, start, WEEK_MS);
    eprintln!("  loading {n} documents dated over the next week");
    load_encoded(&big, batches, args.clients).await?;

    let mut out = Outcome::new("page");
    out.add("collections", COLLECTIONS + 1, "");
    out.add("ttl_indexes", TTL_COLLECTIONS + 1, "");
    out.add("docs", n, "");
    for (name, path) in [
        ("overview", "/expiry".to_owned()),
        (
            "collection",
            "/expiry/collection?db=bench&coll=page".to_owned(),
        ),
    ] {
        let (mut server, mut wall) = (Vec::new(), Vec::new());
        let mut rows = 0;
        for _ in 0..RUNS {
            let t = std::time::Instant::now();
            let (rendered, body) = get(&http, &path).await?;
            wall.push(t.elapsed().as_secs_f64() * 1000.0);
            server.push(rendered);
            rows = body.matches("<tr data-ns=").count();
        }
        if name == "overview" {
            out.add("overview_ttl_rows", rows, "");
        }
        server.sort_by(f64::total_cmp);
        wall.sort_by(f64::total_cmp);
        out.add(
            &format!("{name}_server_median_ms"),
            percentile(&server, 50.0),
            "ms",
        );
        out.add(
            &format!("{name}_wall_median_ms"),
            percentile(&wall, 50.0),
            "ms",
        );
    }
    Ok(out)
}

/// GETs `path` from the page and returns the render time the node reports
/// in its `server-timing` header, in milliseconds, and the page.
async fn get(addr: &str, path: &str) -> Result<(f64, String)> {
    let mut stream = TcpStream::connect(addr).await?;
    let request = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await?;
    let mut response = Vec::new();
    stream.read_to_end(&mut response).await?;
    let response = String::from_utf8_lossy(&response);
    let (head, body) = response
        .split_once("\r\n\r\n")
        .context("an HTTP response")?;
    if !head.starts_with("HTTP/1.1 200") {
        bail!("GET {path}: {}", head.lines().next().unwrap_or_default());
    }
    if !body.contains("</html>") {
        bail!("GET {path}: the page is cut short");
    }
    let rendered = head
        .lines()
        .find_map(|line| {
            let (name, value) = line.split_once(':')?;
            name.eq_ignore_ascii_case("server-timing").then_some(value)
        })
        .and_then(|value| value.split("dur=").nth(1)?.trim().parse::<f64>().ok())
        .with_context(|| format!("GET {path}: no server-timing header"))?;
    Ok((rendered, body.to_owned()))
}
