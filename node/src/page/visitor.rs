//! Who is looking at the page. With authorization enabled, a visitor signs
//! in with an ebb user: the page runs the same SCRAM-SHA-256 conversation
//! a driver runs (`saslStart`/`saslContinue` through command dispatch) on a
//! connection of its own, and every command it runs later goes through
//! dispatch on that connection, so the user's roles decide what it may
//! read and change exactly as for a driver. The browser keeps only a
//! random token in an HttpOnly, SameSite=Strict cookie; forms also carry
//! the visitor's form token. Without authorization, every visitor is
//! anonymous and the page is read-only.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bson::{RawDocumentBuf, rawdoc};
use rand::RngCore;

use crate::auth::scram::{self, ClientConversation, Mechanism};
use crate::command::ConnInfo;
use crate::command::dispatch;
use crate::context::NodeContext;

/// The cookie holding a visitor's token.
pub const COOKIE: &str = "ebb_expiry";
/// A visitor idle this long signs in again.
const IDLE: Duration = Duration::from_secs(30 * 60);
/// The most visitors kept; the one idle longest goes first.
const MAX_VISITORS: usize = 256;

/// Page connections number from here, apart from clients' connections.
static NEXT_CONN: AtomicU32 = AtomicU32::new(0x8000_0000);

/// An `expireAfterSeconds` change the visitor previewed: the only one
/// the page will apply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Previewed {
    pub db: String,
    pub coll: String,
    pub index: String,
    pub secs: i64,
}

/// One visitor: the connection its commands run on.
pub struct Visitor {
    pub conn: Arc<ConnInfo>,
    /// `user@db`, None when anonymous.
    pub user: Option<String>,
    /// What every form that changes something must carry back.
    pub csrf: String,
    pub previewed: Mutex<Option<Previewed>>,
    seen: Mutex<Instant>,
}

impl Visitor {
    fn new(peer: SocketAddr, user: Option<String>) -> Visitor {
        Visitor {
            conn: Arc::new(ConnInfo {
                id: NEXT_CONN.fetch_add(1, Ordering::Relaxed).max(0x8000_0000),
                peer,
                auth: Default::default(),
            }),
            user,
            csrf: token(),
            previewed: Mutex::new(None),
            seen: Mutex::new(Instant::now()),
        }
    }

    /// An anonymous visitor, for a node without authorization.
    pub fn anonymous(peer: SocketAddr) -> Arc<Visitor> {
        Arc::new(Visitor::new(peer, None))
    }

    /// Runs `body` on database `db` as this visitor, through dispatch.
    pub async fn run(
        &self,
        ctx: &Arc<NodeContext>,
        db: &str,
        body: RawDocumentBuf,
    ) -> bson::Document {
        let reply = dispatch::run(ctx, &self.conn, Some(db.to_owned()), body).await;
        bson::Document::try_from(reply.as_ref()).unwrap_or_default()
    }

    fn touch(&self) -> bool {
        let mut seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
        if seen.elapsed() > IDLE {
            return false;
        }
        *seen = Instant::now();
        true
    }

    fn idle_for(&self) -> Duration {
        self.seen
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .elapsed()
    }
}

/// A reply's error as the page shows it: `errmsg (codeName, code)`.
pub fn failure(reply: &bson::Document) -> Option<String> {
    if reply.get_f64("ok").ok() == Some(1.0) || reply.get_i32("ok").ok() == Some(1) {
        return None;
    }
    Some(format!(
        "{} ({}, {})",
        reply.get_str("errmsg").unwrap_or("failed"),
        reply.get_str("codeName").unwrap_or(""),
        reply.get_i32("code").unwrap_or(0)
    ))
}

/// The signed-in visitors, by token.
#[derive(Default)]
pub struct Visitors {
    by_token: Mutex<HashMap<String, Arc<Visitor>>>,
}

impl Visitors {
    /// The visitor whose cookie header names a live token.
    pub fn find(&self, cookies: Option<&str>) -> Option<Arc<Visitor>> {
        let token = cookies?.split(';').find_map(|c| {
            let (name, value) = c.trim().split_once('=')?;
            (name == COOKIE).then(|| value.to_owned())
        })?;
        let mut all = self.by_token.lock().unwrap_or_else(|e| e.into_inner());
        let visitor = all.get(&token)?.clone();
        if visitor.touch() {
            Some(visitor)
        } else {
            all.remove(&token);
            None
        }
    }

    /// Signs `user` of database `db` in with `password`; returns the new
    /// token, or the server's error.
    pub async fn sign_in(
        &self,
        ctx: &Arc<NodeContext>,
        peer: SocketAddr,
        user: &str,
        db: &str,
        password: &str,
    ) -> Result<String, String> {
        let visitor = Visitor::new(peer, Some(format!("{user}@{db}")));
        authenticate(ctx, &visitor, user, db, password).await?;
        let token = token();
        let mut all = self.by_token.lock().unwrap_or_else(|e| e.into_inner());
        all.retain(|_, v| v.idle_for() <= IDLE);
        if all.len() >= MAX_VISITORS
            && let Some(oldest) = all
                .iter()
                .max_by_key(|(_, v)| v.idle_for())
                .map(|(t, _)| t.clone())
        {
            all.remove(&oldest);
        }
        all.insert(token.clone(), Arc::new(visitor));
        Ok(token)
    }

    /// Forgets the visitor holding `token`.
    pub fn sign_out(&self, visitor: &Visitor) {
        let mut all = self.by_token.lock().unwrap_or_else(|e| e.into_inner());
        all.retain(|_, v| !std::ptr::eq(v.as_ref(), visitor));
    }
}

/// 32 random bytes, hex.
fn token() -> String {
    let mut bytes = [0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The SCRAM-SHA-256 conversation a driver runs, on `visitor`'s connection.
async fn authenticate(
    ctx: &Arc<NodeContext>,
    visitor: &Visitor,
    user: &str,
    db: &str,
    password: &str,
) -> Result<(), String> {
    const REFUSED: &str = "Authentication failed.";
    let mech = Mechanism::Sha256;
    let prepared = scram::prepared_password(mech, user, password).map_err(|e| e.to_string())?;
    let binary = |bytes: Vec<u8>| bson::Binary {
        subtype: bson::spec::BinarySubtype::Generic,
        bytes,
    };
    let payload = |reply: &bson::Document| -> Result<Vec<u8>, String> {
        if let Some(error) = failure(reply) {
            return Err(error);
        }
        match reply.get("payload") {
            Some(bson::Bson::Binary(b)) => Ok(b.bytes.clone()),
            _ => Err(REFUSED.to_owned()),
        }
    };
    let (mut conversation, first) = ClientConversation::start(mech, user, &prepared);
    let start = rawdoc! {
        "saslStart": 1,
        "mechanism": mech.name(),
        "payload": binary(first),
        "options": { "skipEmptyExchange": true },
    };
    let reply = visitor.run(ctx, db, start).await;
    let conversation_id = match reply.get("conversationId") {
        Some(bson::Bson::Int32(n)) => *n,
        _ => 1,
    };
    let client_final = conversation
        .prove(&payload(&reply)?)
        .map_err(|_| REFUSED.to_owned())?;
    let proof = rawdoc! {
        "saslContinue": 1,
        "conversationId": conversation_id,
        "payload": binary(client_final),
    };
    let reply = visitor.run(ctx, db, proof).await;
    conversation
        .verify(&payload(&reply)?)
        .map_err(|_| REFUSED.to_owned())?;
    match (reply.get_bool("done"), visitor.conn.auth.user()) {
        (Ok(true), Some(_)) => Ok(()),
        _ => Err(REFUSED.to_owned()),
    }
}
