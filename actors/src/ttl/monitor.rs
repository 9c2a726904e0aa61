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
//! due and delete them all at once (`ttl::expire_all`): a few range
//! tombstones whatever the count, so it can exceed the visit's
//! `ttlIndexDeleteTargetDocs`, which exists to bound a visit's work.
//!
//! On a replica-set member the chunks go through the set's log
//! (`route`), and only while the member is a writable primary: it checks
//! before every chunk, and a pass that finds it no longer leads ends there
//! (MongoDB's `kill_ttl_on_stepdown`). Its other passes delete nothing.
//!
//! Beyond MongoDB: after a pass the monitor reads the earliest Date of each
//! TTL index and sleeps only until that entry falls due (never longer than
//! `ttlMonitorSleepSecs`), and writers that index an earlier due time wake
//! it ([`TtlState::note_due`](super::TtlState::note_due)). With
//! `ttl.prompt = false` it keeps MongoDB's fixed interval. When to wake,
//! and how long to back off after a pass with errors, is decided in
//! `wake`; the deletion rate in `pacer`.
//!
//! The monitor remembers, per index, how late its last chunk was (the
//! oldest document it deleted, from its due time to the answer). Within
//! [`KEEPING_UP`] the next chunk is sent as `prompt`: its documents have
//! only just fallen due, and the writer gives its plan a shorter patience.
//! Beyond [`BEHIND`] the next chunk is sent as `behind`: expiry's promise
//! is already broken, and the writer runs the chunk itself at normal
//! priority instead of planning it at idle priority, until the index is
//! caught up.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use actix::prelude::*;
use ebb_storage::Collection;
use ebb_storage::catalog::IndexMeta;
use ebb_storage::index::{cutoff_millis, due_millis};
use ebb_storage::ttl::{ExpiryPolicy, earliest_date};
use tokio::sync::watch;

use super::pacer::Pacer;
use super::state::{TtlOp, TtlVisit};
use super::wake::{Backoff, WakeInputs, next_wake};
use crate::catalog::{CatalogState, CatalogView};
use crate::collection::{CollectionActor, ExpireChunk};
use crate::shared::Shared;

/// A chunk is `prompt` when the last chunk of its index deleted documents
/// at most this long after they fell due: the monitor is keeping up.
pub const KEEPING_UP: Duration = Duration::from_millis(100);

/// A chunk is `behind` when the last chunk of its index deleted documents
/// more than this long after they fell due. While foreground writes are
/// active, chunks are planned on a thread at idle priority; a CPU kept
/// busy by other work (another process, say) starves that thread, and a
/// plan that comes back slowly but within its patience keeps every chunk
/// that slow, so a backlog, once seconds old, would only grow. From here
/// on the writer runs the chunks itself at normal priority: writes wait
/// behind such a chunk, and on the nice +10 TTL thread a CPU busy with the
/// writes starved it (`churn` at 150k/s: 6 % of ebbd's CPU, lag p99 11 s;
/// BENCHMARKS.md). Never under a deletion-rate limit, where a backlog is
/// the operator's choice.
pub const BEHIND: Duration = Duration::from_secs(1);

/// How late each index's last chunk was, in millis, by (namespace, index);
/// `None` until a chunk of it deleted something.
type Lateness = HashMap<(String, String), Option<i64>>;

/// Whether a chunk whose index's last chunk was `late` millis late is sent
/// as `prompt`; an index not yet visited is not.
fn keeping_up(late: Option<i64>) -> bool {
    late.is_some_and(|l| l <= KEEPING_UP.as_millis() as i64)
}

/// Whether a chunk whose index's last chunk was `late` millis late is sent
/// as `behind`.
fn falling_behind(late: Option<i64>) -> bool {
    late.is_some_and(|l| l > BEHIND.as_millis() as i64)
}

/// Whether a chunk throttles its collection's writes: under
/// `ttl.overload = "throttle"`, once its index's last chunk was later than
/// [`KEEPING_UP`], until one is within it again. Never under a
/// deletion-rate limit, which is a promise about deletions, not writes.
fn throttles(policy: &ExpiryPolicy, unlimited: bool, late: Option<i64>) -> bool {
    policy.throttle && unlimited && late.is_some() && !keeping_up(late)
}

/// Why deleting from one TTL index failed. The pass logs it and goes on
/// with the next index; the next prompt wake-up backs off.
#[derive(Debug, thiserror::Error)]
pub enum TtlError {
    #[error("{0}")]
    Storage(#[from] ebb_storage::Error),
}

pub struct TtlMonitor {
    shared: Arc<Shared>,
    view: Arc<CatalogView>,
    stopping: Arc<AtomicBool>,
    stopped: watch::Receiver<bool>,
    stopped_tx: Option<watch::Sender<bool>>,
}

impl TtlMonitor {
    pub fn new(shared: Arc<Shared>, view: Arc<CatalogView>) -> Self {
        let (tx, rx) = watch::channel(false);
        TtlMonitor {
            shared,
            view,
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
        let view = self.view.clone();
        let stopping = self.stopping.clone();
        let stopped = self.stopped_tx.take().expect("started once");
        shared.ttl.running.store(true, Ordering::SeqCst);
        ctx.spawn(
            async move {
                run(&shared, &view, &stopping).await;
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
    coll: Arc<Collection>,
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
            e.coll
                .meta
                .indexes
                .iter()
                // A time-series collection in the extended range (a
                // measurement before 1970 or after 2038-01-19T03:14:07Z)
                // is skipped entirely, as MongoDB 7.0–8.0 do.
                .filter(|i| i.is_ttl() && !e.coll.in_extended_range())
                .filter(|i| missing_archive(state, &e.coll, i).is_none())
                .map(move |i: &IndexMeta| Target {
                    coll: e.coll.clone(),
                    ns: e.coll.meta.ns(),
                    db: e.coll.meta.db.clone(),
                    collection: e.coll.meta.name.clone(),
                    index: i.name.clone(),
                    expire_after_secs: i64::from(i.expire_after_seconds.unwrap_or(i32::MAX)),
                    addr: e.addr.clone(),
                })
        })
        .collect()
}

/// The archive TTL index `index` of `coll` writes to, when that collection
/// does not exist (dropped): the index expires nothing until it is back,
/// and its due documents stay, hidden. Not an error of the pass: nothing
/// else waits for it.
fn missing_archive(state: &CatalogState, coll: &Collection, index: &IndexMeta) -> Option<String> {
    let archive = index.archive_to()?;
    state
        .get(&coll.meta.db, archive)
        .is_none()
        .then(|| format!("{}.{archive}", coll.meta.db))
}

/// Says once, as it begins and as it ends, that an archiving TTL index is
/// held back by its missing archive.
fn note_held_back(state: &CatalogState, held: &mut HashSet<(String, String)>) {
    let mut now = HashSet::new();
    for e in state.collections.values() {
        for i in e.coll.meta.indexes.iter().filter(|i| i.is_ttl()) {
            if let Some(archive) = missing_archive(state, &e.coll, i) {
                let key = (e.coll.meta.ns(), i.name.clone());
                if !held.contains(&key) {
                    tracing::warn!(ns = %key.0, index = %key.1, %archive, "the archive of this TTL index does not exist: its due documents stay, hidden, and expire once it is created again");
                }
                now.insert(key);
            }
        }
    }
    for (ns, index) in held.difference(&now) {
        tracing::info!(%ns, %index, "the archive of this TTL index is back: its documents expire again");
    }
    *held = now;
}

/// The monitor's loop as a worker: [`Worker::work`] runs one pass (when
/// enabled) and records whether it failed, [`Worker::next_wake`] decides
/// when the next pass is due (`wake.rs`: prompt expiry, the fixed
/// interval, back-off after failures), and [`Worker::sleep_until`] waits
/// for it, or for a writer, a parameter change or a clock jump to wake it.
struct Worker<'a> {
    shared: &'a Arc<Shared>,
    view: &'a CatalogView,
    stopping: &'a AtomicBool,
    pacer: Pacer,
    backoff: Backoff,
    jumps: Option<watch::Receiver<i64>>,
    lateness: Lateness,
    /// Archiving TTL indexes whose archive is missing, by namespace.
    held_back: HashSet<(String, String)>,
}

impl Worker<'_> {
    fn stopping(&self) -> bool {
        self.stopping.load(Ordering::SeqCst)
    }

    /// One pass, when the monitor is enabled. On a replica-set member that
    /// is not a writable primary the pass deletes nothing, and is counted
    /// as mongod counts it.
    async fn work(&mut self) {
        let shared = self.shared;
        let _gate = shared.ttl.hold().await;
        if !shared.params.ttl_monitor_enabled() {
            return;
        }
        if !shared.expiry.may_expire() {
            shared.ttl.sub_passes.fetch_add(1, Ordering::SeqCst);
            shared.ttl.passes.fetch_add(1, Ordering::SeqCst);
            return;
        }
        let failed = run_pass(self).await;
        self.backoff.record(failed);
    }

    /// Returns `(now, next)`: when the next pass is due.
    async fn next_wake(&mut self) -> (i64, i64) {
        let shared = self.shared;
        // From here on, a writer that indexes any due time wakes us:
        // nothing written while we plan can be missed.
        shared
            .ttl
            .next_wake_millis
            .store(i64::MAX, Ordering::SeqCst);
        if let Some(j) = &mut self.jumps {
            j.borrow_and_update();
        }
        let now = shared.clock.now_millis();
        let enabled = shared.params.ttl_monitor_enabled();
        let deletes = shared.expiry.may_expire();
        let prompt = enabled && deletes && shared.policy.prompt;
        let inputs = WakeInputs {
            now,
            sleep_secs: shared.params.ttl_monitor_sleep_secs(),
            enabled,
            prompt: shared.policy.prompt,
            earliest_due: if prompt {
                earliest_due(shared, self.view).await
            } else {
                None
            },
        };
        let next = next_wake(inputs, self.backoff);
        if deletes {
            shared
                .ttl
                .next_wake_millis
                .fetch_min(next, Ordering::SeqCst);
        } else {
            // A member that does not delete is not woken by writers: the
            // set wakes it when it becomes primary.
            shared
                .ttl
                .next_wake_millis
                .store(i64::MIN, Ordering::SeqCst);
        }
        (now, next)
    }

    /// Sleeps until `next`, or until something wakes the monitor early.
    async fn sleep_until(&mut self, now: i64, next: i64) {
        let wait = Duration::from_millis(next.saturating_sub(now).max(0) as u64);
        tokio::select! {
            _ = tokio::time::sleep(wait) => {}
            _ = self.shared.ttl.wake.notified() => {}
            _ = clock_jump(&mut self.jumps) => {}
        }
        self.shared.ttl.wakeups.fetch_add(1, Ordering::SeqCst);
    }
}

async fn run(shared: &Arc<Shared>, view: &CatalogView, stopping: &AtomicBool) {
    let mut worker = Worker {
        shared,
        view,
        stopping,
        pacer: Pacer::new(shared.policy.max_deletes_per_sec),
        backoff: Backoff::default(),
        jumps: shared.clock.jumps(),
        lateness: Lateness::new(),
        held_back: HashSet::new(),
    };
    while !worker.stopping() {
        worker.work().await;
        if worker.stopping() {
            break;
        }
        let (now, next) = worker.next_wake().await;
        worker.sleep_until(now, next).await;
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
async fn earliest_due(shared: &Arc<Shared>, view: &CatalogView) -> Option<i64> {
    let engine = shared.engine.clone();
    let items = targets(&view.load());
    if items.is_empty() {
        return None;
    }
    tokio::task::spawn_blocking(move || {
        items
            .iter()
            .filter_map(|t| {
                let date = earliest_date(engine.as_ref(), &t.coll, &t.index).ok()??;
                Some(due_millis(date, t.expire_after_secs))
            })
            .min()
    })
    .await
    .ok()
    .flatten()
}

/// One pass; returns whether any index failed.
async fn run_pass(worker: &mut Worker<'_>) -> bool {
    let Worker {
        shared,
        view,
        stopping,
        pacer,
        lateness,
        held_back,
        ..
    } = worker;
    note_held_back(&view.load(), held_back);
    let (shared, stopping) = (*shared, *stopping);
    let started = Instant::now();
    let mut deleted_total = 0u64;
    let mut sub_passes = 0u64;
    let mut errors = false;
    loop {
        let sub_started = Instant::now();
        let sub_target = Duration::from_secs(shared.params.ttl_monitor_sub_pass_target_secs());
        let mut queue: VecDeque<Target> = targets(&view.load()).into();
        lateness.retain(|(ns, index), _| queue.iter().any(|t| t.ns == *ns && t.index == *index));
        let mut work_left = false;
        while let Some(t) = queue.pop_front() {
            if stopping.load(Ordering::SeqCst) {
                return errors;
            }
            let last_late = lateness.entry((t.ns.clone(), t.index.clone())).or_default();
            match visit(shared, &t, stopping, pacer, last_late).await {
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

/// The size of each chunk when `left` documents are cut into as few
/// chunks of at most `max` as possible, all of about the same size: the
/// chunks of a visit then ask for the same limit, so the writer's plan of
/// the next chunk, made at the last one's limit, serves it (a visit of
/// 50,000 in chunks of 8,192 ended with one of 848, planned again on the
/// writer).
fn even_share(left: u64, max: u64) -> u64 {
    match left.div_ceil(max.max(1)) {
        0 => 0,
        chunks => left.div_ceil(chunks),
    }
}

/// The limit of a visit's chunk once `deleted` documents of the visit are
/// deleted: the rest of `target_docs` shared evenly, or `max` without a
/// target.
fn chunk_limit(target_docs: u64, deleted: u64, max: u64) -> u64 {
    match target_docs {
        0 => max,
        t => even_share(t - deleted, max),
    }
}

/// The limit of the chunk after one that ends with `deleted` documents
/// deleted in its visit: the visit's next, or, once the visit reaches
/// `target_docs`, the next visit's first (`ExpireChunk::next_limit`).
fn next_limit(target_docs: u64, deleted: u64, max: u64) -> u64 {
    let deleted = if deleted >= target_docs { 0 } else { deleted };
    chunk_limit(target_docs, deleted, max)
}

struct Visit {
    deleted: u64,
    hit_target: bool,
}

/// Deletes expired documents of one index until nothing is left or a
/// per-visit target is reached. `last_late` is how late the index's last
/// chunk was (see [`KEEPING_UP`]); each chunk that deletes updates it.
async fn visit(
    shared: &Arc<Shared>,
    t: &Target,
    stopping: &AtomicBool,
    pacer: &mut Pacer,
    last_late: &mut Option<i64>,
) -> Result<Visit, TtlError> {
    let cutoff = cutoff_millis(shared.clock.now_millis(), t.expire_after_secs);
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
        if stopping.load(Ordering::SeqCst) || !shared.expiry.may_expire() {
            break Ok(());
        }
        let max = shared.policy.quiet_chunk_max_docs as u64;
        let limit = pacer
            .wait_for(chunk_limit(target_docs, visit.deleted, max))
            .await;
        let next_limit = next_limit(target_docs, visit.deleted + limit, max);
        let logged = shared.expiry.route().is_some();
        let chunk = ExpireChunk {
            index: t.index.clone(),
            cutoff_millis: cutoff,
            limit: limit as usize,
            resume_after: resume.take(),
            whole: !logged && pacer.unlimited() && shared.policy.allows_whole_collection(),
            prompt: keeping_up(*last_late),
            // Under a deletion-rate limit a backlog is the operator's
            // choice: its chunks keep sparing the foreground.
            behind: pacer.unlimited() && falling_behind(*last_late),
            throttle: throttles(&shared.policy, pacer.unlimited(), *last_late),
            next_limit: next_limit as usize,
            logged,
            rider: None,
        };
        let (prompt, behind, throttle) = (chunk.prompt, chunk.behind, chunk.throttle);
        let sent = Instant::now();
        let answer = match shared.expiry.route() {
            None => t.addr.send(chunk).await,
            Some(route) => match route.expire(&t.db, &t.collection, chunk).await {
                Some(result) => Ok(result),
                // No longer the primary: the pass ends here, quietly.
                None => break Ok(()),
            },
        };
        shared.ttl.chunks.fetch_add(1, Ordering::Relaxed);
        if prompt {
            shared.ttl.runs.prompt.fetch_add(1, Ordering::Relaxed);
        }
        if behind {
            shared.ttl.runs.behind.fetch_add(1, Ordering::Relaxed);
        }
        if throttle {
            shared.ttl.runs.throttled.fetch_add(1, Ordering::Relaxed);
        }
        shared
            .ttl
            .chunk_micros
            .fetch_add(sent.elapsed().as_micros() as u64, Ordering::Relaxed);
        let out = match answer {
            Ok(Ok(out)) => out,
            Ok(Err(e)) if e.kind == ebb_storage::ErrorKind::NamespaceNotFound => break Ok(()),
            Ok(Err(e)) => break Err(e.into()),
            // The collection was dropped under us: nothing left to do.
            Err(_) => break Ok(()),
        };
        pacer.spent(out.deleted);
        if let Some(oldest) = out.oldest_millis {
            let due = due_millis(oldest, t.expire_after_secs);
            let late = shared.clock.now_millis().saturating_sub(due).max(0);
            shared.ttl.observe_lag(late);
            *last_late = Some(late);
        }
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
    if visit.deleted > 0 {
        // Nobody listening (no profiler) is not an error.
        let _ = shared.ttl.visits.send(TtlVisit {
            db: t.db.clone(),
            collection: t.collection.clone(),
            index: t.index.clone(),
            deleted: visit.deleted,
            cutoff_millis: cutoff,
            millis: started.elapsed().as_millis() as u64,
        });
    }
    result.map(|()| visit)
}

fn set_current(shared: &Shared, op: Option<TtlOp>) {
    *shared.ttl.current.lock().expect("ttl op lock") = op;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_visit_is_cut_into_chunks_of_one_size() {
        assert_eq!(even_share(50_000, 8_192), 7_143);
        assert_eq!(even_share(50_000 - 7_143, 8_192), 7_143);
        assert_eq!(even_share(50_000, 32_768), 25_000);
        assert_eq!(even_share(25_000, 32_768), 25_000);
        assert_eq!(even_share(100, 8_192), 100);
        assert_eq!(even_share(0, 8_192), 0);
        assert_eq!(even_share(7, 0), 1, "a zero maximum means chunks of one");
    }

    #[test]
    fn the_next_chunk_is_the_visits_next_or_the_next_visits_first() {
        assert_eq!(next_limit(50_000, 25_000, 32_768), 25_000);
        assert_eq!(next_limit(50_000, 50_000, 32_768), 25_000, "next visit");
        assert_eq!(next_limit(50_000, 49_000, 32_768), 1_000);
        assert_eq!(next_limit(0, 1_000_000, 32_768), 32_768, "no target");
    }

    #[test]
    fn chunks_are_prompt_while_the_index_last_kept_up() {
        let limit = KEEPING_UP.as_millis() as i64;
        assert!(!keeping_up(None), "an index not yet visited");
        assert!(keeping_up(Some(0)));
        assert!(keeping_up(Some(limit)));
        assert!(!keeping_up(Some(limit + 1)), "a backlog");
    }

    #[test]
    fn chunks_are_behind_only_once_the_index_is_seconds_late() {
        let limit = BEHIND.as_millis() as i64;
        assert!(!falling_behind(None), "an index not yet visited");
        assert!(!falling_behind(Some(KEEPING_UP.as_millis() as i64 + 1)));
        assert!(!falling_behind(Some(limit)));
        assert!(falling_behind(Some(limit + 1)));
        assert!(!keeping_up(Some(limit + 1)), "never both");
    }

    #[test]
    fn chunks_throttle_writes_only_when_asked_and_late_without_a_rate_limit() {
        let late = Some(KEEPING_UP.as_millis() as i64 + 1);
        let on_time = Some(KEEPING_UP.as_millis() as i64);
        let backlog = ExpiryPolicy::default();
        let throttle = ExpiryPolicy {
            throttle: true,
            ..ExpiryPolicy::default()
        };
        assert!(
            !throttles(&backlog, true, late),
            "the default lets a backlog grow"
        );
        assert!(throttles(&throttle, true, late), "engages once late");
        assert!(
            !throttles(&throttle, true, on_time),
            "releases once on time"
        );
        assert!(
            !throttles(&throttle, true, None),
            "an index not yet visited"
        );
        assert!(!throttles(&throttle, false, late), "not under a rate limit");
    }
}
