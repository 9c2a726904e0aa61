//! Update documents: parsing the `u` of an update statement (operators or a
//! replacement), applying it to one stored document, and building the
//! document an upsert inserts. Behaviour, field order and error messages
//! follow MongoDB 7.0.
//!
//! Pure functions of documents and a clock: no engine access, no indexes,
//! no document validators and no `_id` generation (the caller adds an
//! ObjectId to an upsert document that has none). Pipeline updates,
//! positional paths (`$`, `$[]`, `$[id]`) and collations are not supported.
//!
//! Submodules, in the order an update flows through them: `path` and
//! `plan` parse; `upsert` seeds a document from a filter; `tree` opens a
//! document for editing; `apply` walks the plan over it; `ops`,
//! `array_ops` and `pull` are the operators themselves (arithmetic is
//! `encoding::arith`, shared with aggregation);
//! `render` writes values into messages the way MongoDB does.

mod apply;
mod array_ops;
mod env;
mod ops;
mod path;
mod plan;
mod pull;
mod render;
mod tree;
mod upsert;

use std::cmp::Ordering;

use bson::raw::RawBson;
use bson::{RawBsonRef, RawDocument, RawDocumentBuf, Timestamp};

use self::apply::{apply_plan, dollar_prefixed_field, id_first};
use self::env::Clock;
use self::plan::Plan;
use self::tree::{Fields, Value, encode_fields, field_index};
use self::upsert::Scope;
use crate::encoding::cmp::compare_values;
use crate::{Error, ErrorKind, Result};

pub use self::env::UpdateContext;

/// A parsed update: a replacement document or a set of operators.
#[derive(Debug, Clone)]
pub enum UpdateSpec {
    Replacement(RawDocumentBuf),
    Operators(OperatorUpdate),
}

/// A parsed operator update (`{$set: ..., $inc: ...}`).
#[derive(Debug, Clone)]
pub struct OperatorUpdate {
    plan: Plan,
}

impl UpdateSpec {
    /// Parses the `u` of an update statement: a document of `$`-operators,
    /// or a replacement document (first key not `$`-prefixed; `{}` is an
    /// empty replacement). A pipeline (array) is rejected with
    /// FailedToParse: pipeline-style updates are not supported yet.
    pub fn parse(u: RawBsonRef<'_>) -> Result<UpdateSpec> {
        match u {
            RawBsonRef::Document(d) => {
                let first = d.iter().next().transpose()?;
                match first {
                    Some((k, _)) if k.as_str().starts_with('$') => {
                        Ok(UpdateSpec::Operators(OperatorUpdate {
                            plan: Plan::parse(d)?,
                        }))
                    }
                    _ => Ok(UpdateSpec::Replacement(d.to_owned())),
                }
            }
            RawBsonRef::Array(_) => Err(Error::failed_to_parse(
                "pipeline-style updates are not supported yet",
            )),
            _ => Err(Error::failed_to_parse(
                "Update argument must be either an object or an array",
            )),
        }
    }

    /// Applies the update to `doc`. Returns Ok(None) when the document is
    /// unchanged (so the command can report nModified correctly), else the
    /// new document. `_id` stays first and can never change; untouched
    /// fields keep their order; new fields are appended in byte order of
    /// their paths, as MongoDB 5.0+ appends them.
    pub fn apply(&self, doc: &RawDocument, ctx: &UpdateContext) -> Result<Option<RawDocumentBuf>> {
        match self {
            UpdateSpec::Replacement(r) => replace(doc, r, ctx, true),
            UpdateSpec::Operators(ops) => {
                let mut root = Value::from_document(doc)?;
                if !apply_plan(&ops.plan, &mut root, ctx, true)? {
                    return Ok(None);
                }
                Ok(Some(finish(root)))
            }
        }
    }

    /// The document an upsert inserts when nothing matched. For operators:
    /// the filter's equality fields, then the update applied as an insert
    /// (`$setOnInsert` applies whatever `ctx.is_insert` says). For a
    /// replacement: the replacement, plus the filter's `_id` if it had one
    /// and the replacement does not. The caller adds an ObjectId `_id` when
    /// the result has none.
    pub fn upsert_document(
        &self,
        filter: &RawDocument,
        ctx: &UpdateContext,
    ) -> Result<RawDocumentBuf> {
        let ctx = UpdateContext {
            is_insert: true,
            ..*ctx
        };
        match self {
            UpdateSpec::Replacement(r) => {
                let Value::Doc(fields) = upsert::seed(filter, Scope::IdOnly)? else {
                    unreachable!("a seed is a document")
                };
                let seed = encode_fields(&fields);
                // The insert rules allow top-level `$` fields.
                Ok(replace(&seed, r, &ctx, false)?.unwrap_or(seed))
            }
            UpdateSpec::Operators(ops) => {
                let mut root = upsert::seed(filter, Scope::All)?;
                apply_plan(&ops.plan, &mut root, &ctx, false)?;
                Ok(finish(root))
            }
        }
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
    if let (Some(old), Some(i)) = (original_id, field_index(&fields, "_id")) {
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
