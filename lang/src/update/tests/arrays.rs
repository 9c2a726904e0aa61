//! The positional forms: `$[]`, `$[<identifier>]` with `arrayFilters`, and
//! `$` with the query's match. Expected results come from
//! jstests/core/write/update/update_arrayFilters.js (cited as "af.js"),
//! update_array_offset_positional.js, updatel.js and the manual pages of
//! the `$`, `$[]` and `$[<identifier>]` operators.

use bson::{Bson, DateTime, Document, doc};

use super::support::*;
use crate::ErrorKind;

/// `u` with `filters` applied to `d` (matched by an empty query).
#[track_caller]
fn filtered(d: Document, u: Document, filters: &[Document]) -> Document {
    let got = try_update_with(d, doc! {}, u, filters)
        .unwrap()
        .expect("the update changes the document");
    Document::try_from(got.as_ref()).unwrap()
}

/// `u` applied to `d`, which matched `query`.
#[track_caller]
fn after_query(d: Document, query: Document, u: Document) -> Document {
    let got = try_update_with(d, query, u, &[])
        .unwrap()
        .expect("the update changes the document");
    Document::try_from(got.as_ref()).unwrap()
}

#[track_caller]
fn fails(d: Document, u: Document, filters: &[Document]) -> (ErrorKind, String) {
    failure(try_update_with(d, doc! {}, u, filters))
}

// ---- $[] on every operator (af.js, "Tests for individual update modifiers") ----

#[test]
fn all_positional_applies_every_operator_to_every_element() {
    let cases = [
        (
            doc! {"a": [0, 1, 0, 1]},
            doc! {"$set": {"a.$[]": 3}},
            doc! {"a": [3, 3, 3, 3]},
        ),
        (
            doc! {"a": [0, 1]},
            doc! {"$unset": {"a.$[]": true}},
            doc! {"a": [Bson::Null, Bson::Null]},
        ),
        (
            doc! {"a": [0, 1, 0, 1]},
            doc! {"$inc": {"a.$[]": 1}},
            doc! {"a": [1, 2, 1, 2]},
        ),
        (
            doc! {"a": [1, 2, 1, 2]},
            doc! {"$mul": {"a.$[]": 3}},
            doc! {"a": [3, 6, 3, 6]},
        ),
        (
            doc! {"a": [{"b": 0, "c": 1}, {"b": 0, "c": -1}, {"b": 1, "c": 1}]},
            doc! {"$min": {"a.$[].c": 0}},
            doc! {"a": [{"b": 0, "c": 0}, {"b": 0, "c": -1}, {"b": 1, "c": 0}]},
        ),
        (
            doc! {"a": [{"b": 0, "c": 1}, {"b": 0, "c": 0}, {"b": 1, "c": -1}]},
            doc! {"$max": {"a.$[].c": 0}},
            doc! {"a": [{"b": 0, "c": 1}, {"b": 0, "c": 0}, {"b": 1, "c": 0}]},
        ),
        (
            doc! {"a": [[0], [1]]},
            doc! {"$addToSet": {"a.$[]": 2}},
            doc! {"a": [[0, 2], [1, 2]]},
        ),
        (
            doc! {"a": [[0]]},
            doc! {"$pop": {"a.$[]": 1}},
            doc! {"a": [[]]},
        ),
        (
            doc! {"a": [[0, 1, 2, 3], [1, 2, 3, 4]]},
            doc! {"$pullAll": {"a.$[]": [0, 2]}},
            doc! {"a": [[1, 3], [1, 3, 4]]},
        ),
        (
            doc! {"a": [[0, 1], [1, 2]]},
            doc! {"$pull": {"a.$[]": 1}},
            doc! {"a": [[0], [2]]},
        ),
        (
            doc! {"a": [[0, 1], [2, 3]]},
            doc! {"$push": {"a.$[]": 4}},
            doc! {"a": [[0, 1, 4], [2, 3, 4]]},
        ),
        (
            doc! {"a": [0_i32, 2_i32]},
            doc! {"$bit": {"a.$[]": {"or": 10_i32}}},
            doc! {"a": [10_i32, 10_i32]},
        ),
        (
            doc! {"a": [{"b": 0}, {"b": 1}]},
            doc! {"$set": {"a.$[].b": 2}},
            doc! {"a": [{"b": 2}, {"b": 2}]},
        ),
    ];
    for (d, u, expected) in cases {
        assert_eq!(filtered(d, u.clone(), &[]), expected, "{u}");
    }
    let dated = filtered(
        doc! {"a": [0, 1]},
        doc! {"$currentDate": {"a.$[]": true}},
        &[],
    );
    let now = Bson::DateTime(DateTime::from_millis(NOW_MS));
    assert_eq!(dated, doc! {"a": [now.clone(), now]});
}

#[test]
fn all_positional_in_an_upsert_uses_the_seeded_array() {
    // af.js: `$setOnInsert: {"a.$[]": 1}` with `{_id: 0, a: [0]}` upserts
    // `{_id: 0, a: [1]}`, and so does `$[i]` with `{i: 0}`.
    let got = upsert(
        doc! {"_id": 0, "a": [0]},
        doc! {"$setOnInsert": {"a.$[]": 1}},
    )
    .unwrap();
    assert_same(&got, &doc! {"_id": 0, "a": [1]});
    let got = upsert_with(
        doc! {"_id": 0, "a": [0]},
        doc! {"$setOnInsert": {"a.$[i]": 1}},
        &[doc! {"i": 0}],
    )
    .unwrap();
    assert_same(&got, &doc! {"_id": 0, "a": [1]});
}

// ---- $[<identifier>] ----

#[test]
fn identifier_applies_every_operator_to_matching_elements() {
    let cases = [
        (
            doc! {"a": [0, 1, 0, 1]},
            doc! {"$set": {"a.$[i]": 2}},
            doc! {"i": 0},
            doc! {"a": [2, 1, 2, 1]},
        ),
        (
            doc! {"a": [0, 1, 0, 1]},
            doc! {"$unset": {"a.$[i]": true}},
            doc! {"i": 0},
            doc! {"a": [Bson::Null, 1, Bson::Null, 1]},
        ),
        (
            doc! {"a": [0, 1, 0, 1]},
            doc! {"$inc": {"a.$[i]": 1}},
            doc! {"i": 1},
            doc! {"a": [0, 2, 0, 2]},
        ),
        (
            doc! {"a": [0, 2, 0, 2]},
            doc! {"$mul": {"a.$[i]": 3}},
            doc! {"i": 2},
            doc! {"a": [0, 6, 0, 6]},
        ),
        (
            doc! {"a": [{"b": 0, "c": 1}, {"b": 0, "c": -1}, {"b": 1, "c": 1}]},
            doc! {"$min": {"a.$[i].c": 0}},
            doc! {"i.b": 0},
            doc! {"a": [{"b": 0, "c": 0}, {"b": 0, "c": -1}, {"b": 1, "c": 1}]},
        ),
        (
            doc! {"a": [{"b": 0, "c": 1}, {"b": 0, "c": -1}, {"b": 1, "c": -1}]},
            doc! {"$max": {"a.$[i].c": 0}},
            doc! {"i.b": 0},
            doc! {"a": [{"b": 0, "c": 1}, {"b": 0, "c": 0}, {"b": 1, "c": -1}]},
        ),
        (
            doc! {"a": [[0], [1]]},
            doc! {"$addToSet": {"a.$[i]": 2}},
            doc! {"i": 0},
            doc! {"a": [[0, 2], [1]]},
        ),
        (
            doc! {"a": [[0, 1], [1, 2]]},
            doc! {"$pop": {"a.$[i]": 1}},
            doc! {"i": 0},
            doc! {"a": [[0], [1, 2]]},
        ),
        (
            doc! {"a": [[0, 1, 2, 3], [1, 2, 3, 4]]},
            doc! {"$pullAll": {"a.$[i]": [0, 2]}},
            doc! {"i": 0},
            doc! {"a": [[1, 3], [1, 2, 3, 4]]},
        ),
        (
            doc! {"a": [[0, 1], [1, 2]]},
            doc! {"$pull": {"a.$[i]": 1}},
            doc! {"i": 2},
            doc! {"a": [[0, 1], [2]]},
        ),
        (
            doc! {"a": [[0, 1], [2, 3]]},
            doc! {"$push": {"a.$[i]": 4}},
            doc! {"i": 0},
            doc! {"a": [[0, 1, 4], [2, 3]]},
        ),
        (
            doc! {"a": [0_i32, 2_i32]},
            doc! {"$bit": {"a.$[i]": {"or": 10_i32}}},
            doc! {"i": 0},
            doc! {"a": [10_i32, 2_i32]},
        ),
        (
            doc! {"a": [0, 1, 3]},
            doc! {"$set": {"a.$[i]": 2}},
            doc! {"$or": [{"i": 0}, {"i": 3}]},
            doc! {"a": [2, 1, 2]},
        ),
    ];
    for (d, u, filter, expected) in cases {
        assert_eq!(filtered(d, u.clone(), &[filter]), expected, "{u}");
    }
    let dated = filtered(
        doc! {"a": [0, 1]},
        doc! {"$currentDate": {"a.$[i]": true}},
        &[doc! {"i": 0}],
    );
    let now = Bson::DateTime(DateTime::from_millis(NOW_MS));
    assert_eq!(dated, doc! {"a": [now, 1]});
}

#[test]
fn manual_example_sets_grades_at_or_above_100() {
    // The `$[<identifier>]` manual page: `{$set: {"grades.$[element]": 100}}`
    // with `arrayFilters: [{element: {$gte: 100}}]`.
    assert_eq!(
        try_update_with(
            doc! {"_id": 1, "grades": [95, 92, 90]},
            doc! {},
            doc! {"$set": {"grades.$[element]": 100}},
            &[doc! {"element": {"$gte": 100}}],
        )
        .unwrap(),
        None
    );
    assert_eq!(
        filtered(
            doc! {"_id": 2, "grades": [98, 100, 102]},
            doc! {"$set": {"grades.$[element]": 100}},
            &[doc! {"element": {"$gte": 100}}],
        ),
        doc! {"_id": 2, "grades": [98, 100, 100]},
    );
}

#[test]
fn nested_identifiers_reach_into_nested_arrays() {
    // af.js, "Update all matching documents in nested array".
    assert_eq!(
        filtered(
            doc! {"_id": 0, "a": [{"b": 0, "c": [{"d": 0}, {"d": 1}]}, {"b": 1, "c": [{"d": 0}, {"d": 1}]}]},
            doc! {"$set": {"a.$[i].c.$[j].d": 2}},
            &[doc! {"i.b": 0}, doc! {"j.d": 0}],
        ),
        doc! {"_id": 0, "a": [{"b": 0, "c": [{"d": 2}, {"d": 1}]}, {"b": 1, "c": [{"d": 0}, {"d": 1}]}]},
    );
    // af.js, "Update all matching scalars in array of arrays".
    assert_eq!(
        filtered(
            doc! {"_id": 0, "a": [[0, 1], [0, 1]]},
            doc! {"$set": {"a.$[].$[j]": 2}},
            &[doc! {"j": 0}],
        ),
        doc! {"_id": 0, "a": [[2, 1], [2, 1]]},
    );
    // The `$[<identifier>]` manual page, nested arrays example.
    assert_eq!(
        filtered(
            doc! {"_id": 1, "grades": [
                {"type": "quiz", "questions": [10, 8, 5]},
                {"type": "quiz", "questions": [8, 9, 6]},
                {"type": "hw", "questions": [5, 4, 3]},
                {"type": "exam", "questions": [25, 10, 23, 0]},
            ]},
            doc! {"$inc": {"grades.$[t].questions.$[score]": 2}},
            &[doc! {"t.type": "quiz"}, doc! {"score": {"$gte": 8}}],
        ),
        doc! {"_id": 1, "grades": [
            {"type": "quiz", "questions": [12, 10, 5]},
            {"type": "quiz", "questions": [10, 11, 6]},
            {"type": "hw", "questions": [5, 4, 3]},
            {"type": "exam", "questions": [25, 10, 23, 0]},
        ]},
    );
}

#[test]
fn unmatched_identifier_changes_nothing() {
    // af.js: updateOne with `{i: 0}` on a document without matches
    // reports modifiedCount 0.
    assert_eq!(
        try_update_with(
            doc! {"a": [1, 2]},
            doc! {},
            doc! {"$set": {"a.$[i]": 5}},
            &[doc! {"i": 0}]
        )
        .unwrap(),
        None
    );
}

#[test]
fn fields_created_inside_elements_follow_set_rules() {
    assert_eq!(
        filtered(
            doc! {"a": [{"x": 1}, {"x": 2, "b": 0}]},
            doc! {"$set": {"a.$[].b": 7}},
            &[],
        ),
        doc! {"a": [{"x": 1, "b": 7}, {"x": 2, "b": 7}]},
    );
    // A scalar element cannot hold a field: the plain-path message.
    assert_eq!(
        fails(
            doc! {"a": [1, {"x": 1}]},
            doc! {"$set": {"a.$[].b": 7}},
            &[]
        ),
        (
            ErrorKind::PathNotViable,
            "Cannot create field 'b' in element {0: 1}".to_owned()
        )
    );
}

// ---- arrayFilters errors (af.js, "Error cases") ----

#[test]
fn undefined_identifier_is_bad_value() {
    assert_eq!(
        failure(parse(doc! {"$set": {"a.$[i]": 0}})),
        (
            ErrorKind::BadValue,
            "No array filter found for identifier 'i' in path 'a.$[i]'".to_owned()
        )
    );
    assert_eq!(
        failure(parse_with(doc! {"$set": {"a.$[i]": 0}}, &[doc! {"j": 2}])),
        (
            ErrorKind::BadValue,
            "No array filter found for identifier 'i' in path 'a.$[i]'".to_owned()
        )
    );
}

#[test]
fn unused_filter_is_failed_to_parse() {
    assert_eq!(
        failure(parse_with(
            doc! {"$set": {"a.$[i]": 5.0}},
            &[doc! {"i": 0}, doc! {"j": 0}]
        )),
        (
            ErrorKind::FailedToParse,
            "The array filter for identifier 'j' was not used in the update { $set: { a.$[i]: \
             5.0 } }"
                .to_owned()
        )
    );
    assert_eq!(
        failure(parse_with(doc! {"$rename": {"a": "b"}}, &[doc! {"i": 0}])),
        (
            ErrorKind::FailedToParse,
            "The array filter for identifier 'i' was not used in the update { $rename: { a: \
             \"b\" } }"
                .to_owned()
        )
    );
}

#[test]
fn filter_shape_errors_come_first() {
    assert_eq!(
        failure(parse_with(
            doc! {"$set": {"a.$[i]": 5}},
            &[doc! {"i": 0, "j": 0}]
        ))
        .0,
        ErrorKind::FailedToParse
    );
    assert_eq!(
        failure(parse_with(
            doc! {"$set": {"a.$[i]": 5, "a.$[j]": 6}},
            &[doc! {"i": 0}, doc! {"j": 0}, doc! {"i": 1}]
        )),
        (
            ErrorKind::FailedToParse,
            "Found multiple array filters with the same top-level field name i".to_owned()
        )
    );
    let (kind, message) = failure(parse_with(doc! {"$set": {"a.$[I]": 1}}, &[doc! {"I": 0}]));
    assert_eq!(kind, ErrorKind::BadValue);
    assert!(
        message.starts_with("Error parsing array filter"),
        "{message}"
    );
    assert!(
        message.ends_with(
            "The top-level field name must be an alphanumeric string beginning with a \
             lowercase letter, found 'I'"
        ),
        "{message}"
    );
}

#[test]
fn array_update_of_a_non_array_is_bad_value() {
    assert_eq!(
        fails(doc! {"a": 1}, doc! {"$set": {"a.$[]": 2}}, &[]),
        (
            ErrorKind::BadValue,
            "Cannot apply array updates to non-array element a: 1".to_owned()
        )
    );
    assert_eq!(
        fails(
            doc! {"a": {"b": 1}},
            doc! {"$set": {"a.$[i]": 2}},
            &[doc! {"i": 1}]
        ),
        (
            ErrorKind::BadValue,
            "Cannot apply array updates to non-array element a: { b: 1 }".to_owned()
        )
    );
}

#[test]
fn array_update_of_a_missing_path_must_exist() {
    assert_eq!(
        fails(doc! {"_id": 0}, doc! {"$set": {"a.b.$[]": 2}}, &[]),
        (
            ErrorKind::BadValue,
            "The path 'a.b' must exist in the document in order to apply array updates.".to_owned()
        )
    );
    assert_eq!(
        fails(
            doc! {"a": [{"b": [1]}, {"c": 1}]},
            doc! {"$inc": {"a.$[].b.$[]": 1}},
            &[]
        ),
        (
            ErrorKind::BadValue,
            "The path 'a.1.b' must exist in the document in order to apply array updates."
                .to_owned()
        )
    );
    // The same rule in an upsert's insert: the seed has no `a`.
    assert_eq!(
        failure(upsert(doc! {"_id": 0}, doc! {"$set": {"a.$[]": 1}})),
        (
            ErrorKind::BadValue,
            "The path 'a' must exist in the document in order to apply array updates.".to_owned()
        )
    );
}

#[test]
fn array_updates_conflict_with_other_children_when_parsed() {
    for (u, message) in [
        (
            doc! {"$set": {"a.$[i]": 0, "a.$": 0}},
            "Updating the path 'a.$' would create a conflict at 'a'",
        ),
        (
            doc! {"$set": {"a.$[i]": 0, "a.0": 0}},
            "Updating the path 'a.0' would create a conflict at 'a'",
        ),
        (
            doc! {"$set": {"a.$[i]": 0, "a.b": 0}},
            "Updating the path 'a.b' would create a conflict at 'a'",
        ),
        (
            doc! {"$set": {"a.$[i]": 0}, "$inc": {"a.$[i]": 1}},
            "Updating the path 'a.$[i]' would create a conflict at 'a.$[i]'",
        ),
        (
            doc! {"$set": {"a.b": 0}, "$inc": {"a.$[i]": 1}},
            "Updating the path 'a.$[i]' would create a conflict at 'a'",
        ),
    ] {
        assert_eq!(
            failure(parse_with(u, &[doc! {"i": 0}])),
            (ErrorKind::ConflictingUpdateOperators, message.to_owned())
        );
    }
}

#[test]
fn resolved_paths_that_meet_conflict_where_mongodb_merges_them() {
    // af.js, "Nested array update conflict detection".
    let d = doc! {"_id": 0, "a": [{"x": 0, "b": [{"y": 0, "c": 0}]}, {"x": 1, "b": [{"y": 0, "c": 0}]}]};
    let u = doc! {"$set": {"a.$[i].b.$[k].c": 1, "a.$[j].b.$[k].c": 2}};
    assert_eq!(
        fails(
            d.clone(),
            u.clone(),
            &[doc! {"i.x": 0}, doc! {"j.x": 0}, doc! {"k.y": 0}]
        ),
        (
            ErrorKind::ConflictingUpdateOperators,
            "Update created a conflict at 'a.0.b.$[k].c'".to_owned()
        )
    );
    assert_eq!(
        filtered(d, u, &[doc! {"i.x": 0}, doc! {"j.x": 1}, doc! {"k.y": 0}]),
        doc! {"_id": 0, "a": [{"x": 0, "b": [{"y": 0, "c": 1}]}, {"x": 1, "b": [{"y": 0, "c": 2}]}]},
    );
    let d = doc! {"_id": 0, "a": [{"x": 0, "b": [{"y": 0, "c": 0}]}, {"x": 1, "b": [{"y": 0, "c": 0}, {"y": 1, "c": 0}]}]};
    let u = doc! {"$set": {"a.$[i].b.$[k].c": 1, "a.$[j].b.$[m].c": 2}};
    assert_eq!(
        fails(
            d.clone(),
            u.clone(),
            &[
                doc! {"i.x": 0},
                doc! {"j.x": 0},
                doc! {"k.y": 0},
                doc! {"m.y": 0}
            ]
        ),
        (
            ErrorKind::ConflictingUpdateOperators,
            "Update created a conflict at 'a.0.b.0.c'".to_owned()
        )
    );
    assert_eq!(
        filtered(
            d,
            u,
            &[
                doc! {"i.x": 1},
                doc! {"j.x": 1},
                doc! {"k.y": 0},
                doc! {"m.y": 1}
            ]
        ),
        doc! {"_id": 0, "a": [{"x": 0, "b": [{"y": 0, "c": 0}]}, {"x": 1, "b": [{"y": 0, "c": 1}, {"y": 1, "c": 2}]}]},
    );
    // Different fields under one element never conflict.
    assert_eq!(
        filtered(
            doc! {"_id": 0, "a": [{"x": 0, "b": [{"y": 0, "c": 0, "d": 0}]}]},
            doc! {"$set": {"a.$[i].b.$[k].c": 1, "a.$[j].b.$[k].d": 1}},
            &[doc! {"i.x": 0}, doc! {"j.x": 0}, doc! {"k.y": 0}],
        ),
        doc! {"_id": 0, "a": [{"x": 0, "b": [{"y": 0, "c": 1, "d": 1}]}]},
    );
    assert_eq!(
        fails(
            doc! {"a": [0]},
            doc! {"$set": {"a.$[i]": 2, "a.$[j]": 3}},
            &[doc! {"i": 0}, doc! {"j": 0}]
        ),
        (
            ErrorKind::ConflictingUpdateOperators,
            "Update created a conflict at 'a.0'".to_owned()
        )
    );
}

#[test]
fn rename_refuses_dynamic_paths() {
    // af.js, "$rename".
    assert_eq!(
        failure(parse_with(
            doc! {"$rename": {"a.$[i]": "b"}},
            &[doc! {"i": 0}]
        )),
        (
            ErrorKind::BadValue,
            "The source field for $rename may not be dynamic: a.$[i]".to_owned()
        )
    );
    assert_eq!(
        failure(parse(doc! {"$rename": {"a": "b.$[]"}})),
        (
            ErrorKind::BadValue,
            "The destination field for $rename may not be dynamic: b.$[]".to_owned()
        )
    );
    assert_eq!(
        failure(parse(doc! {"$rename": {"a.$": "b"}})),
        (
            ErrorKind::BadValue,
            "The source field for $rename may not be dynamic: a.$".to_owned()
        )
    );
}

// ---- $ positional ----

#[test]
fn positional_stands_for_the_element_the_query_matched() {
    // The `$` manual page: `{_id: 1, grades: 80}`,
    // `{$set: {"grades.$": 82}}`.
    assert_eq!(
        after_query(
            doc! {"_id": 1, "grades": [85, 80, 80]},
            doc! {"_id": 1, "grades": 80},
            doc! {"$set": {"grades.$": 82}},
        ),
        doc! {"_id": 1, "grades": [85, 82, 80]},
    );
    // The `$` manual page: `{_id: 4, "grades.grade": 85}`,
    // `{$set: {"grades.$.std": 6}}`.
    assert_eq!(
        after_query(
            doc! {"_id": 4, "grades": [{"grade": 80, "mean": 75, "std": 8}, {"grade": 85, "mean": 90, "std": 5}]},
            doc! {"_id": 4, "grades.grade": 85},
            doc! {"$set": {"grades.$.std": 6}},
        ),
        doc! {"_id": 4, "grades": [{"grade": 80, "mean": 75, "std": 8}, {"grade": 85, "mean": 90, "std": 6}]},
    );
    // update_arraymatch7.js: `$inc` through `$`.
    assert_eq!(
        after_query(
            doc! {"a": [{"b": "match", "count": 0}]},
            doc! {"a.b": "match"},
            doc! {"$inc": {"a.$.count": 1}},
        ),
        doc! {"a": [{"b": "match", "count": 1}]},
    );
}

#[test]
fn positional_works_in_every_operator_that_takes_a_path() {
    let d = doc! {"a": [[1], [2], [3]], "k": [7, 8, 9]};
    let q = doc! {"k": 8};
    for (u, expected_a) in [
        (doc! {"$push": {"a.$": 5}}, bson::bson!([[1], [2, 5], [3]])),
        (doc! {"$addToSet": {"a.$": 2}}, bson::bson!([[1], [2], [3]])),
        (doc! {"$pull": {"a.$": 2}}, bson::bson!([[1], [], [3]])),
        (doc! {"$pullAll": {"a.$": [2]}}, bson::bson!([[1], [], [3]])),
        (doc! {"$pop": {"a.$": -1}}, bson::bson!([[1], [], [3]])),
        (doc! {"$unset": {"a.$": 1}}, bson::bson!([[1], null, [3]])),
        (doc! {"$set": {"a.$": 0}}, bson::bson!([[1], 0, [3]])),
    ] {
        let got = try_update_with(d.clone(), q.clone(), u.clone(), &[]).unwrap();
        let a = match got {
            Some(g) => Document::try_from(g.as_ref()).unwrap().get("a").cloned(),
            None => d.get("a").cloned(),
        };
        assert_eq!(a, Some(expected_a), "{u}");
    }
    let d = doc! {"k": [7, 8, 9]};
    for (u, expected) in [
        (doc! {"$inc": {"k.$": 1}}, doc! {"k": [7, 9, 9]}),
        (doc! {"$mul": {"k.$": 2}}, doc! {"k": [7, 16, 9]}),
        (doc! {"$min": {"k.$": 1}}, doc! {"k": [7, 1, 9]}),
        (doc! {"$max": {"k.$": 10}}, doc! {"k": [7, 10, 9]}),
    ] {
        assert_eq!(
            after_query(d.clone(), q.clone(), u.clone()),
            expected,
            "{u}"
        );
    }
}

#[test]
fn positional_needs_an_array_match_from_the_query() {
    let no_match = (
        ErrorKind::BadValue,
        "The positional operator did not find the match needed from the query.".to_owned(),
    );
    // updatel.js: an update by `_id` has no array match.
    assert_eq!(
        failure(try_update_with(
            doc! {"_id": 0},
            doc! {"_id": 0},
            doc! {"$set": {"a.$.b": 1}},
            &[]
        )),
        no_match
    );
    // update_array_offset_positional.js: a named offset is no match.
    assert_eq!(
        failure(try_update_with(
            doc! {"_id": 0, "a": [0]},
            doc! {"_id": 0, "a.0": 0},
            doc! {"$set": {"a.$": 1}},
            &[]
        )),
        no_match
    );
    // updatel.js: an upsert's insert never has a match.
    assert_eq!(
        failure(upsert(doc! {}, doc! {"$set": {"a.$.b": 1}})),
        no_match
    );
    assert_eq!(
        failure(upsert(doc! {"a": [1]}, doc! {"$setOnInsert": {"a.$": 2}})),
        no_match
    );
}

#[test]
fn positional_placement_errors() {
    assert_eq!(
        failure(parse(doc! {"$set": {"a.$.b.$.c": 2}})),
        (
            ErrorKind::BadValue,
            "Too many positional (i.e. '$') elements found in path 'a.$.b.$.c'".to_owned()
        )
    );
    assert_eq!(
        failure(parse(doc! {"$inc": {"$.a": 2}})),
        (
            ErrorKind::BadValue,
            "Cannot have positional (i.e. '$') element in the first position in path '$.a'"
                .to_owned()
        )
    );
    assert_eq!(
        failure(parse_with(doc! {"$set": {"$[i]": 10}}, &[doc! {"i": 2}])),
        (
            ErrorKind::BadValue,
            "Cannot have array filter identifier (i.e. '$[<id>]') element in the first \
             position in path '$[i]'"
                .to_owned()
        )
    );
}

#[test]
fn positional_and_a_field_on_the_same_element_conflict() {
    assert_eq!(
        failure(try_update_with(
            doc! {"a": [0, 1]},
            doc! {"a": 0},
            doc! {"$set": {"a.$": 5, "a.0": 6}},
            &[]
        )),
        (
            ErrorKind::ConflictingUpdateOperators,
            "Update created a conflict at 'a.0'".to_owned()
        )
    );
    assert_eq!(
        after_query(
            doc! {"a": [0, 1]},
            doc! {"a": 1},
            doc! {"$set": {"a.$": 5, "a.0": 6}},
        ),
        doc! {"a": [6, 5]},
    );
}

#[test]
fn positional_with_explicit_offsets_elsewhere() {
    // update_array_offset_positional.js.
    assert_eq!(
        after_query(
            doc! {"_id": 0, "a": [{"b": [0, 1]}]},
            doc! {"_id": 0, "a.0.b": 1},
            doc! {"$set": {"a.0.b.$": 2}},
        ),
        doc! {"_id": 0, "a": [{"b": [0, 2]}]},
    );
    assert_eq!(
        after_query(
            doc! {"_id": 0, "a": [0, 1], "b": [0]},
            doc! {"_id": 0, "a": 1, "b.0": 0},
            doc! {"$set": {"a.$": 2}},
        ),
        doc! {"_id": 0, "a": [0, 2], "b": [0]},
    );
}
