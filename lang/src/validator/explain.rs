//! Why a document fails a collection's validator: the `errInfo.details`
//! of a DocumentValidationFailure, in MongoDB 5.0+'s shape.
//!
//! The validator document is walked clause by clause the way mongod's
//! parser splits it: top-level fields and each operator of a field are
//! clauses of an implicit `$and` (a validator with one clause reports that
//! clause alone); `$and`/`$or`/`$nor` list the clauses that decide the
//! result with their `index`; a leaf reports `operatorName`,
//! `specifiedAs` (the clause as written), `reason` and the values it
//! considered. Under `$not` and `$nor` the reasons are inverted
//! ("comparison succeeded"). `$jsonSchema` clauses are explained by
//! [`crate::schema`]. Each clause is evaluated with the query language's
//! own [`Filter`], so the explanation always agrees with the decision.
//! Shapes follow jstests/core/doc_validation/doc_validation_error.js and
//! mongod's doc_validation_error_test.cpp.

use bson::{Bson, Document, RawBsonRef, RawDocument, RawDocumentBuf, doc};

use crate::encoding::display::type_name;
use crate::query::filter::{Filter, is_operator_document};
use crate::query::path::{LeafArray, any_candidate, elements};
use crate::query::value::truthy;
use crate::schema::JsonSchema;

/// At most this many values are listed as `consideredValues`
/// (mongod's `internalQueryMaxDocValidationErrorConsideredValues`).
const MAX_CONSIDERED_VALUES: usize = 10;

/// The `details` of a document failing the validator `validator`.
pub(super) fn details(validator: &RawDocument, doc: &RawDocument) -> Document {
    explain_document(validator, doc, false)
}

/// One clause of a filter document, with the filter that is that clause
/// alone (`spec`, also what `specifiedAs` quotes).
struct Clause<'a> {
    kind: Kind<'a>,
    spec: RawDocumentBuf,
}

enum Kind<'a> {
    /// `$and`/`$or`/`$nor` with their documents.
    Logical(&'a str, Vec<&'a RawDocument>),
    JsonSchema(RawBsonRef<'a>),
    /// `{path: {$not: arg}}`.
    Not(&'a str, RawBsonRef<'a>),
    /// One operator on a path (`$eq` for implicit equality, `$regex` for a
    /// regular expression value).
    Leaf(&'a str, &'a str),
    /// `$expr`, `$alwaysFalse` and other operators without a path.
    Pathless(&'a str),
}

impl Clause<'_> {
    fn holds(&self, doc: &RawDocument) -> bool {
        holds(&self.spec, doc)
    }
}

/// Whether a document matches a filter (the parts of a validator always
/// parse, since the whole did).
fn holds(filter: &RawDocument, doc: &RawDocument) -> bool {
    Filter::parse(filter).is_ok_and(|f| f.matches(doc).unwrap_or(false))
}

/// Splits a filter document into its clauses, in mongod's order.
fn clauses(filter: &RawDocument) -> Vec<Clause<'_>> {
    let mut out = Vec::new();
    for (key, value) in filter.iter().filter_map(|item| item.ok()) {
        let key = key.as_str();
        let single = |k: &str, v: RawBsonRef<'_>| {
            let mut spec = RawDocumentBuf::new();
            spec.append(cstr(k), v);
            spec
        };
        let kind = match (key, value) {
            ("$comment", _) => continue,
            ("$and" | "$or" | "$nor", RawBsonRef::Array(items)) => Kind::Logical(
                key,
                elements(items)
                    .filter_map(|item| match item {
                        RawBsonRef::Document(d) => Some(d),
                        _ => None,
                    })
                    .collect(),
            ),
            ("$jsonSchema", _) => Kind::JsonSchema(value),
            _ if key.starts_with('$') && !matches!(key, "$ref" | "$id" | "$db") => {
                Kind::Pathless(key)
            }
            (path, RawBsonRef::Document(ops)) if is_operator_document(ops, false) => {
                operator_clauses(path, ops, &mut out);
                continue;
            }
            (path, RawBsonRef::RegularExpression(_)) => Kind::Leaf("$regex", path),
            (path, _) => Kind::Leaf("$eq", path),
        };
        out.push(Clause {
            kind,
            spec: single(key, value),
        });
    }
    out
}

/// The clauses of `path: {$op: …, …}`: one per operator (`$regex` with its
/// `$options`).
fn operator_clauses<'a>(path: &'a str, ops: &'a RawDocument, out: &mut Vec<Clause<'a>>) {
    let options = ops.get("$options").ok().flatten();
    for (op, arg) in ops.iter().filter_map(|item| item.ok()) {
        let op = op.as_str();
        if op == "$options" {
            continue;
        }
        let mut inner = RawDocumentBuf::new();
        inner.append(cstr(op), arg);
        if op == "$regex"
            && let Some(options) = options
        {
            inner.append(cstr("$options"), options);
        }
        let mut spec = RawDocumentBuf::new();
        spec.append(cstr(path), RawBsonRef::Document(&inner));
        let kind = if op == "$not" {
            Kind::Not(path, arg)
        } else {
            Kind::Leaf(op, path)
        };
        out.push(Clause { kind, spec });
    }
}

fn cstr(s: &str) -> &bson::raw::CStr {
    // Field names read from BSON hold no NUL byte.
    <&bson::raw::CStr>::try_from(s).unwrap_or(bson::raw::cstr!("?"))
}

/// The explanation of a whole filter document: its one clause, or an
/// implicit `$and` of several.
fn explain_document(filter: &RawDocument, doc: &RawDocument, inverted: bool) -> Document {
    let mut list = clauses(filter);
    if list.len() == 1 {
        return explain_clause(&list.remove(0), doc, inverted);
    }
    // A clause decides the result when it failed (or, inverted, held).
    logical_entry(
        "$and",
        inverted,
        list.iter()
            .enumerate()
            .filter(|(_, c)| c.holds(doc) == inverted)
            .map(|(i, c)| (i, explain_clause(c, doc, inverted))),
    )
}

/// `{operatorName, clausesNotSatisfied | clausesSatisfied: [{index, details}]}`.
fn logical_entry(
    op: &str,
    children_inverted: bool,
    children: impl Iterator<Item = (usize, Document)>,
) -> Document {
    let list: Vec<Document> = children
        .map(|(index, details)| doc! { "index": index as i32, "details": details })
        .collect();
    let field = if children_inverted {
        "clausesSatisfied"
    } else {
        "clausesNotSatisfied"
    };
    doc! { "operatorName": op, field: list }
}

fn explain_clause(clause: &Clause<'_>, doc: &RawDocument, inverted: bool) -> Document {
    let spec = || Bson::try_from(RawBsonRef::Document(&clause.spec)).unwrap_or(Bson::Null);
    match &clause.kind {
        Kind::Logical(op, items) => {
            // `$nor` explains its clauses in the opposite sense.
            let children_inverted = inverted != (*op == "$nor");
            logical_entry(
                op,
                children_inverted,
                items
                    .iter()
                    .enumerate()
                    .filter(|(_, item)| holds(item, doc) == children_inverted)
                    .map(|(i, item)| (i, explain_document(item, doc, children_inverted))),
            )
        }
        Kind::JsonSchema(arg) => match (inverted, JsonSchema::parse(*arg)) {
            (false, Ok(schema)) => schema.explain(doc),
            _ => doc! { "operatorName": "$jsonSchema", "reason": "schema matched" },
        },
        Kind::Not(path, arg) => {
            let mut inner = RawDocumentBuf::new();
            inner.append(cstr(path), *arg);
            doc! {
                "operatorName": "$not",
                "details": explain_document(&inner, doc, !inverted),
            }
        }
        Kind::Leaf(op, path) => leaf(op, path, &clause.spec, spec(), doc, inverted),
        Kind::Pathless(op) => {
            let (normal, opposite) = match *op {
                "$alwaysFalse" | "$alwaysTrue" => (
                    "expression always evaluates to false",
                    "expression always evaluates to true",
                ),
                _ => ("expression did not match", "expression did match"),
            };
            doc! {
                "operatorName": *op,
                "specifiedAs": spec(),
                "reason": if inverted { opposite } else { normal },
            }
        }
    }
}

/// How a path operator's failure is described.
struct LeafForm {
    normal: &'static str,
    inverted: &'static str,
    /// Arrays at the end of the path are offered element by element.
    expand: bool,
    /// Type names one of which a considered value must have for the
    /// operator to apply (else "type did not match").
    expected: &'static [&'static str],
}

const NUMBERS: &[&str] = &["decimal", "double", "int", "long"];

fn form(op: &str, spec: &RawDocument) -> LeafForm {
    let leaf = |normal, inverted| LeafForm {
        normal,
        inverted,
        expand: true,
        expected: &[],
    };
    let array = |normal, inverted| LeafForm {
        normal,
        inverted,
        expand: false,
        expected: &["array"],
    };
    match op {
        "$eq" | "$gt" | "$gte" | "$lt" | "$lte" => {
            leaf("comparison failed", "comparison succeeded")
        }
        "$ne" => leaf("comparison succeeded", "comparison failed"),
        "$in" => leaf(
            "no matching value found in array",
            "matching value found in array",
        ),
        "$nin" => leaf(
            "matching value found in array",
            "no matching value found in array",
        ),
        "$exists" if exists_argument(spec) => leaf("path does not exist", "path does exist"),
        "$exists" => leaf("path does exist", "path does not exist"),
        "$type" => leaf("type did not match", "type did match"),
        "$size" => array(
            "array length was not equal to given size",
            "array length was equal to given size",
        ),
        "$elemMatch" => array(
            "array did not satisfy the child predicate",
            "array did satisfy the child predicate",
        ),
        "$all" => LeafForm {
            expected: &[],
            ..array(
                "array did not contain all specified values",
                "array did contain all specified values",
            )
        },
        "$regex" => LeafForm {
            expected: &["regex", "string", "symbol"],
            ..leaf(
                "regular expression did not match",
                "regular expression did match",
            )
        },
        "$mod" => LeafForm {
            expected: NUMBERS,
            ..leaf(
                "$mod did not evaluate to expected remainder",
                "$mod did evaluate to expected remainder",
            )
        },
        "$bitsAllSet" | "$bitsAllClear" | "$bitsAnySet" | "$bitsAnyClear" => LeafForm {
            expected: &["binData", "decimal", "double", "int", "long"],
            ..leaf(
                "bitwise operator failed to match",
                "bitwise operator matched successfully",
            )
        },
        _ => leaf("expression did not match", "expression did match"),
    }
}

/// The truthiness of `$exists`'s argument in `{path: {$exists: v}}`.
fn exists_argument(spec: &RawDocument) -> bool {
    spec.iter()
        .filter_map(|item| item.ok())
        .find_map(|(_, v)| match v {
            RawBsonRef::Document(ops) => ops.get("$exists").ok().flatten(),
            _ => None,
        })
        .is_some_and(truthy)
}

/// `{operatorName, specifiedAs, reason, considered values…}` for one
/// operator on a path.
fn leaf(
    op: &str,
    path: &str,
    spec_doc: &RawDocument,
    spec: Bson,
    doc: &RawDocument,
    inverted: bool,
) -> Document {
    let form = form(op, spec_doc);
    let mut entry = doc! { "operatorName": op, "specifiedAs": spec };
    let reason = if inverted { form.inverted } else { form.normal };
    if op == "$exists" {
        entry.insert("reason", reason);
        return entry;
    }
    let Some(values) = considered(doc, path, form.expand) else {
        entry.insert("reason", "field was missing");
        return entry;
    };
    let types = type_names(&values);
    if op == "$type" {
        entry.insert("reason", reason);
        append_values(&mut entry, &values);
        append_types(&mut entry, "consideredType", &types);
        return entry;
    }
    let mismatched =
        !form.expected.is_empty() && !values.iter().any(|v| form.expected.contains(&type_name(v)));
    if mismatched {
        entry.insert("reason", "type did not match");
        append_types(&mut entry, "consideredType", &types);
        let expected: Vec<&str> = form.expected.to_vec();
        append_types(&mut entry, "expectedType", &expected);
    } else {
        entry.insert("reason", reason);
    }
    append_values(&mut entry, &values);
    entry
}

/// The values a predicate on `path` looked at (arrays at the end of the
/// path expanded into their elements when `expand`); `None` when the path
/// is missing.
fn considered<'a>(doc: &'a RawDocument, path: &str, expand: bool) -> Option<Vec<RawBsonRef<'a>>> {
    let mut values = Vec::new();
    let mut present = false;
    any_candidate(doc, path, LeafArray::Whole, &mut |candidate| {
        if let Some(value) = candidate {
            present = true;
            match value {
                RawBsonRef::Array(array) if expand => values.extend(elements(array)),
                _ => values.push(value),
            }
        }
        false
    });
    present.then_some(values)
}

/// `consideredValue` for one value, else `consideredValues` (at most ten,
/// then `consideredValuesTruncated`).
fn append_values(entry: &mut Document, values: &[RawBsonRef<'_>]) {
    let bson = |v: &RawBsonRef<'_>| Bson::try_from(*v).unwrap_or(Bson::Null);
    if let [one] = values {
        entry.insert("consideredValue", bson(one));
        return;
    }
    let shown: Vec<Bson> = values
        .iter()
        .take(MAX_CONSIDERED_VALUES)
        .map(bson)
        .collect();
    entry.insert("consideredValues", shown);
    if values.len() > MAX_CONSIDERED_VALUES {
        entry.insert("consideredValuesTruncated", true);
    }
}

/// The distinct type names of values, sorted.
fn type_names(values: &[RawBsonRef<'_>]) -> Vec<&'static str> {
    let mut names: Vec<&str> = values.iter().map(type_name).collect();
    names.sort_unstable();
    names.dedup();
    names
}

/// `<name>: "t"` for one type, `<name>s: [...]` for several, nothing for
/// none.
fn append_types(entry: &mut Document, name: &str, types: &[&str]) {
    match types {
        [] => {}
        [one] => {
            entry.insert(name, *one);
        }
        many => {
            entry.insert(format!("{name}s"), many.to_vec());
        }
    }
}

#[cfg(test)]
mod tests {
    use bson::{Document, RawDocumentBuf, doc};

    use super::*;
    use crate::error::ErrorKind;

    /// The details of `doc` failing `validator` (which it must fail).
    fn explain(validator: Document, doc: Document) -> Document {
        let validator = RawDocumentBuf::try_from(&validator).unwrap();
        let doc = RawDocumentBuf::try_from(&doc).unwrap();
        assert!(
            !holds(&validator, &doc),
            "the document must fail the validator"
        );
        details(&validator, &doc)
    }

    // Expected shapes: mongod's doc_validation_error_test.cpp and
    // jstests/core/doc_validation/doc_validation_error.js.

    #[test]
    fn comparisons_report_the_values_they_considered() {
        assert_eq!(
            explain(doc! { "a": { "$eq": 2 } }, doc! { "a": 1 }),
            doc! { "operatorName": "$eq", "specifiedAs": { "a": { "$eq": 2 } },
            "reason": "comparison failed", "consideredValue": 1 }
        );
        assert_eq!(
            explain(doc! { "a": 2 }, doc! { "a": 1 }),
            doc! { "operatorName": "$eq", "specifiedAs": { "a": 2 },
            "reason": "comparison failed", "consideredValue": 1 }
        );
        assert_eq!(
            explain(doc! { "a": { "$gt": 3 } }, doc! { "b": 1 }),
            doc! { "operatorName": "$gt", "specifiedAs": { "a": { "$gt": 3 } },
            "reason": "field was missing" }
        );
        assert_eq!(
            explain(
                doc! { "a.b": { "$eq": 0 } },
                doc! { "a": [{ "b": [1, 2] }, { "b": [3, 4] }] }
            ),
            doc! { "operatorName": "$eq", "specifiedAs": { "a.b": { "$eq": 0 } },
            "reason": "comparison failed", "consideredValues": [1, 2, 3, 4] }
        );
        assert_eq!(
            explain(doc! { "a": { "$gte": 3 } }, doc! { "a": [] }),
            doc! { "operatorName": "$gte", "specifiedAs": { "a": { "$gte": 3 } },
            "reason": "comparison failed", "consideredValues": [] }
        );
        assert_eq!(
            explain(doc! { "a": { "$ne": 2 } }, doc! { "a": [1, 2, 3] }),
            doc! { "operatorName": "$ne", "specifiedAs": { "a": { "$ne": 2 } },
            "reason": "comparison succeeded", "consideredValues": [1, 2, 3] }
        );
        let many: Vec<i32> = (0..12).collect();
        assert_eq!(
            explain(doc! { "a": { "$lt": 0 } }, doc! { "a": many }),
            doc! { "operatorName": "$lt", "specifiedAs": { "a": { "$lt": 0 } },
            "reason": "comparison failed",
            "consideredValues": [0, 1, 2, 3, 4, 5, 6, 7, 8, 9],
            "consideredValuesTruncated": true }
        );
    }

    #[test]
    fn set_type_and_existence_operators_say_what_they_found() {
        assert_eq!(
            explain(doc! { "a": { "$in": [1, 2, 3] } }, doc! { "a": 4 }),
            doc! { "operatorName": "$in", "specifiedAs": { "a": { "$in": [1, 2, 3] } },
            "reason": "no matching value found in array", "consideredValue": 4 }
        );
        assert_eq!(
            explain(doc! { "a": { "$nin": [1, 2, 3] } }, doc! { "a": 3 }),
            doc! { "operatorName": "$nin", "specifiedAs": { "a": { "$nin": [1, 2, 3] } },
            "reason": "matching value found in array", "consideredValue": 3 }
        );
        assert_eq!(
            explain(doc! { "a": { "$exists": true } }, doc! { "b": 1 }),
            doc! { "operatorName": "$exists", "specifiedAs": { "a": { "$exists": true } },
            "reason": "path does not exist" }
        );
        assert_eq!(
            explain(doc! { "a": { "$exists": false } }, doc! { "a": 1 }),
            doc! { "operatorName": "$exists", "specifiedAs": { "a": { "$exists": false } },
            "reason": "path does exist" }
        );
        assert_eq!(
            explain(doc! { "a": { "$type": "int" } }, doc! { "a": "one" }),
            doc! { "operatorName": "$type", "specifiedAs": { "a": { "$type": "int" } },
            "reason": "type did not match", "consideredValue": "one",
            "consideredType": "string" }
        );
        assert_eq!(
            explain(doc! { "a": { "$type": "double" } }, doc! { "a": ["x", 1] }),
            doc! { "operatorName": "$type", "specifiedAs": { "a": { "$type": "double" } },
            "reason": "type did not match", "consideredValues": ["x", 1],
            "consideredTypes": ["int", "string"] }
        );
        assert_eq!(
            explain(doc! { "a": { "$size": 2 } }, doc! { "a": 1 }),
            doc! { "operatorName": "$size", "specifiedAs": { "a": { "$size": 2 } },
            "reason": "type did not match", "consideredType": "int",
            "expectedType": "array", "consideredValue": 1 }
        );
        assert_eq!(
            explain(doc! { "a": { "$all": [1, 2] } }, doc! { "a": [1] }),
            doc! { "operatorName": "$all", "specifiedAs": { "a": { "$all": [1, 2] } },
            "reason": "array did not contain all specified values", "consideredValue": [1] }
        );
        assert_eq!(
            explain(doc! { "$alwaysFalse": 1 }, doc! { "a": 1 }),
            doc! { "operatorName": "$alwaysFalse", "specifiedAs": { "$alwaysFalse": 1 },
            "reason": "expression always evaluates to false" }
        );
    }

    #[test]
    fn logical_operators_list_the_clauses_that_decided() {
        // Implicit $and: a field's operators are clauses of the top level.
        assert_eq!(
            explain(doc! { "a": { "$gt": 0, "$lt": 10 } }, doc! { "a": 11 }),
            doc! { "operatorName": "$and", "clausesNotSatisfied": [{ "index": 1, "details": {
            "operatorName": "$lt", "specifiedAs": { "a": { "$lt": 10 } },
            "reason": "comparison failed", "consideredValue": 11 } }] }
        );
        // NestedAndOr.
        let validator = doc! { "$and": [
            { "$or": [{ "price": { "$gt": 50 } }, { "price": { "$lt": 20 } }] },
            { "qty": { "$gt": 0 } },
            { "qty": { "$lt": 10 } },
        ] };
        assert_eq!(
            explain(validator, doc! { "price": 30, "qty": 30 }),
            doc! { "operatorName": "$and", "clausesNotSatisfied": [
                { "index": 0, "details": { "operatorName": "$or", "clausesNotSatisfied": [
                    { "index": 0, "details": { "operatorName": "$gt",
                        "specifiedAs": { "price": { "$gt": 50 } }, "reason": "comparison failed",
                        "consideredValue": 30 } },
                    { "index": 1, "details": { "operatorName": "$lt",
                        "specifiedAs": { "price": { "$lt": 20 } }, "reason": "comparison failed",
                        "consideredValue": 30 } },
                ] } },
                { "index": 2, "details": { "operatorName": "$lt",
                    "specifiedAs": { "qty": { "$lt": 10 } }, "reason": "comparison failed",
                    "consideredValue": 30 } },
            ] }
        );
        // NestedAndOrNorNotOneFailingClause: $nor lists what matched, $not inverts again.
        let validator = doc! { "$and": [
            { "$or": [{ "price": { "$lt": 20 } }] },
            { "$nor": [{ "qty": { "$gt": 30 } }, { "qty": { "$not": { "$lt": 20 } } }] },
        ] };
        assert_eq!(
            explain(validator, doc! { "price": 10, "qty": 25 }),
            doc! { "operatorName": "$and", "clausesNotSatisfied": [
                { "index": 1, "details": { "operatorName": "$nor", "clausesSatisfied": [
                    { "index": 1, "details": { "operatorName": "$not", "details": {
                        "operatorName": "$lt", "specifiedAs": { "qty": { "$lt": 20 } },
                        "reason": "comparison failed", "consideredValue": 25 } } },
                ] } },
            ] }
        );
        // NotOverImplicitAnd.
        assert_eq!(
            explain(
                doc! { "a": { "$not": { "$lt": 20, "$gt": 5 } } },
                doc! { "a": 10 }
            ),
            doc! { "operatorName": "$not", "details": { "operatorName": "$and", "clausesSatisfied": [
                { "index": 0, "details": { "operatorName": "$lt", "specifiedAs": { "a": { "$lt": 20 } },
                    "reason": "comparison succeeded", "consideredValue": 10 } },
                { "index": 1, "details": { "operatorName": "$gt", "specifiedAs": { "a": { "$gt": 5 } },
                    "reason": "comparison succeeded", "consideredValue": 10 } },
            ] } }
        );
    }

    #[test]
    fn json_schema_clauses_are_explained_by_the_schema() {
        let schema = doc! { "required": ["a"] };
        assert_eq!(
            explain(doc! { "$jsonSchema": schema.clone() }, doc! { "_id": 1 }),
            doc! { "operatorName": "$jsonSchema", "schemaRulesNotSatisfied": [{
            "operatorName": "required", "specifiedAs": { "required": ["a"] },
            "missingProperties": ["a"] }] }
        );
        assert_eq!(
            explain(
                doc! { "$nor": [{ "$jsonSchema": schema }] },
                doc! { "_id": 1, "a": 1 }
            ),
            doc! { "operatorName": "$nor", "clausesSatisfied": [{ "index": 0, "details": {
            "operatorName": "$jsonSchema", "reason": "schema matched" } }] }
        );
    }

    /// `$jsonSchema` as a query operator (jstests/core/json_schema/json_schema.js).
    #[test]
    fn json_schema_is_a_query_operator() {
        let matches = |filter: Document, doc: Document| {
            let filter = RawDocumentBuf::try_from(&filter).unwrap();
            holds(&filter, &RawDocumentBuf::try_from(&doc).unwrap())
        };
        let schema = doc! { "properties": { "obj": { "properties": {
            "f1": { "type": "object", "properties": { "f3": { "type": "string" } } },
            "f2": { "type": "string" },
        } } } };
        let combined = doc! { "$or": [{ "obj.f1": "str" }, { "$jsonSchema": schema.clone() }] };
        assert!(matches(combined.clone(), doc! { "obj": 3 }));
        assert!(matches(
            combined.clone(),
            doc! { "obj": { "f1": "str", "f2": "str" } }
        ));
        assert!(!matches(combined, doc! { "obj": { "f1": 1, "f2": "str" } }));
        assert!(matches(
            doc! { "$jsonSchema": { "properties": { "a": { "type": "number" } } }, "b": 1 },
            doc! { "a": 1, "b": 1 }
        ));
        assert!(!matches(
            doc! { "$and": [{ "$jsonSchema": {}, "a": 1 }, { "b": 1 }] },
            doc! { "a": 1, "b": 2 }
        ));
        // Inside $elemMatch the schema applies to each element document.
        assert!(matches(
            doc! { "xs": { "$elemMatch": { "$jsonSchema": { "required": ["k"] } } } },
            doc! { "xs": [{ "j": 1 }, { "k": 1 }] }
        ));
        let refused = |filter: Document| {
            Filter::parse(&RawDocumentBuf::try_from(&filter).unwrap())
                .unwrap_err()
                .kind
        };
        assert_eq!(
            refused(doc! { "$jsonSchema": "foo" }),
            ErrorKind::TypeMismatch
        );
        assert_eq!(refused(doc! { "$jsonSchema": [] }), ErrorKind::TypeMismatch);
        assert_eq!(
            refused(doc! { "$jsonSchema": { "type": "integer" } }),
            ErrorKind::FailedToParse
        );
        assert_eq!(
            refused(doc! { "$or": [{ "$jsonSchema": { "format": "email" } }] }),
            ErrorKind::FailedToParse
        );
    }
}
