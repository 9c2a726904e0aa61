//! `text`: text search on N short posts (ten words each, drawn from a
//! vocabulary of 20,000 made-up words, so a word is in about 500 posts of
//! a million). Loads the posts into a collection without an index and into
//! one with a text index (the insert rate with it against without, in one
//! run), then times two-term `$text` searches at random words, sorted by
//! score with a limit of 20, as a search box asks, reporting the median and
//! the 99th percentile of the client's round trip and how many posts each
//! search matched.

use std::time::Instant;

use anyhow::{Result, bail};
use mongodb::bson::{Document, doc};

use crate::args::Args;
use crate::daemon::Target;
use crate::report::Outcome;
use crate::scenarios::connect;
use crate::workload::{Rng, load, percentile};

const QUERIES: usize = 200;
const VOCABULARY: u64 = 20_000;
const WORDS_PER_POST: usize = 10;

/// Word `n` of the vocabulary: letters spelled from its number, so no two
/// words share a stem.
fn word(n: u64) -> String {
    const SYLLABLES: [&str; 16] = [
        "ka", "lo", "mi", "nu", "pe", "ra", "si", "to", "vu", "ze", "bo", "di", "fa", "gu", "ho",
        "ji",
    ];
    let mut out = String::from("q");
    let mut rest = n;
    for _ in 0..4 {
        out.push_str(SYLLABLES[(rest % 16) as usize]);
        rest /= 16;
    }
    out.push('x');
    out
}

fn post(i: usize) -> Document {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ (i as u64).wrapping_mul(0x2545_F491_4F6C_DD1D) | 1);
    let body: Vec<String> = (0..WORDS_PER_POST)
        .map(|_| word(rng.next() % VOCABULARY))
        .collect();
    doc! { "_id": i as i64, "body": body.join(" "), "n": (i % 7) as i32 }
}

pub async fn run(args: &Args) -> Result<Outcome> {
    let n = args.docs;
    let target = Target::start(args.uri.as_deref(), args.ebbd.as_ref(), &[])?;
    let (client, plain) = connect(&target, "text_plain").await?;
    let db = client.database("bench");
    eprintln!("  loading {n} posts without a text index");
    let (plain_time, _) = load(&plain, n, args.clients, post).await?;
    let (_, posts) = connect(&target, "text").await?;
    db.run_command(doc! {
        "createIndexes": "text",
        "indexes": [{ "key": { "body": "text" }, "name": "body_text" }],
    })
    .await?;
    eprintln!("  loading {n} posts with a text index");
    let (text_time, _) = load(&posts, n, args.clients, post).await?;
    let mut rng = Rng(0x5DEE_CE66_D1CE_4E5B);
    let mut took = Vec::with_capacity(QUERIES);
    let mut matched = 0u64;
    let score = doc! { "score": { "$meta": "textScore" } };
    for _ in 0..QUERIES {
        let terms = format!(
            "{} {}",
            word(rng.next() % VOCABULARY),
            word(rng.next() % VOCABULARY)
        );
        let filter = doc! { "$text": { "$search": &terms } };
        let t = Instant::now();
        let mut cursor = posts
            .find(filter.clone())
            .projection(score.clone())
            .sort(score.clone())
            .limit(20)
            .await?;
        let mut found = 0;
        while cursor.advance().await? {
            found += 1;
        }
        took.push(t.elapsed().as_secs_f64() * 1000.0);
        if found == 0 {
            bail!("no post holds '{terms}'");
        }
        matched += posts.count_documents(filter).await?;
    }
    took.sort_by(f64::total_cmp);
    let (plain_rate, text_rate) = (
        n as f64 / plain_time.as_secs_f64(),
        n as f64 / text_time.as_secs_f64(),
    );
    let mut out = Outcome::new("text");
    out.add("posts", n, "");
    out.add("insert_rate_without_index", plain_rate.round(), "docs/s");
    out.add("insert_rate_with_text_index", text_rate.round(), "docs/s");
    out.add("ratio_insert_with_to_without", text_rate / plain_rate, "x");
    out.add("two_terms_top_20_p50_ms", percentile(&took, 50.0), "ms");
    out.add("two_terms_top_20_p99_ms", percentile(&took, 99.0), "ms");
    out.add(
        "two_terms_mean_matched",
        (matched as f64 / QUERIES as f64).round(),
        "docs",
    );
    Ok(out)
}
