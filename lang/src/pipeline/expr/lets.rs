//! A command's `let` option: a document of constant expressions, evaluated
//! once, in order, before any document is read, into the command's
//! [`Env`]. Each may use `$$NOW` and the variables defined before it, never
//! a field.

use bson::RawDocument;

use super::parse::Parser;
use super::value::{Cx, binary_order, fail};
use super::vars::{Env, valid_for_write};
use crate::error::{Error, ExprError, Result};

/// Builtin variables a command's `let` may not set.
const SYSTEM_VARIABLES: &[&str] = &["NOW", "CLUSTER_TIME", "JS_SCOPE", "IS_MR", "USER_ROLES"];

impl Env {
    /// An environment with `$$NOW` and the command's `let` variables. Each
    /// `let` expression may use `$$NOW` and the variables defined before it,
    /// but no field of any document.
    pub fn with_let(now: bson::DateTime, lets: Option<&RawDocument>) -> Result<Env> {
        let mut env = Env::new(now);
        let Some(lets) = lets else {
            return Ok(env);
        };
        for item in lets.iter() {
            let (name, value) =
                item.map_err(|e| Error::failed_to_parse(format!("malformed BSON in 'let': {e}")))?;
            let name = name.as_str();
            if let Err(e) = valid_for_write(name) {
                if SYSTEM_VARIABLES.contains(&name) {
                    return Err(fail(
                        ExprError::LetSetsSystemVariable,
                        format!("Attempt to set internal constant: {name}"),
                    ));
                }
                return Err(Error::new(
                    e.kind,
                    format!("Invalid 'let' parameter :: caused by :: {}", e.message),
                ));
            }
            let mut parser = Parser::new(&env);
            let node = parser.operand(value)?;
            if parser.reads_document() {
                return Err(fail(
                    ExprError::LetReadsDocument,
                    "Command let Expression tried to access a field, but this is not allowed \
                     becauseCommand let Expressions run before the query examines any documents.",
                ));
            }
            let empty = bson::RawDocumentBuf::new();
            let cx = Cx::new(&binary_order);
            let value = super::eval::evaluate(&node, parser.slots(), &empty, &cx)?;
            env.bind(name, value.into_bson());
        }
        Ok(env)
    }
}
