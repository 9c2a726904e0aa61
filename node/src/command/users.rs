//! User management: `createUser`, `updateUser`, `dropUser`,
//! `dropAllUsersFromDatabase`, `grantRolesToUser`, `revokeRolesFromUser`
//! and `usersInfo`, after MongoDB's "User Management Commands" reference.
//!
//! Users are documents of `admin.system.users` (shape in `auth::users`),
//! written through the collection's writer like any insert, update or
//! delete, so they are durable (each change is synced) and survive restarts.
//! Changes run one at a time under the node's user directory lock and bump
//! its generation, so connections reload the roles they cached.
//!
//! On a replica set every change goes through the set's log and every
//! member runs it on its own users, in log order. A password never reaches
//! the log: the primary derives the credentials once ([`for_the_log`]), so
//! every member stores the same user, salts included.

use std::sync::Arc;

use bson::raw::cstr;
use bson::{Bson, Document, RawBsonRef, RawDocument, RawDocumentBuf, doc, rawdoc};
use ebb_actors::collection::{DeleteDocs, InsertDocs, UpdateDocs};
use ebb_lang::query::Filter;
use ebb_lang::update::UpdateSpec;
use ebb_storage::ErrorKind;
use ebb_storage::statement::{DeleteStatement, UpdateStatement};

use super::write::send_write;
use super::{Request, ok};
use crate::args::{Args, type_name};
use crate::auth::scram::Mechanism;
use crate::auth::store::{self, USERS_COLLECTION, USERS_DB};
use crate::auth::users::{
    RoleName, StoredUser, UserName, credentials_document, mechanisms_of, new_user_document,
    parse_roles,
};
use crate::error::{CommandError, CommandResult, codes};

const CREATE_ARGS: &[&str] = &[
    "pwd",
    "roles",
    "customData",
    "mechanisms",
    "digestPassword",
    "authenticationRestrictions",
];

/// What the set's log holds of `createUser` and `updateUser` beyond what a
/// client sends: the credentials derived from `pwd` in its place, and the
/// new user's `userId`. Only an entry of the log may carry them.
const LOGGED_ARGS: &[&str] = &["credentials", "userId"];

/// The arguments of `createUser` or `updateUser`; those of the log's form
/// too when the command comes from the set's log.
fn create_args<'a>(req: &'a Request) -> CommandResult<Args<'a>> {
    match req.decided {
        None => Args::parse(&req.body, CREATE_ARGS),
        Some(_) => {
            let known: Vec<&str> = CREATE_ARGS.iter().chain(LOGGED_ARGS).copied().collect();
            Args::parse(&req.body, &known)
        }
    }
}

/// The user a command names in its first field, on the command's database.
fn user_name(args: &Args<'_>, db: &str) -> CommandResult<UserName> {
    match args.command_value() {
        RawBsonRef::String(u) if !u.is_empty() => Ok(UserName::new(u, db)),
        RawBsonRef::String(_) => Err(CommandError::bad_value(
            "User document needs 'user' field to be non-empty",
        )),
        other => Err(args.wrong_type(args.command_name(), &other, "type 'string'")),
    }
}

fn not_found(name: &UserName) -> CommandError {
    CommandError::new(
        codes::USER_NOT_FOUND,
        format!("User '{}' not found", name.full()),
    )
}

/// The `mechanisms` argument, or every mechanism when absent.
fn mechanisms(args: &Args<'_>) -> CommandResult<Option<Vec<Mechanism>>> {
    let Some(list) = args.array("mechanisms")? else {
        return Ok(None);
    };
    let mut out = Vec::new();
    for v in list {
        let name = match v? {
            RawBsonRef::String(s) => s,
            other => {
                return Err(CommandError::bad_value(format!(
                    "mechanisms field must be an array of strings, found {}",
                    type_name(&other)
                )));
            }
        };
        let mech = Mechanism::parse(name)
            .ok_or_else(|| CommandError::bad_value(format!("Unknown auth mechanism '{name}'")))?;
        if !out.contains(&mech) {
            out.push(mech);
        }
    }
    if out.is_empty() {
        return Err(CommandError::bad_value(
            "mechanisms field must not be empty",
        ));
    }
    out.sort();
    Ok(Some(out))
}

/// The credentials to store for `mechs`: derived from the client's `pwd`,
/// or, for a command from the set's log, those the primary derived.
fn password(
    args: &Args<'_>,
    name: &UserName,
    mechs: &[Mechanism],
    logged: bool,
) -> CommandResult<Option<Document>> {
    if !logged {
        return derive(args, name, mechs);
    }
    let Some(derived) = args.doc("credentials")? else {
        return Ok(None);
    };
    check_digest(args, mechs)?;
    let derived = Document::try_from(derived)?;
    let mut creds = Document::new();
    for m in mechs {
        if let Some(c) = derived.get(m.name()) {
            creds.insert(m.name(), c.clone());
        }
    }
    Ok(Some(creds))
}

/// SCRAM-SHA-256 is derived from the password itself, never from a
/// client's digest of it.
fn check_digest(args: &Args<'_>, mechs: &[Mechanism]) -> CommandResult<()> {
    if args.bool("digestPassword")? == Some(false) && mechs.contains(&Mechanism::Sha256) {
        return Err(CommandError::bad_value(
            "Use of SCRAM-SHA-256 requires undigested passwords",
        ));
    }
    Ok(())
}

/// The credentials derived from `pwd` for `mechs`, checked as mongod
/// checks a password: undigested for SCRAM-SHA-256, and with
/// `digestPassword: false` taken as MongoDB's digest.
fn derive(
    args: &Args<'_>,
    name: &UserName,
    mechs: &[Mechanism],
) -> CommandResult<Option<Document>> {
    let Some(pwd) = args.str("pwd")? else {
        return Ok(None);
    };
    if name.db == "$external" {
        return Err(CommandError::bad_value(
            "Cannot set the password for users defined on the '$external' database",
        ));
    }
    if pwd.is_empty() {
        return Err(CommandError::bad_value("Password cannot be empty"));
    }
    check_digest(args, mechs)?;
    if args.bool("digestPassword")? == Some(false) {
        // The client digested already: store SCRAM-SHA-1 of the digest itself.
        let creds = crate::auth::scram::Credentials::generate(Mechanism::Sha1, pwd);
        return Ok(Some(doc! { Mechanism::Sha1.name(): creds.to_document() }));
    }
    credentials_document(name, pwd, mechs).map(Some)
}

/// `createUser` or `updateUser` as the set's log holds it: `pwd` replaced
/// by the credentials derived from it (for the mechanisms the command
/// names, or every one: the member that runs it keeps those the user has),
/// and for `createUser` the new user's `userId`. A bad password is refused
/// here, before anything is logged.
pub fn for_the_log(db: &str, body: RawDocumentBuf) -> CommandResult<RawDocumentBuf> {
    let args = Args::parse(&body, CREATE_ARGS)?;
    let name = user_name(&args, db)?;
    let creating = args.command_name() == "createUser";
    let derived = if args.has("pwd") {
        let mechs = match mechanisms(&args)? {
            Some(mechs) => mechs,
            // Which mechanisms a digest is good for is decided where the
            // command runs, against the mechanisms the user has.
            None if args.bool("digestPassword")? == Some(false) => vec![Mechanism::Sha1],
            None => Mechanism::ALL.to_vec(),
        };
        derive(&args, &name, &mechs)?
    } else {
        None
    };
    let mut out = RawDocumentBuf::new();
    for field in body.iter() {
        let (key, value) = field?;
        if key.as_str() != "pwd" {
            out.append(key, value);
        }
    }
    if let Some(creds) = derived {
        out.append(cstr!("credentials"), RawDocumentBuf::try_from(&creds)?);
    }
    if creating {
        out.append(cstr!("userId"), bson::Binary::from_uuid(bson::Uuid::new()));
    }
    Ok(out)
}

/// The `userId` of a new user: the one the set's log carries, or a new one.
fn user_id(args: &Args<'_>) -> CommandResult<bson::Binary> {
    match args.get("userId") {
        Some(RawBsonRef::Binary(id)) => Ok(bson::Binary {
            subtype: id.subtype,
            bytes: id.bytes.to_vec(),
        }),
        _ => Ok(bson::Binary::from_uuid(bson::Uuid::new())),
    }
}

fn custom_data(args: &Args<'_>) -> CommandResult<Option<Document>> {
    args.doc("customData")?
        .map(|d| Document::try_from(d).map_err(CommandError::from))
        .transpose()
}

fn refuse_restrictions(args: &Args<'_>) -> CommandResult<()> {
    match args.array("authenticationRestrictions")? {
        Some(list) if !list.is_empty() => {
            Err(ebb_storage::Error::not_implemented("authenticationRestrictions").into())
        }
        _ => Ok(()),
    }
}

/// `send_write` aimed at `admin.system.users`, whatever database the
/// command came on.
fn admin_request(req: &Request) -> Request {
    Request {
        db: USERS_DB.to_owned(),
        body: req.body.clone(),
        node: req.node.clone(),
        conn: req.conn.clone(),
        decided: req.decided.clone(),
    }
}

fn id_filter(name: &UserName) -> CommandResult<(Filter, RawDocumentBuf)> {
    let doc = rawdoc! { "_id": name.id() };
    Ok((Filter::parse(&doc)?, doc))
}

async fn insert_user(req: &Request, name: &UserName, user: Document) -> CommandResult<()> {
    let doc = RawDocumentBuf::try_from(&user)?;
    let outcome = send_write(&admin_request(req), USERS_COLLECTION, true, || InsertDocs {
        docs: Arc::new(vec![doc.clone()]),
        ordered: true,
        sync: true,
        prepared: false,
        decided: req.decided.clone(),
        bypass_validation: true,
    })
    .await?
    .ok_or_else(CommandError::internal)?;
    match outcome.errors.into_iter().next() {
        None => Ok(()),
        Some(w) if w.error.kind == ErrorKind::DuplicateKey => Err(CommandError::new(
            codes::USER_ALREADY_EXISTS,
            format!("User \"{}\" already exists", name.full()),
        )),
        Some(w) => Err(w.error.into()),
    }
}

/// Replaces user `name`'s document; false when there is none.
async fn replace_user(req: &Request, name: &UserName, user: Document) -> CommandResult<bool> {
    let replacement = RawDocumentBuf::try_from(&user)?;
    let (filter, filter_doc) = id_filter(name)?;
    let outcome = send_write(&admin_request(req), USERS_COLLECTION, false, || {
        UpdateDocs {
            statements: vec![UpdateStatement {
                filter: filter.clone(),
                collation: Default::default(),
                filter_doc: filter_doc.clone(),
                update: UpdateSpec::Replacement(replacement.clone()),
                multi: false,
                upsert: false,
                hint: None,
                bypass_validation: true,
                deadline: None,
                interrupt: None,
            }],
            ordered: true,
            sync: true,
            decided: req.decided.clone(),
        }
    })
    .await?;
    let Some(outcome) = outcome else {
        return Ok(false);
    };
    if let Some(w) = outcome.errors.into_iter().next() {
        return Err(w.error.into());
    }
    Ok(outcome.n > 0)
}

/// Deletes the users matching `filter`; returns how many.
async fn delete_users(req: &Request, filter: RawDocumentBuf, just_one: bool) -> CommandResult<u64> {
    let parsed = Filter::parse(&filter)?;
    let outcome = send_write(&admin_request(req), USERS_COLLECTION, false, || {
        DeleteDocs {
            statements: vec![DeleteStatement {
                filter: parsed.clone(),
                collation: Default::default(),
                just_one,
                hint: None,
                deadline: None,
                interrupt: None,
            }],
            ordered: true,
            sync: true,
            decided: req.decided.clone(),
        }
    })
    .await?;
    let Some(outcome) = outcome else {
        return Ok(0);
    };
    if let Some(w) = outcome.errors.into_iter().next() {
        return Err(w.error.into());
    }
    Ok(outcome.n)
}

/// User `name`'s document, as a `Document` to edit, or UserNotFound.
async fn existing(req: &Request, name: &UserName) -> CommandResult<Document> {
    let raw = store::find_user(&req.node, name)
        .await?
        .ok_or_else(|| not_found(name))?;
    Ok(Document::try_from(raw.as_ref())?)
}

fn check_user_db(db: &str) -> CommandResult<()> {
    if db == "local" {
        return Err(CommandError::bad_value(
            "Cannot create users in the local database",
        ));
    }
    Ok(())
}

pub async fn create_user(req: Request) -> CommandResult {
    let args = create_args(&req)?;
    let name = user_name(&args, &req.db)?;
    check_user_db(&req.db)?;
    refuse_restrictions(&args)?;
    let mechs = mechanisms(&args)?.unwrap_or_else(|| Mechanism::ALL.to_vec());
    let credentials = password(&args, &name, &mechs, req.decided.is_some())?;
    let credentials = match credentials {
        Some(c) => c,
        None if name.db == "$external" => Document::new(),
        None => {
            return Err(CommandError::bad_value(
                "Must provide a 'pwd' field for all user documents, except those with '$external' as the user's source db",
            ));
        }
    };
    let roles = match args.get("roles") {
        Some(v) => parse_roles("createUser", v, &req.db)?,
        None => return Err(args.missing("roles")),
    };
    let user = new_user_document(
        &name,
        user_id(&args)?,
        credentials,
        &roles,
        custom_data(&args)?,
    );
    let _guard = req.node.users.lock().await;
    insert_user(&req, &name, user).await?;
    req.node.users.changed();
    ok(doc! {})
}

pub async fn update_user(req: Request) -> CommandResult {
    let args = create_args(&req)?;
    let logged = req.decided.is_some();
    let name = user_name(&args, &req.db)?;
    refuse_restrictions(&args)?;
    let changes = [
        "pwd",
        "credentials",
        "roles",
        "customData",
        "mechanisms",
        "authenticationRestrictions",
    ];
    if !changes.iter().any(|f| args.has(f)) {
        return Err(CommandError::bad_value(
            "Must specify at least one field to update in updateUser",
        ));
    }
    let roles = args
        .get("roles")
        .map(|v| parse_roles("updateUser", v, &req.db))
        .transpose()?;
    let wanted = mechanisms(&args)?;
    let custom = custom_data(&args)?;
    let _guard = req.node.users.lock().await;
    let mut user = existing(&req, &name).await?;
    let current = mechanisms_of(&RawDocumentBuf::try_from(&user)?);
    if args.has(if logged { "credentials" } else { "pwd" }) {
        let mechs = wanted.unwrap_or(current);
        if let Some(creds) = password(&args, &name, &mechs, logged)? {
            user.insert("credentials", creds);
        }
    } else if let Some(mechs) = wanted {
        if !mechs.iter().all(|m| current.contains(m)) {
            return Err(CommandError::bad_value(
                "mechanisms field must be a subset of previously set mechanisms",
            ));
        }
        if let Ok(creds) = user.get_document_mut("credentials") {
            for m in Mechanism::ALL {
                if !mechs.contains(&m) {
                    creds.remove(m.name());
                }
            }
        }
    }
    if let Some(roles) = roles {
        set_roles(&mut user, &roles);
    }
    if let Some(custom) = custom {
        user.insert("customData", custom);
    }
    if !replace_user(&req, &name, user).await? {
        return Err(not_found(&name));
    }
    req.node.users.changed();
    ok(doc! {})
}

fn set_roles(user: &mut Document, roles: &[RoleName]) {
    user.insert(
        "roles",
        roles.iter().map(RoleName::to_document).collect::<Vec<_>>(),
    );
}

pub async fn drop_user(req: Request) -> CommandResult {
    let args = Args::parse(&req.body, &[])?;
    let name = user_name(&args, &req.db)?;
    let _guard = req.node.users.lock().await;
    if delete_users(&req, rawdoc! { "_id": name.id() }, true).await? == 0 {
        return Err(not_found(&name));
    }
    req.node.users.changed();
    ok(doc! {})
}

pub async fn drop_all_users_from_database(req: Request) -> CommandResult {
    Args::parse(&req.body, &[])?;
    let _guard = req.node.users.lock().await;
    let n = delete_users(&req, rawdoc! { "db": req.db.clone() }, false).await?;
    req.node.users.changed();
    ok(doc! { "n": n as i64 as i32 })
}

/// `grantRolesToUser` and `revokeRolesFromUser`: one edit of the role list.
async fn change_roles(req: Request, grant: bool) -> CommandResult {
    let args = Args::parse(&req.body, &["roles"])?;
    let cmd = args.command_name();
    let name = user_name(&args, &req.db)?;
    let roles = match args.get("roles") {
        Some(v) => parse_roles(cmd, v, &req.db)?,
        None => return Err(args.missing("roles")),
    };
    if roles.is_empty() {
        return Err(CommandError::bad_value(format!(
            "{cmd} command requires a non-empty \"roles\" array"
        )));
    }
    let _guard = req.node.users.lock().await;
    let mut user = existing(&req, &name).await?;
    let raw = RawDocumentBuf::try_from(&user)?;
    let mut held = StoredUser::parse(&raw).map(|u| u.roles).unwrap_or_default();
    if grant {
        for r in roles {
            if !held.contains(&r) {
                held.push(r);
            }
        }
    } else {
        held.retain(|r| !roles.contains(r));
    }
    set_roles(&mut user, &held);
    if !replace_user(&req, &name, user).await? {
        return Err(not_found(&name));
    }
    req.node.users.changed();
    ok(doc! {})
}

pub async fn grant_roles_to_user(req: Request) -> CommandResult {
    change_roles(req, true).await
}

pub async fn revoke_roles_from_user(req: Request) -> CommandResult {
    change_roles(req, false).await
}

/// Which users `usersInfo` asks for.
enum Wanted {
    /// `usersInfo: 1`: every user of one database, or of all.
    All {
        db: Option<String>,
    },
    Names(Vec<UserName>),
}

fn wanted_name(v: RawBsonRef<'_>, db: &str) -> CommandResult<UserName> {
    match v {
        RawBsonRef::String(u) => Ok(UserName::new(u, db)),
        RawBsonRef::Document(d) => match (d.get("user")?, d.get("db")?) {
            (Some(RawBsonRef::String(u)), Some(RawBsonRef::String(db))) => Ok(UserName::new(u, db)),
            _ => Err(CommandError::bad_value(
                "User name must contain string fields \"user\" and \"db\"",
            )),
        },
        other => Err(CommandError::bad_value(format!(
            "User name must be either a string or an object, found {}",
            type_name(&other)
        ))),
    }
}

pub async fn users_info(req: Request) -> CommandResult {
    let args = Args::parse(
        &req.body,
        &[
            "showCredentials",
            "showCustomData",
            "showPrivileges",
            "showAuthenticationRestrictions",
            "forAllDBs",
            "filter",
        ],
    )?;
    if args.bool("showPrivileges")? == Some(true) {
        return Err(ebb_storage::Error::not_implemented("usersInfo with showPrivileges").into());
    }
    let show_credentials = args.bool("showCredentials")?.unwrap_or(false);
    let show_custom_data = args.bool("showCustomData")?.unwrap_or(true);
    let show_restrictions = args
        .bool("showAuthenticationRestrictions")?
        .unwrap_or(false);
    let for_all = args.bool("forAllDBs")?.unwrap_or(false);
    let wanted = match args.command_value() {
        v if crate::args::is_number(&v) => Wanted::All {
            db: (!for_all).then(|| req.db.clone()),
        },
        RawBsonRef::Array(list) => {
            let mut names = Vec::new();
            for v in list {
                names.push(wanted_name(v?, &req.db)?);
            }
            Wanted::Names(names)
        }
        v => Wanted::Names(vec![wanted_name(v, &req.db)?]),
    };
    let filter = match args.doc("filter")? {
        Some(f) if matches!(wanted, Wanted::All { .. }) => Some(Filter::parse(f)?),
        Some(_) => {
            return Err(CommandError::bad_value(
                "Filter is only allowed when retrieving all users",
            ));
        }
        None => None,
    };
    let found = match &wanted {
        Wanted::All { db } => store::all_users(&req.node, db.as_deref()).await?,
        Wanted::Names(names) => {
            let mut out = Vec::new();
            for n in names {
                if let Some(d) = store::find_user(&req.node, n).await? {
                    out.push(d);
                }
            }
            out
        }
    };
    let mut users = Vec::new();
    for raw in found {
        let shown = shown_user(&raw, show_credentials, show_custom_data, show_restrictions)?;
        if let Some(f) = &filter
            && !f.matches(&RawDocumentBuf::try_from(&shown)?)?
        {
            continue;
        }
        users.push(Bson::Document(shown));
    }
    ok(doc! { "users": users })
}

/// One `usersInfo` entry: the stored document in mongod's output shape.
fn shown_user(
    raw: &RawDocument,
    show_credentials: bool,
    show_custom_data: bool,
    show_restrictions: bool,
) -> CommandResult<Document> {
    let stored = Document::try_from(raw)?;
    let mut out = Document::new();
    for key in ["_id", "userId", "user", "db"] {
        if let Some(v) = stored.get(key) {
            out.insert(key, v.clone());
        }
    }
    if show_credentials && let Some(c) = stored.get("credentials") {
        out.insert("credentials", c.clone());
    }
    out.insert(
        "roles",
        stored
            .get("roles")
            .cloned()
            .unwrap_or(Bson::Array(Vec::new())),
    );
    if show_custom_data && let Some(c) = stored.get("customData") {
        out.insert("customData", c.clone());
    }
    if show_restrictions {
        // ebb refuses restrictions, so every user has none.
        out.insert("authenticationRestrictions", Vec::<Bson>::new());
    }
    let mechs: Vec<&str> = mechanisms_of(raw).iter().map(|m| m.name()).collect();
    out.insert("mechanisms", mechs);
    Ok(out)
}
