//! Schema validation end to end: `validator` (with `$jsonSchema` and query
//! operators), `validationLevel`, `validationAction`, `collMod`, error 121
//! with its `errInfo`, `bypassDocumentValidation`, `$jsonSchema` as a query
//! operator, and validation against TTL expiry and restarts. Each test
//! names the page or jstest its expectations come from.

use std::sync::Arc;
use std::time::Duration;

use crate::common::{self, TestNode, expect_code};
use ebb_actors::clock::ManualClock;
use futures::TryStreamExt;
use mongodb::bson::{Bson, DateTime, Document, doc};
use mongodb::error::{ErrorKind, WriteFailure};
use mongodb::options::{IndexOptions, ValidationAction, ValidationLevel};
use mongodb::{Collection, Database, IndexModel};

/// The TTL manual page's "TTL and Schema validation" example, verbatim.
fn seed_validator() -> Document {
    doc! {
        "$jsonSchema": {
            "bsonType": "object",
            "required": [ "lastModifiedDate" ],
            "properties": {
                "lastModifiedDate": {
                    "bsonType": "date",
                    "description": "Must be a valid date."
                }
            }
        }
    }
}

/// The `errInfo` of a single failed write (insert_one, update_one, …).
fn write_error_info(e: &mongodb::error::Error) -> (i32, String, Document) {
    match e.kind.as_ref() {
        ErrorKind::Write(WriteFailure::WriteError(w)) => (
            w.code,
            w.message.clone(),
            w.details.clone().expect("errInfo"),
        ),
        ErrorKind::InsertMany(m) => {
            let w = &m.write_errors.as_ref().expect("write errors")[0];
            (
                w.code,
                w.message.clone(),
                w.details.clone().expect("errInfo"),
            )
        }
        other => panic!("expected a write error, got {other:?}"),
    }
}

async fn ids(c: &Collection<Document>, filter: Document) -> Vec<Bson> {
    let docs: Vec<Document> = c
        .find(filter)
        .sort(doc! { "_id": 1 })
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    docs.iter().map(|d| d.get("_id").unwrap().clone()).collect()
}

/// The collection's `options` as `listCollections` reports them.
async fn options(db: &Database, name: &str) -> Document {
    let reply = db
        .run_command(doc! { "listCollections": 1, "filter": { "name": name } })
        .await
        .unwrap();
    let batch = reply
        .get_document("cursor")
        .unwrap()
        .get_array("firstBatch")
        .unwrap();
    batch[0]
        .as_document()
        .unwrap()
        .get_document("options")
        .unwrap()
        .clone()
}

/// The TTL manual page's "TTL and Schema validation" example and
/// jstests/core/doc_validation/doc_validation_error.js: the example's
/// collection takes a document with a date, and refuses one whose date is
/// a string, or missing, with 121 and mongod 5.0+'s `errInfo`.
#[tokio::test]
async fn the_seed_example_accepts_dates_and_refuses_others_with_details() {
    let node = TestNode::start();
    let db = node.db("app").await;
    db.create_collection("eventlog")
        .validator(seed_validator())
        .await
        .unwrap();
    let c = db.collection::<Document>("eventlog");
    c.insert_one(doc! { "_id": 1, "lastModifiedDate": DateTime::now() })
        .await
        .unwrap();
    // TTL indexes work on such collections normally.
    c.create_index(
        IndexModel::builder()
            .keys(doc! { "lastModifiedDate": 1 })
            .options(
                IndexOptions::builder()
                    .expire_after(Duration::from_secs(3600))
                    .build(),
            )
            .build(),
    )
    .await
    .unwrap();

    let e = c
        .insert_one(doc! { "_id": 2, "lastModifiedDate": "2024-01-01" })
        .await
        .unwrap_err();
    let (code, message, info) = write_error_info(&e);
    assert_eq!(
        (code, message.as_str()),
        (121, "Document failed validation")
    );
    assert_eq!(
        info,
        doc! {
            "failingDocumentId": 2,
            "details": {
                "operatorName": "$jsonSchema",
                "schemaRulesNotSatisfied": [{
                    "operatorName": "properties",
                    "propertiesNotSatisfied": [{
                        "propertyName": "lastModifiedDate",
                        "description": "Must be a valid date.",
                        "details": [{
                            "operatorName": "bsonType",
                            "specifiedAs": { "bsonType": "date" },
                            "reason": "type did not match",
                            "consideredValue": "2024-01-01",
                            "consideredType": "string",
                        }],
                    }],
                }],
            },
        }
    );

    let e = c.insert_one(doc! { "_id": 3 }).await.unwrap_err();
    let (code, _, info) = write_error_info(&e);
    assert_eq!(code, 121);
    assert_eq!(
        info,
        doc! {
            "failingDocumentId": 3,
            "details": {
                "operatorName": "$jsonSchema",
                "schemaRulesNotSatisfied": [{
                    "operatorName": "required",
                    "specifiedAs": { "required": ["lastModifiedDate"] },
                    "missingProperties": ["lastModifiedDate"],
                }],
            },
        }
    );
    assert_eq!(ids(&c, doc! {}).await, [Bson::Int32(1)]);
    // jstests/core/json_schema/json_schema.js: the catalog keeps the
    // validator as given.
    assert_eq!(
        options(&db, "eventlog").await,
        doc! { "validator": seed_validator() }
    );
}

/// jstests/core/doc_validation/doc_validation_error.js ("Students
/// collection"): a document with several problems lists `properties`
/// before `required`; an ordered batch stops at the failing document and
/// reports its index.
#[tokio::test]
async fn batches_report_the_failing_document_and_stop_when_ordered() {
    let node = TestNode::start();
    let db = node.db("app").await;
    db.create_collection("students")
        .validator(doc! { "$jsonSchema": {
            "bsonType": "object",
            "required": ["name", "year"],
            "properties": {
                "name": { "bsonType": "string" },
                "year": { "bsonType": "int", "minimum": 2017, "maximum": 3017 },
            },
        } })
        .await
        .unwrap();
    let c = db.collection::<Document>("students");
    let e = c
        .insert_many(vec![
            doc! { "_id": 1, "name": "a", "year": 2020 },
            doc! { "_id": 2, "year": 1999 },
            doc! { "_id": 3, "name": "c", "year": 2021 },
        ])
        .await
        .unwrap_err();
    let ErrorKind::InsertMany(m) = e.kind.as_ref() else {
        panic!("{e}");
    };
    let errors = m.write_errors.as_ref().unwrap();
    assert_eq!(errors.len(), 1);
    assert_eq!((errors[0].index, errors[0].code), (1, 121));
    assert_eq!(
        errors[0].details.as_ref().unwrap(),
        &doc! {
            "failingDocumentId": 2,
            "details": {
                "operatorName": "$jsonSchema",
                "schemaRulesNotSatisfied": [
                    {
                        "operatorName": "properties",
                        "propertiesNotSatisfied": [{
                            "propertyName": "year",
                            "details": [{
                                "operatorName": "minimum",
                                "specifiedAs": { "minimum": 2017 },
                                "reason": "comparison failed",
                                "consideredValue": 1999,
                            }],
                        }],
                    },
                    {
                        "operatorName": "required",
                        "specifiedAs": { "required": ["name", "year"] },
                        "missingProperties": ["name"],
                    },
                ],
            },
        }
    );
    assert_eq!(ids(&c, doc! {}).await, [Bson::Int32(1)]);
    // Unordered: the others land.
    let e = c
        .insert_many(vec![
            doc! { "_id": 4, "name": "d", "year": 2020 },
            doc! { "_id": 5, "name": 5, "year": 2020 },
            doc! { "_id": 6, "name": "f", "year": 2021 },
        ])
        .ordered(false)
        .await
        .unwrap_err();
    assert_eq!(common::code(&e), Some(121));
    assert_eq!(ids(&c, doc! {}).await, [1, 4, 6].map(Bson::Int32));
}

/// jstests/core/doc_validation/doc_validation_options.js and
/// doc_validation_error_test.cpp: a query-operator validator; updates,
/// upserts, replacements and findAndModify are validated too.
#[tokio::test]
async fn query_operator_validators_check_every_kind_of_write() {
    let node = TestNode::start();
    let db = node.db("app").await;
    db.create_collection("t")
        .validator(doc! { "a": 1 })
        .await
        .unwrap();
    let c = db.collection::<Document>("t");
    let (code, _, info) =
        write_error_info(&c.insert_one(doc! { "_id": 0, "a": 2 }).await.unwrap_err());
    assert_eq!(code, 121);
    assert_eq!(
        info,
        doc! { "failingDocumentId": 0, "details": {
        "operatorName": "$eq", "specifiedAs": { "a": 1 },
        "reason": "comparison failed", "consideredValue": 2 } }
    );
    c.insert_one(doc! { "_id": 1, "a": 1 }).await.unwrap();
    let (code, _, info) = write_error_info(
        &c.update_one(doc! { "_id": 1 }, doc! { "$set": { "a": 2 } })
            .await
            .unwrap_err(),
    );
    assert_eq!(code, 121);
    assert_eq!(info.get_i32("failingDocumentId").unwrap(), 1);
    expect_code(c.replace_one(doc! { "_id": 1 }, doc! { "b": 1 }).await, 121);
    expect_code(
        c.update_one(doc! { "_id": 9 }, doc! { "$set": { "a": 3 } })
            .upsert(true)
            .await,
        121,
    );
    // findAndModify fails as a command, with the errInfo in the reply.
    let e = c
        .find_one_and_update(doc! { "_id": 1 }, doc! { "$set": { "a": 5 } })
        .await
        .unwrap_err();
    assert_eq!(common::code(&e), Some(121));
    let reply = Document::try_from(e.server_response().expect("the server's reply")).unwrap();
    assert_eq!(
        reply.get_document("errInfo").unwrap(),
        &doc! { "failingDocumentId": 1, "details": {
        "operatorName": "$eq", "specifiedAs": { "a": 1 },
        "reason": "comparison failed", "consideredValue": 5 } }
    );
    assert_eq!(
        c.find(doc! {})
            .await
            .unwrap()
            .try_collect::<Vec<_>>()
            .await
            .unwrap(),
        [doc! { "_id": 1, "a": 1 }]
    );
    // Deletes are never validated.
    c.delete_one(doc! { "_id": 1 }).await.unwrap();
    assert!(ids(&c, doc! {}).await.is_empty());
}

/// bypass_doc_validation.js: `bypassDocumentValidation: true` stores what
/// the validator would refuse, on insert, update and findAndModify; the
/// flag is accepted (and harmless) on aggregate.
#[tokio::test]
async fn bypass_document_validation_skips_the_validator() {
    let node = TestNode::start();
    let db = node.db("app").await;
    db.create_collection("eventlog")
        .validator(seed_validator())
        .await
        .unwrap();
    let c = db.collection::<Document>("eventlog");
    c.insert_one(doc! { "_id": 1, "lastModifiedDate": "not a date" })
        .bypass_document_validation(true)
        .await
        .unwrap();
    c.insert_many(vec![doc! { "_id": 2 }, doc! { "_id": 3 }])
        .bypass_document_validation(true)
        .await
        .unwrap();
    c.update_one(doc! { "_id": 2 }, doc! { "$set": { "x": 1 } })
        .bypass_document_validation(true)
        .await
        .unwrap();
    c.find_one_and_update(doc! { "_id": 3 }, doc! { "$set": { "x": 2 } })
        .bypass_document_validation(true)
        .await
        .unwrap();
    // Without the flag the same update is refused.
    expect_code(
        c.update_one(doc! { "_id": 2 }, doc! { "$set": { "x": 3 } })
            .await,
        121,
    );
    let docs: Vec<Document> = c
        .aggregate(vec![doc! { "$match": { "x": { "$exists": true } } }])
        .bypass_document_validation(true)
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    assert_eq!(docs.len(), 2);
    expect_code(
        db.run_command(doc! { "insert": "eventlog", "documents": [{ "_id": 4 }],
        "bypassDocumentValidation": "yes" })
            .await,
        14,
    );
}

/// doc_validation_options.js: `moderate` lets documents that already fail
/// validation be updated (into other failing documents), while valid
/// documents and inserts are still checked.
#[tokio::test]
async fn validation_level_moderate_exempts_documents_that_already_fail() {
    let node = TestNode::start();
    let db = node.db("app").await;
    let c = db.collection::<Document>("t");
    c.insert_many(vec![doc! { "_id": 1, "a": 2 }, doc! { "_id": 2, "a": 1 }])
        .await
        .unwrap();
    db.run_command(doc! { "collMod": "t", "validator": { "a": 1 }, "validationLevel": "moderate" })
        .await
        .unwrap();
    c.update_one(doc! { "_id": 1 }, doc! { "$set": { "a": 3 } })
        .await
        .unwrap();
    expect_code(
        c.update_one(doc! { "_id": 2 }, doc! { "$set": { "a": 3 } })
            .await,
        121,
    );
    expect_code(c.insert_one(doc! { "_id": 3, "a": 3 }).await, 121);
    // Back to strict: the invalid document cannot change any more.
    db.run_command(doc! { "collMod": "t", "validationLevel": "strict" })
        .await
        .unwrap();
    expect_code(
        c.update_one(doc! { "_id": 1 }, doc! { "$set": { "a": 4 } })
            .await,
        121,
    );
    // off checks nothing.
    db.create_collection("off")
        .validator(doc! { "a": 1 })
        .validation_level(ValidationLevel::Off)
        .await
        .unwrap();
    db.collection::<Document>("off")
        .insert_one(doc! { "a": 2 })
        .await
        .unwrap();
}

/// doc_validation_options.js: with `validationAction: "warn"` a failing
/// write is stored (and logged).
#[tokio::test]
async fn validation_action_warn_stores_failing_documents() {
    let node = TestNode::start();
    let db = node.db("app").await;
    db.create_collection("t")
        .validator(doc! { "a": 1 })
        .validation_action(ValidationAction::Warn)
        .await
        .unwrap();
    let c = db.collection::<Document>("t");
    c.insert_one(doc! { "_id": 1, "a": 2 }).await.unwrap();
    c.insert_one(doc! { "_id": 2, "a": 1 }).await.unwrap();
    c.update_one(doc! { "_id": 2 }, doc! { "$set": { "a": 5 } })
        .await
        .unwrap();
    assert_eq!(
        c.count_documents(doc! { "a": { "$ne": 1 } }).await.unwrap(),
        2
    );
    assert_eq!(
        options(&db, "t").await,
        doc! { "validator": { "a": 1 }, "validationAction": "warn" }
    );
    // Back to error: refused again.
    db.run_command(doc! { "collMod": "t", "validationAction": "error" })
        .await
        .unwrap();
    expect_code(c.insert_one(doc! { "_id": 3, "a": 2 }).await, 121);
}

/// jstests/core/doc_validation/doc_validation_invalid_validators.js and
/// doc_validation_options.js: `collMod` replaces, removes and adds
/// validators, stores level and action, and refuses bad values with
/// nothing changed.
#[tokio::test]
async fn coll_mod_changes_the_validator() {
    let node = TestNode::start();
    let db = node.db("app").await;
    let c = db.collection::<Document>("t");
    c.insert_one(doc! { "_id": 1 }).await.unwrap();
    db.run_command(doc! { "collMod": "t", "validator": { "a": { "$exists": true } } })
        .await
        .unwrap();
    expect_code(c.insert_one(doc! { "_id": 2 }).await, 121);
    db.run_command(doc! { "collMod": "t", "validator": seed_validator() })
        .await
        .unwrap();
    c.insert_one(doc! { "_id": 2, "lastModifiedDate": DateTime::now() })
        .await
        .unwrap();
    expect_code(c.insert_one(doc! { "_id": 3, "a": 1 }).await, 121);
    db.run_command(doc! { "collMod": "t", "validationAction": "warn" })
        .await
        .unwrap();
    assert_eq!(
        options(&db, "t").await,
        doc! { "validator": seed_validator(), "validationLevel": "strict", "validationAction": "warn" }
    );
    // Refused changes change nothing.
    for (cmd, code, message) in [
        (
            doc! { "collMod": "t", "validator": 7 },
            14,
            "BSON field 'collMod.validator' is the wrong type 'int', expected type 'object'",
        ),
        (
            doc! { "collMod": "t", "validationLevel": "nope" },
            2,
            "Enumeration value 'nope' for field 'collMod.validationLevel' is not a valid value.",
        ),
        (
            doc! { "collMod": "t", "validationAction": "errorAndLog" },
            2,
            "Enumeration value 'errorAndLog' for field 'collMod.validationAction' is not a valid value.",
        ),
        (
            doc! { "collMod": "t", "validator": { "$jsonSchema": { "invalid": 7 } } },
            9,
            "Unknown $jsonSchema keyword: invalid",
        ),
        (
            doc! { "collMod": "t", "validator": { "$where": "this.a == this.b" } },
            2,
            "$where is not allowed in this context",
        ),
        (
            doc! { "collMod": "nosuch", "validator": { "a": 1 } },
            26,
            "ns does not exist: app.nosuch",
        ),
    ] {
        let m = expect_code(db.run_command(cmd.clone()).await, code);
        assert_eq!(m, message, "{cmd}");
    }
    assert_eq!(
        options(&db, "t").await,
        doc! { "validator": seed_validator(), "validationLevel": "strict", "validationAction": "warn" }
    );
    // An empty validator removes it and keeps level and action.
    db.run_command(doc! { "collMod": "t", "validator": {}, "validationAction": "error" })
        .await
        .unwrap();
    assert_eq!(
        options(&db, "t").await,
        doc! { "validationLevel": "strict", "validationAction": "error" }
    );
    c.insert_one(doc! { "_id": 4, "anything": true })
        .await
        .unwrap();
}

/// doc_validation_invalid_validators.js and json_schema.js: an invalid
/// validator or `$jsonSchema` fails `create` with mongod's code and
/// creates nothing; validators are refused where mongod refuses them.
#[tokio::test]
async fn invalid_validators_create_nothing() {
    let node = TestNode::start();
    let db = node.db("app").await;
    for (options, code, message) in [
        (
            doc! { "validator": 7 },
            14,
            "BSON field 'create.validator' is the wrong type 'int', expected type 'object'",
        ),
        (
            doc! { "validator": { "$jsonSchema": { "invalid": 1 } } },
            9,
            "Unknown $jsonSchema keyword: invalid",
        ),
        (
            doc! { "validator": { "$jsonSchema": { "type": "integer" } } },
            9,
            "$jsonSchema type 'integer' is not currently supported.",
        ),
        (
            doc! { "validator": { "$jsonSchema": { "properties": { "a": { "$ref": "#/x" } } } } },
            9,
            "$jsonSchema keyword '$ref' is not currently supported",
        ),
        (
            doc! { "validator": { "$jsonSchema": "object" } },
            14,
            "$jsonSchema must be an object",
        ),
        (
            doc! { "validator": { "$text": { "$search": "bob" } } },
            2,
            "$text is not allowed in this context",
        ),
        (
            doc! { "validator": { "a": 1 }, "validationLevel": "sometimes" },
            2,
            "Enumeration value 'sometimes' for field 'create.validationLevel' is not a valid value.",
        ),
        (
            doc! { "validator": { "a": 1 }, "validationAction": 1 },
            14,
            "BSON field 'create.validationAction' is the wrong type 'int', expected type 'string'",
        ),
    ] {
        let mut cmd = doc! { "create": "bad" };
        cmd.extend(options.clone());
        let m = expect_code(db.run_command(cmd).await, code);
        assert_eq!(m, message, "{options}");
    }
    assert!(db.list_collection_names().await.unwrap().is_empty());
    let m = expect_code(
        node.db("admin")
            .await
            .run_command(doc! { "create": "v", "validator": { "a": { "$exists": true } } })
            .await,
        72,
    );
    assert!(
        m.starts_with("Document validators are not allowed on collection admin.v with UUID "),
        "{m}"
    );
    assert!(m.ends_with(" in the admin internal database"), "{m}");
    // An empty validator is no validator.
    db.create_collection("empty")
        .validator(doc! {})
        .await
        .unwrap();
    assert_eq!(options(&db, "empty").await, doc! {});
}

/// jstests/core/json_schema/json_schema.js: `$jsonSchema` as a query
/// operator in find, count, aggregate, update and delete filters; an
/// invalid schema is refused and changes nothing.
#[tokio::test]
async fn json_schema_works_as_a_query_operator() {
    let node = TestNode::start();
    let db = node.db("app").await;
    let c = db.collection::<Document>("q");
    c.insert_many(vec![
        doc! { "_id": 0, "num": 3 },
        doc! { "_id": 1, "num": -3 },
        doc! { "_id": 2, "num": 2i64 },
        doc! { "_id": 3, "num": {} },
        doc! { "_id": 4, "num": "str" },
        doc! { "_id": 5 },
    ])
    .await
    .unwrap();
    let numbers =
        doc! { "$jsonSchema": { "properties": { "num": { "type": "number", "maximum": 0 } } } };
    assert_eq!(ids(&c, numbers.clone()).await, [1, 5].map(Bson::Int32));
    assert_eq!(
        c.count_documents(doc! { "$jsonSchema": {} }).await.unwrap(),
        6
    );
    assert_eq!(
        c.count_documents(doc! { "$jsonSchema": { "type": "string" } })
            .await
            .unwrap(),
        0
    );
    let long = doc! { "$jsonSchema": { "properties": { "num": { "bsonType": "long" } } }, "num": { "$exists": true } };
    assert_eq!(ids(&c, long).await, [Bson::Int32(2)]);
    let matched: Vec<Document> = c
        .aggregate(vec![
            doc! { "$match": { "$or": [{ "_id": 4 }, numbers.clone()] } },
            doc! { "$count": "n" },
        ])
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    assert_eq!(matched, [doc! { "n": 3 }]);
    let r = c
        .update_many(numbers.clone(), doc! { "$set": { "tagged": true } })
        .await
        .unwrap();
    assert_eq!(r.modified_count, 2);
    let r = c
        .delete_many(doc! { "$jsonSchema": { "required": ["tagged"], "properties": { "num": { "minimum": 0 } } } })
        .await
        .unwrap();
    // Only the tagged document without a number goes (-3 is below 0).
    assert_eq!(r.deleted_count, 1);
    assert_eq!(ids(&c, doc! {}).await, [0, 1, 2, 3, 4].map(Bson::Int32));
    // Invalid schemas: mongod's codes, and nothing changes.
    expect_code(ids_result(&c, doc! { "$jsonSchema": "foo" }).await, 14);
    expect_code(
        ids_result(&c, doc! { "$jsonSchema": { "default": { "_id": 0 } } }).await,
        9,
    );
    expect_code(
        ids_result(
            &c,
            doc! { "$jsonSchema": { "properties": { "num": { "maxLength": "0" } } } },
        )
        .await,
        9,
    );
    expect_code(
        c.delete_many(doc! { "$jsonSchema": { "format": "email" } })
            .await,
        9,
    );
    expect_code(
        c.update_many(
            doc! { "$jsonSchema": { "type": 3 } },
            doc! { "$set": { "x": 1 } },
        )
        .await,
        14,
    );
    assert_eq!(ids(&c, doc! {}).await, [0, 1, 2, 3, 4].map(Bson::Int32));
    assert_eq!(c.count_documents(doc! { "x": 1 }).await.unwrap(), 0);
}

async fn ids_result(
    c: &Collection<Document>,
    filter: Document,
) -> mongodb::error::Result<Vec<Document>> {
    c.find(filter).await?.try_collect().await
}

/// Deletes are never validated, so a TTL index on a
/// validated collection expires documents even when they would now fail
/// the validator (the manual clock of tests/ttl_expiry.rs drives it).
#[tokio::test]
async fn ttl_expires_documents_that_would_fail_the_validator() {
    const T0: i64 = 1_767_225_600_000;
    let node = TestNode::start_with_clock(Arc::new(ManualClock::new(T0)));
    let db = node.db("app").await;
    db.create_collection("eventlog")
        .validator(seed_validator())
        .await
        .unwrap();
    let c = db.collection::<Document>("eventlog");
    c.create_index(
        IndexModel::builder()
            .keys(doc! { "lastModifiedDate": 1 })
            .options(
                IndexOptions::builder()
                    .expire_after(Duration::from_secs(3600))
                    .build(),
            )
            .build(),
    )
    .await
    .unwrap();
    c.insert_many(vec![
        doc! { "_id": "old", "lastModifiedDate": DateTime::from_millis(T0 - 2 * 3_600_000) },
        doc! { "_id": "new", "lastModifiedDate": DateTime::from_millis(T0) },
    ])
    .await
    .unwrap();
    // Every stored document now fails the validator.
    db.run_command(
        doc! { "collMod": "eventlog", "validator": { "$jsonSchema": { "required": ["owner"] } } },
    )
    .await
    .unwrap();
    node.ttl_pass().await;
    assert_eq!(ids(&c, doc! {}).await, [Bson::String("new".into())]);
    node.advance(Duration::from_secs(3600));
    node.ttl_pass().await;
    assert!(ids(&c, doc! {}).await.is_empty());
}

/// The validator, level and action live in the catalog: a restart brings
/// them back (tests/restart.rs).
#[tokio::test]
async fn the_validator_survives_a_restart() {
    let mut node = TestNode::start();
    {
        let db = node.db("app").await;
        db.create_collection("eventlog")
            .validator(seed_validator())
            .validation_level(ValidationLevel::Moderate)
            .await
            .unwrap();
    }
    node.restart();
    let db = node.db("app").await;
    assert_eq!(
        options(&db, "eventlog").await,
        doc! { "validator": seed_validator(), "validationLevel": "moderate" }
    );
    let c = db.collection::<Document>("eventlog");
    let (code, _, info) = write_error_info(&c.insert_one(doc! { "_id": 1 }).await.unwrap_err());
    assert_eq!(code, 121);
    assert_eq!(info.get_i32("failingDocumentId").unwrap(), 1);
    c.insert_one(doc! { "_id": 2, "lastModifiedDate": DateTime::now() })
        .await
        .unwrap();
}
