//! Parsing a filter document from raw BSON into the [`Filter`] tree,
//! rejecting what MongoDB 7.0 rejects with its messages: top-level and
//! path operators, `$regex`/`$options`, `$in`, `$all`, `$elemMatch`,
//! `$mod`, `$size`, `$type`, and `$expr` in the command's environment.

use std::sync::Arc;

use bson::{RawBson, RawBsonRef, RawDocument, RawDocumentBuf};

use super::bits::Bits;
use super::types::{
    ElemMatch, Expr, ExprClause, Filter, GeoPred, GeoTest, Near, Pred, TextClause, TypeSet,
};
use crate::error::{Error, ErrorKind, Result};
use crate::geo;
use crate::pipeline::{Env, Expr as AggExpr};
use crate::query::in_list::InList;
use crate::query::path::elements;
use crate::query::regex::Regex;
use crate::query::value::{TYPE_ALIASES, element, number_as_f64, truthy};
use crate::schema::JsonSchema;
use crate::text::TextQuery;

impl Filter {
    /// Parses a filter document, rejecting what MongoDB 7.0 rejects; a
    /// `$expr` sees `$$NOW` taken now and no `let` variables.
    pub fn parse(filter: &RawDocument) -> Result<Filter> {
        Filter::parse_in(filter, &Env::new(bson::DateTime::now()))
    }

    /// Parses a filter document in a command's environment (`$$NOW`, `let`).
    /// A `$text` is taken at the top level or as a clause of a top-level
    /// `$and` (mongod also takes it under `$or` when every other branch is
    /// indexed; ebb refuses that).
    pub fn parse_in(filter: &RawDocument, env: &Env) -> Result<Filter> {
        let mut text = None;
        let rest = take_text(filter, &mut text, true)?;
        let clauses = match &rest {
            Some(rest) => parse_clauses(rest, Some(env))?,
            None => parse_clauses(filter, Some(env))?,
        };
        Ok(Filter {
            root: conjunction(clauses),
            collation: None,
            text,
        })
    }
}

/// Moves the `$text` of `filter` (at its top, or in a clause of its `$and`
/// when `and_too`) into `text`; returns the rest of the filter, or None
/// when it holds no `$text`.
fn take_text(
    filter: &RawDocument,
    text: &mut Option<TextClause>,
    and_too: bool,
) -> Result<Option<RawDocumentBuf>> {
    let holds = |d: &RawDocument| d.get("$text").ok().flatten().is_some();
    let in_and = |v: RawBsonRef<'_>| match v {
        RawBsonRef::Array(a) => {
            elements(a).any(|c| matches!(c, RawBsonRef::Document(d) if holds(d)))
        }
        _ => false,
    };
    let has = holds(filter) || (and_too && filter.get("$and").ok().flatten().is_some_and(in_and));
    if !has {
        return Ok(None);
    }
    let mut rest = RawDocumentBuf::new();
    for item in filter.iter() {
        let (key, value) = element(item)?;
        let name =
            bson::raw::CString::try_from(key).map_err(|e| Error::bad_value(e.to_string()))?;
        match (key, value) {
            ("$text", _) => {
                if text.is_some() {
                    return Err(too_many_text());
                }
                *text = Some(TextClause {
                    query: TextQuery::parse(value)?,
                    search: None,
                });
            }
            ("$and", RawBsonRef::Array(clauses)) if and_too && in_and(value) => {
                let mut kept = bson::RawArrayBuf::new();
                for clause in elements(clauses) {
                    match clause {
                        RawBsonRef::Document(d) => match take_text(d, text, false)? {
                            Some(without) => kept.push(without),
                            None => kept.push(d.to_owned()),
                        },
                        other => kept.push(other),
                    }
                }
                rest.append(name, kept);
            }
            _ => rest.append(name, value),
        }
    }
    Ok(Some(rest))
}

fn too_many_text() -> Error {
    Error::bad_value("Too many text expressions")
}

/// Top-level operators MongoDB knows but ebb does not evaluate yet.
const UNSUPPORTED_TOP_LEVEL: &[&str] = &[];

/// Whether `name` is a top-level operator: inside `$elemMatch`, a document
/// starting with one is a filter, not a list of predicates.
fn is_top_level_operator(name: &str) -> bool {
    matches!(
        name,
        "$and"
            | "$or"
            | "$nor"
            | "$comment"
            | "$alwaysTrue"
            | "$alwaysFalse"
            | "$jsonSchema"
            | "$expr"
            | "$sampleRate"
            | "$where"
            | "$text"
    ) || UNSUPPORTED_TOP_LEVEL.contains(&name)
}

/// Path operators MongoDB knows but ebb does not evaluate yet.
const UNSUPPORTED_PATH_OPERATORS: &[&str] = &["$geoNear"];

/// The geo path operators (`crate::geo`); `$maxDistance` and
/// `$minDistance` go with `$near` and `$nearSphere`; `$within` is
/// `$geoWithin`'s old name, which mongod still reads.
const GEO_OPERATORS: &[&str] = &[
    "$geoWithin",
    "$within",
    "$geoIntersects",
    "$near",
    "$nearSphere",
    "$maxDistance",
    "$minDistance",
];

/// Whether `name` is an operator on a path (`$not` aside): a document
/// starting with one may not be a value inside `$all`.
fn is_path_operator(name: &str) -> bool {
    matches!(
        name,
        "$eq"
            | "$ne"
            | "$gt"
            | "$gte"
            | "$lt"
            | "$lte"
            | "$in"
            | "$nin"
            | "$exists"
            | "$type"
            | "$size"
            | "$all"
            | "$elemMatch"
            | "$regex"
            | "$options"
            | "$mod"
            | "$bitsAllSet"
            | "$bitsAllClear"
            | "$bitsAnySet"
            | "$bitsAnyClear"
    ) || UNSUPPORTED_PATH_OPERATORS.contains(&name)
        || GEO_OPERATORS.contains(&name)
}

/// A `$text` below the top level (and the top-level `$and`): inside
/// `$elemMatch` as mongod refuses it; under `$or` or a nested `$and`
/// refused by ebb, which searches text for the whole filter only.
fn nested_text(in_logical: bool) -> Error {
    if in_logical {
        Error::not_implemented(
            "$text under $or or a nested $and (ebb takes it at the top level or in a top-level $and)",
        )
    } else {
        top_level_only("$text")
    }
}

fn not_supported(what: &str) -> Error {
    Error::bad_value(format!("{what} is not supported yet"))
}

/// A BSON regex value as a predicate.
fn regex_value(value: RawBsonRef<'_>) -> Result<Option<Regex>> {
    match value {
        RawBsonRef::RegularExpression(r) => {
            Ok(Some(Regex::new(r.pattern.as_str(), r.options.as_str())?))
        }
        _ => Ok(None),
    }
}

/// `{$regex: p, $options: o}` (in either order, `p` a string or a regex
/// value), as MongoDB reads it.
fn parse_regex_operator(
    regex: Option<RawBsonRef<'_>>,
    options: Option<RawBsonRef<'_>>,
) -> Result<Regex> {
    let options = match options {
        None => None,
        Some(RawBsonRef::String(o)) => Some(o),
        Some(_) => return Err(Error::bad_value("$options has to be a string")),
    };
    match regex {
        Some(RawBsonRef::String(p)) => Regex::new(p, options.unwrap_or("")),
        Some(RawBsonRef::RegularExpression(r)) => {
            let own = r.options.as_str();
            match options {
                Some(_) if !own.is_empty() => Err(Error::new(
                    ErrorKind::RegexOptionsTwice,
                    "options set in both $regex and $options",
                )),
                Some(o) => Regex::new(r.pattern.as_str(), o),
                None => Regex::new(r.pattern.as_str(), own),
            }
        }
        Some(_) => Err(Error::bad_value("$regex has to be a string")),
        None => Err(Error::bad_value("$options needs a $regex")),
    }
}

/// One node for the clauses of a document: the clause itself when there is
/// exactly one, else their conjunction.
fn conjunction(mut clauses: Vec<Expr>) -> Expr {
    if clauses.len() == 1 {
        clauses.remove(0)
    } else {
        Expr::And(clauses)
    }
}

/// The clauses of a filter document, ANDed by the caller. `env` is the
/// command's environment at the top level (where `$expr` may appear), and
/// `None` inside `$elemMatch`.
fn parse_clauses(doc: &RawDocument, env: Option<&Env>) -> Result<Vec<Expr>> {
    let mut clauses = Vec::new();
    for item in doc.iter() {
        let (key, value) = element(item)?;
        if key.starts_with('$') {
            clauses.extend(parse_top_level(key, value, env)?);
        } else {
            parse_field(key, value, &mut clauses)?;
        }
    }
    Ok(clauses)
}

/// A `$`-prefixed key of a filter document; `None` for `$comment`, which
/// only labels the operation.
fn parse_top_level(name: &str, value: RawBsonRef<'_>, env: Option<&Env>) -> Result<Option<Expr>> {
    let expr = match name {
        "$and" => Expr::And(parse_logical(name, value, env)?),
        "$or" => Expr::Or(parse_logical(name, value, env)?),
        "$nor" => {
            if let RawBsonRef::Array(clauses) = value
                && elements(clauses).any(|c| {
                    matches!(c, RawBsonRef::Document(d) if d.get("$text").ok().flatten().is_some())
                })
            {
                return Err(Error::bad_value("text expression not allowed in nor"));
            }
            Expr::Nor(parse_logical(name, value, env)?)
        }
        "$comment" => return Ok(None),
        "$expr" => match env {
            Some(env) => Expr::Expr(ExprClause {
                spec: value.into(),
                expr: AggExpr::parse_in(value, env)?,
            }),
            None => return Err(top_level_only(name)),
        },
        // mongod's rewrite: each document is kept with probability p.
        "$sampleRate" => match env {
            Some(env) => {
                let rate = number_as_f64(value).ok_or_else(|| {
                    Error::bad_value("argument to $sampleRate must be a numeric type")
                })?;
                if !(0.0..=1.0).contains(&rate) {
                    return Err(Error::bad_value(
                        "numeric argument to $sampleRate must be in [0, 1]",
                    ));
                }
                let spec = RawBson::Document(bson::rawdoc! { "$lt": [{ "$rand": {} }, rate] });
                Expr::Expr(ExprClause {
                    expr: AggExpr::parse_in(spec.as_raw_bson_ref(), env)?,
                    spec,
                })
            }
            None => return Err(top_level_only(name)),
        },
        // ebb runs no JavaScript: mongod answers this way when server-side
        // scripting is disabled.
        "$where" => match env {
            Some(env) if env.javascript() => Expr::Where(where_source(value)?),
            Some(_) => {
                return Err(Error::new(
                    ErrorKind::JavaScriptDisabled,
                    "no globalScriptEngine in $where parsing",
                ));
            }
            None => return Err(top_level_only(name)),
        },
        "$alwaysTrue" => always(name, value, Expr::AlwaysTrue)?,
        "$alwaysFalse" => always(name, value, Expr::AlwaysFalse)?,
        "$jsonSchema" => Expr::JsonSchema(Arc::new(JsonSchema::parse(value)?)),
        // DBRef fields are matched by plain equality.
        "$ref" | "$id" | "$db" => Expr::Path {
            path: name.to_owned(),
            pred: Pred::Eq(comparable(value)?),
        },
        "$not" => {
            return Err(Error::bad_value(
                "unknown top level operator: $not. \
                 If you are trying to negate an entire expression, use $nor.",
            ));
        }
        "$text" => return Err(nested_text(env.is_some())),
        _ if UNSUPPORTED_TOP_LEVEL.contains(&name) => return Err(not_supported(name)),
        _ => {
            return Err(Error::bad_value(format!(
                "unknown top level operator: {name}. If you have a field name that starts \
                 with a '$' symbol, consider using $getField or $setField."
            )));
        }
    };
    Ok(Some(expr))
}

/// The code of a `$where`: a string or BSON JavaScript code (a scope is
/// not supported by mongod since 4.4 either).
fn where_source(value: RawBsonRef<'_>) -> Result<Arc<str>> {
    match value {
        RawBsonRef::String(code) | RawBsonRef::JavaScriptCode(code) => Ok(Arc::from(code)),
        RawBsonRef::JavaScriptCodeWithScope(_) => Err(Error::bad_value(
            "$where no longer supports a JavaScript scope",
        )),
        _ => Err(Error::bad_value("$where got bad type")),
    }
}

/// `$expr` or `$where` inside `$elemMatch`.
fn top_level_only(name: &str) -> Error {
    Error::bad_value(format!(
        "{name} can only be applied to the top-level document"
    ))
}

fn always(name: &str, value: RawBsonRef<'_>, expr: Expr) -> Result<Expr> {
    if integer(value) == Some(1) {
        Ok(expr)
    } else {
        Err(Error::failed_to_parse(format!(
            "{name} must be an integer value of 1"
        )))
    }
}

/// The clauses of `$and`/`$or`/`$nor`.
fn parse_logical(name: &str, value: RawBsonRef<'_>, env: Option<&Env>) -> Result<Vec<Expr>> {
    let RawBsonRef::Array(array) = value else {
        return Err(Error::bad_value(format!("{name} must be an array")));
    };
    let mut clauses = Vec::new();
    for item in elements(array) {
        let RawBsonRef::Document(doc) = item else {
            return Err(Error::bad_value(
                "$or/$and/$nor entries need to be full objects",
            ));
        };
        clauses.push(conjunction(parse_clauses(doc, env)?));
    }
    if clauses.is_empty() {
        return Err(Error::bad_value("$and/$or/$nor must be a nonempty array"));
    }
    Ok(clauses)
}

/// `path: value`, either an operator document or implicit equality.
fn parse_field(path: &str, value: RawBsonRef<'_>, clauses: &mut Vec<Expr>) -> Result<()> {
    let preds = match value {
        RawBsonRef::Document(doc) if is_operator_document(doc, false) => {
            parse_operators(path, doc)?
        }
        RawBsonRef::RegularExpression(_) => {
            regex_value(value)?.map(Pred::Regex).into_iter().collect()
        }
        _ => vec![Pred::Eq(comparable(value)?)],
    };
    clauses.extend(preds.into_iter().map(|pred| Expr::Path {
        path: path.to_owned(),
        pred,
    }));
    Ok(())
}

/// Whether a document is a list of operators (`{$gt: 1}`) rather than a
/// value to compare with. A DBRef (`{$ref, $id}`) is a value; inside
/// `$elemMatch` even a partial DBRef is.
pub(crate) fn is_operator_document(doc: &RawDocument, partial_dbref_is_value: bool) -> bool {
    let keys: Vec<&str> = doc
        .iter()
        .map_while(|item| item.ok().map(|(key, _)| key.as_str()))
        .collect();
    if !keys.first().is_some_and(|first| first.starts_with('$')) {
        return false;
    }
    let has = |name| keys.contains(&name);
    let dbref = if partial_dbref_is_value {
        has("$ref") || has("$id") || has("$db")
    } else {
        has("$ref") && has("$id")
    };
    !dbref
}

/// The operators of `{$gt: 1, $lt: 5}`, in order. `path` only appears in
/// messages.
fn parse_operators(path: &str, doc: &RawDocument) -> Result<Vec<Pred>> {
    if doc.get("$near")?.is_some() || doc.get("$nearSphere")?.is_some() {
        return Ok(vec![Pred::Geo(GeoPred(Arc::new(GeoTest::Near(
            parse_near(doc)?,
        ))))]);
    }
    let mut preds = Vec::new();
    // `$regex` and `$options` are one operator, wherever each stands.
    let (mut regex, mut options, mut regex_at) = (None, None, None);
    for item in doc.iter() {
        let (op, arg) = element(item)?;
        match op {
            "$regex" => {
                regex = Some(arg);
                regex_at.get_or_insert(preds.len());
            }
            "$options" => {
                options = Some(arg);
                regex_at.get_or_insert(preds.len());
            }
            _ => parse_operator(path, op, arg, &mut preds)?,
        }
    }
    if let Some(at) = regex_at {
        preds.insert(at, Pred::Regex(parse_regex_operator(regex, options)?));
    }
    Ok(preds)
}

fn parse_operator(path: &str, op: &str, arg: RawBsonRef<'_>, preds: &mut Vec<Pred>) -> Result<()> {
    let pred = match op {
        "$eq" => Pred::Eq(comparable(arg)?),
        "$ne" => {
            if matches!(arg, RawBsonRef::RegularExpression(_)) {
                return Err(Error::bad_value("Can't have regex as arg to $ne."));
            }
            Pred::Ne(comparable(arg)?)
        }
        "$gt" | "$gte" | "$lt" | "$lte" => {
            let value = comparable(arg)?;
            if matches!(arg, RawBsonRef::RegularExpression(_)) {
                return Err(Error::bad_value(format!(
                    "Can't have RegEx as arg to predicate over field '{path}'."
                )));
            }
            match op {
                "$gt" => Pred::Gt(value),
                "$gte" => Pred::Gte(value),
                "$lt" => Pred::Lt(value),
                _ => Pred::Lte(value),
            }
        }
        "$in" => parse_in(op, arg)?,
        "$nin" => match parse_in(op, arg)? {
            Pred::In(list) => Pred::Nin(list),
            any_of => Pred::Not(vec![any_of]),
        },
        "$exists" => Pred::Exists(truthy(arg)),
        "$not" => Pred::Not(parse_not(path, arg)?),
        "$all" => return parse_all(arg, preds),
        "$elemMatch" => Pred::ElemMatch(parse_elem_match(arg)?),
        "$size" => Pred::Size(parse_size(arg)?),
        "$mod" => parse_mod(arg)?,
        "$bitsAllSet" | "$bitsAllClear" | "$bitsAnySet" | "$bitsAnyClear" => {
            Pred::Bits(Bits::parse(op, arg)?)
        }
        "$type" => Pred::Type(parse_type(arg)?),
        "$regex" | "$options" => {
            let (regex, options) = if op == "$regex" {
                (Some(arg), None)
            } else {
                (None, Some(arg))
            };
            Pred::Regex(parse_regex_operator(regex, options)?)
        }
        "$where" => return Err(Error::bad_value("$where cannot be applied to a field")),
        "$geoWithin" | "$within" => {
            Pred::Geo(GeoPred(Arc::new(GeoTest::Within(geo::parse_region(arg)?))))
        }
        "$geoIntersects" => {
            let RawBsonRef::Document(spec) = arg else {
                return Err(Error::bad_value("$geoIntersects must be an object"));
            };
            let (Some(shape), 1) = (spec.get("$geometry")?, spec.iter().count()) else {
                return Err(Error::bad_value(
                    "$geoIntersects takes exactly one $geometry",
                ));
            };
            Pred::Geo(GeoPred(Arc::new(GeoTest::Intersects(
                geo::parse_query_geometry(shape)?,
            ))))
        }
        "$maxDistance" | "$minDistance" => {
            return Err(Error::bad_value(format!(
                "{op} must be with $near or $nearSphere"
            )));
        }
        _ if UNSUPPORTED_PATH_OPERATORS.contains(&op) => return Err(not_supported(op)),
        _ => return Err(Error::bad_value(format!("unknown operator: {op}"))),
    };
    preds.push(pred);
    Ok(())
}

/// A value a comparison may use: anything but `undefined`.
fn comparable(value: RawBsonRef<'_>) -> Result<RawBson> {
    if matches!(value, RawBsonRef::Undefined) {
        return Err(Error::bad_value("cannot compare to undefined"));
    }
    Ok(value.into())
}

/// `$in`: `In` of the listed values, or, when the list holds regexes,
/// `AnyOf` that and one `Regex` per regex.
fn parse_in(op: &str, arg: RawBsonRef<'_>) -> Result<Pred> {
    let RawBsonRef::Array(array) = arg else {
        return Err(Error::bad_value(format!("{op} needs an array")));
    };
    let mut list = Vec::new();
    let mut regexes = Vec::new();
    for item in elements(array) {
        match item {
            RawBsonRef::Document(doc) if is_operator_document(doc, false) => {
                return Err(Error::bad_value("cannot nest $ under $in"));
            }
            RawBsonRef::RegularExpression(_) => {
                regexes.extend(regex_value(item)?.map(Pred::Regex));
            }
            RawBsonRef::Undefined => {
                return Err(Error::bad_value(
                    "InMatchExpression equality cannot be undefined",
                ));
            }
            _ => list.push(item.into()),
        }
    }
    let list = InList::new(list);
    if regexes.is_empty() {
        return Ok(Pred::In(list));
    }
    regexes.insert(0, Pred::In(list));
    Ok(Pred::AnyOf(regexes))
}

fn parse_not(path: &str, arg: RawBsonRef<'_>) -> Result<Vec<Pred>> {
    match arg {
        RawBsonRef::RegularExpression(_) => {
            Ok(regex_value(arg)?.map(Pred::Regex).into_iter().collect())
        }
        RawBsonRef::Document(doc) if doc.is_empty() => {
            Err(Error::bad_value("$not cannot be empty"))
        }
        RawBsonRef::Document(doc) => parse_operators(path, doc),
        _ => Err(Error::bad_value("$not needs a regex or a document")),
    }
}

/// `$all`: equality with every listed value, or every listed `$elemMatch`.
fn parse_all(arg: RawBsonRef<'_>, preds: &mut Vec<Pred>) -> Result<()> {
    let RawBsonRef::Array(array) = arg else {
        return Err(Error::bad_value("$all needs an array"));
    };
    let mut items = elements(array).peekable();
    if items
        .peek()
        .and_then(|first| first_entry(*first))
        .is_some_and(|(key, _)| key == "$elemMatch")
    {
        for item in items {
            match first_entry(item) {
                Some(("$elemMatch", condition)) => {
                    preds.push(Pred::ElemMatch(parse_elem_match(condition)?));
                }
                _ => return Err(Error::bad_value("$all/$elemMatch has to be consistent")),
            }
        }
        return Ok(());
    }
    let mut values = Vec::new();
    let mut regexes = 0;
    for item in items {
        // A regex in `$all` must match some value, like any other entry.
        if let Some(regex) = regex_value(item)? {
            preds.push(Pred::Regex(regex));
            regexes += 1;
            continue;
        }
        if first_entry(item).is_some_and(|(key, _)| is_path_operator(key)) {
            return Err(Error::bad_value("no $ expressions in $all"));
        }
        values.push(comparable(item)?);
    }
    // An empty `$all` matches nothing; regexes alone need no `All`.
    if regexes == 0 || !values.is_empty() {
        preds.push(Pred::All(values));
    }
    Ok(())
}

/// The first key and value of a document value.
fn first_entry(value: RawBsonRef<'_>) -> Option<(&str, RawBsonRef<'_>)> {
    let RawBsonRef::Document(doc) = value else {
        return None;
    };
    let (key, value) = doc.iter().next()?.ok()?;
    Some((key.as_str(), value))
}

fn parse_elem_match(arg: RawBsonRef<'_>) -> Result<ElemMatch> {
    let RawBsonRef::Document(doc) = arg else {
        return Err(Error::bad_value("$elemMatch needs an Object"));
    };
    let first_is_top_level = first_entry(arg).is_some_and(|(key, _)| is_top_level_operator(key));
    if is_operator_document(doc, true) && !first_is_top_level {
        Ok(ElemMatch::Value(parse_operators("", doc)?))
    } else {
        Ok(ElemMatch::Document(Box::new(conjunction(parse_clauses(
            doc, None,
        )?))))
    }
}

/// `$mod: [divisor, remainder]`, both numbers, doubles truncated.
fn parse_mod(arg: RawBsonRef<'_>) -> Result<Pred> {
    let RawBsonRef::Array(array) = arg else {
        return Err(Error::bad_value("malformed mod, needs to be an array"));
    };
    let items: Vec<RawBsonRef<'_>> = elements(array).collect();
    let number = |i: usize, what: &str| -> Result<RawBsonRef<'_>> {
        match items.get(i) {
            None => Err(Error::bad_value("malformed mod, not enough elements")),
            Some(v) if number_as_f64(*v).is_some() => Ok(*v),
            Some(_) => Err(Error::bad_value(format!(
                "malformed mod, {what} not a number"
            ))),
        }
    };
    let divisor = number(0, "divisor")?;
    let remainder = number(1, "remainder")?;
    if items.len() > 2 {
        return Err(Error::bad_value("malformed mod, too many elements"));
    }
    let coerce = |v: RawBsonRef<'_>, what: &str| -> Result<i64> {
        let bad = |why: &str| {
            Error::bad_value(format!(
                "malformed mod, {what} value is invalid :: caused by :: {why}"
            ))
        };
        match v {
            RawBsonRef::Int32(n) => Ok(n.into()),
            RawBsonRef::Int64(n) => Ok(n),
            other => {
                let x = number_as_f64(other).unwrap_or(f64::NAN);
                if !x.is_finite() {
                    return Err(bad("Unable to coerce NaN/Inf to integral type"));
                }
                let x = x.trunc();
                if !(-9_223_372_036_854_775_808.0..9_223_372_036_854_775_808.0).contains(&x) {
                    return Err(bad("Out of bounds coercing to integral value"));
                }
                Ok(x as i64)
            }
        }
    };
    let divisor = coerce(divisor, "divisor")?;
    let remainder = coerce(remainder, "remainder")?;
    if divisor == 0 {
        return Err(Error::bad_value("divisor cannot be 0"));
    }
    Ok(Pred::Mod { divisor, remainder })
}

fn parse_size(arg: RawBsonRef<'_>) -> Result<i64> {
    let size = match arg {
        RawBsonRef::Int32(n) => i64::from(n),
        RawBsonRef::Int64(n) => match i32::try_from(n) {
            Ok(n) => i64::from(n),
            Err(_) => {
                return Err(Error::bad_value(
                    "$size must be representable as a 32-bit integer",
                ));
            }
        },
        RawBsonRef::Double(x) if f64::from(x as i32) == x => i64::from(x as i32),
        RawBsonRef::Double(_) => return Err(Error::bad_value("$size must be a whole number")),
        _ => return Err(Error::bad_value("$size needs a number")),
    };
    if size < 0 {
        return Err(Error::bad_value("$size may not be negative"));
    }
    Ok(size)
}

fn parse_type(arg: RawBsonRef<'_>) -> Result<TypeSet> {
    let mut types = TypeSet::default();
    match arg {
        RawBsonRef::Array(array) => {
            for item in elements(array) {
                add_type(item, &mut types)?;
            }
        }
        single => add_type(single, &mut types)?,
    }
    if !types.numbers && types.codes.is_empty() {
        return Err(Error::failed_to_parse("$type must match at least one type"));
    }
    Ok(types)
}

fn add_type(value: RawBsonRef<'_>, types: &mut TypeSet) -> Result<()> {
    if let RawBsonRef::String(alias) = value {
        return match alias {
            "number" => {
                types.numbers = true;
                Ok(())
            }
            "missing" => Err(Error::bad_value(
                "'missing' is not a legal type name. \
                 To query for non-existence of a field, use {$exists:false}.",
            )),
            _ => match TYPE_ALIASES.iter().find(|(name, _)| *name == alias) {
                Some((_, code)) => {
                    types.codes.push(*code);
                    Ok(())
                }
                None => Err(Error::bad_value(format!(
                    "Unknown type name alias: {alias}"
                ))),
            },
        };
    }
    let Some(number) = number_as_f64(value) else {
        return Err(Error::type_mismatch(
            "type must be represented as a number or a string",
        ));
    };
    let shown = format_number(number);
    match integer(value).and_then(|n| i32::try_from(n).ok()) {
        Some(0) => Err(Error::bad_value(format!(
            "Invalid numerical type code: {shown}. Instead use {{$exists:false}}."
        ))),
        Some(code) if code == -1 || code == 127 || (1..=19).contains(&code) => {
            types.codes.push(code);
            Ok(())
        }
        _ => Err(Error::bad_value(format!(
            "Invalid numerical type code: {shown}"
        ))),
    }
}

/// A number that is exactly an integer, as MongoDB reads integer arguments.
fn integer(value: RawBsonRef<'_>) -> Option<i64> {
    match value {
        RawBsonRef::Int32(n) => Some(i64::from(n)),
        RawBsonRef::Int64(n) => Some(n),
        other => {
            let x = number_as_f64(other)?;
            // 2^63 is the first double above every i64.
            let in_range = (-9_223_372_036_854_775_808.0..9_223_372_036_854_775_808.0).contains(&x);
            (in_range && x.fract() == 0.0).then_some(x as i64)
        }
    }
}

/// A number the way MongoDB prints one in a message.
fn format_number(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{}", x as i64)
    } else {
        format!("{x}")
    }
}

/// `{$near | $nearSphere: <point>, $maxDistance, $minDistance}`: a GeoJSON
/// point (`{$geometry, $maxDistance, $minDistance}` inside, in meters) or a
/// legacy pair (distances beside it: radians for `$nearSphere`, the
/// plane's units for `$near`).
fn parse_near(doc: &RawDocument) -> Result<Near> {
    let (mut op, mut point, mut min, mut max) = ("", None, None, None);
    for item in doc.iter() {
        let (name, arg) = element(item)?;
        match name {
            "$near" | "$nearSphere" if op.is_empty() => (op, point) = (name, Some(arg)),
            "$near" | "$nearSphere" => {
                return Err(Error::bad_value(
                    "Only one of $near and $nearSphere may be given",
                ));
            }
            "$maxDistance" => max = Some(distance(name, arg)?),
            "$minDistance" => min = Some(distance(name, arg)?),
            other => {
                return Err(Error::bad_value(format!(
                    "{other} cannot be combined with $near or $nearSphere"
                )));
            }
        }
    }
    let point = point.expect("a $near or $nearSphere");
    let inner = match point {
        RawBsonRef::Document(d) => d.get("$geometry")?.map(|g| (d, g)),
        _ => None,
    };
    let Some((inner, geometry)) = inner else {
        let center = geo::query_pair(point, op)?;
        return Ok(Near {
            center,
            geojson: false,
            spherical: op == "$nearSphere",
            min,
            max,
        });
    };
    if min.is_some() || max.is_some() {
        return Err(Error::bad_value(
            "invalid $near: with a GeoJSON point, $maxDistance and $minDistance go inside the \
             operator's object, beside $geometry",
        ));
    }
    for item in inner.iter() {
        let (name, arg) = element(item)?;
        match name {
            "$geometry" => {}
            "$maxDistance" => max = Some(distance(name, arg)?),
            "$minDistance" => min = Some(distance(name, arg)?),
            other => {
                return Err(Error::bad_value(format!(
                    "invalid argument in geo near query: {other}"
                )));
            }
        }
    }
    let center = match geo::parse_query_geometry(geometry)? {
        geo::Shape::Point(p) => p,
        _ => {
            return Err(Error::bad_value(
                "$near requires a point, given a GeoJSON shape that is not one",
            ));
        }
    };
    Ok(Near {
        center,
        geojson: true,
        spherical: true,
        min,
        max,
    })
}

/// A `$maxDistance` or `$minDistance`: a non-negative number.
fn distance(name: &str, arg: RawBsonRef<'_>) -> Result<f64> {
    match number_as_f64(arg) {
        Some(d) if d >= 0.0 && !d.is_nan() => Ok(d),
        Some(_) => Err(Error::bad_value(format!("{name} must be non-negative"))),
        None => Err(Error::bad_value(format!("{name} must be a number"))),
    }
}
