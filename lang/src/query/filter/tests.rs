//! Unit tests of the filter: matching by MongoDB's rules (numeric
//! equality, type brackets, null and missing, arrays, negations, regexes,
//! `$expr`), the parsed tree, and the errors invalid filters get.

use bson::{RawBson, RawDocumentBuf, Regex, rawdoc};

use super::*;
use crate::error::{Error, ErrorKind};
use crate::query::in_list::InList;

fn matches(filter: RawDocumentBuf, doc: RawDocumentBuf) -> bool {
    Filter::parse(&filter).unwrap().matches(&doc).unwrap()
}

/// Runs (filter, document, expected) cases, naming the failing one.
fn check(cases: Vec<(RawDocumentBuf, RawDocumentBuf, bool)>) {
    for (filter, doc, expected) in cases {
        assert_eq!(
            matches(filter.clone(), doc.clone()),
            expected,
            "filter {filter:?} on {doc:?}"
        );
    }
}

fn error(filter: RawDocumentBuf) -> Error {
    Filter::parse(&filter).unwrap_err()
}

fn regex() -> Regex {
    Regex {
        pattern: "x".to_owned().try_into().unwrap(),
        options: String::new().try_into().unwrap(),
    }
}

fn decimal(text: &str) -> RawBson {
    RawBson::Decimal128(text.parse().unwrap())
}

#[test]
fn equality_holds_across_numeric_types() {
    check(vec![
        (rawdoc! { "a": 1 }, rawdoc! { "a": 1.0 }, true),
        (rawdoc! { "a": 1 }, rawdoc! { "a": 1_i64 }, true),
        (rawdoc! { "a": 1 }, rawdoc! { "a": decimal("1.0") }, true),
        (rawdoc! { "a": 1.5 }, rawdoc! { "a": 1 }, false),
        (rawdoc! { "a": 1 }, rawdoc! { "a": "1" }, false),
        (
            rawdoc! { "a": { "$eq": 2_i64 } },
            rawdoc! { "a": [1, 2.0] },
            true,
        ),
    ]);
}

#[test]
fn comparisons_stay_within_a_type_bracket() {
    let gt5 = || rawdoc! { "a": { "$gt": 5 } };
    check(vec![
        (gt5(), rawdoc! { "a": 6 }, true),
        (gt5(), rawdoc! { "a": 5.0 }, false),
        (gt5(), rawdoc! { "a": "abc" }, false),
        (gt5(), rawdoc! { "a": true }, false),
        (gt5(), rawdoc! { "a": [1, 10] }, true),
        (gt5(), rawdoc! { "a": [1, 2] }, false),
        (gt5(), rawdoc! {}, false),
        (rawdoc! { "a": { "$lt": "b" } }, rawdoc! { "a": "a" }, true),
        (rawdoc! { "a": { "$lt": "b" } }, rawdoc! { "a": 1 }, false),
        (
            rawdoc! { "a": { "$gte": 5, "$lte": 5 } },
            rawdoc! { "a": 5_i64 },
            true,
        ),
        (
            rawdoc! { "a": { "$gt": [1] } },
            rawdoc! { "a": [1, 10] },
            true,
        ),
    ]);
}

#[test]
fn null_matches_null_missing_and_undefined() {
    let null = || rawdoc! { "a": null };
    check(vec![
        (null(), rawdoc! { "a": null }, true),
        (null(), rawdoc! {}, true),
        (null(), rawdoc! { "a": RawBson::Undefined }, true),
        (null(), rawdoc! { "a": [1, null] }, true),
        (null(), rawdoc! { "a": [1] }, false),
        (null(), rawdoc! { "a": 0 }, false),
        (rawdoc! { "a": { "$gte": null } }, rawdoc! {}, true),
        (rawdoc! { "a": { "$gt": null } }, rawdoc! {}, false),
        (rawdoc! { "a": { "$ne": null } }, rawdoc! {}, false),
        (
            rawdoc! { "a": { "$ne": null } },
            rawdoc! { "a": RawBson::Undefined },
            false,
        ),
    ]);
}

#[test]
fn dotted_null_follows_documents_in_arrays_only() {
    let null = || rawdoc! { "a.b": null };
    check(vec![
        (null(), rawdoc! { "a": {} }, true),
        (null(), rawdoc! { "a": 4 }, true),
        (null(), rawdoc! { "a": [{ "b": 3 }, {}] }, true),
        (null(), rawdoc! { "a": [{ "b": 3 }] }, false),
        (null(), rawdoc! { "a": [null, null] }, false),
        (null(), rawdoc! { "a": [] }, false),
        (
            rawdoc! { "a.b": { "$ne": null } },
            rawdoc! { "a": [] },
            true,
        ),
    ]);
}

#[test]
fn arrays_match_by_element_or_as_a_whole() {
    check(vec![
        (
            rawdoc! { "tags": "x" },
            rawdoc! { "tags": ["x", "y"] },
            true,
        ),
        (
            rawdoc! { "tags": ["x", "y"] },
            rawdoc! { "tags": ["x", "y"] },
            true,
        ),
        (
            rawdoc! { "tags": ["y", "x"] },
            rawdoc! { "tags": ["x", "y"] },
            false,
        ),
        (rawdoc! { "a": 1 }, rawdoc! { "a": [[1]] }, false),
        (rawdoc! { "a": [1] }, rawdoc! { "a": [[1]] }, true),
        (rawdoc! { "a": [1] }, rawdoc! { "a": [1] }, true),
        (rawdoc! { "a": [] }, rawdoc! { "a": [[], 1] }, true),
    ]);
}

#[test]
fn embedded_documents_compare_exactly() {
    let filter = || rawdoc! { "a": { "b": 1, "c": 2 } };
    check(vec![
        (filter(), rawdoc! { "a": { "b": 1, "c": 2 } }, true),
        (filter(), rawdoc! { "a": { "b": 1.0, "c": 2_i64 } }, true),
        (filter(), rawdoc! { "a": { "c": 2, "b": 1 } }, false),
        (filter(), rawdoc! { "a": { "b": 1, "c": 2, "d": 3 } }, false),
        (filter(), rawdoc! { "a": [{ "b": 1, "c": 2 }] }, true),
    ]);
}

#[test]
fn dotted_paths_reach_into_documents_and_arrays() {
    check(vec![
        (
            rawdoc! { "a.b.c": 1 },
            rawdoc! { "a": { "b": { "c": 1 } } },
            true,
        ),
        (
            rawdoc! { "a.b": 1 },
            rawdoc! { "a": [{ "b": 2 }, { "b": 1 }] },
            true,
        ),
        (rawdoc! { "a.b": 1 }, rawdoc! { "a": [[{ "b": 1 }]] }, false),
        (rawdoc! { "a.0": 5 }, rawdoc! { "a": [5, 6] }, true),
        (rawdoc! { "a.1": 5 }, rawdoc! { "a": [5, 6] }, false),
        (
            rawdoc! { "a.1.b": 2 },
            rawdoc! { "a": [{ "b": 1 }, { "b": 2 }] },
            true,
        ),
        (
            rawdoc! { "a.0.b": 1 },
            rawdoc! { "a": [[{ "b": 1 }]] },
            true,
        ),
        (rawdoc! { "a.b": 1 }, rawdoc! { "a": 1 }, false),
    ]);
}

#[test]
fn ne_and_nin_negate_the_whole_path() {
    check(vec![
        (
            rawdoc! { "a": { "$ne": 1 } },
            rawdoc! { "a": [1, 2] },
            false,
        ),
        (rawdoc! { "a": { "$ne": 1 } }, rawdoc! { "a": [2, 3] }, true),
        (rawdoc! { "a": { "$ne": 1 } }, rawdoc! {}, true),
        (
            rawdoc! { "a": { "$ne": [1, 2] } },
            rawdoc! { "a": [1, 2] },
            false,
        ),
        (rawdoc! { "a": { "$nin": [1, 2] } }, rawdoc! {}, true),
        (
            rawdoc! { "a": { "$nin": [1, 2] } },
            rawdoc! { "a": [3] },
            true,
        ),
        (
            rawdoc! { "a": { "$nin": [1, 2] } },
            rawdoc! { "a": [2, 3] },
            false,
        ),
        (rawdoc! { "a": { "$nin": [null] } }, rawdoc! {}, false),
    ]);
}

#[test]
fn in_matches_any_listed_value() {
    check(vec![
        (
            rawdoc! { "a": { "$in": [1, "x"] } },
            rawdoc! { "a": "x" },
            true,
        ),
        (
            rawdoc! { "a": { "$in": [1, "x"] } },
            rawdoc! { "a": 1.0 },
            true,
        ),
        (
            rawdoc! { "a": { "$in": [1, "x"] } },
            rawdoc! { "a": [3, 1] },
            true,
        ),
        (
            rawdoc! { "a": { "$in": [1, "x"] } },
            rawdoc! { "a": 2 },
            false,
        ),
        (
            rawdoc! { "a": { "$in": [[1, 2]] } },
            rawdoc! { "a": [1, 2] },
            true,
        ),
        (rawdoc! { "a": { "$in": [null] } }, rawdoc! {}, true),
        (
            rawdoc! { "a": { "$in": [null] } },
            rawdoc! { "a": RawBson::Undefined },
            true,
        ),
        (rawdoc! { "a": { "$in": [] } }, rawdoc! { "a": 1 }, false),
    ]);
}

#[test]
fn exists_tests_presence() {
    check(vec![
        (
            rawdoc! { "a": { "$exists": true } },
            rawdoc! { "a": null },
            true,
        ),
        (rawdoc! { "a": { "$exists": true } }, rawdoc! {}, false),
        (rawdoc! { "a": { "$exists": false } }, rawdoc! {}, true),
        (rawdoc! { "a": { "$exists": 0 } }, rawdoc! { "a": 1 }, false),
        (
            rawdoc! { "a": { "$exists": true } },
            rawdoc! { "a": [] },
            true,
        ),
        (
            rawdoc! { "a.b": { "$exists": false } },
            rawdoc! { "a": [1] },
            true,
        ),
        (
            rawdoc! { "a.b": { "$exists": true } },
            rawdoc! { "a": [{ "b": 1 }] },
            true,
        ),
    ]);
}

#[test]
fn not_negates_the_whole_path_and_matches_missing() {
    let not_gt5 = || rawdoc! { "a": { "$not": { "$gt": 5 } } };
    check(vec![
        (not_gt5(), rawdoc! {}, true),
        (not_gt5(), rawdoc! { "a": 3 }, true),
        (not_gt5(), rawdoc! { "a": "x" }, true),
        (not_gt5(), rawdoc! { "a": 6 }, false),
        (not_gt5(), rawdoc! { "a": [1, 6] }, false),
        (
            rawdoc! { "a": { "$not": { "$gt": 1, "$lt": 5 } } },
            rawdoc! { "a": 3 },
            false,
        ),
        (
            rawdoc! { "a": { "$not": { "$gt": 1, "$lt": 5 } } },
            rawdoc! { "a": 7 },
            true,
        ),
    ]);
}

#[test]
fn all_needs_every_value() {
    check(vec![
        (
            rawdoc! { "a": { "$all": [1, 2] } },
            rawdoc! { "a": [2, 3, 1] },
            true,
        ),
        (
            rawdoc! { "a": { "$all": [1, 2] } },
            rawdoc! { "a": [1] },
            false,
        ),
        (rawdoc! { "a": { "$all": [1] } }, rawdoc! { "a": 1 }, true),
        (rawdoc! { "a": { "$all": [] } }, rawdoc! { "a": [] }, false),
        (
            rawdoc! { "a": { "$all": [[1, 2]] } },
            rawdoc! { "a": [1, 2] },
            true,
        ),
        (
            rawdoc! { "a": { "$all": [[1, 2]] } },
            rawdoc! { "a": [[1, 2], 3] },
            true,
        ),
        (
            rawdoc! { "a": { "$all": [
                { "$elemMatch": { "b": 1 } },
                { "$elemMatch": { "c": 2 } },
            ] } },
            rawdoc! { "a": [{ "b": 1 }, { "c": 2 }] },
            true,
        ),
        (
            rawdoc! { "a": { "$all": [{ "$elemMatch": { "b": 1, "c": 2 } }] } },
            rawdoc! { "a": [{ "b": 1 }, { "c": 2 }] },
            false,
        ),
    ]);
}

#[test]
fn elem_match_needs_one_element_to_satisfy_everything() {
    let doc = || rawdoc! { "a": [{ "b": 1, "c": 2 }, { "b": 2, "c": 1 }] };
    check(vec![
        (rawdoc! { "a.b": 1, "a.c": 1 }, doc(), true),
        (
            rawdoc! { "a": { "$elemMatch": { "b": 1, "c": 1 } } },
            doc(),
            false,
        ),
        (
            rawdoc! { "a": { "$elemMatch": { "b": 1, "c": 2 } } },
            doc(),
            true,
        ),
        (
            rawdoc! { "a": { "$gt": 1, "$lt": 3 } },
            rawdoc! { "a": [0, 5] },
            true,
        ),
        (
            rawdoc! { "a": { "$elemMatch": { "$gt": 1, "$lt": 3 } } },
            rawdoc! { "a": [0, 5] },
            false,
        ),
        (
            rawdoc! { "a": { "$elemMatch": { "$gt": 1, "$lt": 3 } } },
            rawdoc! { "a": [0, 2] },
            true,
        ),
        (
            rawdoc! { "a": { "$elemMatch": { "$gt": 1 } } },
            rawdoc! { "a": 5 },
            false,
        ),
        (
            rawdoc! { "a": { "$elemMatch": { "$eq": 1 } } },
            rawdoc! { "a": [[1]] },
            false,
        ),
        (
            rawdoc! { "a": { "$elemMatch": { "$elemMatch": { "$eq": 1 } } } },
            rawdoc! { "a": [[1]] },
            true,
        ),
        // An array element is read as a document; `[]` has no `b`.
        (
            rawdoc! { "a": { "$elemMatch": { "b": null } } },
            rawdoc! { "a": [[]] },
            true,
        ),
        (
            rawdoc! { "a": { "$elemMatch": {} } },
            rawdoc! { "a": [1, {}] },
            true,
        ),
        (
            rawdoc! { "a": { "$elemMatch": {} } },
            rawdoc! { "a": [1] },
            false,
        ),
        (
            rawdoc! { "a": { "$elemMatch": { "$or": [{ "b": 5 }, { "c": 5 }] } } },
            rawdoc! { "a": [{ "c": 5 }] },
            true,
        ),
        (
            rawdoc! { "a.b": { "$elemMatch": { "$eq": 1 } } },
            rawdoc! { "a": [{ "b": [2] }, { "b": [1] }] },
            true,
        ),
    ]);
}

#[test]
fn size_counts_the_array_itself() {
    check(vec![
        (
            rawdoc! { "a": { "$size": 2 } },
            rawdoc! { "a": [1, 2] },
            true,
        ),
        (
            rawdoc! { "a": { "$size": 2 } },
            rawdoc! { "a": [[1, 2]] },
            false,
        ),
        (
            rawdoc! { "a": { "$size": 1 } },
            rawdoc! { "a": [[1, 2]] },
            true,
        ),
        (rawdoc! { "a": { "$size": 0 } }, rawdoc! { "a": [] }, true),
        (rawdoc! { "a": { "$size": 0 } }, rawdoc! {}, false),
        (
            rawdoc! { "a": { "$size": 2.0 } },
            rawdoc! { "a": [1, 2] },
            true,
        ),
        (
            rawdoc! { "a.b": { "$size": 1 } },
            rawdoc! { "a": [{ "b": [1] }] },
            true,
        ),
    ]);
}

#[test]
fn type_matches_values_and_array_elements() {
    check(vec![
        (
            rawdoc! { "a": { "$type": "string" } },
            rawdoc! { "a": "x" },
            true,
        ),
        (
            rawdoc! { "a": { "$type": "string" } },
            rawdoc! { "a": [1, "x"] },
            true,
        ),
        (
            rawdoc! { "a": { "$type": "array" } },
            rawdoc! { "a": [1] },
            true,
        ),
        (
            rawdoc! { "a": { "$type": "array" } },
            rawdoc! { "a": 1 },
            false,
        ),
        (
            rawdoc! { "a": { "$type": "number" } },
            rawdoc! { "a": 1.5 },
            true,
        ),
        (rawdoc! { "a": { "$type": 16 } }, rawdoc! { "a": 1 }, true),
        (
            rawdoc! { "a": { "$type": 16 } },
            rawdoc! { "a": 1_i64 },
            false,
        ),
        (
            rawdoc! { "a": { "$type": ["long", 2.0] } },
            rawdoc! { "a": "s" },
            true,
        ),
        (rawdoc! { "a": { "$type": "null" } }, rawdoc! {}, false),
        (
            rawdoc! { "a": { "$type": -1 } },
            rawdoc! { "a": RawBson::MinKey },
            true,
        ),
        (
            rawdoc! { "a": { "$type": "maxKey" } },
            rawdoc! { "a": RawBson::MaxKey },
            true,
        ),
    ]);
}

#[test]
fn logical_operators_combine_clauses() {
    check(vec![
        (
            rawdoc! { "$and": [{ "a": 1 }, { "b": 2 }] },
            rawdoc! { "a": 1, "b": 2 },
            true,
        ),
        (
            rawdoc! { "$and": [{ "a": 1 }, { "b": 2 }] },
            rawdoc! { "a": 1 },
            false,
        ),
        (
            rawdoc! { "$or": [{ "a": 1 }, { "b": 2 }] },
            rawdoc! { "b": 2 },
            true,
        ),
        (
            rawdoc! { "$or": [{ "a": 1 }, { "b": 2 }] },
            rawdoc! { "c": 2 },
            false,
        ),
        (
            rawdoc! { "$nor": [{ "a": 1 }, { "b": 2 }] },
            rawdoc! {},
            true,
        ),
        (
            rawdoc! { "$nor": [{ "a": 1 }, { "b": 2 }] },
            rawdoc! { "a": 1 },
            false,
        ),
        (
            rawdoc! { "a": 1, "$comment": "why" },
            rawdoc! { "a": 1 },
            true,
        ),
        (rawdoc! {}, rawdoc! { "anything": 1 }, true),
        (rawdoc! { "$alwaysFalse": 1 }, rawdoc! {}, false),
    ]);
}

#[test]
fn min_and_max_key_bound_every_value() {
    check(vec![
        (
            rawdoc! { "a": { "$lt": RawBson::MaxKey } },
            rawdoc! { "a": "x" },
            true,
        ),
        (
            rawdoc! { "a": { "$lt": RawBson::MaxKey } },
            rawdoc! {},
            true,
        ),
        (
            rawdoc! { "a": { "$gt": RawBson::MinKey } },
            rawdoc! { "a": null },
            true,
        ),
        (
            rawdoc! { "a": { "$gt": RawBson::MaxKey } },
            rawdoc! { "a": 1 },
            false,
        ),
        (
            rawdoc! { "a": RawBson::MaxKey },
            rawdoc! { "a": RawBson::MaxKey },
            true,
        ),
    ]);
}

#[test]
fn nan_equals_only_nan_and_is_unordered() {
    check(vec![
        (rawdoc! { "a": f64::NAN }, rawdoc! { "a": f64::NAN }, true),
        (
            rawdoc! { "a": f64::NAN },
            rawdoc! { "a": decimal("NaN") },
            true,
        ),
        (
            rawdoc! { "a": { "$gte": f64::NAN } },
            rawdoc! { "a": f64::NAN },
            true,
        ),
        (
            rawdoc! { "a": { "$gt": f64::NAN } },
            rawdoc! { "a": 1 },
            false,
        ),
        (
            rawdoc! { "a": { "$lt": 5 } },
            rawdoc! { "a": f64::NAN },
            false,
        ),
        (
            rawdoc! { "a": { "$lte": 5 } },
            rawdoc! { "a": f64::NAN },
            false,
        ),
    ]);
}

#[test]
fn dbref_documents_are_values_not_operators() {
    let dbref = || rawdoc! { "$ref": "c", "$id": 1 };
    check(vec![(
        rawdoc! { "a": dbref() },
        rawdoc! { "a": dbref() },
        true,
    )]);
}

#[test]
fn invalid_filters_report_mongodb_errors() {
    let cases = vec![
        (
            rawdoc! { "$foo": 1 },
            ErrorKind::BadValue,
            "unknown top level operator: $foo. If you have a field name that starts \
             with a '$' symbol, consider using $getField or $setField.",
        ),
        (
            rawdoc! { "$not": { "a": 1 } },
            ErrorKind::BadValue,
            "unknown top level operator: $not. \
             If you are trying to negate an entire expression, use $nor.",
        ),
        (
            rawdoc! { "a": { "$foo": 1 } },
            ErrorKind::BadValue,
            "unknown operator: $foo",
        ),
        (
            rawdoc! { "a": { "$gt": 1, "b": 2 } },
            ErrorKind::BadValue,
            "unknown operator: b",
        ),
        (
            rawdoc! { "a": { "$in": 1 } },
            ErrorKind::BadValue,
            "$in needs an array",
        ),
        (
            rawdoc! { "a": { "$nin": "x" } },
            ErrorKind::BadValue,
            "$nin needs an array",
        ),
        (
            rawdoc! { "$and": 1 },
            ErrorKind::BadValue,
            "$and must be an array",
        ),
        (
            rawdoc! { "$or": [] },
            ErrorKind::BadValue,
            "$and/$or/$nor must be a nonempty array",
        ),
        (
            rawdoc! { "$nor": [1] },
            ErrorKind::BadValue,
            "$or/$and/$nor entries need to be full objects",
        ),
        (
            rawdoc! { "a": { "$not": 1 } },
            ErrorKind::BadValue,
            "$not needs a regex or a document",
        ),
        (
            rawdoc! { "a": { "$not": {} } },
            ErrorKind::BadValue,
            "$not cannot be empty",
        ),
        (
            rawdoc! { "a": { "$size": "1" } },
            ErrorKind::BadValue,
            "$size needs a number",
        ),
        (
            rawdoc! { "a": { "$size": 1.5 } },
            ErrorKind::BadValue,
            "$size must be a whole number",
        ),
        (
            rawdoc! { "a": { "$size": -1 } },
            ErrorKind::BadValue,
            "$size may not be negative",
        ),
        (
            rawdoc! { "a": { "$type": "foo" } },
            ErrorKind::BadValue,
            "Unknown type name alias: foo",
        ),
        (
            rawdoc! { "a": { "$type": 100 } },
            ErrorKind::BadValue,
            "Invalid numerical type code: 100",
        ),
        (
            rawdoc! { "a": { "$type": true } },
            ErrorKind::TypeMismatch,
            "type must be represented as a number or a string",
        ),
        (
            rawdoc! { "a": { "$type": [] } },
            ErrorKind::FailedToParse,
            "$type must match at least one type",
        ),
        (
            rawdoc! { "a": { "$regex": "(" } },
            ErrorKind::InvalidRegex,
            "Regular expression is invalid",
        ),
        (
            rawdoc! { "a": { "$regex": "x", "$options": "q" } },
            ErrorKind::InvalidRegexOptions,
            "invalid flag in regex options: q",
        ),
        (
            rawdoc! { "a": { "$options": "i" } },
            ErrorKind::BadValue,
            "$options needs a $regex",
        ),
        (
            rawdoc! { "a": { "$regex": 5 } },
            ErrorKind::BadValue,
            "$regex has to be a string",
        ),
        (
            rawdoc! { "a": { "$regex": Regex { pattern: "x".to_owned().try_into().unwrap(), options: "i".to_owned().try_into().unwrap() }, "$options": "m" } },
            ErrorKind::RegexOptionsTwice,
            "options set in both $regex and $options",
        ),
        (
            rawdoc! { "$where": "true" },
            ErrorKind::JavaScriptDisabled,
            "no globalScriptEngine in $where parsing",
        ),
        (
            rawdoc! { "a": { "$elemMatch": { "$expr": true } } },
            ErrorKind::BadValue,
            "$expr can only be applied to the top-level document",
        ),
        (
            rawdoc! { "$expr": { "$foo": 1 } },
            ErrorKind::InvalidPipelineOperator,
            "Unrecognized expression '$foo'",
        ),
        (
            rawdoc! { "a": { "$mod": 2 } },
            ErrorKind::BadValue,
            "malformed mod, needs to be an array",
        ),
        (
            rawdoc! { "a": { "$mod": [2] } },
            ErrorKind::BadValue,
            "malformed mod, not enough elements",
        ),
        (
            rawdoc! { "a": { "$mod": [2, 0, 1] } },
            ErrorKind::BadValue,
            "malformed mod, too many elements",
        ),
        (
            rawdoc! { "a": { "$mod": ["2", 0] } },
            ErrorKind::BadValue,
            "malformed mod, divisor not a number",
        ),
        (
            rawdoc! { "a": { "$mod": [0, 0] } },
            ErrorKind::BadValue,
            "divisor cannot be 0",
        ),
        (
            rawdoc! { "a": { "$mod": [f64::NAN, 0] } },
            ErrorKind::BadValue,
            "malformed mod, divisor value is invalid :: caused by :: Unable to coerce NaN/Inf to integral type",
        ),
        (
            rawdoc! { "a": { "$elemMatch": 1 } },
            ErrorKind::BadValue,
            "$elemMatch needs an Object",
        ),
        (
            rawdoc! { "a": { "$all": 1 } },
            ErrorKind::BadValue,
            "$all needs an array",
        ),
        (
            rawdoc! { "a": { "$all": [{ "$gt": 1 }] } },
            ErrorKind::BadValue,
            "no $ expressions in $all",
        ),
        (
            rawdoc! { "a": { "$all": [{ "$elemMatch": { "b": 1 } }, 1] } },
            ErrorKind::BadValue,
            "$all/$elemMatch has to be consistent",
        ),
        (
            rawdoc! { "a": { "$in": [{ "$gt": 1 }] } },
            ErrorKind::BadValue,
            "cannot nest $ under $in",
        ),
        (
            rawdoc! { "a": { "$eq": RawBson::Undefined } },
            ErrorKind::BadValue,
            "cannot compare to undefined",
        ),
        (
            rawdoc! { "a": { "$ne": regex() } },
            ErrorKind::BadValue,
            "Can't have regex as arg to $ne.",
        ),
        (
            rawdoc! { "a": { "$gt": regex() } },
            ErrorKind::BadValue,
            "Can't have RegEx as arg to predicate over field 'a'.",
        ),
    ];
    for (filter, kind, message) in cases {
        let e = error(filter.clone());
        assert_eq!(e.kind, kind, "filter {filter:?}: {}", e.message);
        // Compiler messages follow a fixed lead (`…: <engine's words>`).
        assert!(
            e.message == message || e.message.starts_with(&format!("{message}: ")),
            "filter {filter:?}: {}",
            e.message
        );
    }
}

/// The documents of MongoDB's own null-semantics test (jstests
/// `null_query_semantics.js`, 7.0 behaviour: null also matches undefined).
fn null_semantics_documents() -> Vec<(&'static str, RawDocumentBuf)> {
    let undefined = || RawBson::Undefined;
    vec![
        ("a_empty_subobject", rawdoc! { "a": {} }),
        ("a_null", rawdoc! { "a": null }),
        ("a_number", rawdoc! { "a": 4 }),
        ("a_subobject_b_not_null", rawdoc! { "a": { "b": "hi" } }),
        ("a_subobject_b_null", rawdoc! { "a": { "b": null } }),
        (
            "a_subobject_b_undefined",
            rawdoc! { "a": { "b": undefined() } },
        ),
        ("a_undefined", rawdoc! { "a": undefined() }),
        ("no_a", rawdoc! {}),
        ("a_double_array", rawdoc! { "a": [[]] }),
        ("a_empty_array", rawdoc! { "a": [] }),
        (
            "a_object_array_all_b_nulls",
            rawdoc! { "a": [{ "b": null }, { "b": undefined() }, { "b": null }, {}] },
        ),
        (
            "a_object_array_no_b_nulls",
            rawdoc! { "a": [{ "b": 1 }, { "b": 3 }, { "b": "string" }] },
        ),
        (
            "a_object_array_some_b_nulls",
            rawdoc! { "a": [{ "b": null }, { "b": 3 }, { "b": null }] },
        ),
        (
            "a_object_array_some_b_undefined",
            rawdoc! { "a": [{ "b": undefined() }, { "b": 3 }] },
        ),
        (
            "a_object_array_some_b_missing",
            rawdoc! { "a": [{ "b": 3 }, {}] },
        ),
        ("a_value_array_all_nulls", rawdoc! { "a": [null, null] }),
        ("a_value_array_no_nulls", rawdoc! { "a": [1, "string", 4] }),
        (
            "a_value_array_with_null",
            rawdoc! { "a": [1, "string", null, 4] },
        ),
        (
            "a_value_array_with_undefined",
            rawdoc! { "a": [1, "string", undefined(), 4] },
        ),
    ]
}

/// Names of the documents the filter matches.
fn matching(filter: RawDocumentBuf, docs: &[(&'static str, RawDocumentBuf)]) -> Vec<&'static str> {
    let filter = Filter::parse(&filter).unwrap();
    docs.iter()
        .filter(|(_, doc)| filter.matches(doc).unwrap())
        .map(|(name, _)| *name)
        .collect()
}

fn all_but(docs: &[(&'static str, RawDocumentBuf)], excluded: &[&str]) -> Vec<&'static str> {
    docs.iter()
        .map(|(name, _)| *name)
        .filter(|name| !excluded.contains(name))
        .collect()
}

#[test]
fn null_semantics_match_mongodb() {
    let docs = null_semantics_documents();
    let eq_null = [
        "a_null",
        "a_undefined",
        "no_a",
        "a_value_array_all_nulls",
        "a_value_array_with_null",
        "a_value_array_with_undefined",
    ];
    let dotted_eq_null = [
        "a_empty_subobject",
        "a_null",
        "a_number",
        "a_subobject_b_null",
        "a_subobject_b_undefined",
        "a_undefined",
        "no_a",
        "a_object_array_all_b_nulls",
        "a_object_array_some_b_nulls",
        "a_object_array_some_b_undefined",
        "a_object_array_some_b_missing",
    ];
    let sorted = |mut names: Vec<&'static str>| {
        names.sort_unstable();
        names
    };
    let expect = |filter: RawDocumentBuf, expected: Vec<&'static str>| {
        assert_eq!(
            sorted(matching(filter.clone(), &docs)),
            sorted(expected),
            "filter {filter:?}"
        );
    };
    expect(rawdoc! { "a": { "$eq": null } }, eq_null.to_vec());
    expect(rawdoc! { "a": { "$in": [null, 75] } }, eq_null.to_vec());
    expect(rawdoc! { "a": { "$ne": null } }, all_but(&docs, &eq_null));
    expect(
        rawdoc! { "a": { "$nin": [null, 75] } },
        all_but(&docs, &eq_null),
    );
    expect(
        rawdoc! { "a": { "$not": { "$gte": null } } },
        all_but(&docs, &eq_null),
    );
    expect(rawdoc! { "a.b": { "$eq": null } }, dotted_eq_null.to_vec());
    expect(
        rawdoc! { "a.b": { "$in": [null, 75] } },
        dotted_eq_null.to_vec(),
    );
    expect(
        rawdoc! { "a.b": { "$ne": null } },
        all_but(&docs, &dotted_eq_null),
    );
    expect(
        rawdoc! { "a.b": { "$nin": [null, 75] } },
        all_but(&docs, &dotted_eq_null),
    );
    expect(rawdoc! { "a": { "$exists": false } }, vec!["no_a"]);
    expect(
        rawdoc! { "a": { "$elemMatch": { "$eq": null } } },
        vec![
            "a_value_array_all_nulls",
            "a_value_array_with_null",
            "a_value_array_with_undefined",
        ],
    );
    expect(
        rawdoc! { "a": { "$elemMatch": { "$ne": null } } },
        vec![
            "a_double_array",
            "a_object_array_all_b_nulls",
            "a_object_array_no_b_nulls",
            "a_object_array_some_b_nulls",
            "a_object_array_some_b_undefined",
            "a_object_array_some_b_missing",
            "a_value_array_no_nulls",
            "a_value_array_with_null",
            "a_value_array_with_undefined",
        ],
    );
    expect(rawdoc! { "a.b": { "$elemMatch": { "$eq": null } } }, vec![]);
    expect(rawdoc! { "a.b": { "$elemMatch": { "$ne": null } } }, vec![]);
    expect(
        rawdoc! { "a": { "$elemMatch": { "b": { "$eq": null } } } },
        vec![
            "a_double_array",
            "a_object_array_all_b_nulls",
            "a_object_array_some_b_nulls",
            "a_object_array_some_b_undefined",
            "a_object_array_some_b_missing",
        ],
    );
    expect(
        rawdoc! { "a": { "$elemMatch": { "b": { "$ne": null } } } },
        vec![
            "a_object_array_no_b_nulls",
            "a_object_array_some_b_nulls",
            "a_object_array_some_b_undefined",
            "a_object_array_some_b_missing",
        ],
    );
    let scalars = &docs[..8];
    assert_eq!(
        sorted(matching(rawdoc! { "a.b": { "$exists": false } }, scalars)),
        sorted(vec![
            "no_a",
            "a_empty_subobject",
            "a_null",
            "a_number",
            "a_undefined"
        ])
    );
}

/// $expr compares fields of one document (manual: $expr, "Compare Two
/// Fields from A Single Document"); false, null, missing and 0 are
/// false.
#[test]
fn expr_compares_fields_of_the_same_document() {
    let spent = || rawdoc! { "$expr": { "$gt": ["$spent", "$budget"] } };
    check(vec![
        (spent(), rawdoc! { "budget": 400, "spent": 450 }, true),
        (spent(), rawdoc! { "budget": 100, "spent": 65 }, false),
        (rawdoc! { "$expr": "$flag" }, rawdoc! { "flag": 0 }, false),
        (rawdoc! { "$expr": "$flag" }, rawdoc! {}, false),
        (rawdoc! { "$expr": "$flag" }, rawdoc! { "flag": "x" }, true),
        (
            rawdoc! { "$or": [{ "a": 1 }, { "$expr": { "$eq": ["$b", 2] } }] },
            rawdoc! { "b": 2 },
            true,
        ),
    ]);
    let failing = Filter::parse(&rawdoc! { "$expr": { "$divide": [1, "$z"] } }).unwrap();
    assert!(failing.matches(&rawdoc! { "z": 0 }).is_err());
}

/// $mod truncates doubles, and its remainder keeps the dividend's sign
/// (manual: $mod, "Floating Point Arguments", "Negative Dividend").
#[test]
fn mod_matches_truncated_numbers() {
    let m = |d: f64, r: i32| rawdoc! { "qty": { "$mod": [d, r] } };
    check(vec![
        (m(4.0, 0), rawdoc! { "qty": 12 }, true),
        (m(4.0, 0), rawdoc! { "qty": 5 }, false),
        (m(4.5, 0), rawdoc! { "qty": 12.7 }, true),
        (m(4.0, -1), rawdoc! { "qty": -5 }, true),
        (m(4.0, 0), rawdoc! { "qty": "12" }, false),
        (m(4.0, 0), rawdoc! { "qty": [5, 8] }, true),
        (m(4.0, 0), rawdoc! { "qty": f64::NAN }, false),
    ]);
}

#[test]
fn comment_is_accepted_and_changes_nothing() {
    check(vec![
        (
            rawdoc! { "$comment": "why", "a": 1 },
            rawdoc! { "a": 1 },
            true,
        ),
        (
            rawdoc! { "$comment": { "any": 1 } },
            rawdoc! { "a": 2 },
            true,
        ),
    ]);
}

#[test]
fn eq_with_a_regex_compares_the_regex_itself() {
    let filter = rawdoc! { "a": { "$eq": regex() } };
    assert!(matches(filter.clone(), rawdoc! { "a": regex() }));
    assert!(!matches(filter, rawdoc! { "a": "x" }));
}

#[test]
fn top_level_predicates_flatten_and() {
    let filter = Filter::parse(&rawdoc! {
        "a": 1,
        "$and": [{ "b": { "$gt": 2, "$lt": 9 } }, { "c": 3 }],
        "$or": [{ "d": 1 }, { "e": 1 }],
    })
    .unwrap();
    let found = filter.top_level_predicates();
    assert_eq!(
        found,
        vec![
            ("a", &Pred::Eq(RawBson::Int32(1))),
            ("b", &Pred::Gt(RawBson::Int32(2))),
            ("b", &Pred::Lt(RawBson::Int32(9))),
            ("c", &Pred::Eq(RawBson::Int32(3))),
        ]
    );
}

#[test]
fn single_clause_is_the_root() {
    let filter = Filter::parse(&rawdoc! { "a": { "$in": [1, 2] } }).unwrap();
    assert_eq!(
        filter.root(),
        &Expr::Path {
            path: "a".to_owned(),
            pred: Pred::In(InList::new(vec![RawBson::Int32(1), RawBson::Int32(2)])),
        }
    );
}

#[test]
fn id_equality_finds_point_lookups_only() {
    let id = |filter: RawDocumentBuf| {
        Filter::parse(&filter)
            .unwrap()
            .id_equality()
            .map(RawBson::from)
    };
    assert_eq!(id(rawdoc! { "_id": 5 }), Some(RawBson::Int32(5)));
    assert_eq!(
        id(rawdoc! { "_id": { "$eq": "x" } }),
        Some(RawBson::String("x".into()))
    );
    assert_eq!(
        id(rawdoc! { "_id": 5, "$comment": "c" }),
        Some(RawBson::Int32(5))
    );
    assert_eq!(id(rawdoc! { "_id": { "a": 1 } }), None);
    assert_eq!(id(rawdoc! { "_id": [1] }), None);
    assert_eq!(id(rawdoc! { "_id": null }), None);
    assert_eq!(id(rawdoc! { "_id": 5, "b": 1 }), None);
    assert_eq!(id(rawdoc! { "_id": { "$gt": 5 } }), None);
}

#[test]
fn empty_filters_are_recognised() {
    let empty = |filter: RawDocumentBuf| Filter::parse(&filter).unwrap().is_empty();
    assert!(empty(rawdoc! {}));
    assert!(empty(rawdoc! { "$comment": "x" }));
    assert!(!empty(rawdoc! { "a": 1 }));
}

/// `$sampleRate`: every document at 1, none at 0, about the rate between,
/// and mongod's BadValue for a rate that is not a number in [0, 1].
#[test]
fn sample_rate_keeps_documents_with_its_probability() {
    let doc = rawdoc! { "a": 1 };
    let kept = |rate: f64| {
        let f = Filter::parse(&rawdoc! { "$sampleRate": rate }).unwrap();
        (0..2000).filter(|_| f.matches(&doc).unwrap()).count()
    };
    assert_eq!(kept(1.0), 2000);
    assert_eq!(kept(0.0), 0);
    let half = kept(0.5);
    assert!((800..=1200).contains(&half), "{half}");
    for bad in [
        rawdoc! { "$sampleRate": "0.5" },
        rawdoc! { "$sampleRate": 1.5 },
        rawdoc! { "$sampleRate": -0.1 },
    ] {
        assert_eq!(error(bad).kind, ErrorKind::BadValue);
    }
}
