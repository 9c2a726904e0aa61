//! The node's recent log lines, for `getLog: "global"`: a tracing layer
//! that keeps the last 1,024 events the node logged (what its log filter
//! lets through), each as a line in mongod's structured log shape
//! (`{"t": {"$date": …}, "s": "W", "c": <target>, "ctx": <thread>, "msg":
//! …, "attr": {…}}`), and counts every line written. `ebbd` installs it
//! beside its stderr writer; a node embedded without it answers no lines.

use std::collections::VecDeque;
use std::sync::Mutex;

use serde_json::{Map, Value, json};
use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::layer::{Context, Layer};

/// Lines kept, as mongod's `RecentEntries` keeps them.
const KEPT: usize = 1024;

struct Recent {
    lines: VecDeque<String>,
    written: u64,
}

static RECENT: Mutex<Recent> = Mutex::new(Recent {
    lines: VecDeque::new(),
    written: 0,
});

/// The layer that records into the node's recent lines.
pub struct RecentLog;

/// Every line written so far, and the last ones kept, oldest first.
pub fn lines() -> (u64, Vec<String>) {
    let recent = RECENT.lock().unwrap_or_else(|e| e.into_inner());
    (recent.written, recent.lines.iter().cloned().collect())
}

impl<S: Subscriber> Layer<S> for RecentLog {
    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        let mut fields = Fields::default();
        event.record(&mut fields);
        let meta = event.metadata();
        let severity = match *meta.level() {
            Level::ERROR => "E",
            Level::WARN => "W",
            Level::INFO => "I",
            Level::DEBUG => "D1",
            Level::TRACE => "D2",
        };
        let line = json!({
            "t": { "$date": bson::DateTime::now().try_to_rfc3339_string().unwrap_or_default() },
            "s": severity,
            "c": meta.target(),
            "ctx": std::thread::current().name().unwrap_or("-"),
            "msg": fields.message,
            "attr": fields.attr,
        })
        .to_string();
        let mut recent = RECENT.lock().unwrap_or_else(|e| e.into_inner());
        if recent.lines.len() == KEPT {
            recent.lines.pop_front();
        }
        recent.lines.push_back(line);
        recent.written += 1;
    }
}

/// An event's message and its other fields.
#[derive(Default)]
struct Fields {
    message: String,
    attr: Map<String, Value>,
}

impl Fields {
    fn put(&mut self, field: &Field, value: Value) {
        match (field.name(), value) {
            ("message", Value::String(s)) => self.message = s,
            ("message", other) => self.message = other.to_string(),
            (name, value) => {
                self.attr.insert(name.to_owned(), value);
            }
        }
    }
}

impl Visit for Fields {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.put(field, Value::String(format!("{value:?}")));
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        self.put(field, Value::String(value.to_owned()));
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        self.put(field, json!(value));
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        self.put(field, json!(value));
    }

    fn record_bool(&mut self, field: &Field, value: bool) {
        self.put(field, json!(value));
    }

    fn record_f64(&mut self, field: &Field, value: f64) {
        self.put(field, json!(value));
    }
}
