//! The dispatch table: command name (case-sensitive, aliases spelled out)
//! to handler, the list `listCommands` reports, and the reply to a command
//! that is not in it. `listCommands` lives here because it reads the table.

use bson::doc;

use super::common::{Handler, Reply, Request, ok};
use super::{
    admin, aggregate, capped, checks, collections, count, delete, explain, find, find_and_modify,
    handshake, indexes, insert, params, profile, sasl, status, update, users,
};
use crate::error::{CommandError, CommandResult, codes};

macro_rules! handler {
    ($f:path) => {
        (|r: Request| -> Reply { Box::pin($f(r)) }) as Handler
    };
}

/// The dispatch table: command name (case-sensitive, aliases spelled out)
/// to handler, in alphabetical order.
pub fn lookup(name: &str) -> Option<Handler> {
    Some(match name {
        "aggregate" => handler!(aggregate::aggregate),
        "authenticate" => handler!(sasl::authenticate),
        "buildInfo" | "buildinfo" => handler!(admin::build_info),
        "cloneCollectionAsCapped" => handler!(capped::clone_collection_as_capped),
        "collMod" => handler!(indexes::coll_mod),
        "compact" => handler!(collections::compact),
        "connectionStatus" => handler!(sasl::connection_status),
        "convertToCapped" => handler!(capped::convert_to_capped),
        "count" => handler!(count::count),
        "create" => handler!(collections::create),
        "createIndexes" => handler!(indexes::create_indexes),
        "createUser" => handler!(users::create_user),
        "currentOp" => handler!(status::current_op),
        "dbHash" | "dbhash" => handler!(checks::db_hash),
        "dbStats" | "dbstats" => handler!(status::db_stats),
        "collStats" => handler!(status::coll_stats),
        "delete" => handler!(delete::delete),
        "distinct" => handler!(count::distinct),
        "drop" => handler!(collections::drop),
        "dropAllUsersFromDatabase" => handler!(users::drop_all_users_from_database),
        "dropDatabase" => handler!(collections::drop_database),
        "dropIndexes" | "deleteIndexes" => handler!(indexes::drop_indexes),
        "dropUser" => handler!(users::drop_user),
        "endSessions" | "killSessions" | "refreshSessions" | "killAllSessions" => {
            handler!(admin::sessions)
        }
        "explain" => handler!(explain::explain),
        "find" => handler!(find::find),
        "findAndModify" | "findandmodify" => handler!(find_and_modify::find_and_modify),
        "getCmdLineOpts" => handler!(admin::get_cmd_line_opts),
        "getLog" => handler!(admin::get_log),
        "getMore" => handler!(find::get_more),
        "getParameter" => handler!(params::get_parameter),
        "grantRolesToUser" => handler!(users::grant_roles_to_user),
        "hello" | "isMaster" | "ismaster" => handler!(handshake::hello),
        "hostInfo" => handler!(admin::host_info),
        "insert" => handler!(insert::insert),
        "killCursors" => handler!(find::kill_cursors),
        "killOp" => handler!(status::kill_op),
        "listCollections" => handler!(collections::list_collections),
        "listCommands" => handler!(list_commands),
        "listDatabases" => handler!(collections::list_databases),
        "listIndexes" => handler!(indexes::list_indexes),
        "logout" => handler!(sasl::logout),
        "ping" => handler!(admin::ping),
        "profile" => handler!(profile::profile),
        "renameCollection" => handler!(collections::rename_collection),
        "revokeRolesFromUser" => handler!(users::revoke_roles_from_user),
        "saslContinue" => handler!(sasl::sasl_continue),
        "saslStart" => handler!(sasl::sasl_start),
        "serverStatus" => handler!(status::server_status),
        "setParameter" => handler!(params::set_parameter),
        "shutdown" => handler!(admin::shutdown),
        "top" => handler!(status::top),
        "update" => handler!(update::update),
        "updateUser" => handler!(users::update_user),
        "usersInfo" => handler!(users::users_info),
        "validate" => handler!(checks::validate),
        "whatsmyuri" => handler!(admin::whats_my_uri),
        _ => return None,
    })
}

/// Every command name, for `listCommands`.
pub const COMMAND_NAMES: &[&str] = &[
    "aggregate",
    "authenticate",
    "buildInfo",
    "cloneCollectionAsCapped",
    "collMod",
    "collStats",
    "compact",
    "connectionStatus",
    "convertToCapped",
    "count",
    "create",
    "createIndexes",
    "createUser",
    "currentOp",
    "dbHash",
    "dbStats",
    "delete",
    "distinct",
    "drop",
    "dropAllUsersFromDatabase",
    "dropDatabase",
    "dropIndexes",
    "dropUser",
    "endSessions",
    "explain",
    "find",
    "findAndModify",
    "getCmdLineOpts",
    "getLog",
    "getMore",
    "getParameter",
    "grantRolesToUser",
    "hello",
    "hostInfo",
    "insert",
    "isMaster",
    "killCursors",
    "killOp",
    "killSessions",
    "listCollections",
    "listCommands",
    "listDatabases",
    "listIndexes",
    "logout",
    "ping",
    "profile",
    "refreshSessions",
    "renameCollection",
    "revokeRolesFromUser",
    "saslContinue",
    "saslStart",
    "serverStatus",
    "setParameter",
    "shutdown",
    "top",
    "update",
    "updateUser",
    "usersInfo",
    "validate",
    "whatsmyuri",
];

/// MongoDB's reply to a command it does not know.
pub fn not_found(name: &str) -> CommandError {
    CommandError::new(
        codes::COMMAND_NOT_FOUND,
        format!("no such command: '{name}'"),
    )
}

/// `listCommands`: every command ebb runs.
pub async fn list_commands(_req: Request) -> CommandResult {
    let mut commands = bson::Document::new();
    for name in COMMAND_NAMES {
        commands.insert(*name, doc! { "help": "" });
    }
    ok(doc! { "commands": commands })
}

#[cfg(test)]
mod tests {
    use bson::RawDocumentBuf;

    use super::*;
    use crate::auth::privileges::{Need, required};

    /// Every command ebb runs has its line in the permission table, so none
    /// is left to root by accident.
    #[test]
    fn every_command_is_in_the_permission_table() {
        for name in COMMAND_NAMES {
            // Two commands' needs depend on their arguments.
            let body = match *name {
                "explain" => doc! { "explain": { "find": "c" } },
                "renameCollection" => doc! { "renameCollection": "a.b", "to": "a.c" },
                _ => doc! { *name: 1 },
            };
            let body = RawDocumentBuf::try_from(&body).unwrap();
            assert_ne!(required(name, "test", &body), Need::Root, "{name}");
        }
    }
}
