//! Expression tests, one per operator family: values and error kinds from
//! MongoDB's documentation examples and jstests/aggregation/expressions/.

use bson::{Bson, DateTime, Document, RawBson, RawDocumentBuf, doc};

use super::{Env, Expr};
use crate::error::{ErrorKind, ExprError};

fn raw(d: &Document) -> RawDocumentBuf {
    RawDocumentBuf::try_from(d).unwrap()
}

fn env() -> Env {
    Env::new(DateTime::from_millis(1_500_000_000_000))
}

/// Parses `expr` (any BSON value) in `env`.
fn parse_with(expr: Bson, env: &Env) -> crate::Result<Expr> {
    let holder = raw(&doc! { "e": expr });
    Expr::parse_in(holder.get("e").unwrap().unwrap(), env)
}

/// The value of `expr` on `input`; `None` when missing.
fn eval(expr: Bson, input: Document) -> crate::Result<Option<Bson>> {
    let e = parse_with(expr, &env())?;
    Ok(e.eval(&raw(&input))?
        .map(|v: RawBson| Bson::try_from(v).unwrap()))
}

/// The value of `expr` on `input`, which must succeed and not be missing.
fn val(expr: Bson, input: Document) -> Bson {
    eval(expr.clone(), input)
        .unwrap_or_else(|e| panic!("{expr}: {e}"))
        .unwrap_or_else(|| panic!("{expr}: missing"))
}

/// The value of a constant expression.
fn c(expr: Bson) -> Bson {
    val(expr, doc! {})
}

fn kind(expr: Bson, input: Document) -> ErrorKind {
    match eval(expr.clone(), input) {
        Err(e) => e.kind,
        Ok(v) => panic!("{expr} gave {v:?}, not an error"),
    }
}

fn expr_kind(expr: Bson, input: Document) -> ExprError {
    match kind(expr.clone(), input) {
        ErrorKind::Expression(e) => e,
        other => panic!("{expr} failed with {other:?}"),
    }
}

fn dec(s: &str) -> Bson {
    Bson::Decimal128(s.parse().unwrap())
}

fn date(millis: i64) -> Bson {
    Bson::DateTime(DateTime::from_millis(millis))
}

/// 2017-07-04T14:56:42.911Z, the date of jstests/date_to_string.js.
const JULY_4: i64 = 1_499_180_202_911;

#[test]
fn field_paths_literals_and_array_literals() {
    let d = doc! { "a": { "b": 1 }, "arr": [{ "x": 1 }, { "x": 2 }, 3] };
    assert_eq!(val(Bson::from("$a.b"), d.clone()), Bson::Int32(1));
    assert_eq!(val(Bson::from("$arr.x"), d.clone()), Bson::from(vec![1, 2]));
    assert_eq!(eval(Bson::from("$nope"), d.clone()).unwrap(), None);
    assert_eq!(c(bson::bson!({ "$literal": "$a" })), Bson::from("$a"));
    // Array literals evaluate element-wise; missing becomes null.
    assert_eq!(
        val(bson::bson!(["$a.b", 2, "$nope"]), d.clone()),
        bson::bson!([1, 2, null])
    );
    assert_eq!(
        val(bson::bson!({ "k": "$a.b", "gone": "$nope" }), d),
        bson::bson!({ "k": 1 })
    );
}

#[test]
fn arithmetic_types_follow_mongodb() {
    assert_eq!(c(bson::bson!({ "$add": [1, 2] })), Bson::Int32(3));
    assert_eq!(c(bson::bson!({ "$add": [1, 2.5] })), Bson::Double(3.5));
    assert_eq!(
        c(bson::bson!({ "$add": [i32::MAX, 1] })),
        Bson::Int64(i64::from(i32::MAX) + 1)
    );
    assert_eq!(c(bson::bson!({ "$add": [1_i64, 1] })), Bson::Int64(2));
    assert_eq!(c(bson::bson!({ "$add": [dec("1.5"), 1] })), dec("2.5"));
    assert_eq!(
        val(bson::bson!({ "$add": [1, "$missing"] }), doc! {}),
        Bson::Null
    );
    assert_eq!(c(bson::bson!({ "$add": [1, null] })), Bson::Null);
    assert_eq!(c(bson::bson!({ "$add": [date(1000), 500] })), date(1500));
    assert_eq!(
        c(bson::bson!({ "$subtract": [date(5000), date(2000)] })),
        Bson::Int64(3000)
    );
    assert_eq!(
        c(bson::bson!({ "$subtract": [date(5000), 1000] })),
        date(4000)
    );
    assert_eq!(c(bson::bson!({ "$multiply": [2, 3] })), Bson::Int32(6));
    assert_eq!(c(bson::bson!({ "$multiply": [2, 1.5] })), Bson::Double(3.0));
    assert_eq!(c(bson::bson!({ "$divide": [10, 4] })), Bson::Double(2.5));
    assert_eq!(c(bson::bson!({ "$divide": [10, dec("2.5")] })), dec("4"));
    assert_eq!(c(bson::bson!({ "$mod": [10, 3] })), Bson::Int32(1));
    assert_eq!(c(bson::bson!({ "$mod": [-10, 3] })), Bson::Int32(-1));
    assert_eq!(c(bson::bson!({ "$mod": [5.5, 2] })), Bson::Double(1.5));
    assert_eq!(c(bson::bson!({ "$abs": -5 })), Bson::Int32(5));
    assert_eq!(c(bson::bson!({ "$ceil": 1.2 })), Bson::Double(2.0));
    assert_eq!(c(bson::bson!({ "$floor": -1.2 })), Bson::Double(-2.0));
    assert_eq!(c(bson::bson!({ "$floor": 7 })), Bson::Int32(7));
    // $round rounds half to even; negative places round integers.
    assert_eq!(c(bson::bson!({ "$round": [10.5, 0] })), Bson::Double(10.0));
    assert_eq!(c(bson::bson!({ "$round": [11.5, 0] })), Bson::Double(12.0));
    assert_eq!(
        c(bson::bson!({ "$round": [1234.5678, 2] })),
        Bson::Double(1234.57)
    );
    assert_eq!(c(bson::bson!({ "$round": [1234, -2] })), Bson::Int32(1200));
    assert_eq!(
        c(bson::bson!({ "$trunc": [1234.5678, 2] })),
        Bson::Double(1234.56)
    );
    assert_eq!(c(bson::bson!({ "$sqrt": 25 })), Bson::Double(5.0));
    assert_eq!(c(bson::bson!({ "$pow": [2, 10] })), Bson::Int32(1024));
    assert_eq!(c(bson::bson!({ "$pow": [2, -1] })), Bson::Double(0.5));
    assert_eq!(c(bson::bson!({ "$exp": 0 })), Bson::Double(1.0));
    assert_eq!(c(bson::bson!({ "$ln": 1 })), Bson::Double(0.0));
    assert_eq!(c(bson::bson!({ "$log": [100, 10] })), Bson::Double(2.0));
    assert_eq!(c(bson::bson!({ "$log10": 1000 })), Bson::Double(3.0));
    assert_eq!(
        c(bson::bson!({ "$sum": [[1, 2, "x", 3.5]] })),
        Bson::Double(6.5)
    );
    assert_eq!(c(bson::bson!({ "$avg": [1, 2, 3, 4] })), Bson::Double(2.5));
}

#[test]
fn arithmetic_errors_carry_mongodb_kinds() {
    let d = doc! { "zero": 0, "s": "x", "t": date(1) };
    let k = |e: Bson| expr_kind(e, d.clone());
    assert_eq!(k(bson::bson!({ "$add": ["$s", 1] })), ExprError::AddType);
    assert_eq!(
        k(bson::bson!({ "$add": ["$t", "$t"] })),
        ExprError::AddTwoDates
    );
    assert_eq!(
        k(bson::bson!({ "$multiply": ["$s"] })),
        ExprError::MultiplyType
    );
    assert_eq!(
        k(bson::bson!({ "$subtract": [1, "$t"] })),
        ExprError::SubtractType
    );
    assert_eq!(
        k(bson::bson!({ "$divide": [1, "$zero"] })),
        ExprError::DivideByZero
    );
    assert_eq!(
        k(bson::bson!({ "$divide": [1, "$s"] })),
        ExprError::DivideType
    );
    assert_eq!(
        k(bson::bson!({ "$mod": [1, "$zero"] })),
        ExprError::ModByZero
    );
    assert_eq!(k(bson::bson!({ "$sqrt": -1 })), ExprError::SqrtNegative);
    assert_eq!(k(bson::bson!({ "$ln": "$zero" })), ExprError::LnNotPositive);
    assert_eq!(
        k(bson::bson!({ "$pow": ["$zero", -1] })),
        ExprError::PowZeroNegative
    );
    assert_eq!(k(bson::bson!({ "$abs": "$s" })), ExprError::NumericArgType);
    assert_eq!(
        k(bson::bson!({ "$round": [1, 101] })),
        ExprError::RoundPrecisionRange
    );
    // A constant division by zero fails while parsing, as mongod's
    // optimizer folds it.
    assert_eq!(
        parse_with(bson::bson!({ "$divide": [1, 0] }), &env())
            .unwrap_err()
            .kind,
        ErrorKind::Expression(ExprError::DivideByZero)
    );
}

#[test]
fn comparisons_use_bson_order_with_missing_below_null() {
    assert_eq!(c(bson::bson!({ "$eq": [1, 1.0] })), Bson::Boolean(true));
    assert_eq!(c(bson::bson!({ "$ne": [1, "1"] })), Bson::Boolean(true));
    assert_eq!(c(bson::bson!({ "$gt": ["a", 5] })), Bson::Boolean(true));
    assert_eq!(c(bson::bson!({ "$cmp": ["a", "b"] })), Bson::Int32(-1));
    assert_eq!(
        c(bson::bson!({ "$lte": [[1, 2], [1, 2]] })),
        Bson::Boolean(true)
    );
    assert_eq!(
        val(bson::bson!({ "$lt": ["$missing", null] }), doc! {}),
        Bson::Boolean(true)
    );
    assert_eq!(
        val(bson::bson!({ "$eq": ["$missing", null] }), doc! {}),
        Bson::Boolean(false)
    );
    assert_eq!(c(bson::bson!({ "$max": [1, null, 5, 3] })), Bson::Int32(5));
    assert_eq!(c(bson::bson!({ "$min": [[4, 2, 8]] })), Bson::Int32(2));
}

#[test]
fn boolean_and_conditional_operators() {
    assert_eq!(c(bson::bson!({ "$and": [1, "a"] })), Bson::Boolean(true));
    assert_eq!(c(bson::bson!({ "$and": [1, 0] })), Bson::Boolean(false));
    assert_eq!(c(bson::bson!({ "$or": [] })), Bson::Boolean(false));
    assert_eq!(c(bson::bson!({ "$not": [0] })), Bson::Boolean(true));
    // $and stops at the first false: the division is never evaluated.
    assert_eq!(
        val(
            bson::bson!({ "$and": [false, { "$divide": [1, "$z"] }] }),
            doc! { "z": 0 }
        ),
        Bson::Boolean(false)
    );
    let d = doc! { "qty": 300 };
    assert_eq!(
        val(
            bson::bson!({ "$cond": { "if": { "$gte": ["$qty", 250] }, "then": 30, "else": 20 } }),
            d.clone()
        ),
        Bson::Int32(30)
    );
    assert_eq!(
        val(
            bson::bson!({ "$cond": [{ "$lt": ["$qty", 250] }, 30, 20] }),
            d.clone()
        ),
        Bson::Int32(20)
    );
    assert_eq!(
        val(
            bson::bson!({ "$ifNull": ["$a", "$b", "fallback"] }),
            doc! { "b": null }
        ),
        Bson::from("fallback")
    );
    assert_eq!(
        val(
            bson::bson!({ "$switch": { "branches": [
            { "case": { "$lt": ["$qty", 100] }, "then": "low" },
            { "case": { "$lt": ["$qty", 500] }, "then": "mid" }
        ], "default": "high" } }),
            d.clone()
        ),
        Bson::from("mid")
    );
    assert_eq!(
        expr_kind(
            bson::bson!({ "$switch": { "branches": [{ "case": { "$eq": ["$qty", 1] }, "then": 1 }] } }),
            d
        ),
        ExprError::SwitchNoMatch
    );
    assert_eq!(
        expr_kind(bson::bson!({ "$cond": { "if": true, "then": 1 } }), doc! {}),
        ExprError::CondMissingElse
    );
    assert_eq!(
        expr_kind(bson::bson!({ "$ifNull": [1] }), doc! {}),
        ExprError::IfNullArgs
    );
}

#[test]
fn string_operators() {
    assert_eq!(
        c(bson::bson!({ "$concat": ["a", "-", "b"] })),
        Bson::from("a-b")
    );
    assert_eq!(c(bson::bson!({ "$concat": ["a", null] })), Bson::Null);
    assert_eq!(
        c(bson::bson!({ "$substrCP": ["héllo", 1, 3] })),
        Bson::from("éll")
    );
    assert_eq!(
        c(bson::bson!({ "$substrBytes": ["abcde", 1, 2] })),
        Bson::from("bc")
    );
    assert_eq!(
        c(bson::bson!({ "$substr": ["abcde", 3, -1] })),
        Bson::from("de")
    );
    assert_eq!(c(bson::bson!({ "$toUpper": "abc" })), Bson::from("ABC"));
    assert_eq!(c(bson::bson!({ "$toLower": 12 })), Bson::from("12"));
    assert_eq!(c(bson::bson!({ "$strLenCP": "héllo" })), Bson::Int32(5));
    assert_eq!(c(bson::bson!({ "$strLenBytes": "héllo" })), Bson::Int32(6));
    assert_eq!(
        c(bson::bson!({ "$split": ["a,b,,c", ","] })),
        bson::bson!(["a", "b", "", "c"])
    );
    assert_eq!(
        c(bson::bson!({ "$trim": { "input": "  x \n" } })),
        Bson::from("x")
    );
    assert_eq!(
        c(bson::bson!({ "$ltrim": { "input": "xxay", "chars": "x" } })),
        Bson::from("ay")
    );
    assert_eq!(
        c(bson::bson!({ "$rtrim": { "input": "ayxx", "chars": "xy" } })),
        Bson::from("a")
    );
    assert_eq!(
        c(bson::bson!({ "$indexOfBytes": ["cafeteria", "e"] })),
        Bson::Int32(3)
    );
    assert_eq!(
        c(bson::bson!({ "$indexOfBytes": ["cafeteria", "e", 5] })),
        Bson::Int32(5)
    );
    assert_eq!(
        c(bson::bson!({ "$indexOfCP": ["héllo", "l"] })),
        Bson::Int32(2)
    );
    assert_eq!(
        c(bson::bson!({ "$indexOfCP": ["abc", "z"] })),
        Bson::Int32(-1)
    );
    assert_eq!(
        c(bson::bson!({ "$strcasecmp": ["abc", "ABC"] })),
        Bson::Int32(0)
    );
    assert_eq!(
        c(bson::bson!({ "$replaceAll": { "input": "a.b.c", "find": ".", "replacement": "/" } })),
        Bson::from("a/b/c")
    );
    assert_eq!(
        c(bson::bson!({ "$replaceOne": { "input": "a.b.c", "find": ".", "replacement": "/" } })),
        Bson::from("a/b.c")
    );
    assert_eq!(
        expr_kind(bson::bson!({ "$concat": ["a", 1] }), doc! {}),
        ExprError::ConcatType
    );
    assert_eq!(
        expr_kind(bson::bson!({ "$substrBytes": ["é", 1, 1] }), doc! {}),
        ExprError::SubstrStartContinuation
    );
    assert_eq!(
        expr_kind(bson::bson!({ "$split": ["a", ""] }), doc! {}),
        ExprError::SplitEmptySeparator
    );
    assert_eq!(
        expr_kind(bson::bson!({ "$trim": {} }), doc! {}),
        ExprError::TrimMissingInput
    );
    assert_eq!(
        expr_kind(bson::bson!({ "$strLenCP": 1 }), doc! {}),
        ExprError::StrLenCpType
    );
}

#[test]
fn array_operators() {
    let d = doc! { "a": [1, 2, 3, 4, 5] };
    let v = |e: Bson| val(e, d.clone());
    assert_eq!(v(bson::bson!({ "$size": "$a" })), Bson::Int32(5));
    assert_eq!(
        v(bson::bson!({ "$arrayElemAt": ["$a", -1] })),
        Bson::Int32(5)
    );
    assert_eq!(
        eval(bson::bson!({ "$arrayElemAt": ["$a", 9] }), d.clone()).unwrap(),
        None
    );
    assert_eq!(v(bson::bson!({ "$first": "$a" })), Bson::Int32(1));
    assert_eq!(v(bson::bson!({ "$last": "$a" })), Bson::Int32(5));
    assert_eq!(
        v(bson::bson!({ "$filter": { "input": "$a", "as": "n", "cond": { "$gt": ["$$n", 2] } } })),
        bson::bson!([3, 4, 5])
    );
    assert_eq!(
        v(
            bson::bson!({ "$filter": { "input": "$a", "cond": { "$gt": ["$$this", 1] }, "limit": 2 } })
        ),
        bson::bson!([2, 3])
    );
    assert_eq!(
        v(
            bson::bson!({ "$map": { "input": "$a", "as": "n", "in": { "$multiply": ["$$n", 10] } } })
        ),
        bson::bson!([10, 20, 30, 40, 50])
    );
    assert_eq!(
        v(
            bson::bson!({ "$reduce": { "input": "$a", "initialValue": 0, "in": { "$add": ["$$value", "$$this"] } } })
        ),
        Bson::Int32(15)
    );
    assert_eq!(v(bson::bson!({ "$in": [3, "$a"] })), Bson::Boolean(true));
    assert_eq!(
        v(bson::bson!({ "$indexOfArray": ["$a", 4] })),
        Bson::Int32(3)
    );
    assert_eq!(
        v(bson::bson!({ "$slice": ["$a", 1, 2] })),
        bson::bson!([2, 3])
    );
    assert_eq!(
        v(bson::bson!({ "$slice": ["$a", -2] })),
        bson::bson!([4, 5])
    );
    assert_eq!(
        c(bson::bson!({ "$concatArrays": [[1], [2, 3]] })),
        bson::bson!([1, 2, 3])
    );
    assert_eq!(
        c(bson::bson!({ "$reverseArray": [[1, 2, 3]] })),
        bson::bson!([3, 2, 1])
    );
    assert_eq!(
        c(bson::bson!({ "$range": [0, 10, 3] })),
        bson::bson!([0, 3, 6, 9])
    );
    assert_eq!(
        c(bson::bson!({ "$range": [5, 0, -2] })),
        bson::bson!([5, 3, 1])
    );
    assert_eq!(c(bson::bson!({ "$isArray": [[1]] })), Bson::Boolean(true));
    assert_eq!(
        c(bson::bson!({ "$sortArray": { "input": [3, 1, 2], "sortBy": -1 } })),
        bson::bson!([3, 2, 1])
    );
    assert_eq!(
        c(
            bson::bson!({ "$sortArray": { "input": [{ "x": 2 }, { "x": 1 }], "sortBy": { "x": 1 } } })
        ),
        bson::bson!([{ "x": 1 }, { "x": 2 }])
    );
    assert_eq!(
        c(
            bson::bson!({ "$zip": { "inputs": [[1, 2], ["a"]], "useLongestLength": true, "defaults": [0, "z"] } })
        ),
        bson::bson!([[1, "a"], [2, "z"]])
    );
    assert_eq!(
        c(bson::bson!({ "$allElementsTrue": [[1, true]] })),
        Bson::Boolean(true)
    );
    assert_eq!(
        c(bson::bson!({ "$anyElementTrue": [[0, false]] })),
        Bson::Boolean(false)
    );
    assert_eq!(
        expr_kind(bson::bson!({ "$size": 1 }), doc! {}),
        ExprError::SizeNotArray
    );
    assert_eq!(
        expr_kind(bson::bson!({ "$in": [1, 2] }), doc! {}),
        ExprError::InNotArray
    );
    assert_eq!(
        expr_kind(bson::bson!({ "$range": [0, 1, 0] }), doc! {}),
        ExprError::RangeStepZero
    );
    assert_eq!(
        expr_kind(bson::bson!({ "$map": { "input": 1, "in": 1 } }), doc! {}),
        ExprError::MapInputNotArray
    );
}

#[test]
fn set_operators_read_arrays_as_sets() {
    assert_eq!(
        c(bson::bson!({ "$setUnion": [[3, 1], [2, 1]] })),
        bson::bson!([1, 2, 3])
    );
    assert_eq!(
        c(bson::bson!({ "$setIntersection": [[1, 2, 3], [3, 2, 5]] })),
        bson::bson!([2, 3])
    );
    assert_eq!(
        c(bson::bson!({ "$setDifference": [[3, 1, 2, 1], [2]] })),
        bson::bson!([3, 1])
    );
    assert_eq!(
        c(bson::bson!({ "$setEquals": [[1, 2, 2], [2, 1]] })),
        Bson::Boolean(true)
    );
    assert_eq!(
        c(bson::bson!({ "$setIsSubset": [[1], [1, 2]] })),
        Bson::Boolean(true)
    );
    assert_eq!(c(bson::bson!({ "$setUnion": [[1], null] })), Bson::Null);
    assert_eq!(
        expr_kind(bson::bson!({ "$setEquals": [[1], 1] }), doc! {}),
        ExprError::SetEqualsType
    );
    assert_eq!(
        expr_kind(bson::bson!({ "$setEquals": [[1]] }), doc! {}),
        ExprError::ArgCountAtLeast
    );
}

#[test]
fn object_operators() {
    assert_eq!(
        c(bson::bson!({ "$mergeObjects": [{ "a": 1, "b": 1 }, null, { "b": 2, "c": 3 }] })),
        bson::bson!({ "a": 1, "b": 2, "c": 3 })
    );
    assert_eq!(
        c(bson::bson!({ "$objectToArray": { "a": 1 } })),
        bson::bson!([{ "k": "a", "v": 1 }])
    );
    assert_eq!(
        c(bson::bson!({ "$arrayToObject": [[["a", 1], ["b", 2]]] })),
        bson::bson!({ "a": 1, "b": 2 })
    );
    assert_eq!(
        c(bson::bson!({ "$arrayToObject": [[{ "k": "a", "v": 1 }, { "k": "a", "v": 2 }]] })),
        bson::bson!({ "a": 2 })
    );
    let d = doc! { "$price": 5, "a.b": 7 };
    assert_eq!(
        val(bson::bson!({ "$getField": "a.b" }), d.clone()),
        Bson::Int32(7)
    );
    assert_eq!(
        val(
            bson::bson!({ "$getField": { "$literal": "$price" } }),
            d.clone()
        ),
        Bson::Int32(5)
    );
    assert_eq!(
        val(
            bson::bson!({ "$setField": { "field": "a.b", "input": "$$ROOT", "value": 8 } }),
            d.clone()
        ),
        bson::bson!({ "$price": 5, "a.b": 8 })
    );
    assert_eq!(
        val(
            bson::bson!({ "$unsetField": { "field": "a.b", "input": "$$ROOT" } }),
            d
        ),
        bson::bson!({ "$price": 5 })
    );
    assert_eq!(
        expr_kind(bson::bson!({ "$mergeObjects": [1] }), doc! {}),
        ExprError::MergeObjectsType
    );
    assert_eq!(
        expr_kind(
            bson::bson!({ "$setField": { "field": "$x", "input": {}, "value": 1 } }),
            doc! {}
        ),
        ExprError::SetFieldFieldNotConstant
    );
}

#[test]
fn type_and_conversion_operators() {
    assert_eq!(c(bson::bson!({ "$type": 1.5 })), Bson::from("double"));
    assert_eq!(
        val(bson::bson!({ "$type": "$nope" }), doc! {}),
        Bson::from("missing")
    );
    assert_eq!(
        c(bson::bson!({ "$isNumber": dec("1") })),
        Bson::Boolean(true)
    );
    // From jstests/aggregation/expressions/convert.js.
    assert_eq!(
        c(bson::bson!({ "$convert": { "input": 1.9, "to": "int" } })),
        Bson::Int32(1)
    );
    assert_eq!(
        c(bson::bson!({ "$convert": { "input": 1.9, "to": "date" } })),
        date(1)
    );
    assert_eq!(c(bson::bson!({ "$toString": 1.9 })), Bson::from("1.9"));
    assert_eq!(c(bson::bson!({ "$toString": false })), Bson::from("false"));
    assert_eq!(c(bson::bson!({ "$toDouble": "1.9" })), Bson::Double(1.9));
    assert_eq!(c(bson::bson!({ "$toLong": date(123) })), Bson::Int64(123));
    assert_eq!(c(bson::bson!({ "$toBool": "" })), Bson::Boolean(true));
    assert_eq!(c(bson::bson!({ "$toDecimal": 1 })), dec("1"));
    assert_eq!(
        c(bson::bson!({ "$toDate": "1970-01-01T00:00:00.001Z" })),
        date(1)
    );
    assert_eq!(
        c(bson::bson!({ "$toObjectId": "0123456789abcdef01234567" })),
        Bson::ObjectId("0123456789abcdef01234567".parse().unwrap())
    );
    assert_eq!(
        c(bson::bson!({ "$convert": { "input": "x", "to": "int", "onError": "bad" } })),
        Bson::from("bad")
    );
    assert_eq!(
        val(
            bson::bson!({ "$convert": { "input": "$nope", "to": "int", "onNull": "none" } }),
            doc! {}
        ),
        Bson::from("none")
    );
    assert_eq!(
        kind(bson::bson!({ "$toInt": "$s" }), doc! { "s": "1.9" }),
        ErrorKind::ConversionFailure
    );
    assert_eq!(
        kind(
            bson::bson!({ "$convert": { "input": 1, "to": "objectId" } }),
            doc! {}
        ),
        ErrorKind::ConversionFailure
    );
    assert_eq!(
        kind(bson::bson!({ "$convert": { "input": 1 } }), doc! {}),
        ErrorKind::FailedToParse
    );
}

#[test]
fn date_parts_and_formats() {
    let d = doc! { "d": date(JULY_4) };
    let v = |e: Bson| val(e, d.clone());
    assert_eq!(v(bson::bson!({ "$year": "$d" })), Bson::Int32(2017));
    assert_eq!(v(bson::bson!({ "$month": "$d" })), Bson::Int32(7));
    assert_eq!(v(bson::bson!({ "$dayOfMonth": "$d" })), Bson::Int32(4));
    assert_eq!(
        v(bson::bson!({ "$hour": { "date": "$d", "timezone": "+05:30" } })),
        Bson::Int32(20)
    );
    assert_eq!(
        v(bson::bson!({ "$hour": { "date": "$d", "timezone": "America/New_York" } })),
        Bson::Int32(10)
    );
    assert_eq!(v(bson::bson!({ "$millisecond": ["$d"] })), Bson::Int32(911));
    assert_eq!(v(bson::bson!({ "$dayOfWeek": "$d" })), Bson::Int32(3));
    assert_eq!(v(bson::bson!({ "$dayOfYear": "$d" })), Bson::Int32(185));
    assert_eq!(v(bson::bson!({ "$week": "$d" })), Bson::Int32(27));
    assert_eq!(v(bson::bson!({ "$isoWeek": "$d" })), Bson::Int32(27));
    assert_eq!(v(bson::bson!({ "$isoDayOfWeek": "$d" })), Bson::Int32(2));
    assert_eq!(v(bson::bson!({ "$isoWeekYear": "$d" })), Bson::Int64(2017));
    // From jstests/aggregation/expressions/date_to_string.js.
    let fmt = "%Y-%m-%d %H:%M:%S %z (%Z minutes)";
    for (tz, expected) in [
        ("UTC", "2017-07-04 14:56:42 +0000 (0 minutes)"),
        ("Europe/London", "2017-07-04 15:56:42 +0100 (60 minutes)"),
        (
            "America/New_York",
            "2017-07-04 10:56:42 -0400 (-240 minutes)",
        ),
        ("Australia/Eucla", "2017-07-04 23:41:42 +0845 (525 minutes)"),
        ("Asia/Kathmandu", "2017-07-04 20:41:42 +0545 (345 minutes)"),
        ("+05:30", "2017-07-04 20:26:42 +0530 (330 minutes)"),
    ] {
        assert_eq!(
            v(bson::bson!({ "$dateToString": { "format": fmt, "date": "$d", "timezone": tz } })),
            Bson::from(expected),
            "{tz}"
        );
    }
    assert_eq!(
        v(bson::bson!({ "$dateToString": { "date": "$d" } })),
        Bson::from("2017-07-04T14:56:42.911Z")
    );
    assert_eq!(
        v(
            bson::bson!({ "$dateToString": { "format": "%b (%B) %d, %Y %j %u %w %U %V %G %%", "date": "$d" } })
        ),
        Bson::from("Jul (July) 04, 2017 185 2 3 27 27 2017 %")
    );
    assert_eq!(
        val(
            bson::bson!({ "$dateToString": { "date": "$nope", "onNull": "none" } }),
            doc! {}
        ),
        Bson::from("none")
    );
    assert_eq!(
        expr_kind(
            bson::bson!({ "$dateToString": { "date": "$d", "format": "%n" } }),
            d.clone()
        ),
        ExprError::FormatInvalidSpecifier
    );
    assert_eq!(
        expr_kind(
            bson::bson!({ "$dateToString": { "date": "$d", "timezone": "DoesNotExist" } }),
            d.clone()
        ),
        ExprError::UnknownTimeZone
    );
    assert_eq!(
        expr_kind(bson::bson!({ "$dateToString": { "date": 42 } }), doc! {}),
        ExprError::DateConversion
    );
}

#[test]
fn date_construction_and_arithmetic() {
    assert_eq!(
        c(bson::bson!({ "$dateFromString": { "dateString": "2017-07-04T14:56:42.911Z" } })),
        date(JULY_4)
    );
    assert_eq!(
        c(
            bson::bson!({ "$dateFromString": { "dateString": "2017-07-04 10:56:42.911", "timezone": "America/New_York" } })
        ),
        date(JULY_4)
    );
    assert_eq!(
        c(bson::bson!({ "$dateFromString": { "dateString": "04/07/2017", "format": "%d/%m/%Y" } })),
        date(1_499_126_400_000)
    );
    assert_eq!(
        c(bson::bson!({ "$dateFromString": { "dateString": "nope", "onError": "bad" } })),
        Bson::from("bad")
    );
    assert_eq!(
        c(
            bson::bson!({ "$dateFromParts": { "year": 2017, "month": 7, "day": 4, "hour": 14, "minute": 56, "second": 42, "millisecond": 911 } })
        ),
        date(JULY_4)
    );
    // Out-of-range parts carry over, as in the documentation's example.
    assert_eq!(
        c(bson::bson!({ "$dateFromParts": { "year": 2017, "month": 14, "day": 1 } })),
        c(bson::bson!({ "$dateFromParts": { "year": 2018, "month": 2, "day": 1 } }))
    );
    assert_eq!(
        c(bson::bson!({ "$dateToParts": { "date": date(JULY_4) } })),
        bson::bson!({ "year": 2017, "month": 7, "day": 4, "hour": 14, "minute": 56, "second": 42, "millisecond": 911 })
    );
    // January 31 plus one month is the last day of February.
    let jan31 = c(bson::bson!({ "$dateFromParts": { "year": 2021, "month": 1, "day": 31 } }));
    let feb28 = c(bson::bson!({ "$dateFromParts": { "year": 2021, "month": 2, "day": 28 } }));
    assert_eq!(
        c(
            bson::bson!({ "$dateAdd": { "startDate": jan31.clone(), "unit": "month", "amount": 1 } })
        ),
        feb28
    );
    assert_eq!(
        c(
            bson::bson!({ "$dateSubtract": { "startDate": date(10_000), "unit": "second", "amount": 3 } })
        ),
        date(7_000)
    );
    assert_eq!(
        c(
            bson::bson!({ "$dateDiff": { "startDate": jan31.clone(), "endDate": feb28.clone(), "unit": "month" } })
        ),
        Bson::Int64(1)
    );
    assert_eq!(
        c(bson::bson!({ "$dateDiff": { "startDate": jan31, "endDate": feb28, "unit": "day" } })),
        Bson::Int64(28)
    );
    assert_eq!(
        c(bson::bson!({ "$dateTrunc": { "date": date(JULY_4), "unit": "day" } })),
        date(JULY_4 - JULY_4 % 86_400_000)
    );
    assert_eq!(
        c(bson::bson!({ "$dateTrunc": { "date": date(JULY_4), "unit": "hour", "binSize": 6 } })),
        date(JULY_4 - JULY_4 % 86_400_000 + 12 * 3_600_000)
    );
    assert_eq!(
        expr_kind(bson::bson!({ "$dateAdd": {} }), doc! {}),
        ExprError::DateArithMissingArgument
    );
}

#[test]
fn variables_let_root_current_remove_and_now() {
    let d = doc! { "a": 1, "sub": { "a": 2 } };
    assert_eq!(
        val(
            bson::bson!({ "$let": { "vars": { "x": 10, "y": "$a" }, "in": { "$add": ["$$x", "$$y"] } } }),
            d.clone()
        ),
        Bson::Int32(11)
    );
    assert_eq!(val(bson::bson!("$$ROOT.sub.a"), d.clone()), Bson::Int32(2));
    // Rebinding CURRENT changes what "$a" means.
    assert_eq!(
        val(
            bson::bson!({ "$let": { "vars": { "CURRENT": "$sub" }, "in": "$a" } }),
            d.clone()
        ),
        Bson::Int32(2)
    );
    assert_eq!(eval(bson::bson!("$$REMOVE"), d.clone()).unwrap(), None);
    assert_eq!(c(bson::bson!("$$NOW")), date(1_500_000_000_000));
    assert_eq!(
        kind(bson::bson!("$$nope"), d.clone()),
        ErrorKind::Expression(ExprError::UndefinedVariable)
    );
    assert_eq!(
        kind(
            bson::bson!({ "$let": { "vars": { "Bad": 1 }, "in": 1 } }),
            d.clone()
        ),
        ErrorKind::FailedToParse
    );
    assert_eq!(
        kind(bson::bson!("$$CLUSTER_TIME"), d),
        ErrorKind::Expression(ExprError::VariableUnavailable)
    );
}

#[test]
fn command_let_is_evaluated_once_in_order() {
    let lets = raw(
        &doc! { "a": 2, "b": { "$add": ["$$a", 3] }, "c": { "$multiply": ["$$a", "$$b"] }, "t": "$$NOW" },
    );
    let now = DateTime::from_millis(42);
    let env = Env::with_let(now, Some(&lets)).unwrap();
    let value = parse_with(bson::bson!(["$$c", "$$t"]), &env)
        .unwrap()
        .eval(&raw(&doc! {}))
        .unwrap()
        .map(|v| Bson::try_from(v).unwrap());
    assert_eq!(value, Some(bson::bson!([10, date(42)])));
    let fails = |lets: Document| Env::with_let(now, Some(&raw(&lets))).unwrap_err().kind;
    assert_eq!(
        fails(doc! { "a": "$field" }),
        ErrorKind::Expression(ExprError::LetReadsDocument)
    );
    assert_eq!(
        fails(doc! { "a": "$$undefined" }),
        ErrorKind::Expression(ExprError::UndefinedVariable)
    );
    assert_eq!(fails(doc! { "Upper": 1 }), ErrorKind::FailedToParse);
    assert_eq!(
        fails(doc! { "NOW": 1 }),
        ErrorKind::Expression(ExprError::LetSetsSystemVariable)
    );
}

#[test]
fn malformed_expressions_are_refused_as_mongod_refuses_them() {
    let k = |e: Bson| parse_with(e, &env()).unwrap_err().kind;
    assert_eq!(
        k(bson::bson!({ "$foo": 1 })),
        ErrorKind::InvalidPipelineOperator
    );
    assert_eq!(
        k(bson::bson!({ "$add": 1, "b": 2 })),
        ErrorKind::Expression(ExprError::OperatorNotAlone)
    );
    assert_eq!(
        k(bson::bson!({ "$subtract": [1] })),
        ErrorKind::Expression(ExprError::ArgCount)
    );
    assert_eq!(
        k(bson::bson!({ "$substrCP": ["a"] })),
        ErrorKind::Expression(ExprError::ArgCount)
    );
    assert_eq!(
        k(bson::bson!({ "$round": [1, 2, 3] })),
        ErrorKind::Expression(ExprError::ArgCountRange)
    );
    assert_eq!(
        k(bson::bson!({ "a": 1, "a.b": 2 })),
        ErrorKind::Expression(ExprError::FieldNameDot)
    );
    assert_eq!(k(bson::bson!("$")), ErrorKind::InvalidFieldPathExpression);
    assert_eq!(k(bson::bson!({ "$hash": 1 })), ErrorKind::NotImplemented);
    assert_eq!(
        k(bson::bson!({ "$regexMatch": { "input": "a" } })),
        ErrorKind::Expression(ExprError::RegexMissingRegex)
    );
    assert_eq!(
        k(bson::bson!({ "$regexFind": { "input": "a", "regex": "a", "flags": "i" } })),
        ErrorKind::Expression(ExprError::RegexUnknownArgument)
    );
    let e = parse_with(bson::bson!({ "$subtract": [1] }), &env()).unwrap_err();
    assert_eq!(
        e.message,
        "Expression $subtract takes exactly 2 arguments. 1 were passed in."
    );
    let e = parse_with(bson::bson!({ "$foo": 1 }), &env()).unwrap_err();
    assert_eq!(e.message, "Unrecognized expression '$foo'");
}

/// The manual's `$regexMatch`, `$regexFind` and `$regexFindAll` pages:
/// match documents, code-point `idx`, captures (null for a group that took
/// no part), options from either place, and the argument errors.
#[test]
fn regex_operators() {
    let re = |p: &str, o: &str| {
        Bson::RegularExpression(bson::Regex {
            pattern: p.try_into().unwrap(),
            options: o.try_into().unwrap(),
        })
    };
    assert_eq!(
        c(
            bson::bson!({ "$regexMatch": { "input": "Single LINE", "regex": "line", "options": "i" } })
        ),
        Bson::Boolean(true)
    );
    assert_eq!(
        c(bson::bson!({ "$regexMatch": { "input": null, "regex": "a" } })),
        Bson::Boolean(false)
    );
    assert_eq!(
        c(
            bson::bson!({ "$regexFind": { "input": "Single LINE description.", "regex": (re("line", "i")) } })
        ),
        Bson::Document(doc! { "match": "LINE", "idx": 7, "captures": [] })
    );
    assert_eq!(
        c(bson::bson!({ "$regexFind": { "input": "abc", "regex": "(x)?(b)" } })),
        Bson::Document(doc! { "match": "b", "idx": 1, "captures": [Bson::Null, "b"] })
    );
    assert_eq!(
        c(bson::bson!({ "$regexFind": { "input": "abc", "regex": "z" } })),
        Bson::Null
    );
    assert_eq!(
        c(bson::bson!({ "$regexFindAll": { "input": "café latte café", "regex": "caf." } })),
        Bson::Array(vec![
            Bson::Document(doc! { "match": "café", "idx": 0, "captures": [] }),
            Bson::Document(doc! { "match": "café", "idx": 11, "captures": [] }),
        ])
    );
    assert_eq!(
        c(bson::bson!({ "$regexFindAll": { "input": null, "regex": "a" } })),
        Bson::Array(vec![])
    );
    let e = |v: Bson| expr_kind(v, doc! {});
    assert_eq!(
        e(bson::bson!({ "$regexMatch": { "input": 5, "regex": "a" } })),
        ExprError::RegexInputType
    );
    assert_eq!(
        e(bson::bson!({ "$regexMatch": { "input": "a", "regex": 5 } })),
        ExprError::RegexRegexType
    );
    assert_eq!(
        e(bson::bson!({ "$regexMatch": { "input": "a", "regex": "(" } })),
        ExprError::RegexInvalid
    );
    assert_eq!(
        e(
            bson::bson!({ "$regexMatch": { "input": "a", "regex": (re("a", "i")), "options": "m" } })
        ),
        ExprError::RegexOptionsTwice
    );
}

/// jstests/aggregation/expressions/expression_trigonometric.js, for ints,
/// longs and doubles.
#[test]
fn trigonometric_operators() {
    let input = doc! { "i": 1, "l": 1_i64, "z": 0, "inf": f64::INFINITY, "ninf": f64::NEG_INFINITY, "nan": f64::NAN, "s": "x" };
    for (op, arg, expected) in [
        ("$acos", "$i", 0.0),
        ("$acosh", "$l", 0.0),
        ("$asin", "$z", 0.0),
        ("$cos", "$z", 1.0),
        ("$cosh", "$z", 1.0),
        ("$sin", "$z", 0.0),
        ("$tanh", "$inf", 1.0),
        ("$tanh", "$ninf", -1.0),
        ("$atanh", "$i", f64::INFINITY),
        ("$acosh", "$inf", f64::INFINITY),
        ("$sinh", "$ninf", f64::NEG_INFINITY),
        ("$radiansToDegrees", "$inf", f64::INFINITY),
    ] {
        assert_eq!(
            val(bson::bson!({ op: arg }), input.clone()),
            Bson::Double(expected),
            "{op}"
        );
    }
    let atan = val(bson::bson!({ "$atan": "$inf" }), input.clone());
    assert_eq!(atan, Bson::Double(std::f64::consts::FRAC_PI_2));
    assert_eq!(
        val(bson::bson!({ "$degreesToRadians": 180 }), doc! {}),
        Bson::Double(std::f64::consts::PI)
    );
    assert_eq!(
        val(bson::bson!({ "$atan2": [0, 1] }), doc! {}),
        Bson::Double(0.0)
    );
    assert_eq!(
        val(bson::bson!({ "$atan2": [0, 0] }), doc! {}),
        Bson::Double(0.0)
    );
    let Bson::Double(a) = val(bson::bson!({ "$atan2": [3, 2] }), doc! {}) else {
        panic!("a double");
    };
    assert!((a - 0.982_793_723_2).abs() < 5e-8, "{a}");
    for op in [
        "$acos", "$asin", "$atan", "$cos", "$sin", "$tan", "$acosh", "$tanh",
    ] {
        let Bson::Double(x) = val(bson::bson!({ op: "$nan" }), input.clone()) else {
            panic!("{op}: a double");
        };
        assert!(x.is_nan(), "{op} keeps NaN");
    }
    assert_eq!(
        eval(bson::bson!({ "$sin": "$missing" }), doc! {}).unwrap(),
        Some(Bson::Null)
    );
    assert_eq!(
        eval(bson::bson!({ "$atan2": [null, 1] }), doc! {}).unwrap(),
        Some(Bson::Null)
    );

    let k = |e: Bson| expr_kind(e, input.clone());
    for (op, arg) in [
        ("$acos", Bson::Int32(2)),
        ("$asin", Bson::Int64(-2)),
        ("$acosh", Bson::Int32(0)),
        ("$acosh", Bson::Double(0.9)),
        ("$atanh", Bson::Double(1.00001)),
        ("$sin", Bson::String("$inf".into())),
        ("$cos", Bson::String("$ninf".into())),
        ("$tan", Bson::String("$inf".into())),
        ("$acos", Bson::String("$inf".into())),
    ] {
        assert_eq!(
            k(bson::bson!({ op: arg.clone() })),
            ExprError::TrigOutOfDomain,
            "{op} {arg}"
        );
    }
    let message = eval(bson::bson!({ "$acos": 2 }), doc! {})
        .unwrap_err()
        .message;
    assert_eq!(message, "cannot apply $acos to 2, value must be in [-1,1]");
    let message = eval(bson::bson!({ "$sin": "$inf" }), input.clone())
        .unwrap_err()
        .message;
    assert_eq!(
        message,
        "cannot apply $sin to inf, value must be in (-inf,inf)"
    );
    assert_eq!(k(bson::bson!({ "$cosh": "$s" })), ExprError::NumericArgType);
    assert_eq!(
        k(bson::bson!({ "$atan2": ["$s", "$s"] })),
        ExprError::Atan2YType
    );
    assert_eq!(
        k(bson::bson!({ "$atan2": ["$s", 0.0] })),
        ExprError::Atan2YType
    );
    assert_eq!(
        k(bson::bson!({ "$atan2": [0.0, "$s"] })),
        ExprError::Atan2XType
    );
    assert_eq!(k(bson::bson!({ "$sin": [1, 2] })), ExprError::ArgCount);
    assert_eq!(
        kind(bson::bson!({ "$sin": dec("1") }), doc! {}),
        ErrorKind::NotImplemented
    );
}

/// jstests/aggregation/expressions/bitwise.js.
#[test]
fn bitwise_operators() {
    let rows = [(0, 127), (1, 2), (2, 3), (3, 5)];
    let on = |op: &str, (a, b): (i32, i32)| {
        val(bson::bson!({ op: ["$a", "$b"] }), doc! { "a": a, "b": b })
    };
    let results = |op: &str| rows.iter().map(|r| on(op, *r)).collect::<Vec<_>>();
    let ints = |v: [i32; 4]| v.map(Bson::Int32).to_vec();
    assert_eq!(results("$bitAnd"), ints([0, 0, 2, 1]));
    assert_eq!(results("$bitOr"), ints([127, 3, 3, 7]));
    assert_eq!(results("$bitXor"), ints([127, 3, 1, 6]));
    assert_eq!(
        val(bson::bson!({ "$bitNot": "$a" }), doc! { "a": 3 }),
        Bson::Int32(-4)
    );
    assert_eq!(
        val(bson::bson!({ "$bitNot": 1_i64 }), doc! {}),
        Bson::Int64(-2)
    );
    assert_eq!(
        val(bson::bson!({ "$bitOr": [1, 4_i64] }), doc! {}),
        Bson::Int64(5)
    );
    assert_eq!(
        val(bson::bson!({ "$bitAnd": [] }), doc! {}),
        Bson::Int32(-1)
    );
    assert_eq!(val(bson::bson!({ "$bitXor": [] }), doc! {}), Bson::Int32(0));
    assert_eq!(
        val(bson::bson!({ "$bitAnd": [1, "$missing"] }), doc! {}),
        Bson::Null
    );
    let c_doc = doc! { "a": 1, "c": [1, 2] };
    for op in ["$bitAnd", "$bitOr", "$bitXor"] {
        for operand in [
            Bson::Double(12.0),
            dec("12"),
            Bson::String("$c".into()),
            bson::bson!(["$c"]),
            bson::bson!([[1, 2]]),
        ] {
            assert_eq!(
                kind(bson::bson!({ op: ["$a", operand.clone()] }), c_doc.clone()),
                ErrorKind::TypeMismatch,
                "{op} {operand}"
            );
        }
        assert_eq!(
            kind(bson::bson!({ op: "$c" }), c_doc.clone()),
            ErrorKind::TypeMismatch
        );
    }
    assert_eq!(
        kind(bson::bson!({ "$bitNot": 12.5 }), doc! {}),
        ErrorKind::TypeMismatch
    );
    assert_eq!(
        kind(
            bson::bson!({ "$bitNot": ["$a", "$b"] }),
            doc! { "a": 1, "b": 2 }
        ),
        ErrorKind::Expression(ExprError::ArgCount)
    );
}

/// jstests/aggregation/expressions/rand.js: uniform in [0, 1), drawn per
/// evaluation (so never folded), and no arguments.
#[test]
fn rand_draws_per_evaluation() {
    let e = parse_with(bson::bson!({ "$rand": {} }), &env()).unwrap();
    let doc = raw(&doc! {});
    let draws: Vec<f64> = (0..3000)
        .map(|_| match e.eval(&doc).unwrap() {
            Some(RawBson::Double(x)) => x,
            other => panic!("{other:?}"),
        })
        .collect();
    assert!(draws.iter().all(|x| (0.0..1.0).contains(x)));
    let mean = draws.iter().sum::<f64>() / draws.len() as f64;
    // Ten standard deviations of the mean of 3,000 uniform draws.
    assert!(
        (mean - 0.5).abs() < 10.0 / (12.0_f64 * 3000.0).sqrt(),
        "{mean}"
    );
    assert!(
        draws.windows(2).any(|w| w[0] != w[1]),
        "not one folded constant"
    );
    assert_eq!(
        kind(bson::bson!({ "$rand": { "seed": 1 } }), doc! {}),
        ErrorKind::Expression(ExprError::RandArguments)
    );
    assert_eq!(
        kind(bson::bson!({ "$rand": 1 }), doc! {}),
        ErrorKind::Expression(ExprError::RandArguments)
    );
}
