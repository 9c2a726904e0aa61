//! `count` and `distinct`.

use bson::{Bson, RawBsonRef, doc};
use ebb_lang::encoding::cmp::Cmp;
use ebb_lang::encoding::keycode;
use ebb_storage::plan::exec::QueryCursor;
use ebb_storage::plan::{self, QuerySpec};

use super::{Request, check_collection_name, ok, query};
use crate::args::Args;
use crate::error::{CommandError, CommandResult, codes};

pub async fn count(req: Request) -> CommandResult {
    let args = Args::parse(
        &req.body,
        &["query", "limit", "skip", "hint", "collation", "fields"],
    )?;
    let name = args.collection()?;
    check_collection_name(&req.db, name)?;
    let filter = query::filter(args.doc("query")?, &query::env_now(&req))?;
    let collation = query::collation(args.get("collation"))?;
    let hint = query::hint(args.get("hint"))?;
    let skip = args.i64("skip")?.unwrap_or(0).max(0) as u64;
    let max_time = query::max_time(&args)?;
    let limit = args
        .i64("limit")?
        .map(|l| l.unsigned_abs())
        .filter(|l| *l > 0);
    let Some(entry) = req.node.collection(&req.db, name) else {
        return ok(doc! { "n": 0 });
    };
    let spec = QuerySpec {
        filter,
        sort: None,
        hint,
    }
    .collated(query::resolve(&collation, &entry.coll.meta)?);
    let plan = plan::plan(&entry.coll.meta, &spec)?;
    let set = entry.coll.clone();
    let n = req
        .node
        .scan(move |snap| {
            let n = if spec.filter.is_empty() && spec.hint.is_none() && max_time.is_none() {
                entry.count(snap)?.saturating_sub(skip)
            } else {
                let mut cursor = QueryCursor::new(&set, plan, spec.filter, None, skip, None)?
                    .with_time_limit(max_time);
                let mut n = 0u64;
                cursor.for_each(snap, &mut |_| {
                    n += 1;
                    true
                })?;
                n
            };
            Ok(limit.map_or(n, |l| n.min(l)))
        })
        .await?;
    ok(doc! { "n": n as i64 as i32 })
}

pub async fn distinct(req: Request) -> CommandResult {
    let args = Args::parse(&req.body, &["key", "query", "collation", "hint"])?;
    let name = args.collection()?;
    let Some(key) = args.str("key")? else {
        return Err(args.missing("key"));
    };
    if key.is_empty() || key.split('.').any(str::is_empty) {
        return Err(CommandError::bad_value(
            "FieldPath cannot be constructed with empty string",
        ));
    }
    let key = key.to_owned();
    let filter = query::filter(args.doc("query")?, &query::env_now(&req))?;
    let collation = query::collation(args.get("collation"))?;
    let hint = query::hint(args.get("hint"))?;
    let max_time = query::max_time(&args)?;
    let Some(entry) = req.node.collection(&req.db, name) else {
        return ok(doc! { "values": [] });
    };
    let collation = query::resolve(&collation, &entry.coll.meta)?;
    let spec = QuerySpec {
        filter,
        sort: None,
        hint,
    }
    .collated(collation.clone());
    let plan = plan::plan(&entry.coll.meta, &spec)?;
    let set = entry.coll.clone();
    let values = req
        .node
        .scan(move |snap| {
            let mut cursor =
                QueryCursor::new(&set, plan, spec.filter, None, 0, None)?.with_time_limit(max_time);
            let mut values: Vec<bson::RawBson> = Vec::new();
            // Values are distinct by their key bytes in the collation: the
            // key encoding is equal exactly when the values compare equal.
            let mut seen = std::collections::HashSet::new();
            let mut failure = None;
            cursor.for_each(snap, &mut |found| {
                let found_values = ebb_lang::query::path::index_values(&found.doc, &key);
                for v in found_values.values {
                    if matches!(v, RawBsonRef::Undefined) {
                        continue;
                    }
                    let mut k = Vec::new();
                    keycode::encode_collated(&mut k, v, collation.as_deref());
                    if seen.insert(k) {
                        values.push(bson::RawBson::from(v));
                    }
                }
                if values.len() > 1_000_000 {
                    failure = Some(CommandError::new(
                        codes::DISTINCT_TOO_BIG,
                        "distinct too big, 16mb cap",
                    ));
                    return false;
                }
                true
            })?;
            if let Some(e) = failure {
                return Err(e);
            }
            let cmp = Cmp::new(collation.as_deref());
            values.sort_by(|a, b| cmp.values(a.as_raw_bson_ref(), b.as_raw_bson_ref()));
            Ok(values)
        })
        .await?;
    let values: Vec<Bson> = values
        .into_iter()
        .map(Bson::try_from)
        .collect::<Result<_, _>>()?;
    ok(doc! { "values": values })
}
