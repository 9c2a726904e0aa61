//! A command's `readConcern`: what it asks, refused with mongod's errors
//! where this node cannot give it, and waited for where it can.
//!
//! A member applies only committed entries, so on a set `local`,
//! `available` and `majority` read the same majority-committed data, and
//! on a standalone they read what it holds, as mongod's do. `linearizable`
//! is a primary's read index: the member confirms with a quorum that it
//! still leads and has applied everything committed before the read runs.
//! `afterClusterTime` (what drivers' causally consistent sessions send)
//! waits until the member has applied a write at that time or later
//! (`repl::time`), within `maxTimeMS`. A transaction reads one snapshot
//! whatever its level, `snapshot` included (`crate::txn`); `snapshot`
//! outside a transaction, `afterOpTime` and `atClusterTime` are refused
//! rather than ignored.

use std::time::Duration;

use bson::{RawBsonRef, RawDocument};
use ebb_repl::Role;

use crate::error::{CommandError, CommandResult, codes};
use crate::repl::ReplicaSet;

/// The levels mongod knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Level {
    Local,
    Available,
    Majority,
    Linearizable,
    Snapshot,
}

/// A `readConcern` document, read as mongod reads it.
#[derive(Debug, Default)]
struct Asked {
    level: Option<Level>,
    after_cluster_time: Option<bson::Timestamp>,
    after_op_time: bool,
    at_cluster_time: bool,
}

fn parse(body: &RawDocument) -> CommandResult<Option<Asked>> {
    let rc = match body.get("readConcern")? {
        None => return Ok(None),
        Some(RawBsonRef::Document(rc)) => rc,
        Some(_) => {
            return Err(CommandError::failed_to_parse(
                "field readConcern must be an object",
            ));
        }
    };
    let mut asked = Asked::default();
    for field in rc {
        let (name, value) = field?;
        match name.as_str() {
            "level" => {
                let RawBsonRef::String(level) = value else {
                    return Err(CommandError::new(
                        codes::TYPE_MISMATCH,
                        "readConcern.level must be a string",
                    ));
                };
                asked.level = Some(match level {
                    "local" => Level::Local,
                    "available" => Level::Available,
                    "majority" => Level::Majority,
                    "linearizable" => Level::Linearizable,
                    "snapshot" => Level::Snapshot,
                    _ => {
                        return Err(CommandError::failed_to_parse(
                            "readConcern.level must be either 'local', 'majority', \
                             'linearizable', 'available', or 'snapshot'",
                        ));
                    }
                });
            }
            "afterClusterTime" => {
                let RawBsonRef::Timestamp(ts) = value else {
                    return Err(CommandError::new(
                        codes::TYPE_MISMATCH,
                        "readConcern.afterClusterTime must be a timestamp",
                    ));
                };
                asked.after_cluster_time = Some(ts);
            }
            "afterOpTime" => asked.after_op_time = true,
            "atClusterTime" => asked.at_cluster_time = true,
            // Set by mongod itself; a client may send it back.
            "provenance" => {}
            other => {
                return Err(CommandError::invalid_options(format!(
                    "Unrecognized option in readConcern: {other}"
                )));
            }
        }
    }
    Ok(Some(asked))
}

/// Refuses a read concern this node cannot honour; for `linearizable` on a
/// set's primary, and for `afterClusterTime`, returns once the command may
/// run. `data`: whether the command reads or writes documents (what a
/// cluster time orders: mongod refuses one on `ping` or `serverStatus`,
/// and drivers' causally consistent sessions send one on writes too).
/// `transaction`: the command starts a transaction, which reads one
/// snapshot whatever its level (`crate::txn`), `snapshot` included.
pub async fn check(
    set: Option<&ReplicaSet>,
    name: &str,
    body: &RawDocument,
    data: bool,
    transaction: bool,
) -> CommandResult<()> {
    let Some(asked) = parse(body)? else {
        return Ok(());
    };
    let level = asked.level.unwrap_or(Level::Local);
    if level == Level::Linearizable && asked.after_op_time {
        return Err(CommandError::failed_to_parse(
            "afterOpTime not compatible with linearizable read concern",
        ));
    }
    if level == Level::Linearizable && asked.after_cluster_time.is_some() {
        return Err(CommandError::failed_to_parse(
            "afterClusterTime is not compatible with linearizable read concern",
        ));
    }
    if asked.at_cluster_time && level != Level::Snapshot {
        return Err(CommandError::invalid_options(
            "readConcern atClusterTime can only be set with level 'snapshot'",
        ));
    }
    let Some(set) = set else {
        return standalone(level, &asked);
    };
    if level == Level::Snapshot && !transaction {
        return Err(CommandError::new(
            codes::NOT_IMPLEMENTED,
            "readConcern level 'snapshot' outside a transaction is not supported by ebb's \
             replica sets yet",
        ));
    }
    if asked.at_cluster_time {
        return Err(CommandError::new(
            codes::NOT_IMPLEMENTED,
            "readConcern atClusterTime is not supported by ebb's replica sets yet",
        ));
    }
    if asked.after_op_time {
        return Err(CommandError::new(
            codes::NOT_IMPLEMENTED,
            "readConcern afterOpTime is for members' internal use and is not supported by ebb",
        ));
    }
    if let Some(ts) = asked.after_cluster_time {
        return after_cluster_time(set, name, body, ts, data).await;
    }
    if level == Level::Linearizable {
        return linearize(set).await;
    }
    Ok(())
}

/// Waits until this member has applied a write at `ts` or later.
async fn after_cluster_time(
    set: &ReplicaSet,
    name: &str,
    body: &RawDocument,
    ts: bson::Timestamp,
    data: bool,
) -> CommandResult<()> {
    if !data {
        return Err(CommandError::invalid_options(format!(
            "Command {name} does not support readConcern afterClusterTime"
        )));
    }
    if ts.time == 0 && ts.increment == 0 {
        return Err(CommandError::invalid_options(
            "afterClusterTime cannot be a null timestamp",
        ));
    }
    if set.replica.view().role == Role::Uninitiated {
        return Err(crate::repl::commands::not_initiated());
    }
    let wanted = (ts.time, ts.increment);
    // The cluster time is the latest this member applied or a client
    // gossiped back (`$clusterTime`): a time beyond both was never given
    // out.
    let gossiped = match body.get("$clusterTime")? {
        Some(RawBsonRef::Document(ct)) => match ct.get("clusterTime")? {
            Some(RawBsonRef::Timestamp(t)) => (t.time, t.increment),
            _ => (0, 0),
        },
        _ => (0, 0),
    };
    if wanted > set.replica.optime().ts().max(gossiped) {
        return Err(CommandError::invalid_options(
            "readConcern afterClusterTime value must not be greater than the current \
             clusterTime",
        ));
    }
    let limit = match body.get("maxTimeMS")? {
        Some(v) => crate::args::as_f64(v)
            .filter(|ms| *ms >= 1.0)
            .map(|ms| Duration::from_millis(ms as u64)),
        None => None,
    };
    if set.replica.wait_applied(wanted, limit).await {
        Ok(())
    } else {
        Err(CommandError::new(
            codes::MAX_TIME_MS_EXPIRED,
            "operation exceeded time limit",
        ))
    }
}

/// What a standalone mongod answers.
fn standalone(level: Level, asked: &Asked) -> CommandResult<()> {
    if asked.after_op_time {
        return Err(CommandError::new(
            codes::NOT_A_REPLICA_SET,
            "node needs to be a replica set member to use readConcern afterOpTime",
        ));
    }
    if asked.after_cluster_time.is_some() {
        return Err(CommandError::new(
            codes::ILLEGAL_OPERATION,
            "Cannot specify afterClusterTime readConcern without replication enabled",
        ));
    }
    match level {
        Level::Linearizable | Level::Snapshot => Err(CommandError::new(
            codes::NOT_A_REPLICA_SET,
            "node needs to be a replica set member to use read concern",
        )),
        Level::Local | Level::Available | Level::Majority => Ok(()),
    }
}

/// The read index: this member must be the primary and still lead.
async fn linearize(set: &ReplicaSet) -> CommandResult<()> {
    let not_primary = || {
        CommandError::new(
            codes::NOT_WRITABLE_PRIMARY,
            "cannot satisfy linearizable read concern on non-primary node",
        )
    };
    if set.replica.view().role != Role::Primary {
        return Err(not_primary());
    }
    // A primary cut off from its quorum cannot confirm it leads; it stops
    // calling itself primary within an election timeout.
    let wait: Duration = 2 * set.election_timeout;
    match tokio::time::timeout(wait, set.replica.linearize()).await {
        Ok(Ok(())) => Ok(()),
        Ok(Err(_)) | Err(_) => Err(not_primary()),
    }
}

#[cfg(test)]
mod tests {
    use bson::rawdoc;

    use super::*;

    fn code(body: bson::RawDocumentBuf) -> Option<i32> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        rt.block_on(check(None, "find", &body, true, false))
            .err()
            .map(|e| e.code)
    }

    #[test]
    fn a_standalone_answers_as_mongod() {
        for level in ["local", "available", "majority"] {
            assert_eq!(
                code(rawdoc! { "find": "c", "readConcern": { "level": level } }),
                None
            );
        }
        assert_eq!(code(rawdoc! { "find": "c", "readConcern": {} }), None);
        for level in ["linearizable", "snapshot"] {
            assert_eq!(
                code(rawdoc! { "find": "c", "readConcern": { "level": level } }),
                Some(codes::NOT_A_REPLICA_SET)
            );
        }
        let after = bson::Timestamp {
            time: 0,
            increment: 1,
        };
        assert_eq!(
            code(rawdoc! { "find": "c", "readConcern": { "afterClusterTime": after } }),
            Some(codes::ILLEGAL_OPERATION)
        );
        assert_eq!(
            code(
                rawdoc! { "find": "c", "readConcern": { "afterOpTime": { "ts": after, "t": 1_i64 } } }
            ),
            Some(codes::NOT_A_REPLICA_SET)
        );
    }

    #[test]
    fn bad_read_concerns_are_refused() {
        assert_eq!(
            code(rawdoc! { "find": "c", "readConcern": { "level": "strong" } }),
            Some(codes::FAILED_TO_PARSE)
        );
        assert_eq!(
            code(rawdoc! { "find": "c", "readConcern": "majority" }),
            Some(codes::FAILED_TO_PARSE)
        );
        assert_eq!(
            code(rawdoc! { "find": "c", "readConcern": { "level": "local", "x": 1 } }),
            Some(codes::INVALID_OPTIONS)
        );
        let at = bson::Timestamp {
            time: 1,
            increment: 1,
        };
        assert_eq!(
            code(
                rawdoc! { "find": "c", "readConcern": { "level": "linearizable", "afterOpTime": { "ts": at, "t": 1_i64 } } }
            ),
            Some(codes::FAILED_TO_PARSE)
        );
        assert_eq!(
            code(
                rawdoc! { "find": "c", "readConcern": { "level": "majority", "atClusterTime": at } }
            ),
            Some(codes::INVALID_OPTIONS)
        );
        assert_eq!(
            code(rawdoc! { "find": "c", "readConcern": { "afterClusterTime": 5 } }),
            Some(codes::TYPE_MISMATCH)
        );
    }
}
