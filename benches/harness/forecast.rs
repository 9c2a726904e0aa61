//! `forecast`: how long `expiryForecast` takes on a large TTL index, as a
//! ratio to counting the same index range with `count` in the same run.
//!
//! Loads `--docs` documents whose dates spread evenly over the next week
//! (TTL index `{at: 1}`, `expireAfterSeconds` 60), then times five
//! forecasts and five counts of `{at: {$lte: a week from now}}` hinted to
//! the index, which read the same keys. Reports the medians, their ratio,
//! up to when the forecast's counts are whole (it counts a fixed number of
//! keys and estimates the rest of the week from samples), and its total
//! for the week against the documents loaded, which all fall due in it
//! but the last two minutes' worth.

use std::time::Instant;

use anyhow::Result;
use mongodb::bson::{DateTime, doc};

use crate::args::Args;
use crate::daemon::Target;
use crate::report::Outcome;
use crate::scenarios::{connect, index};
use crate::workload::{load_encoded, now_ms, percentile, spread_over};

const WEEK_MS: i64 = 7 * 24 * 3_600_000;
const RUNS: usize = 5;

pub async fn run(args: &Args) -> Result<Outcome> {
    let n = args.docs;
    let target = Target::start(args.uri.as_deref(), args.ebbd.as_ref(), &[])?;
    let (client, c) = connect(&target, "forecast").await?;
    index(&c, doc! { "at": 1 }, Some(60)).await?;
    let start = now_ms() + 120_000;
    let batches = spread_over(n, start, WEEK_MS);
    eprintln!("  loading {n} documents dated over the next week");
    load_encoded(&c, batches, args.clients).await?;
    let db = client.database("bench");
    let (mut forecasts, mut counts) = (Vec::new(), Vec::new());
    let mut last = None;
    for _ in 0..RUNS {
        let t = Instant::now();
        let reply = db
            .run_command(doc! { "expiryForecast": "forecast" })
            .await?;
        forecasts.push(t.elapsed().as_secs_f64() * 1000.0);
        last = Some(reply);
        let week = DateTime::from_millis(now_ms() + WEEK_MS);
        let t = Instant::now();
        db.run_command(doc! {
            "count": "forecast", "query": { "at": { "$lte": week } }, "hint": { "at": 1 },
        })
        .await?;
        counts.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    forecasts.sort_by(f64::total_cmp);
    counts.sort_by(f64::total_cmp);
    let reply = last.expect("five runs");
    let shown = reply.get_array("ttlIndexes")?[0]
        .as_document()
        .expect("an index")
        .clone();
    let hours = shown.get_document("nextWeek")?.get_array("perHour")?;
    let total: i64 = shown.get_i64("due")? + hours.iter().filter_map(|h| h.as_i64()).sum::<i64>();
    let through = shown.get_datetime("countedThrough")?.timestamp_millis();
    let forecast_ms = percentile(&forecasts, 50.0);
    let count_ms = percentile(&counts, 50.0);
    let mut out = Outcome::new("forecast");
    out.add("docs", n, "");
    out.add("forecast_median_ms", forecast_ms, "ms");
    out.add("count_median_ms", count_ms, "ms");
    out.add("ratio_forecast_to_count", forecast_ms / count_ms, "x");
    out.add("forecast_week_total", total, "");
    out.add("forecast_week_total_to_docs", total as f64 / n as f64, "x");
    out.add(
        "forecast_whole_for_hours",
        (through - reply.get_datetime("now")?.timestamp_millis()) as f64 / 3_600_000.0,
        "h",
    );
    out.add("forecast_exact", shown.get_bool("exact")?, "");
    out.add("forecast_estimated", shown.get_bool("estimated")?, "");
    Ok(out)
}
