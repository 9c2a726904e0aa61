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

/// The dispatch table, the one list of the commands ebb runs: each
/// command's name (as `listCommands` shows it) then the spellings mongod
/// also takes, and its handler, in alphabetical order.
const COMMANDS: &[(&[&str], Handler)] = &[
    (&["aggregate"], handler!(aggregate::aggregate)),
    (&["authenticate"], handler!(sasl::authenticate)),
    (&["buildInfo", "buildinfo"], handler!(admin::build_info)),
    (
        &["cloneCollectionAsCapped"],
        handler!(capped::clone_collection_as_capped),
    ),
    (&["collMod"], handler!(indexes::coll_mod)),
    (&["collStats"], handler!(status::coll_stats)),
    (&["compact"], handler!(collections::compact)),
    (&["connectionStatus"], handler!(sasl::connection_status)),
    (&["convertToCapped"], handler!(capped::convert_to_capped)),
    (&["count"], handler!(count::count)),
    (&["create"], handler!(collections::create)),
    (&["createIndexes"], handler!(indexes::create_indexes)),
    (&["createUser"], handler!(users::create_user)),
    (&["currentOp"], handler!(status::current_op)),
    (&["dbHash", "dbhash"], handler!(checks::db_hash)),
    (&["dbStats", "dbstats"], handler!(status::db_stats)),
    (&["delete"], handler!(delete::delete)),
    (&["distinct"], handler!(count::distinct)),
    (&["drop"], handler!(collections::drop)),
    (
        &["dropAllUsersFromDatabase"],
        handler!(users::drop_all_users_from_database),
    ),
    (&["dropDatabase"], handler!(collections::drop_database)),
    (
        &["dropIndexes", "deleteIndexes"],
        handler!(indexes::drop_indexes),
    ),
    (&["dropUser"], handler!(users::drop_user)),
    (&["endSessions"], handler!(admin::sessions)),
    (&["explain"], handler!(explain::explain)),
    (&["find"], handler!(find::find)),
    (
        &["findAndModify", "findandmodify"],
        handler!(find_and_modify::find_and_modify),
    ),
    (&["getCmdLineOpts"], handler!(admin::get_cmd_line_opts)),
    (&["getLog"], handler!(admin::get_log)),
    (&["getMore"], handler!(find::get_more)),
    (&["getParameter"], handler!(params::get_parameter)),
    (&["grantRolesToUser"], handler!(users::grant_roles_to_user)),
    (&["hello"], handler!(handshake::hello)),
    (&["hostInfo"], handler!(admin::host_info)),
    (&["insert"], handler!(insert::insert)),
    (&["isMaster", "ismaster"], handler!(handshake::hello)),
    (&["killAllSessions"], handler!(admin::sessions)),
    (&["killCursors"], handler!(find::kill_cursors)),
    (&["killOp"], handler!(status::kill_op)),
    (&["killSessions"], handler!(admin::sessions)),
    (
        &["listCollections"],
        handler!(collections::list_collections),
    ),
    (&["listCommands"], handler!(list_commands)),
    (&["listDatabases"], handler!(collections::list_databases)),
    (&["listIndexes"], handler!(indexes::list_indexes)),
    (&["logout"], handler!(sasl::logout)),
    (&["ping"], handler!(admin::ping)),
    (&["profile"], handler!(profile::profile)),
    (&["refreshSessions"], handler!(admin::sessions)),
    (
        &["renameCollection"],
        handler!(collections::rename_collection),
    ),
    (
        &["revokeRolesFromUser"],
        handler!(users::revoke_roles_from_user),
    ),
    (&["saslContinue"], handler!(sasl::sasl_continue)),
    (&["saslStart"], handler!(sasl::sasl_start)),
    (&["serverStatus"], handler!(status::server_status)),
    (&["setParameter"], handler!(params::set_parameter)),
    (&["shutdown"], handler!(admin::shutdown)),
    (&["top"], handler!(status::top)),
    (&["update"], handler!(update::update)),
    (&["updateUser"], handler!(users::update_user)),
    (&["usersInfo"], handler!(users::users_info)),
    (&["validate"], handler!(checks::validate)),
    (&["whatsmyuri"], handler!(admin::whats_my_uri)),
];

/// The handler of command `name` (case-sensitive, aliases included).
pub fn lookup(name: &str) -> Option<Handler> {
    COMMANDS
        .iter()
        .find(|(names, _)| names.contains(&name))
        .map(|(_, handler)| *handler)
}

/// Every command's name, for `listCommands` (and the permission table's
/// test).
pub fn command_names() -> impl Iterator<Item = &'static str> {
    COMMANDS.iter().map(|(names, _)| names[0])
}

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
    for name in command_names() {
        commands.insert(name, doc! { "help": "" });
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
        for name in command_names() {
            // Two commands' needs depend on their arguments.
            let body = match name {
                "explain" => doc! { "explain": { "find": "c" } },
                "renameCollection" => doc! { "renameCollection": "a.b", "to": "a.c" },
                _ => doc! { name: 1 },
            };
            let body = RawDocumentBuf::try_from(&body).unwrap();
            assert_ne!(required(name, "test", &body), Need::Root, "{name}");
        }
    }
}
