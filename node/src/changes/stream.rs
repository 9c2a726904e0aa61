//! An open change stream: where it is in the change log, and how one batch
//! is read from there: each row in the stream's scope becomes an event in
//! mongod's shape, goes through the stages that follow `$changeStream`,
//! and the batch ends with the token of the last place read
//! (`postBatchResumeToken`), past the rows out of scope or filtered out.

use std::sync::Arc;

use bson::raw::cstr;
use bson::{RawBsonRef, RawDocument, RawDocumentBuf};
use ebb_config::limits::MAX_BSON_OBJECT_BYTES;
use ebb_lang::encoding::collation::Collation;
use ebb_lang::pipeline::{Pipeline, Stage};
use ebb_storage::Collection;
use ebb_storage::changes;
use ebb_storage::engine::{Cf, Direction, Snapshot};

use super::spec::{BeforeChange, FullDocument, Scope, Spec};
use super::token::{Token, timestamp};
use crate::error::{CommandError, CommandResult, codes};

/// Rows one batch reads at most before it answers (with what it found):
/// a stream on a quiet collection of a busy set answers at once too.
const ROWS_PER_BATCH: usize = 20_000;

/// The bytes of events a batch holds at most, as mongod's 16 MiB reply.
const BATCH_BYTES: usize = MAX_BSON_OBJECT_BYTES;

pub struct ChangeStream {
    pub scope: Scope,
    spec: Spec,
    stages: Vec<Stage>,
    collation: Option<Arc<Collation>>,
    /// The first row key not read yet.
    next: Vec<u8>,
    /// Where it has read to: the token of its last batch.
    pub seen: Token,
    /// It met the drop or rename of what it watches and said so with an
    /// `invalidate` event: it ends with this batch.
    pub invalidated: bool,
}

/// The collection named `db`, `coll` now, if there is one (for
/// `updateLookup`).
pub type Collections<'a> = &'a dyn Fn(&str, &str) -> Option<Arc<Collection>>;

/// One batch of events, and the stream.
pub struct Batch {
    pub events: Vec<RawDocumentBuf>,
    pub stream: Box<ChangeStream>,
    /// Every row there was to read was read.
    pub at_end: bool,
}

impl ChangeStream {
    /// A stream from `seen` (the last place it has read) on.
    pub fn new(
        scope: Scope,
        spec: Spec,
        stages: Vec<Stage>,
        collation: Option<Arc<Collation>>,
        seen: Token,
        first_key: [u8; 14],
    ) -> ChangeStream {
        ChangeStream {
            scope,
            spec,
            stages,
            collation,
            next: first_key.to_vec(),
            seen,
            invalidated: false,
        }
    }

    /// Reads up to `max_docs` events on `snap`; `applied` is the time of
    /// the last entry this member had applied before the snapshot was
    /// taken, so every row up to it is there to read.
    pub fn read(
        mut self: Box<Self>,
        collections: Collections<'_>,
        snap: &dyn Snapshot,
        max_docs: usize,
        applied: u64,
    ) -> CommandResult<Batch> {
        check_history(snap, &self.next)?;
        let mut events = Vec::new();
        let mut bytes = 0;
        let mut cursor =
            snap.cursor(Cf::Log, changes::rows_from(&self.next), Direction::Forward)?;
        let mut rows = 0;
        let mut at_end = true;
        while cursor.valid() {
            if events.len() >= max_docs || bytes >= BATCH_BYTES || rows >= ROWS_PER_BATCH {
                at_end = false;
                break;
            }
            rows += 1;
            let Some((ts, n)) = changes::parse_key(cursor.key()) else {
                return Err(CommandError::internal());
            };
            let row = RawDocument::from_bytes(cursor.value())?;
            let coll = row.get_str("coll").unwrap_or_default();
            let token = Token::Event { ts, n };
            self.seen = token;
            self.next = token.next_key().to_vec();
            if self.scope.covers(row.get_str("db")?, coll) {
                let event = self.event(collections, snap, token, row)?;
                if let Some(out) = event
                    .map(|e| self.through_stages(e, token))
                    .transpose()?
                    .flatten()
                {
                    bytes += out.as_bytes().len();
                    events.push(out);
                }
                if self.invalidated_by(row)? {
                    let token = Token::Invalidate { ts, n };
                    let e = head(token, "invalidate", row)?;
                    if let Some(out) = self.through_stages(e, token)? {
                        events.push(out);
                    }
                    self.seen = token;
                    self.invalidated = true;
                    at_end = false;
                    break;
                }
            }
            cursor.advance();
        }
        cursor.status()?;
        drop(cursor);
        if at_end {
            self.seen = self.seen.max(Token::HighWater { ts: applied });
            self.next = self.seen.next_key().to_vec();
        }
        Ok(Batch {
            events,
            stream: self,
            at_end,
        })
    }

    /// Whether a row ends this stream: the drop or rename of the collection
    /// it watches, the drop of the database it watches.
    fn invalidated_by(&self, row: &RawDocument) -> CommandResult<bool> {
        Ok(matches!(
            (&self.scope, row.get_str("op")?),
            (Scope::Collection { .. }, "drop" | "rename") | (Scope::Database(_), "dropDatabase")
        ))
    }

    /// The event a row says, in mongod's field order; `None` for a catalog
    /// change the stream does not show (without `showExpandedEvents`).
    fn event(
        &self,
        collections: Collections<'_>,
        snap: &dyn Snapshot,
        token: Token,
        row: &RawDocument,
    ) -> CommandResult<Option<RawDocumentBuf>> {
        let db = row.get_str("db")?;
        let op = row.get_str("op")?;
        let kind = match op {
            "i" => "insert",
            "u" => "update",
            "r" => "replace",
            "d" => "delete",
            whole => whole,
        };
        let catalog = matches!(op, "create" | "createIndexes" | "dropIndexes" | "modify");
        if catalog && !self.spec.expanded {
            return Ok(None);
        }
        let mut e = head(token, kind, row)?;
        if op == "dropDatabase" {
            e.append(cstr!("ns"), bson::rawdoc! { "db": db });
            return Ok(Some(e));
        }
        if self.spec.expanded {
            e.append(cstr!("collectionUUID"), row.get_binary("ui")?);
        }
        let coll = row.get_str("coll")?;
        if catalog {
            e.append(cstr!("ns"), bson::rawdoc! { "db": db, "coll": coll });
            e.append(cstr!("operationDescription"), row.get_document("desc")?);
            if op == "create" {
                e.append(cstr!("nsType"), "collection");
            }
            if let Ok(before) = row.get_document("stateBefore") {
                e.append(cstr!("stateBeforeChange"), before);
            }
            return Ok(Some(e));
        }
        if matches!(op, "drop" | "rename") {
            e.append(cstr!("ns"), bson::rawdoc! { "db": db, "coll": coll });
            if let Ok(to) = row.get_document("to") {
                e.append(cstr!("to"), to);
                if self.spec.expanded {
                    e.append(
                        cstr!("operationDescription"),
                        bson::rawdoc! { "to": to.to_owned() },
                    );
                }
            }
            return Ok(Some(e));
        }
        let key = row.get_document("key")?;
        if matches!(op, "i" | "r") {
            e.append(cstr!("fullDocument"), row.get_document("doc")?);
        }
        e.append(cstr!("ns"), bson::rawdoc! { "db": db, "coll": coll });
        e.append(cstr!("documentKey"), key);
        if op == "u" {
            e.append(cstr!("updateDescription"), row.get_document("desc")?);
            let after = match self.spec.full_document {
                FullDocument::Default => None,
                FullDocument::UpdateLookup => Some(lookup(collections, snap, db, coll, key)?),
                FullDocument::WhenAvailable => Some(image(row, "after").map(ToOwned::to_owned)),
                FullDocument::Required => match image(row, "after") {
                    Some(d) => Some(Some(d.to_owned())),
                    None => return Err(missing_image("post", token)),
                },
            };
            match after {
                Some(Some(d)) => e.append(cstr!("fullDocument"), d),
                Some(None) => e.append(cstr!("fullDocument"), bson::RawBson::Null),
                None => {}
            }
        }
        if op != "i" {
            match (self.spec.before_change, image(row, "before")) {
                (BeforeChange::Off, _) => {}
                (_, Some(d)) => e.append(cstr!("fullDocumentBeforeChange"), d),
                (BeforeChange::WhenAvailable, None) => {
                    e.append(cstr!("fullDocumentBeforeChange"), bson::RawBson::Null)
                }
                (BeforeChange::Required, None) => return Err(missing_image("pre", token)),
            }
        }
        if self.spec.show_expiry
            && let Ok(expired) = row.get_document("expired")
        {
            e.append(cstr!("expiredBy"), expired);
        }
        Ok(Some(e))
    }

    /// `event` through the stages after `$changeStream`: `None` when they
    /// filter it out; refused when they change its `_id` (the token).
    fn through_stages(
        &self,
        event: RawDocumentBuf,
        token: Token,
    ) -> CommandResult<Option<RawDocumentBuf>> {
        if self.stages.is_empty() {
            return Ok(Some(event));
        }
        let mut pipeline = Pipeline::new(self.stages.clone()).collated(self.collation.clone());
        pipeline.push(event)?;
        let Some(out) = pipeline.finish()?.into_iter().next() else {
            return Ok(None);
        };
        let kept = matches!(out.get("_id")?, Some(RawBsonRef::Document(id)) if *id == *token.to_document());
        if !kept {
            return Err(CommandError::new(
                codes::CHANGE_STREAM_FATAL_ERROR,
                "Encountered an event whose _id field, which contains the resume token, was \
                 modified by the pipeline. Modifying the _id field of an event makes it \
                 impossible to resume the stream from that point. Only transformations that \
                 retain the unmodified _id field are allowed.",
            ));
        }
        Ok(Some(out))
    }
}

/// The fields every event begins with: its token, its kind, and the time
/// of the row's entry.
fn head(token: Token, kind: &str, row: &RawDocument) -> CommandResult<RawDocumentBuf> {
    let mut e = RawDocumentBuf::new();
    e.append(cstr!("_id"), token.to_document());
    e.append(cstr!("operationType"), kind);
    e.append(cstr!("clusterTime"), timestamp(token.ts()));
    e.append(cstr!("wallTime"), row.get_datetime("wall")?);
    if let (Ok(n), Ok(lsid)) = (row.get_i64("txnNumber"), row.get_document("lsid")) {
        e.append(cstr!("txnNumber"), n);
        e.append(cstr!("lsid"), lsid);
    }
    Ok(e)
}

/// A document image a row carries.
fn image<'a>(row: &'a RawDocument, field: &str) -> Option<&'a RawDocument> {
    row.get_document(field).ok()
}

fn missing_image(which: &str, token: Token) -> CommandError {
    let (kinds, what) = match which {
        "pre" => ("update, delete and replace", "pre-image"),
        _ => ("update", "post-image"),
    };
    CommandError::new(
        codes::NO_MATCHING_DOCUMENT,
        format!(
            "Change stream was configured to require a {what} for all {kinds} events, but \
             the {what} was not found for event: {}",
            token.to_document().get_str("_data").unwrap_or_default()
        ),
    )
}

/// The document's current version, for `updateLookup` (`None`: gone).
fn lookup(
    collections: Collections<'_>,
    snap: &dyn Snapshot,
    db: &str,
    coll: &str,
    key: &RawDocument,
) -> CommandResult<Option<RawDocumentBuf>> {
    let (Some(coll), Some(id)) = (collections(db, coll), key.get("_id")?) else {
        return Ok(None);
    };
    let found = snap.get(coll.records(), &coll.record_key(id))?;
    Ok(found.map(RawDocumentBuf::from_bytes).transpose()?)
}

/// Refuses to read from `next` on when a row at or after it is trimmed
/// away (286): the stream would miss changes.
fn check_history(snap: &dyn Snapshot, next: &[u8]) -> CommandResult<()> {
    match snap.get(Cf::Log, changes::TRIMMED)? {
        Some(last_gone) if next <= last_gone.as_slice() => Err(CommandError::new(
            codes::CHANGE_STREAM_HISTORY_LOST,
            "Resume of change stream was not possible, as the resume point may no longer be \
             in the oplog.",
        )),
        _ => Ok(()),
    }
}
