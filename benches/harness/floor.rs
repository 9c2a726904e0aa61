//! The floor: the same keys written or deleted directly on RocksDB (through
//! ebb's engine wrapper, with no encoding, planning or actors above it), in
//! batches of 1,000 documents, single-threaded, in the same run.

use std::time::{Duration, Instant};

use anyhow::Result;
use ebb_lang::encoding::keycode::encode_key;
use ebb_storage::engine::rocks::{RocksEngine, RocksOptions};
use ebb_storage::engine::{Cf, Engine};
use mongodb::bson::{DateTime, RawBsonRef, RawDocumentBuf};

use crate::workload::make_doc;

const RECORDS: Cf = Cf::Id(1);
const TTL: Cf = Cf::Id(2);
const SECONDARY: Cf = Cf::Id(3);

/// The keys one benchmark document occupies: record, TTL entry, `k` entry.
struct Keys {
    record: Vec<u8>,
    value: Vec<u8>,
    ttl: Vec<u8>,
    secondary: Vec<u8>,
}

fn keys(n: usize, at: DateTime) -> Result<Vec<Keys>> {
    keys_dated(&vec![at; n])
}

/// The keys of one document per date, `k` = index mod 1000.
fn keys_dated(dates: &[DateTime]) -> Result<Vec<Keys>> {
    dates
        .iter()
        .enumerate()
        .map(|(i, &at)| {
            let doc = make_doc(at, (i % 1000) as i32);
            let id = encode_key(RawBsonRef::ObjectId(doc.get_object_id("_id")?));
            let mut ttl = encode_key(RawBsonRef::DateTime(at));
            ttl.extend_from_slice(&id);
            let mut secondary = encode_key(RawBsonRef::Int32((i % 1000) as i32));
            secondary.extend_from_slice(&id);
            Ok(Keys {
                value: RawDocumentBuf::try_from(&doc)?.into_bytes(),
                record: id,
                ttl,
                secondary,
            })
        })
        .collect()
}

fn open() -> Result<(tempfile::TempDir, RocksEngine)> {
    let dir = tempfile::tempdir()?;
    let engine = RocksEngine::open(&RocksOptions {
        path: dir.path().to_path_buf(),
        block_cache_bytes: 256 << 20,
        write_buffer_bytes: 64 << 20,
    })?;
    for cf in [RECORDS, TTL, SECONDARY] {
        engine.create_cf(cf)?;
    }
    Ok((dir, engine))
}

fn put_all(engine: &RocksEngine, docs: &[Keys], with_secondary: bool) -> Result<()> {
    for chunk in docs.chunks(1000) {
        let mut b = engine.batch();
        for d in chunk {
            b.put(RECORDS, &d.record, &d.value)?;
            b.put(TTL, &d.ttl, &[])?;
            if with_secondary {
                b.put(SECONDARY, &d.secondary, &[])?;
            }
        }
        b.commit(false)?;
    }
    Ok(())
}

/// Time to delete `n` documents' record, TTL entry and secondary entry.
pub fn purge(n: usize) -> Result<Duration> {
    let (_dir, engine) = open()?;
    let docs = keys(n, DateTime::now())?;
    put_all(&engine, &docs, true)?;
    let all: Vec<&Keys> = docs.iter().collect();
    delete_all(&engine, &all)
}

/// Time to delete the documents of `dates` marked `due` (record, TTL entry,
/// secondary entry) from among all of them, in TTL-index order, the order
/// in which a deleter finds them.
pub fn interleaved(dates: &[DateTime], due: &[bool]) -> Result<Duration> {
    let (_dir, engine) = open()?;
    let docs = keys_dated(dates)?;
    put_all(&engine, &docs, true)?;
    let mut doomed: Vec<&Keys> = docs
        .iter()
        .zip(due)
        .filter_map(|(d, &due)| due.then_some(d))
        .collect();
    doomed.sort_by(|a, b| a.ttl.cmp(&b.ttl));
    delete_all(&engine, &doomed)
}

fn delete_all(engine: &RocksEngine, docs: &[&Keys]) -> Result<Duration> {
    let started = Instant::now();
    for chunk in docs.chunks(1000) {
        let mut b = engine.batch();
        for d in chunk {
            b.delete(RECORDS, &d.record)?;
            b.delete(TTL, &d.ttl)?;
            b.delete(SECONDARY, &d.secondary)?;
        }
        b.commit(false)?;
    }
    Ok(started.elapsed())
}

/// Time to put `n` documents' record and TTL entry.
pub fn insert(n: usize) -> Result<Duration> {
    let (_dir, engine) = open()?;
    let docs = keys(n, DateTime::now())?;
    let started = Instant::now();
    put_all(&engine, &docs, false)?;
    Ok(started.elapsed())
}
