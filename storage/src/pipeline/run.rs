//! Running a parsed pipeline over documents fed one at a time: streaming
//! stages pass each document on, blocking stages (`$sort`, `$group`,
//! `$count`) hold their input until [`Pipeline::finish`], within the
//! blocking-stage memory limit.

use std::collections::HashMap;
use std::sync::Arc;

use bson::{Bson, RawBson, RawBsonRef, RawDocument, RawDocumentBuf};
use ebb_config::limits::MAX_SORT_BYTES;

use super::accumulator::AccState;
use super::expr::{Expr, cstr};
use super::project::set_fields;
use super::stage::Stage;
use crate::encoding::cmp::Cmp;
use crate::encoding::collation::Collation;
use crate::encoding::display::{shell, type_name as display_type_name};
use crate::encoding::keycode::encode_collated;
use crate::error::{Error, ErrorKind, Result};

/// Memory a new group is charged (its key and states are small).
const GROUP_OVERHEAD_BYTES: u64 = 64;

/// Running state of the stages.
pub struct Pipeline {
    stages: Vec<Stage>,
    /// Per stage: documents seen (`$skip`/`$limit`, `$count`) or bytes held.
    counters: Vec<u64>,
    held: Vec<Vec<RawDocumentBuf>>,
    groups: Vec<Groups>,
    out: Vec<RawDocumentBuf>,
    bytes: usize,
    done: bool,
    /// Orders strings in `$match`, `$sort` and `$group` keys.
    collation: Option<Arc<Collation>>,
    /// `allowDiskUse` was given (see [`memory_error`]).
    disk_use_allowed: bool,
}

#[derive(Default)]
struct Groups {
    order: Vec<Vec<u8>>,
    by_key: HashMap<Vec<u8>, (RawBson, Vec<AccState>)>,
}

/// The error of a stage past the memory limit: mongod's 292, or, when the
/// client allowed disk use, a refusal (ebb spills only the query's own
/// sort, not `$sort`/`$group` stages after it).
fn memory_error(disk_use_allowed: bool) -> Error {
    if disk_use_allowed {
        return Error::not_implemented(
            "spilling in-memory aggregation stages ($sort, $group) past 100 MiB to disk",
        );
    }
    Error::new(
        ErrorKind::QueryExceededMemoryLimit,
        format!(
            "Exceeded memory limit of {MAX_SORT_BYTES} bytes in an aggregation stage, but did not opt in to external sorting."
        ),
    )
}

impl Pipeline {
    pub fn new(stages: Vec<Stage>) -> Self {
        let n = stages.len();
        Pipeline {
            stages,
            counters: vec![0; n],
            held: (0..n).map(|_| Vec::new()).collect(),
            groups: (0..n).map(|_| Groups::default()).collect(),
            out: Vec::new(),
            bytes: 0,
            done: false,
            collation: None,
            disk_use_allowed: false,
        }
    }

    /// Records that the client allowed disk use.
    pub fn disk_use_allowed(mut self, allowed: bool) -> Self {
        self.disk_use_allowed = allowed;
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
            return Err(memory_error(self.disk_use_allowed));
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
                Stage::Project(p) => doc = p.apply(&doc),
                Stage::ProjectComputed(p) => doc = p.apply(&doc)?,
                Stage::AddFields(fields) => doc = add_fields(&doc, fields)?,
                Stage::ReplaceRoot { new_root, what } => doc = replace_root(&doc, new_root, what)?,
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
                Stage::Sort(_) | Stage::Count(_) | Stage::Group { .. } => {
                    return self.accumulate(i, doc);
                }
            }
        }
        self.emit(doc)
    }

    fn accumulate(&mut self, i: usize, doc: RawDocumentBuf) -> Result<()> {
        match &self.stages[i] {
            Stage::Sort(_) => {
                self.counters[i] += doc.as_bytes().len() as u64;
                if self.counters[i] > MAX_SORT_BYTES as u64 {
                    return Err(memory_error(self.disk_use_allowed));
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
                    groups.order.push(key.clone());
                    let states = accs.iter().map(|(_, a)| AccState::new(a)).collect();
                    groups.by_key.insert(key.clone(), (key_value, states));
                    self.counters[i] += GROUP_OVERHEAD_BYTES;
                    if self.counters[i] > MAX_SORT_BYTES as u64 {
                        return Err(memory_error(self.disk_use_allowed));
                    }
                }
                let (_, states) = groups.by_key.get_mut(&key).expect("inserted above");
                let cmp = Cmp::new(self.collation.as_deref());
                for (state, (_, acc)) in states.iter_mut().zip(accs) {
                    state.add(acc, &doc, first_seen, cmp)?;
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
                Stage::Sort(sort) => {
                    let mut held = std::mem::take(&mut self.held[i]);
                    held.sort_by(|a, b| sort.compare(a, b));
                    held
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
                Stage::Group { accs, .. } => {
                    let names: Vec<String> = accs.iter().map(|(n, _)| n.clone()).collect();
                    let groups = std::mem::take(&mut self.groups[i]);
                    let mut by_key = groups.by_key;
                    groups
                        .order
                        .into_iter()
                        .filter_map(|k| by_key.remove(&k))
                        .map(|(id, states)| {
                            let mut d = RawDocumentBuf::new();
                            d.append(bson::raw::cstr!("_id"), id);
                            for (name, state) in names.iter().zip(states) {
                                d.append(cstr(name), state.result());
                            }
                            d
                        })
                        .collect()
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

fn add_fields(doc: &RawDocument, fields: &[(String, Expr)]) -> Result<RawDocumentBuf> {
    let mut values = Vec::with_capacity(fields.len());
    for (k, e) in fields {
        values.push((k.as_str(), e.eval(doc)?));
    }
    set_fields(doc, values)
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
    let with = |value: Option<RawBsonRef<'_>>, index: Option<i64>| -> Result<RawDocumentBuf> {
        let mut out = RawDocumentBuf::new();
        for el in doc.iter() {
            let (k, v) = el?;
            if k.as_str() == path {
                if let Some(v) = value {
                    out.append(k, v);
                }
            } else {
                out.append(k, v);
            }
        }
        if let Some(f) = index_field {
            out.append(cstr(f), index.map_or(RawBson::Null, RawBson::Int64));
        }
        Ok(out)
    };
    match doc.get(path)? {
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
            vec![with(doc.get(path)?, None)?]
        } else {
            Vec::new()
        }),
        Some(v) => Ok(vec![with(Some(v), None)?]),
    }
}
