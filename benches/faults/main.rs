//! `ebb-faults`: a replica set under faults. Three `ebbd` processes on
//! loopback ports take `w: "majority"` inserts and retryable appends while
//! the harness, one fault at a time, kills a member with `kill -9`, pauses
//! one (`SIGSTOP`, then `SIGCONT`) or cuts its replication traffic both
//! ways, the primary or another member at random, and waits for the set to
//! take majority writes again. At the end every member must hold every
//! acknowledged write exactly once (`ledger`), and all of them the same
//! documents (`dbHash`) and consistent indexes (`validate`), a change log
//! that says each write it holds exactly once, in the same events as the
//! others' (the catalog's included), and the same archive of what expired,
//! each document in it once. Exits non-zero when anything is lost, applied
//! twice or different.
//!
//! `ebb-faults --faults 100` is CI's run; BENCHMARKS.md records a longer one.

mod ledger;
mod members;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use clap::Parser;
use mongodb::bson::doc;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use members::{Set, Timing};

#[derive(Parser)]
#[command(about = "A three-member replica set under kill -9, pauses and partitions")]
struct Args {
    /// Faults to inject, one after another.
    #[arg(long, default_value_t = 100)]
    faults: u32,
    /// The ebbd binary (default: beside this one).
    #[arg(long)]
    ebbd: Option<PathBuf>,
    /// Seed of the fault schedule (default: from the clock; printed).
    #[arg(long)]
    seed: Option<u64>,
    /// The members' election timeout, in milliseconds.
    #[arg(long, default_value_t = 600)]
    election_ms: u64,
    /// The members' heartbeat interval, in milliseconds.
    #[arg(long, default_value_t = 100)]
    heartbeat_ms: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Fault {
    Kill,
    Pause,
    Cut,
}

/// How long the set may take to take majority writes again after a fault.
const SETTLE: Duration = Duration::from_secs(60);

fn main() -> Result<()> {
    let args = Args::parse();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(run(args))
}

async fn run(args: Args) -> Result<()> {
    let seed = args.seed.unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64)
    });
    let ebbd = match &args.ebbd {
        Some(p) => p.clone(),
        None => std::env::current_exe()?.with_file_name("ebbd"),
    };
    let root = tempfile::tempdir()?;
    println!(
        "ebb-faults: {} faults, seed {seed}, logs in {}",
        args.faults,
        root.path().display()
    );
    let timing = Timing {
        election: Duration::from_millis(args.election_ms),
        heartbeat: Duration::from_millis(args.heartbeat_ms),
    };
    let mut set = Set::start(&ebbd, root.path(), timing)?;
    set.initiate().await?;
    settle(&set).await.context("the set elected no primary")?;

    let stop = Arc::new(AtomicBool::new(false));
    let writers = tokio::spawn(ledger::write(set.hosts(), stop.clone()));
    let mut rng = StdRng::seed_from_u64(seed);
    let mut counts: BTreeMap<(Fault, bool), u32> = BTreeMap::new();
    let mut recoveries = Vec::new();
    let started = Instant::now();
    for _ in 0..args.faults {
        let primary = set.primary().await;
        let on_primary = primary.is_some() && rng.random_bool(0.5);
        let target = match primary {
            Some(p) if on_primary => p,
            _ => rng.random_range(0..3),
        };
        let fault = match rng.random_range(0..3) {
            0 => Fault::Kill,
            1 => Fault::Pause,
            _ => Fault::Cut,
        };
        *counts.entry((fault, on_primary)).or_default() += 1;
        let hold = Duration::from_millis(rng.random_range(200..1500));
        match fault {
            Fault::Kill => {
                set.members[target].kill();
                tokio::time::sleep(hold).await;
                set.spawn(target)?;
            }
            Fault::Pause => {
                set.members[target].signal(true);
                tokio::time::sleep(hold).await;
                set.members[target].signal(false);
            }
            Fault::Cut => {
                set.members[target].cut(true).await?;
                tokio::time::sleep(hold).await;
                set.members[target].cut(false).await?;
            }
        }
        let healed = Instant::now();
        settle(&set).await.with_context(|| {
            format!(
                "after {fault:?} of member {target}: see {}",
                set.members[target].log().display()
            )
        })?;
        recoveries.push(healed.elapsed());
    }
    stop.store(true, Ordering::SeqCst);
    let ledger = writers.await??;
    let faulted = started.elapsed();

    if let Err(e) = converge(&set).await {
        let kept = root.keep();
        return Err(e.context(format!("data and logs kept in {}", kept.display())));
    }
    let mut failed = false;
    // The primary's monitor deletes what was inserted due; every member
    // applies its deletes.
    let deadline = Instant::now() + SETTLE;
    for m in &set.members {
        while ledger::unexpired_on(m).await? > 0 {
            if Instant::now() > deadline {
                println!(
                    "member {}: documents inserted due were never deleted",
                    m.host()
                );
                failed = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    let mut first = None;
    let mut first_log = None;
    let mut first_archive = None;
    for m in &set.members {
        let held = ledger::held_by(m).await?;
        let changes = ledger::changes_of(m).await?;
        if !ledger::log_matches(&held, &changes) {
            println!(
                "member {}: its change log does not say each write it holds exactly once \
                 ({} insert events for {} documents, {} append events for {} values)",
                m.host(),
                changes.inserted.values().sum::<u32>(),
                held.inserted.len(),
                changes.appended.values().sum::<u32>(),
                held.appended.values().sum::<u32>(),
            );
            failed = true;
        }
        let archived = ledger::archived_on(m).await?;
        if !ledger::archived_once(&changes, &archived) {
            let twice = archived.values().filter(|c| **c > 1).count();
            println!(
                "member {}: its archive holds {} documents ({twice} more than once) for {} expired",
                m.host(),
                archived.len(),
                changes.expiring.len()
            );
            failed = true;
        }
        if differs_from_first(&mut first_archive, archived) {
            println!(
                "member {}: its archive differs from member {}'s",
                m.host(),
                set.members[0].host()
            );
            failed = true;
        }
        if !ledger::expiry_once(&changes) {
            let off = changes.expiring.values().filter(|s| **s != (1, 1)).count();
            println!(
                "member {}: {off} documents inserted due lack exactly one insert and one delete event",
                m.host()
            );
            failed = true;
        }
        if differs_from_first(&mut first_log, changes.tokens) {
            println!(
                "member {}: its change events differ from member {}'s",
                m.host(),
                set.members[0].host()
            );
            failed = true;
        }
        let breaches = ledger::check(&ledger, &held);
        if breaches.lost > 0 || breaches.twice > 0 {
            println!(
                "member {}: {} acknowledged writes lost, {} applied twice",
                m.host(),
                breaches.lost,
                breaches.twice
            );
            failed = true;
        }
        for coll in ["a", "b", ledger::EXPIRING, ledger::ARCHIVE] {
            let v = m
                .direct()
                .await?
                .database(ledger::DB)
                .run_command(doc! { "validate": coll })
                .await?;
            if v.get_bool("valid").ok() != Some(true) {
                println!("member {}: validate {coll}: {v}", m.host());
                failed = true;
            }
        }
        if differs_from_first(&mut first, held) {
            println!(
                "member {} holds other documents than member {}",
                m.host(),
                set.members[0].host()
            );
            failed = true;
        }
    }

    recoveries.sort();
    let pick = |q: f64| {
        recoveries
            .get(((recoveries.len() as f64 - 1.0) * q) as usize)
            .copied()
            .unwrap_or_default()
    };
    println!(
        "faults        {} in {:.0} s",
        args.faults,
        faulted.as_secs_f64()
    );
    for ((fault, on_primary), n) in &counts {
        let whom = if *on_primary { "primary" } else { "any member" };
        println!("  {fault:?} of {whom}: {n}");
    }
    println!(
        "writes        {} majority inserts and {} retryable appends acknowledged; {} and {} unknown (errors or timeouts)",
        ledger.inserted.len(),
        ledger.appended.len(),
        ledger.inserts_unknown,
        ledger.appends_unknown
    );
    println!(
        "expiry        {} documents inserted due ({} unknown), all deleted by the TTL monitor",
        ledger.expiring.len(),
        ledger.expiring_unknown
    );
    println!(
        "recovery      majority writes again {:.2} s after a fault ended (median), {:.2} s (max)",
        pick(0.5).as_secs_f64(),
        pick(1.0).as_secs_f64()
    );
    if failed {
        let kept = root.keep();
        bail!(
            "acknowledged writes lost, applied twice, or members differ; data and logs kept in {}",
            kept.display()
        );
    }
    println!(
        "result        0 lost, 0 applied twice, members identical (dbHash), indexes valid, \
         each write and each expiry once in every member's change log, each expired document \
         once in every member's archive"
    );
    Ok(())
}

/// Keeps the first member's `value`; whether a later member's differs.
fn differs_from_first<T: PartialEq>(first: &mut Option<T>, value: T) -> bool {
    match first {
        None => {
            *first = Some(value);
            false
        }
        Some(f) => *f != value,
    }
}

/// Waits until a primary takes a `w: "majority"` write.
async fn settle(set: &Set) -> Result<()> {
    let deadline = Instant::now() + SETTLE;
    let uri = format!(
        "mongodb://{}/?replicaSet=rs0&w=majority&serverSelectionTimeoutMS=2000&connectTimeoutMS=1000",
        set.hosts().join(",")
    );
    let client = mongodb::Client::with_uri_str(uri).await?;
    let probe = client
        .database(ledger::DB)
        .collection::<mongodb::bson::Document>("probe");
    loop {
        let wrote = tokio::time::timeout(Duration::from_secs(3), probe.insert_one(doc! {})).await;
        if matches!(wrote, Ok(Ok(_))) {
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!("no majority write within {SETTLE:?}");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Waits until every member applied the last write: a marker written with
/// `w: "majority"` is on each, and all hash the same.
async fn converge(set: &Set) -> Result<()> {
    settle(set).await?;
    let deadline = Instant::now() + SETTLE;
    let count = set.members.len();
    loop {
        let mut hashes = Vec::new();
        for m in &set.members {
            let db = m.direct().await?.database(ledger::DB);
            if let Ok(h) = db.run_command(doc! { "dbHash": 1 }).await {
                hashes.push(h.get_document("collections").cloned().unwrap_or_default());
            }
        }
        if hashes.len() == count && hashes.iter().all(|h| *h == hashes[0]) {
            return Ok(());
        }
        if Instant::now() > deadline {
            for (m, h) in set.members.iter().zip(&hashes) {
                println!("member {}: {h}", m.host());
            }
            bail!("members still differ {SETTLE:?} after the last fault");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
