//! `findAndModify` / `findandmodify`: find one document, update or remove
//! it, and return it (before or after).

use bson::{Bson, RawBsonRef, doc};
use ebb_actors::collection::ModifyOne;
use ebb_lang::pipeline::Env;
use ebb_lang::query::find_projection::FindProjection;
use ebb_lang::update::UpdateSpec;
use ebb_storage::statement::FindAndModify;

use super::write::{array_filters, send_write};
use super::{Request, check_collection_name, ok, query};
use crate::args::Args;
use crate::error::{CommandError, CommandResult};

const ARGS: &[&str] = &[
    "query",
    "sort",
    "remove",
    "update",
    "new",
    "fields",
    "upsert",
    "bypassDocumentValidation",
    "collation",
    "arrayFilters",
    "hint",
    "let",
];

/// A parsed `findAndModify`.
pub struct FindAndModifyCommand {
    pub collection: String,
    pub request: FindAndModify,
    /// `fields`: applied to the returned document.
    pub projection: Option<FindProjection>,
    pub remove: bool,
    /// `j: true`: durable before acknowledged.
    pub sync: bool,
}

impl FindAndModifyCommand {
    pub fn parse(args: &Args<'_>, db: &str, env: &Env) -> CommandResult<FindAndModifyCommand> {
        let name = args.collection()?;
        check_collection_name(db, name)?;
        let remove = args.bool("remove")?.unwrap_or(false);
        let return_new = args.bool("new")?.unwrap_or(false);
        let upsert = args.bool("upsert")?.unwrap_or(false);
        let filters = array_filters(args.get("arrayFilters"), "findAndModify.arrayFilters")?;
        let has_filters = !matches!(args.get("arrayFilters"), None | Some(RawBsonRef::Null));
        let update = match args.get("update") {
            None | Some(RawBsonRef::Null) => None,
            Some(RawBsonRef::Array(_)) if has_filters => {
                return Err(CommandError::failed_to_parse(
                    "Cannot specify arrayFilters and a pipeline update",
                ));
            }
            Some(u @ (RawBsonRef::Document(_) | RawBsonRef::Array(_))) => {
                Some(UpdateSpec::parse_in(u, &filters, env)?)
            }
            Some(other) => {
                return Err(args.wrong_type("update", &other, "types '[object, array]'"));
            }
        };
        match (remove, &update) {
            (true, Some(_)) => {
                return Err(CommandError::failed_to_parse(
                    "Cannot specify both an update and remove=true",
                ));
            }
            (false, None) => {
                return Err(CommandError::failed_to_parse(
                    "Either an update or remove=true must be specified",
                ));
            }
            (true, None) if return_new => {
                return Err(CommandError::failed_to_parse(
                    "Cannot specify both new=true and remove=true; 'remove' always returns the deleted document",
                ));
            }
            (true, None) if upsert => {
                return Err(CommandError::failed_to_parse(
                    "Cannot specify both upsert=true and remove=true",
                ));
            }
            (true, None) if has_filters => {
                return Err(CommandError::failed_to_parse(
                    "Cannot specify arrayFilters and remove=true",
                ));
            }
            _ => {}
        }
        let filter_doc = args.doc("query")?.map(|d| d.to_owned()).unwrap_or_default();
        let projection = query::find_projection(args.doc("fields")?, Some(&filter_doc), env)?;
        let request = FindAndModify {
            filter: query::filter(Some(&filter_doc), env)?,
            collation: query::collation(args.get("collation"))?,
            filter_doc,
            sort: query::sort(args.doc("sort")?)?,
            hint: query::hint(args.get("hint"))?,
            update,
            return_new,
            upsert,
            bypass_validation: args.bool("bypassDocumentValidation")?.unwrap_or(false),
            deadline: query::deadline(args)?,
            interrupt: crate::ops::current(),
        };
        Ok(FindAndModifyCommand {
            collection: name.to_owned(),
            request,
            projection,
            remove,
            sync: args.journaled(),
        })
    }
}

pub async fn find_and_modify(req: Request) -> CommandResult {
    let args = Args::parse(&req.body, ARGS)?;
    let FindAndModifyCommand {
        collection,
        request,
        projection,
        remove,
        sync,
    } = FindAndModifyCommand::parse(&args, &req.db, &query::env(&req, &args)?)?;
    let upsert = request.upsert;
    let out = send_write(&req, &collection, upsert, || ModifyOne {
        request: request.clone(),
        sync,
        decided: req.decided.clone(),
    })
    .await?;
    let out = out.unwrap_or_default();
    let value = match (out.value, &projection) {
        (Some(d), Some(p)) => {
            Bson::Document(bson::Document::try_from(p.apply(&d, &request.filter)?)?)
        }
        (Some(d), None) => Bson::Document(bson::Document::try_from(d)?),
        (None, _) => Bson::Null,
    };
    let mut last = doc! { "n": out.n as i32 };
    if !remove {
        last.insert("updatedExisting", out.updated_existing);
    }
    if let Some(id) = out.upserted {
        last.insert("upserted", id);
    }
    ok(doc! { "lastErrorObject": last, "value": value })
}
