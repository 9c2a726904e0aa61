//! Members' authentication to each other with `security.key_file`, as
//! mongod does it: the key file's contents, whitespace removed, are the
//! password of the internal user `__system@local`, which holds the
//! `__system` role (every action, the members' own `ebbRaft` included). The
//! user is not stored anywhere: its credentials are derived from the key at
//! startup, so only a process that holds the same key can authenticate as
//! it, and no client can create, change or drop it.

use std::collections::HashMap;
use std::path::Path;

use super::scram::{self, ClientConversation, Credentials, Mechanism};
use super::session::Authenticated;
use super::users::{RoleName, UserName};

/// The internal user's name and database.
pub const USER: &str = "__system";
pub const DB: &str = "local";
/// The role only the internal user holds by default (`admin.__system`).
pub const ROLE: &str = "__system";
/// The mechanism members use with each other.
pub const MECHANISM: Mechanism = Mechanism::Sha256;

/// mongod's bounds on a key's length, in characters.
const KEY_CHARS: std::ops::RangeInclusive<usize> = 6..=1024;

/// A shared key and the internal user's credentials derived from it.
pub struct InternalKey {
    key: String,
    credentials: HashMap<Mechanism, Credentials>,
}

impl std::fmt::Debug for InternalKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("InternalKey(..)")
    }
}

impl InternalKey {
    /// Reads and checks the key file at `path`, with mongod's rules and
    /// messages: owner-only permissions, base64 characters, 6 to 1024 of them.
    pub fn read(path: &Path) -> Result<InternalKey, String> {
        let shown = path.display();
        let metadata =
            std::fs::metadata(path).map_err(|e| format!("error getting file {shown}: {e}"))?;
        {
            use std::os::unix::fs::PermissionsExt;
            if metadata.permissions().mode() & 0o077 != 0 {
                return Err(format!("permissions on {shown} are too open"));
            }
        }
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("error reading file {shown}: {e}"))?;
        Self::from_text(&text).map_err(|why| format!("security key in {shown} {why}"))
    }

    /// The key of a key file's text; an error says what is wrong with it.
    fn from_text(text: &str) -> Result<InternalKey, String> {
        let key: String = text.chars().filter(|c| !c.is_whitespace()).collect();
        if let Some(bad) = key
            .chars()
            .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '+' | '/' | '=')))
        {
            return Err(format!(
                "has an invalid character {bad:?}: only base64 characters are allowed"
            ));
        }
        if !KEY_CHARS.contains(&key.len()) {
            return Err(format!(
                "has length {}, must be between {} and {} characters",
                key.len(),
                KEY_CHARS.start(),
                KEY_CHARS.end()
            ));
        }
        let credentials = Mechanism::ALL
            .into_iter()
            .map(|mech| (mech, Credentials::generate(mech, &prepared(mech, &key))))
            .collect();
        Ok(InternalKey { key, credentials })
    }

    /// What a connection authenticating as the internal user is checked against.
    pub fn credentials(&self, mech: Mechanism) -> Credentials {
        self.credentials[&mech].clone()
    }

    /// Starts a conversation as the internal user, for a connection to
    /// another member; returns it and the client-first message.
    pub fn client(&self) -> (ClientConversation, Vec<u8>) {
        ClientConversation::start(MECHANISM, USER, &prepared(MECHANISM, &self.key))
    }
}

/// The key as mechanism `mech` salts it (base64 characters need no SASLprep).
fn prepared(mech: Mechanism, key: &str) -> String {
    scram::prepared_password(mech, USER, key).unwrap_or_else(|_| key.to_owned())
}

/// Whether `name` is the internal user.
pub fn is_internal(name: &UserName) -> bool {
    name.user == USER && name.db == DB
}

/// The internal user as a connection holds it once authenticated.
pub fn authenticated(generation: u64) -> Authenticated {
    Authenticated {
        name: UserName::new(USER, DB),
        roles: vec![RoleName {
            role: ROLE.to_owned(),
            db: "admin".to_owned(),
        }],
        generation,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_is_base64_characters_between_6_and_1024_of_them() {
        assert!(InternalKey::from_text("abc123\n  def+/=\n").is_ok());
        let e = InternalKey::from_text("abc").unwrap_err();
        assert!(e.contains("has length 3"), "{e}");
        let e = InternalKey::from_text(&"a".repeat(1025)).unwrap_err();
        assert!(e.contains("has length 1025"), "{e}");
        let e = InternalKey::from_text("- key1\n- key2\n").unwrap_err();
        assert!(e.contains("invalid character '-'"), "{e}");
    }

    #[test]
    fn a_key_file_others_may_read_is_refused() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("key");
        std::fs::write(&path, "0123456789abcdef\n").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let e = InternalKey::read(&path).unwrap_err();
        assert!(e.ends_with("are too open"), "{e}");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o400)).unwrap();
        let key = InternalKey::read(&path).unwrap();
        assert_eq!(key.key, "0123456789abcdef");
    }
}
