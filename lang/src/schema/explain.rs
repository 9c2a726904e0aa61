//! Why a value fails a schema, in the shape MongoDB 5.0+ reports inside a
//! DocumentValidationFailure's `errInfo.details`.
//!
//! Each failing keyword contributes an entry `{operatorName, …}` in the
//! schema's rule order (`properties` before `required`, `type` last), the
//! way mongod's error generator walks the expression it translated the
//! schema into: `specifiedAs` quotes the keyword as written, `reason` says
//! what went wrong, `consideredValue` shows the value looked at, and nested
//! schemas (`properties`, `items`, `allOf`, …) nest their own entries under
//! `details`. Only failures are explained (validation never needs to say
//! why a schema matched). The shapes follow
//! `jstests/core/doc_validation/doc_validation_error.js` and mongod's
//! `doc_validation_error.cpp`.

use bson::{Bson, Document, RawBsonRef, RawDocument, doc};

use super::tree::{Additional, Counted, Dependency, Rule, Schema};
use super::validate::{count, dependency_holds};
use super::value::{field, fields, first_duplicate};
use crate::encoding::display::type_name;
use crate::query::path::elements;

/// A schema's explanation: the entries of its failing keywords, or, for a
/// top-level schema whose type excludes documents, one entry for all.
pub(super) enum Explained {
    Rules(Vec<Document>),
    AlwaysFalse(Document),
}

impl Explained {
    /// The value of a `details` field.
    pub fn into_bson(self) -> Bson {
        match self {
            Explained::Rules(entries) => Bson::Array(entries.into_iter().map(Bson::from).collect()),
            Explained::AlwaysFalse(entry) => Bson::Document(entry),
        }
    }
}

/// A value as it appears in an error.
pub(super) fn to_bson(value: RawBsonRef<'_>) -> Bson {
    Bson::try_from(value).unwrap_or(Bson::Null)
}

impl Schema {
    /// Why `value` fails the schema (call only when it does).
    pub(super) fn explain(&self, value: Option<RawBsonRef<'_>>, top: bool) -> Explained {
        if top && self.types.as_ref().is_some_and(|t| !t.allows_documents()) {
            return Explained::AlwaysFalse(doc! {
                "operatorName": "$jsonSchema",
                "specifiedAs": { "$jsonSchema": to_bson(RawBsonRef::Document(&self.source)) },
                "reason": "expression always evaluates to false",
            });
        }
        let mut entries = Vec::new();
        for rule in &self.rules {
            if !rule.matches(value, top) {
                rule.explain(value, top, &mut entries);
            }
        }
        if let (false, Some(types), Some(v)) = (top, &self.types, value)
            && !types.contains(v)
        {
            entries.push(doc! {
                "operatorName": types.keyword,
                "specifiedAs": { types.keyword: to_bson(types.spec.as_raw_bson_ref()) },
                "reason": "type did not match",
                "consideredValue": to_bson(v),
                "consideredType": type_name(&v),
            });
        }
        Explained::Rules(entries)
    }

    /// Adds the schema's `title` and `description`.
    pub(super) fn annotate(&self, entry: &mut Document) {
        annotate(entry, self.title.as_deref(), self.description.as_deref());
    }

    /// `{index, title?, description?, details}` for one failing subschema of
    /// `allOf`/`anyOf`/`oneOf`.
    fn clause(&self, index: usize, value: Option<RawBsonRef<'_>>, top: bool) -> Document {
        let mut entry = doc! { "index": index as i32 };
        let explained = self.explain(value, top);
        if let Explained::Rules(_) = explained {
            self.annotate(&mut entry);
        }
        entry.insert("details", explained.into_bson());
        entry
    }
}

fn annotate(entry: &mut Document, title: Option<&str>, description: Option<&str>) {
    if let Some(title) = title {
        entry.insert("title", title);
    }
    if let Some(description) = description {
        entry.insert("description", description);
    }
}

impl Rule {
    /// Adds the entries explaining why `value` fails this keyword (call
    /// only when it does; a failure that another keyword explains, such
    /// as a missing required property, adds nothing).
    fn explain(&self, value: Option<RawBsonRef<'_>>, top: bool, out: &mut Vec<Document>) {
        let considered = value.map(to_bson);
        match self {
            Rule::Pattern(pattern) => out.push(doc! {
                "operatorName": "pattern",
                "specifiedAs": { "pattern": pattern.source() },
                "reason": "regular expression did not match",
                "consideredValue": considered,
            }),
            Rule::Count {
                keyword,
                counted,
                spec,
                ..
            } => {
                let mut entry = doc! {
                    "operatorName": *keyword,
                    "specifiedAs": { *keyword: to_bson(spec.as_raw_bson_ref()) },
                };
                let n = count(*counted, value).unwrap_or_default() as i32;
                match counted {
                    Counted::StringLength => {
                        entry.insert("reason", "specified string length was not satisfied");
                        entry.insert("consideredValue", considered);
                    }
                    Counted::ArrayItems => {
                        entry.insert("reason", "array did not match specified length");
                        entry.insert("consideredValue", considered);
                        entry.insert("numberOfItems", n);
                    }
                    Counted::ObjectProperties => {
                        entry.insert("reason", "specified number of properties was not satisfied");
                        entry.insert("numberOfProperties", n);
                    }
                }
                out.push(entry);
            }
            Rule::MultipleOf(divisor) => out.push(doc! {
                "operatorName": "multipleOf",
                "specifiedAs": { "multipleOf": to_bson(divisor.as_raw_bson_ref()) },
                "reason": "considered value is not a multiple of the specified value",
                "consideredValue": considered,
            }),
            Rule::Bound {
                keyword,
                limit,
                max,
                exclusive,
            } => {
                let mut spec = doc! { *keyword: to_bson(limit.as_raw_bson_ref()) };
                if *exclusive {
                    spec.insert(
                        if *max {
                            "exclusiveMaximum"
                        } else {
                            "exclusiveMinimum"
                        },
                        true,
                    );
                }
                out.push(doc! {
                    "operatorName": *keyword,
                    "specifiedAs": spec,
                    "reason": "comparison failed",
                    "consideredValue": considered,
                });
            }
            Rule::UniqueItems => {
                let Some(RawBsonRef::Array(array)) = value else {
                    return;
                };
                out.push(doc! {
                    "operatorName": "uniqueItems",
                    "specifiedAs": { "uniqueItems": true },
                    "reason": "found a duplicate item",
                    "consideredValue": considered,
                    "duplicatedValue": first_duplicate(array).map(to_bson),
                });
            }
            Rule::Items(schema) => {
                let Some(RawBsonRef::Array(array)) = value else {
                    return;
                };
                if let Some((index, item)) = elements(array)
                    .enumerate()
                    .find(|(_, item)| !schema.matches(Some(*item), false))
                {
                    out.push(failing_item(
                        "items",
                        "At least one item did not match the sub-schema",
                        schema,
                        index,
                        item,
                    ));
                }
            }
            Rule::ItemsByPosition(schemas) => {
                let Some(RawBsonRef::Array(array)) = value else {
                    return;
                };
                let failing: Vec<Document> = elements(array)
                    .zip(schemas)
                    .enumerate()
                    .filter(|(_, (item, schema))| !schema.matches(Some(*item), false))
                    .map(|(index, (item, schema))| {
                        doc! {
                            // mongod reports this index as a long.
                            "itemIndex": index as i64,
                            "details": schema.explain(Some(item), false).into_bson(),
                        }
                    })
                    .collect();
                out.push(doc! { "operatorName": "items", "details": failing });
            }
            Rule::AdditionalItems { start, rule } => {
                let Some(RawBsonRef::Array(array)) = value else {
                    return;
                };
                match rule {
                    Additional::Allowed(_) => out.push(doc! {
                        "operatorName": "additionalItems",
                        "specifiedAs": { "additionalItems": false },
                        "reason": "found additional items",
                        "additionalItems": elements(array).skip(*start).map(to_bson).collect::<Vec<_>>(),
                    }),
                    Additional::Schema(schema) => {
                        if let Some((index, item)) = elements(array)
                            .enumerate()
                            .skip(*start)
                            .find(|(_, item)| !schema.matches(Some(*item), false))
                        {
                            out.push(failing_item(
                                "additionalItems",
                                "At least one additional item did not match the sub-schema",
                                schema,
                                index,
                                item,
                            ));
                        }
                    }
                }
            }
            Rule::Properties(properties) => {
                let Some(RawBsonRef::Document(doc)) = value else {
                    return;
                };
                let mut failing = Vec::new();
                for property in properties {
                    let found = field(doc, &property.name);
                    if found.is_none() && !property.required
                        || property.schema.matches(found, false)
                    {
                        continue;
                    }
                    let Explained::Rules(details) = property.schema.explain(found, false) else {
                        continue;
                    };
                    // A missing required property is `required`'s to report.
                    if details.is_empty() {
                        continue;
                    }
                    let mut entry = doc! { "propertyName": property.name.as_str() };
                    property.schema.annotate(&mut entry);
                    entry.insert("details", details);
                    failing.push(entry);
                }
                if !failing.is_empty() {
                    out.push(
                        doc! { "operatorName": "properties", "propertiesNotSatisfied": failing },
                    );
                }
            }
            Rule::AllowedProperties {
                patterns,
                additional,
                ..
            } => {
                let Some(RawBsonRef::Document(doc)) = value else {
                    return;
                };
                match additional {
                    Additional::Allowed(false) => {
                        let extra: Vec<&str> = fields(doc)
                            .map(|(name, _)| name)
                            .filter(|name| self.is_additional(name))
                            .collect();
                        if !extra.is_empty() {
                            out.push(doc! {
                                "operatorName": "additionalProperties",
                                "specifiedAs": { "additionalProperties": false },
                                "additionalProperties": extra,
                            });
                        }
                    }
                    Additional::Allowed(true) => {}
                    Additional::Schema(schema) => {
                        if let Some((name, v)) = fields(doc).find(|(name, v)| {
                            self.is_additional(name) && !schema.matches(Some(*v), false)
                        }) {
                            let mut entry = doc! { "operatorName": "additionalProperties" };
                            schema.annotate(&mut entry);
                            entry.insert(
                                "reason",
                                "at least one additional property did not match the subschema",
                            );
                            entry.insert("failingProperty", name);
                            entry.insert("details", schema.explain(Some(v), false).into_bson());
                            out.push(entry);
                        }
                    }
                }
                let mut failing = Vec::new();
                for (pattern, schema) in patterns {
                    if let Some((name, v)) = fields(doc).find(|(name, v)| {
                        pattern.is_match(name) && !schema.matches(Some(*v), false)
                    }) {
                        let mut entry = doc! { "propertyName": name };
                        schema.annotate(&mut entry);
                        entry.insert("regexMatched", pattern.source());
                        entry.insert("details", schema.explain(Some(v), false).into_bson());
                        failing.push(entry);
                    }
                }
                if !failing.is_empty() {
                    out.push(doc! { "operatorName": "patternProperties", "details": failing });
                }
            }
            Rule::Required { names, spec } => {
                let Some(RawBsonRef::Document(doc)) = value else {
                    return;
                };
                let missing: Vec<&str> = names
                    .iter()
                    .filter(|name| field(doc, name).is_none())
                    .map(String::as_str)
                    .collect();
                out.push(doc! {
                    "operatorName": "required",
                    "specifiedAs": { "required": to_bson(spec.as_raw_bson_ref()) },
                    "missingProperties": missing,
                });
            }
            Rule::Dependencies {
                entries,
                title,
                description,
            } => {
                let Some(RawBsonRef::Document(doc)) = value else {
                    return;
                };
                let mut entry = doc! { "operatorName": "dependencies" };
                annotate(&mut entry, title.as_deref(), description.as_deref());
                let failing: Vec<Document> = entries
                    .iter()
                    .filter(|d| !dependency_holds(d, doc, value, top))
                    .map(|d| explain_dependency(d, doc, value, top))
                    .collect();
                entry.insert("failingDependencies", failing);
                out.push(entry);
            }
            Rule::AllOf(schemas) => {
                let failing: Vec<Document> = schemas
                    .iter()
                    .enumerate()
                    .filter(|(_, s)| !s.matches(value, top))
                    .map(|(i, s)| s.clause(i, value, top))
                    .collect();
                out.push(doc! { "operatorName": "allOf", "schemasNotSatisfied": failing });
            }
            Rule::AnyOf(schemas) => out.push(doc! {
                "operatorName": "anyOf",
                "schemasNotSatisfied": all_clauses(schemas, value, top),
            }),
            Rule::OneOf(schemas) => {
                let matching: Vec<i32> = schemas
                    .iter()
                    .enumerate()
                    .filter(|(_, s)| s.matches(value, top))
                    .map(|(i, _)| i as i32)
                    .collect();
                out.push(if matching.is_empty() {
                    doc! {
                        "operatorName": "oneOf",
                        "schemasNotSatisfied": all_clauses(schemas, value, top),
                    }
                } else {
                    doc! {
                        "operatorName": "oneOf",
                        "reason": "more than one subschema matched",
                        "matchingSchemaIndexes": matching,
                    }
                });
            }
            Rule::Not(_) => out.push(doc! {
                "operatorName": "not",
                "reason": "child expression matched",
            }),
            Rule::Enum { values, spec } => {
                let mut entry = doc! {
                    "operatorName": "enum",
                    "specifiedAs": { "enum": to_bson(spec.as_raw_bson_ref()) },
                };
                let no_documents = !values
                    .iter()
                    .any(|v| matches!(v, bson::RawBson::Document(_)));
                if top && no_documents {
                    // Only documents are stored: such an enum matches nothing.
                    entry.insert("reason", "expression always evaluates to false");
                } else if let Some(considered) = considered {
                    entry.insert("reason", "value was not found in enum");
                    entry.insert("consideredValue", considered);
                } else {
                    // A missing required property is `required`'s to report.
                    return;
                }
                out.push(entry);
            }
        }
    }
}

/// `{operatorName, title?, description?, reason, itemIndex, details}` for
/// the first array element failing `items` or `additionalItems`.
fn failing_item(
    keyword: &str,
    reason: &str,
    schema: &Schema,
    index: usize,
    item: RawBsonRef<'_>,
) -> Document {
    let mut entry = doc! { "operatorName": keyword };
    schema.annotate(&mut entry);
    entry.insert("reason", reason);
    entry.insert("itemIndex", index as i32);
    entry.insert("details", schema.explain(Some(item), false).into_bson());
    entry
}

/// Every subschema of an `anyOf` (or a `oneOf` none of whose subschemas
/// matched): all of them failed.
fn all_clauses(schemas: &[Schema], value: Option<RawBsonRef<'_>>, top: bool) -> Vec<Document> {
    schemas
        .iter()
        .enumerate()
        .map(|(i, s)| s.clause(i, value, top))
        .collect()
}

fn explain_dependency(
    dependency: &Dependency,
    doc: &RawDocument,
    value: Option<RawBsonRef<'_>>,
    top: bool,
) -> Document {
    match dependency {
        Dependency::Properties { name, needs } => doc! {
            "conditionalProperty": name.as_str(),
            "missingProperties": needs
                .iter()
                .filter(|n| field(doc, n).is_none())
                .map(String::as_str)
                .collect::<Vec<_>>(),
        },
        Dependency::Schema { name, schema } => doc! {
            "conditionalProperty": name.as_str(),
            "details": schema.explain(value, top).into_bson(),
        },
    }
}
