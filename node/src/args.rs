//! Typed access to a command's arguments, with MongoDB's errors for
//! unknown fields, missing fields and wrong types.
//!
//! Each command states its full argument list; anything else is rejected
//! with `BSON field '<cmd>.<field>' is an unknown field.` (40415), except
//! the generic arguments every driver may attach ([`GENERIC`]).

use bson::{RawArray, RawBsonRef, RawDocument};

use crate::error::{CommandError, CommandResult, codes};

/// Arguments any command may carry (sessions, read/write concern, API
/// version, …). They are accepted and, where they matter, honoured by the
/// command itself.
pub const GENERIC: &[&str] = &[
    "$db",
    "$readPreference",
    "$clusterTime",
    "$client",
    "$audit",
    "lsid",
    "txnNumber",
    "autocommit",
    "startTransaction",
    "readConcern",
    "writeConcern",
    "maxTimeMS",
    "comment",
    "apiVersion",
    "apiStrict",
    "apiDeprecationErrors",
    "mayBypassWriteBlocking",
];

/// MongoDB's name of a BSON type, as used in error messages.
pub fn type_name(v: &RawBsonRef<'_>) -> &'static str {
    match v {
        RawBsonRef::Double(_) => "double",
        RawBsonRef::String(_) => "string",
        RawBsonRef::Document(_) => "object",
        RawBsonRef::Array(_) => "array",
        RawBsonRef::Binary(_) => "binData",
        RawBsonRef::Undefined => "undefined",
        RawBsonRef::ObjectId(_) => "objectId",
        RawBsonRef::Boolean(_) => "bool",
        RawBsonRef::DateTime(_) => "date",
        RawBsonRef::Null => "null",
        RawBsonRef::RegularExpression(_) => "regex",
        RawBsonRef::DbPointer(_) => "dbPointer",
        RawBsonRef::JavaScriptCode(_) => "javascript",
        RawBsonRef::Symbol(_) => "symbol",
        RawBsonRef::JavaScriptCodeWithScope(_) => "javascriptWithScope",
        RawBsonRef::Int32(_) => "int",
        RawBsonRef::Timestamp(_) => "timestamp",
        RawBsonRef::Int64(_) => "long",
        RawBsonRef::Decimal128(_) => "decimal",
        RawBsonRef::MaxKey => "maxKey",
        RawBsonRef::MinKey => "minKey",
    }
}

/// A number as i64 if it is integral (doubles and decimals truncate as
/// MongoDB's `safeNumberLong` does for in-range values).
pub fn as_i64(v: RawBsonRef<'_>) -> Option<i64> {
    match v {
        RawBsonRef::Int32(n) => Some(i64::from(n)),
        RawBsonRef::Int64(n) => Some(n),
        RawBsonRef::Double(d) if d.is_finite() && d.abs() < 9.2e18 => Some(d.trunc() as i64),
        RawBsonRef::Decimal128(d) => d
            .to_string()
            .parse::<f64>()
            .ok()
            .filter(|f| f.is_finite())
            .map(|f| f.trunc() as i64),
        _ => None,
    }
}

/// A number as f64.
pub fn as_f64(v: RawBsonRef<'_>) -> Option<f64> {
    match v {
        RawBsonRef::Int32(n) => Some(f64::from(n)),
        RawBsonRef::Int64(n) => Some(n as f64),
        RawBsonRef::Double(d) => Some(d),
        RawBsonRef::Decimal128(d) => d.to_string().parse().ok(),
        _ => None,
    }
}

pub fn is_number(v: &RawBsonRef<'_>) -> bool {
    matches!(
        v,
        RawBsonRef::Int32(_)
            | RawBsonRef::Int64(_)
            | RawBsonRef::Double(_)
            | RawBsonRef::Decimal128(_)
    )
}

/// A command's arguments.
pub struct Args<'a> {
    cmd: &'a str,
    doc: &'a RawDocument,
}

impl<'a> Args<'a> {
    /// Checks that `doc` (whose first key is the command name) has no
    /// fields outside `known` and [`GENERIC`].
    pub fn parse(doc: &'a RawDocument, known: &[&str]) -> CommandResult<Self> {
        let mut iter = doc.iter();
        let cmd = match iter.next() {
            Some(Ok((k, _))) => k.as_str(),
            _ => return Err(CommandError::failed_to_parse("empty command")),
        };
        for el in iter {
            let (k, _) = el?;
            let k = k.as_str();
            if !known.contains(&k) && !GENERIC.contains(&k) {
                return Err(CommandError::new(
                    codes::UNKNOWN_FIELD,
                    format!("BSON field '{cmd}.{k}' is an unknown field."),
                ));
            }
        }
        Ok(Args { cmd, doc })
    }

    /// For commands whose other fields are free-form (`currentOp`'s filter):
    /// no unknown-field check.
    pub fn open(doc: &'a RawDocument) -> CommandResult<Self> {
        match doc.iter().next() {
            Some(Ok((cmd, _))) => Ok(Args {
                cmd: cmd.as_str(),
                doc,
            }),
            _ => Err(CommandError::failed_to_parse("empty command")),
        }
    }

    pub fn command_name(&self) -> &'a str {
        self.cmd
    }

    /// The command's own value (`{find: "c"}` → `"c"`).
    pub fn command_value(&self) -> RawBsonRef<'a> {
        self.doc
            .iter()
            .next()
            .and_then(|e| e.ok())
            .map(|(_, v)| v)
            .expect("parse checked the first field")
    }

    pub fn raw(&self) -> &'a RawDocument {
        self.doc
    }

    pub fn get(&self, field: &str) -> Option<RawBsonRef<'a>> {
        self.doc.get(field).ok().flatten()
    }

    pub fn has(&self, field: &str) -> bool {
        self.get(field).is_some()
    }

    pub fn wrong_type(&self, field: &str, got: &RawBsonRef<'_>, expected: &str) -> CommandError {
        CommandError::new(
            codes::TYPE_MISMATCH,
            format!(
                "BSON field '{}.{field}' is the wrong type '{}', expected {expected}",
                self.cmd,
                type_name(got)
            ),
        )
    }

    pub fn missing(&self, field: &str) -> CommandError {
        CommandError::new(
            codes::MISSING_FIELD,
            format!(
                "BSON field '{}.{field}' is missing but a required field",
                self.cmd
            ),
        )
    }

    pub fn str(&self, field: &str) -> CommandResult<Option<&'a str>> {
        match self.get(field) {
            None => Ok(None),
            Some(RawBsonRef::String(s)) => Ok(Some(s)),
            Some(other) => Err(self.wrong_type(field, &other, "type 'string'")),
        }
    }

    pub fn doc(&self, field: &str) -> CommandResult<Option<&'a RawDocument>> {
        match self.get(field) {
            None => Ok(None),
            Some(RawBsonRef::Document(d)) => Ok(Some(d)),
            Some(other) => Err(self.wrong_type(field, &other, "type 'object'")),
        }
    }

    pub fn array(&self, field: &str) -> CommandResult<Option<&'a RawArray>> {
        match self.get(field) {
            None => Ok(None),
            Some(RawBsonRef::Array(a)) => Ok(Some(a)),
            Some(other) => Err(self.wrong_type(field, &other, "type 'array'")),
        }
    }

    /// A boolean; numbers are accepted as MongoDB does (non-zero = true).
    pub fn bool(&self, field: &str) -> CommandResult<Option<bool>> {
        match self.get(field) {
            None | Some(RawBsonRef::Null) => Ok(None),
            Some(RawBsonRef::Boolean(b)) => Ok(Some(b)),
            Some(v) if is_number(&v) => Ok(Some(as_f64(v).is_some_and(|f| f != 0.0))),
            Some(other) => {
                Err(self.wrong_type(field, &other, "types '[bool, long, int, decimal, double]'"))
            }
        }
    }

    /// An integral number.
    pub fn i64(&self, field: &str) -> CommandResult<Option<i64>> {
        match self.get(field) {
            None => Ok(None),
            Some(v) if is_number(&v) => as_i64(v).map(Some).ok_or_else(|| {
                CommandError::bad_value(format!(
                    "BSON field '{}.{field}' must be a finite number",
                    self.cmd
                ))
            }),
            Some(other) => {
                Err(self.wrong_type(field, &other, "types '[long, int, decimal, double]'"))
            }
        }
    }

    /// A non-negative integral number (`limit`, `skip`, `batchSize`).
    pub fn non_negative(&self, field: &str) -> CommandResult<Option<i64>> {
        match self.i64(field)? {
            Some(n) if n < 0 => Err(CommandError::bad_value(format!(
                "BSON field '{field}' value must be >= 0, actual value '{n}'"
            ))),
            other => Ok(other),
        }
    }

    /// The collection a command names in its first field.
    pub fn collection(&self) -> CommandResult<&'a str> {
        match self.command_value() {
            RawBsonRef::String(s) if !s.is_empty() => Ok(s),
            RawBsonRef::String(_) => Err(CommandError::new(
                codes::INVALID_NAMESPACE,
                format!(
                    "Invalid namespace specified '{}.'",
                    self.db().unwrap_or_default()
                ),
            )),
            other => Err(CommandError::new(
                codes::INVALID_NAMESPACE,
                format!("collection name has invalid type {}", type_name(&other)),
            )),
        }
    }

    /// The `$db` of an OP_MSG command.
    pub fn db(&self) -> Option<&'a str> {
        match self.get("$db") {
            Some(RawBsonRef::String(s)) => Some(s),
            _ => None,
        }
    }

    /// Whether `writeConcern.j` asks for a synced write.
    pub fn journaled(&self) -> bool {
        match self.get("writeConcern") {
            Some(RawBsonRef::Document(wc)) => {
                matches!(wc.get("j"), Ok(Some(RawBsonRef::Boolean(true))))
                    || matches!(wc.get("fsync"), Ok(Some(RawBsonRef::Boolean(true))))
            }
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::rawdoc;

    #[test]
    fn unknown_fields_are_rejected_with_mongodb_message() {
        let d = rawdoc! { "find": "c", "filtr": {} , "$db": "t" };
        let e = Args::parse(&d, &["filter"]).err().unwrap();
        assert_eq!(e.code, 40415);
        assert_eq!(e.errmsg, "BSON field 'find.filtr' is an unknown field.");
    }

    #[test]
    fn wrong_types_name_field_and_types() {
        let d = rawdoc! { "find": "c", "limit": "x" };
        let a = Args::parse(&d, &["limit"]).unwrap();
        let e = a.i64("limit").unwrap_err();
        assert_eq!(e.code, 14);
        assert_eq!(
            e.errmsg,
            "BSON field 'find.limit' is the wrong type 'string', expected types '[long, int, decimal, double]'"
        );
    }

    #[test]
    fn doubles_count_as_integers() {
        let d = rawdoc! { "find": "c", "limit": 3.0 };
        assert_eq!(
            Args::parse(&d, &["limit"]).unwrap().i64("limit").unwrap(),
            Some(3)
        );
    }
}
