//! TTL index creation, listing and collMod: MongoDB's rules and errors
//! (createIndexes validation of expireAfterSeconds, conflicts, listIndexes,
//! collMod), through the Rust driver.

use crate::common::{TestNode, expect_code};
use mongodb::bson::{Bson, Document, doc};

async fn create(db: &mongodb::Database, spec: Document) -> mongodb::error::Result<Document> {
    db.run_command(doc! { "createIndexes": "events", "indexes": [spec] })
        .await
}

async fn index_named(db: &mongodb::Database, name: &str) -> Option<Document> {
    let r = db
        .run_command(doc! { "listIndexes": "events" })
        .await
        .ok()?;
    r.get_document("cursor")
        .ok()?
        .get_array("firstBatch")
        .ok()?
        .iter()
        .map(|b| b.as_document().unwrap().clone())
        .find(|d| d.get_str("name").ok() == Some(name))
}

#[tokio::test]
async fn expire_after_seconds_accepts_any_number_in_range_stored_as_int32() {
    let node = TestNode::start();
    let db = node.db("ttl").await;
    let cases: Vec<(Bson, i32)> = vec![
        (Bson::Int32(0), 0),
        (Bson::Int32(3600), 3600),
        (Bson::Int64(7200), 7200),
        (Bson::Double(10000.7), 10000),
        (Bson::Double(1.5), 1),
        (Bson::Int32(i32::MAX), i32::MAX),
        (Bson::Decimal128("42".parse().unwrap()), 42),
    ];
    for (i, (value, stored)) in cases.into_iter().enumerate() {
        let field = format!("f{i}");
        let name = format!("{field}_1");
        create(
            &db,
            doc! { "key": { &field: 1 }, "name": &name, "expireAfterSeconds": value },
        )
        .await
        .unwrap();
        let listed = index_named(&db, &name).await.unwrap();
        assert_eq!(
            listed.get("expireAfterSeconds"),
            Some(&Bson::Int32(stored)),
            "{name}"
        );
    }
}

#[tokio::test]
async fn invalid_expire_after_seconds_fail_with_67_and_mongodb_reasons() {
    let node = TestNode::start();
    let db = node.db("ttl").await;
    let reasons: Vec<(Bson, &str)> = vec![
        (
            Bson::String("3600".into()),
            "TTL index 'expireAfterSeconds' option must be numeric, but received a type of 'string'",
        ),
        (
            Bson::Boolean(true),
            "must be numeric, but received a type of 'bool'",
        ),
        (Bson::Null, "must be numeric, but received a type of 'null'"),
        (
            Bson::Document(doc! {}),
            "must be numeric, but received a type of 'object'",
        ),
        (
            Bson::Double(f64::NAN),
            "TTL index 'expireAfterSeconds' option must not be NaN",
        ),
        (
            Bson::Int64(2147483648),
            "must be within the range of a 32-bit integer",
        ),
        (
            Bson::Int64(-2147483649),
            "must be within the range of a 32-bit integer",
        ),
        (
            Bson::Double(f64::INFINITY),
            "must be within the range of a 32-bit integer",
        ),
        (
            Bson::Int64(999999999999999),
            "must be within the range of a 32-bit integer",
        ),
        (
            Bson::Int32(-1),
            "TTL index 'expireAfterSeconds' option cannot be less than 0",
        ),
    ];
    for (value, reason) in reasons {
        let msg = expect_code(
            create(
                &db,
                doc! { "key": { "at": 1 }, "name": "at_1", "expireAfterSeconds": value.clone() },
            )
            .await,
            67,
        );
        assert!(
            msg.starts_with(". Index spec: { key: { at: 1 }, name: \"at_1\", expireAfterSeconds: "),
            "{msg}"
        );
        assert!(msg.contains(" :: caused by :: "), "{msg}");
        assert!(msg.contains(reason), "{value}: {msg}");
    }
    let msg = expect_code(
        create(
            &db,
            doc! { "key": { "a": 1, "b": 1 }, "name": "a_1_b_1", "expireAfterSeconds": 10 },
        )
        .await,
        67,
    );
    assert!(msg.starts_with("TTL indexes are single-field indexes, compound indexes do not support TTL. Index spec: "), "{msg}");
    // The _id allow-list is checked first: 197 even for a negative value.
    for value in [Bson::Int32(10), Bson::Int32(-5)] {
        let msg = expect_code(
            create(
                &db,
                doc! { "key": { "_id": 1 }, "name": "_id_", "expireAfterSeconds": value },
            )
            .await,
            197,
        );
        assert!(msg.starts_with("The field 'expireAfterSeconds' is not valid for an _id index specification. Specification: "), "{msg}");
    }
    // Nothing was created, not even the collection.
    assert!(db.list_collection_names().await.unwrap().is_empty());
}

#[tokio::test]
async fn one_bad_spec_aborts_the_whole_batch() {
    let node = TestNode::start();
    let db = node.db("ttl").await;
    let r = db
        .run_command(doc! { "createIndexes": "events", "indexes": [
            { "key": { "good": 1 }, "name": "good_1" },
            { "key": { "at": 1 }, "name": "at_1", "expireAfterSeconds": -1 },
        ] })
        .await;
    expect_code(r, 67);
    assert!(db.list_collection_names().await.unwrap().is_empty());
}

#[tokio::test]
async fn create_index_cannot_change_or_add_ttl_but_identical_is_a_noop() {
    let node = TestNode::start();
    let db = node.db("ttl").await;
    create(
        &db,
        doc! { "key": { "at": 1 }, "name": "at_1", "expireAfterSeconds": 3600 },
    )
    .await
    .unwrap();
    let same = create(
        &db,
        doc! { "key": { "at": 1 }, "name": "at_1", "expireAfterSeconds": 3600.0 },
    )
    .await
    .unwrap();
    assert_eq!(same.get_str("note").unwrap(), "all indexes already exist");
    assert!(same.get("createdCollectionAutomatically").is_none());
    let msg = expect_code(
        create(
            &db,
            doc! { "key": { "at": 1 }, "name": "at_1", "expireAfterSeconds": 60 },
        )
        .await,
        85,
    );
    assert!(msg.starts_with("An equivalent index already exists with the same name but different options. Requested index: "), "{msg}");
    let msg = expect_code(
        create(
            &db,
            doc! { "key": { "at": 1 }, "name": "other", "expireAfterSeconds": 60 },
        )
        .await,
        85,
    );
    assert!(
        msg.starts_with("An equivalent index already exists with a different name and options."),
        "{msg}"
    );
    // A plain index cannot become TTL through createIndex either.
    create(&db, doc! { "key": { "plain": 1 }, "name": "plain_1" })
        .await
        .unwrap();
    expect_code(
        create(
            &db,
            doc! { "key": { "plain": 1 }, "name": "plain_1", "expireAfterSeconds": 5 },
        )
        .await,
        85,
    );
    // A key named expireAfterSeconds is just a compound key.
    create(
        &db,
        doc! { "key": { "x": 1, "expireAfterSeconds": 1 }, "name": "x_1_eas" },
    )
    .await
    .unwrap();
    assert!(
        index_named(&db, "x_1_eas")
            .await
            .unwrap()
            .get("expireAfterSeconds")
            .is_none()
    );
}

#[tokio::test]
async fn dotted_descending_partial_and_sparse_ttl_indexes_are_accepted_and_listed() {
    let node = TestNode::start();
    let db = node.db("ttl").await;
    create(
        &db,
        doc! { "key": { "meta.at": -1 }, "name": "meta.at_-1", "expireAfterSeconds": 5 },
    )
    .await
    .unwrap();
    create(&db, doc! { "key": { "p": 1 }, "name": "p_1", "expireAfterSeconds": 5, "partialFilterExpression": { "kind": "temp" } }).await.unwrap();
    create(
        &db,
        doc! { "key": { "s": 1 }, "name": "s_1", "expireAfterSeconds": 5, "sparse": true },
    )
    .await
    .unwrap();
    let listed = index_named(&db, "p_1").await.unwrap();
    assert_eq!(
        listed,
        doc! { "v": 2, "key": { "p": 1 }, "name": "p_1", "partialFilterExpression": { "kind": "temp" }, "expireAfterSeconds": 5 }
    );
    assert_eq!(
        index_named(&db, "meta.at_-1")
            .await
            .unwrap()
            .get_i32("expireAfterSeconds")
            .unwrap(),
        5
    );
}

#[tokio::test]
async fn coll_mod_changes_and_converts_ttl_indexes() {
    let node = TestNode::start();
    let db = node.db("ttl").await;
    create(
        &db,
        doc! { "key": { "at": 1 }, "name": "at_1", "expireAfterSeconds": 3600 },
    )
    .await
    .unwrap();
    create(&db, doc! { "key": { "plain": 1 }, "name": "plain_1" })
        .await
        .unwrap();

    let r = db
        .run_command(
            doc! { "collMod": "events", "index": { "name": "at_1", "expireAfterSeconds": 60 } },
        )
        .await
        .unwrap();
    assert_eq!(r.get("expireAfterSeconds_old"), Some(&Bson::Int64(3600)));
    assert_eq!(r.get("expireAfterSeconds_new"), Some(&Bson::Int64(60)));
    let r = db.run_command(doc! { "collMod": "events", "index": { "keyPattern": { "at": 1 }, "expireAfterSeconds": 30.5 } }).await.unwrap();
    assert_eq!(r.get("expireAfterSeconds_new"), Some(&Bson::Int64(30)));
    assert_eq!(
        index_named(&db, "at_1")
            .await
            .unwrap()
            .get("expireAfterSeconds"),
        Some(&Bson::Int32(30))
    );

    // Converting a plain single-field index reports only the new value.
    let r = db
        .run_command(
            doc! { "collMod": "events", "index": { "name": "plain_1", "expireAfterSeconds": 100 } },
        )
        .await
        .unwrap();
    assert!(r.get("expireAfterSeconds_old").is_none());
    assert_eq!(r.get("expireAfterSeconds_new"), Some(&Bson::Int64(100)));
    assert_eq!(
        index_named(&db, "plain_1")
            .await
            .unwrap()
            .get_i32("expireAfterSeconds")
            .unwrap(),
        100
    );
}

#[tokio::test]
async fn coll_mod_errors_match_mongodb() {
    let node = TestNode::start();
    let db = node.db("ttl").await;
    create(
        &db,
        doc! { "key": { "at": 1 }, "name": "at_1", "expireAfterSeconds": 3600 },
    )
    .await
    .unwrap();
    create(&db, doc! { "key": { "a": 1, "b": 1 }, "name": "a_1_b_1" })
        .await
        .unwrap();
    create(
        &db,
        doc! { "key": { "a": 1, "b": 1 }, "name": "a_b_sparse", "sparse": true },
    )
    .await
    .unwrap();
    let cm = |index: Document| {
        let db = db.clone();
        async move {
            db.run_command(doc! { "collMod": "events", "index": index })
                .await
        }
    };
    let msg = expect_code(
        cm(doc! { "name": "at_1", "expireAfterSeconds": "100" }).await,
        14,
    );
    assert_eq!(
        msg,
        "BSON field 'collMod.index.expireAfterSeconds' is the wrong type 'string', expected types '[long, int, decimal, double]'"
    );
    let msg = expect_code(
        cm(doc! { "name": "at_1", "expireAfterSeconds": -1 }).await,
        72,
    );
    assert_eq!(
        msg,
        "TTL index 'expireAfterSeconds' option cannot be less than 0"
    );
    let msg = expect_code(
        cm(doc! { "name": "_id_", "expireAfterSeconds": 10 }).await,
        72,
    );
    assert_eq!(msg, "the _id field does not support TTL indexes");
    let msg = expect_code(
        cm(doc! { "name": "a_1_b_1", "expireAfterSeconds": 10 }).await,
        72,
    );
    assert_eq!(
        msg,
        "TTL indexes are single-field indexes, compound indexes do not support TTL"
    );
    let msg = expect_code(
        cm(doc! { "name": "at_1", "keyPattern": { "at": 1 }, "expireAfterSeconds": 10 }).await,
        72,
    );
    assert_eq!(msg, "Cannot specify both key pattern and name.");
    let msg = expect_code(cm(doc! { "expireAfterSeconds": 10 }).await, 72);
    assert_eq!(msg, "Must specify either index name or key pattern.");
    expect_code(cm(doc! { "name": "at_1" }).await, 72);
    let msg = expect_code(
        cm(doc! { "name": "nope", "expireAfterSeconds": 10 }).await,
        27,
    );
    assert_eq!(msg, "cannot find index nope for ns ttl.events");
    expect_code(
        cm(doc! { "keyPattern": { "zzz": 1 }, "expireAfterSeconds": 10 }).await,
        27,
    );
    let msg = expect_code(
        cm(doc! { "keyPattern": { "a": 1, "b": 1 }, "expireAfterSeconds": 10 }).await,
        181,
    );
    assert!(
        msg.contains("matches 2 indexes, must use index name"),
        "{msg}"
    );
    let r = db
        .run_command(
            doc! { "collMod": "missing", "index": { "name": "at_1", "expireAfterSeconds": 1 } },
        )
        .await;
    expect_code(r, 26);
    // Nothing above changed the TTL index.
    assert_eq!(
        index_named(&db, "at_1")
            .await
            .unwrap()
            .get_i32("expireAfterSeconds")
            .unwrap(),
        3600
    );
}
