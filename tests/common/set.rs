//! Replica-set members for the tests: real `ebbd --replSet rs0` processes
//! on loopback ports, initiated as mongosh's `rs.initiate(config)` does,
//! and the driver clients that reach them.

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use mongodb::bson::{Document, doc};
use mongodb::{Client, Collection};

/// The `ebbd` the test build produced, beside this test's binary.
pub fn ebbd() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let path = exe.parent().unwrap().parent().unwrap().join("ebbd");
    assert!(
        path.exists(),
        "{} is missing: build the workspace (cargo test --workspace builds it)",
        path.display()
    );
    path
}

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// One member: an `ebbd --replSet rs0` process, killed when dropped.
pub struct Member {
    pub port: u16,
    pub dir: PathBuf,
    pub child: Option<Child>,
    /// Settings beyond the defaults, as `EBB_` variables.
    pub env: Vec<(String, String)>,
}

impl Member {
    pub fn start(root: &std::path::Path) -> Member {
        Member::start_with(root, &[])
    }

    pub fn start_with(root: &std::path::Path, env: &[(&str, &str)]) -> Member {
        let port = free_port();
        let mut m = Member {
            port,
            dir: root.join(port.to_string()),
            child: None,
            env: env
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        };
        m.spawn();
        m
    }

    pub fn spawn(&mut self) {
        self.launch(true);
    }

    pub fn launch(&mut self, member: bool) {
        let mut command = Command::new(ebbd());
        command.args(["--port", &self.port.to_string()]);
        if member {
            command.args(["--replSet", "rs0"]);
        }
        // A standalone run is started with mongod's spelling of the data
        // directory's flag, which ebbd takes too.
        let dir_flag = if member { "--db-path" } else { "--dbpath" };
        let child = command
            .arg(dir_flag)
            .arg(&self.dir)
            // The default election timeout: a test build on a loaded
            // machine must not lose its primary to a slow heartbeat.
            .env("EBB_REPLICATION__HEARTBEAT", "250ms")
            .env("EBB_LOG__LEVEL", "warn")
            .envs(self.env.iter().map(|(k, v)| (k, v)))
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

    /// The same data directory and port, run without `--replSet`.
    pub fn spawn_standalone(&self) -> Member {
        let mut m = Member {
            port: self.port,
            dir: self.dir.clone(),
            child: None,
            env: self.env.clone(),
        };
        m.launch(false);
        m
    }

    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    pub fn host(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    pub async fn direct(&self) -> Client {
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

pub async fn hello(member: &Member) -> Document {
    member
        .direct()
        .await
        .database("admin")
        .run_command(doc! { "hello": 1 })
        .await
        .unwrap()
}

/// Polls `check` until it holds, for at most 30 s.
pub async fn eventually<F: AsyncFnMut() -> bool>(what: &str, mut check: F) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !check().await {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

pub async fn documents_on(member: &Member) -> Vec<Document> {
    documents_of(member, "c").await
}

pub async fn documents_of(member: &Member, name: &str) -> Vec<Document> {
    let coll: Collection<Document> = member.direct().await.database("t").collection(name);
    let mut found = Vec::new();
    let mut cursor = coll.find(doc! {}).sort(doc! { "_id": 1 }).await.unwrap();
    while cursor.advance().await.unwrap() {
        found.push(cursor.deserialize_current().unwrap());
    }
    found
}

/// Three members, initiated as one set from the first; a driver client
/// that finds the primary by the set's name.
pub async fn initiated_set(root: &std::path::Path) -> (Vec<Member>, Client) {
    initiated_set_with(root, &[]).await
}

/// The set's configuration naming `members`, `_id`s from 0.
pub fn set_config(members: &[Member]) -> Document {
    doc! {
        "_id": "rs0",
        "members": members.iter().enumerate().map(|(i, m)| doc! { "_id": i as i32, "host": m.host() }).collect::<Vec<_>>(),
    }
}

pub async fn initiated_set_with(
    root: &std::path::Path,
    env: &[(&str, &str)],
) -> (Vec<Member>, Client) {
    let members: Vec<Member> = (0..3).map(|_| Member::start_with(root, env)).collect();
    admin(
        &members[0],
        doc! { "replSetInitiate": set_config(&members) },
    )
    .await;
    let seeds: Vec<String> = members.iter().map(Member::host).collect();
    let uri = format!(
        "mongodb://{}/?replicaSet=rs0&serverSelectionTimeoutMS=30000&w=majority",
        seeds.join(",")
    );
    let client = Client::with_uri_str(&uri).await.unwrap();
    (members, client)
}

/// The member that is a writable primary now, once there is one.
pub async fn primary_of(members: &[Member]) -> usize {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        for (i, m) in members.iter().enumerate() {
            if m.child.is_some() && hello(m).await.get_bool("isWritablePrimary").ok() == Some(true)
            {
                return i;
            }
        }
        assert!(Instant::now() < deadline, "no primary was elected");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

pub async fn try_admin(member: &Member, command: Document) -> mongodb::error::Result<Document> {
    member
        .direct()
        .await
        .database("admin")
        .run_command(command)
        .await
}

pub async fn admin(member: &Member, command: Document) -> Document {
    try_admin(member, command).await.unwrap()
}

/// One member, initiated as a set of its own (`rs.initiate()`), and a
/// driver client that reaches it by the set's name.
pub async fn one_member_set(root: &std::path::Path) -> (Member, Client) {
    one_member_set_with(root, &[]).await
}

/// [`one_member_set`] with settings beyond the defaults (`EBB_` variables).
pub async fn one_member_set_with(root: &std::path::Path, env: &[(&str, &str)]) -> (Member, Client) {
    let member = Member::start_with(root, env);
    let config = set_config(std::slice::from_ref(&member));
    admin(&member, doc! { "replSetInitiate": config }).await;
    let uri = format!(
        "mongodb://{}/?replicaSet=rs0&serverSelectionTimeoutMS=30000",
        member.host()
    );
    let client = Client::with_uri_str(&uri).await.unwrap();
    (member, client)
}
