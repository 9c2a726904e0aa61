//! A script's failure as the operation reports it: the error it threw, in
//! mongod's words (`<name>: <message>`, JSInterpreterFailure), or the
//! `maxTimeMS` deadline or `killOp` that interrupted it.

use rquickjs::{CaughtError, Ctx, Value};

use crate::error::{Error, ErrorKind};
use crate::query::interrupt;

/// A script's error, as mongod words it (`<name>: <message>`), or the
/// interruption that stopped it.
pub(super) fn caught(e: CaughtError<'_>) -> Error {
    if interrupt::deadline_passed() {
        return Error::new(ErrorKind::MaxTimeMsExpired, "operation exceeded time limit");
    }
    if let Err(stopped) = interrupt::check_current() {
        return stopped;
    }
    let text = match e {
        CaughtError::Exception(ex) => {
            let name: String = ex
                .get::<_, Value>("name")
                .ok()
                .and_then(|v| v.as_string().and_then(|s| s.to_string().ok()))
                .unwrap_or_else(|| "Error".to_owned());
            format!("{name}: {}", ex.message().unwrap_or_default())
        }
        CaughtError::Value(v) => format!("uncaught exception: {v:?}"),
        CaughtError::Error(rquickjs::Error::Allocation) => "out of memory".to_owned(),
        CaughtError::Error(other) => other.to_string(),
    };
    Error::new(ErrorKind::JsInterpreterFailure, text)
}

pub(super) fn failure(ctx: &Ctx<'_>, e: rquickjs::Error) -> Error {
    caught(CaughtError::from_error(ctx, e))
}
