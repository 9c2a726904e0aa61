//! Behaviour of updates as a driver user sees it: the resulting document
//! (compared byte for byte, so field order and number types count) or the
//! error kind and message.

use bson::{Bson, DateTime, doc};

use super::support::*;
use crate::ErrorKind;
use crate::update::UpdateSpec;

// ---- parsing ----

#[test]
fn first_key_decides_between_operators_and_replacement() {
    assert!(matches!(
        parse(doc! {"$set": {"a": 1}}).unwrap(),
        UpdateSpec::Operators(_)
    ));
    assert!(matches!(
        parse(doc! {"a": 1}).unwrap(),
        UpdateSpec::Replacement(_)
    ));
    assert!(matches!(
        parse(doc! {}).unwrap(),
        UpdateSpec::Replacement(_)
    ));
}

#[test]
fn unknown_modifier_is_refused() {
    for (u, name) in [
        (doc! {"$foo": {"a": 1}}, "$foo"),
        (doc! {"$set": {"a": 1}, "b": 2}, "b"),
    ] {
        let err = parse(u).unwrap_err();
        assert_eq!(err.kind, ErrorKind::FailedToParse);
        assert_eq!(
            err.message,
            format!(
                "Unknown modifier: {name}. Expected a valid update modifier or pipeline-style update \
                 specified as an array"
            )
        );
    }
}

#[test]
fn operator_argument_must_be_a_document() {
    let err = parse(doc! {"$set": "x"}).unwrap_err();
    assert_eq!(err.kind, ErrorKind::FailedToParse);
    assert_eq!(
        err.message,
        "Modifiers operate on fields but we found type string instead. For example: \
         {$mod: {<field>: ...}} not {$set: \"x\"}"
    );
}

#[test]
fn empty_operator_document_is_a_no_op() {
    assert_unchanged(doc! {"_id": 1, "a": 1}, doc! {"$set": {}});
}

#[test]
fn empty_path_components_are_refused() {
    let err = parse(doc! {"$set": {"a..b": 1}}).unwrap_err();
    assert_eq!(err.kind, ErrorKind::EmptyFieldName);
    assert_eq!(
        err.message,
        "The update path 'a..b' contains an empty field name, which is not allowed."
    );
    let err = parse(doc! {"$unset": {"a.": 1}}).unwrap_err();
    assert_eq!(err.kind, ErrorKind::EmptyFieldName);
}

#[test]
fn overlapping_paths_conflict() {
    let cases = [
        (doc! {"$set": {"a": 2}, "$inc": {"a": 1}}, "a", "a"),
        (doc! {"$set": {"a": 2}, "$inc": {"a.b": 1}}, "a.b", "a"),
        (doc! {"$set": {"a.b": 2}, "$inc": {"a": 1}}, "a", "a"),
        (
            doc! {"$set": {"a.b": 2}, "$unset": {"a.b.c": 1}},
            "a.b.c",
            "a.b",
        ),
        (doc! {"$rename": {"a": "b"}, "$set": {"b": 9}}, "b", "b"),
        (doc! {"$rename": {"a": "c"}, "$set": {"a": 5}}, "a", "a"),
    ];
    for (u, path, at) in cases {
        let err = parse(u).unwrap_err();
        assert_eq!(err.kind, ErrorKind::ConflictingUpdateOperators);
        assert_eq!(
            err.message,
            format!("Updating the path '{path}' would create a conflict at '{at}'")
        );
    }
}

#[test]
fn sibling_paths_do_not_conflict() {
    assert_updates(
        doc! {"_id": 1, "a": {"b": 1, "c": 1}, "ab": 0},
        doc! {"$set": {"a.b": 2, "ab": 1}, "$inc": {"a.c": 1}},
        doc! {"_id": 1, "a": {"b": 2, "c": 2}, "ab": 1},
    );
}

// ---- $set and paths ----

#[test]
fn set_replaces_in_place_and_appends_new_fields_in_path_order() {
    assert_updates(
        doc! {"_id": 1, "b": 2, "y": 0},
        doc! {"$set": {"z": 1, "y": 5, "a": 1, "m": {"x": 1}}},
        doc! {"_id": 1, "b": 2, "y": 5, "a": 1, "m": {"x": 1}, "z": 1},
    );
}

#[test]
fn new_fields_from_several_operators_are_ordered_together() {
    assert_updates(
        doc! {"_id": 1},
        doc! {"$set": {"z": 1}, "$inc": {"a": 1}, "$push": {"m": 1}},
        doc! {"_id": 1, "a": 1, "m": [1], "z": 1},
    );
}

#[test]
fn set_to_an_identical_value_changes_nothing() {
    assert_unchanged(
        doc! {"_id": 1, "a": 1, "b": {"c": [1]}},
        doc! {"$set": {"a": 1, "b": {"c": [1]}}},
    );
    // A double is not the same bytes as an int.
    assert_updates(
        doc! {"_id": 1, "a": 1},
        doc! {"$set": {"a": 1.0}},
        doc! {"_id": 1, "a": 1.0},
    );
}

#[test]
fn dotted_path_creates_intermediate_documents() {
    assert_updates(
        doc! {"_id": 1},
        doc! {"$set": {"a.b.c": 1, "a.b.a": 2}},
        doc! {"_id": 1, "a": {"b": {"a": 2, "c": 1}}},
    );
    assert_updates(
        doc! {"_id": 1, "a": {"x": 1, "y": 2}},
        doc! {"$set": {"a.z": 3, "a.x": 5}},
        doc! {"_id": 1, "a": {"x": 5, "y": 2, "z": 3}},
    );
}

#[test]
fn numeric_component_indexes_an_existing_array() {
    assert_updates(
        doc! {"_id": 1, "a": [1, 2, 3]},
        doc! {"$set": {"a.1": 9}},
        doc! {"_id": 1, "a": [1, 9, 3]},
    );
    assert_updates(
        doc! {"_id": 1, "a": [{"b": 1}]},
        doc! {"$set": {"a.0.c": 2}},
        doc! {"_id": 1, "a": [{"b": 1, "c": 2}]},
    );
}

#[test]
fn set_past_the_end_of_an_array_pads_with_nulls() {
    assert_updates(
        doc! {"_id": 1, "a": [1]},
        doc! {"$set": {"a.3": 4}},
        doc! {"_id": 1, "a": [1, Bson::Null, Bson::Null, 4]},
    );
    assert_updates(
        doc! {"_id": 1, "a": []},
        doc! {"$set": {"a.1.b": 1}},
        doc! {"_id": 1, "a": [Bson::Null, {"b": 1}]},
    );
}

#[test]
fn numeric_component_of_a_new_path_is_a_field_name() {
    assert_updates(
        doc! {"_id": 1},
        doc! {"$set": {"a.0": 1}},
        doc! {"_id": 1, "a": {"0": 1}},
    );
}

#[test]
fn path_through_a_scalar_is_not_viable() {
    let cases = [
        (
            doc! {"_id": 1, "a": 1},
            "a.b",
            "Cannot create field 'b' in element {a: 1}",
        ),
        (
            doc! {"_id": 1, "a": Bson::Null},
            "a.b",
            "Cannot create field 'b' in element {a: null}",
        ),
        (
            doc! {"_id": 1, "a": [1, 2]},
            "a.b",
            "Cannot create field 'b' in element {a: [ 1, 2 ]}",
        ),
        (
            doc! {"_id": 1, "a": {"b": 5}},
            "a.b.c.d",
            "Cannot create field 'c' in element {b: 5}",
        ),
        (
            doc! {"_id": 1, "a": [7]},
            "a.0.x",
            "Cannot create field 'x' in element {0: 7}",
        ),
    ];
    for (d, path, message) in cases {
        assert_fails(
            d,
            doc! {"$set": {path: 1}},
            ErrorKind::PathNotViable,
            message,
        );
    }
}

#[test]
fn operators_reach_into_arrays_by_index() {
    assert_updates(
        doc! {"_id": 1, "a": [1, 2], "b": [{"x": 1, "y": 2}], "c": [{}]},
        doc! {"$inc": {"a.1": 5}, "$unset": {"b.0.x": 1}, "$push": {"c.0.l": 1}},
        doc! {"_id": 1, "a": [1, 7], "b": [{"y": 2}], "c": [{"l": [1]}]},
    );
}

#[test]
fn no_op_past_the_end_of_an_array_does_not_pad_it() {
    assert_unchanged(
        doc! {"_id": 1, "a": [1]},
        doc! {"$unset": {"a.5.b": 1}, "$pop": {"a.3": 1}},
    );
}

#[test]
fn huge_array_index_is_refused() {
    assert_fails(
        doc! {"_id": 1, "a": []},
        doc! {"$set": {"a.2000000": 1}},
        ErrorKind::CannotBackfillArray,
        "can't backfill more than 1500000 elements",
    );
}

#[test]
fn new_top_level_dollar_field_is_refused_but_nested_is_allowed() {
    assert_fails(
        doc! {"_id": 1},
        doc! {"$set": {"$x": 1}},
        ErrorKind::DollarPrefixedFieldName,
        "The dollar ($) prefixed field '$x' in '$x' is not allowed in the context of an update's \
         replacement document. Consider using an aggregation pipeline with $replaceWith.",
    );
    assert_updates(
        doc! {"_id": 1},
        doc! {"$set": {"a.$x": 1}},
        doc! {"_id": 1, "a": {"$x": 1}},
    );
}

// ---- _id ----

#[test]
fn id_can_be_set_to_its_own_value_but_not_changed() {
    assert_unchanged(doc! {"_id": 1, "a": 1}, doc! {"$set": {"_id": 1}});
    let message = "Performing an update on the path '_id' would modify the immutable field '_id'";
    assert_fails(
        doc! {"_id": 1},
        doc! {"$set": {"_id": 2}},
        ErrorKind::ImmutableField,
        message,
    );
    assert_fails(
        doc! {"_id": 1},
        doc! {"$set": {"_id": 1.0}},
        ErrorKind::ImmutableField,
        message,
    );
    assert_fails(
        doc! {"_id": 1},
        doc! {"$unset": {"_id": 1}},
        ErrorKind::ImmutableField,
        message,
    );
    assert_fails(
        doc! {"_id": 1},
        doc! {"$inc": {"_id": 1}},
        ErrorKind::ImmutableField,
        message,
    );
    assert_fails(
        doc! {"_id": {"a": 1}},
        doc! {"$set": {"_id.a": 2}},
        ErrorKind::ImmutableField,
        "Performing an update on the path '_id.a' would modify the immutable field '_id'",
    );
}

#[test]
fn adding_a_field_inside_id_is_refused() {
    assert_fails(
        doc! {"_id": {"a": 1}},
        doc! {"$set": {"_id.x": 1}},
        ErrorKind::ImmutableField,
        "Updating the path '_id' to _id: { a: 1, x: 1 } would modify the immutable field '_id'",
    );
}

#[test]
fn growing_a_nested_part_of_id_names_the_deepest_existing_part() {
    assert_fails(
        doc! {"_id": {"a": {}}},
        doc! {"$set": {"_id.a.b.c": 1}},
        ErrorKind::ImmutableField,
        "Updating the path '_id.a' to a: { b: { c: 1 } } would modify the immutable field '_id'",
    );
}

#[test]
fn id_stays_first() {
    assert_updates(
        doc! {"_id": 1, "a": 1},
        doc! {"$rename": {"a": "b"}, "$set": {"A": 0}},
        doc! {"_id": 1, "A": 0, "b": 1},
    );
}

// ---- $unset ----

#[test]
fn unset_removes_fields_and_ignores_missing_ones() {
    assert_updates(
        doc! {"_id": 1, "a": 1, "b": {"c": 1}, "d": 2},
        doc! {"$unset": {"a": "", "b.c": 1, "x": 1, "d.e": 1}},
        doc! {"_id": 1, "b": {}, "d": 2},
    );
    assert_unchanged(doc! {"_id": 1}, doc! {"$unset": {"a.b": 1}});
}

#[test]
fn unset_of_an_array_element_leaves_null() {
    assert_updates(
        doc! {"_id": 1, "a": [1, 2, 3]},
        doc! {"$unset": {"a.1": 1}},
        doc! {"_id": 1, "a": [1, Bson::Null, 3]},
    );
}

// ---- $inc and $mul ----

#[test]
fn inc_adds_and_creates() {
    assert_updates(
        doc! {"_id": 1, "a": 1, "b": 1.5},
        doc! {"$inc": {"a": 2, "b": 1, "c.d": 5_i64}},
        doc! {"_id": 1, "a": 3, "b": 2.5, "c": {"d": 5_i64}},
    );
}

#[test]
fn inc_promotes_int32_overflow_to_int64() {
    assert_updates(
        doc! {"_id": 1, "a": i32::MAX},
        doc! {"$inc": {"a": 1}},
        doc! {"_id": 1, "a": i64::from(i32::MAX) + 1},
    );
    assert_updates(
        doc! {"_id": 1, "a": 1},
        doc! {"$inc": {"a": 1_i64}},
        doc! {"_id": 1, "a": 2_i64},
    );
    assert_updates(
        doc! {"_id": 1, "a": 1_i64},
        doc! {"$inc": {"a": 0.5}},
        doc! {"_id": 1, "a": 1.5},
    );
}

#[test]
fn inc_of_int64_overflow_fails() {
    assert_fails(
        doc! {"_id": 1, "a": i64::MAX},
        doc! {"$inc": {"a": 1}},
        ErrorKind::BadValue,
        "Failed to apply $inc operations to current value ((NumberLong)9223372036854775807) for \
         document {_id: 1}",
    );
}

#[test]
fn inc_keeps_decimals_decimal() {
    let d = |s: &str| Bson::Decimal128(s.parse().unwrap());
    assert_updates(
        doc! {"_id": 1, "a": d("1.5")},
        doc! {"$inc": {"a": 1}},
        doc! {"_id": 1, "a": d("2.5")},
    );
    assert_updates(
        doc! {"_id": 1, "a": 1},
        doc! {"$inc": {"a": d("0.25")}},
        doc! {"_id": 1, "a": d("1.25")},
    );
}

#[test]
fn inc_by_zero_changes_nothing() {
    assert_unchanged(doc! {"_id": 1, "a": 5}, doc! {"$inc": {"a": 0}});
}

#[test]
fn inc_needs_numbers() {
    let err = parse(doc! {"$inc": {"a": "x"}}).unwrap_err();
    assert_eq!(err.kind, ErrorKind::TypeMismatch);
    assert_eq!(
        err.message,
        "Cannot increment with non-numeric argument: {a: \"x\"}"
    );
    assert_fails(
        doc! {"_id": 1, "a": "s"},
        doc! {"$inc": {"a": 1}},
        ErrorKind::TypeMismatch,
        "Cannot apply $inc to a value of non-numeric type. {_id: 1} has the field 'a' of non-numeric type string",
    );
}

#[test]
fn mul_multiplies_and_creates_zero_of_the_argument_type() {
    assert_updates(
        doc! {"_id": 1, "a": 3, "b": 2},
        doc! {"$mul": {"a": 4, "b": 0.5, "c": 2.5, "d": 3_i64, "e": -2.0}},
        doc! {"_id": 1, "a": 12, "b": 1.0, "c": 0.0, "d": 0_i64, "e": -0.0},
    );
    let err = parse(doc! {"$mul": {"a": "x"}}).unwrap_err();
    assert_eq!(
        err.message,
        "Cannot multiply with non-numeric argument: {a: \"x\"}"
    );
    assert_fails(
        doc! {"_id": 1, "a": [1]},
        doc! {"$mul": {"a": 2}},
        ErrorKind::TypeMismatch,
        "Cannot apply $mul to a value of non-numeric type. {_id: 1} has the field 'a' of non-numeric type array",
    );
}

// ---- $min, $max, $currentDate, $setOnInsert ----

#[test]
fn min_and_max_keep_the_winner() {
    assert_updates(
        doc! {"_id": 1, "lo": 5, "hi": 5, "s": 1},
        doc! {"$min": {"lo": 3, "new": 1}, "$max": {"hi": 7.5, "s": "str"}},
        doc! {"_id": 1, "lo": 3, "hi": 7.5, "s": "str", "new": 1},
    );
    assert_unchanged(doc! {"_id": 1, "a": 5}, doc! {"$min": {"a": 6}});
    assert_unchanged(doc! {"_id": 1, "a": 5}, doc! {"$max": {"a": 5.0}});
}

#[test]
fn current_date_sets_a_date_or_a_timestamp() {
    assert_updates(
        doc! {"_id": 1, "a": 1},
        doc! {"$currentDate": {"a": true, "b": {"$type": "date"}, "c": {"$type": "timestamp"}}},
        doc! {
            "_id": 1,
            "a": DateTime::from_millis(NOW_MS),
            "b": DateTime::from_millis(NOW_MS),
            "c": bson::Timestamp { time: (NOW_MS / 1000) as u32, increment: 1 },
        },
    );
}

#[test]
fn current_date_argument_is_checked() {
    let err = parse(doc! {"$currentDate": {"a": 1}}).unwrap_err();
    assert_eq!(err.kind, ErrorKind::BadValue);
    assert_eq!(
        err.message,
        "int is not valid type for $currentDate. Please use a boolean ('true') or a $type \
         expression ({$type: 'timestamp/date'})."
    );
    let err = parse(doc! {"$currentDate": {"a": {"$type": "x"}}}).unwrap_err();
    assert!(
        err.message
            .starts_with("The '$type' string field is required")
    );
}

#[test]
fn set_on_insert_only_applies_when_inserting() {
    assert_unchanged(doc! {"_id": 1}, doc! {"$setOnInsert": {"a": 1}});
    assert_unchanged(doc! {"_id": 1, "a": 1}, doc! {"$setOnInsert": {"a.b": 1}});
}

// ---- $rename ----

#[test]
fn rename_moves_a_value_to_the_end_or_onto_the_destination() {
    assert_updates(
        doc! {"_id": 1, "a": 1, "b": 2},
        doc! {"$rename": {"a": "c"}},
        doc! {"_id": 1, "b": 2, "c": 1},
    );
    assert_updates(
        doc! {"_id": 1, "a": 1, "b": 2, "c": 3},
        doc! {"$rename": {"a": "b"}},
        doc! {"_id": 1, "b": 1, "c": 3},
    );
    assert_updates(
        doc! {"_id": 1, "a": {"b": 1}},
        doc! {"$rename": {"a.b": "c.d"}},
        doc! {"_id": 1, "a": {}, "c": {"d": 1}},
    );
    assert_unchanged(doc! {"_id": 1, "b": 1}, doc! {"$rename": {"a": "b"}});
}

#[test]
fn rename_within_a_subdocument_appends_there() {
    assert_updates(
        doc! {"_id": 1, "a": {"b": 1, "d": 2}},
        doc! {"$rename": {"a.b": "a.c"}},
        doc! {"_id": 1, "a": {"d": 2, "c": 1}},
    );
}

#[test]
fn rename_arguments_are_checked() {
    let cases = [
        (
            doc! {"$rename": {"a": 1}},
            "The 'to' field for $rename must be a string: a: 1",
        ),
        (
            doc! {"$rename": {"a": "a"}},
            "The source and target field for $rename must differ: a: \"a\"",
        ),
        (
            doc! {"$rename": {"a": "a.b"}},
            "The source and target field for $rename must not be on the same path: a: \"a.b\"",
        ),
    ];
    for (u, message) in cases {
        let err = parse(u).unwrap_err();
        assert_eq!(
            (err.kind, err.message.as_str()),
            (ErrorKind::BadValue, message)
        );
    }
}

#[test]
fn rename_refuses_array_elements() {
    assert_fails(
        doc! {"_id": 1, "a": [{"b": 1}]},
        doc! {"$rename": {"a.0.b": "c"}},
        ErrorKind::BadValue,
        "The source field cannot be an array element, 'a.0.b' in doc with _id: 1 has an array field called 'a'",
    );
    assert_fails(
        doc! {"_id": 1, "x": 1, "a": [{}]},
        doc! {"$rename": {"x": "a.0.b"}},
        ErrorKind::BadValue,
        "The destination field cannot be an array element, 'a.0.b' in doc with _id: 1 has an array field called 'a'",
    );
}

#[test]
fn rename_cannot_touch_id() {
    assert_fails(
        doc! {"_id": 1},
        doc! {"$rename": {"_id": "x"}},
        ErrorKind::ImmutableField,
        "Unsetting the path '_id' using $rename would modify the immutable field '_id'",
    );
    assert_fails(
        doc! {"_id": 1, "x": 2},
        doc! {"$rename": {"x": "_id"}},
        ErrorKind::ImmutableField,
        "Performing an update on the path '_id' would modify the immutable field '_id'",
    );
}

// ---- array operators ----

#[test]
fn push_appends_and_creates() {
    assert_updates(
        doc! {"_id": 1, "a": [1]},
        doc! {"$push": {"a": 2, "b": {"x": 1}}},
        doc! {"_id": 1, "a": [1, 2], "b": [{"x": 1}]},
    );
    assert_fails(
        doc! {"_id": 1, "a": 1},
        doc! {"$push": {"a": 2}},
        ErrorKind::BadValue,
        "The field 'a' must be an array but is of type int in document {_id: 1}",
    );
}

#[test]
fn push_each_with_position_sort_and_slice() {
    assert_updates(
        doc! {"_id": 1, "a": [1, 4]},
        doc! {"$push": {"a": {"$each": [2, 3], "$position": 1}}},
        doc! {"_id": 1, "a": [1, 2, 3, 4]},
    );
    assert_updates(
        doc! {"_id": 1, "a": [1, 4]},
        doc! {"$push": {"a": {"$each": [9], "$position": -1}}},
        doc! {"_id": 1, "a": [1, 9, 4]},
    );
    assert_updates(
        doc! {"_id": 1, "a": [5, 1]},
        doc! {"$push": {"a": {"$each": [3], "$sort": -1, "$slice": 2}}},
        doc! {"_id": 1, "a": [5, 3]},
    );
    assert_updates(
        doc! {"_id": 1, "a": [{"s": 2}, {"s": 1}]},
        doc! {"$push": {"a": {"$each": [{"s": 3}], "$sort": {"s": 1}, "$slice": -2}}},
        doc! {"_id": 1, "a": [{"s": 2}, {"s": 3}]},
    );
    assert_unchanged(
        doc! {"_id": 1, "a": [1]},
        doc! {"$push": {"a": {"$each": []}}},
    );
    assert_updates(
        doc! {"_id": 1},
        doc! {"$push": {"a": {"$each": []}}},
        doc! {"_id": 1, "a": []},
    );
}

#[test]
fn push_clauses_are_checked() {
    let cases = [
        (
            doc! {"$push": {"a": {"$each": 1}}},
            "The argument to $each in $push must be an array but it was of type: int",
        ),
        (
            doc! {"$push": {"a": {"$each": [], "$bad": 1}}},
            "Unrecognized clause in $push: $bad",
        ),
        (
            doc! {"$push": {"a": {"$each": [], "$slice": "x"}}},
            "The value for $slice must be an integer value but was given type: string",
        ),
        (
            doc! {"$push": {"a": {"$each": [], "$sort": 2}}},
            "The $sort element value must be either 1 or -1",
        ),
    ];
    for (u, message) in cases {
        let err = parse(u).unwrap_err();
        assert_eq!(
            (err.kind, err.message.as_str()),
            (ErrorKind::BadValue, message)
        );
    }
}

#[test]
fn add_to_set_adds_only_missing_values() {
    assert_updates(
        doc! {"_id": 1, "a": [1, "x"]},
        doc! {"$addToSet": {"a": {"$each": [1.0, 2, 2, "x", 3]}, "b": 1}},
        doc! {"_id": 1, "a": [1, "x", 2, 3], "b": [1]},
    );
    assert_unchanged(doc! {"_id": 1, "a": [1, 2]}, doc! {"$addToSet": {"a": 2}});
    assert_fails(
        doc! {"_id": 1, "a": 1},
        doc! {"$addToSet": {"a": 2}},
        ErrorKind::BadValue,
        "Cannot apply $addToSet to non-array field. Field named 'a' has non-array type int",
    );
}

#[test]
fn pull_removes_matching_elements() {
    assert_updates(
        doc! {"_id": 1, "a": [1, 2, 1.0, 3], "b": [5, 6, 7], "c": [{"s": 8, "i": "B"}, {"s": 8, "i": "C"}]},
        doc! {"$pull": {"a": 1, "b": {"$gte": 6}, "c": {"s": 8, "i": "B"}}},
        doc! {"_id": 1, "a": [2, 3], "b": [5], "c": [{"s": 8, "i": "C"}]},
    );
    assert_unchanged(
        doc! {"_id": 1, "a": [1]},
        doc! {"$pull": {"a": 2, "missing": 1}},
    );
    assert_fails(
        doc! {"_id": 1, "a": 1},
        doc! {"$pull": {"a": 1}},
        ErrorKind::BadValue,
        "Cannot apply $pull to a non-array value",
    );
}

#[test]
fn pull_all_removes_every_listed_value() {
    assert_updates(
        doc! {"_id": 1, "a": [1, 2, 3, 1]},
        doc! {"$pullAll": {"a": [1, 3]}},
        doc! {"_id": 1, "a": [2]},
    );
}

#[test]
fn pop_removes_from_either_end() {
    assert_updates(
        doc! {"_id": 1, "a": [1, 2, 3], "b": [1, 2, 3]},
        doc! {"$pop": {"a": 1, "b": -1}},
        doc! {"_id": 1, "a": [1, 2], "b": [2, 3]},
    );
    assert_unchanged(doc! {"_id": 1, "a": []}, doc! {"$pop": {"a": 1, "b": 1}});
    assert_fails(
        doc! {"_id": 1, "a": 1},
        doc! {"$pop": {"a": 1}},
        ErrorKind::TypeMismatch,
        "Path 'a' contains an element of non-array type 'int'",
    );
    let err = parse(doc! {"$pop": {"a": 2}}).unwrap_err();
    assert_eq!(
        (err.kind, err.message.as_str()),
        (ErrorKind::FailedToParse, "$pop expects 1 or -1, found: 2")
    );
}

#[test]
fn array_operators_through_a_scalar_are_not_viable() {
    assert_fails(
        doc! {"_id": 1, "a": 1},
        doc! {"$pop": {"a.b": 1}},
        ErrorKind::PathNotViable,
        "Cannot use the part (b) of (a.b) to traverse the element ({a: 1})",
    );
    assert_fails(
        doc! {"_id": 1, "a": 1},
        doc! {"$push": {"a.b": 1}},
        ErrorKind::PathNotViable,
        "Cannot create field 'b' in element {a: 1}",
    );
}

#[test]
fn bit_applies_bitwise_operations() {
    assert_updates(
        doc! {"_id": 1, "a": 0b1100, "b": 1_i64},
        doc! {"$bit": {"a": {"and": 0b1010, "or": 1}, "b": {"xor": 3}, "c": {"or": 4}}},
        doc! {"_id": 1, "a": 0b1001, "b": 2_i64, "c": 4},
    );
}

// ---- replacement ----

#[test]
fn replacement_keeps_id_first_and_drops_other_fields() {
    assert_updates(
        doc! {"_id": 1, "a": 1, "b": 2},
        doc! {"c": 3},
        doc! {"_id": 1, "c": 3},
    );
    assert_updates(
        doc! {"_id": 1, "a": 1},
        doc! {"c": 3, "_id": 1},
        doc! {"_id": 1, "c": 3},
    );
    assert_updates(doc! {"_id": 1, "a": 1}, doc! {}, doc! {"_id": 1});
}

#[test]
fn identical_replacement_changes_nothing() {
    assert_unchanged(doc! {"_id": 1, "a": 1}, doc! {"_id": 1, "a": 1});
}

#[test]
fn replacement_cannot_change_id() {
    assert_fails(
        doc! {"_id": 1, "a": 1},
        doc! {"_id": 2, "a": 1},
        ErrorKind::ImmutableField,
        "After applying the update, the (immutable) field '_id' was found to have been altered to _id: 2",
    );
}

#[test]
fn replacement_refuses_top_level_dollar_fields() {
    assert_fails(
        doc! {"_id": 1},
        doc! {"a": 1, "$x": 2},
        ErrorKind::DollarPrefixedFieldName,
        "The dollar ($) prefixed field '$x' in '$x' is not allowed in the context of an update's \
         replacement document. Consider using an aggregation pipeline with $replaceWith.",
    );
}

#[test]
fn replacement_fills_empty_timestamps() {
    let zero = bson::Timestamp {
        time: 0,
        increment: 0,
    };
    assert_updates(
        doc! {"_id": 1},
        doc! {"t": zero, "n": {"t": zero}},
        doc! {"_id": 1, "t": bson::Timestamp { time: (NOW_MS / 1000) as u32, increment: 1 }, "n": {"t": zero}},
    );
}

// ---- upsert ----

#[test]
fn upsert_seeds_equality_fields_then_applies_operators() {
    let got = upsert(
        doc! {"a": 1, "b.c": 2, "$and": [{"d": 3}], "e": {"$gt": 1}},
        doc! {"$set": {"z": 0}, "$setOnInsert": {"f": 4}, "$inc": {"a": 1}},
    )
    .unwrap();
    assert_same(&got, &doc! {"a": 2, "b": {"c": 2}, "d": 3, "f": 4, "z": 0});
}

#[test]
fn upsert_puts_id_first() {
    let got = upsert(doc! {"x": 1, "_id": 5}, doc! {"$set": {"a": 1}}).unwrap();
    assert_same(&got, &doc! {"_id": 5, "x": 1, "a": 1});
    let got = upsert(doc! {"x": 1}, doc! {"$set": {"_id": 7}}).unwrap();
    assert_same(&got, &doc! {"_id": 7, "x": 1});
}

#[test]
fn upsert_cannot_change_the_query_id() {
    let err = upsert(doc! {"_id": 1}, doc! {"$set": {"_id": 2}}).unwrap_err();
    assert_eq!(err.kind, ErrorKind::ImmutableField);
    let err = upsert(doc! {"_id": 1}, doc! {"_id": 2, "a": 1}).unwrap_err();
    assert_eq!(err.kind, ErrorKind::ImmutableField);
}

#[test]
fn upsert_replacement_takes_only_the_query_id() {
    let got = upsert(doc! {"_id": 3, "a": 1}, doc! {"b": 2}).unwrap();
    assert_same(&got, &doc! {"_id": 3, "b": 2});
    let got = upsert(doc! {"a": 1}, doc! {"b": 2}).unwrap();
    assert_same(&got, &doc! {"b": 2});
    let got = upsert(doc! {"_id": 3}, doc! {"_id": 3}).unwrap();
    assert_same(&got, &doc! {"_id": 3});
}

#[test]
fn upsert_with_ambiguous_query_fails() {
    let err = upsert(doc! {"a": 1, "a.b": 1}, doc! {"$set": {"c": 1}}).unwrap_err();
    assert_eq!(err.kind, ErrorKind::NotSingleValueField);
}
