//! Index commands: `createIndexes`, `listIndexes`, `dropIndexes`, and
//! `collMod` (its index options `expireAfterSeconds` and `hidden`; its
//! validation options are `validation`'s).
//!
//! `createIndexes` validates in MongoDB's order: every spec's shape first
//! (unknown fields → 197, key pattern → 67, the `_id` index's allow-list →
//! 197), then every spec's TTL option (→ 67), then conflicts with existing
//! indexes (85/86, in the catalog actor). Any failure aborts the whole
//! command: nothing is built and no collection is created.

use bson::{Bson, Document, RawBsonRef, RawDocument, RawDocumentBuf, doc};
use ebb_actors::catalog::{
    CreateIndexes, DropIndexes, DropTarget, IndexChange, IndexEdit, IndexTarget, ModifyExpiry,
    ModifyIndex, ValidationChange, archives_to_create, create_indexes as create_indexes_decision,
    modify_index,
};
use ebb_lang::encoding::collation::Collation;
use ebb_lang::encoding::display::shell;
use ebb_lang::query::filter::Filter;
use ebb_storage::catalog::{
    ARCHIVE_TO, CollectionMeta, GEO_2D, GEO_2DSPHERE, HASHED, ID_INDEX_NAME, IndexMeta, TEXT,
    WILDCARD, WILDCARD_PROJECTION, same_key_pattern,
};
use ebb_storage::index::flat;
use ebb_storage::index::wildcard::{self, Refusal};
use ebb_storage::timeseries::{TimeseriesOptions, index as ts_index};

use super::expiry::MadeDue;
use super::{Request, check_collection_name, check_db_name, cursor_reply, ok, validation};
use crate::args::{Args, as_f64, is_number, type_name};
use crate::error::{CommandError, CommandResult, codes};

/// Fields an index specification may carry.
const SPEC_FIELDS: &[&str] = &[
    "key",
    "name",
    "unique",
    "sparse",
    "partialFilterExpression",
    "expireAfterSeconds",
    "hidden",
    "background",
    "v",
    "collation",
    "ns",
    "storageEngine",
    "weights",
    "default_language",
    "language_override",
    "textIndexVersion",
    "2dsphereIndexVersion",
    "bits",
    "min",
    "max",
    "bucketSize",
    "wildcardProjection",
    "prepareUnique",
    "clustered",
    // Accepted and ignored by mongod for old clients (it never drops
    // duplicates), so by ebb too; not stored.
    "dropDups",
    // ebb's own: the collection a TTL index archives what it expires to.
    ARCHIVE_TO,
];

/// Fields the `_id` index spec may carry.
const ID_SPEC_FIELDS: &[&str] = &["key", "name", "v", "ns", "collation", "background"];

fn spec_shown(spec: &RawDocument) -> String {
    bson::Document::try_from(spec)
        .map(|d| shell(&Bson::Document(d)))
        .unwrap_or_default()
}

fn invalid_option(field: &str, spec: &RawDocument, id_index: bool) -> CommandError {
    let which = if id_index {
        "an _id index specification"
    } else {
        "an index specification"
    };
    CommandError::new(
        codes::INVALID_INDEX_SPECIFICATION_OPTION,
        format!(
            "The field '{field}' is not valid for {which}. Specification: {}",
            spec_shown(spec)
        ),
    )
}

fn cannot_create(msg: impl Into<String>) -> CommandError {
    CommandError::new(codes::CANNOT_CREATE_INDEX, msg)
}

fn bool_field(spec: &RawDocument, field: &str) -> CommandResult<bool> {
    match spec.get(field)? {
        None => Ok(false),
        Some(RawBsonRef::Boolean(b)) => Ok(b),
        Some(v) if is_number(&v) => Ok(as_f64(v).is_some_and(|f| f != 0.0)),
        Some(other) => Err(CommandError::new(
            codes::TYPE_MISMATCH,
            format!(
                "The field '{field}' must be a bool, but got {}",
                type_name(&other)
            ),
        )),
    }
}

/// Checks a key pattern: non-empty, plain field names (a wildcard's last
/// part `$**`), numeric directions or an index type.
fn check_key_pattern(key: &RawDocument) -> CommandResult<()> {
    if key.is_empty() {
        return Err(cannot_create("Index keys cannot be empty."));
    }
    for el in key.iter() {
        let (name, v) = el?;
        let name = name.as_str();
        if name.is_empty() || name.split('.').any(str::is_empty) {
            return Err(cannot_create("Index keys cannot be an empty field."));
        }
        let text = matches!(v, RawBsonRef::String(TEXT));
        let wildcard = name == WILDCARD || name.ends_with(".$**");
        if wildcard && !(text && name == WILDCARD) {
            check_wildcard_key(key, v)?;
        }
        let plain = name.strip_suffix(WILDCARD).unwrap_or(name);
        if !(text && name == WILDCARD) && plain.split('.').any(|part| part.starts_with('$')) {
            return Err(cannot_create(format!(
                "Index key contains an illegal field name: field name starts with '$'. Key: {name}"
            )));
        }
        match v {
            v if is_number(&v) => {
                if as_f64(v).is_none_or(|f| f == 0.0 || f.is_nan()) {
                    return Err(cannot_create(format!(
                        "Values in the index key pattern can't be 0 or NaN. Key pattern: {}",
                        spec_shown(key)
                    )));
                }
            }
            RawBsonRef::String(GEO_2DSPHERE | GEO_2D) => check_geo_key(key)?,
            RawBsonRef::String(HASHED) if key.iter().count() == 1 => {}
            RawBsonRef::String(HASHED) => {
                return Err(cannot_create(format!(
                    "ebb supports a hashed index on one field, alone (key pattern {})",
                    spec_shown(key)
                )));
            }
            RawBsonRef::String(TEXT) => {
                if name == "_fts" || name == "_ftsx" {
                    return Err(cannot_create(
                        "text index with reserved fields _fts/_ftsx not allowed",
                    ));
                }
            }
            RawBsonRef::String(kind) => {
                return Err(cannot_create(format!(
                    "ebb does not support '{kind}' indexes (key pattern {})",
                    spec_shown(key)
                )));
            }
            other => {
                return Err(cannot_create(format!(
                    "Values in v:2 index key pattern cannot be of type {}. Only numbers > 0, numbers < 0, and strings are allowed.",
                    type_name(&other)
                )));
            }
        }
    }
    Ok(())
}

/// A geo key pattern: one location field (a `2d` one first), any others
/// ordinary fields, as mongod takes it (two `2dsphere` fields, which
/// mongod also takes, are ebb's 67).
fn check_geo_key(key: &RawDocument) -> CommandResult<()> {
    let mut kinds = Vec::new();
    for el in key.iter() {
        let (_, v) = el?;
        kinds.push(match v {
            RawBsonRef::String(kind @ (GEO_2DSPHERE | GEO_2D)) => Some(kind),
            _ => None,
        });
    }
    let geo: Vec<(usize, &str)> = kinds
        .iter()
        .enumerate()
        .filter_map(|(at, k)| k.map(|k| (at, k)))
        .collect();
    let flat: Vec<usize> = geo
        .iter()
        .filter(|(_, k)| *k == GEO_2D)
        .map(|(at, _)| *at)
        .collect();
    if !flat.is_empty() && flat.len() < geo.len() {
        return Err(cannot_create(format!(
            "can't use more than one index plugin for a single index: {}",
            spec_shown(key)
        )));
    }
    if flat.len() > 1 {
        return Err(CommandError::new(
            codes::TWO_GEO_FIELDS,
            "can't have 2 geo fields",
        ));
    }
    if flat.first().is_some_and(|at| *at > 0) {
        return Err(CommandError::new(
            codes::FLAT_NOT_FIRST,
            "2d has to be first in index",
        ));
    }
    if geo.len() > 1 {
        return Err(cannot_create(format!(
            "ebb supports one 2dsphere field per index (key pattern {})",
            spec_shown(key)
        )));
    }
    Ok(())
}

/// A wildcard key: alone in its pattern, with a direction (a wildcard
/// index of a special type is mongod's 67 too).
fn check_wildcard_key(key: &RawDocument, v: RawBsonRef<'_>) -> CommandResult<()> {
    if key.iter().count() > 1 {
        return Err(cannot_create(format!(
            "ebb supports a wildcard index on its own, not compound with other keys (key \
             pattern {})",
            spec_shown(key)
        )));
    }
    if !is_number(&v) {
        return Err(cannot_create(format!(
            "wildcard indexes take a direction, 1 or -1, not another index type (key pattern {})",
            spec_shown(key)
        )));
    }
    Ok(())
}

/// What a wildcard index cannot be (unique, sparse, a TTL index) and its
/// `wildcardProjection`, kept as given: on `{"$**": 1}` only, a document
/// of all inclusions or all exclusions (`_id` either way).
fn wildcard_options(spec: &RawDocument, meta: &mut IndexMeta) -> CommandResult<()> {
    for (option, set) in [
        ("unique", meta.unique),
        ("sparse", meta.sparse),
        (
            "expireAfterSeconds",
            spec.get("expireAfterSeconds")?.is_some(),
        ),
    ] {
        if set {
            return Err(cannot_create(format!(
                "Index type 'wildcard' does not support the {option} option. Specification: {}",
                spec_shown(spec)
            )));
        }
    }
    let Some(projection) = spec.get(WILDCARD_PROJECTION)? else {
        return Ok(());
    };
    let RawBsonRef::Document(projection) = projection else {
        return Err(CommandError::new(
            codes::TYPE_MISMATCH,
            format!(
                "The field '{WILDCARD_PROJECTION}' must be an object, but got {}",
                type_name(&projection)
            ),
        ));
    };
    if meta.key.keys().any(|k| k != WILDCARD) {
        return Err(CommandError::failed_to_parse(format!(
            "{WILDCARD_PROJECTION} is only allowed on a '$**' index, not on a subtree's: {}",
            spec_shown(spec)
        )));
    }
    let projection = Document::try_from(projection)?;
    match wildcard::parse_projection(&projection) {
        Ok(_) => {}
        Err(Refusal::Empty) => {
            return Err(CommandError::failed_to_parse(format!(
                "{WILDCARD_PROJECTION} cannot be empty"
            )));
        }
        Err(Refusal::Mixed { including, path }) => {
            let (code, done, kind) = match including {
                true => (
                    codes::PROJECTION_EXCLUSION_IN_INCLUSION,
                    "exclusion",
                    "inclusion",
                ),
                false => (
                    codes::PROJECTION_INCLUSION_IN_EXCLUSION,
                    "inclusion",
                    "exclusion",
                ),
            };
            return Err(CommandError::new(
                code,
                format!("Cannot do {done} on field {path} in {kind} projection"),
            ));
        }
        Err(Refusal::NotAFlag(path)) => {
            return Err(CommandError::new(
                codes::WILDCARD_PROJECTION_VALUE,
                format!(
                    "{WILDCARD_PROJECTION} only takes inclusions and exclusions: the value at \
                     '{path}' is neither"
                ),
            ));
        }
    }
    meta.extra.insert(WILDCARD_PROJECTION, projection);
    Ok(())
}

/// Validates one spec's shape and turns it into an index record (its
/// column family id is assigned by the catalog).
fn parse_spec(spec: &RawDocument) -> CommandResult<IndexMeta> {
    let key = match spec.get("key")? {
        Some(RawBsonRef::Document(k)) => k,
        Some(other) => {
            return Err(CommandError::new(
                codes::TYPE_MISMATCH,
                format!(
                    "The field 'key' must be an object, but got {}",
                    type_name(&other)
                ),
            ));
        }
        None => {
            return Err(CommandError::failed_to_parse(
                "The 'key' field is a required property of an index specification",
            ));
        }
    };
    let name = match spec.get("name")? {
        Some(RawBsonRef::String(n)) if !n.is_empty() => n.to_owned(),
        Some(RawBsonRef::String(_)) => return Err(cannot_create("The index name cannot be empty")),
        Some(other) => {
            return Err(CommandError::new(
                codes::TYPE_MISMATCH,
                format!(
                    "The field 'name' must be a string, but got {}",
                    type_name(&other)
                ),
            ));
        }
        None => {
            return Err(CommandError::failed_to_parse(
                "The 'name' field is a required property of an index specification",
            ));
        }
    };
    // `{_id: "hashed"}` is an index of its own beside `_id_`.
    let is_id = key.iter().count() == 1 && key.get("_id")?.is_some_and(|v| is_number(&v));
    let allowed = if is_id { ID_SPEC_FIELDS } else { SPEC_FIELDS };
    for el in spec.iter() {
        let (field, _) = el?;
        if !allowed.contains(&field.as_str()) {
            return Err(invalid_option(field.as_str(), spec, is_id));
        }
    }
    check_key_pattern(key)?;
    if is_id && name != ID_INDEX_NAME {
        return Err(CommandError::bad_value(format!(
            "The index name for the _id index must be '_id_', but got '{name}'. Specification: {}",
            spec_shown(spec)
        )));
    }
    // The collation resolved to its full form (so two specs naming one
    // collation differently are one index); `{locale: "simple"}` is kept
    // as a marker until the catalog settles inheritance.
    let collation = match spec.get("collation")? {
        None => None,
        Some(c) => Some(match Collation::parse(c)? {
            Some(c) => c.to_document(),
            None => bson::doc! { "locale": "simple" },
        }),
    };
    let partial_filter = match spec.get("partialFilterExpression")? {
        None => None,
        Some(RawBsonRef::Document(f)) => {
            if Filter::parse(f)?.has_expr() {
                return Err(cannot_create(
                    "Error in specification { partialFilterExpression } :: caused by :: \
                     Expression not supported in partial index: $expr",
                ));
            }
            Some(Document::try_from(f)?)
        }
        Some(other) => {
            return Err(CommandError::new(
                codes::TYPE_MISMATCH,
                format!(
                    "The field 'partialFilterExpression' must be an object, but got {}",
                    type_name(&other)
                ),
            ));
        }
    };
    let hidden = bool_field(spec, "hidden")?;
    if hidden && is_id {
        return Err(cannot_create("can't hide _id index"));
    }
    let mut meta = CollectionMeta::id_index(0);
    meta.name = name;
    meta.key = Document::try_from(key)?;
    meta.unique = is_id || bool_field(spec, "unique")?;
    meta.sparse = bool_field(spec, "sparse")?;
    meta.hidden = hidden;
    meta.partial_filter = partial_filter;
    if let Some(c) = collation {
        meta.extra.insert("collation", c);
    }
    // Builds no longer run in the background (nor in ebb), but mongod keeps
    // the option in the spec and listIndexes shows it.
    if spec.get("background")?.is_some() {
        meta.extra
            .insert("background", bool_field(spec, "background")?);
    }
    if meta.is_sphere() {
        geo_options(spec, &mut meta)?;
    }
    if meta.is_flat() {
        flat_options(spec, &mut meta)?;
    }
    if meta.is_hashed() {
        hashed_options(spec, &meta)?;
    }
    if meta.is_wildcard() {
        wildcard_options(spec, &mut meta)?;
    } else if spec.get(WILDCARD_PROJECTION)?.is_some() {
        return Err(CommandError::bad_value(format!(
            "{WILDCARD_PROJECTION} is only allowed in a wildcard index: {}",
            spec_shown(spec)
        )));
    }
    if key
        .iter()
        .any(|el| matches!(el, Ok((_, RawBsonRef::String(TEXT)))))
    {
        text_options(spec, key, &mut meta)?;
    } else if let Some(field) = TEXT_FIELDS
        .iter()
        .find(|f| spec.get(f).ok().flatten().is_some())
    {
        return Err(cannot_create(format!(
            "the '{field}' option is for text indexes only. Specification: {}",
            spec_shown(spec)
        )));
    }
    match spec.get(ARCHIVE_TO)? {
        None => {}
        Some(RawBsonRef::String(target)) => {
            meta.extra.insert(ARCHIVE_TO, target);
        }
        Some(other) => {
            return Err(CommandError::new(
                codes::TYPE_MISMATCH,
                format!(
                    "The field '{ARCHIVE_TO}' must be a string, but got {}",
                    type_name(&other)
                ),
            ));
        }
    }
    Ok(meta)
}

/// A `2dsphere` index's options: its version (mongod's 1, 2 or 3; 3 unless
/// named, and listed), and none of what a geo index cannot be.
fn geo_options(spec: &RawDocument, meta: &mut IndexMeta) -> CommandResult<()> {
    let version = match spec.get("2dsphereIndexVersion")? {
        None => 3,
        Some(v) => match as_f64(v) {
            Some(n) if [1.0, 2.0, 3.0].contains(&n) => n as i32,
            _ => {
                return Err(cannot_create(format!(
                    "unsupported geo index version {{ 2dsphereIndexVersion : {} }}, only \
                     support versions: [1,2,3]",
                    shell(&Bson::try_from(v)?)
                )));
            }
        },
    };
    meta.extra.insert("2dsphereIndexVersion", version);
    not_unique_nor_ttl(spec, meta, GEO_2DSPHERE)
}

/// A geo index is neither unique nor a TTL index.
fn not_unique_nor_ttl(spec: &RawDocument, meta: &IndexMeta, kind: &str) -> CommandResult<()> {
    if meta.unique {
        return Err(cannot_create(format!(
            "ebb does not support unique {kind} indexes"
        )));
    }
    if spec.get("expireAfterSeconds")?.is_some() {
        return Err(cannot_create(format!(
            "a {kind} index cannot be a TTL index: TTL indexes hold dates"
        )));
    }
    Ok(())
}

/// A `2d` index's grid: `bits` per coordinate (1–32) over `[min, max]`,
/// each kept as given (mongod's defaults otherwise), refused as mongod
/// refuses them.
fn flat_options(spec: &RawDocument, meta: &mut IndexMeta) -> CommandResult<()> {
    let invalid = |msg: String| CommandError::new(codes::INVALID_OPTIONS, msg);
    let mut number = |field: &str, default: f64| -> CommandResult<f64> {
        let Some(v) = spec.get(field)? else {
            return Ok(default);
        };
        let n = as_f64(v).filter(|_| is_number(&v)).ok_or_else(|| {
            invalid(format!(
                "wrong type for '{field}' field, expected number, found {field}: {}",
                shell(&Bson::try_from(v).unwrap_or(Bson::Null))
            ))
        })?;
        meta.extra.insert(field, Bson::try_from(v)?);
        Ok(n)
    };
    let bits = number("bits", f64::from(flat::DEFAULT_BITS))?.trunc();
    let (min, max) = (
        number("min", flat::DEFAULT_MIN)?,
        number("max", flat::DEFAULT_MAX)?,
    );
    if !(1.0..=32.0).contains(&bits) {
        return Err(invalid(format!(
            "bits for hash must be > 0 and <= 32, but {bits} bits were specified"
        )));
    }
    if min >= max || min.is_nan() || max.is_nan() || min.is_infinite() || max.is_infinite() {
        return Err(invalid(format!(
            "region for hash must be valid and have positive area, but [{min}, {max}] was \
             specified"
        )));
    }
    not_unique_nor_ttl(spec, meta, GEO_2D)
}

/// The options only a text index takes.
const TEXT_FIELDS: &[&str] = &[
    "weights",
    "default_language",
    "language_override",
    "textIndexVersion",
];

/// A text index's spec, as mongod keeps it: its `"text"` fields, one run
/// of them, folded into `{_fts: "text", _ftsx: 1}` between the ordinary
/// fields before them (a prefix a search must give by equality) and after
/// them, the text fields listed in `weights` (with the weights given,
/// whole numbers in 1..99999), the default language and the language
/// override field, version 3; not unique nor TTL.
fn text_options(spec: &RawDocument, key: &RawDocument, meta: &mut IndexMeta) -> CommandResult<()> {
    let mut before = Document::new();
    let mut after = Document::new();
    let mut text_fields = Vec::new();
    for el in key.iter() {
        let (field, v) = el?;
        match v {
            RawBsonRef::String(TEXT) if after.is_empty() => text_fields.push(field.as_str()),
            RawBsonRef::String(TEXT) => {
                return Err(cannot_create(format!(
                    "the text fields of an index must be next to each other (key pattern {})",
                    spec_shown(key)
                )));
            }
            v if is_number(&v) => {
                let side = match text_fields.is_empty() {
                    true => &mut before,
                    false => &mut after,
                };
                side.insert(field.as_str(), Bson::try_from(v)?);
            }
            _ => {
                return Err(cannot_create(format!(
                    "can't use more than one index plugin for a single index: {}",
                    spec_shown(key)
                )));
            }
        }
    }
    if meta.unique {
        return Err(cannot_create("ebb does not support unique text indexes"));
    }
    if spec.get("expireAfterSeconds")?.is_some() {
        return Err(cannot_create(
            "a text index cannot be a TTL index: TTL indexes hold dates",
        ));
    }
    let mut weights: std::collections::BTreeMap<String, i32> = text_fields
        .iter()
        .map(|field| ((*field).to_owned(), 1))
        .collect();
    match spec.get("weights")? {
        None => {}
        Some(RawBsonRef::Document(given)) => {
            for el in given.iter() {
                let (field, w) = el?;
                let w = as_f64(w)
                    .ok_or_else(|| cannot_create("weight for text index needs numeric type"))?;
                if !(1.0..100_000.0).contains(&w) {
                    return Err(cannot_create(format!(
                        "text index weight must be in the exclusive interval (0,100000) but                          found: {w}"
                    )));
                }
                weights.insert(field.as_str().to_owned(), w.trunc() as i32);
            }
        }
        Some(RawBsonRef::String("$**")) => {
            weights.insert("$**".to_owned(), 1);
        }
        Some(_) => {
            return Err(cannot_create(
                "text index option 'weights' must be an object",
            ));
        }
    }
    let language = match spec.get("default_language")? {
        None => "english",
        Some(RawBsonRef::String(l)) => {
            if ebb_lang::text::Language::parse(l).is_none() {
                return Err(cannot_create(format!(
                    "unsupported language: \"{l}\" for text index version 3"
                )));
            }
            l
        }
        Some(_) => return Err(cannot_create("default_language needs a string type")),
    };
    let language_override = match spec.get("language_override")? {
        None => "language",
        Some(RawBsonRef::String(f)) if !f.is_empty() && !f.starts_with('$') && !f.contains('.') => {
            f
        }
        Some(RawBsonRef::String(_)) => return Err(cannot_create("language_override is not valid")),
        Some(_) => return Err(cannot_create("language_override must be a string")),
    };
    match spec.get("textIndexVersion")? {
        None => {}
        Some(v) if is_number(&v) && as_f64(v) == Some(3.0) => {}
        Some(v) if is_number(&v) => {
            return Err(cannot_create(format!(
                "ebb builds textIndexVersion 3 only, not {}",
                shell(&Bson::try_from(v)?)
            )));
        }
        Some(_) => {
            return Err(cannot_create(
                "text index option 'textIndexVersion' must be a number",
            ));
        }
    }
    meta.key = before;
    meta.key.insert("_fts", TEXT);
    meta.key.insert("_ftsx", 1);
    meta.key.extend(after);
    let mut listed = Document::new();
    for (field, w) in weights {
        listed.insert(field, w);
    }
    meta.extra.insert("weights", listed);
    meta.extra.insert("default_language", language);
    meta.extra.insert("language_override", language_override);
    meta.extra.insert("textIndexVersion", 3);
    Ok(())
}

/// What a `hashed` index cannot be: unique (two values may share a hash),
/// or a TTL index.
fn hashed_options(spec: &RawDocument, meta: &IndexMeta) -> CommandResult<()> {
    if meta.unique {
        return Err(CommandError::new(
            codes::HASHED_UNIQUE,
            "Currently hashed indexes cannot guarantee uniqueness. Use a regular index.",
        ));
    }
    if spec.get("expireAfterSeconds")?.is_some() {
        return Err(cannot_create(
            "a hashed index cannot be a TTL index: TTL indexes hold dates",
        ));
    }
    Ok(())
}

/// ebb's `archiveTo` of a parsed spec: a collection name of `db`, on a TTL
/// index of a collection that is not time-series.
fn check_archive(db: &str, index: &IndexMeta, timeseries: bool) -> CommandResult<()> {
    let Some(target) = index.archive_to() else {
        return Ok(());
    };
    check_collection_name(db, target)?;
    if index.expire_after_seconds.is_none() {
        return Err(cannot_create(format!(
            "'{ARCHIVE_TO}' needs 'expireAfterSeconds': only a TTL index archives what it \
             expires (index {})",
            index.name
        )));
    }
    if timeseries {
        return Err(cannot_create(
            "a time-series collection expires whole buckets: its TTL cannot archive documents",
        ));
    }
    Ok(())
}

/// MongoDB's TTL option check: any number in 0..=2147483647 (fractions
/// truncated) on a single-field index. Returns the value to store.
fn ttl_value(spec: &RawDocument, index: &IndexMeta) -> CommandResult<Option<i32>> {
    let Some(v) = spec.get("expireAfterSeconds")? else {
        return Ok(None);
    };
    let caused = |reason: String| {
        cannot_create(format!(
            ". Index spec: {} :: caused by :: {reason}",
            spec_shown(spec)
        ))
    };
    let value = match v {
        RawBsonRef::Int32(n) => f64::from(n),
        RawBsonRef::Int64(n) => n as f64,
        RawBsonRef::Double(d) => d,
        RawBsonRef::Decimal128(d) => d.to_string().parse::<f64>().unwrap_or(f64::NAN),
        other => {
            return Err(caused(format!(
                "TTL index 'expireAfterSeconds' option must be numeric, but received a type of '{}'",
                type_name(&other)
            )));
        }
    };
    if value.is_nan() {
        return Err(caused(
            "TTL index 'expireAfterSeconds' option must not be NaN".into(),
        ));
    }
    let truncated = value.trunc();
    if truncated > f64::from(i32::MAX) || truncated < f64::from(i32::MIN) {
        return Err(caused(
            "TTL index 'expireAfterSeconds' option must be within the range of a 32-bit integer"
                .into(),
        ));
    }
    if value < 0.0 {
        return Err(caused(
            "TTL index 'expireAfterSeconds' option cannot be less than 0".into(),
        ));
    }
    if index.key.len() > 1 {
        return Err(cannot_create(format!(
            "TTL indexes are single-field indexes, compound indexes do not support TTL. Index spec: {}",
            spec_shown(spec)
        )));
    }
    Ok(Some(truncated as i32))
}

/// `dryRun` is ebb's: what new TTL indexes would make due at once.
const CREATE_ARGS: &[&str] = &["indexes", "commitQuorum", "dryRun"];

pub async fn create_indexes(req: Request) -> CommandResult {
    let args = Args::parse(&req.body, CREATE_ARGS)?;
    let name = args.collection()?;
    check_db_name(&req.db)?;
    check_collection_name(&req.db, name)?;
    if super::views::catalog::resolve(&req.node, &req.db, name)
        .await?
        .is_some()
    {
        return Err(CommandError::new(
            codes::COMMAND_NOT_SUPPORTED_ON_VIEW,
            format!("Cannot create indexes on a view: {}.{name}", req.db),
        ));
    }
    let dry_run = dry_run(&args)?;
    let Some(specs) = args.array("indexes")? else {
        return Err(args.missing("indexes"));
    };
    let mut raw_specs = Vec::new();
    for v in specs {
        match v? {
            RawBsonRef::Document(d) => raw_specs.push(d),
            other => {
                return Err(CommandError::new(
                    codes::TYPE_MISMATCH,
                    format!(
                        "The 'indexes' field must be an array of objects, but found an element of type {}",
                        type_name(&other)
                    ),
                ));
            }
        }
    }
    if raw_specs.is_empty() {
        return Err(CommandError::bad_value(
            "Must specify at least one index to create",
        ));
    }
    let mut indexes: Vec<IndexMeta> = raw_specs
        .iter()
        .map(|s| parse_spec(s))
        .collect::<CommandResult<_>>()?;
    if let Some(i) = indexes.iter().find(|i| i.is_internal()) {
        return Err(CommandError::new(
            codes::CANNOT_CREATE_INDEX,
            format!(
                "index names starting with '{}' are reserved by ebb: {}",
                ebb_storage::catalog::INTERNAL_PREFIX,
                i.name
            ),
        ));
    }
    for (meta, spec) in indexes.iter_mut().zip(&raw_specs) {
        meta.expire_after_seconds = ttl_value(spec, meta)?;
    }
    let timeseries = req
        .node
        .collection(&req.db, name)
        .and_then(|e| e.coll.timeseries.clone());
    for meta in &indexes {
        check_archive(&req.db, meta, timeseries.is_some())?;
        if timeseries.is_some() && meta.is_geo() {
            return Err(cannot_create(
                "ebb does not support geo indexes on time-series collections",
            ));
        }
        if timeseries.is_some() && meta.is_wildcard() {
            return Err(cannot_create(
                "ebb does not support wildcard indexes on time-series collections",
            ));
        }
    }
    if let Some(ts) = timeseries {
        indexes = indexes
            .iter()
            .map(|i| {
                if i.partial_filter.is_some() && i.extra.contains_key("collation") {
                    return Err(CommandError::new(
                        codes::INDEX_OPTIONS_CONFLICT,
                        "the partialFilterExpression of a time-series index cannot have a collation",
                    ));
                }
                Ok(ts_index::bucket_index(i, &ts)?)
            })
            .collect::<CommandResult<_>>()?;
    }
    // What the new TTL indexes make due at once, decided on the current
    // record as the catalog decides it (with its errors): the preview's
    // answer, and a warning when it is a large share of the collection.
    let current = req.node.collection(&req.db, name).map(|e| e.coll.clone());
    if dry_run && current.as_ref().is_some_and(|c| c.timeseries.is_some()) {
        return Err(CommandError::invalid_options(
            "ebb's createIndexes option 'dryRun' does not preview time-series indexes",
        ));
    }
    let build = create_indexes_decision(
        current.as_ref().map(|c| &c.meta),
        &req.db,
        name,
        indexes.clone(),
    );
    let made = match (&build, &current) {
        (Ok(build), Some(coll)) => {
            super::expiry::made_due_by_new(&req, coll.clone(), &build.new).await?
        }
        _ => Vec::new(),
    };
    if dry_run {
        let build = build?;
        let state = req.node.view.load();
        let in_db: Vec<&CollectionMeta> = state.in_db(&req.db).map(|e| &e.coll.meta).collect();
        archives_to_create(&build, &req.db, name, &in_db)?;
        let before = current.as_ref().map_or(1, |c| c.meta.indexes.len());
        let shown: Vec<Bson> = made
            .iter()
            .map(|(index, made)| {
                Bson::Document(doc! {
                    "index": index,
                    "dueAtOnce": made.documents as i64,
                    "documents": made.of as i64,
                })
            })
            .collect();
        return ok(doc! {
            "dryRun": true,
            "numIndexesBefore": before as i32,
            "numIndexesAfter": (before + build.new.len()) as i32,
            "ttlIndexes": shown,
        });
    }
    let out = req
        .node
        .catalog
        .send(CreateIndexes {
            db: req.db.clone(),
            name: name.to_owned(),
            indexes,
            applying: req.applying(),
        })
        .await??;
    let percent = req.node.config.ttl.mass_expiry_percent;
    for (index, made) in made.iter().filter(|(_, m)| m.more_than(percent)) {
        warn_mass_expiry(&req, name, index, made, "createIndexes");
    }
    let mut reply =
        doc! { "numIndexesBefore": out.before as i32, "numIndexesAfter": out.after as i32 };
    match out.note {
        Some(note) if out.before == out.after => {
            reply.insert("note", note);
        }
        note => {
            reply.insert("createdCollectionAutomatically", out.created_collection);
            if let Some(note) = note {
                reply.insert("note", note);
            }
        }
    }
    ok(reply)
}

pub async fn list_indexes(req: Request) -> CommandResult {
    let args = Args::parse(&req.body, &["cursor"])?;
    let name = args.collection()?;
    let Some(entry) = req.node.collection(&req.db, name) else {
        return Err(CommandError::new(
            codes::NAMESPACE_NOT_FOUND,
            format!("ns does not exist: {}.{name}", req.db),
        ));
    };
    let docs = shown_indexes(&entry.coll.meta)
        .iter()
        .map(RawDocumentBuf::try_from)
        .collect::<Result<Vec<_>, _>>()?;
    cursor_reply(0, &format!("{}.{name}", req.db), docs, true)
}

/// The indexes listIndexes shows: never ebb's internal ones. A
/// time-series collection with a metaField shows the `{meta, time}` index
/// mongod creates with it (ebb's bucket lookup index); a clustered
/// collection's `_id_` says it is the clustered index.
fn shown_indexes(meta: &CollectionMeta) -> Vec<Document> {
    if let Some(ts) = TimeseriesOptions::from_stored(&meta.options) {
        let mut shown = Vec::new();
        if let Some((name, key)) = ts_index::meta_time_index(&ts) {
            shown.push(doc! { "v": 2, "key": key, "name": name });
        }
        shown.extend(meta.indexes.iter().filter_map(ts_index::shown_spec));
        return shown;
    }
    let clustered = meta.options.contains_key("clusteredIndex");
    meta.indexes
        .iter()
        .filter(|i| !i.is_internal())
        .map(|i| {
            let mut spec = i.to_spec_doc();
            if clustered && i.is_id_index() {
                spec.insert("unique", true);
                spec.insert("clustered", true);
            }
            spec
        })
        .collect()
}

/// `collMod`'s collection-level `expireAfterSeconds` on a time-series or
/// clustered collection: a number sets it, `"off"` removes it.
async fn modify_expiry(req: &Request, name: &str, v: RawBsonRef<'_>) -> CommandResult<()> {
    let Some(entry) = req.node.collection(&req.db, name) else {
        return Err(CommandError::new(
            codes::NAMESPACE_NOT_FOUND,
            format!("ns does not exist: {}.{name}", req.db),
        ));
    };
    let options = &entry.coll.meta.options;
    if !options.contains_key("timeseries") && !options.contains_key("clusteredIndex") {
        return Err(CommandError::invalid_options(
            "no expireAfterSeconds field for a collection that is not clustered or time-series",
        ));
    }
    let secs = match v {
        RawBsonRef::String("off") => None,
        RawBsonRef::String(other) => {
            return Err(CommandError::invalid_options(format!(
                "Invalid string value '{other}' for 'expireAfterSeconds'; expected 'off'"
            )));
        }
        v => {
            let now = req.node.shared.clock.now_millis().div_euclid(1000);
            Some(ebb_storage::timeseries::options::parse_expire_after(
                v, now,
            )?)
        }
    };
    req.node
        .catalog
        .send(ModifyExpiry {
            db: req.db.clone(),
            name: name.to_owned(),
            expire_after_seconds: secs,
            applying: req.applying(),
        })
        .await??;
    Ok(())
}

/// The name of a time-series collection's index given by the user's key
/// pattern (its stored key is the bucket-level one; mongod translates the
/// pattern, and one no index has is IndexNotFound). None when `name` is
/// not a time-series collection.
fn timeseries_index_named(
    req: &Request,
    name: &str,
    key: &Document,
) -> CommandResult<Option<String>> {
    let Some(entry) = req.node.collection(&req.db, name) else {
        return Ok(None);
    };
    let Some(ts) = &entry.coll.timeseries else {
        return Ok(None);
    };
    if let Some((index, _)) =
        ts_index::meta_time_index(ts).filter(|(_, k)| same_key_pattern(k, key))
    {
        return Err(meta_time_refused(&index));
    }
    let mut names = entry
        .coll
        .meta
        .indexes
        .iter()
        .filter(|i| ts_index::user_key(i).is_some_and(|k| same_key_pattern(k, key)))
        .map(|i| i.name.clone());
    let shown = || shell(&Bson::Document(key.clone()));
    match (names.next(), names.next()) {
        (None, _) => Err(CommandError::new(
            codes::INDEX_NOT_FOUND,
            format!("can't find index with key: {}", shown()),
        )),
        (Some(one), None) => Ok(Some(one)),
        (Some(_), Some(_)) => Err(CommandError::from(ebb_storage::Error::new(
            ebb_storage::ErrorKind::AmbiguousIndexKeyPattern,
            format!(
                "more than one index found for key: {}, identify by name instead",
                shown()
            ),
        ))),
    }
}

/// ebb's inserts find a measurement's bucket through the `{<meta>: 1,
/// <time>: 1}` index, so it cannot be dropped or changed (mongod can).
fn meta_time_refused(name: &str) -> CommandError {
    CommandError::from(ebb_storage::Error::not_implemented(&format!(
        "dropping or modifying the index {name} of a time-series collection"
    )))
}

/// Refuses naming the `{<meta>: 1, <time>: 1}` index of a time-series
/// collection to `dropIndexes` or `collMod`.
fn refuse_meta_time_name(req: &Request, name: &str, index: &str) -> CommandResult<()> {
    let shown = req
        .node
        .collection(&req.db, name)
        .and_then(|e| e.coll.timeseries.clone())
        .and_then(|ts| ts_index::meta_time_index(&ts));
    match shown {
        Some((n, _)) if n == index => Err(meta_time_refused(&n)),
        _ => Ok(()),
    }
}

pub async fn drop_indexes(req: Request) -> CommandResult {
    let args = Args::parse(&req.body, &["index"])?;
    let name = args.collection()?;
    let target = match args.get("index") {
        Some(RawBsonRef::String("*")) => DropTarget::All,
        Some(RawBsonRef::String(n)) => DropTarget::Names(vec![n.to_owned()]),
        Some(RawBsonRef::Document(k)) => DropTarget::Key(Document::try_from(k)?),
        Some(RawBsonRef::Array(a)) => {
            let mut names = Vec::new();
            for v in a {
                match v? {
                    RawBsonRef::String(n) => names.push(n.to_owned()),
                    other => {
                        return Err(args.wrong_type(
                            "index",
                            &other,
                            "types '[string, object, array]'",
                        ));
                    }
                }
            }
            DropTarget::Names(names)
        }
        Some(other) => {
            return Err(args.wrong_type("index", &other, "types '[string, object, array]'"));
        }
        None => return Err(args.missing("index")),
    };
    if let DropTarget::Names(names) = &target {
        for n in names {
            refuse_meta_time_name(&req, name, n)?;
        }
    }
    let target = match &target {
        DropTarget::Key(key) => match timeseries_index_named(&req, name, key)? {
            Some(index) => DropTarget::Names(vec![index]),
            None => target,
        },
        _ => target,
    };
    let was = req
        .node
        .catalog
        .send(DropIndexes {
            db: req.db.clone(),
            name: name.to_owned(),
            target,
            applying: req.applying(),
        })
        .await??;
    ok(doc! { "nIndexesWas": was as i32 })
}

const COLL_MOD_ARGS: &[&str] = &[
    "index",
    "validator",
    "validationLevel",
    "validationAction",
    "expireAfterSeconds",
    "viewOn",
    "pipeline",
    "changeStreamPreAndPostImages",
    "timeseries",
    "cappedSize",
    "cappedMax",
    "dryRun",
];
const COLL_MOD_INDEX_FIELDS: &[&str] = &[
    "keyPattern",
    "name",
    "expireAfterSeconds",
    "hidden",
    "unique",
    "prepareUnique",
];

/// ebb's `dryRun` of `createIndexes` and `collMod`: a bool, nothing else.
fn dry_run(args: &Args<'_>) -> CommandResult<bool> {
    match args.get("dryRun") {
        None => Ok(false),
        Some(RawBsonRef::Boolean(b)) => Ok(b),
        Some(other) => Err(args.wrong_type("dryRun", &other, "type 'bool'")),
    }
}

/// Logs and counts an index change that made more than
/// `ttl.mass_expiry_percent` of collection `name` due at once.
fn warn_mass_expiry(req: &Request, name: &str, index: &str, made: &MadeDue, command: &str) {
    req.node
        .shared
        .ttl
        .mass_changes
        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    tracing::warn!(
        ns = %format!("{}.{name}", req.db),
        index,
        due_at_once = made.documents,
        at_least = made.at_least,
        documents = made.of,
        "{command} makes more than {}% of the collection due at once",
        req.node.config.ttl.mass_expiry_percent
    );
}

/// `collMod`: ebb supports changing an index's `expireAfterSeconds` (or
/// making a single-field index TTL) and `hidden`, and the collection's
/// validator, validation level and validation action (applied after the
/// index change, once everything has parsed).
pub async fn coll_mod(req: Request) -> CommandResult {
    let args = Args::parse(&req.body, COLL_MOD_ARGS)?;
    let name = args.collection()?;
    let dry_run = dry_run(&args)?;
    // ebb's dryRun previews an index's new expireAfterSeconds, alone.
    let previews_expiry = args.doc("index")?.is_some_and(|i| {
        i.get("expireAfterSeconds").ok().flatten().is_some()
            && i.get("hidden").ok().flatten().is_none()
    }) && !args.has("expireAfterSeconds")
        && validation::parse(&args)? == ValidationChange::default();
    if dry_run && !previews_expiry {
        return Err(CommandError::invalid_options(
            "ebb supports the collMod option 'dryRun' only to preview a change of an index's \
             expireAfterSeconds, alone",
        ));
    }
    if let Some(enabled) = super::collections::images_option(&args)? {
        req.node
            .catalog
            .send(ebb_actors::catalog::ModifyImages {
                db: req.db.clone(),
                name: name.to_owned(),
                enabled,
                applying: req.applying(),
            })
            .await??;
        let others = COLL_MOD_ARGS
            .iter()
            .any(|a| *a != "changeStreamPreAndPostImages" && args.has(a));
        if !others {
            return ok(doc! {});
        }
    }
    if let Some(v) = args.get("expireAfterSeconds") {
        modify_expiry(&req, name, v).await?;
        if !args.has("index") && validation::parse(&args)? == ValidationChange::default() {
            return ok(doc! {});
        }
    }
    for unsupported in COLL_MOD_ARGS.iter().filter(|a| {
        !matches!(
            **a,
            "index"
                | "expireAfterSeconds"
                | "dryRun"
                | "validator"
                | "validationLevel"
                | "validationAction"
                | "changeStreamPreAndPostImages"
        )
    }) {
        if args.has(unsupported) {
            return Err(CommandError::invalid_options(format!(
                "the collMod option '{unsupported}' is not supported by ebb"
            )));
        }
    }
    let validation = validation::parse(&args)?;
    let changes_validation = validation != ValidationChange::default();
    let Some(index) = args.doc("index")? else {
        if changes_validation {
            validation::modify(&req, name, validation).await?;
            return ok(doc! {});
        }
        // Nothing to change; MongoDB still checks that the collection exists.
        if req.node.collection(&req.db, name).is_none() {
            return Err(CommandError::new(
                codes::NAMESPACE_NOT_FOUND,
                format!("ns does not exist: {}.{name}", req.db),
            ));
        }
        return ok(doc! {});
    };
    // A time-series index may be hidden or unhidden (timeseries_index.js);
    // its bucket-level expireAfterSeconds is not the user's.
    if index.get("expireAfterSeconds")?.is_some()
        && req
            .node
            .collection(&req.db, name)
            .is_some_and(|e| e.coll.timeseries.is_some())
    {
        return Err(CommandError::from(ebb_storage::Error::not_implemented(
            "collMod of expireAfterSeconds of an index on a time-series collection",
        )));
    }
    for el in index.iter() {
        let (k, _) = el?;
        if !COLL_MOD_INDEX_FIELDS.contains(&k.as_str()) {
            return Err(CommandError::new(
                codes::UNKNOWN_FIELD,
                format!(
                    "BSON field 'collMod.index.{}' is an unknown field.",
                    k.as_str()
                ),
            ));
        }
    }
    let target = match (index.get("name")?, index.get("keyPattern")?) {
        (Some(_), Some(_)) => {
            return Err(CommandError::invalid_options(
                "Cannot specify both key pattern and name.",
            ));
        }
        (Some(RawBsonRef::String(n)), None) => {
            refuse_meta_time_name(&req, name, n)?;
            IndexTarget::Name(n.to_owned())
        }
        (None, Some(RawBsonRef::Document(k))) => {
            let key = Document::try_from(k)?;
            match timeseries_index_named(&req, name, &key)? {
                Some(index) => IndexTarget::Name(index),
                None => IndexTarget::Key(key),
            }
        }
        (Some(other), None) => {
            return Err(CommandError::new(
                codes::TYPE_MISMATCH,
                format!(
                    "BSON field 'collMod.index.name' is the wrong type '{}', expected type 'string'",
                    type_name(&other)
                ),
            ));
        }
        (None, Some(other)) => {
            return Err(CommandError::new(
                codes::TYPE_MISMATCH,
                format!(
                    "BSON field 'collMod.index.keyPattern' is the wrong type '{}', expected type 'object'",
                    type_name(&other)
                ),
            ));
        }
        (None, None) => {
            return Err(CommandError::invalid_options(
                "Must specify either index name or key pattern.",
            ));
        }
    };
    if index.get("unique")?.is_some() || index.get("prepareUnique")?.is_some() {
        return Err(CommandError::invalid_options(
            "ebb does not support changing 'unique' or 'prepareUnique' with collMod",
        ));
    }
    let expire = match index.get("expireAfterSeconds")? {
        None => None,
        Some(v) if is_number(&v) => {
            let f = as_f64(v).unwrap_or(f64::NAN);
            if f < 0.0 {
                return Err(CommandError::invalid_options(
                    "TTL index 'expireAfterSeconds' option cannot be less than 0",
                ));
            }
            if f.is_nan() || f.trunc() > f64::from(i32::MAX) {
                return Err(CommandError::invalid_options(
                    "TTL index 'expireAfterSeconds' option must be within the range of a 32-bit integer",
                ));
            }
            Some(f.trunc() as i32)
        }
        Some(other) => {
            return Err(CommandError::new(
                codes::TYPE_MISMATCH,
                format!(
                    "BSON field 'collMod.index.expireAfterSeconds' is the wrong type '{}', expected types '[long, int, decimal, double]'",
                    type_name(&other)
                ),
            ));
        }
    };
    let hidden = match index.get("hidden")? {
        None => None,
        Some(RawBsonRef::Boolean(b)) => Some(b),
        Some(other) => {
            return Err(CommandError::new(
                codes::TYPE_MISMATCH,
                format!(
                    "BSON field 'collMod.index.hidden' is the wrong type '{}', expected type 'bool'",
                    type_name(&other)
                ),
            ));
        }
    };
    if expire.is_none() && hidden.is_none() {
        return Err(CommandError::invalid_options(
            "no expireAfterSeconds or hidden field",
        ));
    }
    // The edit, made once for the preview and once for the change.
    let edit = move || -> IndexEdit {
        Box::new(move |index: &mut IndexMeta| -> ebb_storage::Result<()> {
            use ebb_storage::{Error, ErrorKind::InvalidOptions};
            if let Some(secs) = expire {
                if index.expire_after_seconds.is_none() {
                    if index.is_id_index() {
                        return Err(Error::new(
                            InvalidOptions,
                            "the _id field does not support TTL indexes",
                        ));
                    }
                    if index.key.len() > 1 {
                        return Err(Error::new(
                            InvalidOptions,
                            "TTL indexes are single-field indexes, compound indexes do not support TTL",
                        ));
                    }
                }
                index.expire_after_seconds = Some(secs);
            }
            if let Some(h) = hidden {
                if index.is_id_index() {
                    return Err(Error::new(InvalidOptions, "can't hide _id index"));
                }
                index.hidden = h;
            }
            Ok(())
        })
    };
    // What the change makes due at once, decided on the current record
    // as the catalog decides it (with its errors): the preview's answer,
    // and a warning when it is a large share of the collection.
    let current = req.node.collection(&req.db, name).map(|e| e.coll.clone());
    let preview = modify_index(
        current.as_ref().map(|c| &c.meta),
        &req.db,
        name,
        IndexChange {
            target: target.clone(),
            apply: edit(),
        },
    );
    let made = match (&preview, expire, &current) {
        (Ok(m), Some(secs), Some(coll)) => {
            Some(super::expiry::made_due(&req, coll.clone(), &m.outcome.after.name, secs).await?)
        }
        _ => None,
    };
    if dry_run {
        let preview = preview?;
        let made = made.ok_or_else(CommandError::internal)?;
        return ok(doc! {
            "dryRun": true,
            "index": &preview.outcome.after.name,
            "expireAfterSeconds_old": preview.outcome.before.expire_after_seconds.map(i64::from),
            "expireAfterSeconds_new": expire.map(i64::from),
            "dueAtOnce": made.documents as i64,
            "dueAtOnceIsAtLeast": made.at_least,
            "documents": made.of as i64,
        });
    }
    let change = IndexChange {
        target,
        apply: edit(),
    };
    let out = req
        .node
        .catalog
        .send(ModifyIndex {
            db: req.db.clone(),
            name: name.to_owned(),
            change,
            applying: req.applying(),
        })
        .await??;
    if changes_validation {
        validation::modify(&req, name, validation).await?;
    }
    let percent = req.node.config.ttl.mass_expiry_percent;
    if let Some(made) = made.filter(|m| m.more_than(percent)) {
        warn_mass_expiry(&req, name, &out.after.name, &made, "collMod");
    }
    let mut reply = Document::new();
    if expire.is_some() {
        if let Some(old) = out.before.expire_after_seconds {
            reply.insert("expireAfterSeconds_old", i64::from(old));
        }
        reply.insert(
            "expireAfterSeconds_new",
            i64::from(out.after.expire_after_seconds.unwrap_or_default()),
        );
    }
    if hidden.is_some() {
        reply.insert("hidden_old", out.before.hidden);
        reply.insert("hidden_new", out.after.hidden);
    }
    ok(reply)
}
