//! `$regexMatch`, `$regexFind` and `$regexFindAll`: the query language's
//! regex engine (`query::regex`, PCRE features with bounded backtracking)
//! applied to computed values, with mongod's argument checks and result
//! shapes (`{match, idx, captures}`, `idx` in code points).
//!
//! A constant pattern is compiled once per thread and reused; a pattern
//! that comes from the document is compiled when it changes.

use std::cell::RefCell;

use bson::{RawArrayBuf, RawBson, RawBsonRef, RawDocumentBuf};

use super::tree::{Arity, op};
use super::value::{Cx, Val, fail, shown};
use crate::error::{ExprError, Result};
use crate::query::regex::{Found, Regex};

op!(REGEX_MATCH, "$regexMatch", Arity::Exactly(3), regex_match);
op!(REGEX_FIND, "$regexFind", Arity::Exactly(3), regex_find);
op!(
    REGEX_FIND_ALL,
    "$regexFindAll",
    Arity::Exactly(3),
    regex_find_all
);

/// `$regexMatch`: whether the pattern matches; false for a null input.
fn regex_match<'a>(_: &Cx<'_>, args: Vec<Val<'a>>) -> Result<Val<'a>> {
    let Some((input, regex)) = prepare("$regexMatch", &args)? else {
        return Ok(Val::bool(false));
    };
    Ok(Val::bool(regex.try_match(input)?))
}

/// `$regexFind`: the first match as a document, or null.
fn regex_find<'a>(_: &Cx<'_>, args: Vec<Val<'a>>) -> Result<Val<'a>> {
    let Some((input, regex)) = prepare("$regexFind", &args)? else {
        return Ok(Val::null());
    };
    Ok(match regex.find_matches(input, 1)?.first() {
        Some(found) => Val::Own(RawBson::Document(describe(input, found))),
        None => Val::null(),
    })
}

/// `$regexFindAll`: every match, as an array of documents.
fn regex_find_all<'a>(_: &Cx<'_>, args: Vec<Val<'a>>) -> Result<Val<'a>> {
    let mut out = RawArrayBuf::new();
    if let Some((input, regex)) = prepare("$regexFindAll", &args)? {
        for found in regex.find_matches(input, usize::MAX)? {
            out.push(RawBson::Document(describe(input, &found)));
        }
    }
    Ok(Val::Own(RawBson::Array(out)))
}

/// Checks the arguments (input, regex, options) and compiles the regex;
/// `None` when the input or the regex is null or missing.
fn prepare<'v>(name: &str, args: &'v [Val<'_>]) -> Result<Option<(&'v str, Regex)>> {
    let (input, pattern, options) = (&args[0], &args[1], &args[2]);
    let input = match input.as_str() {
        Some(s) => Some(s),
        None if input.nullish() => None,
        None => {
            return Err(fail(
                ExprError::RegexInputType,
                format!(
                    "{name} needs 'input' to be of type string, found: {}",
                    shown(input)
                ),
            ));
        }
    };
    let given_options = match options.get() {
        None | Some(RawBsonRef::Null) | Some(RawBsonRef::Undefined) => None,
        Some(RawBsonRef::String(o)) => Some(o),
        Some(_) => {
            return Err(fail(
                ExprError::RegexOptionsType,
                format!("{name} needs 'options' to be of type string"),
            ));
        }
    };
    let (pattern, options) = match pattern.get() {
        None | Some(RawBsonRef::Null) | Some(RawBsonRef::Undefined) => return Ok(None),
        Some(RawBsonRef::String(p)) => (p, given_options.unwrap_or("")),
        Some(RawBsonRef::RegularExpression(r)) => {
            let own = r.options.as_str();
            if !own.is_empty() && given_options.is_some_and(|o| !o.is_empty()) {
                return Err(fail(
                    ExprError::RegexOptionsTwice,
                    format!(
                        "{name}: regex option(s) specified in both 'regex' and 'option' fields"
                    ),
                ));
            }
            (
                r.pattern.as_str(),
                if own.is_empty() {
                    given_options.unwrap_or("")
                } else {
                    own
                },
            )
        }
        Some(_) => {
            return Err(fail(
                ExprError::RegexRegexType,
                format!("{name} needs 'regex' to be of type string or regex"),
            ));
        }
    };
    let Some(input) = input else {
        return Ok(None);
    };
    Ok(Some((input, compiled(name, pattern, options)?)))
}

thread_local! {
    /// The last pattern this thread compiled: a pipeline applies one
    /// pattern to every document.
    static LAST: RefCell<Option<Regex>> = const { RefCell::new(None) };
}

fn compiled(name: &str, pattern: &str, options: &str) -> Result<Regex> {
    if let Some(hit) = LAST.with(|last| {
        last.borrow()
            .as_ref()
            .filter(|r| r.pattern() == pattern && r.options() == options)
            .cloned()
    }) {
        return Ok(hit);
    }
    let regex = Regex::new(pattern, options).map_err(|e| {
        fail(
            ExprError::RegexInvalid,
            format!("Invalid Regex in {name}: {}", e.message),
        )
    })?;
    LAST.with(|last| *last.borrow_mut() = Some(regex.clone()));
    Ok(regex)
}

/// `{match, idx, captures}` for one match; `idx` counts code points.
fn describe(input: &str, found: &Found) -> RawDocumentBuf {
    let mut captures = RawArrayBuf::new();
    for c in &found.captures {
        match c {
            Some(text) => captures.push(text.as_str()),
            None => captures.push(RawBson::Null),
        }
    }
    let idx = input[..found.start].chars().count() as i32;
    let mut doc = RawDocumentBuf::new();
    doc.append(bson::raw::cstr!("match"), found.text.as_str());
    doc.append(bson::raw::cstr!("idx"), idx);
    doc.append(bson::raw::cstr!("captures"), captures);
    doc
}
