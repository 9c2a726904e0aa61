//! A database's views as its `system.views` holds them: each a document
//! `{_id: "<db>.<view>", viewOn, pipeline, collation?}`, as mongod keeps
//! them. A name is a view only when no collection has it; [`resolve`]
//! follows the chain of views down to a collection (at most 20), the
//! stages of the view nearest the collection first.

use bson::{Bson, Document, RawArrayBuf, RawBsonRef, RawDocument, RawDocumentBuf, doc};
use ebb_lang::encoding::collation::Collation;
use ebb_storage::engine::{Direction, KeyRange};

use crate::context::NodeContext;
use crate::error::{CommandError, CommandResult, codes};

/// The collection a database's views are kept in.
pub const VIEWS: &str = "system.views";

/// mongod's limit on a chain of views.
pub const MAX_DEPTH: usize = 20;

/// One view, as its document defines it.
#[derive(Debug, Clone)]
pub struct View {
    pub name: String,
    pub view_on: String,
    pub pipeline: Vec<RawDocumentBuf>,
    /// Its default collation, resolved; None for the simple one.
    pub collation: Option<Document>,
}

impl View {
    /// The view a document of `db.system.views` defines.
    pub fn read(doc: &RawDocument, db: &str) -> Option<View> {
        let id = doc.get_str("_id").ok()?;
        let name = id.strip_prefix(db)?.strip_prefix('.')?;
        let pipeline = match doc.get_array("pipeline") {
            Ok(stages) => stages
                .into_iter()
                .filter_map(|s| s.ok()?.as_document().map(RawDocument::to_owned))
                .collect(),
            Err(_) => Vec::new(),
        };
        Some(View {
            name: name.to_owned(),
            view_on: doc.get_str("viewOn").ok()?.to_owned(),
            pipeline,
            collation: doc
                .get_document("collation")
                .ok()
                .and_then(|c| Document::try_from(c).ok()),
        })
    }

    /// The document `listCollections` shows for it.
    pub fn described(&self) -> Document {
        let mut options = doc! {
            "viewOn": &self.view_on,
            "pipeline": self.pipeline.iter()
                .filter_map(|s| Document::try_from(s.as_ref()).ok())
                .map(Bson::Document)
                .collect::<Vec<_>>(),
        };
        if let Some(c) = &self.collation {
            options.insert("collation", c.clone());
        }
        doc! {
            "name": &self.name,
            "type": "view",
            "options": options,
            "info": { "readOnly": true },
        }
    }
}

/// The views of `db`, as its `system.views` holds them now.
pub async fn list(node: &NodeContext, db: &str) -> CommandResult<Vec<View>> {
    let Some(entry) = node.collection(db, VIEWS) else {
        return Ok(Vec::new());
    };
    let (coll, db) = (entry.coll.clone(), db.to_owned());
    node.read(move |snap| Ok(views_in(&coll, &db, snap)?)).await
}

/// The views of `db` as `snap` holds them.
fn views_on(
    node: &NodeContext,
    db: &str,
    snap: &dyn ebb_storage::engine::Snapshot,
) -> ebb_storage::Result<Vec<View>> {
    match node.collection(db, VIEWS) {
        Some(entry) => views_in(&entry.coll, db, snap),
        None => Ok(Vec::new()),
    }
}

/// The views `views` (a database's `system.views`) holds on `snap`.
fn views_in(
    views: &ebb_storage::Collection,
    db: &str,
    snap: &dyn ebb_storage::engine::Snapshot,
) -> ebb_storage::Result<Vec<View>> {
    let mut found = Vec::new();
    let mut cursor = snap.cursor(views.records(), KeyRange::all(), Direction::Forward)?;
    while cursor.valid() {
        let doc = RawDocumentBuf::from_bytes(cursor.value().to_vec())?;
        found.extend(View::read(&doc, db));
        cursor.advance();
    }
    cursor.status()?;
    Ok(found)
}

/// `db.name` resolved as a view on `snap` (a read already running on
/// one: `$lookup` and its kin); None when it is no view.
pub fn resolve_on(
    node: &NodeContext,
    db: &str,
    name: &str,
    snap: &dyn ebb_storage::engine::Snapshot,
) -> ebb_storage::Result<Option<Resolved>> {
    resolve_in(&views_on(node, db, snap)?, name).map_err(|_| depth_error())
}

/// A view resolved to the collection at the bottom of its chain.
#[derive(Debug)]
pub struct Resolved {
    /// The collection the chain reads.
    pub source: String,
    /// Every view's stages, the view nearest the collection first.
    pub pipeline: Vec<RawDocumentBuf>,
    /// The view's default collation.
    pub collation: Option<Document>,
}

pub fn depth_exceeded() -> CommandError {
    CommandError::from(depth_error())
}

fn depth_error() -> ebb_storage::Error {
    ebb_storage::Error::new(
        ebb_storage::ErrorKind::ViewDepthLimitExceeded,
        format!("View depth too deep or view cycle detected; maximum depth is {MAX_DEPTH}"),
    )
}

/// `name` resolved among `views`; None when it is no view.
fn resolve_in(views: &[View], name: &str) -> CommandResult<Option<Resolved>> {
    let Some(first) = views.iter().find(|v| v.name == name) else {
        return Ok(None);
    };
    let mut chain = vec![first];
    let mut on = &first.view_on;
    while let Some(next) = views.iter().find(|v| &v.name == on) {
        if chain.len() >= MAX_DEPTH {
            return Err(depth_exceeded());
        }
        chain.push(next);
        on = &next.view_on;
    }
    Ok(Some(Resolved {
        source: on.clone(),
        pipeline: chain
            .iter()
            .rev()
            .flat_map(|v| v.pipeline.iter().cloned())
            .collect(),
        collation: first.collation.clone(),
    }))
}

/// The view `db.name` resolved, when `name` names a view and no
/// collection.
pub async fn resolve(node: &NodeContext, db: &str, name: &str) -> CommandResult<Option<Resolved>> {
    if node.collection(db, name).is_some() || node.collection(db, VIEWS).is_none() {
        return Ok(None);
    }
    resolve_in(&list(node, db).await?, name)
}

/// CommandNotSupportedOnView for `db.name`.
pub fn not_on_a_view(db: &str, name: &str) -> CommandError {
    CommandError::new(
        codes::COMMAND_NOT_SUPPORTED_ON_VIEW,
        format!("Namespace {db}.{name} is a view, not a collection"),
    )
}

/// Refuses a write to `db.name` when it is a view.
pub async fn refuse_write(node: &NodeContext, db: &str, name: &str) -> CommandResult<()> {
    match resolve(node, db, name).await? {
        Some(_) => Err(not_on_a_view(db, name)),
        None => Ok(()),
    }
}

/// A read's collation on a view: the view's, which an operation may
/// restate but not change (OptionNotSupportedOnView).
pub fn read_collation(
    view: &Resolved,
    asked: Option<RawBsonRef<'_>>,
) -> CommandResult<Option<Document>> {
    let asked = match asked {
        None => return Ok(view.collation.clone()),
        Some(RawBsonRef::Document(d)) if d.is_empty() => return Ok(view.collation.clone()),
        Some(c) => Collation::parse(c)?.map(|c| c.to_document()),
    };
    if asked != view.collation {
        return Err(CommandError::new(
            codes::OPTION_NOT_SUPPORTED_ON_VIEW,
            "Cannot override a view's default collation",
        ));
    }
    Ok(asked)
}

/// The stages of `view`, then `pipeline`'s.
pub fn combined(view: &Resolved, pipeline: &bson::RawArray) -> CommandResult<RawArrayBuf> {
    let mut out = RawArrayBuf::new();
    for stage in &view.pipeline {
        out.push(stage.clone());
    }
    for stage in pipeline {
        out.push(bson::RawBson::from(stage?));
    }
    Ok(out)
}
