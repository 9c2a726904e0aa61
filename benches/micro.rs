//! Criterion micro-benchmarks of the hot paths: key encoding, filter
//! matching, and the TTL range scan + batch delete in the storage layer.
//!
//! `cargo bench --bench micro` (release profile). Figures and their
//! context live in BENCHMARKS.md.

use std::hint::black_box;

use bson::{RawBsonRef, RawDocumentBuf, doc, rawdoc};
use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use ebb_storage::catalog::{CollectionMeta, IndexMeta};
use ebb_storage::encoding::keycode;
use ebb_storage::engine::Engine;
use ebb_storage::engine::rocks::{RocksEngine, RocksOptions};
use ebb_storage::query::filter::Filter;
use ebb_storage::write::statement as ops;
use ebb_storage::{IndexSet, ttl};

fn encoding(c: &mut Criterion) {
    let oid = bson::oid::ObjectId::new();
    let date = bson::DateTime::now();
    let mut g = c.benchmark_group("keycode");
    g.bench_function("encode_objectid", |b| {
        b.iter(|| keycode::encode_key(black_box(RawBsonRef::ObjectId(oid))))
    });
    g.bench_function("encode_date", |b| {
        b.iter(|| keycode::encode_key(black_box(RawBsonRef::DateTime(date))))
    });
    g.bench_function("encode_double", |b| {
        b.iter(|| keycode::encode_key(black_box(RawBsonRef::Double(12345.678))))
    });
    g.bench_function("encode_string", |b| {
        b.iter(|| keycode::encode_key(black_box(RawBsonRef::String("session-0123456789"))))
    });
    let key = keycode::encode_key(RawBsonRef::Double(12345.678));
    g.bench_function("decode_double", |b| {
        b.iter(|| {
            let mut input = black_box(key.as_slice());
            keycode::decode_value(&mut input).unwrap()
        })
    });
    g.finish();
}

fn matching(c: &mut Criterion) {
    let filter = Filter::parse(
        &rawdoc! { "status": "active", "age": { "$gte": 18, "$lt": 65 }, "tags": "x" },
    )
    .unwrap();
    let hit = rawdoc! { "_id": 1, "status": "active", "age": 30, "tags": ["a", "x"], "payload": "p".repeat(100) };
    let miss = rawdoc! { "_id": 2, "status": "idle", "age": 30, "tags": ["a"], "payload": "p".repeat(100) };
    let mut g = c.benchmark_group("filter");
    g.bench_function("match_hit", |b| {
        b.iter(|| filter.matches(black_box(&hit)).unwrap())
    });
    g.bench_function("match_miss", |b| {
        b.iter(|| filter.matches(black_box(&miss)).unwrap())
    });
    g.finish();
}

/// A collection with a TTL index on `at` and a secondary index on `k`.
fn collection(engine: &RocksEngine) -> std::sync::Arc<IndexSet> {
    let mut meta = CollectionMeta {
        id: 100,
        db: "bench".into(),
        name: "c".into(),
        uuid: bson::Binary {
            subtype: bson::spec::BinarySubtype::Uuid,
            bytes: vec![0; 16],
        },
        options: doc! {},
        indexes: vec![CollectionMeta::id_index(100)],
    };
    let index = |id, name: &str, key| IndexMeta {
        id,
        name: name.into(),
        key,
        ..CollectionMeta::id_index(0)
    };
    let mut ttl = index(101, "at_1", doc! { "at": 1 });
    ttl.unique = false;
    ttl.expire_after_seconds = Some(0);
    let mut k = index(102, "k_1", doc! { "k": 1 });
    k.unique = false;
    meta.indexes.extend([ttl, k]);
    for cf in [100, 101, 102] {
        engine.create_cf(ebb_storage::engine::Cf::Id(cf)).unwrap();
    }
    IndexSet::new(meta).unwrap()
}

fn docs(n: usize) -> Vec<RawDocumentBuf> {
    let at = bson::DateTime::from_millis(1_000);
    (0..n).map(|i| rawdoc! { "_id": bson::oid::ObjectId::new(), "at": at, "k": (i % 1000) as i32, "payload": "p".repeat(100) }).collect()
}

fn ttl_chunk(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let engine = RocksEngine::open(&RocksOptions {
        path: dir.path().to_path_buf(),
        block_cache_bytes: 64 << 20,
        write_buffer_bytes: 64 << 20,
    })
    .unwrap();
    let set = collection(&engine);
    let mut g = c.benchmark_group("ttl");
    const CHUNK: usize = 1024;
    g.throughput(Throughput::Elements(CHUNK as u64));
    g.bench_function("expire_chunk_1024", |b| {
        b.iter_batched(
            || ops::insert(&engine, &set, docs(CHUNK), true).unwrap(),
            |_| {
                let chunk = ttl::Chunk {
                    index: "at_1",
                    cutoff_millis: 2_000,
                    limit: CHUNK,
                    resume_after: None,
                };
                let out = ttl::expire(&engine, &set, chunk, &ttl::ExpiryPolicy::default()).unwrap();
                assert_eq!(out.deleted, CHUNK as u64);
            },
            BatchSize::PerIteration,
        )
    });
    g.throughput(Throughput::Elements(CHUNK as u64));
    g.bench_function("insert_batch_1024", |b| {
        b.iter_batched(
            || docs(CHUNK),
            |d| ops::insert(&engine, &set, d, true).unwrap(),
            BatchSize::PerIteration,
        )
    });
    g.finish();
}

criterion_group!(benches, encoding, matching, ttl_chunk);
criterion_main!(benches);
