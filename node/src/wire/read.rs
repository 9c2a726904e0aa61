//! Reading one message at a time off a connection.
//!
//! The header is read first and checked (length bounds, opcode) before any room is made for the
//! body, and the body buffer then grows only as bytes actually arrive: a client announcing 48 MB
//! and sending ten bytes costs 64 KiB, not 48 MB. One buffer is reused per connection and
//! trimmed after an unusually large message so an idle connection does not keep it.
//!
//! This is the connection loop's only entry point into the wire layer; it does not log, retry or
//! close anything itself.

use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt};

use super::header::{HEADER_LEN, Header, RequestOp};
use super::{FramingError, Message, decode_frame};

/// Room made up front for a body; larger bodies grow the buffer as they arrive.
const INITIAL_BODY_RESERVE: usize = 64 * 1024;

/// A buffer larger than this is shrunk back after use.
const RETAINED_CAPACITY: usize = 1024 * 1024;

/// One complete frame off the connection.
#[derive(Debug)]
pub enum Incoming {
    Message(Message),
    /// An OP_MSG read to its last byte whose content is malformed in a way
    /// mongod answers with an error reply (see [`FramingError::is_answered`]):
    /// the stream is still in step, so the connection goes on.
    Refused {
        request_id: i32,
        error: FramingError,
    },
}

/// Reads the next message from `reader`, using `buf` as scratch space.
///
/// Returns `Ok(None)` when the peer closed the connection cleanly between messages. Waiting
/// for a message to begin has no limit; once its first byte has arrived, the rest must arrive
/// within `patience` (a stalled client cannot hold the connection). Messages whose
/// `messageLength` exceeds `max_len` (the configured `net.max_message_bytes`) are refused
/// before their body is read. Any error leaves the stream at an unknown position: the caller
/// must close the connection.
///
/// Not cancellation-safe: dropping the future part-way through a message loses the stream's
/// position just as an error does, so a loop that races it against shutdown must then close.
pub async fn read_message<R: AsyncRead + Unpin>(
    reader: &mut R,
    buf: &mut Vec<u8>,
    max_len: usize,
    patience: Duration,
) -> Result<Option<Incoming>, FramingError> {
    buf.clear();
    if buf.capacity() > RETAINED_CAPACITY {
        buf.shrink_to(RETAINED_CAPACITY);
    }
    read_up_to(reader, buf, 1).await?;
    if buf.is_empty() {
        return Ok(None);
    }
    tokio::time::timeout(patience, read_rest(reader, buf, max_len))
        .await
        .map_err(|_| FramingError::Stalled {
            received: buf.len(),
            patience,
        })?
        .map(Some)
}

/// Reads the message whose first byte is in `buf` to its end and decodes it.
async fn read_rest<R: AsyncRead + Unpin>(
    reader: &mut R,
    buf: &mut Vec<u8>,
    max_len: usize,
) -> Result<Incoming, FramingError> {
    read_up_to(reader, buf, HEADER_LEN - buf.len()).await?;
    let Some(header_bytes) = buf.first_chunk::<HEADER_LEN>() else {
        return Err(FramingError::ConnectionClosed {
            received: buf.len(),
            expected: HEADER_LEN,
        });
    };
    let header = Header::parse(header_bytes, max_len)?;
    let body_len = header.message_length - HEADER_LEN;
    buf.reserve(body_len.min(INITIAL_BODY_RESERVE));
    read_up_to(reader, buf, body_len).await?;
    if buf.len() != header.message_length {
        return Err(FramingError::ConnectionClosed {
            received: buf.len(),
            expected: header.message_length,
        });
    }
    match decode_frame(buf, max_len) {
        Ok(message) => Ok(Incoming::Message(message)),
        Err(error) if header.op == RequestOp::Msg && error.is_answered() => Ok(Incoming::Refused {
            request_id: header.request_id,
            error,
        }),
        Err(error) => Err(error),
    }
}

/// Appends up to `len` bytes to `buf`, fewer only if the stream ends first.
async fn read_up_to<R: AsyncRead + Unpin>(
    reader: &mut R,
    buf: &mut Vec<u8>,
    len: usize,
) -> Result<(), FramingError> {
    let limit = u64::try_from(len).unwrap_or(u64::MAX);
    (&mut *reader).take(limit).read_to_end(buf).await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::Body;
    use crate::wire::testing::{CHECKSUM_PRESENT, MORE_TO_COME, OpMsgBuilder, op_query};
    const DEFAULT_MAX_MESSAGE_LEN: usize = ebb_config::limits::MAX_MESSAGE_BYTES as usize;
    use bson::rawdoc;
    use tokio::io::AsyncWriteExt;

    const PATIENCE: Duration = Duration::from_secs(5);

    async fn read_from(bytes: &[u8], buf: &mut Vec<u8>) -> Result<Option<Message>, FramingError> {
        let mut reader = bytes;
        read_message(&mut reader, buf, DEFAULT_MAX_MESSAGE_LEN, PATIENCE)
            .await
            .map(|incoming| incoming.map(message))
    }

    fn message(incoming: Incoming) -> Message {
        match incoming {
            Incoming::Message(message) => message,
            Incoming::Refused { error, .. } => panic!("refused: {error}"),
        }
    }

    fn header(length: i32, op_code: i32) -> Vec<u8> {
        [length, 1, 0, op_code]
            .iter()
            .flat_map(|field| field.to_le_bytes())
            .collect()
    }

    fn ping() -> Vec<u8> {
        OpMsgBuilder::new()
            .body(&rawdoc! { "ping": 1, "$db": "admin" })
            .build(5)
    }

    #[tokio::test]
    async fn clean_end_of_stream_between_messages_is_none() {
        let mut buf = Vec::new();
        assert!(read_from(b"", &mut buf).await.unwrap().is_none());
    }

    #[tokio::test]
    async fn end_of_stream_inside_a_header_is_an_error() {
        let err = read_from(&ping()[..9], &mut Vec::new()).await.unwrap_err();
        assert!(matches!(
            err,
            FramingError::ConnectionClosed {
                received: 9,
                expected: 16
            }
        ));
    }

    #[tokio::test]
    async fn end_of_stream_inside_a_body_is_an_error() {
        let frame = ping();
        let err = read_from(&frame[..frame.len() - 1], &mut Vec::new())
            .await
            .unwrap_err();
        assert!(
            matches!(err, FramingError::ConnectionClosed { received, expected }
                if received == frame.len() - 1 && expected == frame.len())
        );
    }

    #[tokio::test]
    async fn two_gigabyte_length_is_refused_before_allocating() {
        let mut buf = Vec::new();
        let err = read_from(&header(i32::MAX, 2013), &mut buf)
            .await
            .unwrap_err();
        assert!(matches!(
            err,
            FramingError::TooLong {
                length: i32::MAX,
                ..
            }
        ));
        assert!(buf.capacity() < 1024, "capacity {}", buf.capacity());
    }

    #[tokio::test]
    async fn configured_maximum_is_enforced() {
        let frame = ping();
        let mut reader = &frame[..];
        let err = read_message(&mut reader, &mut Vec::new(), frame.len() - 1, PATIENCE)
            .await
            .unwrap_err();
        assert!(matches!(err, FramingError::TooLong { .. }));
    }

    #[tokio::test]
    async fn announced_length_is_not_allocated_before_the_bytes_arrive() {
        let mut bytes = header(40_000_000, 2013);
        bytes.extend_from_slice(&[0; 10]);
        let mut buf = Vec::new();
        let err = read_from(&bytes, &mut buf).await.unwrap_err();
        assert!(matches!(
            err,
            FramingError::ConnectionClosed { received: 26, .. }
        ));
        assert!(
            buf.capacity() <= 2 * INITIAL_BODY_RESERVE,
            "capacity {}",
            buf.capacity()
        );
    }

    #[tokio::test]
    async fn unknown_opcode_is_refused_before_its_body_is_read() {
        let err = read_from(&header(1000, 2012), &mut Vec::new())
            .await
            .unwrap_err();
        assert!(matches!(err, FramingError::UnknownOpcode(2012)));
    }

    #[tokio::test]
    async fn large_buffer_is_trimmed_for_the_next_message() {
        let large = OpMsgBuilder::new()
            .body(&rawdoc! { "insert": "c", "$db": "test" })
            .sequence(
                "documents",
                &[&rawdoc! { "blob": "x".repeat(2 * RETAINED_CAPACITY) }],
            )
            .build(1);
        let mut stream = large.clone();
        stream.extend_from_slice(&ping());
        let mut reader = &stream[..];
        let mut buf = Vec::new();
        let max = DEFAULT_MAX_MESSAGE_LEN;
        assert!(
            read_message(&mut reader, &mut buf, max, PATIENCE)
                .await
                .unwrap()
                .is_some()
        );
        assert!(buf.capacity() >= large.len());
        assert!(
            read_message(&mut reader, &mut buf, max, PATIENCE)
                .await
                .unwrap()
                .is_some()
        );
        assert!(buf.capacity() <= RETAINED_CAPACITY);
    }

    /// What one connection carries from a legacy driver: handshake, an acknowledged insert
    /// with a document sequence, then a checksummed fire-and-forget write.
    fn conversation() -> Vec<Vec<u8>> {
        vec![
            op_query(
                1,
                "admin.$cmd",
                &rawdoc! { "ismaster": 1, "helloOk": true },
                None,
            ),
            OpMsgBuilder::new()
                .body(&rawdoc! { "insert": "c", "$db": "test" })
                .sequence("documents", &[&rawdoc! { "_id": 1 }, &rawdoc! { "_id": 2 }])
                .build(2),
            OpMsgBuilder::new()
                .flags(CHECKSUM_PRESENT | MORE_TO_COME)
                .body(&rawdoc! { "delete": "c", "$db": "test" })
                .sequence("deletes", &[&rawdoc! { "q": {}, "limit": 0 }])
                .build(3),
        ]
    }

    #[tokio::test]
    async fn messages_back_to_back_on_one_stream_are_read_in_order() {
        // A pipe narrower than any message forces every read to span several chunks.
        let (mut client, mut server) = tokio::io::duplex(7);
        let writer = tokio::spawn(async move {
            client.write_all(&conversation().concat()).await.unwrap();
        });
        let mut buf = Vec::new();
        let mut received = Vec::new();
        while let Some(incoming) =
            read_message(&mut server, &mut buf, DEFAULT_MAX_MESSAGE_LEN, PATIENCE)
                .await
                .unwrap()
        {
            received.push(message(incoming));
        }
        writer.await.unwrap();

        let ids: Vec<i32> = received.iter().map(|m| m.request_id).collect();
        assert_eq!(ids, [1, 2, 3]);
        assert!(matches!(&received[0].body, Body::Query(q) if q.db() == Some("admin")));
        let Body::Msg(insert) = &received[1].body else {
            panic!("expected OP_MSG");
        };
        let inserted = insert.command.get_array("documents").unwrap();
        assert_eq!(inserted.into_iter().count(), 2);
        assert!(received[1].expects_reply());
        assert!(!received[2].expects_reply());
    }

    #[tokio::test(start_paused = true)]
    async fn a_message_that_stops_arriving_times_out() {
        let (mut client, mut server) = tokio::io::duplex(1024);
        client.write_all(&ping()[..20]).await.unwrap();
        let err = read_message(
            &mut server,
            &mut Vec::new(),
            DEFAULT_MAX_MESSAGE_LEN,
            PATIENCE,
        )
        .await
        .unwrap_err();
        assert!(
            matches!(err, FramingError::Stalled { received: 20, patience } if patience == PATIENCE),
            "{err}"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn waiting_for_a_message_to_begin_has_no_limit() {
        let (mut client, mut server) = tokio::io::duplex(1024);
        let reader = tokio::spawn(async move {
            read_message(
                &mut server,
                &mut Vec::new(),
                DEFAULT_MAX_MESSAGE_LEN,
                PATIENCE,
            )
            .await
            .map(|incoming| incoming.map(message))
        });
        tokio::time::sleep(PATIENCE * 10).await;
        client.write_all(&ping()).await.unwrap();
        let received = reader.await.unwrap().unwrap().unwrap();
        assert_eq!(received.request_id, 5);
    }

    #[tokio::test]
    async fn a_malformed_op_msg_is_refused_and_the_stream_stays_in_step() {
        let mut stream = OpMsgBuilder::new()
            .body(&rawdoc! { "ping": 1, "$db": "admin" })
            .body(&rawdoc! { "ping": 1, "$db": "admin" })
            .build(7);
        stream.extend_from_slice(&ping());
        let mut reader = &stream[..];
        let mut buf = Vec::new();
        let first = read_message(&mut reader, &mut buf, DEFAULT_MAX_MESSAGE_LEN, PATIENCE)
            .await
            .unwrap();
        assert!(matches!(
            first,
            Some(Incoming::Refused {
                request_id: 7,
                error: FramingError::DuplicateBody
            })
        ));
        let second = read_from(reader, &mut buf).await.unwrap().unwrap();
        assert_eq!(second.request_id, 5);
    }

    #[tokio::test]
    async fn unknown_required_flags_close_the_connection() {
        let frame = OpMsgBuilder::new()
            .flags(1 << 5)
            .body(&rawdoc! { "ping": 1, "$db": "admin" })
            .build(7);
        let err = read_from(&frame, &mut Vec::new()).await.unwrap_err();
        assert!(matches!(err, FramingError::UnknownRequiredFlags(_)));
    }
}
