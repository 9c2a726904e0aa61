//! Pipeline-style updates. Expected results come from
//! jstests/core/write/update/update_with_pipeline.js (cited as "uwp.js")
//! and the "Updates with Aggregation Pipeline" manual page.

use bson::{Bson, Document, doc};

use super::support::*;
use crate::ErrorKind;

fn stages(list: Vec<Document>) -> Bson {
    Bson::Array(list.into_iter().map(Bson::Document).collect())
}

#[track_caller]
fn piped(d: Document, pipeline: Vec<Document>) -> Option<Document> {
    try_update_with(d, doc! {}, stages(pipeline), &[])
        .unwrap()
        .map(|got| Document::try_from(got.as_ref()).unwrap())
}

#[test]
fn set_project_unset_and_replace_with_rewrite_the_document() {
    // uwp.js, "Update with existing document".
    assert_eq!(
        piped(doc! {"_id": 1, "x": 1}, vec![doc! {"$set": {"foo": 4}}]),
        Some(doc! {"_id": 1, "x": 1, "foo": 4})
    );
    assert_eq!(
        piped(
            doc! {"_id": 1, "x": 1, "y": 1},
            vec![doc! {"$project": {"x": 1}}]
        ),
        Some(doc! {"_id": 1, "x": 1})
    );
    assert_eq!(
        piped(
            doc! {"_id": 1, "x": 1, "y": [{"z": 1, "foo": 1}]},
            vec![doc! {"$unset": ["x", "y.z"]}]
        ),
        Some(doc! {"_id": 1, "y": [{"foo": 1}]})
    );
    assert_eq!(
        piped(
            doc! {"_id": 1, "x": 1, "t": {"u": {"v": 1}}},
            vec![doc! {"$replaceWith": "$t"}]
        ),
        Some(doc! {"_id": 1, "u": {"v": 1}})
    );
    assert_eq!(
        piped(
            doc! {"_id": 1, "t": {"u": 2}},
            vec![doc! {"$replaceRoot": {"newRoot": {"w": "$t.u"}}}]
        ),
        Some(doc! {"_id": 1, "w": 2})
    );
    assert_eq!(
        piped(
            doc! {"_id": 1, "a": 1, "b": 2},
            vec![doc! {"$addFields": {"c": "$a"}}, doc! {"$unset": "a"}]
        ),
        Some(doc! {"_id": 1, "b": 2, "c": 1})
    );
}

#[test]
fn a_pipeline_that_changes_nothing_is_a_no_op() {
    assert_eq!(
        piped(doc! {"_id": 1, "x": 1}, vec![doc! {"$set": {"x": 1}}]),
        None
    );
    assert_eq!(piped(doc! {"_id": 1, "x": 1}, vec![]), None);
}

#[test]
fn id_may_not_change() {
    assert_eq!(
        failure(try_update_with(
            doc! {"_id": 1, "x": 1},
            doc! {},
            stages(vec![doc! {"$set": {"_id": 2}}]),
            &[]
        )),
        (
            ErrorKind::ImmutableField,
            "After applying the update, the (immutable) field '_id' was found to have been \
             altered to _id: 2"
                .to_owned()
        )
    );
}

#[test]
fn disallowed_stages_are_invalid_options() {
    // uwp.js: `$match`, `$sort`, `$facet`, `$lookup`... are refused with
    // InvalidOptions.
    for stage in [
        doc! {"$match": {"x": 1}},
        doc! {"$sort": {"x": 1}},
        doc! {"$facet": {"a": [{"$match": {"x": 1}}]}},
        doc! {"$lookup": {"from": "foo", "as": "as", "localField": "a", "foreignField": "b"}},
        doc! {"$group": {"_id": null}},
        doc! {"$limit": 1},
    ] {
        let name = stage.keys().next().unwrap().clone();
        assert_eq!(
            failure(parse_with(stages(vec![stage]), &[])),
            (
                ErrorKind::InvalidOptions,
                format!("{name} is not allowed to be used within an update")
            )
        );
    }
    assert_eq!(
        failure(parse_with(stages(vec![doc! {"$bogus": {}}]), &[])).0,
        ErrorKind::UnrecognizedPipelineStage
    );
    assert_eq!(
        failure(parse_with(stages(vec![doc! {"$match": 5}]), &[])).0,
        ErrorKind::StageSpecNotObject
    );
}

#[test]
fn pipeline_elements_must_be_documents() {
    assert_eq!(
        failure(parse_with(Bson::Array(vec![Bson::Int32(1)]), &[])),
        (
            ErrorKind::TypeMismatch,
            "Each element of the 'pipeline' array must be an object".to_owned()
        )
    );
}

#[test]
fn array_filters_are_refused_for_pipelines() {
    // uwp.js: "The 'arrayFilters' option is not valid for pipeline updates."
    assert_eq!(
        failure(parse_with(
            stages(vec![doc! {"$set": {"x": 1}}]),
            &[doc! {"x": {"$eq": 1}}]
        )),
        (
            ErrorKind::FailedToParse,
            "arrayFilters may not be specified for pipeline-style updates".to_owned()
        )
    );
}

#[test]
fn replace_root_needs_a_document() {
    let (kind, message) = failure(try_update_with(
        doc! {"_id": 1, "a": {"b": 10}},
        doc! {},
        stages(vec![doc! {"$replaceRoot": {"newRoot": "$a.b"}}]),
        &[],
    ));
    assert_eq!(kind, ErrorKind::ReplaceRootNotObject);
    assert!(
        message.starts_with(
            "'newRoot' expression  must evaluate to an object, but resulting value was: 10. \
             Type of resulting value: 'int'."
        ),
        "{message}"
    );
    let (kind, message) = failure(try_update_with(
        doc! {"_id": 1},
        doc! {},
        stages(vec![doc! {"$replaceWith": "$missing"}]),
        &[],
    ));
    assert_eq!(kind, ErrorKind::ReplaceRootNotObject);
    assert!(
        message.starts_with(
            "'replacement document'  must evaluate to an object, but resulting value was: MISSING."
        ),
        "{message}"
    );
    assert_eq!(
        failure(parse_with(stages(vec![doc! {"$replaceRoot": {}}]), &[])).0,
        ErrorKind::MissingField
    );
    assert_eq!(
        failure(parse_with(
            stages(vec![doc! {"$replaceRoot": {"newRoot": "$a", "x": 1}}]),
            &[]
        ))
        .0,
        ErrorKind::UnknownField
    );
    assert_eq!(
        failure(parse_with(stages(vec![doc! {"$replaceRoot": 1}]), &[])).0,
        ErrorKind::ReplaceRootSpecNotObject
    );
}

#[test]
fn upsert_runs_the_pipeline_on_the_query_equalities() {
    // uwp.js, "Upsert performs insert".
    let got = upsert_with(
        doc! {"_id": 1, "x": 1},
        stages(vec![doc! {"$set": {"foo": 4}}]),
        &[],
    )
    .unwrap();
    assert_same(&got, &doc! {"_id": 1, "x": 1, "foo": 4});
    let got = upsert_with(
        doc! {"_id": 1, "x": 1},
        stages(vec![doc! {"$project": {"x": 1}}]),
        &[],
    )
    .unwrap();
    assert_same(&got, &doc! {"_id": 1, "x": 1});
    let got = upsert_with(
        doc! {"_id": 1, "x": 1, "y": 1},
        stages(vec![doc! {"$unset": ["x"]}]),
        &[],
    )
    .unwrap();
    assert_same(&got, &doc! {"_id": 1, "y": 1});
    // A replacement without `_id` keeps the query's.
    let got = upsert_with(
        doc! {"_id": 1, "x": 1},
        stages(vec![doc! {"$replaceWith": {"z": "$x"}}]),
        &[],
    )
    .unwrap();
    assert_same(&got, &doc! {"_id": 1, "z": 1});
    assert_eq!(
        failure(upsert_with(
            doc! {"_id": 1},
            stages(vec![doc! {"$set": {"_id": 2}}]),
            &[]
        ))
        .0,
        ErrorKind::ImmutableField
    );
}
