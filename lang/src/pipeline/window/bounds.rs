//! The window of one `$setWindowFields` output: parsing `window:
//! {documents: [l, u]}` and `{range: [l, u], unit}` with mongod's errors,
//! and finding, for each document of a sorted partition, the positions its
//! window covers. Knows nothing of window functions or of how a partition
//! was gathered.

use std::ops::Range;

use bson::{RawBsonRef, RawDocument};

use super::super::expr::{Env, Expr, TimeUnit};
use crate::encoding::display::type_name;
use crate::error::{Error, ErrorKind, Result, StageError};
use crate::query::value::number_as_f64;

/// One end of a window.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Bound<T> {
    Unbounded,
    /// The current document (and, for a range, only it, not its ties).
    Current,
    At(T),
}

/// Which documents of the partition a document's window holds.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Window {
    /// Positions relative to the current document.
    Documents(Bound<i64>, Bound<i64>),
    /// Values of the single `sortBy` field relative to the current
    /// document's: numbers, or dates moved by `unit`s.
    Range {
        lower: Bound<f64>,
        upper: Bound<f64>,
        unit: Option<TimeUnit>,
    },
}

/// The whole partition, what a window function without `window` sees.
pub(crate) const WHOLE: Window = Window::Documents(Bound::Unbounded, Bound::Unbounded);

fn fail(kind: StageError, message: impl Into<String>) -> Error {
    Error::new(ErrorKind::Stage(kind), message)
}

impl Window {
    /// Parses a `window` specification.
    pub(crate) fn parse(spec: RawBsonRef<'_>, env: &Env) -> Result<Window> {
        let RawBsonRef::Document(d) = spec else {
            return Err(Error::failed_to_parse("'window' field must be an object"));
        };
        let (mut documents, mut range, mut unit) = (None, None, None);
        for el in d.iter() {
            let (k, v) = el?;
            match k.as_str() {
                "documents" if range.is_none() => documents = Some(v),
                "range" if documents.is_none() => range = Some(v),
                "unit" => unit = Some(v),
                _ => {
                    return Err(Error::failed_to_parse(
                        "'window' field can only contain 'documents' as the only argument or \
                         'range' with an optional 'unit' field",
                    ));
                }
            }
        }
        let window = match (documents, range, unit) {
            (Some(b), None, None) => {
                let (l, u) = pair(b)?;
                let parse = |v| {
                    bound(v, env, |x| {
                        (x.fract() == 0.0 && x.abs() < 9.0e15).then_some(x as i64)
                    })
                    .ok_or_else(|| {
                        Error::failed_to_parse("Numeric document-based bounds must be an integer")
                    })
                };
                Window::Documents(parse(l)?, parse(u)?)
            }
            (None, Some(b), unit) => {
                let unit = match unit {
                    None => None,
                    Some(RawBsonRef::String(s)) => Some(TimeUnit::parse(s).ok_or_else(|| {
                        Error::bad_value(format!("unknown time unit value: {s}"))
                    })?),
                    Some(other) => {
                        return Err(Error::failed_to_parse(format!(
                            "'unit' must be a string, not {}",
                            type_name(&other)
                        )));
                    }
                };
                let (l, u) = pair(b)?;
                let parse = |v| {
                    bound(v, env, |x| {
                        // Time-based bounds count whole units.
                        (unit.is_none() || x.fract() == 0.0).then_some(x)
                    })
                    .ok_or_else(|| {
                        Error::failed_to_parse(if unit.is_some() {
                            "With 'unit', range-based bounds must be an integer"
                        } else {
                            "Range-based bounds expression must be a number"
                        })
                    })
                };
                Window::Range {
                    lower: parse(l)?,
                    upper: parse(u)?,
                    unit,
                }
            }
            _ => {
                return Err(Error::failed_to_parse(
                    "'window' field that specifies 'unit' must also specify 'range', and one of \
                     'documents' or 'range' is required",
                ));
            }
        };
        window.check_order()?;
        Ok(window)
    }

    /// mongod's 5339900: the lower bound may not come after the upper.
    fn check_order(&self) -> Result<()> {
        fn rank(b: Bound<f64>, lower: bool) -> f64 {
            match b {
                Bound::Unbounded if lower => f64::NEG_INFINITY,
                Bound::Unbounded => f64::INFINITY,
                Bound::Current => 0.0,
                Bound::At(x) => x,
            }
        }
        let as_f64 = |b: Bound<i64>| match b {
            Bound::Unbounded => Bound::Unbounded,
            Bound::Current => Bound::Current,
            Bound::At(n) => Bound::At(n as f64),
        };
        let (l, u) = match *self {
            Window::Documents(l, u) => (as_f64(l), as_f64(u)),
            Window::Range { lower, upper, .. } => (lower, upper),
        };
        if rank(l, true) > rank(u, false) {
            return Err(fail(
                StageError::WindowBoundsBackwards,
                "Lower bound must not exceed upper bound",
            ));
        }
        Ok(())
    }

    /// Whether the window is the whole partition whatever the order.
    pub(crate) fn is_whole(&self) -> bool {
        *self == WHOLE
    }

    pub(crate) fn is_range(&self) -> bool {
        matches!(self, Window::Range { .. })
    }

    /// Whether every window starts at the partition's first document, so
    /// each document's window holds the previous one's (the upper end
    /// never moves back).
    pub(crate) fn grows(&self) -> bool {
        matches!(
            self,
            Window::Documents(Bound::Unbounded, _)
                | Window::Range {
                    lower: Bound::Unbounded,
                    ..
                }
        )
    }

    /// The positions of document `i`'s window in a partition of `n`
    /// documents; `keys` are the range values (see [`range_keys`]) for a
    /// range window, sorted ascending or descending.
    pub(crate) fn positions(
        &self,
        i: usize,
        n: usize,
        keys: &[f64],
        descending: bool,
    ) -> Result<Range<usize>> {
        let r = match *self {
            Window::Documents(l, u) => {
                let at = |k: i64| (i as i64).saturating_add(k).clamp(0, n as i64) as usize;
                let lo = match l {
                    Bound::Unbounded => 0,
                    Bound::Current => i,
                    Bound::At(k) => at(k),
                };
                let hi = match u {
                    Bound::Unbounded => n,
                    Bound::Current => i + 1,
                    Bound::At(k) => at(k.saturating_add(1)),
                };
                lo..hi.max(lo)
            }
            Window::Range {
                lower, upper, unit, ..
            } => {
                let v = keys[i];
                // Offsets count in sort order: in a descending sort a
                // negative offset reaches larger values (mongod's reading,
                // which keeps a window's meaning when the order flips).
                let shifted = |x: f64| -> Result<f64> {
                    let x = if descending { -x } else { x };
                    match unit {
                        None => Ok(v + x),
                        Some(u) => u
                            .add_utc(v as i64, x as i64)
                            .map(|m| m as f64)
                            .ok_or_else(|| Error::bad_value("window bound is out of range")),
                    }
                };
                // How many keys come before `x` in sort order (`ties`: `x`
                // itself counted as before).
                let before = |x: f64, ties: bool| {
                    keys.partition_point(|&k| match (descending, ties) {
                        (false, false) => k < x,
                        (false, true) => k <= x,
                        (true, false) => k > x,
                        (true, true) => k >= x,
                    })
                };
                let lo = match lower {
                    Bound::Unbounded => 0,
                    Bound::Current => i,
                    Bound::At(x) => before(shifted(x)?, false),
                };
                let hi = match upper {
                    Bound::Unbounded => n,
                    Bound::Current => i + 1,
                    Bound::At(x) => before(shifted(x)?, true),
                };
                lo..hi.max(lo)
            }
        };
        Ok(r)
    }
}

/// A two-element array of bounds.
fn pair(v: RawBsonRef<'_>) -> Result<(RawBsonRef<'_>, RawBsonRef<'_>)> {
    if let RawBsonRef::Array(a) = v {
        let mut it = a.into_iter();
        if let (Some(Ok(l)), Some(Ok(u)), None) = (it.next(), it.next(), it.next()) {
            return Ok((l, u));
        }
    }
    Err(Error::failed_to_parse(
        "Window bounds must be a 2-element array",
    ))
}

/// One bound: a keyword or a constant number `accept` takes.
fn bound<T>(v: RawBsonRef<'_>, env: &Env, accept: impl Fn(f64) -> Option<T>) -> Option<Bound<T>> {
    match v {
        RawBsonRef::String("unbounded") => return Some(Bound::Unbounded),
        RawBsonRef::String("current") => return Some(Bound::Current),
        _ => {}
    }
    let e = Expr::parse_in(v, env).ok()?;
    let value = e.as_constant()??;
    number_as_f64(value.as_raw_bson_ref())
        .and_then(accept)
        .map(Bound::At)
}

/// The values a range window measures: the single `sortBy` field of each
/// document, numbers without `unit` and dates (in milliseconds) with it.
/// mongod fails on the first document whose value is of another type.
pub(crate) fn range_keys(
    docs: &[bson::RawDocumentBuf],
    field: &Expr,
    unit: Option<TimeUnit>,
) -> Result<Vec<f64>> {
    let mut keys = Vec::with_capacity(docs.len());
    for d in docs {
        let d: &RawDocument = d;
        let v = field.eval(d)?;
        let v = v.as_ref().map(|v| v.as_raw_bson_ref());
        let key = match (unit, v) {
            (None, Some(v)) if !matches!(v, RawBsonRef::DateTime(_)) => number_as_f64(v),
            (Some(_), Some(RawBsonRef::DateTime(t))) => Some(t.timestamp_millis() as f64),
            _ => None,
        };
        let Some(key) = key else {
            let shown = v.map_or("missing", |v| type_name(&v));
            return Err(match unit {
                None => fail(
                    StageError::RangeKeyNotNumber,
                    format!(
                        "Invalid range: Expected the sortBy field to be a number, but it was {shown}"
                    ),
                ),
                Some(_) => fail(
                    StageError::RangeKeyNotDate,
                    format!(
                        "Invalid range: Expected the sortBy field to be a Date, but it was {shown}"
                    ),
                ),
            });
        };
        keys.push(key);
    }
    Ok(keys)
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::{RawBson, rawdoc};

    fn window(spec: RawBson) -> Result<Window> {
        let d = rawdoc! { "w": spec };
        Window::parse(
            d.get("w").unwrap().unwrap(),
            &Env::new(bson::DateTime::now()),
        )
    }

    #[test]
    fn document_windows_clamp_to_the_partition() {
        let w = window(rawdoc! { "documents": [-1, 1] }.into()).unwrap();
        assert_eq!(w.positions(0, 3, &[], false).unwrap(), 0..2);
        assert_eq!(w.positions(2, 3, &[], false).unwrap(), 1..3);
        let w = window(rawdoc! { "documents": ["unbounded", "current"] }.into()).unwrap();
        assert!(w.grows());
        assert_eq!(w.positions(1, 3, &[], false).unwrap(), 0..2);
        let w = window(rawdoc! { "documents": [2, 3] }.into()).unwrap();
        assert_eq!(w.positions(2, 3, &[], false).unwrap(), 3..3);
    }

    /// jstests/aggregation/sources/setWindowFields/range.js: "0" includes
    /// ties, "current" only the document itself.
    #[test]
    fn range_windows_take_ties_unless_current() {
        let keys = [0.0, 1.0, 1.5, 2.0, 3.0, 100.0, 100.0, 101.0];
        let w = window(rawdoc! { "range": [-1, 0] }.into()).unwrap();
        assert_eq!(w.positions(3, 8, &keys, false).unwrap(), 1..4);
        assert_eq!(w.positions(5, 8, &keys, false).unwrap(), 5..7);
        let w = window(rawdoc! { "range": ["current", 1] }.into()).unwrap();
        assert_eq!(w.positions(6, 8, &keys, false).unwrap(), 6..8);
        let w = window(rawdoc! { "range": [-1, -1] }.into()).unwrap();
        assert!(w.positions(2, 8, &keys, false).unwrap().is_empty());
        // Descending: offsets count in sort order, so -1 reaches the
        // larger values before the document.
        let desc: Vec<f64> = keys.iter().rev().copied().collect();
        let w = window(rawdoc! { "range": [-1, 0] }.into()).unwrap();
        assert_eq!(w.positions(4, 8, &desc, true).unwrap(), 3..5);
    }

    /// jstests/aggregation/sources/setWindowFields/parse.js.
    #[test]
    fn bad_windows_get_mongods_errors() {
        let kind = |spec: RawBson| window(spec).unwrap_err().kind;
        assert_eq!(
            kind(rawdoc! { "documents": [1, -1] }.into()),
            ErrorKind::Stage(StageError::WindowBoundsBackwards)
        );
        assert_eq!(
            kind(rawdoc! { "range": ["current", -1] }.into()),
            ErrorKind::Stage(StageError::WindowBoundsBackwards)
        );
        assert_eq!(
            kind(rawdoc! { "documents": [1, "current"] }.into()),
            ErrorKind::Stage(StageError::WindowBoundsBackwards)
        );
        assert_eq!(
            kind(rawdoc! { "documents": [{ "$const": "current" }, 3] }.into()),
            ErrorKind::FailedToParse
        );
        assert_eq!(
            kind(rawdoc! { "documents": [1.5, 3] }.into()),
            ErrorKind::FailedToParse
        );
        assert_eq!(
            kind(rawdoc! { "documents": [1] }.into()),
            ErrorKind::FailedToParse
        );
        assert!(window(rawdoc! { "documents": [{ "$add": [2, 2] }, 5] }.into()).is_ok());
        assert!(window(rawdoc! { "range": [-3, "unbounded"], "unit": "hour" }.into()).is_ok());
    }
}
