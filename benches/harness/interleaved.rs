//! `interleaved`: N due documents interleaved with N live ones across the
//! `_id` range, as sessions with mixed lifetimes are. Lifetimes are drawn at
//! random, so the TTL index holds the due documents in an order unrelated to
//! their `_id`s: the chunked path with scattered records, not the
//! whole-collection shortcut. Measured: time from the due instant T until
//! the last due document is gone, that every live document is still there,
//! and the raw RocksDB point deletes of the same keys in the same run.

use anyhow::{Result, bail};
use mongodb::bson::{DateTime, doc};

use crate::args::Args;
use crate::daemon::Target;
use crate::floor;
use crate::report::{Outcome, Series};
use crate::scenarios::{connect, index, sleep_until_ms, wait_for_deletes};
use crate::workload::{Rng, deleted, load, make_doc, now_ms};

const HOUR_MS: i64 = 3_600_000;
const DAY_MS: i64 = 24 * HOUR_MS;

/// Who is due among `2 × n` documents, and each one's date relative to the
/// load instant: of each neighbouring pair one is due, drawn at random, and
/// dated up to an hour before the load; the other lives one to thirty days
/// past it.
pub struct Mix {
    pub due: Vec<bool>,
    pub offset_ms: Vec<i64>,
}

impl Mix {
    pub fn new(n: usize, seed: u64) -> Mix {
        let mut rng = Rng(seed | 1);
        let mut due = Vec::with_capacity(2 * n);
        for _ in 0..n {
            let first = rng.below(2) == 0;
            due.extend([first, !first]);
        }
        let offset_ms = due
            .iter()
            .map(|&d| {
                if d {
                    -(rng.below(HOUR_MS as u64) as i64)
                } else {
                    DAY_MS + rng.below(29 * DAY_MS as u64) as i64
                }
            })
            .collect();
        Mix { due, offset_ms }
    }

    pub fn due_count(&self) -> usize {
        self.due.len() / 2
    }
}

/// What one run of the workload on a fresh node measured.
struct Run {
    load_time: std::time::Duration,
    gone: crate::scenarios::Gone,
    cpu: Option<f64>,
    peak_rss: Option<u64>,
    runs: Option<mongodb::bson::Document>,
    load_at: i64,
}

/// Loads `mix` into a fresh node, makes its due half due at once and
/// waits until it is gone; with `archive`, the TTL index writes what it
/// expires to `interleaved_archive`, checked to hold exactly the due half.
async fn run_once(args: &Args, mix: &std::sync::Arc<Mix>, archive: bool) -> Result<Run> {
    let n = mix.due_count();
    let target = Target::start(args.uri.as_deref(), args.ebbd.as_ref(), &[])?;
    let (client, c) = connect(&target, "interleaved").await?;
    // A year's TTL while loading: nothing is due until `make_due` lowers it.
    match archive {
        false => index(&c, doc! { "at": 1 }, Some(365 * 86_400)).await?,
        true => {
            c.client()
                .database("bench")
                .run_command(doc! {
                    "createIndexes": c.name(),
                    "indexes": [{
                        "key": { "at": 1 },
                        "name": "at_1",
                        "expireAfterSeconds": 365 * 86_400,
                        "archiveTo": "interleaved_archive",
                    }],
                })
                .await?;
        }
    }
    index(&c, doc! { "k": 1 }, None).await?;
    let load_at = now_ms() / 1000 * 1000;
    let (load_time, _) = {
        let mix = mix.clone();
        load(&c, 2 * n, 4, move |i| {
            make_doc(
                DateTime::from_millis(load_at + mix.offset_ms[i]),
                (i % 1000) as i32,
            )
        })
        .await?
    };
    let base = deleted(&client).await?;
    // At T, on the second, the TTL drops from a year to T − load instant:
    // everything dated at or before the load instant falls due at once
    // (lowering it earlier would make the oldest due before T).
    let t = (now_ms() / 1000 + 2) * 1000;
    sleep_until_ms(t).await;
    let cpu_at_t = target.cpu();
    let secs = (t - load_at) / 1000;
    c.client()
        .database("bench")
        .run_command(doc! {
            "collMod": c.name(),
            "index": { "name": "at_1", "expireAfterSeconds": secs },
        })
        .await?;
    let gone = wait_for_deletes(&client, base, n, t).await?;
    let runs = crate::status::chunk_runs(&client).await?;
    let cpu = match (cpu_at_t, target.cpu()) {
        (Some(a), Some(b)) => Some((b - a).as_secs_f64()),
        _ => None,
    };
    let live_filter = doc! { "at": { "$gt": DateTime::from_millis(load_at) } };
    let (total, live) = (
        c.count_documents(doc! {}).await?,
        c.count_documents(live_filter).await?,
    );
    if total != n as u64 || live != n as u64 {
        bail!("after expiry {total} documents remain, {live} of them live; expected {n} and {n}");
    }
    if archive {
        let kept = c
            .client()
            .database("bench")
            .collection::<mongodb::bson::Document>("interleaved_archive")
            .count_documents(doc! {})
            .await?;
        if kept != n as u64 {
            bail!("the archive holds {kept} documents, not the {n} that expired");
        }
    }
    Ok(Run {
        load_time,
        gone,
        cpu,
        peak_rss: target.peak_rss(),
        runs,
        load_at,
    })
}

pub async fn run(args: &Args) -> Result<Outcome> {
    let n = args.docs;
    let mix = std::sync::Arc::new(Mix::new(n, now_ms() as u64));
    let plain = run_once(args, &mix, false).await?;
    let archived = match args.archive {
        true => {
            eprintln!("  the same workload again, its TTL index archiving what it expires");
            Some(run_once(args, &mix, true).await?)
        }
        false => None,
    };
    let Run {
        load_time,
        gone,
        cpu,
        peak_rss,
        runs,
        load_at,
    } = plain;
    eprintln!(
        "  measuring the raw RocksDB floor for {n} of {} documents",
        2 * n
    );
    let floor = tokio::task::spawn_blocking(move || {
        let dates: Vec<DateTime> = mix
            .offset_ms
            .iter()
            .map(|o| DateTime::from_millis(load_at + o))
            .collect();
        floor::interleaved(&dates, &mix.due)
    })
    .await??;
    let empty_s = gone.empty_ms / 1000.0;
    let mut out = Outcome::new("interleaved");
    out.add("due_docs", n, "");
    out.add("live_docs", n, "");
    out.add("load_s", load_time.as_secs_f64(), "s");
    out.add("first_delete_after_due_ms", gone.first_delete_ms, "ms");
    out.add("last_due_gone_after_s", empty_s, "s");
    out.add(
        "expiry_rate_docs_per_s",
        (n as f64 / empty_s).round(),
        "docs/s",
    );
    out.add("live_docs_remaining", n, "");
    out.add("ebbd_cpu_during_expiry_s", cpu, "s");
    out.add("floor_raw_rocksdb_s", floor.as_secs_f64(), "s");
    out.add("ratio_ebb_to_floor", empty_s / floor.as_secs_f64(), "x");
    out.add("ebbd_peak_rss_mib", peak_rss.map(|b| b / (1 << 20)), "MiB");
    crate::status::add_chunk_runs(&mut out, "", runs.as_ref());
    if let Some(a) = &archived {
        let archived_s = a.gone.empty_ms / 1000.0;
        out.add("archiving_last_due_gone_after_s", archived_s, "s");
        out.add("archiving_ebbd_cpu_during_expiry_s", a.cpu, "s");
        out.add(
            "archiving_ebbd_peak_rss_mib",
            a.peak_rss.map(|b| b / (1 << 20)),
            "MiB",
        );
        out.add("ratio_archiving_to_plain", archived_s / empty_s, "x");
    }
    out.series = Some(Series {
        title: format!("interleaved: {n} due among {} documents", 2 * n),
        x_label: "seconds after T".into(),
        y_label: "due documents remaining".into(),
        points: gone.points,
    });
    Ok(out)
}
