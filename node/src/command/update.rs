//! `update`: statements `{q, u, upsert?, multi?, hint?, …}`.
//!
//! Malformed statements (missing `q`/`u`, wrong types, unknown fields) fail
//! the whole command, as MongoDB's parser does. Errors in what a statement
//! says — an unknown update operator, an invalid filter — are write errors
//! of that statement: an ordered command stops there, keeping what the
//! statements before it did.

use bson::RawBsonRef;
use ebb_actors::collection::UpdateDocs;
use ebb_lang::pipeline::Env;
use ebb_lang::update::UpdateSpec;
use ebb_storage::Error as StorageError;
use ebb_storage::statement::UpdateStatement;

use super::write::{
    Statements, array_filters, interrupted, map_errors, note_statements, ordered, send_write,
    statements, with_write_errors,
};
use super::{Request, ok, query};
use crate::args::{Args, type_name};
use crate::context::NodeContext;
use crate::error::{CommandError, CommandResult, codes};

/// MongoDB's name for the statements' `arrayFilters`, in messages.
const ARRAY_FILTERS: &str = "update.updates.arrayFilters";

const ARGS: &[&str] = &["updates", "ordered", "bypassDocumentValidation", "let"];
const STATEMENT: &[&str] = &[
    "q",
    "u",
    "upsert",
    "multi",
    "hint",
    "collation",
    "arrayFilters",
    "c",
    "upsertSupplied",
];

/// A parsed `update`.
pub struct UpdateCommand {
    pub collection: String,
    pub ordered: bool,
    /// `j: true`: durable before acknowledged.
    pub sync: bool,
    pub statements: Statements<UpdateStatement>,
}

impl UpdateCommand {
    /// Parses the command. A malformed statement fails the command; what a
    /// statement says (an unknown operator, a bad filter) is its write error.
    pub fn parse(args: &Args<'_>, env: &Env) -> CommandResult<UpdateCommand> {
        let ordered = ordered(args)?;
        let bypass_validation = args.bool("bypassDocumentValidation")?.unwrap_or(false);
        let deadline = query::deadline(args)?;
        Ok(UpdateCommand {
            collection: args.collection()?.to_owned(),
            ordered,
            sync: args.journaled(),
            statements: statements(args, "updates", ordered, |st| {
                check_shape(st)?;
                Ok(parse_statement(st, bypass_validation, env, deadline))
            })?,
        })
    }
}

pub async fn update(req: Request) -> CommandResult {
    let args = Args::parse(&req.body, ARGS)?;
    let UpdateCommand {
        collection,
        ordered,
        sync,
        statements,
    } = UpdateCommand::parse(&args, &query::env(&req, &args)?)?;
    NodeContext::count(&req.node.opcounters.update, statements.received as u64);
    let Statements {
        parsed,
        positions,
        mut errors,
        ..
    } = statements;
    // A statement that may insert creates the collection.
    let may_insert = parsed.iter().any(|s| s.upsert);
    let (mut n, mut n_modified, mut upserted) = (0u64, 0u64, Vec::new());
    let outcome = if parsed.is_empty() {
        None
    } else {
        send_write(&req, &collection, may_insert, || UpdateDocs {
            statements: parsed.clone(),
            ordered,
            sync,
            decided: req.decided.clone(),
        })
        .await?
    };
    let mut ran = None;
    if let Some(out) = outcome {
        n = out.n;
        n_modified = out.n_modified;
        upserted = out
            .upserted
            .into_iter()
            .map(|(i, id)| bson::doc! { "index": positions[i] as i32, "_id": id })
            .collect::<Vec<_>>();
        errors.extend(map_errors(out.errors, &positions));
        ran = Some(out.statements);
    }
    if req.node.profiler.active(&req.db) {
        note_statements(ran, &positions, &errors);
    }
    interrupted(&errors)?;
    let mut reply = bson::doc! { "n": n as i32, "nModified": n_modified as i32 };
    if !upserted.is_empty() {
        reply.insert("upserted", upserted);
    }
    ok(with_write_errors(reply, errors))
}

/// Shape errors fail the whole command.
fn check_shape(st: &bson::RawDocument) -> CommandResult<()> {
    query::collation(st.get("collation")?)?;
    for el in st.iter() {
        let (k, v) = el?;
        let k = k.as_str();
        if !STATEMENT.contains(&k) {
            return Err(CommandError::new(
                codes::UNKNOWN_FIELD,
                format!("BSON field 'update.updates.{k}' is an unknown field."),
            ));
        }
        let bad = match k {
            "q" => !matches!(v, RawBsonRef::Document(_)),
            "u" => !matches!(v, RawBsonRef::Document(_) | RawBsonRef::Array(_)),
            "upsert" | "multi" => !matches!(v, RawBsonRef::Boolean(_)),
            _ => false,
        };
        if bad {
            let expected = match k {
                "q" => "type 'object'",
                "u" => "types '[object, array]'",
                _ => "type 'bool'",
            };
            return Err(CommandError::new(
                codes::TYPE_MISMATCH,
                format!(
                    "BSON field 'update.updates.{k}' is the wrong type '{}', expected {expected}",
                    type_name(&v)
                ),
            ));
        }
    }
    array_filters(st.get("arrayFilters")?, ARRAY_FILTERS)?;
    for required in ["q", "u"] {
        if st.get(required)?.is_none() {
            return Err(CommandError::new(
                codes::MISSING_FIELD,
                format!("BSON field 'update.updates.{required}' is missing but a required field"),
            ));
        }
    }
    Ok(())
}

fn parse_statement(
    st: &bson::RawDocument,
    bypass_validation: bool,
    env: &Env,
    deadline: Option<std::time::Instant>,
) -> CommandResult<UpdateStatement> {
    let q = st
        .get_document("q")
        .map_err(|_| CommandError::failed_to_parse("q must be an object"))?;
    let u = st.get("u")?.expect("checked by check_shape");
    let update = UpdateSpec::parse_in(
        u,
        &array_filters(st.get("arrayFilters")?, ARRAY_FILTERS)?,
        env,
    )?;
    let flag = |f: &str| matches!(st.get(f), Ok(Some(RawBsonRef::Boolean(true))));
    if st.get("c")?.is_some() {
        return Err(match update {
            UpdateSpec::Pipeline(_) => {
                StorageError::not_implemented("constants ('c') in a pipeline-style update").into()
            }
            _ => CommandError::new(
                codes::CONSTANTS_NEED_PIPELINE,
                "Constant values may only be specified for pipeline updates",
            ),
        });
    }
    if flag("upsertSupplied") {
        return Err(StorageError::not_implemented("upsertSupplied").into());
    }
    let multi = flag("multi");
    if multi && matches!(update, UpdateSpec::Replacement(_)) {
        return Err(CommandError::failed_to_parse(
            "multi update is not supported for replacement-style update",
        ));
    }
    Ok(UpdateStatement {
        filter: query::filter(Some(q), env)?,
        collation: query::collation(st.get("collation")?)?,
        filter_doc: q.to_owned(),
        update,
        multi,
        upsert: flag("upsert"),
        hint: query::hint(st.get("hint")?)?,
        bypass_validation,
        deadline,
        interrupt: crate::ops::current(),
    })
}
