//! `$densify`: documents added where a sequence of numbers or dates has
//! gaps. The stage holds its input (within the blocking-stage limit),
//! orders it by the partition fields and then the densified field, and
//! emits each partition with new documents `{field: v, <partition
//! fields>}` at every `lower + k·step` (`k·step` of `unit` for dates) in
//! `[lower, upper)` that no document holds, where the range is the bounds
//! given, every partition's together (`"full"`) or the partition's own
//! (`"partition"`). Documents without the field pass through first.
//! mongod caps the documents generated at 500,000 (its
//! `internalQueryMaxAllowedDensifyDocs`).

use std::cmp::Ordering;

use bson::{RawBson, RawBsonRef, RawDocument, RawDocumentBuf};

use super::expr::TimeUnit;
use super::kind::{Densify, DensifyBounds};
use super::lookup::check_as_field;
use super::project::set_path;
use crate::encoding::arith::Num;
use crate::encoding::cmp::Cmp;
use crate::encoding::display::type_name;
use crate::error::{Error, ErrorKind, Result, StageError};
use crate::query::path::field;

/// mongod's default `internalQueryMaxAllowedDensifyDocs`.
const MAX_GENERATED: u64 = 500_000;

fn stage_error(e: StageError, message: impl Into<String>) -> Error {
    Error::new(ErrorKind::Stage(e), message)
}

fn wrong_type(field: &str, v: &RawBsonRef<'_>, expected: &str) -> Error {
    Error::new(
        ErrorKind::TypeMismatch,
        format!(
            "BSON field '$densify.{field}' is the wrong type '{}', expected {expected}",
            type_name(v)
        ),
    )
}

fn missing(field: &str) -> Error {
    Error::new(
        ErrorKind::MissingField,
        format!("BSON field '$densify.{field}' is missing but a required field"),
    )
}

/// A position in the sequence: a number or a date's milliseconds.
#[derive(Debug, Clone, Copy)]
enum Point {
    Number(Num),
    Date(i64),
}

impl Densify {
    pub(super) fn parse(spec: RawBsonRef<'_>) -> Result<Densify> {
        let RawBsonRef::Document(d) = spec else {
            return Err(Error::failed_to_parse(format!(
                "the $densify stage specification must be an object, but found {}",
                type_name(&spec)
            )));
        };
        let (mut field, mut partition_by, mut range) = (None, Vec::new(), None);
        for el in d {
            let (k, v) = el?;
            match (k.as_str(), v) {
                ("field", RawBsonRef::String(s)) => {
                    check_as_field(s)?;
                    field = Some(s.to_owned());
                }
                ("field", other) => return Err(wrong_type("field", &other, "type 'string'")),
                ("partitionByFields", RawBsonRef::Array(a)) => {
                    for f in a {
                        match f? {
                            RawBsonRef::String(s) => {
                                check_as_field(s)?;
                                partition_by.push(s.to_owned());
                            }
                            other => {
                                return Err(wrong_type(
                                    "partitionByFields",
                                    &other,
                                    "type 'string'",
                                ));
                            }
                        }
                    }
                }
                ("partitionByFields", other) => {
                    return Err(wrong_type("partitionByFields", &other, "type 'array'"));
                }
                ("range", RawBsonRef::Document(r)) => range = Some(r),
                ("range", other) => return Err(wrong_type("range", &other, "type 'object'")),
                (other, _) => {
                    return Err(Error::new(
                        ErrorKind::UnknownField,
                        format!("BSON field '$densify.{other}' is an unknown field."),
                    ));
                }
            }
        }
        let field = field.ok_or_else(|| missing("field"))?;
        let range = range.ok_or_else(|| missing("range"))?;
        for p in &partition_by {
            let within = |a: &str, b: &str| a == b || a.starts_with(&format!("{b}."));
            if within(p, &field) {
                return Err(stage_error(
                    StageError::DensifyPartitionHoldsField,
                    "BSON field '$densify.partitionByFields' contains the field that is being \
                     densified",
                ));
            }
            if within(&field, p) {
                return Err(stage_error(
                    StageError::DensifyFieldInPartition,
                    "The field that is being densified contains the BSON field \
                     '$densify.partitionByFields'",
                ));
            }
        }
        let (step, unit, bounds) = parse_range(range, &partition_by)?;
        Ok(Densify {
            field,
            partition_by,
            step,
            unit,
            bounds,
        })
    }

    /// The held input, densified and in order.
    pub(super) fn run(
        &self,
        input: Vec<RawDocumentBuf>,
        cmp: Cmp<'_>,
    ) -> Result<Vec<RawDocumentBuf>> {
        // (partition key, value at `field`, document)
        let mut keyed = Vec::with_capacity(input.len());
        for doc in input {
            let key: Vec<RawBson> = self
                .partition_by
                .iter()
                .map(|p| field_value(&doc, p).unwrap_or(RawBson::Null))
                .collect();
            let value = match field_value(&doc, &self.field) {
                None | Some(RawBson::Null) | Some(RawBson::Undefined) => None,
                Some(v) => Some(self.point(&v)?),
            };
            keyed.push((key, value, doc));
        }
        keyed.sort_by(|a, b| {
            a.0.iter()
                .zip(&b.0)
                .map(|(x, y)| cmp.values(x.as_raw_bson_ref(), y.as_raw_bson_ref()))
                .find(|o| *o != Ordering::Equal)
                .unwrap_or(Ordering::Equal)
                .then_with(|| match (&a.1, &b.1) {
                    (None, None) => Ordering::Equal,
                    (None, Some(_)) => Ordering::Less,
                    (Some(_), None) => Ordering::Greater,
                    (Some(x), Some(y)) => compare(*x, *y),
                })
        });
        let full = match &self.bounds {
            DensifyBounds::Full => {
                let mut values = keyed.iter().filter_map(|k| k.1);
                match values.next() {
                    Some(first) => {
                        let (lo, hi) =
                            values.fold((first, first), |(lo, hi), v| (min(lo, v), max(hi, v)));
                        Some((lo, hi))
                    }
                    None => None,
                }
            }
            DensifyBounds::Explicit(lo, hi) => Some((self.point(lo)?, self.point(hi)?)),
            DensifyBounds::Partition => None,
        };
        let mut out = Vec::with_capacity(keyed.len());
        let mut generated = 0u64;
        let mut start = 0;
        while start < keyed.len() {
            let mut end = start + 1;
            while end < keyed.len()
                && keyed[end]
                    .0
                    .iter()
                    .zip(&keyed[start].0)
                    .all(|(x, y)| cmp.values(x.as_raw_bson_ref(), y.as_raw_bson_ref()).is_eq())
            {
                end += 1;
            }
            let part = &keyed[start..end];
            let range = match full {
                Some(r) => Some(r),
                None => {
                    let mut values = part.iter().filter_map(|k| k.1);
                    values.next().map(|first| {
                        values.fold((first, first), |(lo, hi), v| (min(lo, v), max(hi, v)))
                    })
                }
            };
            let key = &part[0].0;
            let mut k: i64 = 0;
            let mut emit_until = |limit: Option<Point>,
                                  k: &mut i64,
                                  out: &mut Vec<RawDocumentBuf>|
             -> Result<()> {
                let Some((lo, hi)) = range else {
                    return Ok(());
                };
                loop {
                    let v = self.nth(lo, *k)?;
                    if compare(v, hi) != Ordering::Less
                        || limit.is_some_and(|l| compare(v, l) != Ordering::Less)
                    {
                        return Ok(());
                    }
                    *k += 1;
                    generated += 1;
                    if generated > MAX_GENERATED {
                        return Err(stage_error(
                            StageError::DensifyTooMany,
                            format!(
                                "Generated {generated} documents in $densify, which is over the \
                                 limit of {MAX_GENERATED}. Increase the \
                                 'internalQueryMaxAllowedDensifyDocs' parameter to allow more \
                                 generated documents"
                            ),
                        ));
                    }
                    out.push(self.generated(key, v)?);
                }
            };
            for (_, value, doc) in part {
                if let Some(v) = value
                    && let Some((lo, _)) = range
                {
                    emit_until(Some(*v), &mut k, &mut out)?;
                    // The next step is the first one past this value
                    // (none past the range's end is ever generated).
                    let (_, hi) = range.expect("a value gives a range");
                    loop {
                        let next = self.nth(lo, k)?;
                        if compare(next, *v).is_gt() || !compare(next, hi).is_lt() {
                            break;
                        }
                        k += 1;
                    }
                }
                out.push(doc.clone());
            }
            emit_until(None, &mut k, &mut out)?;
            start = end;
        }
        Ok(out)
    }

    fn point(&self, v: &RawBson) -> Result<Point> {
        match (v.as_raw_bson_ref(), self.unit) {
            (RawBsonRef::DateTime(d), Some(_)) => Ok(Point::Date(d.timestamp_millis())),
            (other, None) => match Num::from_bson(other) {
                Some(n) => Ok(Point::Number(n)),
                None => Err(stage_error(
                    StageError::DensifyValueType,
                    format!(
                        "Densify field type must be numeric with a numeric range, found {}",
                        type_name(&other)
                    ),
                )),
            },
            (other, Some(_)) => Err(stage_error(
                StageError::DensifyValueType,
                format!(
                    "Densify field type must be a date with a date range (unit), found {}",
                    type_name(&other)
                ),
            )),
        }
    }

    /// `lo + k·step`.
    fn nth(&self, lo: Point, k: i64) -> Result<Point> {
        let overflow = || {
            stage_error(
                StageError::DensifyValueType,
                "$densify stepped past the values it can represent",
            )
        };
        match (lo, self.unit) {
            (Point::Date(ms), Some(unit)) => {
                let steps = k
                    .checked_mul(self.step.to_f64() as i64)
                    .ok_or_else(overflow)?;
                unit.add_utc(ms, steps)
                    .map(Point::Date)
                    .ok_or_else(overflow)
            }
            (Point::Number(n), _) => {
                // An int step keeps int values while they fit, as mongod's
                // arithmetic does.
                let k = i32::try_from(k).map_or(Num::Long(k), Num::Int);
                let offset = self.step.mul(k).ok_or_else(overflow)?;
                Ok(Point::Number(n.sum(offset)))
            }
            (Point::Date(_), None) => Err(overflow()),
        }
    }

    /// `{field: v}` with the partition's fields.
    fn generated(&self, key: &[RawBson], v: Point) -> Result<RawDocumentBuf> {
        let mut doc = RawDocumentBuf::new();
        for (path, value) in self.partition_by.iter().zip(key) {
            let parts: Vec<&str> = path.split('.').collect();
            doc = set_path(&doc, &parts, value.clone())?;
        }
        let value = match v {
            Point::Number(n) => n.to_bson(),
            Point::Date(ms) => RawBson::DateTime(bson::DateTime::from_millis(ms)),
        };
        let parts: Vec<&str> = self.field.split('.').collect();
        set_path(&doc, &parts, value)
    }
}

fn compare(a: Point, b: Point) -> Ordering {
    match (a, b) {
        (Point::Date(x), Point::Date(y)) => x.cmp(&y),
        (Point::Number(x), Point::Number(y)) => {
            Cmp::new(None).values(x.to_bson().as_raw_bson_ref(), y.to_bson().as_raw_bson_ref())
        }
        (Point::Number(_), Point::Date(_)) => Ordering::Less,
        (Point::Date(_), Point::Number(_)) => Ordering::Greater,
    }
}

fn min(a: Point, b: Point) -> Point {
    if compare(b, a).is_lt() { b } else { a }
}

fn max(a: Point, b: Point) -> Point {
    if compare(b, a).is_gt() { b } else { a }
}

/// The value at dotted `path`, if there is one and no array is on the way.
fn field_value(doc: &RawDocument, path: &str) -> Option<RawBson> {
    let mut current = doc;
    let mut parts = path.split('.').peekable();
    while let Some(part) = parts.next() {
        let v = field(current, part)?;
        if parts.peek().is_none() {
            return Some(RawBson::from(v));
        }
        match v {
            RawBsonRef::Document(d) => current = d,
            _ => return None,
        }
    }
    None
}

/// `range: {step, unit?, bounds}`.
fn parse_range(
    r: &RawDocument,
    partition_by: &[String],
) -> Result<(Num, Option<TimeUnit>, DensifyBounds)> {
    let (mut step, mut unit, mut bounds) = (None, None, None);
    for el in r {
        let (k, v) = el?;
        match k.as_str() {
            "step" => match Num::from_bson(v) {
                Some(n) => step = Some(n),
                None => {
                    return Err(wrong_type(
                        "range.step",
                        &v,
                        "types '[int, decimal, double, long]'",
                    ));
                }
            },
            "unit" => match v {
                RawBsonRef::String(s) => {
                    unit = Some(TimeUnit::parse(s).ok_or_else(|| {
                        Error::new(ErrorKind::BadValue, format!("unknown time unit value: {s}"))
                    })?)
                }
                other => return Err(wrong_type("range.unit", &other, "type 'string'")),
            },
            "bounds" => bounds = Some(v),
            other => {
                return Err(Error::new(
                    ErrorKind::UnknownField,
                    format!("BSON field '$densify.range.{other}' is an unknown field."),
                ));
            }
        }
    }
    let step = step.ok_or_else(|| missing("range.step"))?;
    let bounds = bounds.ok_or_else(|| missing("range.bounds"))?;
    if step.to_f64().is_nan() || step.to_f64() <= 0.0 {
        return Err(stage_error(
            StageError::DensifyStepNotPositive,
            "the step parameter in a range statement must be a strictly positive numeric value",
        ));
    }
    let bad_bounds = || {
        stage_error(
            StageError::DensifyBoundsOrder,
            "the bounds in a range statement must be the string 'full', 'partition', or an \
             ascending array of two numbers or two dates",
        )
    };
    let bounds = match bounds {
        RawBsonRef::String("full") => DensifyBounds::Full,
        RawBsonRef::String("partition") if partition_by.is_empty() => {
            return Err(stage_error(
                StageError::DensifyPartitionWithoutFields,
                "one may not specify the bounds as 'partition' without specifying a non-empty \
                 array of partitionByFields. You may have meant to specify 'full' bounds.",
            ));
        }
        RawBsonRef::String("partition") => DensifyBounds::Partition,
        RawBsonRef::Array(a) => {
            let items: Vec<RawBsonRef<'_>> =
                a.into_iter().collect::<std::result::Result<_, _>>()?;
            let [lo, hi] = items[..] else {
                return Err(stage_error(
                    StageError::DensifyBoundsLength,
                    "a bounding array in a range statement must have exactly two elements",
                ));
            };
            match (lo, hi) {
                (RawBsonRef::DateTime(a), RawBsonRef::DateTime(b)) => {
                    if a > b {
                        return Err(bad_bounds());
                    }
                    if unit.is_none() {
                        return Err(Error::failed_to_parse(
                            "a date range in $densify needs a 'unit'",
                        ));
                    }
                }
                (RawBsonRef::DateTime(_), _) => return Err(bad_bounds()),
                (a, b) => match (Num::from_bson(a), Num::from_bson(b)) {
                    (Some(x), Some(y)) => {
                        if unit.is_some() {
                            return Err(stage_error(
                                StageError::DensifyUnitWithNumbers,
                                "numeric bounds may not have unit parameter",
                            ));
                        }
                        if Cmp::new(None)
                            .values(x.to_bson().as_raw_bson_ref(), y.to_bson().as_raw_bson_ref())
                            .is_gt()
                        {
                            return Err(bad_bounds());
                        }
                    }
                    _ => {
                        return Err(stage_error(
                            StageError::DensifyMixedBounds,
                            "a bounding array must contain either both dates or both numeric types",
                        ));
                    }
                },
            }
            DensifyBounds::Explicit(RawBson::from(lo), RawBson::from(hi))
        }
        _ => return Err(bad_bounds()),
    };
    if unit.is_some() && step.to_f64().fract() != 0.0 {
        return Err(stage_error(
            StageError::DensifyDateStepNotWhole,
            "The step parameter in a range satement must be a whole number when densifying a \
             date range",
        ));
    }
    Ok((step, unit, bounds))
}
