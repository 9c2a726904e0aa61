//! `create` with `viewOn`, and `drop` of a view: a view's document in
//! `system.views` written or deleted through the collection's writer (and
//! on a set, through the log, as the command that carries it).

use std::sync::Arc;

use bson::{RawArrayBuf, RawBsonRef, RawDocumentBuf, doc, rawdoc};
use ebb_actors::collection::{DeleteDocs, InsertDocs};
use ebb_lang::encoding::collation::{Choice, Collation};
use ebb_lang::pipeline::{parse_stage_in, write_stage_name};
use ebb_storage::statement::DeleteStatement;

use super::catalog::{MAX_DEPTH, VIEWS, View, depth_exceeded, list};
use crate::args::Args;
use crate::command::write::send_write_in;
use crate::command::{Request, ok, query};
use crate::error::{CommandError, CommandResult, codes};

/// The options `create` takes for a view.
const VIEW_ARGS: &[&str] = &["viewOn", "pipeline", "collation"];

/// `create` of a view.
pub async fn create(req: &Request, args: &Args<'_>, name: &str) -> CommandResult {
    for el in req.body.iter().skip(1) {
        let (k, _) = el?;
        let k = k.as_str();
        if !VIEW_ARGS.contains(&k) && !crate::args::GENERIC.contains(&k) {
            return Err(CommandError::invalid_options(format!(
                "the option '{k}' cannot be used with 'viewOn'"
            )));
        }
    }
    let view_on = match args.get("viewOn") {
        Some(RawBsonRef::String(s)) if !s.is_empty() => s,
        Some(RawBsonRef::String(_)) => {
            return Err(CommandError::bad_value("'viewOn' cannot be empty"));
        }
        Some(other) => return Err(args.wrong_type("viewOn", &other, "type 'string'")),
        None => return Err(args.missing("viewOn")),
    };
    crate::command::check_collection_name(&req.db, view_on)?;
    let env = query::env_now(req);
    let mut pipeline = RawArrayBuf::new();
    let mut stages = Vec::new();
    if let Some(given) = args.array("pipeline")? {
        for (i, stage) in given.into_iter().enumerate() {
            let RawBsonRef::Document(stage) = stage? else {
                return Err(CommandError::new(
                    codes::TYPE_MISMATCH,
                    "Each element of the 'pipeline' array must be an object",
                ));
            };
            if let Some(writes) = write_stage_name(stage) {
                return Err(CommandError::new(
                    codes::OPTION_NOT_SUPPORTED_ON_VIEW,
                    format!(
                        "The aggregation stage {writes} in location {i} of the pipeline cannot be \
                         used in the view definition of {}.{name} because it writes to disk",
                        req.db
                    ),
                ));
            }
            parse_stage_in(stage, &env)?;
            pipeline.push(stage.to_owned());
            stages.push(stage.to_owned());
        }
    }
    let collation = match args.get("collation") {
        Some(c) => Collation::parse(c)?.map(|c| c.to_document()),
        None => None,
    };
    let views = list(&req.node, &req.db).await?;
    if req.node.collection(&req.db, name).is_some() || views.iter().any(|v| v.name == name) {
        return Err(CommandError::new(
            codes::NAMESPACE_EXISTS,
            format!("Namespace {}.{name} already exists", req.db),
        ));
    }
    let mut chain = views.clone();
    chain.push(View {
        name: name.to_owned(),
        view_on: view_on.to_owned(),
        pipeline: stages,
        collation: collation.clone(),
    });
    let mut on = view_on;
    let mut seen = vec![name];
    while let Some(next) = chain.iter().find(|v| v.name == on) {
        if seen.contains(&next.name.as_str()) {
            return Err(CommandError::new(
                codes::GRAPH_CONTAINS_CYCLE,
                format!("View cycle detected: {} -> {on}", seen.join(" -> ")),
            ));
        }
        seen.push(&next.name);
        on = &next.view_on;
    }
    if seen.len() > MAX_DEPTH {
        return Err(depth_exceeded());
    }
    let mut definition = rawdoc! {
        "_id": format!("{}.{name}", req.db),
        "viewOn": view_on,
        "pipeline": pipeline,
    };
    if let Some(c) = collation {
        definition.append(
            bson::cstr!("collation"),
            RawDocumentBuf::try_from(&c).map_err(|_| CommandError::internal())?,
        );
    }
    let docs = Arc::new(vec![definition]);
    let outcome = send_write_in(&req.node, &req.db, VIEWS, true, req.applying(), || {
        InsertDocs {
            docs: Arc::clone(&docs),
            ordered: true,
            sync: args.journaled(),
            bypass_validation: false,
            prepared: false,
            decided: req.decided.clone(),
        }
    })
    .await?
    .ok_or_else(CommandError::internal)?;
    if let Some(e) = outcome.errors.into_iter().next() {
        return Err(match e.error.kind {
            ebb_storage::ErrorKind::DuplicateKey => CommandError::new(
                codes::NAMESPACE_EXISTS,
                format!("Namespace {}.{name} already exists", req.db),
            ),
            _ => CommandError::from(e.error),
        });
    }
    ok(doc! {})
}

/// `drop` of a view: its definition goes; `None` when `name` is no view.
pub async fn drop(req: &Request, name: &str) -> CommandResult<Option<RawDocumentBuf>> {
    if !list(&req.node, &req.db)
        .await?
        .iter()
        .any(|v| v.name == name)
    {
        return Ok(None);
    }
    let id = format!("{}.{name}", req.db);
    let filter = ebb_lang::query::Filter::parse(&rawdoc! { "_id": id.as_str() })?;
    send_write_in(&req.node, &req.db, VIEWS, false, req.applying(), || {
        DeleteDocs {
            statements: vec![DeleteStatement {
                filter: filter.clone(),
                collation: Choice::default(),
                just_one: true,
                hint: None,
                deadline: None,
                interrupt: None,
            }],
            ordered: true,
            sync: false,
            decided: req.decided.clone(),
        }
    })
    .await?;
    Ok(Some(ok(doc! { "ns": id })?))
}
