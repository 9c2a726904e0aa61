//! Applies a parsed operator update (`Plan`) to an opened document: walks
//! the plan's tree and the document together, hands each operator the
//! element its path reaches (or tells it the element is missing, or that a
//! scalar is in the way), creates parents for new fields, and enforces the
//! rules that span operators: `_id` never changes, `$rename` sources leave
//! before destinations fill, no new top-level `$` field.
//!
//! It does not parse anything and does not decide what an operator does.

use super::env::{Env, Outcome, Site, UpdateContext};
use super::path::{FieldPath, array_index};
use super::plan::{Node, ObjectNode, Plan};
use super::tree::{Fields, Value, field_index};
use crate::{Error, ErrorKind, Result};

/// MongoDB refuses to pad an array with more nulls than this.
const MAX_BACKFILL: usize = 1_500_000;

/// Position of the walk.
#[derive(Debug, Clone, Copy)]
struct Cursor<'a> {
    /// Components consumed.
    depth: usize,
    /// How many of them the document already had.
    taken: usize,
    /// Inside an `_id` the document already had.
    under_id: bool,
    /// Field name of the container being walked.
    name: &'a str,
    array_name: Option<&'a str>,
}

impl<'a> Cursor<'a> {
    fn root() -> Cursor<'a> {
        Cursor {
            depth: 0,
            taken: 0,
            under_id: false,
            name: "",
            array_name: None,
        }
    }

    /// The cursor for child `name` of the container this cursor is at.
    fn child(self, name: &'a str, exists: bool, in_array: bool) -> Cursor<'a> {
        Cursor {
            depth: self.depth + 1,
            taken: if exists && self.taken == self.depth {
                self.taken + 1
            } else {
                self.taken
            },
            under_id: self.under_id || (exists && self.depth == 0 && name == "_id"),
            name,
            array_name: if in_array {
                Some(self.name)
            } else {
                self.array_name
            },
        }
    }
}

/// Applies `plan` to `doc` (an opened document); returns whether anything
/// changed.
pub(crate) fn apply_plan<'a>(
    plan: &'a Plan,
    doc: &mut Value<'a>,
    ctx: &UpdateContext,
    forbid_dollar_fields: bool,
) -> Result<bool> {
    let mut env = Env::new(ctx, doc, plan.renames.len(), forbid_dollar_fields);
    for (slot, from) in plan.renames.iter().enumerate() {
        let source = take_rename_source(from, doc, &env)?;
        if source.is_some() {
            env.modified = true;
            if from.part(0).as_str() == "_id" && !env.mutable_id {
                return Err(Error::new(
                    ErrorKind::ImmutableField,
                    format!(
                        "Unsetting the path '{}' using $rename would modify the immutable field '_id'",
                        from.dotted()
                    ),
                ));
            }
        }
        env.renamed[slot] = source;
    }
    walk_object(&plan.root, doc, Cursor::root(), &mut env)?;
    Ok(env.modified)
}

/// Where a child's name leads inside a container.
enum Slot {
    Field(Option<usize>),
    Index(usize),
    PastEnd(usize),
    Blocked,
}

fn walk_object<'a>(
    node: &'a ObjectNode,
    target: &mut Value<'a>,
    at: Cursor<'a>,
    env: &mut Env<'a>,
) -> Result<()> {
    for (key, child) in &node.children {
        let key = key.as_str();
        let slot = match &*target {
            Value::Doc(fields) => Slot::Field(field_index(fields, key)),
            Value::Arr(items) => match array_index(key) {
                Some(i) if i < items.len() => Slot::Index(i),
                Some(i) => Slot::PastEnd(i),
                None => Slot::Blocked,
            },
            _ => unreachable!("walk_object runs on expanded containers"),
        };
        match (slot, &mut *target) {
            (Slot::Field(Some(i)), Value::Doc(fields)) => {
                let here = at.child(key, true, false);
                if walk_existing(&child.node, &mut fields[i].1, here, env)? == Outcome::Removed {
                    fields.remove(i);
                }
            }
            (Slot::Field(None), Value::Doc(fields)) => {
                if let Some(v) = walk_missing(&child.node, at.child(key, false, false), env)? {
                    fields.push((&*child.name, v));
                }
            }
            (Slot::Index(i), Value::Arr(items)) => {
                let here = at.child(key, true, true);
                if walk_existing(&child.node, &mut items[i], here, env)? == Outcome::Removed {
                    // `$unset` of an array element leaves a null in its place.
                    items[i] = Value::NULL;
                }
            }
            (Slot::PastEnd(i), Value::Arr(items)) => {
                if let Some(v) = walk_missing(&child.node, at.child(key, false, true), env)? {
                    backfill(items, i)?;
                    items.push(v);
                }
            }
            (Slot::Blocked, blocker) => walk_blocked(&child.node, key, (at.name, &*blocker), env)?,
            _ => unreachable!("slot computed from this container"),
        }
        if at.depth == 0 {
            check_top_level(key, target, env)?;
        }
    }
    Ok(())
}

/// The rules that apply to top-level fields once their operators ran.
fn check_top_level(key: &str, root: &Value<'_>, env: &mut Env<'_>) -> Result<()> {
    let Value::Doc(fields) = root else {
        unreachable!("the root is a document")
    };
    if env.forbid_dollar_fields && key.starts_with('$') && field_index(fields, key).is_some() {
        return Err(dollar_prefixed_field(key));
    }
    if let Some(taken_path) = env.id_grown.take() {
        let id = &fields[field_index(fields, "_id").expect("_id existed")].1;
        let name = taken_path.rsplit('.').next().unwrap_or("_id");
        let element = descend(id, taken_path.split('.').skip(1))
            .map_or_else(String::new, |v| v.render_element(name));
        return Err(Error::new(
            ErrorKind::ImmutableField,
            format!(
                "Updating the path '{taken_path}' to {element} would modify the immutable field '_id'"
            ),
        ));
    }
    Ok(())
}

/// A top-level `$` field in an updated document. MongoDB 7.0 words it for
/// replacements but says the same for operators.
pub(crate) fn dollar_prefixed_field(key: &str) -> Error {
    Error::new(
        ErrorKind::DollarPrefixedFieldName,
        format!(
            "The dollar ($) prefixed field '{key}' in '{key}' is not allowed in the context of an \
             update's replacement document. Consider using an aggregation pipeline with \
             $replaceWith."
        ),
    )
}

/// Follows existing components down from `v`.
fn descend<'v, 'a>(
    v: &'v Value<'a>,
    parts: impl Iterator<Item = &'v str>,
) -> Option<&'v Value<'a>> {
    let mut cur = v;
    for part in parts {
        cur = match cur {
            Value::Doc(fields) => &fields[field_index(fields, part)?].1,
            Value::Arr(items) => items.get(array_index(part)?)?,
            _ => return None,
        };
    }
    Some(cur)
}

/// The plan reaches an element the document has.
fn walk_existing<'a>(
    node: &'a Node,
    v: &mut Value<'a>,
    at: Cursor<'a>,
    env: &mut Env<'a>,
) -> Result<Outcome> {
    match node {
        Node::Leaf(leaf) => {
            let site = Site {
                path: &leaf.path,
                array_name: at.array_name,
            };
            let outcome = leaf.op.existing(v, &site, env)?;
            if outcome != Outcome::Unchanged {
                env.modified = true;
                if at.under_id && !env.mutable_id {
                    return Err(Error::new(
                        ErrorKind::ImmutableField,
                        format!(
                            "Performing an update on the path '{}' would modify the immutable field '_id'",
                            leaf.path.dotted()
                        ),
                    ));
                }
            }
            Ok(outcome)
        }
        Node::Object(inner) => {
            v.expand()?;
            if v.is_container() {
                walk_object(inner, v, at, env)?;
            } else {
                for (key, child) in &inner.children {
                    walk_blocked(&child.node, key, (at.name, v), env)?;
                }
            }
            Ok(Outcome::Unchanged)
        }
    }
}

/// The plan reaches a place the document has nothing at: returns what to
/// create there, if anything.
fn walk_missing<'a>(
    node: &'a Node,
    at: Cursor<'a>,
    env: &mut Env<'a>,
) -> Result<Option<Value<'a>>> {
    match node {
        Node::Leaf(leaf) => {
            let site = Site {
                path: &leaf.path,
                array_name: at.array_name,
            };
            let created = leaf.op.create(&site, env)?;
            if created.is_some() {
                env.modified = true;
                if at.under_id && env.id_grown.is_none() && !env.mutable_id {
                    env.id_grown = Some(leaf.path.prefix(at.taken));
                }
            }
            Ok(created)
        }
        Node::Object(inner) => {
            // Build the new parent aside and keep it only if something
            // was created in it (`$unset` of `a.b` must not create `a`).
            let mut parent = Value::Doc(Fields::new());
            walk_object(inner, &mut parent, at, env)?;
            Ok(match parent {
                Value::Doc(fields) if fields.is_empty() => None,
                other => Some(other),
            })
        }
    }
}

/// The plan's path runs into `blocker` (a scalar, or an array addressed by
/// name) at component `part`.
fn walk_blocked(node: &Node, part: &str, blocker: (&str, &Value<'_>), env: &Env<'_>) -> Result<()> {
    match node {
        Node::Leaf(leaf) => {
            let site = Site {
                path: &leaf.path,
                array_name: None,
            };
            leaf.op.blocked(&site, part, blocker, env)
        }
        Node::Object(inner) => inner
            .children
            .values()
            .try_for_each(|child| walk_blocked(&child.node, part, blocker, env)),
    }
}

/// Pads an array with nulls up to index `i`.
fn backfill(items: &mut Vec<Value<'_>>, i: usize) -> Result<()> {
    if i - items.len() > MAX_BACKFILL {
        return Err(Error::new(
            ErrorKind::CannotBackfillArray,
            format!("can't backfill more than {MAX_BACKFILL} elements"),
        ));
    }
    items.resize(i, Value::NULL);
    Ok(())
}

/// Takes a `$rename` source out of the document; None when it is missing.
fn take_rename_source<'a>(
    from: &FieldPath,
    doc: &mut Value<'a>,
    env: &Env<'a>,
) -> Result<Option<Value<'a>>> {
    let mut cur = doc;
    let mut cur_name = "";
    let mut array_name: Option<String> = None;
    let last = from.len() - 1;
    for i in 0..=last {
        let part = from.part(i).as_str();
        cur.expand()?;
        let next = match &*cur {
            Value::Doc(fields) => match field_index(fields, part) {
                Some(j) => j,
                None => return Ok(None),
            },
            Value::Arr(items) => match array_index(part) {
                Some(j) if j < items.len() => {
                    array_name = Some(cur_name.to_owned());
                    j
                }
                Some(_) => return Ok(None),
                None => return Err(rename_not_viable(cur_name, cur, from)),
            },
            _ => return Err(rename_not_viable(cur_name, cur, from)),
        };
        if i == last {
            if let Some(array) = array_name {
                return Err(Error::bad_value(format!(
                    "The source field cannot be an array element, '{}' in doc with {} has an \
                     array field called '{array}'",
                    from.dotted(),
                    env.id_or_no_id()
                )));
            }
            let Value::Doc(fields) = cur else {
                unreachable!("array parents were refused above")
            };
            return Ok(Some(fields.remove(next).1));
        }
        cur_name = part;
        cur = match cur {
            Value::Doc(fields) => &mut fields[next].1,
            Value::Arr(items) => &mut items[next],
            _ => unreachable!("only containers have children"),
        };
    }
    unreachable!("the loop returns at the last component")
}

fn rename_not_viable(name: &str, blocker: &Value<'_>, from: &FieldPath) -> Error {
    Error::new(
        ErrorKind::PathNotViable,
        format!(
            "cannot use the part ({name} of {}) to traverse the element ({{{}}})",
            from.dotted(),
            blocker.render_element(name)
        ),
    )
}

/// Moves `_id` to the front, where MongoDB keeps it.
pub(crate) fn id_first(fields: &mut Fields<'_>) {
    if let Some(i) = field_index(fields, "_id")
        && i > 0
    {
        let id = fields.remove(i);
        fields.insert(0, id);
    }
}
