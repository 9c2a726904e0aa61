//! Aggregation expressions: field paths (`"$a.b"`), literals,
//! `{$literal: v}` and documents of those, parsed once and evaluated
//! against each document. Operators and variables are refused (not
//! implemented yet) rather than evaluated wrongly.

use bson::{RawArrayBuf, RawBson, RawBsonRef, RawDocument, RawDocumentBuf};

use crate::error::{Error, ErrorKind, Result};

/// One value-producing expression.
#[derive(Debug, Clone)]
pub enum Expr {
    Literal(RawBson),
    Path(String),
    Object(Vec<(String, Expr)>),
}

impl Expr {
    /// Parses an expression as it appears in a stage.
    pub fn parse(v: RawBsonRef<'_>) -> Result<Expr> {
        match v {
            RawBsonRef::String(s) if s.starts_with("$$") => {
                Err(Error::not_implemented(&format!("the variable '{s}'")))
            }
            RawBsonRef::String(s) if s.starts_with('$') => {
                let path = &s[1..];
                if path.is_empty() || path.split('.').any(str::is_empty) {
                    return Err(Error::new(
                        ErrorKind::InvalidFieldPathExpression,
                        format!("'{s}' is not a valid field path"),
                    ));
                }
                Ok(Expr::Path(path.to_owned()))
            }
            RawBsonRef::Document(d) => {
                let mut fields = Vec::new();
                for el in d.iter() {
                    let (k, v) = el?;
                    let k = k.as_str();
                    if k == "$literal" {
                        return Ok(Expr::Literal(RawBson::from(v)));
                    }
                    if k.starts_with('$') {
                        return Err(Error::new(
                            ErrorKind::InvalidPipelineOperator,
                            format!("Unrecognized expression '{k}'"),
                        ));
                    }
                    fields.push((k.to_owned(), Expr::parse(v)?));
                }
                Ok(Expr::Object(fields))
            }
            RawBsonRef::Array(_) => Err(Error::not_implemented("array expressions")),
            other => Ok(Expr::Literal(RawBson::from(other))),
        }
    }

    /// The expression's value for `doc`; `None` when a path is missing.
    pub fn eval(&self, doc: &RawDocument) -> Option<RawBson> {
        match self {
            Expr::Literal(v) => Some(v.clone()),
            Expr::Path(p) => path_value(doc, p),
            Expr::Object(fields) => {
                let mut out = RawDocumentBuf::new();
                for (k, e) in fields {
                    if let Some(v) = e.eval(doc) {
                        out.append(cstr(k), v);
                    }
                }
                Some(RawBson::Document(out))
            }
        }
    }
}

/// The value at a dotted path of a document, through arrays of documents.
fn path_value(doc: &RawDocument, path: &str) -> Option<RawBson> {
    let (head, rest) = match path.split_once('.') {
        Some((h, r)) => (h, Some(r)),
        None => (path, None),
    };
    let v = doc.get(head).ok()??;
    match (v, rest) {
        (v, None) => Some(RawBson::from(v)),
        (RawBsonRef::Document(d), Some(rest)) => path_value(d, rest),
        (RawBsonRef::Array(a), Some(rest)) => {
            let mut out = RawArrayBuf::new();
            for el in a.into_iter().flatten() {
                if let RawBsonRef::Document(d) = el
                    && let Some(v) = path_value(d, rest)
                {
                    out.push(v);
                }
            }
            Some(RawBson::Array(out))
        }
        _ => None,
    }
}

/// A field name as a C string. Field names come from BSON keys or
/// validated stage specs, which cannot hold NUL bytes.
pub(super) fn cstr(s: &str) -> &bson::raw::CStr {
    <&bson::raw::CStr>::try_from(s).expect("field names have no NUL")
}
