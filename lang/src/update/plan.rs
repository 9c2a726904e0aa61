//! An operator update parsed into one tree of paths, as MongoDB builds it:
//! every `field: argument` of every operator becomes a leaf at its path,
//! and two leaves on the same or overlapping paths are a conflict. A node
//! whose children fan out over an array (`$[]`, `$[id]`) may have no other
//! kind of child. Paths naming array filters are checked against the
//! update's `arrayFilters` here, and every filter must be used.
//!
//! Children are kept in byte order of their names because MongoDB applies
//! them in that order, which decides where new fields land. Nothing here
//! touches a document; `resolve` turns a plan with positional parts into
//! one document's concrete plan through the same [`Plan::merge`].

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use bson::raw::{CStr, CString};
use bson::{RawBsonRef, RawDocument};

use super::array_filter::ArrayFilters;
use super::ops::{Op, OpKind};
use super::path::{FieldPath, Part};
use super::render;
use crate::{Error, ErrorKind, Result};

/// A parsed operator update.
#[derive(Debug, Clone, Default)]
pub(crate) struct Plan {
    pub(crate) root: ObjectNode,
    /// The source path of each `$rename`, indexed by `Op::Rename`'s slot.
    pub(crate) renames: Vec<FieldPath>,
    /// Some path has `$`: applying needs the position the query matched.
    pub(crate) positional: bool,
    /// Some path has `$`, `$[]` or `$[id]`: each document gets its own
    /// concrete plan.
    pub(crate) dynamic: bool,
}

/// An inner node: the operators below one path prefix.
#[derive(Debug, Clone, Default)]
pub(crate) struct ObjectNode {
    pub(crate) children: BTreeMap<String, Child>,
}

#[derive(Debug, Clone)]
pub(crate) struct Child {
    /// The component again, in the form BSON field names take.
    pub(crate) name: CString,
    pub(crate) node: Node,
}

#[derive(Debug, Clone)]
pub(crate) enum Node {
    Object(ObjectNode),
    Leaf(Leaf),
}

/// One operator at its full path.
#[derive(Debug, Clone)]
pub(crate) struct Leaf {
    pub(crate) path: FieldPath,
    /// The path as the update wrote it (with `$`, `$[]`, `$[id]`), for
    /// messages about conflicts between resolved paths.
    pub(crate) template: FieldPath,
    /// Shared by every concrete leaf resolved from one written path.
    pub(crate) op: Arc<Op>,
}

/// Why a path cannot join a plan: the prefix where it meets another path
/// and, when it meets an operator, that operator's written path.
#[derive(Debug)]
pub(crate) struct Clash {
    pub(crate) at: String,
    pub(crate) other: Option<FieldPath>,
}

impl Plan {
    /// Parses an update document whose first key starts with `$`; every
    /// `$[id]` must name one of `filters`, and every filter must be named.
    pub(crate) fn parse(u: &RawDocument, filters: &ArrayFilters) -> Result<Plan> {
        let mut plan = Plan::default();
        let mut used = BTreeSet::new();
        for item in u.iter() {
            let (name, arg) = item?;
            let name = name.as_str();
            let kind = OpKind::from_name(name).ok_or_else(|| {
                Error::failed_to_parse(format!(
                    "Unknown modifier: {name}. Expected a valid update modifier or pipeline-style \
                     update specified as an array"
                ))
            })?;
            let RawBsonRef::Document(fields) = arg else {
                return Err(Error::failed_to_parse(format!(
                    "Modifiers operate on fields but we found type {} instead. For example: \
                     {{$mod: {{<field>: ...}}}} not {{{}}}",
                    render::type_name(arg.element_type()),
                    render::element(name, arg)
                )));
            };
            for field in fields.iter() {
                let (field, v) = field?;
                if kind == OpKind::Rename {
                    plan.add_rename(field, v)?;
                    continue;
                }
                let path = FieldPath::parse(field.as_str())?;
                path.check_positional()?;
                for part in path.parts() {
                    if let Part::Filtered(id) = Part::of(part.as_str()) {
                        if !filters.contains(id) {
                            return Err(Error::bad_value(format!(
                                "No array filter found for identifier '{id}' in path '{}'",
                                path.dotted()
                            )));
                        }
                        used.insert(id.to_owned());
                    }
                }
                let op = Op::parse(kind, field.as_str(), v)?;
                plan.positional |= path.parts().iter().any(|p| p.as_str() == "$");
                plan.dynamic |= path.is_dynamic();
                plan.add(path, op)?;
            }
        }
        if let Some(unused) = filters.ids().find(|id| !used.contains(*id)) {
            return Err(Error::failed_to_parse(format!(
                "The array filter for identifier '{unused}' was not used in the update {}",
                render::value(RawBsonRef::Document(u))
            )));
        }
        Ok(plan)
    }

    /// A `$rename` claims both of its paths: its source as a placeholder
    /// (so nothing else may touch it) and its destination as the operator.
    fn add_rename(&mut self, field: &CStr, v: RawBsonRef<'_>) -> Result<()> {
        let element = || render::element(field.as_str(), v);
        let RawBsonRef::String(to) = v else {
            return Err(Error::bad_value(format!(
                "The 'to' field for $rename must be a string: {}",
                element()
            )));
        };
        if to.contains('\0') {
            return Err(Error::bad_value(
                "The 'to' field for $rename cannot contain an embedded null byte",
            ));
        }
        let from = FieldPath::parse(field.as_str())?;
        if from.is_dynamic() {
            return Err(Error::bad_value(format!(
                "The source field for $rename may not be dynamic: {}",
                from.dotted()
            )));
        }
        self.add(from.clone(), Op::Placeholder)?;
        let to = FieldPath::parse(to)?;
        if from == to {
            return Err(Error::bad_value(format!(
                "The source and target field for $rename must differ: {}",
                element()
            )));
        }
        if from.is_prefix_of(&to) || to.is_prefix_of(&from) {
            return Err(Error::bad_value(format!(
                "The source and target field for $rename must not be on the same path: {}",
                element()
            )));
        }
        if to.is_dynamic() {
            return Err(Error::bad_value(format!(
                "The destination field for $rename may not be dynamic: {}",
                to.dotted()
            )));
        }
        self.renames.push(from);
        self.add(to, Op::Rename(self.renames.len() - 1))
    }

    /// Adds a parsed operator, with MongoDB's parse-time conflict message.
    fn add(&mut self, path: FieldPath, op: Op) -> Result<()> {
        self.merge(path.clone(), path.clone(), Arc::new(op))
            .map_err(|clash| {
                Error::new(
                    ErrorKind::ConflictingUpdateOperators,
                    format!(
                        "Updating the path '{}' would create a conflict at '{}'",
                        path.dotted(),
                        clash.at
                    ),
                )
            })
    }

    /// Adds a leaf, refusing a path that is, or runs through, or lies under
    /// another operator's path, and a path that puts an array update
    /// (`$[]`, `$[id]`) beside any other kind of child.
    pub(crate) fn merge(
        &mut self,
        path: FieldPath,
        template: FieldPath,
        op: Arc<Op>,
    ) -> std::result::Result<(), Clash> {
        let mut node = &mut self.root;
        for i in 0..path.len() {
            let part = path.part(i);
            let fans_out = Part::of(part.as_str()).is_array_update();
            if node
                .children
                .keys()
                .any(|k| Part::of(k).is_array_update() != fans_out)
            {
                return Err(Clash {
                    at: path.prefix(i),
                    other: None,
                });
            }
            if i == path.len() - 1 {
                break;
            }
            let child = node
                .children
                .entry(part.as_str().to_owned())
                .or_insert_with(|| Child {
                    name: part.into(),
                    node: Node::Object(ObjectNode::default()),
                });
            node = match &mut child.node {
                Node::Object(inner) => inner,
                Node::Leaf(leaf) => {
                    return Err(Clash {
                        at: path.prefix(i + 1),
                        other: Some(leaf.template.clone()),
                    });
                }
            };
        }
        let last = path.part(path.len() - 1);
        if let Some(existing) = node.children.get(last.as_str()) {
            return Err(Clash {
                at: path.dotted().to_owned(),
                other: Some(existing.node.first_leaf().template.clone()),
            });
        }
        node.children.insert(
            last.as_str().to_owned(),
            Child {
                name: last.into(),
                node: Node::Leaf(Leaf { path, template, op }),
            },
        );
        Ok(())
    }
}

impl Node {
    /// Some leaf at or below this node (inner nodes are never empty).
    fn first_leaf(&self) -> &Leaf {
        match self {
            Node::Leaf(leaf) => leaf,
            Node::Object(inner) => inner
                .children
                .values()
                .next()
                .expect("inner nodes hold a leaf")
                .node
                .first_leaf(),
        }
    }
}
