//! The replica-set commands (`replSetInitiate`, `replSetGetStatus`,
//! `replSetGetConfig`), the members' own `ebbRaft`, and what `hello` adds on
//! a member, in mongod's shapes.

use bson::{Bson, Document, RawBsonRef, doc, oid::ObjectId};
use ebb_repl::{InitiateError, Member, OpTime, Role, Rpc, View};

use super::{ReplicaSet, time};
use crate::command::{Request, ok};
use crate::error::{CommandError, CommandResult, codes};

pub(super) fn set_of(req: &Request) -> CommandResult<&ReplicaSet> {
    req.node.replica_set().ok_or_else(|| {
        CommandError::new(
            codes::NO_REPLICATION_ENABLED,
            "This node was not started with replication enabled.",
        )
    })
}

/// The election id mongod derives from the term: `7fffffff` then the term.
fn election_id(term: u64) -> ObjectId {
    let mut bytes = [0u8; 12];
    bytes[..4].copy_from_slice(&0x7fff_ffffu32.to_be_bytes());
    bytes[4..].copy_from_slice(&term.to_be_bytes());
    ObjectId::from_bytes(bytes)
}

/// The set's configuration version: it grows with every change.
pub(super) fn set_version(view: &View) -> i32 {
    (view.config_index + 1).min(i32::MAX as u64) as i32
}

/// What `hello` says on a member, beside the standalone's fields; and
/// whether this member takes writes.
pub fn hello_fields(set: &ReplicaSet) -> (bool, Document) {
    let view = set.replica.view();
    if view.role == Role::Uninitiated || set.is_removed(&view) {
        return (
            false,
            doc! {
                "secondary": false,
                "isreplicaset": true,
                "info": "Does not have a valid replica set config",
            },
        );
    }
    let mut d = doc! {
        "hosts": view.voters.iter().map(|m| m.host.clone()).collect::<Vec<_>>(),
        "setName": &set.name,
        "setVersion": set_version(&view),
        "secondary": view.role == Role::Secondary,
    };
    if let Some(leader) = &view.leader {
        d.insert("primary", &leader.host);
    }
    d.insert("me", &view.me.host);
    if view.role == Role::Primary {
        d.insert("electionId", election_id(view.term));
    }
    if view.optime != OpTime::default() {
        d.insert("lastWrite", time::last_write(view.optime));
    }
    (view.writable, d)
}

fn member_doc(m: &Member) -> Document {
    doc! {
        "_id": m.member_id,
        "host": &m.host,
        "arbiterOnly": false,
        "buildIndexes": true,
        "hidden": false,
        "priority": 1.0,
        "tags": {},
        "secondaryDelaySecs": 0i64,
        "votes": 1,
    }
}

/// The set's configuration in mongod's shape.
pub(super) fn config_doc(set: &ReplicaSet, view: &View) -> Document {
    doc! {
        "_id": &set.name,
        "version": set_version(view),
        "term": view.term as i64,
        "members": view.voters.iter().map(member_doc).collect::<Vec<_>>(),
        "protocolVersion": 1i64,
        "writeConcernMajorityJournalDefault": true,
        "settings": {
            "chainingAllowed": false,
            "heartbeatIntervalMillis": set.heartbeat.as_millis() as i64,
            "heartbeatTimeoutSecs": 10,
            "electionTimeoutMillis": set.election_timeout.as_millis() as i64,
            "catchUpTimeoutMillis": -1i64,
            "getLastErrorModes": {},
            "getLastErrorDefaults": { "w": 1, "wtimeout": 0 },
        },
    }
}

fn invalid(why: impl Into<String>) -> CommandError {
    CommandError::new(codes::INVALID_REPLICA_SET_CONFIG, why)
}

/// A member option's number, however it is typed.
fn number(value: &Bson) -> Option<f64> {
    match value {
        Bson::Int32(n) => Some(f64::from(*n)),
        Bson::Int64(n) => Some(*n as f64),
        Bson::Double(n) => Some(*n),
        _ => None,
    }
}

/// The members a `replSetInitiate` or `replSetReconfig` config names, checked as mongod checks
/// them; member options ebb does not honour are refused.
pub(super) fn members_of(set: &ReplicaSet, config: &Document) -> CommandResult<Vec<Member>> {
    let name = config
        .get_str("_id")
        .map_err(|_| invalid("the config's _id must be the set's name, a string"))?;
    if name != set.name {
        return Err(invalid(format!(
            "Attempting to initiate a replica set with name {name}, but command line reports {}; \
             rejecting",
            set.name
        )));
    }
    let members = config
        .get_array("members")
        .map_err(|_| invalid("the config needs a members array"))?;
    if members.is_empty() {
        return Err(invalid(
            "Replica set configuration must contain at least one member",
        ));
    }
    let mut out: Vec<Member> = Vec::new();
    for m in members {
        let Bson::Document(m) = m else {
            return Err(invalid("each member must be a document"));
        };
        let id = match m.get("_id") {
            Some(Bson::Int32(i)) => *i,
            Some(Bson::Int64(i)) => {
                i32::try_from(*i).map_err(|_| invalid("member _id out of range"))?
            }
            Some(Bson::Double(d)) if d.fract() == 0.0 => *d as i32,
            _ => return Err(invalid("each member needs a numeric _id")),
        };
        let host = m
            .get_str("host")
            .map_err(|_| invalid("each member needs a host string"))?;
        for (key, value) in m {
            let default = match key.as_str() {
                "_id" | "host" => true,
                "votes" => number(value) == Some(1.0),
                "priority" => number(value).is_some_and(|p| p > 0.0),
                "arbiterOnly" | "hidden" => value.as_bool() == Some(false),
                "buildIndexes" => value.as_bool() == Some(true),
                "secondaryDelaySecs" | "slaveDelay" => number(value) == Some(0.0),
                "tags" => matches!(value, Bson::Document(t) if t.is_empty()),
                _ => false,
            };
            if !default {
                return Err(CommandError::new(
                    codes::INVALID_OPTIONS,
                    format!("member option {key}: {value} is not supported by ebb yet"),
                ));
            }
        }
        if out.iter().any(|o| o.member_id == id) {
            return Err(invalid(format!(
                "Found two member configurations with same _id field, members.{id}"
            )));
        }
        if out.iter().any(|o| o.host.eq_ignore_ascii_case(host)) {
            return Err(invalid(format!(
                "Found two member configurations with same host field, {host}"
            )));
        }
        out.push(Member {
            host: host.to_owned(),
            member_id: id,
        });
    }
    if !out
        .iter()
        .any(|m| m.host.eq_ignore_ascii_case(set.replica.host()))
    {
        return Err(invalid(format!(
            "No host described in new configuration with {{version: 1, term: 0}} for replica set \
             {} maps to this node",
            set.name
        )));
    }
    Ok(out)
}

/// `replSetInitiate`: the set's first configuration, given or this member
/// alone.
pub async fn repl_set_initiate(req: Request) -> CommandResult {
    let set = set_of(&req)?;
    // As mongod: no configuration (`rs.initiate()` sends `{}`, pymongo's
    // `command("replSetInitiate")` a 1) is a set of this member alone.
    let members = match req.body.get("replSetInitiate")? {
        Some(RawBsonRef::Document(config)) if !config.is_empty() => {
            let config = Document::try_from(config)?;
            members_of(set, &config)?
        }
        _ => vec![Member {
            host: set.replica.host().to_owned(),
            member_id: 0,
        }],
    };
    match set.replica.initiate(members).await {
        Ok(()) => ok(doc! {}),
        Err(InitiateError::AlreadyInitialized) => Err(CommandError::new(
            codes::ALREADY_INITIALIZED,
            "already initialized",
        )),
        Err(InitiateError::Other(why)) => Err(CommandError::new(codes::OPERATION_FAILED, why)),
    }
}

pub fn not_initiated() -> CommandError {
    CommandError::new(
        codes::NOT_YET_INITIALIZED,
        "no replset config has been received",
    )
}

/// `replSetGetConfig`.
pub async fn repl_set_get_config(req: Request) -> CommandResult {
    let set = set_of(&req)?;
    let view = set.replica.view();
    if view.role == Role::Uninitiated {
        return Err(not_initiated());
    }
    ok(doc! { "config": config_doc(set, &view) })
}

/// mongod's member state number and name.
fn state_of(view: &View, member: &Member) -> (i32, &'static str) {
    if view.leader.as_ref() == Some(member) {
        (1, "PRIMARY")
    } else if member == &view.me {
        match view.role {
            Role::Secondary => (2, "SECONDARY"),
            _ => (0, "STARTUP"),
        }
    } else {
        (2, "SECONDARY")
    }
}

/// `replSetGetStatus`.
pub async fn repl_set_get_status(req: Request) -> CommandResult {
    let set = set_of(&req)?;
    let view = set.replica.view();
    if view.role == Role::Uninitiated {
        return Err(not_initiated());
    }
    if set.is_removed(&view) {
        return Err(invalid(
            "Our replica set config is invalid or we are not a member of it",
        ));
    }
    let (my_state, _) = state_of(&view, &view.me);
    let members: Vec<Document> = view
        .voters
        .iter()
        .map(|m| {
            let (state, name) = state_of(&view, m);
            let mut d = doc! {
                "_id": m.member_id,
                "name": &m.host,
                "health": 1.0,
                "state": state,
                "stateStr": name,
                "configVersion": set_version(&view),
                "configTerm": view.term as i64,
            };
            if m == &view.me {
                d.insert("self", true);
                d.insert("optime", time::optime_doc(view.optime));
                d.insert("optimeDate", time::wall(view.optime));
            }
            if let Some((held, optime)) = view.matched.get(&m.host) {
                d.insert("ebbLogIndex", *held as i64);
                // The primary knows what the others hold; the time of the
                // last write among it, while that is recent.
                if let (Some(t), false) = (optime, m == &view.me) {
                    d.insert("optime", time::optime_doc(*t));
                    d.insert("optimeDate", time::wall(*t));
                }
            }
            d
        })
        .collect();
    ok(doc! {
        "set": &set.name,
        "date": bson::DateTime::now(),
        "myState": my_state,
        "term": view.term as i64,
        "heartbeatIntervalMillis": set.heartbeat.as_millis() as i64,
        // A member applies only committed entries: what it applied is
        // majority-committed and durable.
        "optimes": {
            "lastCommittedOpTime": time::optime_doc(view.optime),
            "lastCommittedWallTime": time::wall(view.optime),
            "readConcernMajorityOpTime": time::optime_doc(view.optime),
            "appliedOpTime": time::optime_doc(view.optime),
            "durableOpTime": time::optime_doc(view.optime),
            "lastAppliedWallTime": time::wall(view.optime),
            "lastDurableWallTime": time::wall(view.optime),
        },
        "members": members,
    })
}

/// `ebbRaft`: a consensus message from another member.
pub async fn ebb_raft(req: Request) -> CommandResult {
    let set = set_of(&req)?;
    if set.cut.load(std::sync::atomic::Ordering::Relaxed) {
        return Err(CommandError::new(
            codes::HOST_UNREACHABLE,
            "replication is cut (fail point ebbCutReplication)",
        ));
    }
    let kind = req.body.get_str("ebbRaft").unwrap_or_default();
    let Some(rpc) = Rpc::parse(kind) else {
        return Err(CommandError::bad_value(format!("unknown message {kind}")));
    };
    let body = match req.body.get("body")? {
        Some(RawBsonRef::Binary(b)) => b.bytes,
        _ => {
            return Err(CommandError::new(
                codes::TYPE_MISMATCH,
                "body must be binData",
            ));
        }
    };
    let answer = set.replica.serve(rpc, body).await.map_err(|e| {
        // A member the set removed learns it from its vote's refusal.
        let code = match e.kind() {
            std::io::ErrorKind::PermissionDenied => codes::INVALID_REPLICA_SET_CONFIG,
            _ => codes::INTERNAL_ERROR,
        };
        CommandError::new(code, e.to_string())
    })?;
    if rpc == Rpc::Append {
        // A leader sends its log only to the members it names.
        set.removed
            .store(false, std::sync::atomic::Ordering::Relaxed);
    }
    ok(doc! { "body": bson::Binary { subtype: bson::spec::BinarySubtype::Generic, bytes: answer } })
}
