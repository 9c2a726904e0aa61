//! `aggregate`: a pipeline over one collection.
//!
//! A leading `$match` (and a `$sort` right after it) becomes the query
//! the planner sees, so it can use an index; the remaining stages run in
//! memory, streaming where they can (`$match`, `$project`, `$unset`,
//! `$addFields`/`$set`, `$unwind`, `$skip`, `$limit`) and accumulating
//! where they must (`$group`, `$sort`, `$count`). The results are bounded
//! by the 100 MiB blocking-stage limit and returned through a cursor.
//!
//! Expressions are field paths (`"$a.b"`), literals, `{$literal: v}` and
//! documents of those; accumulators are `$sum`, `$avg`, `$min`, `$max`,
//! `$first`, `$last`, `$push`, `$addToSet` and `$count`. Other stages and
//! operators are refused with MongoDB's errors rather than half-done.

use std::collections::HashMap;

use bson::{RawArrayBuf, RawBson, RawBsonRef, RawDocument, RawDocumentBuf};
use ebb_storage::cmp::compare_values;
use ebb_storage::exec::{MAX_SORT_BYTES, QueryCursor};
use ebb_storage::keycode::encode_key;
use ebb_storage::plan::{self, QuerySpec};
use ebb_storage::query::filter::Filter;
use ebb_storage::query::projection::Projection;
use ebb_storage::query::sort::SortSpec;

use super::find::respond;
use super::{Request, check_collection_name, query};
use crate::args::{Args, as_i64, type_name};
use crate::context::NodeContext;
use crate::cursor::{OpenCursor, Source};
use crate::error::{CommandError, CommandResult, codes};

const NOT_IMPLEMENTED: i32 = 238;

const ARGS: &[&str] = &[
    "pipeline",
    "cursor",
    "explain",
    "allowDiskUse",
    "bypassDocumentValidation",
    "collation",
    "hint",
    "let",
];

/// One value-producing expression.
#[derive(Debug, Clone)]
enum Expr {
    Literal(RawBson),
    Path(String),
    Object(Vec<(String, Expr)>),
}

#[derive(Debug, Clone)]
enum Acc {
    Sum(Expr),
    Avg(Expr),
    Min(Expr),
    Max(Expr),
    First(Expr),
    Last(Expr),
    Push(Expr),
    AddToSet(Expr),
}

#[derive(Debug)]
enum Stage {
    Match(Filter),
    Sort(SortSpec),
    Skip(u64),
    Limit(u64),
    Project(Projection),
    AddFields(Vec<(String, Expr)>),
    Unwind {
        path: String,
        preserve_empty: bool,
        index_field: Option<String>,
    },
    Count(String),
    Group {
        id: Expr,
        accs: Vec<(String, Acc)>,
    },
}

fn not_implemented(what: &str) -> CommandError {
    CommandError::new(NOT_IMPLEMENTED, format!("{what} is not implemented in ebb"))
}

fn parse_expr(v: RawBsonRef<'_>) -> CommandResult<Expr> {
    match v {
        RawBsonRef::String(s) if s.starts_with("$$") => {
            Err(not_implemented(&format!("the variable '{s}'")))
        }
        RawBsonRef::String(s) if s.starts_with('$') => {
            let path = &s[1..];
            if path.is_empty() || path.split('.').any(str::is_empty) {
                return Err(CommandError::new(
                    16872,
                    format!("'{s}' is not a valid field path"),
                ));
            }
            Ok(Expr::Path(path.to_owned()))
        }
        RawBsonRef::Document(d) => {
            let mut fields = Vec::new();
            for el in d.iter() {
                let (k, v) = el?;
                let k = k.as_str();
                if k == "$literal" {
                    return Ok(Expr::Literal(RawBson::from(v)));
                }
                if k.starts_with('$') {
                    return Err(CommandError::new(
                        168,
                        format!("Unrecognized expression '{k}'"),
                    ));
                }
                fields.push((k.to_owned(), parse_expr(v)?));
            }
            Ok(Expr::Object(fields))
        }
        RawBsonRef::Array(_) => Err(not_implemented("array expressions")),
        other => Ok(Expr::Literal(RawBson::from(other))),
    }
}

/// The value at a dotted path of a document, through arrays of documents.
fn path_value(doc: &RawDocument, path: &str) -> Option<RawBson> {
    let (head, rest) = match path.split_once('.') {
        Some((h, r)) => (h, Some(r)),
        None => (path, None),
    };
    let v = doc.get(head).ok()??;
    match (v, rest) {
        (v, None) => Some(RawBson::from(v)),
        (RawBsonRef::Document(d), Some(rest)) => path_value(d, rest),
        (RawBsonRef::Array(a), Some(rest)) => {
            let mut out = RawArrayBuf::new();
            for el in a.into_iter().flatten() {
                if let RawBsonRef::Document(d) = el
                    && let Some(v) = path_value(d, rest)
                {
                    out.push(v);
                }
            }
            Some(RawBson::Array(out))
        }
        _ => None,
    }
}

fn eval(e: &Expr, doc: &RawDocument) -> Option<RawBson> {
    match e {
        Expr::Literal(v) => Some(v.clone()),
        Expr::Path(p) => path_value(doc, p),
        Expr::Object(fields) => {
            let mut out = RawDocumentBuf::new();
            for (k, e) in fields {
                if let Some(v) = eval(e, doc) {
                    out.append(cstr(k), v);
                }
            }
            Some(RawBson::Document(out))
        }
    }
}

fn cstr(s: &str) -> &bson::raw::CStr {
    // Field names come from BSON keys or validated stage specs, which cannot
    // hold NUL bytes.
    <&bson::raw::CStr>::try_from(s).expect("field names have no NUL")
}

fn parse_acc(name: &str, spec: RawBsonRef<'_>) -> CommandResult<Acc> {
    let RawBsonRef::Document(d) = spec else {
        return Err(CommandError::new(
            40234,
            format!("The field '{name}' must be an accumulator object"),
        ));
    };
    let mut it = d.iter();
    let (Some(Ok((op, arg))), None) = (it.next(), it.next()) else {
        return Err(CommandError::new(
            40238,
            format!("The field '{name}' must specify one accumulator"),
        ));
    };
    let e = || parse_expr(arg);
    Ok(match op.as_str() {
        "$sum" => Acc::Sum(e()?),
        "$avg" => Acc::Avg(e()?),
        "$min" => Acc::Min(e()?),
        "$max" => Acc::Max(e()?),
        "$first" => Acc::First(e()?),
        "$last" => Acc::Last(e()?),
        "$push" => Acc::Push(e()?),
        "$addToSet" => Acc::AddToSet(e()?),
        "$count" => Acc::Sum(Expr::Literal(RawBson::Int32(1))),
        other if other.starts_with('$') => {
            return Err(not_implemented(&format!("the accumulator '{other}'")));
        }
        other => {
            return Err(CommandError::new(
                15952,
                format!("unknown group operator '{other}'"),
            ));
        }
    })
}

const KNOWN_UNIMPLEMENTED: &[&str] = &[
    "$lookup",
    "$facet",
    "$bucket",
    "$bucketAuto",
    "$out",
    "$merge",
    "$geoNear",
    "$graphLookup",
    "$replaceRoot",
    "$replaceWith",
    "$sample",
    "$sortByCount",
    "$redact",
    "$densify",
    "$fill",
    "$setWindowFields",
    "$unionWith",
    "$changeStream",
    "$collStats",
    "$indexStats",
    "$currentOp",
    "$listSessions",
    "$listLocalSessions",
    "$planCacheStats",
    "$documents",
    "$search",
    "$searchMeta",
    "$changeStreamSplitLargeEvent",
    "$listSearchIndexes",
];

fn parse_stage(stage: &RawDocument) -> CommandResult<Stage> {
    let mut it = stage.iter();
    let (Some(Ok((name, spec))), None) = (it.next(), it.next()) else {
        return Err(CommandError::new(
            40323,
            "A pipeline stage specification object must contain exactly one field.",
        ));
    };
    let name = name.as_str();
    let doc_spec = || match spec {
        RawBsonRef::Document(d) => Ok(d),
        other => Err(CommandError::new(
            15959,
            format!(
                "the {name} specification must be an object, not {}",
                type_name(&other)
            ),
        )),
    };
    let count_arg = |what: &str| -> CommandResult<u64> {
        match as_i64(spec) {
            Some(n) if n >= 0 => Ok(n as u64),
            _ => Err(CommandError::new(
                15956,
                format!("invalid argument to {what} stage: expected a non-negative number"),
            )),
        }
    };
    Ok(match name {
        "$match" => Stage::Match(Filter::parse(doc_spec()?)?),
        "$sort" => Stage::Sort(SortSpec::parse(doc_spec()?)?),
        "$skip" => Stage::Skip(count_arg("$skip")?),
        "$limit" => match count_arg("$limit")? {
            0 => return Err(CommandError::new(15958, "the limit must be positive")),
            n => Stage::Limit(n),
        },
        "$project" => Stage::Project(Projection::parse(doc_spec()?)?),
        "$unset" => {
            let mut exclude = RawDocumentBuf::new();
            match spec {
                RawBsonRef::String(f) => exclude.append(cstr(f), 0),
                RawBsonRef::Array(a) => {
                    for v in a {
                        match v? {
                            RawBsonRef::String(f) => exclude.append(cstr(f), 0),
                            _ => {
                                return Err(CommandError::new(
                                    31120,
                                    "$unset specification must be a string or an array containing only string values",
                                ));
                            }
                        }
                    }
                }
                _ => {
                    return Err(CommandError::new(
                        31002,
                        "$unset specification must be a string or an array",
                    ));
                }
            }
            Stage::Project(Projection::parse(&exclude)?)
        }
        "$addFields" | "$set" => {
            let mut fields = Vec::new();
            for el in doc_spec()?.iter() {
                let (k, v) = el?;
                if k.as_str().contains('.') {
                    return Err(not_implemented("dotted field names in $addFields"));
                }
                fields.push((k.as_str().to_owned(), parse_expr(v)?));
            }
            Stage::AddFields(fields)
        }
        "$unwind" => {
            let (path, preserve_empty, index_field) = match spec {
                RawBsonRef::String(p) => (p.to_owned(), false, None),
                RawBsonRef::Document(d) => {
                    let p = d.get_str("path").map_err(|_| {
                        CommandError::new(28812, "no path specified to $unwind stage")
                    })?;
                    let preserve = matches!(
                        d.get("preserveNullAndEmptyArrays")?,
                        Some(RawBsonRef::Boolean(true))
                    );
                    let idx = d.get_str("includeArrayIndex").ok().map(str::to_owned);
                    (p.to_owned(), preserve, idx)
                }
                _ => {
                    return Err(CommandError::new(
                        15981,
                        "expected either a string or an object as specification for $unwind stage",
                    ));
                }
            };
            let Some(path) = path.strip_prefix('$') else {
                return Err(CommandError::new(
                    28818,
                    "path option to $unwind stage should be prefixed with a '$'",
                ));
            };
            if path.contains('.') {
                return Err(not_implemented("$unwind of a dotted path"));
            }
            Stage::Unwind {
                path: path.to_owned(),
                preserve_empty,
                index_field,
            }
        }
        "$count" => match spec {
            RawBsonRef::String(f) if !f.is_empty() && !f.starts_with('$') && !f.contains('.') => {
                Stage::Count(f.to_owned())
            }
            _ => {
                return Err(CommandError::new(
                    40156,
                    "the count field must be a non-empty string without '$' or '.'",
                ));
            }
        },
        "$group" => {
            let d = doc_spec()?;
            let Some(id) = d.get("_id")? else {
                return Err(CommandError::new(
                    15955,
                    "a group specification must include an _id",
                ));
            };
            let id = parse_expr(id)?;
            let mut accs = Vec::new();
            for el in d.iter() {
                let (k, v) = el?;
                if k.as_str() != "_id" {
                    accs.push((k.as_str().to_owned(), parse_acc(k.as_str(), v)?));
                }
            }
            Stage::Group { id, accs }
        }
        other if KNOWN_UNIMPLEMENTED.contains(&other) => {
            return Err(not_implemented(&format!("the {other} stage")));
        }
        other => {
            return Err(CommandError::new(
                codes::UNRECOGNIZED_PIPELINE_STAGE,
                format!("Unrecognized pipeline stage name: '{other}'"),
            ));
        }
    })
}

pub async fn aggregate(req: Request) -> CommandResult {
    let args = Args::parse(&req.body, ARGS)?;
    let name = match args.command_value() {
        RawBsonRef::String(s) => s,
        _ => {
            return Err(CommandError::new(
                codes::INVALID_NAMESPACE,
                "ebb does not support database-level aggregation; name a collection",
            ));
        }
    };
    check_collection_name(&req.db, name)?;
    let Some(pipeline) = args.array("pipeline")? else {
        return Err(args.missing("pipeline"));
    };
    let explain = args.bool("explain")?.unwrap_or(false);
    if explain {
        return Err(not_implemented("aggregate with explain"));
    }
    let Some(cursor_opts) = args.doc("cursor")? else {
        return Err(CommandError::failed_to_parse(
            "The 'cursor' option is required, except for aggregate with the explain argument",
        ));
    };
    let batch_size = match cursor_opts.get("batchSize")? {
        Some(v) => as_i64(v).filter(|n| *n >= 0).ok_or_else(|| {
            CommandError::bad_value("cursor.batchSize must be a non-negative number")
        })? as usize,
        None => super::find::DEFAULT_FIRST_BATCH,
    };
    let mut stages = Vec::new();
    for v in pipeline {
        match v? {
            RawBsonRef::Document(d) => stages.push(parse_stage(d)?),
            other => {
                return Err(CommandError::new(
                    codes::TYPE_MISMATCH,
                    format!(
                        "Each element of the 'pipeline' array must be an object, not {}",
                        type_name(&other)
                    ),
                ));
            }
        }
    }
    NodeContext::count(&req.node.opcounters.command, 1);
    let ns = format!("{}.{name}", req.db);
    let hint = query::hint(args.get("hint"))?;
    let results = match req.node.collection(&req.db, name) {
        None => Vec::new(),
        Some(entry) => {
            let mut rest = stages.into_iter().peekable();
            let filter = match rest.next_if(|s| matches!(s, Stage::Match(_))) {
                Some(Stage::Match(f)) => f,
                _ => query::filter(None)?,
            };
            let sort = match rest.next_if(|s| matches!(s, Stage::Sort(_))) {
                Some(Stage::Sort(s)) => Some(s),
                _ => None,
            };
            let rest: Vec<Stage> = rest.collect();
            let spec = QuerySpec { filter, sort, hint };
            let plan = plan::plan(&entry.set.meta, &spec)?;
            let records = entry.set.meta.id;
            req.node
                .read(move |snap| {
                    let mut cursor =
                        QueryCursor::new(records, plan, spec.filter, spec.sort, 0, None)?;
                    let mut pipeline = Pipeline::new(rest);
                    let mut failure = None;
                    cursor.for_each(snap, &mut |found| match pipeline.push(found.doc) {
                        Ok(more) => more,
                        Err(e) => {
                            failure = Some(e);
                            false
                        }
                    })?;
                    if let Some(e) = failure {
                        return Err(e);
                    }
                    pipeline.finish()
                })
                .await?
        }
    };
    let cursor = OpenCursor::new(ns, Source::Buffered(results.into()));
    respond(&req.node, cursor, batch_size, true, false).await
}

/// Running state of the in-memory stages.
struct Pipeline {
    stages: Vec<Stage>,
    /// Per stage: documents seen (for `$skip`/`$limit`) or accumulated.
    counters: Vec<u64>,
    held: Vec<Vec<RawDocumentBuf>>,
    groups: Vec<Groups>,
    out: Vec<RawDocumentBuf>,
    bytes: usize,
    done: bool,
}

#[derive(Default)]
struct Groups {
    order: Vec<Vec<u8>>,
    by_key: HashMap<Vec<u8>, (RawBson, Vec<AccState>)>,
}

#[derive(Debug, Clone)]
enum AccState {
    Sum(Num),
    Avg(f64, u64),
    Pick(Option<RawBson>),
    List(Vec<RawBson>),
}

/// `$sum` keeps MongoDB's widening: int → long → double.
#[derive(Debug, Clone, Copy)]
enum Num {
    Int(i32),
    Long(i64),
    Double(f64),
}

impl Num {
    fn add(self, v: &RawBson) -> Num {
        let x = match v {
            RawBson::Int32(n) => Num::Int(*n),
            RawBson::Int64(n) => Num::Long(*n),
            RawBson::Double(d) => Num::Double(*d),
            RawBson::Decimal128(d) => Num::Double(d.to_string().parse().unwrap_or(0.0)),
            _ => return self,
        };
        match (self, x) {
            (Num::Int(a), Num::Int(b)) => a
                .checked_add(b)
                .map_or(Num::Long(i64::from(a) + i64::from(b)), Num::Int),
            (Num::Double(a), b) | (b, Num::Double(a)) => Num::Double(a + b.as_f64()),
            (a, b) => a
                .as_i64()
                .checked_add(b.as_i64())
                .map_or(Num::Double(a.as_f64() + b.as_f64()), Num::Long),
        }
    }

    fn as_f64(self) -> f64 {
        match self {
            Num::Int(n) => f64::from(n),
            Num::Long(n) => n as f64,
            Num::Double(d) => d,
        }
    }

    fn as_i64(self) -> i64 {
        match self {
            Num::Int(n) => i64::from(n),
            Num::Long(n) => n,
            Num::Double(d) => d as i64,
        }
    }

    fn to_bson(self) -> RawBson {
        match self {
            Num::Int(n) => RawBson::Int32(n),
            Num::Long(n) => RawBson::Int64(n),
            Num::Double(d) => RawBson::Double(d),
        }
    }
}

impl AccState {
    fn new(acc: &Acc) -> Self {
        match acc {
            Acc::Sum(_) => AccState::Sum(Num::Int(0)),
            Acc::Avg(_) => AccState::Avg(0.0, 0),
            Acc::Min(_) | Acc::Max(_) | Acc::First(_) | Acc::Last(_) => AccState::Pick(None),
            Acc::Push(_) | Acc::AddToSet(_) => AccState::List(Vec::new()),
        }
    }

    fn add(&mut self, acc: &Acc, doc: &RawDocument, first_seen: bool) {
        match (self, acc) {
            (AccState::Sum(n), Acc::Sum(e)) => {
                if let Some(v) = eval(e, doc) {
                    *n = n.add(&v);
                }
            }
            (AccState::Avg(sum, count), Acc::Avg(e)) => {
                if let Some(v) = eval(e, doc) {
                    let x = Num::Int(0).add(&v);
                    if !matches!(
                        v,
                        RawBson::Int32(_)
                            | RawBson::Int64(_)
                            | RawBson::Double(_)
                            | RawBson::Decimal128(_)
                    ) {
                        return;
                    }
                    *sum += x.as_f64();
                    *count += 1;
                }
            }
            (AccState::Pick(cur), Acc::Min(e) | Acc::Max(e)) => {
                let want_less = matches!(acc, Acc::Min(_));
                if let Some(v) =
                    eval(e, doc).filter(|v| !matches!(v, RawBson::Null | RawBson::Undefined))
                {
                    let better = match cur {
                        None => true,
                        Some(c) => {
                            let ord = compare_values(v.as_raw_bson_ref(), c.as_raw_bson_ref());
                            if want_less { ord.is_lt() } else { ord.is_gt() }
                        }
                    };
                    if better {
                        *cur = Some(v);
                    }
                }
            }
            (AccState::Pick(cur), Acc::First(e)) if first_seen => {
                *cur = Some(eval(e, doc).unwrap_or(RawBson::Null));
            }
            (AccState::Pick(cur), Acc::Last(e)) => {
                *cur = Some(eval(e, doc).unwrap_or(RawBson::Null))
            }
            (AccState::List(list), Acc::Push(e)) => {
                if let Some(v) = eval(e, doc) {
                    list.push(v);
                }
            }
            (AccState::List(list), Acc::AddToSet(e)) => {
                if let Some(v) = eval(e, doc)
                    && !list
                        .iter()
                        .any(|x| compare_values(x.as_raw_bson_ref(), v.as_raw_bson_ref()).is_eq())
                {
                    list.push(v);
                }
            }
            _ => {}
        }
    }

    fn result(self) -> RawBson {
        match self {
            AccState::Sum(n) => n.to_bson(),
            AccState::Avg(_, 0) => RawBson::Null,
            AccState::Avg(sum, count) => RawBson::Double(sum / count as f64),
            AccState::Pick(v) => v.unwrap_or(RawBson::Null),
            AccState::List(list) => {
                let mut a = RawArrayBuf::new();
                for v in list {
                    a.push(v);
                }
                RawBson::Array(a)
            }
        }
    }
}

fn memory_error() -> CommandError {
    CommandError::new(
        292,
        format!(
            "Exceeded memory limit of {MAX_SORT_BYTES} bytes in an aggregation stage, but did not opt in to external sorting."
        ),
    )
}

impl Pipeline {
    fn new(stages: Vec<Stage>) -> Self {
        let n = stages.len();
        Pipeline {
            stages,
            counters: vec![0; n],
            held: (0..n).map(|_| Vec::new()).collect(),
            groups: (0..n).map(|_| Groups::default()).collect(),
            out: Vec::new(),
            bytes: 0,
            done: false,
        }
    }

    /// Feeds one input document; returns false once no more input can
    /// change the result (a `$limit` was reached with only streaming
    /// stages before it).
    fn push(&mut self, doc: RawDocumentBuf) -> CommandResult<bool> {
        self.run_from(0, doc)?;
        Ok(!self.done)
    }

    fn emit(&mut self, doc: RawDocumentBuf) -> CommandResult<()> {
        self.bytes += doc.as_bytes().len();
        if self.bytes > MAX_SORT_BYTES {
            return Err(memory_error());
        }
        self.out.push(doc);
        Ok(())
    }

    fn run_from(&mut self, start: usize, doc: RawDocumentBuf) -> CommandResult<()> {
        let mut doc = doc;
        for i in start..self.stages.len() {
            match &self.stages[i] {
                Stage::Match(f) => {
                    if !f.matches(&doc) {
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
                        if self.stages[..i].iter().all(streaming) {
                            self.done = true;
                        }
                        return Ok(());
                    }
                }
                Stage::Project(p) => doc = p.apply(&doc),
                Stage::AddFields(fields) => doc = add_fields(&doc, fields)?,
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

    fn accumulate(&mut self, i: usize, doc: RawDocumentBuf) -> CommandResult<()> {
        match &self.stages[i] {
            Stage::Sort(_) => {
                self.counters[i] += doc.as_bytes().len() as u64;
                if self.counters[i] > MAX_SORT_BYTES as u64 {
                    return Err(memory_error());
                }
                self.held[i].push(doc);
            }
            Stage::Count(_) => self.counters[i] += 1,
            Stage::Group { id, accs } => {
                let key_value = eval(id, &doc).unwrap_or(RawBson::Null);
                let key = encode_key(key_value.as_raw_bson_ref());
                let groups = &mut self.groups[i];
                let first_seen = !groups.by_key.contains_key(&key);
                if first_seen {
                    groups.order.push(key.clone());
                    groups.by_key.insert(
                        key.clone(),
                        (
                            key_value,
                            accs.iter().map(|(_, a)| AccState::new(a)).collect(),
                        ),
                    );
                    self.counters[i] += 64;
                    if self.counters[i] > MAX_SORT_BYTES as u64 {
                        return Err(memory_error());
                    }
                }
                let (_, states) = groups.by_key.get_mut(&key).expect("inserted above");
                for (state, (_, acc)) in states.iter_mut().zip(accs) {
                    state.add(acc, &doc, first_seen);
                }
            }
            _ => unreachable!("only blocking stages accumulate"),
        }
        Ok(())
    }

    /// Flushes blocking stages in order and returns the output.
    fn finish(mut self) -> CommandResult<Vec<RawDocumentBuf>> {
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
                    let accs = accs.clone();
                    let groups = std::mem::take(&mut self.groups[i]);
                    let mut by_key = groups.by_key;
                    groups
                        .order
                        .into_iter()
                        .filter_map(|k| by_key.remove(&k))
                        .map(|(id, states)| {
                            let mut d = RawDocumentBuf::new();
                            d.append(bson::raw::cstr!("_id"), id);
                            for ((name, _), state) in accs.iter().zip(states) {
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

fn streaming(s: &Stage) -> bool {
    !matches!(s, Stage::Sort(_) | Stage::Count(_) | Stage::Group { .. })
}

fn add_fields(doc: &RawDocument, fields: &[(String, Expr)]) -> CommandResult<RawDocumentBuf> {
    let mut values: Vec<(&str, Option<RawBson>)> = fields
        .iter()
        .map(|(k, e)| (k.as_str(), eval(e, doc)))
        .collect();
    let mut out = RawDocumentBuf::new();
    for el in doc.iter() {
        let (k, v) = el?;
        match values.iter_mut().find(|(name, _)| *name == k.as_str()) {
            Some((_, new)) => {
                if let Some(v) = new.take() {
                    out.append(k, v);
                }
            }
            None => out.append(k, v),
        }
    }
    for (k, v) in values {
        if let Some(v) = v
            && doc.get(k)?.is_none()
        {
            out.append(cstr(k), v);
        }
    }
    Ok(out)
}

fn unwind(
    doc: &RawDocument,
    path: &str,
    preserve_empty: bool,
    index_field: Option<&str>,
) -> CommandResult<Vec<RawDocumentBuf>> {
    let with =
        |value: Option<RawBsonRef<'_>>, index: Option<i64>| -> CommandResult<RawDocumentBuf> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use bson::{Document, doc, rawdoc};

    fn run(stages: Vec<RawDocumentBuf>, docs: Vec<RawDocumentBuf>) -> Vec<Document> {
        let stages = stages.iter().map(|s| parse_stage(s).unwrap()).collect();
        let mut p = Pipeline::new(stages);
        for d in docs {
            p.push(d).unwrap();
        }
        p.finish()
            .unwrap()
            .iter()
            .map(|d| Document::try_from(d.as_ref()).unwrap())
            .collect()
    }

    #[test]
    fn count_documents_shape_counts_matches() {
        let docs = (0..10).map(|i| rawdoc! { "a": i }).collect();
        let out = run(
            vec![
                rawdoc! { "$match": { "a": { "$gte": 3 } } },
                rawdoc! { "$skip": 1 },
                rawdoc! { "$limit": 4 },
                rawdoc! { "$group": { "_id": 1, "n": { "$sum": 1 } } },
            ],
            docs,
        );
        assert_eq!(out, vec![doc! { "_id": 1, "n": 4 }]);
    }

    #[test]
    fn group_by_field_with_accumulators() {
        let docs = vec![
            rawdoc! { "k": "x", "v": 1 },
            rawdoc! { "k": "y", "v": 5 },
            rawdoc! { "k": "x", "v": 2.5 },
        ];
        let out = run(
            vec![
                rawdoc! { "$group": { "_id": "$k", "s": { "$sum": "$v" }, "m": { "$max": "$v" }, "a": { "$avg": "$v" }, "all": { "$push": "$v" } } },
                rawdoc! { "$sort": { "_id": 1 } },
            ],
            docs,
        );
        assert_eq!(
            out[0],
            doc! { "_id": "x", "s": 3.5, "m": 2.5, "a": 1.75, "all": [1, 2.5] }
        );
        assert_eq!(
            out[1],
            doc! { "_id": "y", "s": 5, "m": 5, "a": 5.0, "all": [5] }
        );
    }

    #[test]
    fn empty_input_counts_nothing() {
        assert!(run(vec![rawdoc! { "$count": "n" }], vec![]).is_empty());
    }

    #[test]
    fn unwind_emits_one_document_per_element() {
        let out = run(
            vec![rawdoc! { "$unwind": "$t" }],
            vec![
                rawdoc! { "_id": 1, "t": ["a", "b"] },
                rawdoc! { "_id": 2, "t": [] },
            ],
        );
        assert_eq!(
            out,
            vec![doc! { "_id": 1, "t": "a" }, doc! { "_id": 1, "t": "b" }]
        );
    }

    #[test]
    fn unknown_stage_is_mongodb_error() {
        let e = parse_stage(&rawdoc! { "$frobnicate": {} }).unwrap_err();
        assert_eq!(e.code, 40324);
    }
}
