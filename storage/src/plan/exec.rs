//! Query execution on snapshots: turns a [`Plan`] into documents, batch by
//! batch, resumable across `getMore`s.
//!
//! Each batch runs on a fresh snapshot and resumes after the last key it
//! examined, as MongoDB's yielding cursors do: a document written between
//! batches may or may not be seen, but no document is returned twice (the
//! `_id`s seen through a multikey index are remembered). Plans whose
//! access path does not give the requested order are sorted on the first
//! batch, in memory within a 100 MiB limit or, with disk use allowed,
//! through `spill`'s external merge sort.
//!
//! A document that a TTL index of the collection makes due is passed over
//! as if absent while the collection hides due documents
//! (`crate::ttl::hidden`); the moment it is judged at is taken afresh for
//! every batch, so a `getMore` never returns what fell due before it. The
//! batch first reads the TTL indexes' due ranges in its snapshot (usually
//! empty) and passes over exactly the documents they name.
//!
//! On a time-series collection the records are buckets: the cursor scans
//! the buckets (`crate::plan::prune` chooses which), passes over a
//! due bucket as a whole, and unpacks the others into measurements, which
//! the filter, skip, limit and sort then see as documents. A bucket's
//! measurements wait in `pending` when a batch fills mid-bucket.
//!
//! A cursor may carry a time budget (`maxTimeMS`): it is spent across all
//! batches, as mongod's cursors spend theirs, and checked every
//! [`DEADLINE_CHECK_EVERY`] keys, so a long scan stops with
//! MaxTimeMSExpired rather than running on.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bson::RawDocumentBuf;
use ebb_config::limits::MAX_SORT_BYTES;

use super::prune;
use super::{Access, Plan};
use crate::capped::order;
use crate::collection::Collection;
use crate::engine::{Cf, Cursor, Direction, KeyRange, KeySet, Snapshot};
use crate::index::KeyGen;
use crate::timeseries::TimeseriesOptions;
use crate::ttl::{self, Due};
use ebb_lang::encoding::display::shell;
use ebb_lang::error::{Error, ErrorKind, Result};
use ebb_lang::query::filter::Filter;
use ebb_lang::query::interrupt;
use ebb_lang::query::sort::SortSpec;
use ebb_lang::query::spill::{DiskUse, Sorted, Sorter};

/// How many keys a scan examines between two looks at the clock.
pub const DEADLINE_CHECK_EVERY: u64 = 64;

/// The most `_id`s a read may look up and still count as a point read.
pub const POINT_LOOKUP_MAX: usize = 100;

pub use ebb_lang::query::found::Found;

/// Limits of one batch.
#[derive(Debug, Clone, Copy)]
pub struct BatchLimits {
    pub max_docs: usize,
    pub max_bytes: usize,
}

impl BatchLimits {
    pub const UNLIMITED: BatchLimits = BatchLimits {
        max_docs: usize::MAX,
        max_bytes: usize::MAX,
    };
}

/// Execution counters for explain.
#[derive(Debug, Default, Clone, Copy)]
pub struct ExecStats {
    pub keys_examined: u64,
    pub docs_examined: u64,
    pub returned: u64,
}

/// A resumable query over one collection.
pub struct QueryCursor {
    coll: Arc<Collection>,
    /// The documents the running batch passes over as due.
    due: Due,
    access: Access,
    keygen: Option<KeyGen>,
    filter: Filter,
    sort: Option<SortSpec>,
    skip: u64,
    limit: Option<u64>,
    range_idx: usize,
    resume_after: Option<Vec<u8>>,
    seen: KeySet,
    /// Sorted results waiting to be returned (blocking-sort plans).
    sorted: Option<SortedRest>,
    /// Whether a blocking sort past the memory limit may spill to disk.
    disk_use: DiskUse,
    skipped: u64,
    returned: u64,
    done: bool,
    /// What is left of the `maxTimeMS` budget; None runs without limit.
    budget: Option<Duration>,
    /// When the running batch must stop (from `budget`).
    deadline: Option<Instant>,
    /// A time-series collection's options: its buckets are unpacked.
    unpack: Option<TimeseriesOptions>,
    /// Measurements of the last bucket read that are not yet offered.
    pending: VecDeque<Found>,
    /// A tailable cursor (`tailable: true` on a capped collection): at the
    /// end of the insertion order it stays where it is, and the next batch
    /// returns what was inserted since.
    tailable: bool,
    /// Whether the ranges of a TTL index scan were cut to leave out the
    /// entries due when the first batch ran (`ttl::outside_due`); `None`
    /// until then.
    outside_due: Option<bool>,
    /// Whether the index answers alone (`plan::cover`): an entry that
    /// carries its values' types is turned back into a document instead
    /// of its record being read.
    covered: bool,
    /// Whether the running batch does so: not while due documents are
    /// judged by their dates, nor while the collection has entries queued
    /// for the sweep (whose records are gone).
    from_entries: bool,
    /// The plan as mongod's profiler and logs name it (`COLLSCAN`,
    /// `IDHACK`, `IXSCAN { a: 1 }`).
    plan_summary: String,
    pub stats: ExecStats,
}

/// What the scan does after offering one result.
enum Flow {
    Next,
    /// The consumer is full: stop, resume later.
    Stop,
    /// The limit is reached: the cursor is done.
    Done,
}

/// The sorted results of a blocking sort still to be returned, with what
/// is left of the limit.
struct SortedRest {
    sorted: Sorted,
    remaining: Option<u64>,
}

impl SortedRest {
    fn pop(&mut self) -> Result<Option<Found>> {
        if self.remaining == Some(0) {
            return Ok(None);
        }
        let next = self.sorted.pop()?;
        if next.is_some()
            && let Some(n) = &mut self.remaining
        {
            *n -= 1;
        }
        Ok(next)
    }

    fn is_empty(&self) -> bool {
        self.remaining == Some(0) || self.sorted.is_empty()
    }
}

impl QueryCursor {
    pub fn new(
        coll: &Arc<Collection>,
        plan: Plan,
        filter: Filter,
        sort: Option<SortSpec>,
        skip: u64,
        limit: Option<u64>,
    ) -> Result<Self> {
        // A `$text` not yet bound to the text index is decided document
        // by document (an update or a count reads this way).
        let filter = super::text::bind(&coll.meta, filter)?;
        let unpack = coll.timeseries.clone();
        let plan = match &unpack {
            Some(opts) => prune::plan(coll, opts, &filter, plan),
            None => plan,
        };
        let keygen = match &plan.access {
            Access::Index { index, .. } => {
                coll.count_access(&index.name);
                Some(KeyGen::new(index)?)
            }
            // Bounded `_id` ranges are mongod's `_id_` index scans.
            Access::Records { ranges, .. } if plan.stage != "COLLSCAN" && !ranges.is_empty() => {
                coll.count_access(crate::catalog::ID_INDEX_NAME);
                None
            }
            Access::Records { .. } | Access::Natural { .. } => None,
        };
        let sort = if plan.sorted_by_access { None } else { sort };
        let plan_summary = match (&plan.access, plan.stage) {
            (Access::Index { index, .. }, _) => {
                format!("IXSCAN {}", shell(&bson::Bson::Document(index.key.clone())))
            }
            (Access::Records { .. }, "IXSCAN") => "IXSCAN { _id: 1 }".to_owned(),
            (_, stage) => stage.to_owned(),
        };
        Ok(QueryCursor {
            plan_summary,
            coll: coll.clone(),
            due: Due::Nothing,
            access: plan.access,
            keygen,
            filter,
            sort,
            skip,
            limit: limit.filter(|l| *l > 0),
            range_idx: 0,
            resume_after: None,
            seen: KeySet::default(),
            sorted: None,
            disk_use: DiskUse::Forbidden,
            skipped: 0,
            returned: 0,
            done: false,
            budget: None,
            deadline: None,
            unpack,
            pending: VecDeque::new(),
            tailable: false,
            outside_due: None,
            covered: false,
            from_entries: false,
            stats: ExecStats::default(),
        })
    }

    /// The same cursor answering from its index where it can, for a
    /// query [`super::cover::covers`] found it can answer.
    pub fn covering(mut self) -> Self {
        self.covered = self.keygen.as_ref().is_some_and(KeyGen::is_coverable);
        self
    }

    /// The same cursor made tailable: only a forward scan of a capped
    /// collection's insertion order can be (the caller checks the query).
    pub fn tailable(mut self) -> Result<Self> {
        if !matches!(
            self.access,
            Access::Natural {
                dir: Direction::Forward
            }
        ) || self.sort.is_some()
        {
            return Err(Error::bad_value(
                "tailable cursor requested on non capped collection",
            ));
        }
        self.tailable = true;
        Ok(self)
    }

    /// The plan as mongod's profiler names it.
    pub fn plan_summary(&self) -> &str {
        &self.plan_summary
    }

    /// Whether the cursor is tailable.
    pub fn is_tailable(&self) -> bool {
        self.tailable
    }

    /// Whether the cursor has read any key yet: a tailable cursor that has
    /// not (its collection was empty) has nothing to resume after.
    pub fn positioned(&self) -> bool {
        self.resume_after.is_some()
    }

    /// The same cursor limited to `limit` of execution time over all its
    /// batches (`maxTimeMS`); None or zero means no limit, as in mongod.
    pub fn with_time_limit(mut self, limit: Option<Duration>) -> Self {
        self.budget = limit.filter(|l| !l.is_zero());
        self
    }

    /// The same cursor with a blocking sort that may spill past the memory
    /// limit (`allowDiskUse: true`) into `DiskUse::Allowed`'s directory.
    pub fn with_disk_use(mut self, disk_use: DiskUse) -> Self {
        self.disk_use = disk_use;
        self
    }

    /// The same cursor stopping at `deadline` (a write statement's share
    /// of its command's `maxTimeMS`); a deadline already passed fails the
    /// first batch.
    pub fn with_deadline(mut self, deadline: Option<Instant>) -> Self {
        self.budget = deadline.map(|d| d.saturating_duration_since(Instant::now()));
        self
    }

    /// Fails with MaxTimeMSExpired once the running batch's deadline has
    /// passed, and as `interrupt` says once the operation has been killed.
    fn check_deadline(&self) -> Result<()> {
        interrupt::check_current()?;
        match self.deadline {
            Some(deadline) if Instant::now() >= deadline => Err(Error::new(
                ErrorKind::MaxTimeMsExpired,
                "operation exceeded time limit",
            )),
            _ => Ok(()),
        }
    }

    /// Whether the plan looks up a few keys (at most [`POINT_LOOKUP_MAX`]
    /// equalities on `_id` or on an index's leading field) rather than
    /// walking ranges: such reads need no scan slot.
    pub fn is_point_lookup(&self) -> bool {
        let (Access::Records { ranges, .. } | Access::Index { ranges, .. }) = &self.access else {
            return false;
        };
        ranges.len() <= POINT_LOOKUP_MAX && ranges.iter().all(|r| r.is_point())
    }

    /// The filter every result matched (a positional projection asks it
    /// where each document matched).
    pub fn filter(&self) -> &Filter {
        &self.filter
    }

    /// Whether every result has been returned.
    pub fn exhausted(&self) -> bool {
        self.done
    }

    /// The next batch of results.
    pub fn next_batch(&mut self, snap: &dyn Snapshot, limits: BatchLimits) -> Result<Vec<Found>> {
        if self.done {
            return Ok(Vec::new());
        }
        let Some(budget) = self.budget else {
            return self.run_batch(snap, limits);
        };
        let started = Instant::now();
        self.deadline = Some(started + budget);
        // A script the filter runs stops at the deadline too.
        let _scope = interrupt::DeadlineScope::enter(self.deadline);
        let result = self
            .check_deadline()
            .and_then(|()| self.run_batch(snap, limits));
        self.budget = Some(budget.saturating_sub(started.elapsed()));
        self.deadline = None;
        result
    }

    fn run_batch(&mut self, snap: &dyn Snapshot, limits: BatchLimits) -> Result<Vec<Found>> {
        // What is due in this snapshot, read from the TTL indexes first
        // (unless an earlier batch found too many to list); a point lookup
        // checks its few documents' dates instead (while a mass expiry
        // runs, the due ranges hold thousands of entries).
        // A scan of a TTL index leaves out its due entries instead, and
        // checks the dates of the few documents it reads (one may be due
        // by another date or another TTL index).
        self.due = match self.coll.hide_at() {
            Some(now) if self.is_point_lookup() || self.leaves_out_due(now) => Due::Check(now),
            Some(now) => self.due.again(snap, &self.coll, now)?,
            None => Due::Nothing,
        };
        self.from_entries = self.covered
            && !matches!(self.due, Due::Check(_))
            && ttl::sweep::nothing_queued(snap, &self.coll)?;
        if self.sort.is_some() && self.sorted.is_none() {
            self.run_blocking_sort(snap)?;
        }
        let mut out = Vec::new();
        let mut bytes = 0usize;
        let limits = BatchLimits {
            max_docs: limits.max_docs.max(1),
            ..limits
        };
        if let Some(rest) = &mut self.sorted {
            while out.len() < limits.max_docs && (out.is_empty() || bytes < limits.max_bytes) {
                let Some(f) = rest.pop()? else { break };
                bytes += f.doc.as_bytes().len();
                out.push(f);
            }
            self.returned += out.len() as u64;
            self.done = rest.is_empty();
            return Ok(out);
        }
        self.scan(snap, &mut |found| {
            bytes += found.doc.as_bytes().len();
            out.push(found);
            out.len() < limits.max_docs && bytes < limits.max_bytes
        })?;
        Ok(out)
    }

    /// Whether this is a scan of a TTL index whose ranges leave out the
    /// entries due at `now` (cut so on the first batch, before any is
    /// read; a cursor that first ran while nothing was hidden keeps its
    /// ranges).
    fn leaves_out_due(&mut self, now: i64) -> bool {
        if let Some(cut) = self.outside_due {
            return cut;
        }
        let untouched = self.range_idx == 0 && self.resume_after.is_none();
        let cut = match &mut self.access {
            Access::Index { index, ranges, dir } if untouched && self.unpack.is_none() => {
                let ttl = self.coll.ttl_keygens().find(|kg| kg.cf == index.id);
                ttl.map(|kg| {
                    *ranges = (ranges.iter())
                        .flat_map(|r| ttl::outside_due(kg, r, now, *dir))
                        .collect();
                })
                .is_some()
            }
            _ => false,
        };
        self.outside_due = Some(cut);
        cut
    }

    /// [`QueryCursor::for_each`] with a fallible `each`: its first error
    /// ends the query and is returned.
    pub fn try_for_each(
        &mut self,
        snap: &dyn Snapshot,
        each: &mut dyn FnMut(Found) -> Result<bool>,
    ) -> Result<()> {
        let mut failure = None;
        self.for_each(snap, &mut |found| match each(found) {
            Ok(more) => more,
            Err(e) => {
                failure = Some(e);
                false
            }
        })?;
        failure.map_or(Ok(()), Err)
    }

    /// Runs the whole query, calling `each` for every result until it
    /// returns false.
    pub fn for_each(
        &mut self,
        snap: &dyn Snapshot,
        each: &mut dyn FnMut(Found) -> bool,
    ) -> Result<()> {
        loop {
            let batch = self.next_batch(
                snap,
                BatchLimits {
                    max_docs: 1024,
                    max_bytes: usize::MAX,
                },
            )?;
            for f in batch {
                if !each(f) {
                    return Ok(());
                }
            }
            if self.done {
                return Ok(());
            }
        }
    }

    fn run_blocking_sort(&mut self, snap: &dyn Snapshot) -> Result<()> {
        let sort = self.sort.take().expect("called only with a sort");
        // Skip and limit apply after sorting: collect everything first.
        let (skip, limit) = (self.skip, self.limit.take());
        self.skip = 0;
        let keep = limit.map(|n| usize::try_from(skip.saturating_add(n)).unwrap_or(usize::MAX));
        let mut sorter = Sorter::new(sort, self.disk_use.clone(), MAX_SORT_BYTES).keeping(keep);
        let mut failure = None;
        self.scan(snap, &mut |f| match sorter.push(f) {
            Ok(()) => true,
            Err(e) => {
                failure = Some(e);
                false
            }
        })?;
        if let Some(e) = failure {
            return Err(e);
        }
        self.check_deadline()?;
        let mut rest = SortedRest {
            sorted: sorter.finish()?,
            remaining: limit,
        };
        self.check_deadline()?;
        // Skipped results do not count against the limit.
        for _ in 0..skip {
            if rest.sorted.pop()?.is_none() {
                break;
            }
        }
        self.done = rest.is_empty();
        self.sorted = Some(rest);
        Ok(())
    }

    /// Scans from where the last batch stopped, feeding each result (after
    /// filter, skip and limit) to `take` until it returns false. A regex
    /// that ran out of backtracking budget fails the batch: its document
    /// was counted as no match, so the answer would be short.
    fn scan(&mut self, snap: &dyn Snapshot, take: &mut dyn FnMut(Found) -> bool) -> Result<()> {
        self.scan_matches(snap, take)?;
        self.filter.failure().map_or(Ok(()), Err)
    }

    fn scan_matches(
        &mut self,
        snap: &dyn Snapshot,
        take: &mut dyn FnMut(Found) -> bool,
    ) -> Result<()> {
        if !matches!(self.drain_pending(take)?, Flow::Next) {
            return Ok(());
        }
        // The access path is set aside while its ranges are walked, rather
        // than cloned per batch (a `$in` of a million `_id`s is a million
        // ranges).
        let placeholder = Access::Records {
            ranges: Vec::new(),
            dir: Direction::Forward,
        };
        let access = std::mem::replace(&mut self.access, placeholder);
        let result = self.scan_access(&access, snap, take);
        self.access = access;
        result
    }

    fn scan_access(
        &mut self,
        access: &Access,
        snap: &dyn Snapshot,
        take: &mut dyn FnMut(Found) -> bool,
    ) -> Result<()> {
        let natural_ranges;
        let (ranges, dir, cf, records) = match access {
            Access::Records { ranges, dir } => (&ranges[..], *dir, Cf::Id(self.coll.meta.id), true),
            Access::Index { index, ranges, dir } => (&ranges[..], *dir, Cf::Id(index.id), false),
            Access::Natural { dir } => {
                let cf = self.coll.natural().ok_or_else(|| {
                    Error::corrupt("insertion-order scan of a collection without one")
                })?;
                natural_ranges = [order::natural_range()];
                (&natural_ranges[..], *dir, cf, false)
            }
        };
        let natural = matches!(access, Access::Natural { .. });
        if self.tailable
            && let Some(after) = &self.resume_after
            && !order::holds(snap, cf, order::seq_of(after)?)?
        {
            return Err(Error::new(
                ErrorKind::CappedPositionLost,
                format!(
                    "CollectionScan died due to position in capped collection being deleted. \
                     Last seen record id: RecordId({})",
                    order::seq_of(after)?
                ),
            ));
        }
        while self.range_idx < ranges.len() {
            let range = &ranges[self.range_idx];
            // A records key is a whole `_id`: a point range holds at most
            // that one key, read with a get instead of a new iterator.
            let mut cursor: Box<dyn Cursor + '_> = if records && range.is_point() {
                Box::new(PointCursor::read(snap, cf, &range.lower)?)
            } else {
                // A collection scan reads every block once: it leaves the
                // block cache to what point reads use.
                let whole = records && range.lower.is_empty() && range.upper.is_none();
                let range = resume_range(range, self.resume_after.as_deref(), dir);
                if whole {
                    snap.bulk_cursor(cf, range, dir)?
                } else {
                    snap.cursor(cf, range, dir)?
                }
            };
            if let Some(after) = &self.resume_after {
                seek_past(cursor.as_mut(), after);
            }
            while cursor.valid() {
                let key = cursor.key().to_vec();
                self.stats.keys_examined += 1;
                if self
                    .stats
                    .keys_examined
                    .is_multiple_of(DEADLINE_CHECK_EVERY)
                {
                    self.check_deadline()?;
                }
                // Whether a record was read (not an entry's own document).
                let mut fetched = true;
                let found = match &self.keygen {
                    // An order entry's value is its record's key.
                    None if natural => {
                        let id_key = cursor.value().to_vec();
                        snap.get(Cf::Id(self.coll.meta.id), &id_key)?
                            .map(|v| raw_doc(&v).map(|doc| Found { id_key, doc }))
                            .transpose()?
                    }
                    None => Some(Found {
                        id_key: key.clone(),
                        doc: raw_doc(cursor.value())?,
                    }),
                    Some(kg) => {
                        let id_key = kg.id_suffix(&key)?.to_vec();
                        let from_entry = match self.from_entries {
                            true => kg.rebuild(&key, cursor.value())?,
                            false => None,
                        };
                        if !self.seen.insert(id_key.clone()) {
                            None
                        } else if let Some(doc) = from_entry {
                            fetched = false;
                            Some(Found { id_key, doc })
                        } else {
                            snap.get(Cf::Id(self.coll.meta.id), &id_key)?
                                .map(|v| raw_doc(&v).map(|doc| Found { id_key, doc }))
                                .transpose()?
                        }
                    }
                };
                cursor.advance();
                self.resume_after = Some(key);
                let Some(found) = found else { continue };
                let flow = match &self.unpack {
                    Some(opts) => {
                        if self.due.holds(&self.coll, &found.id_key, &found.doc) {
                            self.coll.hide_due().note_hidden(1);
                            continue;
                        }
                        let measurements = crate::timeseries::unpack(&found.doc, opts)?;
                        for (i, doc) in measurements.into_iter().enumerate() {
                            let mut id_key = found.id_key.clone();
                            id_key.extend_from_slice(&(i as u32).to_be_bytes());
                            self.pending.push_back(Found { id_key, doc });
                        }
                        self.drain_pending(take)?
                    }
                    None => {
                        if fetched {
                            self.stats.docs_examined += 1;
                        }
                        self.offer(found, true, take)?
                    }
                };
                match flow {
                    Flow::Next => {}
                    Flow::Stop => {
                        cursor.status()?;
                        return Ok(());
                    }
                    Flow::Done => return Ok(()),
                }
            }
            cursor.status()?;
            if self.tailable {
                // The end of the insertion order for now: stay here.
                return Ok(());
            }
            self.range_idx += 1;
            self.resume_after = None;
        }
        self.done = true;
        Ok(())
    }
}

/// A cursor over the one record a point range can hold.
struct PointCursor {
    entry: Option<(Vec<u8>, Vec<u8>)>,
}

impl PointCursor {
    fn read(snap: &dyn Snapshot, cf: Cf, key: &[u8]) -> Result<PointCursor> {
        let entry = snap.get(cf, key)?.map(|value| (key.to_vec(), value));
        Ok(PointCursor { entry })
    }
}

impl Cursor for PointCursor {
    fn valid(&self) -> bool {
        self.entry.is_some()
    }

    fn key(&self) -> &[u8] {
        self.entry.as_ref().map_or(&[], |(k, _)| k)
    }

    fn value(&self) -> &[u8] {
        self.entry.as_ref().map_or(&[], |(_, v)| v)
    }

    fn advance(&mut self) {
        self.entry = None;
    }

    fn seek(&mut self, key: &[u8]) {
        if self.entry.as_ref().is_some_and(|(k, _)| k.as_slice() < key) {
            self.entry = None;
        }
    }

    fn status(&self) -> Result<()> {
        Ok(())
    }
}

impl QueryCursor {
    /// Offers the waiting measurements of a bucket, in order.
    fn drain_pending(&mut self, take: &mut dyn FnMut(Found) -> bool) -> Result<Flow> {
        while let Some(found) = self.pending.pop_front() {
            self.stats.docs_examined += 1;
            match self.offer(found, false, take)? {
                Flow::Next => {}
                other => return Ok(other),
            }
        }
        Ok(Flow::Next)
    }

    /// Offers one document: the filter, the due check (`check_due`; a
    /// measurement's bucket was judged already), skip and limit, then
    /// `take`.
    fn offer(
        &mut self,
        found: Found,
        check_due: bool,
        take: &mut dyn FnMut(Found) -> bool,
    ) -> Result<Flow> {
        if !self.filter.matches(&found.doc)? {
            return Ok(Flow::Next);
        }
        if check_due && self.due.holds(&self.coll, &found.id_key, &found.doc) {
            self.coll.hide_due().note_hidden(1);
            return Ok(Flow::Next);
        }
        if self.skipped < self.skip {
            self.skipped += 1;
            return Ok(Flow::Next);
        }
        self.returned += 1;
        self.stats.returned += 1;
        let at_limit = self.limit.is_some_and(|l| self.returned >= l);
        let more = take(found);
        if at_limit {
            self.done = true;
            return Ok(Flow::Done);
        }
        Ok(if more { Flow::Next } else { Flow::Stop })
    }
}

/// `range` narrowed to start at `after` (in the scan's direction), so a
/// cursor opened for the next batch starts there instead of walking from
/// the range's start: deleted keys before it (the tombstones expiry leaves
/// at the old end of the `_id` range) would be stepped over again on every
/// batch.
fn resume_range(range: &KeyRange, after: Option<&[u8]>, dir: Direction) -> KeyRange {
    let Some(after) = after else {
        return range.clone();
    };
    match dir {
        Direction::Forward if after > range.lower.as_slice() => {
            let lower = match &range.upper {
                Some(upper) if after > upper.as_slice() => upper.clone(),
                _ => after.to_vec(),
            };
            KeyRange::new(lower, range.upper.clone())
        }
        Direction::Reverse => {
            // Keys before `after`, which itself is excluded.
            let upper = match &range.upper {
                Some(upper) if upper.as_slice() < after => upper.clone(),
                _ => after.to_vec(),
            };
            let upper = upper.max(range.lower.clone());
            KeyRange::new(range.lower.clone(), Some(upper))
        }
        Direction::Forward => range.clone(),
    }
}

/// Positions a cursor on the first key strictly after `after` in its
/// direction.
fn seek_past(cursor: &mut dyn crate::engine::Cursor, after: &[u8]) {
    cursor.seek(after);
    if cursor.valid() && cursor.key() == after {
        cursor.advance();
    }
}

fn raw_doc(bytes: &[u8]) -> Result<RawDocumentBuf> {
    RawDocumentBuf::from_bytes(bytes.to_vec()).map_err(|e| Error::corrupt(format!("record: {e}")))
}

#[cfg(test)]
mod tests {
    use bson::{doc, rawdoc};

    use super::*;
    use crate::catalog::CollectionMeta;
    use crate::collection::Collection;
    use crate::engine::Engine;
    use crate::engine::rocks::RocksEngine;
    use crate::plan::{self, QuerySpec};

    /// A collection (records in family 10) holding `n` documents.
    fn collection(n: i32) -> (tempfile::TempDir, RocksEngine, std::sync::Arc<Collection>) {
        let (dir, engine) = crate::testing::temp_engine();
        let meta = crate::testing::meta("c", doc! {}, None, vec![CollectionMeta::id_index(10)]);
        engine.create_cf(Cf::Id(10)).unwrap();
        let coll = Collection::new(meta).unwrap();
        // Records written directly (the writer sits above this module).
        let mut batch = engine.batch();
        for i in 0..n {
            let key = ebb_lang::encoding::keycode::encode_key(bson::RawBsonRef::Int32(i));
            let doc = rawdoc! { "_id": i, "x": i };
            batch.put(Cf::Id(10), &key, doc.as_bytes()).unwrap();
        }
        batch.commit(false).unwrap();
        (dir, engine, coll)
    }

    fn scan_all(coll: &std::sync::Arc<Collection>) -> QueryCursor {
        let spec = QuerySpec {
            filter: Filter::parse(&rawdoc! { "x": { "$gte": 0 } }).unwrap(),
            sort: None,
            hint: None,
        };
        let plan = plan::plan(&coll.meta, &spec).unwrap();
        QueryCursor::new(coll, plan, spec.filter, None, 0, None).unwrap()
    }

    #[test]
    fn a_spent_time_budget_stops_the_scan_with_max_time_expired() {
        let (_dir, engine, coll) = collection(500);
        let snap = engine.snapshot();
        let mut cursor = scan_all(&coll);
        // Everything spent: the deadline is the batch's start.
        cursor.budget = Some(Duration::ZERO);
        let err = cursor
            .next_batch(snap.as_ref(), BatchLimits::UNLIMITED)
            .unwrap_err();
        assert_eq!(err.kind, ErrorKind::MaxTimeMsExpired);
        assert_eq!(err.message, "operation exceeded time limit");
    }

    #[test]
    fn a_time_budget_is_spent_across_batches() {
        let (_dir, engine, coll) = collection(300);
        let snap = engine.snapshot();
        let limit = Duration::from_secs(3600);
        let mut cursor = scan_all(&coll).with_time_limit(Some(limit));
        let limits = BatchLimits {
            max_docs: 100,
            max_bytes: usize::MAX,
        };
        let mut n = 0;
        while !cursor.exhausted() {
            n += cursor.next_batch(snap.as_ref(), limits).unwrap().len();
        }
        assert_eq!(n, 300);
        assert!(cursor.budget.is_some_and(|left| left < limit));
        // Zero means no limit at all, as maxTimeMS: 0 does.
        assert!(
            scan_all(&coll)
                .with_time_limit(Some(Duration::ZERO))
                .budget
                .is_none()
        );
    }

    #[test]
    fn a_resumed_scan_starts_where_the_last_batch_stopped() {
        let range = KeyRange::new(b"b".to_vec(), Some(b"y".to_vec()));
        let forward = resume_range(&range, Some(b"m"), Direction::Forward);
        assert_eq!(
            (forward.lower, forward.upper),
            (b"m".to_vec(), Some(b"y".to_vec()))
        );
        let reverse = resume_range(&range, Some(b"m"), Direction::Reverse);
        assert_eq!(
            (reverse.lower, reverse.upper),
            (b"b".to_vec(), Some(b"m".to_vec()))
        );
        let fresh = resume_range(&range, None, Direction::Forward);
        assert_eq!(
            (fresh.lower, fresh.upper),
            (b"b".to_vec(), Some(b"y".to_vec()))
        );
        // Past either end: an empty range, never an inverted one.
        let past = resume_range(&range, Some(b"z"), Direction::Forward);
        assert_eq!(past.lower, b"y".to_vec());
        let before = resume_range(&range, Some(b"a"), Direction::Reverse);
        assert_eq!(before.upper, Some(b"b".to_vec()));
    }
}
