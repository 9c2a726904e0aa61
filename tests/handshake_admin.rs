//! Handshake and administrative commands through the Rust driver.

use crate::common::{TestNode, expect_code};
use mongodb::bson::{Bson, doc};

#[tokio::test]
async fn hello_reports_a_standalone_with_required_fields() {
    let node = TestNode::start();
    let admin = node.db("admin").await;
    for cmd in ["hello", "isMaster", "ismaster"] {
        let r = admin.run_command(doc! { cmd: 1 }).await.unwrap();
        let primary = if cmd == "hello" {
            "isWritablePrimary"
        } else {
            "ismaster"
        };
        assert!(r.get_bool(primary).unwrap(), "{cmd}");
        assert_eq!(r.get_i32("maxBsonObjectSize").unwrap(), 16 * 1024 * 1024);
        assert_eq!(r.get_i32("maxMessageSizeBytes").unwrap(), 48_000_000);
        assert_eq!(r.get_i32("maxWriteBatchSize").unwrap(), 100_000);
        assert_eq!(r.get_i32("maxWireVersion").unwrap(), 21);
        assert_eq!(r.get_i32("logicalSessionTimeoutMinutes").unwrap(), 30);
        assert_eq!(r.get_f64("ok").unwrap(), 1.0);
        assert!(r.get("topologyVersion").is_none());
        assert!(r.get("operationTime").is_none() && r.get("$clusterTime").is_none());
    }
    // A standalone gave out no topology version: an awaitable hello is
    // answered at once, and its arguments are checked as mongod checks them.
    let version = doc! { "processId": mongodb::bson::oid::ObjectId::new(), "counter": 0_i64 };
    let started = std::time::Instant::now();
    admin
        .run_command(
            doc! { "hello": 1, "topologyVersion": version.clone(), "maxAwaitTimeMS": 60_000 },
        )
        .await
        .unwrap();
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
    expect_code(
        admin
            .run_command(
                doc! { "hello": 1, "topologyVersion": version.clone(), "maxAwaitTimeMS": -1 },
            )
            .await,
        2,
    );
    let negative = doc! { "processId": mongodb::bson::oid::ObjectId::new(), "counter": -1_i64 };
    expect_code(
        admin
            .run_command(doc! { "hello": 1, "topologyVersion": negative, "maxAwaitTimeMS": 10 })
            .await,
        31372,
    );
    expect_code(
        admin
            .run_command(doc! { "hello": 1, "topologyVersion": version })
            .await,
        31368,
    );
}

#[tokio::test]
async fn ping_build_info_and_small_admin_commands() {
    let node = TestNode::start();
    let admin = node.db("admin").await;
    admin.run_command(doc! { "ping": 1 }).await.unwrap();
    let info = admin.run_command(doc! { "buildInfo": 1 }).await.unwrap();
    assert!(info.get_str("version").unwrap().starts_with("7.0."));
    assert!(info.keys().all(|k| !k.to_lowercase().contains("ferret")));
    let me = admin.run_command(doc! { "whatsmyuri": 1 }).await.unwrap();
    assert!(me.get_str("you").unwrap().starts_with("127.0.0.1:"));
    admin
        .run_command(doc! { "connectionStatus": 1 })
        .await
        .unwrap();
    let host = admin.run_command(doc! { "hostInfo": 1 }).await.unwrap();
    assert!(
        host.get_document("system")
            .unwrap()
            .get_i32("numCores")
            .unwrap()
            >= 1
    );
    let log = admin
        .run_command(doc! { "getLog": "startupWarnings" })
        .await
        .unwrap();
    assert!(log.get_array("log").unwrap().is_empty());
    admin.run_command(doc! { "endSessions": [] }).await.unwrap();
    let fcv = admin
        .run_command(doc! { "getParameter": 1, "featureCompatibilityVersion": 1 })
        .await
        .unwrap();
    assert_eq!(
        fcv.get_document("featureCompatibilityVersion")
            .unwrap()
            .get_str("version")
            .unwrap(),
        "7.0"
    );
}

/// `fsync` makes what was acknowledged durable and flushes it to table
/// files (it survives a restart); it runs on `admin` only (13) and cannot
/// lock writes out (238).
#[tokio::test]
async fn fsync_flushes_and_refuses_a_lock() {
    let mut node = TestNode::start();
    let c = node.coll("app", "c").await;
    c.insert_one(doc! { "_id": 1 }).await.unwrap();
    let admin = node.db("admin").await;
    let r = admin.run_command(doc! { "fsync": 1 }).await.unwrap();
    assert_eq!(r.get_i32("numFiles").unwrap(), 1, "{r}");
    expect_code(
        node.db("app").await.run_command(doc! { "fsync": 1 }).await,
        13,
    );
    expect_code(
        admin.run_command(doc! { "fsync": 1, "lock": true }).await,
        238,
    );
    node.restart();
    let c = node.coll("app", "c").await;
    assert_eq!(c.count_documents(doc! {}).await.unwrap(), 1);
}

#[tokio::test]
async fn unknown_commands_and_atlas_version_fail_with_59() {
    let node = TestNode::start();
    let admin = node.db("admin").await;
    let msg = expect_code(admin.run_command(doc! { "atlasVersion": 1 }).await, 59);
    assert_eq!(msg, "no such command: 'atlasVersion'");
    expect_code(admin.run_command(doc! { "frobnicate": 1 }).await, 59);
    // The connection survives the error.
    admin.run_command(doc! { "ping": 1 }).await.unwrap();
}

#[tokio::test]
async fn set_parameter_validates_and_reports_previous_value() {
    let node = TestNode::start();
    let admin = node.db("admin").await;
    let r = admin
        .run_command(doc! { "setParameter": 1, "ttlMonitorSleepSecs": 5 })
        .await
        .unwrap();
    assert_eq!(r.get("was"), Some(&Bson::Int32(60)));
    let r = admin
        .run_command(doc! { "getParameter": 1, "ttlMonitorSleepSecs": 1 })
        .await
        .unwrap();
    assert_eq!(r.get("ttlMonitorSleepSecs"), Some(&Bson::Int32(5)));
    let msg = expect_code(
        admin
            .run_command(doc! { "setParameter": 1, "ttlMonitorSleepSecs": 0 })
            .await,
        2,
    );
    assert_eq!(
        msg,
        "Invalid value for parameter ttlMonitorSleepSecs: 0 is not greater than 0"
    );
    expect_code(
        admin
            .run_command(doc! { "setParameter": 1, "noSuchParameter": 1 })
            .await,
        72,
    );
    expect_code(
        admin
            .run_command(doc! { "getParameter": 1, "noSuchParameter": 1 })
            .await,
        72,
    );
}

#[tokio::test]
async fn server_status_reports_host_uptime_connections_and_opcounters() {
    let node = TestNode::start();
    let db = node.db("s").await;
    db.collection("c")
        .insert_one(doc! { "a": 1 })
        .await
        .unwrap();
    db.collection::<mongodb::bson::Document>("c")
        .find_one(doc! {})
        .await
        .unwrap();
    let s = node
        .db("admin")
        .await
        .run_command(doc! { "serverStatus": 1 })
        .await
        .unwrap();
    assert!(s.get_str("host").unwrap().contains(':'));
    assert!(s.get_str("version").unwrap().starts_with("7.0"));
    assert!(s.get_f64("uptime").unwrap() >= 0.0);
    assert!(
        s.get_document("connections")
            .unwrap()
            .get_i32("current")
            .unwrap()
            >= 1
    );
    let ops = s.get_document("opcounters").unwrap();
    assert!(ops.get_i64("insert").unwrap() >= 1);
    assert!(ops.get_i64("query").unwrap() >= 1);
    let ttl = s
        .get_document("metrics")
        .unwrap()
        .get_document("ttl")
        .unwrap();
    for k in ["deletedDocuments", "passes", "subPasses"] {
        assert!(ttl.get_i64(k).is_ok(), "{k}");
    }
}

/// Each command counts once in `opcounters.command`, as in mongod: `count`,
/// `distinct` and `aggregate` too. The bound leaves room for the driver's
/// own `hello`s on its monitoring connection; counted twice, the 60
/// commands below would add at least 120.
#[tokio::test]
async fn each_command_counts_once_in_opcounters() {
    let node = TestNode::start();
    let db = node.db("s").await;
    let coll = db.collection::<mongodb::bson::Document>("c");
    coll.insert_one(doc! { "a": 1 }).await.unwrap();
    let admin = node.db("admin").await;
    let commands = |s: &mongodb::bson::Document| {
        let ops = s.get_document("opcounters").unwrap();
        ops.get_i64("command").unwrap()
    };
    let before = commands(&admin.run_command(doc! { "serverStatus": 1 }).await.unwrap());
    for _ in 0..20 {
        db.run_command(doc! { "count": "c" }).await.unwrap();
        db.run_command(doc! { "distinct": "c", "key": "a" })
            .await
            .unwrap();
        db.run_command(doc! { "aggregate": "c", "pipeline": [], "cursor": {} })
            .await
            .unwrap();
    }
    let after = commands(&admin.run_command(doc! { "serverStatus": 1 }).await.unwrap());
    let counted = after - before;
    assert!(
        (60..90).contains(&counted),
        "60 commands counted as {counted}"
    );
}

#[tokio::test]
async fn transactions_are_refused_on_a_standalone() {
    let node = TestNode::start();
    let db = node.db("tx").await;
    let r = db
        .run_command(
            doc! { "find": "c", "txnNumber": 1i64, "autocommit": false, "startTransaction": true },
        )
        .await;
    expect_code(r, 20);
}

/// `hello` advertises the configured message limit, so a driver splits its
/// batches by it: an insert_many larger than the lowered limit arrives as
/// several messages the node accepts, instead of one it refuses.
#[tokio::test]
async fn hello_advertises_a_lowered_max_message_size_and_drivers_split_by_it() {
    let node = TestNode::start_with(|c| c.net.max_message_bytes = 1_000_000, None);
    let db = node.db("t").await;
    let hello = db.run_command(doc! { "hello": 1 }).await.unwrap();
    assert_eq!(hello.get_i32("maxMessageSizeBytes").unwrap(), 1_000_000);

    let coll = db.collection::<mongodb::bson::Document>("big");
    let payload = "x".repeat(50_000);
    let docs: Vec<_> = (0..40).map(|i| doc! { "_id": i, "p": &payload }).collect();
    coll.insert_many(docs).await.unwrap();
    assert_eq!(coll.count_documents(doc! {}).await.unwrap(), 40);
}

/// Drivers' own test harnesses read `enableTestCommands` from
/// `getParameter: "*"` to decide what they may run; ebb has no test-only
/// commands, so it reports false (and answers it by name too).
#[tokio::test]
async fn get_parameter_reports_enable_test_commands() {
    let node = TestNode::start();
    let admin = node.db("admin").await;
    let all = admin
        .run_command(doc! { "getParameter": "*" })
        .await
        .unwrap();
    assert_eq!(all.get_bool("enableTestCommands").ok(), Some(false));
    let one = admin
        .run_command(doc! { "getParameter": 1, "enableTestCommands": 1 })
        .await
        .unwrap();
    assert_eq!(one.get_bool("enableTestCommands").ok(), Some(false));
}
