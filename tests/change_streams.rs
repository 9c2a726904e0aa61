//! Change streams on a one-member set, through the driver's `watch()`:
//! every document change as mongod's event shapes say it, resuming from a
//! token and from a time, `updateLookup`, database and cluster streams,
//! TTL deletes (plain deletes, and ebb's `showExpiryOrigin`), and mongod's
//! errors for what a stream refuses; on three members, a stream that
//! resumes on the new primary after `kill -9` of the old one, without a gap
//! or a duplicate.

use std::time::{Duration, Instant};

use mongodb::bson::{DateTime, Document, doc};
use mongodb::change_stream::ChangeStream;
use mongodb::change_stream::event::{ChangeStreamEvent, OperationType};
use mongodb::options::{FullDocumentBeforeChangeType, FullDocumentType};
use mongodb::{Collection, Database};

use crate::common::expect_code;
use crate::common::set::{initiated_set, one_member_set, one_member_set_with, primary_of};

type Events = ChangeStream<ChangeStreamEvent<Document>>;

/// The next `n` events of `stream`, within 30 s.
async fn next_events(stream: &mut Events, n: usize) -> Vec<ChangeStreamEvent<Document>> {
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut out = Vec::new();
    while out.len() < n {
        assert!(
            Instant::now() < deadline,
            "only {} of {n} events",
            out.len()
        );
        if let Some(e) = stream.next_if_any().await.unwrap() {
            out.push(e);
        }
    }
    out
}

fn kinds(events: &[ChangeStreamEvent<Document>]) -> Vec<OperationType> {
    events.iter().map(|e| e.operation_type.clone()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_collection_stream_sees_every_change_and_resumes_from_a_token_or_a_time() {
    let root = tempfile::tempdir().unwrap();
    let (_member, client) = one_member_set(root.path()).await;
    let coll: Collection<Document> = client.database("t").collection("c");
    coll.insert_one(doc! { "_id": 0, "before": true })
        .await
        .unwrap();
    let mut stream = coll.watch().await.unwrap();
    coll.insert_one(doc! { "_id": 1, "a": 1, "xs": [1] })
        .await
        .unwrap();
    coll.update_one(
        doc! { "_id": 1 },
        doc! { "$set": { "a": 2 }, "$push": { "xs": 2 }, "$unset": { "gone": "" } },
    )
    .await
    .unwrap();
    coll.replace_one(doc! { "_id": 1 }, doc! { "b": 1 })
        .await
        .unwrap();
    coll.delete_one(doc! { "_id": 1 }).await.unwrap();
    let events = next_events(&mut stream, 4).await;
    assert_eq!(
        kinds(&events),
        [
            OperationType::Insert,
            OperationType::Update,
            OperationType::Replace,
            OperationType::Delete
        ]
    );
    for e in &events {
        assert_eq!(e.document_key, Some(doc! { "_id": 1 }), "{e:?}");
        let ns = e.ns.as_ref().unwrap();
        assert_eq!((ns.db.as_str(), ns.coll.as_deref()), ("t", Some("c")));
        assert!(e.cluster_time.is_some() && e.wall_time.is_some(), "{e:?}");
    }
    assert_eq!(
        events[0].full_document,
        Some(doc! { "_id": 1, "a": 1, "xs": [1] })
    );
    let update = events[1].update_description.as_ref().unwrap();
    assert_eq!(update.updated_fields, doc! { "a": 2, "xs.1": 2 });
    assert!(update.removed_fields.is_empty());
    assert_eq!(events[1].full_document, None, "no lookup by default");
    assert_eq!(events[2].full_document, Some(doc! { "_id": 1, "b": 1 }));
    // Times only grow, and tokens resume right after their event.
    let times: Vec<_> = events.iter().map(|e| e.cluster_time.unwrap()).collect();
    assert!(
        times
            .windows(2)
            .all(|w| (w[0].time, w[0].increment) < (w[1].time, w[1].increment))
    );
    let mut resumed = coll
        .watch()
        .resume_after(events[1].id.clone())
        .await
        .unwrap();
    let again = next_events(&mut resumed, 2).await;
    assert_eq!(
        kinds(&again),
        [OperationType::Replace, OperationType::Delete]
    );
    assert_eq!(again[0].id, events[2].id, "the same token on the way back");
    let mut from_time = coll
        .watch()
        .start_at_operation_time(times[0])
        .await
        .unwrap();
    let replayed = next_events(&mut from_time, 4).await;
    assert_eq!(kinds(&replayed), kinds(&events));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn update_lookup_database_and_cluster_streams() {
    let root = tempfile::tempdir().unwrap();
    let (_member, client) = one_member_set(root.path()).await;
    let db = client.database("t");
    let coll: Collection<Document> = db.collection("c");
    let other: Collection<Document> = db.collection("other");
    let elsewhere: Collection<Document> = client.database("u").collection("d");
    coll.insert_one(doc! { "_id": 1, "n": 1 }).await.unwrap();
    let mut looked_up = coll
        .watch()
        .full_document(FullDocumentType::UpdateLookup)
        .await
        .unwrap();
    let mut database = db.watch().await.unwrap();
    let mut cluster = client.watch().await.unwrap();
    coll.update_one(doc! { "_id": 1 }, doc! { "$inc": { "n": 1 } })
        .await
        .unwrap();
    other.insert_one(doc! { "_id": 2 }).await.unwrap();
    elsewhere.insert_one(doc! { "_id": 3 }).await.unwrap();
    let update = &next_events(&mut looked_up, 1).await[0];
    assert_eq!(update.full_document, Some(doc! { "_id": 1, "n": 2 }));
    let in_db = next_events(&mut database, 2).await;
    let names: Vec<_> = in_db
        .iter()
        .map(|e| e.ns.as_ref().unwrap().coll.clone().unwrap())
        .collect();
    assert_eq!(names, ["c", "other"]);
    let everywhere = next_events(&mut cluster, 3).await;
    let dbs: Vec<_> = everywhere
        .iter()
        .map(|e| e.ns.as_ref().unwrap().db.clone())
        .collect();
    assert_eq!(dbs, ["t", "t", "u"]);
}

/// Runs `aggregate` with `pipeline` on `db.coll` and reads events with
/// `getMore` until `n` have come, within 30 s.
async fn raw_events(db: &Database, coll: &str, pipeline: Vec<Document>, n: usize) -> Vec<Document> {
    let reply = db
        .run_command(doc! { "aggregate": coll, "pipeline": pipeline, "cursor": {} })
        .await
        .unwrap();
    let cursor = reply.get_document("cursor").unwrap();
    assert!(cursor.get_document("postBatchResumeToken").is_ok());
    let id = cursor.get_i64("id").unwrap();
    let mut events: Vec<Document> = cursor
        .get_array("firstBatch")
        .unwrap()
        .iter()
        .map(|e| e.as_document().unwrap().clone())
        .collect();
    let deadline = Instant::now() + Duration::from_secs(30);
    while events.len() < n {
        assert!(
            Instant::now() < deadline,
            "only {} of {n} events",
            events.len()
        );
        let more = db
            .run_command(doc! { "getMore": id, "collection": coll, "maxTimeMS": 500 })
            .await
            .unwrap();
        let cursor = more.get_document("cursor").unwrap();
        assert!(cursor.get_document("postBatchResumeToken").is_ok());
        events.extend(
            cursor
                .get_array("nextBatch")
                .unwrap()
                .iter()
                .map(|e| e.as_document().unwrap().clone()),
        );
    }
    events
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ttl_deletes_are_delete_events_and_say_what_expired_them_when_asked() {
    let root = tempfile::tempdir().unwrap();
    let (_member, client) = one_member_set(root.path()).await;
    let db = client.database("t");
    let coll: Collection<Document> = db.collection("sessions");
    crate::common::ttl_index(&coll, doc! { "at": 1 }, 0, None).await;
    let plain = coll.watch().await.unwrap();
    let marked = db
        .run_command(doc! {
            "aggregate": "sessions",
            "pipeline": [{ "$changeStream": { "showExpiryOrigin": true } }],
            "cursor": {},
        })
        .await
        .unwrap();
    let start = marked
        .get_document("cursor")
        .unwrap()
        .get_document("postBatchResumeToken")
        .unwrap()
        .clone();
    let at = DateTime::from_millis(DateTime::now().timestamp_millis() - 60_000);
    // NumberLong ids: the event's key is the stored _id, of its own type.
    coll.insert_many((0..20).map(|i| doc! { "_id": i as i64, "at": at }))
        .await
        .unwrap();
    let mut plain = plain;
    let seen = next_events(&mut plain, 40).await;
    let deletes: Vec<_> = seen
        .iter()
        .filter(|e| e.operation_type == OperationType::Delete)
        .collect();
    assert_eq!(deletes.len(), 20, "one delete per expired document");
    let mut ids: Vec<i64> = deletes
        .iter()
        .map(|e| e.document_key.as_ref().unwrap().get_i64("_id").unwrap())
        .collect();
    ids.sort_unstable();
    assert_eq!(ids, (0..20).collect::<Vec<_>>());
    let marked = raw_events(
        &db,
        "sessions",
        vec![doc! { "$changeStream": { "showExpiryOrigin": true, "startAfter": start } }],
        40,
    )
    .await;
    let expired: Vec<&Document> = marked
        .iter()
        .filter(|e| e.get_str("operationType").unwrap() == "delete")
        .collect();
    assert_eq!(expired.len(), 20);
    for e in expired {
        let by = e.get_document("expiredBy").unwrap();
        assert_eq!(by.get_str("index").unwrap(), "at_1");
        assert_eq!(by.get_datetime("date").unwrap(), &at);
        assert_eq!(by.get_datetime("due").unwrap(), &at, "expireAfterSeconds 0");
    }
    // Without the option, a TTL delete is exactly mongod's delete event.
    assert!(
        deletes.iter().all(|e| e.full_document.is_none()),
        "{deletes:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pre_and_post_images_when_the_collection_keeps_them() {
    let root = tempfile::tempdir().unwrap();
    let (_member, client) = one_member_set(root.path()).await;
    let db = client.database("t");
    db.run_command(doc! { "create": "kept", "changeStreamPreAndPostImages": { "enabled": true } })
        .await
        .unwrap();
    let kept: Collection<Document> = db.collection("kept");
    let plain: Collection<Document> = db.collection("plain");
    kept.insert_one(doc! { "_id": 1, "n": 1 }).await.unwrap();
    plain.insert_one(doc! { "_id": 1, "n": 1 }).await.unwrap();
    let mut imaged = kept
        .watch()
        .full_document(FullDocumentType::Required)
        .full_document_before_change(FullDocumentBeforeChangeType::Required)
        .await
        .unwrap();
    let mut maybe = plain
        .watch()
        .full_document(FullDocumentType::WhenAvailable)
        .full_document_before_change(FullDocumentBeforeChangeType::WhenAvailable)
        .await
        .unwrap();
    let mut demanding = plain
        .watch()
        .full_document_before_change(FullDocumentBeforeChangeType::Required)
        .await
        .unwrap();
    for c in [&kept, &plain] {
        c.update_one(doc! { "_id": 1 }, doc! { "$inc": { "n": 1 } })
            .await
            .unwrap();
        c.delete_one(doc! { "_id": 1 }).await.unwrap();
    }
    let events = next_events(&mut imaged, 2).await;
    assert_eq!(events[0].full_document, Some(doc! { "_id": 1, "n": 2 }));
    assert_eq!(
        events[0].full_document_before_change,
        Some(doc! { "_id": 1, "n": 1 })
    );
    assert_eq!(
        events[1].full_document_before_change,
        Some(doc! { "_id": 1, "n": 2 })
    );
    let without = next_events(&mut maybe, 2).await;
    assert!(
        without
            .iter()
            .all(|e| e.full_document_before_change.is_none())
    );
    assert_eq!(without[0].full_document, None);
    // Required, but the collection keeps no images: mongod's 47.
    let deadline = Instant::now() + Duration::from_secs(30);
    let error = loop {
        assert!(Instant::now() < deadline, "no error");
        match demanding.next_if_any().await {
            Ok(_) => continue,
            Err(e) => break e,
        }
    };
    assert_eq!(crate::common::code(&error), Some(47), "{error}");
    // collMod turns images on and off; listCollections shows it.
    db.run_command(
        doc! { "collMod": "plain", "changeStreamPreAndPostImages": { "enabled": true } },
    )
    .await
    .unwrap();
    let listed = crate::common::first_batch(
        &db,
        doc! { "listCollections": 1, "filter": { "name": "plain" } },
    )
    .await;
    assert_eq!(
        listed[0]
            .get_document("options")
            .unwrap()
            .get_document("changeStreamPreAndPostImages")
            .unwrap(),
        &doc! { "enabled": true }
    );
    expect_code(
        db.run_command(doc! { "collMod": "plain", "changeStreamPreAndPostImages": true })
            .await,
        14,
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drops_and_renames_invalidate_and_a_stream_starts_again_after_them() {
    let root = tempfile::tempdir().unwrap();
    let (_member, client) = one_member_set(root.path()).await;
    let db = client.database("t");
    let coll: Collection<Document> = db.collection("c");
    coll.insert_one(doc! { "_id": 1 }).await.unwrap();
    let mut on_coll = coll.watch().await.unwrap();
    let mut on_db = db.watch().await.unwrap();
    client
        .database("admin")
        .run_command(doc! { "renameCollection": "t.c", "to": "t.d" })
        .await
        .unwrap();
    let renamed = next_events(&mut on_coll, 2).await;
    assert_eq!(
        kinds(&renamed),
        [OperationType::Rename, OperationType::Invalidate]
    );
    let to = renamed[0].to.as_ref().unwrap();
    assert_eq!((to.db.as_str(), to.coll.as_deref()), ("t", Some("d")));
    assert!(!on_coll.is_alive(), "an invalidated stream ends");
    // startAfter the invalidate opens a new stream on the name; resumeAfter
    // may not.
    let invalidate = renamed[1].id.clone();
    let mut again = coll.watch().start_after(invalidate.clone()).await.unwrap();
    expect_code(coll.watch().resume_after(invalidate).await, 260);
    coll.insert_one(doc! { "_id": 2 }).await.unwrap();
    let inserted = next_events(&mut again, 1).await;
    assert_eq!(inserted[0].document_key, Some(doc! { "_id": 2 }));
    db.collection::<Document>("d").drop().await.unwrap();
    db.drop().await.unwrap();
    let in_db = next_events(&mut on_db, 6).await;
    assert_eq!(
        kinds(&in_db),
        [
            OperationType::Rename,
            OperationType::Insert,
            OperationType::Drop,
            OperationType::Drop,
            OperationType::DropDatabase,
            OperationType::Invalidate
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_from_before_the_trimmed_window_gets_286() {
    let root = tempfile::tempdir().unwrap();
    // A one-megabyte window, and memtables small enough that the rows
    // reach the files the window is measured in.
    let (_member, client) = one_member_set_with(
        root.path(),
        &[
            ("EBB_REPLICATION__OPLOG_SIZE_MB", "1"),
            ("EBB_STORAGE__WRITE_BUFFER", "1MiB"),
        ],
    )
    .await;
    let db = client.database("t");
    let coll: Collection<Document> = db.collection("c");
    let first = db
        .run_command(doc! { "insert": "c", "documents": [{ "_id": -1 }] })
        .await
        .unwrap();
    let start = *first.get_timestamp("operationTime").as_ref().unwrap();
    // Padding that does not compress: the window counts bytes on disk.
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    let mut pad = || -> String {
        (0..64)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                format!("{x:016x}")
            })
            .collect()
    };
    for batch in 0..40 {
        let docs: Vec<Document> = (0..200)
            .map(|i| doc! { "_id": batch * 200 + i, "pad": pad() })
            .collect();
        coll.insert_many(docs).await.unwrap();
    }
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let opened = db
            .run_command(doc! {
                "aggregate": "c",
                "pipeline": [{ "$changeStream": { "startAtOperationTime": start } }],
                "cursor": {},
            })
            .await;
        match opened {
            Err(e) => {
                assert_eq!(crate::common::code(&e), Some(286), "{e}");
                break;
            }
            Ok(_) => {
                assert!(Instant::now() < deadline, "the window was never trimmed");
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
        }
    }
    // A stream from now on still opens, and sees what comes next.
    let mut stream = coll.watch().await.unwrap();
    coll.insert_one(doc! { "_id": "after" }).await.unwrap();
    let seen = next_events(&mut stream, 1).await;
    assert_eq!(seen[0].document_key, Some(doc! { "_id": "after" }));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_a_stream_refuses() {
    let root = tempfile::tempdir().unwrap();
    let (_member, client) = one_member_set(root.path()).await;
    let db = client.database("t");
    let open = |pipeline: Vec<Document>| {
        let db = db.clone();
        async move {
            db.run_command(doc! { "aggregate": "c", "pipeline": pipeline, "cursor": {} })
                .await
        }
    };
    expect_code(
        open(vec![
            doc! { "$changeStream": { "resumeAfter": { "_data": "00" } } },
        ])
        .await,
        260,
    );
    expect_code(
        open(vec![
            doc! { "$changeStream": {} },
            doc! { "$group": { "_id": null } },
        ])
        .await,
        20,
    );
    expect_code(
        open(vec![doc! { "$match": {} }, doc! { "$changeStream": {} }]).await,
        40602,
    );
    expect_code(
        open(vec![
            doc! { "$changeStream": { "fullDocument": "sometimes" } },
        ])
        .await,
        2,
    );
    expect_code(
        open(vec![doc! { "$changeStream": { "bogus": 1 } }]).await,
        40415,
    );
    expect_code(
        client
            .database("admin")
            .run_command(
                doc! { "aggregate": 1, "pipeline": [{ "$changeStream": {} }], "cursor": {} },
            )
            .await,
        73,
    );
    // A time-series collection is a view, and its buckets are internal.
    db.run_command(doc! { "create": "ts", "timeseries": { "timeField": "t" } })
        .await
        .unwrap();
    for name in ["ts", "system.buckets.ts"] {
        let code = if name == "ts" { 166 } else { 73 };
        expect_code(
            db.run_command(
                doc! { "aggregate": name, "pipeline": [{ "$changeStream": {} }], "cursor": {} },
            )
            .await,
            code,
        );
    }
    // A stage that drops the token breaks the stream at the first event.
    let reply = open(vec![
        doc! { "$changeStream": {} },
        doc! { "$project": { "_id": 0 } },
    ])
    .await
    .unwrap();
    let id = reply.get_document("cursor").unwrap().get_i64("id").unwrap();
    db.collection::<Document>("c")
        .insert_one(doc! { "x": 1 })
        .await
        .unwrap();
    expect_code(
        db.run_command(doc! { "getMore": id, "collection": "c", "maxTimeMS": 5000 })
            .await,
        280,
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_resumes_on_the_new_primary_after_kill_9_without_a_gap_or_a_duplicate() {
    let root = tempfile::tempdir().unwrap();
    let (mut members, client) = initiated_set(root.path()).await;
    let coll: Collection<Document> = client.database("t").collection("c");
    coll.insert_one(doc! { "_id": -1 }).await.unwrap();
    // The stream's getMore is bound to the member that opened it: once
    // that member is gone, the driver waits out its server selection
    // timeout before it resumes elsewhere, so the watcher's is short.
    let seeds: Vec<String> = members.iter().map(|m| m.host()).collect();
    let watcher = mongodb::Client::with_uri_str(format!(
        "mongodb://{}/?replicaSet=rs0&serverSelectionTimeoutMS=10000",
        seeds.join(",")
    ))
    .await
    .unwrap();
    let mut stream = watcher
        .database("t")
        .collection::<Document>("c")
        .watch()
        .await
        .unwrap();
    for i in 0..50 {
        coll.insert_one(doc! { "_id": i }).await.unwrap();
    }
    let before = next_events(&mut stream, 25).await;
    let primary = primary_of(&members).await;
    members[primary].kill();
    for i in 50..100 {
        coll.insert_one(doc! { "_id": i }).await.unwrap();
    }
    let after = next_events(&mut stream, 75).await;
    let ids: Vec<i32> = before
        .iter()
        .chain(&after)
        .map(|e| e.document_key.as_ref().unwrap().get_i32("_id").unwrap())
        .collect();
    assert_eq!(
        ids,
        (0..100).collect::<Vec<_>>(),
        "every insert once, in order"
    );
    assert_ne!(primary_of(&members).await, primary);
}

/// `n` events of a database stream (`aggregate: 1`) with `spec`, read
/// with `getMore` within 30 s.
async fn db_events(db: &Database, spec: Document, n: usize) -> Vec<Document> {
    let pipeline = vec![doc! { "$changeStream": spec }];
    let reply = db
        .run_command(doc! { "aggregate": 1, "pipeline": pipeline, "cursor": {} })
        .await
        .unwrap();
    let cursor = reply.get_document("cursor").unwrap();
    let id = cursor.get_i64("id").unwrap();
    let mut events: Vec<Document> = cursor
        .get_array("firstBatch")
        .unwrap()
        .iter()
        .map(|e| e.as_document().unwrap().clone())
        .collect();
    let deadline = Instant::now() + Duration::from_secs(30);
    while events.len() < n {
        assert!(
            Instant::now() < deadline,
            "only {} of {n}: {events:?}",
            events.len()
        );
        let more = db
            .run_command(doc! { "getMore": id, "collection": "$cmd.aggregate", "maxTimeMS": 500 })
            .await
            .unwrap();
        let batch = more
            .get_document("cursor")
            .unwrap()
            .get_array("nextBatch")
            .unwrap();
        events.extend(batch.iter().map(|e| e.as_document().unwrap().clone()));
    }
    events
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expanded_events_show_each_change_to_the_catalog_in_mongods_shapes() {
    let root = tempfile::tempdir().unwrap();
    let (_member, client) = one_member_set(root.path()).await;
    let db = client.database("x");
    db.run_command(doc! { "create": "anchor" }).await.unwrap();
    let opened = db
        .run_command(doc! {
            "aggregate": 1,
            "pipeline": [{ "$changeStream": {} }],
            "cursor": {},
        })
        .await
        .unwrap();
    let start = opened
        .get_document("cursor")
        .unwrap()
        .get_document("postBatchResumeToken")
        .unwrap()
        .clone();

    db.run_command(doc! { "create": "made", "validator": { "a": { "$exists": true } } })
        .await
        .unwrap();
    db.collection::<Document>("implicit")
        .insert_one(doc! { "_id": 1, "a": 1 })
        .await
        .unwrap();
    db.run_command(doc! {
        "createIndexes": "implicit",
        "indexes": [{ "key": { "a": 1 }, "name": "a_1", "expireAfterSeconds": 86_400 }],
    })
    .await
    .unwrap();
    db.run_command(doc! { "collMod": "implicit", "index": { "name": "a_1", "hidden": true } })
        .await
        .unwrap();
    db.run_command(doc! { "collMod": "made", "validationLevel": "off" })
        .await
        .unwrap();
    db.run_command(doc! { "dropIndexes": "implicit", "index": "a_1" })
        .await
        .unwrap();
    db.run_command(doc! { "create": "series", "timeseries": { "timeField": "t" } })
        .await
        .unwrap();
    client
        .database("admin")
        .run_command(doc! { "renameCollection": "x.implicit", "to": "x.renamed" })
        .await
        .unwrap();
    db.run_command(doc! { "drop": "made" }).await.unwrap();

    let uuid_of = |events: &[Document], coll: &str| {
        events
            .iter()
            .find(|e| e.get_document("ns").unwrap().get_str("coll").ok() == Some(coll))
            .and_then(|e| e.get("collectionUUID").cloned())
            .unwrap_or_else(|| panic!("no {coll} event with collectionUUID: {events:?}"))
    };
    let expanded = db_events(
        &db,
        doc! { "showExpandedEvents": true, "startAfter": start.clone() },
        9,
    )
    .await;
    let kinds: Vec<&str> = expanded
        .iter()
        .map(|e| e.get_str("operationType").unwrap())
        .collect();
    assert_eq!(
        kinds,
        [
            "create",
            "create",
            "insert",
            "createIndexes",
            "modify",
            "modify",
            "dropIndexes",
            "rename",
            "drop",
        ],
        "{expanded:#?}"
    );
    let made = &expanded[0];
    let keys: Vec<&str> = made.keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        [
            "_id",
            "operationType",
            "clusterTime",
            "wallTime",
            "collectionUUID",
            "ns",
            "operationDescription",
            "nsType"
        ]
    );
    assert_eq!(made.get_str("nsType").unwrap(), "collection");
    assert_eq!(
        made.get_document("operationDescription").unwrap(),
        &doc! {
            "idIndex": { "v": 2, "key": { "_id": 1 }, "name": "_id_" },
            "validator": { "a": { "$exists": true } },
        }
    );
    let listed: Vec<Document> = crate::common::first_batch(
        &db,
        doc! { "listCollections": 1, "filter": { "name": "renamed" } },
    )
    .await;
    let renamed_uuid = listed[0]
        .get_document("info")
        .unwrap()
        .get("uuid")
        .unwrap()
        .clone();
    assert_eq!(
        uuid_of(&expanded[1..], "implicit"),
        renamed_uuid,
        "the insert's implicit create"
    );
    assert_eq!(
        expanded[2].get("collectionUUID"),
        Some(&renamed_uuid),
        "an insert carries it too"
    );
    let index = doc! { "v": 2, "key": { "a": 1 }, "name": "a_1", "expireAfterSeconds": 86_400 };
    assert_eq!(
        expanded[3].get_document("operationDescription").unwrap(),
        &doc! { "indexes": [index.clone()] }
    );
    assert_eq!(
        expanded[4].get_document("operationDescription").unwrap(),
        &doc! { "index": { "name": "a_1", "hidden": true } }
    );
    let before = expanded[4].get_document("stateBeforeChange").unwrap();
    assert_eq!(
        before.get_document("indexOptions").unwrap(),
        &doc! { "hidden": false }
    );
    assert_eq!(
        before
            .get_document("collectionOptions")
            .unwrap()
            .get("uuid"),
        Some(&renamed_uuid)
    );
    assert_eq!(
        expanded[5].get_document("operationDescription").unwrap(),
        &doc! { "validationLevel": "off" },
        "{:?}",
        expanded[5]
    );
    let dropped = expanded[6].get_document("operationDescription").unwrap();
    let dropped_spec = dropped.get_array("indexes").unwrap()[0]
        .as_document()
        .unwrap();
    assert_eq!(dropped_spec.get_str("name").unwrap(), "a_1");
    assert_eq!(
        expanded[7].get_document("operationDescription").unwrap(),
        &doc! { "to": { "db": "x", "coll": "renamed" } }
    );
    assert!(expanded[8].get("collectionUUID").is_some());
    // A time-series collection's create shows no event, as mongod's.
    assert!(
        expanded
            .iter()
            .all(|e| e.get_document("ns").unwrap().get_str("coll").ok() != Some("series")),
        "{expanded:#?}"
    );

    // Without the option: the same history, with no catalog event and no
    // collectionUUID.
    let plain = db_events(&db, doc! { "startAfter": start }, 3).await;
    let kinds: Vec<&str> = plain
        .iter()
        .map(|e| e.get_str("operationType").unwrap())
        .collect();
    assert_eq!(kinds, ["insert", "rename", "drop"]);
    assert!(plain.iter().all(|e| !e.contains_key("collectionUUID")));
}
