//! Multi-document transactions as drivers run them, on real `ebbd`
//! members: what a transaction sees and what others see of it, commit and
//! abort, first committer wins (WriteConflict with
//! `TransientTransactionError`), the protocol's errors in mongod's codes, a
//! commit sent again, and a committed transaction kept across `kill -9` of
//! the primary and a failover.

use mongodb::bson::{Document, doc};
use mongodb::error::TRANSIENT_TRANSACTION_ERROR;
use mongodb::options::{ReadConcern, WriteConcern};
use mongodb::{Client, ClientSession, Collection};

use crate::common::set::*;
use crate::common::{code, expect_code};

fn coll(client: &Client, name: &str) -> Collection<Document> {
    client.database("t").collection(name)
}

async fn all(c: &Collection<Document>) -> Vec<Document> {
    let mut out = Vec::new();
    let mut cursor = c.find(doc! {}).sort(doc! { "_id": 1 }).await.unwrap();
    while cursor.advance().await.unwrap() {
        out.push(cursor.deserialize_current().unwrap());
    }
    out
}

async fn all_in(c: &Collection<Document>, s: &mut ClientSession) -> Vec<Document> {
    let mut out = Vec::new();
    let mut cursor = c
        .find(doc! {})
        .sort(doc! { "_id": 1 })
        .session(&mut *s)
        .await
        .unwrap();
    while let Some(d) = cursor.next(&mut *s).await {
        out.push(d.unwrap());
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_transaction_sees_its_snapshot_and_own_writes_and_commits_all_at_once() {
    let root = tempfile::tempdir().unwrap();
    let (_member, client) = one_member_set(root.path()).await;
    let db = client.database("t");
    db.create_collection("a").await.unwrap();
    db.create_collection("b").await.unwrap();
    let (a, b) = (coll(&client, "a"), coll(&client, "b"));
    a.insert_many([doc! { "_id": 1, "n": 0 }, doc! { "_id": 2, "n": 0 }])
        .await
        .unwrap();

    let mut s = client.start_session().await.unwrap();
    s.start_transaction()
        .read_concern(ReadConcern::snapshot())
        .await
        .unwrap();
    a.update_one(doc! { "_id": 1 }, doc! { "$inc": { "n": 1 } })
        .session(&mut s)
        .await
        .unwrap();
    a.delete_one(doc! { "_id": 2 })
        .session(&mut s)
        .await
        .unwrap();
    b.insert_one(doc! { "_id": 10, "from": "txn" })
        .session(&mut s)
        .await
        .unwrap();
    // Written after the transaction's snapshot, outside it: not seen in it.
    a.insert_one(doc! { "_id": 3, "n": 0 }).await.unwrap();

    assert_eq!(
        all_in(&a, &mut s).await,
        vec![doc! { "_id": 1, "n": 1 }],
        "the transaction reads its snapshot with its own writes"
    );
    assert_eq!(b.count_documents(doc! {}).session(&mut s).await.unwrap(), 1);
    let found = b
        .find_one_and_update(doc! { "_id": 10 }, doc! { "$set": { "seen": true } })
        .session(&mut s)
        .await
        .unwrap();
    assert_eq!(found, Some(doc! { "_id": 10, "from": "txn" }));
    // Nobody else sees any of it before the commit.
    assert_eq!(
        all(&a).await,
        vec![
            doc! { "_id": 1, "n": 0 },
            doc! { "_id": 2, "n": 0 },
            doc! { "_id": 3, "n": 0 }
        ]
    );
    assert!(all(&b).await.is_empty());

    s.commit_transaction().await.unwrap();
    assert_eq!(
        all(&a).await,
        vec![doc! { "_id": 1, "n": 1 }, doc! { "_id": 3, "n": 0 }]
    );
    assert_eq!(
        all(&b).await,
        vec![doc! { "_id": 10, "from": "txn", "seen": true }]
    );
    // The indexes followed: the deleted document is not found by them.
    assert_eq!(a.count_documents(doc! { "n": 0 }).await.unwrap(), 1);

    // Aborted, it leaves nothing.
    s.start_transaction().await.unwrap();
    b.insert_one(doc! { "_id": 11 })
        .session(&mut s)
        .await
        .unwrap();
    a.delete_many(doc! {}).session(&mut s).await.unwrap();
    s.abort_transaction().await.unwrap();
    assert_eq!(all(&a).await.len(), 2);
    assert_eq!(all(&b).await.len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_committer_wins_and_the_driver_runs_the_other_again() {
    let root = tempfile::tempdir().unwrap();
    let (_member, client) = one_member_set(root.path()).await;
    let db = client.database("t");
    db.create_collection("a").await.unwrap();
    let a = coll(&client, "a");
    a.insert_one(doc! { "_id": 1, "n": 0 }).await.unwrap();
    db.run_command(doc! {
        "createIndexes": "a",
        "indexes": [{ "key": { "u": 1 }, "name": "u_1", "unique": true }],
    })
    .await
    .unwrap();

    let mut s1 = client.start_session().await.unwrap();
    let mut s2 = client.start_session().await.unwrap();
    s1.start_transaction().await.unwrap();
    s2.start_transaction().await.unwrap();
    a.update_one(doc! { "_id": 1 }, doc! { "$inc": { "n": 1 } })
        .session(&mut s1)
        .await
        .unwrap();
    a.update_one(doc! { "_id": 1 }, doc! { "$inc": { "n": 10 } })
        .session(&mut s2)
        .await
        .unwrap();
    s1.commit_transaction().await.unwrap();
    let e = s2.commit_transaction().await.unwrap_err();
    assert_eq!(code(&e), Some(112), "{e}");
    assert!(e.contains_label(TRANSIENT_TRANSACTION_ERROR), "{e}");
    assert_eq!(all(&a).await, vec![doc! { "_id": 1, "n": 1 }]);

    // A write to a document a commit changed since the snapshot fails at
    // once, and aborts its transaction.
    s1.start_transaction().await.unwrap();
    s2.start_transaction().await.unwrap();
    a.find_one(doc! { "_id": 1 })
        .session(&mut s2)
        .await
        .unwrap();
    a.update_one(doc! { "_id": 1 }, doc! { "$inc": { "n": 1 } })
        .session(&mut s1)
        .await
        .unwrap();
    s1.commit_transaction().await.unwrap();
    let e = a
        .update_one(doc! { "_id": 1 }, doc! { "$inc": { "n": 10 } })
        .session(&mut s2)
        .await
        .unwrap_err();
    assert_eq!(code(&e), Some(112), "{e}");
    assert!(e.contains_label(TRANSIENT_TRANSACTION_ERROR), "{e}");
    expect_code(s2.commit_transaction().await, 251);
    assert_eq!(all(&a).await, vec![doc! { "_id": 1, "n": 2 }]);

    // Two transactions taking one unique key with different documents.
    s1.start_transaction().await.unwrap();
    s2.start_transaction().await.unwrap();
    a.insert_one(doc! { "_id": 2, "u": "x" })
        .session(&mut s1)
        .await
        .unwrap();
    a.insert_one(doc! { "_id": 3, "u": "x" })
        .session(&mut s2)
        .await
        .unwrap();
    s2.commit_transaction().await.unwrap();
    let e = s1.commit_transaction().await.unwrap_err();
    assert_eq!(code(&e), Some(112), "{e}");
    assert_eq!(a.count_documents(doc! { "u": "x" }).await.unwrap(), 1);

    // The driver's callback API retries on the transient label until the
    // transaction commits: two sessions each add 1, twenty times, racing.
    let race = |client: Client| async move {
        let a = coll(&client, "a");
        let mut s = client.start_session().await.unwrap();
        for _ in 0..20 {
            s.start_transaction()
                .and_run(&a, |s, a| {
                    Box::pin(async move {
                        let d = a
                            .find_one(doc! { "_id": 1 })
                            .session(&mut *s)
                            .await?
                            .unwrap();
                        let n = d.get_i32("n").unwrap();
                        a.update_one(doc! { "_id": 1 }, doc! { "$set": { "n": n + 1 } })
                            .session(&mut *s)
                            .await?;
                        Ok(())
                    })
                })
                .await
                .unwrap();
        }
    };
    let (x, y) = tokio::join!(
        tokio::spawn(race(client.clone())),
        tokio::spawn(race(client.clone()))
    );
    x.unwrap();
    y.unwrap();
    let d = a.find_one(doc! { "_id": 1 }).await.unwrap().unwrap();
    assert_eq!(d.get_i32("n").unwrap(), 42, "no update was lost");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_protocol_answers_in_mongods_codes() {
    let root = tempfile::tempdir().unwrap();
    let (member, client) = one_member_set(root.path()).await;
    let db = client.database("t");
    db.create_collection("a").await.unwrap();
    db.create_collection("capped")
        .capped(true)
        .size(4096)
        .await
        .unwrap();
    let direct = member.direct().await;
    let t = direct.database("t");
    let lsid = doc! { "id": mongodb::bson::Uuid::new() };
    let run = |cmd: Document| {
        let t = t.clone();
        async move { t.run_command(cmd).await }
    };
    let stmt = |mut cmd: Document, n: i64, start: bool| {
        cmd.insert("lsid", lsid.clone());
        cmd.insert("txnNumber", n);
        cmd.insert("autocommit", false);
        if start {
            cmd.insert("startTransaction", true);
        }
        cmd
    };

    // Commands a transaction does not run: refused, nothing started.
    expect_code(run(stmt(doc! { "count": "a" }, 1, true)).await, 263);
    expect_code(
        run(stmt(
            doc! { "createIndexes": "a", "indexes": [{ "key": { "x": 1 }, "name": "x_1" }] },
            1,
            true,
        ))
        .await,
        263,
    );
    let e = run(stmt(doc! { "commitTransaction": 1 }, 1, false))
        .await
        .unwrap_err();
    assert_eq!(code(&e), Some(251), "{e}");
    assert!(e.contains_label(TRANSIENT_TRANSACTION_ERROR));

    // Started by an insert; a refused command inside leaves it running.
    run(stmt(
        doc! { "insert": "a", "documents": [{ "_id": 1 }] },
        2,
        true,
    ))
    .await
    .unwrap();
    expect_code(run(stmt(doc! { "count": "a" }, 2, false)).await, 263);
    expect_code(
        run(stmt(
            doc! { "find": "a", "readConcern": { "level": "snapshot" } },
            2,
            false,
        ))
        .await,
        72,
    );
    expect_code(
        run(stmt(
            doc! { "insert": "a", "documents": [{}], "writeConcern": { "w": 1 } },
            2,
            false,
        ))
        .await,
        72,
    );
    expect_code(
        run(stmt(
            doc! { "aggregate": "a", "pipeline": [{ "$out": "o" }], "cursor": {} },
            2,
            false,
        ))
        .await,
        263,
    );
    // Those refusals ran nothing; this is the same transaction still.
    let found = run(stmt(doc! { "find": "a" }, 2, false)).await.unwrap();
    let batch = found
        .get_document("cursor")
        .unwrap()
        .get_array("firstBatch")
        .unwrap();
    assert_eq!(batch.len(), 1);
    let admin = direct.database("admin");
    admin
        .run_command(stmt(doc! { "commitTransaction": 1 }, 2, false))
        .await
        .unwrap();
    // Committing again is answered the same; aborting a committed one is 256.
    admin
        .run_command(stmt(doc! { "commitTransaction": 1 }, 2, false))
        .await
        .unwrap();
    expect_code(
        admin
            .run_command(stmt(doc! { "abortTransaction": 1 }, 2, false))
            .await,
        256,
    );
    expect_code(run(stmt(doc! { "find": "a" }, 2, false)).await, 256);
    // An older number is too old; a statement of no transaction is 251.
    expect_code(run(stmt(doc! { "find": "a" }, 1, true)).await, 225);
    expect_code(run(stmt(doc! { "find": "a" }, 3, false)).await, 251);

    // A failing statement aborts its transaction.
    run(stmt(
        doc! { "insert": "a", "documents": [{ "_id": 5 }] },
        4,
        true,
    ))
    .await
    .unwrap();
    let dup = run(stmt(
        doc! { "insert": "a", "documents": [{ "_id": 1 }] },
        4,
        false,
    ))
    .await
    .unwrap();
    assert!(dup.get_array("writeErrors").is_ok(), "{dup}");
    let e = admin
        .run_command(stmt(doc! { "commitTransaction": 1 }, 4, false))
        .await
        .unwrap_err();
    assert_eq!(code(&e), Some(251), "{e}");
    assert_eq!(
        coll(&client, "a").count_documents(doc! {}).await.unwrap(),
        1
    );

    // Writes a transaction does not take fail it, as any failing statement.
    for (n, target) in [(5, "capped"), (6, "new")] {
        expect_code(
            run(stmt(doc! { "insert": target, "documents": [{}] }, n, true)).await,
            263,
        );
        expect_code(
            admin
                .run_command(stmt(doc! { "commitTransaction": 1 }, n, false))
                .await,
            251,
        );
    }
    assert!(
        db.list_collection_names()
            .await
            .unwrap()
            .iter()
            .all(|n| n != "new")
    );

    // autocommit: true, and startTransaction: false, are refused.
    expect_code(
        run(doc! { "find": "a", "lsid": lsid.clone(), "txnNumber": 9i64, "autocommit": true })
            .await,
        72,
    );
    expect_code(
        run(doc! { "find": "a", "lsid": lsid.clone(), "txnNumber": 9i64, "autocommit": false, "startTransaction": false }).await,
        72,
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_committed_transaction_survives_kill_9_and_its_commit_is_answered_by_the_new_primary() {
    let root = tempfile::tempdir().unwrap();
    let (mut members, client) = initiated_set(root.path()).await;
    let db = client.database("t");
    db.create_collection("c").await.unwrap();
    let c = coll(&client, "c");

    let mut s = client.start_session().await.unwrap();
    s.start_transaction()
        .write_concern(WriteConcern::majority())
        .await
        .unwrap();
    for i in 0..5 {
        c.insert_one(doc! { "_id": i, "tx": 1 })
            .session(&mut s)
            .await
            .unwrap();
    }
    s.commit_transaction().await.unwrap();

    // Another, left open when the primary dies: it never happened.
    let mut open = client.start_session().await.unwrap();
    open.start_transaction().await.unwrap();
    c.insert_one(doc! { "_id": 100, "tx": 2 })
        .session(&mut open)
        .await
        .unwrap();

    let old = primary_of(&members).await;
    members[old].kill();
    let new = primary_of(&members).await;
    assert_ne!(new, old);
    let on_new: Collection<Document> = members[new].direct().await.database("t").collection("c");
    assert_eq!(all(&on_new).await.len(), 5);
    for (i, m) in members.iter().enumerate() {
        if i != old {
            eventually("every live member holds the transaction", async || {
                documents_of(m, "c").await.len() == 5
            })
            .await;
        }
    }
    // The commit sent again after the failover is answered from what the
    // set committed.
    s.commit_transaction().await.unwrap();
    let e = open.commit_transaction().await.unwrap_err();
    assert!(
        e.contains_label(TRANSIENT_TRANSACTION_ERROR) || code(&e) == Some(251),
        "{e}"
    );
    assert_eq!(all(&on_new).await.len(), 5);

    // With a member down, a commit asking all three waits: maxCommitTimeMS
    // ends the wait (the commit itself holds, on the majority).
    let mut w3 = client.start_session().await.unwrap();
    w3.start_transaction()
        .write_concern(
            WriteConcern::builder()
                .w(mongodb::options::Acknowledgment::Nodes(3))
                .build(),
        )
        .max_commit_time(std::time::Duration::from_millis(300))
        .await
        .unwrap();
    c.insert_one(doc! { "_id": 200 })
        .session(&mut w3)
        .await
        .unwrap();
    let e = w3.commit_transaction().await.unwrap_err();
    assert_eq!(code(&e), Some(50), "{e}");
    assert_eq!(c.count_documents(doc! { "_id": 200 }).await.unwrap(), 1);
    members[old].spawn();
    eventually("the old primary catches up", async || {
        documents_of(&members[old], "c").await.len() == 6
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_sees_a_commits_changes_in_order_naming_the_transaction() {
    use mongodb::change_stream::event::OperationType;
    let root = tempfile::tempdir().unwrap();
    let (_member, client) = one_member_set(root.path()).await;
    client.database("t").create_collection("c").await.unwrap();
    let c = coll(&client, "c");
    c.insert_one(doc! { "_id": 0, "n": 0 }).await.unwrap();
    let mut stream = c.watch().await.unwrap();

    let mut s = client.start_session().await.unwrap();
    s.start_transaction().await.unwrap();
    c.insert_one(doc! { "_id": 1 })
        .session(&mut s)
        .await
        .unwrap();
    c.update_one(doc! { "_id": 0 }, doc! { "$set": { "n": 1 } })
        .session(&mut s)
        .await
        .unwrap();
    c.delete_one(doc! { "_id": 0 })
        .session(&mut s)
        .await
        .unwrap();
    s.commit_transaction().await.unwrap();
    c.insert_one(doc! { "_id": 2 }).await.unwrap();

    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let mut events = Vec::new();
    while events.len() < 4 {
        assert!(std::time::Instant::now() < deadline, "{events:?}");
        if let Some(e) = stream.next_if_any().await.unwrap() {
            events.push(e);
        }
    }
    let kinds: Vec<OperationType> = events.iter().map(|e| e.operation_type.clone()).collect();
    assert_eq!(
        kinds,
        [
            OperationType::Insert,
            OperationType::Update,
            OperationType::Delete,
            OperationType::Insert
        ]
    );
    let id = s.id().get("id").cloned();
    for e in &events[..3] {
        assert_eq!(e.txn_number, Some(1), "{e:?}");
        assert_eq!(e.lsid.as_ref().and_then(|l| l.get("id").cloned()), id);
        assert_eq!(
            e.cluster_time, events[0].cluster_time,
            "one commit, one time"
        );
    }
    assert_eq!(events[3].txn_number, None);
    assert_eq!(events[3].lsid, None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reader_never_sees_half_a_transaction() {
    let root = tempfile::tempdir().unwrap();
    let (_member, client) = one_member_set(root.path()).await;
    client.database("t").create_collection("c").await.unwrap();
    let c = coll(&client, "c");
    let writer = {
        let client = client.clone();
        tokio::spawn(async move {
            let c = coll(&client, "c");
            let mut s = client.start_session().await.unwrap();
            for k in 0..30 {
                s.start_transaction().await.unwrap();
                let docs: Vec<Document> = (0..10)
                    .map(|i| doc! { "_id": k * 10 + i, "k": k })
                    .collect();
                c.insert_many(docs).session(&mut s).await.unwrap();
                if k > 0 {
                    c.update_many(doc! { "k": k - 1 }, doc! { "$set": { "next": true } })
                        .session(&mut s)
                        .await
                        .unwrap();
                }
                s.commit_transaction().await.unwrap();
            }
        })
    };
    let mut reads = 0;
    while !writer.is_finished() || reads == 0 {
        // One batch: one snapshot.
        let mut cursor = c.find(doc! {}).batch_size(1000).await.unwrap();
        let mut docs = Vec::new();
        while cursor.advance().await.unwrap() {
            docs.push(cursor.deserialize_current().unwrap());
        }
        let batches = docs.len() / 10;
        assert_eq!(docs.len() % 10, 0, "half a transaction's inserts seen");
        for d in &docs {
            let k = d.get_i32("k").unwrap() as usize;
            // Batch k is marked by the transaction that inserts batch k + 1.
            assert_eq!(d.get_bool("next").is_ok(), k + 1 < batches, "{d}");
        }
        reads += 1;
    }
    writer.await.unwrap();
    assert_eq!(all(&c).await.len(), 300);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ttl_and_transactions_together() {
    let root = tempfile::tempdir().unwrap();
    let (member, client) = one_member_set(root.path()).await;
    let db = client.database("t");
    db.create_collection("s").await.unwrap();
    db.run_command(doc! {
        "createIndexes": "s",
        "indexes": [{ "key": { "at": 1 }, "name": "at_1", "expireAfterSeconds": 0 }],
    })
    .await
    .unwrap();
    let s_coll = coll(&client, "s");
    let now = mongodb::bson::DateTime::now().timestamp_millis();
    let past = mongodb::bson::DateTime::from_millis(now - 3_600_000);
    let later = mongodb::bson::DateTime::from_millis(now + 3_600_000);

    // A due document the transaction writes is hidden from it too, and
    // nothing of it reaches the monitor before the commit.
    let mut s = client.start_session().await.unwrap();
    s.start_transaction().await.unwrap();
    s_coll
        .insert_many([
            doc! { "_id": "due", "at": past },
            doc! { "_id": "live", "at": later },
        ])
        .session(&mut s)
        .await
        .unwrap();
    assert_eq!(all_in(&s_coll, &mut s).await.len(), 1);
    assert_eq!(all(&s_coll).await.len(), 0);
    s.commit_transaction().await.unwrap();
    assert_eq!(
        all(&s_coll).await,
        vec![doc! { "_id": "live", "at": later }]
    );
    let deleted = async || {
        let status = admin(&member, doc! { "serverStatus": 1 }).await;
        status
            .get_document("metrics")
            .unwrap()
            .get_document("ttl")
            .unwrap()
            .get_i64("deletedDocuments")
            .unwrap()
    };
    eventually(
        "the monitor deletes the committed due document",
        async || deleted().await == 1,
    )
    .await;

    // A document the monitor deletes under a transaction that wrote it:
    // the commit is a write conflict, and the document stays gone.
    let soon = mongodb::bson::DateTime::from_millis(
        mongodb::bson::DateTime::now().timestamp_millis() + 1_500,
    );
    s_coll
        .insert_one(doc! { "_id": "soon", "at": soon })
        .await
        .unwrap();
    s.start_transaction().await.unwrap();
    s_coll
        .update_one(doc! { "_id": "soon" }, doc! { "$set": { "touched": true } })
        .session(&mut s)
        .await
        .unwrap();
    eventually("the monitor deletes the document", async || {
        deleted().await == 2
    })
    .await;
    let e = s.commit_transaction().await.unwrap_err();
    assert_eq!(code(&e), Some(112), "{e}");
    assert_eq!(
        s_coll
            .count_documents(doc! { "_id": "soon" })
            .await
            .unwrap(),
        0
    );
}

/// One transaction of the model test, as its client saw it.
#[derive(Debug, Clone)]
struct Ran {
    /// Each key read, with the stamp read (0: the initial value).
    reads: Vec<(i32, i64)>,
    /// The keys written, each with this transaction's stamp.
    writes: Vec<i32>,
    stamp: i64,
    /// The commit's operation time, when it committed.
    committed: Option<mongodb::bson::Timestamp>,
}

const KEYS: i32 = 6;

async fn random_transactions(client: Client, worker: i64, seed: u64, n: usize) -> Vec<Ran> {
    use rand::{Rng, SeedableRng};
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let c = coll(&client, "m");
    let mut s = client.start_session().await.unwrap();
    let mut out = Vec::new();
    for i in 0..n {
        let stamp = worker * 1_000_000 + i as i64 + 1;
        let mut ran = Ran {
            reads: Vec::new(),
            writes: Vec::new(),
            stamp,
            committed: None,
        };
        s.start_transaction().await.unwrap();
        let mut failed = false;
        for _ in 0..rng.random_range(1..4) {
            let k = rng.random_range(0..KEYS);
            match c.find_one(doc! { "_id": k }).session(&mut s).await {
                Ok(d) => ran.reads.push((k, d.unwrap().get_i64("v").unwrap())),
                Err(_) => failed = true,
            }
        }
        for _ in 0..rng.random_range(0..3) {
            let k = rng.random_range(0..KEYS);
            if failed || ran.writes.contains(&k) {
                continue;
            }
            let set = doc! { "$set": { "v": stamp }, "$inc": { "n": 1 } };
            match c.update_one(doc! { "_id": k }, set).session(&mut s).await {
                Ok(_) => ran.writes.push(k),
                Err(_) => failed = true,
            }
        }
        if failed {
            let _ = s.abort_transaction().await;
        } else {
            match s.commit_transaction().await {
                Ok(()) => ran.committed = s.operation_time(),
                Err(e) => assert_eq!(code(&e), Some(112), "{e}"),
            }
        }
        out.push(ran);
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_transactions_are_snapshot_isolated_against_a_serial_model() {
    let root = tempfile::tempdir().unwrap();
    let (_member, client) = one_member_set(root.path()).await;
    let c = coll(&client, "m");
    c.insert_many((0..KEYS).map(|k| doc! { "_id": k, "v": 0i64, "n": 0 }))
        .await
        .unwrap();
    // The order commits took in the set's history, from their events.
    let mut stream = c.watch().await.unwrap();
    let workers: Vec<_> = (1..=3)
        .map(|w| tokio::spawn(random_transactions(client.clone(), w, 7 + w as u64, 25)))
        .collect();
    let mut all_ran = Vec::new();
    for w in workers {
        all_ran.extend(w.await.unwrap());
    }

    let writers = all_ran
        .iter()
        .filter(|r| r.committed.is_some() && !r.writes.is_empty())
        .count();
    let mut at: std::collections::HashMap<i64, (u32, u32)> = Default::default();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while at.len() < writers {
        assert!(
            std::time::Instant::now() < deadline,
            "events of {} of {writers} commits",
            at.len()
        );
        let Some(e) = stream.next_if_any().await.unwrap() else {
            continue;
        };
        let fields = e.update_description.unwrap().updated_fields;
        let t = e.cluster_time.unwrap();
        at.insert(fields.get_i64("v").unwrap(), (t.time, t.increment));
    }
    // The serial model: the committed writing transactions in commit order.
    let mut committed: Vec<&Ran> = all_ran
        .iter()
        .filter(|r| r.committed.is_some() && !r.writes.is_empty())
        .collect();
    committed.sort_by_key(|r| at[&r.stamp]);
    assert!(
        committed.len() >= 10,
        "too few commits: {}",
        committed.len()
    );
    let mut states = vec![vec![0i64; KEYS as usize]];
    for r in &committed {
        let mut next = states.last().unwrap().clone();
        for &k in &r.writes {
            next[k as usize] = r.stamp;
        }
        states.push(next);
    }
    let committed_stamps: std::collections::HashSet<i64> =
        committed.iter().map(|r| r.stamp).collect();
    // A transaction that only read fits a state no later than its commit.
    for r in all_ran.iter().filter(|r| r.writes.is_empty()) {
        let Some(t) = r.committed else { continue };
        let before = committed
            .iter()
            .filter(|o| at[&o.stamp] <= (t.time, t.increment))
            .count();
        assert!(
            (0..=before).any(|p| r.reads.iter().all(|(k, v)| states[p][*k as usize] == *v)),
            "read-only transaction {r:?} read no one state"
        );
    }
    for r in &all_ran {
        // No dirty read: every value read was written by a commit.
        for (k, v) in &r.reads {
            assert!(
                *v == 0 || committed_stamps.contains(v),
                "key {k} read {v}, which no committed transaction wrote"
            );
        }
    }
    for (c_at, r) in committed.iter().enumerate() {
        // Snapshot isolation: the reads are one state before the commit,
        // and no transaction that committed after that state and before
        // this one wrote a key this one wrote (no lost update).
        let fits = (0..=c_at).any(|p| {
            r.reads.iter().all(|(k, v)| states[p][*k as usize] == *v)
                && committed[p..c_at]
                    .iter()
                    .all(|o| o.writes.iter().all(|k| !r.writes.contains(k)))
        });
        assert!(fits, "transaction {r:?} fits no snapshot before its commit");
    }
    // Every committed increment is there: none lost.
    let final_docs = all(&c).await;
    for d in &final_docs {
        let k = d.get_i32("_id").unwrap();
        let incs = committed.iter().filter(|r| r.writes.contains(&k)).count();
        assert_eq!(d.get_i32("n").unwrap() as usize, incs, "{d}");
        assert_eq!(d.get_i64("v").unwrap(), states.last().unwrap()[k as usize]);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_of_the_primary_during_a_commit_leaves_all_of_it_or_none() {
    let root = tempfile::tempdir().unwrap();
    let (mut members, client) = initiated_set(root.path()).await;
    client.database("t").create_collection("c").await.unwrap();
    let c = coll(&client, "c");
    for (round, delay_ms) in [0u64, 2, 10].into_iter().enumerate() {
        let round = round as i32;
        let mut s = client.start_session().await.unwrap();
        s.start_transaction()
            .write_concern(WriteConcern::majority())
            .await
            .unwrap();
        let docs: Vec<Document> = (0..50).map(|i| doc! { "round": round, "i": i }).collect();
        c.insert_many(docs).session(&mut s).await.unwrap();
        let old = primary_of(&members).await;
        let commit = tokio::spawn(async move {
            let r = s.commit_transaction().await;
            (s, r)
        });
        tokio::time::sleep(std::time::Duration::from_millis(delay_ms)).await;
        members[old].kill();
        let (mut s, first) = commit.await.unwrap();
        primary_of(&members).await;
        // Whatever the client heard, the set holds all of it or none, and
        // a commit sent again says which.
        let again = s.commit_transaction().await;
        let held = c.count_documents(doc! { "round": round }).await.unwrap();
        match (&first, &again) {
            (Ok(()), _) | (_, Ok(())) => assert_eq!(held, 50, "{first:?} {again:?}"),
            (Err(_), Err(e)) => {
                assert_eq!(held, 0, "{first:?} {again:?}");
                assert!(e.contains_label(TRANSIENT_TRANSACTION_ERROR), "{e}");
            }
        }
        members[old].spawn();
        eventually("the old primary catches up", async || {
            let on: Collection<Document> =
                members[old].direct().await.database("t").collection("c");
            on.count_documents(doc! { "round": round })
                .await
                .unwrap_or(u64::MAX)
                == held
        })
        .await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_open_transaction_shows_in_current_op_and_ends_past_its_lifetime() {
    let root = tempfile::tempdir().unwrap();
    let (member, client) = one_member_set(root.path()).await;
    client.database("t").create_collection("c").await.unwrap();
    let c = coll(&client, "c");
    admin(
        &member,
        doc! { "setParameter": 1, "transactionLifetimeLimitSeconds": 1 },
    )
    .await;
    let mut s = client.start_session().await.unwrap();
    s.start_transaction().await.unwrap();
    c.insert_one(doc! { "_id": 1 })
        .session(&mut s)
        .await
        .unwrap();

    let ops = admin(&member, doc! { "currentOp": 1, "$all": true }).await;
    let idle: Vec<&Document> = ops
        .get_array("inprog")
        .unwrap()
        .iter()
        .filter_map(|o| o.as_document())
        .filter(|o| o.get_str("type").ok() == Some("idleSession"))
        .collect();
    assert_eq!(idle.len(), 1, "{ops}");
    let params = idle[0]
        .get_document("transaction")
        .unwrap()
        .get_document("parameters")
        .unwrap();
    assert_eq!(params.get_i64("txnNumber").ok(), Some(1));
    let transactions = async || {
        admin(&member, doc! { "serverStatus": 1 })
            .await
            .get_document("transactions")
            .unwrap()
            .clone()
    };
    assert_eq!(transactions().await.get_i64("currentOpen").ok(), Some(1));

    eventually("the transaction is aborted past its lifetime", async || {
        transactions().await.get_i64("totalAborted").ok() == Some(1)
    })
    .await;
    assert_eq!(transactions().await.get_i64("currentOpen").ok(), Some(0));
    let e = s.commit_transaction().await.unwrap_err();
    assert_eq!(code(&e), Some(251), "{e}");
    assert!(
        crate::common::message(&e).contains("transactionLifetimeLimitSeconds"),
        "{e}"
    );
    assert_eq!(c.count_documents(doc! {}).await.unwrap(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_transaction_validates_as_its_statements_ask() {
    let root = tempfile::tempdir().unwrap();
    let (_member, client) = one_member_set(root.path()).await;
    let db = client.database("t");
    db.create_collection("v")
        .validator(doc! { "x": { "$type": "int" } })
        .await
        .unwrap();
    let v = coll(&client, "v");
    let mut s = client.start_session().await.unwrap();
    s.start_transaction().await.unwrap();
    v.insert_one(doc! { "_id": 1, "x": "not an int" })
        .bypass_document_validation(true)
        .session(&mut s)
        .await
        .unwrap();
    s.commit_transaction().await.unwrap();
    assert_eq!(v.count_documents(doc! {}).await.unwrap(), 1);

    s.start_transaction().await.unwrap();
    let e = v
        .insert_one(doc! { "_id": 2, "x": "not an int" })
        .session(&mut s)
        .await
        .unwrap_err();
    assert_eq!(code(&e), Some(121), "{e}");
    let e = s.commit_transaction().await.unwrap_err();
    assert_eq!(code(&e), Some(251), "{e}");
    assert_eq!(v.count_documents(doc! {}).await.unwrap(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_transaction_is_bounded_in_size_and_ended_with_its_session() {
    let root = tempfile::tempdir().unwrap();
    let (_member, client) = one_member_set(root.path()).await;
    client.database("t").create_collection("c").await.unwrap();
    let c = coll(&client, "c");
    let big = "x".repeat(1 << 20);

    // Past 16 MB of writes: TransactionTooLarge, and the transaction is gone.
    let mut s = client.start_session().await.unwrap();
    s.start_transaction().await.unwrap();
    let mut refused = None;
    for i in 0..20 {
        if let Err(e) = c
            .insert_one(doc! { "_id": i, "p": &big })
            .session(&mut s)
            .await
        {
            refused = Some(e);
            break;
        }
    }
    let e = refused.expect("20 MiB of writes were taken");
    assert_eq!(code(&e), Some(257), "{e}");
    expect_code(s.commit_transaction().await, 251);
    assert_eq!(c.count_documents(doc! {}).await.unwrap(), 0);

    // killSessions ends an open transaction.
    let mut s = client.start_session().await.unwrap();
    s.start_transaction().await.unwrap();
    c.insert_one(doc! { "_id": "k" })
        .session(&mut s)
        .await
        .unwrap();
    client
        .database("admin")
        .run_command(doc! { "killSessions": [s.id().clone()] })
        .await
        .unwrap();
    let e = s.commit_transaction().await.unwrap_err();
    assert!(matches!(code(&e), Some(251)), "{e}");
    assert_eq!(c.count_documents(doc! {}).await.unwrap(), 0);
}
