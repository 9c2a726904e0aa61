//! What a node's `serverStatus` says, for the scenarios that report it:
//! the whole reply, and how ebb's writers ran the TTL chunks
//! (`metrics.ttl.chunkRuns`, absent from other stores).

use anyhow::Result;
use mongodb::Client;
use mongodb::bson::{Document, doc};

use crate::report::Outcome;

pub async fn status(client: &Client) -> Result<Document> {
    Ok(client
        .database("admin")
        .run_command(doc! { "serverStatus": 1 })
        .await?)
}

/// How the writer ran the TTL chunks so far (ebb's `chunkRuns`; `None`
/// from a store that does not report them).
pub async fn chunk_runs(client: &Client) -> Result<Option<Document>> {
    Ok(status(client)
        .await?
        .get_document("metrics")
        .and_then(|m| m.get_document("ttl"))
        .and_then(|t| t.get_document("chunkRuns"))
        .ok()
        .cloned())
}

/// Adds the chunk-run counts to a report (`null` where the store has none),
/// each key after `prefix`.
pub fn add_chunk_runs(out: &mut Outcome, prefix: &str, runs: Option<&Document>) {
    for (key, field) in [
        ("chunks_planned", "planned"),
        ("chunks_planned_ahead", "ahead"),
        ("chunks_on_writer", "onWriter"),
        ("plans_stale", "stalePlans"),
        ("plans_overdue", "overduePlans"),
        ("chunks_prompt", "prompt"),
        ("chunks_behind", "behind"),
        ("chunks_throttled", "throttled"),
    ] {
        let n = runs.and_then(|r| r.get_i64(field).ok());
        out.add(&format!("{prefix}{key}"), n, "chunks");
    }
}
