//! The page's views as HTML: the overview of every database, one
//! collection (its TTL indexes, forecast, a filter explained, a change of
//! `expireAfterSeconds` previewed and applied), and the sign-in form. The
//! collection view asks the node through the same commands a driver
//! would (`explainExpiry`, `expiryForecast`, `collMod`), as the visitor.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::Arc;

use bson::{Bson, Document, rawdoc};

use super::chart::{self, Bar};
use super::history::Point;
use super::html::{collection_link, esc, num, seconds, time};
use super::overview::DatabaseRow;
use super::visitor::{Visitor, failure};
use crate::context::NodeContext;

/// Index keys a forecast on the page reads per TTL index, so a page stays
/// fast on a large collection (past them it says up to when it is whole).
const FORECAST_KEYS: i64 = 300_000;
/// Documents a filter's explanation shows.
pub const EXPLAIN_LIMIT: i64 = 20;

fn never_text(never: &[(&'static str, u64)]) -> String {
    let shown: Vec<String> = never
        .iter()
        .filter(|(_, n)| *n > 0)
        .map(|(why, n)| format!("<span data-reason=\"{why}\">{why}: {}</span>", num(*n)))
        .collect();
    if shown.is_empty() {
        "none".into()
    } else {
        shown.join("<br>")
    }
}

/// The overview: the last hour of expiry, then every database's
/// collections that expire documents.
pub fn overview(
    dbs: &BTreeMap<String, DatabaseRow>,
    history: &[Point],
    now: i64,
    monitor_running: bool,
) -> String {
    let mut out = String::from("<h1>Expiry</h1>");
    let _ = write!(
        out,
        "<p class=\"note\">Node time {} · TTL monitor <span id=\"monitor\">{}</span></p>",
        time(now),
        if monitor_running {
            "running"
        } else {
            "not running"
        }
    );
    out.push_str(&hour_charts(history, now));
    if dbs.is_empty() {
        out.push_str("<p>No databases yet.</p>");
    }
    for (name, db) in dbs {
        let _ = write!(out, "<h2>{}</h2>", esc(name));
        if db.expiring.is_empty() {
            let _ = write!(
                out,
                "<p class=\"note\">{} collections, none expires documents.</p>",
                db.without_expiry
            );
            continue;
        }
        out.push_str(
            "<table class=\"collections\"><tr><th>collection</th><th>TTL index</th>\
             <th>field</th><th>expireAfterSeconds</th><th>documents (estimate)</th>\
             <th>due, not yet deleted</th><th>never expire</th></tr>",
        );
        for coll in &db.expiring {
            let link = format!(
                "<a href=\"{}\">{}</a>",
                collection_link(name, &coll.name),
                esc(&coll.name)
            );
            let docs = num(coll.documents);
            let ns = esc(&format!("{name}.{}", coll.name));
            if let Some(eas) = coll.timeseries_expiry {
                let _ = write!(
                    out,
                    "<tr data-ns=\"{ns}\"><td>{link}</td><td>time series: buckets expire</td><td></td>\
                     <td class=\"n\" data-eas=\"{eas}\">{eas} ({})</td><td class=\"n\">{docs} buckets</td>\
                     <td></td><td></td></tr>",
                    seconds(eas)
                );
                continue;
            }
            for (i, index) in coll.indexes.iter().enumerate() {
                let first = if i == 0 {
                    format!("<td rowspan=\"{}\">{link}</td>", coll.indexes.len())
                } else {
                    String::new()
                };
                let backlog = match index.backlog {
                    (n, true) => format!("≥ {}", num(n)),
                    (n, false) => num(n),
                };
                let never = match &index.never {
                    Some(never) => never_text(never),
                    None => "<span class=\"note\">not counted</span>".into(),
                };
                let _ = write!(
                    out,
                    "<tr data-ns=\"{ns}\" data-index=\"{}\">{first}<td>{}</td><td>{}</td>\
                     <td class=\"n\" data-eas=\"{}\">{} ({})</td><td class=\"n docs\">{docs}</td>\
                     <td class=\"n backlog\">{backlog}</td><td class=\"never\">{never}</td></tr>",
                    esc(&index.name),
                    esc(&index.name),
                    esc(&index.field),
                    index.expire_after_secs,
                    index.expire_after_secs,
                    seconds(index.expire_after_secs),
                );
            }
        }
        out.push_str("</table>");
        if db.without_expiry > 0 {
            let _ = write!(
                out,
                "<p class=\"note\">and {} collections without expiry</p>",
                db.without_expiry
            );
        }
    }
    out
}

/// Deletions per second and the expiry lag over the last hour.
fn hour_charts(history: &[Point], now: i64) -> String {
    let span = (now - 3_600_000, now);
    let deleted: Vec<(i64, Option<f64>)> = history
        .iter()
        .map(|p| (p.at_millis, Some((p.deleted_per_sec * 10.0).round() / 10.0)))
        .collect();
    let lag: Vec<(i64, Option<f64>)> = history
        .iter()
        .map(|p| (p.at_millis, p.lag_millis.map(|l| l as f64)))
        .collect();
    format!(
        "<div class=\"charts\">{}{}</div>",
        chart::line(
            "deletions",
            "Documents expired per second, last hour",
            &deleted,
            span,
            "docs/s",
            ("-60 min", "now"),
        ),
        chart::line(
            "lag",
            "Expiry lag (ms, the latest chunk per 10 s), last hour",
            &lag,
            span,
            "ms",
            ("-60 min", "now"),
        )
    )
}

/// A notice above the collection view: what a form just did.
pub enum Notice {
    /// A dryRun's answer, with the form that applies it.
    Preview {
        index: String,
        secs: i64,
        reply: Document,
    },
    /// What applying the change answered.
    Applied {
        index: String,
        reply: Document,
    },
    Error(String),
}

/// The form a collection view offers for changes, when the visitor may.
pub struct ChangeForm<'a> {
    pub csrf: &'a str,
}

/// One collection: its TTL indexes, the forecast per index, a filter
/// explained, and (with `change`) the form that changes
/// `expireAfterSeconds`.
pub async fn collection(
    ctx: &Arc<NodeContext>,
    visitor: &Visitor,
    db: &str,
    coll: &str,
    filter: &str,
    notice: Option<Notice>,
    change: Option<ChangeForm<'_>>,
) -> String {
    let mut out = format!(
        "<p><a href=\"/expiry\">all databases</a></p><h1 id=\"ns\">{}.{}</h1>",
        esc(db),
        esc(coll)
    );
    if let Some(notice) = notice {
        out.push_str(&notice_html(db, coll, notice, change.as_ref()));
    }
    let Some(handle) = ctx.collection(db, coll) else {
        out.push_str("<p class=\"err\">No such collection.</p>");
        return out;
    };
    if handle.coll.timeseries.is_some() {
        out.push_str(&timeseries(&handle.coll));
        return out;
    }
    let parsed = parse_filter(filter);
    let explain_filter = match &parsed {
        Ok(f) => f.clone(),
        Err(_) => Document::new(),
    };
    let explained = visitor
        .run(
            ctx,
            db,
            rawdoc! {
                "explainExpiry": coll,
                "filter": bson::RawDocumentBuf::try_from(&explain_filter).unwrap_or_default(),
                "limit": EXPLAIN_LIMIT,
                "$readPreference": { "mode": "primaryPreferred" },
            },
        )
        .await;
    if let Some(error) = failure(&explained) {
        let _ = write!(out, "<p class=\"err\" id=\"error\">{}</p>", esc(&error));
        return out;
    }
    let estimate = ctx
        .shared
        .engine
        .stats(handle.coll.records())
        .unwrap_or_default()
        .estimated_keys;
    let indexes = explained
        .get_array("ttlIndexes")
        .cloned()
        .unwrap_or_default();
    let _ = write!(
        out,
        "<p class=\"note\">About {} documents · TTL monitor {}</p>",
        num(estimate),
        monitor_text(&explained)
    );
    if indexes.is_empty() {
        out.push_str("<p>This collection has no TTL index: nothing in it expires.</p>");
    } else {
        out.push_str(&index_table(&indexes));
        out.push_str(&forecast(ctx, visitor, db, coll).await);
        if let Some(form) = &change {
            out.push_str(&change_form(db, coll, &indexes, form));
        }
    }
    out.push_str(&explain_section(db, coll, filter, parsed.err(), &explained));
    out
}

fn monitor_text(explained: &Document) -> &'static str {
    let monitor = explained.get_document("monitor").ok();
    match (
        monitor.and_then(|m| m.get_bool("enabled").ok()),
        monitor.and_then(|m| m.get_bool("running").ok()),
    ) {
        (Some(false), _) => "disabled (ttlMonitorEnabled: false)",
        (_, Some(false)) => "not running here (not a primary)",
        _ => "running",
    }
}

fn index_table(indexes: &[Bson]) -> String {
    let mut out = String::from(
        "<table id=\"indexes\"><tr><th>TTL index</th><th>field</th><th>expireAfterSeconds</th>\
         <th>never expire</th></tr>",
    );
    for index in indexes.iter().filter_map(Bson::as_document) {
        let eas = index.get_i64("expireAfterSeconds").unwrap_or_default();
        let never = match index.get_document("neverExpire") {
            Ok(counts) => {
                let counts: Vec<(&'static str, u64)> = ebb_storage::ttl::never::REASONS
                    .iter()
                    .map(|r| (r.name(), counts.get_i64(r.name()).unwrap_or(0) as u64))
                    .collect();
                never_text(&counts)
            }
            Err(_) => {
                "<span class=\"note\">not counted (the collection has several TTL indexes)</span>"
                    .into()
            }
        };
        let _ = write!(
            out,
            "<tr data-index=\"{}\"><td>{}</td><td>{}</td><td class=\"n\" data-eas=\"{eas}\">{eas} ({})</td>\
             <td class=\"never\">{never}</td></tr>",
            esc(index.get_str("name").unwrap_or("")),
            esc(index.get_str("name").unwrap_or("")),
            esc(index.get_str("field").unwrap_or("")),
            seconds(eas)
        );
    }
    out.push_str("</table>");
    out
}

async fn forecast(ctx: &Arc<NodeContext>, visitor: &Visitor, db: &str, coll: &str) -> String {
    let reply = visitor
        .run(
            ctx,
            db,
            rawdoc! {
                "expiryForecast": coll,
                "maxKeys": FORECAST_KEYS,
                "$readPreference": { "mode": "primaryPreferred" },
            },
        )
        .await;
    if let Some(error) = failure(&reply) {
        return format!("<p class=\"err\">forecast: {}</p>", esc(&error));
    }
    let counts = |d: Option<&Document>, key: &str| -> Vec<u64> {
        d.and_then(|d| d.get_array(key).ok())
            .map(|a| a.iter().map(|v| v.as_i64().unwrap_or(0) as u64).collect())
            .unwrap_or_default()
    };
    let mut out = String::from("<h2>Forecast</h2>");
    for (n, index) in reply
        .get_array("ttlIndexes")
        .cloned()
        .unwrap_or_default()
        .iter()
        .filter_map(Bson::as_document)
        .enumerate()
    {
        let name = index.get_str("name").unwrap_or("");
        let minutes = counts(index.get_document("nextHour").ok(), "perMinute");
        let hours = counts(index.get_document("nextWeek").ok(), "perHour");
        let due = index.get_i64("due").unwrap_or(0) as u64;
        let _ = write!(
            out,
            "<p data-forecast=\"{}\"><b>{}</b>: <span class=\"due\" data-value=\"{due}\">{}</span> due now and \
             not yet deleted; {} in the next hour, {} in the next week.",
            esc(name),
            esc(name),
            num(due),
            num(minutes.iter().sum()),
            num(hours.iter().sum()),
        );
        if index.get_bool("estimated").ok() == Some(true) {
            let through = index
                .get_datetime("countedThrough")
                .map(|d| d.timestamp_millis());
            let _ = write!(
                out,
                " <span class=\"warn\">Counted whole through {}; later bars are estimates from a \
                 sample of the index.</span>",
                through.map(time).unwrap_or_default()
            );
        }
        if index.get_bool("exact").ok() == Some(false) {
            out.push_str(
                " <span class=\"warn\">Entries written before ebb recorded each document's \
                 earliest date may count a document with several dates more than once.</span>",
            );
        }
        out.push_str("</p><div class=\"charts\">");
        let bars = |values: &[u64], unit: &str| -> Vec<Bar> {
            values
                .iter()
                .enumerate()
                .map(|(i, &value)| Bar {
                    label: format!("+{i}–{} {unit}", i + 1),
                    value,
                })
                .collect()
        };
        out.push_str(&chart::bars(
            &format!("minutes-{n}"),
            "Falling due per minute, next hour",
            &bars(&minutes, "min"),
            ("now", "+60 min"),
        ));
        out.push_str(&chart::bars(
            &format!("hours-{n}"),
            "Falling due per hour, next week",
            &bars(&hours, "h"),
            ("now", "+7 d"),
        ));
        out.push_str("</div>");
    }
    out
}

fn change_form(db: &str, coll: &str, indexes: &[Bson], form: &ChangeForm<'_>) -> String {
    let mut options = String::new();
    for index in indexes.iter().filter_map(Bson::as_document) {
        let name = esc(index.get_str("name").unwrap_or(""));
        let _ = write!(options, "<option value=\"{name}\">{name}</option>");
    }
    format!(
        "<h2>Change expireAfterSeconds</h2>\
         <form id=\"change\" method=\"post\" action=\"/expiry/preview\">\
         <input type=\"hidden\" name=\"csrf\" value=\"{}\">\
         <input type=\"hidden\" name=\"db\" value=\"{}\"><input type=\"hidden\" name=\"coll\" value=\"{}\">\
         <select name=\"index\">{options}</select> \
         <input name=\"seconds\" type=\"number\" min=\"0\" required placeholder=\"seconds\"> \
         <button id=\"preview\">Preview</button> \
         <span class=\"note\">Shows what the change makes due at once (collMod dryRun); nothing changes until you apply it.</span>\
         </form>",
        esc(form.csrf),
        esc(db),
        esc(coll)
    )
}

fn notice_html(db: &str, coll: &str, notice: Notice, change: Option<&ChangeForm<'_>>) -> String {
    match notice {
        Notice::Error(e) => format!("<p class=\"err\" id=\"error\">{}</p>", esc(&e)),
        Notice::Preview { index, secs, reply } => {
            if let Some(error) = failure(&reply) {
                return format!("<p class=\"err\" id=\"error\">{}</p>", esc(&error));
            }
            let due = reply.get_i64("dueAtOnce").unwrap_or(0) as u64;
            let of = reply.get_i64("documents").unwrap_or(0) as u64;
            let at_least = reply.get_bool("dueAtOnceIsAtLeast").unwrap_or(false);
            let old = reply
                .get_i64("expireAfterSeconds_old")
                .map(|s| s.to_string())
                .unwrap_or_default();
            let mut out = format!(
                "<div id=\"previewed\"><p>Setting <b>{}</b> from {old} to {secs} seconds makes \
                 <b id=\"due-at-once\" data-value=\"{due}\">{}{}</b> of {} documents due at once.</p>",
                esc(&index),
                if at_least { "at least " } else { "" },
                num(due),
                num(of)
            );
            if let Some(form) = change {
                let _ = write!(
                    out,
                    "<form method=\"post\" action=\"/expiry/apply\">\
                     <input type=\"hidden\" name=\"csrf\" value=\"{}\">\
                     <input type=\"hidden\" name=\"db\" value=\"{}\"><input type=\"hidden\" name=\"coll\" value=\"{}\">\
                     <input type=\"hidden\" name=\"index\" value=\"{}\"><input type=\"hidden\" name=\"seconds\" value=\"{secs}\">\
                     <button id=\"apply\">Apply</button> <a href=\"{}\">cancel</a></form>",
                    esc(form.csrf),
                    esc(db),
                    esc(coll),
                    esc(&index),
                    collection_link(db, coll)
                );
            }
            out.push_str("</div>");
            out
        }
        Notice::Applied { index, reply } => match failure(&reply) {
            Some(error) => format!("<p class=\"err\" id=\"error\">{}</p>", esc(&error)),
            None => {
                let new = reply
                    .get_i64("expireAfterSeconds_new")
                    .or_else(|_| reply.get_i32("expireAfterSeconds_new").map(i64::from))
                    .map(|s| s.to_string())
                    .unwrap_or_default();
                format!(
                    "<p class=\"ok\" id=\"applied\">Index {} now expires documents {new} seconds after their date.</p>",
                    esc(&index)
                )
            }
        },
    }
}

/// The filter box's text as a document: relaxed or canonical Extended JSON.
pub fn parse_filter(text: &str) -> Result<Document, String> {
    if text.trim().is_empty() {
        return Ok(Document::new());
    }
    let json: serde_json::Value =
        serde_json::from_str(text).map_err(|e| format!("the filter is not JSON: {e}"))?;
    match Bson::try_from(json) {
        Ok(Bson::Document(d)) => Ok(d),
        Ok(_) => Err("the filter must be an object".into()),
        Err(e) => Err(format!("the filter is not Extended JSON: {e}")),
    }
}

fn explain_section(
    db: &str,
    coll: &str,
    filter: &str,
    bad_filter: Option<String>,
    explained: &Document,
) -> String {
    let mut out = format!(
        "<h2>Why does a document (not) expire?</h2>\
         <form id=\"explain\" method=\"get\" action=\"/expiry/collection\">\
         <input type=\"hidden\" name=\"db\" value=\"{}\"><input type=\"hidden\" name=\"coll\" value=\"{}\">\
         <textarea name=\"filter\" rows=\"2\" placeholder='{{\"user\": \"ada\"}}'>{}</textarea>\
         <button>Explain</button> <span class=\"note\">A query filter in Extended JSON; \
         the first {EXPLAIN_LIMIT} matching documents are shown (explainExpiry).</span></form>",
        esc(db),
        esc(coll),
        esc(filter)
    );
    if let Some(e) = bad_filter {
        let _ = write!(out, "<p class=\"err\" id=\"error\">{}</p>", esc(&e));
        return out;
    }
    out.push_str(
        "<table id=\"explained\"><tr><th>_id</th><th>TTL index</th><th>date</th><th>due at</th>\
         <th>expiry</th></tr>",
    );
    let documents = explained
        .get_array("documents")
        .cloned()
        .unwrap_or_default();
    for d in documents.iter().filter_map(Bson::as_document) {
        let id = d
            .get("_id")
            .map(ebb_lang::encoding::display::shell)
            .unwrap_or_default();
        for e in d
            .get_array("expiry")
            .cloned()
            .unwrap_or_default()
            .iter()
            .filter_map(Bson::as_document)
        {
            let date = e.get_datetime("date").map(|t| time(t.timestamp_millis()));
            let due_at = e.get_datetime("dueAt").map(|t| time(t.timestamp_millis()));
            let verdict = match (e.get_bool("due"), e.get_str("never")) {
                (Ok(true), _) => {
                    "<span class=\"warn\">due now (hidden, deleted next)</span>".to_owned()
                }
                (Ok(false), _) => "expires at its due time".to_owned(),
                (_, Ok(never)) => format!(
                    "<span class=\"err\" data-never=\"{never}\">never: {}</span>",
                    esc(e.get_str("why").unwrap_or(never))
                ),
                _ => String::new(),
            };
            let _ = write!(
                out,
                "<tr><td><code>{}</code></td><td>{}</td><td>{}</td><td>{}</td><td>{verdict}</td></tr>",
                esc(&id),
                esc(e.get_str("index").unwrap_or("")),
                date.unwrap_or_default(),
                due_at.unwrap_or_default(),
            );
        }
    }
    out.push_str("</table>");
    if explained.get_bool("more").unwrap_or(false) {
        let _ = write!(
            out,
            "<p class=\"note\">More documents match; the first {EXPLAIN_LIMIT} are shown.</p>"
        );
    }
    out
}

/// A time series: its buckets expire, by `expireAfterSeconds` after the
/// bucket's newest measurement.
fn timeseries(coll: &ebb_storage::Collection) -> String {
    let eas = coll
        .meta
        .options
        .get("expireAfterSeconds")
        .map(|v| v.to_string());
    let ts = coll.timeseries.as_ref();
    format!(
        "<p>A time-series collection (time field <code>{}</code>): its measurements expire by \
         bucket, once the bucket's newest measurement is <b>{}</b> seconds old \
         (buckets span at most {} s).</p>",
        esc(ts.map_or("", |t| t.time_field.as_str())),
        esc(&eas.unwrap_or_else(|| "never: no expireAfterSeconds".into())),
        ts.map_or(0, |t| t.max_span_secs)
    )
}
