//! Query filters: parsing a MongoDB 7.0 filter document into an expression
//! tree, and testing documents against it.
//!
//! The tree is public so the planner can see which predicates an index can
//! serve; [`Filter::matches`] is the reference answer any plan must agree
//! with. Matching follows MongoDB's rules exactly: a predicate on a path is
//! tested against every candidate [`super::path`] yields, comparisons only
//! hold within one canonical type bracket, `null` also matches missing and
//! `undefined`, and `$ne`/`$nin`/`$not`/`$exists: false` negate the whole
//! path test rather than each candidate.
//!
//! Supported: `$eq $ne $gt $gte $lt $lte $in $nin $exists $not $all
//! $elemMatch $size $type $regex $mod $and $or $nor $comment $jsonSchema`
//! (regexes also as values, in `$in`/`$nin`/`$all` and under `$not`; the
//! schema itself is `crate::schema`'s), and `$expr`, whose aggregation
//! expression `pipeline::Expr` parses (in the command's [`Env`]: `$$NOW`,
//! `let`) and evaluates; matching is then fallible, as an expression can
//! fail on a document. String comparisons use the filter's collation.
//! `$where` is refused as mongod refuses it without JavaScript; `$text`,
//! geo and bit operators are rejected as not supported yet. This module
//! does not plan or read storage.

use std::cmp::Ordering;
use std::sync::Arc;

use bson::{RawArray, RawBson, RawBsonRef, RawDocument};

use super::in_list::InList;
use super::path::{LeafArray, any_candidate, elements};
use super::regex::Regex;
use super::value::{TYPE_ALIASES, element, is_nan, number_as_f64, truthy, type_code};
use crate::encoding::bracket::canonical_type;
use crate::encoding::cmp::Cmp;
use crate::encoding::collation::Collation;
use crate::error::{Error, ErrorKind, Result};
use crate::pipeline::{Env, Expr as AggExpr};
use crate::schema::JsonSchema;

/// A parsed filter, with the collation its string comparisons use.
#[derive(Debug, Clone, PartialEq)]
pub struct Filter {
    root: Expr,
    collation: Option<Arc<Collation>>,
}

/// A node of the filter tree.
#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    /// Every child matches; an empty `And` matches every document.
    And(Vec<Expr>),
    /// Some child matches.
    Or(Vec<Expr>),
    /// No child matches.
    Nor(Vec<Expr>),
    /// The predicate holds for the value(s) at a dotted path.
    Path { path: String, pred: Pred },
    /// Matches every document (`$alwaysTrue`).
    AlwaysTrue,
    /// Matches no document (`$alwaysFalse`).
    AlwaysFalse,
    /// The document satisfies a `$jsonSchema`.
    JsonSchema(Arc<JsonSchema>),
    /// `$expr`: an aggregation expression that must be true.
    Expr(ExprClause),
}

/// The expression of a `$expr` clause, with the specification it was parsed
/// from (what explain shows, and what two clauses compare by).
#[derive(Debug, Clone)]
pub struct ExprClause {
    pub spec: RawBson,
    pub expr: AggExpr,
}

impl PartialEq for ExprClause {
    fn eq(&self, other: &Self) -> bool {
        self.spec == other.spec
    }
}

/// A predicate on the value(s) at one path.
#[derive(Debug, Clone, PartialEq)]
pub enum Pred {
    Eq(RawBson),
    /// Not `Eq`, over the whole path.
    Ne(RawBson),
    Gt(RawBson),
    Gte(RawBson),
    Lt(RawBson),
    Lte(RawBson),
    /// Equal to one of the values; a `null` in the list also matches
    /// missing and `undefined`.
    In(InList),
    /// Not `In`, over the whole path.
    Nin(InList),
    Exists(bool),
    /// None of: all of these predicates hold (`$not: {$gt: 1, $lt: 5}`).
    Not(Vec<Pred>),
    /// Equal to every one of the values; never matches when empty.
    All(Vec<RawBson>),
    /// An array with an element matching the condition.
    ElemMatch(ElemMatch),
    /// An array with exactly this many elements.
    Size(i64),
    /// A number whose truncated value modulo `divisor` is `remainder`.
    Mod {
        divisor: i64,
        remainder: i64,
    },
    /// A value of one of the types.
    Type(TypeSet),
    /// A string or symbol the regex matches, or an equal regex value.
    Regex(Regex),
    /// Some of these predicates holds: `$in` with regexes in its list.
    AnyOf(Vec<Pred>),
}

/// The condition of an `$elemMatch`.
#[derive(Debug, Clone, PartialEq)]
pub enum ElemMatch {
    /// `{$elemMatch: {b: 1, c: {$gt: 2}}}`: an element that is a document
    /// (or an array, read as one) matching the filter.
    Document(Box<Expr>),
    /// `{$elemMatch: {$gt: 1, $lt: 5}}`: an element satisfying every
    /// predicate itself.
    Value(Vec<Pred>),
}

/// The types a `$type` predicate accepts, by BSON type number (`-1` is
/// MinKey, `127` MaxKey).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TypeSet {
    /// The `"number"` alias: every numeric type.
    pub numbers: bool,
    pub codes: Vec<i32>,
}

impl Filter {
    /// Parses a filter document, rejecting what MongoDB 7.0 rejects; a
    /// `$expr` sees `$$NOW` taken now and no `let` variables.
    pub fn parse(filter: &RawDocument) -> Result<Filter> {
        Filter::parse_in(filter, &Env::new(bson::DateTime::now()))
    }

    /// Parses a filter document in a command's environment (`$$NOW`, `let`).
    pub fn parse_in(filter: &RawDocument, env: &Env) -> Result<Filter> {
        Ok(Filter {
            root: conjunction(parse_clauses(filter, Some(env))?),
            collation: None,
        })
    }

    /// The filter comparing strings by `collation` (`None`: as bytes).
    pub fn collated(mut self, collation: Option<Arc<Collation>>) -> Filter {
        self.collation = collation;
        self
    }

    pub fn collation(&self) -> Option<&Arc<Collation>> {
        self.collation.as_ref()
    }

    /// The comparator of this filter's collation.
    pub fn cmp(&self) -> Cmp<'_> {
        Cmp::new(self.collation.as_deref())
    }

    /// Whether the document matches; fails only when a `$expr` fails on it.
    pub fn matches(&self, doc: &RawDocument) -> Result<bool> {
        self.root.matches(doc, self.cmp())
    }

    /// Whether the filter uses `$expr` anywhere (partial index filters may
    /// not).
    pub fn has_expr(&self) -> bool {
        fn walk(e: &Expr) -> bool {
            match e {
                Expr::Expr(_) => true,
                Expr::And(c) | Expr::Or(c) | Expr::Nor(c) => c.iter().any(walk),
                _ => false,
            }
        }
        walk(&self.root)
    }

    pub fn root(&self) -> &Expr {
        &self.root
    }

    /// The predicates ANDed at the top level (flattening `$and`), as
    /// (path, predicate) pairs: what an index can serve.
    pub fn top_level_predicates(&self) -> Vec<(&str, &Pred)> {
        let mut found = Vec::new();
        collect_conjuncts(&self.root, &mut found);
        found
    }

    /// The error of a regex that ran out of backtracking budget while this
    /// filter matched documents (those matches counted as no match, so
    /// the query must report it rather than return a short answer).
    pub fn failure(&self) -> Option<Error> {
        let mut found = None;
        self.root.visit_regexes(&mut |r| {
            if found.is_none() {
                found = r.failure();
            }
        });
        found
    }

    /// Whether the filter has no predicate at all (matches every document).
    pub fn is_empty(&self) -> bool {
        matches!(&self.root, Expr::And(children) if children.is_empty())
    }

    /// The `_id` of a point lookup: `Some` when the filter is exactly
    /// `{_id: v}` or `{_id: {$eq: v}}` for a scalar `v` (not an array,
    /// document, null or regex).
    pub fn id_equality(&self) -> Option<RawBsonRef<'_>> {
        let Expr::Path {
            path,
            pred: Pred::Eq(value),
        } = &self.root
        else {
            return None;
        };
        let point = !matches!(
            value,
            RawBson::Array(_)
                | RawBson::Document(_)
                | RawBson::Null
                | RawBson::Undefined
                | RawBson::RegularExpression(_)
        );
        (path == "_id" && point).then(|| value.as_raw_bson_ref())
    }
}

fn collect_conjuncts<'a>(expr: &'a Expr, found: &mut Vec<(&'a str, &'a Pred)>) {
    match expr {
        Expr::And(children) => children.iter().for_each(|c| collect_conjuncts(c, found)),
        Expr::Path { path, pred } => found.push((path, pred)),
        _ => {}
    }
}

impl Expr {
    fn visit_regexes(&self, f: &mut dyn FnMut(&Regex)) {
        match self {
            Expr::And(c) | Expr::Or(c) | Expr::Nor(c) => c.iter().for_each(|e| e.visit_regexes(f)),
            Expr::Path { pred, .. } => pred.visit_regexes(f),
            // A schema's patterns are its own (`schema::pattern`).
            Expr::AlwaysTrue | Expr::AlwaysFalse | Expr::JsonSchema(_) | Expr::Expr(_) => {}
        }
    }

    /// Whether the document matches this node.
    pub fn matches(&self, doc: &RawDocument, cmp: Cmp<'_>) -> Result<bool> {
        Ok(match self {
            Expr::And(children) => {
                for c in children {
                    if !c.matches(doc, cmp)? {
                        return Ok(false);
                    }
                }
                true
            }
            Expr::Or(children) => {
                for c in children {
                    if c.matches(doc, cmp)? {
                        return Ok(true);
                    }
                }
                false
            }
            Expr::Nor(children) => {
                for c in children {
                    if c.matches(doc, cmp)? {
                        return Ok(false);
                    }
                }
                true
            }
            Expr::Path { path, pred } => pred.matches_at(doc, path, cmp),
            Expr::AlwaysTrue => true,
            Expr::AlwaysFalse => false,
            Expr::JsonSchema(schema) => schema.matches(doc),
            Expr::Expr(clause) => clause.expr.truthy_with(doc, &|a, b| cmp.values(a, b))?,
        })
    }

    /// Whether a document inside `$elemMatch` matches. `$expr` is refused
    /// below the top level, so nothing here can fail.
    fn matches_nested(&self, doc: &RawDocument, cmp: Cmp<'_>) -> bool {
        self.matches(doc, cmp).unwrap_or(false)
    }
}

impl Pred {
    fn visit_regexes(&self, f: &mut dyn FnMut(&Regex)) {
        match self {
            Pred::Regex(r) => f(r),
            Pred::Not(preds) | Pred::AnyOf(preds) => preds.iter().for_each(|p| p.visit_regexes(f)),
            Pred::ElemMatch(ElemMatch::Document(e)) => e.visit_regexes(f),
            Pred::ElemMatch(ElemMatch::Value(preds)) => {
                preds.iter().for_each(|p| p.visit_regexes(f))
            }
            _ => {}
        }
    }

    /// Whether the predicate holds at `path` in `doc`. Negations apply to
    /// the path as a whole: `{a: {$ne: 1}}` rejects `a: [1, 2]`.
    pub fn matches_at(&self, doc: &RawDocument, path: &str, cmp: Cmp<'_>) -> bool {
        let holds_for_some = |test: &mut dyn FnMut(Option<RawBsonRef<'_>>) -> bool| -> bool {
            any_candidate(doc, path, LeafArray::Elements, test)
        };
        match self {
            Pred::Ne(value) => !holds_for_some(&mut |c| compare(Op::Eq, value, c, cmp)),
            Pred::Nin(list) => !holds_for_some(&mut |c| in_list(list, c, cmp)),
            Pred::Exists(false) => !holds_for_some(&mut |c| c.is_some()),
            Pred::Not(preds) => !preds.iter().all(|p| p.matches_at(doc, path, cmp)),
            Pred::AnyOf(preds) => preds.iter().any(|p| p.matches_at(doc, path, cmp)),
            Pred::All(values) => {
                !values.is_empty()
                    && values
                        .iter()
                        .all(|v| holds_for_some(&mut |c| compare(Op::Eq, v, c, cmp)))
            }
            // Array predicates look at an array at the end of the path
            // whole, never at its elements.
            Pred::ElemMatch(_) | Pred::Size(_) => {
                any_candidate(doc, path, LeafArray::Whole, &mut |c| {
                    self.matches_value(c, cmp)
                })
            }
            _ => holds_for_some(&mut |c| self.matches_value(c, cmp)),
        }
    }

    /// Whether the predicate holds for one candidate value (`None` is a
    /// missing value). This is how predicates inside `$elemMatch` see each
    /// element.
    pub fn matches_value(&self, candidate: Option<RawBsonRef<'_>>, cmp: Cmp<'_>) -> bool {
        match self {
            Pred::Eq(v) => compare(Op::Eq, v, candidate, cmp),
            Pred::Ne(v) => !compare(Op::Eq, v, candidate, cmp),
            Pred::Gt(v) => compare(Op::Gt, v, candidate, cmp),
            Pred::Gte(v) => compare(Op::Gte, v, candidate, cmp),
            Pred::Lt(v) => compare(Op::Lt, v, candidate, cmp),
            Pred::Lte(v) => compare(Op::Lte, v, candidate, cmp),
            Pred::In(list) => in_list(list, candidate, cmp),
            Pred::Nin(list) => !in_list(list, candidate, cmp),
            Pred::Exists(exists) => candidate.is_some() == *exists,
            Pred::Not(preds) => !preds.iter().all(|p| p.matches_value(candidate, cmp)),
            Pred::All(values) => {
                !values.is_empty() && values.iter().all(|v| compare(Op::Eq, v, candidate, cmp))
            }
            Pred::ElemMatch(condition) => match candidate {
                Some(RawBsonRef::Array(array)) => condition.matches_array(array, cmp),
                _ => false,
            },
            Pred::Size(size) => match candidate {
                Some(RawBsonRef::Array(array)) => elements(array).count() as i64 == *size,
                _ => false,
            },
            Pred::Mod { divisor, remainder } => candidate
                .and_then(truncated_number)
                .is_some_and(|n| n.checked_rem(*divisor).unwrap_or(0) == *remainder),
            Pred::Type(types) => candidate.is_some_and(|v| types.contains(v)),
            Pred::Regex(regex) => match candidate {
                Some(RawBsonRef::String(s) | RawBsonRef::Symbol(s)) => regex.is_match(s),
                Some(RawBsonRef::RegularExpression(r)) => {
                    r.pattern.as_str() == regex.pattern() && r.options.as_str() == regex.options()
                }
                _ => false,
            },
            Pred::AnyOf(preds) => preds.iter().any(|p| p.matches_value(candidate, cmp)),
        }
    }
}

impl ElemMatch {
    /// Whether some element of the array satisfies the condition.
    pub fn matches_array(&self, array: &RawArray, cmp: Cmp<'_>) -> bool {
        elements(array).any(|element| self.matches_element(element, cmp))
    }

    /// Whether one element satisfies the condition.
    pub fn matches_element(&self, element: RawBsonRef<'_>, cmp: Cmp<'_>) -> bool {
        match self {
            ElemMatch::Document(filter) => match element {
                RawBsonRef::Document(doc) => filter.matches_nested(doc, cmp),
                RawBsonRef::Array(inner) => RawDocument::from_bytes(inner.as_bytes())
                    .is_ok_and(|doc| filter.matches_nested(doc, cmp)),
                _ => false,
            },
            ElemMatch::Value(preds) => preds.iter().all(|p| p.matches_value(Some(element), cmp)),
        }
    }
}

impl TypeSet {
    /// Whether the value is of one of the types.
    pub fn contains(&self, value: RawBsonRef<'_>) -> bool {
        (self.numbers && number_as_f64(value).is_some()) || self.codes.contains(&type_code(value))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Eq,
    Gt,
    Gte,
    Lt,
    Lte,
}

/// MongoDB's comparison of one candidate with an operand. Values of
/// different type brackets never compare, except that null, undefined and
/// missing are equal to each other, and MinKey/MaxKey operands bound
/// everything. NaN equals only NaN and is otherwise unordered.
fn compare(op: Op, operand: &RawBson, candidate: Option<RawBsonRef<'_>>, cmp: Cmp<'_>) -> bool {
    let operand = operand.as_raw_bson_ref();
    // A missing value sits in undefined's bracket.
    let value = candidate.unwrap_or(RawBsonRef::Undefined);
    let (value_type, operand_type) = (canonical_type(&value), canonical_type(&operand));
    if value_type != operand_type {
        let nullish = |t| {
            t == canonical_type(&RawBsonRef::Null) || t == canonical_type(&RawBsonRef::Undefined)
        };
        if nullish(value_type) && nullish(operand_type) {
            return matches!(op, Op::Eq | Op::Gte | Op::Lte);
        }
        return match operand {
            RawBsonRef::MaxKey => matches!(op, Op::Lt | Op::Lte),
            RawBsonRef::MinKey => matches!(op, Op::Gt | Op::Gte),
            _ => false,
        };
    }
    if op != Op::Eq && (is_nan(value) || is_nan(operand)) {
        return matches!(op, Op::Gte | Op::Lte) && is_nan(value) && is_nan(operand);
    }
    let order = cmp.values(value, operand);
    match op {
        Op::Eq => order == Ordering::Equal,
        Op::Gt => order == Ordering::Greater,
        Op::Gte => order != Ordering::Less,
        Op::Lt => order == Ordering::Less,
        Op::Lte => order != Ordering::Greater,
    }
}

/// `$in` for one candidate: equal to a listed value, or missing/undefined
/// when the list holds null.
fn in_list(list: &InList, candidate: Option<RawBsonRef<'_>>, cmp: Cmp<'_>) -> bool {
    let nullish = matches!(candidate, None | Some(RawBsonRef::Undefined));
    if nullish && list.has_null() {
        return true;
    }
    candidate.is_some_and(|value| list.contains(value, cmp))
}

// ---- parsing ----

/// Top-level operators MongoDB knows but ebb does not evaluate yet.
const UNSUPPORTED_TOP_LEVEL: &[&str] = &["$text", "$sampleRate"];

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
            | "$where"
    ) || UNSUPPORTED_TOP_LEVEL.contains(&name)
}

/// Path operators MongoDB knows but ebb does not evaluate yet.
const UNSUPPORTED_PATH_OPERATORS: &[&str] = &[
    "$bitsAllSet",
    "$bitsAllClear",
    "$bitsAnySet",
    "$bitsAnyClear",
    "$geoWithin",
    "$within",
    "$geoIntersects",
    "$near",
    "$nearSphere",
    "$geoNear",
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
    ) || UNSUPPORTED_PATH_OPERATORS.contains(&name)
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
        "$nor" => Expr::Nor(parse_logical(name, value, env)?),
        "$comment" => return Ok(None),
        "$expr" => match env {
            Some(env) => Expr::Expr(ExprClause {
                spec: value.into(),
                expr: AggExpr::parse_in(value, env)?,
            }),
            None => return Err(top_level_only(name)),
        },
        // ebb runs no JavaScript: mongod answers this way when server-side
        // scripting is disabled.
        "$where" => match env {
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

/// A candidate for `$mod`: a finite number truncated toward zero (doubles
/// beyond `i64` saturate, as mongod's coercion does).
fn truncated_number(v: RawBsonRef<'_>) -> Option<i64> {
    match v {
        RawBsonRef::Int32(n) => Some(n.into()),
        RawBsonRef::Int64(n) => Some(n),
        other => number_as_f64(other)
            .filter(|x| x.is_finite())
            .map(|x| x as i64),
    }
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

#[cfg(test)]
mod tests {
    use bson::{RawBson, RawDocumentBuf, Regex, rawdoc};

    use super::*;
    use crate::error::ErrorKind;

    fn matches(filter: RawDocumentBuf, doc: RawDocumentBuf) -> bool {
        Filter::parse(&filter).unwrap().matches(&doc).unwrap()
    }

    /// Runs (filter, document, expected) cases, naming the failing one.
    fn check(cases: Vec<(RawDocumentBuf, RawDocumentBuf, bool)>) {
        for (filter, doc, expected) in cases {
            assert_eq!(
                matches(filter.clone(), doc.clone()),
                expected,
                "filter {filter:?} on {doc:?}"
            );
        }
    }

    fn error(filter: RawDocumentBuf) -> Error {
        Filter::parse(&filter).unwrap_err()
    }

    fn regex() -> Regex {
        Regex {
            pattern: "x".to_owned().try_into().unwrap(),
            options: String::new().try_into().unwrap(),
        }
    }

    fn decimal(text: &str) -> RawBson {
        RawBson::Decimal128(text.parse().unwrap())
    }

    #[test]
    fn equality_holds_across_numeric_types() {
        check(vec![
            (rawdoc! { "a": 1 }, rawdoc! { "a": 1.0 }, true),
            (rawdoc! { "a": 1 }, rawdoc! { "a": 1_i64 }, true),
            (rawdoc! { "a": 1 }, rawdoc! { "a": decimal("1.0") }, true),
            (rawdoc! { "a": 1.5 }, rawdoc! { "a": 1 }, false),
            (rawdoc! { "a": 1 }, rawdoc! { "a": "1" }, false),
            (
                rawdoc! { "a": { "$eq": 2_i64 } },
                rawdoc! { "a": [1, 2.0] },
                true,
            ),
        ]);
    }

    #[test]
    fn comparisons_stay_within_a_type_bracket() {
        let gt5 = || rawdoc! { "a": { "$gt": 5 } };
        check(vec![
            (gt5(), rawdoc! { "a": 6 }, true),
            (gt5(), rawdoc! { "a": 5.0 }, false),
            (gt5(), rawdoc! { "a": "abc" }, false),
            (gt5(), rawdoc! { "a": true }, false),
            (gt5(), rawdoc! { "a": [1, 10] }, true),
            (gt5(), rawdoc! { "a": [1, 2] }, false),
            (gt5(), rawdoc! {}, false),
            (rawdoc! { "a": { "$lt": "b" } }, rawdoc! { "a": "a" }, true),
            (rawdoc! { "a": { "$lt": "b" } }, rawdoc! { "a": 1 }, false),
            (
                rawdoc! { "a": { "$gte": 5, "$lte": 5 } },
                rawdoc! { "a": 5_i64 },
                true,
            ),
            (
                rawdoc! { "a": { "$gt": [1] } },
                rawdoc! { "a": [1, 10] },
                true,
            ),
        ]);
    }

    #[test]
    fn null_matches_null_missing_and_undefined() {
        let null = || rawdoc! { "a": null };
        check(vec![
            (null(), rawdoc! { "a": null }, true),
            (null(), rawdoc! {}, true),
            (null(), rawdoc! { "a": RawBson::Undefined }, true),
            (null(), rawdoc! { "a": [1, null] }, true),
            (null(), rawdoc! { "a": [1] }, false),
            (null(), rawdoc! { "a": 0 }, false),
            (rawdoc! { "a": { "$gte": null } }, rawdoc! {}, true),
            (rawdoc! { "a": { "$gt": null } }, rawdoc! {}, false),
            (rawdoc! { "a": { "$ne": null } }, rawdoc! {}, false),
            (
                rawdoc! { "a": { "$ne": null } },
                rawdoc! { "a": RawBson::Undefined },
                false,
            ),
        ]);
    }

    #[test]
    fn dotted_null_follows_documents_in_arrays_only() {
        let null = || rawdoc! { "a.b": null };
        check(vec![
            (null(), rawdoc! { "a": {} }, true),
            (null(), rawdoc! { "a": 4 }, true),
            (null(), rawdoc! { "a": [{ "b": 3 }, {}] }, true),
            (null(), rawdoc! { "a": [{ "b": 3 }] }, false),
            (null(), rawdoc! { "a": [null, null] }, false),
            (null(), rawdoc! { "a": [] }, false),
            (
                rawdoc! { "a.b": { "$ne": null } },
                rawdoc! { "a": [] },
                true,
            ),
        ]);
    }

    #[test]
    fn arrays_match_by_element_or_as_a_whole() {
        check(vec![
            (
                rawdoc! { "tags": "x" },
                rawdoc! { "tags": ["x", "y"] },
                true,
            ),
            (
                rawdoc! { "tags": ["x", "y"] },
                rawdoc! { "tags": ["x", "y"] },
                true,
            ),
            (
                rawdoc! { "tags": ["y", "x"] },
                rawdoc! { "tags": ["x", "y"] },
                false,
            ),
            (rawdoc! { "a": 1 }, rawdoc! { "a": [[1]] }, false),
            (rawdoc! { "a": [1] }, rawdoc! { "a": [[1]] }, true),
            (rawdoc! { "a": [1] }, rawdoc! { "a": [1] }, true),
            (rawdoc! { "a": [] }, rawdoc! { "a": [[], 1] }, true),
        ]);
    }

    #[test]
    fn embedded_documents_compare_exactly() {
        let filter = || rawdoc! { "a": { "b": 1, "c": 2 } };
        check(vec![
            (filter(), rawdoc! { "a": { "b": 1, "c": 2 } }, true),
            (filter(), rawdoc! { "a": { "b": 1.0, "c": 2_i64 } }, true),
            (filter(), rawdoc! { "a": { "c": 2, "b": 1 } }, false),
            (filter(), rawdoc! { "a": { "b": 1, "c": 2, "d": 3 } }, false),
            (filter(), rawdoc! { "a": [{ "b": 1, "c": 2 }] }, true),
        ]);
    }

    #[test]
    fn dotted_paths_reach_into_documents_and_arrays() {
        check(vec![
            (
                rawdoc! { "a.b.c": 1 },
                rawdoc! { "a": { "b": { "c": 1 } } },
                true,
            ),
            (
                rawdoc! { "a.b": 1 },
                rawdoc! { "a": [{ "b": 2 }, { "b": 1 }] },
                true,
            ),
            (rawdoc! { "a.b": 1 }, rawdoc! { "a": [[{ "b": 1 }]] }, false),
            (rawdoc! { "a.0": 5 }, rawdoc! { "a": [5, 6] }, true),
            (rawdoc! { "a.1": 5 }, rawdoc! { "a": [5, 6] }, false),
            (
                rawdoc! { "a.1.b": 2 },
                rawdoc! { "a": [{ "b": 1 }, { "b": 2 }] },
                true,
            ),
            (
                rawdoc! { "a.0.b": 1 },
                rawdoc! { "a": [[{ "b": 1 }]] },
                true,
            ),
            (rawdoc! { "a.b": 1 }, rawdoc! { "a": 1 }, false),
        ]);
    }

    #[test]
    fn ne_and_nin_negate_the_whole_path() {
        check(vec![
            (
                rawdoc! { "a": { "$ne": 1 } },
                rawdoc! { "a": [1, 2] },
                false,
            ),
            (rawdoc! { "a": { "$ne": 1 } }, rawdoc! { "a": [2, 3] }, true),
            (rawdoc! { "a": { "$ne": 1 } }, rawdoc! {}, true),
            (
                rawdoc! { "a": { "$ne": [1, 2] } },
                rawdoc! { "a": [1, 2] },
                false,
            ),
            (rawdoc! { "a": { "$nin": [1, 2] } }, rawdoc! {}, true),
            (
                rawdoc! { "a": { "$nin": [1, 2] } },
                rawdoc! { "a": [3] },
                true,
            ),
            (
                rawdoc! { "a": { "$nin": [1, 2] } },
                rawdoc! { "a": [2, 3] },
                false,
            ),
            (rawdoc! { "a": { "$nin": [null] } }, rawdoc! {}, false),
        ]);
    }

    #[test]
    fn in_matches_any_listed_value() {
        check(vec![
            (
                rawdoc! { "a": { "$in": [1, "x"] } },
                rawdoc! { "a": "x" },
                true,
            ),
            (
                rawdoc! { "a": { "$in": [1, "x"] } },
                rawdoc! { "a": 1.0 },
                true,
            ),
            (
                rawdoc! { "a": { "$in": [1, "x"] } },
                rawdoc! { "a": [3, 1] },
                true,
            ),
            (
                rawdoc! { "a": { "$in": [1, "x"] } },
                rawdoc! { "a": 2 },
                false,
            ),
            (
                rawdoc! { "a": { "$in": [[1, 2]] } },
                rawdoc! { "a": [1, 2] },
                true,
            ),
            (rawdoc! { "a": { "$in": [null] } }, rawdoc! {}, true),
            (
                rawdoc! { "a": { "$in": [null] } },
                rawdoc! { "a": RawBson::Undefined },
                true,
            ),
            (rawdoc! { "a": { "$in": [] } }, rawdoc! { "a": 1 }, false),
        ]);
    }

    #[test]
    fn exists_tests_presence() {
        check(vec![
            (
                rawdoc! { "a": { "$exists": true } },
                rawdoc! { "a": null },
                true,
            ),
            (rawdoc! { "a": { "$exists": true } }, rawdoc! {}, false),
            (rawdoc! { "a": { "$exists": false } }, rawdoc! {}, true),
            (rawdoc! { "a": { "$exists": 0 } }, rawdoc! { "a": 1 }, false),
            (
                rawdoc! { "a": { "$exists": true } },
                rawdoc! { "a": [] },
                true,
            ),
            (
                rawdoc! { "a.b": { "$exists": false } },
                rawdoc! { "a": [1] },
                true,
            ),
            (
                rawdoc! { "a.b": { "$exists": true } },
                rawdoc! { "a": [{ "b": 1 }] },
                true,
            ),
        ]);
    }

    #[test]
    fn not_negates_the_whole_path_and_matches_missing() {
        let not_gt5 = || rawdoc! { "a": { "$not": { "$gt": 5 } } };
        check(vec![
            (not_gt5(), rawdoc! {}, true),
            (not_gt5(), rawdoc! { "a": 3 }, true),
            (not_gt5(), rawdoc! { "a": "x" }, true),
            (not_gt5(), rawdoc! { "a": 6 }, false),
            (not_gt5(), rawdoc! { "a": [1, 6] }, false),
            (
                rawdoc! { "a": { "$not": { "$gt": 1, "$lt": 5 } } },
                rawdoc! { "a": 3 },
                false,
            ),
            (
                rawdoc! { "a": { "$not": { "$gt": 1, "$lt": 5 } } },
                rawdoc! { "a": 7 },
                true,
            ),
        ]);
    }

    #[test]
    fn all_needs_every_value() {
        check(vec![
            (
                rawdoc! { "a": { "$all": [1, 2] } },
                rawdoc! { "a": [2, 3, 1] },
                true,
            ),
            (
                rawdoc! { "a": { "$all": [1, 2] } },
                rawdoc! { "a": [1] },
                false,
            ),
            (rawdoc! { "a": { "$all": [1] } }, rawdoc! { "a": 1 }, true),
            (rawdoc! { "a": { "$all": [] } }, rawdoc! { "a": [] }, false),
            (
                rawdoc! { "a": { "$all": [[1, 2]] } },
                rawdoc! { "a": [1, 2] },
                true,
            ),
            (
                rawdoc! { "a": { "$all": [[1, 2]] } },
                rawdoc! { "a": [[1, 2], 3] },
                true,
            ),
            (
                rawdoc! { "a": { "$all": [
                    { "$elemMatch": { "b": 1 } },
                    { "$elemMatch": { "c": 2 } },
                ] } },
                rawdoc! { "a": [{ "b": 1 }, { "c": 2 }] },
                true,
            ),
            (
                rawdoc! { "a": { "$all": [{ "$elemMatch": { "b": 1, "c": 2 } }] } },
                rawdoc! { "a": [{ "b": 1 }, { "c": 2 }] },
                false,
            ),
        ]);
    }

    #[test]
    fn elem_match_needs_one_element_to_satisfy_everything() {
        let doc = || rawdoc! { "a": [{ "b": 1, "c": 2 }, { "b": 2, "c": 1 }] };
        check(vec![
            (rawdoc! { "a.b": 1, "a.c": 1 }, doc(), true),
            (
                rawdoc! { "a": { "$elemMatch": { "b": 1, "c": 1 } } },
                doc(),
                false,
            ),
            (
                rawdoc! { "a": { "$elemMatch": { "b": 1, "c": 2 } } },
                doc(),
                true,
            ),
            (
                rawdoc! { "a": { "$gt": 1, "$lt": 3 } },
                rawdoc! { "a": [0, 5] },
                true,
            ),
            (
                rawdoc! { "a": { "$elemMatch": { "$gt": 1, "$lt": 3 } } },
                rawdoc! { "a": [0, 5] },
                false,
            ),
            (
                rawdoc! { "a": { "$elemMatch": { "$gt": 1, "$lt": 3 } } },
                rawdoc! { "a": [0, 2] },
                true,
            ),
            (
                rawdoc! { "a": { "$elemMatch": { "$gt": 1 } } },
                rawdoc! { "a": 5 },
                false,
            ),
            (
                rawdoc! { "a": { "$elemMatch": { "$eq": 1 } } },
                rawdoc! { "a": [[1]] },
                false,
            ),
            (
                rawdoc! { "a": { "$elemMatch": { "$elemMatch": { "$eq": 1 } } } },
                rawdoc! { "a": [[1]] },
                true,
            ),
            // An array element is read as a document; `[]` has no `b`.
            (
                rawdoc! { "a": { "$elemMatch": { "b": null } } },
                rawdoc! { "a": [[]] },
                true,
            ),
            (
                rawdoc! { "a": { "$elemMatch": {} } },
                rawdoc! { "a": [1, {}] },
                true,
            ),
            (
                rawdoc! { "a": { "$elemMatch": {} } },
                rawdoc! { "a": [1] },
                false,
            ),
            (
                rawdoc! { "a": { "$elemMatch": { "$or": [{ "b": 5 }, { "c": 5 }] } } },
                rawdoc! { "a": [{ "c": 5 }] },
                true,
            ),
            (
                rawdoc! { "a.b": { "$elemMatch": { "$eq": 1 } } },
                rawdoc! { "a": [{ "b": [2] }, { "b": [1] }] },
                true,
            ),
        ]);
    }

    #[test]
    fn size_counts_the_array_itself() {
        check(vec![
            (
                rawdoc! { "a": { "$size": 2 } },
                rawdoc! { "a": [1, 2] },
                true,
            ),
            (
                rawdoc! { "a": { "$size": 2 } },
                rawdoc! { "a": [[1, 2]] },
                false,
            ),
            (
                rawdoc! { "a": { "$size": 1 } },
                rawdoc! { "a": [[1, 2]] },
                true,
            ),
            (rawdoc! { "a": { "$size": 0 } }, rawdoc! { "a": [] }, true),
            (rawdoc! { "a": { "$size": 0 } }, rawdoc! {}, false),
            (
                rawdoc! { "a": { "$size": 2.0 } },
                rawdoc! { "a": [1, 2] },
                true,
            ),
            (
                rawdoc! { "a.b": { "$size": 1 } },
                rawdoc! { "a": [{ "b": [1] }] },
                true,
            ),
        ]);
    }

    #[test]
    fn type_matches_values_and_array_elements() {
        check(vec![
            (
                rawdoc! { "a": { "$type": "string" } },
                rawdoc! { "a": "x" },
                true,
            ),
            (
                rawdoc! { "a": { "$type": "string" } },
                rawdoc! { "a": [1, "x"] },
                true,
            ),
            (
                rawdoc! { "a": { "$type": "array" } },
                rawdoc! { "a": [1] },
                true,
            ),
            (
                rawdoc! { "a": { "$type": "array" } },
                rawdoc! { "a": 1 },
                false,
            ),
            (
                rawdoc! { "a": { "$type": "number" } },
                rawdoc! { "a": 1.5 },
                true,
            ),
            (rawdoc! { "a": { "$type": 16 } }, rawdoc! { "a": 1 }, true),
            (
                rawdoc! { "a": { "$type": 16 } },
                rawdoc! { "a": 1_i64 },
                false,
            ),
            (
                rawdoc! { "a": { "$type": ["long", 2.0] } },
                rawdoc! { "a": "s" },
                true,
            ),
            (rawdoc! { "a": { "$type": "null" } }, rawdoc! {}, false),
            (
                rawdoc! { "a": { "$type": -1 } },
                rawdoc! { "a": RawBson::MinKey },
                true,
            ),
            (
                rawdoc! { "a": { "$type": "maxKey" } },
                rawdoc! { "a": RawBson::MaxKey },
                true,
            ),
        ]);
    }

    #[test]
    fn logical_operators_combine_clauses() {
        check(vec![
            (
                rawdoc! { "$and": [{ "a": 1 }, { "b": 2 }] },
                rawdoc! { "a": 1, "b": 2 },
                true,
            ),
            (
                rawdoc! { "$and": [{ "a": 1 }, { "b": 2 }] },
                rawdoc! { "a": 1 },
                false,
            ),
            (
                rawdoc! { "$or": [{ "a": 1 }, { "b": 2 }] },
                rawdoc! { "b": 2 },
                true,
            ),
            (
                rawdoc! { "$or": [{ "a": 1 }, { "b": 2 }] },
                rawdoc! { "c": 2 },
                false,
            ),
            (
                rawdoc! { "$nor": [{ "a": 1 }, { "b": 2 }] },
                rawdoc! {},
                true,
            ),
            (
                rawdoc! { "$nor": [{ "a": 1 }, { "b": 2 }] },
                rawdoc! { "a": 1 },
                false,
            ),
            (
                rawdoc! { "a": 1, "$comment": "why" },
                rawdoc! { "a": 1 },
                true,
            ),
            (rawdoc! {}, rawdoc! { "anything": 1 }, true),
            (rawdoc! { "$alwaysFalse": 1 }, rawdoc! {}, false),
        ]);
    }

    #[test]
    fn min_and_max_key_bound_every_value() {
        check(vec![
            (
                rawdoc! { "a": { "$lt": RawBson::MaxKey } },
                rawdoc! { "a": "x" },
                true,
            ),
            (
                rawdoc! { "a": { "$lt": RawBson::MaxKey } },
                rawdoc! {},
                true,
            ),
            (
                rawdoc! { "a": { "$gt": RawBson::MinKey } },
                rawdoc! { "a": null },
                true,
            ),
            (
                rawdoc! { "a": { "$gt": RawBson::MaxKey } },
                rawdoc! { "a": 1 },
                false,
            ),
            (
                rawdoc! { "a": RawBson::MaxKey },
                rawdoc! { "a": RawBson::MaxKey },
                true,
            ),
        ]);
    }

    #[test]
    fn nan_equals_only_nan_and_is_unordered() {
        check(vec![
            (rawdoc! { "a": f64::NAN }, rawdoc! { "a": f64::NAN }, true),
            (
                rawdoc! { "a": f64::NAN },
                rawdoc! { "a": decimal("NaN") },
                true,
            ),
            (
                rawdoc! { "a": { "$gte": f64::NAN } },
                rawdoc! { "a": f64::NAN },
                true,
            ),
            (
                rawdoc! { "a": { "$gt": f64::NAN } },
                rawdoc! { "a": 1 },
                false,
            ),
            (
                rawdoc! { "a": { "$lt": 5 } },
                rawdoc! { "a": f64::NAN },
                false,
            ),
            (
                rawdoc! { "a": { "$lte": 5 } },
                rawdoc! { "a": f64::NAN },
                false,
            ),
        ]);
    }

    #[test]
    fn dbref_documents_are_values_not_operators() {
        let dbref = || rawdoc! { "$ref": "c", "$id": 1 };
        check(vec![(
            rawdoc! { "a": dbref() },
            rawdoc! { "a": dbref() },
            true,
        )]);
    }

    #[test]
    fn invalid_filters_report_mongodb_errors() {
        let cases = vec![
            (
                rawdoc! { "$foo": 1 },
                ErrorKind::BadValue,
                "unknown top level operator: $foo. If you have a field name that starts \
                 with a '$' symbol, consider using $getField or $setField.",
            ),
            (
                rawdoc! { "$not": { "a": 1 } },
                ErrorKind::BadValue,
                "unknown top level operator: $not. \
                 If you are trying to negate an entire expression, use $nor.",
            ),
            (
                rawdoc! { "a": { "$foo": 1 } },
                ErrorKind::BadValue,
                "unknown operator: $foo",
            ),
            (
                rawdoc! { "a": { "$gt": 1, "b": 2 } },
                ErrorKind::BadValue,
                "unknown operator: b",
            ),
            (
                rawdoc! { "a": { "$in": 1 } },
                ErrorKind::BadValue,
                "$in needs an array",
            ),
            (
                rawdoc! { "a": { "$nin": "x" } },
                ErrorKind::BadValue,
                "$nin needs an array",
            ),
            (
                rawdoc! { "$and": 1 },
                ErrorKind::BadValue,
                "$and must be an array",
            ),
            (
                rawdoc! { "$or": [] },
                ErrorKind::BadValue,
                "$and/$or/$nor must be a nonempty array",
            ),
            (
                rawdoc! { "$nor": [1] },
                ErrorKind::BadValue,
                "$or/$and/$nor entries need to be full objects",
            ),
            (
                rawdoc! { "a": { "$not": 1 } },
                ErrorKind::BadValue,
                "$not needs a regex or a document",
            ),
            (
                rawdoc! { "a": { "$not": {} } },
                ErrorKind::BadValue,
                "$not cannot be empty",
            ),
            (
                rawdoc! { "a": { "$size": "1" } },
                ErrorKind::BadValue,
                "$size needs a number",
            ),
            (
                rawdoc! { "a": { "$size": 1.5 } },
                ErrorKind::BadValue,
                "$size must be a whole number",
            ),
            (
                rawdoc! { "a": { "$size": -1 } },
                ErrorKind::BadValue,
                "$size may not be negative",
            ),
            (
                rawdoc! { "a": { "$type": "foo" } },
                ErrorKind::BadValue,
                "Unknown type name alias: foo",
            ),
            (
                rawdoc! { "a": { "$type": 100 } },
                ErrorKind::BadValue,
                "Invalid numerical type code: 100",
            ),
            (
                rawdoc! { "a": { "$type": true } },
                ErrorKind::TypeMismatch,
                "type must be represented as a number or a string",
            ),
            (
                rawdoc! { "a": { "$type": [] } },
                ErrorKind::FailedToParse,
                "$type must match at least one type",
            ),
            (
                rawdoc! { "a": { "$regex": "(" } },
                ErrorKind::InvalidRegex,
                "Regular expression is invalid",
            ),
            (
                rawdoc! { "a": { "$regex": "x", "$options": "q" } },
                ErrorKind::InvalidRegexOptions,
                "invalid flag in regex options: q",
            ),
            (
                rawdoc! { "a": { "$options": "i" } },
                ErrorKind::BadValue,
                "$options needs a $regex",
            ),
            (
                rawdoc! { "a": { "$regex": 5 } },
                ErrorKind::BadValue,
                "$regex has to be a string",
            ),
            (
                rawdoc! { "a": { "$regex": Regex { pattern: "x".to_owned().try_into().unwrap(), options: "i".to_owned().try_into().unwrap() }, "$options": "m" } },
                ErrorKind::RegexOptionsTwice,
                "options set in both $regex and $options",
            ),
            (
                rawdoc! { "$where": "true" },
                ErrorKind::JavaScriptDisabled,
                "no globalScriptEngine in $where parsing",
            ),
            (
                rawdoc! { "a": { "$elemMatch": { "$expr": true } } },
                ErrorKind::BadValue,
                "$expr can only be applied to the top-level document",
            ),
            (
                rawdoc! { "$expr": { "$foo": 1 } },
                ErrorKind::InvalidPipelineOperator,
                "Unrecognized expression '$foo'",
            ),
            (
                rawdoc! { "a": { "$mod": 2 } },
                ErrorKind::BadValue,
                "malformed mod, needs to be an array",
            ),
            (
                rawdoc! { "a": { "$mod": [2] } },
                ErrorKind::BadValue,
                "malformed mod, not enough elements",
            ),
            (
                rawdoc! { "a": { "$mod": [2, 0, 1] } },
                ErrorKind::BadValue,
                "malformed mod, too many elements",
            ),
            (
                rawdoc! { "a": { "$mod": ["2", 0] } },
                ErrorKind::BadValue,
                "malformed mod, divisor not a number",
            ),
            (
                rawdoc! { "a": { "$mod": [0, 0] } },
                ErrorKind::BadValue,
                "divisor cannot be 0",
            ),
            (
                rawdoc! { "a": { "$mod": [f64::NAN, 0] } },
                ErrorKind::BadValue,
                "malformed mod, divisor value is invalid :: caused by :: Unable to coerce NaN/Inf to integral type",
            ),
            (
                rawdoc! { "a": { "$elemMatch": 1 } },
                ErrorKind::BadValue,
                "$elemMatch needs an Object",
            ),
            (
                rawdoc! { "a": { "$all": 1 } },
                ErrorKind::BadValue,
                "$all needs an array",
            ),
            (
                rawdoc! { "a": { "$all": [{ "$gt": 1 }] } },
                ErrorKind::BadValue,
                "no $ expressions in $all",
            ),
            (
                rawdoc! { "a": { "$all": [{ "$elemMatch": { "b": 1 } }, 1] } },
                ErrorKind::BadValue,
                "$all/$elemMatch has to be consistent",
            ),
            (
                rawdoc! { "a": { "$in": [{ "$gt": 1 }] } },
                ErrorKind::BadValue,
                "cannot nest $ under $in",
            ),
            (
                rawdoc! { "a": { "$eq": RawBson::Undefined } },
                ErrorKind::BadValue,
                "cannot compare to undefined",
            ),
            (
                rawdoc! { "a": { "$ne": regex() } },
                ErrorKind::BadValue,
                "Can't have regex as arg to $ne.",
            ),
            (
                rawdoc! { "a": { "$gt": regex() } },
                ErrorKind::BadValue,
                "Can't have RegEx as arg to predicate over field 'a'.",
            ),
        ];
        for (filter, kind, message) in cases {
            let e = error(filter.clone());
            assert_eq!(e.kind, kind, "filter {filter:?}: {}", e.message);
            // Compiler messages follow a fixed lead (`…: <engine's words>`).
            assert!(
                e.message == message || e.message.starts_with(&format!("{message}: ")),
                "filter {filter:?}: {}",
                e.message
            );
        }
    }

    /// The documents of MongoDB's own null-semantics test (jstests
    /// `null_query_semantics.js`, 7.0 behaviour: null also matches undefined).
    fn null_semantics_documents() -> Vec<(&'static str, RawDocumentBuf)> {
        let undefined = || RawBson::Undefined;
        vec![
            ("a_empty_subobject", rawdoc! { "a": {} }),
            ("a_null", rawdoc! { "a": null }),
            ("a_number", rawdoc! { "a": 4 }),
            ("a_subobject_b_not_null", rawdoc! { "a": { "b": "hi" } }),
            ("a_subobject_b_null", rawdoc! { "a": { "b": null } }),
            (
                "a_subobject_b_undefined",
                rawdoc! { "a": { "b": undefined() } },
            ),
            ("a_undefined", rawdoc! { "a": undefined() }),
            ("no_a", rawdoc! {}),
            ("a_double_array", rawdoc! { "a": [[]] }),
            ("a_empty_array", rawdoc! { "a": [] }),
            (
                "a_object_array_all_b_nulls",
                rawdoc! { "a": [{ "b": null }, { "b": undefined() }, { "b": null }, {}] },
            ),
            (
                "a_object_array_no_b_nulls",
                rawdoc! { "a": [{ "b": 1 }, { "b": 3 }, { "b": "string" }] },
            ),
            (
                "a_object_array_some_b_nulls",
                rawdoc! { "a": [{ "b": null }, { "b": 3 }, { "b": null }] },
            ),
            (
                "a_object_array_some_b_undefined",
                rawdoc! { "a": [{ "b": undefined() }, { "b": 3 }] },
            ),
            (
                "a_object_array_some_b_missing",
                rawdoc! { "a": [{ "b": 3 }, {}] },
            ),
            ("a_value_array_all_nulls", rawdoc! { "a": [null, null] }),
            ("a_value_array_no_nulls", rawdoc! { "a": [1, "string", 4] }),
            (
                "a_value_array_with_null",
                rawdoc! { "a": [1, "string", null, 4] },
            ),
            (
                "a_value_array_with_undefined",
                rawdoc! { "a": [1, "string", undefined(), 4] },
            ),
        ]
    }

    /// Names of the documents the filter matches.
    fn matching(
        filter: RawDocumentBuf,
        docs: &[(&'static str, RawDocumentBuf)],
    ) -> Vec<&'static str> {
        let filter = Filter::parse(&filter).unwrap();
        docs.iter()
            .filter(|(_, doc)| filter.matches(doc).unwrap())
            .map(|(name, _)| *name)
            .collect()
    }

    fn all_but(docs: &[(&'static str, RawDocumentBuf)], excluded: &[&str]) -> Vec<&'static str> {
        docs.iter()
            .map(|(name, _)| *name)
            .filter(|name| !excluded.contains(name))
            .collect()
    }

    #[test]
    fn null_semantics_match_mongodb() {
        let docs = null_semantics_documents();
        let eq_null = [
            "a_null",
            "a_undefined",
            "no_a",
            "a_value_array_all_nulls",
            "a_value_array_with_null",
            "a_value_array_with_undefined",
        ];
        let dotted_eq_null = [
            "a_empty_subobject",
            "a_null",
            "a_number",
            "a_subobject_b_null",
            "a_subobject_b_undefined",
            "a_undefined",
            "no_a",
            "a_object_array_all_b_nulls",
            "a_object_array_some_b_nulls",
            "a_object_array_some_b_undefined",
            "a_object_array_some_b_missing",
        ];
        let sorted = |mut names: Vec<&'static str>| {
            names.sort_unstable();
            names
        };
        let expect = |filter: RawDocumentBuf, expected: Vec<&'static str>| {
            assert_eq!(
                sorted(matching(filter.clone(), &docs)),
                sorted(expected),
                "filter {filter:?}"
            );
        };
        expect(rawdoc! { "a": { "$eq": null } }, eq_null.to_vec());
        expect(rawdoc! { "a": { "$in": [null, 75] } }, eq_null.to_vec());
        expect(rawdoc! { "a": { "$ne": null } }, all_but(&docs, &eq_null));
        expect(
            rawdoc! { "a": { "$nin": [null, 75] } },
            all_but(&docs, &eq_null),
        );
        expect(
            rawdoc! { "a": { "$not": { "$gte": null } } },
            all_but(&docs, &eq_null),
        );
        expect(rawdoc! { "a.b": { "$eq": null } }, dotted_eq_null.to_vec());
        expect(
            rawdoc! { "a.b": { "$in": [null, 75] } },
            dotted_eq_null.to_vec(),
        );
        expect(
            rawdoc! { "a.b": { "$ne": null } },
            all_but(&docs, &dotted_eq_null),
        );
        expect(
            rawdoc! { "a.b": { "$nin": [null, 75] } },
            all_but(&docs, &dotted_eq_null),
        );
        expect(rawdoc! { "a": { "$exists": false } }, vec!["no_a"]);
        expect(
            rawdoc! { "a": { "$elemMatch": { "$eq": null } } },
            vec![
                "a_value_array_all_nulls",
                "a_value_array_with_null",
                "a_value_array_with_undefined",
            ],
        );
        expect(
            rawdoc! { "a": { "$elemMatch": { "$ne": null } } },
            vec![
                "a_double_array",
                "a_object_array_all_b_nulls",
                "a_object_array_no_b_nulls",
                "a_object_array_some_b_nulls",
                "a_object_array_some_b_undefined",
                "a_object_array_some_b_missing",
                "a_value_array_no_nulls",
                "a_value_array_with_null",
                "a_value_array_with_undefined",
            ],
        );
        expect(rawdoc! { "a.b": { "$elemMatch": { "$eq": null } } }, vec![]);
        expect(rawdoc! { "a.b": { "$elemMatch": { "$ne": null } } }, vec![]);
        expect(
            rawdoc! { "a": { "$elemMatch": { "b": { "$eq": null } } } },
            vec![
                "a_double_array",
                "a_object_array_all_b_nulls",
                "a_object_array_some_b_nulls",
                "a_object_array_some_b_undefined",
                "a_object_array_some_b_missing",
            ],
        );
        expect(
            rawdoc! { "a": { "$elemMatch": { "b": { "$ne": null } } } },
            vec![
                "a_object_array_no_b_nulls",
                "a_object_array_some_b_nulls",
                "a_object_array_some_b_undefined",
                "a_object_array_some_b_missing",
            ],
        );
        let scalars = &docs[..8];
        assert_eq!(
            sorted(matching(rawdoc! { "a.b": { "$exists": false } }, scalars)),
            sorted(vec![
                "no_a",
                "a_empty_subobject",
                "a_null",
                "a_number",
                "a_undefined"
            ])
        );
    }

    /// $expr compares fields of one document (manual: $expr, "Compare Two
    /// Fields from A Single Document"); false, null, missing and 0 are
    /// false.
    #[test]
    fn expr_compares_fields_of_the_same_document() {
        let spent = || rawdoc! { "$expr": { "$gt": ["$spent", "$budget"] } };
        check(vec![
            (spent(), rawdoc! { "budget": 400, "spent": 450 }, true),
            (spent(), rawdoc! { "budget": 100, "spent": 65 }, false),
            (rawdoc! { "$expr": "$flag" }, rawdoc! { "flag": 0 }, false),
            (rawdoc! { "$expr": "$flag" }, rawdoc! {}, false),
            (rawdoc! { "$expr": "$flag" }, rawdoc! { "flag": "x" }, true),
            (
                rawdoc! { "$or": [{ "a": 1 }, { "$expr": { "$eq": ["$b", 2] } }] },
                rawdoc! { "b": 2 },
                true,
            ),
        ]);
        let failing = Filter::parse(&rawdoc! { "$expr": { "$divide": [1, "$z"] } }).unwrap();
        assert!(failing.matches(&rawdoc! { "z": 0 }).is_err());
    }

    /// $mod truncates doubles, and its remainder keeps the dividend's sign
    /// (manual: $mod, "Floating Point Arguments", "Negative Dividend").
    #[test]
    fn mod_matches_truncated_numbers() {
        let m = |d: f64, r: i32| rawdoc! { "qty": { "$mod": [d, r] } };
        check(vec![
            (m(4.0, 0), rawdoc! { "qty": 12 }, true),
            (m(4.0, 0), rawdoc! { "qty": 5 }, false),
            (m(4.5, 0), rawdoc! { "qty": 12.7 }, true),
            (m(4.0, -1), rawdoc! { "qty": -5 }, true),
            (m(4.0, 0), rawdoc! { "qty": "12" }, false),
            (m(4.0, 0), rawdoc! { "qty": [5, 8] }, true),
            (m(4.0, 0), rawdoc! { "qty": f64::NAN }, false),
        ]);
    }

    #[test]
    fn comment_is_accepted_and_changes_nothing() {
        check(vec![
            (
                rawdoc! { "$comment": "why", "a": 1 },
                rawdoc! { "a": 1 },
                true,
            ),
            (
                rawdoc! { "$comment": { "any": 1 } },
                rawdoc! { "a": 2 },
                true,
            ),
        ]);
    }

    #[test]
    fn eq_with_a_regex_compares_the_regex_itself() {
        let filter = rawdoc! { "a": { "$eq": regex() } };
        assert!(matches(filter.clone(), rawdoc! { "a": regex() }));
        assert!(!matches(filter, rawdoc! { "a": "x" }));
    }

    #[test]
    fn top_level_predicates_flatten_and() {
        let filter = Filter::parse(&rawdoc! {
            "a": 1,
            "$and": [{ "b": { "$gt": 2, "$lt": 9 } }, { "c": 3 }],
            "$or": [{ "d": 1 }, { "e": 1 }],
        })
        .unwrap();
        let found = filter.top_level_predicates();
        assert_eq!(
            found,
            vec![
                ("a", &Pred::Eq(RawBson::Int32(1))),
                ("b", &Pred::Gt(RawBson::Int32(2))),
                ("b", &Pred::Lt(RawBson::Int32(9))),
                ("c", &Pred::Eq(RawBson::Int32(3))),
            ]
        );
    }

    #[test]
    fn single_clause_is_the_root() {
        let filter = Filter::parse(&rawdoc! { "a": { "$in": [1, 2] } }).unwrap();
        assert_eq!(
            filter.root(),
            &Expr::Path {
                path: "a".to_owned(),
                pred: Pred::In(InList::new(vec![RawBson::Int32(1), RawBson::Int32(2)])),
            }
        );
    }

    #[test]
    fn id_equality_finds_point_lookups_only() {
        let id = |filter: RawDocumentBuf| {
            Filter::parse(&filter)
                .unwrap()
                .id_equality()
                .map(RawBson::from)
        };
        assert_eq!(id(rawdoc! { "_id": 5 }), Some(RawBson::Int32(5)));
        assert_eq!(
            id(rawdoc! { "_id": { "$eq": "x" } }),
            Some(RawBson::String("x".into()))
        );
        assert_eq!(
            id(rawdoc! { "_id": 5, "$comment": "c" }),
            Some(RawBson::Int32(5))
        );
        assert_eq!(id(rawdoc! { "_id": { "a": 1 } }), None);
        assert_eq!(id(rawdoc! { "_id": [1] }), None);
        assert_eq!(id(rawdoc! { "_id": null }), None);
        assert_eq!(id(rawdoc! { "_id": 5, "b": 1 }), None);
        assert_eq!(id(rawdoc! { "_id": { "$gt": 5 } }), None);
    }

    #[test]
    fn empty_filters_are_recognised() {
        let empty = |filter: RawDocumentBuf| Filter::parse(&filter).unwrap().is_empty();
        assert!(empty(rawdoc! {}));
        assert!(empty(rawdoc! { "$comment": "x" }));
        assert!(!empty(rawdoc! { "a": 1 }));
    }
}
