//! `$setWindowFields` over documents in memory, expectations from mongod's
//! jstests (jstests/aggregation/sources/setWindowFields/*.js).

use bson::{Bson, Document, RawDocumentBuf, doc, rawdoc};

use super::super::{Pipeline, parse_stage};
use crate::error::{ErrorKind, Result, StageError};

fn try_run(stages: Vec<RawDocumentBuf>, docs: Vec<RawDocumentBuf>) -> Result<Vec<Document>> {
    let mut parsed = Vec::new();
    for s in &stages {
        parsed.push(parse_stage(s)?);
    }
    let mut p = Pipeline::new(parsed);
    for d in docs {
        p.push(d)?;
    }
    Ok(p.finish()?
        .iter()
        .map(|d| Document::try_from(d.as_ref()).unwrap())
        .collect())
}

fn run(stage: RawDocumentBuf, docs: Vec<RawDocumentBuf>) -> Vec<Document> {
    try_run(vec![stage], docs).unwrap()
}

fn field(out: &[Document], name: &str) -> Vec<Bson> {
    out.iter()
        .map(|d| d.get(name).cloned().unwrap_or(Bson::Null))
        .collect()
}

fn parse_kind(stage: RawDocumentBuf) -> ErrorKind {
    parse_stage(&stage).unwrap_err().kind
}

/// range.js: "The documents are not evenly spaced, so the window varies
/// in size"; '0' takes ties.
#[test]
fn range_window_pushes_the_values_within_the_range() {
    let docs = [0.0, 1.0, 1.5, 2.0, 3.0, 100.0, 100.0, 101.0]
        .iter()
        .map(|x| rawdoc! { "x": *x })
        .collect();
    let out = run(
        rawdoc! { "$setWindowFields": {
            "partitionBy": "$partition",
            "sortBy": { "x": 1 },
            "output": { "y": { "$push": "$x", "window": { "range": [-1, 0] } } },
        } },
        docs,
    );
    let ys: Vec<Vec<f64>> = out
        .iter()
        .map(|d| {
            d.get_array("y")
                .unwrap()
                .iter()
                .map(|v| v.as_f64().unwrap())
                .collect()
        })
        .collect();
    assert_eq!(
        ys,
        vec![
            vec![0.0],
            vec![0.0, 1.0],
            vec![1.0, 1.5],
            vec![1.0, 1.5, 2.0],
            vec![2.0, 3.0],
            vec![100.0, 100.0],
            vec![100.0, 100.0],
            vec![100.0, 100.0, 101.0],
        ]
    );
}

/// derivative.js: "$derivative never compares values from separate
/// partitions".
#[test]
fn derivative_per_partition_over_the_previous_document() {
    let docs = vec![
        rawdoc! { "sensor": "A", "time": 0, "y": 1 },
        rawdoc! { "sensor": "B", "time": 0, "y": 100 },
        rawdoc! { "sensor": "A", "time": 1, "y": 2 },
        rawdoc! { "sensor": "B", "time": 1, "y": 105 },
        rawdoc! { "sensor": "A", "time": 2, "y": 1 },
        rawdoc! { "sensor": "B", "time": 2, "y": 107 },
        rawdoc! { "sensor": "A", "time": 3, "y": 4 },
        rawdoc! { "sensor": "B", "time": 3, "y": 104 },
    ];
    let out = run(
        rawdoc! { "$setWindowFields": {
            "partitionBy": "$sensor",
            "sortBy": { "time": 1 },
            "output": { "dy": { "$derivative": { "input": "$y" }, "window": { "documents": [-1, 0] } } },
        } },
        docs,
    );
    assert_eq!(
        field(&out, "dy"),
        vec![
            Bson::Null,
            Bson::Double(1.0),
            Bson::Double(-1.0),
            Bson::Double(3.0),
            Bson::Null,
            Bson::Double(5.0),
            Bson::Double(2.0),
            Bson::Double(-3.0),
        ]
    );
    assert!(out.iter().all(|d| !d.contains_key(super::PARTITION_FIELD)));
}

/// derivative.js: a date sortBy needs 'unit', a number refuses it.
#[test]
fn derivative_unit_must_match_the_sort_values() {
    let stage = |unit: Option<&str>| {
        let mut f = doc! { "input": "$y" };
        if let Some(u) = unit {
            f.insert("unit", u);
        }
        RawDocumentBuf::try_from(&doc! { "$setWindowFields": {
            "sortBy": { "time": 1 },
            "output": { "dy": { "$derivative": f, "window": { "documents": [-1, 0] } } },
        } })
        .unwrap()
    };
    let numbers = || vec![rawdoc! { "time": 0, "y": 1 }, rawdoc! { "time": 1, "y": 2 }];
    let e = try_run(vec![stage(Some("millisecond"))], numbers()).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Stage(StageError::CalculusUnitNeedsDate));
    let t0 = bson::DateTime::from_millis(0);
    let t1 = bson::DateTime::from_millis(60_000);
    let dates = vec![
        rawdoc! { "time": t0, "y": 5 },
        rawdoc! { "time": t1, "y": 4 },
    ];
    let e = try_run(vec![stage(None)], dates.clone()).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Stage(StageError::CalculusDateNeedsUnit));
    let out = try_run(vec![stage(Some("minute"))], dates).unwrap();
    assert_eq!(field(&out, "dy"), vec![Bson::Null, Bson::Double(-1.0)]);
    assert_eq!(
        parse_kind(
            rawdoc! { "$setWindowFields": { "sortBy": { "t": 1 }, "output": {
            "dy": { "$derivative": { "input": "$y", "unit": "month" }, "window": { "documents": [-1, 0] } } } } }
        ),
        ErrorKind::Stage(StageError::WindowUnitTooLong)
    );
}

/// rank.js: ties share a rank; $denseRank leaves no gaps.
#[test]
fn rank_dense_rank_and_document_number_with_ties() {
    let docs = (0..6)
        .map(|i| rawdoc! { "_id": i, "d": i / 2 })
        .collect::<Vec<_>>();
    let out = run(
        rawdoc! { "$setWindowFields": {
            "sortBy": { "d": 1 },
            "output": {
                "rank": { "$rank": {} },
                "dense": { "$denseRank": {} },
                "n": { "$documentNumber": {} },
            },
        } },
        docs,
    );
    let ints = |name| {
        field(&out, name)
            .iter()
            .map(|b| b.as_i32().unwrap())
            .collect::<Vec<_>>()
    };
    assert_eq!(ints("rank"), vec![1, 1, 3, 3, 5, 5]);
    assert_eq!(ints("dense"), vec![1, 1, 2, 2, 3, 3]);
    assert_eq!(ints("n"), vec![1, 2, 3, 4, 5, 6]);
}

/// rank.js and parse.js: the errors of bad specifications.
#[test]
fn bad_specifications_get_mongods_codes() {
    let stage =
        |spec: Document| RawDocumentBuf::try_from(&doc! { "$setWindowFields": spec }).unwrap();
    assert_eq!(
        parse_kind(stage(doc! { "output": { "r": { "$rank": {} } } })),
        ErrorKind::Stage(StageError::RankSort)
    );
    assert_eq!(
        parse_kind(stage(
            doc! { "sortBy": { "a": 1 }, "output": { "r": { "$rank": "$a" } } }
        )),
        ErrorKind::Stage(StageError::RankTakesNoArgument)
    );
    assert_eq!(
        parse_kind(stage(
            doc! { "sortBy": { "a": 1 }, "output": { "r": { "$rank": {}, "window": { "documents": [-1, 1] } } } }
        )),
        ErrorKind::Stage(StageError::RankTakesNoWindow)
    );
    assert_eq!(
        parse_kind(stage(
            doc! { "output": { "v": { "$sum": "$a", "window": { "documents": ["unbounded", "current"] } } } }
        )),
        ErrorKind::Stage(StageError::DocumentWindowSort)
    );
    assert_eq!(
        parse_kind(stage(
            doc! { "sortBy": { "a": 1, "b": 1 }, "output": { "v": { "$sum": "$a", "window": { "range": ["unbounded", "unbounded"] } } } }
        )),
        ErrorKind::Stage(StageError::RangeWindowSort)
    );
    assert_eq!(
        parse_kind(stage(doc! { "output": { "v": { "$summ": "$a" } } })),
        ErrorKind::FailedToParse
    );
    assert_eq!(
        parse_kind(stage(doc! { "output": { "v": { "$mergeObjects": "$a" } } })),
        ErrorKind::FailedToParse
    );
    assert_eq!(
        parse_kind(stage(doc! { "output": { "a": { "b": { "$sum": "$a" } } } })),
        ErrorKind::FailedToParse
    );
    assert_eq!(
        parse_kind(stage(
            doc! { "output": { "a": { "$sum": 1 }, "a.b": { "$sum": 1 } } }
        )),
        ErrorKind::Stage(StageError::WindowOutputConflict)
    );
    assert_eq!(
        parse_kind(stage(doc! { "what_is_this": 1 })),
        ErrorKind::UnknownField
    );
    assert_eq!(
        parse_kind(stage(doc! { "sortBy": "x", "output": {} })),
        ErrorKind::TypeMismatch
    );
    assert_eq!(
        parse_kind(stage(
            doc! { "output": { "d": { "$derivative": { "input": "$y" } } }, "sortBy": { "t": 1 } }
        )),
        ErrorKind::FailedToParse
    );
}

/// partition.js: an array partition key is a TypeMismatch; null and
/// missing are one partition.
#[test]
fn null_and_missing_partition_together_and_arrays_fail() {
    let out = run(
        rawdoc! { "$setWindowFields": { "partitionBy": "$k", "output": { "count": { "$sum": 1 } } } },
        vec![
            rawdoc! { "k": 0 },
            rawdoc! { "k": null },
            rawdoc! {},
            rawdoc! { "k": null },
        ],
    );
    let mut counts: Vec<i32> = field(&out, "count")
        .iter()
        .map(|b| b.as_i32().unwrap())
        .collect();
    counts.sort();
    assert_eq!(counts, vec![1, 3, 3, 3]);
    let e = try_run(
        vec![rawdoc! { "$setWindowFields": { "partitionBy": "$k", "sortBy": { "_id": 1 }, "output": {} } }],
        vec![rawdoc! { "_id": 1, "k": [1, 2] }],
    )
    .unwrap_err();
    assert_eq!(e.kind, ErrorKind::TypeMismatch);
}

/// linear_fill.js: nulls between two values are interpolated on the sort
/// field; repeated sort values fail with 6050106.
#[test]
fn linear_fill_interpolates_and_locf_carries_forward() {
    let docs = vec![
        rawdoc! { "_id": 1, "val": 1 },
        rawdoc! { "_id": 2, "val": null },
        rawdoc! { "_id": 3, "val": null },
        rawdoc! { "_id": 4, "val": null },
        rawdoc! { "_id": 5, "val": 5 },
        rawdoc! { "_id": 6, "val": null },
        rawdoc! { "_id": 9, "val": 10 },
        rawdoc! { "_id": 10 },
    ];
    let out = run(
        rawdoc! { "$setWindowFields": { "sortBy": { "_id": 1 }, "output": {
            "lin": { "$linearFill": "$val" },
            "locf": { "$locf": "$val" },
        } } },
        docs,
    );
    let lin: Vec<Option<f64>> = field(&out, "lin")
        .iter()
        .map(|b| match b {
            Bson::Null => None,
            b => Some(b.as_f64().or_else(|| b.as_i32().map(f64::from)).unwrap()),
        })
        .collect();
    assert_eq!(
        lin,
        vec![
            Some(1.0),
            Some(2.0),
            Some(3.0),
            Some(4.0),
            Some(5.0),
            Some(6.25),
            Some(10.0),
            None
        ]
    );
    let locf: Vec<i32> = field(&out, "locf")
        .iter()
        .map(|b| b.as_i32().unwrap())
        .collect();
    assert_eq!(locf, vec![1, 1, 1, 1, 5, 5, 10, 10]);
    let e = try_run(
        vec![rawdoc! { "$setWindowFields": { "sortBy": { "t": 1 }, "output": { "v": { "$linearFill": "$v" } } } }],
        vec![rawdoc! { "t": 1, "v": 1 }, rawdoc! { "t": 1, "v": null }],
    )
    .unwrap_err();
    assert_eq!(e.kind, ErrorKind::Stage(StageError::LinearFillRepeatedSort));
}

/// Manual, $shift and $expMovingAvg examples: the value a number of
/// documents away, and the exponential average with N = 2 (alpha 2/3).
#[test]
fn shift_and_exp_moving_avg() {
    let docs = [10, 20, 40]
        .iter()
        .enumerate()
        .map(|(i, v)| rawdoc! { "t": i as i32, "v": *v })
        .collect();
    let out = run(
        rawdoc! { "$setWindowFields": { "sortBy": { "t": 1 }, "output": {
            "next": { "$shift": { "output": "$v", "by": 1, "default": "none" } },
            "ema": { "$expMovingAvg": { "input": "$v", "N": 2 } },
            "running": { "$sum": "$v", "window": { "documents": ["unbounded", "current"] } },
            "around": { "$avg": "$v", "window": { "documents": [-1, 1] } },
        } } },
        docs,
    );
    assert_eq!(
        field(&out, "next"),
        vec![
            Bson::Int32(20),
            Bson::Int32(40),
            Bson::String("none".into())
        ]
    );
    let ema: Vec<f64> = field(&out, "ema")
        .iter()
        .map(|b| b.as_f64().unwrap())
        .collect();
    assert_eq!(ema[0], 10.0);
    assert!((ema[1] - (20.0 * 2.0 / 3.0 + 10.0 / 3.0)).abs() < 1e-9);
    assert_eq!(
        field(&out, "running"),
        vec![Bson::Int32(10), Bson::Int32(30), Bson::Int32(70)]
    );
    assert_eq!(
        field(&out, "around"),
        vec![
            Bson::Double(15.0),
            Bson::Double(70.0 / 3.0),
            Bson::Double(30.0)
        ]
    );
}

/// integral.js-style trapezoids and covariance over the whole partition.
#[test]
fn integral_and_covariance() {
    let docs = [(0, 0), (1, 1), (2, 4), (3, 9)]
        .iter()
        .map(|(t, y)| rawdoc! { "t": *t, "y": *y })
        .collect();
    let out = run(
        rawdoc! { "$setWindowFields": { "sortBy": { "t": 1 }, "output": {
            "area": { "$integral": { "input": "$y" } },
            "cov": { "$covariancePop": ["$t", "$y"] },
        } } },
        docs,
    );
    // (0+1)/2 + (1+4)/2 + (4+9)/2 = 9.5
    assert_eq!(field(&out, "area")[0], Bson::Double(9.5));
    // mean t 1.5, mean y 3.5: (−1.5·−3.5 + −.5·−2.5 + .5·.5 + 1.5·5.5) / 4
    assert_eq!(field(&out, "cov")[3], Bson::Double(3.75));
}
