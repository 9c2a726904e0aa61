//! The `aggregation` scenario: a `$group` over `--docs`
//! documents into 1,000 groups (count, sum and average), and a `$lookup`
//! of 100,000 of them into a 1,000-document `users` collection, each timed
//! as the median of `--runs` runs; then the same queries in PostgreSQL on
//! the same rows in the same run (`GROUP BY`; a correlated subquery that
//! builds each row's array of users, as `$lookup` builds `as`), and the
//! ebb/PostgreSQL ratios. PostgreSQL is skipped, and the report says so,
//! when it is not installed (`benches/install-peers.sh`).

use std::time::Instant;

use anyhow::{Result, bail};
use mongodb::bson::{Document, doc};
use mongodb::{Client, Collection};

use crate::args::Args;
use crate::daemon::Target;
use crate::peers::postgres;
use crate::report::Outcome;
use crate::workload::load;

const GROUPS: i64 = 1000;
const JOINED: i64 = 100_000;

/// Fact `i`: key `i % 1000`, value `i / 2`.
fn fact(i: usize) -> Document {
    doc! { "_id": i as i64, "k": i as i64 % GROUPS, "v": i as f64 * 0.5 }
}

fn group_pipeline() -> Vec<Document> {
    vec![doc! { "$group": {
        "_id": "$k",
        "n": { "$sum": 1 },
        "total": { "$sum": "$v" },
        "mean": { "$avg": "$v" },
    } }]
}

fn lookup_pipeline() -> Vec<Document> {
    vec![
        doc! { "$match": { "_id": { "$lt": JOINED } } },
        doc! { "$lookup": { "from": "users", "localField": "k", "foreignField": "_id", "as": "user" } },
        doc! { "$match": { "user.0": { "$exists": true } } },
        doc! { "$count": "joined" },
    ]
}

const PG_GROUP: &str = "SELECT k, count(*), sum(v), avg(v) FROM facts GROUP BY k";
const PG_LOOKUP: &str = "SELECT count(*) FROM (SELECT f.id, (SELECT array_agg(u.name) \
     FROM users u WHERE u.id = f.k) AS joined FROM facts f WHERE f.id < 100000) s \
     WHERE s.joined IS NOT NULL";

/// The documents `pipeline` returns on `coll`.
async fn aggregate(coll: &Collection<Document>, pipeline: Vec<Document>) -> Result<Vec<Document>> {
    let mut cursor = coll.aggregate(pipeline).await?;
    let mut out = Vec::new();
    while cursor.advance().await? {
        out.push(cursor.deserialize_current()?);
    }
    Ok(out)
}

/// The median of `runs` timings of `f`, in seconds.
async fn median<F, Fut>(runs: usize, mut f: F) -> Result<f64>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<()>>,
{
    let mut times = Vec::new();
    for _ in 0..runs.max(1) {
        let started = Instant::now();
        f().await?;
        times.push(started.elapsed().as_secs_f64());
    }
    times.sort_by(f64::total_cmp);
    Ok(times[times.len() / 2])
}

pub async fn run(args: &Args) -> Result<Outcome> {
    let n = args.docs;
    let runs = args.runs;
    let target = Target::start(args.uri.as_deref(), args.ebbd.as_ref(), &[])?;
    let client = Client::with_uri_str(&target.uri).await?;
    let db = client.database("bench");
    db.drop().await?;
    let facts = db.collection::<Document>("facts");
    let users = db.collection::<Document>("users");
    eprintln!("loading {n} facts and {GROUPS} users");
    load(&facts, n, args.clients, fact).await?;
    users
        .insert_many((0..GROUPS).map(|i| doc! { "_id": i, "name": format!("user {i}") }))
        .await?;

    eprintln!("$group, {runs} runs");
    let group_s = median(runs, || async {
        let groups = aggregate(&facts, group_pipeline()).await?;
        if groups.len() as i64 != GROUPS.min(n as i64) {
            bail!("$group returned {} groups", groups.len());
        }
        Ok(())
    })
    .await?;
    eprintln!("$lookup, {runs} runs");
    let joined = JOINED.min(n as i64);
    let lookup_s = median(runs, || async {
        let out = aggregate(&facts, lookup_pipeline()).await?;
        let got = out
            .first()
            .and_then(|d| d.get_i32("joined").ok())
            .unwrap_or(0);
        if i64::from(got) != joined {
            bail!("$lookup joined {got} documents, expected {joined}");
        }
        Ok(())
    })
    .await?;

    let mut out = Outcome::new("aggregation");
    out.add("documents", n, "");
    out.add("groups", GROUPS, "");
    out.add("runs", runs, "");
    out.add("group_ebb_s", group_s, "s");
    out.add("group_docs_per_s", (n as f64 / group_s).round(), "/s");
    out.add("lookup_docs", joined, "");
    out.add("lookup_ebb_s", lookup_s, "s");

    match postgres::cluster().await? {
        None => {
            eprintln!("  postgres is not installed; skipped (benches/install-peers.sh)");
            out.add("postgres", "skipped: not installed", "");
        }
        Some((_server, port)) => {
            let pg = postgres::connect(port).await?;
            eprintln!("loading the same rows into postgres");
            pg.batch_execute(&format!(
                "CREATE TABLE facts (id bigint PRIMARY KEY, k bigint NOT NULL, v float8 NOT NULL);
                 INSERT INTO facts SELECT i, i % {GROUPS}, i * 0.5 FROM generate_series(0, {}) i;
                 CREATE TABLE users (id bigint PRIMARY KEY, name text NOT NULL);
                 INSERT INTO users SELECT i, 'user ' || i FROM generate_series(0, {}) i;",
                n as i64 - 1,
                GROUPS - 1
            ))
            .await?;
            // Statements sent together run as one transaction; VACUUM
            // cannot.
            pg.batch_execute("VACUUM ANALYZE").await?;
            let pg_group_s = median(runs, || async {
                let rows = pg.query(PG_GROUP, &[]).await?;
                if rows.len() as i64 != GROUPS.min(n as i64) {
                    bail!("GROUP BY returned {} rows", rows.len());
                }
                Ok(())
            })
            .await?;
            let pg_lookup_s = median(runs, || async {
                let got: i64 = pg.query_one(PG_LOOKUP, &[]).await?.get(0);
                if got != joined {
                    bail!("the join counted {got} rows, expected {joined}");
                }
                Ok(())
            })
            .await?;
            out.add("group_postgres_s", pg_group_s, "s");
            out.add("ratio_group_ebb_to_postgres", group_s / pg_group_s, "x");
            out.add("lookup_postgres_s", pg_lookup_s, "s");
            out.add("ratio_lookup_ebb_to_postgres", lookup_s / pg_lookup_s, "x");
        }
    }
    Ok(out)
}
