//! A client that sends garbage cannot hurt the server or other clients.

mod common;

use std::time::Duration;

use common::TestNode;
use mongodb::bson::doc;
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
    // OP_MSG whose body document claims more bytes than the frame holds.
    let mut truncated = header(16 + 4 + 1 + 8, 2013);
    truncated.extend_from_slice(&0u32.to_le_bytes());
    truncated.push(0);
    truncated.extend_from_slice(&[0xff, 0, 0, 0, 0x10, b'a', 0, 1]);
    assert!(closes_after(addr, &truncated).await);
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
