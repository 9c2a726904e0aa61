//! The commands that move the primary: `replSetStepDown` (the primary
//! hands over to a caught-up secondary and stays out of elections for a
//! while) and `replSetFreeze` (a secondary stays out of elections).

use std::time::Duration;

use bson::{RawBsonRef, doc};
use ebb_repl::{Role, StepDownError};

use super::commands::set_of;
use crate::command::{Request, ok};
use crate::error::{CommandError, CommandResult, codes};

/// A number of seconds given as field `name`, `default` when absent.
fn seconds(req: &Request, name: &str, default: f64) -> CommandResult<f64> {
    match req.body.get(name)? {
        None => Ok(default),
        Some(RawBsonRef::Boolean(true)) if name == "replSetStepDown" => Ok(default),
        Some(v) => crate::args::as_f64(v).ok_or_else(|| {
            CommandError::new(
                codes::TYPE_MISMATCH,
                format!("'{name}' must be a number of seconds"),
            )
        }),
    }
}

fn duration(secs: f64) -> Duration {
    Duration::from_secs_f64(secs.max(0.0))
}

/// `replSetStepDown: <secs>`, with `secondaryCatchUpPeriodSecs` (10) and
/// `force`.
pub async fn repl_set_step_down(req: Request) -> CommandResult {
    let set = set_of(&req)?;
    let stand_down = seconds(&req, "replSetStepDown", 60.0)?;
    let catch_up = seconds(&req, "secondaryCatchUpPeriodSecs", 10.0)?;
    let force = match req.body.get("force")? {
        None => false,
        Some(RawBsonRef::Boolean(b)) => b,
        Some(v) => crate::args::as_f64(v).is_some_and(|n| n != 0.0),
    };
    if stand_down <= 0.0 {
        return Err(CommandError::new(
            codes::BAD_VALUE,
            "stepdown period must be a positive integer",
        ));
    }
    if catch_up > stand_down {
        return Err(CommandError::new(
            codes::BAD_VALUE,
            "stepdown period must be longer than secondaryCatchUpPeriodSecs",
        ));
    }
    match set
        .replica
        .step_down(duration(catch_up), force, duration(stand_down))
        .await
    {
        Ok(()) => ok(doc! {}),
        Err(StepDownError::NotLeader) => Err(CommandError::new(
            codes::NOT_WRITABLE_PRIMARY,
            "not primary so can't step down",
        )),
        Err(e @ StepDownError::NoneCaughtUp(_)) => {
            Err(CommandError::new(codes::EXCEEDED_TIME_LIMIT, e.to_string()))
        }
        Err(e @ StepDownError::NotReplaced(_)) => {
            Err(CommandError::new(codes::EXCEEDED_TIME_LIMIT, e.to_string()))
        }
    }
}

/// `replSetFreeze: <secs>`; 0 unfreezes.
pub async fn repl_set_freeze(req: Request) -> CommandResult {
    let set = set_of(&req)?;
    let secs = seconds(&req, "replSetFreeze", 0.0)?;
    let view = set.replica.view();
    if view.role == Role::Primary {
        return Err(CommandError::new(
            codes::NOT_SECONDARY,
            "cannot freeze node when primary or running for election. state: Primary",
        ));
    }
    set.replica.freeze(duration(secs));
    match secs > 0.0 {
        true => ok(doc! {}),
        false => ok(doc! { "info": "unfreezing" }),
    }
}
