//! The filter's types: the parsed tree ([`Filter`], its [`Expr`] nodes,
//! the [`Pred`]icates on paths, [`ElemMatch`] conditions and [`TypeSet`]s)
//! and the small accessors the planner and callers read it with. Building
//! the tree is `parse`'s; evaluating it is `matcher`'s.

use std::sync::Arc;

use crate::text::{Search, TextQuery};

use bson::{RawBson, RawBsonRef};

use super::bits::Bits;
use crate::encoding::cmp::Cmp;
use crate::encoding::collation::Collation;
use crate::error::Error;
use crate::geo::{EARTH_RADIUS_METERS, Position, Region, Shape, Stored, distance_radians};
use crate::pipeline::Expr as AggExpr;
use crate::query::in_list::InList;
use crate::query::regex::Regex;
use crate::schema::JsonSchema;

/// A parsed filter, with the collation its string comparisons use.
#[derive(Debug, Clone, PartialEq)]
pub struct Filter {
    pub(super) root: Expr,
    pub(super) collation: Option<Arc<Collation>>,
    /// A top-level `$text`, ANDed with `root`.
    pub(super) text: Option<TextClause>,
}

/// A filter's `$text`: its operand, and once the collection's text index
/// is known, the search it makes there.
#[derive(Debug, Clone)]
pub struct TextClause {
    pub query: TextQuery,
    pub search: Option<Arc<Search>>,
}

impl PartialEq for TextClause {
    fn eq(&self, other: &Self) -> bool {
        self.query == other.query
    }
}

/// A node of the filter tree.
#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    /// Every child matches; an empty `And` matches every document.
    And(Vec<Expr>),
    /// Some child matches.
    Or(Vec<Expr>),
    /// No child matches.
    Nor(Vec<Expr>),
    /// The predicate holds for the value(s) at a dotted path.
    Path { path: String, pred: Pred },
    /// Matches every document (`$alwaysTrue`).
    AlwaysTrue,
    /// Matches no document (`$alwaysFalse`).
    AlwaysFalse,
    /// The document satisfies a `$jsonSchema`.
    JsonSchema(Arc<JsonSchema>),
    /// `$expr`: an aggregation expression that must be true.
    Expr(ExprClause),
    /// `$where`: a server-side JavaScript function (or a function's body)
    /// that must return a truthy value for the document (`crate::js`).
    Where(Arc<str>),
}

/// The expression of a `$expr` clause, with the specification it was parsed
/// from (what explain shows, and what two clauses compare by).
#[derive(Debug, Clone)]
pub struct ExprClause {
    pub spec: RawBson,
    pub expr: AggExpr,
}

impl PartialEq for ExprClause {
    fn eq(&self, other: &Self) -> bool {
        self.spec == other.spec
    }
}

/// A predicate on the value(s) at one path.
#[derive(Debug, Clone, PartialEq)]
pub enum Pred {
    Eq(RawBson),
    /// Not `Eq`, over the whole path.
    Ne(RawBson),
    Gt(RawBson),
    Gte(RawBson),
    Lt(RawBson),
    Lte(RawBson),
    /// Equal to one of the values; a `null` in the list also matches
    /// missing and `undefined`.
    In(InList),
    /// Not `In`, over the whole path.
    Nin(InList),
    Exists(bool),
    /// None of: all of these predicates hold (`$not: {$gt: 1, $lt: 5}`).
    Not(Vec<Pred>),
    /// Equal to every one of the values; never matches when empty.
    All(Vec<RawBson>),
    /// An array with an element matching the condition.
    ElemMatch(ElemMatch),
    /// An array with exactly this many elements.
    Size(i64),
    /// A number whose truncated value modulo `divisor` is `remainder`.
    Mod {
        divisor: i64,
        remainder: i64,
    },
    /// A value of one of the types.
    Type(TypeSet),
    /// A bit test (`$bitsAllSet`, …) on an integer or a BinData.
    Bits(Bits),
    /// A string or symbol the regex matches, or an equal regex value.
    Regex(Regex),
    /// Some of these predicates holds: `$in` with regexes in its list.
    AnyOf(Vec<Pred>),
    /// A geospatial test (`$geoWithin`, `$geoIntersects`, `$near`,
    /// `$nearSphere`) on the location(s) at the path.
    Geo(GeoPred),
}

/// A geospatial predicate, shared (its shapes can be large). Two are
/// equal only when they are the same parse.
#[derive(Debug, Clone)]
pub struct GeoPred(pub Arc<GeoTest>);

impl PartialEq for GeoPred {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

/// What a geospatial predicate tests.
#[derive(Debug)]
pub enum GeoTest {
    /// `$geoWithin`: some location lies within the region.
    Within(Region),
    /// `$geoIntersects`: some location shares a point with the shape.
    Intersects(Shape),
    /// `$near` / `$nearSphere`: some location lies within the distances;
    /// the results come nearest first (the planner's part).
    Near(Near),
}

/// A `$near` or `$nearSphere` query.
#[derive(Debug, Clone, Copy)]
pub struct Near {
    pub center: Position,
    /// The center was a GeoJSON point: distances are in meters.
    pub geojson: bool,
    /// On the sphere (`$nearSphere`, or a GeoJSON point); else on the
    /// plane (legacy `$near`, which only a `2d` index serves).
    pub spherical: bool,
    pub min: Option<f64>,
    pub max: Option<f64>,
}

impl Near {
    /// The distance of a stored location from the center, in the query's
    /// unit (meters for a GeoJSON center, radians for a legacy one on the
    /// sphere, coordinate units on the plane); `None` for a location the
    /// plane cannot measure.
    pub fn distance(&self, stored: &Stored) -> Option<f64> {
        match (self.spherical, self.geojson) {
            (true, true) => Some(distance_radians(stored, self.center) * EARTH_RADIUS_METERS),
            (true, false) => Some(distance_radians(stored, self.center)),
            (false, _) => {
                let p = stored.position()?;
                Some((p.x - self.center.x).hypot(p.y - self.center.y))
            }
        }
    }

    /// Whether `distance` is within the query's bounds.
    pub fn admits(&self, distance: f64) -> bool {
        self.min.is_none_or(|m| distance >= m) && self.max.is_none_or(|m| distance <= m)
    }
}

/// The condition of an `$elemMatch`.
#[derive(Debug, Clone, PartialEq)]
pub enum ElemMatch {
    /// `{$elemMatch: {b: 1, c: {$gt: 2}}}`: an element that is a document
    /// (or an array, read as one) matching the filter.
    Document(Box<Expr>),
    /// `{$elemMatch: {$gt: 1, $lt: 5}}`: an element satisfying every
    /// predicate itself.
    Value(Vec<Pred>),
}

/// The types a `$type` predicate accepts, by BSON type number (`-1` is
/// MinKey, `127` MaxKey).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TypeSet {
    /// The `"number"` alias: every numeric type.
    pub numbers: bool,
    pub codes: Vec<i32>,
}

impl Filter {
    /// The filter comparing strings by `collation` (`None`: as bytes).
    pub fn collated(mut self, collation: Option<Arc<Collation>>) -> Filter {
        self.collation = collation;
        self
    }

    pub fn collation(&self) -> Option<&Arc<Collation>> {
        self.collation.as_ref()
    }

    /// The comparator of this filter's collation.
    pub fn cmp(&self) -> Cmp<'_> {
        Cmp::new(self.collation.as_deref())
    }

    /// Whether the filter uses `$expr` anywhere (partial index filters may
    /// not).
    pub fn has_expr(&self) -> bool {
        self.root.any(&|e| matches!(e, Expr::Expr(_)))
    }

    /// Whether the filter has a `$where` anywhere (an aggregation's
    /// `$match` may not).
    pub fn has_where(&self) -> bool {
        self.root.any(&|e| matches!(e, Expr::Where(_)))
    }

    /// Whether the filter reads nothing but the values at `paths`: every
    /// condition is on one of them (no `$expr`, `$where`, `$jsonSchema`
    /// or `$text`, which read the whole document). Such a filter decides a
    /// document from those values alone.
    pub fn reads_only(&self, paths: &[&str]) -> bool {
        fn within(e: &Expr, paths: &[&str]) -> bool {
            match e {
                Expr::And(c) | Expr::Or(c) | Expr::Nor(c) => c.iter().all(|e| within(e, paths)),
                Expr::Path { path, .. } => paths.contains(&path.as_str()),
                Expr::AlwaysTrue | Expr::AlwaysFalse => true,
                Expr::JsonSchema(_) | Expr::Expr(_) | Expr::Where(_) => false,
            }
        }
        self.text.is_none() && within(&self.root, paths)
    }

    pub fn root(&self) -> &Expr {
        &self.root
    }

    /// The filter's `$text` operand, if it has one.
    pub fn text(&self) -> Option<&TextQuery> {
        self.text.as_ref().map(|t| &t.query)
    }

    /// The search the filter's `$text` makes, once bound.
    pub fn text_search(&self) -> Option<&Arc<Search>> {
        self.text.as_ref().and_then(|t| t.search.as_ref())
    }

    /// The filter with its `$text` searching as `search` does (the search
    /// made against the collection's text index).
    pub fn with_text_search(mut self, search: Arc<Search>) -> Filter {
        if let Some(t) = &mut self.text {
            t.search = Some(search);
        }
        self
    }

    /// The predicates ANDed at the top level (flattening `$and`), as
    /// (path, predicate) pairs: what an index can serve.
    pub fn top_level_predicates(&self) -> Vec<(&str, &Pred)> {
        let mut found = Vec::new();
        collect_conjuncts(&self.root, &mut found);
        found
    }

    /// The error of a regex that ran out of backtracking budget while this
    /// filter matched documents (those matches counted as no match, so
    /// the query must report it rather than return a short answer).
    pub fn failure(&self) -> Option<Error> {
        let mut found = None;
        self.root.visit_regexes(&mut |r| {
            if found.is_none() {
                found = r.failure();
            }
        });
        found
    }

    /// The `$near` or `$nearSphere` among the filter's top-level
    /// conditions, with its path: only a plan that orders by distance may
    /// run it ([`Filter::check_near`] refuses one anywhere else).
    pub fn near(&self) -> Option<(&str, &Near)> {
        let mut top = Vec::new();
        collect_conjuncts(&self.root, &mut top);
        top.into_iter()
            .find_map(|(path, pred)| pred.as_near().map(|n| (path, n)))
    }

    /// Whether the filter has a `$near` or `$nearSphere` anywhere.
    pub fn has_near(&self) -> bool {
        self.near_count() > 0
    }

    /// Refuses a filter whose `$near` or `$nearSphere` is not one of its
    /// top-level conditions, or that has more than one, as mongod does.
    pub fn check_near(&self) -> Result<(), Error> {
        match self.near_count() {
            0 => Ok(()),
            1 if self.near().is_some() => Ok(()),
            1 => Err(Error::bad_value("geoNear must be top-level expr")),
            _ => Err(Error::bad_value("Too many geoNear expressions")),
        }
    }

    fn near_count(&self) -> usize {
        let mut count = 0;
        self.root.count_near(&mut count);
        count
    }

    /// Whether the filter has no predicate at all (matches every document).
    pub fn is_empty(&self) -> bool {
        matches!(&self.root, Expr::And(children) if children.is_empty())
    }

    /// The `_id` of a point lookup: `Some` when the filter is exactly
    /// `{_id: v}` or `{_id: {$eq: v}}` for a scalar `v` (not an array,
    /// document, null or regex).
    pub fn id_equality(&self) -> Option<RawBsonRef<'_>> {
        let Expr::Path {
            path,
            pred: Pred::Eq(value),
        } = &self.root
        else {
            return None;
        };
        let point = !matches!(
            value,
            RawBson::Array(_)
                | RawBson::Document(_)
                | RawBson::Null
                | RawBson::Undefined
                | RawBson::RegularExpression(_)
        );
        (path == "_id" && point).then(|| value.as_raw_bson_ref())
    }
}

fn collect_conjuncts<'a>(expr: &'a Expr, found: &mut Vec<(&'a str, &'a Pred)>) {
    match expr {
        Expr::And(children) => children.iter().for_each(|c| collect_conjuncts(c, found)),
        Expr::Path { path, pred } => found.push((path, pred)),
        _ => {}
    }
}

impl Expr {
    /// Whether this node or one below it through `$and`, `$or` and `$nor`
    /// is one `is` accepts.
    fn any(&self, is: &dyn Fn(&Expr) -> bool) -> bool {
        is(self)
            || matches!(self, Expr::And(c) | Expr::Or(c) | Expr::Nor(c) if c.iter().any(|e| e.any(is)))
    }

    fn visit_regexes(&self, f: &mut dyn FnMut(&Regex)) {
        match self {
            Expr::And(c) | Expr::Or(c) | Expr::Nor(c) => c.iter().for_each(|e| e.visit_regexes(f)),
            Expr::Path { pred, .. } => pred.visit_regexes(f),
            // A schema's patterns are its own (`schema::pattern`).
            Expr::AlwaysTrue
            | Expr::AlwaysFalse
            | Expr::JsonSchema(_)
            | Expr::Expr(_)
            | Expr::Where(_) => {}
        }
    }
}

impl Expr {
    fn count_near(&self, count: &mut usize) {
        match self {
            Expr::And(c) | Expr::Or(c) | Expr::Nor(c) => c.iter().for_each(|e| e.count_near(count)),
            Expr::Path { pred, .. } => pred.count_near(count),
            Expr::AlwaysTrue
            | Expr::AlwaysFalse
            | Expr::JsonSchema(_)
            | Expr::Expr(_)
            | Expr::Where(_) => {}
        }
    }
}

impl Pred {
    /// This predicate itself, when it is a `$near` or `$nearSphere`.
    fn as_near(&self) -> Option<&Near> {
        match self {
            Pred::Geo(GeoPred(test)) => match &**test {
                GeoTest::Near(n) => Some(n),
                _ => None,
            },
            _ => None,
        }
    }

    fn count_near(&self, count: &mut usize) {
        match self {
            Pred::Geo(_) => *count += usize::from(self.as_near().is_some()),
            Pred::Not(preds) | Pred::AnyOf(preds) | Pred::ElemMatch(ElemMatch::Value(preds)) => {
                preds.iter().for_each(|p| p.count_near(count))
            }
            Pred::ElemMatch(ElemMatch::Document(e)) => e.count_near(count),
            _ => {}
        }
    }

    fn visit_regexes(&self, f: &mut dyn FnMut(&Regex)) {
        match self {
            Pred::Regex(r) => f(r),
            Pred::Not(preds) | Pred::AnyOf(preds) => preds.iter().for_each(|p| p.visit_regexes(f)),
            Pred::ElemMatch(ElemMatch::Document(e)) => e.visit_regexes(f),
            Pred::ElemMatch(ElemMatch::Value(preds)) => {
                preds.iter().for_each(|p| p.visit_regexes(f))
            }
            _ => {}
        }
    }
}
