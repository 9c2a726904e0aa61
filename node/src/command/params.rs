//! `getParameter` / `setParameter`: MongoDB's TTL server parameters at
//! runtime, plus the read-only `featureCompatibilityVersion` and
//! `enableTestCommands` (false: ebb has no test-only commands, and drivers'
//! test harnesses read this to know it).
//!
//! A change wakes the TTL monitor, so a shorter sleep or re-enabling the
//! monitor takes effect at once (as MongoDB's `ttlMonitorSleepSecs` does).

use bson::{Bson, Document, RawBsonRef, doc};
use ebb_config::{ParamError, ParamInput, ParamValue};

use super::{Request, ok};
use crate::error::{CommandError, CommandResult, codes};

fn to_bson(v: ParamValue) -> Bson {
    match v {
        ParamValue::Bool(b) => Bson::Boolean(b),
        ParamValue::Int(n) => Bson::Int32(n as i32),
    }
}

/// Parameters that can be read but not set, with their values.
fn read_only() -> [(&'static str, Bson); 2] {
    [
        (
            "featureCompatibilityVersion",
            Bson::Document(doc! { "version": "7.0" }),
        ),
        ("enableTestCommands", Bson::Boolean(false)),
    ]
}

pub async fn get_parameter(req: Request) -> CommandResult {
    let params = &req.node.shared.params;
    let all = matches!(req.body.get("getParameter")?, Some(RawBsonRef::String("*")));
    let mut out = Document::new();
    if all {
        for (name, value) in read_only() {
            out.insert(name, value);
        }
        for (spec, value) in params.all() {
            out.insert(spec.name, to_bson(value));
        }
        return ok(out);
    }
    for el in req.body.iter().skip(1) {
        let (name, _) = el?;
        let name = name.as_str();
        if crate::args::GENERIC.contains(&name) || name == "comment" {
            continue;
        }
        if let Some((_, v)) = read_only().into_iter().find(|(n, _)| *n == name) {
            out.insert(name, v);
        } else if let Some(v) = params.get(name) {
            out.insert(name, to_bson(v));
        }
    }
    if out.is_empty() {
        return Err(CommandError::invalid_options("no option found to get"));
    }
    ok(out)
}

pub async fn set_parameter(req: Request) -> CommandResult {
    let shared = &req.node.shared;
    let mut was = None;
    for el in req.body.iter().skip(1) {
        let (name, value) = el?;
        let name = name.as_str();
        if crate::args::GENERIC.contains(&name) {
            continue;
        }
        let input = match value {
            RawBsonRef::Boolean(b) => ParamInput::Bool(b),
            RawBsonRef::Int32(n) => ParamInput::Int(i64::from(n)),
            RawBsonRef::Int64(n) => ParamInput::Int(n),
            RawBsonRef::Double(d) => ParamInput::Double(d),
            RawBsonRef::String(s) => ParamInput::Str(s),
            other => {
                return Err(CommandError::bad_value(format!(
                    "Invalid value for parameter {name}: unsupported type {}",
                    crate::args::type_name(&other)
                )));
            }
        };
        if was.is_some() {
            return Err(CommandError::invalid_options(
                "setParameter sets one parameter at a time",
            ));
        }
        let previous = shared.params.set(name, input).map_err(|e| match e {
            ParamError::Unknown { .. } => CommandError::new(codes::INVALID_OPTIONS, e.to_string()),
            ParamError::BadValue { .. } => CommandError::bad_value(e.to_string()),
        })?;
        tracing::info!(parameter = name, "server parameter changed");
        was = Some(previous);
    }
    let Some(was) = was else {
        return Err(CommandError::invalid_options(
            "no option found to set, use help:true to see options ",
        ));
    };
    shared.ttl.wake.notify_one();
    ok(doc! { "was": to_bson(was) })
}
