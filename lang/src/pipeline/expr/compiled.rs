//! [`Expr`]: an expression parsed once (variables resolved, constants
//! folded) and evaluated against each document, the form stages, `$expr`
//! and accumulators hold.

use bson::{RawBson, RawBsonRef, RawDocument};

use super::eval::{evaluate, evaluate_at};
use super::fold::fold;
use super::parse::Parser;
use super::tree::Node;
use super::value::{Comparator, Cx, binary_order};
use super::vars::Env;
use crate::error::Result;

/// One parsed expression.
#[derive(Debug, Clone)]
pub struct Expr {
    node: Node,
    /// Frame slots evaluation needs (`$$ROOT` and every binding).
    slots: usize,
}

impl Expr {
    /// Parses an expression with only `$$NOW` (taken now) defined. Commands
    /// parse with [`Expr::parse_in`] and their own [`Env`], so every
    /// expression of one command sees one `$$NOW` and the command's `let`.
    pub fn parse(v: RawBsonRef<'_>) -> Result<Expr> {
        Expr::parse_in(v, &Env::new(bson::DateTime::now()))
    }

    /// Parses an expression in a command's environment.
    pub fn parse_in(v: RawBsonRef<'_>, env: &Env) -> Result<Expr> {
        let mut parser = Parser::new(env);
        let node = parser.operand(v)?;
        let slots = parser.slots();
        Ok(Expr {
            node: fold(node, slots)?,
            slots,
        })
    }

    /// Parses an expression whose `$$CURRENT` (and field paths) may be a
    /// document below `$$ROOT` ([`Expr::eval_at`]).
    pub fn parse_with_current(v: RawBsonRef<'_>, env: &Env) -> Result<Expr> {
        let mut parser = Parser::with_current_apart(env);
        let node = parser.operand(v)?;
        let slots = parser.slots();
        Ok(Expr {
            node: fold(node, slots)?,
            slots,
        })
    }

    /// The value with `$$ROOT` `root` and `$$CURRENT` `current`, for an
    /// expression parsed by [`Expr::parse_with_current`].
    pub fn eval_at(&self, root: &RawDocument, current: &RawDocument) -> Result<Option<RawBson>> {
        let cx = Cx::new(&binary_order);
        Ok(evaluate_at(&self.node, self.slots, root, current, &cx)?.into_bson())
    }

    /// An expression that always evaluates to `v`.
    pub fn constant(v: RawBson) -> Expr {
        Expr {
            node: Node::Const(v),
            slots: 1,
        }
    }

    /// The value for `doc`; `None` when it is missing (a missing field,
    /// `$$REMOVE`).
    pub fn eval(&self, doc: &RawDocument) -> Result<Option<RawBson>> {
        self.eval_with(doc, &binary_order)
    }

    /// The value for `doc`, comparing values with `compare` (the hook a
    /// collation uses).
    pub fn eval_with(
        &self,
        doc: &RawDocument,
        compare: &Comparator<'_>,
    ) -> Result<Option<RawBson>> {
        let cx = Cx::new(compare);
        Ok(evaluate(&self.node, self.slots, doc, &cx)?.into_bson())
    }

    /// Whether the value for `doc` is true as MongoDB reads truth (`$expr`,
    /// `$cond`): false, 0, null and missing are not.
    pub fn truthy(&self, doc: &RawDocument) -> Result<bool> {
        self.truthy_with(doc, &binary_order)
    }

    /// [`Self::truthy`] with strings compared by `compare` (a collation).
    pub fn truthy_with(&self, doc: &RawDocument, compare: &Comparator<'_>) -> Result<bool> {
        let cx = Cx::new(compare);
        Ok(evaluate(&self.node, self.slots, doc, &cx)?.truthy())
    }

    /// The constant this expression always has, if it is one (`Some(None)`
    /// for a constant missing value).
    pub fn as_constant(&self) -> Option<Option<&RawBson>> {
        self.node.constant()
    }
}
