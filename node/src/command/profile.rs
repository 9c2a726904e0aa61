//! `profile`: reads and sets the database profiler (`crate::profile`):
//! the database's level (-1 only reads), the node-wide `slowms` and
//! `sampleRate`, the database's `filter` (a document, or `"unset"`).
//! The reply holds the settings as they were, as mongod's does.

use bson::{Bson, Document, RawBsonRef, doc};
use ebb_lang::query::filter::Filter;

use super::{Request, ok};
use crate::args::{Args, as_f64, is_number};
use crate::error::{CommandError, CommandResult};
use crate::profile::settings::Change;

pub async fn profile(req: Request) -> CommandResult {
    let args = Args::parse(&req.body, &["slowms", "sampleRate", "filter"])?;
    let level = match args.command_value() {
        v if is_number(&v) => as_f64(v).unwrap_or(f64::NAN),
        other => return Err(args.wrong_type("profile", &other, "type 'long'")),
    };
    if ![-1.0, 0.0, 1.0, 2.0].contains(&level) {
        return Err(CommandError::bad_value(format!(
            "Invalid profiling level: {level}"
        )));
    }
    let slow_ms = args.i64("slowms")?;
    let sample_rate = match args.get("sampleRate") {
        None => None,
        Some(v) if is_number(&v) => match as_f64(v) {
            Some(r) if (0.0..=1.0).contains(&r) => Some(r),
            _ => {
                return Err(CommandError::bad_value(
                    "'sampleRate' must be between 0.0 and 1.0 inclusive",
                ));
            }
        },
        Some(other) => return Err(args.wrong_type("sampleRate", &other, "type 'double'")),
    };
    let filter = match args.get("filter") {
        None => None,
        Some(RawBsonRef::String("unset")) => Some(None),
        Some(RawBsonRef::Document(d)) => Some(Some((Document::try_from(d)?, Filter::parse(d)?))),
        Some(other) => {
            return Err(args.wrong_type("filter", &other, "types '[object, string]'"));
        }
    };
    let change = Change {
        level: (level >= 0.0).then_some(level as i32),
        slow_ms,
        sample_rate,
        filter,
    };
    let was = req.node.profiler.change(&req.db, change);
    let mut reply = doc! {
        "was": was.level,
        "slowms": was.slow_ms,
        "sampleRate": was.sample_rate,
    };
    if let Some(filter) = was.filter {
        reply.insert("filter", Bson::Document(filter));
        reply.insert(
            "note",
            "When a filter expression is set, slowms and sampleRate are not used for profiling and slow-query log lines.",
        );
    }
    ok(reply)
}
