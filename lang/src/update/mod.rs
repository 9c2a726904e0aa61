//! Update documents: parsing the `u` of an update statement (operators, a
//! replacement or a pipeline) with its `arrayFilters`, applying it to one
//! stored document, and building the document an upsert inserts.
//! Behaviour, field order and error messages follow MongoDB 7.0.
//!
//! Pure functions of documents and a clock: no engine access, no indexes,
//! no document validators and no `_id` generation (the caller adds an
//! ObjectId to an upsert document that has none). Collations are not
//! supported. Pipeline updates run their stages through
//! `crate::pipeline::Pipeline`; nothing here evaluates expressions.
//!
//! Submodules, in the order an update flows through them: `path`,
//! `array_filter` and `plan` parse; `upsert` seeds a document from a
//! filter; `resolve` turns `$`, `$[]` and `$[id]` into one document's
//! concrete paths; `tree` opens a document for editing; `apply` walks the
//! plan over it; `ops`, `array_ops` and `pull` are the operators
//! themselves (arithmetic is `encoding::arith`, shared with aggregation);
//! `pipeline` runs pipeline-style updates; `render` writes values into
//! messages the way MongoDB does; `describe` says what an update changed,
//! as change events do.

mod apply;
mod array_filter;
mod array_ops;
pub mod describe;
mod env;
mod ops;
mod path;
mod pipeline;
mod plan;
mod pull;
mod render;
mod resolve;
mod tree;
mod upsert;

use std::cmp::Ordering;

use bson::raw::RawBson;
use bson::{RawBsonRef, RawDocument, RawDocumentBuf, Timestamp};

use self::apply::{apply_plan, dollar_prefixed_field, id_first};
use self::array_filter::ArrayFilters;
use self::env::Clock;
use self::plan::Plan;
use self::resolve::{no_positional_match, resolve};
use self::tree::{Fields, Value, encode_fields, field_index};
use self::upsert::Scope;
use crate::encoding::cmp::{Cmp, compare_values};
use crate::pipeline::Env;
use crate::query::filter::Filter;
use crate::query::positional::matched_position;
use crate::{Error, ErrorKind, Result};

pub use self::env::UpdateContext;
pub use self::pipeline::PipelineUpdate;

/// A parsed update: a replacement document, a set of operators, or an
/// aggregation pipeline.
#[derive(Debug, Clone)]
pub enum UpdateSpec {
    Replacement(RawDocumentBuf),
    Operators(OperatorUpdate),
    Pipeline(PipelineUpdate),
}

/// A parsed operator update (`{$set: ..., $inc: ...}`) with its array
/// filters.
#[derive(Debug, Clone)]
pub struct OperatorUpdate {
    plan: Plan,
    filters: ArrayFilters,
}

impl UpdateSpec {
    /// Parses the `u` of an update statement with its `arrayFilters`: a
    /// document of `$`-operators, a replacement document (first key not
    /// `$`-prefixed; `{}` is an empty replacement), or a pipeline (an
    /// array of stages). The filters are parsed first, as MongoDB does;
    /// a pipeline refuses them, a replacement ignores them.
    pub fn parse(u: RawBsonRef<'_>, array_filters: &[&RawDocument]) -> Result<UpdateSpec> {
        Self::parse_in(u, array_filters, &Env::new(bson::DateTime::now()))
    }

    /// [`UpdateSpec::parse`] in a command's environment: a pipeline-style
    /// update sees its `$$NOW` and `let` variables.
    pub fn parse_in(
        u: RawBsonRef<'_>,
        array_filters: &[&RawDocument],
        env: &Env,
    ) -> Result<UpdateSpec> {
        let filters = ArrayFilters::parse(array_filters)?;
        match u {
            RawBsonRef::Document(d) => {
                let first = d.iter().next().transpose()?;
                match first {
                    Some((k, _)) if k.as_str().starts_with('$') => {
                        Ok(UpdateSpec::Operators(OperatorUpdate {
                            plan: Plan::parse(d, &filters)?,
                            filters,
                        }))
                    }
                    _ => Ok(UpdateSpec::Replacement(d.to_owned())),
                }
            }
            RawBsonRef::Array(stages) => {
                if !filters.is_empty() {
                    return Err(Error::failed_to_parse(
                        "arrayFilters may not be specified for pipeline-style updates",
                    ));
                }
                Ok(UpdateSpec::Pipeline(PipelineUpdate::parse(stages, env)?))
            }
            _ => Err(Error::failed_to_parse(
                "Update argument must be either an object or an array",
            )),
        }
    }

    /// Applies the update to `doc`, which matched `query` (the query says
    /// which element a positional `$` stands for). Returns Ok(None) when
    /// the document is unchanged (so the command can report nModified
    /// correctly), else the new document. `_id` stays first and can never
    /// change; untouched fields keep their order; new fields are appended
    /// in byte order of their paths, as MongoDB 5.0+ appends them.
    pub fn apply(
        &self,
        doc: &RawDocument,
        query: &Filter,
        ctx: &UpdateContext,
    ) -> Result<Option<RawDocumentBuf>> {
        match self {
            UpdateSpec::Replacement(r) => replace(doc, r, ctx, true),
            UpdateSpec::Operators(ops) => {
                let position = if ops.plan.positional {
                    matched_position(query, doc)
                } else {
                    None
                };
                ops.run(doc, position, ctx, true, query.cmp())
            }
            UpdateSpec::Pipeline(p) => replace(doc, &p.run(doc)?, ctx, false),
        }
    }

    /// The document an upsert inserts when nothing matched. For operators
    /// and pipelines: the filter's equality fields, then the update applied
    /// as an insert (`$setOnInsert` applies whatever `ctx.is_insert` says;
    /// a positional `$` has no match to stand for). For a replacement: the
    /// replacement, plus the filter's `_id` if it had one and the
    /// replacement does not. The caller adds an ObjectId `_id` when the
    /// result has none.
    pub fn upsert_document(
        &self,
        filter: &RawDocument,
        ctx: &UpdateContext,
    ) -> Result<RawDocumentBuf> {
        let ctx = UpdateContext {
            is_insert: true,
            ..ctx.clone()
        };
        let scope = match self {
            UpdateSpec::Replacement(_) => Scope::IdOnly,
            _ => Scope::All,
        };
        let Value::Doc(mut fields) = upsert::seed(filter, scope)? else {
            unreachable!("a seed is a document")
        };
        id_first(&mut fields);
        let seed = encode_fields(&fields);
        // The insert rules allow top-level `$` fields.
        let built = match self {
            UpdateSpec::Replacement(r) => replace(&seed, r, &ctx, false)?,
            UpdateSpec::Operators(ops) => ops.run(&seed, None, &ctx, false, Cmp::BINARY)?,
            UpdateSpec::Pipeline(p) => replace(&seed, &p.run(&seed)?, &ctx, false)?,
        };
        Ok(built.unwrap_or(seed))
    }
}

impl OperatorUpdate {
    /// Applies the operators to `doc`; `position` is what `$` stands for,
    /// and array filters compare strings with `cmp` (the statement's
    /// collation).
    fn run(
        &self,
        doc: &RawDocument,
        position: Option<usize>,
        ctx: &UpdateContext,
        forbid_dollar_fields: bool,
        cmp: Cmp<'_>,
    ) -> Result<Option<RawDocumentBuf>> {
        if self.plan.positional && position.is_none() {
            return Err(no_positional_match());
        }
        let resolved;
        let plan = if self.plan.dynamic {
            resolved = resolve(&self.plan, doc, &self.filters, position, cmp)?;
            &resolved
        } else {
            &self.plan
        };
        let mut root = Value::from_document(doc)?;
        if !apply_plan(plan, &mut root, ctx, forbid_dollar_fields)? {
            return Ok(None);
        }
        Ok(Some(finish(root)))
    }
}

/// Writes an edited document back with `_id` first.
fn finish(root: Value<'_>) -> RawDocumentBuf {
    let Value::Doc(mut fields) = root else {
        unreachable!("the root is a document")
    };
    id_first(&mut fields);
    encode_fields(&fields)
}

/// Replaces `original` with `replacement`, keeping the original `_id`.
fn replace(
    original: &RawDocument,
    replacement: &RawDocument,
    ctx: &UpdateContext,
    forbid_dollar_fields: bool,
) -> Result<Option<RawDocumentBuf>> {
    if original.as_bytes() == replacement.as_bytes() {
        return Ok(None);
    }
    let original_id = original.get("_id")?;
    let mut fields = Fields::new();
    if replacement.get("_id")?.is_none()
        && let Some(id) = original_id
    {
        fields.push((bson::raw::cstr!("_id"), Value::Raw(id)));
    }
    let mut clock = Clock::new(ctx.now);
    for item in replacement.iter() {
        let (k, v) = item?;
        if forbid_dollar_fields && k.as_str().starts_with('$') {
            return Err(dollar_prefixed_field(k.as_str()));
        }
        let v = match v {
            // An empty top-level timestamp means "now", as on insert.
            RawBsonRef::Timestamp(Timestamp {
                time: 0,
                increment: 0,
            }) if k.as_str() != "_id" => Value::Owned(RawBson::Timestamp(clock.next_timestamp())),
            v => Value::Raw(v),
        };
        fields.push((k, v));
    }
    if let (Some(old), Some(i)) = (original_id, field_index(&fields, "_id"))
        && !ctx.mutable_id
    {
        let new = &fields[i].1;
        if new.with_ref(|n| compare_values(old, n)) != Ordering::Equal {
            return Err(Error::new(
                ErrorKind::ImmutableField,
                format!(
                    "After applying the update, the (immutable) field '_id' was found to have been \
                     altered to {}",
                    new.render_element("_id")
                ),
            ));
        }
    }
    id_first(&mut fields);
    Ok(Some(encode_fields(&fields)))
}

#[cfg(test)]
mod tests;
