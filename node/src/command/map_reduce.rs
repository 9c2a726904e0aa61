//! `mapReduce`, as mongod 7.0 runs it on its JavaScript engine
//! (`ebb_lang::js`): the documents `query` (with `sort` and `limit`)
//! selects go through `map`, which `emit`s pairs; the values of each key
//! go through `reduce` when there are several, then `finalize`; the result
//! is `{_id: key, value}` per key, in key order, returned inline or
//! written to a collection (`replace` as `$out` writes, `merge` as a
//! `$merge` that replaces by `_id`, `reduce` as `merge` after reducing
//! each key's value already there with the new ones). `scope` is in reach
//! of every function.

use bson::{Bson, RawBson, RawBsonRef, RawDocumentBuf, doc, rawdoc};
use ebb_lang::encoding::cmp::Cmp;
use ebb_lang::encoding::keycode;
use ebb_lang::pipeline::parse_write_stage;
use ebb_storage::plan::exec::QueryCursor;
use ebb_storage::plan::{self, QuerySpec};

use super::output::{self, WriteContext};
use super::{Request, ok, query};
use crate::args::Args;
use crate::error::{CommandError, CommandResult, codes};

const ARGS: &[&str] = &[
    "map",
    "reduce",
    "out",
    "query",
    "sort",
    "limit",
    "finalize",
    "scope",
    "jsMode",
    "verbose",
    "bypassDocumentValidation",
    "collation",
];

/// Where the results go.
enum Out {
    Inline,
    /// `replace` (or a name alone), `merge` or `reduce`, into `db.coll`.
    Collection {
        mode: Mode,
        db: Option<String>,
        coll: String,
    },
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Replace,
    Merge,
    Reduce,
}

fn parse_out(value: Option<RawBsonRef<'_>>) -> CommandResult<Out> {
    let bad = |m: &str| CommandError::bad_value(m.to_owned());
    match value {
        None => Err(CommandError::failed_to_parse(
            "'out' argument must be specified",
        )),
        Some(RawBsonRef::String(name)) => Ok(Out::Collection {
            mode: Mode::Replace,
            db: None,
            coll: name.to_owned(),
        }),
        Some(RawBsonRef::Document(d)) => {
            let mut mode = None;
            let mut db = None;
            for item in d.iter() {
                let (k, v) = item?;
                match (k.as_str(), v) {
                    ("inline", _) => mode = Some(("inline", String::new())),
                    (m @ ("replace" | "merge" | "reduce"), RawBsonRef::String(c)) => {
                        mode = Some((m, c.to_owned()));
                    }
                    ("db", RawBsonRef::String(name)) => db = Some(name.to_owned()),
                    ("nonAtomic", RawBsonRef::Boolean(true)) => {}
                    ("sharded", RawBsonRef::Boolean(false)) => {}
                    (other, _) => {
                        return Err(bad(&format!("unknown out specifier: {other}")));
                    }
                }
            }
            match mode {
                Some(("inline", _)) => Ok(Out::Inline),
                Some((m, coll)) => Ok(Out::Collection {
                    mode: match m {
                        "merge" => Mode::Merge,
                        "reduce" => Mode::Reduce,
                        _ => Mode::Replace,
                    },
                    db,
                    coll,
                }),
                None => Err(bad("'out' has to be a string or an object")),
            }
        }
        Some(_) => Err(bad("'out' has to be a string or an object")),
    }
}

fn code<'a>(args: &Args<'a>, field: &str) -> CommandResult<Option<&'a str>> {
    match args.get(field) {
        None => Ok(None),
        Some(RawBsonRef::String(c) | RawBsonRef::JavaScriptCode(c)) => Ok(Some(c)),
        Some(RawBsonRef::JavaScriptCodeWithScope(_)) => Err(CommandError::bad_value(format!(
            "'{field}' may not carry a scope: pass 'scope' instead"
        ))),
        Some(_) => Err(CommandError::new(
            codes::TYPE_MISMATCH,
            format!("'{field}' must be JavaScript code"),
        )),
    }
}

pub async fn map_reduce(req: Request) -> CommandResult {
    let args = Args::parse(&req.body, ARGS)?;
    let name = args.collection()?.to_owned();
    if !query::scripting(&req) {
        return Err(CommandError::new(
            codes::NO_JAVASCRIPT_ENGINE,
            "mapReduce needs server-side JavaScript, which is disabled",
        ));
    }
    let map = code(&args, "map")?
        .ok_or_else(|| args.missing("map"))?
        .to_owned();
    let reduce = code(&args, "reduce")?
        .ok_or_else(|| args.missing("reduce"))?
        .to_owned();
    let finalize = code(&args, "finalize")?.map(str::to_owned);
    let out = parse_out(args.get("out"))?;
    if args.bool("verbose")?.unwrap_or(false) {
        return Err(ebb_storage::Error::not_implemented("mapReduce's verbose output").into());
    }
    let scope = match args.get("scope") {
        None | Some(RawBsonRef::Null) => RawDocumentBuf::new(),
        Some(RawBsonRef::Document(d)) => d.to_owned(),
        Some(_) => return Err(CommandError::bad_value("'scope' must be an object")),
    };
    let env = query::env_now(&req);
    let filter = query::filter(args.doc("query")?, &env)?;
    let sort = query::sort(args.doc("sort")?)?;
    let limit = match args.i64("limit")? {
        Some(l) if l < 0 => return Err(CommandError::bad_value("'limit' must be non-negative")),
        Some(0) | None => None,
        Some(l) => Some(l as u64),
    };
    let collation = query::collation(args.get("collation"))?;
    let max_time = query::max_time(&args)?;
    let bypass_validation = args.bool("bypassDocumentValidation")?.unwrap_or(false);
    let results = match req.node.collection(&req.db, &name) {
        None => Vec::new(),
        Some(entry) => {
            let resolved = query::resolve(&collation, &entry.coll.meta)?;
            let spec = QuerySpec {
                filter,
                sort,
                hint: None,
            }
            .collated(resolved.clone());
            let plan = plan::plan(&entry.coll.meta, &spec)?;
            let set = entry.coll.clone();
            // `out: {reduce}` reduces the target's values of the keys again.
            let target = match &out {
                Out::Collection {
                    mode: Mode::Reduce,
                    db,
                    coll,
                } => req
                    .node
                    .collection(db.as_deref().unwrap_or(&req.db), coll)
                    .map(|e| e.coll.clone()),
                _ => None,
            };
            req.node
                .scan(move |snap| {
                    let existing = match &target {
                        Some(t) => values_of(snap, t)?,
                        None => Vec::new(),
                    };
                    let mut cursor =
                        QueryCursor::new(&set, plan, spec.filter, spec.sort, 0, limit)?
                            .with_time_limit(max_time);
                    let mut docs = Vec::new();
                    cursor.try_for_each(snap, &mut |found| {
                        docs.push(found.doc);
                        Ok(true)
                    })?;
                    let functions = Functions {
                        map: &map,
                        reduce: &reduce,
                        finalize: finalize.as_deref(),
                        scope: &scope,
                    };
                    run(&functions, docs, existing, resolved)
                })
                .await?
        }
    };
    match out {
        Out::Inline => {
            let results: Vec<Bson> = results
                .into_iter()
                .map(|d| Bson::try_from(RawBson::Document(d)))
                .collect::<Result<_, _>>()?;
            ok(doc! { "results": results })
        }
        Out::Collection { mode, db, coll } => {
            if req.node.replica_set().is_some() {
                return Err(CommandError::new(
                    codes::ILLEGAL_OPERATION,
                    "mapReduce into a collection is not supported on ebb's replica sets yet",
                ));
            }
            let target = match &db {
                Some(db) => rawdoc! { "db": db.as_str(), "coll": coll.as_str() },
                None => rawdoc! { "db": req.db.as_str(), "coll": coll.as_str() },
            };
            let stage = if mode != Mode::Replace {
                rawdoc! { "$merge": { "into": target, "on": "_id", "whenMatched": "replace", "whenNotMatched": "insert" } }
            } else {
                rawdoc! { "$out": target }
            };
            let stage = parse_write_stage(&stage, &env)?;
            let choice = ebb_lang::encoding::collation::Choice::default();
            let cx = WriteContext {
                node: &req.node,
                db: &req.db,
                env: &env,
                collation: &choice,
                bypass_validation,
            };
            let prepared = output::prepare(&cx, stage)?;
            output::write(&cx, prepared, results).await?;
            match db {
                Some(db) => ok(doc! { "result": { "db": db, "collection": coll } }),
                None => ok(doc! { "result": coll }),
            }
        }
    }
}

/// The command's functions and scope.
struct Functions<'a> {
    map: &'a str,
    reduce: &'a str,
    finalize: Option<&'a str>,
    scope: &'a bson::RawDocument,
}

/// The `(_id, value)` of every document of `target` (an earlier result).
fn values_of(
    snap: &dyn ebb_storage::engine::Snapshot,
    target: &std::sync::Arc<ebb_storage::Collection>,
) -> CommandResult<Vec<(RawBson, RawBson)>> {
    let all = QuerySpec {
        filter: query::filter(None, &ebb_lang::pipeline::Env::new(bson::DateTime::now()))?,
        sort: None,
        hint: None,
    };
    let plan = plan::plan(&target.meta, &all)?;
    let mut cursor = QueryCursor::new(target, plan, all.filter, None, 0, None)?;
    let mut out = Vec::new();
    cursor.try_for_each(snap, &mut |found| {
        if let Ok(Some(id)) = found.doc.get("_id") {
            let value = found.doc.get("value").ok().flatten();
            out.push((
                RawBson::from(id),
                value.map_or(RawBson::Null, RawBson::from),
            ));
        }
        Ok(true)
    })?;
    Ok(out)
}

/// Maps, groups by key (in the collation's order; a key's value already
/// in the target of `out: {reduce}` first), reduces the keys with several
/// values and finalizes every key.
fn run(
    f: &Functions<'_>,
    docs: Vec<RawDocumentBuf>,
    existing: Vec<(RawBson, RawBson)>,
    collation: Option<std::sync::Arc<ebb_lang::encoding::collation::Collation>>,
) -> CommandResult<Vec<RawDocumentBuf>> {
    let (map, reduce, finalize, scope) = (f.map, f.reduce, f.finalize, f.scope);
    let mut emitted = ebb_lang::js::map_all(map, scope, &docs)?;
    let cmp = Cmp::new(collation.as_deref());
    emitted.sort_by(|a, b| cmp.values(a.0.as_raw_bson_ref(), b.0.as_raw_bson_ref()));
    let mut groups: Vec<(RawBson, Vec<RawBson>)> = Vec::new();
    for (key, value) in emitted {
        match groups.last_mut() {
            Some((k, values))
                if cmp
                    .values(k.as_raw_bson_ref(), key.as_raw_bson_ref())
                    .is_eq() =>
            {
                values.push(value);
            }
            _ => groups.push((key, vec![value])),
        }
    }
    // Keys are equal exactly when their collated key encodings are.
    let encoded = |key: &RawBson| {
        let mut k = Vec::new();
        keycode::encode_collated(&mut k, key.as_raw_bson_ref(), collation.as_deref());
        k
    };
    let mut before: std::collections::HashMap<Vec<u8>, RawBson> = existing
        .into_iter()
        .map(|(id, v)| (encoded(&id), v))
        .collect();
    for (key, values) in &mut groups {
        if let Some(value) = before.remove(&encoded(key)) {
            values.insert(0, value);
        }
    }
    // The keys with several values are reduced in one call of the engine;
    // the results come back in their order.
    let several: Vec<(RawBson, RawBson)> = groups
        .iter()
        .filter(|(_, values)| values.len() > 1)
        .map(|(key, values)| {
            let mut list = bson::RawArrayBuf::new();
            for v in values {
                list.push(v.clone());
            }
            (key.clone(), RawBson::Array(list))
        })
        .collect();
    let mut reduced = ebb_lang::js::reduce_all(reduce, scope, several)?.into_iter();
    let pairs: Vec<(RawBson, RawBson)> = groups
        .into_iter()
        .map(|(key, mut values)| match values.len() {
            1 => (key, values.pop().unwrap_or(RawBson::Null)),
            _ => reduced.next().unwrap_or((key, RawBson::Null)),
        })
        .collect();
    let pairs = match finalize {
        Some(f) => ebb_lang::js::reduce_all(f, scope, pairs)?,
        None => pairs,
    };
    let mut out = Vec::with_capacity(pairs.len());
    for (key, value) in pairs {
        let mut d = RawDocumentBuf::new();
        d.append(bson::raw::cstr!("_id"), key);
        d.append(bson::raw::cstr!("value"), value);
        out.push(d);
    }
    Ok(out)
}
