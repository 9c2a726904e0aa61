//! The parsed form of an expression: a tree whose leaves are constants and
//! variable paths, whose eager operators point at the function that
//! applies them, and whose operators that decide what to evaluate (`$cond`,
//! `$and`, `$let`, `$map`, …) are nodes of their own.
//!
//! Variables are resolved while parsing: each binding (`$let` vars, `$map`'s
//! `as`, …) gets a slot, and `$$ROOT` is slot 0. Command-level variables and
//! `$$NOW` are constants by the time a tree exists.

use bson::RawBson;

use super::value::{Cx, Val};
use crate::error::Result;

/// A variable's place in the evaluation frame.
pub type Slot = usize;

/// The slot holding the document being evaluated (`$$ROOT`, and `$$CURRENT`
/// unless rebound).
pub const ROOT: Slot = 0;

/// The slot holding `$$CURRENT` in an expression that keeps it apart from
/// `$$ROOT` (`$redact`'s).
pub const CURRENT: Slot = 1;

/// An eager operator's implementation: its arguments, evaluated in order.
pub type Apply = for<'a> fn(&Cx<'_>, Vec<Val<'a>>) -> Result<Val<'a>>;

/// How many arguments an operator takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arity {
    Exactly(usize),
    Between(usize, usize),
    AtLeast(usize),
    Any,
}

/// An operator whose arguments are all evaluated before it runs.
#[derive(Debug)]
pub struct OpDef {
    pub name: &'static str,
    pub arity: Arity,
    pub apply: Apply,
}

/// One node of an expression.
#[derive(Debug, Clone)]
pub enum Node {
    Const(RawBson),
    /// `$$REMOVE`: no value at all.
    Missing,
    /// A variable, and the field path below it (`$a.b` is `CURRENT.a.b`).
    Var(Slot, Vec<String>),
    /// `{a: <expr>, …}`: a document built field by field.
    Object(Vec<(String, Node)>),
    /// `[<expr>, …]`: an array built element by element.
    Array(Vec<Node>),
    Call(&'static OpDef, Vec<Node>),
    And(Vec<Node>),
    Or(Vec<Node>),
    Cond(Box<[Node; 3]>),
    IfNull(Vec<Node>),
    Switch {
        branches: Vec<(Node, Node)>,
        default: Option<Box<Node>>,
    },
    Let {
        vars: Vec<(Slot, Node)>,
        body: Box<Node>,
    },
    Map {
        input: Box<Node>,
        var: Slot,
        body: Box<Node>,
    },
    Filter {
        input: Box<Node>,
        var: Slot,
        cond: Box<Node>,
        limit: Option<Box<Node>>,
    },
    Reduce {
        input: Box<Node>,
        initial: Box<Node>,
        this: Slot,
        value: Slot,
        body: Box<Node>,
    },
    /// `$function`: a server-side JavaScript function (`crate::js`) called
    /// with the values of its argument expressions.
    Script {
        source: std::sync::Arc<str>,
        args: Vec<Node>,
    },
    /// An operator with `onNull`/`onError` fallbacks (`$convert`,
    /// `$dateFromString`, `$dateToString`): the fallbacks are evaluated only
    /// when needed.
    Guarded {
        op: &'static OpDef,
        args: Vec<Node>,
        on_null: Option<Box<Node>>,
        on_error: Option<Box<Node>>,
    },
}

impl Node {
    /// The constant this node always evaluates to, if it is one.
    pub fn constant(&self) -> Option<Option<&RawBson>> {
        match self {
            Node::Const(v) => Some(Some(v)),
            Node::Missing => Some(None),
            _ => None,
        }
    }
}

/// Declares an eager operator: `op!(ADD, "$add", Arity::Any, add);`.
macro_rules! op {
    ($static:ident, $name:literal, $arity:expr, $f:ident) => {
        pub(super) static $static: $crate::pipeline::expr::tree::OpDef =
            $crate::pipeline::expr::tree::OpDef {
                name: $name,
                arity: $arity,
                apply: $f,
            };
    };
}
pub(crate) use op;
