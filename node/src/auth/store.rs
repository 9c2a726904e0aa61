//! Reading `admin.system.users`: one user by name, every user (of one
//! database or all), whether there is any. Reads run on a snapshot like any
//! query; writes go through the collection's writer like any insert, from
//! the user management commands (`command/users.rs`), so users persist and
//! survive restarts exactly as documents do.

use bson::{RawBsonRef, RawDocumentBuf};
use ebb_storage::engine::{Direction, KeyRange};

use super::users::UserName;
use crate::context::NodeContext;
use crate::error::{CommandError, CommandResult};

/// Where users live.
pub const USERS_DB: &str = "admin";
pub const USERS_COLLECTION: &str = "system.users";

/// The document of user `name`, if it exists.
pub async fn find_user(
    ctx: &NodeContext,
    name: &UserName,
) -> CommandResult<Option<RawDocumentBuf>> {
    let Some(handle) = ctx.collection(USERS_DB, USERS_COLLECTION) else {
        return Ok(None);
    };
    let id = name.id();
    ctx.read(move |snap| {
        let key = handle.coll.record_key(RawBsonRef::String(&id));
        snap.get(handle.coll.records(), &key)?
            .map(|bytes| RawDocumentBuf::from_bytes(bytes).map_err(CommandError::from))
            .transpose()
    })
    .await
}

/// Every user document, in `_id` order; only those of `db` when given.
pub async fn all_users(ctx: &NodeContext, db: Option<&str>) -> CommandResult<Vec<RawDocumentBuf>> {
    let Some(handle) = ctx.collection(USERS_DB, USERS_COLLECTION) else {
        return Ok(Vec::new());
    };
    let db = db.map(str::to_owned);
    ctx.read(move |snap| {
        let mut cursor = snap.cursor(handle.coll.records(), KeyRange::all(), Direction::Forward)?;
        let mut out = Vec::new();
        while cursor.valid() {
            let doc = RawDocumentBuf::from_bytes(cursor.value().to_vec())?;
            let keep = match &db {
                Some(db) => doc.get_str("db").is_ok_and(|d| d == db),
                None => true,
            };
            if keep {
                out.push(doc);
            }
            cursor.advance();
        }
        cursor.status()?;
        Ok(out)
    })
    .await
}

/// Whether any user exists (the localhost exception ends with the first).
pub async fn any_user(ctx: &NodeContext) -> CommandResult<bool> {
    let Some(handle) = ctx.collection(USERS_DB, USERS_COLLECTION) else {
        return Ok(false);
    };
    ctx.read(move |snap| Ok(!ebb_storage::stats::is_empty(snap, &handle.coll)?))
        .await
}
