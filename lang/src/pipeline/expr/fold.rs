//! Constant folding, done once after parsing as mongod's `optimize` does:
//! an eager operator whose arguments are all constants, and an object or
//! array of constants, become their value. So `{$divide: [1, 0]}` fails
//! when the command is parsed, before any document is read. A volatile
//! operator (`$rand`) is never folded.

use bson::RawDocumentBuf;

use super::eval::evaluate;
use super::random;
use super::tree::Node;
use super::value::{Cx, binary_order};
use crate::error::Result;

/// `node` with every constant subtree replaced by its value.
pub(super) fn fold(node: Node, slots: usize) -> Result<Node> {
    let node = match node {
        Node::Object(fields) => Node::Object(
            fields
                .into_iter()
                .map(|(k, v)| Ok((k, fold(v, slots)?)))
                .collect::<Result<_>>()?,
        ),
        Node::Array(items) => Node::Array(fold_all(items, slots)?),
        Node::Call(def, args) => Node::Call(def, fold_all(args, slots)?),
        other => return Ok(other),
    };
    let constant = match &node {
        Node::Object(fields) => fields.iter().all(|(_, v)| v.constant().is_some()),
        Node::Call(def, _) if random::VOLATILE.contains(&def.name) => false,
        Node::Array(items) | Node::Call(_, items) => items.iter().all(|v| v.constant().is_some()),
        _ => false,
    };
    if !constant {
        return Ok(node);
    }
    let empty = RawDocumentBuf::new();
    let cx = Cx::new(&binary_order);
    Ok(match evaluate(&node, slots, &empty, &cx)?.into_bson() {
        Some(v) => Node::Const(v),
        None => Node::Missing,
    })
}

fn fold_all(nodes: Vec<Node>, slots: usize) -> Result<Vec<Node>> {
    nodes.into_iter().map(|n| fold(n, slots)).collect()
}
