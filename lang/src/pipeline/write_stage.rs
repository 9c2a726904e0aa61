//! The stages that write a pipeline's output into a collection: `$out`
//! (the output replaces the target's documents) and `$merge` (each output
//! document is folded into the target, matched on its `on` fields). This
//! module parses them with mongod's rules and codes and turns each `$merge`
//! output document into the update statement that folds it in; running
//! the writes (collection writers, the temporary collection `$out` renames
//! over its target) is the node's, since storage owns no collections.
//!
//! A write stage stands last in a command's own pipeline; anywhere else
//! parsing refuses it (`sub::not_last`, 40601; the nested-pipeline checks
//! in `sub.rs` have their own codes).

use bson::{RawArrayBuf, RawBson, RawBsonRef, RawDocument, RawDocumentBuf};

use super::expr::{Env, Expr, cstr};
use crate::encoding::display::type_name;
use crate::error::{Error, ErrorKind, Result, StageError};
use crate::update::UpdateSpec;

/// Where a write stage writes: `db` is the command's own when not named.
#[derive(Debug, Clone, PartialEq)]
pub struct Target {
    pub db: Option<String>,
    pub coll: String,
}

/// A parsed `$out` or `$merge`.
#[derive(Debug, Clone)]
pub enum WriteStage {
    Out(Target),
    Merge(Merge),
}

/// What `$merge` does with an output document that matches a target one.
#[derive(Debug, Clone)]
pub enum WhenMatched {
    Replace,
    KeepExisting,
    Merge,
    Fail,
    /// An update pipeline run on the matched document, with `$$new` (and
    /// the stage's `let` variables) bound per output document.
    Pipeline(RawArrayBuf),
}

/// What `$merge` does with an output document that matches none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WhenNotMatched {
    Insert,
    Discard,
    Fail,
}

/// A parsed `$merge`.
#[derive(Debug, Clone)]
pub struct Merge {
    pub into: Target,
    /// The fields an output document is matched on (`_id` unless named).
    pub on: Vec<String>,
    pub when_matched: WhenMatched,
    pub when_not_matched: WhenNotMatched,
    /// The `let` variables of a pipeline `whenMatched`, evaluated against
    /// each output document.
    lets: Vec<(String, Expr)>,
}

/// How one `$merge` output document is written.
#[derive(Debug)]
pub enum MergeWrite {
    /// Insert it (`whenMatched: "fail"`: a match is a duplicate key).
    Insert(RawDocumentBuf),
    /// Update the document matching `filter` with `update`, inserting
    /// when none matches and `upsert` says so.
    Update {
        filter: RawDocumentBuf,
        update: UpdateSpec,
        upsert: bool,
    },
}

/// The stage name of `stage` when it is a write stage.
pub fn write_stage_name(stage: &RawDocument) -> Option<&str> {
    match stage.iter().next() {
        Some(Ok((name, _))) if name == "$out" || name == "$merge" => Some(name.as_str()),
        _ => None,
    }
}

/// Parses a write stage document (`{$out: …}` or `{$merge: …}`) in `env`.
pub fn parse_write_stage(stage: &RawDocument, env: &Env) -> Result<WriteStage> {
    let mut fields = stage.iter();
    let (name, spec) = match fields.next() {
        Some(el) => el?,
        None => return Err(Error::failed_to_parse("a pipeline stage must not be empty")),
    };
    match name.as_str() {
        "$out" => Ok(WriteStage::Out(parse_out(spec)?)),
        "$merge" => Ok(WriteStage::Merge(Merge::parse(spec, env)?)),
        other => Err(Error::failed_to_parse(format!(
            "{other} is not a stage that writes"
        ))),
    }
}

fn stage_error(e: StageError, message: impl Into<String>) -> Error {
    Error::new(ErrorKind::Stage(e), message)
}

fn parse_out(spec: RawBsonRef<'_>) -> Result<Target> {
    let d = match spec {
        RawBsonRef::String(coll) => {
            return Ok(Target {
                db: None,
                coll: coll.to_owned(),
            });
        }
        RawBsonRef::Document(d) => d,
        other => {
            return Err(stage_error(
                StageError::OutArgumentType,
                format!(
                    "$out only supports a string or object argument, not {}",
                    type_name(&other)
                ),
            ));
        }
    };
    let (mut db, mut coll) = (None, None);
    for el in d {
        let (k, v) = el?;
        let k = k.as_str();
        match (k, v) {
            ("db", RawBsonRef::String(s)) => db = Some(s.to_owned()),
            ("coll", RawBsonRef::String(s)) => coll = Some(s.to_owned()),
            ("db" | "coll", other) => {
                return Err(Error::new(
                    ErrorKind::TypeMismatch,
                    format!(
                        "BSON field '$out.{k}' is the wrong type '{}', expected type 'string'",
                        type_name(&other)
                    ),
                ));
            }
            ("timeseries", _) => {
                return Err(Error::not_implemented("$out into a time-series collection"));
            }
            _ => {
                return Err(Error::new(
                    ErrorKind::UnknownField,
                    format!("BSON field '$out.{k}' is an unknown field."),
                ));
            }
        }
    }
    let missing = |f: &str| {
        Error::new(
            ErrorKind::MissingField,
            format!("BSON field '$out.{f}' is missing but a required field"),
        )
    };
    Ok(Target {
        db: Some(db.ok_or_else(|| missing("db"))?),
        coll: coll.ok_or_else(|| missing("coll"))?,
    })
}

impl Target {
    /// The target's `(db, collection)`, `default_db` standing in for an
    /// unnamed database, refused where mongod refuses a writing stage:
    /// `system.*` collections and the internal databases.
    pub fn resolve(&self, default_db: &str, stage: &str) -> Result<(String, String)> {
        let db = self.db.as_deref().unwrap_or(default_db);
        let out = stage == "$out";
        if self.coll.starts_with("system.") {
            return Err(if out {
                stage_error(
                    StageError::OutSpecialCollection,
                    format!("Can't $out to special collection: {}", self.coll),
                )
            } else {
                stage_error(
                    StageError::MergeSpecialCollection,
                    format!("Cannot $merge to special collection: {}", self.coll),
                )
            });
        }
        if matches!(db, "admin" | "config" | "local") {
            return Err(if out {
                stage_error(
                    StageError::OutInternalDatabase,
                    format!("Can't $out to internal database: {db}"),
                )
            } else {
                stage_error(
                    StageError::MergeInternalDatabase,
                    format!("Cannot $merge to internal database: {db}"),
                )
            });
        }
        Ok((db.to_owned(), self.coll.clone()))
    }
}

impl Merge {
    fn parse(spec: RawBsonRef<'_>, env: &Env) -> Result<Merge> {
        let d = match spec {
            RawBsonRef::String(coll) => {
                return Ok(Merge {
                    into: Target {
                        db: None,
                        coll: coll.to_owned(),
                    },
                    on: vec!["_id".to_owned()],
                    when_matched: WhenMatched::Merge,
                    when_not_matched: WhenNotMatched::Insert,
                    lets: Vec::new(),
                });
            }
            RawBsonRef::Document(d) => d,
            other => {
                return Err(stage_error(
                    StageError::MergeArgumentType,
                    format!(
                        "$merge only supports a string or object argument, not {}",
                        type_name(&other)
                    ),
                ));
            }
        };
        let mut into = None;
        let mut on = None;
        let mut lets = None;
        let mut when_matched = WhenMatched::Merge;
        let mut when_not_matched = WhenNotMatched::Insert;
        for el in d {
            let (k, v) = el?;
            let k = k.as_str();
            match k {
                "into" => into = Some(parse_into(v)?),
                "on" => on = Some(parse_on(v)?),
                "let" => match v {
                    RawBsonRef::Document(l) => lets = Some(l),
                    other => {
                        return Err(Error::new(
                            ErrorKind::TypeMismatch,
                            format!(
                                "BSON field '$merge.let' is the wrong type '{}', expected type \
                                 'object'",
                                type_name(&other)
                            ),
                        ));
                    }
                },
                "whenMatched" => when_matched = parse_when_matched(v)?,
                "whenNotMatched" => when_not_matched = parse_when_not_matched(v)?,
                _ => {
                    return Err(Error::new(
                        ErrorKind::UnknownField,
                        format!("BSON field '$merge.{k}' is an unknown field."),
                    ));
                }
            }
        }
        let Some(into) = into else {
            return Err(Error::new(
                ErrorKind::MissingField,
                "BSON field '$merge.into' is missing but a required field",
            ));
        };
        if !supported(&when_matched, when_not_matched) {
            return Err(stage_error(
                StageError::MergeModes,
                format!(
                    "Combination of $merge modes 'whenMatched: {}' and 'whenNotMatched: {}' is \
                     not supported",
                    when_matched.name(),
                    when_not_matched.name()
                ),
            ));
        }
        let lets = match (&when_matched, lets) {
            (WhenMatched::Pipeline(pipeline), lets) => {
                let lets = pipeline_lets(lets, when_not_matched, env)?;
                // The pipeline is parsed now, with every variable pending,
                // so a bad stage fails before anything is written.
                let mut checked = env.clone();
                for (name, _) in &lets {
                    checked.declare_pending(name);
                }
                UpdateSpec::parse_in(RawBsonRef::Array(pipeline), &[], &checked)?;
                lets
            }
            (_, None) => Vec::new(),
            (mode, Some(_)) => {
                return Err(stage_error(
                    StageError::MergeLetWithoutPipeline,
                    format!(
                        "Cannot use 'let' variables with 'whenMatched: {}' mode",
                        mode.name()
                    ),
                ));
            }
        };
        Ok(Merge {
            into,
            on: on.unwrap_or_else(|| vec!["_id".to_owned()]),
            when_matched,
            when_not_matched,
            lets,
        })
    }

    /// Whether the stage matches on `_id` alone (its target needs no other
    /// unique index).
    pub fn on_id_only(&self) -> bool {
        self.on == ["_id"]
    }

    /// How the output document `doc` is written, in `env` (the command's
    /// variables).
    pub fn write_for(&self, doc: &RawDocument, env: &Env) -> Result<MergeWrite> {
        // mongod gives a document without `_id` a new ObjectId when `_id`
        // is among the `on` fields (a `$project` that dropped it, say).
        let with_id;
        let doc = if self.on.iter().any(|f| f == "_id") && doc.get("_id")?.is_none() {
            let mut d = RawDocumentBuf::new();
            d.append(cstr("_id"), crate::decided::object_id());
            for el in doc {
                let (k, v) = el?;
                d.append(k, v);
            }
            with_id = d;
            &*with_id
        } else {
            doc
        };
        let filter = self.on_filter(doc)?;
        let upsert = self.when_not_matched == WhenNotMatched::Insert;
        let update = match &self.when_matched {
            WhenMatched::Fail => return Ok(MergeWrite::Insert(doc.to_owned())),
            WhenMatched::Replace => UpdateSpec::Replacement(doc.to_owned()),
            WhenMatched::Merge => operator_update("$set", doc)?,
            WhenMatched::KeepExisting => operator_update("$setOnInsert", doc)?,
            WhenMatched::Pipeline(pipeline) => {
                let mut bound = env.clone();
                for (name, e) in &self.lets {
                    bound.bind(name, e.eval(doc)?);
                }
                UpdateSpec::parse_in(RawBsonRef::Array(pipeline), &[], &bound)?
            }
        };
        Ok(MergeWrite::Update {
            filter,
            update,
            upsert,
        })
    }

    /// `{f: value, …}` for each `on` field of `doc`: each must hold a value
    /// that is not null, undefined or an array, with no array on the way.
    fn on_filter(&self, doc: &RawDocument) -> Result<RawDocumentBuf> {
        let mut filter = RawDocumentBuf::new();
        for field in &self.on {
            let value = on_value(doc, field)?;
            let mut eq = RawDocumentBuf::new();
            eq.append(cstr("$eq"), value);
            filter.append(cstr(field), eq);
        }
        Ok(filter)
    }
}

/// The value of the `on` field `path` in `doc`.
fn on_value(doc: &RawDocument, path: &str) -> Result<RawBson> {
    let missing = || {
        stage_error(
            StageError::MergeOnFieldMissing,
            format!(
                "$merge write error: 'on' field '{path}' cannot be missing, null, undefined or \
                 an array"
            ),
        )
    };
    let mut current = doc;
    let mut parts = path.split('.').peekable();
    while let Some(part) = parts.next() {
        let value = current.get(part)?.ok_or_else(missing)?;
        if parts.peek().is_none() {
            return match value {
                RawBsonRef::Null | RawBsonRef::Undefined => Err(missing()),
                RawBsonRef::Array(_) => Err(stage_error(
                    StageError::MergeOnFieldArray,
                    format!("$merge write error: 'on' field '{path}' cannot be an array"),
                )),
                v => Ok(RawBson::from(v)),
            };
        }
        match value {
            RawBsonRef::Document(d) => current = d,
            _ => return Err(missing()),
        }
    }
    Err(missing())
}

/// `{op: doc}` as an operator update.
fn operator_update(op: &str, doc: &RawDocument) -> Result<UpdateSpec> {
    let mut u = RawDocumentBuf::new();
    u.append(cstr(op), doc.to_owned());
    UpdateSpec::parse(RawBsonRef::Document(&u), &[])
}

/// The `let` variables of a pipeline `whenMatched`: `{new: "$$ROOT"}`
/// when none are given; `new` may only be `$$ROOT`, and is added when the
/// stage inserts.
fn pipeline_lets(
    given: Option<&RawDocument>,
    when_not_matched: WhenNotMatched,
    env: &Env,
) -> Result<Vec<(String, Expr)>> {
    let root = || Expr::parse_in(RawBsonRef::String("$$ROOT"), env);
    let Some(given) = given else {
        return Ok(vec![("new".to_owned(), root()?)]);
    };
    let mut lets = Vec::new();
    let mut has_new = false;
    for el in given {
        let (name, value) = el?;
        let name = name.as_str();
        if name == "new" {
            if value != RawBsonRef::String("$$ROOT") {
                return Err(stage_error(
                    StageError::MergeLetRedefinesNew,
                    "'let' may not define a value for the reserved 'new' variable other than \
                     '$$ROOT'",
                ));
            }
            has_new = true;
        }
        super::expr::valid_for_write(name)?;
        lets.push((name.to_owned(), Expr::parse_in(value, env)?));
    }
    if !has_new && when_not_matched == WhenNotMatched::Insert {
        lets.push(("new".to_owned(), root()?));
    }
    Ok(lets)
}

fn parse_into(v: RawBsonRef<'_>) -> Result<Target> {
    match v {
        RawBsonRef::String(coll) => Ok(Target {
            db: None,
            coll: coll.to_owned(),
        }),
        RawBsonRef::Document(d) => {
            let (mut db, mut coll) = (None, None);
            for el in d {
                let (k, v) = el?;
                let k = k.as_str();
                match (k, v) {
                    ("db", RawBsonRef::String(s)) => db = Some(s.to_owned()),
                    ("coll", RawBsonRef::String(s)) => coll = Some(s.to_owned()),
                    _ => {
                        return Err(stage_error(
                            StageError::MergeIntoType,
                            format!(
                                "$merge 'into' field must specify a 'db' and a 'coll' string, \
                                 found '{k}'"
                            ),
                        ));
                    }
                }
            }
            let coll = coll.ok_or_else(|| {
                Error::new(
                    ErrorKind::MissingField,
                    "BSON field '$merge.into.coll' is missing but a required field",
                )
            })?;
            Ok(Target { db, coll })
        }
        other => Err(stage_error(
            StageError::MergeIntoType,
            format!(
                "$merge 'into' field must be either a string or an object, but found {}",
                type_name(&other)
            ),
        )),
    }
}

fn parse_on(v: RawBsonRef<'_>) -> Result<Vec<String>> {
    let fields = match v {
        RawBsonRef::String(s) => vec![s.to_owned()],
        RawBsonRef::Array(a) => {
            let mut fields = Vec::new();
            for el in a {
                match el? {
                    RawBsonRef::String(s) => fields.push(s.to_owned()),
                    other => {
                        return Err(stage_error(
                            StageError::MergeOnElementType,
                            format!(
                                "$merge 'on' array elements must be strings, but found {}",
                                type_name(&other)
                            ),
                        ));
                    }
                }
            }
            if fields.is_empty() {
                return Err(stage_error(
                    StageError::MergeOnEmpty,
                    "If explicitly specifying $merge 'on', must include at least one field",
                ));
            }
            fields
        }
        other => {
            return Err(stage_error(
                StageError::MergeOnType,
                format!(
                    "$merge 'on' field must be either a string or an array of strings, but \
                     found {}",
                    type_name(&other)
                ),
            ));
        }
    };
    for (i, f) in fields.iter().enumerate() {
        if f.is_empty()
            || f.contains('\0')
            || f.split('.').any(|p| p.is_empty() || p.starts_with('$'))
        {
            return Err(Error::new(
                ErrorKind::FailedToParse,
                format!("'{f}' is not a valid field path for $merge 'on'"),
            ));
        }
        if fields[..i].contains(f) {
            return Err(stage_error(
                StageError::MergeOnDuplicate,
                format!("Found a duplicate field '{f}'"),
            ));
        }
    }
    Ok(fields)
}

fn parse_when_matched(v: RawBsonRef<'_>) -> Result<WhenMatched> {
    match v {
        RawBsonRef::String(s) => match s {
            "replace" => Ok(WhenMatched::Replace),
            "keepExisting" => Ok(WhenMatched::KeepExisting),
            "merge" => Ok(WhenMatched::Merge),
            "fail" => Ok(WhenMatched::Fail),
            other => Err(Error::new(
                ErrorKind::BadValue,
                format!(
                    "Enumeration value '{other}' for field '$merge.whenMatched' is not a valid \
                     value."
                ),
            )),
        },
        RawBsonRef::Array(a) => Ok(WhenMatched::Pipeline(a.to_owned())),
        other => Err(stage_error(
            StageError::MergeWhenMatchedType,
            format!(
                "$merge 'whenMatched' field must be either a string or an array, but found {}",
                type_name(&other)
            ),
        )),
    }
}

fn parse_when_not_matched(v: RawBsonRef<'_>) -> Result<WhenNotMatched> {
    match v {
        RawBsonRef::String("insert") => Ok(WhenNotMatched::Insert),
        RawBsonRef::String("discard") => Ok(WhenNotMatched::Discard),
        RawBsonRef::String("fail") => Ok(WhenNotMatched::Fail),
        RawBsonRef::String(other) => Err(Error::new(
            ErrorKind::BadValue,
            format!(
                "Enumeration value '{other}' for field '$merge.whenNotMatched' is not a valid \
                 value."
            ),
        )),
        other => Err(Error::new(
            ErrorKind::TypeMismatch,
            format!(
                "BSON field '$merge.whenNotMatched' is the wrong type '{}', expected type 'string'",
                type_name(&other)
            ),
        )),
    }
}

/// The mode pairs mongod supports.
fn supported(when_matched: &WhenMatched, when_not_matched: WhenNotMatched) -> bool {
    match when_matched {
        WhenMatched::Replace | WhenMatched::Merge | WhenMatched::Pipeline(_) => true,
        WhenMatched::KeepExisting | WhenMatched::Fail => when_not_matched == WhenNotMatched::Insert,
    }
}

impl WhenMatched {
    fn name(&self) -> &'static str {
        match self {
            WhenMatched::Replace => "replace",
            WhenMatched::KeepExisting => "keepExisting",
            WhenMatched::Merge => "merge",
            WhenMatched::Fail => "fail",
            WhenMatched::Pipeline(_) => "pipeline",
        }
    }
}

impl WhenNotMatched {
    fn name(self) -> &'static str {
        match self {
            WhenNotMatched::Insert => "insert",
            WhenNotMatched::Discard => "discard",
            WhenNotMatched::Fail => "fail",
        }
    }
}

#[cfg(test)]
mod tests {
    use bson::rawdoc;

    use super::*;

    fn env() -> Env {
        Env::new(bson::DateTime::from_millis(0))
    }

    fn merge(spec: RawDocumentBuf) -> Result<Merge> {
        match parse_write_stage(&rawdoc! { "$merge": spec }, &env())? {
            WriteStage::Merge(m) => Ok(m),
            WriteStage::Out(_) => unreachable!("parsed a $merge"),
        }
    }

    fn stage_kind(e: Error) -> Option<StageError> {
        match e.kind {
            ErrorKind::Stage(s) => Some(s),
            _ => None,
        }
    }

    #[test]
    fn unsupported_mode_pairs_are_refused() {
        for (m, n) in [
            ("fail", "fail"),
            ("fail", "discard"),
            ("keepExisting", "fail"),
        ] {
            let e =
                merge(rawdoc! { "into": "t", "whenMatched": m, "whenNotMatched": n }).unwrap_err();
            assert_eq!(stage_kind(e), Some(StageError::MergeModes), "{m}/{n}");
        }
    }

    #[test]
    fn on_fields_are_checked_as_mongod_checks_them() {
        let e = merge(rawdoc! { "into": "t", "on": 2.5 }).unwrap_err();
        assert_eq!(stage_kind(e), Some(StageError::MergeOnType));
        let e = merge(rawdoc! { "into": "t", "on": [] }).unwrap_err();
        assert_eq!(stage_kind(e), Some(StageError::MergeOnEmpty));
        let e = merge(rawdoc! { "into": "t", "on": ["a", 1] }).unwrap_err();
        assert_eq!(stage_kind(e), Some(StageError::MergeOnElementType));
        let e = merge(rawdoc! { "into": "t", "on": ["a", "a"] }).unwrap_err();
        assert_eq!(stage_kind(e), Some(StageError::MergeOnDuplicate));
    }

    #[test]
    fn on_values_must_be_present_scalars() {
        let m = merge(rawdoc! { "into": "t", "on": "song.artist" }).unwrap();
        for doc in [
            rawdoc! { "_id": 0 },
            rawdoc! { "_id": 0, "song": null },
            rawdoc! { "_id": 0, "song": { "artist": null } },
            rawdoc! { "_id": 0, "song": [{ "artist": "x" }] },
        ] {
            let e = m.write_for(&doc, &env()).unwrap_err();
            assert_eq!(
                stage_kind(e),
                Some(StageError::MergeOnFieldMissing),
                "{doc:?}"
            );
        }
        let e = m
            .write_for(&rawdoc! { "song": { "artist": ["a"] } }, &env())
            .unwrap_err();
        assert_eq!(stage_kind(e), Some(StageError::MergeOnFieldArray));
        assert!(
            m.write_for(&rawdoc! { "song": { "artist": "Illenium" } }, &env())
                .is_ok()
        );
    }

    #[test]
    fn a_document_without_id_gets_one_when_merging_on_id() {
        let m = merge(rawdoc! { "into": "t", "whenMatched": "replace" }).unwrap();
        let MergeWrite::Update { filter, update, .. } =
            m.write_for(&rawdoc! { "a": 1 }, &env()).unwrap()
        else {
            panic!("a replace merge updates");
        };
        assert!(
            filter
                .get_document("_id")
                .unwrap()
                .get_object_id("$eq")
                .is_ok()
        );
        let UpdateSpec::Replacement(d) = update else {
            panic!("a replacement");
        };
        assert!(d.get_object_id("_id").is_ok() && d.get_i32("a").unwrap() == 1);
    }

    #[test]
    fn let_needs_a_pipeline_and_new_stays_root() {
        let e = merge(rawdoc! { "into": "t", "let": { "x": 1 } }).unwrap_err();
        assert_eq!(stage_kind(e), Some(StageError::MergeLetWithoutPipeline));
        let e = merge(rawdoc! {
            "into": "t", "let": { "new": 1 }, "whenMatched": [{ "$set": { "a": 1 } }]
        })
        .unwrap_err();
        assert_eq!(stage_kind(e), Some(StageError::MergeLetRedefinesNew));
    }

    #[test]
    fn a_pipeline_merge_sees_the_output_document_as_new() {
        let m = merge(rawdoc! {
            "into": "t", "whenMatched": [{ "$set": { "total": { "$add": ["$total", "$$new.n"] } } }]
        })
        .unwrap();
        let MergeWrite::Update { upsert, .. } =
            m.write_for(&rawdoc! { "_id": 1, "n": 2 }, &env()).unwrap()
        else {
            panic!("a pipeline merge updates");
        };
        assert!(upsert);
    }

    #[test]
    fn out_takes_a_name_or_a_namespace() {
        let WriteStage::Out(t) = parse_write_stage(&rawdoc! { "$out": "t" }, &env()).unwrap()
        else {
            panic!("an $out");
        };
        assert_eq!(t.resolve("d", "$out").unwrap(), ("d".into(), "t".into()));
        let e = parse_write_stage(&rawdoc! { "$out": 1 }, &env()).unwrap_err();
        assert_eq!(stage_kind(e), Some(StageError::OutArgumentType));
        let e = Target {
            db: Some("admin".into()),
            coll: "t".into(),
        }
        .resolve("d", "$out")
        .unwrap_err();
        assert_eq!(stage_kind(e), Some(StageError::OutInternalDatabase));
    }
}
