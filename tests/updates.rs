//! The update language past the basic operators, end to end through the
//! Rust driver: `arrayFilters` with `$[<identifier>]`, the all-positional
//! `$[]`, the positional `$`, and pipeline-style updates, in `update` and
//! `findAndModify`, with MongoDB's errors. Each test names the manual page
//! or jstest its expected results come from.

use crate::common::{TestNode, all, expect_code};
use mongodb::bson::{Bson, Document, doc};
use mongodb::options::ReturnDocument;

#[tokio::test]
async fn identifier_updates_the_elements_its_filter_accepts() {
    // Manual, "$[<identifier>]": "Update All Array Elements That Match
    // arrayFilters" (students, `{element: {$gte: 100}}` set to 100).
    let node = TestNode::start();
    let c = node.coll("u", "students").await;
    c.insert_many(vec![
        doc! { "_id": 1, "grades": [95, 92, 90] },
        doc! { "_id": 2, "grades": [98, 100, 102] },
        doc! { "_id": 3, "grades": [95, 110, 100] },
    ])
    .await
    .unwrap();
    let r = c
        .update_many(doc! {}, doc! { "$set": { "grades.$[element]": 100 } })
        .array_filters(vec![doc! { "element": { "$gte": 100 } }])
        .await
        .unwrap();
    assert_eq!((r.matched_count, r.modified_count), (3, 2));
    assert_eq!(
        all(&c).await,
        vec![
            doc! { "_id": 1, "grades": [95, 92, 90] },
            doc! { "_id": 2, "grades": [98, 100, 100] },
            doc! { "_id": 3, "grades": [95, 100, 100] },
        ]
    );
}

#[tokio::test]
async fn identifier_reaches_fields_of_document_elements() {
    // Manual, "$[<identifier>]": "Update All Documents That Match
    // arrayFilters in an Array" (students2, `"grades.$[elem].mean"`).
    let node = TestNode::start();
    let c = node.coll("u", "students2").await;
    c.insert_many(vec![
        doc! { "_id": 1, "grades": [
            { "grade": 80, "mean": 75, "std": 6 },
            { "grade": 85, "mean": 90, "std": 4 },
            { "grade": 85, "mean": 85, "std": 6 },
        ] },
        doc! { "_id": 2, "grades": [
            { "grade": 90, "mean": 75, "std": 6 },
            { "grade": 87, "mean": 90, "std": 3 },
            { "grade": 85, "mean": 85, "std": 4 },
        ] },
    ])
    .await
    .unwrap();
    c.update_many(doc! {}, doc! { "$set": { "grades.$[elem].mean": 100 } })
        .array_filters(vec![doc! { "elem.grade": { "$gte": 85 } }])
        .await
        .unwrap();
    assert_eq!(
        all(&c).await,
        vec![
            doc! { "_id": 1, "grades": [
                { "grade": 80, "mean": 75, "std": 6 },
                { "grade": 85, "mean": 100, "std": 4 },
                { "grade": 85, "mean": 100, "std": 6 },
            ] },
            doc! { "_id": 2, "grades": [
                { "grade": 90, "mean": 100, "std": 6 },
                { "grade": 87, "mean": 100, "std": 3 },
                { "grade": 85, "mean": 100, "std": 4 },
            ] },
        ]
    );
}

#[tokio::test]
async fn nested_identifiers_update_nested_arrays() {
    // Manual, "$[<identifier>]": "Update Nested Arrays in Conjunction with
    // $[]" (students3, `"grades.$[t].questions.$[score]"`).
    let node = TestNode::start();
    let c = node.coll("u", "students3").await;
    c.insert_one(doc! { "_id": 1, "grades": [
        { "type": "quiz", "questions": [10, 8, 5] },
        { "type": "quiz", "questions": [8, 9, 6] },
        { "type": "hw", "questions": [5, 4, 3] },
        { "type": "exam", "questions": [25, 10, 23, 0] },
    ] })
    .await
    .unwrap();
    c.update_many(
        doc! {},
        doc! { "$inc": { "grades.$[t].questions.$[score]": 2 } },
    )
    .array_filters(vec![
        doc! { "t.type": "quiz" },
        doc! { "score": { "$gte": 8 } },
    ])
    .await
    .unwrap();
    assert_eq!(
        all(&c).await,
        vec![doc! { "_id": 1, "grades": [
            { "type": "quiz", "questions": [12, 10, 5] },
            { "type": "quiz", "questions": [10, 11, 6] },
            { "type": "hw", "questions": [5, 4, 3] },
            { "type": "exam", "questions": [25, 10, 23, 0] },
        ] }]
    );
    // The same page: `$[]` over every element, then `$[score]` inside.
    c.update_many(
        doc! {},
        doc! { "$inc": { "grades.$[].questions.$[score]": 2 } },
    )
    .array_filters(vec![doc! { "score": { "$gte": 8 } }])
    .await
    .unwrap();
    assert_eq!(
        all(&c).await,
        vec![doc! { "_id": 1, "grades": [
            { "type": "quiz", "questions": [14, 12, 5] },
            { "type": "quiz", "questions": [12, 13, 6] },
            { "type": "hw", "questions": [5, 4, 3] },
            { "type": "exam", "questions": [27, 12, 25, 0] },
        ] }]
    );
}

#[tokio::test]
async fn all_positional_increments_every_element() {
    // Manual, "$[]": "Update All Elements in an Array" and "Update All
    // Documents in an Array" (`$inc: {"grades.$[]": 10}`,
    // `$inc: {"grades.$[].std": -2}`).
    let node = TestNode::start();
    let c = node.coll("u", "all").await;
    c.insert_many(vec![
        doc! { "_id": 1, "grades": [85, 82, 80] },
        doc! { "_id": 2, "grades": [88, 90, 92] },
        doc! { "_id": 3, "grades": [85, 100, 90] },
    ])
    .await
    .unwrap();
    let r = c
        .update_many(doc! {}, doc! { "$inc": { "grades.$[]": 10 } })
        .await
        .unwrap();
    assert_eq!(r.modified_count, 3);
    assert_eq!(
        all(&c).await,
        vec![
            doc! { "_id": 1, "grades": [95, 92, 90] },
            doc! { "_id": 2, "grades": [98, 100, 102] },
            doc! { "_id": 3, "grades": [95, 110, 100] },
        ]
    );
    let d = node.coll("u", "all2").await;
    d.insert_one(doc! { "_id": 1, "grades": [
        { "grade": 80, "mean": 75, "std": 8 },
        { "grade": 85, "mean": 90, "std": 6 },
    ] })
    .await
    .unwrap();
    d.update_many(doc! {}, doc! { "$inc": { "grades.$[].std": -2 } })
        .await
        .unwrap();
    assert_eq!(
        all(&d).await,
        vec![doc! { "_id": 1, "grades": [
            { "grade": 80, "mean": 75, "std": 6 },
            { "grade": 85, "mean": 90, "std": 4 },
        ] }]
    );
}

#[tokio::test]
async fn positional_updates_the_element_the_query_matched() {
    // Manual, "$ (update)": "Update Values in an Array"
    // (`{_id: 1, grades: 80}`, `$set: {"grades.$": 82}`), "Update
    // Documents in an Array" (`"grades.$.std"`), and `$push`/`$unset`
    // through `$`.
    let node = TestNode::start();
    let c = node.coll("u", "positional").await;
    c.insert_many(vec![
        doc! { "_id": 1, "grades": [85, 80, 80] },
        doc! { "_id": 4, "grades": [
            { "grade": 80, "mean": 75, "std": 8 },
            { "grade": 85, "mean": 90, "std": 5 },
            { "grade": 85, "mean": 85, "std": 8 },
        ] },
        doc! { "_id": 5, "lists": [{ "k": "a", "v": [1] }, { "k": "b", "v": [2] }] },
    ])
    .await
    .unwrap();
    c.update_one(
        doc! { "_id": 1, "grades": 80 },
        doc! { "$set": { "grades.$": 82 } },
    )
    .await
    .unwrap();
    c.update_one(
        doc! { "_id": 4, "grades.grade": 85 },
        doc! { "$inc": { "grades.$.std": 1 } },
    )
    .await
    .unwrap();
    c.update_one(
        doc! { "_id": 5, "lists.k": "b" },
        doc! { "$push": { "lists.$.v": 3 } },
    )
    .await
    .unwrap();
    c.update_one(
        doc! { "_id": 1, "grades": 85 },
        doc! { "$unset": { "grades.$": "" } },
    )
    .await
    .unwrap();
    assert_eq!(
        all(&c).await,
        vec![
            doc! { "_id": 1, "grades": [Bson::Null, 82, 80] },
            doc! { "_id": 4, "grades": [
                { "grade": 80, "mean": 75, "std": 8 },
                { "grade": 85, "mean": 90, "std": 6 },
                { "grade": 85, "mean": 85, "std": 8 },
            ] },
            doc! { "_id": 5, "lists": [{ "k": "a", "v": [1] }, { "k": "b", "v": [2, 3] }] },
        ]
    );
    // updatel.js: without an array match from the query, `$` is an error
    // and nothing changes.
    let msg = expect_code(
        c.update_one(doc! { "_id": 1 }, doc! { "$set": { "grades.$": 0 } })
            .await,
        2,
    );
    assert_eq!(
        msg,
        "The positional operator did not find the match needed from the query."
    );
    expect_code(
        c.update_one(doc! { "grades": 7 }, doc! { "$set": { "grades.$": 0 } })
            .upsert(true)
            .await,
        2,
    );
    assert_eq!(c.count_documents(doc! {}).await.unwrap(), 3);
}

#[tokio::test]
async fn find_one_and_update_takes_array_filters_and_positional() {
    // jstests/core/write/update/update_arrayFilters.js, "Tests for
    // findAndModify", and find_and_modify_server6588.js (`"a.$.b"`).
    let node = TestNode::start();
    let c = node.coll("u", "fam").await;
    c.insert_many(vec![
        doc! { "_id": 0, "a": [0, 1, 0, 1] },
        doc! { "_id": 1, "a": [{ "b": 1 }], "z": 1 },
    ])
    .await
    .unwrap();
    let after = c
        .find_one_and_update(doc! { "_id": 0 }, doc! { "$set": { "a.$[i]": 5 } })
        .array_filters(vec![doc! { "i": 0 }])
        .return_document(ReturnDocument::After)
        .await
        .unwrap();
    assert_eq!(after, Some(doc! { "_id": 0, "a": [5, 1, 5, 1] }));
    let before = c
        .find_one_and_update(doc! { "z": 1, "a.b": 1 }, doc! { "$set": { "a.$.b": 2 } })
        .await
        .unwrap();
    assert_eq!(before, Some(doc! { "_id": 1, "a": [{ "b": 1 }], "z": 1 }));
    assert_eq!(
        c.find_one(doc! { "_id": 1 }).await.unwrap(),
        Some(doc! { "_id": 1, "a": [{ "b": 2 }], "z": 1 })
    );
    // "arrayFilters option not allowed with remove=true".
    let db = node.db("u").await;
    let msg = expect_code(
        db.run_command(doc! {
            "findAndModify": "fam", "query": { "_id": 0 }, "remove": true,
            "arrayFilters": [{ "i": 0 }],
        })
        .await,
        9,
    );
    assert_eq!(msg, "Cannot specify arrayFilters and remove=true");
    let msg = expect_code(
        c.find_one_and_update(doc! { "_id": 0 }, doc! { "$set": { "a.$[i]": 5 } })
            .array_filters(vec![doc! { "i": 0 }, doc! { "j": 0 }])
            .await,
        9,
    );
    assert!(
        msg.contains(
            "The array filter for identifier 'j' was not used in the update { $set: { a.$[i]: 5 } }"
        ),
        "{msg}"
    );
    assert_eq!(
        c.find_one(doc! { "_id": 0 }).await.unwrap(),
        Some(doc! { "_id": 0, "a": [5, 1, 5, 1] })
    );
}

#[tokio::test]
async fn array_filter_errors_match_mongod() {
    // jstests/core/write/update/update_arrayFilters.js, "Tests for update"
    // and "Error cases".
    let node = TestNode::start();
    let c = node.coll("u", "errors").await;
    let original = doc! { "_id": 0, "a": [0, 1], "s": 5 };
    c.insert_one(original.clone()).await.unwrap();
    let set_a = || doc! { "$set": { "a.$[i]": 5 } };

    let msg = expect_code(
        c.update_one(doc! { "_id": 0 }, set_a())
            .array_filters(vec![doc! { "i": 0 }, doc! { "j": 0 }])
            .await,
        9,
    );
    assert_eq!(
        msg,
        "The array filter for identifier 'j' was not used in the update { $set: { a.$[i]: 5 } }"
    );
    let msg = expect_code(
        c.update_one(doc! { "_id": 0 }, doc! { "$set": { "a.$[i]": 0 } })
            .await,
        2,
    );
    assert_eq!(
        msg,
        "No array filter found for identifier 'i' in path 'a.$[i]'"
    );
    let msg = expect_code(
        c.update_one(doc! { "_id": 0 }, doc! { "$set": { "a.$[I]": 1 } })
            .array_filters(vec![doc! { "I": 0 }])
            .await,
        2,
    );
    assert!(msg.starts_with("Error parsing array filter"), "{msg}");
    assert!(
        msg.ends_with(
            "The top-level field name must be an alphanumeric string beginning with a \
             lowercase letter, found 'I'"
        ),
        "{msg}"
    );
    let msg = expect_code(
        c.update_one(
            doc! { "_id": 0 },
            doc! { "$set": { "a.$[i]": 5, "a.$[j]": 6 } },
        )
        .array_filters(vec![doc! { "i": 0 }, doc! { "j": 0 }, doc! { "i": 1 }])
        .await,
        9,
    );
    assert_eq!(
        msg,
        "Found multiple array filters with the same top-level field name i"
    );
    let msg = expect_code(
        c.update_one(doc! { "_id": 0 }, set_a())
            .array_filters(vec![doc! { "i": 0, "j": 0 }])
            .await,
        9,
    );
    assert!(
        msg.contains("Expected a single top-level field name, found 'i' and 'j'"),
        "{msg}"
    );
    let msg = expect_code(
        c.update_one(doc! { "_id": 0 }, doc! { "$set": { "s.$[]": 1 } })
            .await,
        2,
    );
    assert_eq!(msg, "Cannot apply array updates to non-array element s: 5");
    let msg = expect_code(
        c.update_one(doc! { "_id": 0 }, doc! { "$set": { "b.$[]": 1 } })
            .await,
        2,
    );
    assert_eq!(
        msg,
        "The path 'b' must exist in the document in order to apply array updates."
    );
    let msg = expect_code(
        c.update_one(
            doc! { "_id": 0 },
            doc! { "$set": { "a.$[i]": 0, "a.0": 0 } },
        )
        .array_filters(vec![doc! { "i": 0 }])
        .await,
        40,
    );
    assert_eq!(
        msg,
        "Updating the path 'a.0' would create a conflict at 'a'"
    );
    let msg = expect_code(
        c.update_one(
            doc! { "_id": 0 },
            doc! { "$set": { "a.$[i]": 2, "a.$[j]": 3 } },
        )
        .array_filters(vec![doc! { "i": 0 }, doc! { "j": 0 }])
        .await,
        40,
    );
    assert_eq!(msg, "Update created a conflict at 'a.0'");
    // Nothing above changed the document.
    assert_eq!(all(&c).await, vec![original]);

    // `$[]` in an upsert's insert needs the array in the query.
    let msg = expect_code(
        c.update_one(doc! { "_id": 9 }, doc! { "$set": { "x.$[]": 1 } })
            .upsert(true)
            .await,
        2,
    );
    assert_eq!(
        msg,
        "The path 'x' must exist in the document in order to apply array updates."
    );
    // af.js, "$setOnInsert": with the array in the query it works.
    c.update_one(
        doc! { "_id": 9, "x": [0] },
        doc! { "$setOnInsert": { "x.$[i]": 1 } },
    )
    .upsert(true)
    .array_filters(vec![doc! { "i": 0 }])
    .await
    .unwrap();
    assert_eq!(
        c.find_one(doc! { "_id": 9 }).await.unwrap(),
        Some(doc! { "_id": 9, "x": [1] })
    );
    // A malformed arrayFilters argument fails the command.
    let db = node.db("u").await;
    expect_code(
        db.run_command(doc! {
            "update": "errors",
            "updates": [{ "q": {}, "u": { "$set": { "a.$[i]": 5 } }, "arrayFilters": { "i": 0 } }],
        })
        .await,
        14,
    );
}

#[tokio::test]
async fn pipeline_updates_rewrite_documents() {
    // jstests/core/write/update/update_with_pipeline.js, "Update with
    // existing document" and "Multi-update"; the "Updates with
    // Aggregation Pipeline" manual page (`$set` of a field path, `$unset`).
    let node = TestNode::start();
    let c = node.coll("u", "pipeline").await;
    c.insert_many(vec![
        doc! { "_id": 1, "x": 1, "y": 1, "t": { "u": { "v": 1 } }, "misc1": "a" },
        doc! { "_id": 2, "x": 1, "misc1": "b" },
    ])
    .await
    .unwrap();
    let r = c
        .update_many(
            doc! { "x": 1 },
            vec![
                doc! { "$set": { "status": "Modified", "comment": "$misc1" } },
                doc! { "$unset": ["misc1"] },
            ],
        )
        .await
        .unwrap();
    assert_eq!((r.matched_count, r.modified_count), (2, 2));
    assert_eq!(
        all(&c).await,
        vec![
            doc! { "_id": 1, "x": 1, "y": 1, "t": { "u": { "v": 1 } }, "status": "Modified", "comment": "a" },
            doc! { "_id": 2, "x": 1, "status": "Modified", "comment": "b" },
        ]
    );
    c.update_one(doc! { "_id": 1 }, vec![doc! { "$replaceWith": "$t" }])
        .await
        .unwrap();
    c.update_one(doc! { "_id": 2 }, vec![doc! { "$project": { "x": 1 } }])
        .await
        .unwrap();
    assert_eq!(
        all(&c).await,
        vec![
            doc! { "_id": 1, "u": { "v": 1 } },
            doc! { "_id": 2, "x": 1 },
        ]
    );
    // A pipeline that changes nothing modifies nothing.
    let r = c
        .update_one(doc! { "_id": 2 }, vec![doc! { "$set": { "x": 1 } }])
        .await
        .unwrap();
    assert_eq!((r.matched_count, r.modified_count), (1, 0));
    // update_pipeline_shell_helpers.js: findAndModify with a pipeline
    // returns the post-image with `new: true`.
    let after = c
        .find_one_and_update(
            doc! { "_id": 2 },
            vec![doc! { "$set": { "findAndModify": true } }],
        )
        .return_document(ReturnDocument::After)
        .await
        .unwrap();
    assert_eq!(
        after,
        Some(doc! { "_id": 2, "x": 1, "findAndModify": true })
    );
}

#[tokio::test]
async fn pipeline_upsert_builds_on_the_query_equalities() {
    // jstests/core/write/update/update_with_pipeline.js, "Upsert performs
    // insert".
    let node = TestNode::start();
    let c = node.coll("u", "pipeline_upsert").await;
    let r = c
        .update_one(
            doc! { "_id": 1, "x": 1 },
            vec![doc! { "$set": { "foo": 4 } }],
        )
        .upsert(true)
        .await
        .unwrap();
    assert_eq!(r.upserted_id, Some(Bson::Int32(1)));
    c.update_one(
        doc! { "_id": 2, "x": 1, "y": 1 },
        vec![doc! { "$unset": ["x"] }],
    )
    .upsert(true)
    .await
    .unwrap();
    let new = c
        .find_one_and_update(
            doc! { "_id": 3, "x": 1 },
            vec![doc! { "$project": { "x": 1 } }],
        )
        .upsert(true)
        .return_document(ReturnDocument::After)
        .await
        .unwrap();
    assert_eq!(new, Some(doc! { "_id": 3, "x": 1 }));
    assert_eq!(
        all(&c).await,
        vec![
            doc! { "_id": 1, "x": 1, "foo": 4 },
            doc! { "_id": 2, "y": 1 },
            doc! { "_id": 3, "x": 1 },
        ]
    );
}

/// A pipeline update runs on the documents its filter matches and on
/// nothing else: with no match it answers `n: 0, nModified: 0`, however
/// its expressions would fare on an empty document; with `upsert` and no
/// match it runs on the seed the filter's equalities build.
#[tokio::test]
async fn pipeline_update_without_a_match_evaluates_nothing() {
    let node = TestNode::start();
    let db = node.db("u").await;
    let c = db.collection::<Document>("pipeline_nomatch");
    c.insert_one(doc! { "_id": 1, "k": "text" }).await.unwrap();
    let add = vec![doc! { "$set": { "x": { "$add": ["$missing", 1] } } }];
    // A pipeline that would fail on the one document there is, if run.
    let fails_on_k = vec![doc! { "$set": { "x": { "$add": ["$k", 1] } } }];
    for (coll, u) in [
        ("pipeline_nomatch", add.clone()),
        ("pipeline_nomatch", fails_on_k.clone()),
        ("pipeline_absent", add.clone()),
    ] {
        for multi in [false, true] {
            let r = db
                .run_command(doc! {
                    "update": coll,
                    "updates": [{ "q": { "_id": 99 }, "u": u.clone(), "multi": multi }],
                })
                .await
                .unwrap();
            assert_eq!(r.get_i32("n").unwrap(), 0, "{coll} {u:?}: {r:?}");
            assert_eq!(r.get_i32("nModified").unwrap(), 0, "{coll} {u:?}: {r:?}");
            assert!(!r.contains_key("writeErrors"), "{coll} {u:?}: {r:?}");
        }
    }
    let r = c
        .update_many(doc! { "_id": 99 }, add.clone())
        .await
        .unwrap();
    assert_eq!((r.matched_count, r.modified_count), (0, 0));
    assert_eq!(all(&c).await, vec![doc! { "_id": 1, "k": "text" }]);

    // With upsert, the pipeline runs on the seed document.
    let r = c
        .update_one(
            doc! { "_id": 5, "n": 2 },
            vec![doc! { "$set": { "m": { "$add": ["$n", 1] }, "x": { "$add": ["$missing", 1] } } }],
        )
        .upsert(true)
        .await
        .unwrap();
    assert_eq!(r.upserted_id, Some(Bson::Int32(5)));
    assert_eq!(
        c.find_one(doc! { "_id": 5 }).await.unwrap(),
        Some(doc! { "_id": 5, "n": 2, "m": 3, "x": Bson::Null })
    );
}

#[tokio::test]
async fn pipeline_update_errors_match_mongod() {
    // jstests/core/write/update/update_with_pipeline.js: disallowed stages
    // are InvalidOptions (72), arrayFilters are FailedToParse (9); `_id` is
    // immutable (66) as in any replacement; constants on a non-pipeline
    // update are 51198.
    let node = TestNode::start();
    let c = node.coll("u", "pipeline_errors").await;
    let original = doc! { "_id": 1, "x": 1, "z": 1 };
    c.insert_one(original.clone()).await.unwrap();
    for stage in [
        doc! { "$match": { "x": 1 } },
        doc! { "$sort": { "x": 1 } },
        doc! { "$lookup": { "from": "foo", "as": "as", "localField": "a", "foreignField": "b" } },
        doc! { "$group": { "_id": "$x" } },
    ] {
        let name = stage.keys().next().unwrap().clone();
        let msg = expect_code(c.update_one(doc! { "x": 1 }, vec![stage]).await, 72);
        assert_eq!(
            msg,
            format!("{name} is not allowed to be used within an update")
        );
    }
    let msg = expect_code(
        c.update_one(doc! { "_id": 1 }, vec![doc! { "$set": { "x": 2 } }])
            .array_filters(vec![doc! { "x": { "$eq": 1 } }])
            .await,
        9,
    );
    assert_eq!(
        msg,
        "arrayFilters may not be specified for pipeline-style updates"
    );
    let msg = expect_code(
        c.update_one(doc! { "_id": 1 }, vec![doc! { "$set": { "_id": 2 } }])
            .await,
        66,
    );
    assert_eq!(
        msg,
        "After applying the update, the (immutable) field '_id' was found to have been \
         altered to _id: 2"
    );
    expect_code(
        c.update_one(
            doc! { "_id": 1 },
            vec![doc! { "$replaceWith": { "_id": 5, "x": 2 } }],
        )
        .await,
        66,
    );
    let msg = expect_code(
        c.update_one(doc! { "_id": 1 }, vec![doc! { "$replaceWith": "$x" }])
            .await,
        40228,
    );
    assert!(
        msg.starts_with(
            "'replacement document'  must evaluate to an object, but resulting value was: 1."
        ),
        "{msg}"
    );
    let db = node.db("u").await;
    let r = db
        .run_command(doc! {
            "update": "pipeline_errors",
            "updates": [{ "q": { "_id": 1 }, "u": { "$set": { "x": "1" } }, "c": {} }],
        })
        .await
        .unwrap();
    let errors = r.get_array("writeErrors").unwrap();
    assert_eq!(
        errors[0].as_document().unwrap().get_i32("code").unwrap(),
        51198
    );
    // Nothing above changed the document, and no upsert happened.
    assert_eq!(all(&c).await, vec![original]);
}

/// The manual's "Updates with Aggregation Pipeline" examples use
/// expressions: a computed total, `$$NOW` for a timestamp, and a
/// command-level `let` variable (jstests/core/command_let_variables.js
/// runs `let` through pipeline updates).
#[tokio::test]
async fn pipeline_updates_evaluate_expressions_now_and_let() {
    let node = TestNode::start();
    let db = node.db("t").await;
    let c = db.collection::<Document>("pe");
    c.insert_many(vec![
        doc! { "_id": 1, "a": 2, "b": 3 },
        doc! { "_id": 2, "a": 10, "b": -4 },
    ])
    .await
    .unwrap();
    let before = mongodb::bson::DateTime::now();
    db.run_command(doc! { "update": "pe", "updates": [{
        "q": {},
        "u": [
            { "$set": { "total": { "$add": ["$a", "$b"] }, "at": "$$NOW" } },
            { "$set": { "scaled": { "$multiply": ["$total", "$$factor"] } } },
            { "$unset": "b" },
        ],
        "multi": true,
    }], "let": { "factor": 10 } })
        .await
        .unwrap();
    let docs = all(&c).await;
    assert_eq!(docs[0].get_i32("total").unwrap(), 5);
    assert_eq!(docs[0].get_i32("scaled").unwrap(), 50);
    assert_eq!(docs[1].get_i32("total").unwrap(), 6);
    assert!(docs[1].get("b").is_none());
    let at = docs[0].get_datetime("at").unwrap();
    assert!(*at >= before, "{at} before {before}");
    // One $$NOW per command: both documents got the same instant.
    assert_eq!(docs[0].get("at"), docs[1].get("at"));
}

/// The manual's `$setField` / `$getField` / `$unsetField` pages: field
/// names with dots or a leading `$` are reachable only through them, in a
/// pipeline-style update as in aggregation ("Add Fields that Contain
/// Periods", "Query a Field that Starts with $", "Remove Fields that
/// Contain Periods").
#[tokio::test]
async fn set_get_and_unset_field_reach_dotted_and_dollar_names() {
    let node = TestNode::start();
    let db = node.db("t").await;
    let c = db.collection::<Document>("inventory");
    db.run_command(doc! { "insert": "inventory", "documents": [
        { "_id": 1, "item": "sweatshirt", "$price": 45.99, "price.usd": 45.99 },
    ] })
    .await
    .unwrap();
    db.run_command(doc! { "update": "inventory", "updates": [{
        "q": { "_id": 1 },
        "u": [
            { "$replaceWith": { "$setField": { "field": "price.eur", "input": "$$ROOT",
                "value": { "$getField": { "$literal": "$price" } } } } },
            { "$replaceWith": { "$unsetField": { "field": "price.usd", "input": "$$ROOT" } } },
        ],
    }] })
    .await
    .unwrap();
    let doc = all(&c).await.remove(0);
    assert_eq!(doc.get_f64("price.eur").unwrap(), 45.99);
    assert!(doc.get("price.usd").is_none());
    assert_eq!(doc.get_f64("$price").unwrap(), 45.99);
}
