//! `$lookup`: parsing its three forms and joining one input document.
//!
//! The equality form becomes, per input document, a filter on the foreign
//! field: `{foreignField: {$in: [local values]}}` (an array's elements, each
//! compared as the query language compares; an empty, null or missing local
//! value looks for null, which matches null and missing, as MongoDB
//! documents), or an `$or` of `$eq`s when a value is a regex (compared as a
//! value, never as a pattern). That filter goes to [`Sources`], so an index
//! on the foreign field serves each document with point lookups. The
//! pipeline form runs its pipeline per document with the `let` variables
//! bound to that document's values; the concise form does both. The
//! documents one input document joins may not exceed mongod's 100 MiB for
//! an intermediate document.
//!
//! [`Sources`]: super::sources::Sources

use bson::{RawArrayBuf, RawBson, RawBsonRef, RawDocument, RawDocumentBuf};
use ebb_config::limits::MAX_SORT_BYTES;

use super::expr::{Env, Expr, cstr, valid_for_write};
use super::kind::{Lookup, ParseStage, SubPipeline};
use super::project::set_path;
use super::run::Outer;
use super::sub::{Within, check_collection_name, run_over};
use crate::encoding::display::type_name;
use crate::error::{Error, ErrorKind, Result, StageError};
use crate::query::filter::Filter;
use crate::query::path::{LeafArray, any_candidate};

/// The most bytes of documents one input document may join (mongod's
/// `internalLookupStageIntermediateDocumentMaxSizeBytes`).
const MAX_JOINED_BYTES: usize = MAX_SORT_BYTES;

impl Lookup {
    /// Parses a `$lookup` specification in `env`.
    pub(super) fn parse(spec: RawBsonRef<'_>, env: &Env, parse: ParseStage) -> Result<Lookup> {
        let RawBsonRef::Document(d) = spec else {
            return Err(Error::failed_to_parse(format!(
                "the $lookup specification must be an object, not {}",
                type_name(&spec)
            )));
        };
        let mut from = None;
        let mut as_field = None;
        let mut local = None;
        let mut foreign = None;
        let mut lets = None;
        let mut pipeline = None;
        let string = |k: &str, v: RawBsonRef<'_>| match v {
            RawBsonRef::String(s) => Ok(s.to_owned()),
            other => Err(Error::failed_to_parse(format!(
                "$lookup argument '{k}' must be a string, found {}",
                type_name(&other)
            ))),
        };
        for el in d.iter() {
            let (k, v) = el?;
            match k.as_str() {
                "from" => {
                    from = Some(match v {
                        RawBsonRef::String(s) => s.to_owned(),
                        RawBsonRef::Document(ns) => {
                            // mongod takes {db, coll} only for its own
                            // internal namespaces, none of which ebb has.
                            return Err(Error::failed_to_parse(format!(
                                "$lookup with syntax {{from: {{db:<>, coll:<>}},..}} is not \
                                 supported for db: {} and coll: {}",
                                ns.get_str("db").unwrap_or(""),
                                ns.get_str("coll").unwrap_or("")
                            )));
                        }
                        other => {
                            return Err(Error::failed_to_parse(format!(
                                "$lookup 'from' field must be a string or an object, found {}",
                                type_name(&other)
                            )));
                        }
                    })
                }
                "as" => as_field = Some(string("as", v)?),
                "localField" => local = Some(string("localField", v)?),
                "foreignField" => foreign = Some(string("foreignField", v)?),
                "let" => match v {
                    RawBsonRef::Document(l) => lets = Some(l),
                    other => {
                        return Err(Error::failed_to_parse(format!(
                            "$lookup argument 'let' must be an object, is type {}",
                            type_name(&other)
                        )));
                    }
                },
                "pipeline" => match v {
                    RawBsonRef::Array(a) => pipeline = Some(a),
                    other => {
                        return Err(Error::type_mismatch(format!(
                            "$lookup argument 'pipeline' must be an array, is type {}",
                            type_name(&other)
                        )));
                    }
                },
                other => {
                    return Err(Error::failed_to_parse(format!(
                        "unknown argument to $lookup: {other}"
                    )));
                }
            }
        }
        let join = match (local, foreign) {
            (Some(l), Some(f)) => Some((l, f)),
            (None, None) => None,
            _ => {
                return Err(Error::failed_to_parse(
                    "$lookup requires both or neither of 'localField' and 'foreignField' to be \
                     specified",
                ));
            }
        };
        if join.is_none() && pipeline.is_none() {
            return Err(Error::failed_to_parse(
                "$lookup requires either 'pipeline' or both 'localField' and 'foreignField' to \
                 be specified",
            ));
        }
        if lets.is_some() && pipeline.is_none() {
            return Err(Error::failed_to_parse(
                "$lookup with 'let' must also specify 'pipeline'",
            ));
        }
        let Some(as_field) = as_field else {
            return Err(Error::failed_to_parse(
                "must specify 'as' field for a $lookup",
            ));
        };
        check_as_field(&as_field)?;
        // The variables are parsed in the command's environment (they may
        // not see each other) and are pending in the pipeline's.
        let mut bound = Vec::new();
        let mut inner_env = env.clone();
        for el in lets.into_iter().flat_map(|l| l.iter()) {
            let (name, value) = el?;
            valid_for_write(name.as_str())?;
            bound.push((name.as_str().to_owned(), Expr::parse_in(value, env)?));
            inner_env.declare_pending(name.as_str());
        }
        let pipeline = match pipeline {
            Some(p) => Some(SubPipeline::parse(p, &inner_env, Within::Lookup, parse)?),
            None => None,
        };
        let from_documents = pipeline
            .as_ref()
            .is_some_and(SubPipeline::starts_with_documents);
        match &from {
            Some(f) => check_collection_name(f, "$lookup")?,
            None if !from_documents => {
                return Err(Error::failed_to_parse(
                    "must specify 'from' field for a $lookup, or a pipeline starting with \
                     $documents",
                ));
            }
            None => {}
        }
        Ok(Lookup {
            from,
            as_field,
            join,
            lets: bound,
            pipeline,
            uncorrelated: None,
        })
    }

    /// `doc` with the `as` field set to the documents it joins.
    pub(super) fn apply(&mut self, doc: &RawDocument, outer: &Outer<'_>) -> Result<RawDocumentBuf> {
        let joined = self.joined(doc, outer)?;
        let mut bytes = 0usize;
        let mut array = RawArrayBuf::new();
        for d in joined {
            bytes += d.as_bytes().len();
            if bytes > MAX_JOINED_BYTES {
                return Err(Error::new(
                    ErrorKind::Stage(StageError::LookupTooLarge),
                    format!(
                        "Total size of documents in {} matching pipeline's $lookup stage exceeds \
                         {MAX_JOINED_BYTES} bytes",
                        self.from.as_deref().unwrap_or("$documents")
                    ),
                ));
            }
            array.push(d);
        }
        let path: Vec<&str> = self.as_field.split('.').collect();
        set_path(doc, &path, RawBson::Array(array))
    }

    fn joined(&mut self, doc: &RawDocument, outer: &Outer<'_>) -> Result<Vec<RawDocumentBuf>> {
        let overflow = Some(StageError::LookupTooLarge);
        let filter = match &self.join {
            Some((local, foreign)) => Some(join_filter(doc, local, foreign)?),
            None => None,
        };
        let from = self.from.as_deref();
        let Some(pipeline) = &self.pipeline else {
            return run_over(outer, from, filter, Vec::new(), overflow);
        };
        if filter.is_none() && self.lets.is_empty() {
            if let Some(cached) = &self.uncorrelated {
                return Ok(cached.clone());
            }
            let out = run_over(outer, from, None, pipeline.stages.clone(), overflow)?;
            self.uncorrelated = Some(out.clone());
            return Ok(out);
        }
        let stages = if self.lets.is_empty() {
            pipeline.stages.clone()
        } else {
            let mut vars = Vec::with_capacity(self.lets.len());
            for (name, e) in &self.lets {
                vars.push((name.as_str(), e.eval(doc)?));
            }
            pipeline.bound(vars)?
        };
        run_over(outer, from, filter, stages, overflow)
    }
}

/// `as` must be a field path.
pub(super) fn check_as_field(as_field: &str) -> Result<()> {
    if as_field.is_empty() {
        return Err(Error::new(
            ErrorKind::EmptyFieldPath,
            "FieldPath cannot be constructed with empty string",
        ));
    }
    for component in as_field.split('.') {
        if component.is_empty() {
            return Err(Error::new(
                ErrorKind::EmptyFieldPathComponent,
                "FieldPath field names may not be empty strings.",
            ));
        }
        if component.starts_with('$') {
            return Err(Error::new(
                ErrorKind::DollarPrefixedFieldPathComponent,
                format!("FieldPath field names may not start with '$'. Given: {as_field}"),
            ));
        }
    }
    Ok(())
}

/// The filter on `foreign` that finds what `doc`'s `local` values join.
fn join_filter(doc: &RawDocument, local: &str, foreign: &str) -> Result<Filter> {
    let mut values: Vec<RawBsonRef<'_>> = Vec::new();
    let mut failure = None;
    any_candidate(doc, local, LeafArray::Whole, &mut |v| {
        match v {
            Some(RawBsonRef::Array(a)) => {
                for item in a {
                    match item {
                        Ok(item) => values.push(item),
                        Err(e) => failure = Some(Error::from(e)),
                    }
                }
            }
            Some(v) => values.push(v),
            None => {}
        }
        false
    });
    if let Some(e) = failure {
        return Err(e);
    }
    if values.is_empty() {
        values.push(RawBsonRef::Null);
    }
    let mut filter = RawDocumentBuf::new();
    if values
        .iter()
        .any(|v| matches!(v, RawBsonRef::RegularExpression(_)))
    {
        let mut any = RawArrayBuf::new();
        for v in values {
            let mut eq = RawDocumentBuf::new();
            eq.append(cstr("$eq"), v);
            let mut clause = RawDocumentBuf::new();
            clause.append(cstr(foreign), eq);
            any.push(clause);
        }
        filter.append(cstr("$or"), any);
    } else {
        let mut list = RawArrayBuf::new();
        for v in values {
            list.push(v);
        }
        let mut any = RawDocumentBuf::new();
        any.append(cstr("$in"), list);
        filter.append(cstr(foreign), any);
    }
    Filter::parse(&filter)
}

#[cfg(test)]
mod tests {
    use std::cell::{Cell, RefCell};
    use std::collections::HashMap;

    use bson::{Document, rawdoc};

    use super::*;
    use crate::pipeline::{Pipeline, Sources, parse_stage};

    /// Collections in memory; counts the scans asked of it.
    struct Memory {
        colls: HashMap<&'static str, Vec<RawDocumentBuf>>,
        scans: Cell<usize>,
        /// The paths each scan's filter constrains at its top level (what
        /// an index could serve).
        indexable: RefCell<Vec<Vec<String>>>,
    }

    impl Sources for Memory {
        fn scan(
            &self,
            coll: &str,
            filter: Filter,
            each: &mut dyn FnMut(RawDocumentBuf) -> Result<bool>,
        ) -> Result<()> {
            self.scans.set(self.scans.get() + 1);
            let paths = filter.top_level_predicates().into_iter();
            self.indexable
                .borrow_mut()
                .push(paths.map(|(p, _)| p.to_owned()).collect());
            for d in self.colls.get(coll).into_iter().flatten() {
                if filter.matches(d)? && !each(d.clone())? {
                    break;
                }
            }
            Ok(())
        }
    }

    fn regex() -> RawBson {
        RawBson::RegularExpression(bson::Regex {
            pattern: cstr("^a").to_owned(),
            options: cstr("").to_owned(),
        })
    }

    fn memory() -> Memory {
        let foreign = vec![
            rawdoc! { "_id": 1, "k": 1 },
            rawdoc! { "_id": 2, "k": [2, 3] },
            rawdoc! { "_id": 3, "k": null },
            rawdoc! { "_id": 4 },
            rawdoc! { "_id": 5, "k": regex() },
            rawdoc! { "_id": 6, "k": "abc" },
        ];
        Memory {
            colls: HashMap::from([("f", foreign)]),
            scans: Cell::new(0),
            indexable: RefCell::new(Vec::new()),
        }
    }

    fn run(sources: &Memory, stage: RawDocumentBuf, input: Vec<RawDocumentBuf>) -> Vec<Document> {
        let mut p = Pipeline::new(vec![parse_stage(&stage).unwrap()]).with_sources(sources);
        for d in input {
            p.push(d).unwrap();
        }
        p.finish()
            .unwrap()
            .iter()
            .map(|d| Document::try_from(d.as_ref()).unwrap())
            .collect()
    }

    fn joined(d: &Document) -> Vec<i32> {
        d.get_array("j")
            .unwrap()
            .iter()
            .map(|j| j.as_document().unwrap().get_i32("_id").unwrap())
            .collect()
    }

    #[test]
    fn equality_join_follows_mongods_null_array_and_regex_rules() {
        let m = memory();
        let stage = rawdoc! { "$lookup": { "from": "f", "localField": "l", "foreignField": "k", "as": "j" } };
        let input = vec![
            rawdoc! { "l": 1 },
            rawdoc! { "l": [3, 9] },
            rawdoc! {},
            rawdoc! { "l": [] },
            rawdoc! { "l": [null, 1] },
            rawdoc! { "l": regex() },
        ];
        let out = run(&m, stage, input);
        let ids: Vec<Vec<i32>> = out.iter().map(joined).collect();
        assert_eq!(
            ids,
            vec![
                vec![1],
                vec![2],
                vec![3, 4],
                vec![3, 4],
                vec![1, 3, 4],
                // A regex joins the equal regex, never the strings it matches.
                vec![5],
            ]
        );
    }

    #[test]
    fn dotted_as_sets_a_nested_field() {
        let m = memory();
        let stage = rawdoc! { "$lookup": { "from": "f", "localField": "l", "foreignField": "k", "as": "x.y" } };
        let out = run(
            &m,
            stage,
            vec![
                rawdoc! { "l": 1, "x": { "z": 1 } },
                rawdoc! { "l": 1, "x": [1] },
            ],
        );
        assert_eq!(
            out[0].get_document("x").unwrap().get_document("z").ok(),
            None
        );
        assert_eq!(out[0].get_document("x").unwrap().get_i32("z").unwrap(), 1);
        assert_eq!(
            out[0]
                .get_document("x")
                .unwrap()
                .get_array("y")
                .unwrap()
                .len(),
            1
        );
        assert_eq!(
            out[1]
                .get_document("x")
                .unwrap()
                .get_array("y")
                .unwrap()
                .len(),
            1
        );
    }

    #[test]
    fn uncorrelated_pipeline_runs_once() {
        let m = memory();
        let stage = rawdoc! { "$lookup": { "from": "f", "pipeline": [ { "$match": { "_id": { "$lt": 3 } } } ], "as": "j" } };
        let out = run(&m, stage, vec![rawdoc! { "a": 1 }, rawdoc! { "a": 2 }]);
        assert_eq!(
            out.iter().map(joined).collect::<Vec<_>>(),
            vec![vec![1, 2], vec![1, 2]]
        );
        assert_eq!(m.scans.get(), 1);
    }

    #[test]
    fn let_variables_are_bound_per_document() {
        let m = memory();
        let stage = rawdoc! { "$lookup": {
            "from": "f",
            "let": { "top": "$t" },
            "pipeline": [ { "$match": { "$expr": { "$lte": ["$_id", "$$top"] } } } ],
            "as": "j",
        } };
        let out = run(&m, stage, vec![rawdoc! { "t": 1 }, rawdoc! { "t": 3 }]);
        assert_eq!(
            out.iter().map(joined).collect::<Vec<_>>(),
            vec![vec![1], vec![1, 2, 3]]
        );
    }

    #[test]
    fn expr_equality_on_a_variable_reaches_the_scan_as_a_query_predicate() {
        let m = memory();
        let stage = rawdoc! { "$lookup": {
            "from": "f",
            "let": { "want": "$w" },
            "pipeline": [ { "$match": { "$expr": { "$and": [ { "$eq": ["$$want", "$k"] }, { "$gt": ["$_id", 0] } ] } } } ],
            "as": "j",
        } };
        let out = run(
            &m,
            stage,
            vec![rawdoc! { "w": 1 }, rawdoc! { "w": "abc" }, rawdoc! {}],
        );
        // Same answers as the expression alone: arrays holding the value
        // are not joined; a missing variable equals a missing field.
        assert_eq!(
            out.iter().map(joined).collect::<Vec<_>>(),
            vec![vec![1], vec![6], vec![4]]
        );
        let indexable = m.indexable.borrow();
        assert!(indexable[0].contains(&"k".to_owned()), "{indexable:?}");
        // A missing variable implies nothing.
        assert!(!indexable[2].contains(&"k".to_owned()), "{indexable:?}");
    }

    #[test]
    fn a_pending_variable_is_never_folded() {
        // $size of a null would fail while folding; the variable is only
        // known per document, so parsing must not evaluate it.
        let stage = rawdoc! { "$lookup": {
            "from": "f",
            "let": { "arr": "$a" },
            "pipeline": [ { "$project": { "n": { "$size": "$$arr" } } } ],
            "as": "j",
        } };
        assert!(parse_stage(&stage).is_ok());
    }

    #[test]
    fn bad_specifications_are_refused() {
        let kind =
            |spec: RawDocumentBuf| parse_stage(&rawdoc! { "$lookup": spec }).unwrap_err().kind;
        assert_eq!(
            kind(rawdoc! { "from": "f", "as": "j" }),
            ErrorKind::FailedToParse
        );
        assert_eq!(
            kind(rawdoc! { "from": "f", "localField": "a", "as": "j" }),
            ErrorKind::FailedToParse
        );
        assert_eq!(
            kind(rawdoc! { "from": "f", "pipeline": {}, "as": "j" }),
            ErrorKind::TypeMismatch
        );
        assert_eq!(
            kind(rawdoc! { "from": "f", "pipeline": [ { "$merge": "x" } ], "as": "j" }),
            ErrorKind::Stage(StageError::WriteStageInLookup)
        );
        assert_eq!(
            kind(rawdoc! { "pipeline": [], "as": "j" }),
            ErrorKind::FailedToParse
        );
        assert_eq!(
            kind(rawdoc! { "from": "f", "pipeline": [], "as": "$j" }),
            ErrorKind::DollarPrefixedFieldPathComponent
        );
        assert_eq!(
            kind(rawdoc! { "from": "f", "pipeline": [], "as": "a..b" }),
            ErrorKind::EmptyFieldPathComponent
        );
    }
}
