//! Criterion micro-benchmarks of the hot paths: key encoding, filter
//! matching, the TTL range scan + batch delete in the storage layer, and
//! queries on an indexed string field with a collation or a regex against
//! their binary equivalents, and a full find and count over a collection
//! with a TTL index with due documents hidden against shown.
//!
//! `cargo bench --bench micro` (release profile). Figures and their
//! context live in BENCHMARKS.md.

use std::hint::black_box;

use bson::{RawBsonRef, RawDocumentBuf, doc, rawdoc};
use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use ebb_lang::encoding::collation::Collation;
use ebb_lang::encoding::keycode;
use ebb_lang::query::filter::Filter;
use ebb_storage::catalog::{CollectionMeta, IndexMeta};
use ebb_storage::engine::rocks::{RocksEngine, RocksOptions};
use ebb_storage::engine::{Cf, Engine};
use ebb_storage::plan::exec::QueryCursor;
use ebb_storage::plan::{self, QuerySpec};
use ebb_storage::statement as ops;
use ebb_storage::{Collection, ttl};

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
fn collection(engine: &RocksEngine) -> std::sync::Arc<Collection> {
    let mut meta = CollectionMeta {
        id: 100,
        db: "bench".into(),
        name: "c".into(),
        uuid: bson::Binary {
            subtype: bson::spec::BinarySubtype::Uuid,
            bytes: vec![0; 16],
        },
        options: doc! {},
        natural: None,
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
    Collection::new(meta).unwrap()
}

fn docs(n: usize) -> Vec<RawDocumentBuf> {
    let at = bson::DateTime::from_millis(1_000);
    (0..n).map(|i| rawdoc! { "_id": bson::oid::ObjectId::new(), "at": at, "k": (i % 1000) as i32, "payload": "p".repeat(100) }).collect()
}

/// A RocksDB in a temp dir with 64 MiB of block cache and memtables.
fn temp_engine() -> (tempfile::TempDir, RocksEngine) {
    let dir = tempfile::tempdir().unwrap();
    let engine = RocksEngine::open(&RocksOptions {
        path: dir.path().to_path_buf(),
        block_cache_bytes: 64 << 20,
        write_buffer_bytes: 64 << 20,
    })
    .unwrap();
    (dir, engine)
}

fn ttl_chunk(c: &mut Criterion) {
    let (_dir, engine) = temp_engine();
    let coll = collection(&engine);
    let mut g = c.benchmark_group("ttl");
    const CHUNK: usize = 1024;
    g.throughput(Throughput::Elements(CHUNK as u64));
    g.bench_function("expire_chunk_1024", |b| {
        b.iter_batched(
            || ops::insert(&engine, &coll, docs(CHUNK), true).unwrap(),
            |_| {
                let chunk = ttl::Chunk {
                    index: "at_1",
                    cutoff_millis: 2_000,
                    limit: CHUNK,
                    resume_after: None,
                };
                let out =
                    ttl::expire(&engine, &coll, chunk, &ttl::ExpiryPolicy::default()).unwrap();
                assert_eq!(out.deleted, CHUNK as u64);
            },
            BatchSize::PerIteration,
        )
    });
    g.throughput(Throughput::Elements(CHUNK as u64));
    g.bench_function("insert_batch_1024", |b| {
        b.iter_batched(
            || docs(CHUNK),
            |d| ops::insert(&engine, &coll, d, true).unwrap(),
            BatchSize::PerIteration,
        )
    });
    g.finish();
}

/// 10,000 documents with a string key `k` ("user-00000"…), indexed twice:
/// `k_1` in binary order and `k_ci` with a case-insensitive collation.
fn string_collection(engine: &RocksEngine) -> std::sync::Arc<Collection> {
    let mut meta = CollectionMeta {
        id: 200,
        db: "bench".into(),
        name: "s".into(),
        uuid: bson::Binary {
            subtype: bson::spec::BinarySubtype::Uuid,
            bytes: vec![0; 16],
        },
        options: doc! {},
        natural: None,
        indexes: vec![CollectionMeta::id_index(200)],
    };
    let mut binary = IndexMeta {
        id: 201,
        name: "k_1".into(),
        key: doc! { "k": 1 },
        ..CollectionMeta::id_index(0)
    };
    binary.unique = false;
    let mut ci = IndexMeta {
        id: 202,
        name: "k_ci".into(),
        ..binary.clone()
    };
    ci.extra
        .insert("collation", case_insensitive().to_document());
    meta.indexes.extend([binary, ci]);
    for cf in [200, 201, 202] {
        engine.create_cf(ebb_storage::engine::Cf::Id(cf)).unwrap();
    }
    let coll = Collection::new(meta).unwrap();
    let docs = (0..10_000)
        .map(|i| rawdoc! { "_id": i, "k": format!("user-{i:05}"), "payload": "p".repeat(100) })
        .collect();
    ops::insert(engine, &coll, docs, true).unwrap();
    coll
}

fn case_insensitive() -> std::sync::Arc<Collation> {
    Collation::parse(RawBsonRef::Document(
        &rawdoc! { "locale": "en_US", "strength": 2 },
    ))
    .unwrap()
    .unwrap()
}

/// Runs a query to the end through the planner and returns how many
/// documents matched.
fn run_query(engine: &RocksEngine, coll: &std::sync::Arc<Collection>, spec: &QuerySpec) -> usize {
    let plan = plan::plan(&coll.meta, spec).unwrap();
    assert_eq!(plan.stage, "IXSCAN", "{spec:?}");
    let snap = engine.snapshot();
    let mut cursor =
        QueryCursor::new(coll, plan, spec.filter.clone(), spec.sort.clone(), 0, None).unwrap();
    let mut n = 0;
    cursor
        .for_each(snap.as_ref(), &mut |_| {
            n += 1;
            true
        })
        .unwrap();
    n
}

fn indexed_strings(c: &mut Criterion) {
    let (_dir, engine) = temp_engine();
    let coll = string_collection(&engine);
    let spec = |filter: bson::RawDocumentBuf, collation| QuerySpec {
        filter: Filter::parse(&filter).unwrap().collated(collation),
        sort: None,
        hint: None,
    };
    let cases = [
        ("eq_binary", spec(rawdoc! { "k": "user-04242" }, None), 1),
        (
            "eq_collated",
            spec(rawdoc! { "k": "USER-04242" }, Some(case_insensitive())),
            1,
        ),
        (
            "range_binary",
            spec(
                rawdoc! { "k": { "$gte": "user-042", "$lt": "user-043" } },
                None,
            ),
            100,
        ),
        (
            "range_collated",
            spec(
                rawdoc! { "k": { "$gte": "USER-042", "$lt": "USER-043" } },
                Some(case_insensitive()),
            ),
            100,
        ),
        (
            "regex_prefix",
            spec(rawdoc! { "k": { "$regex": "^user-042" } }, None),
            100,
        ),
    ];
    let mut g = c.benchmark_group("indexed_string");
    for (name, q, expected) in &cases {
        assert_eq!(run_query(&engine, &coll, q), *expected, "{name}");
        g.bench_function(*name, |b| {
            b.iter(|| run_query(&engine, &coll, black_box(q)))
        });
    }
    g.finish();

    // The per-document check alone: one string equality, bytes vs ICU.
    let binary = Filter::parse(&rawdoc! { "k": "user-04242" }).unwrap();
    let collated = Filter::parse(&rawdoc! { "k": "USER-04242" })
        .unwrap()
        .collated(Some(case_insensitive()));
    let regex = Filter::parse(&rawdoc! { "k": { "$regex": "^user-042" } }).unwrap();
    let doc = rawdoc! { "_id": 1, "k": "user-04242", "payload": "p".repeat(100) };
    let mut g = c.benchmark_group("string_match");
    g.bench_function("binary", |b| b.iter(|| binary.matches(black_box(&doc))));
    g.bench_function("collated", |b| b.iter(|| collated.matches(black_box(&doc))));
    g.bench_function("regex_prefix", |b| {
        b.iter(|| regex.matches(black_box(&doc)))
    });
    g.finish();
}

/// Hides what is due at a fixed time, as the node's visibility does.
#[derive(Debug)]
struct HideAt(i64);

impl ebb_storage::collection::HideDue for HideAt {
    fn hide_at(&self) -> Option<i64> {
        Some(self.0)
    }
}

/// `find({})` and `count` over 10,000 documents of a collection with a TTL
/// index, shown as MongoDB shows them against hidden when due: with none
/// due and with one due (a batch lists the due record keys from the TTL
/// index first and passes over those).
fn hiding(c: &mut Criterion) {
    let (_dir, engine) = temp_engine();
    let shown = collection(&engine);
    let later = bson::DateTime::from_millis(4_102_444_800_000); // 2100
    let early = bson::DateTime::from_millis(1_000);
    let docs = (0..10_000)
        .map(|i| {
            let at = if i == 5_000 { early } else { later };
            rawdoc! { "_id": i, "at": at, "k": i % 1000, "payload": "p".repeat(100) }
        })
        .collect();
    ops::insert(&engine, &shown, docs, true).unwrap();
    engine.flush().unwrap();
    let hiding_at =
        |now| Collection::open(shown.meta.clone(), std::sync::Arc::new(HideAt(now))).unwrap();
    let none_due = hiding_at(500);
    let one_due = hiding_at(1_767_225_600_000);
    let scan = |coll: &std::sync::Arc<Collection>, expected: usize| {
        let spec = QuerySpec {
            filter: Filter::parse(&rawdoc! {}).unwrap(),
            sort: None,
            hint: None,
        };
        let plan = plan::plan(&coll.meta, &spec).unwrap();
        let snap = engine.snapshot();
        let mut cursor = QueryCursor::new(coll, plan, spec.filter, None, 0, None).unwrap();
        let mut n = 0;
        cursor
            .for_each(snap.as_ref(), &mut |_| {
                n += 1;
                true
            })
            .unwrap();
        assert_eq!(n, expected);
    };
    let count = |coll: &std::sync::Arc<Collection>, expected: u64| {
        let snap = engine.snapshot();
        assert_eq!(ttl::count_unhidden(snap.as_ref(), coll).unwrap(), expected);
    };
    let mut g = c.benchmark_group("hide_expired");
    g.throughput(Throughput::Elements(10_000));
    g.bench_function("find_all_shown", |b| b.iter(|| scan(&shown, 10_000)));
    g.bench_function("find_all_hidden_none_due", |b| {
        b.iter(|| scan(&none_due, 10_000))
    });
    g.bench_function("find_all_hidden_one_due", |b| {
        b.iter(|| scan(&one_due, 9_999))
    });
    g.bench_function("count_shown", |b| b.iter(|| count(&shown, 10_000)));
    g.bench_function("count_hidden_none_due", |b| {
        b.iter(|| count(&none_due, 10_000))
    });
    g.bench_function("count_hidden_one_due", |b| {
        b.iter(|| count(&one_due, 9_999))
    });
    g.finish();
}

/// Deleting scattered keys: 2 M 150-byte records, and 65,536 keys spread
/// over all of them deleted in sorted batches of 8,192 or 32,768 (a TTL
/// chunk's record deletes when due documents are interleaved with live
/// ones). The wider a sorted batch, the closer its consecutive keys sit in
/// the memtable's skiplist, and the less each insert searches
/// (`ExpiryPolicy::quiet_chunk_max_docs`). The deleted keys are put back
/// between iterations, outside the timing.
fn scattered_deletes(c: &mut Criterion) {
    const RECORDS: u64 = 2_000_000;
    const DELETES: usize = 65_536;
    let key = |i: u64| ((i.wrapping_mul(2_654_435_761) % (1 << 40)) | (1 << 41)).to_be_bytes();
    let mut g = c.benchmark_group("rocks");
    g.sample_size(10);
    g.throughput(Throughput::Elements(DELETES as u64));
    for batch in [8_192usize, 32_768] {
        let (_dir, engine) = temp_engine();
        let cf = Cf::Id(1);
        engine.create_cf(cf).unwrap();
        let value = vec![7u8; 150];
        for start in (0..RECORDS).step_by(1000) {
            let mut b = engine.batch();
            for i in start..start + 1000 {
                b.put(cf, &key(i), &value).unwrap();
            }
            b.commit(false).unwrap();
        }
        let mut round = 0u64;
        g.bench_function(format!("scattered_deletes_batch_{batch}"), |b| {
            b.iter_custom(|iters| {
                let mut spent = std::time::Duration::ZERO;
                for _ in 0..iters {
                    round += 1;
                    // Every 30th record, shifted each round.
                    let step = RECORDS / DELETES as u64;
                    let doomed: Vec<[u8; 8]> = (0..DELETES as u64)
                        .map(|i| key((i * step + round * 7) % RECORDS))
                        .collect();
                    let started = std::time::Instant::now();
                    for part in doomed.chunks(batch) {
                        let mut sorted = part.to_vec();
                        sorted.sort_unstable();
                        let mut b = engine.batch();
                        for k in &sorted {
                            b.delete(cf, k).unwrap();
                        }
                        b.commit(false).unwrap();
                    }
                    spent += started.elapsed();
                    let mut b = engine.batch();
                    for k in &doomed {
                        b.put(cf, k, &value).unwrap();
                    }
                    b.commit(false).unwrap();
                }
                spent
            })
        });
    }
    g.finish();
}

criterion_group!(
    benches,
    encoding,
    matching,
    ttl_chunk,
    indexed_strings,
    hiding,
    scattered_deletes
);
criterion_main!(benches);
