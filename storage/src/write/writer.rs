//! The write path of one collection: documents in, records and index
//! entries out, one atomic batch at a time.
//!
//! A [`Writer`] is used by exactly one thread at a time (the collection's
//! single writer), so what it reads from the engine is the committed state
//! and nothing else can change it underneath. It keeps an overlay of what
//! its current, uncommitted batch has written (records and claimed unique
//! keys) so that, for example, two documents with the same `_id` in one
//! `insert` collide even though neither is committed yet.
//!
//! A document that the collection's TTL indexes make due, while due
//! documents are hidden, is treated as already gone: an insert of its
//! `_id` or a write taking one of its unique keys deletes it in the same
//! batch and goes ahead, where it would otherwise fail with a duplicate
//! key (`crate::ttl::hidden`). An index build deletes every due document
//! it meets instead of indexing it (`remove_due`), and never removes the
//! owner of a unique key it claims (`keeping_due`): every owner it meets
//! was indexed because it was not due.
//!
//! Every document it stores (insert or replace) first passes the
//! collection's validator, unless the write bypasses validation; removals
//! are never validated.
//!
//! Statement-level operations (delete/update by filter, index builds) live
//! in `statement`, TTL expiry in [`crate::ttl`]; this module only knows
//! single documents.

use std::collections::HashMap;
use std::ops::Range;

use ahash::RandomState;
use bson::{RawBsonRef, RawDocument, RawDocumentBuf};
use ebb_config::limits::{MAX_BSON_OBJECT_BYTES, MAX_STORED_DEPTH};

use crate::capped::tracker::Tracker;
use crate::collection::Collection;
use crate::engine::{Batch, Cf, Direction, Engine, KeyRange, KeySet};
use crate::index::{KeyGen, duplicate_key_error};
use crate::ttl::never::{self, Counter};
use ebb_lang::encoding::field_names::field_names;
use ebb_lang::error::{Error, ErrorKind, Result};

/// Single-document writes against one collection, buffered in one batch.
pub struct Writer<'e> {
    engine: &'e dyn Engine,
    coll: &'e Collection,
    batch: Box<dyn Batch + 'e>,
    /// Records written by the uncommitted batch: Some(the document's bytes
    /// in `written`) or None (deleted).
    records: HashMap<Vec<u8>, Option<Range<usize>>, RandomState>,
    /// The documents of `records`, back to back (one buffer, not one
    /// allocation per document).
    written: Vec<u8>,
    /// Unique-index value prefixes claimed (Some(owner id)) or released (None)
    /// by the uncommitted batch, per index column family.
    unique: HashMap<(u64, Vec<u8>), Option<Vec<u8>>, RandomState>,
    /// Record keys found absent from the engine by [`Writer::prefetch`]
    /// since the last commit.
    absent: KeySet,
    ns: String,
    /// The earliest TTL due time among the entries this writer put.
    earliest_due: Option<i64>,
    /// `bypassDocumentValidation: true`: documents are stored unchecked.
    bypass_validation: bool,
    /// Whether a due document in the way of a write is deleted (false for
    /// index builds).
    replace_due: bool,
    /// Whether the documents [`Writer::replace`] stores replace the old
    /// ones whole (a replacement update), for the change log.
    replacing: bool,
    /// A capped collection's order and totals (`crate::capped`).
    capped: Option<Tracker>,
    /// The counts of documents its TTL index never makes due (`ttl::never`).
    never: Option<Counter>,
    scratch: Scratch,
}

/// Buffers [`Writer::insert_keyed`] reuses from one document to the next.
#[derive(Default)]
struct Scratch {
    /// The document's index entries, every index's after the previous one's.
    entries: Vec<Vec<u8>>,
    /// Each index's part of `entries`, in the handle's order.
    spans: Vec<Range<usize>>,
    /// What its TTL entries carry (`ttl::carry`).
    carried: Vec<u8>,
}

impl<'e> Writer<'e> {
    /// A writer for `coll`'s collection; a capped collection's totals are
    /// read once here (nothing else writes while this writer exists).
    pub fn new(engine: &'e dyn Engine, coll: &'e Collection) -> Result<Self> {
        let capped = match (coll.natural(), coll.capped) {
            (Some(cf), Some(options)) => Some(Tracker::open(engine, cf, options)?),
            _ => None,
        };
        Ok(Writer {
            capped,
            never: Counter::open(engine, coll)?,
            engine,
            coll,
            batch: engine.batch(),
            records: HashMap::default(),
            written: Vec::new(),
            unique: HashMap::default(),
            absent: KeySet::default(),
            ns: coll.ns(),
            earliest_due: None,
            bypass_validation: false,
            replace_due: true,
            replacing: false,
            scratch: Scratch::default(),
        })
    }

    /// Room for `docs` documents of `bytes` in all before the next commit,
    /// so that an insert statement's batch does not grow its maps and its
    /// copies step by step.
    pub fn reserve(&mut self, docs: usize, bytes: usize) {
        self.records.reserve(docs);
        self.written.reserve(bytes);
    }

    /// Counts from zero the documents the collection's TTL index never
    /// makes due: the build of that index, which sees every document.
    pub fn count_never_from_zero(&mut self) {
        self.never = Counter::fresh(self.coll);
    }

    /// Notes that a build put `doc`'s `entries` into index `kg`.
    pub fn built(&mut self, kg: &KeyGen, doc: &RawDocument, entries: &[Vec<u8>]) {
        if let Some(c) = &mut self.never
            && self.coll.keygens[c.index].cf == kg.cf
        {
            c.note(kg, doc, entries, true);
        }
    }

    /// A writer that never deletes a due document in its way: index
    /// builds, which must index every stored document.
    pub fn keeping_due(mut self) -> Self {
        self.replace_due = false;
        self
    }

    /// Whether the next documents [`Writer::replace`] stores replace the
    /// old ones whole (a replacement) or come from update operators: the
    /// change log says which (`crate::changes`).
    pub fn replacing(&mut self, whole: bool) {
        self.replacing = whole;
    }

    /// Stores documents without checking them against the collection's
    /// validator (`bypassDocumentValidation`).
    pub fn bypass_validation(&mut self, bypass: bool) {
        self.bypass_validation = bypass;
    }

    /// Checks a document about to be stored against the validator;
    /// `before` is the version an update replaces.
    fn validate(&self, doc: &RawDocument, before: Option<&RawDocument>) -> Result<()> {
        match &self.coll.validator {
            Some(validator) if !self.bypass_validation => validator.check(&self.ns, doc, before),
            _ => Ok(()),
        }
    }

    /// The earliest TTL due time (millis) among the index entries written
    /// through this writer, committed or not: the monitor is woken for it.
    pub fn earliest_due(&self) -> Option<i64> {
        self.earliest_due
    }

    /// Buffers an index entry, noting its due time. A TTL entry carries
    /// `carried` (see `ttl::carry`), other entries are empty.
    /// Puts one entry of `kg`: a TTL index's carries `carried`
    /// (`ttl::carry`), another's `cover` (`index::cover`).
    fn put_index_entry(
        &mut self,
        kg: &KeyGen,
        entry: &[u8],
        carried: &[u8],
        cover: &[u8],
    ) -> Result<()> {
        let value = match kg.expire_after_secs() {
            Some(_) => carried,
            None => cover,
        };
        if let Some(due) = kg.note_put(entry) {
            self.earliest_due = Some(self.earliest_due.map_or(due, |e| e.min(due)));
        }
        self.batch.put(Cf::Id(kg.cf), entry, value)
    }

    /// The uncommitted batch, for writes of another collection that must
    /// commit with this one's (`archive`: an expiring chunk's deletions).
    pub fn batch_mut(&mut self) -> &mut dyn Batch {
        self.batch.as_mut()
    }

    /// Puts `batch` in place of this writer's uncommitted batch and
    /// returns that one: a transaction's commit hands one batch from the
    /// writer of each collection it wrote to the next, so that all its
    /// writes commit together (`transaction`).
    pub fn swap_batch(&mut self, batch: Box<dyn Batch + 'e>) -> Box<dyn Batch + 'e> {
        std::mem::replace(&mut self.batch, batch)
    }

    /// Adds to the batch what [`Writer::commit`] adds before committing
    /// (the counts of never-expiring documents), for a writer whose batch
    /// another writer commits. Not for a capped collection's writer.
    pub fn settle(&mut self) -> Result<()> {
        debug_assert!(self.capped.is_none());
        if let Some(c) = &self.never {
            c.before_commit(self.batch.as_mut(), &self.coll.keygens[c.index])?;
        }
        if !self.batch.is_empty() {
            never::forget_if_several(self.batch.as_mut(), self.coll)?;
        }
        Ok(())
    }

    /// Operations buffered so far.
    pub fn pending_ops(&self) -> usize {
        self.batch.len()
    }

    /// Commits the batch and starts a new one.
    pub fn commit(&mut self, sync: bool) -> Result<()> {
        if let Some(capped) = &mut self.capped {
            capped.before_commit(self.batch.as_mut())?;
        }
        let first_never = match &self.never {
            Some(c) => c.before_commit(self.batch.as_mut(), &self.coll.keygens[c.index])?,
            None => None,
        };
        if !self.batch.is_empty() {
            never::forget_if_several(self.batch.as_mut(), self.coll)?;
        }
        let batch = std::mem::replace(&mut self.batch, self.engine.batch());
        self.records.clear();
        self.written.clear();
        self.unique.clear();
        self.absent.clear();
        if let Some(capped) = &mut self.capped {
            capped.committed();
        }
        // A member applying an entry commits even an empty batch: it
        // counts its batches to know, after a crash, which are in
        // (`ebb_lang::decided::Rider`).
        if batch.is_empty() && ebb_lang::decided::rider().is_none() {
            if sync {
                self.engine.sync_wal()?;
            }
            return Ok(());
        }
        batch.commit(sync)?;
        if let Some(c) = &mut self.never {
            c.committed();
            if let Some(tally) = first_never {
                let kg = &self.coll.keygens[c.index];
                let why: Vec<String> = tally
                    .by_reason()
                    .filter(|(_, n)| *n > 0)
                    .map(|(r, n)| format!("{n} {}", r.name()))
                    .collect();
                tracing::warn!(
                    ns = %self.ns,
                    index = %kg.name,
                    "documents that TTL index never makes due were written: {} \
                     (explainExpiry names the reason for each)",
                    why.join(", ")
                );
            }
        }
        Ok(())
    }

    /// The current version of a record: the batch's if it wrote one.
    pub fn get(&self, id_key: &[u8]) -> Result<Option<RawDocumentBuf>> {
        let bytes = match self.records.get(id_key) {
            Some(v) => v.as_ref().map(|at| self.written[at.clone()].to_vec()),
            None => self.engine.get(self.coll.records(), id_key)?,
        };
        bytes
            .map(|b| RawDocumentBuf::from_bytes(b).map_err(Error::from))
            .transpose()
    }

    /// Keeps a copy of a document this batch writes, for [`Writer::get`].
    fn write_down(&mut self, doc: &RawDocument) -> Range<usize> {
        let start = self.written.len();
        self.written.extend_from_slice(doc.as_bytes());
        start..self.written.len()
    }

    /// Whether a record is stored at `id_key`, this batch's writes included,
    /// for a key about to be inserted: asking raises the record bound to it
    /// (one lock per document). A key this batch wrote was raised then.
    fn stored_claiming(&self, id_key: &[u8]) -> Result<bool> {
        if let Some(record) = self.records.get(id_key) {
            return Ok(record.is_some());
        }
        let bound = &self.coll.record_bound;
        if bound.claim(self.engine, self.coll.records(), id_key)? || self.absent.contains(id_key) {
            return Ok(false);
        }
        Ok(self.engine.get(self.coll.records(), id_key)?.is_some())
    }

    /// Looks up many record keys in one batched read and remembers which
    /// are absent, so that inserting them needs no read of its own; keys
    /// above the collection's [`RecordBound`](crate::collection::bound::RecordBound) or
    /// in one of its gaps need no read at all (and no memory:
    /// `Writer::stored_claiming` asks the bound again). The window's
    /// smallest key leaves a gap below it when it lies above the bound. What
    /// it learns holds until the next commit: only this writer adds records.
    pub fn prefetch<'k>(&mut self, id_keys: impl Iterator<Item = &'k [u8]>) -> Result<()> {
        let mut keys: Vec<Vec<u8>> = Vec::new();
        let (bound, records) = (&self.coll.record_bound, self.coll.records());
        let window: Vec<&[u8]> = id_keys.filter(|k| !self.records.contains_key(*k)).collect();
        if let Some(lowest) = window.iter().min() {
            bound.note_gap_below(self.engine, records, lowest)?;
        }
        for key in window {
            if !bound.is_free(self.engine, records, key)? {
                keys.push(key.to_vec());
            }
        }
        let found = self.engine.multi_get(self.coll.records(), &keys)?;
        for (key, value) in keys.into_iter().zip(found) {
            if value.is_none() {
                self.absent.insert(key);
            }
        }
        Ok(())
    }

    /// Inserts a prepared document (see [`prepare_insert`]).
    pub fn insert(&mut self, doc: &RawDocument) -> Result<()> {
        let id_key = record_key(self.coll, doc)?;
        self.insert_keyed(doc, id_key)
    }

    /// [`Writer::insert`] of a document whose record key is made.
    pub fn insert_keyed(&mut self, doc: &RawDocument, id_key: Vec<u8>) -> Result<()> {
        if let Some(capped) = &self.capped {
            capped.check_fits(doc.as_bytes().len())?;
        }
        self.validate(doc, None)?;
        if self.stored_claiming(&id_key)? && !self.remove_if_due(&id_key)? {
            let id = doc.get("_id")?;
            let key_value = bson::doc! {
                "_id": id.and_then(|id| bson::Bson::try_from(id).ok()).unwrap_or(bson::Bson::Null)
            };
            return Err(duplicate_key_error(
                &self.ns,
                crate::catalog::ID_INDEX_NAME,
                &bson::doc! {"_id": 1},
                key_value,
            ));
        }
        let coll = self.coll;
        // Entries of an expired document stored here may wait for the
        // sweep; one of them could be this document's too (`ttl::sweep`).
        if coll.sweep.holds(self.engine, coll.meta.id, &id_key)? {
            // The sweep's queue is the collection's, not a transaction's:
            // its overlay must not take entries off it.
            if self.engine.detached() {
                return Err(Error::new(
                    ErrorKind::WriteConflict,
                    format!(
                        "a document of {} with this _id expired and its index entries are                          still being removed",
                        self.ns
                    ),
                ));
            }
            crate::ttl::sweep(self.engine, coll)?;
        }
        // Scratch kept across documents (taken out while `self` is borrowed
        // again; an error drops it, and the next document makes new ones).
        let Scratch {
            mut entries,
            mut spans,
            mut carried,
        } = std::mem::take(&mut self.scratch);
        entries.clear();
        spans.clear();
        for kg in &self.coll.keygens {
            let start = entries.len();
            kg.keys(doc, &id_key, &mut entries)?;
            spans.push(start..entries.len());
        }
        if let Some(c) = &mut self.never {
            let kg = &coll.keygens[c.index];
            c.note(kg, doc, &entries[spans[c.index].clone()], true);
        }
        for (kg, span) in self.coll.keygens.iter().zip(&spans) {
            if kg.unique {
                for entry in &entries[span.clone()] {
                    self.claim_unique(kg, entry, &id_key)?;
                }
            }
        }
        self.batch
            .put(self.coll.records(), &id_key, doc.as_bytes())?;
        crate::changes::inserted(self.batch.as_mut(), coll, doc)?;
        carried.clear();
        carry_into(
            &mut carried,
            coll,
            coll.keygens
                .iter()
                .zip(&spans)
                .map(|(kg, span)| (kg.cf, &entries[span.clone()])),
        );
        for (kg, span) in coll.keygens.iter().zip(&spans) {
            let cover = kg.cover_value(doc, span.len());
            for entry in &entries[span.clone()] {
                self.put_index_entry(kg, entry, &carried, &cover)?;
            }
        }
        self.scratch = Scratch {
            entries,
            spans,
            carried,
        };
        if let Some(capped) = &mut self.capped {
            capped.inserted(self.batch.as_mut(), &id_key, doc.as_bytes().len())?;
        }
        let at = self.write_down(doc);
        self.records.insert(id_key, Some(at));
        self.cap()
    }

    /// Removes the oldest documents of a capped collection while it holds
    /// more than its bounds, in the batch of the insert that overfilled
    /// it (mongod removes them in the insert's storage transaction).
    fn cap(&mut self) -> Result<()> {
        while let Some(capped) = &mut self.capped
            && capped.over()
        {
            let Some(oldest) = capped.oldest(self.engine)? else {
                return Ok(());
            };
            let Some(doc) = self.get(&oldest)? else {
                return Err(Error::corrupt("capped order names a missing record"));
            };
            self.remove(&oldest, &doc)?;
        }
        Ok(())
    }

    /// Removes a document and all its index entries.
    pub fn remove(&mut self, id_key: &[u8], doc: &RawDocument) -> Result<()> {
        if let Some(capped) = &mut self.capped {
            capped.removed(
                self.engine,
                self.batch.as_mut(),
                id_key,
                doc.as_bytes().len(),
            )?;
        }
        let mut entries = Vec::new();
        for (i, kg) in self.coll.keygens.iter().enumerate() {
            entries.clear();
            kg.keys(doc, id_key, &mut entries)?;
            if let Some(c) = &mut self.never
                && c.index == i
            {
                c.note(kg, doc, &entries, false);
            }
            for entry in &entries {
                self.batch.delete(Cf::Id(kg.cf), entry)?;
                if kg.unique {
                    let prefix = kg.value_prefix(entry, id_key.len()).to_vec();
                    self.unique.insert((kg.cf, prefix), None);
                }
            }
        }
        self.batch.delete(self.coll.records(), id_key)?;
        if let Some(id) = doc.get("_id")? {
            crate::changes::deleted(self.batch.as_mut(), self.coll, id, Some(doc), None)?;
        }
        self.records.insert(id_key.to_vec(), None);
        Ok(())
    }

    /// Replaces `old` by `new` (same `_id`), touching only the index
    /// entries that differ.
    pub fn replace(&mut self, id_key: &[u8], old: &RawDocument, new: &RawDocument) -> Result<()> {
        check_storable(new, WriteKind::Update)?;
        self.validate(new, Some(old))?;
        let coll = self.coll;
        let mut old_entries = Vec::new();
        let mut all_new = Vec::with_capacity(coll.keygens.len());
        let mut changes = Vec::new();
        for (i, kg) in coll.keygens.iter().enumerate() {
            old_entries.clear();
            let mut new_entries = Vec::new();
            kg.keys(old, id_key, &mut old_entries)?;
            kg.keys(new, id_key, &mut new_entries)?;
            if let Some(c) = &mut self.never
                && c.index == i
            {
                c.note(kg, old, &old_entries, false);
                c.note(kg, new, &new_entries, true);
            }
            let removed: Vec<Vec<u8>> = old_entries
                .iter()
                .filter(|e| !new_entries.contains(e))
                .cloned()
                .collect();
            // An entry whose value changed type (`5` to `5.0`) keeps its
            // key but is written again with the new types.
            let cover = kg.cover_value(new, new_entries.len());
            let retyped = cover != kg.cover_value(old, old_entries.len());
            let added: Vec<Vec<u8>> = new_entries
                .iter()
                .filter(|e| retyped || !old_entries.contains(e))
                .cloned()
                .collect();
            if kg.unique {
                for entry in &removed {
                    let prefix = kg.value_prefix(entry, id_key.len()).to_vec();
                    self.unique.insert((kg.cf, prefix), None);
                }
                for entry in &added {
                    self.claim_unique(kg, entry, id_key)?;
                }
            }
            changes.push((kg, removed, added, cover));
            all_new.push(new_entries);
        }
        // TTL entries carry every entry of the document: when any changed,
        // each TTL entry is written again with the new list.
        let changed = changes
            .iter()
            .any(|(_, removed, added, _)| !removed.is_empty() || !added.is_empty());
        let carried = match changed {
            true => carried(
                coll,
                coll.keygens
                    .iter()
                    .zip(&all_new)
                    .map(|(kg, e)| (kg.cf, e.as_slice())),
            ),
            false => Vec::new(),
        };
        for ((kg, removed, added, cover), new_entries) in changes.into_iter().zip(&all_new) {
            for e in removed {
                self.batch.delete(Cf::Id(kg.cf), &e)?;
            }
            let rewrite = changed && kg.expire_after_secs().is_some();
            for e in if rewrite { new_entries } else { &added } {
                self.put_index_entry(kg, e, &carried, &cover)?;
            }
        }
        self.batch
            .put(self.coll.records(), id_key, new.as_bytes())?;
        crate::changes::updated(self.batch.as_mut(), coll, old, new, self.replacing)?;
        if let Some(capped) = &mut self.capped {
            capped.resized(old.as_bytes().len(), new.as_bytes().len());
        }
        let at = self.write_down(new);
        self.records.insert(id_key.to_vec(), Some(at));
        Ok(())
    }

    /// Adds one index entry directly (index builds), with its `cover`
    /// value (`KeyGen::cover_value`).
    pub fn put_entry(
        &mut self,
        kg: &KeyGen,
        entry: &[u8],
        id_key: &[u8],
        cover: &[u8],
    ) -> Result<()> {
        if kg.unique {
            self.claim_unique(kg, entry, id_key)?;
        }
        // Entries built into an existing collection carry no TTL list:
        // expiry reads those documents' records (`ttl::carry`).
        self.put_index_entry(kg, entry, &[], cover)
    }

    /// Deletes a key range of a column family (index or records).
    pub fn delete_range(&mut self, cf: Cf, from: &[u8], to: &[u8]) -> Result<()> {
        self.batch.delete_range(cf, from, to)
    }

    /// Checks that no other document holds `entry`'s value in a unique
    /// index, then claims it for `id_key`.
    /// Checks that no other document holds `entry`'s value in a unique
    /// index (one that is due and hidden is deleted instead), then claims
    /// it for `id_key`.
    fn claim_unique(&mut self, kg: &KeyGen, entry: &[u8], id_key: &[u8]) -> Result<()> {
        let prefix = kg.value_prefix(entry, id_key.len()).to_vec();
        let slot = (kg.cf, prefix);
        loop {
            let owner = match self.unique.get(&slot) {
                Some(Some(owner)) => (owner.as_slice() != id_key).then(|| owner.clone()),
                Some(None) => None,
                None => self.committed_other_owner(kg, &slot.1, id_key)?,
            };
            match owner {
                None => break,
                // Its removal released the slot: look again.
                Some(owner) if self.remove_if_due(&owner)? => continue,
                Some(_) => return Err(kg.duplicate_error(&self.ns, entry)),
            }
        }
        self.unique.insert(slot, Some(id_key.to_vec()));
        Ok(())
    }

    /// The first committed document other than `id_key` holding `prefix`
    /// in a unique index, unless this batch removed it.
    fn committed_other_owner(
        &self,
        kg: &KeyGen,
        prefix: &[u8],
        id_key: &[u8],
    ) -> Result<Option<Vec<u8>>> {
        let mut cursor =
            self.engine
                .cursor(Cf::Id(kg.cf), KeyRange::prefix(prefix), Direction::Forward)?;
        while cursor.valid() {
            let owner = kg.id_suffix(cursor.key())?;
            let removed = matches!(self.records.get(owner), Some(None));
            if owner != id_key && !removed {
                return Ok(Some(owner.to_vec()));
            }
            cursor.advance();
        }
        cursor.status()?;
        Ok(None)
    }

    /// Deletes `doc` (stored at `id_key`) if it is due and hidden; returns
    /// whether it did. Index builds call it for every document they meet.
    pub fn remove_due(&mut self, id_key: &[u8], doc: &RawDocument) -> Result<bool> {
        let Some(now) = self.coll.hide_at_for_write() else {
            return Ok(false);
        };
        if !self.coll.is_due(doc, now) {
            return Ok(false);
        }
        self.remove(id_key, doc)?;
        self.coll.hide_due().note_replaced(1);
        Ok(true)
    }

    /// Deletes the document at `id_key` if it is due and hidden, so the
    /// write in its way can go ahead; returns whether it did.
    fn remove_if_due(&mut self, id_key: &[u8]) -> Result<bool> {
        if !self.replace_due {
            return Ok(false);
        }
        let Some(now) = self.coll.hide_at_for_write() else {
            return Ok(false);
        };
        let Some(doc) = self.get(id_key)? else {
            return Ok(false);
        };
        if !self.coll.is_due(&doc, now) {
            return Ok(false);
        }
        self.remove(id_key, &doc)?;
        self.coll.hide_due().note_replaced(1);
        Ok(true)
    }
}

/// The checks every stored document passes, inserted or updated: the size limit and
/// [`MAX_STORED_DEPTH`] (MongoDB's Overflow, with the wording of the write that made it).
fn check_storable(doc: &RawDocument, write: WriteKind) -> Result<()> {
    check_size(doc)?;
    if exceeds_depth(doc, MAX_STORED_DEPTH)? {
        let errmsg = match write {
            WriteKind::Insert => format!(
                "cannot insert document because it exceeds {MAX_STORED_DEPTH} levels of nesting"
            ),
            WriteKind::Update => {
                format!("Document exceeds maximum nesting depth of {MAX_STORED_DEPTH}")
            }
        };
        return Err(Error::new(ErrorKind::Overflow, errmsg));
    }
    Ok(())
}

#[derive(Clone, Copy)]
enum WriteKind {
    Insert,
    Update,
}

/// Whether `doc` nests non-empty documents or arrays deeper than `max` levels
/// (the document itself is level 1). Walks with an explicit stack.
fn exceeds_depth(doc: &RawDocument, max: usize) -> Result<bool> {
    // Each level below the first costs at least 7 bytes (type, an empty key,
    // length, terminator), so most documents are too small to need the walk.
    if doc.as_bytes().len() < 7 * max {
        return Ok(false);
    }
    let mut open = vec![doc.iter()];
    while let Some(elements) = open.last_mut() {
        let Some(element) = elements.next() else {
            open.pop();
            continue;
        };
        let children = match element?.1 {
            RawBsonRef::Document(d) => d,
            RawBsonRef::Array(a) => RawDocument::from_bytes(a.as_bytes())?,
            _ => continue,
        };
        if children.is_empty() {
            continue;
        }
        if open.len() >= max {
            return Ok(true);
        }
        open.push(children.iter());
    }
    Ok(false)
}

/// The value TTL entries carry for a document whose entries in each index
/// of `coll` are `per_index` (`ttl::carry`); empty without TTL indexes.
fn carried<'a>(
    coll: &Collection,
    per_index: impl Iterator<Item = (u64, &'a [Vec<u8>])>,
) -> Vec<u8> {
    let mut out = Vec::new();
    carry_into(&mut out, coll, per_index);
    out
}

/// [`carried`] appended to `out`.
fn carry_into<'a>(
    out: &mut Vec<u8>,
    coll: &Collection,
    per_index: impl Iterator<Item = (u64, &'a [Vec<u8>])>,
) {
    let mut ttl = coll.ttl_keygens();
    if let Some(first) = ttl.next() {
        let own = ttl.next().is_none().then_some(first.cf);
        crate::ttl::carry::encode_into(out, own, per_index);
    }
}

fn check_size(doc: &RawDocument) -> Result<()> {
    let size = doc.as_bytes().len();
    if size > MAX_BSON_OBJECT_BYTES {
        return Err(Error::new(
            ErrorKind::BsonObjectTooLarge,
            format!(
                "object to insert too large. size in bytes: {size}, max size: {MAX_BSON_OBJECT_BYTES}"
            ),
        ));
    }
    Ok(())
}

/// Makes a client document ready to store: one `_id`, first (generated as
/// an ObjectId when missing, as the server does), of a storable type, and
/// the document within the size and nesting limits. Returns the document
/// unchanged (no copy) when it already has `_id` first.
pub fn prepare_insert(doc: RawDocumentBuf) -> Result<RawDocumentBuf> {
    Ok(prepare(&doc)?.unwrap_or(doc))
}

/// [`prepare_insert`] on a borrowed document: `None` when it is stored as
/// it is (its `_id` already first), else the document rebuilt.
pub fn prepare(doc: &RawDocument) -> Result<Option<RawDocumentBuf>> {
    // Names only, as bytes: the values and the names' UTF-8 were checked
    // where the document arrived, and checking them here again cost a
    // connection more than the rest of the insert's preparation.
    let (mut ids, mut first_is_id) = (0, None);
    for name in field_names(doc.as_bytes()) {
        let Some(name) = name else {
            // Malformed: let `bson` say how.
            doc.iter_elements().try_for_each(|e| e.map(drop))?;
            return Err(Error::bad_value("invalid BSON document"));
        };
        let is_id = name == b"_id";
        first_is_id.get_or_insert(is_id);
        ids += usize::from(is_id);
    }
    if ids > 1 {
        return Err(Error::bad_value(
            "can't have multiple _id fields in one document",
        ));
    }
    let first_is_id = first_is_id.unwrap_or(false);
    let rebuilt = match first_is_id {
        true => None,
        false => {
            let mut out = RawDocumentBuf::new();
            match doc.get("_id")? {
                Some(id) => out.append(bson::raw::cstr!("_id"), id),
                None => out.append(bson::raw::cstr!("_id"), ebb_lang::decided::object_id()),
            }
            for el in doc.iter() {
                let (k, v) = el?;
                if k.as_str() != "_id" {
                    out.append(k, v);
                }
            }
            Some(out)
        }
    };
    let out = rebuilt.as_deref().unwrap_or(doc);
    check_id(out.get("_id")?.expect("_id was placed first"))?;
    check_storable(out, WriteKind::Insert)?;
    Ok(rebuilt)
}

/// The record key of a document that has an `_id` (a prepared one).
pub fn record_key(coll: &Collection, doc: &RawDocument) -> Result<Vec<u8>> {
    let id = doc
        .get("_id")?
        .ok_or_else(|| Error::bad_value("document has no _id"))?;
    Ok(coll.record_key(id))
}

/// [`prepare`] for every document of an insert statement, before it
/// reaches the writer (a connection's task runs it, so the work is spread
/// over the cores instead of queued on the collection's one writer).
/// `None` when any document fails: the writer then prepares them all
/// itself and meets the failure in its place and order.
pub fn prepare_statement(docs: &[&RawDocument]) -> Option<Vec<RawDocumentBuf>> {
    docs.iter()
        .map(|doc| match prepare(doc) {
            Ok(rebuilt) => Some(rebuilt.unwrap_or_else(|| (*doc).to_owned())),
            Err(_) => None,
        })
        .collect()
}

/// MongoDB refuses arrays, regexes and undefined as `_id`, and a
/// document `_id` with a `$`-prefixed field at any depth.
pub fn check_id(id: RawBsonRef<'_>) -> Result<()> {
    let what = match id {
        RawBsonRef::Array(_) => "an array",
        RawBsonRef::RegularExpression(_) => "a regex",
        RawBsonRef::Undefined => "a undefined",
        RawBsonRef::Document(d) => return check_id_fields(d),
        _ => return Ok(()),
    };
    Err(Error::bad_value(format!("can't use {what} for _id")))
}

fn check_id_fields(doc: &bson::RawDocument) -> Result<()> {
    for el in doc.iter() {
        let (k, v) = el?;
        if k.as_str().starts_with('$') {
            return Err(Error::new(
                ErrorKind::DollarPrefixedFieldName,
                format!(
                    "_id fields may not contain '$'-prefixed fields: {} is not valid for storage.",
                    k.as_str()
                ),
            ));
        }
        if let RawBsonRef::Document(inner) = v {
            check_id_fields(inner)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use bson::{Bson, RawDocumentBuf, doc};

    use super::*;

    /// `{k: {k: … {k: null}}}` with `levels` levels, the document itself included.
    fn nested_with(key: &str, levels: usize) -> RawDocumentBuf {
        let mut value = Bson::Null;
        for _ in 1..levels {
            value = Bson::Document(doc! { key: value });
        }
        RawDocumentBuf::try_from(&doc! { key: value }).unwrap()
    }

    fn nested(levels: usize) -> RawDocumentBuf {
        nested_with("a", levels)
    }

    #[test]
    fn nesting_is_counted_from_the_document_itself() {
        assert!(!exceeds_depth(&nested(100), 100).unwrap());
        assert!(exceeds_depth(&nested(101), 100).unwrap());
        let arrays = RawDocumentBuf::try_from(&doc! { "a": [[[1]]] }).unwrap();
        assert!(!exceeds_depth(&arrays, 4).unwrap());
        assert!(exceeds_depth(&arrays, 3).unwrap());
        let empty_innermost = RawDocumentBuf::try_from(&doc! { "a": [[{}]] }).unwrap();
        assert!(
            !exceeds_depth(&empty_innermost, 3).unwrap(),
            "empty documents add no level"
        );
    }

    #[test]
    fn the_size_shortcut_never_skips_a_deep_document() {
        // The smallest document of 101 levels: empty keys, a null innermost.
        let smallest = nested_with("", 101);
        assert!(smallest.as_bytes().len() >= 7 * 100);
        assert!(exceeds_depth(&smallest, 100).unwrap());
    }

    #[test]
    fn a_second_id_is_refused() {
        let mut twice = RawDocumentBuf::new();
        twice.append(bson::raw::cstr!("_id"), 1);
        twice.append(bson::raw::cstr!("x"), 1);
        twice.append(bson::raw::cstr!("_id"), 2);
        let error = prepare_insert(twice).unwrap_err();
        assert_eq!(error.kind, ErrorKind::BadValue);
        assert_eq!(
            error.message,
            "can't have multiple _id fields in one document"
        );
    }
}
