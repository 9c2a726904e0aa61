//! A collection's document validator: the `validator`, `validationLevel`
//! and `validationAction` options as the catalog record stores them,
//! parsed once when the collection's collection handle is built, and the check a
//! write runs before it stores a document.
//!
//! `strict` checks every insert and update; `moderate` lets an update
//! through when the document it replaces already failed validation;
//! `off` checks nothing. `error` refuses a failing write with
//! DocumentValidationFailure and its `errInfo`; `warn` stores it and logs
//! a warning (the details only at trace level: they quote the document).
//! Deletes, TTL expiry among them, are never validated. What the writer
//! does with the answer, and `bypassDocumentValidation`, are the write
//! path's business.

use bson::{Bson, Document, RawBsonRef, RawDocument, RawDocumentBuf, doc};

use super::explain::details;
use crate::error::{Error, ErrorKind, Result};
use crate::query::filter::Filter;

/// Above this size an error's details are replaced by a note, as mongod
/// does (its `maxDocValidationErrorSize`, 12 MiB).
const MAX_ERROR_INFO_BYTES: usize = 12 * 1024 * 1024;

/// Databases whose collections may not have validators.
const INTERNAL_DATABASES: &[&str] = &["admin", "local", "config"];

/// `validationLevel`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ValidationLevel {
    #[default]
    Strict,
    Moderate,
    Off,
}

/// `validationAction`. (`errorAndLog` arrived in MongoDB 8.1; ebb follows
/// 8.0, which refuses it.)
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ValidationAction {
    #[default]
    Error,
    Warn,
}

/// MongoDB's message for a value outside an option's enumeration; `field`
/// is the option's path in the command (`create.validationLevel`).
fn not_in_enumeration(value: &str, field: &str) -> Error {
    Error::bad_value(format!(
        "Enumeration value '{value}' for field '{field}' is not a valid value."
    ))
}

impl ValidationLevel {
    pub fn parse(value: &str, field: &str) -> Result<ValidationLevel> {
        match value {
            "strict" => Ok(ValidationLevel::Strict),
            "moderate" => Ok(ValidationLevel::Moderate),
            "off" => Ok(ValidationLevel::Off),
            _ => Err(not_in_enumeration(value, field)),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            ValidationLevel::Strict => "strict",
            ValidationLevel::Moderate => "moderate",
            ValidationLevel::Off => "off",
        }
    }
}

impl ValidationAction {
    pub fn parse(value: &str, field: &str) -> Result<ValidationAction> {
        match value {
            "error" => Ok(ValidationAction::Error),
            "warn" => Ok(ValidationAction::Warn),
            _ => Err(not_in_enumeration(value, field)),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            ValidationAction::Error => "error",
            ValidationAction::Warn => "warn",
        }
    }
}

/// A collection's validator with its level and action.
#[derive(Debug, Clone)]
pub struct Validator {
    filter: Filter,
    /// The validator as written, for error details.
    source: RawDocumentBuf,
    level: ValidationLevel,
    action: ValidationAction,
}

/// Parses a validator document as `create` and `collMod` give it, refusing
/// what a validator may not hold (`$where`, `$text`) and anything a filter
/// may not hold.
pub fn parse_validator(validator: &RawDocument) -> Result<Filter> {
    refuse_banned(validator)?;
    Filter::parse(validator)
}

/// Puts `validator`, `validationLevel` and `validationAction` after the
/// other collection options, in that order, as mongod lists them.
pub fn order_validation_options(options: &mut Document) {
    for field in ["validator", "validationLevel", "validationAction"] {
        if let Some(value) = options.remove(field) {
            options.insert(field, value);
        }
    }
}

/// Refuses the operators mongod does not allow in a validator, wherever
/// `$and`/`$or`/`$nor` nest them.
fn refuse_banned(filter: &RawDocument) -> Result<()> {
    for (key, value) in filter.iter().filter_map(|item| item.ok()) {
        match (key.as_str(), value) {
            (name @ ("$where" | "$text"), _) => {
                return Err(Error::bad_value(format!(
                    "{name} is not allowed in this context"
                )));
            }
            ("$and" | "$or" | "$nor", RawBsonRef::Array(items)) => {
                for item in items.into_iter().filter_map(|i| i.ok()) {
                    if let RawBsonRef::Document(clause) = item {
                        refuse_banned(clause)?;
                    }
                }
            }
            _ => {}
        }
    }
    Ok(())
}

/// Refuses a validator on a collection that may not have one: system
/// collections and those of the admin, local and config databases.
fn check_namespace(db: &str, name: &str, uuid: &bson::Binary) -> Result<()> {
    let uuid = bson::Uuid::from_bytes(uuid.bytes.as_slice().try_into().unwrap_or([0; 16]));
    if name.starts_with("system.") {
        return Err(Error::new(
            ErrorKind::InvalidOptions,
            format!(
                "Document validators not allowed on system collection {db}.{name} with UUID {uuid}"
            ),
        ));
    }
    if INTERNAL_DATABASES.contains(&db) {
        return Err(Error::new(
            ErrorKind::InvalidOptions,
            format!(
                "Document validators are not allowed on collection {db}.{name} with UUID {uuid} \
                 in the {db} internal database"
            ),
        ));
    }
    Ok(())
}

impl Validator {
    /// The validator a collection's options describe (`None` when there is
    /// none: no `validator`, or an empty one). `db`, `name` and `uuid`
    /// identify the collection for the namespace rules.
    pub fn from_options(
        db: &str,
        name: &str,
        uuid: &bson::Binary,
        options: &Document,
    ) -> Result<Option<Validator>> {
        let level = match options.get("validationLevel") {
            Some(Bson::String(level)) => ValidationLevel::parse(level, "validationLevel")?,
            _ => ValidationLevel::default(),
        };
        let action = match options.get("validationAction") {
            Some(Bson::String(action)) => ValidationAction::parse(action, "validationAction")?,
            _ => ValidationAction::default(),
        };
        let source = match options.get("validator") {
            Some(Bson::Document(validator)) if !validator.is_empty() => {
                RawDocumentBuf::try_from(validator)?
            }
            _ => return Ok(None),
        };
        check_namespace(db, name, uuid)?;
        Ok(Some(Validator {
            filter: parse_validator(&source)?,
            source,
            level,
            action,
        }))
    }

    pub fn level(&self) -> ValidationLevel {
        self.level
    }

    pub fn action(&self) -> ValidationAction {
        self.action
    }

    /// Checks a document a write is about to store in collection `ns`;
    /// `before` is the stored version an update replaces. With action
    /// `warn` a failure is logged and the write goes on.
    pub fn check(&self, ns: &str, doc: &RawDocument, before: Option<&RawDocument>) -> Result<()> {
        // A `$expr` that fails to evaluate on the document fails the write
        // with its error, as in mongod.
        if self.level == ValidationLevel::Off || self.filter.matches(doc)? {
            return Ok(());
        }
        if self.level == ValidationLevel::Moderate
            && let Some(old) = before
            && !self.filter.matches(old).unwrap_or(false)
        {
            return Ok(());
        }
        let info = self.error_info(doc);
        match self.action {
            ValidationAction::Warn => {
                tracing::warn!(ns, "Document would fail validation");
                tracing::trace!(ns, err_info = %info, "validation failure details");
                Ok(())
            }
            ValidationAction::Error => Err(Error::new(
                ErrorKind::DocumentValidationFailure,
                "Document failed validation",
            )
            .with_detail(doc! { "errInfo": info })),
        }
    }

    /// `{failingDocumentId, details}`; a note instead of the details when
    /// they would be too large to send.
    pub fn error_info(&self, doc: &RawDocument) -> Document {
        let id = doc
            .get("_id")
            .ok()
            .flatten()
            .and_then(|id| Bson::try_from(id).ok())
            .unwrap_or(Bson::Null);
        let info = doc! { "failingDocumentId": id.clone(), "details": details(&self.source, doc) };
        let size = RawDocumentBuf::try_from(&info).map_or(usize::MAX, |raw| raw.as_bytes().len());
        if size > MAX_ERROR_INFO_BYTES {
            return doc! { "failingDocumentId": id, "note": "detailed error was too large" };
        }
        info
    }
}

#[cfg(test)]
mod tests {
    use bson::{Binary, doc, rawdoc};

    use super::*;

    fn uuid() -> Binary {
        Binary {
            subtype: bson::spec::BinarySubtype::Uuid,
            bytes: vec![0x11; 16],
        }
    }

    fn validator(options: Document) -> Validator {
        Validator::from_options("app", "c", &uuid(), &options)
            .unwrap()
            .expect("a validator")
    }

    #[test]
    fn no_validator_or_an_empty_one_checks_nothing() {
        for options in [
            doc! {},
            doc! { "validator": {} },
            doc! { "validationLevel": "moderate" },
        ] {
            assert!(
                Validator::from_options("app", "c", &uuid(), &options)
                    .unwrap()
                    .is_none()
            );
        }
    }

    /// jstests/core/doc_validation/doc_validation_options.js.
    #[test]
    fn strict_error_refuses_with_the_failing_id_and_details() {
        let v = validator(doc! { "validator": { "a": 1 } });
        assert!(
            v.check("app.c", &rawdoc! { "_id": 1, "a": 1 }, None)
                .is_ok()
        );
        let e = v
            .check("app.c", &rawdoc! { "_id": 1, "a": 2 }, None)
            .unwrap_err();
        assert_eq!(e.kind, ErrorKind::DocumentValidationFailure);
        assert_eq!(e.message, "Document failed validation");
        assert_eq!(
            *e.detail.unwrap(),
            doc! { "errInfo": {
                "failingDocumentId": 1,
                "details": { "operatorName": "$eq", "specifiedAs": { "a": 1 },
                             "reason": "comparison failed", "consideredValue": 2 },
            } }
        );
        // Strict checks updates of documents that already failed too.
        assert!(
            v.check(
                "app.c",
                &rawdoc! { "_id": 1, "a": 3 },
                Some(&rawdoc! { "_id": 1, "a": 2 })
            )
            .is_err()
        );
    }

    #[test]
    fn moderate_lets_already_invalid_documents_be_updated() {
        let v = validator(doc! { "validator": { "a": 1 }, "validationLevel": "moderate" });
        let bad = rawdoc! { "_id": 1, "a": 2 };
        let good = rawdoc! { "_id": 1, "a": 1 };
        assert!(
            v.check("app.c", &rawdoc! { "_id": 1, "a": 3 }, Some(&bad))
                .is_ok()
        );
        assert!(
            v.check("app.c", &rawdoc! { "_id": 1, "a": 3 }, Some(&good))
                .is_err()
        );
        assert!(
            v.check("app.c", &bad, None).is_err(),
            "inserts are always checked"
        );
    }

    #[test]
    fn warn_and_off_let_every_write_through() {
        let warn = validator(doc! { "validator": { "a": 1 }, "validationAction": "warn" });
        assert_eq!(warn.action(), ValidationAction::Warn);
        assert!(
            warn.check("app.c", &rawdoc! { "_id": 1, "a": 2 }, None)
                .is_ok()
        );
        let off = validator(doc! { "validator": { "a": 1 }, "validationLevel": "off" });
        assert_eq!(off.level(), ValidationLevel::Off);
        assert!(
            off.check("app.c", &rawdoc! { "_id": 1, "a": 2 }, None)
                .is_ok()
        );
    }

    #[test]
    fn option_values_outside_the_enumerations_are_refused() {
        let e = ValidationLevel::parse("sometimes", "create.validationLevel").unwrap_err();
        assert_eq!(
            (e.kind, e.message.as_str()),
            (
                ErrorKind::BadValue,
                "Enumeration value 'sometimes' for field 'create.validationLevel' is not a valid value."
            )
        );
        // errorAndLog is MongoDB 8.1's; 8.0 refuses it.
        let e = ValidationAction::parse("errorAndLog", "collMod.validationAction").unwrap_err();
        assert_eq!(
            e.message,
            "Enumeration value 'errorAndLog' for field 'collMod.validationAction' is not a valid value."
        );
        assert_eq!(
            ValidationLevel::parse("moderate", "x").unwrap().name(),
            "moderate"
        );
        assert_eq!(ValidationAction::parse("warn", "x").unwrap().name(), "warn");
    }

    /// doc_validation_invalid_validators.js.
    #[test]
    fn validators_refuse_what_mongod_refuses() {
        let refused = |v: RawDocumentBuf| parse_validator(&v).unwrap_err();
        let e = refused(rawdoc! { "$where": "this.a == this.b" });
        assert_eq!(
            (e.kind, e.message.as_str()),
            (ErrorKind::BadValue, "$where is not allowed in this context")
        );
        let e = refused(rawdoc! { "$or": [{ "a": 1 }, { "$text": { "$search": "a" } }] });
        assert_eq!(e.message, "$text is not allowed in this context");
        assert_eq!(
            refused(rawdoc! { "$jsonSchema": { "invalid": 1 } }).kind,
            ErrorKind::FailedToParse
        );
        let e = Validator::from_options(
            "admin",
            "c",
            &uuid(),
            &doc! { "validator": { "a": { "$exists": true } } },
        )
        .unwrap_err();
        assert_eq!(e.kind, ErrorKind::InvalidOptions);
        assert_eq!(
            e.message,
            "Document validators are not allowed on collection admin.c with UUID \
             11111111-1111-1111-1111-111111111111 in the admin internal database"
        );
        let e = Validator::from_options(
            "app",
            "system.js",
            &uuid(),
            &doc! { "validator": { "a": 1 } },
        )
        .unwrap_err();
        assert_eq!(e.kind, ErrorKind::InvalidOptions);
    }

    #[test]
    fn oversized_details_become_a_note() {
        let v = validator(doc! { "validator": { "a": { "$size": 0 } } });
        let big = "x".repeat(4 * 1024 * 1024);
        let doc = rawdoc! { "_id": 7, "a": [big.clone(), big.clone(), big.clone(), big] };
        assert_eq!(
            v.error_info(&doc),
            doc! { "failingDocumentId": 7, "note": "detailed error was too large" }
        );
    }
}
