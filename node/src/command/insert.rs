//! `insert`: documents to the collection's writer, one atomic batch.

use bson::RawDocumentBuf;
use ebb_actors::collection::InsertDocs;

use super::write::{documents, map_errors, n_reply, ordered, send_write};
use super::{Request, ok};
use crate::args::Args;
use crate::context::NodeContext;
use crate::error::CommandResult;

const ARGS: &[&str] = &["documents", "ordered", "bypassDocumentValidation", "let"];

pub async fn insert(req: Request) -> CommandResult {
    let args = Args::parse(&req.body, ARGS)?;
    let name = args.collection()?;
    let docs: Vec<RawDocumentBuf> = documents(&args, "documents")?
        .into_iter()
        .map(|d| d.to_owned())
        .collect();
    let ordered = ordered(&args)?;
    let sync = args.journaled();
    let count = docs.len() as u64;
    let outcome = send_write(&req, name, true, || InsertDocs {
        docs: docs.clone(),
        ordered,
        sync,
    })
    .await?
    .expect("inserts create their collection");
    NodeContext::count(&req.node.opcounters.insert, count);
    let positions: Vec<usize> = (0..count as usize).collect();
    ok(n_reply(outcome.n, map_errors(outcome.errors, &positions)))
}
