//! `delete`: statements `{q, limit: 0|1, hint?, collation?}`.

use bson::RawBsonRef;
use ebb_actors::collection::DeleteDocs;
use ebb_storage::write::statement::DeleteStatement;

use super::write::{documents, map_errors, n_reply, ordered, send_write};
use super::{Request, ok, query};
use crate::args::{Args, as_i64, type_name};
use crate::context::NodeContext;
use crate::error::{CommandError, CommandResult, codes};

const ARGS: &[&str] = &["deletes", "ordered", "let"];
const STATEMENT: &[&str] = &["q", "limit", "hint", "collation"];

/// A parsed `delete`: the statements that parsed, with their positions in
/// the command, and the write errors of those whose filter did not.
pub struct DeleteCommand {
    pub collection: String,
    pub ordered: bool,
    /// `j: true`: durable before acknowledged.
    pub sync: bool,
    /// Statements received (for `opcounters`).
    pub received: usize,
    pub statements: Vec<DeleteStatement>,
    pub positions: Vec<usize>,
    pub errors: Vec<(usize, CommandError)>,
}

impl DeleteCommand {
    /// Parses the command. A malformed statement fails the command; a filter
    /// that does not parse is that statement's write error (an ordered
    /// command stops there).
    pub fn parse(args: &Args<'_>) -> CommandResult<DeleteCommand> {
        let collection = args.collection()?.to_owned();
        let raw = documents(args, "deletes")?;
        let ordered = ordered(args)?;
        let mut cmd = DeleteCommand {
            collection,
            ordered,
            sync: args.journaled(),
            received: raw.len(),
            statements: Vec::new(),
            positions: Vec::new(),
            errors: Vec::new(),
        };
        for (i, st) in raw.iter().enumerate() {
            let (q, just_one) = check_shape(st)?;
            match statement(st, q, just_one) {
                Ok(s) => {
                    cmd.statements.push(s);
                    cmd.positions.push(i);
                }
                Err(e) => {
                    cmd.errors.push((i, e));
                    if ordered {
                        break;
                    }
                }
            }
        }
        Ok(cmd)
    }
}

pub async fn delete(req: Request) -> CommandResult {
    let args = Args::parse(&req.body, ARGS)?;
    let cmd = DeleteCommand::parse(&args)?;
    NodeContext::count(&req.node.opcounters.delete, cmd.received as u64);
    let DeleteCommand {
        collection,
        ordered,
        sync,
        statements,
        positions,
        mut errors,
        ..
    } = cmd;
    let mut n = 0;
    if !statements.is_empty() {
        let sent = send_write(&req, &collection, false, || DeleteDocs {
            statements: statements.clone(),
            ordered,
            sync,
        });
        if let Some(out) = sent.await? {
            n = out.n;
            errors.extend(map_errors(out.errors, &positions));
        }
    }
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
) -> CommandResult<DeleteStatement> {
    Ok(DeleteStatement {
        filter: query::filter(Some(q))?,
        just_one,
        hint: query::hint(st.get("hint")?)?,
    })
}
