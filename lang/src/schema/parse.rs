//! Parsing a `$jsonSchema` document into a [`Schema`], refusing what
//! MongoDB refuses with its code and message.
//!
//! Keywords are read in the order mongod reads them (unknown, unsupported
//! and duplicate keywords first, then `title`/`description`, the type
//! keywords, string and number keywords, array keywords, object keywords,
//! logical keywords), so a schema with several problems reports the same
//! one mongod reports. Keywords MongoDB explicitly does not support
//! (`$ref`, `$schema`, `default`, `definitions`, `format`, `id`) and
//! unknown ones fail with FailedToParse; `integer` as a type is refused as
//! mongod refuses it. The encryption keywords are refused as not
//! implemented. This module builds the tree and nothing else.

use bson::{Bson, RawBson, RawBsonRef, RawDocument};

use super::pattern::Pattern;
use super::tree::{Additional, Counted, Dependency, Property, Rule, Schema, Types};
use super::value::same_value;
use crate::encoding::decimal::{self, Dec};
use crate::encoding::display::{shell, type_name};
use crate::error::{Error, Result};
use crate::query::path::elements;
use crate::query::value::{TYPE_ALIASES, element, number_as_f64};

/// Every keyword mongod's `$jsonSchema` accepts.
const KEYWORDS: &[&str] = &[
    "additionalItems",
    "additionalProperties",
    "allOf",
    "anyOf",
    "bsonType",
    "dependencies",
    "description",
    "encrypt",
    "encryptMetadata",
    "enum",
    "exclusiveMaximum",
    "exclusiveMinimum",
    "items",
    "maxItems",
    "maxLength",
    "maxProperties",
    "maximum",
    "minItems",
    "minLength",
    "minProperties",
    "minimum",
    "multipleOf",
    "not",
    "oneOf",
    "pattern",
    "patternProperties",
    "properties",
    "required",
    "title",
    "type",
    "uniqueItems",
];

/// JSON Schema keywords MongoDB names as not supported.
const UNSUPPORTED: &[&str] = &["$ref", "$schema", "default", "definitions", "format", "id"];

/// The JSON type names `type` accepts (`number` aside), with MongoDB's
/// type number for each.
const JSON_TYPES: &[(&str, i32)] = &[
    ("array", 4),
    ("boolean", 8),
    ("null", 10),
    ("object", 3),
    ("string", 2),
];

/// The keywords of one schema document, as written.
struct Keywords<'a> {
    found: Vec<(&'a str, RawBsonRef<'a>)>,
}

impl<'a> Keywords<'a> {
    /// Reads the keywords, refusing unknown, unsupported and repeated ones.
    fn read(doc: &'a RawDocument) -> Result<Keywords<'a>> {
        let mut found: Vec<(&'a str, RawBsonRef<'a>)> = Vec::new();
        for item in doc.iter() {
            let (name, value) = element(item)?;
            if !KEYWORDS.contains(&name) {
                return Err(if UNSUPPORTED.contains(&name) {
                    Error::failed_to_parse(format!(
                        "$jsonSchema keyword '{name}' is not currently supported"
                    ))
                } else {
                    Error::failed_to_parse(format!("Unknown $jsonSchema keyword: {name}"))
                });
            }
            if found.iter().any(|(seen, _)| *seen == name) {
                return Err(Error::failed_to_parse(format!(
                    "Duplicate $jsonSchema keyword: {name}"
                )));
            }
            found.push((name, value));
        }
        Ok(Keywords { found })
    }

    fn get(&self, name: &str) -> Option<RawBsonRef<'a>> {
        self.found.iter().find(|(k, _)| *k == name).map(|(_, v)| *v)
    }
}

/// Parses one schema document (the whole `$jsonSchema` or a nested one).
pub(super) fn parse_schema(doc: &RawDocument) -> Result<Schema> {
    let keywords = Keywords::read(doc)?;
    let title = annotation(&keywords, "title")?;
    let description = annotation(&keywords, "description")?;
    let types = parse_types(&keywords)?;
    let mut rules = Vec::new();
    scalar_rules(&keywords, &mut rules)?;
    array_rules(&keywords, &mut rules)?;
    for encryption in ["encrypt", "encryptMetadata"] {
        if keywords.get(encryption).is_some() {
            return Err(Error::not_implemented(&format!(
                "the $jsonSchema keyword '{encryption}'"
            )));
        }
    }
    object_rules(&keywords, &mut rules)?;
    logical_rules(&keywords, &mut rules)?;
    Ok(Schema {
        source: doc.to_owned(),
        title,
        description,
        types,
        rules,
    })
}

/// `title` or `description`: any string, kept for error details.
fn annotation(keywords: &Keywords<'_>, name: &str) -> Result<Option<String>> {
    match keywords.get(name) {
        None => Ok(None),
        Some(RawBsonRef::String(s)) => Ok(Some(s.to_owned())),
        Some(_) => Err(Error::type_mismatch(format!(
            "$jsonSchema keyword '{name}' must be of type string"
        ))),
    }
}

fn parse_types(keywords: &Keywords<'_>) -> Result<Option<Types>> {
    let (json, bson) = (keywords.get("type"), keywords.get("bsonType"));
    let (keyword, value) = match (json, bson) {
        (Some(_), Some(_)) => {
            return Err(Error::failed_to_parse(
                "Cannot specify both $jsonSchema keywords 'type' and 'bsonType'",
            ));
        }
        (Some(v), None) => ("type", v),
        (None, Some(v)) => ("bsonType", v),
        (None, None) => return Ok(None),
    };
    let names: Vec<&str> = match value {
        RawBsonRef::String(name) => vec![name],
        RawBsonRef::Array(array) => {
            let mut names = Vec::new();
            for item in elements(array) {
                let RawBsonRef::String(name) = item else {
                    return Err(Error::type_mismatch(format!(
                        "$jsonSchema keyword '{keyword}' array elements must be strings"
                    )));
                };
                refuse_integer(name)?;
                if names.contains(&name) {
                    return Err(Error::failed_to_parse(format!(
                        "$jsonSchema keyword '{keyword}' has duplicate value: {name}"
                    )));
                }
                names.push(name);
            }
            names
        }
        _ => {
            return Err(Error::type_mismatch(format!(
                "$jsonSchema keyword '{keyword}' must be either a string or an array of strings"
            )));
        }
    };
    let mut types = Types {
        keyword,
        spec: value.into(),
        numbers: false,
        codes: Vec::new(),
    };
    for name in names {
        refuse_integer(name)?;
        let aliases = if keyword == "type" {
            JSON_TYPES
        } else {
            TYPE_ALIASES
        };
        match aliases.iter().find(|(alias, _)| *alias == name) {
            Some((_, code)) => types.codes.push(*code),
            None if name == "number" => types.numbers = true,
            None => {
                return Err(Error::bad_value(format!("Unknown type name alias: {name}")));
            }
        }
    }
    if !types.numbers && types.codes.is_empty() {
        return Err(Error::failed_to_parse(format!(
            "$jsonSchema keyword '{keyword}' must name at least one type"
        )));
    }
    Ok(Some(types))
}

fn refuse_integer(name: &str) -> Result<()> {
    if name == "integer" {
        return Err(Error::failed_to_parse(
            "$jsonSchema type 'integer' is not currently supported.",
        ));
    }
    Ok(())
}

/// `pattern`, `maxLength`, `minLength`, `multipleOf`, `maximum`, `minimum`.
fn scalar_rules(keywords: &Keywords<'_>, rules: &mut Vec<Rule>) -> Result<()> {
    if let Some(value) = keywords.get("pattern") {
        let RawBsonRef::String(source) = value else {
            return Err(Error::type_mismatch(
                "$jsonSchema keyword 'pattern' must be a string",
            ));
        };
        rules.push(Rule::Pattern(Pattern::compile(source)?));
    }
    count_rule(keywords, "maxLength", Counted::StringLength, true, rules)?;
    count_rule(keywords, "minLength", Counted::StringLength, false, rules)?;
    if let Some(value) = keywords.get("multipleOf") {
        let Some(number) = number_as_f64(value) else {
            return Err(Error::type_mismatch(
                "$jsonSchema keyword 'multipleOf' must be a number",
            ));
        };
        if number <= 0.0 {
            return Err(Error::failed_to_parse(
                "$jsonSchema keyword 'multipleOf' must have a positive value",
            ));
        }
        rules.push(Rule::MultipleOf(value.into()));
    }
    bound_rule(keywords, "maximum", "exclusiveMaximum", true, rules)?;
    bound_rule(keywords, "minimum", "exclusiveMinimum", false, rules)
}

fn count_rule(
    keywords: &Keywords<'_>,
    keyword: &'static str,
    counted: Counted,
    max: bool,
    rules: &mut Vec<Rule>,
) -> Result<()> {
    if let Some(value) = keywords.get(keyword) {
        rules.push(Rule::Count {
            keyword,
            counted,
            max,
            limit: non_negative_integer(keyword, value)?,
            spec: value.into(),
        });
    }
    Ok(())
}

fn bound_rule(
    keywords: &Keywords<'_>,
    keyword: &'static str,
    exclusive_keyword: &str,
    max: bool,
    rules: &mut Vec<Rule>,
) -> Result<()> {
    let Some(limit) = keywords.get(keyword) else {
        if keywords.get(exclusive_keyword).is_some() {
            return Err(Error::failed_to_parse(format!(
                "$jsonSchema keyword '{keyword}' must be a present if {exclusive_keyword} is present"
            )));
        }
        return Ok(());
    };
    let exclusive = match keywords.get(exclusive_keyword) {
        None => false,
        Some(RawBsonRef::Boolean(b)) => b,
        Some(_) => {
            return Err(Error::type_mismatch(format!(
                "$jsonSchema keyword '{exclusive_keyword}' must be a boolean"
            )));
        }
    };
    if number_as_f64(limit).is_none() {
        return Err(Error::type_mismatch(format!(
            "$jsonSchema keyword '{keyword}' must be a number"
        )));
    }
    rules.push(Rule::Bound {
        keyword,
        limit: limit.into(),
        max,
        exclusive,
    });
    Ok(())
}

/// `minItems`, `maxItems`, `uniqueItems`, `items`, `additionalItems`.
fn array_rules(keywords: &Keywords<'_>, rules: &mut Vec<Rule>) -> Result<()> {
    count_rule(keywords, "minItems", Counted::ArrayItems, false, rules)?;
    count_rule(keywords, "maxItems", Counted::ArrayItems, true, rules)?;
    match keywords.get("uniqueItems") {
        None | Some(RawBsonRef::Boolean(false)) => {}
        Some(RawBsonRef::Boolean(true)) => rules.push(Rule::UniqueItems),
        Some(_) => {
            return Err(Error::type_mismatch(
                "$jsonSchema keyword 'uniqueItems' must be a boolean",
            ));
        }
    }
    // `additionalItems` only means something after a positional `items`.
    let mut additional_from = None;
    match keywords.get("items") {
        None => {}
        Some(RawBsonRef::Document(doc)) => rules.push(Rule::Items(Box::new(parse_schema(doc)?))),
        Some(RawBsonRef::Array(array)) => {
            let mut schemas = Vec::new();
            for item in elements(array) {
                let RawBsonRef::Document(doc) = item else {
                    return Err(Error::type_mismatch(format!(
                        "$jsonSchema keyword 'items' requires that each element of the array \
                         is an object, but found a {}",
                        type_name(&item)
                    )));
                };
                schemas.push(parse_schema(doc)?);
            }
            additional_from = Some(schemas.len());
            rules.push(Rule::ItemsByPosition(schemas));
        }
        Some(other) => {
            return Err(Error::type_mismatch(format!(
                "$jsonSchema keyword 'items' must be an array or an object, not {}",
                type_name(&other)
            )));
        }
    }
    if let Some(value) = keywords.get("additionalItems") {
        let rule = match value {
            RawBsonRef::Boolean(allowed) => Additional::Allowed(allowed),
            RawBsonRef::Document(doc) => Additional::Schema(Box::new(parse_schema(doc)?)),
            other => {
                return Err(Error::type_mismatch(format!(
                    "$jsonSchema keyword 'additionalItems' must be either an object or a \
                     boolean, but got a {}",
                    type_name(&other)
                )));
            }
        };
        if let Some(start) = additional_from {
            rules.push(Rule::AdditionalItems { start, rule });
        }
    }
    Ok(())
}

/// `properties`, `patternProperties`/`additionalProperties`, `required`,
/// `minProperties`, `maxProperties`, `dependencies`.
fn object_rules(keywords: &Keywords<'_>, rules: &mut Vec<Rule>) -> Result<()> {
    let required = match keywords.get("required") {
        None => None,
        Some(value) => Some((parse_required(value)?, value)),
    };
    let is_required = |name: &str| required.as_ref().is_some_and(|(r, _)| r.contains(&name));
    let mut named = Vec::new();
    if let Some(value) = keywords.get("properties") {
        let RawBsonRef::Document(doc) = value else {
            return Err(Error::type_mismatch(
                "$jsonSchema keyword 'properties' must be an object",
            ));
        };
        let mut properties = Vec::new();
        for item in doc.iter() {
            let (name, nested) = element(item)?;
            let RawBsonRef::Document(nested) = nested else {
                return Err(Error::type_mismatch(format!(
                    "Nested schema for $jsonSchema property '{name}' must be an object"
                )));
            };
            named.push(name.to_owned());
            properties.push(Property {
                name: name.to_owned(),
                schema: parse_schema(nested)?,
                required: is_required(name),
            });
        }
        rules.push(Rule::Properties(properties));
    }
    let patterns = keywords.get("patternProperties");
    let additional = keywords.get("additionalProperties");
    if patterns.is_some() || additional.is_some() {
        let patterns = match patterns {
            None => Vec::new(),
            Some(value) => parse_pattern_properties(value)?,
        };
        let rule = match additional {
            None | Some(RawBsonRef::Boolean(true)) => Additional::Allowed(true),
            Some(RawBsonRef::Boolean(false)) => Additional::Allowed(false),
            Some(RawBsonRef::Document(doc)) => Additional::Schema(Box::new(parse_schema(doc)?)),
            Some(_) => {
                return Err(Error::type_mismatch(
                    "$jsonSchema keyword 'additionalProperties' must be an object or a boolean",
                ));
            }
        };
        rules.push(Rule::AllowedProperties {
            named,
            patterns,
            additional: rule,
        });
    }
    if let Some((names, value)) = required {
        let mut names: Vec<String> = names.into_iter().map(str::to_owned).collect();
        names.sort();
        rules.push(Rule::Required {
            names,
            spec: value.into(),
        });
    }
    count_rule(
        keywords,
        "minProperties",
        Counted::ObjectProperties,
        false,
        rules,
    )?;
    count_rule(
        keywords,
        "maxProperties",
        Counted::ObjectProperties,
        true,
        rules,
    )?;
    if let Some(value) = keywords.get("dependencies") {
        rules.push(parse_dependencies(value)?);
    }
    Ok(())
}

/// The names `required` lists: a non-empty array of distinct strings.
fn parse_required(value: RawBsonRef<'_>) -> Result<Vec<&str>> {
    let RawBsonRef::Array(array) = value else {
        return Err(Error::type_mismatch(format!(
            "$jsonSchema keyword 'required' must be an array, but found an element of type {}",
            type_name(&value)
        )));
    };
    let mut names = Vec::new();
    for item in elements(array) {
        let RawBsonRef::String(name) = item else {
            return Err(Error::type_mismatch(format!(
                "$jsonSchema keyword 'required' must be an array of strings, but found an \
                 element of type: {}",
                type_name(&item)
            )));
        };
        if names.contains(&name) {
            return Err(Error::failed_to_parse(
                "$jsonSchema keyword 'required' array cannot contain duplicate values",
            ));
        }
        names.push(name);
    }
    if names.is_empty() {
        return Err(Error::failed_to_parse(
            "$jsonSchema keyword 'required' cannot be an empty array",
        ));
    }
    Ok(names)
}

fn parse_pattern_properties(value: RawBsonRef<'_>) -> Result<Vec<(Pattern, Schema)>> {
    let RawBsonRef::Document(doc) = value else {
        return Err(Error::type_mismatch(
            "$jsonSchema keyword 'patternProperties' must be an object",
        ));
    };
    let mut patterns = Vec::new();
    for item in doc.iter() {
        let (source, nested) = element(item)?;
        let RawBsonRef::Document(nested) = nested else {
            return Err(Error::type_mismatch(format!(
                "$jsonSchema keyword 'patternProperties' has property '{source}' which is not \
                 an object"
            )));
        };
        patterns.push((Pattern::compile_lenient(source), parse_schema(nested)?));
    }
    Ok(patterns)
}

fn parse_dependencies(value: RawBsonRef<'_>) -> Result<Rule> {
    let RawBsonRef::Document(doc) = value else {
        return Err(Error::type_mismatch(
            "$jsonSchema keyword 'dependencies' must be an object",
        ));
    };
    let (mut entries, mut title, mut description) = (Vec::new(), None, None);
    for item in doc.iter() {
        let (name, dependency) = element(item)?;
        match dependency {
            RawBsonRef::Document(nested) => entries.push(Dependency::Schema {
                name: name.to_owned(),
                schema: Box::new(parse_schema(nested)?),
            }),
            RawBsonRef::Array(array) => entries.push(Dependency::Properties {
                name: name.to_owned(),
                needs: parse_property_dependency(name, array)?,
            }),
            // Annotations may sit among the dependencies.
            RawBsonRef::String(text) if name == "title" => title = Some(text.to_owned()),
            RawBsonRef::String(text) if name == "description" => {
                description = Some(text.to_owned());
            }
            _ => {
                return Err(Error::type_mismatch(format!(
                    "property '{name}' in $jsonSchema keyword 'dependencies' must be either an \
                     object or an array"
                )));
            }
        }
    }
    Ok(Rule::Dependencies {
        entries,
        title,
        description,
    })
}

fn parse_property_dependency(name: &str, array: &bson::RawArray) -> Result<Vec<String>> {
    let mut needs: Vec<String> = Vec::new();
    for item in elements(array) {
        let RawBsonRef::String(needed) = item else {
            return Err(Error::type_mismatch(format!(
                "array '{name}' in $jsonSchema keyword 'dependencies' can only contain strings, \
                 but found element of type: {}",
                type_name(&item)
            )));
        };
        if needs.iter().any(|n| n == needed) {
            return Err(Error::failed_to_parse(format!(
                "array '{name}' in $jsonSchema keyword 'dependencies' contains duplicate \
                 element: {needed}"
            )));
        }
        needs.push(needed.to_owned());
    }
    if needs.is_empty() {
        return Err(Error::failed_to_parse(format!(
            "property '{name}' in $jsonSchema keyword 'dependencies' cannot be an empty array"
        )));
    }
    Ok(needs)
}

/// `allOf`, `anyOf`, `oneOf`, `not`, `enum`.
fn logical_rules(keywords: &Keywords<'_>, rules: &mut Vec<Rule>) -> Result<()> {
    if let Some(value) = keywords.get("allOf") {
        rules.push(Rule::AllOf(schema_list("allOf", value)?));
    }
    if let Some(value) = keywords.get("anyOf") {
        rules.push(Rule::AnyOf(schema_list("anyOf", value)?));
    }
    if let Some(value) = keywords.get("oneOf") {
        rules.push(Rule::OneOf(schema_list("oneOf", value)?));
    }
    if let Some(value) = keywords.get("not") {
        let RawBsonRef::Document(doc) = value else {
            return Err(Error::type_mismatch(format!(
                "$jsonSchema keyword 'not' must be an object, but found an element of type {}",
                type_name(&value)
            )));
        };
        rules.push(Rule::Not(Box::new(parse_schema(doc)?)));
    }
    if let Some(value) = keywords.get("enum") {
        rules.push(parse_enum(value)?);
    }
    Ok(())
}

fn schema_list(keyword: &str, value: RawBsonRef<'_>) -> Result<Vec<Schema>> {
    let RawBsonRef::Array(array) = value else {
        return Err(Error::type_mismatch(format!(
            "$jsonSchema keyword '{keyword}' must be an array"
        )));
    };
    let mut schemas = Vec::new();
    for item in elements(array) {
        let RawBsonRef::Document(doc) = item else {
            return Err(Error::type_mismatch(format!(
                "$jsonSchema keyword '{keyword}' must be an array of objects, but found an \
                 element of type {}",
                type_name(&item)
            )));
        };
        schemas.push(parse_schema(doc)?);
    }
    if schemas.is_empty() {
        return Err(Error::bad_value(format!(
            "$jsonSchema keyword '{keyword}' must be a non-empty array"
        )));
    }
    Ok(schemas)
}

fn parse_enum(value: RawBsonRef<'_>) -> Result<Rule> {
    let RawBsonRef::Array(array) = value else {
        return Err(Error::type_mismatch(format!(
            "$jsonSchema keyword 'enum' must be an array, but found an element of type {}",
            type_name(&value)
        )));
    };
    let mut values: Vec<RawBson> = Vec::new();
    for item in elements(array) {
        if values
            .iter()
            .any(|seen| same_value(seen.as_raw_bson_ref(), item))
        {
            return Err(Error::failed_to_parse(
                "$jsonSchema keyword 'enum' array cannot contain duplicate values.",
            ));
        }
        values.push(item.into());
    }
    if values.is_empty() {
        return Err(Error::failed_to_parse(
            "$jsonSchema keyword 'enum' cannot be an empty array",
        ));
    }
    Ok(Rule::Enum {
        values,
        spec: value.into(),
    })
}

/// A count argument as MongoDB reads one: an integral number, not
/// negative (doubles and decimals included when exactly integral).
fn non_negative_integer(keyword: &str, value: RawBsonRef<'_>) -> Result<i64> {
    let shown = || {
        let bson = Bson::try_from(value).unwrap_or(Bson::Null);
        format!("{keyword}: {}", shell(&bson))
    };
    let fail = |what: &str| Err(Error::failed_to_parse(format!("{what}{}", shown())));
    let n = match value {
        RawBsonRef::Int32(n) => i64::from(n),
        RawBsonRef::Int64(n) => n,
        RawBsonRef::Double(x) if x.is_nan() => {
            return fail("Expected an integer, but found NaN in: ");
        }
        // 2^63 is the first double above every i64.
        RawBsonRef::Double(x)
            if !(-9_223_372_036_854_775_808.0..9_223_372_036_854_775_808.0).contains(&x) =>
        {
            return fail("Cannot represent as a 64-bit integer: ");
        }
        RawBsonRef::Double(x) if x.fract() != 0.0 => return fail("Expected an integer: "),
        RawBsonRef::Double(x) => x as i64,
        RawBsonRef::Decimal128(d) => match exact_i64(decimal::decode(d)) {
            Some(n) => n,
            None => return fail("Cannot represent as a 64-bit integer: "),
        },
        _ => return fail("Expected a number in: "),
    };
    if n < 0 {
        return fail("Expected a positive number in: ");
    }
    Ok(n)
}

/// A decimal that is exactly an i64.
fn exact_i64(d: Dec) -> Option<i64> {
    let Dec::Finite { neg, coeff, exp } = d else {
        return None;
    };
    let magnitude = if exp >= 0 {
        coeff.checked_mul(10u128.checked_pow(exp as u32)?)?
    } else {
        let divisor = 10u128.checked_pow(exp.unsigned_abs()).unwrap_or(u128::MAX);
        if coeff % divisor != 0 {
            return None;
        }
        coeff / divisor
    };
    let signed = i128::try_from(magnitude).ok()?;
    i64::try_from(if neg { -signed } else { signed }).ok()
}

#[cfg(test)]
mod tests {
    use bson::{RawDocumentBuf, rawdoc};

    use super::*;
    use crate::error::ErrorKind;

    fn error(schema: RawDocumentBuf) -> (ErrorKind, String) {
        let e = parse_schema(&schema).unwrap_err();
        (e.kind, e.message)
    }

    /// Invalid schemas and mongod's answers (json_schema_parser.cpp;
    /// jstests/core/json_schema/*.js assert the codes).
    #[test]
    fn invalid_schemas_get_mongods_code_and_message() {
        use ErrorKind::*;
        let cases: Vec<(RawDocumentBuf, ErrorKind, &str)> = vec![
            (
                rawdoc! { "invalid": 1 },
                FailedToParse,
                "Unknown $jsonSchema keyword: invalid",
            ),
            (
                rawdoc! { "default": { "_id": 0 } },
                FailedToParse,
                "$jsonSchema keyword 'default' is not currently supported",
            ),
            (
                rawdoc! { "properties": { "a": { "$ref": "#/x" } } },
                FailedToParse,
                "$jsonSchema keyword '$ref' is not currently supported",
            ),
            (
                rawdoc! { "$schema": "x" },
                FailedToParse,
                "$jsonSchema keyword '$schema' is not currently supported",
            ),
            (
                rawdoc! { "definitions": {} },
                FailedToParse,
                "$jsonSchema keyword 'definitions' is not currently supported",
            ),
            (
                rawdoc! { "format": "email" },
                FailedToParse,
                "$jsonSchema keyword 'format' is not currently supported",
            ),
            (
                rawdoc! { "id": "s.json" },
                FailedToParse,
                "$jsonSchema keyword 'id' is not currently supported",
            ),
            (
                rawdoc! { "title": 1 },
                TypeMismatch,
                "$jsonSchema keyword 'title' must be of type string",
            ),
            (
                rawdoc! { "description": {} },
                TypeMismatch,
                "$jsonSchema keyword 'description' must be of type string",
            ),
            (
                rawdoc! { "type": "string", "bsonType": "string" },
                FailedToParse,
                "Cannot specify both $jsonSchema keywords 'type' and 'bsonType'",
            ),
            (
                rawdoc! { "type": 3 },
                TypeMismatch,
                "$jsonSchema keyword 'type' must be either a string or an array of strings",
            ),
            (
                rawdoc! { "type": "integer" },
                FailedToParse,
                "$jsonSchema type 'integer' is not currently supported.",
            ),
            (
                rawdoc! { "type": ["string", "integer"] },
                FailedToParse,
                "$jsonSchema type 'integer' is not currently supported.",
            ),
            (
                rawdoc! { "type": "int" },
                BadValue,
                "Unknown type name alias: int",
            ),
            (
                rawdoc! { "bsonType": "integer" },
                FailedToParse,
                "$jsonSchema type 'integer' is not currently supported.",
            ),
            (
                rawdoc! { "bsonType": "boolean" },
                BadValue,
                "Unknown type name alias: boolean",
            ),
            (
                rawdoc! { "bsonType": [1] },
                TypeMismatch,
                "$jsonSchema keyword 'bsonType' array elements must be strings",
            ),
            (
                rawdoc! { "bsonType": ["int", "int"] },
                FailedToParse,
                "$jsonSchema keyword 'bsonType' has duplicate value: int",
            ),
            (
                rawdoc! { "bsonType": [] },
                FailedToParse,
                "$jsonSchema keyword 'bsonType' must name at least one type",
            ),
            (
                rawdoc! { "properties": 3 },
                TypeMismatch,
                "$jsonSchema keyword 'properties' must be an object",
            ),
            (
                rawdoc! { "properties": { "num": "number" } },
                TypeMismatch,
                "Nested schema for $jsonSchema property 'num' must be an object",
            ),
            (
                rawdoc! { "maximum": "0" },
                TypeMismatch,
                "$jsonSchema keyword 'maximum' must be a number",
            ),
            (
                rawdoc! { "minimum": {} },
                TypeMismatch,
                "$jsonSchema keyword 'minimum' must be a number",
            ),
            (
                rawdoc! { "maximum": 1, "exclusiveMaximum": 1 },
                TypeMismatch,
                "$jsonSchema keyword 'exclusiveMaximum' must be a boolean",
            ),
            (
                rawdoc! { "exclusiveMinimum": true },
                FailedToParse,
                "$jsonSchema keyword 'minimum' must be a present if exclusiveMinimum is present",
            ),
            (
                rawdoc! { "maxLength": "0" },
                FailedToParse,
                "Expected a number in: maxLength: \"0\"",
            ),
            (
                rawdoc! { "minLength": -1 },
                FailedToParse,
                "Expected a positive number in: minLength: -1",
            ),
            (
                rawdoc! { "minItems": 1.5 },
                FailedToParse,
                "Expected an integer: minItems: 1.5",
            ),
            (
                rawdoc! { "maxItems": f64::NAN },
                FailedToParse,
                "Expected an integer, but found NaN in: maxItems: nan.0",
            ),
            // mongod prints this double as 1e+300; only the code is compared.
            (rawdoc! { "minProperties": 1e300 }, FailedToParse, ""),
            (
                rawdoc! { "pattern": 0 },
                TypeMismatch,
                "$jsonSchema keyword 'pattern' must be a string",
            ),
            (rawdoc! { "pattern": "(" }, InvalidRegex, ""),
            (
                rawdoc! { "multipleOf": "2" },
                TypeMismatch,
                "$jsonSchema keyword 'multipleOf' must be a number",
            ),
            (
                rawdoc! { "multipleOf": 0 },
                FailedToParse,
                "$jsonSchema keyword 'multipleOf' must have a positive value",
            ),
            (
                rawdoc! { "multipleOf": -2.5 },
                FailedToParse,
                "$jsonSchema keyword 'multipleOf' must have a positive value",
            ),
            (
                rawdoc! { "uniqueItems": 1 },
                TypeMismatch,
                "$jsonSchema keyword 'uniqueItems' must be a boolean",
            ),
            (
                rawdoc! { "items": 1 },
                TypeMismatch,
                "$jsonSchema keyword 'items' must be an array or an object, not int",
            ),
            (
                rawdoc! { "items": [{}, 1] },
                TypeMismatch,
                "$jsonSchema keyword 'items' requires that each element of the array is an object, but found a int",
            ),
            (
                rawdoc! { "additionalItems": 1 },
                TypeMismatch,
                "$jsonSchema keyword 'additionalItems' must be either an object or a boolean, but got a int",
            ),
            (
                rawdoc! { "required": "a" },
                TypeMismatch,
                "$jsonSchema keyword 'required' must be an array, but found an element of type string",
            ),
            (
                rawdoc! { "required": [1] },
                TypeMismatch,
                "$jsonSchema keyword 'required' must be an array of strings, but found an element of type: int",
            ),
            (
                rawdoc! { "required": ["a", "a"] },
                FailedToParse,
                "$jsonSchema keyword 'required' array cannot contain duplicate values",
            ),
            (
                rawdoc! { "required": [] },
                FailedToParse,
                "$jsonSchema keyword 'required' cannot be an empty array",
            ),
            (
                rawdoc! { "patternProperties": 1 },
                TypeMismatch,
                "$jsonSchema keyword 'patternProperties' must be an object",
            ),
            (
                rawdoc! { "patternProperties": { "^a": 1 } },
                TypeMismatch,
                "$jsonSchema keyword 'patternProperties' has property '^a' which is not an object",
            ),
            (
                rawdoc! { "additionalProperties": 1 },
                TypeMismatch,
                "$jsonSchema keyword 'additionalProperties' must be an object or a boolean",
            ),
            (
                rawdoc! { "dependencies": [] },
                TypeMismatch,
                "$jsonSchema keyword 'dependencies' must be an object",
            ),
            (
                rawdoc! { "dependencies": { "a": 1 } },
                TypeMismatch,
                "property 'a' in $jsonSchema keyword 'dependencies' must be either an object or an array",
            ),
            (
                rawdoc! { "dependencies": { "a": [] } },
                FailedToParse,
                "property 'a' in $jsonSchema keyword 'dependencies' cannot be an empty array",
            ),
            (
                rawdoc! { "dependencies": { "a": [1] } },
                TypeMismatch,
                "array 'a' in $jsonSchema keyword 'dependencies' can only contain strings, but found element of type: int",
            ),
            (
                rawdoc! { "dependencies": { "a": ["b", "b"] } },
                FailedToParse,
                "array 'a' in $jsonSchema keyword 'dependencies' contains duplicate element: b",
            ),
            (
                rawdoc! { "allOf": {} },
                TypeMismatch,
                "$jsonSchema keyword 'allOf' must be an array",
            ),
            (
                rawdoc! { "anyOf": [] },
                BadValue,
                "$jsonSchema keyword 'anyOf' must be a non-empty array",
            ),
            (
                rawdoc! { "oneOf": [1] },
                TypeMismatch,
                "$jsonSchema keyword 'oneOf' must be an array of objects, but found an element of type int",
            ),
            (
                rawdoc! { "not": [] },
                TypeMismatch,
                "$jsonSchema keyword 'not' must be an object, but found an element of type array",
            ),
            (
                rawdoc! { "enum": 1 },
                TypeMismatch,
                "$jsonSchema keyword 'enum' must be an array, but found an element of type int",
            ),
            (
                rawdoc! { "enum": [] },
                FailedToParse,
                "$jsonSchema keyword 'enum' cannot be an empty array",
            ),
            (
                rawdoc! { "enum": [{ "a": 1, "b": 2 }, { "b": 2, "a": 1.0 }] },
                FailedToParse,
                "$jsonSchema keyword 'enum' array cannot contain duplicate values.",
            ),
            (
                rawdoc! { "minLength": 1, "minLength": 2 },
                FailedToParse,
                "Duplicate $jsonSchema keyword: minLength",
            ),
            (
                rawdoc! { "encrypt": {} },
                NotImplemented,
                "the $jsonSchema keyword 'encrypt' is not implemented in ebb",
            ),
        ];
        for (schema, kind, message) in cases {
            let (got_kind, got_message) = error(schema.clone());
            assert_eq!(got_kind, kind, "{schema:?}: {got_message}");
            if !message.is_empty() {
                assert_eq!(got_message, message, "{schema:?}");
            }
        }
    }

    #[test]
    fn the_first_problem_in_mongods_order_is_reported() {
        // Keyword names are checked before any value.
        assert_eq!(
            error(rawdoc! { "minLength": "x", "bogus": 1 }).1,
            "Unknown $jsonSchema keyword: bogus"
        );
        // String keywords before object keywords, whatever the order written.
        assert_eq!(
            error(rawdoc! { "required": 1, "maxLength": "x" }).1,
            "Expected a number in: maxLength: \"x\""
        );
    }

    #[test]
    fn annotations_and_integral_counts_are_accepted() {
        let schema = parse_schema(&rawdoc! {
            "title": "t", "description": "d",
            "minLength": 2.0, "maxItems": bson::Decimal128::from_bytes([0; 16]),
            "dependencies": { "title": "deps", "a": ["b"] },
        })
        .unwrap();
        assert_eq!(schema.title.as_deref(), Some("t"));
        assert_eq!(schema.description.as_deref(), Some("d"));
        assert_eq!(schema.rules.len(), 3);
    }

    #[test]
    fn decimals_convert_to_integers_only_exactly() {
        let d = |s: &str| decimal::decode(s.parse::<bson::Decimal128>().unwrap());
        assert_eq!(exact_i64(d("12")), Some(12));
        assert_eq!(exact_i64(d("1.20E+1")), Some(12));
        assert_eq!(exact_i64(d("12.5")), None);
        assert_eq!(exact_i64(d("-3")), Some(-3));
        assert_eq!(exact_i64(d("1E+30")), None);
    }
}
