//! Integrity checks an operator runs: `validate` (a collection's records
//! against its indexes, `ebb_storage::integrity`) and `dbHash` (an MD5 of
//! each collection's documents in `_id` order, to compare two copies of a
//! database). Both read one snapshot and change nothing.

use bson::{Document, RawBsonRef, doc};
use ebb_storage::Error as StorageError;
use ebb_storage::engine::{Direction, KeyRange};
use ebb_storage::integrity;
use md5::{Digest, Md5};

use super::admin::hostname;
use super::{Request, ok};
use crate::args::Args;
use crate::error::{CommandError, CommandResult, codes};

/// `validate`: `full` is accepted either way (ebb's check is always the
/// full one); repair, metadata-only and background runs are refused.
pub async fn validate(req: Request) -> CommandResult {
    let args = Args::parse(
        &req.body,
        &[
            "full",
            "repair",
            "metadata",
            "background",
            "checkBSONConformance",
            "enforceFastCount",
            "scandata",
        ],
    )?;
    let name = args.collection()?;
    for option in ["repair", "metadata", "background", "enforceFastCount"] {
        if args.bool(option)?.unwrap_or(false) {
            return Err(
                StorageError::not_implemented(&format!("validate with {option}: true")).into(),
            );
        }
    }
    // Both levels of checking are what ebb always does: every record is
    // parsed in full and every index entry accounted for.
    args.bool("full")?;
    args.bool("checkBSONConformance")?;
    args.bool("scandata")?;
    let Some(entry) = req.node.collection(&req.db, name) else {
        return Err(CommandError::new(
            codes::NAMESPACE_NOT_FOUND,
            format!("Collection '{}.{name}' does not exist to validate.", req.db),
        ));
    };
    let set = entry.coll.clone();
    let report = req
        .node
        .scan(move |snap| Ok(integrity::check(snap, &set)?))
        .await?;
    let mut keys_per_index = doc! { "_id_": report.records as i64 };
    let mut index_details = doc! { "_id_": { "valid": true } };
    for (name, n) in &report.keys_per_index {
        if entry.coll.meta.index(name).is_some_and(|i| i.is_internal()) {
            continue;
        }
        keys_per_index.insert(name.clone(), *n as i64);
        let valid = report.missing.get(name) == Some(&0) && report.extra.get(name) == Some(&0);
        index_details.insert(name.clone(), doc! { "valid": valid });
    }
    let missing: i64 = report.missing.values().sum::<u64>() as i64;
    let extra: i64 = report.extra.values().sum::<u64>() as i64;
    ok(doc! {
        "ns": entry.ns(),
        "uuid": entry.coll.meta.uuid.clone(),
        "nInvalidDocuments": (report.invalid_documents + report.misfiled_documents) as i64,
        "nNonCompliantDocuments": 0i64,
        "nrecords": report.records as i64,
        "nIndexes": index_details.len() as i32,
        "keysPerIndex": keys_per_index,
        "indexDetails": index_details,
        "valid": report.valid(),
        "repaired": false,
        "warnings": Vec::<String>::new(),
        "errors": report.errors.clone(),
        // Counts, where mongod lists the entries themselves.
        "missingIndexEntries": missing,
        "extraIndexEntries": extra,
        "corruptRecords": Vec::<String>::new(),
        "advice": if report.valid() { "" } else {
            "ebb cannot repair: restore the collection from a copy (mongodump) or rebuild the \
             index named in errors (dropIndexes, createIndexes)"
        },
    })
}

/// `dbHash`: per collection, the MD5 of its documents' bytes in `_id`
/// order, and an MD5 over those; `collections` narrows the set.
pub async fn db_hash(req: Request) -> CommandResult {
    let args = Args::parse(&req.body, &["collections"])?;
    let only: Option<Vec<String>> = match args.get("collections") {
        None => None,
        Some(RawBsonRef::Array(a)) => {
            let mut names = Vec::new();
            for v in a {
                match v? {
                    RawBsonRef::String(s) => names.push(s.to_owned()),
                    other => {
                        return Err(CommandError::new(
                            codes::BAD_VALUE,
                            format!(
                                "collections entries must be strings, not {}",
                                crate::args::type_name(&other)
                            ),
                        ));
                    }
                }
            }
            Some(names)
        }
        Some(other) => return Err(args.wrong_type("collections", &other, "type 'array'")),
    };
    let started = std::time::Instant::now();
    let state = req.node.view.load();
    let mut sets: Vec<_> = state
        .in_db(&req.db)
        .filter(|e| only.as_ref().is_none_or(|o| o.contains(&e.coll.meta.name)))
        .map(|e| e.coll.clone())
        .collect();
    sets.sort_by(|a, b| a.meta.name.cmp(&b.meta.name));
    let hashes = req
        .node
        .scan(move |snap| {
            let mut out = Vec::new();
            for set in sets {
                let mut md5 = Md5::new();
                let mut records =
                    snap.cursor(set.records(), KeyRange::all(), Direction::Forward)?;
                while records.valid() {
                    md5.update(records.value());
                    records.advance();
                }
                records.status()?;
                out.push((set.meta.name.clone(), hex(&md5.finalize())));
            }
            Ok(out)
        })
        .await?;
    let mut overall = Md5::new();
    let mut collections = Document::new();
    let (mut capped, mut uuids) = (Vec::new(), Document::new());
    for (name, hash) in &hashes {
        overall.update(hash.as_bytes());
        collections.insert(name.clone(), hash.clone());
        if let Some(e) = state.get(&req.db, name) {
            uuids.insert(name.clone(), e.coll.meta.uuid.clone());
            if matches!(
                e.coll.meta.options.get("capped"),
                Some(bson::Bson::Boolean(true))
            ) {
                capped.push(name.clone());
            }
        }
    }
    ok(doc! {
        "host": format!("{}:{}", hostname(), req.node.config.net.port),
        "collections": collections,
        "capped": capped,
        "uuids": uuids,
        "md5": hex(&overall.finalize()),
        "timeMillis": started.elapsed().as_millis() as i64,
        "fromCache": Vec::<String>::new(),
    })
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
