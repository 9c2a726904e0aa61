//! Aggregation pipelines below the wire layer: expressions (`expr`),
//! `$group` accumulators (`accumulator`), stage parsing (`stage`) and the
//! in-memory runner (`run`). The `aggregate` command parses the pipeline
//! here, lets the planner take a leading `$match`/`$sort`, and feeds the
//! remaining stages the documents of that query.
//!
//! Numbers add with `encoding::arith`, the type the update operators use.
//! Errors carry semantic kinds; the node maps them to MongoDB's codes.

mod accumulator;
mod bucket;
mod densify;
mod expr;
mod facet;
mod graph_lookup;
mod kind;
mod lookup;
mod project;
mod ranked;
mod run;
mod sample;
mod sources;
mod stage;
mod sub;
mod window;
mod write_stage;

#[cfg(test)]
mod tests;

pub use accumulator::Acc;
pub use expr::{Comparator, Env, Expr, binary_order};
pub use kind::Stage;
pub(crate) use project::is_flag_or_nested;
pub use project::{ComputedProjection, Project};
pub use run::Pipeline;
pub use sources::Sources;
pub use stage::{parse_stage, parse_stage_in, parse_update_stage};
pub use sub::check_top_level;
pub use write_stage::{
    Merge, MergeWrite, Target, WhenMatched, WhenNotMatched, WriteStage, parse_write_stage,
    write_stage_name,
};
