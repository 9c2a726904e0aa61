//! The logical sessions clients named (`lsid`), as mongod's local session
//! cache keeps them: each session's id, the user it belongs to and when it
//! was last used. Commands carrying an `lsid` refresh it;
//! `endSessions`/`killSessions`/`killAllSessions` remove sessions;
//! `$listLocalSessions` lists them. A session unused for
//! `SESSION_TIMEOUT_MS` (mongod's `localLogicalSessionTimeoutMinutes`, 30)
//! is forgotten, and at most `MAX_SESSIONS` (mongod's `maxSessions`) are
//! kept: a new one past that is refused with TooManyLogicalSessions.

use std::collections::HashMap;
use std::sync::Mutex;

use sha2::{Digest, Sha256};

use crate::auth::users::UserName;

/// mongod's default `localLogicalSessionTimeoutMinutes`, in milliseconds.
pub const SESSION_TIMEOUT_MS: i64 = 30 * 60 * 1000;

/// mongod's default `maxSessions`.
pub const MAX_SESSIONS: usize = 1_000_000;

/// One session.
#[derive(Debug, Clone, PartialEq)]
pub struct LocalSession {
    pub id: Vec<u8>,
    /// The user that used it, when authorization named one.
    pub user: Option<UserName>,
    pub last_use_ms: i64,
}

impl LocalSession {
    /// mongod's `uid`: the SHA-256 of `user@db`, of the empty string for
    /// no user.
    pub fn uid(&self) -> Vec<u8> {
        let name = match &self.user {
            Some(u) => format!("{}@{}", u.user, u.db),
            None => String::new(),
        };
        Sha256::digest(name.as_bytes()).to_vec()
    }
}

/// The session cache.
#[derive(Debug, Default)]
pub struct Sessions {
    map: Mutex<HashMap<Vec<u8>, LocalSession>>,
}

/// The cache is full of sessions in use.
#[derive(Debug, PartialEq)]
pub struct TooManySessions;

impl Sessions {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Vec<u8>, LocalSession>> {
        self.map.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Records a use of session `id` by `user` at `now_ms`.
    pub fn touch(
        &self,
        id: &[u8],
        user: Option<UserName>,
        now_ms: i64,
    ) -> Result<(), TooManySessions> {
        let mut map = self.lock();
        if let Some(s) = map.get_mut(id) {
            s.last_use_ms = now_ms;
            if user.is_some() {
                s.user = user;
            }
            return Ok(());
        }
        if map.len() >= MAX_SESSIONS {
            map.retain(|_, s| now_ms - s.last_use_ms < SESSION_TIMEOUT_MS);
            if map.len() >= MAX_SESSIONS {
                return Err(TooManySessions);
            }
        }
        map.insert(
            id.to_vec(),
            LocalSession {
                id: id.to_vec(),
                user,
                last_use_ms: now_ms,
            },
        );
        Ok(())
    }

    /// Forgets the sessions `ids`.
    pub fn end(&self, ids: &[Vec<u8>]) {
        let mut map = self.lock();
        for id in ids {
            map.remove(id);
        }
    }

    /// Forgets the sessions `keep` rejects; returns their ids.
    pub fn end_where(&self, doomed: impl Fn(&LocalSession) -> bool) -> Vec<Vec<u8>> {
        let mut map = self.lock();
        let ids: Vec<Vec<u8>> = map
            .values()
            .filter(|s| doomed(s))
            .map(|s| s.id.clone())
            .collect();
        for id in &ids {
            map.remove(id);
        }
        ids
    }

    /// The sessions in use at `now_ms` that `wanted` accepts, oldest use
    /// first.
    pub fn list(&self, now_ms: i64, wanted: impl Fn(&LocalSession) -> bool) -> Vec<LocalSession> {
        let mut map = self.lock();
        map.retain(|_, s| now_ms - s.last_use_ms < SESSION_TIMEOUT_MS);
        let mut out: Vec<LocalSession> = map.values().filter(|s| wanted(s)).cloned().collect();
        out.sort_by(|a, b| a.last_use_ms.cmp(&b.last_use_ms).then(a.id.cmp(&b.id)));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sessions_are_refreshed_listed_ended_and_forgotten_when_idle() {
        let s = Sessions::default();
        let alice = UserName::new("alice", "admin");
        s.touch(b"a", Some(alice.clone()), 0).unwrap();
        s.touch(b"b", None, 10).unwrap();
        s.touch(b"a", None, 20).unwrap();
        let all = s.list(30, |_| true);
        assert_eq!(all.len(), 2);
        assert_eq!(all[0].id, b"b");
        assert_eq!(
            all[1].user,
            Some(alice),
            "a later use without a user keeps it"
        );
        assert_ne!(all[0].uid(), all[1].uid());
        s.end(&[b"b".to_vec()]);
        assert_eq!(s.list(30, |_| true).len(), 1);
        assert!(s.list(20 + SESSION_TIMEOUT_MS, |_| true).is_empty());
    }
}
