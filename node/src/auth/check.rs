//! The authorization check every command passes before it runs, in one
//! place (called from `command::dispatch`): with `security.authorization`
//! enabled, a command needs what its row in the command table says, met by
//! the roles of the connection's user. Unauthenticated clients get mongod's
//! "requires authentication"; authenticated ones lacking a privilege get
//! "not authorized on DB to execute command { … }", both Unauthorized (13).
//!
//! The localhost exception: while `admin.system.users` is empty, a client on
//! the loopback interface may run `createUser` on `admin` (the first user)
//! and initiate, inspect and reconfigure the replica set, as mongod allows.

use std::net::SocketAddr;

use bson::{RawBsonRef, RawDocument};
use ebb_config::Authorization;

use super::internal;
use super::privileges::{self, Action, Need, Resource};
use super::session::{Authenticated, Session};
use super::store;
use super::users::{RoleName, StoredUser, UserName};
use crate::context::NodeContext;
use crate::error::{CommandError, CommandResult, codes};

/// What a loopback client may run while there is no user: create the first
/// one, and initiate, inspect and reconfigure the replica set (mongod's list).
const LOCALHOST_EXCEPTION: &[(&str, &str)] = &[
    (store::USERS_DB, "createUser"),
    ("admin", "replSetInitiate"),
    ("admin", "replSetGetStatus"),
    ("admin", "replSetReconfig"),
];

/// Refuses command `name` unless the connection may run it; `need` says
/// what it needs (asked only with authorization enabled).
pub async fn authorize(
    ctx: &NodeContext,
    session: &Session,
    peer: SocketAddr,
    db: &str,
    name: &str,
    body: &RawDocument,
    need: impl FnOnce() -> Need,
) -> CommandResult<()> {
    if ctx.config.security.authorization == Authorization::Disabled {
        return Ok(());
    }
    let need = need();
    if need == Need::Open {
        return Ok(());
    }
    let Some(user) = current_user(ctx, session).await? else {
        if LOCALHOST_EXCEPTION.contains(&(db, name))
            && peer.ip().is_loopback()
            && !store::any_user(ctx).await?
        {
            return Ok(());
        }
        return Err(CommandError::new(
            codes::UNAUTHORIZED,
            format!("command {name} requires authentication"),
        ));
    };
    if name == "usersInfo" && asks_only_for(body, db, &user.name) {
        // Users may always see themselves (mongod's usersInfo rule).
        return Ok(());
    }
    let allowed = match &need {
        Need::Open | Need::Authenticated => true,
        Need::All(wanted) => wanted.iter().all(|(resource, action)| {
            user.roles
                .iter()
                .any(|r| privileges::grants(&r.role, &r.db, resource, *action))
        }),
        Need::Root => user
            .roles
            .iter()
            .any(|r| privileges::is_root(&r.role, &r.db)),
    };
    if allowed {
        return Ok(());
    }
    let shown = bson::Document::try_from(body)
        .map(|d| ebb_lang::encoding::display::shell(&bson::Bson::Document(d)))
        .unwrap_or_default();
    Err(CommandError::new(
        codes::UNAUTHORIZED,
        format!("not authorized on {db} to execute command {shown}"),
    ))
}

/// Whether `usersInfo` names exactly one user, `me`.
fn asks_only_for(body: &RawDocument, db: &str, me: &UserName) -> bool {
    let named = match body.get("usersInfo") {
        Ok(Some(RawBsonRef::String(u))) => Some(UserName::new(u, db)),
        Ok(Some(RawBsonRef::Document(d))) => match (d.get_str("user"), d.get_str("db")) {
            (Ok(u), Ok(db)) => Some(UserName::new(u, db)),
            _ => None,
        },
        _ => None,
    };
    named.as_ref() == Some(me)
}

/// The roles that decide which databases `listDatabases` shows, or None
/// when it shows every database: authorization disabled, or the user holds
/// `listDatabases` and did not ask for `authorizedDatabases: true`.
pub async fn visible_databases(
    ctx: &NodeContext,
    session: &Session,
    authorized_only: Option<bool>,
) -> CommandResult<Option<Vec<RoleName>>> {
    if ctx.config.security.authorization == Authorization::Disabled {
        return Ok(None);
    }
    let roles = current_user(ctx, session)
        .await?
        .map(|u| u.roles)
        .unwrap_or_default();
    let may_list_all = roles
        .iter()
        .any(|r| privileges::grants(&r.role, &r.db, &Resource::Cluster, Action::ListDatabases));
    Ok((authorized_only == Some(true) || !may_list_all).then_some(roles))
}

/// Whether database `db` is among those `roles` may see.
pub fn shows_database(roles: &[RoleName], db: &str) -> bool {
    roles
        .iter()
        .any(|r| privileges::grants_any_on(&r.role, &r.db, db))
}

/// The connection's user with its current roles: reloaded when users
/// changed since they were cached, and forgotten if the user is gone (a
/// dropped user's connections lose its privileges, as in mongod).
pub async fn current_user(
    ctx: &NodeContext,
    session: &Session,
) -> CommandResult<Option<Authenticated>> {
    let Some(user) = session.user() else {
        return Ok(None);
    };
    if internal::is_internal(&user.name) {
        // Not a stored user: its role comes with the key, not the directory.
        return Ok(Some(user));
    }
    let generation = ctx.users.generation();
    if user.generation == generation {
        return Ok(Some(user));
    }
    let fresh = store::find_user(ctx, &user.name)
        .await?
        .and_then(|d| StoredUser::parse(&d));
    match fresh {
        Some(stored) => {
            let refreshed = Authenticated {
                name: user.name,
                roles: stored.roles,
                generation,
            };
            session.set_user(refreshed.clone());
            Ok(Some(refreshed))
        }
        None => {
            session.clear_user();
            Ok(None)
        }
    }
}
