//! The authorization check every command passes before it runs, in one
//! place (called from the server's dispatch): with `security.authorization`
//! enabled, a command needs what [`privileges::required`] says, met by the
//! roles of the connection's user. Unauthenticated clients get mongod's
//! "requires authentication"; authenticated ones lacking a privilege get
//! "not authorized on DB to execute command { … }", both Unauthorized (13).
//!
//! The localhost exception: while `admin.system.users` is empty, a client on
//! the loopback interface may run `createUser` on `admin` (the first user),
//! as mongod allows.

use std::net::SocketAddr;

use bson::RawDocument;
use ebb_config::Authorization;

use super::privileges::{self, Need};
use super::session::{Authenticated, Session};
use super::store;
use super::users::StoredUser;
use crate::context::NodeContext;
use crate::error::{CommandError, CommandResult, codes};

/// Refuses the command unless the connection may run it.
pub async fn authorize(
    ctx: &NodeContext,
    session: &Session,
    peer: SocketAddr,
    db: &str,
    name: &str,
    body: &RawDocument,
) -> CommandResult<()> {
    if ctx.config.security.authorization == Authorization::Disabled {
        return Ok(());
    }
    let need = privileges::required(name, db, body);
    if need == Need::Open {
        return Ok(());
    }
    let Some(user) = current_user(ctx, session).await? else {
        if name == "createUser"
            && db == store::USERS_DB
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
    let allowed = match &need {
        Need::Open | Need::Authenticated => true,
        Need::All(wanted) => wanted.iter().all(|(resource, action)| {
            user.roles
                .iter()
                .any(|r| privileges::grants(&r.role, &r.db, resource, *action))
        }),
    };
    if allowed {
        return Ok(());
    }
    let shown = bson::Document::try_from(body)
        .map(|d| ebb_storage::encoding::display::shell(&bson::Bson::Document(d)))
        .unwrap_or_default();
    Err(CommandError::new(
        codes::UNAUTHORIZED,
        format!("not authorized on {db} to execute command {shown}"),
    ))
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
