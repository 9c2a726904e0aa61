//! The end-to-end test harness: a real node on 127.0.0.1:0 with its data
//! in a temp dir, driven through the official Rust `mongodb` driver.
#![allow(dead_code)]

pub mod set;
pub mod tls;
pub mod ts;

use std::sync::Arc;
use std::time::{Duration, Instant};

use ebb_actors::clock::{Clock, ManualClock, SystemClock};
use ebb_config::Config;
use ebb_node::{NodeOptions, NodeThread};
use mongodb::bson::Document;
use mongodb::{Client, Collection, Database};

pub struct TestNode {
    pub node: Option<NodeThread>,
    pub dir: tempfile::TempDir,
    pub clock: Option<Arc<ManualClock>>,
    pub config: Config,
}

impl TestNode {
    /// A node with the default configuration and the system clock.
    pub fn start() -> TestNode {
        Self::start_with(|_| {}, None)
    }

    /// A node whose TTL monitor reads a manual clock.
    pub fn start_with_clock(clock: Arc<ManualClock>) -> TestNode {
        Self::start_with(|_| {}, Some(clock))
    }

    pub fn start_with(
        configure: impl FnOnce(&mut Config),
        clock: Option<Arc<ManualClock>>,
    ) -> TestNode {
        let dir = tempfile::tempdir().expect("temp dir");
        let mut config = Config::default();
        config.net.port = 0;
        config.storage.path = dir.path().join("data");
        configure(&mut config);
        let mut t = TestNode {
            node: None,
            dir,
            clock,
            config,
        };
        t.boot();
        t
    }

    fn boot(&mut self) {
        init_logging();
        let clock: Arc<dyn Clock> = match &self.clock {
            Some(c) => c.clone(),
            None => Arc::new(SystemClock),
        };
        let opts = NodeOptions {
            config: self.config.clone(),
            clock,
            argv: vec!["ebbd".into()],
            own_process: false,
        };
        self.node = Some(NodeThread::start(opts).expect("node starts"));
    }

    /// Shuts the node down and starts it again on the same data.
    pub fn restart(&mut self) {
        if let Some(n) = self.node.take() {
            n.shutdown();
        }
        self.boot();
    }

    pub fn node(&self) -> &NodeThread {
        self.node.as_ref().expect("node running")
    }

    pub fn uri(&self) -> String {
        self.node().uri()
    }

    pub async fn client(&self) -> Client {
        Client::with_uri_str(self.uri()).await.expect("client")
    }

    pub async fn db(&self, name: &str) -> Database {
        self.client().await.database(name)
    }

    pub async fn coll(&self, db: &str, name: &str) -> Collection<Document> {
        self.db(db).await.collection(name)
    }

    /// A node with `security.authorization = "enabled"`.
    pub fn start_with_auth() -> TestNode {
        Self::start_with(
            |c| c.security.authorization = ebb_config::Authorization::Enabled,
            None,
        )
    }

    /// A client that authenticates as `user` on `source` with `mechanism`,
    /// over a single connection (so per-connection state such as `logout`
    /// is observable).
    pub async fn client_as(
        &self,
        user: &str,
        pwd: &str,
        source: &str,
        mechanism: mongodb::options::AuthMechanism,
    ) -> Client {
        let mut opts = mongodb::options::ClientOptions::parse(self.uri())
            .await
            .expect("options");
        opts.credential = Some(
            mongodb::options::Credential::builder()
                .username(user.to_owned())
                .password(pwd.to_owned())
                .source(source.to_owned())
                .mechanism(mechanism)
                .build(),
        );
        opts.max_pool_size = Some(1);
        Client::with_options(opts).expect("client")
    }
}

/// Sends the node's logs to the test output (shown for failing tests);
/// `RUST_LOG` selects the level, warnings by default.
fn init_logging() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let filter = tracing_subscriber::EnvFilter::try_from_default_env()
            .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
        let _ = tracing_subscriber::fmt()
            .with_env_filter(filter)
            .with_test_writer()
            .try_init();
    });
}

/// The server's error code of a driver error, whatever shape it came in.
pub fn code(e: &mongodb::error::Error) -> Option<i32> {
    use mongodb::error::{ErrorKind, WriteFailure};
    match e.kind.as_ref() {
        ErrorKind::Command(c) => Some(c.code),
        ErrorKind::Write(WriteFailure::WriteError(w)) => Some(w.code),
        ErrorKind::InsertMany(m) => m
            .write_errors
            .as_ref()
            .and_then(|w| w.first())
            .map(|w| w.code),
        _ => None,
    }
}

/// The server's error message of a driver error.
pub fn message(e: &mongodb::error::Error) -> String {
    use mongodb::error::{ErrorKind, WriteFailure};
    match e.kind.as_ref() {
        ErrorKind::Command(c) => c.message.clone(),
        ErrorKind::Write(WriteFailure::WriteError(w)) => w.message.clone(),
        ErrorKind::InsertMany(m) => m
            .write_errors
            .as_ref()
            .and_then(|w| w.first())
            .map(|w| w.message.clone())
            .unwrap_or_default(),
        _ => e.to_string(),
    }
}

/// Asserts a driver result is a server error with `code`, returning its message.
#[track_caller]
pub fn expect_code<T: std::fmt::Debug>(r: mongodb::error::Result<T>, expected: i32) -> String {
    match r {
        Ok(v) => panic!("expected error {expected}, got Ok({v:?})"),
        Err(e) => {
            assert_eq!(code(&e), Some(expected), "unexpected error: {e}");
            message(&e)
        }
    }
}

impl TestNode {
    /// `serverStatus.metrics.ttl` as (deletedDocuments, passes, subPasses).
    pub async fn ttl_metrics(&self) -> (i64, i64, i64) {
        let s = self
            .db("admin")
            .await
            .run_command(mongodb::bson::doc! { "serverStatus": 1 })
            .await
            .unwrap();
        let t = s
            .get_document("metrics")
            .unwrap()
            .get_document("ttl")
            .unwrap();
        (
            t.get_i64("deletedDocuments").unwrap(),
            t.get_i64("passes").unwrap(),
            t.get_i64("subPasses").unwrap(),
        )
    }

    /// Returns once a complete TTL pass has run that started after this
    /// call (passes grew by two, as MongoDB's own tests wait). With a
    /// manual clock the monitor is nudged by a zero-length clock jump.
    pub async fn ttl_pass(&self) {
        let start = self.ttl_metrics().await.1;
        let done = eventually(Duration::from_secs(30), || async {
            if let Some(c) = &self.clock {
                c.advance(Duration::ZERO);
            }
            self.ttl_metrics().await.1 >= start + 2
        })
        .await;
        assert!(done, "no complete TTL pass within 30 s");
    }

    /// Keeps the TTL monitor between passes (it finishes a running one
    /// first) until the guard is dropped: due documents stay stored while
    /// reads are checked against them.
    pub async fn hold_monitor(&self) -> tokio::sync::OwnedMutexGuard<()> {
        self.node().context().shared.ttl.hold().await
    }

    /// Moves the manual clock forward.
    pub fn advance(&self, by: Duration) {
        self.clock.as_ref().expect("a manual clock").advance(by);
    }

    /// `serverStatus.metrics.ttl`.
    pub async fn ttl_status(&self) -> mongodb::bson::Document {
        let cmd = mongodb::bson::doc! { "serverStatus": 1 };
        let status = self.db("admin").await.run_command(cmd).await.unwrap();
        let metrics = status.get_document("metrics").unwrap();
        metrics.get_document("ttl").unwrap().clone()
    }

    pub async fn set_parameter(&self, name: &str, value: impl Into<mongodb::bson::Bson>) {
        let cmd = mongodb::bson::doc! { "setParameter": 1, name: value.into() };
        self.db("admin").await.run_command(cmd).await.unwrap();
    }
}

/// Polls `check` until it returns true or `deadline` passes.
pub async fn eventually<F, Fut>(deadline: Duration, mut check: F) -> bool
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let start = Instant::now();
    loop {
        if check().await {
            return true;
        }
        if start.elapsed() > deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Every document of a collection, in `_id` order.
pub async fn all(c: &Collection<Document>) -> Vec<Document> {
    use futures::TryStreamExt;
    c.find(mongodb::bson::doc! {})
        .sort(mongodb::bson::doc! { "_id": 1 })
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap()
}

/// The (int32) `_id`s of the documents a filter finds, in `_id` order.
pub async fn ids(c: &Collection<Document>, filter: Document) -> Vec<i32> {
    cursor_ids(
        c.find(filter)
            .sort(mongodb::bson::doc! { "_id": 1 })
            .await
            .unwrap(),
    )
    .await
}

/// The integer `_id`s a cursor returns, in its order.
pub async fn cursor_ids(cursor: mongodb::Cursor<Document>) -> Vec<i32> {
    use futures::TryStreamExt;
    let docs: Vec<Document> = cursor.try_collect().await.unwrap();
    docs.iter().map(|d| d.get_i32("_id").unwrap()).collect()
}

/// The first batch of a cursor-returning command (find, aggregate,
/// listIndexes, listCollections).
pub async fn first_batch(db: &Database, cmd: Document) -> Vec<Document> {
    let reply = db.run_command(cmd).await.unwrap();
    reply
        .get_document("cursor")
        .unwrap()
        .get_array("firstBatch")
        .unwrap()
        .iter()
        .map(|d| d.as_document().unwrap().clone())
        .collect()
}

/// `n` cases drawn from a proptest strategy, to drive an async end-to-end
/// property check (proptest's runner itself is synchronous).
pub fn cases<S: proptest::strategy::Strategy>(strategy: S, n: u32) -> Vec<S::Value> {
    let found = std::cell::RefCell::new(Vec::new());
    proptest::test_runner::TestRunner::new(proptest::test_runner::Config {
        cases: n,
        ..Default::default()
    })
    .run(&strategy, |case| {
        found.borrow_mut().push(case);
        Ok(())
    })
    .unwrap();
    found.into_inner()
}

/// Creates a plain index with this key pattern.
pub async fn create_index(c: &Collection<Document>, keys: Document) {
    c.create_index(mongodb::IndexModel::builder().keys(keys).build())
        .await
        .unwrap();
}

/// Creates a TTL index with this key pattern, `expireAfterSeconds` and
/// other options.
pub async fn ttl_index(
    c: &Collection<Document>,
    key: Document,
    secs: u64,
    opts: Option<mongodb::options::IndexOptions>,
) {
    let mut o = opts.unwrap_or_default();
    o.expire_after = Some(Duration::from_secs(secs));
    c.create_index(mongodb::IndexModel::builder().keys(key).options(o).build())
        .await
        .unwrap();
}

/// The (string) `_id`s of the documents a filter finds, in `_id` order.
pub async fn str_ids(c: &Collection<Document>, filter: Document) -> Vec<String> {
    use futures::TryStreamExt;
    let docs: Vec<Document> = c
        .find(filter)
        .sort(mongodb::bson::doc! { "_id": 1 })
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    docs.iter()
        .map(|d| d.get_str("_id").unwrap().to_owned())
        .collect()
}

/// The documents `pipeline` returns on `c`.
pub async fn agg(c: &Collection<Document>, pipeline: Vec<Document>) -> Vec<Document> {
    use futures::TryStreamExt;
    c.aggregate(pipeline)
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap()
}

/// Runs `pipeline` on `c`, expecting it to fail with `code`; returns the
/// error message.
pub async fn agg_err(c: &Collection<Document>, pipeline: Vec<Document>, code: i32) -> String {
    use futures::TryStreamExt;
    let r = match c.aggregate(pipeline).await {
        Ok(cursor) => cursor.try_collect::<Vec<Document>>().await,
        Err(e) => Err(e),
    };
    expect_code(r, code)
}

/// `db.big`: 1,100 documents of about 100 KiB (about 107 MiB, past the
/// 100 MiB blocking-stage limit), `_id` 0..1100 and `k` a scrambled
/// permutation of the same range.
pub async fn big_padded_collection(db: &Database) -> Collection<Document> {
    let c = db.collection::<Document>("big");
    let pad = "x".repeat(100 * 1024);
    let docs: Vec<Document> = (0..1100)
        .map(|i: i32| mongodb::bson::doc! { "_id": i, "k": (i * 7919) % 1100, "pad": &pad })
        .collect();
    for chunk in docs.chunks(200) {
        c.insert_many(chunk.to_vec()).await.unwrap();
    }
    c
}
