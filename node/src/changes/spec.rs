//! What a `$changeStream` stage asks for: what it watches (one collection,
//! a database, the whole set), where it starts, and what its events carry;
//! checked as mongod checks them, with its codes.

use bson::{RawBsonRef, RawDocument};
use ebb_lang::encoding::display::type_name;

use super::token::{Token, ts_of};
use crate::error::{CommandError, CommandResult, codes};

/// What a stream watches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    Collection {
        db: String,
        coll: String,
    },
    Database(String),
    /// Every database but `admin`, `config` and `local`.
    Cluster,
}

impl Scope {
    /// Whether a change to `db.coll` is in the stream. Collections named
    /// `system.*` never are, as in mongod.
    pub fn covers(&self, db: &str, coll: &str) -> bool {
        match self {
            Scope::Collection { db: d, coll: c } => d == db && c == coll,
            Scope::Database(d) => d == db && !coll.starts_with("system."),
            Scope::Cluster => {
                !matches!(db, "admin" | "config" | "local") && !coll.starts_with("system.")
            }
        }
    }

    /// The namespace its cursor answers for (`getMore`'s).
    pub fn cursor_ns(&self) -> String {
        match self {
            Scope::Collection { db, coll } => format!("{db}.{coll}"),
            Scope::Database(db) => format!("{db}.$cmd.aggregate"),
            Scope::Cluster => "admin.$cmd.aggregate".to_owned(),
        }
    }
}

/// `fullDocument`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FullDocument {
    Default,
    UpdateLookup,
    WhenAvailable,
    Required,
}

/// `fullDocumentBeforeChange`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BeforeChange {
    Off,
    WhenAvailable,
    Required,
}

/// Where a stream starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Start {
    /// After everything applied when it opens.
    Now,
    /// After a token (`resumeAfter`, `startAfter`).
    After(Token),
    /// At the first change at or after a time (`startAtOperationTime`).
    At(u64),
}

/// A parsed `$changeStream` stage.
#[derive(Debug, Clone)]
pub struct Spec {
    pub full_document: FullDocument,
    pub before_change: BeforeChange,
    pub start: Start,
    /// ebb's own `showExpiryOrigin`: TTL deletes carry `expiredBy`.
    pub show_expiry: bool,
    /// `showExpandedEvents`: catalog changes are events too, and events
    /// carry `collectionUUID`.
    pub expanded: bool,
    pub all_for_cluster: bool,
}

const STAGE: &str = "$changeStream";

/// Parses the stage's document.
pub fn parse(spec: RawBsonRef<'_>) -> CommandResult<Spec> {
    let RawBsonRef::Document(spec) = spec else {
        return Err(CommandError::new(
            codes::TYPE_MISMATCH,
            format!(
                "the $changeStream stage specification must be an object, not {}",
                type_name(&spec)
            ),
        ));
    };
    let mut out = Spec {
        full_document: FullDocument::Default,
        before_change: BeforeChange::Off,
        start: Start::Now,
        show_expiry: false,
        expanded: false,
        all_for_cluster: false,
    };
    let (mut resume_after, mut start_after, mut at) = (None, None, None);
    for el in spec.iter() {
        let (key, value) = el?;
        match key.as_str() {
            "fullDocument" => {
                out.full_document = match enumeration(key.as_str(), value)? {
                    "default" => FullDocument::Default,
                    "updateLookup" => FullDocument::UpdateLookup,
                    "whenAvailable" => FullDocument::WhenAvailable,
                    "required" => FullDocument::Required,
                    other => return Err(bad_enum(key.as_str(), other)),
                }
            }
            "fullDocumentBeforeChange" => {
                out.before_change = match enumeration(key.as_str(), value)? {
                    "off" => BeforeChange::Off,
                    "whenAvailable" => BeforeChange::WhenAvailable,
                    "required" => BeforeChange::Required,
                    other => return Err(bad_enum(key.as_str(), other)),
                }
            }
            "resumeAfter" => match Token::parse(value)? {
                Token::Invalidate { .. } => {
                    return Err(CommandError::new(
                        codes::INVALID_RESUME_TOKEN,
                        "Attempting to resume a change stream using 'resumeAfter' is not \
                         allowed from an invalidate notification.",
                    ));
                }
                t => resume_after = Some(t),
            },
            "startAfter" => start_after = Some(Token::parse(value)?),
            "startAtOperationTime" => match value {
                RawBsonRef::Timestamp(t) => at = Some(ts_of(t)),
                other => return Err(wrong_type(key.as_str(), &other, "type 'timestamp'")),
            },
            "showExpandedEvents" => out.expanded = boolean(key.as_str(), value)?,
            "allChangesForCluster" => out.all_for_cluster = boolean(key.as_str(), value)?,
            "showExpiryOrigin" => out.show_expiry = boolean(key.as_str(), value)?,
            // Events of system collections and of chunk migrations are
            // mongod's internals: ebb has no such events to show.
            "showSystemEvents" | "showMigrationEvents" => {
                if boolean(key.as_str(), value)? {
                    return Err(CommandError::new(
                        codes::INVALID_OPTIONS,
                        format!("$changeStream.{key} is not supported by ebb"),
                    ));
                }
            }
            other => {
                return Err(CommandError::new(
                    codes::UNKNOWN_FIELD,
                    format!("BSON field '{STAGE}.{other}' is an unknown field."),
                ));
            }
        }
    }
    out.start = match (resume_after, start_after, at) {
        (Some(_), Some(_), _) => {
            return Err(CommandError::new(
                codes::CHANGE_STREAM_BOTH_TOKENS,
                "Do not specify both 'startAfter' and 'resumeAfter' as resume options",
            ));
        }
        (Some(_), None, Some(_)) | (None, Some(_), Some(_)) => {
            return Err(CommandError::new(
                codes::CHANGE_STREAM_TWO_STARTS,
                "Only one type of resume option is allowed, but multiple were found.",
            ));
        }
        (Some(t), None, None) | (None, Some(t), None) => Start::After(t),
        (None, None, Some(ts)) => Start::At(ts),
        (None, None, None) => Start::Now,
    };
    Ok(out)
}

/// What a stream opened with `aggregate` on `db` (`coll`, or `None` for
/// `aggregate: 1`) watches, or mongod's refusal.
pub fn scope(db: &str, coll: Option<&str>, spec: &Spec) -> CommandResult<Scope> {
    if spec.all_for_cluster {
        if db != "admin" || coll.is_some() {
            return Err(CommandError::new(
                codes::INVALID_OPTIONS,
                "A $changeStream with 'allChangesForCluster:true' may only be opened on the \
                 'admin' database, and with no collection name",
            ));
        }
        return Ok(Scope::Cluster);
    }
    if matches!(db, "admin" | "config" | "local") {
        return Err(CommandError::new(
            codes::INVALID_NAMESPACE,
            format!("$changeStream may not be opened on the internal {db} database"),
        ));
    }
    Ok(match coll {
        Some(c) if c.starts_with("system.") => {
            return Err(CommandError::new(
                codes::INVALID_NAMESPACE,
                format!("$changeStream may not be opened on the internal {db}.{c} collection"),
            ));
        }
        Some(c) => Scope::Collection {
            db: db.to_owned(),
            coll: c.to_owned(),
        },
        None => Scope::Database(db.to_owned()),
    })
}

fn enumeration<'a>(field: &str, value: RawBsonRef<'a>) -> CommandResult<&'a str> {
    match value {
        RawBsonRef::String(s) => Ok(s),
        other => Err(wrong_type(field, &other, "type 'string'")),
    }
}

fn boolean(field: &str, value: RawBsonRef<'_>) -> CommandResult<bool> {
    match value {
        RawBsonRef::Boolean(b) => Ok(b),
        other => Err(wrong_type(field, &other, "type 'bool'")),
    }
}

fn wrong_type(field: &str, got: &RawBsonRef<'_>, expected: &str) -> CommandError {
    CommandError::new(
        codes::TYPE_MISMATCH,
        format!(
            "BSON field '{STAGE}.{field}' is the wrong type '{}', expected {expected}",
            type_name(got)
        ),
    )
}

fn bad_enum(field: &str, value: &str) -> CommandError {
    CommandError::bad_value(format!(
        "Enumeration value '{value}' for field '{STAGE}.{field}' is not a valid value."
    ))
}

/// Whether a stage after `$changeStream` is one mongod allows there.
pub fn follows(stage: &RawDocument) -> CommandResult<()> {
    let name = stage
        .iter()
        .next()
        .and_then(Result::ok)
        .map(|(k, _)| k.as_str())
        .unwrap_or("");
    match name {
        "$match" | "$project" | "$addFields" | "$set" | "$unset" | "$replaceRoot"
        | "$replaceWith" | "$redact" => Ok(()),
        "$changeStream" => Err(CommandError::new(
            codes::FIRST_STAGE_ONLY,
            "$changeStream is only valid as the first stage in a pipeline",
        )),
        other => Err(CommandError::new(
            codes::ILLEGAL_OPERATION,
            format!("{other} is not permitted in a $changeStream pipeline"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use bson::{RawBsonRef, rawdoc};

    use super::{FullDocument, Scope, Start, parse, scope};

    fn spec(doc: bson::RawDocumentBuf) -> crate::error::CommandResult<super::Spec> {
        parse(RawBsonRef::Document(&doc))
    }

    #[test]
    fn options_are_read_and_checked() {
        let s = spec(rawdoc! { "fullDocument": "updateLookup" }).unwrap();
        assert_eq!(s.full_document, FullDocument::UpdateLookup);
        assert_eq!(s.start, Start::Now);
        assert_eq!(spec(rawdoc! { "fullDocument": "x" }).unwrap_err().code, 2);
        assert_eq!(spec(rawdoc! { "fullDocument": 1 }).unwrap_err().code, 14);
        assert_eq!(spec(rawdoc! { "nope": 1 }).unwrap_err().code, 40415);
        let at = bson::Timestamp {
            time: 5,
            increment: 1,
        };
        assert_eq!(
            spec(rawdoc! { "startAtOperationTime": at }).unwrap().start,
            Start::At(5 << 32 | 1)
        );
    }

    #[test]
    fn scopes_follow_mongod() {
        let s = spec(rawdoc! {}).unwrap();
        assert_eq!(
            scope("db", Some("c"), &s).unwrap(),
            Scope::Collection {
                db: "db".into(),
                coll: "c".into()
            }
        );
        assert_eq!(scope("admin", None, &s).unwrap_err().code, 73);
        assert_eq!(scope("db", Some("system.js"), &s).unwrap_err().code, 73);
        let all = spec(rawdoc! { "allChangesForCluster": true }).unwrap();
        assert_eq!(scope("admin", None, &all).unwrap(), Scope::Cluster);
        assert_eq!(scope("db", None, &all).unwrap_err().code, 72);
        assert!(Scope::Cluster.covers("db", "c"));
        assert!(!Scope::Cluster.covers("config", "c"));
        assert!(!Scope::Database("db".into()).covers("db", "system.views"));
    }
}
