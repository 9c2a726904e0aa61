//! Collection and database commands: `create`, `drop`, `dropDatabase`,
//! `listCollections`, `listDatabases`, `renameCollection`, `compact`.

use bson::{Bson, Document, RawBsonRef, RawDocumentBuf, doc};
use ebb_actors::catalog::{CreateCollection, DropCollection, DropDatabase, RenameCollection};
use ebb_lang::encoding::collation::Collation;
use ebb_lang::query::filter::Filter;
use ebb_lang::validator::order_validation_options;
use ebb_storage::capped::CappedOptions;
use ebb_storage::catalog::CollectionMeta;
use ebb_storage::timeseries::{TimeseriesOptions, options};

use ebb_storage::changes::Whole;

use super::{Request, check_collection_name, check_db_name, cursor_reply, ok, validation};
use crate::args::Args;
use crate::auth::check;
use crate::context::BUCKETS_PREFIX;
use crate::error::{CommandError, CommandResult, codes};

/// `create` options ebb stores and honours.
const CREATE_ARGS: &[&str] = &[
    "capped",
    "size",
    "max",
    "validator",
    "validationLevel",
    "validationAction",
    "timeseries",
    "clusteredIndex",
    "expireAfterSeconds",
    "collation",
    "viewOn",
    "pipeline",
    "storageEngine",
    "indexOptionDefaults",
    "changeStreamPreAndPostImages",
    "encryptedFields",
    "autoIndexId",
    // Dropped at the next start (`output::drop_leftover_temps`).
    "temp",
];

pub async fn create(req: Request) -> CommandResult {
    let args = Args::parse(&req.body, CREATE_ARGS)?;
    let name = args.collection()?;
    check_db_name(&req.db)?;
    check_collection_name(&req.db, name)?;
    if args.has("viewOn") {
        return super::views::define::create(&req, &args, name).await;
    }
    if super::views::catalog::resolve(&req.node, &req.db, name)
        .await?
        .is_some()
    {
        return Err(CommandError::new(
            codes::NAMESPACE_EXISTS,
            format!("Namespace {}.{name} already exists", req.db),
        ));
    }
    if args.has("expireAfterSeconds") && !args.has("clusteredIndex") && !args.has("timeseries") {
        return Err(CommandError::invalid_options(
            "'expireAfterSeconds' requires clustering to be enabled",
        ));
    }
    let options = match bucketed_options(&args, req.node.shared.clock.now_millis())? {
        Some(options) => options,
        None => plain_options(&req, &args)?,
    };
    create_collection(&req, name, options).await?;
    ok(doc! {})
}

/// Creates `name` in the request's database with stored `options`.
pub(super) async fn create_collection(
    req: &Request,
    name: &str,
    options: Document,
) -> CommandResult<()> {
    req.node
        .catalog
        .send(CreateCollection {
            db: req.db.clone(),
            name: name.to_owned(),
            options,
            applying: req.applying(),
        })
        .await??;
    Ok(())
}

/// A capped collection's bounds from `create`'s `capped`, `size` and
/// `max`, checked in mongod's order (`create.cpp`, then
/// `CollectionOptions`); None when not capped.
fn capped_options(args: &Args<'_>) -> CommandResult<Option<CappedOptions>> {
    let capped = args.bool("capped")?.unwrap_or(false);
    let size = args.i64("size")?;
    let max = args.i64("max")?;
    if !capped {
        if size.is_some() || max.is_some() {
            return Err(CommandError::invalid_options(
                "the 'capped' field needs to be true when either the 'size' or 'max' fields are present",
            ));
        }
        return Ok(None);
    }
    let Some(size) = size else {
        return Err(CommandError::invalid_options(
            "the 'size' field is required when 'capped' is true",
        ));
    };
    if size < 1 {
        return Err(CommandError::new(
            codes::VALUE_BELOW_MINIMUM,
            format!("BSON field 'size' value must be >= 1, actual value '{size}'"),
        ));
    }
    Ok(Some(CappedOptions::new(size, max)?))
}

/// The stored options of an ordinary collection.
fn plain_options(req: &Request, args: &Args<'_>) -> CommandResult<Document> {
    // Options whose behaviour ebb does not implement are refused rather
    // than stored and silently ignored.
    // A collection's default collation must name a locale: `{}` is
    // refused here, unlike an operation's `collation` argument.
    let collation = args.get("collation").map(Collation::parse).transpose()?;
    let capped = capped_options(args)?;
    let images = images_option(args)?;
    if args.has("pipeline") {
        return Err(CommandError::invalid_options(
            "'pipeline' requires 'viewOn' to also be specified",
        ));
    }
    match args.get("encryptedFields") {
        None | Some(RawBsonRef::Boolean(false)) => {}
        Some(_) => {
            return Err(CommandError::invalid_options(
                "the collection option 'encryptedFields' is not supported by ebb",
            ));
        }
    }
    validation::parse(args)?;
    // A capped collection's bounds come first, as mongod lists them.
    let mut options = capped.map_or_else(Document::new, |c| c.to_document());
    for el in req.body.iter().skip(1) {
        let (k, v) = el?;
        if matches!(k.as_str(), "capped" | "size" | "max") {
            continue;
        }
        // An empty validator is no validator; images kept is a switch.
        let empty = matches!(v, RawBsonRef::Document(d) if d.is_empty());
        if k.as_str() == "changeStreamPreAndPostImages" {
            continue;
        }
        if CREATE_ARGS.contains(&k.as_str()) && !(k.as_str() == "validator" && empty) {
            options.insert(k.as_str(), Bson::try_from(v)?);
        }
    }
    // The default collation is stored resolved (every field), and not at
    // all when simple, as mongod shows it in listCollections.
    match collation.flatten() {
        Some(c) => {
            options.insert("collation", c.to_document());
        }
        None => {
            options.remove("collation");
        }
    }
    if images == Some(true) {
        options.insert(IMAGES, bson::doc! { "enabled": true });
    }
    order_validation_options(&mut options);
    Ok(options)
}

const IMAGES: &str = "changeStreamPreAndPostImages";

/// `changeStreamPreAndPostImages: {enabled}` of `create` or `collMod`: the
/// collection keeps each document's versions before and after a change
/// for its change streams' `fullDocumentBeforeChange` and
/// `fullDocument: "whenAvailable" | "required"`.
pub fn images_option(args: &Args<'_>) -> CommandResult<Option<bool>> {
    let Some(value) = args.get(IMAGES) else {
        return Ok(None);
    };
    let RawBsonRef::Document(spec) = value else {
        return Err(args.wrong_type(IMAGES, &value, "type 'object'"));
    };
    let mut enabled = None;
    for el in spec.iter() {
        let (k, v) = el?;
        match (k.as_str(), v) {
            ("enabled", RawBsonRef::Boolean(b)) => enabled = Some(b),
            ("enabled", other) => {
                return Err(args.wrong_type(&format!("{IMAGES}.enabled"), &other, "type 'bool'"));
            }
            (other, _) => {
                return Err(CommandError::new(
                    codes::UNKNOWN_FIELD,
                    format!(
                        "BSON field '{}.{IMAGES}.{other}' is an unknown field.",
                        args.command_name()
                    ),
                ));
            }
        }
    }
    match enabled {
        Some(b) => Ok(Some(b)),
        None => Err(args.missing(&format!("{IMAGES}.enabled"))),
    }
}

/// Options a time-series collection may not have (mongod: 72).
const NOT_WITH_TIMESERIES: &[&str] = &[
    "capped",
    "size",
    "max",
    "validator",
    "validationLevel",
    "validationAction",
    "viewOn",
    "pipeline",
    "clusteredIndex",
    "encryptedFields",
    "changeStreamPreAndPostImages",
    "autoIndexId",
];

/// The stored options of a time-series (`timeseries`) or clustered
/// (`clusteredIndex`) collection, validated as mongod validates them;
/// None for any other collection. `expireAfterSeconds` is stored as a
/// NumberLong, as listCollections shows it.
fn bucketed_options(args: &Args<'_>, now_millis: i64) -> CommandResult<Option<Document>> {
    let mut options = Document::new();
    if let Some(ts) = args.get("timeseries") {
        let ts = TimeseriesOptions::parse(ts)?;
        for field in NOT_WITH_TIMESERIES {
            if args.has(field) {
                return Err(CommandError::invalid_options(format!(
                    "Time-series collections do not support the '{field}' option"
                )));
            }
        }
        options.insert("timeseries", ts.to_document());
    } else if let Some(clustered) = args.get("clusteredIndex") {
        let spec = options::parse_clustered_index(clustered)?;
        for field in [
            "capped",
            "viewOn",
            "pipeline",
            "encryptedFields",
            "timeseries",
        ] {
            if args.has(field) {
                return Err(CommandError::invalid_options(format!(
                    "the option '{field}' is not supported by ebb on a clustered collection"
                )));
            }
        }
        options.insert("clusteredIndex", spec);
    } else {
        return Ok(None);
    }
    if args.has("collation") {
        return Err(CommandError::from(ebb_storage::Error::not_implemented(
            "a collation on a time-series or clustered collection",
        )));
    }
    for field in ["validator", "validationLevel", "validationAction"] {
        if args.has(field) {
            return Err(CommandError::from(ebb_storage::Error::not_implemented(
                "a validator on a clustered collection",
            )));
        }
    }
    if let Some(v) = args.get("expireAfterSeconds") {
        let secs = options::parse_expire_after(v, now_millis.div_euclid(1000))?;
        options.insert("expireAfterSeconds", secs);
    }
    for field in ["storageEngine", "indexOptionDefaults"] {
        if let Some(v) = args.get(field) {
            options.insert(field, Bson::try_from(v)?);
        }
    }
    Ok(Some(options))
}

pub async fn drop(req: Request) -> CommandResult {
    let args = Args::parse(&req.body, &[])?;
    let name = args.collection()?;
    let ns = format!("{}.{name}", req.db);
    match req.node.collection(&req.db, name) {
        Some(entry) => crate::changes::log_whole(&req, &[Whole::Drop { coll: &entry.coll }])?,
        None => {
            if let Some(reply) = super::views::define::drop(&req, name).await? {
                return Ok(reply);
            }
        }
    }
    match req
        .node
        .catalog
        .send(DropCollection {
            db: req.db.clone(),
            name: name.to_owned(),
        })
        .await??
    {
        Some(n) => ok(doc! { "nIndexesWas": n as i32, "ns": ns }),
        None => Err(CommandError::new(
            codes::NAMESPACE_NOT_FOUND,
            "ns not found",
        )),
    }
}

pub async fn drop_database(req: Request) -> CommandResult {
    Args::parse(&req.body, &[])?;
    let state = req.node.view.load();
    let colls: Vec<_> = state.in_db(&req.db).collect();
    if !colls.is_empty() {
        let mut changes: Vec<Whole<'_>> = colls
            .iter()
            .map(|e| Whole::Drop { coll: &e.coll })
            .collect();
        changes.push(Whole::DropDatabase { db: &req.db });
        crate::changes::log_whole(&req, &changes)?;
    }
    req.node
        .catalog
        .send(DropDatabase { db: req.db.clone() })
        .await??;
    ok(doc! { "dropped": req.db.clone() })
}

pub async fn list_collections(req: Request) -> CommandResult {
    let args = Args::parse(
        &req.body,
        &["filter", "nameOnly", "authorizedCollections", "cursor"],
    )?;
    let name_only = args.bool("nameOnly")?.unwrap_or(false);
    let filter = match args.doc("filter")? {
        Some(f) => Some(Filter::parse(f)?),
        None => None,
    };
    let state = req.node.view.load();
    let mut entries: Vec<(String, &'static str, Document)> = Vec::new();
    for e in state.in_db(&req.db) {
        entries.extend(described(&e.coll.meta));
    }
    for view in super::views::catalog::list(&req.node, &req.db).await? {
        entries.push((view.name.clone(), "view", view.described()));
    }
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    let mut docs = Vec::new();
    for (name, kind, full) in entries {
        let raw = RawDocumentBuf::try_from(&full)?;
        if let Some(f) = &filter
            && !f.matches(&raw)?
        {
            continue;
        }
        docs.push(if name_only {
            RawDocumentBuf::try_from(&doc! { "name": name, "type": kind })?
        } else {
            raw
        });
    }
    cursor_reply(0, &format!("{}.$cmd.listCollections", req.db), docs, true)
}

/// A collection as listCollections shows it: (name, type, document). A
/// time-series collection is two entries, as in mongod 8.0: the
/// collection (`type: "timeseries"`) and `system.buckets.<name>`.
fn described(meta: &CollectionMeta) -> Vec<(String, &'static str, Document)> {
    let uuid = Bson::Binary(meta.uuid.clone());
    if meta.options.contains_key("timeseries") {
        let mut buckets = doc! { "clusteredIndex": true };
        for (k, v) in &meta.options {
            buckets.insert(k.clone(), v.clone());
        }
        let buckets_name = format!("{BUCKETS_PREFIX}{}", meta.name);
        return vec![
            (
                meta.name.clone(),
                "timeseries",
                doc! {
                    "name": meta.name.clone(),
                    "type": "timeseries",
                    "options": meta.options.clone(),
                    "info": { "readOnly": false },
                },
            ),
            (
                buckets_name.clone(),
                "collection",
                doc! {
                    "name": buckets_name,
                    "type": "collection",
                    "options": buckets,
                    "info": { "readOnly": false, "uuid": uuid },
                },
            ),
        ];
    }
    let mut full = doc! {
        "name": meta.name.clone(),
        "type": "collection",
        "options": meta.options.clone(),
        "info": { "readOnly": false, "uuid": uuid },
    };
    // A clustered collection has no separate _id index to describe.
    if !meta.options.contains_key("clusteredIndex") {
        full.insert(
            "idIndex",
            doc! { "v": 2, "key": { "_id": 1 }, "name": "_id_" },
        );
    }
    vec![(meta.name.clone(), "collection", full)]
}

/// The databases every mongod has.
const INTERNAL_DATABASES: &[&str] = &["admin", "config", "local"];

pub async fn list_databases(req: Request) -> CommandResult {
    let args = Args::parse(&req.body, &["filter", "nameOnly", "authorizedDatabases"])?;
    let name_only = args.bool("nameOnly")?.unwrap_or(false);
    let filter = match args.doc("filter")? {
        Some(f) => Some(Filter::parse(f)?),
        None => None,
    };
    let visible =
        check::visible_databases(&req.node, &req.conn.auth, args.bool("authorizedDatabases")?)
            .await?;
    let state = req.node.view.load();
    let engine = req.node.shared.engine.clone();
    let mut databases = Vec::new();
    let mut total: i64 = 0;
    // mongod always has these three, holding its own collections; ebb
    // lists them as it does, whether or not anything was written there.
    let mut names: std::collections::BTreeSet<String> = state.databases().into_iter().collect();
    names.extend(INTERNAL_DATABASES.iter().map(|d| d.to_string()));
    for db in names {
        if let Some(roles) = &visible
            && !check::shows_database(roles, &db)
        {
            continue;
        }
        let size: i64 = state
            .in_db(&db)
            .map(|e| {
                let sizes = e.sizes(engine.as_ref());
                (sizes.data_bytes + sizes.total_index_bytes()) as i64
            })
            .sum();
        let entry = if name_only {
            doc! { "name": db.clone() }
        } else {
            doc! { "name": db.clone(), "sizeOnDisk": size, "empty": false }
        };
        if let Some(f) = &filter
            && !f.matches(&RawDocumentBuf::try_from(&entry)?)?
        {
            continue;
        }
        total += size;
        databases.push(entry);
    }
    if name_only {
        return ok(doc! { "databases": databases });
    }
    ok(doc! { "databases": databases, "totalSize": total, "totalSizeMb": total / (1024 * 1024) })
}

pub async fn rename_collection(req: Request) -> CommandResult {
    let args = Args::parse(&req.body, &["to", "dropTarget", "stayTemp"])?;
    let from = match args.command_value() {
        RawBsonRef::String(s) => s,
        other => return Err(args.wrong_type("renameCollection", &other, "type 'string'")),
    };
    let Some(to) = args.str("to")? else {
        return Err(args.missing("to"));
    };
    let split = |ns: &str| -> CommandResult<(String, String)> {
        match ns.split_once('.') {
            Some((db, coll)) if !db.is_empty() && !coll.is_empty() => {
                check_db_name(db)?;
                check_collection_name(db, coll)?;
                Ok((db.to_owned(), coll.to_owned()))
            }
            _ => Err(CommandError::new(
                codes::INVALID_NAMESPACE,
                format!("Invalid namespace specified '{ns}'"),
            )),
        }
    };
    if req.db != "admin" {
        return Err(CommandError::new(
            codes::UNAUTHORIZED,
            "renameCollection may only be run against the admin database.",
        ));
    }
    let drop_target = args.bool("dropTarget")?.unwrap_or(false);
    let stay_temp = args.bool("stayTemp")?.unwrap_or(false);
    let (from, to) = (split(from)?, split(to)?);
    if let Some(source) = req.node.collection(&from.0, &from.1) {
        let target = req.node.collection(&to.0, &to.1);
        if target.is_none() || drop_target {
            let mut changes = Vec::new();
            if let Some(target) = &target {
                changes.push(Whole::Drop { coll: &target.coll });
            }
            changes.push(Whole::Rename {
                coll: &source.coll,
                to_db: &to.0,
                to_coll: &to.1,
            });
            crate::changes::log_whole(&req, &changes)?;
        }
    }
    req.node
        .catalog
        .send(RenameCollection {
            from,
            to,
            drop_target,
            stay_temp,
        })
        .await??;
    ok(doc! {})
}

/// `compact`: reclaims the space of deleted documents and index entries
/// (a RocksDB range compaction of every family of the collection).
pub async fn compact(req: Request) -> CommandResult {
    let args = Args::parse(&req.body, &["force", "freeSpaceTargetMB", "dryRun"])?;
    let name = args.collection()?;
    let Some(entry) = req.node.collection(&req.db, name) else {
        return Err(CommandError::new(
            codes::NAMESPACE_NOT_FOUND,
            "collection does not exist",
        ));
    };
    let freed = entry.compact(req.node.shared.engine.clone()).await?;
    tracing::info!(ns = %entry.ns(), freed, "compacted collection");
    ok(doc! { "bytesFreed": freed as i64 })
}
