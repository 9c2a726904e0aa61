//! Replica sets: three real `ebbd` processes on loopback ports, initiated
//! as mongosh's `rs.initiate(config)` does, reached by the driver with
//! `?replicaSet=`; majority writes on every member, secondaries refusing
//! writes, retryable writes applied once, and a new primary after `kill -9`
//! of the old one; the set's time as drivers read it (`operationTime`,
//! `lastWrite`, causally consistent reads) and the awaitable `hello`.

use std::time::{Duration, Instant};

use mongodb::bson::{Document, doc};
use mongodb::options::WriteConcern;
use mongodb::{Client, Collection};

use crate::common::set::*;
use crate::common::{expect_code, first_batch};

/// `serverStatus().metrics.ttl` on `member`.
async fn ttl_metrics(member: &Member) -> Document {
    let status = admin(member, doc! { "serverStatus": 1 }).await;
    status
        .get_document("metrics")
        .unwrap()
        .get_document("ttl")
        .unwrap()
        .clone()
}

fn count_of(metrics: &Document, name: &str) -> i64 {
    metrics.get_i64(name).unwrap()
}

async fn count_on(member: &Member, name: &str, filter: Document) -> u64 {
    let coll: Collection<Document> = member.direct().await.database("t").collection(name);
    coll.count_documents(filter).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_members_take_majority_writes_refuse_writes_on_secondaries_and_fail_over() {
    let root = tempfile::tempdir().unwrap();
    let mut members: Vec<Member> = (0..3).map(|_| Member::start(root.path())).collect();

    // Before the set is initiated: a member, not yet writable.
    let h = hello(&members[0]).await;
    assert_eq!(h.get_bool("isWritablePrimary").ok(), Some(false));
    assert_eq!(h.get_bool("isreplicaset").ok(), Some(true));
    let first = members[0].direct().await;
    expect_code(
        first
            .database("admin")
            .run_command(doc! { "replSetGetStatus": 1 })
            .await,
        94,
    );

    let config = set_config(&members);
    expect_code(
        first
            .database("admin")
            .run_command(doc! { "replSetInitiate": { "_id": "other", "members": config.get_array("members").unwrap().clone() } })
            .await,
        93,
    );
    first
        .database("admin")
        .run_command(doc! { "replSetInitiate": config.clone() })
        .await
        .unwrap();
    expect_code(
        first
            .database("admin")
            .run_command(doc! { "replSetInitiate": config.clone() })
            .await,
        23,
    );

    // The driver finds the primary by the set's name.
    let seeds: Vec<String> = members.iter().map(Member::host).collect();
    let uri = format!(
        "mongodb://{}/?replicaSet=rs0&serverSelectionTimeoutMS=30000",
        seeds.join(",")
    );
    let client = Client::with_uri_str(&uri).await.unwrap();
    let coll: Collection<Document> = client.database("t").collection_with_options(
        "c",
        mongodb::options::CollectionOptions::builder()
            .write_concern(WriteConcern::majority())
            .build(),
    );
    coll.insert_many((0..100).map(|i| doc! { "_id": i, "x": i }))
        .await
        .unwrap();
    coll.update_one(doc! { "_id": 5 }, doc! { "$inc": { "x": 10 } })
        .await
        .unwrap();
    coll.delete_one(doc! { "_id": 99 }).await.unwrap();
    expect_code(
        client
            .database("t")
            .run_command(
                doc! { "insert": "c", "documents": [{ "x": 1 }], "writeConcern": { "w": 4 } },
            )
            .await,
        100,
    );

    // Every member holds the same documents; one is the primary.
    let expected = documents_on(&members[0]).await;
    assert_eq!(expected.len(), 99);
    for m in &members {
        eventually("a member to apply the writes", async || {
            documents_on(m).await == expected
        })
        .await;
    }
    let mut primary = None;
    for (i, m) in members.iter().enumerate() {
        let h = hello(m).await;
        assert_eq!(h.get_str("setName").ok(), Some("rs0"));
        assert_eq!(h.get_array("hosts").unwrap().len(), 3);
        if h.get_bool("isWritablePrimary").ok() == Some(true) {
            assert!(h.get_object_id("electionId").is_ok());
            primary = Some(i);
        } else {
            assert_eq!(h.get_bool("secondary").ok(), Some(true));
            let secondary: Collection<Document> = m.direct().await.database("t").collection("c");
            expect_code(secondary.insert_one(doc! { "x": 1 }).await, 10107);
        }
    }
    let primary = primary.expect("one member is primary");
    let status = members[primary]
        .direct()
        .await
        .database("admin")
        .run_command(doc! { "replSetGetStatus": 1 })
        .await
        .unwrap();
    assert_eq!(status.get_i32("myState").ok(), Some(1));
    let states: Vec<&str> = status
        .get_array("members")
        .unwrap()
        .iter()
        .map(|m| m.as_document().unwrap().get_str("stateStr").unwrap())
        .collect();
    assert_eq!(states.iter().filter(|s| **s == "PRIMARY").count(), 1);
    assert_eq!(states.iter().filter(|s| **s == "SECONDARY").count(), 2);

    // Writes whose ObjectIds and time the server makes (no _id, an upsert,
    // $currentDate) come out the same on every member.
    let t = client.database("t");
    let majority = doc! { "w": "majority" };
    t.run_command(doc! { "insert": "d", "documents": [{ "k": 1 }, { "k": 2 }], "writeConcern": majority.clone() })
        .await
        .unwrap();
    t.run_command(doc! {
        "update": "d",
        "updates": [
            { "q": { "k": 3 }, "u": { "$set": { "k": 3 }, "$currentDate": { "at": true } }, "upsert": true },
            { "q": { "k": 1 }, "u": { "$currentDate": { "at": { "$type": "timestamp" } } } },
        ],
        "writeConcern": majority,
    })
    .await
    .unwrap();
    let decided = documents_of(&members[0], "d").await;
    assert_eq!(decided.len(), 3);
    for m in &members[1..] {
        eventually("a member to apply the server-decided writes", async || {
            documents_of(m, "d").await == decided
        })
        .await;
    }

    // A retryable write sent twice (the same session and txnNumber) is
    // applied once and answered twice; an older number is refused.
    let mut session = client.start_session().await.unwrap();
    let bump = doc! {
        "update": "c",
        "updates": [{ "q": { "_id": 6 }, "u": { "$inc": { "x": 1 } } }],
        "txnNumber": 7i64,
        "writeConcern": { "w": "majority" },
    };
    for _ in 0..2 {
        let reply = t
            .run_command(bump.clone())
            .session(&mut session)
            .await
            .unwrap();
        assert_eq!(reply.get_i32("nModified").ok(), Some(1));
    }
    let mut older = bump.clone();
    older.insert("txnNumber", 6i64);
    expect_code(t.run_command(older).session(&mut session).await, 225);

    // kill -9 of the primary: the driver's retryable write finds the
    // member elected next and is applied once; the old primary comes back
    // as a secondary and catches up.
    members[primary].kill();
    coll.update_one(doc! { "_id": 5 }, doc! { "$inc": { "x": 1 } })
        .await
        .unwrap();
    coll.insert_one(doc! { "_id": 1000, "after": "failover" })
        .await
        .unwrap();
    members[primary].spawn();
    for m in &members {
        eventually(
            "every member to hold the write made after the failover",
            async || documents_on(m).await.len() == 100,
        )
        .await;
    }
    let expected = documents_on(&members[0]).await;
    let x_of = |id: i32| {
        expected
            .iter()
            .find(|d| d.get_i32("_id").ok() == Some(id))
            .and_then(|d| d.get_i32("x").ok())
    };
    assert_eq!(x_of(5), Some(16));
    assert_eq!(x_of(6), Some(7));
    for m in &members[1..] {
        assert_eq!(documents_on(m).await, expected);
    }
}

/// TTL on a replica set, as MongoDB's TTL jstests check it: only the
/// primary deletes, its deletes reach the secondaries (whose own counter
/// of deletions stays 0), `collMod` of `expireAfterSeconds` replicates, a
/// secondary hides due documents by its own clock whatever its primary
/// does, and a member later run standalone keeps its monitor off.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ttl_deletes_only_on_the_primary_and_replicates_to_secondaries() {
    let root = tempfile::tempdir().unwrap();
    let (mut members, client) = initiated_set(root.path()).await;
    let primary = primary_of(&members).await;
    let secondaries: Vec<usize> = (0..3).filter(|&i| i != primary).collect();
    // Secondaries that hide nothing show what they store.
    for &i in &secondaries {
        admin(
            &members[i],
            doc! { "setParameter": 1, "ttlMonitorEnabled": false },
        )
        .await;
    }
    let t = client.database("t");
    t.run_command(doc! {
        "createIndexes": "e",
        "indexes": [{ "key": { "at": 1 }, "name": "at_1", "expireAfterSeconds": 0 }],
    })
    .await
    .unwrap();
    let now = mongodb::bson::DateTime::now().timestamp_millis();
    let past = mongodb::bson::DateTime::from_millis(now - 3_600_000);
    let later = mongodb::bson::DateTime::from_millis(now + 86_400_000);
    let e: Collection<Document> = t.collection("e");
    e.insert_many((0..300).map(|i| doc! { "_id": i, "at": past }))
        .await
        .unwrap();
    e.insert_many((300..310).map(|i| doc! { "_id": i, "at": later }))
        .await
        .unwrap();
    for m in &members {
        eventually("the primary's deletes to reach every member", async || {
            count_on(m, "e", doc! {}).await == 10
        })
        .await;
    }
    assert!(count_of(&ttl_metrics(&members[primary]).await, "deletedDocuments") >= 300);
    for &i in &secondaries {
        let metrics = ttl_metrics(&members[i]).await;
        assert_eq!(
            count_of(&metrics, "deletedDocuments"),
            0,
            "a secondary deleted"
        );
        // What it deleted applying the primary's chunks, it counts apart.
        eventually("a secondary to count the deletes it applied", async || {
            count_of(&ttl_metrics(&members[i]).await, "replicatedDeletes") == 300
        })
        .await;
    }
    let expected = documents_of(&members[primary], "e").await;
    for &i in &secondaries {
        assert_eq!(documents_of(&members[i], "e").await, expected);
    }

    // collMod of expireAfterSeconds reaches the secondaries.
    t.run_command(doc! { "collMod": "e", "index": { "name": "at_1", "expireAfterSeconds": 7200 } })
        .await
        .unwrap();
    for &i in &secondaries {
        eventually("collMod to reach a secondary", async || {
            let indexes = members[i]
                .direct()
                .await
                .database("t")
                .run_command(doc! { "listIndexes": "e" })
                .await
                .unwrap();
            let batch = indexes
                .get_document("cursor")
                .unwrap()
                .get_array("firstBatch")
                .unwrap()
                .clone();
            batch.iter().any(|ix| {
                let ix = ix.as_document().unwrap();
                ix.get_str("name").ok() == Some("at_1")
                    && ix.get_i32("expireAfterSeconds").ok() == Some(7200)
            })
        })
        .await;
    }

    // With the primary's monitor off nothing is deleted or hidden there;
    // the secondaries hide what is due by their own clocks.
    admin(
        &members[primary],
        doc! { "setParameter": 1, "ttlMonitorEnabled": false },
    )
    .await;
    for &i in &secondaries {
        admin(
            &members[i],
            doc! { "setParameter": 1, "ttlMonitorEnabled": true },
        )
        .await;
    }
    let older = mongodb::bson::DateTime::from_millis(now - 3 * 3_600_000);
    e.insert_many((400..405).map(|i| doc! { "_id": i, "at": older }))
        .await
        .unwrap();
    // Applied in log order: once the marker shows, the due documents are
    // there too.
    e.insert_one(doc! { "_id": "marker", "at": later })
        .await
        .unwrap();
    let due = doc! { "_id": { "$gte": 400, "$lt": 405 } };
    assert_eq!(count_on(&members[primary], "e", due.clone()).await, 5);
    for &i in &secondaries {
        eventually("the marker to reach a secondary", async || {
            count_on(&members[i], "e", doc! { "_id": "marker" }).await == 1
        })
        .await;
        assert_eq!(
            count_on(&members[i], "e", due.clone()).await,
            0,
            "a secondary served a due document"
        );
        let metrics = ttl_metrics(&members[i]).await;
        assert_eq!(count_of(&metrics, "deletedDocuments"), 0);
        assert!(metrics.get_bool("monitorRunning").unwrap());
    }

    // A member taken out and run standalone finds the set's configuration
    // in local.system.replset and keeps its monitor off: nothing is
    // deleted or hidden.
    let out = secondaries[0];
    let replset = count_on_db(&members[out], "local", "system.replset").await;
    assert_eq!(replset, 1, "the member records the set's configuration");
    members[out].kill();
    let standalone = members[out].spawn_standalone();
    let metrics = ttl_metrics(&standalone).await;
    assert!(!metrics.get_bool("monitorRunning").unwrap());
    assert_eq!(count_on(&standalone, "e", due).await, 5);
}

async fn count_on_db(member: &Member, db: &str, name: &str) -> u64 {
    let coll: Collection<Document> = member.direct().await.database(db).collection(name);
    coll.count_documents(doc! {}).await.unwrap()
}

/// `replSetStepDown` in the middle of a TTL pass, as MongoDB's
/// `kill_ttl_on_stepdown` checks it: the old primary's monitor stops
/// between chunks and deletes nothing more, the new primary's finishes the
/// work, and every document is deleted exactly once. `replSetFreeze` and
/// `replSetStepDown` answer mongod's errors where they do not apply.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn step_down_in_the_middle_of_a_ttl_pass_hands_the_rest_to_the_new_primary() {
    let root = tempfile::tempdir().unwrap();
    // Paced deletions: the pass takes seconds.
    let (members, client) =
        initiated_set_with(root.path(), &[("EBB_TTL__MAX_DELETES_PER_SEC", "400")]).await;
    let old = primary_of(&members).await;
    let secondary = (old + 1) % 3;
    expect_code(
        try_admin(&members[secondary], doc! { "replSetStepDown": 30 }).await,
        10107,
    );
    expect_code(
        try_admin(&members[old], doc! { "replSetFreeze": 10 }).await,
        95,
    );
    let unfrozen = admin(&members[secondary], doc! { "replSetFreeze": 0 }).await;
    assert_eq!(unfrozen.get_str("info").ok(), Some("unfreezing"));

    let t = client.database("t");
    t.run_command(doc! {
        "createIndexes": "e",
        "indexes": [{ "key": { "at": 1 }, "name": "at_1", "expireAfterSeconds": 0 }],
    })
    .await
    .unwrap();
    let past = mongodb::bson::DateTime::from_millis(
        mongodb::bson::DateTime::now().timestamp_millis() - 60_000,
    );
    const N: i64 = 2_000;
    let e: Collection<Document> = t.collection("e");
    e.insert_many((0..N).map(|i| doc! { "_id": i, "at": past }))
        .await
        .unwrap();
    eventually("the primary's pass to begin", async || {
        count_of(&ttl_metrics(&members[old]).await, "deletedDocuments") > 0
    })
    .await;
    admin(
        &members[old],
        doc! { "replSetStepDown": 60, "secondaryCatchUpPeriodSecs": 10 },
    )
    .await;
    let by_old = count_of(&ttl_metrics(&members[old]).await, "deletedDocuments");
    assert!(by_old < N, "the pass ended before the step-down");
    let h = hello(&members[old]).await;
    assert_eq!(h.get_bool("isWritablePrimary").ok(), Some(false));
    let new = primary_of(&members).await;
    assert_ne!(new, old, "the old primary stands down for 60 s");
    eventually("the new primary to delete the rest", async || {
        count_of(&ttl_metrics(&members[new]).await, "deletedDocuments") + by_old == N
    })
    .await;
    assert_eq!(
        count_of(&ttl_metrics(&members[old]).await, "deletedDocuments"),
        by_old,
        "the old primary deleted after it stepped down"
    );
    let third = 3 - old - new;
    assert_eq!(
        count_of(&ttl_metrics(&members[third]).await, "deletedDocuments"),
        0
    );
    // What each member stores, seen without hiding.
    for m in &members {
        admin(m, doc! { "setParameter": 1, "ttlMonitorEnabled": false }).await;
        eventually("every deletion to reach every member", async || {
            count_on(m, "e", doc! {}).await == 0
        })
        .await;
    }
}

/// `replSetReconfig` as mongod checks it: a version that does not grow and
/// two voters changed at once are refused with 103, a secondary answers
/// 10107, and a member added by the primary catches up and votes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reconfig_adds_and_removes_one_voter_at_a_time() {
    let root = tempfile::tempdir().unwrap();
    let (members, client) = initiated_set(root.path()).await;
    let primary = primary_of(&members).await;
    let hosts: Vec<String> = members.iter().map(Member::host).collect();
    let (version, with) = next_config(&members[primary]).await;
    let reconfig = async |member: &Member, config: Document| {
        try_admin(member, doc! { "replSetReconfig": config }).await
    };
    expect_code(
        reconfig(&members[primary], with(version, &hosts)).await,
        103,
    );
    let secondary = (primary + 1) % 3;
    expect_code(
        reconfig(&members[secondary], with(version + 1, &hosts)).await,
        10107,
    );
    let spare = [Member::start(root.path()), Member::start(root.path())];
    let mut five = hosts.clone();
    five.extend(spare.iter().map(Member::host));
    expect_code(
        reconfig(&members[primary], with(version + 1, &five)).await,
        103,
    );

    // One more: it catches up from the log and holds what was written.
    client
        .database("t")
        .collection::<Document>("r")
        .insert_one(doc! { "_id": 1 })
        .await
        .unwrap();
    reconfig(&members[primary], with(version + 1, &five[..4]))
        .await
        .unwrap();
    let status = admin(&members[primary], doc! { "replSetGetStatus": 1 }).await;
    assert_eq!(status.get_array("members").unwrap().len(), 4);
    eventually("the added member to hold the set's data", async || {
        count_on(&spare[0], "r", doc! {}).await == 1
    })
    .await;
    // And out again.
    let (version, with) = next_config(&members[primary]).await;
    reconfig(&members[primary], with(version + 1, &hosts))
        .await
        .unwrap();
    let status = admin(&members[primary], doc! { "replSetGetStatus": 1 }).await;
    assert_eq!(status.get_array("members").unwrap().len(), 3);
    let term = status.get_i64("term").unwrap();

    // The removed member learns it when it stands and the others refuse
    // it; it then says so as mongod's removed members do, and the set
    // keeps its term.
    eventually("the removed member to know it was removed", async || {
        hello(&spare[0]).await.get_str("info").ok()
            == Some("Does not have a valid replica set config")
    })
    .await;
    assert!(!hello(&spare[0]).await.contains_key("setName"));
    expect_code(
        try_admin(&spare[0], doc! { "replSetGetStatus": 1 }).await,
        93,
    );
    let status = admin(&members[primary], doc! { "replSetGetStatus": 1 }).await;
    assert_eq!(status.get_i64("term").unwrap(), term);

    // Added again, it is a member again. Its term went up as it stood,
    // so the primary it answers with that term may step down first, as
    // Raft has it: the configuration is sent to whichever member leads.
    eventually("the removed member to be added again", async || {
        let primary = primary_of(&members).await;
        let (version, with) = next_config(&members[primary]).await;
        reconfig(&members[primary], with(version + 1, &five[..4]))
            .await
            .is_ok()
    })
    .await;
    eventually(
        "the member added again to say it is in the set",
        async || hello(&spare[0]).await.get_str("setName").ok() == Some("rs0"),
    )
    .await;
}

/// The set's configuration version as `member` reports it, and a maker of
/// configurations like it with another version and `hosts` as members.
async fn next_config(member: &Member) -> (i32, impl Fn(i32, &[String]) -> Document) {
    let config = admin(member, doc! { "replSetGetConfig": 1 })
        .await
        .get_document("config")
        .unwrap()
        .clone();
    let version = config.get_i32("version").unwrap();
    let with = move |version: i32, hosts: &[String]| {
        let mut c = config.clone();
        c.insert("version", version);
        c.insert(
            "members",
            hosts
                .iter()
                .enumerate()
                .map(|(i, h)| doc! { "_id": i as i32, "host": h })
                .collect::<Vec<_>>(),
        );
        c
    };
    (version, with)
}

/// `readConcern` on a set: `majority` and `linearizable` read what the
/// primary acknowledged; a secondary refuses `linearizable` (10107), and so
/// does a primary cut off from its quorum instead of answering from data
/// that may be stale; what ebb does not keep (cluster time, `snapshot`
/// outside a transaction) is refused, not ignored.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_concerns_on_a_set() {
    let root = tempfile::tempdir().unwrap();
    let (members, client) =
        initiated_set_with(root.path(), &[("EBB_REPLICATION__FAULT_POINTS", "true")]).await;
    let primary = primary_of(&members).await;
    let secondary = (primary + 1) % 3;
    let t = client.database("t");
    t.collection::<Document>("r")
        .insert_one(doc! { "_id": 1 })
        .await
        .unwrap();
    let find = |level: &str| doc! { "find": "r", "filter": { "_id": 1 }, "readConcern": { "level": level } };
    let direct = members[primary].direct().await;
    for level in ["local", "available", "majority", "linearizable"] {
        let reply = direct.database("t").run_command(find(level)).await.unwrap();
        let batch = reply
            .get_document("cursor")
            .unwrap()
            .get_array("firstBatch")
            .unwrap();
        assert_eq!(batch.len(), 1, "{level} read on the primary");
    }
    let on_secondary = members[secondary].direct().await;
    let message = expect_code(
        on_secondary
            .database("t")
            .run_command(find("linearizable"))
            .await,
        10107,
    );
    assert_eq!(
        message,
        "cannot satisfy linearizable read concern on non-primary node"
    );
    expect_code(
        direct.database("t").run_command(find("snapshot")).await,
        238,
    );
    expect_code(direct.database("t").run_command(find("strong")).await, 9);

    // Cut off from the others, the primary cannot confirm that it leads.
    admin(
        &members[primary],
        doc! { "configureFailPoint": "ebbCutReplication", "mode": "alwaysOn" },
    )
    .await;
    expect_code(
        direct.database("t").run_command(find("linearizable")).await,
        10107,
    );
}

/// The timestamp a reply's `operationTime` carries.
fn operation_time(reply: &Document) -> mongodb::bson::Timestamp {
    reply.get_timestamp("operationTime").unwrap()
}

/// `hello.lastWrite.opTime.ts` on `member`.
async fn last_write(member: &Member) -> mongodb::bson::Timestamp {
    let hello = hello(member).await;
    let last = hello.get_document("lastWrite").unwrap();
    last.get_document("opTime")
        .unwrap()
        .get_timestamp("ts")
        .unwrap()
}

fn ts_pair(ts: mongodb::bson::Timestamp) -> (u32, u32) {
    (ts.time, ts.increment)
}

/// What drivers read of the set's time: `operationTime` and `$clusterTime`
/// on replies, `lastWrite` in `hello`, causally consistent reads on a
/// secondary (`afterClusterTime`), and the no-op that keeps an idle set's
/// `lastWrite` moving.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sets_time_reaches_drivers() {
    let root = tempfile::tempdir().unwrap();
    let (members, client) =
        initiated_set_with(root.path(), &[("EBB_REPLICATION__PERIODIC_NOOP", "300ms")]).await;
    let primary = primary_of(&members).await;
    let secondary = (primary + 1) % 3;
    let direct = members[primary].direct().await;
    let reply = direct
        .database("t")
        .run_command(
            doc! { "insert": "c", "documents": [{ "_id": 1 }], "writeConcern": { "w": 3 } },
        )
        .await
        .unwrap();
    let written = operation_time(&reply);
    assert!(written.time > 0, "{reply:?}");
    let gossip = reply.get_document("$clusterTime").unwrap();
    assert!(ts_pair(gossip.get_timestamp("clusterTime").unwrap()) >= ts_pair(written));
    let signature = gossip.get_document("signature").unwrap();
    assert_eq!(signature.get_binary_generic("hash").unwrap().len(), 20);
    assert_eq!(signature.get_i64("keyId").unwrap(), 0);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as u32;
    assert!(written.time.abs_diff(now) <= 5, "{written:?} at {now}");
    // Every reply carries the time, errors too.
    let failed = direct
        .database("t")
        .run_command(doc! { "find": "c", "readConcern": { "level": "strong" } })
        .await;
    assert!(failed.is_err());

    // The secondaries' lastWrite reaches the write, with its date.
    for m in &members {
        eventually("lastWrite on every member", async || {
            ts_pair(last_write(m).await) >= ts_pair(written)
        })
        .await;
        let hello = hello(m).await;
        let last = hello.get_document("lastWrite").unwrap();
        assert!(last.get_datetime("lastWriteDate").is_ok());
        assert!(last.get_document("majorityOpTime").is_ok());
        let version = hello.get_document("topologyVersion").unwrap();
        assert!(version.get_object_id("processId").is_ok());
    }

    // The primary shows every member's optime, as rs.status() prints it.
    eventually("every member's optime in replSetGetStatus", async || {
        let status = admin(&members[primary], doc! { "replSetGetStatus": 1 }).await;
        status.get_array("members").unwrap().iter().all(|m| {
            let m = m.as_document().unwrap();
            m.get_datetime("optimeDate").is_ok()
                && m.get_document("optime")
                    .and_then(|o| o.get_timestamp("ts"))
                    .is_ok_and(|ts| ts_pair(ts) >= ts_pair(written))
        })
    })
    .await;

    // afterClusterTime: a read on a secondary waits for what it names; a
    // time nobody was given, a null one, and a command that reads nothing
    // are refused as mongod refuses them.
    let on_secondary = members[secondary].direct().await;
    let t = on_secondary.database("t");
    let after = |ts| doc! { "find": "c", "readConcern": { "afterClusterTime": ts }, "$readPreference": { "mode": "secondaryPreferred" } };
    assert_eq!(first_batch(&t, after(written)).await.len(), 1);
    let future = mongodb::bson::Timestamp {
        time: written.time + 3600,
        increment: 1,
    };
    expect_code(t.run_command(after(future)).await, 72);
    let null = mongodb::bson::Timestamp {
        time: 0,
        increment: 0,
    };
    expect_code(t.run_command(after(null)).await, 72);
    expect_code(
        on_secondary
            .database("admin")
            .run_command(doc! { "ping": 1, "readConcern": { "afterClusterTime": written } })
            .await,
        72,
    );

    // A causally consistent session reads its own write on a secondary.
    let mut session = client.start_session().await.unwrap();
    let c = client.database("t").collection::<Document>("causal");
    for i in 0..20 {
        c.insert_one(doc! { "_id": i })
            .write_concern(
                WriteConcern::builder()
                    .w(mongodb::options::Acknowledgment::Nodes(1))
                    .build(),
            )
            .session(&mut session)
            .await
            .unwrap();
        let read = c
            .find_one(doc! { "_id": i })
            .selection_criteria(mongodb::options::SelectionCriteria::ReadPreference(
                mongodb::options::ReadPreference::Secondary {
                    options: Default::default(),
                },
            ))
            .session(&mut session)
            .await
            .unwrap();
        assert!(read.is_some(), "the session's write {i} was not read back");
    }

    // With no writes, the primary's no-op moves every member's lastWrite.
    let idle = last_write(&members[secondary]).await;
    eventually("a periodic no-op", async || {
        ts_pair(last_write(&members[secondary]).await) > ts_pair(idle)
    })
    .await;
}

/// The awaitable `hello`: answered at once for another version, after
/// `maxAwaitTimeMS` (at most a second) when nothing changed, and with a new
/// version once the primary steps down.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_awaitable_hello_answers_when_the_primary_changes() {
    let root = tempfile::tempdir().unwrap();
    let (members, _client) = initiated_set(root.path()).await;
    let primary = primary_of(&members).await;
    let mut version = hello(&members[primary])
        .await
        .get_document("topologyVersion")
        .unwrap()
        .clone();
    let awaiting = |version: &Document, ms: i64| doc! { "hello": 1, "topologyVersion": version.clone(), "maxAwaitTimeMS": ms };
    // The version may still move just after the election (the primary's
    // first heartbeats answered): wait until it holds for a quiet spell.
    eventually("a quiet topology", async || {
        let reply = admin(&members[primary], awaiting(&version, 500)).await;
        let now = reply.get_document("topologyVersion").unwrap().clone();
        let quiet = now == version;
        version = now;
        quiet
    })
    .await;
    let started = Instant::now();
    let reply = admin(&members[primary], awaiting(&version, 400)).await;
    assert!(started.elapsed() >= Duration::from_millis(350));
    assert_eq!(reply.get_document("topologyVersion").unwrap(), &version);
    assert!(reply.get_bool("isWritablePrimary").unwrap());

    let mut other = version.clone();
    other.insert("processId", mongodb::bson::oid::ObjectId::new());
    let started = Instant::now();
    admin(&members[primary], awaiting(&other, 30_000)).await;
    assert!(started.elapsed() < Duration::from_secs(5));

    // Whatever its maxAwaitTimeMS, a hello waits at most a second here.
    let started = Instant::now();
    let reply = admin(&members[primary], awaiting(&version, 60_000)).await;
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(reply.get_document("topologyVersion").unwrap(), &version);

    // Stepped down, the member says so to the hellos that wait on it.
    let _ = try_admin(&members[primary], doc! { "replSetStepDown": 60 }).await;
    let mut seen = version.clone();
    eventually("an awaiting hello to show the step-down", async || {
        let reply = admin(&members[primary], awaiting(&seen, 60_000)).await;
        seen = reply.get_document("topologyVersion").unwrap().clone();
        !reply.get_bool("isWritablePrimary").unwrap()
    })
    .await;
    assert!(seen.get_i64("counter").unwrap() > version.get_i64("counter").unwrap());

    let message = expect_code(
        try_admin(
            &members[primary],
            doc! { "hello": 1, "topologyVersion": version.clone() },
        )
        .await,
        31368,
    );
    assert!(message.contains("maxAwaitTimeMS"), "{message}");
    expect_code(
        try_admin(&members[primary], doc! { "hello": 1, "maxAwaitTimeMS": 10 }).await,
        31368,
    );
}

/// How many documents `member` holds in `t.r`, or none while it does not
/// answer (it restarts to load a snapshot).
async fn try_count_on(member: &Member) -> Option<u64> {
    let coll: Collection<Document> = member.direct().await.database("t").collection("r");
    coll.count_documents(doc! {}).await.ok()
}

/// The checkpoints under `member`'s snapshot directory.
fn snapshots_of(member: &Member) -> Vec<String> {
    match std::fs::read_dir(member.dir.join("snapshots")) {
        Ok(dir) => dir
            .map(|e| e.unwrap())
            .filter(|e| e.file_type().unwrap().is_dir())
            .map(|e| e.file_name().into_string().unwrap())
            .collect(),
        Err(_) => Vec::new(),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_member_added_after_the_log_was_purged_catches_up_from_a_snapshot() {
    let root = tempfile::tempdir().unwrap();
    let small = [
        ("EBB_REPLICATION__SNAPSHOT_EVERY", "40"),
        ("EBB_REPLICATION__LOG_KEPT", "5"),
    ];
    let (members, client) = initiated_set_with(root.path(), &small).await;
    let coll = client.database("t").collection::<Document>("r");
    coll.create_index(
        mongodb::IndexModel::builder()
            .keys(doc! { "k": 1 })
            .options(
                mongodb::options::IndexOptions::builder()
                    .unique(true)
                    .build(),
            )
            .build(),
    )
    .await
    .unwrap();
    // One entry each: the members snapshot and purge their logs several
    // times over.
    for i in 0..200 {
        coll.insert_one(doc! { "_id": i, "k": i }).await.unwrap();
    }
    let primary = primary_of(&members).await;
    eventually("the primary to have taken a snapshot", async || {
        !snapshots_of(&members[primary]).is_empty()
    })
    .await;

    let mut spare = Member::start_with(root.path(), &small);
    let mut four: Vec<String> = members.iter().map(Member::host).collect();
    four.push(spare.host());
    let (version, with) = next_config(&members[primary]).await;
    admin(
        &members[primary],
        doc! { "replSetReconfig": with(version + 1, &four) },
    )
    .await;
    eventually("the added member to hold the set's data", async || {
        try_count_on(&spare).await == Some(200)
    })
    .await;
    assert_eq!(
        snapshots_of(&spare).len(),
        1,
        "the member loaded a snapshot and keeps it"
    );
    // The snapshot carried the index: reads by `k` use it.
    let plan = spare
        .direct()
        .await
        .database("t")
        .run_command(doc! { "explain": { "find": "r", "filter": { "k": 7 } } })
        .await
        .unwrap();
    assert!(format!("{plan:?}").contains("IXSCAN"), "{plan:?}");

    // It follows the log from there, and keeps all of it across a kill -9.
    coll.insert_one(doc! { "_id": 200, "k": 200 })
        .await
        .unwrap();
    eventually("the added member to apply the next write", async || {
        try_count_on(&spare).await == Some(201)
    })
    .await;
    spare.kill();
    spare.spawn();
    eventually("the restarted member to hold every document", async || {
        try_count_on(&spare).await == Some(201)
    })
    .await;
    let on_secondary = spare
        .direct()
        .await
        .database("t")
        .collection::<Document>("r")
        .insert_one(doc! { "_id": 999, "k": 7 })
        .await;
    expect_code(on_secondary, 10107);
}

/// A direct client to `member` authenticated as `user` of `db`.
async fn direct_as(member: &Member, user: &str, db: &str, password: &str) -> Client {
    let mut options = mongodb::options::ClientOptions::parse(format!(
        "mongodb://{}/?directConnection=true&retryWrites=false&readPreference=secondaryPreferred",
        member.host()
    ))
    .await
    .unwrap();
    options.credential = Some(
        mongodb::options::Credential::builder()
            .username(user.to_owned())
            .password(password.to_owned())
            .source(db.to_owned())
            .mechanism(mongodb::options::AuthMechanism::ScramSha256)
            .build(),
    );
    Client::with_options(options).unwrap()
}

/// The key the keyed sets' members share, written owner-only under `root`;
/// returns its path.
fn write_key_file(root: &std::path::Path) -> String {
    use std::os::unix::fs::PermissionsExt;
    let key = root.join("key");
    std::fs::write(&key, format!("{SET_KEY}\n")).unwrap();
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).unwrap();
    key.display().to_string()
}

const SET_KEY: &str = "c2hhcmVkIGJ5IHRoZSBzZXQncyBtZW1iZXJzIG9ubHk=";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn members_with_a_key_file_authenticate_to_each_other_and_no_one_else_speaks_for_them() {
    let root = tempfile::tempdir().unwrap();
    let key_path = write_key_file(root.path());
    let secret = SET_KEY;
    let env = [("EBB_SECURITY__KEY_FILE", key_path.as_str())];
    let (members, _) = initiated_set_with(root.path(), &env).await;
    let p = primary_of(&members).await;
    let coll: Collection<Document> = direct_as(&members[p], "__system", "local", secret)
        .await
        .database("t")
        .collection_with_options(
            "c",
            mongodb::options::CollectionOptions::builder()
                .write_concern(WriteConcern::majority())
                .build(),
        );
    coll.insert_many((0..20).map(|i| doc! { "_id": i }))
        .await
        .unwrap();
    for m in &members {
        let on: Collection<Document> = direct_as(m, "__system", "local", secret)
            .await
            .database("t")
            .collection("c");
        eventually("every member to hold the writes", async || {
            on.count_documents(doc! {}).await.unwrap() == 20
        })
        .await;
    }
    expect_code(
        members[p]
            .direct()
            .await
            .database("t")
            .collection::<Document>("c")
            .insert_one(doc! { "_id": 99 })
            .await,
        13,
    );

    // Only the key's holders may send the members' messages.
    let raft = doc! { "ebbRaft": "vote", "body": mongodb::bson::Binary { subtype: mongodb::bson::spec::BinarySubtype::Generic, bytes: vec![] } };
    let unauthenticated = members[p].direct().await;
    expect_code(
        unauthenticated
            .database("admin")
            .run_command(raft.clone())
            .await,
        13,
    );
    let impostor = direct_as(
        &members[p],
        "__system",
        "local",
        "c2hhcmVkIGJ5IGFub3RoZXIgc2V0",
    )
    .await;
    let refused = impostor
        .database("admin")
        .run_command(doc! { "ping": 1 })
        .await
        .unwrap_err();
    assert!(
        refused.to_string().contains("Authentication failed."),
        "{refused}"
    );
    let member = direct_as(&members[p], "__system", "local", secret).await;
    let status = member
        .database("admin")
        .run_command(doc! { "replSetGetStatus": 1 })
        .await
        .unwrap();
    assert_eq!(status.get_str("set").unwrap(), "rs0");
}

/// Whether `user` signs in to `member` with `password`.
async fn signs_in(member: &Member, user: &str, password: &str) -> bool {
    direct_as(member, user, "admin", password)
        .await
        .database("admin")
        .run_command(doc! { "ping": 1 })
        .await
        .is_ok()
}

/// `usersInfo` for `user` on `member`, credentials shown.
async fn user_on(member: &Member, as_password: &str, user: &str) -> Vec<mongodb::bson::Bson> {
    direct_as(member, "boss", "admin", as_password)
        .await
        .database("admin")
        .run_command(doc! { "usersInfo": user, "showCredentials": true })
        .await
        .unwrap()
        .get_array("users")
        .unwrap()
        .clone()
}

/// Whether `needle` occurs in any file under `dir`.
fn found_under(dir: &std::path::Path, needle: &[u8]) -> bool {
    std::fs::read_dir(dir).unwrap().flatten().any(|e| {
        let path = e.path();
        match path.is_dir() {
            true => found_under(&path, needle),
            false => std::fs::read(&path)
                .map(|bytes| bytes.windows(needle.len()).any(|w| w == needle))
                .unwrap_or(false),
        }
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn users_managed_on_the_primary_are_the_same_users_on_every_member() {
    let root = tempfile::tempdir().unwrap();
    let key_path = write_key_file(root.path());
    let env = [("EBB_SECURITY__KEY_FILE", key_path.as_str())];
    let (members, _) = initiated_set_with(root.path(), &env).await;
    let p = primary_of(&members).await;
    let first = "first-password-of-boss";
    let majority = doc! { "w": "majority" };
    // The localhost exception creates the first user, on the primary only.
    let s = (p + 1) % members.len();
    expect_code(
        try_admin(
            &members[s],
            doc! { "createUser": "boss", "pwd": first, "roles": ["root"] },
        )
        .await,
        10107,
    );
    admin(
        &members[p],
        doc! { "createUser": "boss", "pwd": first, "roles": ["root"], "writeConcern": majority.clone() },
    )
    .await;
    for m in &members {
        eventually("the first user on every member", async || {
            signs_in(m, "boss", first).await
        })
        .await;
    }
    // One set of credentials, salts and userId included, on every member.
    let on_primary = user_on(&members[p], first, "boss").await;
    assert_eq!(on_primary.len(), 1);
    for m in &members {
        assert_eq!(user_on(m, first, "boss").await, on_primary);
    }

    let boss = direct_as(&members[p], "boss", "admin", first).await;
    let second = "second-password-of-boss";
    boss.database("admin")
        .run_command(doc! { "updateUser": "boss", "pwd": second, "writeConcern": majority.clone() })
        .await
        .unwrap();
    boss.database("admin")
        .run_command(doc! {
            "createUser": "reader", "pwd": "reader-password",
            "roles": [{ "role": "read", "db": "t" }], "writeConcern": majority.clone(),
        })
        .await
        .unwrap();
    boss.database("admin")
        .run_command(doc! {
            "grantRolesToUser": "reader", "roles": [{ "role": "readWrite", "db": "t" }],
            "writeConcern": majority.clone(),
        })
        .await
        .unwrap();
    for m in &members {
        eventually("the new password on every member", async || {
            signs_in(m, "boss", second).await
        })
        .await;
        assert!(!signs_in(m, "boss", first).await);
        eventually("the granted role on every member", async || {
            let reader = user_on(m, second, "reader").await;
            reader.len() == 1
                && reader[0]
                    .as_document()
                    .unwrap()
                    .get_array("roles")
                    .unwrap()
                    .len()
                    == 2
        })
        .await;
    }
    // The role granted on the primary lets the user write there.
    direct_as(&members[p], "reader", "admin", "reader-password")
        .await
        .database("t")
        .collection::<Document>("c")
        .insert_one(doc! { "_id": 1 })
        .await
        .unwrap();

    boss.database("admin")
        .run_command(doc! { "dropUser": "reader", "writeConcern": majority.clone() })
        .await
        .unwrap();
    for m in &members {
        eventually("the dropped user gone from every member", async || {
            !signs_in(m, "reader", "reader-password").await
        })
        .await;
    }
    // Neither the set's log nor any member's data holds a password.
    for m in &members {
        for password in [first, second, "reader-password"] {
            assert!(
                !found_under(&m.dir, password.as_bytes()),
                "{password} stored under {}",
                m.dir.display()
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn members_of_a_set_that_requires_tls_replicate_over_tls() {
    let root = tempfile::tempdir().unwrap();
    let certs = root.path().join("certs");
    std::fs::create_dir(&certs).unwrap();
    let (ca, server, client) = crate::common::tls::certificates(&certs);
    let (ca, server, client) = (
        ca.display().to_string(),
        server.display().to_string(),
        client.display().to_string(),
    );
    // The CA signs every member's certificate and every client's: members
    // present theirs to each other, and a plain connection is refused.
    let env = [
        ("EBB_NET__TLS__MODE", "requireTLS"),
        ("EBB_NET__TLS__CERTIFICATE_KEY_FILE", server.as_str()),
        ("EBB_NET__TLS__CA_FILE", ca.as_str()),
    ];
    let members: Vec<Member> = (0..3)
        .map(|_| Member::start_with(root.path(), &env))
        .collect();
    let tls = format!("tls=true&tlsCAFile={ca}&tlsCertificateKeyFile={client}");
    let direct = async |m: &Member| {
        Client::with_uri_str(format!(
            "mongodb://{}/?directConnection=true&readPreference=secondaryPreferred&{tls}",
            m.host()
        ))
        .await
        .unwrap()
    };
    let config = set_config(&members);
    direct(&members[0])
        .await
        .database("admin")
        .run_command(doc! { "replSetInitiate": config })
        .await
        .unwrap();
    let seeds: Vec<String> = members.iter().map(Member::host).collect();
    let set = Client::with_uri_str(format!(
        "mongodb://{}/?replicaSet=rs0&serverSelectionTimeoutMS=30000&w=majority&{tls}",
        seeds.join(",")
    ))
    .await
    .unwrap();
    // A majority write needs another member to hold it.
    set.database("t")
        .collection::<Document>("c")
        .insert_many((0..20).map(|i| doc! { "_id": i }))
        .await
        .unwrap();
    for m in &members {
        let on: Collection<Document> = direct(m).await.database("t").collection("c");
        eventually("every member to hold the writes", async || {
            on.count_documents(doc! {}).await.unwrap() == 20
        })
        .await;
    }
    let plain = Client::with_uri_str(format!(
        "mongodb://{}/?directConnection=true&serverSelectionTimeoutMS=2000",
        members[0].host()
    ))
    .await
    .unwrap();
    assert!(
        plain
            .database("admin")
            .run_command(doc! { "ping": 1 })
            .await
            .is_err(),
        "a plain connection is refused"
    );
}

/// `rs.initiate()` sends `{replSetInitiate: {}}` and pymongo's
/// `command("replSetInitiate")` a 1: either starts a set of this member
/// alone, as mongod's default configuration does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn initiate_without_a_configuration_makes_a_set_of_this_member() {
    let root = tempfile::tempdir().unwrap();
    for without in [
        mongodb::bson::Bson::Document(doc! {}),
        mongodb::bson::Bson::Int32(1),
    ] {
        let member = Member::start(root.path());
        admin(&member, doc! { "replSetInitiate": without }).await;
        eventually("a primary", async || {
            hello(&member)
                .await
                .get_bool("isWritablePrimary")
                .unwrap_or(false)
        })
        .await;
        let h = hello(&member).await;
        assert_eq!(h.get_str("setName").unwrap(), "rs0");
        let hosts: Vec<_> = h
            .get_array("hosts")
            .unwrap()
            .iter()
            .filter_map(|b| b.as_str())
            .collect();
        assert_eq!(hosts, [member.host()]);
    }
}

/// A member killed after a retryable write applied but before its reply
/// was recorded applies the write's entry again as it restarts, on data
/// that already holds the write: a retry is then told its history is gone
/// (217, as mongod says it), never answered with what the second run saw
/// (a duplicate key for an insert that succeeded).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retry_whose_reply_a_crash_lost_is_told_so_never_answered_wrongly() {
    let root = tempfile::tempdir().unwrap();
    let (mut member, client) =
        one_member_set_with(root.path(), &[("EBB_REPLICATION__FAULT_POINTS", "true")]).await;
    let t = client.database("t");
    t.run_command(doc! { "create": "c" }).await.unwrap();
    admin(
        &member,
        doc! { "configureFailPoint": "ebbCrashBeforeRetryRecord", "mode": "alwaysOn" },
    )
    .await;
    let mut session = client.start_session().await.unwrap();
    let insert = doc! {
        "insert": "c",
        "documents": [{ "_id": 1 }],
        "txnNumber": 1i64,
    };
    // The member aborts as it applies the insert: no reply comes.
    assert!(
        t.run_command(insert.clone())
            .session(&mut session)
            .await
            .is_err()
    );
    member.kill();
    member.spawn();
    let mut retried = async || t.run_command(insert.clone()).session(&mut session).await;
    let deadline = Instant::now() + Duration::from_secs(30);
    let outcome = loop {
        match retried().await {
            Err(e) if crate::common::code(&e).is_none() && Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            other => break other,
        }
    };
    let msg = expect_code(outcome, 217);
    assert!(msg.contains("retryable write"), "{msg}");
    let c: Collection<Document> = t.collection("c");
    assert_eq!(c.count_documents(doc! { "_id": 1 }).await.unwrap(), 1);
}
