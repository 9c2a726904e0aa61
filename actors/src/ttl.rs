//! `TtlMonitor`: owns the expiry schedule.
//!
//! MongoDB's algorithm, point by point: a *pass* runs *sub-passes* until
//! one ends with nothing left; a sub-pass refreshes the list of TTL
//! indexes, then visits them round-robin, each visit deleting until
//! `ttlIndexDeleteTargetDocs` documents or `ttlIndexDeleteTargetTimeMS`
//! (when `ttlMonitorBatchDeletes` is on), revisiting indexes that hit a
//! target while the sub-pass is younger than `ttlMonitorSubPassTargetSecs`.
//! Errors on one index are logged and the pass goes on.
//!
//! A visit never deletes itself: it sends chunks of work
//! ([`ExpireChunk`]) to the collection's single writer, so expiry is
//! serialised with the collection's other writes and foreground writes
//! wait at most one chunk. Between chunks the monitor can stop (shutdown)
//! and pace itself (`ttl.max_deletes_per_sec`).
//!
//! Without a rate limit, a chunk may find every document of the collection
//! due and delete them all at once (`expire::expire_all`): a few range
//! tombstones whatever the count, so it can exceed the visit's
//! `ttlIndexDeleteTargetDocs`, which exists to bound a visit's work.
//!
//! Beyond MongoDB: after a pass the monitor reads the earliest Date of each
//! TTL index and sleeps only until that entry falls due (never longer than
//! `ttlMonitorSleepSecs`), and writers that index an earlier due time wake
//! it ([`TtlState::note_due`](crate::shared::TtlState::note_due)). With
//! `ttl.prompt = false` it keeps MongoDB's fixed interval.

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use actix::prelude::*;
use ebb_storage::catalog::IndexMeta;
use tokio::sync::watch;

use crate::collection::{CollectionActor, ExpireChunk};
use crate::shared::{CatalogState, Shared, TtlOp};

/// Wait at least this long before retrying after a pass with errors, so a
/// failing index cannot make the monitor spin.
const RETRY_AFTER_ERROR: Duration = Duration::from_secs(1);

pub struct TtlMonitor {
    shared: Arc<Shared>,
    stopping: Arc<AtomicBool>,
    stopped: watch::Receiver<bool>,
    stopped_tx: Option<watch::Sender<bool>>,
}

impl TtlMonitor {
    pub fn new(shared: Arc<Shared>) -> Self {
        let (tx, rx) = watch::channel(false);
        TtlMonitor {
            shared,
            stopping: Arc::new(AtomicBool::new(false)),
            stopped: rx,
            stopped_tx: Some(tx),
        }
    }
}

impl Actor for TtlMonitor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        let shared = self.shared.clone();
        let stopping = self.stopping.clone();
        let stopped = self.stopped_tx.take().expect("started once");
        shared.ttl.running.store(true, Ordering::SeqCst);
        ctx.spawn(
            async move {
                run(&shared, &stopping).await;
                shared.ttl.running.store(false, Ordering::SeqCst);
                let _ = stopped.send(true);
            }
            .into_actor(self),
        );
    }
}

/// Stops the monitor between chunks; resolves once it has stopped.
#[derive(Message)]
#[rtype(result = "()")]
pub struct StopMonitor;

impl Handler<StopMonitor> for TtlMonitor {
    type Result = ResponseFuture<()>;

    fn handle(&mut self, _: StopMonitor, _: &mut Context<Self>) -> Self::Result {
        self.stopping.store(true, Ordering::SeqCst);
        self.shared.ttl.wake.notify_one();
        let mut stopped = self.stopped.clone();
        Box::pin(async move {
            let _ = stopped.wait_for(|s| *s).await;
        })
    }
}

/// One TTL index as the monitor visits it.
#[derive(Clone)]
struct Target {
    ns: String,
    db: String,
    collection: String,
    index: String,
    expire_after_secs: i64,
    addr: Addr<CollectionActor>,
}

fn targets(state: &CatalogState) -> Vec<Target> {
    state
        .collections
        .values()
        .flat_map(|e| {
            e.set
                .meta
                .indexes
                .iter()
                .filter(|i| i.is_ttl())
                .map(move |i: &IndexMeta| Target {
                    ns: e.set.meta.ns(),
                    db: e.set.meta.db.clone(),
                    collection: e.set.meta.name.clone(),
                    index: i.name.clone(),
                    expire_after_secs: i64::from(i.expire_after_seconds.unwrap_or(i32::MAX)),
                    addr: e.addr.clone(),
                })
        })
        .collect()
}

async fn run(shared: &Arc<Shared>, stopping: &AtomicBool) {
    let mut jumps = shared.clock.jumps();
    let mut pacer = Pacer::new(shared.ttl_max_deletes_per_sec);
    while !stopping.load(Ordering::SeqCst) {
        let enabled = shared.params.ttl_monitor_enabled();
        let had_errors = if enabled {
            run_pass(shared, stopping, &mut pacer).await
        } else {
            false
        };
        if stopping.load(Ordering::SeqCst) {
            break;
        }
        // From here on, a writer that indexes any due time wakes us:
        // nothing written while we plan can be missed.
        shared
            .ttl
            .next_wake_millis
            .store(i64::MAX, Ordering::SeqCst);
        if let Some(j) = &mut jumps {
            j.borrow_and_update();
        }
        let now = shared.clock.now_millis();
        let mut next = now.saturating_add(shared.params.ttl_monitor_sleep_secs() * 1000);
        if enabled
            && shared.ttl_prompt
            && let Some(due) = earliest_due(shared).await
        {
            let floor = if had_errors {
                now + RETRY_AFTER_ERROR.as_millis() as i64
            } else {
                now
            };
            next = next.min(due.max(floor));
        }
        shared
            .ttl
            .next_wake_millis
            .fetch_min(next, Ordering::SeqCst);
        let wait = Duration::from_millis(next.saturating_sub(now).max(0) as u64);
        tokio::select! {
            _ = tokio::time::sleep(wait) => {}
            _ = shared.ttl.wake.notified() => {}
            _ = clock_jump(&mut jumps) => {}
        }
        shared.ttl.wakeups.fetch_add(1, Ordering::SeqCst);
    }
}

async fn clock_jump(jumps: &mut Option<watch::Receiver<i64>>) {
    match jumps {
        Some(rx) => {
            if rx.changed().await.is_err() {
                std::future::pending::<()>().await;
            }
        }
        None => std::future::pending().await,
    }
}

/// The earliest time any TTL index has an entry falling due.
async fn earliest_due(shared: &Arc<Shared>) -> Option<i64> {
    let state = shared.catalog.load();
    let engine = shared.engine.clone();
    let items: Vec<_> = state
        .collections
        .values()
        .flat_map(|e| {
            e.set
                .meta
                .indexes
                .iter()
                .filter(|i| i.is_ttl())
                .map(move |i| {
                    (
                        e.set.clone(),
                        i.name.clone(),
                        i64::from(i.expire_after_seconds.unwrap_or(i32::MAX)),
                    )
                })
        })
        .collect();
    if items.is_empty() {
        return None;
    }
    tokio::task::spawn_blocking(move || {
        items
            .iter()
            .filter_map(|(set, name, secs)| {
                let date =
                    ebb_storage::expire::earliest_date(engine.as_ref(), set, name).ok()??;
                Some(date.saturating_add(secs.saturating_mul(1000)))
            })
            .min()
    })
    .await
    .ok()
    .flatten()
}

/// One pass; returns whether any index failed.
async fn run_pass(shared: &Arc<Shared>, stopping: &AtomicBool, pacer: &mut Pacer) -> bool {
    let started = Instant::now();
    let mut deleted_total = 0u64;
    let mut sub_passes = 0u64;
    let mut errors = false;
    loop {
        let sub_started = Instant::now();
        let sub_target = Duration::from_secs(shared.params.ttl_monitor_sub_pass_target_secs());
        let mut queue: VecDeque<Target> = targets(&shared.catalog.load()).into();
        let mut work_left = false;
        while let Some(t) = queue.pop_front() {
            if stopping.load(Ordering::SeqCst) {
                return errors;
            }
            match visit(shared, &t, stopping, pacer).await {
                Ok(v) => {
                    deleted_total += v.deleted;
                    if v.hit_target {
                        if sub_started.elapsed() < sub_target {
                            queue.push_back(t);
                        } else {
                            work_left = true;
                        }
                    }
                }
                Err(e) => {
                    errors = true;
                    tracing::warn!(ns = %t.ns, index = %t.index, error = %e, "TTL deletion failed; continuing with the next index");
                }
            }
        }
        shared.ttl.sub_passes.fetch_add(1, Ordering::SeqCst);
        sub_passes += 1;
        if !work_left {
            break;
        }
    }
    shared.ttl.passes.fetch_add(1, Ordering::SeqCst);
    let elapsed_ms = started.elapsed().as_millis() as u64;
    if deleted_total > 0 {
        tracing::info!(deleted = deleted_total, sub_passes, elapsed_ms, "TTL pass");
    } else {
        tracing::debug!(deleted = 0, sub_passes, elapsed_ms, "TTL pass");
    }
    errors
}

struct Visit {
    deleted: u64,
    hit_target: bool,
}

/// Deletes expired documents of one index until nothing is left or a
/// per-visit target is reached.
async fn visit(
    shared: &Arc<Shared>,
    t: &Target,
    stopping: &AtomicBool,
    pacer: &mut Pacer,
) -> Result<Visit, String> {
    let cutoff = shared
        .clock
        .now_millis()
        .saturating_sub(t.expire_after_secs.saturating_mul(1000));
    let batching = shared.params.ttl_monitor_batch_deletes();
    let target_docs = if batching {
        shared.params.ttl_index_delete_target_docs()
    } else {
        0
    };
    let target_time = if batching {
        shared.params.ttl_index_delete_target_time_ms()
    } else {
        0
    };
    let started = Instant::now();
    let mut visit = Visit {
        deleted: 0,
        hit_target: false,
    };
    let mut resume = None;
    set_current(
        shared,
        Some(TtlOp {
            ns: t.ns.clone(),
            index: t.index.clone(),
            started_millis: shared.clock.now_millis(),
            deleted: 0,
        }),
    );
    let result = loop {
        if stopping.load(Ordering::SeqCst) {
            break Ok(());
        }
        let mut limit = shared.ttl_chunk_docs as u64;
        if target_docs > 0 {
            limit = limit.min(target_docs - visit.deleted);
        }
        limit = pacer.wait_for(limit).await;
        let chunk = ExpireChunk {
            index: t.index.clone(),
            cutoff_millis: cutoff,
            limit: limit as usize,
            resume_after: resume.take(),
            whole: pacer.unlimited(),
        };
        let out = match t.addr.send(chunk).await {
            Ok(Ok(out)) => out,
            Ok(Err(e)) if e.kind == ebb_storage::ErrorKind::NamespaceNotFound => break Ok(()),
            Ok(Err(e)) => break Err(e.to_string()),
            // The collection was dropped under us: nothing left to do.
            Err(_) => break Ok(()),
        };
        pacer.spent(out.deleted);
        visit.deleted += out.deleted;
        shared
            .ttl
            .deleted_documents
            .fetch_add(out.deleted, Ordering::SeqCst);
        if let Some(op) = shared.ttl.current.lock().expect("ttl op lock").as_mut() {
            op.deleted = visit.deleted;
        }
        if !out.more {
            break Ok(());
        }
        resume = out.resume_after;
        let docs_hit = target_docs > 0 && visit.deleted >= target_docs;
        let time_hit = target_time > 0 && started.elapsed() >= Duration::from_millis(target_time);
        if docs_hit || time_hit {
            visit.hit_target = true;
            break Ok(());
        }
    };
    set_current(shared, None);
    tracing::trace!(db = %t.db, collection = %t.collection, index = %t.index, deleted = visit.deleted, "TTL visit");
    result.map(|()| visit)
}

fn set_current(shared: &Shared, op: Option<TtlOp>) {
    *shared.ttl.current.lock().expect("ttl op lock") = op;
}

/// Paces deletions to a rate: after `n` deletions the next chunk may
/// start `n / rate` seconds later. Unused credit is capped at 100 ms so a
/// quiet period does not allow a burst.
struct Pacer {
    per_sec: u64,
    next: Instant,
}

impl Pacer {
    fn new(per_sec: u64) -> Self {
        Pacer {
            per_sec,
            next: Instant::now(),
        }
    }

    /// Whether no rate applies.
    fn unlimited(&self) -> bool {
        self.per_sec == 0
    }

    /// Waits until a chunk may start; returns the chunk size to use.
    async fn wait_for(&mut self, limit: u64) -> u64 {
        if self.unlimited() {
            return limit.max(1);
        }
        let now = Instant::now();
        let credit = Duration::from_millis(100);
        if self.next + credit < now {
            self.next = now - credit;
        }
        if self.next > now {
            tokio::time::sleep_until(self.next.into()).await;
        }
        // Chunks of at most 10 ms worth keep the rate smooth.
        limit.min((self.per_sec / 100).max(1)).max(1)
    }

    fn spent(&mut self, deleted: u64) {
        if self.per_sec > 0 {
            self.next += Duration::from_secs_f64(deleted as f64 / self.per_sec as f64);
        }
    }
}
