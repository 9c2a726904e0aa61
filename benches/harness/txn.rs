//! `txn`: what a multi-document transaction costs against the same work
//! outside one, on the set `--uri` names (a three-member set for the
//! figures in BENCHMARKS.md) or a one-member set the harness starts.
//!
//! Writes: C clients (`--clients`) each insert groups of 10 documents for
//! D seconds (`--duration`, default 10), either as one `insertMany` with
//! `w: "majority"` or as a transaction of 10 `insertOne` statements
//! committed with `w: "majority"`; the two kinds alternate three times in
//! one run, and each pair's ratio (transaction ÷ insertMany, documents/s)
//! is reported with the median. Reads: one client reads 10 documents by
//! `_id`, 2,000 times outside a transaction and 2,000 times inside one
//! (started, the 10 reads, committed), alternating three times; the
//! ratio is the transaction's time ÷ the plain reads' time.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Result;
use mongodb::bson::{Document, doc};
use mongodb::options::{Acknowledgment, WriteConcern};
use mongodb::{Client, Collection};

use crate::args::Args;
use crate::daemon::Target;
use crate::report::Outcome;
use crate::workload::PAYLOAD;

const GROUP: usize = 10;
const READ_ROUNDS: usize = 2_000;

fn majority() -> WriteConcern {
    WriteConcern::builder().w(Acknowledgment::Majority).build()
}

/// Documents written per second by `clients` clients for `duration`, as
/// transactions or as `insertMany`s.
async fn write_rate(client: &Client, clients: usize, duration: Duration, txn: bool) -> Result<f64> {
    let coll: Collection<Document> = client.database("bench").collection("txn");
    let start = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..clients {
        let (client, coll) = (client.clone(), coll.clone());
        tasks.push(tokio::spawn(async move {
            let mut written = 0usize;
            let mut session = client.start_session().await?;
            while start.elapsed() < duration {
                let docs: Vec<Document> = (0..GROUP)
                    .map(|i| doc! { "i": i as i32, "p": PAYLOAD })
                    .collect();
                if txn {
                    session
                        .start_transaction()
                        .write_concern(majority())
                        .await?;
                    for d in docs {
                        coll.insert_one(d).session(&mut session).await?;
                    }
                    session.commit_transaction().await?;
                } else {
                    coll.insert_many(docs).write_concern(majority()).await?;
                }
                written += GROUP;
            }
            anyhow::Ok(written)
        }));
    }
    let mut total = 0;
    for t in tasks {
        total += t.await??;
    }
    Ok(total as f64 / start.elapsed().as_secs_f64())
}

/// Seconds for `READ_ROUNDS` rounds of 10 reads by `_id`, in a
/// transaction each or not.
async fn read_time(client: &Client, txn: bool) -> Result<f64> {
    let coll: Collection<Document> = client.database("bench").collection("txn_reads");
    let mut session = client.start_session().await?;
    let start = Instant::now();
    for round in 0..READ_ROUNDS {
        if txn {
            session.start_transaction().await?;
        }
        for k in 0..GROUP {
            let id = ((round * GROUP + k) % 1_000) as i32;
            let found = match txn {
                true => {
                    coll.find_one(doc! { "_id": id })
                        .session(&mut session)
                        .await?
                }
                false => coll.find_one(doc! { "_id": id }).await?,
            };
            anyhow::ensure!(found.is_some(), "document {id} missing");
        }
        if txn {
            session.commit_transaction().await?;
        }
    }
    Ok(start.elapsed().as_secs_f64())
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

pub async fn run(args: &Args) -> Result<Outcome> {
    let duration = Duration::from_secs(args.duration.unwrap_or(10));
    let target = match &args.uri {
        Some(uri) => Target::start(Some(uri), None, &[])?,
        None => Target::one_member_set(args.ebbd.as_ref()).await?,
    };
    let client = Arc::new(Client::with_uri_str(&target.uri).await?);
    let db = client.database("bench");
    for name in ["txn", "txn_reads"] {
        db.collection::<Document>(name).drop().await?;
        db.create_collection(name).write_concern(majority()).await?;
    }
    let reads: Vec<Document> = (0..1_000)
        .map(|i| doc! { "_id": i, "p": PAYLOAD })
        .collect();
    db.collection::<Document>("txn_reads")
        .insert_many(reads)
        .write_concern(majority())
        .await?;

    let mut out = Outcome::new("txn");
    let mut write_ratios = Vec::new();
    for round in 1..=3 {
        let plain = write_rate(&client, args.clients, duration, false).await?;
        let txn = write_rate(&client, args.clients, duration, true).await?;
        out.add(&format!("insert_many_docs_per_s_{round}"), plain, "docs/s");
        out.add(&format!("txn_docs_per_s_{round}"), txn, "docs/s");
        write_ratios.push(txn / plain);
    }
    let mut read_ratios = Vec::new();
    for round in 1..=3 {
        let plain = read_time(&client, false).await?;
        let txn = read_time(&client, true).await?;
        out.add(&format!("plain_reads_s_{round}"), plain, "s");
        out.add(&format!("txn_reads_s_{round}"), txn, "s");
        read_ratios.push(txn / plain);
    }
    for (i, r) in write_ratios.iter().enumerate() {
        out.add(&format!("write_ratio_{}", i + 1), *r, "x");
    }
    out.add(
        "write_ratio_median",
        median(write_ratios),
        "x (target >= 0.5)",
    );
    for (i, r) in read_ratios.iter().enumerate() {
        out.add(&format!("read_ratio_{}", i + 1), *r, "x");
    }
    out.add(
        "read_ratio_median",
        median(read_ratios),
        "x (target <= 1.2)",
    );
    Ok(out)
}
