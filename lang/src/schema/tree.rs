//! The parsed form of a `$jsonSchema`: what `parse` builds once and
//! `validate` and `explain` read for every document.
//!
//! A [`Schema`] keeps each keyword as a [`Rule`] in the order MongoDB
//! evaluates them, which is also the order its error details list them:
//! string and number keywords, array keywords, object keywords, then the
//! logical ones (`allOf`, `anyOf`, `oneOf`, `not`, `enum`); `type` /
//! `bsonType` is checked last. Each rule keeps the keyword's value as
//! written, because error details quote it (`specifiedAs`). This module
//! holds data only: no parsing, matching or error building.

use bson::{RawBson, RawBsonRef, RawDocumentBuf};

use super::pattern::Pattern;
use crate::query::value::{number_as_f64, type_code};

/// One schema (the whole `$jsonSchema`, or a nested one).
#[derive(Debug, Clone)]
pub(crate) struct Schema {
    /// The schema document as written, for an error that quotes it whole
    /// (a top-level schema whose type excludes objects).
    pub source: RawDocumentBuf,
    pub title: Option<String>,
    pub description: Option<String>,
    /// `type` or `bsonType`.
    pub types: Option<Types>,
    /// Every other keyword, in MongoDB's evaluation order.
    pub rules: Vec<Rule>,
}

/// The types a `type` or `bsonType` keyword allows.
#[derive(Debug, Clone)]
pub(crate) struct Types {
    /// `"type"` or `"bsonType"`, as error details name the keyword.
    pub keyword: &'static str,
    /// The keyword's value as written.
    pub spec: RawBson,
    /// `"number"`: every numeric type.
    pub numbers: bool,
    /// MongoDB type numbers (`$type`'s).
    pub codes: Vec<i32>,
}

/// What a `min…`/`max…` count keyword counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Counted {
    /// `minLength`/`maxLength`: code points of a string.
    StringLength,
    /// `minItems`/`maxItems`: elements of an array.
    ArrayItems,
    /// `minProperties`/`maxProperties`: fields of a document.
    ObjectProperties,
}

/// `additionalItems` / `additionalProperties`.
#[derive(Debug, Clone)]
pub(crate) enum Additional {
    /// `true` (or absent) allows anything, `false` nothing.
    Allowed(bool),
    /// Each additional item or property must match.
    Schema(Box<Schema>),
}

/// One property of `properties`.
#[derive(Debug, Clone)]
pub(crate) struct Property {
    pub name: String,
    pub schema: Schema,
    /// Named in `required` too: the schema then applies even when the
    /// property is missing.
    pub required: bool,
}

/// One entry of `dependencies`.
#[derive(Debug, Clone)]
pub(crate) enum Dependency {
    /// `{a: ["b", "c"]}`: when `a` is present, so must `b` and `c` be.
    Properties { name: String, needs: Vec<String> },
    /// `{a: {…}}`: when `a` is present, the object must match the schema.
    Schema { name: String, schema: Box<Schema> },
}

/// One keyword other than `type`/`bsonType` and the annotations.
#[derive(Debug, Clone)]
pub(crate) enum Rule {
    /// `pattern`: strings must contain a match.
    Pattern(Pattern),
    /// `minLength`/`maxLength`/`minItems`/`maxItems`/`minProperties`/
    /// `maxProperties`.
    Count {
        keyword: &'static str,
        counted: Counted,
        max: bool,
        limit: i64,
        spec: RawBson,
    },
    /// `multipleOf`: numbers must be an exact multiple (decimal arithmetic).
    MultipleOf(RawBson),
    /// `maximum`/`minimum`, with `exclusiveMaximum`/`exclusiveMinimum`.
    Bound {
        keyword: &'static str,
        limit: RawBson,
        max: bool,
        exclusive: bool,
    },
    /// `uniqueItems: true`.
    UniqueItems,
    /// `items: {…}`: every element matches.
    Items(Box<Schema>),
    /// `items: [{…}, …]`: element i matches schema i.
    ItemsByPosition(Vec<Schema>),
    /// `additionalItems` after a positional `items`: elements from `start`.
    AdditionalItems {
        start: usize,
        rule: Additional,
    },
    Properties(Vec<Property>),
    /// `patternProperties` and `additionalProperties` together: a field
    /// must match every pattern schema whose pattern its name matches; a
    /// field neither named in `properties` nor matched by a pattern must
    /// match `additional`.
    AllowedProperties {
        named: Vec<String>,
        patterns: Vec<(Pattern, Schema)>,
        additional: Additional,
    },
    /// `required`: `names` sorted, as MongoDB reports missing ones.
    Required {
        names: Vec<String>,
        spec: RawBson,
    },
    Dependencies {
        entries: Vec<Dependency>,
        title: Option<String>,
        description: Option<String>,
    },
    AllOf(Vec<Schema>),
    AnyOf(Vec<Schema>),
    OneOf(Vec<Schema>),
    Not(Box<Schema>),
    Enum {
        values: Vec<RawBson>,
        spec: RawBson,
    },
}

impl Types {
    /// Whether a value is of one of the types (an array is only `array`:
    /// a schema never looks inside one implicitly).
    pub fn contains(&self, value: RawBsonRef<'_>) -> bool {
        (self.numbers && number_as_f64(value).is_some()) || self.codes.contains(&type_code(value))
    }

    /// Whether documents are allowed (a top-level schema that forbids
    /// them matches nothing, since only documents are stored).
    pub fn allows_documents(&self) -> bool {
        self.codes.contains(&3)
    }
}

impl Rule {
    /// Whether the rule constrains only strings, numbers or arrays: such a
    /// rule has nothing to check at the top level, where the value is
    /// always a document.
    pub fn skipped_at_top_level(&self) -> bool {
        match self {
            Rule::Count { counted, .. } => *counted != Counted::ObjectProperties,
            Rule::Pattern(_)
            | Rule::MultipleOf(_)
            | Rule::Bound { .. }
            | Rule::UniqueItems
            | Rule::Items(_)
            | Rule::ItemsByPosition(_)
            | Rule::AdditionalItems { .. } => true,
            _ => false,
        }
    }
}
