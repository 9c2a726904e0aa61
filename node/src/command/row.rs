//! What the command table knows of one command: a [`Command`] row, its
//! field types, and the builder the table writes its rows with. A row
//! starts as an ordinary command ([`row`]) and states only where it
//! differs.

use bson::{RawDocument, RawDocumentBuf};

use super::common::Handler;
use crate::auth::privileges::{self, Need, Privilege, SystemUsers};
use crate::error::CommandResult;
use crate::top::Category;

/// mongod's kind of operation: the profiler's `op`, and the opcounter the
/// command counts in. Dispatch counts `Command` in `opcounters.command`;
/// the handlers of the other kinds count their own, by the statements or
/// documents they ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Query,
    GetMore,
    Insert,
    Update,
    Remove,
    Command,
}

impl Op {
    /// The profiler's name of the kind (`op` in `system.profile`).
    pub fn profile_name(self) -> &'static str {
        match self {
            Op::Query => "query",
            Op::GetMore => "getmore",
            Op::Insert => "insert",
            Op::Update => "update",
            Op::Remove => "remove",
            Op::Command => "command",
        }
    }
}

/// What a replica-set member does with a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnASet {
    /// Runs on this member as on a standalone (reads are checked against
    /// the read preference).
    Local,
    /// A write: through the set's log, on the primary only.
    Logged,
}

/// What the set's log holds of a command sent to a database, when not the
/// command as sent: decided once, on the primary, before it is logged.
pub type LogForm = fn(&str, RawDocumentBuf) -> CommandResult<RawDocumentBuf>;

/// One command: every per-command fact dispatch, authorization, the
/// profiler, `top` and the opcounters need.
#[derive(Clone, Copy)]
pub struct Command {
    /// The name `listCommands` shows, then the spellings mongod also takes
    /// (case-sensitive).
    pub names: &'static [&'static str],
    pub handler: Handler,
    /// What it needs before it runs.
    pub privilege: Privilege,
    /// What it does to `admin.system.users` when it names it.
    pub users: SystemUsers,
    /// Its kind: the profiler's `op` and its opcounter.
    pub op: Op,
    /// Where `top` accounts it.
    pub top: Category,
    /// The field naming the collection it runs on, when that is not its
    /// first field (what `top` and the profiler account it to).
    pub collection_field: Option<&'static str>,
    /// Whether a legacy OP_QUERY may carry it (the drivers' first
    /// handshake).
    pub op_query: bool,
    /// Whether an `lsid` it carries refreshes that session (not for the
    /// commands that end sessions).
    pub touches_session: bool,
    /// What a replica-set member does with it.
    pub on_a_set: OnASet,
    /// How the set's log holds it, when not as sent.
    pub log_form: Option<LogForm>,
}

/// An ordinary command: names, handler and privilege; kind `command`,
/// `top`'s `commands` column under a write lock, not touching
/// `admin.system.users`, OP_MSG only, refreshing its session.
pub const fn row(
    names: &'static [&'static str],
    handler: Handler,
    privilege: Privilege,
) -> Command {
    Command {
        names,
        handler,
        privilege,
        users: SystemUsers::Untouched,
        op: Op::Command,
        top: Category::Command,
        collection_field: None,
        op_query: false,
        touches_session: true,
        on_a_set: OnASet::Local,
        log_form: None,
    }
}

impl Command {
    /// What it does to `admin.system.users`.
    pub const fn users(mut self, users: SystemUsers) -> Self {
        self.users = users;
        self
    }

    /// Its kind, when not `command`.
    pub const fn op(mut self, op: Op) -> Self {
        self.op = op;
        self
    }

    /// Its `top` category, when not `commands` under a write lock.
    pub const fn top(mut self, top: Category) -> Self {
        self.top = top;
        self
    }

    /// The field naming its collection, when not its first.
    pub const fn collection_in(mut self, field: &'static str) -> Self {
        self.collection_field = Some(field);
        self
    }

    /// Accepted in a legacy OP_QUERY too.
    pub const fn op_query(mut self) -> Self {
        self.op_query = true;
        self
    }

    /// Ends sessions, so its `lsid` is not refreshed.
    pub const fn ends_sessions(mut self) -> Self {
        self.touches_session = false;
        self
    }

    /// A write: on a replica set, through its log.
    pub const fn logged(mut self) -> Self {
        self.on_a_set = OnASet::Logged;
        self
    }

    /// A write the set's log holds in the form `form` gives it.
    pub const fn logged_as(mut self, form: LogForm) -> Self {
        self.on_a_set = OnASet::Logged;
        self.log_form = Some(form);
        self
    }

    /// Whether it reads documents (what a secondary refuses without a read
    /// preference that allows it).
    pub fn reads(&self) -> bool {
        matches!(self.op, Op::Query | Op::GetMore) || self.top == Category::ReadCommand
    }

    /// The name `listCommands` shows.
    pub fn name(&self) -> &'static str {
        self.names[0]
    }

    /// What it needs, sent to `db` with `body`.
    pub fn need(&self, db: &str, body: &RawDocument) -> Need {
        privileges::need(self.privilege, self.users, db, body)
    }
}
