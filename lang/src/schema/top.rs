//! The `$jsonSchema` operator: a schema parsed once and applied to whole
//! documents, as a query clause (`find`, `$match`, update and delete
//! filters) or as part of a collection's validator.
//!
//! The value of `$jsonSchema` must be a document (TypeMismatch otherwise);
//! what it may hold is `parse`'s business. Two parsed schemas are equal
//! when their documents are byte-identical, which is all the filter tree
//! needs of equality.

use bson::{RawBsonRef, RawDocument, doc};

use super::explain::Explained;
use super::parse::parse_schema;
use super::tree::Schema;
use crate::error::{Error, Result};

/// A parsed `$jsonSchema`.
#[derive(Debug, Clone)]
pub struct JsonSchema {
    root: Schema,
}

impl PartialEq for JsonSchema {
    fn eq(&self, other: &JsonSchema) -> bool {
        self.root.source == other.root.source
    }
}

impl JsonSchema {
    /// Parses the value of a `$jsonSchema` clause.
    pub fn parse(value: RawBsonRef<'_>) -> Result<JsonSchema> {
        let RawBsonRef::Document(schema) = value else {
            return Err(Error::type_mismatch("$jsonSchema must be an object"));
        };
        Ok(JsonSchema {
            root: parse_schema(schema)?,
        })
    }

    /// Whether a document satisfies the schema.
    pub fn matches(&self, doc: &RawDocument) -> bool {
        self.root.matches(Some(RawBsonRef::Document(doc)), true)
    }

    /// Why a document fails the schema, as mongod's `errInfo.details`
    /// reports it: `{operatorName: "$jsonSchema", title?, description?,
    /// schemaRulesNotSatisfied: […]}`. Call only for a failing document.
    pub fn explain(&self, doc: &RawDocument) -> bson::Document {
        match self.root.explain(Some(RawBsonRef::Document(doc)), true) {
            Explained::AlwaysFalse(entry) => entry,
            Explained::Rules(rules) => {
                let mut details = doc! { "operatorName": "$jsonSchema" };
                self.root.annotate(&mut details);
                details.insert("schemaRulesNotSatisfied", rules);
                details
            }
        }
    }

    /// The schema document as written.
    pub fn source(&self) -> &RawDocument {
        &self.root.source
    }
}

#[cfg(test)]
mod tests {
    use bson::{Document, RawDocumentBuf, doc};

    use super::JsonSchema;

    /// The details of `doc` failing `schema` (which it must fail).
    fn details(schema: Document, doc: Document) -> Document {
        let schema = RawDocumentBuf::try_from(&schema).unwrap();
        let schema = JsonSchema::parse(bson::RawBsonRef::Document(&schema)).unwrap();
        let doc = RawDocumentBuf::try_from(&doc).unwrap();
        assert!(!schema.matches(&doc), "the document must fail the schema");
        schema.explain(&doc)
    }

    fn rules(entries: Vec<Document>) -> Document {
        doc! { "operatorName": "$jsonSchema", "schemaRulesNotSatisfied": entries }
    }

    fn seed_schema() -> Document {
        doc! {
            "bsonType": "object",
            "required": ["lastModifiedDate"],
            "properties": {
                "lastModifiedDate": { "bsonType": "date", "description": "Must be a valid date." }
            }
        }
    }

    /// The TTL manual page's schema-validation example: a missing
    /// `lastModifiedDate` is reported in `errInfo.details` as mongod 5.0+
    /// reports it (`doc_validation_error.js`).
    #[test]
    fn the_seed_schema_reports_a_missing_date() {
        assert_eq!(
            details(seed_schema(), doc! { "_id": 1 }),
            rules(vec![doc! {
                "operatorName": "required",
                "specifiedAs": { "required": ["lastModifiedDate"] },
                "missingProperties": ["lastModifiedDate"],
            }])
        );
    }

    /// The same example with a string where the date belongs: a
    /// `properties` rule whose `bsonType` did not match.
    #[test]
    fn the_seed_schema_reports_a_date_of_the_wrong_type() {
        assert_eq!(
            details(
                seed_schema(),
                doc! { "_id": 1, "lastModifiedDate": "2024-01-01" }
            ),
            rules(vec![doc! {
                "operatorName": "properties",
                "propertiesNotSatisfied": [{
                    "propertyName": "lastModifiedDate",
                    "description": "Must be a valid date.",
                    "details": [{
                        "operatorName": "bsonType",
                        "specifiedAs": { "bsonType": "date" },
                        "reason": "type did not match",
                        "consideredValue": "2024-01-01",
                        "consideredType": "string",
                    }],
                }],
            }])
        );
    }

    /// doc_validation_error.js, "Node structure validation".
    #[test]
    fn only_the_type_is_reported_for_a_value_of_another_type() {
        let schema = doc! {
            "bsonType": "object",
            "required": ["_id"],
            "properties": {
                "parent": { "bsonType": ["string", "null"], "description": "must be a string" },
                "children": {
                    "bsonType": ["array"],
                    "items": { "bsonType": ["string"] },
                    "minItems": 0,
                    "maxItems": 2,
                    "description": "must be an array of string and max is 2",
                },
            },
        };
        assert_eq!(
            details(
                schema,
                doc! { "_id": "Languages", "children": 2.0, "parent": "Programming" }
            ),
            rules(vec![doc! {
                "operatorName": "properties",
                "propertiesNotSatisfied": [{
                    "propertyName": "children",
                    "description": "must be an array of string and max is 2",
                    "details": [{
                        "operatorName": "bsonType",
                        "specifiedAs": { "bsonType": ["array"] },
                        "reason": "type did not match",
                        "consideredValue": 2.0,
                        "consideredType": "double",
                    }],
                }],
            }])
        );
    }

    /// doc_validation_error.js, "array of enums".
    #[test]
    fn a_duplicate_item_is_named() {
        let schema = doc! { "properties": { "values": {
            "bsonType": "array",
            "items": { "bsonType": "string", "enum": ["one", "two", "three"] },
            "minItems": 1,
            "uniqueItems": true,
        } } };
        assert_eq!(
            details(schema, doc! { "_id": 1, "values": ["two", "two"] }),
            rules(vec![doc! {
                "operatorName": "properties",
                "propertiesNotSatisfied": [{
                    "propertyName": "values",
                    "details": [{
                        "operatorName": "uniqueItems",
                        "specifiedAs": { "uniqueItems": true },
                        "reason": "found a duplicate item",
                        "consideredValue": ["two", "two"],
                        "duplicatedValue": "two",
                    }],
                }],
            }])
        );
    }

    /// doc_validation_error.js, "Students collection" (the schema
    /// validation manual page): `properties` before `required`, nested
    /// properties nested, required names sorted.
    #[test]
    fn properties_are_reported_before_required() {
        let schema = doc! {
            "bsonType": "object",
            "required": ["name", "year", "major", "address"],
            "properties": {
                "name": { "bsonType": "string", "description": "must be a string and is required" },
                "year": {
                    "bsonType": "int", "minimum": 2017, "maximum": 3017,
                    "description": "must be an integer in [ 2017, 3017 ] and is required",
                },
                "major": {
                    "enum": ["Math", "English", "Computer Science", "History", null],
                    "description": "can only be one of the enum values and is required",
                },
                "gpa": { "bsonType": ["double"], "description": "must be a double if the field exists" },
                "address": {
                    "bsonType": "object",
                    "required": ["city"],
                    "properties": {
                        "street": { "bsonType": "string", "description": "must be a string if the field exists" },
                        "city": { "bsonType": "string", "description": "must be a string and is required" },
                    },
                },
            },
        };
        let doc = doc! {
            "_id": 1, "year": 2020, "major": "Software Engineering", "gpa": 5.0,
            "address": { "city": "NYC", "street": 5 },
        };
        assert_eq!(
            details(schema, doc),
            rules(vec![
                doc! {
                    "operatorName": "properties",
                    "propertiesNotSatisfied": [
                        {
                            "propertyName": "major",
                            "description": "can only be one of the enum values and is required",
                            "details": [{
                                "operatorName": "enum",
                                "specifiedAs": { "enum": ["Math", "English", "Computer Science", "History", null] },
                                "reason": "value was not found in enum",
                                "consideredValue": "Software Engineering",
                            }],
                        },
                        {
                            "propertyName": "address",
                            "details": [{
                                "operatorName": "properties",
                                "propertiesNotSatisfied": [{
                                    "propertyName": "street",
                                    "description": "must be a string if the field exists",
                                    "details": [{
                                        "operatorName": "bsonType",
                                        "specifiedAs": { "bsonType": "string" },
                                        "reason": "type did not match",
                                        "consideredValue": 5,
                                        "consideredType": "int",
                                    }],
                                }],
                            }],
                        },
                    ],
                },
                doc! {
                    "operatorName": "required",
                    "specifiedAs": { "required": ["name", "year", "major", "address"] },
                    "missingProperties": ["name"],
                },
            ])
        );
        let sorted = details(doc! { "required": ["b", "c", "a"] }, doc! { "_id": 1 });
        assert_eq!(
            sorted,
            rules(vec![doc! {
                "operatorName": "required",
                "specifiedAs": { "required": ["b", "c", "a"] },
                "missingProperties": ["a", "b", "c"],
            }])
        );
    }

    /// doc_validation_error.js, "component.json" (title at the top,
    /// `items`, `pattern`, JSON `type`).
    #[test]
    fn items_pattern_and_json_types_are_explained() {
        let schema = doc! {
            "title": "T",
            "properties": {
                "name": { "type": "string", "pattern": "^[0-9a-z-_]+$" },
                "scripts": { "type": "array", "items": { "type": "string" } },
                "private": { "type": "boolean" },
            },
        };
        assert_eq!(
            details(
                schema,
                doc! { "_id": 1, "private": 0.0, "name": "Mongo", "scripts": [1.0, 2.0] }
            ),
            doc! {
                "operatorName": "$jsonSchema",
                "title": "T",
                "schemaRulesNotSatisfied": [{
                    "operatorName": "properties",
                    "propertiesNotSatisfied": [
                        { "propertyName": "name", "details": [{
                            "operatorName": "pattern",
                            "specifiedAs": { "pattern": "^[0-9a-z-_]+$" },
                            "reason": "regular expression did not match",
                            "consideredValue": "Mongo",
                        }] },
                        { "propertyName": "scripts", "details": [{
                            "operatorName": "items",
                            "reason": "At least one item did not match the sub-schema",
                            "itemIndex": 0,
                            "details": [{
                                "operatorName": "type",
                                "specifiedAs": { "type": "string" },
                                "reason": "type did not match",
                                "consideredValue": 1.0,
                                "consideredType": "double",
                            }],
                        }] },
                        { "propertyName": "private", "details": [{
                            "operatorName": "type",
                            "specifiedAs": { "type": "boolean" },
                            "reason": "type did not match",
                            "consideredValue": 0.0,
                            "consideredType": "double",
                        }] },
                    ],
                }],
            }
        );
    }

    /// doc_validation_error.js, "LLVM compilation database" and
    /// "adonisrc.schema.json": `anyOf`, `oneOf` and `additionalProperties`.
    #[test]
    fn logical_keywords_list_their_failing_subschemas() {
        let schema = doc! { "properties": { "c": { "items": { "anyOf": [
            { "required": ["directory", "file", "command"] },
            { "required": ["directory", "file", "arguments"] },
        ] } } } };
        assert_eq!(
            details(
                schema,
                doc! { "_id": 1, "c": [{ "directory": "/etc", "file": "hosts" }] }
            ),
            rules(vec![doc! {
                "operatorName": "properties",
                "propertiesNotSatisfied": [{ "propertyName": "c", "details": [{
                    "operatorName": "items",
                    "reason": "At least one item did not match the sub-schema",
                    "itemIndex": 0,
                    "details": [{
                        "operatorName": "anyOf",
                        "schemasNotSatisfied": [
                            { "index": 0, "details": [{
                                "operatorName": "required",
                                "specifiedAs": { "required": ["directory", "file", "command"] },
                                "missingProperties": ["command"],
                            }] },
                            { "index": 1, "details": [{
                                "operatorName": "required",
                                "specifiedAs": { "required": ["directory", "file", "arguments"] },
                                "missingProperties": ["arguments"],
                            }] },
                        ],
                    }],
                }] }],
            }])
        );
        let one_of = doc! { "properties": { "p": { "oneOf": [
            { "type": "string" },
            { "properties": { "file": {} }, "additionalProperties": false },
        ] } } };
        assert_eq!(
            details(
                one_of.clone(),
                doc! { "_id": 1, "p": { "file": "f", "dir": true } }
            ),
            rules(vec![doc! {
                "operatorName": "properties",
                "propertiesNotSatisfied": [{ "propertyName": "p", "details": [{
                    "operatorName": "oneOf",
                    "schemasNotSatisfied": [
                        { "index": 0, "details": [{
                            "operatorName": "type",
                            "specifiedAs": { "type": "string" },
                            "reason": "type did not match",
                            "consideredValue": { "file": "f", "dir": true },
                            "consideredType": "object",
                        }] },
                        { "index": 1, "details": [{
                            "operatorName": "additionalProperties",
                            "specifiedAs": { "additionalProperties": false },
                            "additionalProperties": ["dir"],
                        }] },
                    ],
                }] }],
            }])
        );
        let both =
            doc! { "properties": { "p": { "oneOf": [{ "minimum": 1 }, { "maximum": 9 }] } } };
        assert_eq!(
            details(both, doc! { "_id": 1, "p": 5 }),
            rules(vec![doc! {
                "operatorName": "properties",
                "propertiesNotSatisfied": [{ "propertyName": "p", "details": [{
                    "operatorName": "oneOf",
                    "reason": "more than one subschema matched",
                    "matchingSchemaIndexes": [0, 1],
                }] }],
            }])
        );
    }

    /// The remaining keywords' shapes (mongod's doc_validation_error.cpp
    /// and doc_validation_error_json_schema_test.cpp).
    #[test]
    fn every_keyword_explains_its_failure() {
        let one = |keywords: Document, value: bson::Bson| {
            let d = details(
                doc! { "properties": { "a": keywords } },
                doc! { "_id": 1, "a": value },
            );
            d.get_array("schemaRulesNotSatisfied").unwrap()[0]
                .as_document()
                .unwrap()
                .get_array("propertiesNotSatisfied")
                .unwrap()[0]
                .as_document()
                .unwrap()
                .get_array("details")
                .unwrap()[0]
                .as_document()
                .unwrap()
                .clone()
        };
        let cases: Vec<(Document, bson::Bson, Document)> = vec![
            (
                doc! { "minimum": 5 },
                3.into(),
                doc! {
                "operatorName": "minimum", "specifiedAs": { "minimum": 5 },
                "reason": "comparison failed", "consideredValue": 3 },
            ),
            (
                doc! { "maximum": 5, "exclusiveMaximum": true },
                5.into(),
                doc! {
                "operatorName": "maximum", "specifiedAs": { "maximum": 5, "exclusiveMaximum": true },
                "reason": "comparison failed", "consideredValue": 5 },
            ),
            (
                doc! { "multipleOf": 2 },
                3.into(),
                doc! {
                "operatorName": "multipleOf", "specifiedAs": { "multipleOf": 2 },
                "reason": "considered value is not a multiple of the specified value",
                "consideredValue": 3 },
            ),
            (
                doc! { "minLength": 3 },
                "ab".into(),
                doc! {
                "operatorName": "minLength", "specifiedAs": { "minLength": 3 },
                "reason": "specified string length was not satisfied", "consideredValue": "ab" },
            ),
            (
                doc! { "maxItems": 1 },
                bson::bson!([1, 2]),
                doc! {
                "operatorName": "maxItems", "specifiedAs": { "maxItems": 1 },
                "reason": "array did not match specified length",
                "consideredValue": [1, 2], "numberOfItems": 2 },
            ),
            (
                doc! { "minProperties": 2 },
                bson::bson!({ "x": 1 }),
                doc! {
                "operatorName": "minProperties", "specifiedAs": { "minProperties": 2 },
                "reason": "specified number of properties was not satisfied",
                "numberOfProperties": 1 },
            ),
            (
                doc! { "items": [{ "type": "string" }], "additionalItems": false },
                bson::bson!(["x", 1]),
                doc! {
                "operatorName": "additionalItems", "specifiedAs": { "additionalItems": false },
                "reason": "found additional items", "additionalItems": [1] },
            ),
            (
                doc! { "items": [{ "type": "string" }] },
                bson::bson!([1]),
                doc! {
                "operatorName": "items",
                "details": [{ "itemIndex": 0i64, "details": [{
                    "operatorName": "type", "specifiedAs": { "type": "string" },
                    "reason": "type did not match", "consideredValue": 1, "consideredType": "int" }] }] },
            ),
            (
                doc! { "items": [], "additionalItems": { "description": "d", "type": "string" } },
                bson::bson!(["x", 2]),
                doc! {
                "operatorName": "additionalItems", "description": "d",
                "reason": "At least one additional item did not match the sub-schema", "itemIndex": 1,
                "details": [{ "operatorName": "type", "specifiedAs": { "type": "string" },
                    "reason": "type did not match", "consideredValue": 2, "consideredType": "int" }] },
            ),
            (
                doc! { "additionalProperties": { "type": "string" } },
                bson::bson!({ "x": "ok", "y": 1 }),
                doc! {
                "operatorName": "additionalProperties",
                "reason": "at least one additional property did not match the subschema",
                "failingProperty": "y",
                "details": [{ "operatorName": "type", "specifiedAs": { "type": "string" },
                    "reason": "type did not match", "consideredValue": 1, "consideredType": "int" }] },
            ),
            (
                doc! { "patternProperties": { "^n": { "title": "t", "type": "number" } } },
                bson::bson!({ "nx": "s" }),
                doc! {
                "operatorName": "patternProperties",
                "details": [{ "propertyName": "nx", "title": "t", "regexMatched": "^n",
                    "details": [{ "operatorName": "type", "specifiedAs": { "type": "number" },
                        "reason": "type did not match", "consideredValue": "s", "consideredType": "string" }] }] },
            ),
            (
                doc! { "dependencies": { "description": "deps", "x": ["y", "z"] } },
                bson::bson!({ "x": 1, "z": 1 }),
                doc! {
                "operatorName": "dependencies", "description": "deps",
                "failingDependencies": [{ "conditionalProperty": "x", "missingProperties": ["y"] }] },
            ),
            (
                doc! { "dependencies": { "x": { "required": ["w"] } } },
                bson::bson!({ "x": 1 }),
                doc! {
                "operatorName": "dependencies",
                "failingDependencies": [{ "conditionalProperty": "x", "details": [{
                    "operatorName": "required", "specifiedAs": { "required": ["w"] },
                    "missingProperties": ["w"] }] }] },
            ),
            (
                doc! { "allOf": [{ "minimum": 0 }, { "title": "big", "minimum": 10 }] },
                5.into(),
                doc! {
                "operatorName": "allOf",
                "schemasNotSatisfied": [{ "index": 1, "title": "big", "details": [{
                    "operatorName": "minimum", "specifiedAs": { "minimum": 10 },
                    "reason": "comparison failed", "consideredValue": 5 }] }] },
            ),
            (
                doc! { "not": { "type": "number" } },
                5.into(),
                doc! {
                "operatorName": "not", "reason": "child expression matched" },
            ),
            (
                doc! { "enum": [1, 2] },
                3.into(),
                doc! {
                "operatorName": "enum", "specifiedAs": { "enum": [1, 2] },
                "reason": "value was not found in enum", "consideredValue": 3 },
            ),
        ];
        for (keywords, value, expected) in cases {
            assert_eq!(one(keywords.clone(), value), expected, "{keywords}");
        }
    }

    #[test]
    fn top_level_rules_that_can_never_match_say_so() {
        assert_eq!(
            details(
                doc! { "bsonType": "string", "title": "t" },
                doc! { "_id": 1 }
            ),
            doc! {
                "operatorName": "$jsonSchema",
                "specifiedAs": { "$jsonSchema": { "bsonType": "string", "title": "t" } },
                "reason": "expression always evaluates to false",
            }
        );
        assert_eq!(
            details(doc! { "enum": [1] }, doc! { "_id": 1 }),
            rules(vec![doc! {
                "operatorName": "enum",
                "specifiedAs": { "enum": [1] },
                "reason": "expression always evaluates to false",
            }])
        );
        assert_eq!(
            details(doc! { "enum": [{ "_id": 2 }] }, doc! { "_id": 1 }),
            rules(vec![doc! {
                "operatorName": "enum",
                "specifiedAs": { "enum": [{ "_id": 2 }] },
                "reason": "value was not found in enum",
                "consideredValue": { "_id": 1 },
            }])
        );
    }

    /// A missing required property is reported by `required` only, even
    /// when its own schema fails on a missing value.
    #[test]
    fn a_missing_required_property_is_reported_once() {
        let schema = doc! {
            "required": ["a"],
            "properties": { "a": { "bsonType": "int", "minimum": 2, "enum": [2, 3] } },
        };
        assert_eq!(
            details(schema, doc! { "_id": 1 }),
            rules(vec![doc! {
                "operatorName": "required",
                "specifiedAs": { "required": ["a"] },
                "missingProperties": ["a"],
            }])
        );
    }
}
