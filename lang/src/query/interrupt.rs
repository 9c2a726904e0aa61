//! Stopping a running read from outside it: `killOp`, or the client that
//! asked for it going away.
//!
//! An [`Interrupt`] is shared between the operation registry (which trips
//! it) and the thread running the read (which polls it where it polls its
//! `maxTimeMS` deadline: every few thousand keys and between sort phases).
//! The node enters [`Scope`] around each blocking read, so the executor
//! finds the running operation's interrupt without every read path
//! passing it along; a thread outside any scope is never interrupted.
//! This module knows nothing of opids or connections.

use std::cell::RefCell;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};

use crate::error::{Error, ErrorKind, Result};

const RUNNING: u8 = 0;
const KILLED: u8 = 1;
const DISCONNECTED: u8 = 2;

/// Why an operation was stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Why {
    /// `killOp` named it.
    Killed,
    /// Its client's connection closed.
    Disconnected,
}

/// The flag one operation's reads poll.
#[derive(Debug, Clone, Default)]
pub struct Interrupt(Arc<AtomicU8>);

impl Interrupt {
    /// Asks the operation to stop at its next check. The first reason sticks.
    pub fn trip(&self, why: Why) {
        let state = match why {
            Why::Killed => KILLED,
            Why::Disconnected => DISCONNECTED,
        };
        let _ = self
            .0
            .compare_exchange(RUNNING, state, Ordering::Relaxed, Ordering::Relaxed);
    }

    pub fn is_tripped(&self) -> bool {
        self.0.load(Ordering::Relaxed) != RUNNING
    }

    /// The error the operation fails with once tripped (mongod's wording).
    pub fn check(&self) -> Result<()> {
        match self.0.load(Ordering::Relaxed) {
            RUNNING => Ok(()),
            KILLED => Err(Error::new(
                ErrorKind::Interrupted,
                "operation was interrupted",
            )),
            _ => Err(Error::new(
                ErrorKind::ClientDisconnect,
                "operation was interrupted because a client disconnected",
            )),
        }
    }
}

thread_local! {
    static CURRENT: RefCell<Option<Interrupt>> = const { RefCell::new(None) };
    static DEADLINE: std::cell::Cell<Option<std::time::Instant>> = const { std::cell::Cell::new(None) };
}

/// While alive, [`deadline_passed`] on this thread tells whether the
/// running batch's `maxTimeMS` deadline has passed (for work that cannot
/// return to its scan to check, such as a script).
pub struct DeadlineScope {
    previous: Option<std::time::Instant>,
}

impl DeadlineScope {
    pub fn enter(deadline: Option<std::time::Instant>) -> DeadlineScope {
        DeadlineScope {
            previous: DEADLINE.with(|d| d.replace(deadline)),
        }
    }
}

impl Drop for DeadlineScope {
    fn drop(&mut self) {
        DEADLINE.with(|d| d.set(self.previous));
    }
}

/// Whether this thread's running batch is past its deadline.
pub fn deadline_passed() -> bool {
    DEADLINE.with(|d| d.get().is_some_and(|at| std::time::Instant::now() >= at))
}

/// While alive, [`check_current`] on this thread polls `interrupt`.
pub struct Scope {
    previous: Option<Interrupt>,
}

impl Scope {
    pub fn enter(interrupt: Option<Interrupt>) -> Scope {
        let previous = CURRENT.with(|current| current.replace(interrupt));
        Scope { previous }
    }
}

impl Drop for Scope {
    fn drop(&mut self) {
        let previous = self.previous.take();
        CURRENT.with(|current| *current.borrow_mut() = previous);
    }
}

/// Fails once the operation running on this thread has been interrupted.
pub fn check_current() -> Result<()> {
    CURRENT.with(|current| current.borrow().as_ref().map_or(Ok(()), Interrupt::check))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scope_sees_its_interrupt_and_restores_the_outer_one() {
        let outer = Interrupt::default();
        let inner = Interrupt::default();
        let _outer = Scope::enter(Some(outer.clone()));
        {
            let _inner = Scope::enter(Some(inner.clone()));
            outer.trip(Why::Killed);
            assert!(check_current().is_ok(), "only the inner one is polled");
            inner.trip(Why::Disconnected);
            inner.trip(Why::Killed);
            let error = check_current().unwrap_err();
            assert_eq!(
                error.kind,
                ErrorKind::ClientDisconnect,
                "the first reason sticks"
            );
        }
        assert_eq!(check_current().unwrap_err().kind, ErrorKind::Interrupted);
    }

    #[test]
    fn outside_any_scope_nothing_is_interrupted() {
        assert!(check_current().is_ok());
    }
}
