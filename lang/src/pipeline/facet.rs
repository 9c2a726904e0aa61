//! `$facet`'s parsing: named pipelines, each an array of stages, with the
//! stages `$facet` may not hold refused at any depth (mongod's 40600). The
//! runner feeds every input document to each pipeline and builds one
//! document of arrays.

use bson::RawBsonRef;

use super::expr::Env;
use super::kind::{ParseStage, Stage, SubPipeline};
use super::sub::Within;
use crate::encoding::display::type_name;
use crate::error::{Error, ErrorKind, ExprError, Result, StageError};

/// `$facet: {name: [stages], …}`.
pub(super) fn parse(spec: RawBsonRef<'_>, env: &Env, parse: ParseStage) -> Result<Stage> {
    let facets = match spec {
        RawBsonRef::Document(d) if !d.is_empty() => d,
        other => {
            return Err(Error::new(
                ErrorKind::Stage(StageError::FacetSpecNotObject),
                format!(
                    "the $facet specification must be a non-empty object, but found a {}",
                    type_name(&other)
                ),
            ));
        }
    };
    let mut out = Vec::new();
    for el in facets.iter() {
        let (name, pipeline) = el?;
        check_name(name.as_str())?;
        let RawBsonRef::Array(stages) = pipeline else {
            return Err(Error::new(
                ErrorKind::Stage(StageError::FacetNotArray),
                format!(
                    "arguments to $facet must be arrays, {} is type {}",
                    name.as_str(),
                    type_name(&pipeline)
                ),
            ));
        };
        let sub = SubPipeline::parse(stages, env, Within::Facet, parse)?;
        out.push((name.as_str().to_owned(), sub.stages));
    }
    Ok(Stage::Facet(out))
}

/// A facet's name becomes a field of the output: a valid field name.
fn check_name(name: &str) -> Result<()> {
    let context = "$facet pipeline names must follow the naming rules of field path expressions.";
    if name.is_empty() {
        return Err(Error::new(
            ErrorKind::EmptyFieldPathComponent,
            format!("{context} :: caused by :: FieldPath field names may not be empty strings."),
        ));
    }
    if name.starts_with('$') {
        return Err(Error::new(
            ErrorKind::DollarPrefixedFieldPathComponent,
            format!(
                "{context} :: caused by :: FieldPath field names may not start with '$'. Given: \
                 {name}"
            ),
        ));
    }
    if name.contains('.') {
        return Err(Error::new(
            ErrorKind::Expression(ExprError::FieldNameDot),
            format!("{context} :: caused by :: FieldPath field names may not contain '.'."),
        ));
    }
    Ok(())
}
