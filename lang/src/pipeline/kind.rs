//! [`Stage`]: one parsed stage, what the parser (`stage`) produces and the
//! runner (`run`) executes, with the data of the stages that nest
//! pipelines ([`Lookup`], [`UnionWith`], [`SubPipeline`]).
//!
//! Only data lives here. A stage holds pipelines that hold stages, so the
//! types must share one file; what each stage does lives in its own file
//! (`lookup`, `sub`, `facet`, `bucket`, `sample`) as methods on these
//! types, and callers name only the types, never those files.

use bson::{RawDocument, RawDocumentBuf};

use super::accumulator::Acc;
use super::expr::{Env, Expr};
use super::project::ComputedProjection;
use super::window::SetWindowFields;
use crate::error::Result;
use crate::query::filter::Filter;
use crate::query::projection::Projection;
use crate::query::sort::SortSpec;

/// One parsed stage.
#[derive(Debug, Clone)]
pub enum Stage {
    Match(Filter),
    Sort(SortSpec),
    Skip(u64),
    Limit(u64),
    Project(Projection),
    /// `$project` with computed fields.
    ProjectComputed(ComputedProjection),
    AddFields(Vec<(String, Expr)>),
    Unwind {
        path: String,
        preserve_empty: bool,
        index_field: Option<String>,
    },
    Count(String),
    Group {
        id: Expr,
        accs: Vec<(String, Acc)>,
    },
    /// `$replaceRoot` / `$replaceWith`: the document becomes the value of
    /// `new_root`, which must be a document. `what` names the expression
    /// in the error message, as MongoDB words it for each spelling.
    ReplaceRoot {
        new_root: Expr,
        what: &'static str,
    },
    /// `$redact`: each document kept, pruned, or descended into
    /// (`$$CURRENT` each embedded document in turn), as its expression says.
    Redact(Expr),
    /// `$lookup`: each document gains the array of documents it joins.
    Lookup(Box<Lookup>),
    /// `$graphLookup`: each document gains the documents a breadth-first
    /// search reaches from it.
    GraphLookup(Box<GraphLookup>),
    /// `$densify`: the input with documents added in its gaps.
    Densify(Box<Densify>),
    /// `$unionWith`: the input, then another collection's documents
    /// through a pipeline of their own.
    UnionWith(Box<UnionWith>),
    /// `$documents`: the documents an expression evaluates to, as the
    /// source of a pipeline that reads no collection.
    Documents(Expr),
    /// `$facet`: every input document through each named pipeline, giving
    /// one document of arrays.
    Facet(Vec<(String, Vec<Stage>)>),
    /// `$sample`: this many documents of the input, chosen at random.
    Sample(u64),
    /// `$bucketAuto`: the input sorted by a key and cut into buckets of
    /// about equal size.
    BucketAuto(Box<BucketAuto>),
    /// `$setWindowFields` after its sort: each run of documents with one
    /// partition key gets its window functions' outputs.
    Window(Box<SetWindowFields>),
    /// A stage MongoDB defines as a sequence of others (`$bucket`,
    /// `$sortByCount`); the runner splices them in.
    Sequence(Vec<Stage>),
}

impl Stage {
    /// Whether documents pass through one at a time (no stage state that
    /// needs the whole input).
    pub fn streaming(&self) -> bool {
        !matches!(
            self,
            Stage::Sort(_)
                | Stage::Count(_)
                | Stage::Group { .. }
                | Stage::Facet(_)
                | Stage::Sample(_)
                | Stage::BucketAuto(_)
                | Stage::Window(_)
                | Stage::Densify(_)
                | Stage::Sequence(_)
        )
    }
}

/// The stage parser, handed to the parsers of stages that nest pipelines
/// (a stage holds pipelines of stages, so their parsers call it back).
pub(super) type ParseStage = fn(&RawDocument, &Env) -> Result<Stage>;

/// A pipeline inside a stage (`$lookup`, `$unionWith`): its stages as
/// written, kept to parse them again when `$lookup`'s `let` variables take
/// each input document's values, and as parsed in the command's
/// environment (checked once, run as they are when nothing varies).
#[derive(Debug, Clone)]
pub struct SubPipeline {
    pub(super) raw: Vec<RawDocumentBuf>,
    pub(super) stages: Vec<Stage>,
    /// The environment it was parsed in; `let` variables are pending there.
    pub(super) env: Env,
    pub(super) parse: ParseStage,
}

/// `$lookup`, in any of its three forms: equality (`localField`,
/// `foreignField`), pipeline (`let`, `pipeline`), or both at once.
#[derive(Debug, Clone)]
pub struct Lookup {
    /// None when the pipeline starts with `$documents`.
    pub(super) from: Option<String>,
    pub(super) as_field: String,
    /// `localField` and `foreignField`.
    pub(super) join: Option<(String, String)>,
    pub(super) lets: Vec<(String, Expr)>,
    pub(super) pipeline: Option<SubPipeline>,
    /// What an uncorrelated pipeline (no join, no `let`) gave: the same
    /// for every input document, so it runs once.
    pub(super) uncorrelated: Option<Vec<RawDocumentBuf>>,
}

/// A parsed `$graphLookup` (`graph_lookup.rs`).
#[derive(Debug, Clone)]
pub struct GraphLookup {
    pub(super) from: String,
    pub(super) start_with: Expr,
    pub(super) connect_from: String,
    pub(super) connect_to: String,
    pub(super) as_field: String,
    pub(super) max_depth: Option<i64>,
    pub(super) depth_field: Option<String>,
    /// `restrictSearchWithMatch`, checked at parse time, parsed again per
    /// round with that round's values.
    pub(super) restrict: Option<RawDocumentBuf>,
    pub(super) env: Env,
}

/// A parsed `$densify` (`densify.rs`).
#[derive(Debug, Clone)]
pub struct Densify {
    pub(super) field: String,
    pub(super) partition_by: Vec<String>,
    pub(super) step: crate::encoding::arith::Num,
    /// For dates: the unit of `step`.
    pub(super) unit: Option<super::expr::TimeUnit>,
    pub(super) bounds: DensifyBounds,
}

/// `$densify`'s `range.bounds`.
#[derive(Debug, Clone)]
pub enum DensifyBounds {
    Full,
    Partition,
    Explicit(bson::RawBson, bson::RawBson),
}

/// `$unionWith`.
#[derive(Debug, Clone)]
pub struct UnionWith {
    /// None when the pipeline starts with `$documents`.
    pub(super) coll: Option<String>,
    pub(super) pipeline: SubPipeline,
}

/// `$bucketAuto`.
#[derive(Debug, Clone)]
pub struct BucketAuto {
    pub(super) group_by: Expr,
    pub(super) buckets: usize,
    /// The output fields (a `count` by default).
    pub(super) accs: Vec<(String, Acc)>,
}
