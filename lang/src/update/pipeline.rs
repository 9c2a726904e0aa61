//! Pipeline-style updates: `u` as an array of aggregation stages, limited
//! to the stages MongoDB allows in an update (`$addFields`/`$set`,
//! `$project`/`$unset`, `$replaceRoot`/`$replaceWith`). The stages are the
//! aggregation pipeline's own, run on a one-document pipeline; what comes
//! out replaces the document, under the replacement rules (`_id` kept and
//! immutable), which the caller applies.
//!
//! Nothing here evaluates an expression or knows a stage's semantics.

use bson::{RawArray, RawBsonRef, RawDocument, RawDocumentBuf};

use crate::pipeline::{Env, Pipeline, Stage, parse_update_stage};
use crate::{Error, ErrorKind, Result};

/// A parsed update pipeline.
#[derive(Debug, Clone)]
pub struct PipelineUpdate {
    stages: Vec<Stage>,
}

impl PipelineUpdate {
    /// Parses each stage, refusing stages MongoDB does not allow in an
    /// update.
    pub(crate) fn parse(stages: &RawArray, env: &Env) -> Result<PipelineUpdate> {
        let mut parsed = Vec::new();
        for item in stages {
            let RawBsonRef::Document(stage) = item? else {
                return Err(Error::type_mismatch(
                    "Each element of the 'pipeline' array must be an object",
                ));
            };
            parsed.push(parse_update_stage(stage, env)?);
        }
        Ok(PipelineUpdate { stages: parsed })
    }

    /// The document the pipeline turns `doc` into.
    pub(crate) fn run(&self, doc: &RawDocument) -> Result<RawDocumentBuf> {
        let mut pipeline = Pipeline::new(self.stages.clone());
        pipeline.push(doc.to_owned())?;
        let mut out = pipeline.finish()?;
        match (out.pop(), out.is_empty()) {
            (Some(new), true) => Ok(new),
            // The update stages map one document to one document.
            _ => Err(Error::new(
                ErrorKind::IllegalOperation,
                "an update pipeline must turn one document into exactly one document",
            )),
        }
    }
}
