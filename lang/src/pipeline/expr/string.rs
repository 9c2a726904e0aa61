//! String operators: `$concat`, `$substr`/`$substrBytes`/`$substrCP`,
//! `$toLower`/`$toUpper` (ASCII, as MongoDB), `$strLenBytes`/`$strLenCP`,
//! `$split`, `$trim`/`$ltrim`/`$rtrim`, `$indexOfBytes`/`$indexOfCP`,
//! `$strcasecmp`, `$replaceOne`/`$replaceAll`.
//!
//! Byte offsets and lengths are UTF-8 bytes; "CP" operators count code
//! points. Strings are Rust strings, so they are always valid UTF-8.

use super::convert::coerce_to_string;
use super::tree::{Arity, OpDef, op};
use super::value::{Cx, Val, fail, integral, shown};
use crate::error::{ExprError, Result};

op!(CONCAT, "$concat", Arity::Any, concat);
op!(SUBSTR, "$substr", Arity::Exactly(3), substr_bytes);
op!(
    SUBSTR_BYTES,
    "$substrBytes",
    Arity::Exactly(3),
    substr_bytes
);
op!(SUBSTR_CP, "$substrCP", Arity::Exactly(3), substr_cp);
op!(TO_LOWER, "$toLower", Arity::Exactly(1), to_lower);
op!(TO_UPPER, "$toUpper", Arity::Exactly(1), to_upper);
op!(
    STR_LEN_BYTES,
    "$strLenBytes",
    Arity::Exactly(1),
    str_len_bytes
);
op!(STR_LEN_CP, "$strLenCP", Arity::Exactly(1), str_len_cp);
op!(SPLIT, "$split", Arity::Exactly(2), split);
op!(
    INDEX_OF_BYTES,
    "$indexOfBytes",
    Arity::Between(2, 4),
    index_of_bytes
);
op!(INDEX_OF_CP, "$indexOfCP", Arity::Between(2, 4), index_of_cp);
op!(STRCASECMP, "$strcasecmp", Arity::Exactly(2), strcasecmp);
op!(TRIM, "$trim", Arity::Between(1, 2), trim);
op!(LTRIM, "$ltrim", Arity::Between(1, 2), ltrim);
op!(RTRIM, "$rtrim", Arity::Between(1, 2), rtrim);
op!(REPLACE_ONE, "$replaceOne", Arity::Exactly(3), replace_one);
op!(REPLACE_ALL, "$replaceAll", Arity::Exactly(3), replace_all);

pub(super) static OPS: &[&OpDef] = &[
    &CONCAT,
    &SUBSTR,
    &SUBSTR_BYTES,
    &SUBSTR_CP,
    &TO_LOWER,
    &TO_UPPER,
    &STR_LEN_BYTES,
    &STR_LEN_CP,
    &SPLIT,
    &INDEX_OF_BYTES,
    &INDEX_OF_CP,
    &STRCASECMP,
];

fn concat<'a>(_: &Cx<'_>, args: Vec<Val<'a>>) -> Result<Val<'a>> {
    let mut out = String::new();
    for v in &args {
        if v.nullish() {
            return Ok(Val::null());
        }
        match v.as_str() {
            Some(s) => out.push_str(s),
            None => {
                return Err(fail(
                    ExprError::ConcatType,
                    format!("$concat only supports strings, not {}", v.type_name()),
                ));
            }
        }
    }
    Ok(Val::string(out))
}

/// A numeric index argument of `$substrBytes` (int, long or double).
fn byte_index(v: &Val<'_>) -> Option<i64> {
    match v.get()? {
        bson::RawBsonRef::Int32(n) => Some(n.into()),
        bson::RawBsonRef::Int64(n) => Some(n),
        bson::RawBsonRef::Double(x) => Some(x as i64),
        _ => None,
    }
}

fn substr_bytes<'a>(_: &Cx<'_>, args: Vec<Val<'a>>) -> Result<Val<'a>> {
    let s = coerce_to_string(&args[0])?;
    let name = "$substrBytes";
    let Some(lower) = byte_index(&args[1]) else {
        return Err(fail(
            ExprError::SubstrStartType,
            format!(
                "{name}:  starting index must be a numeric type (is BSON type {})",
                args[1].type_name()
            ),
        ));
    };
    let Some(length) = byte_index(&args[2]) else {
        return Err(fail(
            ExprError::SubstrLengthType,
            format!(
                "{name}:  length must be a numeric type (is BSON type {})",
                args[2].type_name()
            ),
        ));
    };
    if lower < 0 {
        return Err(fail(
            ExprError::SubstrStartNegative,
            format!("{name}:  starting index must be non-negative (got: {lower})"),
        ));
    }
    let bytes = s.as_bytes();
    let lower = lower as usize;
    let length = if length < 0 {
        bytes.len()
    } else {
        length as usize
    };
    let continuation = |i: usize| bytes.get(i).is_some_and(|b| b & 0xC0 == 0x80);
    if lower < bytes.len() && continuation(lower) {
        return Err(fail(
            ExprError::SubstrStartContinuation,
            format!("{name}:  Invalid range, starting index is a UTF-8 continuation byte."),
        ));
    }
    let end = lower.saturating_add(length);
    if end < bytes.len() && continuation(end) {
        return Err(fail(
            ExprError::SubstrEndContinuation,
            format!("{name}:  Invalid range, ending index is in the middle of a UTF-8 character."),
        ));
    }
    if lower >= bytes.len() {
        return Ok(Val::string(""));
    }
    let end = end.min(bytes.len());
    Ok(Val::string(&s[lower..end]))
}

fn substr_cp<'a>(_: &Cx<'_>, args: Vec<Val<'a>>) -> Result<Val<'a>> {
    let s = coerce_to_string(&args[0])?;
    let name = "$substrCP";
    let (start, length) = (&args[1], &args[2]);
    if !start.is_number() {
        return Err(fail(
            ExprError::SubstrCpStartType,
            format!(
                "{name}: starting index must be a numeric type (is BSON type {})",
                start.type_name()
            ),
        ));
    }
    let Some(start) = super::value::integral32(start) else {
        return Err(fail(
            ExprError::SubstrCpStartNotIntegral,
            format!(
                "{name}: starting index cannot be represented as a 32-bit integral value: {}",
                shown(start)
            ),
        ));
    };
    if !length.is_number() {
        return Err(fail(
            ExprError::SubstrCpLengthType,
            format!(
                "{name}: length must be a numeric type (is BSON type {})",
                length.type_name()
            ),
        ));
    }
    let Some(length) = super::value::integral32(length) else {
        return Err(fail(
            ExprError::SubstrCpLengthNotIntegral,
            format!(
                "{name}: length cannot be represented as a 32-bit integral value: {}",
                shown(length)
            ),
        ));
    };
    if length < 0 {
        return Err(fail(
            ExprError::SubstrCpLengthNegative,
            format!("{name}: length must be a nonnegative integer."),
        ));
    }
    if start < 0 {
        return Err(fail(
            ExprError::SubstrCpStartNegative,
            format!("{name}: the starting index must be nonnegative integer."),
        ));
    }
    let out: String = s
        .chars()
        .skip(start as usize)
        .take(length as usize)
        .collect();
    Ok(Val::string(out))
}

fn to_lower<'a>(_: &Cx<'_>, args: Vec<Val<'a>>) -> Result<Val<'a>> {
    Ok(Val::string(
        coerce_to_string(&args[0])?.to_ascii_lowercase(),
    ))
}

fn to_upper<'a>(_: &Cx<'_>, args: Vec<Val<'a>>) -> Result<Val<'a>> {
    Ok(Val::string(
        coerce_to_string(&args[0])?.to_ascii_uppercase(),
    ))
}

fn str_len_bytes<'a>(_: &Cx<'_>, args: Vec<Val<'a>>) -> Result<Val<'a>> {
    match args[0].as_str() {
        Some(s) => Ok(Val::int_or_long(s.len() as i64)),
        None => Err(fail(
            ExprError::StrLenBytesType,
            format!(
                "$strLenBytes requires a string argument, found: {}",
                args[0].type_name()
            ),
        )),
    }
}

fn str_len_cp<'a>(_: &Cx<'_>, args: Vec<Val<'a>>) -> Result<Val<'a>> {
    match args[0].as_str() {
        Some(s) => Ok(Val::int_or_long(s.chars().count() as i64)),
        None => Err(fail(
            ExprError::StrLenCpType,
            format!(
                "$strLenCP requires a string argument, found: {}",
                args[0].type_name()
            ),
        )),
    }
}

fn split<'a>(_: &Cx<'_>, args: Vec<Val<'a>>) -> Result<Val<'a>> {
    let (input, sep) = (&args[0], &args[1]);
    if input.nullish() || sep.nullish() {
        return Ok(Val::null());
    }
    let Some(s) = input.as_str() else {
        return Err(fail(
            ExprError::SplitInputType,
            format!(
                "$split requires an expression that evaluates to a string as a first argument, found: {}",
                input.type_name()
            ),
        ));
    };
    let Some(sep) = sep.as_str() else {
        return Err(fail(
            ExprError::SplitSeparatorType,
            format!(
                "$split requires an expression that evaluates to a string as a second argument, found: {}",
                sep.type_name()
            ),
        ));
    };
    if sep.is_empty() {
        return Err(fail(
            ExprError::SplitEmptySeparator,
            "$split requires a non-empty separator",
        ));
    }
    Ok(super::value::array(s.split(sep).map(Val::string)))
}

/// A start or end index of `$indexOfBytes`/`$indexOfCP`.
fn search_bound(name: &str, what: &str, v: &Val<'_>) -> Result<usize> {
    let Some(n) = integral(v).filter(|_| v.is_number()) else {
        return Err(fail(
            ExprError::IndexOfBoundNotIntegral,
            format!(
                "{name} requires an integral {what}, found a value of type: {}, with value: {}",
                v.type_name(),
                shown(v)
            ),
        ));
    };
    if n < 0 {
        return Err(fail(
            ExprError::IndexOfBoundNegative,
            format!("{name} requires a nonnegative {what}, found: {n}"),
        ));
    }
    Ok(usize::try_from(n).unwrap_or(usize::MAX))
}

/// The string and token of an `$indexOf…` call; `None` when the string is
/// nullish (the result is then null).
fn search_args<'v>(
    name: &str,
    args: &'v [Val<'_>],
    kinds: (ExprError, ExprError),
) -> Result<Option<(&'v str, &'v str)>> {
    let (input, token) = (&args[0], &args[1]);
    if input.nullish() {
        return Ok(None);
    }
    let Some(s) = input.as_str() else {
        return Err(fail(
            kinds.0,
            format!(
                "{name} requires a string as the first argument, found: {}",
                input.type_name()
            ),
        ));
    };
    let Some(t) = token.as_str() else {
        return Err(fail(
            kinds.1,
            format!(
                "{name} requires a string as the second argument, found: {}",
                token.type_name()
            ),
        ));
    };
    Ok(Some((s, t)))
}

fn index_of_bytes<'a>(_: &Cx<'_>, args: Vec<Val<'a>>) -> Result<Val<'a>> {
    let name = "$indexOfBytes";
    let Some((s, token)) = search_args(
        name,
        &args,
        (
            ExprError::IndexOfBytesInputType,
            ExprError::IndexOfBytesTokenType,
        ),
    )?
    else {
        return Ok(Val::null());
    };
    let start = match args.get(2) {
        Some(v) => search_bound(name, "starting index", v)?,
        None => 0,
    };
    let end = match args.get(3) {
        Some(v) => search_bound(name, "ending index", v)?.min(s.len()),
        None => s.len(),
    };
    if start > s.len() || end < start {
        return Ok(Val::int(-1));
    }
    let hay = &s.as_bytes()[..end];
    let found = (start..=hay.len().saturating_sub(token.len()))
        .find(|&i| hay[i..].starts_with(token.as_bytes()));
    Ok(Val::int_or_long(found.map_or(-1, |i| i as i64)))
}

fn index_of_cp<'a>(_: &Cx<'_>, args: Vec<Val<'a>>) -> Result<Val<'a>> {
    let name = "$indexOfCP";
    let Some((s, token)) = search_args(
        name,
        &args,
        (ExprError::IndexOfCpInputType, ExprError::IndexOfCpTokenType),
    )?
    else {
        return Ok(Val::null());
    };
    let start = match args.get(2) {
        Some(v) => search_bound(name, "starting index", v)?,
        None => 0,
    };
    let offsets: Vec<usize> = s.char_indices().map(|(i, _)| i).collect();
    let len = offsets.len();
    let end = match args.get(3) {
        Some(v) => search_bound(name, "ending index", v)?.min(len),
        None => len,
    };
    if s.is_empty() && token.is_empty() && start == 0 {
        return Ok(Val::int(0));
    }
    for cp in start..end {
        if s[offsets[cp]..].starts_with(token) {
            return Ok(Val::int_or_long(cp as i64));
        }
    }
    Ok(Val::int(-1))
}

fn strcasecmp<'a>(_: &Cx<'_>, args: Vec<Val<'a>>) -> Result<Val<'a>> {
    let a = coerce_to_string(&args[0])?.to_ascii_uppercase();
    let b = coerce_to_string(&args[1])?.to_ascii_uppercase();
    Ok(Val::int(match a.as_bytes().cmp(b.as_bytes()) {
        std::cmp::Ordering::Less => -1,
        std::cmp::Ordering::Equal => 0,
        std::cmp::Ordering::Greater => 1,
    }))
}

/// The characters `$trim` removes when given no `chars`: NUL, the ASCII
/// whitespace and the Unicode spaces MongoDB lists.
const WHITESPACE: &[char] = &[
    '\0', ' ', '\t', '\n', '\u{0B}', '\u{0C}', '\r', '\u{A0}', '\u{1680}', '\u{2000}', '\u{2001}',
    '\u{2002}', '\u{2003}', '\u{2004}', '\u{2005}', '\u{2006}', '\u{2007}', '\u{2008}', '\u{2009}',
    '\u{200A}',
];

fn trim<'a>(_: &Cx<'_>, args: Vec<Val<'a>>) -> Result<Val<'a>> {
    trim_sides("$trim", args, true, true)
}

fn ltrim<'a>(_: &Cx<'_>, args: Vec<Val<'a>>) -> Result<Val<'a>> {
    trim_sides("$ltrim", args, true, false)
}

fn rtrim<'a>(_: &Cx<'_>, args: Vec<Val<'a>>) -> Result<Val<'a>> {
    trim_sides("$rtrim", args, false, true)
}

fn trim_sides<'a>(name: &str, args: Vec<Val<'a>>, left: bool, right: bool) -> Result<Val<'a>> {
    let input = &args[0];
    if input.nullish() {
        return Ok(Val::null());
    }
    let Some(s) = input.as_str() else {
        return Err(fail(
            ExprError::TrimInputType,
            format!(
                "{name} requires its input to be a string, got {} (of type {}) instead.",
                shown(input),
                input.type_name()
            ),
        ));
    };
    let chars: Vec<char> = match args.get(1) {
        None => WHITESPACE.to_vec(),
        Some(c) if c.nullish() => return Ok(Val::null()),
        Some(c) => match c.as_str() {
            Some(c) => c.chars().collect(),
            None => {
                return Err(fail(
                    ExprError::TrimCharsType,
                    format!(
                        "{name} requires 'chars' to be a string, got {} (of type {}) instead.",
                        shown(c),
                        c.type_name()
                    ),
                ));
            }
        },
    };
    let mut out = s;
    if left {
        out = out.trim_start_matches(chars.as_slice());
    }
    if right {
        out = out.trim_end_matches(chars.as_slice());
    }
    Ok(Val::string(out))
}

fn replace_one<'a>(_: &Cx<'_>, args: Vec<Val<'a>>) -> Result<Val<'a>> {
    replace("$replaceOne", args, false)
}

fn replace_all<'a>(_: &Cx<'_>, args: Vec<Val<'a>>) -> Result<Val<'a>> {
    replace("$replaceAll", args, true)
}

fn replace<'a>(name: &str, args: Vec<Val<'a>>, all: bool) -> Result<Val<'a>> {
    let checks = [
        ("input", ExprError::ReplaceInputType),
        ("find", ExprError::ReplaceFindType),
        ("replacement", ExprError::ReplaceReplacementType),
    ];
    for (v, (what, kind)) in args.iter().zip(checks) {
        if !v.nullish() && v.as_str().is_none() {
            return Err(fail(
                kind,
                format!(
                    "{name} requires that '{what}' be a string, found: {}",
                    shown(v)
                ),
            ));
        }
    }
    let (Some(input), Some(find), Some(replacement)) =
        (args[0].as_str(), args[1].as_str(), args[2].as_str())
    else {
        return Ok(Val::null());
    };
    Ok(Val::string(if all {
        input.replace(find, replacement)
    } else {
        input.replacen(find, replacement, 1)
    }))
}
