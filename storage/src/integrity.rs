//! Checking that a collection's stored data is whole (the `validate`
//! command): every record is a well-formed document filed under the key
//! of its own `_id`, every index entry its documents should have exists,
//! and no index holds entries beyond those (besides the entries of expired
//! documents queued for the sweep, which are not counted: `ttl::sweep`).
//! Reads one snapshot; changes nothing (ebb has no repair: a bad record or
//! entry is reported).
//!
//! Schema validation of documents is `validator`'s, not this module's.

use std::collections::BTreeMap;

use bson::{RawBsonRef, RawDocument};

use crate::collection::Collection;
use crate::engine::{Cf, Direction, KeyRange, Snapshot, count_rest};
use ebb_lang::error::Result;

/// At most this many problems are described one by one.
const MAX_DESCRIBED: usize = 20;

/// What [`check`] found.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Report {
    /// Records read.
    pub records: u64,
    /// Records that are not well-formed BSON documents.
    pub invalid_documents: u64,
    /// Records filed under a key that is not their `_id`'s.
    pub misfiled_documents: u64,
    /// Entries in each secondary index, by index name.
    pub keys_per_index: BTreeMap<String, u64>,
    /// Entries the documents should have that an index lacks, by name.
    pub missing: BTreeMap<String, u64>,
    /// Entries an index holds beyond what the documents account for.
    pub extra: BTreeMap<String, u64>,
    /// The first problems, described.
    pub errors: Vec<String>,
}

impl Report {
    pub fn valid(&self) -> bool {
        self.invalid_documents == 0
            && self.misfiled_documents == 0
            && self.missing.values().all(|n| *n == 0)
            && self.extra.values().all(|n| *n == 0)
    }

    fn describe(&mut self, what: String) {
        if self.errors.len() < MAX_DESCRIBED {
            self.errors.push(what);
        }
    }
}

/// Checks `coll`'s records and secondary indexes on `snap`.
pub fn check(snap: &dyn Snapshot, coll: &Collection) -> Result<Report> {
    let mut report = Report::default();
    let mut expected = vec![0u64; coll.keygens.len()];
    let mut missing = vec![0u64; coll.keygens.len()];
    let mut keys: Vec<Vec<u8>> = Vec::new();
    let mut records = snap.cursor(coll.records(), KeyRange::all(), Direction::Forward)?;
    while records.valid() {
        report.records += 1;
        let id_key = records.key();
        match well_formed(records.value()) {
            None => {
                report.invalid_documents += 1;
                report.describe(format!(
                    "record {} is not a valid BSON document",
                    report.records
                ));
            }
            Some(doc) => {
                let filed_under_id = match doc.get("_id") {
                    Ok(Some(id)) => coll.record_key(id) == id_key,
                    _ => false,
                };
                if !filed_under_id {
                    report.misfiled_documents += 1;
                    report.describe(format!(
                        "record {} is not stored under the key of its _id",
                        report.records
                    ));
                }
                for (i, kg) in coll.keygens.iter().enumerate() {
                    keys.clear();
                    kg.keys(doc, id_key, &mut keys)?;
                    expected[i] += keys.len() as u64;
                    for key in &keys {
                        if snap.get(Cf::Id(kg.cf), key)?.is_none() {
                            missing[i] += 1;
                        }
                    }
                }
            }
        }
        records.advance();
    }
    records.status()?;
    // Entries of expired documents waiting for the sweep are accounted
    // for, and no reader sees them (`ttl::sweep`).
    let pending = crate::ttl::sweep::pending_on(snap, coll)?;
    for (i, kg) in coll.keygens.iter().enumerate() {
        let name = kg.name.clone();
        let mut entries = snap.cursor(Cf::Id(kg.cf), KeyRange::all(), Direction::Forward)?;
        let actual = count_rest(entries.as_mut())?.saturating_sub(pending[i]);
        let found = expected[i] - missing[i];
        let extra = actual.saturating_sub(found);
        if missing[i] > 0 {
            report.describe(format!(
                "index {name} lacks {} entries its documents should have",
                missing[i]
            ));
        }
        if extra > 0 {
            report.describe(format!(
                "index {name} has {extra} entries no document accounts for"
            ));
        }
        report.keys_per_index.insert(name.clone(), actual);
        report.missing.insert(name.clone(), missing[i]);
        report.extra.insert(name, extra);
    }
    Ok(report)
}

/// The record as a document, if every element of it parses, at every
/// depth.
fn well_formed(bytes: &[u8]) -> Option<&RawDocument> {
    let doc = RawDocument::from_bytes(bytes).ok()?;
    parses(RawBsonRef::Document(doc)).then_some(doc)
}

fn parses(v: RawBsonRef<'_>) -> bool {
    match v {
        RawBsonRef::Document(d) => d.iter().all(|e| e.is_ok_and(|(_, v)| parses(v))),
        RawBsonRef::Array(a) => a.into_iter().all(|e| e.is_ok_and(parses)),
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use bson::doc;

    use super::*;
    use crate::engine::Engine;
    use crate::ttl::tests::{insert, setup};

    #[test]
    fn a_lost_or_stray_index_entry_makes_the_collection_invalid() {
        let (_dir, engine, coll) = setup();
        insert(
            &engine,
            &coll,
            vec![
                doc! { "_id": 1, "k": [1, 2], "at": bson::DateTime::MAX },
                doc! { "_id": 2, "k": 3 },
            ],
        );
        let snap = engine.snapshot();
        let report = check(snap.as_ref(), &coll).unwrap();
        assert!(report.valid(), "{report:?}");
        assert_eq!(report.records, 2);
        assert_eq!(report.keys_per_index["k_1"], 3);
        drop(snap);

        // Take one entry of `k_1` out and put a stray one in `at_1`.
        let entries = engine
            .cursor(Cf::Id(12), KeyRange::all(), Direction::Forward)
            .unwrap();
        let first = entries.key().to_vec();
        drop(entries);
        let mut batch = engine.batch();
        batch.delete(Cf::Id(12), &first).unwrap();
        batch.put(Cf::Id(11), b"stray", b"").unwrap();
        batch.commit(false).unwrap();
        let snap = engine.snapshot();
        let report = check(snap.as_ref(), &coll).unwrap();
        assert!(!report.valid());
        assert_eq!(report.missing["k_1"], 1);
        assert_eq!(report.extra["at_1"], 1);
        assert_eq!(report.errors.len(), 2, "{:?}", report.errors);
    }
}
