//! `insert`: documents to the collection's writer, one atomic batch.

use bson::RawDocumentBuf;
use ebb_actors::collection::InsertDocs;

use super::write::{documents, map_errors, n_reply, ordered, send_write};
use super::{Request, ok};
use crate::args::Args;
use crate::context::NodeContext;
use crate::error::CommandResult;

const ARGS: &[&str] = &["documents", "ordered", "bypassDocumentValidation", "let"];

/// A parsed `insert`.
pub struct InsertCommand {
    pub collection: String,
    pub documents: Vec<RawDocumentBuf>,
    pub ordered: bool,
    /// `j: true`: durable before acknowledged.
    pub sync: bool,
    /// `bypassDocumentValidation: true`.
    pub bypass_validation: bool,
}

impl InsertCommand {
    pub fn parse(args: &Args<'_>) -> CommandResult<InsertCommand> {
        Ok(InsertCommand {
            collection: args.collection()?.to_owned(),
            documents: documents(args, "documents")?
                .into_iter()
                .map(|d| d.to_owned())
                .collect(),
            ordered: ordered(args)?,
            sync: args.journaled(),
            bypass_validation: args.bool("bypassDocumentValidation")?.unwrap_or(false),
        })
    }
}

pub async fn insert(req: Request) -> CommandResult {
    let args = Args::parse(&req.body, ARGS)?;
    let InsertCommand {
        collection,
        documents,
        ordered,
        sync,
        bypass_validation,
    } = InsertCommand::parse(&args)?;
    let count = documents.len() as u64;
    let outcome = send_write(&req, &collection, true, || InsertDocs {
        docs: documents.clone(),
        ordered,
        sync,
        bypass_validation,
    })
    .await?
    .expect("inserts create their collection");
    NodeContext::count(&req.node.opcounters.insert, count);
    let positions: Vec<usize> = (0..count as usize).collect();
    ok(n_reply(outcome.n, map_errors(outcome.errors, &positions)))
}
