//! `$fill`, as mongod defines it on top of `$setWindowFields`: outputs
//! with a `method` (`locf`, `linear`) become `$locf`/`$linearFill` window
//! functions over the partition, outputs with a `value` become a
//! `$ifNull` of the field and the value. This file only rewrites the
//! specification; [`super::spec`] parses the window stage it becomes.

use bson::{RawArrayBuf, RawBson, RawBsonRef, RawDocumentBuf, rawdoc};

use super::super::expr::{Env, Expr, cstr};
use super::spec::{Desugared, parse as parse_window};
use crate::encoding::display::type_name;
use crate::error::{Error, ErrorKind, Result};

/// What `$fill` becomes: the window stage (when a method is asked for)
/// and the fields set from values.
pub(crate) struct Fill {
    pub(crate) window: Option<Desugared>,
    pub(crate) values: Vec<(String, Expr)>,
}

/// Parses a `$fill` specification.
pub(crate) fn parse(spec: RawBsonRef<'_>, env: &Env) -> Result<Fill> {
    let RawBsonRef::Document(d) = spec else {
        return Err(Error::failed_to_parse(format!(
            "the $fill stage specification must be an object, found {}",
            type_name(&spec)
        )));
    };
    let (mut partition_by, mut fields, mut sort_by, mut output) = (None, None, None, None);
    for el in d.iter() {
        let (k, v) = el?;
        match (k.as_str(), v) {
            ("partitionBy", v) => partition_by = Some(v),
            ("partitionByFields", RawBsonRef::Array(a)) => fields = Some(a),
            ("sortBy", RawBsonRef::Document(s)) => sort_by = Some(s),
            ("output", RawBsonRef::Document(o)) => output = Some(o),
            (name @ ("partitionByFields" | "sortBy" | "output"), other) => {
                return Err(Error::type_mismatch(format!(
                    "BSON field '$fill.{name}' is the wrong type '{}'",
                    type_name(&other)
                )));
            }
            (other, _) => {
                return Err(Error::new(
                    ErrorKind::UnknownField,
                    format!("BSON field '$fill.{other}' is an unknown field."),
                ));
            }
        }
    }
    let Some(output) = output else {
        return Err(Error::new(
            ErrorKind::MissingField,
            "BSON field '$fill.output' is missing but a required field",
        ));
    };
    // partitionByFields: ["a", "b"] partitions as {a: "$a", b: "$b"} would,
    // keyed by position so dotted paths need no field names.
    let partition: Option<RawBson> = match (partition_by, fields) {
        (Some(_), Some(_)) => {
            return Err(Error::failed_to_parse(
                "Only one of 'partitionBy' and 'partitionByFields' may be specified in $fill",
            ));
        }
        (Some(p), None) => Some(RawBson::from(p)),
        (None, Some(a)) => {
            let mut key = RawDocumentBuf::new();
            for (i, f) in a.into_iter().enumerate() {
                match f? {
                    RawBsonRef::String(f) if !f.starts_with('$') => {
                        key.append(cstr(&format!("f{i}")), format!("${f}"));
                    }
                    other => {
                        return Err(Error::failed_to_parse(format!(
                            "$fill 'partitionByFields' must be an array of field names, found {}",
                            type_name(&other)
                        )));
                    }
                }
            }
            Some(RawBson::Document(key))
        }
        (None, None) => None,
    };
    let mut window_outputs = RawDocumentBuf::new();
    let mut values = Vec::new();
    for el in output.iter() {
        let (name, spec) = el?;
        let RawBsonRef::Document(spec) = spec else {
            return Err(Error::failed_to_parse(format!(
                "$fill output '{}' must be an object",
                name.as_str()
            )));
        };
        let mut it = spec.iter();
        let (Some(Ok((how, arg))), None) = (it.next(), it.next()) else {
            return Err(Error::failed_to_parse(
                "Exactly one of 'value' and 'method' must be specified in a $fill output",
            ));
        };
        let field = format!("${}", name.as_str());
        match (how.as_str(), arg) {
            ("value", v) => {
                let mut args = RawArrayBuf::new();
                args.push(field.as_str());
                args.push(RawBson::from(v));
                let if_null = rawdoc! { "$ifNull": args };
                values.push((
                    name.as_str().to_owned(),
                    Expr::parse_in(RawBsonRef::Document(&if_null), env)?,
                ));
            }
            ("method", RawBsonRef::String("locf")) => {
                window_outputs.append(name, rawdoc! { "$locf": field });
            }
            ("method", RawBsonRef::String("linear")) => {
                window_outputs.append(name, rawdoc! { "$linearFill": field });
            }
            ("method", _) => {
                return Err(Error::failed_to_parse(
                    "Method must be either 'locf' or 'linear'",
                ));
            }
            (other, _) => {
                return Err(Error::failed_to_parse(format!(
                    "Unknown $fill output argument '{other}': exactly one of 'value' and \
                     'method' must be specified"
                )));
            }
        }
    }
    let window = if window_outputs.is_empty() {
        None
    } else {
        if sort_by.is_none() {
            return Err(Error::failed_to_parse(
                "sortBy is required if any output field specifies a 'method'",
            ));
        }
        let mut spec = RawDocumentBuf::new();
        if let Some(p) = partition {
            spec.append(cstr("partitionBy"), p);
        }
        if let Some(s) = sort_by {
            spec.append(cstr("sortBy"), s.to_owned());
        }
        spec.append(cstr("output"), window_outputs);
        Some(parse_window(RawBsonRef::Document(&spec), env)?)
    };
    Ok(Fill { window, values })
}
