//! Parsing a `$setWindowFields` specification (`partitionBy`, `sortBy`,
//! `output`) into [`SetWindowFields`], with mongod's errors, including what
//! each window function asks of the window and the sort.
//!
//! The stage runs as mongod desugars it: the partition key is set on each
//! document under [`PARTITION_FIELD`], the input is sorted by (that key,
//! `sortBy`) by an ordinary `$sort` stage (which spills with
//! `allowDiskUse`), and [`SetWindowFields`] then sees each partition as a
//! run of consecutive documents. This file says what to sort by; the
//! stage parser builds the stages.

use bson::{RawBsonRef, RawDocument, RawDocumentBuf};

use super::super::expr::{Env, Expr, cstr};
use super::bounds::{WHOLE, Window};
use super::func::{Func, Sorted, Takes};
use crate::encoding::display::type_name;
use crate::error::{Error, ErrorKind, Result, StageError};
use crate::query::sort::SortSpec;

/// The field the partition key travels in between the sort and the
/// window stage (mongod's name; removed before anything else sees it).
pub(crate) const PARTITION_FIELD: &str = "__internal_setWindowFields_partition_key";

/// One output field.
#[derive(Debug, Clone)]
pub(crate) struct Output {
    /// The field's path, split at dots.
    pub(crate) path: Vec<String>,
    pub(crate) func: Func,
    pub(crate) window: Window,
}

/// The window stage proper: what runs over each sorted partition.
#[derive(Debug, Clone)]
pub struct SetWindowFields {
    /// Whether documents carry [`PARTITION_FIELD`].
    pub(crate) partitioned: bool,
    /// The stage's `sortBy` (ties for ranks).
    pub(crate) sort: Option<SortSpec>,
    /// The single `sortBy` field as an expression, and whether it sorts
    /// descending: the values range windows and `$derivative` measure.
    pub(crate) measured: Option<(Expr, bool)>,
    pub(crate) outputs: Vec<Output>,
}

/// What `$setWindowFields` becomes.
pub(crate) struct Desugared {
    /// The partition key to set under [`PARTITION_FIELD`], if partitioned.
    pub(crate) partition: Option<Expr>,
    /// The order the window stage needs its input in, if any.
    pub(crate) sort: Option<SortSpec>,
    pub(crate) stage: SetWindowFields,
}

fn fail(kind: StageError, message: impl Into<String>) -> Error {
    Error::new(ErrorKind::Stage(kind), message)
}

/// Parses a `$setWindowFields` specification.
pub(crate) fn parse(spec: RawBsonRef<'_>, env: &Env) -> Result<Desugared> {
    let RawBsonRef::Document(d) = spec else {
        return Err(Error::failed_to_parse(format!(
            "the $setWindowFields stage specification must be an object, found {}",
            type_name(&spec)
        )));
    };
    let (mut partition, mut sort_by, mut output) = (None, None, None);
    for el in d.iter() {
        let (k, v) = el?;
        match (k.as_str(), v) {
            ("partitionBy", v) => partition = Some(Expr::parse_in(v, env)?),
            ("sortBy", RawBsonRef::Document(s)) => sort_by = Some(s),
            ("output", RawBsonRef::Document(o)) => output = Some(o),
            (name @ ("sortBy" | "output"), other) => {
                return Err(Error::type_mismatch(format!(
                    "BSON field '$setWindowFields.{name}' is the wrong type '{}', expected type \
                     'object'",
                    type_name(&other)
                )));
            }
            (other, _) => {
                return Err(Error::new(
                    ErrorKind::UnknownField,
                    format!("BSON field '$setWindowFields.{other}' is an unknown field."),
                ));
            }
        }
    }
    let Some(output) = output else {
        return Err(Error::new(
            ErrorKind::MissingField,
            "BSON field '$setWindowFields.output' is missing but a required field",
        ));
    };
    let sort = match sort_by {
        Some(s) => Some(SortSpec::parse(s)?).filter(|s| !s.is_empty()),
        None => None,
    };
    let one_field = sort.as_ref().filter(|s| s.fields().len() == 1);
    let measured = match one_field {
        Some(s) => {
            let (path, ascending) = &s.fields()[0];
            Some((
                Expr::parse_in(format!("${path}").as_str().into(), env)?,
                !ascending,
            ))
        }
        None => None,
    };
    let outputs = parse_outputs(output, env, sort.as_ref())?;
    // A constant partitions nothing (mongod drops it too).
    let partition = partition.filter(|p| p.as_constant().is_none());
    let full_sort = match (&partition, sort_by) {
        (None, None) => None,
        (None, Some(_)) => sort.clone(),
        (Some(_), sort_by) => {
            let mut keys = RawDocumentBuf::new();
            keys.append(cstr(PARTITION_FIELD), 1);
            for el in sort_by.into_iter().flat_map(RawDocument::iter) {
                let (k, v) = el?;
                keys.append(k, v);
            }
            Some(SortSpec::parse(&keys)?)
        }
    };
    Ok(Desugared {
        stage: SetWindowFields {
            partitioned: partition.is_some(),
            sort,
            measured,
            outputs,
        },
        partition,
        sort: full_sort,
    })
}

fn parse_outputs(output: &RawDocument, env: &Env, sort: Option<&SortSpec>) -> Result<Vec<Output>> {
    let mut outputs: Vec<Output> = Vec::new();
    for el in output.iter() {
        let (name, spec) = el?;
        let name = name.as_str();
        let path = output_path(name)?;
        if let Some(other) = outputs.iter().find(|o| overlaps(&o.path, &path)) {
            return Err(fail(
                StageError::WindowOutputConflict,
                format!(
                    "Invalid $setWindowFields :: caused by :: specification contains two \
                     conflicting paths. Cannot specify both '{}' and '{name}'",
                    other.path.join(".")
                ),
            ));
        }
        let RawBsonRef::Document(spec) = spec else {
            return Err(Error::failed_to_parse(format!(
                "The field '{name}' must be an object"
            )));
        };
        let (func, window) = parse_output(spec, env)?;
        check_needs(&func, window.as_ref(), sort)?;
        outputs.push(Output {
            path,
            func,
            window: window.unwrap_or(WHOLE),
        });
    }
    Ok(outputs)
}

/// `{$fn: arg, window: …}`: the function and the window, if given.
fn parse_output(spec: &RawDocument, env: &Env) -> Result<(Func, Option<Window>)> {
    let mut func: Option<(&str, RawBsonRef<'_>)> = None;
    let mut window = None;
    let mut unknown = None;
    for el in spec.iter() {
        let (k, v) = el?;
        match k.as_str() {
            "window" => window = Some(v),
            f if f.starts_with('$') && func.is_none() => func = Some((f, v)),
            other => {
                if func.is_none() {
                    return Err(Error::failed_to_parse(format!(
                        "Expected a $-prefixed window function, {other}"
                    )));
                }
                unknown.get_or_insert(other);
            }
        }
    }
    let Some((name, arg)) = func else {
        return Err(Error::failed_to_parse(
            "Expected a $-prefixed window function",
        ));
    };
    let parsed = Func::parse(name, arg, env)?;
    if let Some(other) = unknown {
        return Err(Error::failed_to_parse(format!(
            "Window function {name} found an unknown argument: {other}"
        )));
    }
    let window = match (window, parsed.takes()) {
        (Some(_), Takes::Nothing) => {
            let message = format!("Window function {name} does not accept a 'window' field");
            return Err(match parsed {
                Func::Rank { .. } | Func::DocumentNumber => {
                    fail(StageError::RankTakesNoWindow, message)
                }
                _ => Error::failed_to_parse(message),
            });
        }
        (None, Takes::Required) => {
            return Err(Error::failed_to_parse(format!(
                "{name} requires explicit window bounds"
            )));
        }
        (Some(w), _) => Some(Window::parse(w, env)?),
        (None, _) => None,
    };
    Ok((parsed, window))
}

/// What the function and its window ask of `sortBy`.
fn check_needs(func: &Func, window: Option<&Window>, sort: Option<&SortSpec>) -> Result<()> {
    let fields = sort.map_or(0, |s| s.fields().len());
    if let Some(w) = window {
        if w.is_range() && fields != 1 {
            return Err(fail(
                StageError::RangeWindowSort,
                "Range-based bounds require sortBy a single field",
            ));
        }
        if !w.is_whole() && fields == 0 {
            return Err(fail(
                StageError::DocumentWindowSort,
                "Document-based bounds require a sortBy",
            ));
        }
    }
    match (func.sorted(), fields) {
        (Sorted::OneField, 1) | (Sorted::Required, 1..) | (Sorted::Any, _) => Ok(()),
        (_, _) => Err(match func {
            Func::Rank { .. } => fail(
                StageError::RankSort,
                "Rank style window functions must be specified with a top level sortBy \
                 expression with exactly one element",
            ),
            Func::LinearFill(_) => fail(
                StageError::LinearFillSort,
                "$linearFill requires a sortBy of exactly one field",
            ),
            _ => Error::failed_to_parse(match func.sorted() {
                Sorted::OneField => "this window function requires a sortBy of exactly one field",
                _ => "this window function requires a sortBy",
            }),
        }),
    }
}

/// An output field name as a path: no empty parts, no `$` prefix.
fn output_path(name: &str) -> Result<Vec<String>> {
    if name.is_empty() {
        return Err(Error::new(
            ErrorKind::EmptyFieldPath,
            "FieldPath cannot be constructed with empty string",
        ));
    }
    let mut path = Vec::new();
    for part in name.split('.') {
        if part.is_empty() {
            return Err(Error::new(
                ErrorKind::EmptyFieldPathComponent,
                "FieldPath field names may not be empty strings.",
            ));
        }
        if part.starts_with('$') {
            return Err(Error::new(
                ErrorKind::DollarPrefixedFieldPathComponent,
                format!("FieldPath field names may not start with '$'. Given: {name}"),
            ));
        }
        path.push(part.to_owned());
    }
    Ok(path)
}

/// Whether one path is a prefix of the other (`a` and `a.b`).
fn overlaps(a: &[String], b: &[String]) -> bool {
    a.iter().zip(b).all(|(x, y)| x == y)
}

impl SetWindowFields {
    /// The stage comparing strings by `collation`: its `sortBy` (rank
    /// ties) and the `sortBy` of `$top`-style accumulators.
    pub(crate) fn collated(
        mut self,
        collation: Option<std::sync::Arc<crate::encoding::collation::Collation>>,
    ) -> SetWindowFields {
        self.sort = self.sort.map(|s| s.collated(collation.clone()));
        for out in &mut self.outputs {
            if let Func::Acc(acc) = &mut out.func {
                let taken = std::mem::replace(
                    acc,
                    super::super::accumulator::Acc::Sum(Expr::constant(bson::RawBson::Null)),
                );
                *acc = taken.collated(collation.clone());
            }
        }
        self
    }
}
