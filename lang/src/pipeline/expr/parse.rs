//! Parsing an expression from BSON into a [`Node`] tree, once, with
//! MongoDB's errors: unknown operators, wrong argument counts, malformed
//! named arguments, bad field paths and variable names, undefined
//! variables.
//!
//! Variables are resolved here: bindings get frame slots, and the command's
//! `let` variables and `$$NOW` become constants. Operators whose arguments
//! are all evaluated up front are looked up in `table`; the operators that
//! decide what to evaluate, and those with named arguments, are parsed
//! here. Nothing here evaluates anything but constants.

use bson::{RawArray, RawBson, RawBsonRef, RawDocument};

use super::fold::fold;
use super::table;
use super::tree::{Arity, CURRENT, Node, OpDef, ROOT, Slot};
use super::value::{Val, fail, fields, items};
use super::vars::{Env, valid_for_read, valid_for_write};
use super::{array, convert, date, object, percentile, regex, string};
use crate::encoding::display::{shell, type_name};
use crate::error::{Error, ErrorKind, ExprError, Result};
use crate::query::value::field_path;

/// What parsing one expression knows.
pub struct Parser<'e> {
    env: &'e Env,
    /// Bound variable names, innermost last.
    scopes: Vec<(String, Slot)>,
    /// Slots handed out so far (slot 0 is `$$ROOT`).
    slots: usize,
    /// Whether the expression reads the document (`$a`, `$$ROOT`, …).
    reads_document: bool,
    /// Whether `$$CURRENT` has a slot of its own ([`CURRENT`]).
    current_apart: bool,
}

/// Operators MongoDB has that ebb refuses rather than evaluate wrongly.
const NOT_IMPLEMENTED: &[&str] = &[
    "$accumulator",
    "$stdDevPop",
    "$stdDevSamp",
    "$firstN",
    "$lastN",
    "$maxN",
    "$minN",
    "$top",
    "$topN",
    "$bottom",
    "$bottomN",
    "$sampleRate",
    "$createObjectId",
    "$createUUID",
    "$hash",
    "$encStrStartsWith",
];

impl<'e> Parser<'e> {
    pub fn new(env: &'e Env) -> Self {
        Parser {
            env,
            scopes: vec![("CURRENT".to_owned(), ROOT)],
            slots: 1,
            reads_document: false,
            current_apart: false,
        }
    }

    /// A parser whose `$$CURRENT` (and so `$a`) is slot [`CURRENT`], apart
    /// from `$$ROOT`: `$redact` moves it down the document.
    pub fn with_current_apart(env: &'e Env) -> Self {
        Parser {
            env,
            scopes: vec![("CURRENT".to_owned(), CURRENT)],
            slots: 2,
            reads_document: false,
            current_apart: true,
        }
    }

    /// How many frame slots evaluation needs.
    pub fn slots(&self) -> usize {
        self.slots
    }

    pub fn reads_document(&self) -> bool {
        self.reads_document
    }

    /// Parses any value in expression position.
    pub fn operand(&mut self, v: RawBsonRef<'_>) -> Result<Node> {
        match v {
            RawBsonRef::String(s) if s.starts_with('$') => self.path(s),
            RawBsonRef::Document(d) => self.document(d),
            RawBsonRef::Array(a) => Ok(Node::Array(
                items(a)?
                    .into_iter()
                    .map(|v| self.operand(v))
                    .collect::<Result<_>>()?,
            )),
            other => Ok(Node::Const(other.into())),
        }
    }

    /// `$a.b` or `$$var.a.b`.
    fn path(&mut self, s: &str) -> Result<Node> {
        if s == "$" {
            return Err(Error::new(
                ErrorKind::InvalidFieldPathExpression,
                "'$' by itself is not a valid FieldPath",
            ));
        }
        if let Some(var) = s.strip_prefix("$$") {
            let (name, rest) = match var.split_once('.') {
                Some((n, r)) => (n, Some(r)),
                None => (var, None),
            };
            valid_for_read(name)?;
            let fields = match rest {
                Some(r) => field_path(r)?.into_iter().map(str::to_owned).collect(),
                None => Vec::new(),
            };
            return self.variable(name, fields);
        }
        let fields = field_path(&s[1..])?
            .into_iter()
            .map(str::to_owned)
            .collect();
        let slot = self.lookup("CURRENT").unwrap_or(ROOT);
        self.note_slot(slot);
        Ok(Node::Var(slot, fields))
    }

    fn note_slot(&mut self, slot: Slot) {
        if slot == ROOT || (self.current_apart && slot == CURRENT) {
            self.reads_document = true;
        }
    }

    fn lookup(&self, name: &str) -> Option<Slot> {
        self.scopes
            .iter()
            .rev()
            .find(|(n, _)| n == name)
            .map(|(_, s)| *s)
    }

    fn variable(&mut self, name: &str, fields: Vec<String>) -> Result<Node> {
        if let Some(slot) = self.lookup(name) {
            self.note_slot(slot);
            return Ok(Node::Var(slot, fields));
        }
        if let Some(value) = self.env.var(name) {
            return Ok(constant_path(value.cloned(), &fields));
        }
        if self.env.is_pending(name) {
            // A slot no binding fills: opaque to folding, which is all a
            // tree parsed for checking needs.
            let slot = self.slots;
            self.slots += 1;
            return Ok(Node::Var(slot, fields));
        }
        match name {
            "ROOT" => {
                self.note_slot(ROOT);
                Ok(Node::Var(ROOT, fields))
            }
            "NOW" => Ok(constant_path(
                Some(RawBson::DateTime(self.env.now())),
                &fields,
            )),
            "REMOVE" | "SEARCH_META" => Ok(Node::Missing),
            // `$redact`'s answers.
            "DESCEND" | "PRUNE" | "KEEP" => Ok(constant_path(
                Some(RawBson::String(name.to_ascii_lowercase())),
                &fields,
            )),
            "CLUSTER_TIME" | "JS_SCOPE" | "IS_MR" => Err(fail(
                ExprError::VariableUnavailable,
                format!("Builtin variable '$${name}' is not available"),
            )),
            "USER_ROLES" => Err(Error::not_implemented("the variable '$$USER_ROLES'")),
            _ => Err(fail(
                ExprError::UndefinedVariable,
                format!("Use of undefined variable: {name}"),
            )),
        }
    }

    /// Binds a user variable for what is parsed until the scope is closed.
    fn bind(&mut self, name: &str) -> Result<Slot> {
        valid_for_write(name)?;
        let slot = self.slots;
        self.slots += 1;
        self.scopes.push((name.to_owned(), slot));
        Ok(slot)
    }

    fn close_scope(&mut self, mark: usize) {
        self.scopes.truncate(mark);
    }

    /// A document: an operator (`{$add: …}`) or an object of expressions.
    fn document(&mut self, d: &RawDocument) -> Result<Node> {
        let entries = fields(d)?;
        let Some((first, arg)) = entries.first().copied() else {
            return Ok(Node::Object(Vec::new()));
        };
        if first.starts_with('$') {
            if entries.len() != 1 {
                return Err(fail(
                    ExprError::OperatorNotAlone,
                    format!(
                        "An object representing an expression must have exactly one field: {}",
                        show_document(d)
                    ),
                ));
            }
            return self.operator(first, arg);
        }
        let mut out: Vec<(String, Node)> = Vec::with_capacity(entries.len());
        for (k, v) in entries {
            object_field_name(k)?;
            if out.iter().any(|(n, _)| n == k) {
                return Err(fail(
                    ExprError::DuplicateObjectField,
                    format!(
                        "duplicate field name specified in object literal: {}",
                        show_document(d)
                    ),
                ));
            }
            out.push((k.to_owned(), self.operand(v)?));
        }
        Ok(Node::Object(out))
    }

    /// The arguments of an operator: each element of an array, or the one
    /// value given.
    fn args(&mut self, arg: RawBsonRef<'_>) -> Result<Vec<Node>> {
        match arg {
            RawBsonRef::Array(a) => items(a)?.into_iter().map(|v| self.operand(v)).collect(),
            other => Ok(vec![self.operand(other)?]),
        }
    }

    fn operator(&mut self, name: &str, arg: RawBsonRef<'_>) -> Result<Node> {
        match name {
            "$literal" | "$const" => return Ok(Node::Const(arg.into())),
            "$and" => return Ok(Node::And(self.args(arg)?)),
            "$or" => return Ok(Node::Or(self.args(arg)?)),
            "$cond" => return self.cond(arg),
            "$ifNull" => {
                let args = self.args(arg)?;
                if args.len() < 2 {
                    return Err(fail(
                        ExprError::IfNullArgs,
                        format!("$ifNull needs at least two arguments, had: {}", args.len()),
                    ));
                }
                return Ok(Node::IfNull(args));
            }
            "$switch" => return self.switch(arg),
            "$let" => return self.let_(arg),
            "$map" => return self.map(arg),
            "$filter" => return self.filter(arg),
            "$reduce" => return self.reduce(arg),
            "$convert" => return self.convert(arg),
            "$dateToString" => return self.date_to_string(arg),
            "$dateFromString" => return self.date_from_string(arg),
            "$trim" | "$ltrim" | "$rtrim" => return self.trim(name, arg),
            "$zip" => return self.zip(arg),
            "$sortArray" => return self.sort_array(arg),
            "$getField" => return self.get_field(arg),
            "$meta" => return self.meta(arg),
            "$function" => return self.function(arg),
            "$setField" | "$unsetField" => return self.set_field(name, arg),
            "$replaceOne" | "$replaceAll" => return self.replace(name, arg),
            "$regexMatch" | "$regexFind" | "$regexFindAll" => return self.regex(name, arg),
            "$dateToParts" => return self.date_to_parts(arg),
            "$dateFromParts" => return self.date_from_parts(arg),
            "$dateAdd" | "$dateSubtract" => return self.date_add(name, arg),
            "$dateDiff" => return self.date_diff(arg),
            "$dateTrunc" => return self.date_trunc(arg),
            "$percentile" | "$median" => return self.percentile(name, arg),
            _ => {}
        }
        if let Some(def) = date::part_op(name) {
            return self.date_part(def, arg);
        }
        if let Some(def) = table::lookup(name) {
            let args = self.args(arg)?;
            check_arity(def, args.len())?;
            return Ok(Node::Call(def, args));
        }
        if NOT_IMPLEMENTED.contains(&name) {
            return Err(Error::not_implemented(&format!("the expression '{name}'")));
        }
        Err(Error::new(
            ErrorKind::InvalidPipelineOperator,
            format!("Unrecognized expression '{name}'"),
        ))
    }

    fn cond(&mut self, arg: RawBsonRef<'_>) -> Result<Node> {
        let RawBsonRef::Document(d) = arg else {
            let args = self.args(arg)?;
            let n = args.len();
            return match <[Node; 3]>::try_from(args) {
                Ok(parts) => Ok(Node::Cond(Box::new(parts))),
                Err(_) => Err(arity_error("$cond", Arity::Exactly(3), n)),
            };
        };
        let mut parts: [Option<Node>; 3] = [None, None, None];
        for (k, v) in fields(d)? {
            let i = match k {
                "if" => 0,
                "then" => 1,
                "else" => 2,
                _ => {
                    return Err(fail(
                        ExprError::CondUnknownArgument,
                        format!("Unrecognized parameter to $cond: {k}"),
                    ));
                }
            };
            parts[i] = Some(self.operand(v)?);
        }
        let [c, t, e] = parts;
        let missing = |kind, what: &str| fail(kind, format!("Missing '{what}' parameter to $cond"));
        Ok(Node::Cond(Box::new([
            c.ok_or_else(|| missing(ExprError::CondMissingIf, "if"))?,
            t.ok_or_else(|| missing(ExprError::CondMissingThen, "then"))?,
            e.ok_or_else(|| missing(ExprError::CondMissingElse, "else"))?,
        ])))
    }

    fn switch(&mut self, arg: RawBsonRef<'_>) -> Result<Node> {
        let RawBsonRef::Document(d) = arg else {
            return Err(fail(
                ExprError::SwitchNotObject,
                format!(
                    "$switch requires an object as an argument, found: {}",
                    type_name(&arg)
                ),
            ));
        };
        let mut branches = Vec::new();
        let mut default = None;
        for (k, v) in fields(d)? {
            match k {
                "branches" => {
                    let RawBsonRef::Array(list) = v else {
                        return Err(fail(
                            ExprError::SwitchBranchesNotArray,
                            format!(
                                "$switch expected an array for 'branches', found: {}",
                                type_name(&v)
                            ),
                        ));
                    };
                    for branch in items(list)? {
                        let RawBsonRef::Document(b) = branch else {
                            return Err(fail(
                                ExprError::SwitchBranchNotObject,
                                format!(
                                    "$switch expected each branch to be an object, found: {}",
                                    type_name(&branch)
                                ),
                            ));
                        };
                        let (mut case, mut then) = (None, None);
                        for (bk, bv) in fields(b)? {
                            match bk {
                                "case" => case = Some(self.operand(bv)?),
                                "then" => then = Some(self.operand(bv)?),
                                _ => {
                                    return Err(fail(
                                        ExprError::SwitchBranchUnknownArgument,
                                        format!(
                                            "$switch found an unknown argument to a branch: {bk}"
                                        ),
                                    ));
                                }
                            }
                        }
                        let case = case.ok_or_else(|| {
                            fail(
                                ExprError::SwitchBranchMissingCase,
                                "$switch requires each branch have a 'case' expression",
                            )
                        })?;
                        let then = then.ok_or_else(|| {
                            fail(
                                ExprError::SwitchBranchMissingThen,
                                "$switch requires each branch have a 'then' expression.",
                            )
                        })?;
                        branches.push((case, then));
                    }
                }
                "default" => default = Some(Box::new(self.operand(v)?)),
                _ => {
                    return Err(fail(
                        ExprError::SwitchUnknownArgument,
                        format!("$switch found an unknown argument: {k}"),
                    ));
                }
            }
        }
        if branches.is_empty() {
            return Err(fail(
                ExprError::SwitchNoBranches,
                "$switch requires at least one branch.",
            ));
        }
        Ok(Node::Switch { branches, default })
    }

    fn let_(&mut self, arg: RawBsonRef<'_>) -> Result<Node> {
        let RawBsonRef::Document(d) = arg else {
            return Err(fail(
                ExprError::LetNotObject,
                "$let only supports an object as its argument",
            ));
        };
        let (mut vars, mut body) = (None, None);
        for (k, v) in fields(d)? {
            match k {
                "vars" => vars = Some(v),
                "in" => body = Some(v),
                _ => {
                    return Err(fail(
                        ExprError::LetUnknownArgument,
                        format!("Unrecognized parameter to $let: {k}"),
                    ));
                }
            }
        }
        let vars = vars.ok_or_else(|| {
            fail(
                ExprError::LetMissingVars,
                "Missing 'vars' parameter to $let",
            )
        })?;
        let body =
            body.ok_or_else(|| fail(ExprError::LetMissingIn, "Missing 'in' parameter to $let"))?;
        let RawBsonRef::Document(vars) = vars else {
            return Err(fail(
                ExprError::LetVarsNotObject,
                format!(
                    "invalid parameter: expected an object (vars), found {}",
                    type_name(&vars)
                ),
            ));
        };
        // Every value is parsed in the outer scope, before any is bound.
        let mut values = Vec::new();
        for (name, v) in fields(vars)? {
            values.push((name, self.operand(v)?));
        }
        let mark = self.scopes.len();
        let mut bound = Vec::new();
        for (name, node) in values {
            bound.push((self.bind(name)?, node));
        }
        let body = self.operand(body)?;
        self.close_scope(mark);
        Ok(Node::Let {
            vars: bound,
            body: Box::new(body),
        })
    }

    /// The `as` name of `$map`/`$filter`: `this` when absent.
    fn as_name<'v>(v: Option<RawBsonRef<'v>>) -> &'v str {
        match v {
            None => "this",
            Some(RawBsonRef::String(s)) => s,
            Some(_) => "",
        }
    }

    fn map(&mut self, arg: RawBsonRef<'_>) -> Result<Node> {
        let RawBsonRef::Document(d) = arg else {
            return Err(fail(
                ExprError::MapNotObject,
                "$map only supports an object as its argument",
            ));
        };
        let entries = self.named(d, &["input", "as", "in"], |k| {
            fail(
                ExprError::MapUnknownArgument,
                format!("Unrecognized parameter to $map: {k}"),
            )
        })?;
        let input = required(&entries, "input", || {
            fail(
                ExprError::MapMissingInput,
                "Missing 'input' parameter to $map",
            )
        })?;
        let body = required(&entries, "in", || {
            fail(ExprError::MapMissingIn, "Missing 'in' parameter to $map")
        })?;
        let as_ = given(&entries, "as");
        let input = self.operand(input)?;
        let mark = self.scopes.len();
        let var = self.bind(Self::as_name(as_))?;
        let body = self.operand(body)?;
        self.close_scope(mark);
        Ok(Node::Map {
            input: Box::new(input),
            var,
            body: Box::new(body),
        })
    }

    fn filter(&mut self, arg: RawBsonRef<'_>) -> Result<Node> {
        let RawBsonRef::Document(d) = arg else {
            return Err(fail(
                ExprError::FilterNotObject,
                "$filter only supports an object as its argument",
            ));
        };
        let entries = self.named(d, &["input", "as", "cond", "limit"], |k| {
            fail(
                ExprError::FilterUnknownArgument,
                format!("Unrecognized parameter to $filter: {k}"),
            )
        })?;
        let input = required(&entries, "input", || {
            fail(
                ExprError::FilterMissingInput,
                "Missing 'input' parameter to $filter",
            )
        })?;
        let cond = required(&entries, "cond", || {
            fail(
                ExprError::FilterMissingCond,
                "Missing 'cond' parameter to $filter",
            )
        })?;
        let (as_, limit) = (given(&entries, "as"), given(&entries, "limit"));
        let input = self.operand(input)?;
        let limit = limit.map(|l| self.operand(l)).transpose()?.map(Box::new);
        let mark = self.scopes.len();
        let var = self.bind(Self::as_name(as_))?;
        let cond = self.operand(cond)?;
        self.close_scope(mark);
        Ok(Node::Filter {
            input: Box::new(input),
            var,
            cond: Box::new(cond),
            limit,
        })
    }

    fn reduce(&mut self, arg: RawBsonRef<'_>) -> Result<Node> {
        let RawBsonRef::Document(d) = arg else {
            return Err(fail(
                ExprError::ReduceNotObject,
                format!(
                    "$reduce requires an object as an argument, found: {}",
                    type_name(&arg)
                ),
            ));
        };
        let entries = self.named(d, &["input", "initialValue", "in"], |k| {
            fail(
                ExprError::ReduceUnknownArgument,
                format!("$reduce found an unknown argument: {k}"),
            )
        })?;
        let input = required(&entries, "input", || {
            fail(
                ExprError::ReduceMissingInput,
                "$reduce requires 'input' to be specified",
            )
        })?;
        let initial = required(&entries, "initialValue", || {
            fail(
                ExprError::ReduceMissingInitial,
                "$reduce requires 'initialValue' to be specified",
            )
        })?;
        let body = required(&entries, "in", || {
            fail(
                ExprError::ReduceMissingIn,
                "$reduce requires 'in' to be specified",
            )
        })?;
        let input = self.operand(input)?;
        let initial = self.operand(initial)?;
        let mark = self.scopes.len();
        let this = self.bind("this")?;
        let value = self.bind("value")?;
        let body = self.operand(body)?;
        self.close_scope(mark);
        Ok(Node::Reduce {
            input: Box::new(input),
            initial: Box::new(initial),
            this,
            value,
            body: Box::new(body),
        })
    }

    /// The named arguments of an operator, checked against the names it
    /// takes; what is wrong is reported by `unknown`.
    fn named<'a>(
        &self,
        d: &'a RawDocument,
        allowed: &[&str],
        unknown: impl Fn(&str) -> Error,
    ) -> Result<Vec<(&'a str, RawBsonRef<'a>)>> {
        let entries = fields(d)?;
        if let Some((k, _)) = entries.iter().find(|(k, _)| !allowed.contains(k)) {
            return Err(unknown(k));
        }
        Ok(entries)
    }

    /// The parsed named argument `name`, if given.
    fn arg(&mut self, entries: &[(&str, RawBsonRef<'_>)], name: &str) -> Result<Option<Node>> {
        entries
            .iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| self.operand(*v))
            .transpose()
    }

    fn convert(&mut self, arg: RawBsonRef<'_>) -> Result<Node> {
        let RawBsonRef::Document(d) = arg else {
            return Err(Error::failed_to_parse(format!(
                "$convert expects an object of named arguments but found: {}",
                type_name(&arg)
            )));
        };
        let entries = self.named(
            d,
            &[
                "input",
                "to",
                "onError",
                "onNull",
                "format",
                "base",
                "byteOrder",
            ],
            |k| Error::failed_to_parse(format!("$convert found an unknown argument: {k}")),
        )?;
        for option in ["format", "base", "byteOrder"] {
            if entries.iter().any(|(k, _)| *k == option) {
                return Err(Error::not_implemented(&format!("$convert's '{option}'")));
            }
        }
        let input = self
            .arg(&entries, "input")?
            .ok_or_else(|| Error::failed_to_parse("Missing 'input' parameter to $convert"))?;
        let to = self
            .arg(&entries, "to")?
            .ok_or_else(|| Error::failed_to_parse("Missing 'to' parameter to $convert"))?;
        let on_error = self.arg(&entries, "onError")?.map(Box::new);
        let on_null = self.arg(&entries, "onNull")?.map(Box::new);
        Ok(Node::Guarded {
            op: &convert::CONVERT,
            args: vec![input, to],
            on_null,
            on_error,
        })
    }

    fn date_to_string(&mut self, arg: RawBsonRef<'_>) -> Result<Node> {
        let RawBsonRef::Document(d) = arg else {
            return Err(fail(
                ExprError::DateToStringNotObject,
                "$dateToString only supports an object as its argument",
            ));
        };
        let entries = self.named(d, &["format", "date", "timezone", "onNull"], |k| {
            fail(
                ExprError::DateToStringUnknownArgument,
                format!("Unrecognized argument to $dateToString: {k}"),
            )
        })?;
        let date = self.arg(&entries, "date")?.ok_or_else(|| {
            fail(
                ExprError::DateToStringMissingDate,
                "Missing 'date' parameter to $dateToString",
            )
        })?;
        let timezone = self.arg(&entries, "timezone")?.unwrap_or_else(utc);
        let mut args = vec![date, timezone];
        if let Some(format) = self.arg(&entries, "format")? {
            args.push(format);
        }
        let on_null = self.arg(&entries, "onNull")?.map(Box::new);
        Ok(Node::Guarded {
            op: &date::DATE_TO_STRING,
            args,
            on_null,
            on_error: None,
        })
    }

    fn date_from_string(&mut self, arg: RawBsonRef<'_>) -> Result<Node> {
        let RawBsonRef::Document(d) = arg else {
            return Err(fail(
                ExprError::DateFromStringNotObject,
                format!(
                    "$dateFromString only supports an object as an argument, found: {}",
                    type_name(&arg)
                ),
            ));
        };
        let entries = self.named(
            d,
            &["format", "dateString", "timezone", "onNull", "onError"],
            |k| {
                fail(
                    ExprError::DateFromStringUnknownArgument,
                    format!("Unrecognized argument to $dateFromString: {k}"),
                )
            },
        )?;
        let date = self.arg(&entries, "dateString")?.ok_or_else(|| {
            fail(
                ExprError::DateFromStringMissingDate,
                "Missing 'dateString' parameter to $dateFromString",
            )
        })?;
        let timezone = self.arg(&entries, "timezone")?.unwrap_or_else(utc);
        let mut args = vec![date, timezone];
        if let Some(format) = self.arg(&entries, "format")? {
            args.push(format);
        }
        let on_null = self.arg(&entries, "onNull")?.map(Box::new);
        let on_error = self.arg(&entries, "onError")?.map(Box::new);
        Ok(Node::Guarded {
            op: &date::DATE_FROM_STRING,
            args,
            on_null,
            on_error,
        })
    }

    fn trim(&mut self, name: &str, arg: RawBsonRef<'_>) -> Result<Node> {
        let RawBsonRef::Document(d) = arg else {
            return Err(fail(
                ExprError::TrimNotObject,
                format!(
                    "{name} only supports an object as an argument, found {}",
                    type_name(&arg)
                ),
            ));
        };
        let entries = self.named(d, &["input", "chars"], |k| {
            fail(
                ExprError::TrimUnknownArgument,
                format!("{name} found an unknown argument: {k}"),
            )
        })?;
        let input = self.arg(&entries, "input")?.ok_or_else(|| {
            fail(
                ExprError::TrimMissingInput,
                format!("{name} requires an 'input' field"),
            )
        })?;
        let mut args = vec![input];
        if let Some(chars) = self.arg(&entries, "chars")? {
            args.push(chars);
        }
        let op = match name {
            "$ltrim" => &string::LTRIM,
            "$rtrim" => &string::RTRIM,
            _ => &string::TRIM,
        };
        Ok(Node::Call(op, args))
    }

    fn zip(&mut self, arg: RawBsonRef<'_>) -> Result<Node> {
        let RawBsonRef::Document(d) = arg else {
            return Err(fail(
                ExprError::ZipNotObject,
                format!(
                    "$zip only supports an object as an argument, found {}",
                    type_name(&arg)
                ),
            ));
        };
        let mut inputs = Vec::new();
        let mut defaults = Vec::new();
        let mut longest = false;
        for (k, v) in fields(d)? {
            match k {
                "inputs" | "defaults" => {
                    let RawBsonRef::Array(list) = v else {
                        let (kind, what) = if k == "inputs" {
                            (ExprError::ZipInputsNotArray, "inputs")
                        } else {
                            (ExprError::ZipDefaultsNotArray, "defaults")
                        };
                        return Err(fail(
                            kind,
                            format!(
                                "{what} must be an array of expressions, found {}",
                                type_name(&v)
                            ),
                        ));
                    };
                    let parsed = self.list(list)?;
                    if k == "inputs" {
                        inputs = parsed;
                    } else {
                        defaults = parsed;
                    }
                }
                "useLongestLength" => match v {
                    RawBsonRef::Boolean(b) => longest = b,
                    other => {
                        return Err(fail(
                            ExprError::ZipLongestNotBool,
                            format!(
                                "useLongestLength must be a bool, found {}",
                                type_name(&other)
                            ),
                        ));
                    }
                },
                _ => {
                    return Err(fail(
                        ExprError::ZipUnknownArgument,
                        format!("$zip found an unknown argument: {k}"),
                    ));
                }
            }
        }
        if inputs.is_empty() {
            return Err(fail(
                ExprError::ZipNoInputs,
                "$zip requires at least one input array",
            ));
        }
        if !longest && !defaults.is_empty() {
            return Err(fail(
                ExprError::ZipDefaultsWithoutLongest,
                "cannot specify defaults unless useLongestLength is true",
            ));
        }
        if !defaults.is_empty() && defaults.len() != inputs.len() {
            return Err(fail(
                ExprError::ZipDefaultsLength,
                "defaults and inputs must have the same length",
            ));
        }
        // Laid out as [longest, #inputs, inputs…, defaults…].
        let mut args = vec![
            Node::Const(RawBson::Boolean(longest)),
            Node::Const(RawBson::Int64(inputs.len() as i64)),
        ];
        args.extend(inputs);
        args.extend(defaults);
        Ok(Node::Call(&array::ZIP, args))
    }

    fn list(&mut self, list: &RawArray) -> Result<Vec<Node>> {
        items(list)?.into_iter().map(|v| self.operand(v)).collect()
    }

    /// `$percentile` and `$median` over an array (or one value).
    fn percentile(&mut self, name: &str, arg: RawBsonRef<'_>) -> Result<Node> {
        let env = self.env;
        let mut constant = |v: RawBsonRef<'_>| {
            let mut parser = Parser::new(env);
            let node = parser.operand(v)?;
            let slots = parser.slots();
            Ok(fold(node, slots)?.constant().flatten().cloned())
        };
        let (input, spec) = percentile::parse_spec(name, arg, &mut constant)?;
        let input = self.operand(input)?;
        let [p, median] = spec.as_args();
        Ok(Node::Call(
            &percentile::PERCENTILE,
            vec![input, Node::Const(p), Node::Const(median)],
        ))
    }

    fn sort_array(&mut self, arg: RawBsonRef<'_>) -> Result<Node> {
        let RawBsonRef::Document(d) = arg else {
            return Err(fail(
                ExprError::SortArrayNotObject,
                format!(
                    "$sortArray requires an object as an argument, found: {}",
                    type_name(&arg)
                ),
            ));
        };
        let entries = self.named(d, &["input", "sortBy"], |k| {
            fail(
                ExprError::SortArrayUnknownArgument,
                format!("$sortArray found an unknown argument: {k}"),
            )
        })?;
        let input = self.arg(&entries, "input")?.ok_or_else(|| {
            fail(
                ExprError::SortArrayMissingInput,
                "$sortArray requires 'input' to be specified",
            )
        })?;
        let Some((_, sort_by)) = entries.iter().find(|(k, _)| *k == "sortBy") else {
            return Err(fail(
                ExprError::SortArrayMissingSortBy,
                "$sortArray requires 'sortBy' to be specified",
            ));
        };
        array::check_sort_by(*sort_by)?;
        Ok(Node::Call(
            &array::SORT_ARRAY,
            vec![input, Node::Const((*sort_by).into())],
        ))
    }

    /// `$function`: `{body, args, lang: "js"}`, run by the embedded engine
    /// when server-side JavaScript is allowed.
    fn function(&mut self, arg: RawBsonRef<'_>) -> Result<Node> {
        if !self.env.javascript() {
            return Err(crate::js::disabled("$function"));
        }
        let RawBsonRef::Document(d) = arg else {
            return Err(Error::failed_to_parse(
                "$function requires an object as an argument",
            ));
        };
        let entries = self.named(d, &["body", "args", "lang"], |k| {
            Error::failed_to_parse(format!("$function found an unknown argument: {k}"))
        })?;
        let get = |name: &str| entries.iter().find(|(k, _)| *k == name).map(|(_, v)| *v);
        let source = match get("body") {
            Some(RawBsonRef::String(code) | RawBsonRef::JavaScriptCode(code)) => code,
            Some(_) => {
                return Err(Error::failed_to_parse(
                    "$function 'body' must be a string or a function",
                ));
            }
            None => {
                return Err(Error::failed_to_parse(
                    "$function requires a 'body' argument",
                ));
            }
        };
        match get("lang") {
            Some(RawBsonRef::String("js")) => {}
            Some(_) => {
                return Err(Error::failed_to_parse(
                    "$function currently only supports the language 'js'",
                ));
            }
            None => {
                return Err(Error::failed_to_parse(
                    "$function requires a 'lang' argument",
                ));
            }
        }
        let args = match get("args") {
            Some(RawBsonRef::Array(items)) => {
                let mut args = Vec::new();
                for item in items {
                    let item = item.map_err(|e| Error::corrupt(e.to_string()))?;
                    args.push(self.operand(item)?);
                }
                args
            }
            Some(_) => {
                return Err(Error::failed_to_parse("$function 'args' must be an array"));
            }
            None => {
                return Err(Error::failed_to_parse(
                    "$function requires an 'args' argument",
                ));
            }
        };
        Ok(Node::Script {
            source: std::sync::Arc::from(source),
            args,
        })
    }

    /// `{$meta: "textScore"}`: the `$text` score the aggregation carries
    /// with each document (`crate::text::SCORE_FIELD`). mongod's other
    /// metadata are refused.
    fn meta(&mut self, arg: RawBsonRef<'_>) -> Result<Node> {
        match arg {
            RawBsonRef::String("textScore") => {
                let spec = bson::rawdoc! {
                    "field": { "$literal": crate::text::SCORE_FIELD },
                    "input": "$$ROOT",
                };
                self.get_field(RawBsonRef::Document(&spec))
            }
            RawBsonRef::String(
                other @ ("randVal"
                | "searchScore"
                | "searchHighlights"
                | "geoNearDistance"
                | "geoNearPoint"
                | "recordId"
                | "indexKey"
                | "sortKey"
                | "searchScoreDetails"
                | "searchSequenceToken"
                | "vectorSearchScore"
                | "score"
                | "scoreDetails"),
            ) => Err(Error::not_implemented(&format!("{{$meta: \"{other}\"}}"))),
            RawBsonRef::String(other) => Err(Error::bad_value(format!(
                "Unsupported argument to $meta: {other}"
            ))),
            _ => Err(Error::bad_value("$meta only supports string arguments")),
        }
    }

    fn get_field(&mut self, arg: RawBsonRef<'_>) -> Result<Node> {
        let (field, input) = match arg {
            RawBsonRef::Document(d)
                if fields(d)?.first().is_some_and(|(k, _)| !k.starts_with('$')) =>
            {
                let entries = self.named(d, &["field", "input"], |k| {
                    fail(
                        ExprError::GetFieldUnknownArgument,
                        format!("$getField found an unknown argument: {k}"),
                    )
                })?;
                let field = self.arg(&entries, "field")?.ok_or_else(|| {
                    fail(
                        ExprError::GetFieldMissingField,
                        "$getField requires 'field' to be specified",
                    )
                })?;
                let input = match self.arg(&entries, "input")? {
                    Some(i) => i,
                    None => self.path("$$CURRENT")?,
                };
                (field, input)
            }
            // The short form: `{$getField: <field>}` reads from $$CURRENT.
            other => (self.operand(other)?, self.path("$$CURRENT")?),
        };
        object::check_field_name_arg("$getField", &field)?;
        Ok(Node::Call(&object::GET_FIELD, vec![field, input]))
    }

    fn set_field(&mut self, name: &str, arg: RawBsonRef<'_>) -> Result<Node> {
        let RawBsonRef::Document(d) = arg else {
            return Err(fail(
                ExprError::SetFieldNotObject,
                format!(
                    "{name} only supports an object as its argument, found {}",
                    type_name(&arg)
                ),
            ));
        };
        let unset = name == "$unsetField";
        let allowed: &[&str] = if unset {
            &["field", "input"]
        } else {
            &["field", "input", "value"]
        };
        let entries = self.named(d, allowed, |k| {
            fail(
                ExprError::SetFieldUnknownArgument,
                format!("{name} found an unknown argument: {k}"),
            )
        })?;
        let missing =
            |what: &str, kind| fail(kind, format!("{name} requires '{what}' to be specified"));
        let field = self
            .arg(&entries, "field")?
            .ok_or_else(|| missing("field", ExprError::SetFieldMissingField))?;
        let input = self
            .arg(&entries, "input")?
            .ok_or_else(|| missing("input", ExprError::SetFieldMissingInput))?;
        object::check_field_name_arg(name, &field)?;
        let value = if unset {
            Node::Missing
        } else {
            self.arg(&entries, "value")?
                .ok_or_else(|| missing("value", ExprError::SetFieldMissingValue))?
        };
        Ok(Node::Call(&object::SET_FIELD, vec![field, input, value]))
    }

    /// `{input, regex, options?}` of `$regexMatch`/`$regexFind`/`$regexFindAll`.
    fn regex(&mut self, name: &str, arg: RawBsonRef<'_>) -> Result<Node> {
        let RawBsonRef::Document(d) = arg else {
            return Err(fail(
                ExprError::RegexNotObject,
                format!(
                    "{name} expects an object of named arguments but found: {}",
                    type_name(&arg)
                ),
            ));
        };
        let entries = self.named(d, &["input", "regex", "options"], |k| {
            fail(
                ExprError::RegexUnknownArgument,
                format!("{name} found an unknown argument: {k}"),
            )
        })?;
        let input = self.arg(&entries, "input")?.ok_or_else(|| {
            fail(
                ExprError::RegexMissingInput,
                format!("{name} requires 'input' parameter"),
            )
        })?;
        let pattern = self.arg(&entries, "regex")?.ok_or_else(|| {
            fail(
                ExprError::RegexMissingRegex,
                format!("{name} requires 'regex' parameter"),
            )
        })?;
        let options = self.arg(&entries, "options")?.unwrap_or(Node::Missing);
        let op = match name {
            "$regexMatch" => &regex::REGEX_MATCH,
            "$regexFind" => &regex::REGEX_FIND,
            _ => &regex::REGEX_FIND_ALL,
        };
        Ok(Node::Call(op, vec![input, pattern, options]))
    }

    fn replace(&mut self, name: &str, arg: RawBsonRef<'_>) -> Result<Node> {
        let RawBsonRef::Document(d) = arg else {
            return Err(fail(
                ExprError::ReplaceNotObject,
                format!(
                    "{name} requires an object as an argument, found: {}",
                    type_name(&arg)
                ),
            ));
        };
        let entries = self.named(d, &["input", "find", "replacement"], |k| {
            fail(
                ExprError::ReplaceUnknownArgument,
                format!("{name} found an unknown argument: {k}"),
            )
        })?;
        let mut args = Vec::new();
        for (what, kind) in [
            ("input", ExprError::ReplaceMissingInput),
            ("find", ExprError::ReplaceMissingFind),
            ("replacement", ExprError::ReplaceMissingReplacement),
        ] {
            args.push(
                self.arg(&entries, what)?.ok_or_else(|| {
                    fail(kind, format!("{name} requires '{what}' to be specified"))
                })?,
            );
        }
        let op = if name == "$replaceOne" {
            &string::REPLACE_ONE
        } else {
            &string::REPLACE_ALL
        };
        Ok(Node::Call(op, args))
    }

    /// `$year: <date>`, `$year: [<date>]` or `$year: {date, timezone}`.
    fn date_part(&mut self, def: &'static OpDef, arg: RawBsonRef<'_>) -> Result<Node> {
        let name = def.name;
        let (date, timezone) = match arg {
            RawBsonRef::Document(d)
                if fields(d)?.first().is_some_and(|(k, _)| !k.starts_with('$')) =>
            {
                let entries = self.named(d, &["date", "timezone"], |k| {
                    fail(
                        ExprError::DatePartUnknownOption,
                        format!("unrecognized option to {name}: \"{k}\""),
                    )
                })?;
                let date = self.arg(&entries, "date")?.ok_or_else(|| {
                    fail(
                        ExprError::DatePartMissingDate,
                        format!(
                            "missing 'date' argument to {name}, provided: {}",
                            show_document(d)
                        ),
                    )
                })?;
                (date, self.arg(&entries, "timezone")?.unwrap_or_else(utc))
            }
            RawBsonRef::Array(a) => {
                let list = items(a)?;
                if list.len() != 1 {
                    return Err(fail(
                        ExprError::DatePartArrayLength,
                        format!(
                            "{name} accepts exactly one argument if given an array, but was given {}",
                            list.len()
                        ),
                    ));
                }
                (self.operand(list[0])?, utc())
            }
            other => (self.operand(other)?, utc()),
        };
        Ok(Node::Call(def, vec![date, timezone]))
    }

    fn date_to_parts(&mut self, arg: RawBsonRef<'_>) -> Result<Node> {
        let RawBsonRef::Document(d) = arg else {
            return Err(fail(
                ExprError::DateToPartsNotObject,
                "$dateToParts only supports an object as its argument",
            ));
        };
        let entries = self.named(d, &["date", "timezone", "iso8601"], |k| {
            fail(
                ExprError::DateToPartsUnknownArgument,
                format!("Unrecognized argument to $dateToParts: {k}"),
            )
        })?;
        let date = self.arg(&entries, "date")?.ok_or_else(|| {
            fail(
                ExprError::DateToPartsMissingDate,
                "Missing 'date' parameter to $dateToParts",
            )
        })?;
        let timezone = self.arg(&entries, "timezone")?.unwrap_or_else(utc);
        let iso = self
            .arg(&entries, "iso8601")?
            .unwrap_or(Node::Const(RawBson::Boolean(false)));
        Ok(Node::Call(&date::DATE_TO_PARTS, vec![date, timezone, iso]))
    }

    fn date_from_parts(&mut self, arg: RawBsonRef<'_>) -> Result<Node> {
        let RawBsonRef::Document(d) = arg else {
            return Err(fail(
                ExprError::DateFromPartsNotObject,
                "$dateFromParts only supports an object as its argument",
            ));
        };
        let names = date::FROM_PARTS_FIELDS;
        let entries = self.named(d, names, |k| {
            fail(
                ExprError::DateFromPartsUnknownArgument,
                format!("Unrecognized argument to $dateFromParts: {k}"),
            )
        })?;
        let has = |k: &str| entries.iter().any(|(n, _)| *n == k);
        if !has("year") && !has("isoWeekYear") {
            return Err(fail(
                ExprError::DateFromPartsNoYear,
                "$dateFromParts requires either 'year' or 'isoWeekYear' to be present",
            ));
        }
        if has("year") && (has("isoWeekYear") || has("isoWeek") || has("isoDayOfWeek")) {
            return Err(fail(
                ExprError::DateFromPartsMixedNatural,
                "$dateFromParts does not allow mixing natural dates with ISO dates",
            ));
        }
        if has("isoWeekYear") && (has("year") || has("month") || has("day")) {
            return Err(fail(
                ExprError::DateFromPartsMixedIso,
                "$dateFromParts does not allow mixing ISO dates with natural dates",
            ));
        }
        // Laid out as FROM_PARTS_FIELDS, absent parts as their defaults;
        // the first argument says which calendar the parts use.
        let mut args = vec![Node::Const(RawBson::Boolean(has("isoWeekYear")))];
        for name in names {
            args.push(match self.arg(&entries, name)? {
                Some(n) => n,
                None => date::from_parts_default(name),
            });
        }
        Ok(Node::Call(&date::DATE_FROM_PARTS, args))
    }

    fn date_add(&mut self, name: &str, arg: RawBsonRef<'_>) -> Result<Node> {
        let RawBsonRef::Document(d) = arg else {
            return Err(fail(
                ExprError::DateArithNotObject,
                format!("{name} expects an object as its argument"),
            ));
        };
        let entries = self.named(d, &["startDate", "unit", "amount", "timezone"], |k| {
            fail(
                ExprError::DateArithUnknownArgument,
                format!("Unrecognized argument to {name}: {k}. Expected arguments are startDate, unit, amount, and optionally timezone."),
            )
        })?;
        let mut args = Vec::new();
        for what in ["startDate", "unit", "amount"] {
            args.push(self.arg(&entries, what)?.ok_or_else(|| {
                fail(
                    ExprError::DateArithMissingArgument,
                    format!("{name} requires startDate, unit, and amount to be present"),
                )
            })?);
        }
        args.push(self.arg(&entries, "timezone")?.unwrap_or_else(utc));
        let op = if name == "$dateAdd" {
            &date::DATE_ADD
        } else {
            &date::DATE_SUBTRACT
        };
        Ok(Node::Call(op, args))
    }

    fn date_diff(&mut self, arg: RawBsonRef<'_>) -> Result<Node> {
        let RawBsonRef::Document(d) = arg else {
            return Err(fail(
                ExprError::DateDiffNotObject,
                "$dateDiff only supports an object as its argument",
            ));
        };
        let entries = self.named(
            d,
            &["startDate", "endDate", "unit", "timezone", "startOfWeek"],
            |k| {
                fail(
                    ExprError::DateDiffUnknownArgument,
                    format!("Unrecognized argument to $dateDiff: {k}"),
                )
            },
        )?;
        let mut args = Vec::new();
        for what in ["startDate", "endDate", "unit"] {
            args.push(self.arg(&entries, what)?.ok_or_else(|| {
                fail(
                    ExprError::DateDiffMissingArgument,
                    format!("Missing '{what}' parameter to $dateDiff"),
                )
            })?);
        }
        args.push(self.arg(&entries, "timezone")?.unwrap_or_else(utc));
        args.push(
            self.arg(&entries, "startOfWeek")?
                .unwrap_or_else(|| Node::Const(RawBson::String("sunday".into()))),
        );
        Ok(Node::Call(&date::DATE_DIFF, args))
    }

    fn date_trunc(&mut self, arg: RawBsonRef<'_>) -> Result<Node> {
        let RawBsonRef::Document(d) = arg else {
            return Err(fail(
                ExprError::DateTruncNotObject,
                format!(
                    "$dateTrunc only supports an object as its argument, found {}",
                    type_name(&arg)
                ),
            ));
        };
        let entries = self.named(
            d,
            &["date", "unit", "binSize", "timezone", "startOfWeek"],
            |k| {
                fail(
                    ExprError::DateTruncUnknownArgument,
                    format!("Unrecognized argument to $dateTrunc: {k}. Expected arguments are date, unit, and optionally, binSize, timezone, startOfWeek"),
                )
            },
        )?;
        let mut args = Vec::new();
        for what in ["date", "unit"] {
            args.push(self.arg(&entries, what)?.ok_or_else(|| {
                fail(
                    ExprError::DateTruncMissingArgument,
                    format!("Missing '{what}' parameter to $dateTrunc"),
                )
            })?);
        }
        args.push(
            self.arg(&entries, "binSize")?
                .unwrap_or(Node::Const(RawBson::Int64(1))),
        );
        args.push(self.arg(&entries, "timezone")?.unwrap_or_else(utc));
        args.push(
            self.arg(&entries, "startOfWeek")?
                .unwrap_or_else(|| Node::Const(RawBson::String("sunday".into()))),
        );
        Ok(Node::Call(&date::DATE_TRUNC, args))
    }
}

/// The default time zone of date operators.
fn utc() -> Node {
    Node::Const(RawBson::String("UTC".into()))
}

/// The value of a constant variable at a field path below it.
fn constant_path(value: Option<RawBson>, fields: &[String]) -> Node {
    match value {
        None => Node::Missing,
        Some(v) => match Val::Own(v).path(fields).into_bson() {
            Some(v) => Node::Const(v),
            None => Node::Missing,
        },
    }
}

/// A field name in an object expression: not empty, no `$` first, no dot.
fn object_field_name(k: &str) -> Result<()> {
    if k.is_empty() {
        return Err(Error::new(
            ErrorKind::EmptyFieldPathComponent,
            "FieldPath field names may not be empty strings.",
        ));
    }
    if k.starts_with('$') {
        return Err(Error::new(
            ErrorKind::DollarPrefixedFieldPathComponent,
            "FieldPath field names may not start with '$'. Consider using $getField or $setField.",
        ));
    }
    if k.contains('.') {
        return Err(fail(
            ExprError::FieldNameDot,
            "FieldPath field names may not contain '.'. Consider using $getField or $setField.",
        ));
    }
    Ok(())
}

fn show_document(d: &RawDocument) -> String {
    match bson::Document::try_from(d) {
        Ok(doc) => shell(&bson::Bson::Document(doc)),
        Err(_) => "<malformed>".to_owned(),
    }
}

/// Checks an operator's argument count.
fn check_arity(def: &OpDef, n: usize) -> Result<()> {
    let ok = match def.arity {
        Arity::Exactly(k) => n == k,
        Arity::Between(lo, hi) => (lo..=hi).contains(&n),
        Arity::AtLeast(k) => n >= k,
        Arity::Any => true,
    };
    if ok {
        Ok(())
    } else {
        Err(arity_error(def.name, def.arity, n))
    }
}

fn arity_error(name: &str, arity: Arity, n: usize) -> Error {
    match arity {
        Arity::Exactly(k) => fail(
            ExprError::ArgCount,
            format!("Expression {name} takes exactly {k} arguments. {n} were passed in."),
        ),
        Arity::Between(lo, hi) => fail(
            ExprError::ArgCountRange,
            format!(
                "Expression {name} takes at least {lo} arguments, and at most {hi}, but {n} were passed in."
            ),
        ),
        Arity::AtLeast(_) | Arity::Any => fail(
            ExprError::ArgCountAtLeast,
            format!("{name} needs at least two arguments had: {n}"),
        ),
    }
}

/// The value of a named argument (the last one, if it is given twice).
fn given<'a>(entries: &[(&str, RawBsonRef<'a>)], name: &str) -> Option<RawBsonRef<'a>> {
    entries
        .iter()
        .rev()
        .find(|(k, _)| *k == name)
        .map(|(_, v)| *v)
}

/// A named argument the operator cannot do without.
fn required<'a>(
    entries: &[(&str, RawBsonRef<'a>)],
    name: &str,
    missing: impl FnOnce() -> Error,
) -> Result<RawBsonRef<'a>> {
    given(entries, name).ok_or_else(missing)
}
