//! The `$group` accumulators that keep several values: `$firstN`,
//! `$lastN`, `$minN`, `$maxN` (`{input, n}`) and `$top`, `$bottom`,
//! `$topN`, `$bottomN` (`{sortBy, output, n}`): their parsing, with
//! mongod's codes, and their running state. `n` must be a constant here
//! (mongod also lets it depend on the group key; ebb refuses that).
//! Nothing here knows about groups; `accumulator` holds these as variants.

use std::cmp::Ordering;

use bson::{RawBson, RawBsonRef, RawDocument, RawDocumentBuf};

use super::expr::{Env, Expr};
use crate::encoding::cmp::Cmp;
use crate::encoding::display::type_name;
use crate::error::{Error, ErrorKind, Result, StageError};
use crate::query::sort::SortSpec;
use crate::query::value::number_as_f64;

fn fail(kind: StageError, message: impl Into<String>) -> Error {
    Error::new(ErrorKind::Stage(kind), message)
}

/// Which values `{input, n}` keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Keep {
    First,
    Last,
    Min,
    Max,
}

/// `$firstN`/`$lastN`/`$minN`/`$maxN`.
#[derive(Debug, Clone)]
pub struct KeepN {
    pub(super) input: Expr,
    pub(super) n: usize,
    pub(super) keep: Keep,
}

/// `$top`/`$bottom` (`single`) and `$topN`/`$bottomN`.
#[derive(Debug, Clone)]
pub struct TopN {
    pub(super) sort: SortSpec,
    pub(super) output: Expr,
    pub(super) n: usize,
    pub(super) bottom: bool,
    pub(super) single: bool,
}

/// A constant `n`: a positive whole number.
fn parse_n(v: RawBsonRef<'_>, env: &Env) -> Result<usize> {
    let e = Expr::parse_in(v, env)?;
    let Some(value) = e.as_constant() else {
        return Err(Error::not_implemented(
            "an accumulator 'n' that is not a constant",
        ));
    };
    let value = value.cloned().unwrap_or(RawBson::Null);
    let Some(f) = number_as_f64(value.as_raw_bson_ref()) else {
        return Err(fail(
            StageError::AccNNotNumeric,
            format!(
                "Value for 'n' must be of integral type, but found a {}",
                type_name(&value.as_raw_bson_ref())
            ),
        ));
    };
    if f.fract() != 0.0 || !f.is_finite() {
        return Err(fail(
            StageError::AccNNotIntegral,
            format!("Value for 'n' must be of integral type, but found {f}"),
        ));
    }
    if f < 1.0 {
        return Err(fail(
            StageError::AccNNotPositive,
            format!("'n' must be greater than 0, found {f}"),
        ));
    }
    Ok(f.min(usize::MAX as f64) as usize)
}

impl KeepN {
    pub(super) fn parse(op: &str, spec: RawBsonRef<'_>, env: &Env) -> Result<KeepN> {
        let keep = match op {
            "$firstN" => Keep::First,
            "$lastN" => Keep::Last,
            "$minN" => Keep::Min,
            _ => Keep::Max,
        };
        let RawBsonRef::Document(d) = spec else {
            let kind = match keep {
                Keep::First | Keep::Last => StageError::FirstLastNNotObject,
                Keep::Min | Keep::Max => StageError::MinMaxNNotObject,
            };
            return Err(fail(
                kind,
                format!(
                    "specification must be an object; found a {}",
                    type_name(&spec)
                ),
            ));
        };
        let (mut input, mut n) = (None, None);
        for el in d.iter() {
            let (k, v) = el?;
            match k.as_str() {
                "input" => input = Some(Expr::parse_in(v, env)?),
                "n" => n = Some(parse_n(v, env)?),
                other => {
                    return Err(fail(
                        StageError::AccNUnknownArgument,
                        format!("Unknown argument for 'n' operator: {other}"),
                    ));
                }
            }
        }
        let Some(n) = n else {
            return Err(fail(StageError::AccNMissingN, "Missing value for 'n'"));
        };
        let Some(input) = input else {
            return Err(fail(
                StageError::AccNMissingInput,
                "Missing value for 'input'",
            ));
        };
        Ok(KeepN { input, n, keep })
    }

    /// Takes one document's value into `kept`.
    pub(super) fn add(
        &self,
        kept: &mut Vec<RawBson>,
        doc: &RawDocument,
        cmp: Cmp<'_>,
    ) -> Result<()> {
        let value = self.input.eval(doc)?;
        match self.keep {
            Keep::First => {
                if kept.len() < self.n {
                    kept.push(value.unwrap_or(RawBson::Null));
                }
            }
            Keep::Last => {
                if kept.len() == self.n {
                    kept.remove(0);
                }
                kept.push(value.unwrap_or(RawBson::Null));
            }
            Keep::Min | Keep::Max => {
                let Some(v) = value.filter(|v| !matches!(v, RawBson::Null | RawBson::Undefined))
                else {
                    return Ok(());
                };
                // Kept in result order: ascending for $minN, descending for
                // $maxN; equal values keep their arrival order.
                let ahead = |a: &RawBson| {
                    let ord = cmp.values(a.as_raw_bson_ref(), v.as_raw_bson_ref());
                    if self.keep == Keep::Min {
                        ord != Ordering::Greater
                    } else {
                        ord != Ordering::Less
                    }
                };
                let at = kept.partition_point(ahead);
                if at < self.n {
                    kept.insert(at, v);
                    kept.truncate(self.n);
                }
            }
        }
        Ok(())
    }
}

impl TopN {
    pub(super) fn parse(op: &str, spec: RawBsonRef<'_>, env: &Env) -> Result<TopN> {
        let single = matches!(op, "$top" | "$bottom");
        let bottom = matches!(op, "$bottom" | "$bottomN");
        let RawBsonRef::Document(d) = spec else {
            return Err(fail(
                StageError::TopNotObject,
                format!(
                    "specification must be an object; found a {}",
                    type_name(&spec)
                ),
            ));
        };
        let (mut sort, mut output, mut n) = (None, None, None);
        for el in d.iter() {
            let (k, v) = el?;
            match (k.as_str(), v) {
                ("n", v) if !single => n = Some(parse_n(v, env)?),
                ("output", v) => output = Some(Expr::parse_in(v, env)?),
                ("sortBy", RawBsonRef::Document(s)) => sort = Some(SortSpec::parse(s)?),
                ("sortBy", other) => {
                    return Err(Error::type_mismatch(format!(
                        "{op}'s sortBy must be an object, found a {}",
                        type_name(&other)
                    )));
                }
                (other, _) => {
                    return Err(fail(
                        StageError::TopUnknownArgument,
                        format!("Unknown argument to {op} '{other}'"),
                    ));
                }
            }
        }
        let n = match (single, n) {
            (true, _) => 1,
            (false, Some(n)) => n,
            (false, None) => {
                return Err(fail(StageError::TopMissingN, "Missing value for 'n'"));
            }
        };
        let Some(output) = output else {
            return Err(fail(
                StageError::TopMissingOutput,
                "Missing value for 'output'",
            ));
        };
        let Some(sort) = sort else {
            return Err(fail(
                StageError::TopMissingSortBy,
                "Missing value for 'sortBy'",
            ));
        };
        Ok(TopN {
            sort,
            output,
            n,
            bottom,
            single,
        })
    }

    /// Takes one document into `ranked`, kept in `sortBy` order: the first
    /// `n` for `$top`, the last `n` for `$bottom`; on a tie the document
    /// seen first stays.
    pub(super) fn add(
        &self,
        ranked: &mut Vec<(RawDocumentBuf, RawBson)>,
        doc: &RawDocument,
    ) -> Result<()> {
        let output = self.output.eval(doc)?.unwrap_or(RawBson::Null);
        let at = ranked.partition_point(|(d, _)| self.sort.compare(d, doc) != Ordering::Greater);
        if ranked.len() == self.n {
            if self.bottom {
                // Only a document after the smallest kept one gets in.
                if self.sort.compare(doc, &ranked[0].0) != Ordering::Greater {
                    return Ok(());
                }
                ranked.remove(0);
                ranked.insert(at - 1, (doc.to_owned(), output));
            } else if at < ranked.len() {
                ranked.pop();
                ranked.insert(at, (doc.to_owned(), output));
            }
            return Ok(());
        }
        ranked.insert(at, (doc.to_owned(), output));
        Ok(())
    }

    /// The kept outputs: one value for `$top`/`$bottom`, an array else.
    pub(super) fn result(&self, ranked: Vec<(RawDocumentBuf, RawBson)>) -> RawBson {
        let mut outputs = ranked.into_iter().map(|(_, o)| o);
        if self.single {
            return outputs.next().unwrap_or(RawBson::Null);
        }
        let mut a = bson::RawArrayBuf::new();
        for o in outputs {
            a.push(o);
        }
        RawBson::Array(a)
    }

    /// The same accumulator ordering strings by `collation`.
    pub(super) fn collated(
        mut self,
        collation: Option<std::sync::Arc<crate::encoding::collation::Collation>>,
    ) -> TopN {
        self.sort = self.sort.collated(collation);
        self
    }
}
