//! Running [`SetWindowFields`] over one partition: its documents arrive
//! sorted, each output's value is computed for every document (an
//! accumulator over each document's window, or a function that walks the
//! partition in order), and the values are set on the documents. Also the
//! partition key each document carries in from the sort.
//!
//! Accumulators are not recomputed where the window did not change (the
//! whole partition: once), and are added to incrementally where every
//! window starts at the partition's first document; other windows are
//! accumulated afresh per document.

use std::ops::Range;

use bson::{RawBson, RawBsonRef, RawDocument, RawDocumentBuf};

use super::super::accumulator::{Acc, AccState};
use super::super::expr::{Expr, TimeUnit};
use super::super::project::set_path;
use super::bounds::{Window, range_keys};
use super::func::Func;
use super::spec::{Output, PARTITION_FIELD, SetWindowFields};
use crate::encoding::cmp::Cmp;
use crate::encoding::display::type_name;
use crate::error::{Error, ErrorKind, Result, StageError};
use crate::query::value::number_as_f64;

fn fail(kind: StageError, message: impl Into<String>) -> Error {
    Error::new(ErrorKind::Stage(kind), message)
}

fn int(n: usize) -> RawBson {
    i32::try_from(n).map_or(RawBson::Int64(n as i64), RawBson::Int32)
}

impl SetWindowFields {
    /// Takes the partition key off `doc` (null when missing): documents
    /// with equal keys are one partition. An array is refused, as mongod
    /// does.
    pub(crate) fn partition_key(&self, doc: RawDocumentBuf) -> Result<(RawBson, RawDocumentBuf)> {
        if !self.partitioned {
            return Ok((RawBson::Null, doc));
        }
        let key = match doc.get(PARTITION_FIELD)? {
            None => RawBson::Null,
            Some(RawBsonRef::Array(_)) => {
                return Err(Error::type_mismatch(
                    "An expression used to partition cannot evaluate to value of type array",
                ));
            }
            Some(v) => RawBson::from(v),
        };
        let mut rest = RawDocumentBuf::new();
        for el in doc.iter() {
            let (k, v) = el?;
            if k.as_str() != PARTITION_FIELD {
                rest.append(k, v);
            }
        }
        Ok((key, rest))
    }

    /// The partition's documents with every output set.
    pub(crate) fn run_partition(
        &self,
        docs: Vec<RawDocumentBuf>,
        cmp: Cmp<'_>,
    ) -> Result<Vec<RawDocumentBuf>> {
        let mut columns = Vec::with_capacity(self.outputs.len());
        for out in &self.outputs {
            columns.push(self.column(out, &docs, cmp)?);
        }
        let mut result = Vec::with_capacity(docs.len());
        for (i, mut doc) in docs.into_iter().enumerate() {
            for (out, column) in self.outputs.iter().zip(&mut columns) {
                let path: Vec<&str> = out.path.iter().map(String::as_str).collect();
                let value = std::mem::replace(&mut column[i], RawBson::Null);
                doc = set_path(&doc, &path, value)?;
            }
            result.push(doc);
        }
        Ok(result)
    }

    /// Every document's window for `window`.
    fn windows(&self, window: &Window, docs: &[RawDocumentBuf]) -> Result<Vec<Range<usize>>> {
        let n = docs.len();
        let (keys, descending) = match (window, &self.measured) {
            (Window::Range { unit, .. }, Some((field, descending))) => {
                (range_keys(docs, field, *unit)?, *descending)
            }
            _ => (Vec::new(), false),
        };
        (0..n)
            .map(|i| window.positions(i, n, &keys, descending))
            .collect()
    }

    /// One output's value for each document.
    fn column(&self, out: &Output, docs: &[RawDocumentBuf], cmp: Cmp<'_>) -> Result<Vec<RawBson>> {
        let n = docs.len();
        Ok(match &out.func {
            Func::Acc(acc) => accumulate(
                acc,
                &out.window,
                self.windows(&out.window, docs)?,
                docs,
                cmp,
            )?,
            Func::DocumentNumber => (1..=n).map(int).collect(),
            Func::Rank { dense } => {
                let sort = self.sort.as_ref();
                let mut ranks = Vec::with_capacity(n);
                let (mut rank, mut distinct) = (0, 0);
                for i in 0..n {
                    let tie =
                        i > 0 && sort.is_some_and(|s| s.compare(&docs[i - 1], &docs[i]).is_eq());
                    if !tie {
                        rank = i + 1;
                        distinct += 1;
                    }
                    ranks.push(int(if *dense { distinct } else { rank }));
                }
                ranks
            }
            Func::Shift {
                output,
                by,
                default,
            } => (0..n)
                .map(|i| {
                    let j = i as i64 + by;
                    match usize::try_from(j).ok().filter(|j| *j < n) {
                        Some(j) => Ok(output.eval(&docs[j])?.unwrap_or(RawBson::Null)),
                        None => Ok(default.clone()),
                    }
                })
                .collect::<Result<_>>()?,
            Func::Calculus {
                input,
                unit,
                integral,
            } => {
                let xs = self.time_keys(docs, *unit, *integral)?;
                let ys = numbers(input, docs)?;
                let scale = unit.and_then(TimeUnit::fixed_millis).unwrap_or(1) as f64;
                let windows = self.windows(&out.window, docs)?;
                windows
                    .into_iter()
                    .map(|w| {
                        if *integral {
                            integrate(&xs[w.clone()], &ys[w], scale)
                        } else {
                            derive(&xs, &ys, w, scale)
                        }
                    })
                    .collect::<Result<_>>()?
            }
            Func::ExpMovingAvg { input, alpha } => {
                let mut avg: Option<f64> = None;
                let mut values = Vec::with_capacity(n);
                for d in docs {
                    match input
                        .eval(d)?
                        .as_ref()
                        .map(|v| v.as_raw_bson_ref())
                        .and_then(number_as_f64)
                    {
                        Some(x) => {
                            let next = avg.map_or(x, |a| x * alpha + a * (1.0 - alpha));
                            avg = Some(next);
                            values.push(RawBson::Double(next));
                        }
                        None => values.push(RawBson::Null),
                    }
                }
                values
            }
            Func::Covariance { x, y, sample } => {
                let xs = numbers(x, docs)?;
                let ys = numbers(y, docs)?;
                let windows = self.windows(&out.window, docs)?;
                let mut values = Vec::with_capacity(n);
                let mut last: Option<(Range<usize>, RawBson)> = None;
                for w in windows {
                    if let Some((r, v)) = &last
                        && *r == w
                    {
                        values.push(v.clone());
                        continue;
                    }
                    let v = covariance(&xs[w.clone()], &ys[w.clone()], *sample);
                    last = Some((w, v.clone()));
                    values.push(v);
                }
                values
            }
            Func::Locf(e) => {
                let mut last = RawBson::Null;
                let mut values = Vec::with_capacity(n);
                for d in docs {
                    match e.eval(d)? {
                        None | Some(RawBson::Null) => {}
                        Some(v) => last = v,
                    }
                    values.push(last.clone());
                }
                values
            }
            Func::LinearFill(e) => self.linear_fill(e, docs)?,
        })
    }

    /// The `sortBy` values `$derivative`/`$integral` measure: dates (in
    /// `unit`s of milliseconds) when a unit is given, numbers otherwise.
    fn time_keys(
        &self,
        docs: &[RawDocumentBuf],
        unit: Option<TimeUnit>,
        integral: bool,
    ) -> Result<Vec<f64>> {
        let Some((field, _)) = &self.measured else {
            return Ok(vec![0.0; docs.len()]);
        };
        let name = if integral { "$integral" } else { "$derivative" };
        let mut keys = Vec::with_capacity(docs.len());
        for d in docs {
            let v = field.eval(d)?;
            let v = v.as_ref().map(RawBson::as_raw_bson_ref);
            let key = match (unit, v) {
                (Some(_), Some(RawBsonRef::DateTime(t))) => t.timestamp_millis() as f64,
                (None, Some(v)) if !matches!(v, RawBsonRef::DateTime(_)) => {
                    match number_as_f64(v) {
                        Some(x) => x,
                        None => return Err(time_key_error(name, unit, v)),
                    }
                }
                (_, v) => return Err(time_key_error(name, unit, v.unwrap_or(RawBsonRef::Null))),
            };
            keys.push(key);
        }
        Ok(keys)
    }

    /// `$linearFill`: a null or missing value between two numbers is
    /// interpolated on the `sortBy` value; leading and trailing ones stay
    /// null.
    fn linear_fill(&self, e: &Expr, docs: &[RawDocumentBuf]) -> Result<Vec<RawBson>> {
        let Some((field, _)) = &self.measured else {
            return Ok(vec![RawBson::Null; docs.len()]);
        };
        let mut xs = Vec::with_capacity(docs.len());
        let mut ys: Vec<Option<RawBson>> = Vec::with_capacity(docs.len());
        // Dates and numbers may not mix in the sort field.
        let mut dates = None;
        for d in docs {
            let x = field.eval(d)?;
            let x = x.as_ref().map(RawBson::as_raw_bson_ref);
            let (x, is_date) = match x {
                Some(RawBsonRef::DateTime(t)) => (Some(t.timestamp_millis() as f64), true),
                Some(v) => (number_as_f64(v), false),
                None => (None, false),
            };
            let Some(x) = x.filter(|_| *dates.get_or_insert(is_date) == is_date) else {
                return Err(Error::type_mismatch(format!(
                    "$linearFill requires the sortBy field to be all numbers or all dates, \
                     found {}",
                    x.map_or("missing", |_| if is_date { "date" } else { "number" })
                )));
            };
            if xs.last().is_some_and(|prev| *prev == x) {
                return Err(fail(
                    StageError::LinearFillRepeatedSort,
                    "There can be no repeated values in the sort field",
                ));
            }
            xs.push(x);
            let y = match e.eval(d)? {
                None | Some(RawBson::Null) => None,
                Some(v) if number_as_f64(v.as_raw_bson_ref()).is_some() => Some(v),
                Some(v) => {
                    return Err(Error::type_mismatch(format!(
                        "Value to be filled must be numeric, found {}",
                        type_name(&v.as_raw_bson_ref())
                    )));
                }
            };
            ys.push(y);
        }
        let known: Vec<usize> = (0..ys.len()).filter(|&i| ys[i].is_some()).collect();
        let mut out = Vec::with_capacity(ys.len());
        for i in 0..ys.len() {
            if let Some(y) = &ys[i] {
                out.push(y.clone());
                continue;
            }
            let after = known.partition_point(|&k| k < i);
            let value = match (after.checked_sub(1).map(|b| known[b]), known.get(after)) {
                (Some(a), Some(&b)) => {
                    let ya = ys[a]
                        .as_ref()
                        .and_then(|v| number_as_f64(v.as_raw_bson_ref()));
                    let yb = ys[b]
                        .as_ref()
                        .and_then(|v| number_as_f64(v.as_raw_bson_ref()));
                    match (ya, yb) {
                        (Some(ya), Some(yb)) => {
                            RawBson::Double(ya + (yb - ya) * (xs[i] - xs[a]) / (xs[b] - xs[a]))
                        }
                        _ => RawBson::Null,
                    }
                }
                _ => RawBson::Null,
            };
            out.push(value);
        }
        Ok(out)
    }
}

fn time_key_error(name: &str, unit: Option<TimeUnit>, v: RawBsonRef<'_>) -> Error {
    match unit {
        Some(_) => fail(
            StageError::CalculusUnitNeedsDate,
            format!(
                "{name} with unit expects the sortBy field to be a Date, but it was {}",
                type_name(&v)
            ),
        ),
        None => fail(
            StageError::CalculusDateNeedsUnit,
            format!(
                "{name} (with no 'unit') expects the sortBy field to be numeric, but it was {}",
                type_name(&v)
            ),
        ),
    }
}

/// Each document's value of `e` as a number, if it is one.
fn numbers(e: &Expr, docs: &[RawDocumentBuf]) -> Result<Vec<Option<f64>>> {
    docs.iter()
        .map(|d| {
            Ok(e.eval(d)?
                .as_ref()
                .and_then(|v| number_as_f64(v.as_raw_bson_ref())))
        })
        .collect()
}

/// An accumulator over each document's window.
fn accumulate(
    acc: &Acc,
    window: &Window,
    windows: Vec<Range<usize>>,
    docs: &[RawDocumentBuf],
    cmp: Cmp<'_>,
) -> Result<Vec<RawBson>> {
    let add_all = |state: &mut AccState, range: Range<usize>, first: usize| -> Result<()> {
        for j in range {
            let doc: &RawDocument = &docs[j];
            state.add(acc, doc, j == first, cmp)?;
        }
        Ok(())
    };
    let mut values = Vec::with_capacity(windows.len());
    let mut last: Option<(Range<usize>, RawBson)> = None;
    // A growing window: the state so far and how far it has read.
    let mut running = (AccState::new(acc), 0usize);
    for w in windows {
        if let Some((r, v)) = &last
            && *r == w
        {
            values.push(v.clone());
            continue;
        }
        let value = if window.grows() {
            let (state, read) = &mut running;
            if w.end > *read {
                add_all(state, *read..w.end, 0)?;
                *read = w.end;
            }
            state.clone().result_of(acc)?
        } else {
            let mut state = AccState::new(acc);
            add_all(&mut state, w.clone(), w.start)?;
            state.result_of(acc)?
        };
        last = Some((w, value.clone()));
        values.push(value);
    }
    Ok(values)
}

/// `$derivative`: the change between the window's first and last
/// documents per unit of `sortBy`; null for fewer than two documents.
fn derive(xs: &[f64], ys: &[Option<f64>], w: Range<usize>, scale: f64) -> Result<RawBson> {
    if w.len() < 2 {
        return Ok(RawBson::Null);
    }
    let (a, b) = (w.start, w.end - 1);
    let (Some(ya), Some(yb)) = (ys[a], ys[b]) else {
        return Ok(RawBson::Null);
    };
    let dx = (xs[b] - xs[a]) / scale;
    if dx == 0.0 {
        return Ok(RawBson::Null);
    }
    Ok(RawBson::Double((yb - ya) / dx))
}

/// `$integral`: the trapezoidal area under the window's points; null for
/// an empty window.
fn integrate(xs: &[f64], ys: &[Option<f64>], scale: f64) -> Result<RawBson> {
    if xs.is_empty() {
        return Ok(RawBson::Null);
    }
    let mut area = 0.0;
    for i in 1..xs.len() {
        if let (Some(a), Some(b)) = (ys[i - 1], ys[i]) {
            area += (xs[i] - xs[i - 1]) / scale * (a + b) / 2.0;
        }
    }
    Ok(RawBson::Double(area))
}

/// `$covariancePop`/`$covarianceSamp` of the pairs where both are numbers.
fn covariance(xs: &[Option<f64>], ys: &[Option<f64>], sample: bool) -> RawBson {
    let pairs: Vec<(f64, f64)> = xs
        .iter()
        .zip(ys)
        .filter_map(|(x, y)| Some(((*x)?, (*y)?)))
        .collect();
    let n = pairs.len() as f64;
    let divisor = if sample { n - 1.0 } else { n };
    if divisor <= 0.0 {
        return RawBson::Null;
    }
    let (mx, my) = (
        pairs.iter().map(|p| p.0).sum::<f64>() / n,
        pairs.iter().map(|p| p.1).sum::<f64>() / n,
    );
    let sum: f64 = pairs.iter().map(|(x, y)| (x - mx) * (y - my)).sum();
    RawBson::Double(sum / divisor)
}

/// Whether two partition keys are one partition.
pub(crate) fn same_partition(a: &RawBson, b: &RawBson, cmp: Cmp<'_>) -> bool {
    cmp.values(a.as_raw_bson_ref(), b.as_raw_bson_ref()).is_eq()
}
