//! One chunk of TTL expiry: the expired entries of one TTL index, from the
//! floor up to a cutoff, deleted with their documents and every other index
//! entry in one batch.
//!
//! [`expire`] runs on the collection's single writer, so the index entries
//! a chunk scans are current: a document updated to a later date has
//! already left the range, and a document in a partial index passed its
//! filter. Nothing is re-checked and nothing can change between the scan
//! and the delete. [`plan`] does the same reading without the writer and
//! [`apply`] commits its deletions later; the writer applies a plan only if
//! it wrote nothing in between, which keeps the same guarantee (the
//! invariant: docs/expiry.md#plan-epoch).
//!
//! [`plan_after`] plans the next chunk of a visit while the previous plan
//! is still being applied (the writer's lookahead): the only write in
//! between is that plan's own, which deletes entries below where the next
//! chunk starts, and records and entries of the documents it deletes. The
//! next plan therefore skips the documents the previous one deletes (a
//! multikey document has entries on both sides), and treats their records
//! as still present when it looks for a contiguous run (at worst it deletes
//! point by point). A capped collection's totals are read and rewritten by
//! every chunk, so its chunks are never planned ahead ([`Plan::follows_ok`]).
//!
//! A large chunk writes as few tombstones as the layout allows:
//!
//! - the TTL entries it scanned, `[lower, last]`, are one contiguous key
//!   range holding only entries of documents it deletes: one range
//!   tombstone replaces a point delete per document (and later scans skip
//!   it in one step instead of walking a tombstone per document);
//! - records are clustered by `_id`, and documents that expire together
//!   were usually inserted together (ObjectIds grow with time): when the
//!   records between the chunk's smallest and largest `_id` are exactly its
//!   documents, one range scan reads them and one range tombstone deletes
//!   them; otherwise they are read with a multi-get and deleted one by one;
//! - only the entries of the other indexes are deleted point by point;
//! - a TTL entry carries the keys of its document's entries (`carry`), so
//!   a document goes without reading its record: only the keys of the
//!   records are compared to find a contiguous run. Documents whose TTL
//!   entry does not cover the current indexes (an index built since) are
//!   read and their keys generated, as before.
//!
//! A small chunk (below [`ExpiryPolicy::range_delete_min_docs`]; the writer
//! shrinks chunks while foreground writes are active) deletes point by
//! point instead: every new iterator re-fragments all range tombstones of
//! the mutable memtable, so thousands of small range tombstones would slow
//! every later scan, while a few hundred adjacent point deletes applied in
//! key order cost little.

use bson::RawDocument;

use super::carry;
use super::policy::ExpiryPolicy;
use super::queue::{QueueItem, Queued};
use super::sweep;
use crate::capped::order;
use crate::collection::Collection;
use crate::engine::{Batch, Cf, Direction, Engine, KeyRange, KeySet, SealedBatch, key_after};
use crate::index::KeyGen;
use crate::index::floor::lowest_possible;
use ebb_lang::encoding::keycode;
use ebb_lang::error::Result;

/// Result of one TTL expiry chunk.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct ExpireOutcome {
    pub deleted: u64,
    /// Where the next chunk of this visit resumes (exclusive), when `more`
    /// is set.
    pub resume_after: Option<Vec<u8>>,
    /// Whether expired entries remain beyond this chunk.
    pub more: bool,
    /// The indexed Date of the oldest document deleted, from which the
    /// monitor tells how late expiry runs (`/metrics`).
    pub oldest_millis: Option<i64>,
}

/// One chunk of a TTL visit: up to `limit` documents whose entry in TTL
/// index `index` holds a Date `<= cutoff_millis`, after `resume_after`.
#[derive(Debug, Clone, Copy)]
pub struct Chunk<'a> {
    pub index: &'a str,
    pub cutoff_millis: i64,
    pub limit: usize,
    pub resume_after: Option<&'a [u8]>,
}

/// Deletes one chunk of expired documents in one batch.
pub fn expire(
    engine: &dyn Engine,
    coll: &Collection,
    chunk: Chunk<'_>,
    policy: &ExpiryPolicy,
) -> Result<ExpireOutcome> {
    apply(engine, coll, plan(engine, coll, chunk, policy)?)
}

/// A chunk read and decided without holding the writer: the deletions it
/// would make, to be applied by the writer only if nothing was written to
/// the collection in between (the caller's check; the plan cannot tell).
#[derive(Debug)]
pub struct Plan {
    index_name: String,
    /// The deletions, encoded and sorted off the writer: applying the plan
    /// only commits them.
    batch: SealedBatch,
    found: Found,
    /// The documents it deletes, by record key.
    ids: KeySet,
    /// Whether a plan of the next chunk may be made before this one is
    /// applied (see the module doc).
    follows_ok: bool,
}

impl Plan {
    /// Documents the plan deletes.
    pub fn docs(&self) -> u64 {
        self.found.deleted
    }

    /// Whether expired entries remain beyond this chunk.
    pub fn more(&self) -> bool {
        self.found.more
    }

    /// The TTL key the next chunk of the visit resumes after.
    pub fn resume_after(&self) -> Option<&[u8]> {
        self.found.last.as_deref()
    }

    /// Whether the next chunk may be planned before this one is applied.
    pub fn follows_ok(&self) -> bool {
        self.follows_ok && self.found.more
    }

    /// What [`plan_after`] needs of this plan; the plan keeps what
    /// [`apply`] needs.
    pub fn take_deleted_ids(&mut self) -> DeletedIds {
        DeletedIds(std::mem::take(&mut self.ids))
    }
}

/// Whether a chunk of TTL index `index` that starts from the floor (no
/// `resume_after`: a new visit) starts exactly where one resuming after
/// `resume_after` would: the chunk that ended there raised the floor to it
/// (it scanned from the floor and found more). A plan made for the
/// resuming chunk then serves the new visit's first chunk.
pub fn resumes_at_floor(coll: &Collection, index: &str, resume_after: &[u8]) -> bool {
    coll.keygen(index)
        .and_then(KeyGen::floor)
        .is_some_and(|floor| floor.is_at(&key_after(resume_after)))
}

/// The documents an unapplied plan deletes, for [`plan_after`].
#[derive(Debug, Default)]
pub struct DeletedIds(KeySet);

/// Reads one chunk like [`expire`] but only records its deletions.
pub fn plan(
    engine: &dyn Engine,
    coll: &Collection,
    chunk: Chunk<'_>,
    policy: &ExpiryPolicy,
) -> Result<Plan> {
    plan_after(engine, coll, chunk, policy, DeletedIds::default())
}

/// Plans the chunk that follows a plan not yet applied (the writer's
/// lookahead; see the module doc): documents in `gone` are left to it.
pub fn plan_after(
    engine: &dyn Engine,
    coll: &Collection,
    chunk: Chunk<'_>,
    policy: &ExpiryPolicy,
    gone: DeletedIds,
) -> Result<Plan> {
    let mut batch = engine.batch();
    let (found, ids) = collect(engine, coll, chunk, policy, &gone.0, false, batch.as_mut())?;
    Ok(Plan {
        index_name: chunk.index.to_owned(),
        batch: batch.seal(),
        found,
        ids,
        follows_ok: coll.natural().is_none(),
    })
}

/// Applies a [`Plan`] made against this same `coll` with no write since.
///
/// The records the plan leaves to the sweep are hidden from readers
/// before it commits (`engine::held`): a read in between passes over
/// documents about to go, as one a moment later would.
pub fn apply(engine: &dyn Engine, coll: &Collection, mut plan: Plan) -> Result<ExpireOutcome> {
    let queued = std::mem::take(&mut plan.found.queued);
    let holding = coll.sweep.hold(engine, coll.meta.id, queued)?;
    // A member applying a chunk from the log commits even an empty batch,
    // which records its progress (`ebb_lang::decided::Rider`).
    let counted = ebb_lang::decided::rider().is_some();
    if (!plan.batch.is_empty() || counted)
        && let Err(e) = engine.commit_sealed(plan.batch, false)
    {
        coll.sweep.not_queued(holding);
        return Err(e);
    }
    coll.sweep.queued(holding);
    Ok(plan.found.finish(coll, &plan.index_name))
}

/// The deletions of an archiving chunk, put into a batch its caller
/// commits with the copies it writes (`write::archive`).
pub struct Taken {
    index_name: String,
    found: Found,
}

/// Scans one chunk of an archiving TTL index and puts its deletions into
/// `out`, reading every document it deletes.
pub fn take(
    engine: &dyn Engine,
    coll: &Collection,
    chunk: Chunk<'_>,
    policy: &ExpiryPolicy,
    out: &mut dyn Batch,
) -> Result<Taken> {
    let gone = KeySet::default();
    let (found, _) = collect(engine, coll, chunk, policy, &gone, true, out)?;
    Ok(Taken {
        index_name: chunk.index.to_owned(),
        found,
    })
}

impl Taken {
    /// Each document the chunk deletes (its bytes), with its indexed date,
    /// in the order it took them.
    pub fn expired(&mut self) -> Vec<(Vec<u8>, i64)> {
        std::mem::take(&mut self.found.expired)
    }

    /// Commits the batch holding the deletions through `commit`, as
    /// [`apply`] commits a plan's: what it leaves to the sweep is held from
    /// readers first.
    pub fn commit(
        mut self,
        engine: &dyn Engine,
        coll: &Collection,
        commit: impl FnOnce() -> Result<()>,
    ) -> Result<ExpireOutcome> {
        let queued = std::mem::take(&mut self.found.queued);
        let holding = coll.sweep.hold(engine, coll.meta.id, queued)?;
        if let Err(e) = commit() {
            coll.sweep.not_queued(holding);
            return Err(e);
        }
        coll.sweep.queued(holding);
        Ok(self.found.finish(coll, &self.index_name))
    }
}

/// What a chunk found, beyond its deletions.
#[derive(Debug, Default)]
struct Found {
    deleted: u64,
    last: Option<Vec<u8>>,
    more: bool,
    /// Where the index's floor goes once the deletions are applied.
    raise: Option<Raise>,
    oldest_millis: Option<i64>,
    /// The entries the deletions leave to the sweep.
    queued: Queued,
    /// For an archiving chunk: each document deleted, and its indexed date.
    expired: Vec<(Vec<u8>, i64)>,
}

/// A chunk leaves nothing below `to` when nothing was left below `from`,
/// where it started: it scanned from the floor, or the chunk before it,
/// applied since it was planned, raised the floor to exactly there.
#[derive(Debug)]
struct Raise {
    from: Vec<u8>,
    to: Vec<u8>,
    from_floor: bool,
}

impl Found {
    /// Called once the deletions are committed.
    fn finish(self, coll: &Collection, index_name: &str) -> ExpireOutcome {
        if let (Some(raise), Some(floor)) =
            (self.raise, coll.keygen(index_name).and_then(KeyGen::floor))
            && (raise.from_floor || floor.is_at(&raise.from))
        {
            floor.raise(raise.to);
        }
        ExpireOutcome {
            deleted: self.deleted,
            resume_after: self.last,
            more: self.more,
            oldest_millis: self.oldest_millis,
        }
    }
}

/// Scans one chunk and puts its deletions into `out`, leaving out the
/// documents in `gone`; returns what it found and the documents it deletes.
/// Three steps: [`scan`] the TTL range, [`decide`] how the deletions go,
/// [`encode`] them into the batch.
fn collect(
    engine: &dyn Engine,
    coll: &Collection,
    chunk: Chunk<'_>,
    policy: &ExpiryPolicy,
    gone: &KeySet,
    archiving: bool,
    out: &mut dyn Batch,
) -> Result<(Found, KeySet)> {
    let Some(ttl) = coll.keygen(chunk.index) else {
        // Dropped since the monitor looked: nothing to do.
        return Ok((Found::default(), KeySet::default()));
    };
    let Some(span) = Span::of(ttl, chunk.cutoff_millis, chunk.resume_after) else {
        return Ok((Found::default(), KeySet::default()));
    };
    let cx = Cx {
        engine,
        coll,
        ttl,
        policy,
        deferred: (coll.keygens.iter())
            .filter(|kg| sweep::defers(policy, coll, kg))
            .map(|kg| kg.cf)
            .collect(),
        logged: crate::changes::logging(coll).is_some(),
        archiving,
    };
    let mut scanned = scan(&cx, &span, chunk.limit, gone)?;
    let seen = std::mem::take(&mut scanned.seen);
    // An index key is never empty: nothing was scanned.
    if scanned.last_key.is_empty() {
        let found = Found {
            raise: span.raise(ttl, span.end.clone()),
            ..Found::default()
        };
        return Ok((found, seen));
    }
    let how = decide(&cx, &scanned);
    let found = encode(&cx, &span, scanned, how, out)?;
    Ok((found, seen))
}

/// What every step of one chunk reads.
struct Cx<'a> {
    engine: &'a dyn Engine,
    coll: &'a Collection,
    /// The TTL index's key generator.
    ttl: &'a KeyGen,
    policy: &'a ExpiryPolicy,
    /// The indexes whose entries are left to the sweep, by family.
    deferred: Vec<u64>,
    /// Whether the deletions go into the change log (`crate::changes`).
    logged: bool,
    /// Whether each document deleted is handed back, for the index's
    /// archive (`write::archive`): read before the batch commits.
    archiving: bool,
}

/// Where a chunk scans in its TTL index: from `lower` (the floor, or just
/// past where the chunk before it stopped) up to `end`, the cutoff's bound.
struct Span {
    lower: Vec<u8>,
    end: Vec<u8>,
    /// `lower` is the lowest key that can hold an entry.
    from_bottom: bool,
}

impl Span {
    /// `None` when nothing lies below the cutoff past `resume_after`.
    fn of(ttl: &KeyGen, cutoff_millis: i64, resume_after: Option<&[u8]>) -> Option<Span> {
        let (start, end) = keycode::date_range_up_to(cutoff_millis, ttl.leading_descending());
        let base = lowest_possible(ttl.floor(), start);
        let lower = match resume_after {
            Some(after) if after >= base.as_slice() => key_after(after),
            _ => base.clone(),
        };
        let from_bottom = lower == base;
        (lower < end).then_some(Span {
            lower,
            end,
            from_bottom,
        })
    }

    /// Where the index's floor goes once a chunk that leaves nothing below
    /// `to` is applied (an index without a floor has none to raise).
    fn raise(&self, ttl: &KeyGen, to: Vec<u8>) -> Option<Raise> {
        ttl.floor().is_some().then(|| Raise {
            from: self.lower.clone(),
            to,
            from_floor: self.from_bottom,
        })
    }
}

/// What [`scan`] took from the TTL range: the documents, split by whether
/// their TTL entry carries their other entries (`carry`) or their records
/// must be read, and what the chunk's outcome needs of the scan.
struct Scanned {
    /// Documents taken.
    taken: usize,
    /// Documents taken that a multikey entry could name again.
    seen: KeySet,
    /// Documents whose entries are carried: their sort prefix, `_id`, and
    /// whether they have entries queued for the sweep.
    carried_ids: Vec<(u128, Vec<u8>, bool)>,
    /// The carried entries deleted now: family and place in
    /// `carried_bytes`, one buffer (an allocation per entry showed).
    carried: Vec<(Cf, std::ops::Range<usize>)>,
    carried_bytes: Vec<u8>,
    /// Whether the carried documents' `_id`s came in ascending order, as
    /// documents inserted together with one lifetime do (ObjectIds grow
    /// with time).
    ascending: bool,
    /// The sweep's queue item, with the deferred entries of carried
    /// documents so far.
    queue: QueueItem,
    /// Documents whose records must be read to find their entries.
    read_ids: Vec<Vec<u8>>,
    /// The last key scanned, in one buffer (a copy per entry showed);
    /// empty when nothing was.
    last_key: Vec<u8>,
    /// The indexed Date of the oldest document taken.
    oldest_millis: Option<i64>,
    /// Whether expired entries remain past `last_key`.
    more: bool,
    /// For the change log and the archive: each document taken and its
    /// indexed date.
    dated: Vec<(Vec<u8>, i64)>,
}

/// Scans up to `limit` distinct documents from the TTL range, leaving out
/// those in `gone`.
fn scan(cx: &Cx<'_>, span: &Span, limit: usize, gone: &KeySet) -> Result<Scanned> {
    let Cx {
        engine,
        coll,
        ttl,
        policy,
        ..
    } = *cx;
    let deferred = cx.deferred.as_slice();
    let mut cursor = engine.cursor(
        Cf::Id(ttl.cf),
        KeyRange::new(span.lower.clone(), Some(span.end.clone())),
        Direction::Forward,
    )?;
    // The buffers are sized for the chunk up front: grown from empty, each
    // step copied them into fresh pages, and the kernel's page clearing was
    // a quarter of a large chunk's plan.
    let room = limit.clamp(1, policy.quiet_chunk_max_docs.max(1));
    let mut s = Scanned {
        taken: 0,
        seen: KeySet::default(),
        carried_ids: Vec::with_capacity(room),
        carried: Vec::with_capacity(room),
        carried_bytes: Vec::new(),
        ascending: true,
        queue: QueueItem::new(policy.sweep_item_entries),
        read_ids: Vec::new(),
        last_key: Vec::new(),
        oldest_millis: None,
        more: false,
        dated: Vec::new(),
    };
    let defers = |cf: Cf| matches!(cf, Cf::Id(id) if deferred.contains(&id));
    let descending = ttl.leading_descending();
    while cursor.valid() && s.taken < limit.max(1) {
        let id = ttl.id_suffix(cursor.key())?;
        // A capped collection's removals need each document's size.
        let carried_entries = match coll.natural() {
            Some(_) => None,
            None => carry::decode(cursor.value(), (ttl.cf, cursor.key()), coll),
        };
        // A document whose carried entries list one in this index appears
        // once in it; the others (a multikey document appears once per
        // date in the range, and may have dates in the plan before this
        // one too; or nothing carried) are deduplicated here.
        let once = carried_entries
            .as_ref()
            .is_some_and(|e| e.iter().filter(|(cf, _)| *cf == Cf::Id(ttl.cf)).count() == 1);
        let new =
            once || (!s.seen.contains(id) && !gone.contains(id) && s.seen.insert(id.to_vec()));
        if new {
            s.taken += 1;
            if let Some(date) = keycode::leading_date(cursor.key(), descending) {
                s.oldest_millis = Some(s.oldest_millis.map_or(date, |o| o.min(date)));
                if cx.logged || cx.archiving {
                    s.dated.push((id.to_vec(), date));
                }
            }
            match carried_entries {
                Some(entries) => {
                    let later = entries.iter().filter_map(|&(cf, e)| match cf {
                        Cf::Id(id) if deferred.contains(&id) => Some((id, e)),
                        _ => None,
                    });
                    let queued = s.queue.push(id, later);
                    s.ascending &= s
                        .carried_ids
                        .last()
                        .is_none_or(|(_, prev, _)| prev.as_slice() < id);
                    s.carried_ids.push((sort_prefix(id), id.to_vec(), queued));
                    if s.carried_bytes.capacity() == 0 {
                        // As many bytes per document as the first has, up
                        // to a bound: one large multikey document must not
                        // size the buffer for a chunk of them.
                        let first: usize = entries.iter().map(|(_, e)| e.len()).sum();
                        s.carried_bytes
                            .reserve(room * first.clamp(1, CARRIED_BYTES_PER_DOC_MAX));
                    }
                    for (cf, e) in entries.into_iter().filter(|(cf, _)| !defers(*cf)) {
                        let start = s.carried_bytes.len();
                        s.carried_bytes.extend_from_slice(e);
                        s.carried.push((cf, start..s.carried_bytes.len()));
                    }
                }
                None => s.read_ids.push(id.to_vec()),
            }
        }
        s.last_key.clear();
        s.last_key.extend_from_slice(cursor.key());
        cursor.advance();
    }
    s.more = cursor.valid();
    cursor.status()?;
    Ok(s)
}

/// How a chunk deletes what it took.
#[derive(Debug, Clone, Copy)]
struct How {
    /// Range tombstones for the TTL range and a run of records: a large
    /// chunk of a collection that is not capped (a capped collection's
    /// order entries go with each document, point by point, so its records
    /// do too).
    ranged: bool,
    /// The carried documents' records wait for the sweep, hidden: their
    /// `_id`s were scattered (mixed lifetimes) and the policy defers
    /// records. Otherwise they are deleted now: one range tombstone for an
    /// exact run in a ranged chunk, else point deletes in key order, as
    /// cheap as queueing them.
    records_wait: bool,
}

fn decide(cx: &Cx<'_>, s: &Scanned) -> How {
    How {
        ranged: s.taken >= cx.policy.range_delete_min_docs && cx.coll.natural().is_none(),
        records_wait: sweep::defers_records(cx.policy, cx.coll) && !s.ascending,
    }
}

/// Puts the deletions of what [`scan`] took into `out`: the records, the
/// entries of the documents read now, a capped collection's order entries,
/// the TTL range, the carried entries, and the sweep's queue item.
fn encode(cx: &Cx<'_>, span: &Span, s: Scanned, how: How, out: &mut dyn Batch) -> Result<Found> {
    let Cx {
        engine, coll, ttl, ..
    } = *cx;
    let deferred = cx.deferred.as_slice();
    let Scanned {
        mut carried_ids,
        carried,
        carried_bytes,
        mut queue,
        read_ids,
        last_key,
        oldest_millis,
        more,
        dated,
        ..
    } = s;
    // What the batch will hold, about (records queued or deleted, a few
    // bytes of framing per write), so it is allocated once.
    let ids_bytes: usize = carried_ids.iter().map(|(_, id, _)| id.len() + 12).sum();
    out.reserve(queue.byte_len() + ids_bytes + carried_bytes.len() + 12 * carried.len() + 256);
    // Documents one index makes due may be counted by another (`never`).
    super::never::forget_if_several(out, coll)?;
    if how.records_wait {
        queue.records_wait();
        for (_, id, queued) in &mut carried_ids {
            if !*queued {
                queue.push_record(id);
                *queued = true;
            }
        }
    } else {
        carried_ids.sort_unstable_by(|a, b| a.0.cmp(&b.0).then_with(|| a.1.cmp(&b.1)));
        let sorted: Vec<&[u8]> = carried_ids.iter().map(|(_, id, _)| id.as_slice()).collect();
        if !(how.ranged && delete_run(engine, coll, &sorted, out)?) {
            for id in &sorted {
                out.delete(coll.records(), id)?;
            }
        }
    }
    let carried_docs = carried_ids.len();
    let docs = read_and_delete_records(engine, coll, &read_ids, how.ranged, out)?;
    if cx.logged {
        log_expired(engine, coll, ttl, &dated, &docs, out)?;
    }
    let expired = match cx.archiving {
        true => archived(engine, coll, &dated, &docs)?,
        false => Vec::new(),
    };
    if let Some(cf) = coll.natural() {
        forget_capped(engine, cf, &docs, out)?;
    }
    let lower = span.lower.as_slice();
    let ttl_upper = key_after(&last_key);
    if how.ranged {
        out.delete_range(Cf::Id(ttl.cf), lower, &ttl_upper)?;
    }
    // Entries the TTL range tombstone already covers need no point delete.
    let covered = |cf: Cf, e: &[u8]| {
        how.ranged && cf == Cf::Id(ttl.cf) && e >= lower && e < ttl_upper.as_slice()
    };
    for (cf, at) in carried {
        let e = &carried_bytes[at];
        if !covered(cf, e) {
            out.delete(cf, e)?;
        }
    }
    let mut entries = Vec::new();
    let mut later: Vec<(u64, Vec<u8>)> = Vec::new();
    let mut read_held = Vec::new();
    for (id, doc) in &docs {
        let doc = RawDocument::from_bytes(doc)?;
        later.clear();
        for kg in &coll.keygens {
            entries.clear();
            kg.keys(doc, id, &mut entries)?;
            if deferred.contains(&kg.cf) {
                later.extend(entries.drain(..).map(|e| (kg.cf, e)));
                continue;
            }
            for e in &entries {
                if !covered(Cf::Id(kg.cf), e) {
                    out.delete(Cf::Id(kg.cf), e)?;
                }
            }
        }
        if queue.push(id, later.iter().map(|(cf, e)| (*cf, e.as_slice()))) {
            read_held.push(id.clone());
        }
    }
    let mut held: Vec<Vec<u8>> = (carried_ids.into_iter())
        .filter_map(|(_, id, queued)| queued.then_some(id))
        .collect();
    held.append(&mut read_held);
    Ok(Found {
        queued: sweep::write(queue, held, engine, coll, out)?,
        deleted: (carried_docs + docs.len()) as u64,
        raise: span.raise(ttl, if more { ttl_upper } else { span.end.clone() }),
        last: Some(last_key),
        more,
        oldest_millis,
        expired,
    })
}

/// The documents an archiving chunk deletes, in the order it took them,
/// each with its indexed date: the records it read already (`docs`), the
/// others (whose entries it deletes without them) read in one multi-get
/// before its batch commits.
fn archived(
    engine: &dyn Engine,
    coll: &Collection,
    dated: &[(Vec<u8>, i64)],
    docs: &[(Vec<u8>, Vec<u8>)],
) -> Result<Vec<(Vec<u8>, i64)>> {
    let read: std::collections::HashMap<&[u8], &[u8]> = docs
        .iter()
        .map(|(k, v)| (k.as_slice(), v.as_slice()))
        .collect();
    let unread: Vec<Vec<u8>> = dated
        .iter()
        .filter(|(key, _)| !read.contains_key(key.as_slice()))
        .map(|(key, _)| key.clone())
        .collect();
    let mut fetched = engine.multi_get(coll.records(), &unread)?.into_iter();
    let mut out = Vec::with_capacity(dated.len());
    for (key, date) in dated {
        let record = match read.get(key.as_slice()) {
            Some(doc) => Some(doc.to_vec()),
            None => fetched.next().flatten(),
        };
        if let Some(doc) = record {
            out.push((doc, *date));
        }
    }
    Ok(out)
}

/// Logs the TTL delete of each document in `dated` (record key, indexed
/// date), for change streams. Its `_id` comes from its key, or from its
/// record where a collation hides it there or the collection logs the
/// document deleted; `read` holds the records the chunk read already.
fn log_expired(
    engine: &dyn Engine,
    coll: &Collection,
    ttl: &KeyGen,
    dated: &[(Vec<u8>, i64)],
    read: &[(Vec<u8>, Vec<u8>)],
    out: &mut dyn Batch,
) -> Result<()> {
    if dated.is_empty() {
        return Ok(());
    }
    let images = crate::changes::keeps_images(coll);
    let after_ms = ttl.expire_after_secs().unwrap_or(0).saturating_mul(1000);
    let read: std::collections::HashMap<&[u8], &[u8]> = read
        .iter()
        .map(|(k, v)| (k.as_slice(), v.as_slice()))
        .collect();
    for (key, date) in dated {
        let from_key = coll.id_of_key(key);
        let fetched;
        let record = match read.get(key.as_slice()) {
            Some(doc) => Some(*doc),
            None if images || from_key.is_none() => {
                fetched = engine.get(coll.records(), key)?;
                fetched.as_deref()
            }
            None => None,
        };
        let doc = record.map(RawDocument::from_bytes).transpose()?;
        let id = match (doc.map(|d| d.get("_id")).transpose()?.flatten(), from_key) {
            (Some(id), _) => bson::RawBson::from(id),
            (None, Some(id)) => id,
            (None, None) => continue,
        };
        let expired = crate::changes::Expired {
            index: &ttl.name,
            date: *date,
            due: date.saturating_add(after_ms),
        };
        crate::changes::deleted(out, coll, id.as_raw_bson_ref(), doc, Some(expired))?;
    }
    Ok(())
}

/// The most bytes of carried entries per document a chunk's buffer is
/// sized for up front (it grows past that when it must).
const CARRIED_BYTES_PER_DOC_MAX: usize = 256;

/// The first 16 bytes of `key` as one big-endian number (zeros past its
/// end): keys that differ there compare as these do, so a sort compares
/// numbers and reads the keys only on a tie (a memcmp per comparison
/// showed in a chunk's profile).
fn sort_prefix(key: &[u8]) -> u128 {
    let mut head = [0u8; 16];
    let n = key.len().min(16);
    head[..n].copy_from_slice(&key[..n]);
    u128::from_be_bytes(head)
}

/// Removes the order and position entries of expired documents of a
/// capped collection and writes its new totals (`capped::order`).
fn forget_capped(
    engine: &dyn Engine,
    cf: Cf,
    docs: &[(Vec<u8>, Vec<u8>)],
    out: &mut dyn Batch,
) -> Result<()> {
    let mut totals = order::Totals::read(engine, cf)?;
    for (id, doc) in docs {
        if let Some(seq) = order::position(engine, cf, id)? {
            out.delete(cf, &order::order_key(seq))?;
            out.delete(cf, &order::position_key(id))?;
            totals.forget(doc.len());
        }
    }
    out.put(cf, order::TOTALS_KEY, &totals.encode())
}

/// Deletes the records of `sorted` without reading them, with one range
/// tombstone, if they are exactly the records between the smallest and the
/// largest (keys only are compared, stopping at the first record that is
/// not the next id; records already left to the sweep are not there).
/// Returns whether they were.
fn delete_run(
    engine: &dyn Engine,
    coll: &Collection,
    sorted: &[&[u8]],
    out: &mut dyn Batch,
) -> Result<bool> {
    let (Some(first), Some(last)) = (sorted.first(), sorted.last()) else {
        return Ok(true);
    };
    let upper = key_after(last);
    let mut cursor = engine.cursor(
        coll.records(),
        KeyRange::new(first.to_vec(), Some(upper.clone())),
        Direction::Forward,
    )?;
    let mut matched = 0;
    while cursor.valid() && sorted.get(matched).is_some_and(|id| *id == cursor.key()) {
        matched += 1;
        cursor.advance();
    }
    cursor.status()?;
    drop(cursor);
    if matched < sorted.len() {
        return Ok(false);
    }
    out.delete_range(coll.records(), first, &upper)?;
    Ok(true)
}

/// Reads the records of `ids` and adds their deletion to `batch`: one range
/// scan when they are adjacent in the records family (one range tombstone
/// too when `ranged`), a multi-get otherwise.
fn read_and_delete_records(
    engine: &dyn Engine,
    coll: &Collection,
    ids: &[Vec<u8>],
    ranged: bool,
    batch: &mut dyn Batch,
) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
    let mut sorted: Vec<&Vec<u8>> = ids.iter().collect();
    sorted.sort_unstable();
    let (Some(first), Some(last)) = (sorted.first(), sorted.last()) else {
        return Ok(Vec::new());
    };
    let upper = key_after(last);
    let mut cursor = engine.cursor(
        coll.records(),
        KeyRange::new((*first).clone(), Some(upper.clone())),
        Direction::Forward,
    )?;
    // The range holds exactly the chunk's documents when its records are
    // the ids in order. Stop at the first record that is not the next id:
    // documents of mixed lifetimes are interleaved with live ones, and
    // reading the whole span to find that out would read every record
    // twice.
    let mut docs = Vec::with_capacity(ids.len());
    while cursor.valid()
        && sorted
            .get(docs.len())
            .is_some_and(|id| id.as_slice() == cursor.key())
    {
        docs.push((cursor.key().to_vec(), cursor.value().to_vec()));
        cursor.advance();
    }
    let adjacent = docs.len() == ids.len();
    cursor.status()?;
    drop(cursor);
    if adjacent {
        if ranged {
            batch.delete_range(coll.records(), first, &upper)?;
        } else {
            for (id, _) in &docs {
                batch.delete(coll.records(), id)?;
            }
        }
        return Ok(docs);
    }
    let values = engine.multi_get(coll.records(), ids)?;
    let mut docs = Vec::with_capacity(ids.len());
    for (id, value) in ids.iter().zip(values) {
        if let Some(value) = value {
            batch.delete(coll.records(), id)?;
            docs.push((id.clone(), value));
        }
    }
    Ok(docs)
}
