//! Authentication and authorization as mongod does them: SCRAM-SHA-1 and
//! SCRAM-SHA-256 over SASL (`scram`), users stored in `admin.system.users`
//! (`users` for their shape, `store` to read them), the built-in roles and
//! the needs a command's row in the command table states (`privileges`), each
//! connection's state (`session`), the node-wide generation that tells
//! connections their cached roles changed (`directory`), the members' own
//! user derived from the shared key file (`internal`), and the check every
//! command passes (`check`). The commands themselves (`saslStart`,
//! `createUser`, …) live in `command/`; this module knows no wire format.

pub mod check;
pub mod directory;
pub mod internal;
pub mod privileges;
pub mod scram;
pub mod session;
pub mod store;
pub mod users;
