//! A client that sends garbage cannot hurt the server or other clients.

use std::time::Duration;

use crate::common::TestNode;
use mongodb::bson::{Document, doc};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Sends `bytes` on a fresh socket and reports whether the server closed it.
async fn closes_after(addr: std::net::SocketAddr, bytes: &[u8]) -> bool {
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(bytes).await.unwrap();
    let mut buf = [0u8; 64];
    matches!(
        tokio::time::timeout(Duration::from_secs(5), s.read(&mut buf)).await,
        Ok(Ok(0)) | Ok(Err(_))
    )
}

fn header(len: i32, opcode: i32) -> Vec<u8> {
    let mut h = Vec::new();
    h.extend_from_slice(&len.to_le_bytes());
    h.extend_from_slice(&1i32.to_le_bytes());
    h.extend_from_slice(&0i32.to_le_bytes());
    h.extend_from_slice(&opcode.to_le_bytes());
    h
}

#[tokio::test]
async fn garbage_frames_close_only_their_own_connection() {
    let node = TestNode::start();
    let addr = node.node().addr();
    let c = node.coll("safe", "c").await;
    c.insert_one(doc! { "before": true }).await.unwrap();

    let busy = {
        let c = c.clone();
        tokio::spawn(async move {
            for i in 0..300 {
                c.insert_one(doc! { "i": i }).await.unwrap();
                c.find_one(doc! { "i": i }).await.unwrap().unwrap();
            }
        })
    };

    // Random bytes.
    assert!(
        closes_after(
            addr,
            b"\x13\x37 definitely not a MongoDB message, just noise"
        )
        .await
    );
    // A 2 GB length header.
    assert!(closes_after(addr, &header(i32::MAX, 2013)).await);
    // An unknown opcode.
    let mut unknown = header(20, 9999);
    unknown.extend_from_slice(&[0; 4]);
    assert!(closes_after(addr, &unknown).await);
    // OP_MSG with a required flag bit no version of the protocol defines.
    let mut flagged = header(16 + 4 + 1 + 5, 2013);
    flagged.extend_from_slice(&(1u32 << 7).to_le_bytes());
    flagged.push(0);
    flagged.extend_from_slice(&[5, 0, 0, 0, 0]);
    assert!(closes_after(addr, &flagged).await);
    // A header cut off halfway, then the client goes away.
    {
        let mut s = TcpStream::connect(addr).await.unwrap();
        s.write_all(&header(100, 2013)[..9]).await.unwrap();
    }

    busy.await.unwrap();
    assert_eq!(c.count_documents(doc! {}).await.unwrap(), 301);
    node.db("admin")
        .await
        .run_command(doc! { "ping": 1 })
        .await
        .unwrap();
}

/// An OP_MSG frame: header, no flags, the given sections verbatim.
fn op_msg(request_id: i32, sections: &[u8]) -> Vec<u8> {
    let mut frame = header((16 + 4 + sections.len()) as i32, 2013);
    frame[4..8].copy_from_slice(&request_id.to_le_bytes());
    frame.extend_from_slice(&0u32.to_le_bytes());
    frame.extend_from_slice(sections);
    frame
}

/// A kind-0 section holding `body`.
fn body_section(body: &Document) -> Vec<u8> {
    let mut section = vec![0];
    body.to_writer(&mut section).unwrap();
    section
}

/// Reads one OP_MSG reply: (responseTo, body).
async fn read_reply(s: &mut TcpStream) -> (i32, Document) {
    let mut head = [0u8; 16];
    s.read_exact(&mut head).await.unwrap();
    let len = i32::from_le_bytes(head[..4].try_into().unwrap()) as usize;
    let response_to = i32::from_le_bytes(head[8..12].try_into().unwrap());
    let mut rest = vec![0u8; len - 16];
    s.read_exact(&mut rest).await.unwrap();
    assert_eq!(rest[4], 0, "a body section");
    (response_to, Document::from_reader(&rest[5..]).unwrap())
}

/// mongod answers an OP_MSG whose content is malformed (rpc/op_msg.cpp:
/// 40430 two bodies, 40432 unknown section kind, 40587 no body, Overflow for
/// a document longer than its section) and keeps the connection.
#[tokio::test]
async fn a_malformed_op_msg_gets_mongods_error_and_the_connection_goes_on() {
    let node = TestNode::start();
    let mut s = TcpStream::connect(node.node().addr()).await.unwrap();
    let ping = body_section(&doc! { "ping": 1, "$db": "admin" });
    let truncated_body = [0, 0xff, 0, 0, 0, 0x10, b'a', 0, 1, 0, 0, 0, 0];
    let cases: [(Vec<u8>, i32, &str); 4] = [
        (
            [ping.clone(), ping.clone()].concat(),
            40430,
            "Multiple body sections in message",
        ),
        (
            [ping.clone(), vec![7]].concat(),
            40432,
            "Unknown section kind 7",
        ),
        (vec![], 40587, "OP_MSG messages must have a body"),
        (truncated_body.to_vec(), 15, ""),
    ];
    for (i, (sections, code, errmsg)) in cases.into_iter().enumerate() {
        let request_id = 100 + i as i32;
        s.write_all(&op_msg(request_id, &sections)).await.unwrap();
        let (response_to, reply) = read_reply(&mut s).await;
        assert_eq!(response_to, request_id);
        assert_eq!(reply.get_f64("ok").unwrap(), 0.0, "{reply}");
        assert_eq!(reply.get_i32("code").unwrap(), code, "{reply}");
        if !errmsg.is_empty() {
            assert_eq!(reply.get_str("errmsg").unwrap(), errmsg);
        }
    }
    s.write_all(&op_msg(200, &ping)).await.unwrap();
    let (response_to, reply) = read_reply(&mut s).await;
    assert_eq!((response_to, reply.get_f64("ok").unwrap()), (200, 1.0));
}

/// A client that starts a message and stops is cut off after
/// `net.read_timeout`; one that connects and never speaks, after
/// `net.handshake_timeout`. Other clients are unaffected.
#[tokio::test]
async fn stalled_and_silent_connections_are_closed() {
    let node = TestNode::start_with(
        |c| {
            c.net.read_timeout = Duration::from_millis(300);
            c.net.handshake_timeout = Duration::from_millis(600);
        },
        None,
    );
    let addr = node.node().addr();
    let client = node.db("admin").await;
    client.run_command(doc! { "ping": 1 }).await.unwrap();

    // Connected, handshake sent, then half a message.
    let mut stalled = TcpStream::connect(addr).await.unwrap();
    stalled
        .write_all(&op_msg(
            1,
            &body_section(&doc! { "hello": 1, "$db": "admin" }),
        ))
        .await
        .unwrap();
    read_reply(&mut stalled).await;
    let started = std::time::Instant::now();
    stalled.write_all(&header(100, 2013)[..9]).await.unwrap();
    let mut byte = [0u8; 1];
    let closed = tokio::time::timeout(Duration::from_secs(10), stalled.read(&mut byte)).await;
    assert!(matches!(closed, Ok(Ok(0)) | Ok(Err(_))), "{closed:?}");
    assert!(started.elapsed() >= Duration::from_millis(300));

    // Connected and silent.
    let mut silent = TcpStream::connect(addr).await.unwrap();
    let started = std::time::Instant::now();
    let closed = tokio::time::timeout(Duration::from_secs(10), silent.read(&mut byte)).await;
    assert!(matches!(closed, Ok(Ok(0)) | Ok(Err(_))), "{closed:?}");
    assert!(started.elapsed() >= Duration::from_millis(600));

    // A pooled driver connection idle for longer than both stays usable.
    tokio::time::sleep(Duration::from_millis(700)).await;
    client.run_command(doc! { "ping": 1 }).await.unwrap();
}
