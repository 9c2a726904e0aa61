//! The page's HTML: escaping, number and time formatting, and the layout
//! every view shares (one inline style sheet, no script, nothing fetched
//! from elsewhere).

use std::fmt::Write;

/// `s` safe inside HTML text and double-quoted attributes.
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// `n` with thousands separated by commas.
pub fn num(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A duration in seconds as people read it: `90` is "1 min 30 s".
pub fn seconds(secs: i64) -> String {
    if secs < 0 {
        return format!("{secs} s");
    }
    let (d, h, m, s) = (
        secs / 86_400,
        secs % 86_400 / 3600,
        secs % 3600 / 60,
        secs % 60,
    );
    let mut out = String::new();
    for (v, unit) in [(d, "d"), (h, "h"), (m, "min"), (s, "s")] {
        if v > 0 {
            if !out.is_empty() {
                out.push(' ');
            }
            let _ = write!(out, "{v} {unit}");
        }
    }
    if out.is_empty() { "0 s".into() } else { out }
}

/// A time on the node's clock, UTC, to the second.
pub fn time(millis: i64) -> String {
    bson::DateTime::from_millis(millis - millis.rem_euclid(1000))
        .try_to_rfc3339_string()
        .map(|s| s.replace('T', " "))
        .unwrap_or_else(|_| millis.to_string())
}

/// A query string's value, encoded.
pub fn query_value(s: &str) -> String {
    form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

/// The link to one collection's view.
pub fn collection_link(db: &str, coll: &str) -> String {
    format!(
        "/expiry/collection?db={}&amp;coll={}",
        query_value(db),
        query_value(coll)
    )
}

const STYLE: &str = "
body{font:14px/1.45 system-ui,sans-serif;margin:0;color:#1d232a;background:#f6f7f9}
header{background:#1d3b53;color:#fff;padding:10px 24px;display:flex;gap:16px;align-items:center}
header a{color:#fff;text-decoration:none;font-weight:600}
header .who{margin-left:auto;display:flex;gap:10px;align-items:center}
main{padding:16px 24px;max-width:1200px}
h1{font-size:20px;margin:8px 0 12px}h2{font-size:16px;margin:20px 0 8px}
table{border-collapse:collapse;background:#fff;width:100%;margin-bottom:8px}
th,td{border:1px solid #dde1e6;padding:4px 8px;text-align:left;vertical-align:top}
th{background:#eef1f4;font-weight:600}td.n{text-align:right;font-variant-numeric:tabular-nums}
.charts{display:flex;flex-wrap:wrap;gap:16px}
figure{margin:0;background:#fff;border:1px solid #dde1e6;padding:8px}
figcaption{font-weight:600;margin-bottom:4px}
.note{color:#5a6570}.warn{color:#9a4b00}.err{color:#b00020;font-weight:600}
.ok{color:#1b6e20;font-weight:600}
form.inline{display:inline}textarea{width:100%;font-family:monospace}
input,select,button,textarea{font-size:14px}
button{padding:3px 12px}
.bar{fill:#3a7bbf}.bar.due{fill:#c0392b}.line{fill:none;stroke:#3a7bbf;stroke-width:1.5}
.axis{stroke:#9aa5b1;stroke-width:1}svg text{font-size:11px;fill:#5a6570}
";

/// Who is looking, as the header shows it.
pub struct Viewer<'a> {
    /// The signed-in user (`user@db`), None without authorization.
    pub user: Option<&'a str>,
    /// The form token a sign-out needs.
    pub csrf: &'a str,
}

/// A whole page: the header, `body`, and how long the server took.
pub fn page(title: &str, viewer: &Viewer<'_>, body: &str) -> String {
    let who = match viewer.user {
        Some(user) => format!(
            "<span class=\"who\"><span id=\"user\">{}</span>\
             <form class=\"inline\" method=\"post\" action=\"/expiry/logout\">\
             <input type=\"hidden\" name=\"csrf\" value=\"{}\">\
             <button>Sign out</button></form></span>",
            esc(user),
            esc(viewer.csrf)
        ),
        None => String::new(),
    };
    format!(
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <title>{} · ebb expiry</title><style>{STYLE}</style></head><body>\
         <header><a href=\"/expiry\">ebb · expiry</a>{who}</header><main>{body}</main></body></html>",
        esc(title)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_escaped_and_numbers_grouped() {
        assert_eq!(
            esc("<a href=\"x\">&'"),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;"
        );
        assert_eq!(num(0), "0");
        assert_eq!(num(999), "999");
        assert_eq!(num(1000), "1,000");
        assert_eq!(num(10_000_000), "10,000,000");
        assert_eq!(seconds(90), "1 min 30 s");
        assert_eq!(seconds(86_400 * 7), "7 d");
        assert_eq!(seconds(0), "0 s");
    }
}
