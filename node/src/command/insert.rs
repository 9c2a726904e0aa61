//! `insert`: documents to the collection's writer, one atomic batch.

use bson::RawDocumentBuf;
use ebb_actors::collection::InsertDocs;

use super::write::{collection_gone, documents, map_errors, n_reply, ordered, target};
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
    let mut attempt = 0;
    let outcome = loop {
        let entry = target(&req, name, true).await?.expect("created on demand");
        let r = entry
            .addr
            .send(InsertDocs {
                docs: docs.clone(),
                ordered,
                sync,
            })
            .await;
        attempt += 1;
        if collection_gone(&r) && attempt < 2 {
            continue;
        }
        break r??;
    };
    NodeContext::count(&req.node.opcounters.insert, count);
    let positions: Vec<usize> = (0..count as usize).collect();
    ok(n_reply(outcome.n, map_errors(outcome.errors, &positions)))
}
