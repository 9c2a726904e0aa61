//! The validation options of `create` and `collMod` (`validator`,
//! `validationLevel`, `validationAction`): their types and values checked
//! as mongod checks them (types and enumerations first, then the
//! validator itself), so a bad option fails the command before anything
//! is stored. What the options do is `ebb_lang::validator`'s business.

use bson::Document;
use ebb_actors::catalog::{ModifyValidation, ValidationChange};
use ebb_lang::validator::{ValidationAction, ValidationLevel, parse_validator};

use super::Request;
use crate::args::Args;
use crate::error::CommandResult;

/// Reads the validation options of a `create` or `collMod` command.
pub fn parse(args: &Args<'_>) -> CommandResult<ValidationChange> {
    let field = |name: &str| format!("{}.{name}", args.command_name());
    let validator = args.doc("validator")?;
    let level = args.str("validationLevel")?;
    let action = args.str("validationAction")?;
    let level = level
        .map(|l| ValidationLevel::parse(l, &field("validationLevel")))
        .transpose()?;
    let action = action
        .map(|a| ValidationAction::parse(a, &field("validationAction")))
        .transpose()?;
    let validator = match validator {
        None => None,
        Some(v) => {
            parse_validator(v)?;
            Some(Document::try_from(v)?)
        }
    };
    Ok(ValidationChange {
        validator,
        level,
        action,
    })
}

/// Applies `collMod`'s validation options to collection `name`.
pub async fn modify(req: &Request, name: &str, change: ValidationChange) -> CommandResult<()> {
    req.node
        .catalog
        .send(ModifyValidation {
            db: req.db.clone(),
            name: name.to_owned(),
            change,
            applying: req.applying(),
        })
        .await??;
    Ok(())
}
