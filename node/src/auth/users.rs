//! Users as mongod stores them in `admin.system.users`:
//!
//! ```text
//! { _id: "<db>.<user>", userId: UUID, user, db,
//!   credentials: { "SCRAM-SHA-1": {iterationCount, salt, storedKey, serverKey},
//!                  "SCRAM-SHA-256": {…} },
//!   roles: [ {role, db}, … ], [customData] }
//! ```
//!
//! Names, role references and the documents themselves: building one from a
//! password ([`new_user_document`]) and reading one back ([`StoredUser`]).
//! No I/O here (`store.rs` reads and writes the collection).

use bson::{Document, RawBsonRef, RawDocument, doc};

use super::privileges;
use super::scram::{Credentials, Mechanism, ScramError, prepared_password};
use crate::error::{CommandError, CommandResult, codes};

/// A user's full name: the user and the database it authenticates on.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct UserName {
    pub user: String,
    pub db: String,
}

impl UserName {
    pub fn new(user: impl Into<String>, db: impl Into<String>) -> Self {
        UserName {
            user: user.into(),
            db: db.into(),
        }
    }

    /// The `_id` of its document: `db.user`.
    pub fn id(&self) -> String {
        format!("{}.{}", self.db, self.user)
    }

    /// `user@db`, as mongod names users in messages.
    pub fn full(&self) -> String {
        format!("{}@{}", self.user, self.db)
    }
}

/// A role a user holds: `role@db`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RoleName {
    pub role: String,
    pub db: String,
}

impl RoleName {
    pub fn to_document(&self) -> Document {
        doc! { "role": self.role.clone(), "db": self.db.clone() }
    }
}

/// Parses a `roles` argument: each entry a role name (on `default_db`) or
/// `{role, db}`; every role must exist (RoleNotFound, as mongod).
pub fn parse_roles(cmd: &str, v: RawBsonRef<'_>, default_db: &str) -> CommandResult<Vec<RoleName>> {
    let RawBsonRef::Array(list) = v else {
        return Err(CommandError::new(
            codes::TYPE_MISMATCH,
            format!(
                "BSON field '{cmd}.roles' is the wrong type '{}', expected type 'array'",
                crate::args::type_name(&v)
            ),
        ));
    };
    let mut roles: Vec<RoleName> = Vec::new();
    for item in list {
        let role = match item? {
            RawBsonRef::String(role) => RoleName {
                role: role.to_owned(),
                db: default_db.to_owned(),
            },
            RawBsonRef::Document(d) => {
                let field = |k: &str| match d.get(k) {
                    Ok(Some(RawBsonRef::String(s))) => Ok(s.to_owned()),
                    _ => Err(CommandError::bad_value(format!(
                        "Role names must be either strings or objects with \"role\" and \"db\" string fields; missing or bad '{k}'"
                    ))),
                };
                RoleName {
                    role: field("role")?,
                    db: field("db")?,
                }
            }
            other => {
                return Err(CommandError::bad_value(format!(
                    "Role names must be either strings or objects, got {}",
                    crate::args::type_name(&other)
                )));
            }
        };
        if !privileges::role_exists(&role.role, &role.db) {
            return Err(CommandError::new(
                codes::ROLE_NOT_FOUND,
                format!("Could not find role: {}@{}", role.role, role.db),
            ));
        }
        if !roles.contains(&role) {
            roles.push(role);
        }
    }
    Ok(roles)
}

/// The `credentials` of a password for `mechanisms`.
pub fn credentials_document(
    name: &UserName,
    password: &str,
    mechanisms: &[Mechanism],
) -> CommandResult<Document> {
    let mut creds = Document::new();
    for &mech in mechanisms {
        let prepared = prepared_password(mech, &name.user, password).map_err(|e| match e {
            ScramError::Saslprep => CommandError::bad_value(
                "Error preflighting SCRAM-SHA-256 credentials: password cannot be SASLprep'd",
            ),
            other => CommandError::bad_value(other.to_string()),
        })?;
        creds.insert(
            mech.name(),
            Credentials::generate(mech, &prepared).to_document(),
        );
    }
    Ok(creds)
}

/// A new user's document.
pub fn new_user_document(
    name: &UserName,
    user_id: bson::Binary,
    credentials: Document,
    roles: &[RoleName],
    custom_data: Option<Document>,
) -> Document {
    let mut d = doc! {
        "_id": name.id(),
        "userId": user_id,
        "user": name.user.clone(),
        "db": name.db.clone(),
        "credentials": credentials,
        "roles": roles.iter().map(RoleName::to_document).collect::<Vec<_>>(),
    };
    if let Some(custom) = custom_data {
        d.insert("customData", custom);
    }
    d
}

/// A user document read back from `admin.system.users`.
#[derive(Debug, Clone)]
pub struct StoredUser {
    pub name: UserName,
    pub roles: Vec<RoleName>,
}

impl StoredUser {
    pub fn parse(d: &RawDocument) -> Option<StoredUser> {
        let user = d.get_str("user").ok()?;
        let db = d.get_str("db").ok()?;
        let mut roles = Vec::new();
        if let Ok(list) = d.get_array("roles") {
            for r in list.into_iter().flatten() {
                if let RawBsonRef::Document(r) = r
                    && let (Ok(role), Ok(db)) = (r.get_str("role"), r.get_str("db"))
                {
                    roles.push(RoleName {
                        role: role.to_owned(),
                        db: db.to_owned(),
                    });
                }
            }
        }
        Some(StoredUser {
            name: UserName::new(user, db),
            roles,
        })
    }
}

/// The mechanisms a stored user has credentials for, in mongod's order.
pub fn mechanisms_of(d: &RawDocument) -> Vec<Mechanism> {
    let Ok(creds) = d.get_document("credentials") else {
        return Vec::new();
    };
    Mechanism::ALL
        .into_iter()
        .filter(|m| matches!(creds.get(m.name()), Ok(Some(RawBsonRef::Document(_)))))
        .collect()
}

/// A stored user's credentials for one mechanism.
pub fn credentials_of(d: &RawDocument, mech: Mechanism) -> Option<Credentials> {
    let creds = d.get_document("credentials").ok()?;
    Credentials::from_document(creds.get_document(mech.name()).ok()?).ok()
}
