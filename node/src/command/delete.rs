//! `delete`: statements `{q, limit: 0|1, hint?, collation?}`.

use bson::RawBsonRef;
use ebb_actors::collection::DeleteDocs;
use ebb_lang::pipeline::Env;
use ebb_storage::statement::DeleteStatement;

use super::write::{
    Statements, interrupted, map_errors, n_reply, note_statements, ordered, send_write, statements,
};
use super::{Request, ok, query};
use crate::args::{Args, as_i64, type_name};
use crate::context::NodeContext;
use crate::error::{CommandError, CommandResult, codes};

const ARGS: &[&str] = &["deletes", "ordered", "let"];
const STATEMENT: &[&str] = &["q", "limit", "hint", "collation"];

/// A parsed `delete`.
pub struct DeleteCommand {
    pub collection: String,
    pub ordered: bool,
    /// `j: true`: durable before acknowledged.
    pub sync: bool,
    pub statements: Statements<DeleteStatement>,
}

impl DeleteCommand {
    /// Parses the command. A malformed statement fails the command; a filter
    /// that does not parse is that statement's write error.
    pub fn parse(args: &Args<'_>, env: &Env) -> CommandResult<DeleteCommand> {
        let ordered = ordered(args)?;
        let deadline = query::deadline(args)?;
        Ok(DeleteCommand {
            collection: args.collection()?.to_owned(),
            ordered,
            sync: args.journaled(),
            statements: statements(args, "deletes", ordered, |st| {
                let (q, just_one) = check_shape(st)?;
                Ok(statement(st, q, just_one, env, deadline))
            })?,
        })
    }
}

pub async fn delete(req: Request) -> CommandResult {
    let args = Args::parse(&req.body, ARGS)?;
    let DeleteCommand {
        collection,
        ordered,
        sync,
        statements,
    } = DeleteCommand::parse(&args, &query::env(&req, &args)?)?;
    NodeContext::count(&req.node.opcounters.delete, statements.received as u64);
    let Statements {
        parsed,
        positions,
        mut errors,
        ..
    } = statements;
    let mut n = 0;
    let mut ran = None;
    if !parsed.is_empty() {
        let sent = send_write(&req, &collection, false, || DeleteDocs {
            statements: parsed.clone(),
            ordered,
            sync,
            decided: req.decided.clone(),
        });
        if let Some(out) = sent.await? {
            n = out.n;
            errors.extend(map_errors(out.errors, &positions));
            ran = Some(out.statements);
        }
    }
    if req.node.profiler.active(&req.db) {
        note_statements(ran, &positions, &errors);
    }
    interrupted(&errors)?;
    ok(n_reply(n, errors))
}

fn check_shape(st: &bson::RawDocument) -> CommandResult<(&bson::RawDocument, bool)> {
    query::collation(st.get("collation")?)?;
    for el in st.iter() {
        let (k, _) = el?;
        if !STATEMENT.contains(&k.as_str()) {
            return Err(CommandError::new(
                codes::UNKNOWN_FIELD,
                format!(
                    "BSON field 'delete.deletes.{}' is an unknown field.",
                    k.as_str()
                ),
            ));
        }
    }
    let q = match st.get("q")? {
        Some(RawBsonRef::Document(d)) => d,
        Some(other) => {
            return Err(CommandError::new(
                codes::TYPE_MISMATCH,
                format!(
                    "BSON field 'delete.deletes.q' is the wrong type '{}', expected type 'object'",
                    type_name(&other)
                ),
            ));
        }
        None => {
            return Err(CommandError::new(
                codes::MISSING_FIELD,
                "BSON field 'delete.deletes.q' is missing but a required field",
            ));
        }
    };
    let limit = match st.get("limit")? {
        Some(v) => as_i64(v).ok_or_else(|| {
            CommandError::new(
                codes::TYPE_MISMATCH,
                format!("BSON field 'delete.deletes.limit' is the wrong type '{}', expected types '[long, int, decimal, double]'", type_name(&v)),
            )
        })?,
        None => {
            return Err(CommandError::new(codes::MISSING_FIELD, "BSON field 'delete.deletes.limit' is missing but a required field"));
        }
    };
    if limit != 0 && limit != 1 {
        return Err(CommandError::failed_to_parse(format!(
            "The limit field in delete objects must be 0 or 1. Got {limit}"
        )));
    }
    Ok((q, limit == 1))
}

fn statement(
    st: &bson::RawDocument,
    q: &bson::RawDocument,
    just_one: bool,
    env: &Env,
    deadline: Option<std::time::Instant>,
) -> CommandResult<DeleteStatement> {
    Ok(DeleteStatement {
        filter: query::filter(Some(q), env)?,
        collation: query::collation(st.get("collation")?)?,
        just_one,
        hint: query::hint(st.get("hint")?)?,
        deadline,
        interrupt: crate::ops::current(),
    })
}
