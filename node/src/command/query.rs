//! Arguments shared by the query commands (`find`, `count`, `distinct`,
//! `aggregate`'s leading `$match`, the write commands' `q`): filter, sort,
//! projection and hint, parsed into the storage crate's types.

use std::sync::Arc;
use std::time::Duration;

use bson::{RawBsonRef, RawDocument, rawdoc};
use ebb_lang::encoding::collation::{Choice, Collation};
use ebb_lang::pipeline::Env;
use ebb_lang::query::filter::Filter;
use ebb_lang::query::find_projection::FindProjection;
use ebb_lang::query::sort::SortSpec;
use ebb_storage::catalog::CollectionMeta;
use ebb_storage::engine::Direction;
use ebb_storage::plan::Hint;

use super::Request;
use crate::args::{Args, as_f64, as_i64, type_name};
use crate::error::{CommandError, CommandResult};

/// Parses a `collation` argument; a bad one gets mongod's error. Every
/// command that takes `collation` honours it: filters, sorts, `distinct`,
/// `$group` keys and index choice all compare strings through it.
pub fn collation(v: Option<RawBsonRef<'_>>) -> CommandResult<Choice> {
    Ok(Choice::parse(v)?)
}

/// The collation an operation with `choice` runs with on `meta`'s
/// collection.
pub fn resolve(choice: &Choice, meta: &CollectionMeta) -> CommandResult<Option<Arc<Collation>>> {
    Ok(choice.resolve(meta.default_collation()?))
}

/// The variables a command's expressions see: `$$NOW` (one instant for
/// the whole command, from the node's clock) and the command's `let`
/// option (a document, or null for none), evaluated once.
pub fn env(req: &Request, args: &Args<'_>) -> CommandResult<Env> {
    let lets = match args.get("let") {
        Some(RawBsonRef::Null) => None,
        _ => args.doc("let")?,
    };
    Ok(Env::with_let(req.now(), lets)?.with_javascript(scripting(req)))
}

/// Whether this node runs server-side JavaScript (`security.javascript_enabled`).
pub fn scripting(req: &Request) -> bool {
    req.node.config.security.javascript_enabled
}

/// `$$NOW` alone, for commands without a `let` option (`count`,
/// `distinct`).
pub fn env_now(req: &Request) -> Env {
    Env::new(req.now()).with_javascript(scripting(req))
}

/// A filter, or the empty filter; `$expr` in it sees `env`.
pub fn filter(doc: Option<&RawDocument>, env: &Env) -> CommandResult<Filter> {
    match doc {
        Some(d) => Ok(Filter::parse_in(d, env)?),
        None => Ok(Filter::parse_in(&rawdoc! {}, env)?),
    }
}

/// `sort: {$natural: ±1}`: the collection's natural order (insertion
/// order on a capped collection), which is a collection scan in that
/// direction rather than a sort; None for any other sort.
pub fn natural_sort(doc: Option<&RawDocument>) -> CommandResult<Option<Direction>> {
    let Some(d) = doc else { return Ok(None) };
    let mut fields = d.iter();
    let (Some(first), None) = (fields.next().transpose()?, fields.next()) else {
        return Ok(None);
    };
    if first.0.as_str() != "$natural" {
        return Ok(None);
    }
    Ok(Some(if as_f64(first.1).is_some_and(|f| f < 0.0) {
        Direction::Reverse
    } else {
        Direction::Forward
    }))
}

pub fn sort(doc: Option<&RawDocument>) -> CommandResult<Option<SortSpec>> {
    match doc {
        Some(d) if !d.is_empty() => Ok(Some(SortSpec::parse(d)?)),
        _ => Ok(None),
    }
}

/// A `find` sort, which may also sort by the `$text` score.
pub fn find_sort(doc: Option<&RawDocument>) -> CommandResult<Option<SortSpec>> {
    match doc {
        Some(d) if !d.is_empty() => Ok(Some(SortSpec::parse_scored(d)?)),
        _ => Ok(None),
    }
}

/// A `find` projection, with the operators only `find` has; `query` is
/// the command's filter document (a positional `$` needs it).
pub fn find_projection(
    doc: Option<&RawDocument>,
    query: Option<&RawDocument>,
    env: &Env,
) -> CommandResult<Option<FindProjection>> {
    let empty = rawdoc! {};
    match doc {
        Some(d) if !d.is_empty() => Ok(Some(FindProjection::parse_in(
            d,
            Some(query.unwrap_or(&empty)),
            env,
        )?)),
        _ => Ok(None),
    }
}

/// The generic `maxTimeMS` argument as mongod reads it: a number, whole,
/// from 0 to 2^31-1; 0 (or none) means no limit. The reads honour it
/// through the query cursor's time budget.
pub fn max_time(args: &Args<'_>) -> CommandResult<Option<Duration>> {
    let Some(v) = args.get("maxTimeMS") else {
        return Ok(None);
    };
    let (Some(n), Some(f)) = (as_i64(v), as_f64(v)) else {
        return Err(CommandError::bad_value("maxTimeMS must be a number"));
    };
    if !(0..=i64::from(i32::MAX)).contains(&n) {
        return Err(CommandError::bad_value(format!(
            "{n} value for maxTimeMS is out of range"
        )));
    }
    if f.fract() != 0.0 {
        return Err(CommandError::bad_value("maxTimeMS has non-integral value"));
    }
    Ok((n > 0).then(|| Duration::from_millis(n as u64)))
}

/// When a command given `maxTimeMS` must stop: now plus the limit.
pub fn deadline(args: &Args<'_>) -> CommandResult<Option<std::time::Instant>> {
    Ok(max_time(args)?.map(|limit| std::time::Instant::now() + limit))
}

/// A `hint`: an index name, a key pattern, or `{$natural: ±1}`.
pub fn hint(v: Option<RawBsonRef<'_>>) -> CommandResult<Option<Hint>> {
    match v {
        None => Ok(None),
        Some(RawBsonRef::String(s)) => Ok(Some(Hint::Name(s.to_owned()))),
        Some(RawBsonRef::Document(d)) if d.is_empty() => Ok(None),
        Some(RawBsonRef::Document(d)) => {
            if let Some(n) = d.get("$natural")? {
                let dir = if as_f64(n).is_some_and(|f| f < 0.0) {
                    Direction::Reverse
                } else {
                    Direction::Forward
                };
                return Ok(Some(Hint::Natural(dir)));
            }
            let key = bson::Document::try_from(d)?;
            Ok(Some(Hint::KeyPattern(key)))
        }
        Some(other) => Err(CommandError::failed_to_parse(format!(
            "hint must be a string or an object, not {}",
            type_name(&other)
        ))),
    }
}
