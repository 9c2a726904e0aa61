//! `insert`: documents to the collection's writer, one atomic batch.

use std::sync::Arc;

use bson::RawDocumentBuf;
use ebb_actors::collection::InsertDocs;
use ebb_storage::write::writer::prepare_statement;

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
    /// The documents went through `prepare_insert` here, off the writer.
    pub prepared: bool,
}

impl InsertCommand {
    pub fn parse(args: &Args<'_>) -> CommandResult<InsertCommand> {
        let collection = args.collection()?.to_owned();
        let sent = documents(args, "documents")?;
        let (documents, prepared) = match prepare_statement(&sent) {
            Some(documents) => (documents, true),
            None => (sent.into_iter().map(|d| d.to_owned()).collect(), false),
        };
        Ok(InsertCommand {
            collection,
            documents,
            prepared,
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
        prepared,
    } = ebb_lang::decided::within(req.decided.clone(), || InsertCommand::parse(&args))?;
    let count = documents.len() as u64;
    let documents = Arc::new(documents);
    let outcome = send_write(&req, &collection, true, || InsertDocs {
        docs: Arc::clone(&documents),
        ordered,
        sync,
        bypass_validation,
        prepared,
        decided: req.decided.clone(),
    })
    .await?
    .expect("inserts create their collection");
    NodeContext::count(&req.node.opcounters.insert, count);
    let positions: Vec<usize> = (0..count as usize).collect();
    ok(n_reply(outcome.n, map_errors(outcome.errors, &positions)))
}
