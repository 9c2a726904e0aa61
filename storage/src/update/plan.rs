//! An operator update parsed into one tree of paths, as MongoDB builds it:
//! every `field: argument` of every operator becomes a leaf at its path,
//! and two leaves on the same or overlapping paths are a conflict.
//!
//! Children are kept in byte order of their names because MongoDB applies
//! them in that order, which decides where new fields land. Nothing here
//! touches a document.

use std::collections::BTreeMap;

use bson::raw::{CStr, CString};
use bson::{RawBsonRef, RawDocument};

use super::ops::{Op, OpKind};
use super::path::FieldPath;
use super::render;
use crate::{Error, ErrorKind, Result};

/// A parsed operator update.
#[derive(Debug, Clone, Default)]
pub(crate) struct Plan {
    pub(crate) root: ObjectNode,
    /// The source path of each `$rename`, indexed by `Op::Rename`'s slot.
    pub(crate) renames: Vec<FieldPath>,
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
    pub(crate) op: Op,
}

impl Plan {
    /// Parses an update document whose first key starts with `$`.
    pub(crate) fn parse(u: &RawDocument) -> Result<Plan> {
        let mut plan = Plan::default();
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
                path.reject_positional()?;
                let op = Op::parse(kind, field.as_str(), v)?;
                plan.merge(path, op)?;
            }
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
        if is_dynamic(&from) {
            return Err(Error::bad_value(format!(
                "The source field for $rename may not be dynamic: {}",
                from.dotted()
            )));
        }
        self.merge(from.clone(), Op::Placeholder)?;
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
        if is_dynamic(&to) {
            return Err(Error::bad_value(format!(
                "The destination field for $rename may not be dynamic: {}",
                to.dotted()
            )));
        }
        self.renames.push(from);
        self.merge(to, Op::Rename(self.renames.len() - 1))
    }

    /// Adds a leaf, refusing a path that is, or runs through, or lies under
    /// another operator's path.
    fn merge(&mut self, path: FieldPath, op: Op) -> Result<()> {
        let conflict = |at: String| {
            Error::new(
                ErrorKind::ConflictingUpdateOperators,
                format!(
                    "Updating the path '{}' would create a conflict at '{at}'",
                    path.dotted()
                ),
            )
        };
        let mut node = &mut self.root;
        for i in 0..path.len() - 1 {
            let part = path.part(i);
            let child = node
                .children
                .entry(part.as_str().to_owned())
                .or_insert_with(|| Child {
                    name: part.into(),
                    node: Node::Object(ObjectNode::default()),
                });
            node = match &mut child.node {
                Node::Object(inner) => inner,
                Node::Leaf(_) => return Err(conflict(path.prefix(i + 1))),
            };
        }
        let last = path.part(path.len() - 1);
        if node.children.contains_key(last.as_str()) {
            return Err(conflict(path.dotted().to_owned()));
        }
        node.children.insert(
            last.as_str().to_owned(),
            Child {
                name: last.into(),
                node: Node::Leaf(Leaf { path, op }),
            },
        );
        Ok(())
    }
}

/// Positional (`$`) and array-filter (`$[...]`) components.
fn is_dynamic(path: &FieldPath) -> bool {
    path.parts()
        .iter()
        .any(|p| p.as_str() == "$" || p.as_str().starts_with("$["))
}
