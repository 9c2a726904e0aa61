//! Type operators: `$type`, `$isNumber`, `$convert` and its shorthands
//! (`$toString`, `$toInt`, `$toLong`, `$toDouble`, `$toDecimal`, `$toBool`,
//! `$toDate`, `$toObjectId`), a timestamp's parts (`$tsSecond`,
//! `$tsIncrement`), sizes (`$binarySize`, `$bsonSize`), a value's hashed
//! index key (`$toHashedIndexKey`), and the string coercion the string
//! operators share.
//!
//! Conversions that cannot be made fail with ConversionFailure, the one
//! failure `$convert`'s `onError` catches.

use bson::oid::ObjectId;
use bson::spec::ElementType;
use bson::{RawBson, RawBsonRef};

use super::date::{format_date, parse_date_string};
use super::tree::{Arity, OpDef, op};
use super::value::{Cx, Val, fail, integral};
use crate::encoding::decimal::{self, Rounding};
use crate::encoding::display::type_name_of;
use crate::error::{Error, ErrorKind, ExprError, Result};

op!(TYPE, "$type", Arity::Exactly(1), type_of);
op!(IS_NUMBER, "$isNumber", Arity::Exactly(1), is_number);
op!(CONVERT, "$convert", Arity::Exactly(2), convert);
op!(TO_STRING, "$toString", Arity::Exactly(1), to_string);
op!(TO_INT, "$toInt", Arity::Exactly(1), to_int);
op!(TO_LONG, "$toLong", Arity::Exactly(1), to_long);
op!(TO_DOUBLE, "$toDouble", Arity::Exactly(1), to_double);
op!(TO_DECIMAL, "$toDecimal", Arity::Exactly(1), to_decimal);
op!(TO_BOOL, "$toBool", Arity::Exactly(1), to_bool);
op!(TO_DATE, "$toDate", Arity::Exactly(1), to_date);
op!(TO_OBJECT_ID, "$toObjectId", Arity::Exactly(1), to_object_id);

pub(super) static OPS: &[&OpDef] = &[
    &TYPE,
    &IS_NUMBER,
    &TO_STRING,
    &TO_INT,
    &TO_LONG,
    &TO_DOUBLE,
    &TO_DECIMAL,
    &TO_BOOL,
    &TO_DATE,
    &TO_OBJECT_ID,
    &TS_SECOND,
    &TS_INCREMENT,
    &TO_HASHED_INDEX_KEY,
    &BINARY_SIZE,
    &BSON_SIZE,
];

op!(TS_SECOND, "$tsSecond", Arity::Exactly(1), ts_second);
op!(
    TS_INCREMENT,
    "$tsIncrement",
    Arity::Exactly(1),
    ts_increment
);
op!(
    TO_HASHED_INDEX_KEY,
    "$toHashedIndexKey",
    Arity::Exactly(1),
    to_hashed_index_key
);
op!(BINARY_SIZE, "$binarySize", Arity::Exactly(1), binary_size);
op!(BSON_SIZE, "$bsonSize", Arity::Exactly(1), bson_size);

fn type_of<'a>(_: &Cx<'_>, args: Vec<Val<'a>>) -> Result<Val<'a>> {
    Ok(Val::string(args[0].type_name()))
}

fn is_number<'a>(_: &Cx<'_>, args: Vec<Val<'a>>) -> Result<Val<'a>> {
    Ok(Val::bool(args[0].is_number()))
}

/// What `$convert` may be asked to produce.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Target {
    Type(ElementType),
    Missing,
}

impl Target {
    fn name(self) -> &'static str {
        match self {
            Target::Type(t) => type_name_of(t),
            Target::Missing => "missing",
        }
    }
}

/// The type `to` names, by name or by number.
fn target(to: &Val<'_>) -> Result<Target> {
    if let Some(name) = to.as_str() {
        if name == "missing" {
            return Ok(Target::Missing);
        }
        return element_type_named(name)
            .map(Target::Type)
            .ok_or_else(|| Error::bad_value(format!("Unknown type name: {name}")));
    }
    if to.is_number() {
        let Some(code) = integral(to) else {
            return Err(Error::failed_to_parse(
                "In $convert, numeric 'to' argument is not an integer",
            ));
        };
        let t = match code {
            -1 => Some(ElementType::MinKey),
            127 => Some(ElementType::MaxKey),
            c => u8::try_from(c).ok().and_then(ElementType::from),
        };
        return t.map(Target::Type).ok_or_else(|| {
            Error::failed_to_parse(format!(
                "In $convert, numeric value for 'to' does not correspond to a BSON type: {code}"
            ))
        });
    }
    Err(Error::failed_to_parse(format!(
        "$convert's 'to' argument must be a string or number, but is {}",
        to.type_name()
    )))
}

/// The BSON type MongoDB names `name` (`"int"`, `"objectId"`, …).
fn element_type_named(name: &str) -> Option<ElementType> {
    (1u8..=19)
        .filter_map(ElementType::from)
        .chain([ElementType::MinKey, ElementType::MaxKey])
        .find(|t| type_name_of(*t) == name)
}

fn conversion_failure(message: impl Into<String>) -> Error {
    Error::new(ErrorKind::ConversionFailure, message)
}

fn unsupported(from: &Val<'_>, to: Target) -> Error {
    conversion_failure(format!(
        "Unsupported conversion from {} to {} in $convert with no onError value",
        from.type_name(),
        to.name()
    ))
}

/// `$convert`'s arguments are `[input, to]`; `onNull`/`onError` are the
/// evaluator's business.
fn convert<'a>(_: &Cx<'_>, args: Vec<Val<'a>>) -> Result<Val<'a>> {
    let mut args = args.into_iter();
    let input = args.next().unwrap_or(Val::Missing);
    let to = args.next().unwrap_or(Val::Missing);
    let target = if to.nullish() {
        None
    } else {
        Some(self::target(&to)?)
    };
    match target {
        _ if input.nullish() => Ok(Val::null()),
        None => Ok(Val::null()),
        Some(t) => convert_to(input, t),
    }
}

/// A shorthand (`$toInt`, …): `$convert` without `onNull`/`onError`.
fn shorthand<'a>(args: Vec<Val<'a>>, t: ElementType) -> Result<Val<'a>> {
    let input = args.into_iter().next().unwrap_or(Val::Missing);
    if input.nullish() {
        return Ok(Val::null());
    }
    convert_to(input, Target::Type(t))
}

fn to_string<'a>(_: &Cx<'_>, args: Vec<Val<'a>>) -> Result<Val<'a>> {
    shorthand(args, ElementType::String)
}

fn to_int<'a>(_: &Cx<'_>, args: Vec<Val<'a>>) -> Result<Val<'a>> {
    shorthand(args, ElementType::Int32)
}

fn to_long<'a>(_: &Cx<'_>, args: Vec<Val<'a>>) -> Result<Val<'a>> {
    shorthand(args, ElementType::Int64)
}

fn to_double<'a>(_: &Cx<'_>, args: Vec<Val<'a>>) -> Result<Val<'a>> {
    shorthand(args, ElementType::Double)
}

fn to_decimal<'a>(_: &Cx<'_>, args: Vec<Val<'a>>) -> Result<Val<'a>> {
    shorthand(args, ElementType::Decimal128)
}

fn to_bool<'a>(_: &Cx<'_>, args: Vec<Val<'a>>) -> Result<Val<'a>> {
    shorthand(args, ElementType::Boolean)
}

fn to_date<'a>(_: &Cx<'_>, args: Vec<Val<'a>>) -> Result<Val<'a>> {
    shorthand(args, ElementType::DateTime)
}

fn to_object_id<'a>(_: &Cx<'_>, args: Vec<Val<'a>>) -> Result<Val<'a>> {
    shorthand(args, ElementType::ObjectId)
}

fn overflow(shown: impl std::fmt::Display) -> Error {
    conversion_failure(format!(
        "Conversion would overflow target type in $convert with no onError value: {shown}"
    ))
}

fn nan_or_infinity(x: f64) -> Result<()> {
    if x.is_nan() {
        return Err(conversion_failure(
            "Attempt to convert NaN value to integer type in $convert with no onError value",
        ));
    }
    if x.is_infinite() {
        return Err(conversion_failure(
            "Attempt to convert infinity value to integer type in $convert with no onError value",
        ));
    }
    Ok(())
}

/// A double or decimal truncated to an `i64` for integer targets.
fn truncated(v: RawBsonRef<'_>) -> Result<i64> {
    match v {
        RawBsonRef::Double(x) => {
            nan_or_infinity(x)?;
            if (-9_223_372_036_854_775_808.0..9_223_372_036_854_775_808.0).contains(&x) {
                Ok(x as i64)
            } else {
                Err(overflow(x))
            }
        }
        RawBsonRef::Decimal128(d) => {
            let dec = decimal::decode(d);
            match dec {
                decimal::Dec::NaN => nan_or_infinity(f64::NAN).map(|_| 0),
                decimal::Dec::Inf { .. } => nan_or_infinity(f64::INFINITY).map(|_| 0),
                _ => decimal::to_i64(dec, Rounding::TowardZero).ok_or_else(|| overflow(d)),
            }
        }
        RawBsonRef::Int32(n) => Ok(n.into()),
        RawBsonRef::Int64(n) => Ok(n),
        _ => Ok(0),
    }
}

fn convert_to<'a>(input: Val<'a>, to: Target) -> Result<Val<'a>> {
    let Target::Type(t) = to else {
        return Err(unsupported(&input, to));
    };
    let Some(v) = input.get() else {
        return Ok(Val::null());
    };
    if v.element_type() == t {
        return Ok(input);
    }
    let out = match (v, t) {
        (_, ElementType::Boolean) => match v {
            RawBsonRef::String(_)
            | RawBsonRef::ObjectId(_)
            | RawBsonRef::Document(_)
            | RawBsonRef::Array(_)
            | RawBsonRef::Binary(_)
            | RawBsonRef::RegularExpression(_)
            | RawBsonRef::DbPointer(_)
            | RawBsonRef::JavaScriptCode(_)
            | RawBsonRef::Symbol(_)
            | RawBsonRef::JavaScriptCodeWithScope(_)
            | RawBsonRef::Timestamp(_)
            | RawBsonRef::MinKey
            | RawBsonRef::MaxKey => Val::bool(true),
            RawBsonRef::Double(_)
            | RawBsonRef::Int32(_)
            | RawBsonRef::Int64(_)
            | RawBsonRef::Decimal128(_)
            | RawBsonRef::DateTime(_) => Val::bool(input.truthy()),
            _ => return Err(unsupported(&input, to)),
        },
        (RawBsonRef::Double(x), ElementType::String) => Val::string(format_double(x)),
        (RawBsonRef::Int32(n), ElementType::String) => Val::string(n.to_string()),
        (RawBsonRef::Int64(n), ElementType::String) => Val::string(n.to_string()),
        (RawBsonRef::Decimal128(d), ElementType::String) => Val::string(d.to_string()),
        (RawBsonRef::Boolean(b), ElementType::String) => Val::string(b.to_string()),
        (RawBsonRef::ObjectId(o), ElementType::String) => Val::string(o.to_hex()),
        (RawBsonRef::DateTime(d), ElementType::String) => Val::string(format_date(
            d.timestamp_millis(),
            "%Y-%m-%dT%H:%M:%S.%LZ",
            0,
        )?),
        (RawBsonRef::Boolean(b), ElementType::Double) => Val::double(if b { 1.0 } else { 0.0 }),
        (RawBsonRef::Boolean(b), ElementType::Int32) => Val::int(b.into()),
        (RawBsonRef::Boolean(b), ElementType::Int64) => Val::long(b.into()),
        (RawBsonRef::Boolean(b), ElementType::Decimal128) => Val::Own(RawBson::Decimal128(
            decimal::encode(decimal::from_i64(b.into())),
        )),
        (RawBsonRef::DateTime(d), ElementType::Double) => Val::double(d.timestamp_millis() as f64),
        (RawBsonRef::DateTime(d), ElementType::Int64) => Val::long(d.timestamp_millis()),
        (RawBsonRef::DateTime(d), ElementType::Decimal128) => Val::Own(RawBson::Decimal128(
            decimal::encode(decimal::from_i64(d.timestamp_millis())),
        )),
        (RawBsonRef::ObjectId(o), ElementType::DateTime) => {
            Val::date(o.timestamp().timestamp_millis())
        }
        (
            RawBsonRef::Double(_) | RawBsonRef::Int64(_) | RawBsonRef::Decimal128(_),
            ElementType::DateTime,
        ) => Val::date(truncated(v)?),
        (
            RawBsonRef::Double(_) | RawBsonRef::Decimal128(_) | RawBsonRef::Int64(_),
            ElementType::Int32,
        ) => {
            let n = truncated(v)?;
            match i32::try_from(n) {
                Ok(i) => Val::int(i),
                Err(_) => return Err(overflow(super::value::shown(&input))),
            }
        }
        (RawBsonRef::Double(_) | RawBsonRef::Decimal128(_), ElementType::Int64) => {
            Val::long(truncated(v)?)
        }
        (RawBsonRef::Int32(n), ElementType::Int64) => Val::long(n.into()),
        (
            RawBsonRef::Int32(_) | RawBsonRef::Int64(_) | RawBsonRef::Decimal128(_),
            ElementType::Double,
        ) => Val::double(input.num().map_or(0.0, |n| n.to_f64())),
        (
            RawBsonRef::Int32(_) | RawBsonRef::Int64(_) | RawBsonRef::Double(_),
            ElementType::Decimal128,
        ) => match input.num() {
            Some(n) => Val::Own(RawBson::Decimal128(decimal::encode(n.to_dec()))),
            None => return Err(unsupported(&input, to)),
        },
        (RawBsonRef::String(s), _) => from_string(s, t, to)?,
        _ => return Err(unsupported(&input, to)),
    };
    Ok(out)
}

/// A string parsed as the target type.
fn from_string(s: &str, t: ElementType, to: Target) -> Result<Val<'static>> {
    let failed = |why: &str| {
        conversion_failure(format!(
            "Failed to parse number '{s}' in $convert with no onError value: {why}"
        ))
    };
    if matches!(
        t,
        ElementType::Int32 | ElementType::Int64 | ElementType::Double | ElementType::Decimal128
    ) && (s.starts_with("0x") || s.starts_with("0X"))
    {
        return Err(conversion_failure(format!(
            "Illegal hexadecimal input in $convert with no onError value: {s}"
        )));
    }
    Ok(match t {
        ElementType::Int32 => Val::int(
            s.parse::<i32>()
                .map_err(|_| failed("Did not consume whole string."))?,
        ),
        ElementType::Int64 => Val::long(
            s.parse::<i64>()
                .map_err(|_| failed("Did not consume whole string."))?,
        ),
        ElementType::Double => {
            if s.is_empty() || s.trim() != s {
                return Err(failed("Did not consume whole string."));
            }
            Val::double(s.parse::<f64>().map_err(|_| failed("Did not consume whole string."))?)
        }
        ElementType::Decimal128 => Val::Own(RawBson::Decimal128(
            s.parse::<bson::Decimal128>()
                .map_err(|_| failed("Failed to parse string to decimal"))?,
        )),
        ElementType::ObjectId => Val::Own(RawBson::ObjectId(
            ObjectId::parse_str(s).map_err(|_| {
                conversion_failure(format!(
                    "Failed to parse objectId '{s}' in $convert with no onError value: Invalid string length for parsing to OID, expected 24 but found {}",
                    s.len()
                ))
            })?,
        )),
        ElementType::DateTime => Val::date(parse_date_string(s, None, 0).map_err(|e| {
            if e.kind == ErrorKind::ConversionFailure {
                e
            } else {
                conversion_failure(e.message)
            }
        })?),
        _ => {
            return Err(conversion_failure(format!(
                "Unsupported conversion from string to {} in $convert with no onError value",
                to.name()
            )));
        }
    })
}

/// A double as MongoDB prints it in `$toString`.
fn format_double(x: f64) -> String {
    if x.is_infinite() {
        if x > 0.0 { "Infinity" } else { "-Infinity" }.to_owned()
    } else if x.is_nan() {
        "NaN".to_owned()
    } else if x == 0.0 && x.is_sign_negative() {
        "-0".to_owned()
    } else {
        format!("{x}")
    }
}

/// A value as the string operators see it (`$toLower`, `$substr…`,
/// `$strcasecmp`): null and missing are the empty string, numbers and dates
/// are printed, and anything else cannot be used.
pub(super) fn coerce_to_string(v: &Val<'_>) -> Result<String> {
    let Some(r) = v.get() else {
        return Ok(String::new());
    };
    Ok(match r {
        RawBsonRef::Null | RawBsonRef::Undefined => String::new(),
        RawBsonRef::String(s) | RawBsonRef::Symbol(s) | RawBsonRef::JavaScriptCode(s) => {
            s.to_owned()
        }
        RawBsonRef::Int32(n) => n.to_string(),
        RawBsonRef::Int64(n) => n.to_string(),
        RawBsonRef::Double(x) => format_double(x),
        RawBsonRef::Decimal128(d) => d.to_string(),
        RawBsonRef::DateTime(d) => format_date(d.timestamp_millis(), "%Y-%m-%dT%H:%M:%S.%LZ", 0)?,
        RawBsonRef::Timestamp(t) => format!("Timestamp({}, {})", t.time, t.increment),
        _ => {
            return Err(fail(
                ExprError::StringConversion,
                format!("can't convert from BSON type {} to String", v.type_name()),
            ));
        }
    })
}

/// `$tsSecond` and `$tsIncrement`: a timestamp's parts, as longs.
fn timestamp_part<'a>(args: Vec<Val<'a>>, name: &str, seconds: bool) -> Result<Val<'a>> {
    match args[0].get() {
        None | Some(RawBsonRef::Null | RawBsonRef::Undefined) => Ok(Val::null()),
        Some(RawBsonRef::Timestamp(ts)) => Ok(Val::long(i64::from(match seconds {
            true => ts.time,
            false => ts.increment,
        }))),
        Some(_) => Err(fail(
            match seconds {
                true => ExprError::TsSecondNotTimestamp,
                false => ExprError::TsIncrementNotTimestamp,
            },
            format!(
                "Argument to {name} must be a timestamp, but is {}",
                args[0].type_name()
            ),
        )),
    }
}

fn ts_second<'a>(_: &Cx<'_>, args: Vec<Val<'a>>) -> Result<Val<'a>> {
    timestamp_part(args, "$tsSecond", true)
}

fn ts_increment<'a>(_: &Cx<'_>, args: Vec<Val<'a>>) -> Result<Val<'a>> {
    timestamp_part(args, "$tsIncrement", false)
}

/// `$toHashedIndexKey`: the key a `hashed` index gives the value.
fn to_hashed_index_key<'a>(_: &Cx<'_>, args: Vec<Val<'a>>) -> Result<Val<'a>> {
    let value = args[0].get().unwrap_or(RawBsonRef::Null);
    Ok(Val::long(crate::encoding::hashed::hash64(value)))
}

/// `$binarySize`: a string's UTF-8 bytes or a BinData's length.
fn binary_size<'a>(_: &Cx<'_>, args: Vec<Val<'a>>) -> Result<Val<'a>> {
    match args[0].get() {
        None | Some(RawBsonRef::Null | RawBsonRef::Undefined) => Ok(Val::null()),
        Some(RawBsonRef::String(s)) => Ok(Val::int_or_long(s.len() as i64)),
        Some(RawBsonRef::Binary(b)) => Ok(Val::int_or_long(b.bytes.len() as i64)),
        Some(_) => Err(fail(
            ExprError::BinarySizeType,
            format!(
                "$binarySize requires a string or BinData argument, found: {}",
                args[0].type_name()
            ),
        )),
    }
}

/// `$bsonSize`: a document's size in bytes, as BSON.
fn bson_size<'a>(_: &Cx<'_>, args: Vec<Val<'a>>) -> Result<Val<'a>> {
    match args[0].get() {
        None | Some(RawBsonRef::Null | RawBsonRef::Undefined) => Ok(Val::null()),
        Some(RawBsonRef::Document(d)) => Ok(Val::int_or_long(d.as_bytes().len() as i64)),
        Some(_) => Err(fail(
            ExprError::BsonSizeType,
            format!(
                "$bsonSize requires a document input, found: {}",
                args[0].type_name()
            ),
        )),
    }
}
