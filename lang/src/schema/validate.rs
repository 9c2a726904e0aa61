//! Whether a value satisfies a parsed schema, with JSON Schema's rules as
//! MongoDB applies them.
//!
//! A keyword constrains only values of the type it is about (`maxLength`
//! ignores numbers, `required` ignores strings); nothing looks inside an
//! array unless `items` says so; a property missing from a document is
//! checked only when `required` names it (then its schema sees a missing
//! value: `type` fails, the type-specific keywords pass). At the top level
//! the value is the whole document, so keywords about strings, numbers and
//! arrays have nothing to check, and a `type` that excludes documents
//! matches nothing. Values compare as MongoDB compares them (`1`, `1.0`
//! and `NumberLong(1)` are equal), with documents' fields in any order for
//! `enum` and `uniqueItems`. This module answers yes or no; `explain` says
//! why not.

use std::cmp::Ordering;

use bson::{RawBsonRef, RawDocument};

use super::tree::{Additional, Counted, Dependency, Rule, Schema};
use super::value::{field, fields, first_duplicate, same_value};
use crate::encoding::cmp::compare_values;
use crate::encoding::decimal::{self, Dec};
use crate::query::path::elements;
use crate::query::value::is_nan;

impl Schema {
    /// Whether `value` (`None`: missing) satisfies the schema; `top` when
    /// it is a whole document at the top of a `$jsonSchema`.
    pub(super) fn matches(&self, value: Option<RawBsonRef<'_>>, top: bool) -> bool {
        if top {
            if self.types.as_ref().is_some_and(|t| !t.allows_documents()) {
                return false;
            }
        } else if let Some(types) = &self.types
            && !value.is_some_and(|v| types.contains(v))
        {
            return false;
        }
        self.rules.iter().all(|rule| rule.matches(value, top))
    }
}

impl Rule {
    /// Whether `value` satisfies this one keyword.
    pub(super) fn matches(&self, value: Option<RawBsonRef<'_>>, top: bool) -> bool {
        if top && self.skipped_at_top_level() {
            return true;
        }
        match self {
            Rule::Pattern(pattern) => match value {
                Some(RawBsonRef::String(s)) => pattern.is_match(s),
                _ => true,
            },
            Rule::Count {
                counted,
                max,
                limit,
                ..
            } => {
                count(*counted, value).is_none_or(|n| if *max { n <= *limit } else { n >= *limit })
            }
            Rule::MultipleOf(divisor) => {
                value.is_none_or(|v| number(v).is_none_or(|n| is_multiple(n, divisor_of(divisor))))
            }
            Rule::Bound {
                limit,
                max,
                exclusive,
                ..
            } => value.is_none_or(|v| {
                number(v).is_none() || within(v, limit.as_raw_bson_ref(), *max, *exclusive)
            }),
            Rule::UniqueItems => match value {
                Some(RawBsonRef::Array(array)) => first_duplicate(array).is_none(),
                _ => true,
            },
            Rule::Items(schema) => match value {
                Some(RawBsonRef::Array(array)) => {
                    elements(array).all(|item| schema.matches(Some(item), false))
                }
                _ => true,
            },
            Rule::ItemsByPosition(schemas) => match value {
                Some(RawBsonRef::Array(array)) => elements(array)
                    .zip(schemas)
                    .all(|(item, schema)| schema.matches(Some(item), false)),
                _ => true,
            },
            Rule::AdditionalItems { start, rule } => match value {
                Some(RawBsonRef::Array(array)) => {
                    elements(array).skip(*start).all(|item| rule.allows(item))
                }
                _ => true,
            },
            Rule::Properties(properties) => match value {
                Some(RawBsonRef::Document(doc)) => {
                    properties.iter().all(|p| match field(doc, &p.name) {
                        Some(v) => p.schema.matches(Some(v), false),
                        None => !p.required || p.schema.matches(None, false),
                    })
                }
                _ => true,
            },
            Rule::AllowedProperties { .. } => match value {
                Some(RawBsonRef::Document(doc)) => {
                    fields(doc).all(|(name, v)| self.allows_field(name, v))
                }
                _ => true,
            },
            Rule::Required { names, .. } => match value {
                Some(RawBsonRef::Document(doc)) => {
                    names.iter().all(|name| field(doc, name).is_some())
                }
                _ => true,
            },
            Rule::Dependencies { entries, .. } => match value {
                Some(RawBsonRef::Document(doc)) => {
                    entries.iter().all(|d| dependency_holds(d, doc, value, top))
                }
                _ => true,
            },
            Rule::AllOf(schemas) => schemas.iter().all(|s| s.matches(value, top)),
            Rule::AnyOf(schemas) => schemas.iter().any(|s| s.matches(value, top)),
            Rule::OneOf(schemas) => schemas.iter().filter(|s| s.matches(value, top)).count() == 1,
            Rule::Not(schema) => !schema.matches(value, top),
            Rule::Enum { values, .. } => value.is_some_and(|v| {
                values.iter().any(|allowed| {
                    // At the top only documents can be equal to the document.
                    (!top || matches!(allowed, bson::RawBson::Document(_)))
                        && same_value(v, allowed.as_raw_bson_ref())
                })
            }),
        }
    }

    /// For `AllowedProperties`: whether one field is allowed. A field must
    /// match the schema of every pattern its name matches; a field that no
    /// pattern matches and `properties` does not name must match
    /// `additionalProperties`.
    pub(super) fn allows_field(&self, name: &str, value: RawBsonRef<'_>) -> bool {
        let Rule::AllowedProperties {
            named,
            patterns,
            additional,
            ..
        } = self
        else {
            return true;
        };
        let mut patterned = false;
        for (pattern, schema) in patterns {
            if pattern.is_match(name) {
                patterned = true;
                if !schema.matches(Some(value), false) {
                    return false;
                }
            }
        }
        patterned || named.iter().any(|n| n == name) || additional.allows(value)
    }

    /// For `AllowedProperties`: whether a field is additional (neither
    /// named by `properties` nor matched by a pattern).
    pub(super) fn is_additional(&self, name: &str) -> bool {
        match self {
            Rule::AllowedProperties {
                named, patterns, ..
            } => {
                !named.iter().any(|n| n == name) && !patterns.iter().any(|(p, _)| p.is_match(name))
            }
            _ => false,
        }
    }
}

impl Additional {
    /// Whether an additional item or property is allowed.
    pub(super) fn allows(&self, value: RawBsonRef<'_>) -> bool {
        match self {
            Additional::Allowed(allowed) => *allowed,
            Additional::Schema(schema) => schema.matches(Some(value), false),
        }
    }
}

/// Whether one entry of `dependencies` holds for a document.
pub(super) fn dependency_holds(
    dependency: &Dependency,
    doc: &RawDocument,
    value: Option<RawBsonRef<'_>>,
    top: bool,
) -> bool {
    match dependency {
        Dependency::Properties { name, needs } => {
            field(doc, name).is_none() || needs.iter().all(|n| field(doc, n).is_some())
        }
        Dependency::Schema { name, schema } => {
            field(doc, name).is_none() || schema.matches(value, top)
        }
    }
}

/// What a count keyword counts in `value`; `None` when the value is not
/// of the type it is about.
pub(super) fn count(counted: Counted, value: Option<RawBsonRef<'_>>) -> Option<i64> {
    let n = match (counted, value?) {
        (Counted::StringLength, RawBsonRef::String(s)) => s.chars().count(),
        (Counted::ArrayItems, RawBsonRef::Array(array)) => elements(array).count(),
        (Counted::ObjectProperties, RawBsonRef::Document(doc)) => fields(doc).count(),
        _ => return None,
    };
    i64::try_from(n).ok()
}

/// Whether a number is within `maximum`/`minimum`. NaN satisfies only an
/// inclusive NaN bound, as in MongoDB's comparisons.
pub(super) fn within(
    value: RawBsonRef<'_>,
    limit: RawBsonRef<'_>,
    max: bool,
    exclusive: bool,
) -> bool {
    if is_nan(value) || is_nan(limit) {
        return !exclusive && is_nan(value) && is_nan(limit);
    }
    match (compare_values(value, limit), max, exclusive) {
        (Ordering::Equal, _, exclusive) => !exclusive,
        (Ordering::Less, max, _) => max,
        (Ordering::Greater, max, _) => !max,
    }
}

/// A number as a decimal, the way MongoDB's `multipleOf` computes
/// (doubles rounded to 15 significant digits); `None` for non-numbers.
pub(super) fn number(value: RawBsonRef<'_>) -> Option<Dec> {
    match value {
        RawBsonRef::Int32(n) => Some(decimal::from_i64(i64::from(n))),
        RawBsonRef::Int64(n) => Some(decimal::from_i64(n)),
        RawBsonRef::Double(x) => Some(decimal::from_f64(x)),
        RawBsonRef::Decimal128(d) => Some(decimal::decode(d)),
        _ => None,
    }
}

fn divisor_of(divisor: &bson::RawBson) -> Dec {
    number(divisor.as_raw_bson_ref()).unwrap_or(Dec::NaN)
}

/// Whether `value` is an exact multiple of `divisor` (remainder zero in
/// decimal arithmetic). Infinities and NaN are multiples of nothing.
pub(super) fn is_multiple(value: Dec, divisor: Dec) -> bool {
    let (
        Dec::Finite {
            coeff: a, exp: ea, ..
        },
        Dec::Finite {
            coeff: b, exp: eb, ..
        },
    ) = (value, divisor)
    else {
        return false;
    };
    if b == 0 {
        return false;
    }
    if a == 0 {
        return true;
    }
    // value = a·10^ea and divisor = b·10^eb; scale both to the smaller
    // exponent and compare remainders of the integers.
    if ea >= eb {
        let mut rest = a % b;
        for _ in 0..(ea - eb) {
            // rest < b < 2^113, so rest·10 fits.
            rest = rest * 10 % b;
        }
        rest == 0
    } else {
        // A scaled divisor beyond u128 exceeds `a` (below 10^34): then the
        // remainder is `a` itself, which is not zero.
        10u128
            .checked_pow((eb - ea).unsigned_abs())
            .and_then(|p| b.checked_mul(p))
            .is_some_and(|scaled| a % scaled == 0)
    }
}

#[cfg(test)]
mod tests {
    use bson::{RawBson, RawDocumentBuf, rawdoc};

    use super::*;
    use crate::schema::parse::parse_schema;

    /// Whether `doc` matches the top-level schema.
    fn matches(schema: RawDocumentBuf, doc: RawDocumentBuf) -> bool {
        parse_schema(&schema)
            .unwrap()
            .matches(Some(RawBsonRef::Document(&doc)), true)
    }

    /// Runs (schema, document, expected) cases, naming the failing one.
    fn check(cases: Vec<(RawDocumentBuf, RawDocumentBuf, bool)>) {
        for (schema, doc, expected) in cases {
            assert_eq!(
                matches(schema.clone(), doc.clone()),
                expected,
                "schema {schema:?} on {doc:?}"
            );
        }
    }

    fn decimal(text: &str) -> RawBson {
        RawBson::Decimal128(text.parse().unwrap())
    }

    // Cases follow jstests/core/json_schema/*.js unless noted.

    #[test]
    fn bson_type_and_type_check_the_value_itself() {
        let p = |t: RawBson| rawdoc! { "properties": { "a": { "bsonType": t } } };
        let j = |t: &str| rawdoc! { "properties": { "a": { "type": t } } };
        check(vec![
            (p("int".into()), rawdoc! { "a": 1 }, true),
            (p("int".into()), rawdoc! { "a": 1i64 }, false),
            (p("long".into()), rawdoc! { "a": 1i64 }, true),
            (p("number".into()), rawdoc! { "a": decimal("1.5") }, true),
            (p("number".into()), rawdoc! { "a": "1" }, false),
            (
                p("date".into()),
                rawdoc! { "a": bson::DateTime::from_millis(0) },
                true,
            ),
            (p("date".into()), rawdoc! { "a": "2020-01-01" }, false),
            (
                p(bson::rawbson!(["string", "null"])),
                rawdoc! { "a": null },
                true,
            ),
            (p("string".into()), rawdoc! { "a": ["x"] }, false),
            (p("array".into()), rawdoc! { "a": ["x"] }, true),
            (p("string".into()), rawdoc! {}, true),
            (j("number"), rawdoc! { "a": 3 }, true),
            (j("number"), rawdoc! { "a": [3] }, false),
            (j("boolean"), rawdoc! { "a": true }, true),
            (j("object"), rawdoc! { "a": {} }, true),
            (j("null"), rawdoc! { "a": 0 }, false),
        ]);
    }

    #[test]
    fn a_top_level_type_other_than_object_matches_nothing() {
        check(vec![
            (rawdoc! { "type": "object" }, rawdoc! { "a": 1 }, true),
            (rawdoc! { "type": "string" }, rawdoc! { "a": 1 }, false),
            (rawdoc! { "bsonType": "long" }, rawdoc! {}, false),
            (rawdoc! { "bsonType": ["long", "object"] }, rawdoc! {}, true),
            (rawdoc! {}, rawdoc! { "x": 1 }, true),
        ]);
    }

    #[test]
    fn required_needs_every_named_field() {
        let s = rawdoc! { "required": ["a", "b"] };
        check(vec![
            (s.clone(), rawdoc! { "a": 1, "b": null }, true),
            (s.clone(), rawdoc! { "a": 1 }, false),
            // Nested `required` only applies to documents.
            (
                rawdoc! { "properties": { "o": { "required": ["x"] } } },
                rawdoc! { "o": 3 },
                true,
            ),
            (
                rawdoc! { "properties": { "o": { "required": ["x"] } } },
                rawdoc! { "o": {} },
                false,
            ),
            // Property names are not paths.
            (
                rawdoc! { "required": ["a.b"] },
                rawdoc! { "a": { "b": 1 } },
                false,
            ),
        ]);
    }

    #[test]
    fn properties_apply_when_present_or_required() {
        let s = rawdoc! { "properties": { "a": { "bsonType": "int" } } };
        let r =
            rawdoc! { "properties": { "a": { "not": { "bsonType": "int" } } }, "required": ["a"] };
        check(vec![
            (s.clone(), rawdoc! {}, true),
            (s.clone(), rawdoc! { "a": 1 }, true),
            (s.clone(), rawdoc! { "a": "x" }, false),
            (
                rawdoc! { "properties": { "o": { "properties": { "p": { "type": "string" } } } } },
                rawdoc! { "o": 3 },
                true,
            ),
            (
                rawdoc! { "properties": { "o": { "properties": { "p": { "type": "string" } } } } },
                rawdoc! { "o": { "p": 1 } },
                false,
            ),
            (r.clone(), rawdoc! { "a": "x" }, true),
            (r, rawdoc! {}, false),
        ]);
    }

    #[test]
    fn numeric_bounds_apply_to_numbers_only() {
        let max = rawdoc! { "properties": { "n": { "maximum": 0 } } };
        let exclusive =
            rawdoc! { "properties": { "n": { "maximum": 0, "exclusiveMaximum": true } } };
        let min = rawdoc! { "properties": { "n": { "minimum": 2, "exclusiveMinimum": false } } };
        check(vec![
            (max.clone(), rawdoc! { "n": -3 }, true),
            (max.clone(), rawdoc! { "n": 0i64 }, true),
            (max.clone(), rawdoc! { "n": 3 }, false),
            (max.clone(), rawdoc! { "n": "str" }, true),
            (max.clone(), rawdoc! { "n": {} }, true),
            (max.clone(), rawdoc! { "n": f64::NAN }, false),
            (exclusive.clone(), rawdoc! { "n": 0.0 }, false),
            (exclusive, rawdoc! { "n": -0.5 }, true),
            (min.clone(), rawdoc! { "n": 2 }, true),
            (min.clone(), rawdoc! { "n": decimal("1.99") }, false),
            // A stated non-numeric type leaves the bound nothing to check.
            (
                rawdoc! { "properties": { "n": { "type": "string", "maximum": 0 } } },
                rawdoc! { "n": "z" },
                true,
            ),
            // At the top level the bound is ignored.
            (rawdoc! { "maximum": 0 }, rawdoc! { "n": 5 }, true),
        ]);
    }

    #[test]
    fn multiple_of_uses_decimal_arithmetic() {
        let s = |d: RawBson| rawdoc! { "properties": { "n": { "multipleOf": d } } };
        check(vec![
            (s(2.into()), rawdoc! { "n": 4 }, true),
            (s(2.into()), rawdoc! { "n": 5 }, false),
            (s(2.into()), rawdoc! { "n": -6i64 }, true),
            (s(0.1.into()), rawdoc! { "n": 0.3 }, true),
            (s(0.1.into()), rawdoc! { "n": 0.35 }, false),
            (s(decimal("0.25")), rawdoc! { "n": 1.5 }, true),
            (s(2.into()), rawdoc! { "n": 0 }, true),
            (s(2.into()), rawdoc! { "n": f64::INFINITY }, false),
            (s(2.into()), rawdoc! { "n": "4" }, true),
            (s(3.into()), rawdoc! { "n": 1e30 }, false),
            (s(1e-20.into()), rawdoc! { "n": 3 }, true),
        ]);
    }

    #[test]
    fn string_lengths_count_code_points_and_patterns_search() {
        let max = rawdoc! { "properties": { "s": { "maxLength": 3 } } };
        let min = rawdoc! { "properties": { "s": { "minLength": 4 } } };
        let pat = rawdoc! { "properties": { "s": { "pattern": "ing" } } };
        check(vec![
            (max.clone(), rawdoc! { "s": "str" }, true),
            (max.clone(), rawdoc! { "s": "string" }, false),
            (max.clone(), rawdoc! { "s": "日本語" }, true),
            (max, rawdoc! { "s": 12345 }, true),
            (min.clone(), rawdoc! { "s": "str" }, false),
            (min, rawdoc! { "s": "string" }, true),
            (pat.clone(), rawdoc! { "s": "string" }, true),
            (pat.clone(), rawdoc! { "s": "str" }, false),
            (pat, rawdoc! { "s": 1 }, true),
        ]);
    }

    #[test]
    fn array_keywords_check_arrays_only() {
        let items = rawdoc! { "properties": { "a": { "items": { "type": "number" } } } };
        let by_position = rawdoc! { "properties": { "a": {
        "items": [{ "type": "number" }, { "type": "string" }], "additionalItems": false } } };
        let extra_schema = rawdoc! { "properties": { "a": {
        "items": [{}], "additionalItems": { "type": "string" } } } };
        let counts = rawdoc! { "properties": { "a": { "minItems": 1, "maxItems": 2 } } };
        let unique = rawdoc! { "properties": { "a": { "uniqueItems": true } } };
        check(vec![
            (items.clone(), rawdoc! { "a": [1, 2.5] }, true),
            (items.clone(), rawdoc! { "a": [1, "x"] }, false),
            (items.clone(), rawdoc! { "a": "x" }, true),
            (items, rawdoc! { "a": [] }, true),
            (by_position.clone(), rawdoc! { "a": [1, "x"] }, true),
            (by_position.clone(), rawdoc! { "a": [1] }, true),
            (by_position.clone(), rawdoc! { "a": ["x"] }, false),
            (by_position, rawdoc! { "a": [1, "x", 3] }, false),
            (extra_schema.clone(), rawdoc! { "a": [1, "x", "y"] }, true),
            (extra_schema, rawdoc! { "a": [1, "x", 3] }, false),
            // additionalItems without a positional items has no effect.
            (
                rawdoc! { "properties": { "a": { "additionalItems": false } } },
                rawdoc! { "a": [1] },
                true,
            ),
            (counts.clone(), rawdoc! { "a": [] }, false),
            (counts.clone(), rawdoc! { "a": [1, 2] }, true),
            (counts.clone(), rawdoc! { "a": [1, 2, 3] }, false),
            (counts, rawdoc! { "a": {} }, true),
            (unique.clone(), rawdoc! { "a": [1, 2, 3] }, true),
            (unique.clone(), rawdoc! { "a": [1, 2, 1.0] }, false),
            (
                unique.clone(),
                rawdoc! { "a": [{ "x": 1, "y": 2 }, { "y": 2, "x": 1 }] },
                false,
            ),
            (unique.clone(), rawdoc! { "a": [[1, 2], [2, 1]] }, true),
            (
                rawdoc! { "properties": { "a": { "uniqueItems": false } } },
                rawdoc! { "a": [1, 1] },
                true,
            ),
        ]);
    }

    #[test]
    fn pattern_and_additional_properties_decide_which_fields_may_appear() {
        let closed =
            rawdoc! { "properties": { "_id": {}, "a": {} }, "additionalProperties": false };
        let typed =
            rawdoc! { "properties": { "_id": {} }, "additionalProperties": { "type": "number" } };
        let patterned = rawdoc! {
            "properties": { "_id": {} },
            "patternProperties": { "^s": { "type": "string" }, "n$": { "type": "number" } },
            "additionalProperties": false,
        };
        check(vec![
            (closed.clone(), rawdoc! { "_id": 1, "a": 1 }, true),
            (closed, rawdoc! { "_id": 1, "b": 1 }, false),
            (typed.clone(), rawdoc! { "_id": "x", "b": 1 }, true),
            (typed, rawdoc! { "_id": "x", "b": "x" }, false),
            (
                patterned.clone(),
                rawdoc! { "_id": 1, "sa": "x", "bn": 2 },
                true,
            ),
            (patterned.clone(), rawdoc! { "_id": 1, "sa": 1 }, false),
            (patterned.clone(), rawdoc! { "_id": 1, "sn": "x" }, false),
            (patterned, rawdoc! { "_id": 1, "q": 1 }, false),
            // A pattern that does not compile matches no field.
            (
                rawdoc! { "patternProperties": { "(": { "type": "string" } } },
                rawdoc! { "(": 1 },
                true,
            ),
            (
                rawdoc! { "properties": { "o": { "additionalProperties": false } } },
                rawdoc! { "o": { "x": 1 } },
                false,
            ),
        ]);
    }

    #[test]
    fn property_counts_count_fields() {
        check(vec![
            (
                rawdoc! { "minProperties": 3 },
                rawdoc! { "_id": 1, "a": 1 },
                false,
            ),
            (
                rawdoc! { "maxProperties": 2 },
                rawdoc! { "_id": 1, "a": 1 },
                true,
            ),
            (
                rawdoc! { "properties": { "o": { "maxProperties": 0 } } },
                rawdoc! { "o": { "x": 1 } },
                false,
            ),
            (
                rawdoc! { "properties": { "o": { "maxProperties": 0 } } },
                rawdoc! { "o": [1] },
                true,
            ),
        ]);
    }

    #[test]
    fn dependencies_apply_when_their_property_is_present() {
        let props = rawdoc! { "dependencies": { "a": ["b", "c"] } };
        let schema = rawdoc! { "dependencies": { "a": { "required": ["d"] } } };
        check(vec![
            (props.clone(), rawdoc! { "x": 1 }, true),
            (props.clone(), rawdoc! { "a": 1, "b": 1, "c": 1 }, true),
            (props, rawdoc! { "a": 1, "b": 1 }, false),
            (schema.clone(), rawdoc! { "b": 1 }, true),
            (schema.clone(), rawdoc! { "a": 1 }, false),
            (schema, rawdoc! { "a": 1, "d": 1 }, true),
        ]);
    }

    #[test]
    fn logical_keywords_combine_schemas() {
        let p = |s: RawDocumentBuf| rawdoc! { "properties": { "a": s } };
        check(vec![
            (
                p(rawdoc! { "allOf": [{ "type": "number" }, { "minimum": 2 }] }),
                rawdoc! { "a": 3 },
                true,
            ),
            (
                p(rawdoc! { "allOf": [{ "type": "number" }, { "minimum": 2 }] }),
                rawdoc! { "a": 1 },
                false,
            ),
            (
                p(rawdoc! { "anyOf": [{ "type": "string" }, { "minimum": 2 }] }),
                rawdoc! { "a": 1 },
                false,
            ),
            (
                p(rawdoc! { "anyOf": [{ "type": "string" }, { "minimum": 2 }] }),
                rawdoc! { "a": "x" },
                true,
            ),
            (
                p(rawdoc! { "oneOf": [{ "minimum": 0 }, { "maximum": 10 }] }),
                rawdoc! { "a": 5 },
                false,
            ),
            (
                p(rawdoc! { "oneOf": [{ "minimum": 0 }, { "maximum": 10 }] }),
                rawdoc! { "a": 20 },
                true,
            ),
            (
                p(rawdoc! { "not": { "type": "string" } }),
                rawdoc! { "a": 1 },
                true,
            ),
            (
                p(rawdoc! { "not": { "type": "string" } }),
                rawdoc! { "a": "x" },
                false,
            ),
            (p(rawdoc! { "not": { "type": "string" } }), rawdoc! {}, true),
            // At the top the logical keywords see the whole document.
            (
                rawdoc! { "anyOf": [{ "required": ["a"] }, { "required": ["b"] }] },
                rawdoc! { "b": 1 },
                true,
            ),
            (
                rawdoc! { "allOf": [{ "type": "string" }] },
                rawdoc! { "b": 1 },
                false,
            ),
            (
                rawdoc! { "not": { "required": ["a"] } },
                rawdoc! { "a": 1 },
                false,
            ),
        ]);
    }

    #[test]
    fn enum_compares_values_with_fields_in_any_order() {
        let p = rawdoc! { "properties": { "a": { "enum": [1, "x", { "b": 1, "c": 2 }, null] } } };
        check(vec![
            (p.clone(), rawdoc! { "a": 1.0 }, true),
            (p.clone(), rawdoc! { "a": "x" }, true),
            (p.clone(), rawdoc! { "a": { "c": 2, "b": 1 } }, true),
            (p.clone(), rawdoc! { "a": null }, true),
            (p.clone(), rawdoc! { "a": [1] }, false),
            (p.clone(), rawdoc! { "a": "y" }, false),
            (p, rawdoc! {}, true),
            // At the top the document itself must be listed.
            (
                rawdoc! { "enum": [{ "_id": 1, "a": 1 }, 3] },
                rawdoc! { "a": 1, "_id": 1 },
                true,
            ),
            (
                rawdoc! { "enum": [{ "_id": 1, "a": 1 }] },
                rawdoc! { "_id": 2 },
                false,
            ),
            (rawdoc! { "enum": [3] }, rawdoc! {}, false),
        ]);
    }

    #[test]
    fn annotations_match_everything() {
        check(vec![
            (rawdoc! { "description": "test" }, rawdoc! {}, true),
            (rawdoc! { "title": "insert title" }, rawdoc! {}, true),
            (
                rawdoc! { "properties": { "a": { "title": "t", "description": "d" } } },
                rawdoc! { "a": {} },
                true,
            ),
        ]);
    }
}
