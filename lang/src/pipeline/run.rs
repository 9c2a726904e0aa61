//! Running a parsed pipeline over documents fed one at a time: streaming
//! stages pass each document on, blocking stages (`$sort`, `$group`,
//! `$count`, `$facet`, `$sample`) hold their input until
//! [`Pipeline::finish`], within the blocking-stage memory limit. Stages
//! that read other collections do so through the pipeline's [`Sources`];
//! their nested pipelines run as pipelines of their own ([`Outer`]).

use std::collections::HashMap;
use std::sync::Arc;

use bson::{Bson, RawBson, RawBsonRef, RawDocument, RawDocumentBuf};
use ebb_config::limits::MAX_SORT_BYTES;

use super::accumulator::AccState;
use super::expr::{Expr, cstr};
use super::kind::Stage;
use super::project::set_fields;
use super::sample::Rng;
use super::sources::Sources;
use super::window::same_partition;
use crate::encoding::cmp::Cmp;
use crate::encoding::collation::Collation;
use crate::encoding::display::{shell, type_name as display_type_name};
use crate::encoding::keycode::encode_collated;
use crate::error::{Error, ErrorKind, Result, StageError};
use crate::query::found::Found;
use crate::query::spill::{DiskUse, Sorter};

/// Memory a new group is charged (its key and states are small).
const GROUP_OVERHEAD_BYTES: u64 = 64;

/// Running state of the stages.
pub struct Pipeline<'s> {
    stages: Vec<Stage>,
    /// Per stage: documents seen (`$skip`/`$limit`, `$count`) or bytes held.
    counters: Vec<u64>,
    held: Vec<Vec<RawDocumentBuf>>,
    /// Per stage: bytes `$sample` holds.
    held_bytes: Vec<u64>,
    groups: Vec<Groups>,
    /// Per `$sort` stage: its sort, spilling past the limit when allowed.
    sorters: Vec<Option<Sorter>>,
    /// Per window stage: the partition key of the documents held.
    partition_keys: Vec<Option<RawBson>>,
    out: Vec<RawDocumentBuf>,
    bytes: usize,
    done: bool,
    /// Orders strings in `$match`, `$sort` and `$group` keys.
    collation: Option<Arc<Collation>>,
    /// Where blocking stages may spill (`allowDiskUse`), see
    /// [`memory_error`].
    disk: DiskUse,
    /// What `$sort` and `$group` hold in memory (mongod's 100 MiB; less in
    /// tests, so they spill small inputs).
    limit: usize,
    /// Where `$lookup` and `$unionWith` read other collections.
    sources: Option<&'s dyn Sources>,
    /// The error when the output outgrows the limit, for a pipeline nested
    /// in a stage with a limit of its own (`$lookup`, `$facet`); None for
    /// the blocking-stage memory error.
    overflow: Option<StageError>,
    /// `$sample`'s random numbers, made when first needed.
    rng: Option<Rng>,
    /// Whether the documents carry a `$text` score for the stages
    /// (`crate::text::SCORE_FIELD`), which `$project` keeps.
    text_score: bool,
}

/// What a pipeline nested in a stage inherits from the pipeline it runs
/// in: where to read collections, the collation, `allowDiskUse`, whether
/// documents carry a `$text` score.
#[derive(Clone)]
pub(super) struct Outer<'s> {
    sources: Option<&'s dyn Sources>,
    collation: Option<Arc<Collation>>,
    disk: DiskUse,
    text_score: bool,
}

impl<'s> Outer<'s> {
    pub(super) fn sources(&self) -> Result<&'s dyn Sources> {
        self.sources
            .ok_or_else(|| Error::not_implemented("reading another collection here"))
    }

    pub(super) fn collation(&self) -> Option<Arc<Collation>> {
        self.collation.clone()
    }

    /// A pipeline of `stages` nested in this one; `overflow` is the error
    /// when its output outgrows the limit (None: the memory error).
    pub(super) fn pipeline(
        &self,
        stages: Vec<Stage>,
        overflow: Option<StageError>,
    ) -> Pipeline<'s> {
        let mut p = Pipeline::new(stages)
            .collated(self.collation.clone())
            .disk_use(self.disk.clone());
        p.sources = self.sources;
        p.overflow = overflow;
        p.text_score = self.text_score;
        p
    }
}

#[derive(Default)]
struct Groups {
    order: Vec<Vec<u8>>,
    by_key: HashMap<Vec<u8>, (RawBson, Vec<AccState>)>,
    /// With disk use allowed, once the groups held reach the limit: the
    /// documents of groups not held, sorted by group key.
    spilled: Option<Sorter>,
}

/// The error of a stage past the memory limit: mongod's 292, or, when the
/// client allowed disk use, a refusal (`$sort` and `$group` spill; the
/// stages that hold documents otherwise do not).
fn memory_error(disk: &DiskUse) -> Error {
    if let DiskUse::Allowed(_) = disk {
        return Error::not_implemented(
            "spilling this aggregation stage ($facet, $bucketAuto, $sample) past 100 MiB to disk",
        );
    }
    Error::new(
        ErrorKind::QueryExceededMemoryLimit,
        format!(
            "Exceeded memory limit of {MAX_SORT_BYTES} bytes in an aggregation stage, but did not opt in to external sorting."
        ),
    )
}

impl<'s> Pipeline<'s> {
    pub fn new(stages: Vec<Stage>) -> Self {
        // Stages defined as sequences of others run as those stages.
        let stages: Vec<Stage> = stages
            .into_iter()
            .flat_map(|s| match s {
                Stage::Sequence(seq) => seq,
                other => vec![other],
            })
            .collect();
        let n = stages.len();
        Pipeline {
            stages,
            counters: vec![0; n],
            held: (0..n).map(|_| Vec::new()).collect(),
            held_bytes: vec![0; n],
            groups: (0..n).map(|_| Groups::default()).collect(),
            sorters: (0..n).map(|_| None).collect(),
            partition_keys: vec![None; n],
            out: Vec::new(),
            bytes: 0,
            done: false,
            collation: None,
            disk: DiskUse::Forbidden,
            limit: MAX_SORT_BYTES,
            sources: None,
            overflow: None,
            rng: None,
            text_score: false,
        }
    }

    /// The pipeline over documents that carry their `$text` score.
    pub fn carrying_text_score(mut self, carrying: bool) -> Self {
        self.text_score = carrying;
        self
    }

    /// The pipeline reading other collections through `sources`.
    pub fn with_sources(mut self, sources: &'s dyn Sources) -> Self {
        self.sources = Some(sources);
        self
    }

    fn outer(&self) -> Outer<'s> {
        Outer {
            sources: self.sources,
            collation: self.collation.clone(),
            disk: self.disk.clone(),
            text_score: self.text_score,
        }
    }

    /// Where `$sort` and `$group` may spill past the memory limit: the
    /// directory when the client allowed disk use (`allowDiskUse`).
    pub fn disk_use(mut self, disk: DiskUse) -> Self {
        self.disk = disk;
        self
    }

    /// What `$sort` and `$group` may hold in memory, for tests (a quarter
    /// more goes to a spilling `$group`'s documents before each run).
    #[cfg(test)]
    pub(crate) fn memory_limit(mut self, bytes: usize) -> Self {
        self.limit = bytes;
        self
    }

    /// The pipeline comparing strings by `collation` (the operation's, or
    /// the collection's default): `$match` and `$sort` stages use it, and
    /// `$group` puts strings it calls equal in one group.
    pub fn collated(mut self, collation: Option<Arc<Collation>>) -> Self {
        for stage in &mut self.stages {
            let taken = std::mem::replace(stage, Stage::Skip(0));
            *stage = match taken {
                Stage::Match(f) => Stage::Match(f.collated(collation.clone())),
                Stage::Sort(s) => Stage::Sort(s.collated(collation.clone())),
                Stage::Window(w) => Stage::Window(Box::new(w.collated(collation.clone()))),
                Stage::Group { id, accs } => Stage::Group {
                    id,
                    accs: accs
                        .into_iter()
                        .map(|(n, a)| (n, a.collated(collation.clone())))
                        .collect(),
                },
                other => other,
            };
        }
        self.collation = collation;
        self
    }

    /// Feeds one input document; returns false once no more input can
    /// change the result (a `$limit` was reached with only streaming
    /// stages before it).
    pub fn push(&mut self, doc: RawDocumentBuf) -> Result<bool> {
        self.run_from(0, doc)?;
        Ok(!self.done)
    }

    fn emit(&mut self, doc: RawDocumentBuf) -> Result<()> {
        self.bytes += doc.as_bytes().len();
        if self.bytes > MAX_SORT_BYTES {
            return Err(match self.overflow {
                Some(kind) => Error::new(
                    ErrorKind::Stage(kind),
                    format!("the output of a nested pipeline exceeds {MAX_SORT_BYTES} bytes"),
                ),
                None => memory_error(&self.disk),
            });
        }
        self.out.push(doc);
        Ok(())
    }

    fn run_from(&mut self, start: usize, doc: RawDocumentBuf) -> Result<()> {
        let mut doc = doc;
        for i in start..self.stages.len() {
            match &self.stages[i] {
                Stage::Match(f) => {
                    if !f.matches(&doc)? {
                        return Ok(());
                    }
                }
                Stage::Skip(n) => {
                    self.counters[i] += 1;
                    if self.counters[i] <= *n {
                        return Ok(());
                    }
                }
                Stage::Limit(n) => {
                    self.counters[i] += 1;
                    if self.counters[i] > *n {
                        if self.stages[..i].iter().all(Stage::streaming) {
                            self.done = true;
                        }
                        return Ok(());
                    }
                }
                Stage::Project(p) => doc = self.keep_text_score(&doc, p.apply(&doc)),
                Stage::ProjectComputed(p) => doc = self.keep_text_score(&doc, p.apply(&doc)?),
                Stage::AddFields(fields) => doc = add_fields(&doc, fields)?,
                Stage::ReplaceRoot { new_root, what } => doc = replace_root(&doc, new_root, what)?,
                Stage::Redact(e) => match redact(e, &doc, &doc)? {
                    Some(kept) => doc = kept,
                    None => return Ok(()),
                },
                Stage::Lookup(_) => {
                    let outer = self.outer();
                    let Stage::Lookup(lookup) = &mut self.stages[i] else {
                        unreachable!("matched above")
                    };
                    doc = lookup.apply(&doc, &outer)?;
                }
                Stage::GraphLookup(graph) => doc = graph.apply(&doc, &self.outer())?,
                // Their own documents come after the input, in finish.
                Stage::UnionWith(_) | Stage::Documents(_) => {}
                Stage::Unwind {
                    path,
                    preserve_empty,
                    index_field,
                } => {
                    let (path, preserve_empty, index_field) =
                        (path.clone(), *preserve_empty, index_field.clone());
                    for d in unwind(&doc, &path, preserve_empty, index_field.as_deref())? {
                        self.run_from(i + 1, d)?;
                    }
                    return Ok(());
                }
                Stage::Sort(_)
                | Stage::Count(_)
                | Stage::Group { .. }
                | Stage::Facet(_)
                | Stage::BucketAuto(_)
                | Stage::Window(_)
                | Stage::Densify(_)
                | Stage::Sample(_) => {
                    return self.accumulate(i, doc);
                }
                Stage::Sequence(_) => unreachable!("spliced in by Pipeline::new"),
            }
        }
        self.emit(doc)
    }

    fn accumulate(&mut self, i: usize, doc: RawDocumentBuf) -> Result<()> {
        match &self.stages[i] {
            Stage::Sort(spec) => {
                let keep = top_k(&self.stages[i + 1..]);
                let sorter = self.sorters[i].get_or_insert_with(|| {
                    Sorter::new(spec.clone(), self.disk.clone(), self.limit).keeping(keep)
                });
                sorter.push(Found {
                    id_key: Vec::new(),
                    doc,
                })?;
            }
            Stage::Window(w) => {
                let (key, doc) = w.partition_key(doc)?;
                let cmp = Cmp::new(self.collation.as_deref());
                if let Some(held) = &self.partition_keys[i]
                    && !same_partition(held, &key, cmp)
                {
                    self.flush_partition(i)?;
                }
                self.partition_keys[i] = Some(key);
                self.counters[i] += doc.as_bytes().len() as u64;
                if self.counters[i] > MAX_SORT_BYTES as u64 {
                    return Err(partition_too_large(&self.disk));
                }
                self.held[i].push(doc);
            }
            Stage::Facet(_) | Stage::BucketAuto(_) | Stage::Densify(_) => {
                self.counters[i] += doc.as_bytes().len() as u64;
                if self.counters[i] > MAX_SORT_BYTES as u64 {
                    return Err(memory_error(&self.disk));
                }
                self.held[i].push(doc);
            }
            Stage::Count(_) => self.counters[i] += 1,
            Stage::Group { id, accs } => {
                let key_value = id.eval(&doc)?.unwrap_or(RawBson::Null);
                let mut key = Vec::new();
                encode_collated(
                    &mut key,
                    key_value.as_raw_bson_ref(),
                    self.collation.as_deref(),
                );
                let groups = &mut self.groups[i];
                let first_seen = !groups.by_key.contains_key(&key);
                if first_seen {
                    // Past the limit, a new group's documents go to a sort
                    // by group key (spilling to disk) and are grouped at
                    // the end; groups already held go on in memory.
                    if groups.spilled.is_none()
                        && self.counters[i] + GROUP_OVERHEAD_BYTES > self.limit as u64
                    {
                        if let DiskUse::Forbidden = self.disk {
                            return Err(memory_error(&self.disk));
                        }
                        groups.spilled = Some(Sorter::by_key(self.disk.clone(), self.limit / 4));
                    }
                    if let Some(sorter) = &mut groups.spilled {
                        return sorter.push(Found { id_key: key, doc });
                    }
                    groups.order.push(key.clone());
                    let states = accs.iter().map(|(_, a)| AccState::new(a)).collect();
                    groups.by_key.insert(key.clone(), (key_value, states));
                    self.counters[i] += GROUP_OVERHEAD_BYTES;
                }
                let (_, states) = groups.by_key.get_mut(&key).expect("inserted above");
                let cmp = Cmp::new(self.collation.as_deref());
                for (state, (_, acc)) in states.iter_mut().zip(accs) {
                    state.add(acc, &doc, first_seen, cmp)?;
                }
            }
            Stage::Sample(size) => {
                let size = *size;
                self.counters[i] += 1;
                let held = &mut self.held[i];
                let bytes = &mut self.held_bytes[i];
                if (held.len() as u64) < size {
                    *bytes += doc.as_bytes().len() as u64;
                    held.push(doc);
                } else {
                    // Reservoir sampling: the n-th document replaces a held
                    // one with probability size/n.
                    let j = self
                        .rng
                        .get_or_insert_with(Rng::new)
                        .below(self.counters[i]);
                    if let Some(slot) = usize::try_from(j).ok().and_then(|j| held.get_mut(j)) {
                        *bytes -= slot.as_bytes().len() as u64;
                        *bytes += doc.as_bytes().len() as u64;
                        *slot = doc;
                    }
                }
                if *bytes > MAX_SORT_BYTES as u64 {
                    return Err(memory_error(&self.disk));
                }
            }
            _ => unreachable!("only blocking stages accumulate"),
        }
        Ok(())
    }

    /// Flushes blocking stages in order and returns the output.
    pub fn finish(mut self) -> Result<Vec<RawDocumentBuf>> {
        for i in 0..self.stages.len() {
            let docs: Vec<RawDocumentBuf> = match &self.stages[i] {
                Stage::Sort(_) => {
                    // Handed on one at a time: a spilled sort is merged
                    // from its runs as the next stages take documents.
                    if let Some(sorter) = self.sorters[i].take() {
                        let mut sorted = sorter.finish()?;
                        while let Some(found) = sorted.pop()? {
                            self.run_from(i + 1, found.doc)?;
                        }
                    }
                    continue;
                }
                Stage::Window(_) => {
                    self.flush_partition(i)?;
                    continue;
                }
                Stage::Count(field) => {
                    let n = self.counters[i];
                    if n == 0 {
                        Vec::new()
                    } else {
                        let mut d = RawDocumentBuf::new();
                        d.append(
                            cstr(field),
                            i32::try_from(n)
                                .map(RawBson::Int32)
                                .unwrap_or(RawBson::Int64(n as i64)),
                        );
                        vec![d]
                    }
                }
                Stage::Facet(_) => vec![self.facet(i)?],
                Stage::BucketAuto(b) => {
                    let held = std::mem::take(&mut self.held[i]);
                    b.run(held, Cmp::new(self.collation.as_deref()))?
                }
                Stage::Densify(d) => {
                    let held = std::mem::take(&mut self.held[i]);
                    d.run(held, Cmp::new(self.collation.as_deref()))?
                }
                Stage::Sample(_) => {
                    let mut held = std::mem::take(&mut self.held[i]);
                    let rng = self.rng.get_or_insert_with(Rng::new);
                    for k in (1..held.len()).rev() {
                        let j = rng.below(k as u64 + 1) as usize;
                        held.swap(k, j);
                    }
                    held
                }
                Stage::UnionWith(u) => {
                    // Its documents go on one at a time, so a union with a
                    // large collection is held only by what follows.
                    let (u, outer) = (u.clone(), self.outer());
                    u.run(&outer, &mut |d| self.run_from(i + 1, d))?;
                    continue;
                }
                Stage::Documents(e) => documents(e)?,
                Stage::Group { accs, .. } => {
                    let accs = accs.clone();
                    let mut groups = std::mem::take(&mut self.groups[i]);
                    if let Some(sorter) = groups.spilled.take() {
                        self.finish_spilled_groups(i, sorter)?;
                    }
                    let mut by_key = groups.by_key;
                    groups
                        .order
                        .into_iter()
                        .filter_map(|k| by_key.remove(&k))
                        .map(|(id, states)| {
                            let mut d = RawDocumentBuf::new();
                            d.append(bson::raw::cstr!("_id"), id);
                            for ((name, acc), state) in accs.iter().zip(states) {
                                d.append(cstr(name), state.result_of(acc)?);
                            }
                            Ok(d)
                        })
                        .collect::<Result<Vec<_>>>()?
                }
                _ => continue,
            };
            for d in docs {
                self.run_from(i + 1, d)?;
            }
        }
        Ok(self.out)
    }
}

impl Pipeline<'_> {
    /// The groups of `$group` stage `i` that went to disk: their documents
    /// come back sorted by group key, so each group is accumulated and
    /// passed on before the next begins.
    fn finish_spilled_groups(&mut self, i: usize, sorter: Sorter) -> Result<()> {
        let Stage::Group { id, accs } = &self.stages[i] else {
            unreachable!("called for $group")
        };
        let (id, accs) = (id.clone(), accs.clone());
        let cmp_collation = self.collation.clone();
        let cmp = Cmp::new(cmp_collation.as_deref());
        let result = |key: RawBson, states: Vec<AccState>| {
            let mut d = RawDocumentBuf::new();
            d.append(bson::raw::cstr!("_id"), key);
            for ((name, acc), state) in accs.iter().zip(states) {
                d.append(cstr(name), state.result_of(acc)?);
            }
            Ok::<_, Error>(d)
        };
        let mut sorted = sorter.finish()?;
        let mut current: Option<(Vec<u8>, RawBson, Vec<AccState>)> = None;
        while let Some(found) = sorted.pop()? {
            let first_seen = current.as_ref().is_none_or(|(k, _, _)| *k != found.id_key);
            if first_seen {
                if let Some((_, key, states)) = current.take() {
                    self.run_from(i + 1, result(key, states)?)?;
                }
                let key = id.eval(&found.doc)?.unwrap_or(RawBson::Null);
                let states = accs.iter().map(|(_, a)| AccState::new(a)).collect();
                current = Some((found.id_key.clone(), key, states));
            }
            let Some((_, _, states)) = &mut current else {
                unreachable!("set above")
            };
            for (state, (_, acc)) in states.iter_mut().zip(&accs) {
                state.add(acc, &found.doc, first_seen, cmp)?;
            }
        }
        if let Some((_, key, states)) = current {
            self.run_from(i + 1, result(key, states)?)?;
        }
        Ok(())
    }

    /// Runs the window stage `i` over the partition it holds and passes
    /// the documents on.
    fn flush_partition(&mut self, i: usize) -> Result<()> {
        let docs = std::mem::take(&mut self.held[i]);
        self.counters[i] = 0;
        self.partition_keys[i] = None;
        if docs.is_empty() {
            return Ok(());
        }
        let Stage::Window(w) = &self.stages[i] else {
            unreachable!("called for a window stage")
        };
        let out = w.run_partition(docs, Cmp::new(self.collation.as_deref()))?;
        for d in out {
            self.run_from(i + 1, d)?;
        }
        Ok(())
    }

    /// `$facet`'s one output document: each facet's pipeline run over the
    /// held input, as an array.
    fn facet(&mut self, i: usize) -> Result<RawDocumentBuf> {
        let Stage::Facet(facets) = &self.stages[i] else {
            unreachable!("called for $facet")
        };
        let facets = facets.clone();
        let input = std::mem::take(&mut self.held[i]);
        let outer = self.outer();
        let mut out = RawDocumentBuf::new();
        let mut bytes = 0usize;
        for (name, stages) in facets {
            let mut pipeline = outer.pipeline(stages, Some(StageError::FacetTooLarge));
            for d in &input {
                if !pipeline.push(d.clone())? {
                    break;
                }
            }
            let mut array = bson::RawArrayBuf::new();
            for d in pipeline.finish()? {
                bytes += d.as_bytes().len();
                if bytes > MAX_SORT_BYTES {
                    return Err(Error::new(
                        ErrorKind::Stage(StageError::FacetTooLarge),
                        format!(
                            "document constructed by $facet is {bytes} bytes, which exceeds the limit of {MAX_SORT_BYTES} bytes"
                        ),
                    ));
                }
                array.push(d);
            }
            out.append(cstr(&name), array);
        }
        Ok(out)
    }
}

/// How many sorted documents the stages after a `$sort` can use, when a
/// `$limit` (after any `$skip`) bounds them: the sort then keeps only those
/// (mongod's `$sort` + `$limit` coalescence, a top-k sort).
fn top_k(after: &[Stage]) -> Option<usize> {
    let mut skipped: u64 = 0;
    for stage in after {
        match stage {
            Stage::Skip(n) => skipped = skipped.saturating_add(*n),
            Stage::Limit(n) => return usize::try_from(skipped.saturating_add(*n)).ok(),
            _ => return None,
        }
    }
    None
}

/// mongod's error for a `$setWindowFields` partition past the memory
/// limit; ebb holds a partition in memory even when disk use is allowed,
/// and says so rather than ignore `allowDiskUse`.
fn partition_too_large(disk: &DiskUse) -> Error {
    if let DiskUse::Allowed(_) = disk {
        return Error::not_implemented(
            "spilling a $setWindowFields partition larger than 100 MiB to disk",
        );
    }
    Error::new(
        ErrorKind::Stage(StageError::WindowPartitionTooLarge),
        format!(
            "Exceeded memory limit in DocumentSourceSetWindowFields: a partition holds more than \
             {MAX_SORT_BYTES} bytes"
        ),
    )
}

/// The documents `$documents` evaluates to: an array of documents.
fn documents(e: &Expr) -> Result<Vec<RawDocumentBuf>> {
    let empty = RawDocumentBuf::new();
    let Some(RawBson::Array(items)) = e.eval(&empty)? else {
        return Err(Error::new(
            ErrorKind::Stage(StageError::DocumentsNotArray),
            "error during $documents evaluation: the expression must evaluate to an array",
        ));
    };
    let mut out = Vec::new();
    for item in &items {
        match item? {
            RawBsonRef::Document(d) => out.push(d.to_owned()),
            other => {
                return Err(Error::new(
                    ErrorKind::ReplaceRootNotObject,
                    format!(
                        "'newRoot' expression must evaluate to an object, but resulting value \
                         was of type '{}'",
                        display_type_name(&other)
                    ),
                ));
            }
        }
    }
    Ok(out)
}

fn add_fields(doc: &RawDocument, fields: &[(String, Expr)]) -> Result<RawDocumentBuf> {
    let mut values = Vec::with_capacity(fields.len());
    for (k, e) in fields {
        values.push((k.as_str(), e.eval(doc)?));
    }
    set_fields(doc, values)
}

/// `$redact` of `current`, a document within `root`: `None` when pruned,
/// itself when kept, and when descended into, its fields with each
/// embedded document (in arrays too, at any depth) redacted in turn.
fn redact(e: &Expr, root: &RawDocument, current: &RawDocument) -> Result<Option<RawDocumentBuf>> {
    match e.eval_at(root, current)? {
        Some(RawBson::String(s)) if s == "prune" => Ok(None),
        Some(RawBson::String(s)) if s == "keep" => Ok(Some(current.to_owned())),
        Some(RawBson::String(s)) if s == "descend" => {
            let mut out = RawDocumentBuf::new();
            for el in current.iter() {
                let (k, v) = el?;
                if let Some(v) = redact_value(e, root, v)? {
                    out.append(k, v);
                }
            }
            Ok(Some(out))
        }
        other => {
            let shown = match other {
                Some(v) => Bson::try_from(v).map_or_else(|_| String::new(), |b| shell(&b)),
                None => "MISSING".to_owned(),
            };
            Err(Error::new(
                ErrorKind::Stage(StageError::RedactAnswer),
                format!(
                    "$redact's expression should not return anything aside from the variables \
                     $$KEEP, $$DESCEND, and $$PRUNE, but returned {shown}"
                ),
            ))
        }
    }
}

/// A field's value under a descending `$redact`: a document redacted (gone
/// when pruned), an array with its documents redacted, anything else kept.
fn redact_value(e: &Expr, root: &RawDocument, v: RawBsonRef<'_>) -> Result<Option<RawBson>> {
    Ok(match v {
        RawBsonRef::Document(d) => redact(e, root, d)?.map(RawBson::Document),
        RawBsonRef::Array(items) => {
            let mut out = bson::RawArrayBuf::new();
            for item in items {
                if let Some(kept) = redact_value(e, root, item?)? {
                    out.push(kept);
                }
            }
            Some(RawBson::Array(out))
        }
        other => Some(other.into()),
    })
}

/// `$replaceRoot`: the value of `new_root`, which must be a document.
fn replace_root(doc: &RawDocument, new_root: &Expr, what: &str) -> Result<RawDocumentBuf> {
    let value = new_root.eval(doc)?;
    if let Some(RawBson::Document(new)) = value {
        return Ok(new);
    }
    let (shown, type_name) = match &value {
        Some(v) => (
            Bson::try_from(v.clone()).map_or_else(|_| String::new(), |b| shell(&b)),
            display_type_name(&v.as_raw_bson_ref()),
        ),
        None => ("MISSING".to_owned(), "missing"),
    };
    let input = Bson::Document(bson::Document::try_from(doc)?);
    Err(Error::new(
        ErrorKind::ReplaceRootNotObject,
        format!(
            "{what} must evaluate to an object, but resulting value was: {shown}. Type of \
             resulting value: '{type_name}'. Input document: {}",
            shell(&input)
        ),
    ))
}

fn unwind(
    doc: &RawDocument,
    path: &str,
    preserve_empty: bool,
    index_field: Option<&str>,
) -> Result<Vec<RawDocumentBuf>> {
    let parts: Vec<&str> = path.split('.').collect();
    let with = |value: Option<RawBsonRef<'_>>, index: Option<i64>| -> Result<RawDocumentBuf> {
        let out = replace_at(doc, &parts, value)?;
        match index_field {
            Some(f) => {
                let index = index.map_or(RawBson::Null, RawBson::Int64);
                let at: Vec<&str> = f.split('.').collect();
                super::project::set_path(&out, &at, index)
            }
            None => Ok(out),
        }
    };
    let value = nested(doc, &parts)?;
    match value {
        Some(RawBsonRef::Array(a)) => {
            let items: Vec<RawBsonRef<'_>> = a.into_iter().collect::<Result<_, _>>()?;
            if items.is_empty() {
                return Ok(if preserve_empty {
                    vec![with(None, None)?]
                } else {
                    Vec::new()
                });
            }
            items
                .into_iter()
                .enumerate()
                .map(|(i, v)| with(Some(v), Some(i as i64)))
                .collect()
        }
        None | Some(RawBsonRef::Null) => Ok(if preserve_empty {
            vec![with(value, None)?]
        } else {
            Vec::new()
        }),
        Some(v) => Ok(vec![with(Some(v), None)?]),
    }
}

/// The value at a dotted path through embedded documents (an array on
/// the way ends it, as `$unwind` reads a path).
fn nested<'d>(doc: &'d RawDocument, parts: &[&str]) -> Result<Option<RawBsonRef<'d>>> {
    let Some((first, rest)) = parts.split_first() else {
        return Ok(None);
    };
    match (doc.get(first)?, rest.is_empty()) {
        (value, true) => Ok(value),
        (Some(RawBsonRef::Document(sub)), false) => nested(sub, rest),
        _ => Ok(None),
    }
}

/// `doc` with the value at the dotted path (which `nested` found) replaced
/// by `value`, or removed for `None`, in its place.
fn replace_at(
    doc: &RawDocument,
    parts: &[&str],
    value: Option<RawBsonRef<'_>>,
) -> Result<RawDocumentBuf> {
    let mut out = RawDocumentBuf::new();
    for el in doc.iter() {
        let (k, v) = el?;
        if k.as_str() != parts[0] {
            out.append(k, v);
        } else if parts.len() == 1 {
            if let Some(v) = value {
                out.append(k, v);
            }
        } else if let RawBsonRef::Document(sub) = v {
            out.append(k, replace_at(sub, &parts[1..], value)?);
        } else {
            out.append(k, v);
        }
    }
    Ok(out)
}

impl Pipeline<'_> {
    /// A projection's output still carrying the `$text` score its input
    /// carried (`crate::text::SCORE_FIELD`): mongod keeps the score as the
    /// document's metadata through `$project`.
    fn keep_text_score(&self, input: &RawDocument, mut out: RawDocumentBuf) -> RawDocumentBuf {
        if self.text_score
            && let Ok(Some(score)) = input.get(crate::text::SCORE_FIELD)
            && !matches!(out.get(crate::text::SCORE_FIELD), Ok(Some(_)))
            && let Ok(name) = bson::raw::CString::try_from(crate::text::SCORE_FIELD)
        {
            out.append(name, score);
        }
        out
    }
}
