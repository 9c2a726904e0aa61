//! Replica sets: three real `ebbd` processes on loopback ports, initiated
//! as mongosh's `rs.initiate(config)` does, reached by the driver with
//! `?replicaSet=`; majority writes on every member, secondaries refusing
//! writes, retryable writes applied once, and a new primary after `kill -9`
//! of the old one.

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use mongodb::bson::{Document, doc};
use mongodb::options::WriteConcern;
use mongodb::{Client, Collection};

use crate::common::expect_code;

/// The `ebbd` the test build produced, beside this test's binary.
fn ebbd() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let path = exe.parent().unwrap().parent().unwrap().join("ebbd");
    assert!(
        path.exists(),
        "{} is missing: build the workspace (cargo test --workspace builds it)",
        path.display()
    );
    path
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// One member: an `ebbd --replSet rs0` process, killed when dropped.
struct Member {
    port: u16,
    dir: PathBuf,
    child: Option<Child>,
}

impl Member {
    fn start(root: &std::path::Path) -> Member {
        let port = free_port();
        let mut m = Member {
            port,
            dir: root.join(port.to_string()),
            child: None,
        };
        m.spawn();
        m
    }

    fn spawn(&mut self) {
        let child = Command::new(ebbd())
            .args([
                "--port",
                &self.port.to_string(),
                "--replSet",
                "rs0",
                "--db-path",
            ])
            .arg(&self.dir)
            // The default election timeout: a test build on a loaded
            // machine must not lose its primary to a slow heartbeat.
            .env("EBB_REPLICATION__HEARTBEAT", "250ms")
            .env("EBB_LOG__LEVEL", "warn")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(30);
        while std::net::TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            assert!(
                Instant::now() < deadline,
                "member {} did not start",
                self.port
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    fn host(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    async fn direct(&self) -> Client {
        let uri = format!(
            "mongodb://{}/?directConnection=true&retryWrites=false&readPreference=secondaryPreferred",
            self.host()
        );
        Client::with_uri_str(uri).await.unwrap()
    }
}

impl Drop for Member {
    fn drop(&mut self) {
        self.kill();
    }
}

async fn hello(member: &Member) -> Document {
    member
        .direct()
        .await
        .database("admin")
        .run_command(doc! { "hello": 1 })
        .await
        .unwrap()
}

/// Polls `check` until it holds, for at most 30 s.
async fn eventually<F: AsyncFnMut() -> bool>(what: &str, mut check: F) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !check().await {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn documents_on(member: &Member) -> Vec<Document> {
    documents_of(member, "c").await
}

async fn documents_of(member: &Member, name: &str) -> Vec<Document> {
    let coll: Collection<Document> = member.direct().await.database("t").collection(name);
    let mut found = Vec::new();
    let mut cursor = coll.find(doc! {}).sort(doc! { "_id": 1 }).await.unwrap();
    while cursor.advance().await.unwrap() {
        found.push(cursor.deserialize_current().unwrap());
    }
    found
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

    let config = doc! {
        "_id": "rs0",
        "members": members.iter().enumerate().map(|(i, m)| doc! { "_id": i as i32, "host": m.host() }).collect::<Vec<_>>(),
    };
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
