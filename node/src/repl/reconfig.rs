//! `replSetReconfig`, as mongosh's `rs.add`, `rs.remove` and
//! `rs.reconfig` send it: the whole configuration, its `version` one past
//! the current one, one voter added or removed. The primary commits it
//! through the log (a new member catches up first); `force` is refused.

use bson::{Bson, Document, RawBsonRef, doc};
use ebb_repl::{ReconfigError, Role};

use super::commands::{members_of, not_initiated, set_of, set_version};
use crate::command::{Request, ok};
use crate::error::{CommandError, CommandResult, codes};

fn incompatible(why: impl Into<String>) -> CommandError {
    CommandError::new(codes::NEW_REPLICA_SET_CONFIGURATION_INCOMPATIBLE, why)
}

pub async fn repl_set_reconfig(req: Request) -> CommandResult {
    let set = set_of(&req)?;
    let view = set.replica.view();
    if view.role == Role::Uninitiated {
        return Err(not_initiated());
    }
    let config = match req.body.get("replSetReconfig")? {
        Some(RawBsonRef::Document(c)) => Document::try_from(c)?,
        _ => {
            return Err(CommandError::new(
                codes::TYPE_MISMATCH,
                "replSetReconfig takes a configuration document",
            ));
        }
    };
    if let Some(force) = req.body.get("force")?
        && !matches!(force, RawBsonRef::Boolean(false))
    {
        return Err(CommandError::new(
            codes::INVALID_OPTIONS,
            "a forced reconfig is not supported by ebb's replica sets yet",
        ));
    }
    let name = config.get_str("_id").unwrap_or_default();
    if name != set.name {
        return Err(incompatible(format!(
            "New and old configurations differ in replica set name; old was {}, and new is {name}",
            set.name
        )));
    }
    let old = set_version(&view);
    let new = match config.get("version") {
        Some(Bson::Int32(v)) => i64::from(*v),
        Some(Bson::Int64(v)) => *v,
        Some(Bson::Double(v)) if v.fract() == 0.0 => *v as i64,
        _ => {
            return Err(CommandError::new(
                codes::INVALID_REPLICA_SET_CONFIG,
                "the config needs a numeric version",
            ));
        }
    };
    if new <= i64::from(old) {
        return Err(incompatible(format!(
            "New replica set configuration version must be greater than old, but {new} is not \
             greater than {old} for replica set {}",
            set.name
        )));
    }
    let members = members_of(set, &config)?;
    if !view.writable {
        return Err(CommandError::new(
            codes::NOT_WRITABLE_PRIMARY,
            "not primary",
        ));
    }
    match set.replica.reconfigure(members).await {
        Ok(()) => ok(doc! {}),
        Err(ReconfigError::NotLeader) => Err(CommandError::new(
            codes::NOT_WRITABLE_PRIMARY,
            "not primary",
        )),
        Err(e @ (ReconfigError::TooMany | ReconfigError::IdChanged(_))) => {
            Err(incompatible(e.to_string()))
        }
        Err(ReconfigError::Other(why)) => Err(CommandError::new(codes::OPERATION_FAILED, why)),
    }
}
