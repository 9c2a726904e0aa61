//! The source stages that report on the node rather than read documents:
//! `$collStats` and `$indexStats` (first stage of a collection's
//! `aggregate`), `$currentOp` (first stage of `aggregate: 1` on `admin`)
//! and `$listLocalSessions` (first stage of `aggregate: 1`). `aggregate` takes such a stage off the front, asks this file
//! for its documents and runs the rest of the pipeline over them. Anywhere
//! but first, storage refuses the stage (40602).
//!
//! The figures come from where the commands take them (`status.rs`):
//! `$collStats` is `collStats` reshaped, `$currentOp` is `currentOp`'s
//! entries. This file parses the stages' options with mongod's codes and
//! refuses the ones ebb cannot honour.

use bson::{Document, RawBsonRef, RawDocument, RawDocumentBuf, doc};
use ebb_storage::Error as StorageError;

use super::Request;
use super::admin::{hostname, user_patterns};
use super::status::{exact_count, operations, scale, storage_stats};
use crate::args::type_name;
use crate::auth::users::UserName;
use crate::error::{CommandError, CommandResult, codes};

/// A reporting source stage.
#[derive(Debug)]
pub enum Report {
    CollStats {
        /// `storageStats: {scale}`.
        storage_scale: Option<i64>,
        /// `count: {}`.
        count: bool,
        /// ebb's `ebbExpiry: {}`: the TTL indexes' never-expiring counts.
        expiry: bool,
    },
    /// `ebbExpiry: true` (ebb's): each TTL index's never-expiring counts.
    IndexStats {
        expiry: bool,
    },
    CurrentOp {
        all_users: bool,
    },
    /// `$listLocalSessions`: every user's sessions, some users', or the
    /// caller's own.
    ListLocalSessions {
        all_users: bool,
        users: Option<Vec<UserName>>,
    },
}

/// Whether `stage` is a reporting stage.
pub fn is_report(stage: &RawDocument) -> bool {
    matches!(
        stage.iter().next(),
        Some(Ok((name, _)))
            if ["$collStats", "$indexStats", "$currentOp", "$listLocalSessions"]
                .contains(&name.as_str())
    )
}

fn spec_document<'a>(
    name: &str,
    spec: RawBsonRef<'a>,
    code: i32,
) -> CommandResult<&'a RawDocument> {
    match spec {
        RawBsonRef::Document(d) => Ok(d),
        other => Err(CommandError::new(
            code,
            format!(
                "{name} must be specified as an object, got {}",
                type_name(&other)
            ),
        )),
    }
}

fn unknown(stage: &str, field: &str) -> CommandError {
    CommandError::new(
        codes::UNKNOWN_FIELD,
        format!("BSON field '{stage}.{field}' is an unknown field."),
    )
}

/// Parses a reporting stage (one [`is_report`] accepted).
pub fn parse(stage: &RawDocument) -> CommandResult<Report> {
    let (name, spec) = stage
        .iter()
        .next()
        .transpose()?
        .ok_or_else(|| CommandError::failed_to_parse("empty stage"))?;
    match name.as_str() {
        "$collStats" => {
            let d = spec_document("$collStats", spec, 5447000)?;
            let (mut storage_scale, mut count, mut expiry) = (None, false, false);
            for el in d {
                let (k, v) = el?;
                match k.as_str() {
                    "storageStats" => {
                        let s = spec_document("storageStats", v, codes::TYPE_MISMATCH)?;
                        let mut given = None;
                        for el in s {
                            let (k, v) = el?;
                            match k.as_str() {
                                "scale" => given = Some(v),
                                // mongod's extra WiredTiger detail ebb has
                                // no counterpart for; false asks for none.
                                "verbose" | "waitForLock" | "numericOnly"
                                    if v == RawBsonRef::Boolean(false) => {}
                                other => return Err(unknown("$collStats.storageStats", other)),
                            }
                        }
                        storage_scale = Some(scale(given)?);
                    }
                    "count" => {
                        spec_document("count", v, codes::TYPE_MISMATCH)?;
                        count = true;
                    }
                    "ebbExpiry" => {
                        spec_document("ebbExpiry", v, codes::TYPE_MISMATCH)?;
                        expiry = true;
                    }
                    "latencyStats" | "queryExecStats" => {
                        return Err(StorageError::not_implemented(&format!(
                            "$collStats {} (ebb keeps no per-collection latency or \
                             execution statistics)",
                            k.as_str()
                        ))
                        .into());
                    }
                    other => return Err(unknown("$collStats", other)),
                }
            }
            Ok(Report::CollStats {
                storage_scale,
                count,
                expiry,
            })
        }
        "$listLocalSessions" => {
            let d = spec_document("$listLocalSessions", spec, codes::TYPE_MISMATCH)?;
            let (mut all_users, mut users) = (false, None);
            for el in d {
                let (k, v) = el?;
                match (k.as_str(), v) {
                    ("allUsers", RawBsonRef::Boolean(b)) => all_users = b,
                    ("users", RawBsonRef::Array(list)) => {
                        users = Some(user_patterns(list, "$listLocalSessions users")?);
                    }
                    ("allUsers" | "users", other) => {
                        return Err(CommandError::new(
                            codes::TYPE_MISMATCH,
                            format!(
                                "BSON field '$listLocalSessions.{}' is the wrong type '{}'",
                                k.as_str(),
                                type_name(&other)
                            ),
                        ));
                    }
                    (other, _) => return Err(unknown("$listLocalSessions", other)),
                }
            }
            if all_users && users.is_some() {
                return Err(CommandError::new(
                    codes::FAILED_TO_PARSE,
                    "$listLocalSessions may not specify both 'allUsers' and 'users'",
                ));
            }
            Ok(Report::ListLocalSessions { all_users, users })
        }
        "$indexStats" => {
            let d = spec_document("$indexStats", spec, 28803)?;
            let mut expiry = false;
            for el in d {
                let (k, v) = el?;
                match (k.as_str(), v) {
                    ("ebbExpiry", RawBsonRef::Boolean(b)) => expiry = b,
                    ("ebbExpiry", other) => {
                        return Err(CommandError::new(
                            codes::TYPE_MISMATCH,
                            format!(
                                "BSON field '$indexStats.ebbExpiry' is the wrong type '{}', \
                                 expected type 'bool'",
                                type_name(&other)
                            ),
                        ));
                    }
                    (other, _) => return Err(unknown("$indexStats", other)),
                }
            }
            Ok(Report::IndexStats { expiry })
        }
        _ => {
            let d = spec_document("$currentOp", spec, codes::FAILED_TO_PARSE)?;
            let mut all_users = false;
            for el in d {
                let (k, v) = el?;
                let flag = match v {
                    RawBsonRef::Boolean(b) => b,
                    other => {
                        return Err(CommandError::new(
                            codes::FAILED_TO_PARSE,
                            format!(
                                "The '{}' parameter of the $currentOp stage must be a boolean \
                                 value, but found: {}",
                                k.as_str(),
                                type_name(&other)
                            ),
                        ));
                    }
                };
                match k.as_str() {
                    "allUsers" => all_users = flag,
                    // A standalone has only local operations; ebb keeps no
                    // lock backtraces and never truncates an entry.
                    "localOps" | "backtrace" | "truncateOps" if !flag => {}
                    "localOps" => {}
                    // Idle connections, cursors and sessions are not
                    // tracked as operations.
                    "idleConnections" | "idleCursors" | "idleSessions" | "backtrace"
                    | "truncateOps"
                        if flag =>
                    {
                        return Err(StorageError::not_implemented(&format!(
                            "$currentOp with {}: true",
                            k.as_str()
                        ))
                        .into());
                    }
                    "idleConnections" | "idleCursors" | "idleSessions" => {}
                    other => {
                        return Err(CommandError::new(
                            codes::FAILED_TO_PARSE,
                            format!("Unrecognized option '{other}' in $currentOp stage."),
                        ));
                    }
                }
            }
            Ok(Report::CurrentOp { all_users })
        }
    }
}

/// The documents `report` produces for a pipeline on `coll` (None for
/// `aggregate: 1`).
pub async fn documents(
    req: &Request,
    coll: Option<&str>,
    report: Report,
) -> CommandResult<Vec<RawDocumentBuf>> {
    let node = &req.node;
    let docs: Vec<Document> = match (report, coll) {
        (Report::CurrentOp { all_users }, None) => {
            if req.db != "admin" {
                return Err(current_op_namespace());
            }
            // A connection acts for one user: without `allUsers` an
            // authenticating node shows the caller's own operations.
            let auth = node.config.security.authorization == ebb_config::Authorization::Enabled;
            let own = (!all_users && auth).then_some(req.conn.id);
            operations(node, own)
        }
        (Report::CurrentOp { .. }, Some(_)) => return Err(current_op_namespace()),
        (Report::ListLocalSessions { all_users, users }, None) => {
            // Without `allUsers` or `users`, the caller's own sessions
            // (every session, when authorization is off and none has a user).
            let me = req.conn.auth.user().map(|u| u.name);
            let now = node.shared.clock.now_millis();
            node.sessions
                .list(now, |s| match (&users, all_users) {
                    (_, true) => true,
                    (Some(users), _) => s.user.as_ref().is_some_and(|u| users.contains(u)),
                    (None, false) => s.user == me,
                })
                .into_iter()
                .map(|s| {
                    let mut d = doc! {
                        "_id": {
                            "id": bson::Binary { subtype: bson::spec::BinarySubtype::Uuid, bytes: s.id.clone() },
                            "uid": bson::Binary { subtype: bson::spec::BinarySubtype::Generic, bytes: s.uid() },
                        },
                        "lastUse": bson::DateTime::from_millis(s.last_use_ms),
                    };
                    if let Some(u) = &s.user {
                        d.insert("user", doc! { "name": format!("{}@{}", u.user, u.db) });
                    }
                    d
                })
                .collect()
        }
        (Report::ListLocalSessions { .. }, Some(_)) => {
            return Err(CommandError::new(
                codes::INVALID_NAMESPACE,
                "$listLocalSessions must be run as {aggregate: 1}",
            ));
        }
        (Report::CollStats { .. } | Report::IndexStats { .. }, None) => {
            return Err(CommandError::new(
                codes::INVALID_NAMESPACE,
                "$collStats and $indexStats must be run against a collection",
            ));
        }
        (
            Report::CollStats {
                storage_scale,
                count,
                expiry,
            },
            Some(coll),
        ) => {
            let ns = format!("{}.{coll}", req.db);
            let mut out = doc! {
                "ns": ns.clone(),
                "host": host(req),
                "localTime": bson::DateTime::from_millis(node.shared.clock.now_millis()),
            };
            if expiry {
                let Some(entry) = node.collection(&req.db, coll) else {
                    return Err(CommandError::new(
                        codes::NAMESPACE_NOT_FOUND,
                        format!("Collection [{ns}] not found."),
                    ));
                };
                out.insert("ebbExpiry", super::expiry::of_collection(req, &entry.coll)?);
            }
            if storage_scale.is_some() || count {
                let Some(entry) = node.collection(&req.db, coll) else {
                    return Err(CommandError::new(
                        codes::NAMESPACE_NOT_FOUND,
                        format!(
                            "Unable to retrieve storageStats in $collStats stage :: caused by \
                             :: Collection [{ns}] not found."
                        ),
                    ));
                };
                let n = exact_count(node, &entry).await?;
                if let Some(scale) = storage_scale {
                    out.insert("storageStats", storage_stats(node, &entry, n, scale));
                }
                if count {
                    out.insert("count", n);
                }
            }
            vec![out]
        }
        (Report::IndexStats { expiry }, Some(coll)) => match node.collection(&req.db, coll) {
            None => Vec::new(),
            Some(entry) => {
                let mut out = Vec::new();
                for i in entry.coll.meta.indexes.iter().filter(|i| !i.is_internal()) {
                    let (ops, since) = entry.coll.accesses(&i.name);
                    let mut d = doc! {
                        "name": i.name.clone(),
                        "key": i.key.clone(),
                        "host": host(req),
                        "accesses": {
                            "ops": ops as i64,
                            "since": bson::DateTime::from_system_time(since),
                        },
                        "spec": i.to_spec_doc(),
                    };
                    let ttl = entry.coll.ttl_keygens().find(|kg| kg.name == i.name);
                    if let (true, Some(kg)) = (expiry, ttl) {
                        d.insert("ebbExpiry", super::expiry::of_index(req, &entry.coll, kg)?);
                    }
                    out.push(d);
                }
                out
            }
        },
    };
    docs.iter()
        .map(|d| RawDocumentBuf::try_from(d).map_err(CommandError::from))
        .collect()
}

fn current_op_namespace() -> CommandError {
    CommandError::new(
        codes::INVALID_NAMESPACE,
        "$currentOp must be run against the 'admin' database with {aggregate: 1}",
    )
}

fn host(req: &Request) -> String {
    format!("{}:{}", hostname(), req.node.config.net.port)
}
