//! `configureFailPoint`, test-only: with `replication.fault_points` on, the
//! fail point `ebbCutReplication` (`mode: "alwaysOn"` or `"off"`) cuts this
//! member's messages to and from the other members, a partition the fault
//! harness makes and heals at will; `ebbCrashBeforeRetryRecord` aborts the
//! process once a retryable write has applied, before its reply is
//! recorded. Without the setting the command does not exist, as on a
//! mongod without test commands.

use std::sync::atomic::Ordering;

use bson::{RawBsonRef, doc};

use crate::command::{Request, ok};
use crate::error::{CommandError, CommandResult};

pub async fn configure_fail_point(req: Request) -> CommandResult {
    let Some(set) = req.node.replica_set().filter(|s| s.fault_points) else {
        return Err(CommandError::command_not_found("configureFailPoint"));
    };
    let name = req.body.get_str("configureFailPoint").unwrap_or_default();
    let point = match name {
        "ebbCutReplication" => &set.cut,
        "ebbCrashBeforeRetryRecord" => &set.crash_before_record,
        _ => {
            return Err(CommandError::bad_value(format!(
                "Cannot find failPoint: {name}"
            )));
        }
    };
    let on = match req.body.get("mode")? {
        Some(RawBsonRef::String("alwaysOn")) => true,
        Some(RawBsonRef::String("off")) => false,
        _ => {
            return Err(CommandError::bad_value(format!(
                "mode must be \"alwaysOn\" or \"off\" for {name}"
            )));
        }
    };
    let was = point.swap(on, Ordering::SeqCst);
    ok(doc! { "count": i32::from(was) })
}
