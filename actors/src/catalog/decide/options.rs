//! `collMod` of a collection's own options: the collection-level
//! `expireAfterSeconds` of a time-series or clustered collection, and the
//! validation options. Each returns the new record, or `None` when the
//! change leaves the record as it is.

use ebb_lang::validator::{ValidationAction, ValidationLevel, Validator, order_validation_options};
use ebb_storage::catalog::CollectionMeta;
use ebb_storage::timeseries;
use ebb_storage::{Error, ErrorKind, Result};

use super::ns_not_found;

/// New validation options for `collMod`; `None` leaves one unchanged.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ValidationChange {
    /// A new validator; an empty document removes the validator.
    pub validator: Option<bson::Document>,
    pub level: Option<ValidationLevel>,
    pub action: Option<ValidationAction>,
}

/// `collMod`'s collection-level `expireAfterSeconds` (`None`: `"off"`) of
/// `db.name` (record `current`). The internal indexes already exist; only
/// their `expireAfterSeconds` follows the option.
pub fn modify_expiry(
    current: Option<&CollectionMeta>,
    db: &str,
    name: &str,
    secs: Option<i64>,
) -> Result<Option<CollectionMeta>> {
    let Some(current) = current else {
        return Err(ns_not_found(db, name));
    };
    let mut meta = current.clone();
    match secs {
        Some(s) => {
            meta.options.insert("expireAfterSeconds", s);
        }
        None => {
            meta.options.remove("expireAfterSeconds");
        }
    }
    for wanted in timeseries::internal_indexes(&meta.options) {
        if let Some(index) = meta.indexes.iter_mut().find(|i| i.name == wanted.name) {
            index.expire_after_seconds = wanted.expire_after_seconds;
        }
    }
    Ok((meta != *current).then_some(meta))
}

/// `collMod`'s validation options of `db.name` (record `current`). A new
/// validator replaces the old one (an empty one removes it); a new level
/// or action writes both the level and the action, as mongod stores them.
/// A validator the collection may not have is refused.
/// `collMod` of a collection that does not exist, in mongod's words.
fn not_to_modify(db: &str, name: &str) -> Error {
    Error::new(
        ErrorKind::NamespaceNotFound,
        format!("ns does not exist: {db}.{name}"),
    )
}

/// `collMod`'s `changeStreamPreAndPostImages: {enabled}` of `db.name`:
/// the record with the option set (stored as `{enabled: true}`, removed
/// when off), or `None` when nothing changes.
pub fn modify_images(
    current: Option<&CollectionMeta>,
    db: &str,
    name: &str,
    enabled: bool,
) -> Result<Option<CollectionMeta>> {
    const IMAGES: &str = "changeStreamPreAndPostImages";
    let Some(current) = current else {
        return Err(not_to_modify(db, name));
    };
    if current.options.contains_key("timeseries") {
        return Err(Error::new(
            ErrorKind::InvalidOptions,
            "option not supported on a time-series collection: changeStreamPreAndPostImages",
        ));
    }
    let mut meta = current.clone();
    match enabled {
        true => {
            meta.options.insert(IMAGES, bson::doc! { "enabled": true });
        }
        false => {
            meta.options.remove(IMAGES);
        }
    }
    Ok((meta != *current).then_some(meta))
}

pub fn modify_validation(
    current: Option<&CollectionMeta>,
    db: &str,
    name: &str,
    change: ValidationChange,
) -> Result<Option<CollectionMeta>> {
    let Some(current) = current else {
        return Err(not_to_modify(db, name));
    };
    let mut meta = current.clone();
    let options = &mut meta.options;
    match change.validator {
        Some(validator) if validator.is_empty() => {
            options.remove("validator");
        }
        Some(validator) => {
            options.insert("validator", validator);
        }
        None => {}
    }
    if change.level.is_some() || change.action.is_some() {
        let current = |field: &str| options.get_str(field).ok().map(str::to_owned);
        let level = change
            .level
            .map(|l| l.name().to_owned())
            .or_else(|| current("validationLevel"));
        let action = change
            .action
            .map(|a| a.name().to_owned())
            .or_else(|| current("validationAction"));
        options.insert(
            "validationLevel",
            level.unwrap_or_else(|| ValidationLevel::default().name().to_owned()),
        );
        options.insert(
            "validationAction",
            action.unwrap_or_else(|| ValidationAction::default().name().to_owned()),
        );
    }
    order_validation_options(options);
    Validator::from_options(db, name, &meta.uuid, &meta.options)?;
    Ok((meta != *current).then_some(meta))
}
