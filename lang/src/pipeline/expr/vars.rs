//! Variables a command gives its expressions: `$$NOW` (one instant for the
//! whole command) and the command's `let` option, evaluated once before any
//! document is read. Also MongoDB's rules for variable names.
//!
//! Per-document variables (`$$ROOT`, `$$CURRENT`, `$let`, `$map`'s `as`)
//! are not kept here: the parser gives them slots in the evaluation frame.

use bson::RawBson;

use crate::error::{Error, ErrorKind, Result};

/// The variables every expression of one command sees.
#[derive(Debug, Clone)]
pub struct Env {
    now: bson::DateTime,
    /// `let` variables in definition order; `None` holds a variable bound to
    /// a missing value (`$$REMOVE`).
    vars: Vec<(String, Option<RawBson>)>,
    /// Variables whose values come later (`$lookup`'s `let`, one value per
    /// input document): a sub-pipeline parsed with them only to be checked.
    pending: Vec<String>,
    /// Whether server-side JavaScript may run (`$where`, `$function`,
    /// `$accumulator`): mongod's `security.javascriptEnabled`.
    javascript: bool,
}

impl Env {
    /// An environment with only `$$NOW`.
    pub fn new(now: bson::DateTime) -> Env {
        Env {
            now,
            vars: Vec::new(),
            pending: Vec::new(),
            javascript: false,
        }
    }

    /// The same environment with server-side JavaScript allowed or not.
    pub fn with_javascript(mut self, allowed: bool) -> Env {
        self.javascript = allowed;
        self
    }

    /// Whether server-side JavaScript may run.
    pub fn javascript(&self) -> bool {
        self.javascript
    }

    /// Binds a `let` variable (a later one of the same name replaces it).
    pub(crate) fn bind(&mut self, name: &str, value: Option<RawBson>) {
        self.vars.retain(|(n, _)| n != name);
        self.pending.retain(|n| n != name);
        self.vars.push((name.to_owned(), value));
    }

    /// Declares a variable whose value is not known yet: expressions parsed
    /// in this environment may name it, and it is never folded into a
    /// constant. Such trees are for checking a pipeline, not for running it.
    pub(crate) fn declare_pending(&mut self, name: &str) {
        self.vars.retain(|(n, _)| n != name);
        self.pending.retain(|n| n != name);
        self.pending.push(name.to_owned());
    }

    /// Whether `name` is a variable declared with `Env::declare_pending`.
    pub fn is_pending(&self, name: &str) -> bool {
        self.pending.iter().any(|n| n == name)
    }

    pub fn now(&self) -> bson::DateTime {
        self.now
    }

    /// A `let` variable's value: `None` when there is no such variable,
    /// `Some(None)` when it is bound to a missing value.
    pub fn var(&self, name: &str) -> Option<Option<&RawBson>> {
        self.vars
            .iter()
            .rev()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_ref())
    }
}

/// A variable name a user may bind (`$let`, `as`, `let`): a lowercase
/// letter (or non-ASCII) first, then letters, digits and `_`. `CURRENT`
/// may be rebound too.
pub(crate) fn valid_for_write(name: &str) -> Result<()> {
    if name == "CURRENT" {
        return Ok(());
    }
    valid_name(name, |c| c.is_ascii_lowercase() || !c.is_ascii())
}

/// A variable name a user may read (`$$name`): any letter first.
pub(super) fn valid_for_read(name: &str) -> Result<()> {
    valid_name(name, |c| c.is_ascii_alphabetic() || !c.is_ascii())
}

fn valid_name(name: &str, first_ok: fn(char) -> bool) -> Result<()> {
    let mut chars = name.chars();
    let Some(first) = chars.next() else {
        return Err(Error::new(
            ErrorKind::FailedToParse,
            "empty variable names are not allowed",
        ));
    };
    if !first_ok(first) {
        return Err(Error::new(
            ErrorKind::FailedToParse,
            format!("'{name}' starts with an invalid character for a user variable name"),
        ));
    }
    if let Some(bad) = chars.find(|c| c.is_ascii() && !(c.is_ascii_alphanumeric() || *c == '_')) {
        return Err(Error::new(
            ErrorKind::FailedToParse,
            format!("'{name}' contains an invalid character for a variable name: '{bad}'"),
        ));
    }
    Ok(())
}
