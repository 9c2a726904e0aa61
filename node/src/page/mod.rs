//! The expiry page, served under `/expiry` by the operators' HTTP
//! listener (`http.rs`): every database's collections that expire
//! documents, with their TTL indexes, documents, due backlog and
//! never-expiring counts; the last hour of deletions and expiry lag; and
//! per collection, the forecast as bar charts, a filter explained, and a
//! change of `expireAfterSeconds` that is previewed (`collMod` with
//! `dryRun`) before it is applied.
//!
//! Server-rendered HTML and SVG, no script, nothing fetched from
//! elsewhere. Read-only unless authorization is enabled and the signed-in
//! user's roles grant `collMod` (`visitor.rs`); every read and change goes
//! through command dispatch as that user.
//!
//! - `history`: the last hour of expiry, sampled in memory.
//! - `overview`: what the overview reads from the catalog.
//! - `views`, `chart`, `html`: the HTML and SVG.
//! - `visitor`: signing in, the visitors' connections and tokens.

mod chart;
mod history;
mod html;
mod overview;
mod views;
mod visitor;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

use ebb_config::Authorization;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::{Bytes, Incoming};
use hyper::{Method, Request, Response, StatusCode};
use tokio::sync::watch;

use crate::auth::check;
use crate::auth::privileges::{self, Action, Resource};
use crate::context::NodeContext;
use html::{Viewer, esc};
use views::{ChangeForm, Notice};
use visitor::{Previewed, Visitor, Visitors};

/// The largest form body the page reads.
const MAX_FORM_BYTES: usize = 64 * 1024;

/// The page's state: who is signed in and the last hour of expiry.
pub struct Page {
    visitors: Visitors,
    history: Arc<history::History>,
}

impl Page {
    /// The page, sampling the node's expiry until `stop` turns true.
    pub fn start(ctx: &Arc<NodeContext>, stop: watch::Receiver<bool>) -> Arc<Page> {
        let history = Arc::new(history::History::new(ctx));
        tokio::spawn(history::sample(ctx.clone(), history.clone(), stop));
        Arc::new(Page {
            visitors: Visitors::default(),
            history,
        })
    }
}

type Answer = Response<Full<Bytes>>;

fn respond(status: StatusCode, body: String, started: Instant) -> Answer {
    let mut r = Response::new(Full::new(Bytes::from(body)));
    *r.status_mut() = status;
    let headers = r.headers_mut();
    headers.insert(
        "content-type",
        hyper::header::HeaderValue::from_static("text/html; charset=utf-8"),
    );
    headers.insert(
        "cache-control",
        hyper::header::HeaderValue::from_static("no-store"),
    );
    // Nothing on the page runs script or loads from elsewhere.
    headers.insert(
        "content-security-policy",
        hyper::header::HeaderValue::from_static(
            "default-src 'none'; style-src 'unsafe-inline'; img-src 'self'; form-action 'self'; frame-ancestors 'none'",
        ),
    );
    headers.insert(
        "x-content-type-options",
        hyper::header::HeaderValue::from_static("nosniff"),
    );
    // How long the server took, for the browser's timing panel and benchmarks.
    if let Ok(v) = hyper::header::HeaderValue::from_str(&format!(
        "render;dur={:.1}",
        started.elapsed().as_secs_f64() * 1000.0
    )) {
        headers.insert("server-timing", v);
    }
    r
}

fn redirect(to: &str, cookie: Option<String>) -> Answer {
    let mut r = Response::new(Full::new(Bytes::new()));
    *r.status_mut() = StatusCode::SEE_OTHER;
    if let Ok(v) = hyper::header::HeaderValue::from_str(to) {
        r.headers_mut().insert("location", v);
    }
    if let Some(c) = cookie.and_then(|c| hyper::header::HeaderValue::from_str(&c).ok()) {
        r.headers_mut().insert("set-cookie", c);
    }
    r
}

/// The pairs of a query string or form body.
fn pairs(bytes: &[u8]) -> Vec<(String, String)> {
    form_urlencoded::parse(bytes).into_owned().collect()
}

fn field<'a>(pairs: &'a [(String, String)], name: &str) -> &'a str {
    pairs
        .iter()
        .find(|(k, _)| k == name)
        .map_or("", |(_, v)| v.as_str())
}

/// Answers a request for a path under `/expiry`.
pub async fn answer(
    page: &Page,
    ctx: &Arc<NodeContext>,
    peer: SocketAddr,
    tls: bool,
    req: Request<Incoming>,
) -> Answer {
    let started = Instant::now();
    let auth = ctx.config.security.authorization == Authorization::Enabled;
    let method = req.method().clone();
    let path = req.uri().path().to_owned();
    let query = pairs(req.uri().query().unwrap_or("").as_bytes());
    let cookies = req
        .headers()
        .get("cookie")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let form = if method == Method::POST {
        match Limited::new(req.into_body(), MAX_FORM_BYTES)
            .collect()
            .await
        {
            Ok(body) => pairs(&body.to_bytes()),
            Err(_) => {
                return respond(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    "form too large".into(),
                    started,
                );
            }
        }
    } else {
        Vec::new()
    };
    match (&method, path.as_str()) {
        (&Method::GET, "/expiry/login") if auth => {
            return respond(StatusCode::OK, sign_in_page(None), started);
        }
        (&Method::GET, "/expiry/login") => return redirect("/expiry", None),
        (&Method::POST, "/expiry/login") if auth => {
            let (user, db) = (field(&form, "user"), field(&form, "db"));
            let db = if db.is_empty() { "admin" } else { db };
            return match page
                .visitors
                .sign_in(ctx, peer, user, db, field(&form, "password"))
                .await
            {
                Ok(token) => {
                    let secure = if tls { "; Secure" } else { "" };
                    let cookie = format!(
                        "{}={token}; Path=/expiry; HttpOnly; SameSite=Strict{secure}",
                        visitor::COOKIE
                    );
                    redirect("/expiry", Some(cookie))
                }
                Err(e) => respond(StatusCode::UNAUTHORIZED, sign_in_page(Some(&e)), started),
            };
        }
        _ => {}
    }
    let visitor = if auth {
        match page.visitors.find(cookies.as_deref()) {
            Some(v) => v,
            None => return redirect("/expiry/login", None),
        }
    } else {
        Visitor::anonymous(peer)
    };
    if method == Method::POST && (!auth || field(&form, "csrf") != visitor.csrf) {
        return respond(
            StatusCode::FORBIDDEN,
            "<p>This form is out of date: reload the page and try again.</p>".into(),
            started,
        );
    }
    let viewer = Viewer {
        user: visitor.user.as_deref(),
        csrf: &visitor.csrf,
    };
    let body = match (&method, path.as_str()) {
        (&Method::GET, "/expiry" | "/expiry/") => {
            let roles = match check::visible_databases(ctx, &visitor.conn.auth, None).await {
                Ok(roles) => roles,
                Err(e) => return respond(StatusCode::FORBIDDEN, esc(&e.errmsg), started),
            };
            let shows = |db: &str| roles.as_ref().is_none_or(|r| check::shows_database(r, db));
            match overview::read(ctx, shows).await {
                Ok(dbs) => {
                    let now = ctx.shared.clock.now_millis();
                    let running = ctx
                        .shared
                        .ttl
                        .running
                        .load(std::sync::atomic::Ordering::Relaxed);
                    let points = page.history.points(ctx);
                    html::page(
                        "Expiry",
                        &viewer,
                        &views::overview(&dbs, &points, now, running),
                    )
                }
                Err(e) => html::page(
                    "Expiry",
                    &viewer,
                    &format!("<p class=\"err\">{}</p>", esc(&e.errmsg)),
                ),
            }
        }
        (&Method::GET, "/expiry/collection") => {
            let (db, coll) = (field(&query, "db"), field(&query, "coll"));
            let change = may_change(ctx, &visitor, db).await;
            let body = views::collection(
                ctx,
                &visitor,
                db,
                coll,
                field(&query, "filter"),
                None,
                change.then_some(ChangeForm {
                    csrf: &visitor.csrf,
                }),
            )
            .await;
            html::page(&format!("{db}.{coll}"), &viewer, &body)
        }
        (&Method::POST, "/expiry/preview" | "/expiry/apply") => {
            let (db, coll, index) = (
                field(&form, "db"),
                field(&form, "coll"),
                field(&form, "index"),
            );
            let notice = match field(&form, "seconds").trim().parse::<i64>() {
                Err(_) => {
                    Notice::Error("expireAfterSeconds must be a whole number of seconds".into())
                }
                Ok(secs) => change(ctx, &visitor, &path, db, coll, index, secs).await,
            };
            let change = may_change(ctx, &visitor, db).await;
            let body = views::collection(
                ctx,
                &visitor,
                db,
                coll,
                "",
                Some(notice),
                change.then_some(ChangeForm {
                    csrf: &visitor.csrf,
                }),
            )
            .await;
            html::page(&format!("{db}.{coll}"), &viewer, &body)
        }
        (&Method::POST, "/expiry/logout") => {
            page.visitors.sign_out(&visitor);
            let cookie = format!("{}=; Path=/expiry; Max-Age=0", visitor::COOKIE);
            return redirect("/expiry/login", Some(cookie));
        }
        _ => return respond(StatusCode::NOT_FOUND, "not found".into(), started),
    };
    respond(StatusCode::OK, body, started)
}

/// Previews (`/expiry/preview`) or applies (`/expiry/apply`) a new
/// `expireAfterSeconds`; applying needs the same change previewed first.
async fn change(
    ctx: &Arc<NodeContext>,
    visitor: &Visitor,
    path: &str,
    db: &str,
    coll: &str,
    index: &str,
    secs: i64,
) -> Notice {
    let wanted = Previewed {
        db: db.into(),
        coll: coll.into(),
        index: index.into(),
        secs,
    };
    let dry_run = path == "/expiry/preview";
    if !dry_run {
        let previewed = visitor
            .previewed
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if previewed.as_ref() != Some(&wanted) {
            return Notice::Error(
                "Preview the change first: the page applies only the change it last previewed."
                    .into(),
            );
        }
    }
    let mut body = bson::rawdoc! {
        "collMod": coll,
        "index": { "name": index, "expireAfterSeconds": secs },
    };
    if dry_run {
        body.append(bson::cstr!("dryRun"), true);
    }
    let reply = visitor.run(ctx, db, body).await;
    if dry_run {
        if visitor::failure(&reply).is_none() {
            *visitor.previewed.lock().unwrap_or_else(|e| e.into_inner()) = Some(wanted);
        }
        Notice::Preview {
            index: index.into(),
            secs,
            reply,
        }
    } else {
        Notice::Applied {
            index: index.into(),
            reply,
        }
    }
}

/// Whether the visitor's roles grant `collMod` on database `db` (the
/// command checks again when it runs).
async fn may_change(ctx: &NodeContext, visitor: &Visitor, db: &str) -> bool {
    if ctx.config.security.authorization == Authorization::Disabled {
        return false;
    }
    let Ok(Some(user)) = check::current_user(ctx, &visitor.conn.auth).await else {
        return false;
    };
    user.roles.iter().any(|r| {
        privileges::grants(
            &r.role,
            &r.db,
            &Resource::Db(db.to_owned()),
            Action::CollMod,
        )
    })
}

fn sign_in_page(error: Option<&str>) -> String {
    let error = error
        .map(|e| format!("<p class=\"err\" id=\"error\">{}</p>", esc(e)))
        .unwrap_or_default();
    html::page(
        "Sign in",
        &Viewer {
            user: None,
            csrf: "",
        },
        &format!(
            "<h1>Sign in</h1>{error}<p class=\"note\">With an ebb user (SCRAM-SHA-256).</p>\
             <form id=\"login\" method=\"post\" action=\"/expiry/login\">\
             <p><label>User <input name=\"user\" autocomplete=\"username\" required></label></p>\
             <p><label>Password <input name=\"password\" type=\"password\" autocomplete=\"current-password\" required></label></p>\
             <p><label>Authentication database <input name=\"db\" value=\"admin\"></label></p>\
             <p><button id=\"sign-in\">Sign in</button></p></form>"
        ),
    )
}
