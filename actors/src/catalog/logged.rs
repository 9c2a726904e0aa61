//! The change-log rows of catalog changes on a replica-set member
//! (`ebb_storage::changes::catalog_row`), decided from the records before
//! and after each change: what a change stream with `showExpandedEvents`
//! shows as `create`, `createIndexes`, `dropIndexes` and `modify`, in
//! mongod's shapes. The actor writes them in the batch that persists the
//! change.

use bson::{Bson, Document, doc};
use ebb_storage::Result;
use ebb_storage::catalog::{CollectionMeta, IndexMeta};
use ebb_storage::changes::{self, Applying, catalog_row, slot};

use super::decide::indexes::IndexChangeOutcome;

/// A row and its key in the log family.
pub type Row = ([u8; 14], Vec<u8>);

/// The part of a `collMod` one catalog change makes, in the order the
/// command makes them; each has its own row, so a `collMod` that changes
/// several shows several `modify` events.
#[derive(Debug, Clone, Copy)]
pub enum Part {
    Images,
    Expiry,
    Index,
    Validation,
}

impl Part {
    /// The collection options this part changes.
    fn fields(self) -> &'static [&'static str] {
        match self {
            Part::Images => &["changeStreamPreAndPostImages"],
            Part::Expiry => &["expireAfterSeconds"],
            Part::Index => &[],
            Part::Validation => &["validator", "validationLevel", "validationAction"],
        }
    }

    fn slot(self) -> u32 {
        slot::command(self as u32)
    }
}

fn row(
    at: &Applying,
    n: u32,
    op: &str,
    meta: &CollectionMeta,
    desc: Document,
    before: Option<Document>,
) -> Result<Row> {
    Ok((
        changes::key(at.ts, n),
        catalog_row(at, op, meta, desc, before)?,
    ))
}

/// The `create` of collection `meta`: its `_id` index (or clustered index)
/// and the options it was created with. A time-series collection's has
/// none, as mongod's.
pub fn created(at: &Applying, n: u32, meta: &CollectionMeta) -> Result<Vec<Row>> {
    if meta.options.contains_key("timeseries") {
        return Ok(Vec::new());
    }
    let mut desc = Document::new();
    if !meta.options.contains_key("clusteredIndex") {
        let mut id = doc! { "v": 2, "key": { "_id": 1 }, "name": "_id_" };
        if let Ok(c) = meta.options.get_document("collation") {
            id.insert("collation", c.clone());
        }
        desc.insert("idIndex", id);
    }
    for (k, v) in &meta.options {
        if k != "temp" {
            desc.insert(k.clone(), v.clone());
        }
    }
    Ok(vec![row(at, n, "create", meta, desc, None)?])
}

/// The `createIndexes` of the indexes named `names` of `meta`: one event
/// listing them, as mongod's for a collection that holds documents.
pub fn indexes_created(at: &Applying, meta: &CollectionMeta, names: &[String]) -> Result<Vec<Row>> {
    let specs: Vec<Bson> = meta
        .indexes
        .iter()
        .filter(|i| names.contains(&i.name) && !i.is_internal())
        .map(|i| Bson::Document(i.to_spec_doc()))
        .collect();
    if specs.is_empty() {
        return Ok(Vec::new());
    }
    let desc = doc! { "indexes": specs };
    Ok(vec![row(
        at,
        slot::command(0),
        "createIndexes",
        meta,
        desc,
        None,
    )?])
}

/// The `dropIndexes` of each index of `before` that `after` no longer has:
/// an event each, as mongod's.
pub fn indexes_dropped(
    at: &Applying,
    before: &CollectionMeta,
    after: &CollectionMeta,
) -> Result<Vec<Row>> {
    let gone = before
        .indexes
        .iter()
        .filter(|i| !i.is_internal() && after.index(&i.name).is_none());
    gone.enumerate()
        .map(|(n, i)| {
            let desc = doc! { "indexes": [i.to_spec_doc()] };
            row(
                at,
                slot::command(n as u32),
                "dropIndexes",
                after,
                desc,
                None,
            )
        })
        .collect()
}

/// A collection option's value, the validation options' defaults where
/// they are not stored (a validator set alone stores them).
fn option(meta: &CollectionMeta, field: &str) -> Option<Bson> {
    let default = match field {
        "validationLevel" => Some(Bson::from("strict")),
        "validationAction" => Some(Bson::from("error")),
        _ => None,
    };
    meta.options.get(field).cloned().or(default)
}

/// The collection's options as `stateBeforeChange` shows them.
fn options_before(before: &CollectionMeta) -> Document {
    let mut options = doc! { "uuid": before.uuid.clone() };
    for (k, v) in &before.options {
        if k != "temp" {
            options.insert(k.clone(), v.clone());
        }
    }
    options
}

/// The `modify` of one index (`collMod`'s `index`): its new `hidden` and
/// `expireAfterSeconds` where they changed, and their old values.
pub fn index_modified(
    at: &Applying,
    before: &CollectionMeta,
    after: &CollectionMeta,
    outcome: &IndexChangeOutcome,
) -> Result<Vec<Row>> {
    let (old, new): (&IndexMeta, &IndexMeta) = (&outcome.before, &outcome.after);
    let mut index = doc! { "name": new.name.clone() };
    let mut index_before = Document::new();
    if old.hidden != new.hidden {
        index.insert("hidden", new.hidden);
        index_before.insert("hidden", old.hidden);
    }
    if old.expire_after_seconds != new.expire_after_seconds {
        let secs = |s: Option<i32>| s.map_or(Bson::Null, |s| Bson::Int64(i64::from(s)));
        index.insert("expireAfterSeconds", secs(new.expire_after_seconds));
        if old.expire_after_seconds.is_some() {
            index_before.insert("expireAfterSeconds", secs(old.expire_after_seconds));
        }
    }
    let mut state = doc! { "collectionOptions": options_before(before) };
    if !index_before.is_empty() {
        state.insert("indexOptions", index_before);
    }
    let desc = doc! { "index": index };
    Ok(vec![row(
        at,
        Part::Index.slot(),
        "modify",
        after,
        desc,
        Some(state),
    )?])
}

/// The `modify` of the collection options `part` of a `collMod` changes:
/// each new value (`"off"` for a collection-level `expireAfterSeconds`
/// removed), and the options before.
pub fn options_modified(
    at: &Applying,
    part: Part,
    before: &CollectionMeta,
    after: &CollectionMeta,
) -> Result<Vec<Row>> {
    let mut desc = Document::new();
    for field in part.fields() {
        let (old, new) = (option(before, field), option(after, field));
        match new {
            _ if old == new => {}
            Some(v) => drop(desc.insert(*field, v)),
            None => drop(desc.insert(*field, "off")),
        }
    }
    if desc.is_empty() {
        return Ok(Vec::new());
    }
    let state = doc! { "collectionOptions": options_before(before) };
    Ok(vec![row(
        at,
        part.slot(),
        "modify",
        after,
        desc,
        Some(state),
    )?])
}
