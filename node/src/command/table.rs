//! The command table: one row per command ebb runs, holding everything
//! per-command the node knows of it (names, handler, privilege, profiler
//! kind, `top` category, …; see [`Command`]), so a new command is one row.
//! Also the reply to a command that is not in it, and `listCommands`,
//! which reads it.

use bson::{RawBsonRef, RawDocument, doc};

use super::common::{Handler, Reply, Request, ok};
use super::row::{Command, Op, row};
use super::{
    admin, aggregate, capped, checks, collections, delete, expiry, explain, find, find_and_modify,
    handshake, indexes, insert, map_reduce, params, profile, sasl, status, update, users, views,
};
use crate::auth::privileges::Action::*;
use crate::auth::privileges::Privilege::{Authenticated, ByBody, Cluster, Db, Open};
use crate::auth::privileges::{self as needs, Need, SystemUsers as Users};
use crate::error::{CommandError, CommandResult};
use crate::repl::commands as repl;
use crate::repl::{elections, fault, reconfig};
use crate::top::Category;
use crate::txn::commit as txn;

macro_rules! handler {
    ($f:path) => {
        (|r: Request| -> Reply { Box::pin($f(r)) }) as Handler
    };
}

/// The one list of the commands ebb runs, in alphabetical order. A row
/// states what sets its command apart from an ordinary one ([`row`]).
#[rustfmt::skip]
const COMMANDS: &[Command] = &[
    row(&["abortTransaction"], handler!(txn::abort_transaction), Authenticated),
    row(&["aggregate"], handler!(aggregate::aggregate), ByBody(needs::aggregate))
        .users(Users::Reads).top(Category::ReadCommand),
    row(&["authenticate"], handler!(sasl::authenticate), Open),
    row(&["buildInfo", "buildinfo"], handler!(admin::build_info), Open),
    // Both read the source and create (convert: replace) a collection.
    row(&["cloneCollectionAsCapped"], handler!(capped::clone_collection_as_capped),
        Db(&[Find, Insert, CreateCollection])).logged(),
    row(&["collMod"], handler!(indexes::coll_mod), Db(&[CollMod])).users(Users::Alters).logged(),
    row(&["collStats"], handler!(status::coll_stats), Db(&[CollStats])),
    row(&["commitTransaction"], handler!(txn::commit_transaction), Authenticated),
    row(&["compact"], handler!(collections::compact), Db(&[Compact])),
    row(&["connectionStatus"], handler!(sasl::connection_status), Open),
    row(&["convertToCapped"], handler!(capped::convert_to_capped),
        Db(&[Find, Insert, CreateCollection, DropCollection])).logged(),
    row(&["count"], handler!(views::read::count), Db(&[Find]))
        .users(Users::Reads).top(Category::ReadCommand),
    row(&["create"], handler!(collections::create), Db(&[CreateCollection])).logged(),
    row(&["createIndexes"], handler!(indexes::create_indexes), Db(&[CreateIndex]))
        .users(Users::Alters).logged(),
    row(&["createUser"], handler!(users::create_user), Db(&[CreateUser]))
        .logged_as(users::for_the_log),
    row(&["currentOp"], handler!(status::current_op), Cluster(InProg)),
    row(&["dataSize", "datasize"], handler!(status::data_size), Db(&[Find])),
    row(&["dbHash", "dbhash"], handler!(checks::db_hash), Db(&[DbHash])),
    row(&["dbStats", "dbstats"], handler!(status::db_stats), Db(&[DbStats])),
    row(&["delete"], handler!(delete::delete), Db(&[Remove]))
        .users(Users::Writes).op(Op::Remove).top(Category::Remove).logged(),
    row(&["distinct"], handler!(views::read::distinct), Db(&[Find]))
        .users(Users::Reads).top(Category::ReadCommand),
    row(&["mapReduce", "mapreduce"], handler!(map_reduce::map_reduce), Db(&[Find, Insert]))
        .users(Users::Reads).top(Category::ReadCommand),
    row(&["drop"], handler!(collections::drop), Db(&[DropCollection])).users(Users::Writes).logged(),
    row(&["dropAllUsersFromDatabase"], handler!(users::drop_all_users_from_database),
        Db(&[DropUser])).logged(),
    row(&["dropDatabase"], handler!(collections::drop_database), Db(&[DropDatabase]))
        .users(Users::Drops).logged(),
    row(&["dropIndexes", "deleteIndexes"], handler!(indexes::drop_indexes), Db(&[DropIndex]))
        .users(Users::Alters).logged(),
    row(&["dropUser"], handler!(users::drop_user), Db(&[DropUser])).logged(),
    row(&["endSessions"], handler!(admin::end_sessions), Open).ends_sessions(),
    row(&["explain"], handler!(explain::explain), ByBody(explain_need)),
    row(&["explainExpiry"], handler!(expiry::explain_expiry), Db(&[Find]))
        .top(Category::ReadCommand),
    row(&["expiryForecast"], handler!(expiry::expiry_forecast), Db(&[Find]))
        .top(Category::ReadCommand),
    row(&["find"], handler!(views::read::find), Db(&[Find]))
        .users(Users::Reads).op(Op::Query).top(Category::Queries),
    row(&["findAndModify", "findandmodify"], handler!(find_and_modify::find_and_modify),
        ByBody(needs::find_and_modify))
        .users(Users::Writes).top(Category::Update).logged(),
    row(&["fsync"], handler!(admin::fsync), Cluster(FSync)),
    row(&["getCmdLineOpts"], handler!(admin::get_cmd_line_opts), Cluster(GetCmdLineOpts)),
    row(&["getLog"], handler!(admin::get_log), Cluster(GetLog)),
    row(&["getMore"], handler!(find::get_more), Db(&[Find]))
        .users(Users::Reads).op(Op::GetMore).top(Category::GetMore)
        .collection_in("collection"),
    row(&["getParameter"], handler!(params::get_parameter), Cluster(GetParameter)),
    row(&["grantRolesToUser"], handler!(users::grant_roles_to_user), Db(&[GrantRole])).logged(),
    row(&["ebbRaft"], handler!(repl::ebb_raft), Cluster(Internal)),
    // A transaction's commit, as the set's log carries it.
    row(&["ebbApplyTransaction"], handler!(txn::apply_transaction), Cluster(Internal)).logged(),
    row(&["hello"], handler!(handshake::hello), Open).op_query(),
    row(&["hostInfo"], handler!(admin::host_info), Cluster(HostInfo)),
    row(&["insert"], handler!(insert::insert), Db(&[Insert]))
        .users(Users::Writes).op(Op::Insert).top(Category::Insert).logged(),
    row(&["isMaster", "ismaster"], handler!(handshake::is_master), Open).op_query(),
    row(&["killAllSessions"], handler!(admin::kill_all_sessions), Cluster(KillAnySession))
        .ends_sessions(),
    row(&["killCursors"], handler!(find::kill_cursors), Db(&[KillCursors])),
    row(&["killOp"], handler!(status::kill_op), Cluster(KillOp)),
    row(&["killSessions"], handler!(admin::end_sessions), Authenticated).ends_sessions(),
    row(&["listCollections"], handler!(collections::list_collections),
        Db(&[ListCollections])),
    row(&["listCommands"], handler!(list_commands), Authenticated),
    row(&["listDatabases"], handler!(collections::list_databases),
        ByBody(needs::list_databases)),
    row(&["listIndexes"], handler!(indexes::list_indexes), Db(&[ListIndexes])),
    row(&["logout"], handler!(sasl::logout), Open),
    row(&["ping"], handler!(admin::ping), Open),
    // mongod's enableProfiler, held by dbAdmin as collMod is.
    row(&["profile"], handler!(profile::profile), Db(&[CollMod])),
    row(&["refreshSessions"], handler!(admin::refresh_sessions), Authenticated),
    row(&["replSetGetConfig"], handler!(repl::repl_set_get_config), Cluster(ServerStatus)),
    row(&["replSetGetStatus"], handler!(repl::repl_set_get_status), Cluster(ServerStatus)),
    row(&["replSetInitiate"], handler!(repl::repl_set_initiate), Cluster(SetParameter)),
    row(&["replSetStepDown"], handler!(elections::repl_set_step_down), Cluster(SetParameter)),
    row(&["replSetFreeze"], handler!(elections::repl_set_freeze), Cluster(SetParameter)),
    row(&["replSetReconfig"], handler!(reconfig::repl_set_reconfig), Cluster(SetParameter)),
    row(&["configureFailPoint"], handler!(fault::configure_fail_point), Cluster(SetParameter)),
    row(&["renameCollection"], handler!(collections::rename_collection), ByBody(needs::rename))
        .users(Users::Renames).logged(),
    row(&["revokeRolesFromUser"], handler!(users::revoke_roles_from_user),
        Db(&[RevokeRole])).logged(),
    row(&["saslContinue"], handler!(sasl::sasl_continue), Open),
    row(&["saslStart"], handler!(sasl::sasl_start), Open),
    row(&["serverStatus"], handler!(status::server_status), Cluster(ServerStatus)),
    row(&["setParameter"], handler!(params::set_parameter), Cluster(SetParameter)),
    row(&["shutdown"], handler!(admin::shutdown), Cluster(Shutdown)),
    row(&["top"], handler!(status::top), Cluster(Top)),
    row(&["update"], handler!(update::update), ByBody(needs::update))
        .users(Users::Writes).op(Op::Update).top(Category::Update).logged(),
    row(&["updateUser"], handler!(users::update_user), Db(&[UpdateUser]))
        .logged_as(users::for_the_log),
    row(&["usersInfo"], handler!(users::users_info), ByBody(needs::users_info)),
    row(&["validate"], handler!(checks::validate), Db(&[Validate])),
    row(&["whatsmyuri"], handler!(admin::whats_my_uri), Authenticated),
];

/// The row of command `name` (case-sensitive, aliases included).
pub fn lookup(name: &str) -> Option<&'static Command> {
    COMMANDS.iter().find(|c| c.names.contains(&name))
}

/// What command `name`, sent to `db` with `body`, needs: what its row
/// states. A command the table does not know needs `root`.
pub fn required(name: &str, db: &str, body: &RawDocument) -> Need {
    match lookup(name) {
        Some(command) => command.need(db, body),
        None => Need::Root,
    }
}

/// `explain`: what the explained command needs (an explained `explain`,
/// or no command, needs `root`).
fn explain_need(db: &str, body: &RawDocument) -> Need {
    let Ok(Some(RawBsonRef::Document(inner))) = body.get("explain") else {
        return Need::Root;
    };
    match inner.iter().next() {
        Some(Ok((inner_name, _))) if inner_name.as_str() != "explain" => {
            required(inner_name.as_str(), db, inner)
        }
        _ => Need::Root,
    }
}

/// Every command's name, for `listCommands`.
pub fn command_names() -> impl Iterator<Item = &'static str> {
    COMMANDS.iter().map(Command::name)
}

/// MongoDB's reply to a command it does not know.
pub fn not_found(name: &str) -> CommandError {
    CommandError::command_not_found(name)
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
    use bson::{RawDocumentBuf, rawdoc};

    use super::*;
    use crate::auth::privileges::Resource;

    fn db(name: &str) -> Resource {
        Resource::Db(name.to_owned())
    }

    /// No command's row leaves it to root for ordinary arguments.
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

    #[test]
    fn commands_map_to_actions() {
        let need = |name: &str, body: bson::RawDocumentBuf| required(name, "test", &body);
        assert_eq!(need("hello", rawdoc! {"hello": 1}), Need::Open);
        assert_eq!(
            need("whatsmyuri", rawdoc! {"whatsmyuri": 1}),
            Need::Authenticated
        );
        assert_eq!(
            need("find", rawdoc! {"find": "c"}),
            Need::All(vec![(db("test"), Find)])
        );
        assert_eq!(
            need(
                "update",
                rawdoc! {"update": "c", "updates": [{"q": {}, "u": {}, "upsert": true}]}
            ),
            Need::All(vec![(db("test"), Update), (db("test"), Insert)])
        );
        assert_eq!(
            need("explain", rawdoc! {"explain": {"count": "c"}}),
            Need::All(vec![(db("test"), Find)])
        );
        assert_eq!(
            required("find", "admin", &rawdoc! {"find": "system.users"}),
            Need::All(vec![(db("admin"), ViewUser)])
        );
        assert_eq!(
            need("serverStatus", rawdoc! {"serverStatus": 1}),
            Need::All(vec![(Resource::Cluster, ServerStatus)])
        );
    }
}
