//! What the scenarios send: documents of a fixed shape, loaded in batches
//! from concurrent clients, and the server figures they poll.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Result;
use mongodb::bson::{DateTime, Document, RawDocumentBuf, doc, oid::ObjectId};
use mongodb::{Client, Collection};

/// The 100-byte payload every document carries.
pub const PAYLOAD: &str = "ebb-bench-payload-0123456789-abcdefghijklmnopqrstuvwxyz-0123456789-ABCDEFGHIJKLMNOPQRSTUVWXYZ-012345";

/// One benchmark document: ObjectId `_id`, the TTL date, a secondary key.
pub fn make_doc(at: DateTime, k: i32) -> Document {
    doc! { "_id": ObjectId::new(), "at": at, "k": k, "payload": PAYLOAD }
}

/// [`make_doc`]'s encoding, made once and stamped with each document's
/// `_id`, date and key: a stream that must not compete with the node for
/// the machine's two cores copies 150 bytes a document instead of building
/// and serializing one (which, at 150k documents/s, took a third of a core).
pub struct Stamp {
    bytes: Vec<u8>,
    /// Where the values of `_id` (12 bytes), `at` (8) and `k` (4) start.
    id: usize,
    at: usize,
    k: usize,
}

impl Stamp {
    pub fn new() -> Stamp {
        let doc = RawDocumentBuf::try_from(&make_doc(DateTime::from_millis(0), 0))
            .expect("the benchmark document encodes");
        let bytes = doc.into_bytes();
        // An element is its type byte, its name, a NUL, then its value.
        let value_of = |ty: u8, name: &str| {
            let mut element = vec![ty];
            element.extend_from_slice(name.as_bytes());
            element.push(0);
            let at = bytes
                .windows(element.len())
                .position(|w| w == element.as_slice())
                .expect("make_doc's field");
            at + element.len()
        };
        Stamp {
            id: value_of(0x07, "_id"),
            at: value_of(0x09, "at"),
            k: value_of(0x10, "k"),
            bytes,
        }
    }

    /// `make_doc(at, k)`, encoded.
    pub fn doc(&self, at: DateTime, k: i32) -> RawDocumentBuf {
        let mut b = self.bytes.clone();
        b[self.id..self.id + 12].copy_from_slice(&ObjectId::new().bytes());
        b[self.at..self.at + 8].copy_from_slice(&at.timestamp_millis().to_le_bytes());
        b[self.k..self.k + 4].copy_from_slice(&k.to_le_bytes());
        RawDocumentBuf::from_bytes(b).expect("a stamped copy of a valid document")
    }
}

/// `n` documents dated evenly over `span_ms` from `start_ms`, encoded now
/// in batches of 1,000 for [`load_encoded`].
pub fn spread_over(n: usize, start_ms: i64, span_ms: i64) -> Vec<Vec<RawDocumentBuf>> {
    let stamp = Stamp::new();
    (0..n)
        .step_by(1000)
        .map(|from| {
            (from..(from + 1000).min(n))
                .map(|i| {
                    let at = start_ms + (i as i64 * span_ms) / n as i64;
                    stamp.doc(DateTime::from_millis(at), (i % 1000) as i32)
                })
                .collect()
        })
        .collect()
}

/// `n` documents dated `at`, encoded now in batches of 1,000: a load that
/// times the node hands them over with [`load_encoded`] after its clock
/// starts (on two shared cores, building and encoding them in the window
/// took as much CPU as ebbd spent storing them).
pub fn encoded_batches(n: usize, at: DateTime) -> Vec<Vec<RawDocumentBuf>> {
    let stamp = Stamp::new();
    (0..n)
        .step_by(1000)
        .map(|from| {
            (from..(from + 1000).min(n))
                .map(|i| stamp.doc(at, (i % 1000) as i32))
                .collect()
        })
        .collect()
}

/// [`load_batches`] of batches [`encoded_batches`] made.
pub async fn load_encoded(
    coll: &Collection<Document>,
    batches: Vec<Vec<RawDocumentBuf>>,
    clients: usize,
) -> Result<(Duration, Vec<(f64, f64)>)> {
    let n = batches.iter().map(Vec::len).sum();
    let batches = Mutex::new(batches);
    let raw = coll.clone_with_type::<RawDocumentBuf>();
    load_batches(&raw, n, clients, move |range| {
        std::mem::take(&mut batches.lock().expect("batches")[range.start / 1000])
    })
    .await
}

/// Inserts `n` documents made by `make(i)` in batches of 1,000 from
/// `clients` concurrent tasks; returns the elapsed time and the documents
/// inserted so far, sampled every 50 ms (seconds, count).
pub async fn load(
    coll: &Collection<Document>,
    n: usize,
    clients: usize,
    make: impl Fn(usize) -> Document + Send + Sync + 'static,
) -> Result<(Duration, Vec<(f64, f64)>)> {
    load_batches(coll, n, clients, move |range| range.map(&make).collect()).await
}

/// [`load`] with each batch (the documents of a range of indexes) made by
/// `batch`: a scenario whose client must not be the bottleneck hands over
/// batches built before the clock starts.
pub async fn load_batches<T: serde::Serialize + Send + Sync + 'static>(
    coll: &Collection<T>,
    n: usize,
    clients: usize,
    batch: impl Fn(std::ops::Range<usize>) -> Vec<T> + Send + Sync + 'static,
) -> Result<(Duration, Vec<(f64, f64)>)> {
    let make = Arc::new(batch);
    let next = Arc::new(AtomicUsize::new(0));
    let done = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let progress = tokio::spawn(progress("loaded", done.clone(), n));
    let sampler = {
        let done = done.clone();
        tokio::spawn(async move {
            let mut points = Vec::new();
            loop {
                points.push((
                    started.elapsed().as_secs_f64(),
                    done.load(Ordering::SeqCst) as f64,
                ));
                if done.load(Ordering::SeqCst) >= n {
                    return points;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        })
    };
    let mut tasks = Vec::new();
    for _ in 0..clients.max(1) {
        let (coll, make, next, done) = (coll.clone(), make.clone(), next.clone(), done.clone());
        tasks.push(tokio::spawn(async move {
            loop {
                let start = next.fetch_add(1000, Ordering::SeqCst);
                if start >= n {
                    return anyhow::Ok(());
                }
                let batch = make(start..(start + 1000).min(n));
                let len = batch.len();
                coll.insert_many(batch).await?;
                done.fetch_add(len, Ordering::SeqCst);
            }
        }));
    }
    for t in tasks {
        t.await??;
    }
    progress.abort();
    let took = started.elapsed();
    let points = sampler.await?;
    Ok((took, points))
}

/// Prints `what: x/n` to stderr every second until aborted.
pub async fn progress(what: &'static str, done: Arc<AtomicUsize>, n: usize) {
    loop {
        tokio::time::sleep(Duration::from_secs(1)).await;
        eprintln!("  {what} {}/{n}", done.load(Ordering::SeqCst));
    }
}

/// `serverStatus.metrics.ttl.deletedDocuments`.
pub async fn deleted(client: &Client) -> Result<i64> {
    let s = client
        .database("admin")
        .run_command(doc! { "serverStatus": 1 })
        .await?;
    Ok(s.get_document("metrics")?
        .get_document("ttl")?
        .get_i64("deletedDocuments")?)
}

/// The `p`-th percentile (0..=100) of sorted values.
pub fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = ((p / 100.0) * (sorted.len() - 1) as f64).round() as usize;
    sorted[rank.min(sorted.len() - 1)]
}

/// A tiny xorshift generator: the harness needs spread, not quality.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// A value in `0..n`.
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// Milliseconds since the epoch, now.
pub fn now_ms() -> i64 {
    DateTime::now().timestamp_millis()
}

#[cfg(test)]
mod tests {
    use mongodb::bson::{DateTime, RawDocumentBuf, doc};

    use super::{PAYLOAD, Stamp};

    #[test]
    fn a_stamped_document_is_make_docs_encoding() {
        let stamp = Stamp::new();
        let at = DateTime::from_millis(1_764_000_123_456);
        let raw = stamp.doc(at, 617);
        let id = raw.get_object_id("_id").unwrap();
        let want = doc! { "_id": id, "at": at, "k": 617, "payload": PAYLOAD };
        assert_eq!(raw, RawDocumentBuf::try_from(&want).unwrap());
        assert_ne!(stamp.doc(at, 617).get_object_id("_id").unwrap(), id);
    }
}
