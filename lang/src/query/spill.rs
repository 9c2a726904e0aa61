//! The blocking sort of a query: in memory up to a byte budget, and past
//! it, when the client allowed disk use (`allowDiskUse`), an external
//! merge sort — sorted runs written to temporary files in a spill
//! directory, then merged — so memory stays bounded by the budget however
//! large the result.
//!
//! Run file layout (one file per run, deleted when the sort is dropped):
//!
//! ```text
//! record = id_key length : u32 LE | id_key | document (raw BSON, self-sized)
//! ```
//!
//! Ties keep input order, as the in-memory sort (stable) does: runs hold
//! consecutive stretches of the input and the merge takes the earlier run
//! first on equal keys. With a limit (`sort` + `limit`, the results to
//! keep being skip + limit), only the best so far are held: whenever twice
//! that many (at least 1024) have gathered, they are sorted and cut back, so
//! a top-k sort of any input holds about k documents (mongod's top-k sort).
//! This module does not scan or filter.

use std::cmp::Ordering;
use std::collections::VecDeque;
use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::PathBuf;

use bson::RawDocumentBuf;

use super::found::Found;
use super::sort::SortSpec;
use crate::error::{Error, ErrorKind, Result};

/// Where a sort may spill, if anywhere.
#[derive(Debug, Clone)]
pub enum DiskUse {
    /// The budget is a hard limit: past it the query fails (mongod's 292).
    Forbidden,
    /// Runs past the budget go to temporary files in this directory.
    Allowed(PathBuf),
}

/// What a sort orders by.
#[derive(Debug, Clone)]
enum Order {
    /// The documents, by a sort specification.
    Spec(SortSpec),
    /// The `id_key` bytes (an order-preserving key the caller encoded,
    /// such as a `$group` key).
    Key,
}

impl Order {
    fn compare(&self, a: &Found, b: &Found) -> Ordering {
        match self {
            Order::Spec(spec) => spec.compare(&a.doc, &b.doc),
            Order::Key => a.id_key.cmp(&b.id_key),
        }
    }
}

/// A sort being fed its input.
pub struct Sorter {
    order: Order,
    disk: DiskUse,
    budget: usize,
    held: Vec<Found>,
    held_bytes: usize,
    runs: Vec<File>,
    /// Only this many results are wanted (skip + limit), if bounded.
    keep: Option<usize>,
}

/// The fewest results a top-k sort gathers before cutting back to k.
const MIN_CUT_EVERY: usize = 1024;

impl Sorter {
    pub fn new(spec: SortSpec, disk: DiskUse, budget: usize) -> Sorter {
        Sorter::ordered(Order::Spec(spec), disk, budget)
    }

    /// A sort by each result's `id_key` bytes, stable on ties.
    pub fn by_key(disk: DiskUse, budget: usize) -> Sorter {
        Sorter::ordered(Order::Key, disk, budget)
    }

    fn ordered(order: Order, disk: DiskUse, budget: usize) -> Sorter {
        Sorter {
            order,
            disk,
            budget,
            held: Vec::new(),
            held_bytes: 0,
            runs: Vec::new(),
            keep: None,
        }
    }

    /// The same sorter wanting only the first `keep` results in order.
    pub fn keeping(mut self, keep: Option<usize>) -> Sorter {
        self.keep = keep;
        self
    }

    /// Adds one result; cuts a top-k sort back to its k; spills (or fails)
    /// when what is held exceeds the budget.
    pub fn push(&mut self, found: Found) -> Result<()> {
        self.held_bytes += found.doc.as_bytes().len() + found.id_key.len();
        self.held.push(found);
        if let Some(keep) = self.keep {
            let cut_every = keep.saturating_mul(2).max(MIN_CUT_EVERY);
            if self.held.len() >= cut_every || self.held_bytes > self.budget {
                self.cut_to(keep);
            }
        }
        if self.held_bytes > self.budget {
            match &self.disk {
                DiskUse::Forbidden => return Err(memory_error(self.budget)),
                DiskUse::Allowed(dir) => {
                    let dir = dir.clone();
                    self.spill(&dir)?;
                }
            }
        }
        Ok(())
    }

    /// Keeps the first `keep` of what is held, in order (stable: ties keep
    /// input order, and everything held came after what was cut before).
    fn cut_to(&mut self, keep: usize) {
        self.held.sort_by(|a, b| self.order.compare(a, b));
        self.held.truncate(keep);
        self.held_bytes = self
            .held
            .iter()
            .map(|f| f.doc.as_bytes().len() + f.id_key.len())
            .sum();
    }

    /// Sorts what is held and writes it as one run.
    fn spill(&mut self, dir: &PathBuf) -> Result<()> {
        std::fs::create_dir_all(dir).map_err(io_error)?;
        let mut held = std::mem::take(&mut self.held);
        self.held_bytes = 0;
        held.sort_by(|a, b| self.order.compare(a, b));
        let file = tempfile::tempfile_in(dir).map_err(io_error)?;
        let mut out = BufWriter::new(file);
        for f in &held {
            out.write_all(&(f.id_key.len() as u32).to_le_bytes())
                .and_then(|_| out.write_all(&f.id_key))
                .and_then(|_| out.write_all(f.doc.as_bytes()))
                .map_err(io_error)?;
        }
        let mut file = out.into_inner().map_err(|e| io_error(e.into_error()))?;
        file.seek(SeekFrom::Start(0)).map_err(io_error)?;
        self.runs.push(file);
        Ok(())
    }

    /// Whether any run went to disk.
    pub fn spilled(&self) -> bool {
        !self.runs.is_empty()
    }

    /// The sorted results.
    pub fn finish(mut self) -> Result<Sorted> {
        match self.keep {
            Some(keep) => self.cut_to(keep),
            None => self.held.sort_by(|a, b| self.order.compare(a, b)),
        }
        if self.runs.is_empty() {
            return Ok(Sorted::Memory(self.held.into()));
        }
        // What is still held is the last run; it stays in memory.
        let mut sources: Vec<Source> = self
            .runs
            .into_iter()
            .map(|f| Source::File(BufReader::new(f)))
            .collect();
        sources.push(Source::Memory(self.held.into()));
        let mut merge = Merge {
            order: self.order,
            heads: (0..sources.len()).map(|_| None).collect(),
            sources,
        };
        for i in 0..merge.sources.len() {
            merge.refill(i)?;
        }
        Ok(Sorted::Merge(Box::new(merge)))
    }
}

/// Sorted results, handed out one at a time.
pub enum Sorted {
    Memory(VecDeque<Found>),
    Merge(Box<Merge>),
}

impl Sorted {
    /// The next result in order.
    pub fn pop(&mut self) -> Result<Option<Found>> {
        match self {
            Sorted::Memory(q) => Ok(q.pop_front()),
            Sorted::Merge(m) => m.next(),
        }
    }

    /// Whether nothing is left.
    pub fn is_empty(&self) -> bool {
        match self {
            Sorted::Memory(q) => q.is_empty(),
            Sorted::Merge(m) => m.is_empty(),
        }
    }
}

enum Source {
    File(BufReader<File>),
    Memory(VecDeque<Found>),
}

impl Source {
    fn next(&mut self) -> Result<Option<Found>> {
        match self {
            Source::Memory(q) => Ok(q.pop_front()),
            Source::File(r) => read_record(r),
        }
    }
}

/// The k-way merge of the runs: each source's next document waits in
/// `heads`, and the smallest (the earliest source on ties) goes next. A
/// linear pick is enough: there is one run per budget's worth of results.
pub struct Merge {
    order: Order,
    sources: Vec<Source>,
    heads: Vec<Option<Found>>,
}

impl Merge {
    fn refill(&mut self, source: usize) -> Result<()> {
        self.heads[source] = self.sources[source].next()?;
        Ok(())
    }

    fn next(&mut self) -> Result<Option<Found>> {
        let mut best: Option<usize> = None;
        for (i, head) in self.heads.iter().enumerate() {
            let Some(candidate) = head else { continue };
            let better = match best.and_then(|b| self.heads[b].as_ref()) {
                None => true,
                Some(current) => self.order.compare(candidate, current) == Ordering::Less,
            };
            if better {
                best = Some(i);
            }
        }
        let Some(i) = best else {
            return Ok(None);
        };
        let found = self.heads[i].take();
        self.refill(i)?;
        Ok(found)
    }

    fn is_empty(&self) -> bool {
        self.heads.iter().all(Option::is_none)
    }
}

fn read_record(r: &mut BufReader<File>) -> Result<Option<Found>> {
    let mut len = [0u8; 4];
    match r.read_exact(&mut len) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(io_error(e)),
    }
    let mut id_key = vec![0; u32::from_le_bytes(len) as usize];
    r.read_exact(&mut id_key).map_err(io_error)?;
    r.read_exact(&mut len).map_err(io_error)?;
    let size = i32::from_le_bytes(len);
    if size < 5 {
        return Err(Error::corrupt("spill file: bad document size"));
    }
    let mut doc = len.to_vec();
    doc.resize(size as usize, 0);
    r.read_exact(&mut doc[4..]).map_err(io_error)?;
    let doc =
        RawDocumentBuf::from_bytes(doc).map_err(|e| Error::corrupt(format!("spill file: {e}")))?;
    Ok(Some(Found { id_key, doc }))
}

fn io_error(e: std::io::Error) -> Error {
    Error::engine(format!("sort spill: {e}"))
}

/// mongod's 292 for a sort past its budget without disk use.
pub fn memory_error(budget: usize) -> Error {
    Error::new(
        ErrorKind::QueryExceededMemoryLimit,
        format!(
            "Sort exceeded memory limit of {budget} bytes, but did not opt in to external sorting."
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::rawdoc;

    fn found(i: i32, k: i32) -> Found {
        Found {
            id_key: i.to_be_bytes().to_vec(),
            doc: rawdoc! { "_id": i, "k": k, "pad": "x".repeat(50) },
        }
    }

    fn spec() -> SortSpec {
        SortSpec::parse(&rawdoc! { "k": 1 }).unwrap()
    }

    fn drain(mut s: Sorted) -> Vec<(i32, i32)> {
        let mut out = Vec::new();
        while let Some(f) = s.pop().unwrap() {
            out.push((f.doc.get_i32("_id").unwrap(), f.doc.get_i32("k").unwrap()));
        }
        out
    }

    #[test]
    fn spilled_sort_equals_the_in_memory_sort_and_is_stable() {
        let input: Vec<Found> = (0..1000).map(|i| found(i, (i * 7919) % 97)).collect();
        let dir = tempfile::tempdir().unwrap();
        let mut memory = Sorter::new(spec(), DiskUse::Forbidden, usize::MAX);
        // A budget of a few documents forces many runs.
        let mut disk = Sorter::new(spec(), DiskUse::Allowed(dir.path().into()), 2_000);
        for f in &input {
            memory.push(f.clone()).unwrap();
            disk.push(f.clone()).unwrap();
        }
        assert!(disk.spilled());
        assert!(!memory.spilled());
        let expected = drain(memory.finish().unwrap());
        assert_eq!(drain(disk.finish().unwrap()), expected);
        // Stable: equal keys keep input (_id) order.
        for w in expected.windows(2) {
            assert!(w[0].1 < w[1].1 || (w[0].1 == w[1].1 && w[0].0 < w[1].0));
        }
    }

    #[test]
    fn without_disk_use_the_budget_is_mongods_292() {
        let mut s = Sorter::new(spec(), DiskUse::Forbidden, 120);
        s.push(found(1, 1)).unwrap();
        let e = s.push(found(2, 2)).unwrap_err();
        assert_eq!(e.kind, ErrorKind::QueryExceededMemoryLimit);
    }

    #[test]
    fn a_top_k_sort_holds_k_and_equals_the_head_of_the_full_sort() {
        let input: Vec<Found> = (0..20_000).map(|i| found(i, (i * 7919) % 97)).collect();
        let mut full = Sorter::new(spec(), DiskUse::Forbidden, usize::MAX);
        // A budget of about 30 documents: only a top-k sort fits in it.
        let mut top = Sorter::new(spec(), DiskUse::Forbidden, 30 * 120).keeping(Some(5));
        for f in &input {
            full.push(f.clone()).unwrap();
            top.push(f.clone()).unwrap();
            assert!(top.held.len() <= MIN_CUT_EVERY);
        }
        let expected: Vec<_> = drain(full.finish().unwrap()).into_iter().take(5).collect();
        assert_eq!(drain(top.finish().unwrap()), expected);
    }
}
