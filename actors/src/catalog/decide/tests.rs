//! The DDL decisions against hand-made catalog records: the errors a user
//! sees (kind and message), the no-ops, and the records each command
//! leaves. No engine and no actor.

use bson::{Document, doc};
use ebb_lang::validator::{ValidationAction, ValidationLevel};
use ebb_storage::catalog::{CollectionMeta, IndexMeta};
use ebb_storage::timeseries::options::{CLUSTERED_TTL_INDEX, META_INDEX, TIME_INDEX};
use ebb_storage::{ErrorKind, Result};

use super::collections::*;
use super::indexes::*;
use super::options::*;

fn uuid() -> bson::Binary {
    bson::Binary {
        subtype: bson::spec::BinarySubtype::Uuid,
        bytes: vec![0x42; 16],
    }
}

/// The record of `test.<name>` with `options`, records in family 16.
fn coll_with(name: &str, options: Document) -> CollectionMeta {
    CollectionMeta {
        id: 16,
        db: "test".into(),
        name: name.into(),
        uuid: uuid(),
        options,
        indexes: vec![CollectionMeta::id_index(16)],
        natural: None,
    }
}

fn coll(name: &str) -> CollectionMeta {
    coll_with(name, Document::new())
}

/// A plain secondary index, family not yet assigned.
fn index(name: &str, key: Document) -> IndexMeta {
    IndexMeta {
        id: 0,
        name: name.into(),
        key,
        unique: false,
        ..CollectionMeta::id_index(0)
    }
}

/// `meta` with `indexes` added in families 17, 18, …
fn with(mut meta: CollectionMeta, indexes: Vec<IndexMeta>) -> CollectionMeta {
    for (n, index) in indexes.into_iter().enumerate() {
        meta.indexes.push(IndexMeta {
            id: 17 + n as u64,
            ..index
        });
    }
    meta
}

fn names(meta: &CollectionMeta) -> Vec<&str> {
    meta.indexes.iter().map(|i| i.name.as_str()).collect()
}

/// The error a decision returns, as the user sees it.
fn error<T: std::fmt::Debug>(r: Result<T>) -> (ErrorKind, String) {
    let e = r.expect_err("the decision should fail");
    (e.kind, e.message)
}

fn timeseries_options() -> Document {
    doc! { "timeseries": { "timeField": "t", "metaField": "m", "granularity": "seconds", "bucketMaxSpanSeconds": 3600 } }
}

fn clustered_options() -> Document {
    doc! { "clusteredIndex": { "key": { "_id": 1 }, "unique": true } }
}

fn new_collection(name: &str, options: Document) -> NewCollection {
    match create_collection(None, "test", name, options, false, uuid) {
        Ok(Create::New(new)) => new,
        other => panic!("expected a new collection, got {other:?}"),
    }
}

// create

#[test]
fn create_makes_a_collection_with_its_id_index() {
    let new = new_collection("c", doc! { "comment": "x" });
    assert_eq!(new.families(), 1);
    let meta = new.record(&[30]);
    assert_eq!(meta.id, 30);
    assert_eq!((meta.db.as_str(), meta.name.as_str()), ("test", "c"));
    assert_eq!(meta.uuid, uuid());
    assert_eq!(meta.options, doc! { "comment": "x" });
    assert_eq!(meta.indexes, vec![CollectionMeta::id_index(30)]);
    assert_eq!(meta.natural, None);
}

#[test]
fn create_of_an_existing_collection_with_the_same_options_is_a_no_op() {
    let existing = coll_with("c", doc! { "comment": "x" });
    let decided = create_collection(
        Some(&existing),
        "test",
        "c",
        doc! { "comment": "x" },
        false,
        || panic!("no new identity for an existing collection"),
    );
    assert_eq!(decided.unwrap(), Create::Exists);
}

#[test]
fn implicit_creation_takes_any_existing_collection() {
    let existing = coll_with("c", doc! { "capped": true, "size": 4096 });
    let decided = create_collection(Some(&existing), "test", "c", Document::new(), true, uuid);
    assert_eq!(decided.unwrap(), Create::Exists);
}

#[test]
fn create_with_other_options_than_the_existing_collection_fails() {
    let existing = coll("c");
    let decided = create_collection(
        Some(&existing),
        "test",
        "c",
        doc! { "capped": true, "size": 4096 },
        false,
        uuid,
    );
    assert_eq!(
        error(decided),
        (
            ErrorKind::NamespaceExists,
            "Collection test.c already exists.".to_owned()
        )
    );
}

#[test]
fn create_refuses_a_validator_the_collection_may_not_have() {
    let decided = create_collection(
        None,
        "test",
        "system.profile",
        doc! { "validator": { "a": 1 } },
        false,
        uuid,
    );
    let (kind, message) = error(decided);
    assert_eq!(kind, ErrorKind::InvalidOptions);
    assert!(
        message.starts_with(
            "Document validators not allowed on system collection test.system.profile"
        ),
        "{message}"
    );
    let decided = create_collection(
        None,
        "test",
        "c",
        doc! { "validator": { "$where": "true" } },
        false,
        uuid,
    );
    assert_eq!(
        error(decided),
        (
            ErrorKind::BadValue,
            "$where is not allowed in this context".to_owned()
        )
    );
}

#[test]
fn create_of_a_capped_collection_adds_its_insertion_order_family_last() {
    let new = new_collection("c", doc! { "capped": true, "size": 4096 });
    assert_eq!(new.families(), 2);
    let meta = new.record(&[30, 31]);
    assert_eq!(meta.id, 30);
    assert_eq!(meta.natural, Some(31));
    assert_eq!(meta.indexes, vec![CollectionMeta::id_index(30)]);
}

#[test]
fn create_of_a_timeseries_collection_adds_its_internal_indexes() {
    let new = new_collection("ts", timeseries_options());
    assert_eq!(new.families(), 3);
    let meta = new.record(&[30, 31, 32]);
    assert_eq!(names(&meta), ["_id_", TIME_INDEX, META_INDEX]);
    let ids: Vec<u64> = meta.indexes.iter().map(|i| i.id).collect();
    assert_eq!(ids, [30, 31, 32]);
    assert_eq!(meta.indexes[1].key, doc! { "control.min.t": 1 });
    assert_eq!(meta.indexes[1].expire_after_seconds, None);
    assert_eq!(meta.natural, None);
}

#[test]
fn create_of_a_clustered_collection_with_expiry_adds_its_ttl_index() {
    let mut options = clustered_options();
    options.insert("expireAfterSeconds", 60_i64);
    let new = new_collection("cl", options);
    assert_eq!(new.families(), 2);
    let meta = new.record(&[30, 31]);
    assert_eq!(names(&meta), ["_id_", CLUSTERED_TTL_INDEX]);
    assert_eq!(meta.indexes[1].id, 31);
    assert_eq!(meta.indexes[1].expire_after_seconds, Some(60));
}

#[test]
fn create_with_a_collation_gives_it_to_the_id_index() {
    let collation = doc! { "locale": "fr", "strength": 2 };
    let meta = new_collection("c", doc! { "collation": collation.clone() }).record(&[30]);
    assert_eq!(meta.indexes[0].extra, doc! { "collation": collation });
}

// drop

#[test]
fn drop_removes_every_family_and_reports_the_index_count() {
    let mut meta = with(coll("c"), vec![index("a_1", doc! { "a": 1 })]);
    meta.natural = Some(20);
    let removal = drop_collection(&meta);
    assert_eq!(
        removal,
        Removal {
            families: vec![16, 17, 20],
            wake_ttl: false,
            indexes: 2,
        }
    );
}

#[test]
fn drop_of_a_collection_with_a_ttl_index_wakes_the_monitor() {
    let mut ttl = index("at_1", doc! { "at": 1 });
    ttl.expire_after_seconds = Some(10);
    let removal = drop_collection(&with(coll("c"), vec![ttl]));
    assert!(removal.wake_ttl);
}

// createIndexes

#[test]
fn create_indexes_on_a_missing_collection_creates_it_first() {
    let build = create_indexes(None, "test", "c", vec![index("a_1", doc! { "a": 1 })]).unwrap();
    assert!(build.creates_collection);
    assert_eq!(build.families(), 1);
    assert_eq!(build.names(), ["a_1"]);
    assert_eq!(
        build.outcome(1, 2),
        CreateIndexesOutcome {
            before: 1,
            after: 2,
            created_collection: true,
            note: None,
        }
    );
}

#[test]
fn create_indexes_adds_the_new_indexes_in_their_families() {
    let current = with(coll("c"), vec![index("a_1", doc! { "a": 1 })]);
    let requested = vec![index("b_1", doc! { "b": 1 }), index("c_1", doc! { "c": 1 })];
    let build = create_indexes(Some(&current), "test", "c", requested).unwrap();
    assert!(!build.creates_collection);
    let meta = build.record(&current, &[40, 41]);
    assert_eq!(names(&meta), ["_id_", "a_1", "b_1", "c_1"]);
    assert_eq!(meta.indexes[2].id, 40);
    assert_eq!(meta.indexes[3].id, 41);
    assert_eq!(build.outcome(2, 4).note, None);
}

#[test]
fn create_indexes_of_existing_indexes_is_a_no_op() {
    let current = with(coll("c"), vec![index("a_1", doc! { "a": 1 })]);
    let requested = vec![index("a_1", doc! { "a": 1.0 }), CollectionMeta::id_index(0)];
    let build = create_indexes(Some(&current), "test", "c", requested).unwrap();
    assert!(build.new.is_empty());
    assert_eq!(build.skipped, 2);
    assert_eq!(
        build.outcome(2, 2),
        CreateIndexesOutcome {
            before: 2,
            after: 2,
            created_collection: false,
            note: Some("all indexes already exist"),
        }
    );
}

#[test]
fn create_indexes_notes_the_ones_that_exist_beside_new_ones() {
    let current = with(coll("c"), vec![index("a_1", doc! { "a": 1 })]);
    let requested = vec![index("a_1", doc! { "a": 1 }), index("b_1", doc! { "b": 1 })];
    let build = create_indexes(Some(&current), "test", "c", requested).unwrap();
    assert_eq!(build.names(), ["b_1"]);
    assert_eq!(build.outcome(2, 3).note, Some("index already exists"));
}

#[test]
fn create_indexes_counts_a_repeat_within_the_request_once() {
    let requested = vec![index("a_1", doc! { "a": 1 }), index("a_1", doc! { "a": 1 })];
    let build = create_indexes(Some(&coll("c")), "test", "c", requested).unwrap();
    assert_eq!(build.names(), ["a_1"]);
    assert_eq!(build.skipped, 1);
}

#[test]
fn create_indexes_refuses_a_name_taken_by_another_key() {
    let current = with(coll("c"), vec![index("x", doc! { "a": 1 })]);
    let decided = create_indexes(
        Some(&current),
        "test",
        "c",
        vec![index("x", doc! { "b": 1 })],
    );
    assert_eq!(
        error(decided),
        (
            ErrorKind::IndexKeySpecsConflict,
            "An existing index has the same name as the requested index. When index names are not specified, they are auto generated and can cause conflicts. Please refer to our documentation. Requested index: { v: 2, key: { b: 1 }, name: \"x\" }, existing index: { v: 2, key: { a: 1 }, name: \"x\" }".to_owned()
        )
    );
}

#[test]
fn create_indexes_refuses_the_same_index_with_other_options() {
    let mut ttl = index("a_1", doc! { "a": 1 });
    ttl.expire_after_seconds = Some(10);
    let current = with(coll("c"), vec![ttl]);
    let decided = create_indexes(
        Some(&current),
        "test",
        "c",
        vec![index("a_1", doc! { "a": 1 })],
    );
    assert_eq!(
        error(decided),
        (
            ErrorKind::IndexOptionsConflict,
            "An equivalent index already exists with the same name but different options. Requested index: { v: 2, key: { a: 1 }, name: \"a_1\" }, existing index: { v: 2, key: { a: 1 }, name: \"a_1\", expireAfterSeconds: 10 }".to_owned()
        )
    );
    let decided = create_indexes(
        Some(&current),
        "test",
        "c",
        vec![index("other", doc! { "a": 1 })],
    );
    assert_eq!(
        error(decided),
        (
            ErrorKind::IndexOptionsConflict,
            "An equivalent index already exists with a different name and options. Requested index: { v: 2, key: { a: 1 }, name: \"other\" }, existing index: { v: 2, key: { a: 1 }, name: \"a_1\", expireAfterSeconds: 10 }".to_owned()
        )
    );
}

#[test]
fn create_indexes_refuses_an_existing_index_under_another_name() {
    let current = with(coll("c"), vec![index("a_1", doc! { "a": 1 })]);
    let decided = create_indexes(
        Some(&current),
        "test",
        "c",
        vec![index("mine", doc! { "a": 1 })],
    );
    assert_eq!(
        error(decided),
        (
            ErrorKind::IndexOptionsConflict,
            "Index already exists with a different name: a_1".to_owned()
        )
    );
}

#[test]
fn create_indexes_stops_at_the_limit_per_collection() {
    let full: Vec<IndexMeta> = (1..MAX_INDEXES)
        .map(|n| index(&format!("f{n}_1"), doc! { format!("f{n}"): 1 }))
        .collect();
    let current = with(coll("c"), full);
    assert_eq!(current.indexes.len(), MAX_INDEXES);
    let decided = create_indexes(
        Some(&current),
        "test",
        "c",
        vec![index("z_1", doc! { "z": 1 })],
    );
    assert_eq!(
        error(decided),
        (
            ErrorKind::CannotCreateIndex,
            "add index fails, too many indexes for test.c key:{ z: 1 }".to_owned()
        )
    );
    // The limit counts the indexes of the same request too.
    let almost = with(
        coll("c"),
        (1..MAX_INDEXES - 1)
            .map(|n| index(&format!("f{n}_1"), doc! { format!("f{n}"): 1 }))
            .collect(),
    );
    let decided = create_indexes(
        Some(&almost),
        "test",
        "c",
        vec![index("y_1", doc! { "y": 1 }), index("z_1", doc! { "z": 1 })],
    );
    assert_eq!(error(decided).0, ErrorKind::CannotCreateIndex);
}

#[test]
fn create_indexes_gives_new_indexes_the_collection_default_collation() {
    let collation = doc! { "locale": "fr", "strength": 2 };
    let current = coll_with("c", doc! { "collation": collation.clone() });
    let mut simple = index("b_1", doc! { "b": 1 });
    simple.extra = doc! { "collation": { "locale": "simple" } };
    let requested = vec![index("a_1", doc! { "a": 1 }), simple];
    let build = create_indexes(Some(&current), "test", "c", requested).unwrap();
    assert_eq!(build.new[0].extra, doc! { "collation": collation });
    assert_eq!(build.new[1].extra, Document::new());
}

// dropIndexes

#[test]
fn drop_indexes_by_name_drops_them_and_their_families() {
    let current = with(
        coll("c"),
        vec![index("a_1", doc! { "a": 1 }), index("b_1", doc! { "b": 1 })],
    );
    let drop = drop_indexes(
        Some(&current),
        "test",
        "c",
        &DropTarget::Names(vec!["b_1".into()]),
    )
    .unwrap();
    assert_eq!(drop.before, 3);
    let change = drop.change.expect("b_1 is dropped");
    assert_eq!(names(&change.record), ["_id_", "a_1"]);
    assert_eq!(change.families, [18]);
}

#[test]
fn drop_indexes_star_keeps_the_id_and_internal_indexes() {
    let new = new_collection("cl", clustered_options());
    let current = with(
        new.record(&[16, 20]),
        vec![index("a_1", doc! { "a": 1 }), index("b_1", doc! { "b": 1 })],
    );
    let drop = drop_indexes(Some(&current), "test", "cl", &DropTarget::All).unwrap();
    assert_eq!(drop.before, 4);
    let change = drop.change.expect("a_1 and b_1 are dropped");
    assert_eq!(names(&change.record), ["_id_", CLUSTERED_TTL_INDEX]);
    assert_eq!(change.families, [17, 18]);
}

#[test]
fn drop_indexes_with_nothing_to_drop_is_a_no_op() {
    let current = coll("c");
    let drop = drop_indexes(Some(&current), "test", "c", &DropTarget::All).unwrap();
    assert_eq!(
        drop,
        IndexDrop {
            before: 1,
            change: None,
        }
    );
    let drop = drop_indexes(Some(&current), "test", "c", &DropTarget::Names(vec![])).unwrap();
    assert_eq!(drop.change, None);
}

#[test]
fn drop_indexes_on_a_missing_collection_fails() {
    let decided = drop_indexes(None, "test", "c", &DropTarget::All);
    assert_eq!(
        error(decided),
        (
            ErrorKind::NamespaceNotFound,
            "ns not found test.c".to_owned()
        )
    );
}

#[test]
fn drop_indexes_refuses_the_id_index() {
    let current = coll("c");
    let by_name = drop_indexes(
        Some(&current),
        "test",
        "c",
        &DropTarget::Names(vec!["_id_".into()]),
    );
    assert_eq!(
        error(by_name),
        (
            ErrorKind::InvalidOptions,
            "cannot drop _id index".to_owned()
        )
    );
    let by_key = drop_indexes(
        Some(&current),
        "test",
        "c",
        &DropTarget::Key(doc! { "_id": 1 }),
    );
    assert_eq!(
        error(by_key),
        (
            ErrorKind::InvalidOptions,
            "cannot drop _id index".to_owned()
        )
    );
}

#[test]
fn drop_indexes_by_name_fails_on_an_unknown_or_internal_index() {
    let current = with(coll("c"), vec![index("a_1", doc! { "a": 1 })]);
    let decided = drop_indexes(
        Some(&current),
        "test",
        "c",
        &DropTarget::Names(vec!["a_1".into(), "nope".into()]),
    );
    assert_eq!(
        error(decided),
        (
            ErrorKind::IndexNotFound,
            "index not found with name [nope]".to_owned()
        )
    );
    let clustered = new_collection("cl", clustered_options()).record(&[16, 17]);
    let decided = drop_indexes(
        Some(&clustered),
        "test",
        "cl",
        &DropTarget::Names(vec![CLUSTERED_TTL_INDEX.into()]),
    );
    assert_eq!(
        error(decided),
        (
            ErrorKind::IndexNotFound,
            format!("index not found with name [{CLUSTERED_TTL_INDEX}]")
        )
    );
}

#[test]
fn drop_indexes_by_key_drops_the_one_index_with_that_key() {
    let mut unique = index("b_1", doc! { "b": 1 });
    unique.unique = true;
    let current = with(coll("c"), vec![index("a_1", doc! { "a": 1 }), unique]);
    let drop = drop_indexes(
        Some(&current),
        "test",
        "c",
        &DropTarget::Key(doc! { "b": 1.0 }),
    )
    .unwrap();
    let change = drop.change.expect("b_1 is dropped");
    assert_eq!(names(&change.record), ["_id_", "a_1"]);
    assert_eq!(change.families, [18]);
}

#[test]
fn drop_indexes_by_key_fails_when_no_or_several_indexes_have_it() {
    let mut partial = index("a_partial", doc! { "a": 1 });
    partial.partial_filter = Some(doc! { "a": { "$gt": 0 } });
    let current = with(coll("c"), vec![index("a_1", doc! { "a": 1 }), partial]);
    let none = drop_indexes(
        Some(&current),
        "test",
        "c",
        &DropTarget::Key(doc! { "b": 1 }),
    );
    assert_eq!(
        error(none),
        (
            ErrorKind::IndexNotFound,
            "can't find index with key: { b: 1 }".to_owned()
        )
    );
    let many = drop_indexes(
        Some(&current),
        "test",
        "c",
        &DropTarget::Key(doc! { "a": 1 }),
    );
    assert_eq!(
        error(many),
        (
            ErrorKind::AmbiguousIndexKeyPattern,
            "2 indexes found for key: { a: 1 }, identify by name instead. Conflicting indexes: { v: 2, key: { a: 1 }, name: \"a_1\" }, { v: 2, key: { a: 1 }, name: \"a_partial\", partialFilterExpression: { a: { $gt: 0 } } }".to_owned()
        )
    );
}

// renameCollection

fn ns(db: &str, name: &str) -> (String, String) {
    (db.to_owned(), name.to_owned())
}

#[test]
fn rename_moves_the_record_and_drops_the_temp_flag() {
    let source = with(
        coll_with("a", doc! { "temp": true, "comment": "x" }),
        vec![index("x_1", doc! { "x": 1 })],
    );
    let plan = rename(
        Some(&source),
        false,
        &ns("test", "a"),
        &ns("other", "b"),
        false,
        false,
    )
    .unwrap();
    assert!(!plan.drop_target);
    assert_eq!(
        (plan.record.db.as_str(), plan.record.name.as_str()),
        ("other", "b")
    );
    assert_eq!(plan.record.options, doc! { "comment": "x" });
    assert_eq!(plan.record.id, source.id);
    assert_eq!(plan.record.uuid, source.uuid);
    assert_eq!(plan.record.indexes, source.indexes);
}

#[test]
fn rename_with_stay_temp_keeps_the_temp_flag() {
    let source = coll_with("a", doc! { "temp": true });
    let plan = rename(
        Some(&source),
        false,
        &ns("test", "a"),
        &ns("test", "b"),
        false,
        true,
    )
    .unwrap();
    assert_eq!(plan.record.options, doc! { "temp": true });
}

#[test]
fn rename_over_an_existing_target_needs_drop_target() {
    let source = coll("a");
    let refused = rename(
        Some(&source),
        true,
        &ns("test", "a"),
        &ns("test", "b"),
        false,
        false,
    );
    assert_eq!(
        error(refused),
        (
            ErrorKind::NamespaceExists,
            "target namespace exists".to_owned()
        )
    );
    let plan = rename(
        Some(&source),
        true,
        &ns("test", "a"),
        &ns("test", "b"),
        true,
        false,
    )
    .unwrap();
    assert!(plan.drop_target);
    assert_eq!(plan.record.name, "b");
    let plan = rename(
        Some(&source),
        false,
        &ns("test", "a"),
        &ns("test", "b"),
        true,
        false,
    )
    .unwrap();
    assert!(!plan.drop_target);
}

#[test]
fn rename_of_a_missing_collection_fails() {
    let decided = rename(None, true, &ns("test", "a"), &ns("test", "b"), true, false);
    assert_eq!(
        error(decided),
        (
            ErrorKind::NamespaceNotFound,
            "Source collection test.a does not exist".to_owned()
        )
    );
}

#[test]
fn rename_to_itself_fails() {
    let source = coll("a");
    let decided = rename(
        Some(&source),
        true,
        &ns("test", "a"),
        &ns("test", "a"),
        true,
        false,
    );
    assert_eq!(
        error(decided),
        (
            ErrorKind::IllegalOperation,
            "Can't rename a collection to itself".to_owned()
        )
    );
}

#[test]
fn rename_of_a_timeseries_collection_fails() {
    let source = new_collection("ts", timeseries_options()).record(&[16, 17, 18]);
    let decided = rename(
        Some(&source),
        false,
        &ns("test", "ts"),
        &ns("test", "b"),
        false,
        false,
    );
    assert_eq!(
        error(decided),
        (
            ErrorKind::IllegalOperation,
            "Renaming a time-series collection is not allowed: test.ts".to_owned()
        )
    );
}

// collMod of an index

fn set_expiry(target: IndexTarget, secs: i32) -> IndexChange {
    IndexChange {
        target,
        apply: Box::new(move |index: &mut IndexMeta| {
            index.expire_after_seconds = Some(secs);
            Ok(())
        }),
    }
}

fn ttl_collection() -> CollectionMeta {
    let mut ttl = index("at_1", doc! { "at": 1 });
    ttl.expire_after_seconds = Some(10);
    with(coll("c"), vec![ttl, index("b_1", doc! { "b": 1 })])
}

#[test]
fn modify_index_by_name_edits_that_index() {
    let current = ttl_collection();
    let m = modify_index(
        Some(&current),
        "test",
        "c",
        set_expiry(IndexTarget::Name("at_1".into()), 20),
    )
    .unwrap();
    assert_eq!(m.outcome.before.expire_after_seconds, Some(10));
    assert_eq!(m.outcome.after.expire_after_seconds, Some(20));
    let record = m.record.expect("the index changed");
    assert_eq!(record.indexes[1].expire_after_seconds, Some(20));
    assert_eq!(record.indexes[2], current.indexes[2]);
}

#[test]
fn modify_index_by_key_finds_the_index() {
    let current = ttl_collection();
    let m = modify_index(
        Some(&current),
        "test",
        "c",
        set_expiry(IndexTarget::Key(doc! { "at": 1 }), 30),
    )
    .unwrap();
    assert_eq!(m.outcome.after.name, "at_1");
    assert_eq!(m.record.unwrap().indexes[1].expire_after_seconds, Some(30));
}

#[test]
fn modify_index_without_a_change_is_a_no_op() {
    let current = ttl_collection();
    let m = modify_index(
        Some(&current),
        "test",
        "c",
        set_expiry(IndexTarget::Name("at_1".into()), 10),
    )
    .unwrap();
    assert_eq!(m.outcome.before, m.outcome.after);
    assert_eq!(m.record, None);
}

#[test]
fn modify_index_passes_on_the_edit_refusal() {
    let current = ttl_collection();
    let change = IndexChange {
        target: IndexTarget::Name("_id_".into()),
        apply: Box::new(|_: &mut IndexMeta| {
            Err(ebb_storage::Error::new(
                ErrorKind::InvalidOptions,
                "can't hide _id index",
            ))
        }),
    };
    let decided = modify_index(Some(&current), "test", "c", change);
    assert_eq!(
        error(decided),
        (ErrorKind::InvalidOptions, "can't hide _id index".to_owned())
    );
}

#[test]
fn modify_index_fails_on_a_missing_collection_or_index() {
    let decided = modify_index(
        None,
        "test",
        "c",
        set_expiry(IndexTarget::Name("at_1".into()), 1),
    );
    assert_eq!(
        error(decided),
        (
            ErrorKind::NamespaceNotFound,
            "ns not found test.c".to_owned()
        )
    );
    let current = ttl_collection();
    let decided = modify_index(
        Some(&current),
        "test",
        "c",
        set_expiry(IndexTarget::Name("nope".into()), 1),
    );
    assert_eq!(
        error(decided),
        (
            ErrorKind::IndexNotFound,
            "cannot find index nope for ns test.c".to_owned()
        )
    );
    let decided = modify_index(
        Some(&current),
        "test",
        "c",
        set_expiry(IndexTarget::Key(doc! { "z": 1 }), 1),
    );
    assert_eq!(
        error(decided),
        (
            ErrorKind::IndexNotFound,
            "cannot find index { z: 1 } for ns test.c".to_owned()
        )
    );
}

#[test]
fn modify_index_by_a_key_several_indexes_have_fails() {
    let mut sparse = index("b_sparse", doc! { "b": 1 });
    sparse.sparse = true;
    let current = with(ttl_collection(), vec![sparse]);
    let decided = modify_index(
        Some(&current),
        "test",
        "c",
        set_expiry(IndexTarget::Key(doc! { "b": 1 }), 1),
    );
    assert_eq!(
        error(decided),
        (
            ErrorKind::AmbiguousIndexKeyPattern,
            "index keyPattern { b: 1 } matches 2 indexes, must use index name. Conflicting indexes: { v: 2, key: { b: 1 }, name: \"b_1\" }, { v: 2, key: { b: 1 }, name: \"b_sparse\", sparse: true }".to_owned()
        )
    );
}

// collMod of a collection's expiry

#[test]
fn modify_expiry_sets_and_clears_the_clustered_ttl() {
    let current = new_collection("cl", clustered_options()).record(&[16, 17]);
    let set = modify_expiry(Some(&current), "test", "cl", Some(60))
        .unwrap()
        .expect("the expiry changed");
    assert_eq!(
        set.options.get("expireAfterSeconds"),
        Some(&bson::Bson::Int64(60))
    );
    assert_eq!(set.indexes[1].expire_after_seconds, Some(60));
    let off = modify_expiry(Some(&set), "test", "cl", None)
        .unwrap()
        .expect("the expiry changed");
    assert_eq!(off.options, current.options);
    assert_eq!(off.indexes, current.indexes);
}

#[test]
fn modify_expiry_of_a_timeseries_collection_covers_the_bucket_span() {
    let current = new_collection("ts", timeseries_options()).record(&[16, 17, 18]);
    let meta = modify_expiry(Some(&current), "test", "ts", Some(60))
        .unwrap()
        .expect("the expiry changed");
    assert_eq!(meta.indexes[1].name, TIME_INDEX);
    assert_eq!(meta.indexes[1].expire_after_seconds, Some(3660));
    assert_eq!(meta.indexes[2].expire_after_seconds, None);
}

#[test]
fn modify_expiry_to_the_current_value_is_a_no_op() {
    let mut options = clustered_options();
    options.insert("expireAfterSeconds", 60_i64);
    let current = new_collection("cl", options).record(&[16, 17]);
    assert_eq!(
        modify_expiry(Some(&current), "test", "cl", Some(60)).unwrap(),
        None
    );
    let plain = coll("c");
    assert_eq!(
        modify_expiry(Some(&plain), "test", "c", None).unwrap(),
        None
    );
}

#[test]
fn modify_expiry_of_a_missing_collection_fails() {
    assert_eq!(
        error(modify_expiry(None, "test", "c", Some(1))),
        (
            ErrorKind::NamespaceNotFound,
            "ns not found test.c".to_owned()
        )
    );
}

// collMod of validation options

#[test]
fn modify_validation_sets_a_validator_after_the_other_options() {
    let current = coll_with("c", doc! { "comment": "x" });
    let change = ValidationChange {
        validator: Some(doc! { "a": { "$exists": true } }),
        ..ValidationChange::default()
    };
    let meta = modify_validation(Some(&current), "test", "c", change)
        .unwrap()
        .expect("the validator changed");
    assert_eq!(
        meta.options,
        doc! { "comment": "x", "validator": { "a": { "$exists": true } } }
    );
}

#[test]
fn modify_validation_with_an_empty_validator_removes_it() {
    let current = coll_with("c", doc! { "validator": { "a": 1 } });
    let change = ValidationChange {
        validator: Some(Document::new()),
        ..ValidationChange::default()
    };
    let meta = modify_validation(Some(&current), "test", "c", change)
        .unwrap()
        .expect("the validator is removed");
    assert_eq!(meta.options, Document::new());
}

#[test]
fn modify_validation_writes_both_level_and_action() {
    let current = coll_with(
        "c",
        doc! { "validator": { "a": 1 }, "validationLevel": "moderate", "validationAction": "warn", "comment": "x" },
    );
    let change = ValidationChange {
        level: Some(ValidationLevel::Strict),
        ..ValidationChange::default()
    };
    let meta = modify_validation(Some(&current), "test", "c", change)
        .unwrap()
        .expect("the level changed");
    assert_eq!(
        meta.options,
        doc! { "comment": "x", "validator": { "a": 1 }, "validationLevel": "strict", "validationAction": "warn" }
    );
    let plain = coll("c");
    let change = ValidationChange {
        action: Some(ValidationAction::Warn),
        ..ValidationChange::default()
    };
    let meta = modify_validation(Some(&plain), "test", "c", change)
        .unwrap()
        .expect("the action changed");
    assert_eq!(
        meta.options,
        doc! { "validationLevel": "strict", "validationAction": "warn" }
    );
}

#[test]
fn modify_validation_to_the_current_options_is_a_no_op() {
    let current = coll_with(
        "c",
        doc! { "validator": { "a": 1 }, "validationLevel": "strict", "validationAction": "error" },
    );
    let change = ValidationChange {
        validator: Some(doc! { "a": 1 }),
        level: Some(ValidationLevel::Strict),
        action: None,
    };
    assert_eq!(
        modify_validation(Some(&current), "test", "c", change).unwrap(),
        None
    );
    let untouched = modify_validation(Some(&current), "test", "c", ValidationChange::default());
    assert_eq!(untouched.unwrap(), None);
}

#[test]
fn modify_validation_refuses_a_bad_validator_or_a_missing_collection() {
    let current = coll("c");
    let change = ValidationChange {
        validator: Some(doc! { "$where": "true" }),
        ..ValidationChange::default()
    };
    assert_eq!(
        error(modify_validation(Some(&current), "test", "c", change)),
        (
            ErrorKind::BadValue,
            "$where is not allowed in this context".to_owned()
        )
    );
    assert_eq!(
        error(modify_validation(
            None,
            "test",
            "c",
            ValidationChange::default()
        )),
        (
            ErrorKind::NamespaceNotFound,
            "ns does not exist: test.c".to_owned()
        )
    );
}
