//! Authentication commands: `saslStart`, `saslContinue`, `authenticate`,
//! `logout`, `connectionStatus`, and the handshake's part of it
//! (`speculativeAuthenticate` and `saslSupportedMechs` in `hello`).
//!
//! A SASL conversation is SCRAM (`auth::scram`) with mongod's framing:
//! `conversationId` is always 1, payloads are BinData (or base64 strings,
//! answered in kind), and `options.skipEmptyExchange` ends the conversation
//! with the server signature instead of one more empty round. Any failure of
//! a step is "Authentication failed." (18), whatever the cause, as in mongod;
//! the cause goes to the log.

use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use bson::spec::BinarySubtype;
use bson::{Binary, Bson, Document, RawBsonRef, RawDocument, doc};

use super::{Request, ok};
use crate::args::Args;
use crate::auth::check::current_user;
use crate::auth::internal;
use crate::auth::privileges::{self, Resource};
use crate::auth::scram::{self, Conversation, Mechanism};
use crate::auth::session::{Authenticated, Pending};
use crate::auth::store;
use crate::auth::users::{self, StoredUser, UserName};
use crate::context::NodeContext;
use crate::error::{CommandError, CommandResult, codes};

use super::common::ConnInfo;

const START_ARGS: &[&str] = &["mechanism", "payload", "autoAuthorize", "options"];
const CONTINUE_ARGS: &[&str] = &["conversationId", "payload"];

/// A SASL payload and how the client sent it, so the reply matches.
struct Payload {
    bytes: Vec<u8>,
    as_base64: bool,
}

impl Payload {
    fn read(cmd: &str, v: Option<RawBsonRef<'_>>) -> CommandResult<Payload> {
        match v {
            Some(RawBsonRef::Binary(b)) => Ok(Payload {
                bytes: b.bytes.to_vec(),
                as_base64: false,
            }),
            Some(RawBsonRef::String(s)) => Ok(Payload {
                bytes: B64.decode(s).map_err(|_| {
                    CommandError::bad_value(format!("Invalid base64 in '{cmd}.payload'"))
                })?,
                as_base64: true,
            }),
            Some(other) => Err(CommandError::new(
                codes::TYPE_MISMATCH,
                format!(
                    "BSON field '{cmd}.payload' is the wrong type '{}', expected types '[string, binData]'",
                    crate::args::type_name(&other)
                ),
            )),
            None => Err(CommandError::new(
                codes::MISSING_FIELD,
                format!("BSON field '{cmd}.payload' is missing but a required field"),
            )),
        }
    }

    fn reply(&self, bytes: Vec<u8>) -> Bson {
        if self.as_base64 {
            Bson::String(B64.encode(bytes))
        } else {
            Bson::Binary(Binary {
                subtype: BinarySubtype::Generic,
                bytes,
            })
        }
    }
}

/// mongod's answer to every failed step.
fn failed() -> CommandError {
    CommandError::new(codes::AUTHENTICATION_FAILED, "Authentication failed.")
}

pub async fn sasl_start(req: Request) -> CommandResult {
    let args = Args::parse(&req.body, START_ARGS)?;
    let reply = start(&req.node, &req.conn, &req.db, args.raw(), "saslStart").await?;
    ok(reply)
}

/// Runs a `saslStart` (or the one inside `speculativeAuthenticate`) on
/// database `db`; returns the reply without `ok`.
async fn start(
    ctx: &NodeContext,
    conn: &ConnInfo,
    db: &str,
    cmd: &RawDocument,
    cmd_name: &str,
) -> CommandResult<Document> {
    let mechanism = match cmd.get("mechanism")? {
        Some(RawBsonRef::String(m)) => m,
        Some(other) => {
            return Err(CommandError::new(
                codes::TYPE_MISMATCH,
                format!(
                    "BSON field '{cmd_name}.mechanism' is the wrong type '{}', expected type 'string'",
                    crate::args::type_name(&other)
                ),
            ));
        }
        None => {
            return Err(CommandError::new(
                codes::MISSING_FIELD,
                format!("BSON field '{cmd_name}.mechanism' is missing but a required field"),
            ));
        }
    };
    let Some(mech) = Mechanism::parse(mechanism) else {
        return Err(CommandError::new(
            codes::MECHANISM_UNAVAILABLE,
            format!(
                "Received authentication for mechanism {mechanism} which is unknown or not enabled"
            ),
        ));
    };
    if db == "$external" {
        return Err(CommandError::new(
            codes::MECHANISM_UNAVAILABLE,
            format!("Unsupported mechanism '{mechanism}' on authentication database '$external'"),
        ));
    }
    let payload = Payload::read(cmd_name, cmd.get("payload")?)?;
    let skip_empty_exchange = match cmd.get("options")? {
        Some(RawBsonRef::Document(o)) => {
            matches!(o.get("skipEmptyExchange")?, Some(RawBsonRef::Boolean(true)))
        }
        _ => false,
    };
    // A new start abandons whatever conversation was in progress.
    conn.auth.set_pending(None);
    let first = scram::parse_client_first(&payload.bytes).map_err(|e| {
        tracing::info!(error = %e, mechanism, "authentication failed");
        failed()
    })?;
    let name = UserName::new(first.user.clone(), db);
    let (user, credentials) = who(ctx, name, mech).await?;
    let (conversation, server_first) = Conversation::start(mech, first, credentials);
    conn.auth.set_pending(Some(Pending::Proof {
        conversation: Box::new(conversation),
        user,
        skip_empty_exchange,
    }));
    Ok(doc! {
        "conversationId": 1,
        "done": false,
        "payload": payload.reply(server_first),
    })
}

/// The user `name` would authenticate as and the credentials its proof is
/// checked against: the internal user's come from the key file, every
/// other user's from `admin.system.users`.
async fn who(
    ctx: &NodeContext,
    name: UserName,
    mech: Mechanism,
) -> CommandResult<(Authenticated, scram::Credentials)> {
    let generation = ctx.users.generation();
    if internal::is_internal(&name) {
        let Some(key) = &ctx.internal_key else {
            tracing::info!(user = %name.full(), "authentication failed: no security.key_file");
            return Err(failed());
        };
        return Ok((internal::authenticated(generation), key.credentials(mech)));
    }
    let stored = store::find_user(ctx, &name).await?;
    let credentials = stored
        .as_deref()
        .and_then(|d| users::credentials_of(d, mech));
    let (Some(stored), Some(credentials)) = (stored, credentials) else {
        tracing::info!(user = %name.full(), mechanism = mech.name(), "authentication failed: no such user or no credentials for the mechanism");
        return Err(failed());
    };
    let roles = StoredUser::parse(&stored)
        .map(|u| u.roles)
        .unwrap_or_default();
    let user = Authenticated {
        name,
        roles,
        generation,
    };
    Ok((user, credentials))
}

pub async fn sasl_continue(req: Request) -> CommandResult {
    let args = Args::parse(&req.body, CONTINUE_ARGS)?;
    let id = match args.get("conversationId") {
        Some(v) => crate::args::as_i64(v),
        None => return Err(args.missing("conversationId")),
    };
    if id != Some(1) {
        return Err(CommandError::new(
            codes::PROTOCOL_ERROR,
            "sasl: Mismatched conversation id",
        ));
    }
    let payload = Payload::read("saslContinue", args.get("payload"))?;
    let Some(pending) = req.conn.auth.take_pending() else {
        return Err(CommandError::new(
            codes::PROTOCOL_ERROR,
            "No SASL session state found",
        ));
    };
    match pending {
        Pending::Proof {
            conversation,
            user,
            skip_empty_exchange,
        } => {
            let server_final = conversation.finish(&payload.bytes).map_err(|e| {
                tracing::info!(error = %e, user = %user.name.full(), mechanism = conversation.mech.name(), "authentication failed");
                failed()
            })?;
            // One user per connection, as mongod 6+; the same user again is fine.
            if let Some(previous) = req.conn.auth.user()
                && previous.name != user.name
            {
                return Err(CommandError::new(
                    codes::ALREADY_AUTHENTICATED,
                    format!(
                        "Each client connection may only be authenticated once. Previously authenticated as: {}",
                        previous.name.full()
                    ),
                ));
            }
            tracing::info!(user = %user.name.full(), mechanism = conversation.mech.name(), "authentication succeeded");
            req.conn.auth.set_user(user);
            if !skip_empty_exchange {
                req.conn.auth.set_pending(Some(Pending::Done));
            }
            ok(doc! {
                "conversationId": 1,
                "done": skip_empty_exchange,
                "payload": payload.reply(server_final),
            })
        }
        Pending::Done if payload.bytes.is_empty() => ok(doc! {
            "conversationId": 1,
            "done": true,
            "payload": payload.reply(Vec::new()),
        }),
        Pending::Done => Err(failed()),
    }
}

/// `authenticate`: mongod's non-SASL entry point, for MONGODB-X509 only,
/// which needs TLS client certificates ebb does not take.
pub async fn authenticate(req: Request) -> CommandResult {
    let args = Args::parse(&req.body, &["mechanism", "user"])?;
    match args.str("mechanism")? {
        Some("MONGODB-X509") => Err(CommandError::new(
            codes::PROTOCOL_ERROR,
            "SSL support is required for the MONGODB-X509 mechanism.",
        )),
        // mongod answers every other failure of `authenticate` this way.
        _ => Err(failed()),
    }
}

/// `logout`: forgets the connection's user.
pub async fn logout(req: Request) -> CommandResult {
    Args::parse(&req.body, &[])?;
    req.conn.auth.clear_user();
    req.conn.auth.set_pending(None);
    ok(doc! {})
}

/// `connectionStatus`: who the connection is and the roles (and, with
/// `showPrivileges`, the privileges) it holds.
pub async fn connection_status(req: Request) -> CommandResult {
    let args = Args::parse(&req.body, &["showPrivileges"])?;
    let show_privileges = args.bool("showPrivileges")?.unwrap_or(false);
    let user = current_user(&req.node, &req.conn.auth).await?;
    let users: Vec<Document> = user
        .iter()
        .map(|u| doc! { "user": u.name.user.clone(), "db": u.name.db.clone() })
        .collect();
    let roles: Vec<Document> = user
        .iter()
        .flat_map(|u| u.roles.iter().map(|r| r.to_document()))
        .collect();
    let mut info = doc! { "authenticatedUsers": users, "authenticatedUserRoles": roles };
    if show_privileges {
        let mut privileges = Vec::new();
        for role in user.iter().flat_map(|u| u.roles.iter()) {
            for (resource, actions) in privileges::privileges_of(&role.role, &role.db) {
                let resource = match resource {
                    Resource::Db(db) => doc! { "db": db, "collection": "" },
                    Resource::AnyDb => doc! { "db": "", "collection": "" },
                    Resource::Cluster => doc! { "cluster": true },
                };
                let actions: Vec<&str> = actions.iter().map(|a| a.name()).collect();
                privileges.push(doc! { "resource": resource, "actions": actions });
            }
        }
        info.insert("authenticatedUserPrivileges", privileges);
    }
    ok(doc! { "authInfo": info })
}

/// What `hello` adds for authentication: `saslSupportedMechs` for the
/// user it names, and the reply to a `speculativeAuthenticate` (omitted
/// when it fails: the driver then authenticates the usual way).
pub async fn hello_fields(req: &Request, reply: &mut Document) -> CommandResult<()> {
    if let Some(RawBsonRef::String(id)) = req.body.get("saslSupportedMechs")?
        && let Some((db, user)) = id.split_once('.')
        && let Some(d) = store::find_user(&req.node, &UserName::new(user, db)).await?
    {
        let mechs: Vec<&str> = users::mechanisms_of(&d).iter().map(|m| m.name()).collect();
        reply.insert("saslSupportedMechs", mechs);
    }
    if let Some(RawBsonRef::Document(spec)) = req.body.get("speculativeAuthenticate")?
        && spec.get("saslStart")?.is_some()
        && let Some(RawBsonRef::String(db)) = spec.get("db")?
    {
        match start(&req.node, &req.conn, db, spec, "saslStart").await {
            Ok(r) => {
                reply.insert("speculativeAuthenticate", r);
            }
            Err(e) => tracing::debug!(error = %e.errmsg, "speculative authentication failed"),
        }
    }
    Ok(())
}
