//! Pipeline tests on documents in memory (no storage).

use bson::{Bson, Document, RawDocumentBuf, doc, rawdoc};

use super::{Pipeline, parse_stage};
use crate::error::ErrorKind;

fn run(stages: Vec<RawDocumentBuf>, docs: Vec<RawDocumentBuf>) -> Vec<Document> {
    let stages = stages.iter().map(|s| parse_stage(s).unwrap()).collect();
    let mut p = Pipeline::new(stages);
    for d in docs {
        p.push(d).unwrap();
    }
    p.finish()
        .unwrap()
        .iter()
        .map(|d| Document::try_from(d.as_ref()).unwrap())
        .collect()
}

#[test]
fn count_documents_shape_counts_matches() {
    let docs = (0..10).map(|i| rawdoc! { "a": i }).collect();
    let out = run(
        vec![
            rawdoc! { "$match": { "a": { "$gte": 3 } } },
            rawdoc! { "$skip": 1 },
            rawdoc! { "$limit": 4 },
            rawdoc! { "$group": { "_id": 1, "n": { "$sum": 1 } } },
        ],
        docs,
    );
    assert_eq!(out, vec![doc! { "_id": 1, "n": 4 }]);
}

#[test]
fn group_by_field_with_accumulators() {
    let docs = vec![
        rawdoc! { "k": "x", "v": 1 },
        rawdoc! { "k": "y", "v": 5 },
        rawdoc! { "k": "x", "v": 2.5 },
    ];
    let out = run(
        vec![
            rawdoc! { "$group": { "_id": "$k", "s": { "$sum": "$v" }, "m": { "$max": "$v" }, "a": { "$avg": "$v" }, "all": { "$push": "$v" } } },
            rawdoc! { "$sort": { "_id": 1 } },
        ],
        docs,
    );
    assert_eq!(
        out[0],
        doc! { "_id": "x", "s": 3.5, "m": 2.5, "a": 1.75, "all": [1, 2.5] }
    );
    assert_eq!(
        out[1],
        doc! { "_id": "y", "s": 5, "m": 5, "a": 5.0, "all": [5] }
    );
}

#[test]
fn empty_input_counts_nothing() {
    assert!(run(vec![rawdoc! { "$count": "n" }], vec![]).is_empty());
}

#[test]
fn unwind_emits_one_document_per_element() {
    let out = run(
        vec![rawdoc! { "$unwind": "$t" }],
        vec![
            rawdoc! { "_id": 1, "t": ["a", "b"] },
            rawdoc! { "_id": 2, "t": [] },
        ],
    );
    assert_eq!(
        out,
        vec![doc! { "_id": 1, "t": "a" }, doc! { "_id": 1, "t": "b" }]
    );
}

/// `$unwind` of a dotted path reaches through embedded documents (an
/// array on the way ends it), keeps the rest of each document, and sets a
/// dotted `includeArrayIndex`.
#[test]
fn unwind_of_a_dotted_path() {
    let docs = vec![
        rawdoc! { "_id": 1, "a": { "b": [1, 2], "c": 0 }, "z": 1 },
        rawdoc! { "_id": 2, "a": { "b": [] } },
        rawdoc! { "_id": 3, "a": [{ "b": [5] }] },
        rawdoc! { "_id": 4, "a": { "b": 7 } },
    ];
    let out = run(vec![rawdoc! { "$unwind": "$a.b" }], docs.clone());
    assert_eq!(
        out,
        vec![
            doc! { "_id": 1, "a": { "b": 1, "c": 0 }, "z": 1 },
            doc! { "_id": 1, "a": { "b": 2, "c": 0 }, "z": 1 },
            doc! { "_id": 4, "a": { "b": 7 } },
        ]
    );
    let spec = rawdoc! { "$unwind": { "path": "$a.b", "includeArrayIndex": "at.i", "preserveNullAndEmptyArrays": true } };
    let out = run(vec![spec], docs);
    assert_eq!(
        out,
        vec![
            doc! { "_id": 1, "a": { "b": 1, "c": 0 }, "z": 1, "at": { "i": 0_i64 } },
            doc! { "_id": 1, "a": { "b": 2, "c": 0 }, "z": 1, "at": { "i": 1_i64 } },
            doc! { "_id": 2, "a": {}, "at": { "i": null } },
            doc! { "_id": 3, "a": [{ "b": [5] }], "at": { "i": null } },
            doc! { "_id": 4, "a": { "b": 7 }, "at": { "i": null } },
        ]
    );
    // An index field that exists is replaced, not added twice.
    let out = run(
        vec![rawdoc! { "$unwind": { "path": "$t", "includeArrayIndex": "n" } }],
        vec![rawdoc! { "n": "old", "t": ["x"] }],
    );
    assert_eq!(out, vec![doc! { "n": 0_i64, "t": "x" }]);
}

/// mongod's codes for `$unwind` options it refuses.
#[test]
fn unwind_options_are_checked() {
    for (spec, kind) in [
        (rawdoc! { "path": 1 }, ErrorKind::UnwindPathType),
        (
            rawdoc! { "path": "$a", "preserveNullAndEmptyArrays": 1 },
            ErrorKind::UnwindPreserveType,
        ),
        (
            rawdoc! { "path": "$a", "includeArrayIndex": "" },
            ErrorKind::UnwindIndexType,
        ),
        (
            rawdoc! { "path": "$a", "includeArrayIndex": 3 },
            ErrorKind::UnwindIndexType,
        ),
        (
            rawdoc! { "path": "$a", "includeArrayIndex": "$i" },
            ErrorKind::UnwindIndexWithDollar,
        ),
        (
            rawdoc! { "path": "$a", "frobnicate": true },
            ErrorKind::UnwindUnknownOption,
        ),
        (
            rawdoc! { "preserveNullAndEmptyArrays": true },
            ErrorKind::UnwindWithoutPath,
        ),
        (rawdoc! { "path": "a" }, ErrorKind::UnwindPathWithoutDollar),
    ] {
        let err = parse_stage(&rawdoc! { "$unwind": spec.clone() }).unwrap_err();
        assert_eq!(err.kind, kind, "{spec:?}");
    }
}

#[test]
fn unknown_stage_is_refused_by_kind() {
    let e = parse_stage(&rawdoc! { "$frobnicate": {} }).unwrap_err();
    assert_eq!(e.kind, ErrorKind::UnrecognizedPipelineStage);
}

#[test]
fn change_streams_need_a_replica_set() {
    // jstests/noPassthrough/unsupported_change_stream_deployments.js:
    // a standalone refuses `$changeStream` (40573), not as unimplemented.
    for spec in [rawdoc! {}, rawdoc! { "fullDocument": "updateLookup" }] {
        let err = parse_stage(&rawdoc! { "$changeStream": spec }).unwrap_err();
        assert_ne!(err.kind, ErrorKind::NotImplemented);
        assert_eq!(
            err.message,
            "The $changeStream stage is only supported on replica sets"
        );
    }
}

/// `$sum` adds exactly as `$inc` does: Decimal128 stays decimal and exact,
/// int32 widens to int64 on overflow.
#[test]
fn sum_of_decimals_is_the_exact_decimal_inc_gives() {
    let d = |s: &str| Bson::Decimal128(s.parse().unwrap());
    let docs = ["0.1", "0.2", "0.3"]
        .iter()
        .map(|s| RawDocumentBuf::try_from(&doc! { "v": d(s) }).unwrap())
        .collect();
    let out = run(
        vec![rawdoc! { "$group": { "_id": null, "s": { "$sum": "$v" } } }],
        docs,
    );
    assert_eq!(out, vec![doc! { "_id": Bson::Null, "s": d("0.6") }]);

    let big = vec![rawdoc! { "v": i32::MAX }, rawdoc! { "v": 1 }];
    let out = run(
        vec![rawdoc! { "$group": { "_id": null, "s": { "$sum": "$v" } } }],
        big,
    );
    assert_eq!(out[0].get("s"), Some(&Bson::Int64(i64::from(i32::MAX) + 1)));
}

/// `$project` keeps what its flags include, then sets computed fields in
/// spec order, evaluated against the input (manual: $project, "Include
/// Computed Fields"); `$$REMOVE` leaves a field out.
#[test]
fn project_computes_fields_after_the_ones_it_keeps() {
    let out = run(
        vec![rawdoc! { "$project": {
            "b": 1,
            "sum": { "$add": ["$a", "$b"] },
            "a": { "$literal": 5 },
            "gone": "$$REMOVE",
        } }],
        vec![rawdoc! { "_id": 1, "a": 1, "b": 2 }],
    );
    assert_eq!(out, vec![doc! { "_id": 1, "b": 2, "sum": 3, "a": 5 }]);
    let out = run(
        vec![rawdoc! { "$project": { "_id": 0, "x": "$a" } }],
        vec![rawdoc! { "_id": 1, "a": 1 }],
    );
    assert_eq!(out, vec![doc! { "x": 1 }]);
}

#[test]
fn project_refuses_computed_fields_in_an_exclusion() {
    let e = parse_stage(&rawdoc! { "$project": { "a": 0, "b": { "$add": [1, 2] } } }).unwrap_err();
    assert_eq!(e.kind, ErrorKind::ProjectionExpressionInExclusion);
    let e = parse_stage(&rawdoc! { "$project": { "b": "$x", "a": 0 } }).unwrap_err();
    assert_eq!(e.kind, ErrorKind::ProjectionExclusionInInclusion);
}

/// `$addFields` replaces a field in place, appends new ones, and removes
/// one set to `$$REMOVE` (manual: $addFields, "Remove Fields").
#[test]
fn add_fields_replaces_appends_and_removes() {
    let out = run(
        vec![
            rawdoc! { "$addFields": { "a": { "$multiply": ["$a", 10] }, "c": "$$REMOVE", "d": true } },
        ],
        vec![rawdoc! { "_id": 1, "a": 2, "c": 3 }],
    );
    assert_eq!(out, vec![doc! { "_id": 1, "a": 20, "d": true }]);
}

/// A parse error inside `$addFields` names the stage, as mongod's does.
#[test]
fn expression_errors_in_add_fields_name_the_stage() {
    let e = parse_stage(&rawdoc! { "$addFields": { "x": { "$trim": {} } } }).unwrap_err();
    assert_eq!(
        e.message,
        "Invalid $addFields :: caused by :: $trim requires an 'input' field"
    );
}

/// jstests/aggregation/bugs/server6335.js: `$where` is refused in `$match`.
#[test]
fn where_is_not_allowed_in_match() {
    let e = parse_stage(&rawdoc! { "$match": { "$where": "return true" } }).unwrap_err();
    assert_eq!(e.kind, ErrorKind::BadValue);
}

#[test]
fn group_keys_and_accumulators_evaluate_expressions() {
    let out = run(
        vec![
            rawdoc! { "$group": { "_id": { "$mod": ["$n", 2] }, "s": { "$sum": { "$multiply": ["$n", 2] } } } },
            rawdoc! { "$sort": { "_id": 1 } },
        ],
        (1..=4).map(|n| rawdoc! { "n": n }).collect(),
    );
    assert_eq!(
        out,
        vec![doc! { "_id": 0, "s": 12 }, doc! { "_id": 1, "s": 8 }]
    );
}

mod nested {
    //! Parsing of the stages that nest pipelines or expand into others.

    use bson::{RawDocumentBuf, rawdoc};

    use crate::error::{ErrorKind, StageError};
    use crate::pipeline::{Stage, check_top_level, parse_stage};

    fn stages(docs: Vec<RawDocumentBuf>) -> Vec<Stage> {
        docs.iter().map(|d| parse_stage(d).unwrap()).collect()
    }

    fn error(stage: RawDocumentBuf) -> crate::Error {
        parse_stage(&stage).unwrap_err()
    }

    #[test]
    fn documents_stands_first_and_only_in_a_database_aggregate() {
        let first = stages(vec![rawdoc! { "$documents": [ { "a": 1 } ] }]);
        assert!(check_top_level(&first, true).is_ok());
        assert_eq!(
            check_top_level(&first, false).unwrap_err().kind,
            ErrorKind::InvalidNamespace
        );
        let later = stages(vec![
            rawdoc! { "$match": {} },
            rawdoc! { "$documents": [ { "a": 1 } ] },
        ]);
        assert_eq!(
            check_top_level(&later, false).unwrap_err().kind,
            ErrorKind::Stage(StageError::NotFirstStage)
        );
        assert_eq!(
            check_top_level(&later, true).unwrap_err().kind,
            ErrorKind::InvalidNamespace
        );
    }

    #[test]
    fn facet_names_the_nested_offender() {
        let e = error(rawdoc! { "$facet": { "f": [
            { "$lookup": { "from": "c", "as": "a", "pipeline": [ { "$documents": [] } ] } },
        ] } });
        assert_eq!(e.kind, ErrorKind::Stage(StageError::NotAllowedInFacet));
        assert!(
            e.message
                .starts_with("$documents inside of $lookup is not allowed"),
            "{}",
            e.message
        );
        assert!(parse_stage(&rawdoc! { "$facet": { "f": [ { "$match": {} } ] } }).is_ok());
    }

    #[test]
    fn union_with_needs_a_collection_or_documents() {
        let bad = rawdoc! { "$unionWith": { "pipeline": [ { "$match": {} } ] } };
        assert_eq!(error(bad).kind, ErrorKind::FailedToParse);
        let unknown = rawdoc! { "$unionWith": { "coll": "c", "x": 1 } };
        assert_eq!(error(unknown).kind, ErrorKind::UnknownField);
        let writer = rawdoc! { "$unionWith": { "coll": "c", "pipeline": [ { "$out": "o" } ] } };
        assert_eq!(
            error(writer).kind,
            ErrorKind::Stage(StageError::WriteStageInUnionWith)
        );
    }

    #[test]
    fn bucket_and_sort_by_count_become_group_then_sort() {
        for stage in [
            rawdoc! { "$bucket": { "groupBy": "$x", "boundaries": [0, 10] } },
            rawdoc! { "$sortByCount": "$x" },
        ] {
            let Stage::Sequence(seq) = parse_stage(&stage).unwrap() else {
                panic!("a sequence")
            };
            assert!(matches!(
                seq.as_slice(),
                [Stage::Group { .. }, Stage::Sort(_)]
            ));
        }
    }

    #[test]
    fn bucket_boundaries_ascend_within_one_type() {
        let kind = |b: RawDocumentBuf| error(b).kind;
        assert_eq!(
            kind(rawdoc! { "$bucket": { "groupBy": "$x", "boundaries": [1, 1] } }),
            ErrorKind::Stage(StageError::BucketBoundariesUnsorted)
        );
        assert_eq!(
            kind(rawdoc! { "$bucket": { "groupBy": "$x", "boundaries": [1, "b"] } }),
            ErrorKind::Stage(StageError::BucketBoundaryTypes)
        );
        // Numbers of different types share a bracket.
        assert!(
            parse_stage(&rawdoc! { "$bucket": { "groupBy": "$x", "boundaries": [1, 2.5] } })
                .is_ok()
        );
        assert_eq!(
            kind(rawdoc! { "$bucket": { "groupBy": "$x", "boundaries": [0, 10], "default": 5 } }),
            ErrorKind::Stage(StageError::BucketDefaultInRange)
        );
        // The highest boundary itself is outside the last bucket.
        assert!(
            parse_stage(
                &rawdoc! { "$bucket": { "groupBy": "$x", "boundaries": [0, 10], "default": 10.0 } }
            )
            .is_ok()
        );
    }

    #[test]
    fn bucket_auto_refuses_granularity_rather_than_ignoring_it() {
        let e = error(
            rawdoc! { "$bucketAuto": { "groupBy": "$x", "buckets": 2, "granularity": "R5" } },
        );
        assert_eq!(e.kind, ErrorKind::NotImplemented);
    }
}

mod accumulators {
    //! The accumulators that keep several values, and `$stdDev*`,
    //! `$mergeObjects`. Expected values from the manual's examples.

    use bson::{doc, rawdoc};

    use super::run;
    use crate::error::{ErrorKind, StageError};
    use crate::pipeline::parse_stage;

    fn scores() -> Vec<bson::RawDocumentBuf> {
        vec![
            rawdoc! { "g": 1, "p": "a", "s": 31 },
            rawdoc! { "g": 1, "p": "b", "s": 33 },
            rawdoc! { "g": 1, "p": "c", "s": 99 },
            rawdoc! { "g": 1, "p": "d", "s": 1 },
            rawdoc! { "g": 1, "p": "e" },
        ]
    }

    #[test]
    fn first_last_min_max_n_keep_the_right_values_in_order() {
        let out = run(
            vec![rawdoc! { "$group": {
                "_id": "$g",
                "first": { "$firstN": { "input": "$s", "n": 2 } },
                "last": { "$lastN": { "input": "$s", "n": 2 } },
                "min": { "$minN": { "input": "$s", "n": 3 } },
                "max": { "$maxN": { "input": "$s", "n": 2 } },
            } }],
            scores(),
        );
        assert_eq!(
            out,
            vec![doc! {
                "_id": 1,
                "first": [31, 33],
                "last": [1, null],
                "min": [1, 31, 33],
                "max": [99, 33],
            }]
        );
    }

    #[test]
    fn top_and_bottom_follow_sort_by() {
        let out = run(
            vec![rawdoc! { "$group": {
                "_id": "$g",
                "top": { "$top": { "output": "$p", "sortBy": { "s": -1 } } },
                "bottom2": { "$bottomN": { "output": ["$p", "$s"], "sortBy": { "s": -1 }, "n": 2 } },
                "top2": { "$topN": { "output": "$p", "sortBy": { "s": 1 }, "n": 2 } },
            } }],
            scores(),
        );
        // Missing sorts before numbers.
        assert_eq!(
            out,
            vec![doc! {
                "_id": 1,
                "top": "c",
                "bottom2": [["d", 1], ["e", null]],
                "top2": ["e", "d"],
            }]
        );
    }

    #[test]
    fn std_dev_and_merge_objects() {
        let out = run(
            vec![rawdoc! { "$group": {
                "_id": null,
                "pop": { "$stdDevPop": "$s" },
                "samp": { "$stdDevSamp": "$s" },
                "merged": { "$mergeObjects": "$m" },
            } }],
            vec![
                rawdoc! { "s": 2, "m": { "a": 1, "b": 1 } },
                rawdoc! { "s": 4, "m": null },
                rawdoc! { "s": 4, "m": { "b": 2, "c": 3 } },
                rawdoc! { "s": 4 },
                rawdoc! { "s": 5 },
                rawdoc! { "s": 5 },
                rawdoc! { "s": 7 },
                rawdoc! { "s": 9, "x": "not a number" },
            ],
        );
        let d = &out[0];
        assert_eq!(d.get_f64("pop").unwrap(), 2.0);
        assert!((d.get_f64("samp").unwrap() - 2.138_089_935_299_395).abs() < 1e-12);
        assert_eq!(
            d.get_document("merged").unwrap(),
            &doc! { "a": 1, "b": 2, "c": 3 }
        );
    }

    #[test]
    fn n_accumulators_refuse_bad_arguments() {
        let kind = |acc: bson::RawDocumentBuf| {
            parse_stage(&rawdoc! { "$group": { "_id": null, "x": acc } })
                .unwrap_err()
                .kind
        };
        let stage = |e| ErrorKind::Stage(e);
        assert_eq!(
            kind(rawdoc! { "$minN": 1 }),
            stage(StageError::MinMaxNNotObject)
        );
        assert_eq!(
            kind(rawdoc! { "$firstN": 1 }),
            stage(StageError::FirstLastNNotObject)
        );
        assert_eq!(
            kind(rawdoc! { "$firstN": { "input": "$a" } }),
            stage(StageError::AccNMissingN)
        );
        assert_eq!(
            kind(rawdoc! { "$firstN": { "n": 1 } }),
            stage(StageError::AccNMissingInput)
        );
        assert_eq!(
            kind(rawdoc! { "$firstN": { "n": 0, "input": "$a" } }),
            stage(StageError::AccNNotPositive)
        );
        assert_eq!(
            kind(rawdoc! { "$firstN": { "n": 1.5, "input": "$a" } }),
            stage(StageError::AccNNotIntegral)
        );
        assert_eq!(
            kind(rawdoc! { "$firstN": { "n": "1", "input": "$a" } }),
            stage(StageError::AccNNotNumeric)
        );
        assert_eq!(
            kind(rawdoc! { "$top": { "output": "$a" } }),
            stage(StageError::TopMissingSortBy)
        );
        assert_eq!(
            kind(rawdoc! { "$top": { "output": "$a", "sortBy": { "a": 1 }, "n": 1 } }),
            stage(StageError::TopUnknownArgument)
        );
        assert_eq!(
            kind(rawdoc! { "$topN": { "output": "$a", "sortBy": { "a": 1 } } }),
            stage(StageError::TopMissingN)
        );
        assert_eq!(
            kind(rawdoc! { "$firstN": { "n": "$x", "input": "$a" } }),
            ErrorKind::NotImplemented
        );
    }
}

/// A `$group` past its memory limit with disk use allowed spills the
/// documents of the groups it cannot hold, sorted by group key, and groups
/// them at the end: the same groups and values as in memory, `$first` and
/// `$push` in input order; without disk use it is mongod's 292.
#[test]
fn group_spills_past_the_limit_with_disk_use() {
    use crate::query::spill::DiskUse;
    let stages = || {
        vec![
            parse_stage(&rawdoc! { "$group": {
                "_id": "$k",
                "n": { "$sum": 1 },
                "first": { "$first": "$i" },
                "all": { "$push": "$i" },
            } })
            .unwrap(),
            parse_stage(&rawdoc! { "$sort": { "_id": 1 } }).unwrap(),
        ]
    };
    let input = || (0..2000).map(|i: i32| rawdoc! { "k": (i * 7) % 500, "i": i });
    let mut memory = Pipeline::new(stages());
    for d in input() {
        memory.push(d).unwrap();
    }
    let expected = memory.finish().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut disk = Pipeline::new(stages())
        .disk_use(DiskUse::Allowed(dir.path().join("_tmp")))
        .memory_limit(64 * 40);
    for d in input() {
        disk.push(d).unwrap();
    }
    assert_eq!(disk.finish().unwrap(), expected);
    assert_eq!(expected.len(), 500);
    let mut forbidden = Pipeline::new(stages()).memory_limit(64 * 40);
    let e = input()
        .map(|d| forbidden.push(d))
        .find_map(|r| r.err())
        .unwrap();
    assert_eq!(e.kind, ErrorKind::QueryExceededMemoryLimit);
}
