//! Privileges, in one place: the kinds of need a command's row in the
//! command table states ([`Privilege`], [`SystemUsers`]), what such a row
//! needs for given arguments ([`need`], with the needs computed from
//! arguments), and which actions each built-in role grants ([`grants`]),
//! after MongoDB's "Built-In Roles" and "Privilege Actions" reference pages.
//!
//! Resources are coarser than mongod's: a database (every collection in it),
//! every database, or the cluster. `admin.system.users` is the one collection
//! treated apart: reading it needs `viewUser` on `admin`, writing it only
//! `root` may (mongod's `restore`, which `root` includes). This module decides
//! nothing about sessions or users; [`super::check`] applies it.

use bson::{RawBsonRef, RawDocument};

/// Declares [`Action`] and [`ALL_ACTIONS`] from one list, so a new action
/// cannot be missing from the list `root` and `grants_any_on` walk.
macro_rules! actions {
    ($($(#[$meta:meta])* $name:ident,)*) => {
        /// A privilege action (MongoDB's names in comments where they differ).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum Action {
            $($(#[$meta])* $name,)*
        }

        /// Every action, in declaration order.
        const ALL_ACTIONS: &[Action] = &[$(Action::$name,)*];
    };
}

actions! {
    Find,
    Insert,
    Update,
    Remove,
    CreateCollection,
    CreateIndex,
    DropIndex,
    DropCollection,
    DropDatabase,
    ListCollections,
    ListIndexes,
    CollStats,
    DbStats,
    /// `$indexStats`.
    IndexStats,
    Validate,
    DbHash,
    CollMod,
    Compact,
    KillCursors,
    /// `renameCollectionSameDB`.
    RenameCollectionSameDb,
    CreateUser,
    DropUser,
    UpdateUser,
    GrantRole,
    RevokeRole,
    ViewUser,
    /// Writes to `admin.system.users` by ordinary commands.
    WriteUsers,
    // Cluster actions.
    ServerStatus,
    ListDatabases,
    GetParameter,
    SetParameter,
    GetCmdLineOpts,
    GetLog,
    HostInfo,
    /// `inprog`: `currentOp`.
    InProg,
    Top,
    /// `listSessions`: other users' sessions.
    ListSessions,
    KillAnySession,
    /// `killop`: `killOp`.
    KillOp,
    Shutdown,
    FSync,
    /// Members' messages to each other (`ebbRaft`): only `__system` holds it.
    Internal,
}

use Action::*;

/// Where an action applies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resource {
    Db(String),
    /// Every database at once (`usersInfo` with `forAllDBs`).
    AnyDb,
    Cluster,
}

/// What a command needs before it runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Need {
    /// Runs without authentication (handshake, authentication, `ping`, …).
    Open,
    /// Any authenticated user may run it.
    Authenticated,
    /// Every listed action on its resource.
    All(Vec<(Resource, Action)>),
    /// What only `root` holds: a command the command table does not know,
    /// or arguments no need can be read from.
    Root,
}

/// What a command needs, as its row in the command table states it.
#[derive(Debug, Clone, Copy)]
pub enum Privilege {
    /// Runs without authentication (handshake, authentication, `ping`, …).
    Open,
    /// Any authenticated user may run it: it touches no data.
    Authenticated,
    /// Every listed action on the database the command is sent to.
    Db(&'static [Action]),
    /// One action on the cluster.
    Cluster(Action),
    /// Depends on the command's arguments: computed from `(db, body)`.
    ByBody(fn(&str, &RawDocument) -> Need),
}

/// What a command does to `admin.system.users` when it names it, which
/// decides what it needs there and whether connections reload their
/// cached roles after it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SystemUsers {
    /// Never touches it.
    Untouched,
    /// Reads the collection its first value names: there, `viewUser`.
    Reads,
    /// Changes that collection's indexes or options: there, `restore`.
    Alters,
    /// Writes that collection's documents: there, `restore`, and the users
    /// may have changed.
    Writes,
    /// `dropDatabase`: on `admin`, the users may have changed.
    Drops,
    /// `renameCollection`: to or from `admin.system.users`, the users may
    /// have changed.
    Renames,
}

impl SystemUsers {
    /// Whether a successful run of the command, sent to `db` with `body`,
    /// may have changed the documents of `admin.system.users` behind the
    /// user management commands' back, so connections must reload their
    /// cached roles.
    pub fn reloads(self, db: &str, body: &RawDocument) -> bool {
        db == "admin"
            && match self {
                SystemUsers::Drops => true,
                SystemUsers::Writes => names_collection(body, "system.users"),
                SystemUsers::Renames => ["renameCollection", "to"].iter().any(|f| {
                    matches!(
                        body.get(f),
                        Ok(Some(RawBsonRef::String("admin.system.users")))
                    )
                }),
                SystemUsers::Untouched | SystemUsers::Reads | SystemUsers::Alters => false,
            }
    }
}

/// What a command with `privilege` and `users`, sent to `db` with `body`,
/// needs.
pub fn need(privilege: Privilege, users: SystemUsers, db: &str, body: &RawDocument) -> Need {
    if db == "admin" && names_collection(body, "system.users") {
        match users {
            SystemUsers::Reads => return on_db(db, &[ViewUser]),
            SystemUsers::Alters | SystemUsers::Writes => return on_db(db, &[WriteUsers]),
            _ => {}
        }
    }
    match privilege {
        Privilege::Open => Need::Open,
        Privilege::Authenticated => Need::Authenticated,
        Privilege::Db(actions) => on_db(db, actions),
        Privilege::Cluster(action) => Need::All(vec![(Resource::Cluster, action)]),
        Privilege::ByBody(compute) => compute(db, body),
    }
}

/// Every action of `actions` on database `db`.
fn on_db(db: &str, actions: &[Action]) -> Need {
    Need::All(
        actions
            .iter()
            .map(|a| (Resource::Db(db.to_owned()), *a))
            .collect(),
    )
}

/// `update`: `update`, and `insert` too when any statement upserts.
pub fn update(db: &str, body: &RawDocument) -> Need {
    if upserts(body, "updates") {
        on_db(db, &[Update, Insert])
    } else {
        on_db(db, &[Update])
    }
}

/// `findAndModify`: `find`, and `remove`, or `update` (with `insert` when
/// it upserts).
pub fn find_and_modify(db: &str, body: &RawDocument) -> Need {
    let flag = |f| matches!(body.get(f), Ok(Some(RawBsonRef::Boolean(true))));
    match (flag("remove"), flag("upsert")) {
        (true, _) => on_db(db, &[Find, Remove]),
        (false, true) => on_db(db, &[Find, Update, Insert]),
        (false, false) => on_db(db, &[Find, Update]),
    }
}

/// `usersInfo`: `viewUser` on its database, or on every database with
/// `forAllDBs`.
pub fn users_info(db: &str, body: &RawDocument) -> Need {
    if matches!(body.get("forAllDBs"), Ok(Some(RawBsonRef::Boolean(true)))) {
        Need::All(vec![(Resource::AnyDb, ViewUser)])
    } else {
        on_db(db, &[ViewUser])
    }
}

/// `listDatabases`: with `authorizedDatabases: false` the cluster's
/// `listDatabases`; otherwise any user may list the databases it holds
/// privileges on (`check::visible_databases`).
pub fn list_databases(_db: &str, body: &RawDocument) -> Need {
    if matches!(
        body.get("authorizedDatabases"),
        Ok(Some(RawBsonRef::Boolean(false)))
    ) {
        Need::All(vec![(Resource::Cluster, ListDatabases)])
    } else {
        Need::Authenticated
    }
}

/// Whether a role held as `role@role_db` grants anything at all on database
/// `db` (what `listDatabases` shows a user without `listDatabases`).
pub fn grants_any_on(role: &str, role_db: &str, db: &str) -> bool {
    let resource = Resource::Db(db.to_owned());
    ALL_ACTIONS
        .iter()
        .any(|a| grants(role, role_db, &resource, *a))
}

fn first_key(d: &RawDocument) -> Option<&str> {
    d.iter()
        .next()
        .and_then(|e| e.ok())
        .map(|(k, _)| k.as_str())
}

/// Whether the command's first value names collection `coll`.
fn names_collection(body: &RawDocument, coll: &str) -> bool {
    let first = body.iter().next().and_then(|e| e.ok()).map(|(_, v)| v);
    matches!(first, Some(RawBsonRef::String(c)) if c == coll)
}

/// Whether any statement of an `update` upserts (which needs `insert` too).
fn upserts(body: &RawDocument, field: &str) -> bool {
    let Ok(Some(RawBsonRef::Array(statements))) = body.get(field) else {
        return false;
    };
    statements.into_iter().any(|s| {
        matches!(s, Ok(RawBsonRef::Document(d))
            if matches!(d.get("upsert"), Ok(Some(RawBsonRef::Boolean(true)))))
    })
}

/// `aggregate`: `find` on its database, and when its last stage writes,
/// `$out`'s `insert` and `remove` or `$merge`'s `insert` and `update` on
/// the database it writes to.
pub fn aggregate(db: &str, body: &RawDocument) -> Need {
    let stages = match body.get("pipeline") {
        Ok(Some(RawBsonRef::Array(stages))) => Some(stages),
        _ => None,
    };
    let first = stages
        .and_then(|s| s.into_iter().next())
        .and_then(|s| match s {
            Ok(RawBsonRef::Document(d)) => first_key(d).map(|k| (k, d)),
            _ => None,
        });
    let mut needs = match first {
        // The reporting stages need what their commands need.
        Some(("$collStats", _)) => vec![(Resource::Db(db.to_owned()), CollStats)],
        Some(("$indexStats", _)) => vec![(Resource::Db(db.to_owned()), IndexStats)],
        Some(("$listLocalSessions", d)) => {
            let others = d.get_document("$listLocalSessions").is_ok_and(|o| {
                matches!(o.get("allUsers"), Ok(Some(RawBsonRef::Boolean(true))))
                    || matches!(o.get("users"), Ok(Some(_)))
            });
            if !others {
                return Need::Authenticated;
            }
            vec![(Resource::Cluster, ListSessions)]
        }
        Some(("$currentOp", d)) => {
            let all_users = matches!(
                d.get_document("$currentOp").map(|o| o.get("allUsers")),
                Ok(Ok(Some(RawBsonRef::Boolean(true))))
            );
            if !all_users {
                return Need::Authenticated;
            }
            vec![(Resource::Cluster, InProg)]
        }
        _ => vec![(Resource::Db(db.to_owned()), Find)],
    };
    let last = stages.and_then(|s| s.into_iter().last());
    let Some(Ok(RawBsonRef::Document(stage))) = last else {
        return Need::All(needs);
    };
    let Some(Ok((name, spec))) = stage.iter().next() else {
        return Need::All(needs);
    };
    let actions = match name.as_str() {
        "$out" => [Insert, Remove],
        "$merge" => [Insert, Update],
        _ => return Need::All(needs),
    };
    // `$out: {db, coll}`, `$merge: {into: {db, coll}}`: another database.
    let spec_db = |d: &RawDocument| match d.get("db") {
        Ok(Some(RawBsonRef::String(other))) => Some(other.to_owned()),
        _ => None,
    };
    let target_db = match (name.as_str(), spec) {
        ("$out", RawBsonRef::Document(d)) => spec_db(d),
        ("$merge", RawBsonRef::Document(d)) => match d.get("into") {
            Ok(Some(RawBsonRef::Document(into))) => spec_db(into),
            _ => None,
        },
        _ => None,
    }
    .unwrap_or_else(|| db.to_owned());
    needs.extend(actions.map(|a| (Resource::Db(target_db.clone()), a)));
    Need::All(needs)
}

/// `renameCollection`: within one database `renameCollectionSameDB`; across
/// databases reading and dropping the source and creating the target.
pub fn rename(_db: &str, body: &RawDocument) -> Need {
    let db_of = |field| match body.get(field) {
        Ok(Some(RawBsonRef::String(ns))) => ns.split_once('.').map(|(db, _)| db.to_owned()),
        _ => None,
    };
    match (db_of("renameCollection"), db_of("to")) {
        (Some(from), Some(to)) if from == to => {
            Need::All(vec![(Resource::Db(from), RenameCollectionSameDb)])
        }
        (Some(from), Some(to)) => Need::All(vec![
            (Resource::Db(from.clone()), Find),
            (Resource::Db(from), DropCollection),
            (Resource::Db(to.clone()), Insert),
            (Resource::Db(to), CreateCollection),
        ]),
        // The command refuses itself; ask for what only root has meanwhile.
        _ => Need::Root,
    }
}

const READ: &[Action] = &[
    Find,
    DbHash,
    ListCollections,
    ListIndexes,
    CollStats,
    DbStats,
    KillCursors,
];
const WRITE: &[Action] = &[
    Insert,
    Update,
    Remove,
    CreateCollection,
    CreateIndex,
    DropIndex,
    DropCollection,
    RenameCollectionSameDb,
];
const DB_ADMIN: &[Action] = &[
    Validate,
    CollMod,
    CollStats,
    Compact,
    CreateCollection,
    CreateIndex,
    DbStats,
    DropCollection,
    DropDatabase,
    DropIndex,
    ListCollections,
    ListIndexes,
    RenameCollectionSameDb,
];
const USER_ADMIN: &[Action] = &[
    CreateUser, DropUser, UpdateUser, GrantRole, RevokeRole, ViewUser,
];
const CLUSTER_MONITOR: &[Action] = &[
    ServerStatus,
    ListDatabases,
    GetParameter,
    GetCmdLineOpts,
    GetLog,
    HostInfo,
    InProg,
    Top,
    ListSessions,
];
/// With `hostManager`'s `killop` and `shutdown`, which `clusterAdmin` includes.
const CLUSTER_ADMIN: &[Action] = &[SetParameter, KillAnySession, KillOp, Shutdown, FSync];
/// What `clusterMonitor` may read in every database.
const MONITOR_STATS: &[Action] = &[CollStats, DbStats, IndexStats];

/// Where a role's actions apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// The database the role is granted on.
    OwnDb,
    AnyDb,
    Cluster,
}

/// One grant of a built-in role.
pub type Grant = (Scope, &'static [&'static [Action]]);

/// A built-in role: name, whether it exists only in `admin`, and its grants.
struct BuiltIn {
    name: &'static str,
    admin_only: bool,
    grants: &'static [Grant],
}

const ROLES: &[BuiltIn] = &[
    BuiltIn {
        name: "read",
        admin_only: false,
        grants: &[(Scope::OwnDb, &[READ])],
    },
    BuiltIn {
        name: "readWrite",
        admin_only: false,
        grants: &[(Scope::OwnDb, &[READ, WRITE])],
    },
    BuiltIn {
        name: "dbAdmin",
        admin_only: false,
        grants: &[(Scope::OwnDb, &[DB_ADMIN])],
    },
    BuiltIn {
        name: "userAdmin",
        admin_only: false,
        grants: &[(Scope::OwnDb, &[USER_ADMIN])],
    },
    BuiltIn {
        name: "dbOwner",
        admin_only: false,
        grants: &[(Scope::OwnDb, &[READ, WRITE, DB_ADMIN, USER_ADMIN])],
    },
    BuiltIn {
        name: "clusterMonitor",
        admin_only: true,
        grants: &[
            (Scope::Cluster, &[CLUSTER_MONITOR]),
            (Scope::AnyDb, &[MONITOR_STATS]),
        ],
    },
    BuiltIn {
        name: "clusterAdmin",
        admin_only: true,
        grants: &[
            (Scope::Cluster, &[CLUSTER_MONITOR, CLUSTER_ADMIN]),
            (Scope::AnyDb, &[MONITOR_STATS, &[DropDatabase]]),
        ],
    },
    BuiltIn {
        name: "readAnyDatabase",
        admin_only: true,
        grants: &[
            (Scope::AnyDb, &[READ]),
            (Scope::Cluster, &[&[ListDatabases]]),
        ],
    },
    BuiltIn {
        name: "readWriteAnyDatabase",
        admin_only: true,
        grants: &[
            (Scope::AnyDb, &[READ, WRITE]),
            (Scope::Cluster, &[&[ListDatabases]]),
        ],
    },
    BuiltIn {
        name: "dbAdminAnyDatabase",
        admin_only: true,
        grants: &[
            (Scope::AnyDb, &[DB_ADMIN]),
            (Scope::Cluster, &[&[ListDatabases]]),
        ],
    },
    BuiltIn {
        name: "userAdminAnyDatabase",
        admin_only: true,
        grants: &[
            (Scope::AnyDb, &[USER_ADMIN]),
            (Scope::Cluster, &[&[ListDatabases]]),
        ],
    },
];

/// The role that holds every action on every resource but `internal`.
pub const ROOT: &str = "root";
/// The members' role: every action, `internal` included.
pub const SYSTEM: &str = "__system";

/// Whether a role held as `role@role_db` is `root` (or `__system`, which
/// holds more), meeting every need.
pub fn is_root(role: &str, role_db: &str) -> bool {
    (role == ROOT || role == SYSTEM) && role_db == "admin"
}

/// Whether `role` exists on database `db` (built-in roles only: ebb has no
/// user-defined roles).
pub fn role_exists(role: &str, db: &str) -> bool {
    is_root(role, db)
        || ROLES
            .iter()
            .any(|r| r.name == role && (!r.admin_only || db == "admin"))
}

/// Whether a role held as `role@role_db` grants `action` on `resource`.
pub fn grants(role: &str, role_db: &str, resource: &Resource, action: Action) -> bool {
    if !role_exists(role, role_db) {
        return false;
    }
    if role == SYSTEM {
        return true;
    }
    if role == ROOT {
        return action != Internal;
    }
    let Some(r) = ROLES.iter().find(|r| r.name == role) else {
        return false;
    };
    r.grants.iter().any(|(scope, sets)| {
        let applies = match (scope, resource) {
            (Scope::OwnDb, Resource::Db(db)) => db == role_db,
            (Scope::AnyDb, Resource::Db(_) | Resource::AnyDb) => true,
            (Scope::Cluster, Resource::Cluster) => true,
            _ => false,
        };
        applies && sets.iter().any(|set| set.contains(&action))
    })
}

/// The actions a role grants, as `connectionStatus`'s `showPrivileges`
/// lists them: `(resource, action names)`.
pub fn privileges_of(role: &str, role_db: &str) -> Vec<(Resource, Vec<Action>)> {
    if !role_exists(role, role_db) {
        return Vec::new();
    }
    if is_root(role, role_db) {
        let actions: Vec<Action> = ALL_ACTIONS
            .iter()
            .copied()
            .filter(|a| role == SYSTEM || *a != Internal)
            .collect();
        return vec![
            (Resource::AnyDb, actions.clone()),
            (Resource::Cluster, actions),
        ];
    }
    let Some(r) = ROLES.iter().find(|r| r.name == role) else {
        return Vec::new();
    };
    r.grants
        .iter()
        .map(|(scope, sets)| {
            let resource = match scope {
                Scope::OwnDb => Resource::Db(role_db.to_owned()),
                Scope::AnyDb => Resource::AnyDb,
                Scope::Cluster => Resource::Cluster,
            };
            let mut actions: Vec<Action> = Vec::new();
            for a in sets.iter().flat_map(|s| s.iter()) {
                if !actions.contains(a) {
                    actions.push(*a);
                }
            }
            (resource, actions)
        })
        .collect()
}

impl Action {
    /// MongoDB's name of the action.
    pub fn name(self) -> &'static str {
        match self {
            Find => "find",
            Insert => "insert",
            Update => "update",
            Remove => "remove",
            CreateCollection => "createCollection",
            CreateIndex => "createIndex",
            DropIndex => "dropIndex",
            DropCollection => "dropCollection",
            DropDatabase => "dropDatabase",
            ListCollections => "listCollections",
            ListIndexes => "listIndexes",
            CollStats => "collStats",
            DbStats => "dbStats",
            IndexStats => "indexStats",
            Validate => "validate",
            DbHash => "dbHash",
            CollMod => "collMod",
            Compact => "compact",
            KillCursors => "killCursors",
            RenameCollectionSameDb => "renameCollectionSameDB",
            CreateUser => "createUser",
            DropUser => "dropUser",
            UpdateUser => "changePassword",
            GrantRole => "grantRole",
            RevokeRole => "revokeRole",
            ViewUser => "viewUser",
            WriteUsers => "restore",
            ServerStatus => "serverStatus",
            ListDatabases => "listDatabases",
            GetParameter => "getParameter",
            SetParameter => "setParameter",
            GetCmdLineOpts => "getCmdLineOpts",
            GetLog => "getLog",
            HostInfo => "hostInfo",
            InProg => "inprog",
            Top => "top",
            ListSessions => "listSessions",
            KillOp => "killop",
            Shutdown => "shutdown",
            FSync => "fsync",
            KillAnySession => "killAnySession",
            Internal => "internal",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn db(name: &str) -> Resource {
        Resource::Db(name.to_owned())
    }

    #[test]
    fn database_roles_apply_to_their_database_only() {
        assert!(grants("read", "test", &db("test"), Find));
        assert!(!grants("read", "test", &db("other"), Find));
        assert!(!grants("read", "test", &db("test"), Insert));
        assert!(grants("readWrite", "test", &db("test"), Insert));
        assert!(!grants("readWrite", "test", &db("test"), DropDatabase));
        assert!(grants("dbAdmin", "test", &db("test"), DropDatabase));
        assert!(!grants("dbAdmin", "test", &db("test"), Find));
        assert!(grants("userAdmin", "test", &db("test"), CreateUser));
        assert!(grants("dbOwner", "test", &db("test"), CreateUser));
        assert!(grants("dbOwner", "test", &db("test"), Insert));
    }

    #[test]
    fn any_database_and_cluster_roles_exist_only_in_admin() {
        assert!(role_exists("readAnyDatabase", "admin"));
        assert!(!role_exists("readAnyDatabase", "test"));
        assert!(!grants("readAnyDatabase", "test", &db("x"), Find));
        assert!(grants("readAnyDatabase", "admin", &db("x"), Find));
        assert!(grants("readWriteAnyDatabase", "admin", &db("x"), Insert));
        assert!(!grants(
            "readWriteAnyDatabase",
            "admin",
            &Resource::Cluster,
            ServerStatus
        ));
        assert!(grants(
            "clusterMonitor",
            "admin",
            &Resource::Cluster,
            ServerStatus
        ));
        assert!(!grants("clusterMonitor", "admin", &db("x"), Find));
        assert!(grants("root", "admin", &Resource::Cluster, SetParameter));
        assert!(!grants("root", "admin", &Resource::Cluster, Internal));
        assert!(grants("__system", "admin", &Resource::Cluster, Internal));
        assert!(!role_exists("__system", "test"));
        assert!(!role_exists("root", "test"));
        assert!(!role_exists("nosuchrole", "admin"));
    }
}
