//! `$graphLookup`: a breadth-first search through another collection of
//! the database. From the values `startWith` gives, each round reads (through
//! [`Sources`](super::Sources), so an index on `connectToField` serves it)
//! the documents whose `connectToField` holds one of the round's values and
//! `restrictSearchWithMatch` accepts; their `connectFromField` values are
//! the next round's. A document is found once (by `_id`), at the first depth
//! it is reached; `maxDepth` bounds the rounds. The found documents, with
//! `depthField` when asked, become the array `as`.
//!
//! As in mongod, a null value matches a null `connectToField` but neither a
//! missing one nor `undefined`, and a missing value matches nothing.

use std::collections::HashSet;

use bson::{RawArrayBuf, RawBson, RawBsonRef, RawDocument, RawDocumentBuf};
use ebb_config::limits::MAX_SORT_BYTES;

use super::expr::{Env, Expr, cstr};
use super::kind::GraphLookup;
use super::lookup::check_as_field;
use super::project::set_path;
use super::run::Outer;
use super::sub::check_collection_name;
use crate::encoding::display::type_name;
use crate::error::{Error, ErrorKind, Result, StageError};
use crate::query::filter::Filter;
use crate::query::path::{LeafArray, any_candidate};

fn stage_error(e: StageError, message: impl Into<String>) -> Error {
    Error::new(ErrorKind::Stage(e), message)
}

impl GraphLookup {
    pub(super) fn parse(spec: RawBsonRef<'_>, env: &Env) -> Result<GraphLookup> {
        let RawBsonRef::Document(d) = spec else {
            return Err(Error::failed_to_parse(format!(
                "the $graphLookup stage specification must be an object, but found {}",
                type_name(&spec)
            )));
        };
        let (mut from, mut start_with, mut connect_from, mut connect_to) = (None, None, None, None);
        let (mut as_field, mut max_depth, mut depth_field, mut restrict) = (None, None, None, None);
        for el in d {
            let (k, v) = el?;
            let k = k.as_str();
            let string = |what: &str| match v {
                RawBsonRef::String(s) => {
                    check_as_field(s)?;
                    Ok(s.to_owned())
                }
                other => Err(stage_error(
                    StageError::GraphLookupNotString,
                    format!(
                        "expected string as argument for {what}, found: {}",
                        type_name(&other)
                    ),
                )),
            };
            match k {
                "from" => match v {
                    RawBsonRef::String(s) => {
                        check_collection_name(s, "$graphLookup")?;
                        from = Some(s.to_owned());
                    }
                    other => {
                        return Err(Error::failed_to_parse(format!(
                            "$graphLookup 'from' must be a string, found {}",
                            type_name(&other)
                        )));
                    }
                },
                "startWith" => start_with = Some(Expr::parse_in(v, env)?),
                "connectFromField" => connect_from = Some(string(k)?),
                "connectToField" => connect_to = Some(string(k)?),
                "as" => as_field = Some(string(k)?),
                "depthField" => depth_field = Some(string(k)?),
                "maxDepth" => max_depth = Some(parse_max_depth(v)?),
                "restrictSearchWithMatch" => match v {
                    RawBsonRef::Document(m) => {
                        // Parsed now so a bad filter fails before any work.
                        Filter::parse_in(m, env)?;
                        restrict = Some(m.to_owned());
                    }
                    other => {
                        return Err(stage_error(
                            StageError::GraphLookupRestrictNotObject,
                            format!(
                                "restrictSearchWithMatch must be an object, found {}",
                                type_name(&other)
                            ),
                        ));
                    }
                },
                other => {
                    return Err(stage_error(
                        StageError::GraphLookupUnknownArgument,
                        format!("Unknown argument to $graphLookup: {other}"),
                    ));
                }
            }
        }
        let Some(from) = from else {
            return Err(Error::failed_to_parse(
                "must specify 'from' field for a $graphLookup",
            ));
        };
        let missing = |what: &str| {
            stage_error(
                StageError::GraphLookupMissingArgument,
                format!("$graphLookup requires '{what}' to be specified"),
            )
        };
        Ok(GraphLookup {
            from,
            start_with: start_with.ok_or_else(|| missing("startWith"))?,
            connect_from: connect_from.ok_or_else(|| missing("connectFromField"))?,
            connect_to: connect_to.ok_or_else(|| missing("connectToField"))?,
            as_field: as_field.ok_or_else(|| missing("as"))?,
            max_depth,
            depth_field,
            restrict,
            env: env.clone(),
        })
    }

    /// `doc` with `as` set to the documents the search reaches from it.
    pub(super) fn apply(&self, doc: &RawDocument, outer: &Outer<'_>) -> Result<RawDocumentBuf> {
        let mut frontier = Vec::new();
        match self.start_with.eval(doc)? {
            None => {}
            Some(RawBson::Array(a)) => {
                for v in &a {
                    frontier.push(RawBson::from(v?));
                }
            }
            Some(v) => frontier.push(v),
        }
        let mut queried: HashSet<Vec<u8>> = HashSet::new();
        let mut seen_ids: HashSet<Vec<u8>> = HashSet::new();
        let mut found = RawArrayBuf::new();
        let mut bytes = 0usize;
        let mut depth = 0i64;
        loop {
            frontier.retain(|v| queried.insert(value_key(v)));
            if frontier.is_empty() || self.max_depth.is_some_and(|max| depth > max) {
                break;
            }
            let filter = self.round_filter(&frontier)?.collated(outer.collation());
            let mut next = Vec::new();
            let mut failure = None;
            outer.sources()?.scan(&self.from, filter, &mut |d| {
                let id = match d.get("_id") {
                    Ok(Some(id)) => value_key(&RawBson::from(id)),
                    _ => d.as_bytes().to_vec(),
                };
                if !seen_ids.insert(id) {
                    return Ok(true);
                }
                any_candidate(&d, &self.connect_from, LeafArray::Whole, &mut |v| {
                    match v {
                        Some(RawBsonRef::Array(a)) => {
                            for item in a {
                                match item {
                                    Ok(item) => next.push(RawBson::from(item)),
                                    Err(e) => failure = Some(Error::from(e)),
                                }
                            }
                        }
                        Some(v) => next.push(RawBson::from(v)),
                        None => {}
                    }
                    false
                });
                let out = match &self.depth_field {
                    Some(f) => {
                        let path: Vec<&str> = f.split('.').collect();
                        set_path(&d, &path, RawBson::Int64(depth))?
                    }
                    None => d,
                };
                bytes += out.as_bytes().len();
                if bytes > MAX_SORT_BYTES {
                    return Err(stage_error(
                        StageError::GraphLookupTooLarge,
                        "$graphLookup reached maximum memory consumption",
                    ));
                }
                found.push(out);
                Ok(true)
            })?;
            if let Some(e) = failure {
                return Err(e);
            }
            frontier = next;
            depth += 1;
        }
        let path: Vec<&str> = self.as_field.split('.').collect();
        set_path(doc, &path, RawBson::Array(found))
    }

    /// The documents one round reads: `connectToField` equal to one of
    /// `values` (a null matching only a present null), and what
    /// `restrictSearchWithMatch` accepts.
    fn round_filter(&self, values: &[RawBson]) -> Result<Filter> {
        let to = cstr(&self.connect_to);
        let mut any = RawArrayBuf::new();
        let mut listed = RawArrayBuf::new();
        for v in values {
            match v {
                RawBson::Null => {
                    let mut clause = RawDocumentBuf::new();
                    let mut cond = RawDocumentBuf::new();
                    cond.append(cstr("$eq"), RawBson::Null);
                    cond.append(cstr("$exists"), true);
                    clause.append(to, cond);
                    any.push(clause);
                }
                // `$in` would match a regex pattern; a value is compared.
                RawBson::RegularExpression(_) => {
                    let mut clause = RawDocumentBuf::new();
                    let mut eq = RawDocumentBuf::new();
                    eq.append(cstr("$eq"), v.clone());
                    clause.append(to, eq);
                    any.push(clause);
                }
                v => listed.push(v.clone()),
            }
        }
        let mut listed_clause = RawDocumentBuf::new();
        let mut in_list = RawDocumentBuf::new();
        in_list.append(cstr("$in"), listed);
        listed_clause.append(to, in_list);
        any.push(listed_clause);
        let mut all = RawArrayBuf::new();
        let mut or = RawDocumentBuf::new();
        or.append(cstr("$or"), any);
        all.push(or);
        if let Some(r) = &self.restrict {
            all.push(r.clone());
        }
        let mut filter = RawDocumentBuf::new();
        filter.append(cstr("$and"), all);
        Filter::parse_in(&filter, &self.env)
    }
}

/// A value's identity for the sets of values queried and `_id`s found:
/// its type and bytes (numbers of different types that are equal are
/// queried again, which finds nothing new).
fn value_key(v: &RawBson) -> Vec<u8> {
    let mut doc = RawDocumentBuf::new();
    doc.append(cstr(""), v.clone());
    doc.into_bytes()
}

fn parse_max_depth(v: RawBsonRef<'_>) -> Result<i64> {
    let n = match v {
        RawBsonRef::Int32(n) => n as f64,
        RawBsonRef::Int64(n) => n as f64,
        RawBsonRef::Double(n) => n,
        RawBsonRef::Decimal128(d) => d.to_string().parse().unwrap_or(f64::NAN),
        other => {
            return Err(stage_error(
                StageError::GraphLookupMaxDepthNotNumber,
                format!(
                    "maxDepth must be numeric, found type: {}",
                    type_name(&other)
                ),
            ));
        }
    };
    if n < 0.0 {
        return Err(stage_error(
            StageError::GraphLookupMaxDepthNegative,
            format!("maxDepth requires a nonnegative argument, found: {n}"),
        ));
    }
    if n.fract() != 0.0 || n > i64::MAX as f64 {
        return Err(stage_error(
            StageError::GraphLookupMaxDepthNotIntegral,
            format!("maxDepth could not be represented as a long long: {n}"),
        ));
    }
    Ok(n as i64)
}
