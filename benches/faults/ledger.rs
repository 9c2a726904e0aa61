//! The writers and what they were told. One writer inserts documents with
//! `w: "majority"` and no retries; the other appends to arrays with
//! retryable writes (`retryWrites=true`, `w: "majority"`), so a retry the
//! set applied twice shows as a value appearing twice. Every operation is
//! recorded as acknowledged or unknown (an error or no answer: it may or
//! may not have been applied). At the end every member must hold every
//! acknowledged operation exactly once, and no operation more than once;
//! and its change log (what change streams read) must say each operation
//! it holds exactly once, in the same events as every other member's. A
//! third writer inserts documents already due into a collection with a TTL
//! index: the primary's monitor deletes them through the faults, and each
//! must leave exactly one insert and one delete event.

use std::collections::{BTreeMap, BTreeSet};
use std::future::IntoFuture;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::Result;
use mongodb::bson::{Bson, Document, doc};
use mongodb::{Client, Collection};

use crate::members::Member;

/// The database the writers write to.
pub const DB: &str = "faults";
/// Documents the appending writer spreads its values over.
const ARRAYS: i64 = 8;
/// An operation that takes longer than this is recorded as unknown.
const OP_TIMEOUT: Duration = Duration::from_secs(5);

/// What the writers were told.
#[derive(Default)]
pub struct Ledger {
    pub inserted: Vec<i64>,
    pub inserts_unknown: u64,
    pub appended: Vec<i64>,
    pub appends_unknown: u64,
    /// Documents inserted already due, acknowledged and not.
    pub expiring: Vec<i64>,
    pub expiring_unknown: u64,
}

async fn client(hosts: &[String], retry: bool) -> Result<Client> {
    let uri = format!(
        "mongodb://{}/?replicaSet=rs0&w=majority&retryWrites={retry}\
         &serverSelectionTimeoutMS=3000&connectTimeoutMS=1000",
        hosts.join(",")
    );
    Ok(Client::with_uri_str(uri).await?)
}

/// Runs both writers until `stop`; returns what they were told.
pub async fn write(hosts: Vec<String>, stop: Arc<AtomicBool>) -> Result<Ledger> {
    let inserts = {
        let (hosts, stop) = (hosts.clone(), stop.clone());
        tokio::spawn(async move { insert(&hosts, &stop).await })
    };
    let expiring = {
        let (hosts, stop) = (hosts.clone(), stop.clone());
        tokio::spawn(async move { expire(&hosts, &stop).await })
    };
    let appends = tokio::spawn(async move { append(&hosts, &stop).await });
    let (inserted, inserts_unknown) = inserts.await??;
    let (appended, appends_unknown) = appends.await??;
    let (expiring, expiring_unknown) = expiring.await??;
    Ok(Ledger {
        inserted,
        inserts_unknown,
        appended,
        appends_unknown,
        expiring,
        expiring_unknown,
    })
}

/// The collection whose documents are due as they are inserted.
pub const EXPIRING: &str = "c";
/// Where its TTL index archives what it expires (`archiveTo`).
pub const ARCHIVE: &str = "c_archive";

async fn expire(hosts: &[String], stop: &AtomicBool) -> Result<(Vec<i64>, u64)> {
    let coll: Collection<Document> = client(hosts, false)
        .await?
        .database(DB)
        .collection(EXPIRING);
    let ttl = doc! {
        "createIndexes": EXPIRING,
        "indexes": [{ "key": { "at": 1 }, "name": "at_1", "expireAfterSeconds": 0, "archiveTo": ARCHIVE }],
    };
    // Faults begin at once: the index is built once the set takes it.
    while let Err(e) = coll.client().database(DB).run_command(ttl.clone()).await {
        if stop.load(Ordering::SeqCst) {
            return Err(e.into());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let past = mongodb::bson::DateTime::from_millis(0);
    Ok(record(stop, |n| {
        coll.insert_one(doc! { "_id": n, "at": past }).into_future()
    })
    .await)
}

/// Runs `op` on 1, 2, 3, ... until `stop`; returns the numbers
/// acknowledged and how many were not.
async fn record<F, Fut, T>(stop: &AtomicBool, op: F) -> (Vec<i64>, u64)
where
    F: Fn(i64) -> Fut,
    Fut: std::future::Future<Output = mongodb::error::Result<T>>,
{
    let (mut acked, mut unknown) = (Vec::new(), 0);
    let mut n = 0i64;
    while !stop.load(Ordering::SeqCst) {
        n += 1;
        match tokio::time::timeout(OP_TIMEOUT, op(n)).await {
            Ok(Ok(_)) => acked.push(n),
            _ => {
                unknown += 1;
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
    (acked, unknown)
}

async fn insert(hosts: &[String], stop: &AtomicBool) -> Result<(Vec<i64>, u64)> {
    let coll: Collection<Document> = client(hosts, false).await?.database(DB).collection("a");
    Ok(record(stop, |n| coll.insert_one(doc! { "_id": n }).into_future()).await)
}

async fn append(hosts: &[String], stop: &AtomicBool) -> Result<(Vec<i64>, u64)> {
    let coll: Collection<Document> = client(hosts, true).await?.database(DB).collection("b");
    let push = |n: i64| {
        coll.update_one(doc! { "_id": n % ARRAYS }, doc! { "$push": { "ops": n } })
            .upsert(true)
            .into_future()
    };
    Ok(record(stop, push).await)
}

/// What one member holds of the writers' work.
#[derive(Debug, PartialEq)]
pub struct Held {
    /// The inserted `_id`s.
    pub inserted: BTreeSet<i64>,
    /// How many times each appended value appears.
    pub appended: BTreeMap<i64, u32>,
}

pub async fn held_by(member: &Member) -> Result<Held> {
    let db = member.direct().await?.database(DB);
    let mut inserted = BTreeSet::new();
    let a: Collection<Document> = db.collection("a");
    let mut cursor = a.find(doc! {}).await?;
    while cursor.advance().await? {
        inserted.insert(cursor.deserialize_current()?.get_i64("_id")?);
    }
    let mut appended = BTreeMap::new();
    let b: Collection<Document> = db.collection("b");
    let mut cursor = b.find(doc! {}).await?;
    while cursor.advance().await? {
        let d = cursor.deserialize_current()?;
        for v in d.get_array("ops")? {
            if let Bson::Int64(n) = v {
                *appended.entry(*n).or_insert(0) += 1;
            }
        }
    }
    Ok(Held { inserted, appended })
}

/// How a member's holdings break the ledger's promises.
#[derive(Debug, Default)]
pub struct Breaches {
    pub lost: u64,
    pub twice: u64,
}

pub fn check(ledger: &Ledger, held: &Held) -> Breaches {
    let lost_inserts = ledger
        .inserted
        .iter()
        .filter(|n| !held.inserted.contains(n))
        .count();
    let lost_appends = ledger
        .appended
        .iter()
        .filter(|n| !held.appended.contains_key(n))
        .count();
    Breaches {
        lost: (lost_inserts + lost_appends) as u64,
        twice: held.appended.values().filter(|&&c| c > 1).count() as u64,
    }
}

/// What one member's change log says of the writers' work, read with a
/// change stream from the start of its history.
#[derive(Debug, Default, PartialEq)]
pub struct Changes {
    /// Insert events per inserted `_id`.
    pub inserted: BTreeMap<i64, u32>,
    /// Events (the upsert's insert, then updates) per appended value.
    pub appended: BTreeMap<i64, u32>,
    /// Insert and delete events per `_id` of the expiring collection.
    pub expiring: BTreeMap<i64, (u32, u32)>,
    /// Every event's resume token, in order.
    pub tokens: Vec<String>,
}

pub async fn changes_of(member: &Member) -> Result<Changes> {
    let db = member.direct().await?.database(DB);
    let start = mongodb::bson::Timestamp {
        time: 1,
        increment: 0,
    };
    let reply = db
        .run_command(doc! {
            "aggregate": 1,
            "pipeline": [{ "$changeStream": {
                "startAtOperationTime": start,
                // The catalog's changes too: every member's must be the same.
                "showExpandedEvents": true,
            } }],
            "cursor": {},
        })
        .await?;
    let mut cursor = reply.get_document("cursor")?.clone();
    let id = cursor.get_i64("id")?;
    let mut out = Changes::default();
    let mut batch = cursor.get_array("firstBatch")?.clone();
    loop {
        if batch.is_empty() {
            break;
        }
        for event in &batch {
            let Bson::Document(e) = event else { continue };
            out.tokens
                .push(e.get_document("_id")?.get_str("_data")?.to_owned());
            let coll = e.get_document("ns")?.get_str("coll").unwrap_or_default();
            match (coll, e.get_str("operationType")?) {
                ("a", "insert") => {
                    let n = e.get_document("documentKey")?.get_i64("_id")?;
                    *out.inserted.entry(n).or_insert(0) += 1;
                }
                ("b", "insert") => {
                    for v in e.get_document("fullDocument")?.get_array("ops")? {
                        if let Bson::Int64(n) = v {
                            *out.appended.entry(*n).or_insert(0) += 1;
                        }
                    }
                }
                (EXPIRING, kind @ ("insert" | "delete")) => {
                    let n = e.get_document("documentKey")?.get_i64("_id")?;
                    let seen = out.expiring.entry(n).or_insert((0, 0));
                    match kind {
                        "insert" => seen.0 += 1,
                        _ => seen.1 += 1,
                    }
                }
                ("b", "update") => {
                    let set = e
                        .get_document("updateDescription")?
                        .get_document("updatedFields")?;
                    for (_, v) in set {
                        if let Bson::Int64(n) = v {
                            *out.appended.entry(*n).or_insert(0) += 1;
                        }
                    }
                }
                _ => {}
            }
        }
        let more = db
            .run_command(doc! { "getMore": id, "collection": "$cmd.aggregate", "maxTimeMS": 200 })
            .await?;
        cursor = more.get_document("cursor")?.clone();
        batch = cursor.get_array("nextBatch")?.clone();
    }
    Ok(out)
}

/// Whether a member's change log says each operation it holds exactly once.
pub fn log_matches(held: &Held, changes: &Changes) -> bool {
    let inserts_once = held.inserted.len() == changes.inserted.len()
        && changes
            .inserted
            .iter()
            .all(|(n, c)| *c == 1 && held.inserted.contains(n));
    inserts_once && held.appended == changes.appended
}

/// Whether each document inserted due has exactly one insert and one
/// delete event (and nothing else does).
pub fn expiry_once(changes: &Changes) -> bool {
    changes.expiring.values().all(|seen| *seen == (1, 1))
}

/// How many times each document of the expiring collection is in its
/// archive on `member`, by `_id`.
pub async fn archived_on(member: &Member) -> Result<BTreeMap<i64, u32>> {
    let coll: Collection<Document> = member.direct().await?.database(DB).collection(ARCHIVE);
    let mut out = BTreeMap::new();
    let mut cursor = coll.find(doc! {}).await?;
    while cursor.advance().await? {
        let n = cursor
            .deserialize_current()?
            .get_document("doc")?
            .get_i64("_id")?;
        *out.entry(n).or_insert(0) += 1;
    }
    Ok(out)
}

/// Whether the archive holds each document inserted due (as the change
/// log's insert events say) exactly once, and nothing else.
pub fn archived_once(changes: &Changes, archived: &BTreeMap<i64, u32>) -> bool {
    archived.len() == changes.expiring.len()
        && archived
            .iter()
            .all(|(n, c)| *c == 1 && changes.expiring.contains_key(n))
}

/// Documents of the expiring collection still stored on `member`.
pub async fn unexpired_on(member: &Member) -> Result<u64> {
    let db = member.direct().await?.database(DB);
    // Due documents are hidden from reads: ask what is stored.
    let stats = db.run_command(doc! { "validate": EXPIRING }).await?;
    Ok(stats
        .get_i64("nrecords")
        .or_else(|_| stats.get_i32("nrecords").map(i64::from))? as u64)
}
