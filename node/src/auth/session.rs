//! One connection's authentication state: who it authenticated as (with
//! the roles cached at the directory generation they were read at) and the
//! SASL conversation in progress, if any.
//!
//! Pure state behind a mutex held only for short, non-async sections; the
//! commands (`command/sasl.rs`) drive it and `check.rs` reads it.

use std::sync::Mutex;

use super::scram::Conversation;
use super::users::{RoleName, UserName};

/// An authenticated user and the roles it held at `generation`.
#[derive(Debug, Clone)]
pub struct Authenticated {
    pub name: UserName,
    pub roles: Vec<RoleName>,
    pub generation: u64,
}

/// A SASL conversation waiting for `saslContinue`.
#[derive(Debug, Clone)]
pub enum Pending {
    /// The server-first message was sent; the client's proof comes next.
    Proof {
        conversation: Box<Conversation>,
        /// Who the conversation authenticates, once the proof holds.
        user: Authenticated,
        skip_empty_exchange: bool,
    },
    /// The proof was accepted and the server signature sent; the client's
    /// empty message completes the exchange.
    Done,
}

#[derive(Debug, Default)]
struct State {
    user: Option<Authenticated>,
    pending: Option<Pending>,
}

/// Per-connection authentication state.
#[derive(Debug, Default)]
pub struct Session {
    state: Mutex<State>,
}

impl Session {
    fn with<T>(&self, f: impl FnOnce(&mut State) -> T) -> T {
        // A panic while holding the lock leaves plain data behind; keep going.
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        f(&mut state)
    }

    /// The authenticated user, if any.
    pub fn user(&self) -> Option<Authenticated> {
        self.with(|s| s.user.clone())
    }

    pub fn set_user(&self, user: Authenticated) {
        self.with(|s| s.user = Some(user));
    }

    /// Forgets the user (`logout`, or the user was dropped).
    pub fn clear_user(&self) {
        self.with(|s| s.user = None);
    }

    /// Starts a new conversation, abandoning any other.
    pub fn set_pending(&self, pending: Option<Pending>) {
        self.with(|s| s.pending = pending);
    }

    /// Takes the conversation in progress.
    pub fn take_pending(&self) -> Option<Pending> {
        self.with(|s| s.pending.take())
    }
}
