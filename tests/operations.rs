//! Running operations: `currentOp` lists them, `killOp` stops them, a
//! client's disconnect cancels them, and `shutdown` stops the node.

use std::sync::Arc;
use std::time::Duration;

use crate::common::tls::tls_node;
use crate::common::{TestNode, eventually, expect_code};
use futures::TryStreamExt;
use mongodb::bson::{Bson, Document, doc};
use mongodb::{Collection, Database};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, ServerName};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// A filter no document matches that costs hundreds of regex runs per
/// document: a scan of the collection takes seconds in a debug build.
fn slow_filter() -> Document {
    let clauses: Vec<Bson> = (0..400)
        .map(|i| Bson::Document(doc! { "s": { "$regex": format!("^zz{i}$") } }))
        .collect();
    doc! { "$or": clauses }
}

async fn big_collection(node: &TestNode) -> Collection<Document> {
    let c = node.coll("ops", "big").await;
    let docs: Vec<Document> = (0..20_000)
        .map(|i| doc! { "_id": i, "s": format!("value {i}") })
        .collect();
    c.insert_many(docs).await.unwrap();
    c
}

/// The `currentOp` entries whose command is a `find` on `ops.big`.
async fn running_finds(admin: &Database) -> Vec<Document> {
    let reply = admin
        .run_command(doc! { "currentOp": 1, "$all": true, "command.find": "big" })
        .await
        .unwrap();
    reply
        .get_array("inprog")
        .unwrap()
        .iter()
        .map(|op| op.as_document().unwrap().clone())
        .collect()
}

/// mongod's killOp (jstests/core/administrative/current_op/killop.js): the
/// killed operation fails with Interrupted and leaves `currentOp`.
#[tokio::test]
async fn kill_op_stops_a_running_find() {
    let node = TestNode::start();
    let c = big_collection(&node).await;
    let admin = node.db("admin").await;
    let find = tokio::spawn(async move {
        match c.find(slow_filter()).await {
            Ok(cursor) => cursor.try_collect::<Vec<_>>().await.map(|_| ()),
            Err(e) => Err(e),
        }
    });
    let listed = eventually(Duration::from_secs(10), || async {
        !running_finds(&admin).await.is_empty()
    })
    .await;
    assert!(listed, "the find never showed in currentOp");
    let ops = running_finds(&admin).await;
    let opid = ops[0].get_i64("opid").unwrap();
    assert_eq!(ops[0].get_str("ns").unwrap(), "ops.big");
    assert!(ops[0].get_str("client").unwrap().starts_with("127.0.0.1:"));

    let reply = admin
        .run_command(doc! { "killOp": 1, "op": opid })
        .await
        .unwrap();
    assert_eq!(reply.get_str("info").unwrap(), "attempting to kill op");
    let result = tokio::time::timeout(Duration::from_secs(5), find)
        .await
        .expect("the killed find returns promptly")
        .unwrap();
    let message = expect_code(result, 11601);
    assert_eq!(message, "operation was interrupted");
    assert!(running_finds(&admin).await.is_empty());
}

#[tokio::test]
async fn kill_op_and_current_op_need_the_admin_database_and_an_opid() {
    let node = TestNode::start();
    let admin = node.db("admin").await;
    let other = node.db("app").await;
    expect_code(other.run_command(doc! { "killOp": 1, "op": 1 }).await, 13);
    expect_code(other.run_command(doc! { "currentOp": 1 }).await, 13);
    expect_code(admin.run_command(doc! { "killOp": 1 }).await, 4);
    expect_code(
        admin.run_command(doc! { "killOp": 1, "op": "one" }).await,
        14,
    );
    expect_code(
        admin
            .run_command(doc! { "killOp": 1, "op": 1i64 << 40 })
            .await,
        26823,
    );
    // An opid that is not running: success, as mongod reports.
    admin
        .run_command(doc! { "killOp": 1, "op": 999_999 })
        .await
        .unwrap();
    // currentOp lists itself.
    let reply = admin
        .run_command(doc! { "currentOp": 1, "command.currentOp": { "$exists": true } })
        .await
        .unwrap();
    assert_eq!(reply.get_array("inprog").unwrap().len(), 1);
}

/// An OP_MSG frame carrying `body`.
fn op_msg(body: &Document) -> Vec<u8> {
    let mut sections = vec![0u8];
    body.to_writer(&mut sections).unwrap();
    let len = (16 + 4 + sections.len()) as i32;
    let mut frame = Vec::new();
    for field in [len, 1, 0, 2013] {
        frame.extend_from_slice(&field.to_le_bytes());
    }
    frame.extend_from_slice(&0u32.to_le_bytes());
    frame.extend_from_slice(&sections);
    frame
}

/// A client that goes away while its query runs: the query stops and
/// `currentOp` is empty within a second (mongod interrupts operations of
/// a closed connection with ClientDisconnect).
#[tokio::test]
async fn a_disconnect_cancels_the_running_query() {
    let node = TestNode::start();
    big_collection(&node).await;
    let admin = node.db("admin").await;
    let mut socket = TcpStream::connect(node.node().addr()).await.unwrap();
    let find = doc! { "find": "big", "filter": slow_filter(), "$db": "ops" };
    socket.write_all(&op_msg(&find)).await.unwrap();
    let listed = eventually(Duration::from_secs(10), || async {
        !running_finds(&admin).await.is_empty()
    })
    .await;
    assert!(listed, "the find never showed in currentOp");
    drop(socket);
    let started = std::time::Instant::now();
    let gone = eventually(Duration::from_secs(5), || async {
        running_finds(&admin).await.is_empty()
    })
    .await;
    assert!(gone, "the find outlived its client");
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "took {:?}",
        started.elapsed()
    );
}

/// The same over TLS, where records cannot be peeked: the client sends its
/// `close_notify` and closes, and the server still sees the hang-up while
/// that alert sits unread.
#[tokio::test]
async fn a_tls_disconnect_cancels_the_running_query() {
    let dir = tempfile::tempdir().unwrap();
    let node = tls_node(ebb_config::TlsMode::AllowTls, dir.path(), false);
    big_collection(&node).await;
    let admin = node.db("admin").await;

    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_file_iter(dir.path().join("ca.pem")).unwrap() {
        roots.add(cert.unwrap()).unwrap();
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let tcp = TcpStream::connect(node.node().addr()).await.unwrap();
    let name = ServerName::try_from("127.0.0.1").unwrap();
    let mut socket = tokio_rustls::TlsConnector::from(Arc::new(config))
        .connect(name, tcp)
        .await
        .unwrap();
    let find = doc! { "find": "big", "filter": slow_filter(), "$db": "ops" };
    socket.write_all(&op_msg(&find)).await.unwrap();
    let listed = eventually(Duration::from_secs(10), || async {
        !running_finds(&admin).await.is_empty()
    })
    .await;
    assert!(listed, "the find never showed in currentOp");
    socket.shutdown().await.unwrap();
    drop(socket);
    let started = std::time::Instant::now();
    let gone = eventually(Duration::from_secs(5), || async {
        running_finds(&admin).await.is_empty()
    })
    .await;
    assert!(gone, "the find outlived its client");
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "took {:?}",
        started.elapsed()
    );
}

/// `shutdown` on admin stops the node as SIGTERM does; elsewhere it is
/// refused (mongod: "shutdown may only be run against the admin database.").
#[tokio::test]
async fn the_shutdown_command_stops_the_node() {
    let node = TestNode::start();
    let addr = node.node().addr();
    expect_code(
        node.db("app")
            .await
            .run_command(doc! { "shutdown": 1 })
            .await,
        13,
    );
    expect_code(
        node.db("admin")
            .await
            .run_command(doc! { "shutdown": 1, "force": "yes" })
            .await,
        14,
    );
    // The reply may or may not arrive before the connection closes.
    let _ = node
        .db("admin")
        .await
        .run_command(doc! { "shutdown": 1, "force": true })
        .await;
    let stopped = eventually(Duration::from_secs(15), || async {
        match TcpStream::connect(addr).await {
            Err(_) => true,
            Ok(mut s) => {
                // Connected to a listener that is going away: it never answers.
                let _ = s
                    .write_all(&op_msg(&doc! { "ping": 1, "$db": "admin" }))
                    .await;
                let mut byte = [0u8; 1];
                matches!(
                    tokio::time::timeout(Duration::from_millis(200), s.read(&mut byte)).await,
                    Ok(Ok(0)) | Ok(Err(_))
                )
            }
        }
    })
    .await;
    assert!(stopped, "the node still serves after shutdown");
}

/// Sends one command on `socket` and reads its reply body.
async fn roundtrip(socket: &mut TcpStream, body: &Document) -> Document {
    socket.write_all(&op_msg(body)).await.unwrap();
    let mut head = [0u8; 16];
    socket.read_exact(&mut head).await.unwrap();
    let len = i32::from_le_bytes(head[..4].try_into().unwrap()) as usize;
    let mut rest = vec![0u8; len - 16];
    socket.read_exact(&mut rest).await.unwrap();
    Document::from_reader(&rest[5..]).unwrap()
}

fn cursor_id(reply: &Document) -> i64 {
    reply.get_document("cursor").unwrap().get_i64("id").unwrap()
}

fn get_more(id: i64, lsid: &Document) -> Document {
    doc! { "getMore": id, "collection": "big", "batchSize": 1, "lsid": lsid.clone(), "$db": "ops" }
}

/// mongod kills a session's cursors when the session ends (a driver ends
/// its sessions when the client closes): getMore then finds no cursor.
#[tokio::test]
async fn ending_a_session_closes_its_cursors() {
    let node = TestNode::start();
    big_collection(&node).await;
    let mut socket = TcpStream::connect(node.node().addr()).await.unwrap();
    let session = doc! { "id": mongodb::bson::Binary { subtype: mongodb::bson::spec::BinarySubtype::Uuid, bytes: vec![7; 16] } };
    let other = doc! { "id": mongodb::bson::Binary { subtype: mongodb::bson::spec::BinarySubtype::Uuid, bytes: vec![8; 16] } };
    let find = |lsid: &Document| doc! { "find": "big", "batchSize": 1, "lsid": lsid.clone(), "$db": "ops" };
    let mine = cursor_id(&roundtrip(&mut socket, &find(&session)).await);
    let theirs = cursor_id(&roundtrip(&mut socket, &find(&other)).await);
    let ended = roundtrip(
        &mut socket,
        &doc! { "endSessions": [session.clone()], "$db": "admin" },
    )
    .await;
    assert_eq!(ended.get_f64("ok").unwrap(), 1.0);
    let reply = roundtrip(&mut socket, &get_more(mine, &session)).await;
    assert_eq!(reply.get_i32("code").unwrap(), 43, "{reply}");
    let reply = roundtrip(&mut socket, &get_more(theirs, &other)).await;
    assert_eq!(reply.get_f64("ok").unwrap(), 1.0, "{reply}");
}

/// A connection may hold `cursors.max_per_connection` open cursors; one more
/// closes its least recently used, so a client cannot pin unbounded
/// memory in cursors.
#[tokio::test]
async fn a_connection_holds_a_bounded_number_of_cursors() {
    let node = TestNode::start_with(|c| c.cursors.max_per_connection = 2, None);
    big_collection(&node).await;
    let mut socket = TcpStream::connect(node.node().addr()).await.unwrap();
    let lsid = doc! { "id": mongodb::bson::Binary { subtype: mongodb::bson::spec::BinarySubtype::Uuid, bytes: vec![1; 16] } };
    let find = doc! { "find": "big", "batchSize": 1, "lsid": lsid.clone(), "$db": "ops" };
    let mut ids = Vec::new();
    for _ in 0..3 {
        ids.push(cursor_id(&roundtrip(&mut socket, &find).await));
    }
    let reply = roundtrip(&mut socket, &get_more(ids[0], &lsid)).await;
    assert_eq!(
        reply.get_i32("code").unwrap(),
        43,
        "the oldest was closed: {reply}"
    );
    for id in &ids[1..] {
        let reply = roundtrip(&mut socket, &get_more(*id, &lsid)).await;
        assert_eq!(reply.get_f64("ok").unwrap(), 1.0, "{reply}");
    }
    // Another connection has its own allowance.
    let mut other = TcpStream::connect(node.node().addr()).await.unwrap();
    let theirs = cursor_id(&roundtrip(&mut other, &find).await);
    let reply = roundtrip(&mut socket, &get_more(ids[1], &lsid)).await;
    assert_eq!(reply.get_f64("ok").unwrap(), 1.0, "{reply}");
    let reply = roundtrip(&mut other, &get_more(theirs, &lsid)).await;
    assert_eq!(reply.get_f64("ok").unwrap(), 1.0, "{reply}");
}

/// Manual, `$listLocalSessions`: the sessions clients used, from
/// `aggregate: 1`; `endSessions` forgets them.
#[tokio::test]
async fn list_local_sessions_shows_used_sessions_until_they_end() {
    let node = TestNode::start();
    let client = node.client().await;
    let mut session = client.start_session().await.unwrap();
    let c = client.database("s").collection::<Document>("c");
    c.insert_one(doc! { "x": 1 })
        .session(&mut session)
        .await
        .unwrap();
    let listed = |client: mongodb::Client| async move {
        client
            .database("s")
            .aggregate(vec![doc! { "$listLocalSessions": {} }])
            .await
            .unwrap()
            .try_collect::<Vec<Document>>()
            .await
            .unwrap()
    };
    let sessions = listed(client.clone()).await;
    let lsid = session.id().get("id").unwrap().clone();
    assert!(
        sessions
            .iter()
            .any(|s| s.get_document("_id").unwrap().get("id") == Some(&lsid)),
        "{sessions:?} lacks {lsid:?}"
    );
    assert!(sessions[0].get_datetime("lastUse").is_ok());
    client
        .database("admin")
        .run_command(doc! { "endSessions": [{ "id": lsid.clone() }] })
        .await
        .unwrap();
    let after = listed(client.clone()).await;
    assert!(
        after
            .iter()
            .all(|s| s.get_document("_id").unwrap().get("id") != Some(&lsid)),
        "{after:?}"
    );
    expect_code(
        c.aggregate(vec![doc! { "$listLocalSessions": {} }])
            .await
            .map(|_| ()),
        73,
    );
}
