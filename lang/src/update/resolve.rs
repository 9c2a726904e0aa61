//! One document's concrete plan: every `$` replaced by the position the
//! query matched, every `$[]` by each index of the array the document has
//! there, every `$[id]` by each index whose element the filter `id`
//! accepts. The result is an ordinary plan the tree walk in `apply` runs,
//! so each operator behaves on `a.3.b` exactly as it does when the client
//! writes `a.3.b`.
//!
//! Paths are resolved against the document before any operator runs, which
//! is sound because no two operators may touch overlapping paths. Two
//! written paths that resolve to overlapping concrete paths (`a.$[i]` and
//! `a.$[j]` when both filters accept an element) conflict here, with
//! MongoDB's message. This module reads the document and never edits it.

use bson::raw::CString;
use bson::{RawBsonRef, RawDocument};

use super::array_filter::ArrayFilters;
use super::path::{FieldPath, Part, array_index};
use super::plan::{Child, Clash, Node, ObjectNode, Plan};
use super::render;
use crate::encoding::cmp::Cmp;
use crate::{Error, ErrorKind, Result};

/// The concrete plan of `plan` for `doc`; `position` is what `$` stands
/// for (the caller refuses a positional plan without one).
pub(crate) fn resolve(
    plan: &Plan,
    doc: &RawDocument,
    filters: &ArrayFilters,
    position: Option<usize>,
    cmp: Cmp<'_>,
) -> Result<Plan> {
    let mut resolver = Resolver {
        filters,
        cmp,
        position: position.map(|p| p.to_string()),
        taken: Vec::new(),
        out: Plan {
            renames: plan.renames.clone(),
            ..Plan::default()
        },
    };
    resolver.node(&plan.root, Some(RawBsonRef::Document(doc)))?;
    Ok(resolver.out)
}

/// The error for a positional path when the query matched no array.
pub(crate) fn no_positional_match() -> Error {
    Error::bad_value("The positional operator did not find the match needed from the query.")
}

struct Resolver<'p> {
    filters: &'p ArrayFilters,
    cmp: Cmp<'p>,
    position: Option<String>,
    /// The concrete components of the node being resolved.
    taken: Vec<CString>,
    out: Plan,
}

impl Resolver<'_> {
    /// Resolves the children of `node`, found at `here` in the document
    /// (None where the document has nothing).
    fn node(&mut self, node: &ObjectNode, here: Option<RawBsonRef<'_>>) -> Result<()> {
        for (key, child) in &node.children {
            match Part::of(key) {
                Part::Field(name) => {
                    let next = here.and_then(|v| child_of(v, name));
                    self.descend(child, next, child.name.clone())?;
                }
                Part::Positional => {
                    let position = self.position.clone().ok_or_else(no_positional_match)?;
                    let next = here.and_then(|v| child_of(v, &position));
                    self.descend(child, next, CString::try_from(position)?)?;
                }
                part => self.each_element(part, child, here)?,
            }
        }
        Ok(())
    }

    /// `$[]` or `$[id]`: the child once per chosen element.
    fn each_element(
        &mut self,
        part: Part<'_>,
        child: &Child,
        here: Option<RawBsonRef<'_>>,
    ) -> Result<()> {
        let Some(value) = here else {
            return Err(Error::bad_value(format!(
                "The path '{}' must exist in the document in order to apply array updates.",
                self.dotted()
            )));
        };
        let RawBsonRef::Array(items) = value else {
            let name = self.taken.last().map_or("", |n| n.as_str());
            return Err(Error::bad_value(format!(
                "Cannot apply array updates to non-array element {}",
                render::element(name, value)
            )));
        };
        for (i, item) in items.into_iter().enumerate() {
            let item = item?;
            let chosen = match part {
                Part::Filtered(id) => self.filters.accepts(id, item, self.cmp)?,
                _ => true,
            };
            if chosen {
                self.descend(child, Some(item), CString::try_from(i.to_string())?)?;
            }
        }
        Ok(())
    }

    fn descend(
        &mut self,
        child: &Child,
        here: Option<RawBsonRef<'_>>,
        name: CString,
    ) -> Result<()> {
        self.taken.push(name);
        let result = match &child.node {
            Node::Object(inner) => self.node(inner, here),
            Node::Leaf(leaf) => {
                let path = FieldPath::from_parts(self.taken.clone());
                self.out
                    .merge(path.clone(), leaf.template.clone(), leaf.op.clone())
                    .map_err(|clash| created_conflict(&clash, &leaf.template, &path))
            }
        };
        self.taken.pop();
        result
    }

    fn dotted(&self) -> String {
        let names: Vec<&str> = self.taken.iter().map(CString::as_str).collect();
        names.join(".")
    }
}

/// The value at one component below `v`: a field of a document, or an
/// element of an array named by its index.
fn child_of<'a>(v: RawBsonRef<'a>, name: &str) -> Option<RawBsonRef<'a>> {
    match v {
        RawBsonRef::Document(d) => d.get(name).ok().flatten(),
        RawBsonRef::Array(a) => a.get(array_index(name)?).ok().flatten(),
        _ => None,
    }
}

/// Two written paths resolved onto one element. MongoDB merges the two
/// subtrees at the deepest array element both reach through different
/// written components, and names the conflict from there on as written:
/// `a.$[i].b.$[k].c` and `a.$[j].b.$[k].c` conflict at `a.0.b.$[k].c`.
fn created_conflict(clash: &Clash, template: &FieldPath, concrete: &FieldPath) -> Error {
    let at = match &clash.other {
        Some(other) => {
            let common = other.len().min(template.len());
            let diverge = (0..common)
                .rev()
                .find(|&i| other.part(i) != template.part(i));
            match diverge {
                Some(k) => {
                    let shorter = if other.len() <= template.len() {
                        other
                    } else {
                        template
                    };
                    let mut parts: Vec<&str> =
                        concrete.parts()[..=k].iter().map(CString::as_str).collect();
                    parts.extend(shorter.parts()[k + 1..].iter().map(CString::as_str));
                    parts.join(".")
                }
                None => clash.at.clone(),
            }
        }
        None => clash.at.clone(),
    };
    Error::new(
        ErrorKind::ConflictingUpdateOperators,
        format!("Update created a conflict at '{at}'"),
    )
}
