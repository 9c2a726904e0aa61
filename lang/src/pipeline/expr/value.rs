//! The values expressions compute with: a BSON value borrowed from the
//! document being evaluated, one computed here, or *missing* (a path that
//! leads nowhere, `$$REMOVE`), which MongoDB keeps apart from `null`.
//!
//! Also the evaluation context every operator receives ([`Cx`]): the one
//! comparison all operators use, so a collation can later be passed in
//! one place. Nothing here parses or knows operators.

use std::cmp::Ordering;

use bson::{RawArray, RawArrayBuf, RawBson, RawBsonRef, RawDocument, RawDocumentBuf};

use crate::encoding::arith::Num;
use crate::encoding::cmp::compare_values;
use crate::encoding::display::type_name;
use crate::error::{Error, ExprError, Result};
use crate::query::value::truthy;

/// How two values compare: BSON order, or (later) a collation's order for
/// strings. Every comparison an expression makes goes through it.
pub type Comparator<'c> = dyn Fn(RawBsonRef<'_>, RawBsonRef<'_>) -> Ordering + Sync + 'c;

/// What evaluation needs besides the document.
pub struct Cx<'c> {
    compare: &'c Comparator<'c>,
}

impl<'c> Cx<'c> {
    pub fn new(compare: &'c Comparator<'c>) -> Self {
        Cx { compare }
    }

    /// MongoDB's order of two values, missing sorting as `undefined`.
    pub fn cmp(&self, a: &Val<'_>, b: &Val<'_>) -> Ordering {
        let undefined = RawBsonRef::Undefined;
        (self.compare)(a.get().unwrap_or(undefined), b.get().unwrap_or(undefined))
    }

    pub fn eq(&self, a: &Val<'_>, b: &Val<'_>) -> bool {
        self.cmp(a, b) == Ordering::Equal
    }
}

/// BSON's own order: the comparator used when no collation applies.
pub fn binary_order(a: RawBsonRef<'_>, b: RawBsonRef<'_>) -> Ordering {
    compare_values(a, b)
}

/// An expression's value.
#[derive(Debug, Clone)]
pub enum Val<'a> {
    Missing,
    Ref(RawBsonRef<'a>),
    Own(RawBson),
}

impl<'a> Val<'a> {
    pub fn null() -> Self {
        Val::Own(RawBson::Null)
    }

    pub fn bool(b: bool) -> Self {
        Val::Own(RawBson::Boolean(b))
    }

    pub fn int(n: i32) -> Self {
        Val::Own(RawBson::Int32(n))
    }

    pub fn long(n: i64) -> Self {
        Val::Own(RawBson::Int64(n))
    }

    pub fn double(x: f64) -> Self {
        Val::Own(RawBson::Double(x))
    }

    pub fn string(s: impl Into<String>) -> Self {
        Val::Own(RawBson::String(s.into()))
    }

    /// An int32 when it fits, else an int64 (MongoDB's `createIntOrLong`).
    pub fn int_or_long(n: i64) -> Self {
        i32::try_from(n).map_or(Val::long(n), Val::int)
    }

    pub fn date(millis: i64) -> Self {
        Val::Own(RawBson::DateTime(bson::DateTime::from_millis(millis)))
    }

    pub fn number(n: Num) -> Self {
        Val::Own(n.to_bson())
    }

    /// The value, `None` when missing.
    pub fn get(&self) -> Option<RawBsonRef<'_>> {
        match self {
            Val::Missing => None,
            Val::Ref(v) => Some(*v),
            Val::Own(v) => Some(v.as_raw_bson_ref()),
        }
    }

    pub fn is_missing(&self) -> bool {
        matches!(self, Val::Missing)
    }

    /// Missing, null or undefined: what most operators answer null to.
    pub fn nullish(&self) -> bool {
        matches!(
            self.get(),
            None | Some(RawBsonRef::Null | RawBsonRef::Undefined)
        )
    }

    /// MongoDB's name for the value's type (`missing` when missing).
    pub fn type_name(&self) -> &'static str {
        self.get().map_or("missing", |v| type_name(&v))
    }

    /// MongoDB's truthiness: false, 0, null, undefined and missing are
    /// false.
    pub fn truthy(&self) -> bool {
        self.get().is_some_and(truthy)
    }

    pub fn num(&self) -> Option<Num> {
        self.get().and_then(Num::from_bson)
    }

    pub fn is_number(&self) -> bool {
        self.num().is_some()
    }

    pub fn as_str(&self) -> Option<&str> {
        match self.get()? {
            RawBsonRef::String(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_array(&self) -> Option<&RawArray> {
        match self.get()? {
            RawBsonRef::Array(a) => Some(a),
            _ => None,
        }
    }

    pub fn as_document(&self) -> Option<&RawDocument> {
        match self.get()? {
            RawBsonRef::Document(d) => Some(d),
            _ => None,
        }
    }

    pub fn is_array(&self) -> bool {
        self.as_array().is_some()
    }

    /// The value to store: `None` when missing.
    pub fn into_bson(self) -> Option<RawBson> {
        match self {
            Val::Missing => None,
            Val::Ref(v) => Some(v.into()),
            Val::Own(v) => Some(v),
        }
    }

    /// The value, null when missing (an array element, a group key).
    pub fn into_bson_or_null(self) -> RawBson {
        self.into_bson().unwrap_or(RawBson::Null)
    }

    /// The elements of an array value, keeping borrowed ones borrowed.
    /// Callers check `is_array` first; anything else has no elements.
    pub fn into_items(self) -> Result<Vec<Val<'a>>> {
        match self {
            Val::Ref(RawBsonRef::Array(a)) => {
                items(a).map(|v| v.into_iter().map(Val::Ref).collect())
            }
            Val::Own(RawBson::Array(a)) => {
                items(&a).map(|v| v.into_iter().map(|x| Val::Own(x.into())).collect())
            }
            _ => Ok(Vec::new()),
        }
    }

    /// The value at a field path below this one, MongoDB's way: through
    /// documents, and through arrays element by element (documents only).
    pub fn path(self, fields: &[String]) -> Val<'a> {
        if fields.is_empty() {
            return self;
        }
        match self {
            Val::Missing => Val::Missing,
            Val::Ref(v) => path_ref(v, fields),
            Val::Own(v) => path_ref(v.as_raw_bson_ref(), fields).to_owned_val(),
        }
    }

    /// The same value detached from the document it borrows from.
    pub fn to_owned_val(&self) -> Val<'static> {
        match self {
            Val::Missing => Val::Missing,
            Val::Ref(v) => Val::Own((*v).into()),
            Val::Own(v) => Val::Own(v.clone()),
        }
    }
}

/// The elements of an array.
pub fn items(a: &RawArray) -> Result<Vec<RawBsonRef<'_>>> {
    a.into_iter()
        .map(|v| v.map_err(|e| Error::corrupt(format!("malformed BSON array: {e}"))))
        .collect()
}

/// The fields of a document, in order.
pub fn fields(d: &RawDocument) -> Result<Vec<(&str, RawBsonRef<'_>)>> {
    d.iter()
        .map(|item| {
            item.map(|(k, v)| (k.as_str(), v))
                .map_err(|e| Error::corrupt(format!("malformed BSON document: {e}")))
        })
        .collect()
}

fn path_ref<'a>(v: RawBsonRef<'a>, fields: &[String]) -> Val<'a> {
    let Some((head, rest)) = fields.split_first() else {
        return Val::Ref(v);
    };
    match v {
        RawBsonRef::Document(d) => match d.get(head) {
            Ok(Some(next)) => path_ref(next, rest),
            _ => Val::Missing,
        },
        RawBsonRef::Array(a) => {
            let mut out = RawArrayBuf::new();
            for el in a.into_iter().flatten() {
                if let RawBsonRef::Document(_) = el
                    && let Some(found) = path_ref(el, fields).into_bson()
                {
                    out.push(found);
                }
            }
            Val::Own(RawBson::Array(out))
        }
        _ => Val::Missing,
    }
}

/// An array of values; a missing value becomes null (arrays cannot hold
/// missing).
pub fn array<'x>(values: impl IntoIterator<Item = Val<'x>>) -> Val<'static> {
    let mut out = RawArrayBuf::new();
    for v in values {
        out.push(v.into_bson_or_null());
    }
    Val::Own(RawBson::Array(out))
}

/// A document from fields in order; missing values are left out.
pub fn document<'x>(fields: impl IntoIterator<Item = (String, Val<'x>)>) -> Result<Val<'static>> {
    let mut out = RawDocumentBuf::new();
    for (k, v) in fields {
        if let Some(v) = v.into_bson() {
            out.append(key(&k)?, v);
        }
    }
    Ok(Val::Own(RawBson::Document(out)))
}

/// A field name as BSON needs it: one without a NUL byte.
pub fn key(name: &str) -> Result<&bson::raw::CStr> {
    <&bson::raw::CStr>::try_from(name).map_err(|_| {
        Error::new(
            crate::error::ErrorKind::Expression(ExprError::FieldNameNul),
            "Field names cannot contain an embedded null byte",
        )
    })
}

/// A failure of an expression, with MongoDB's kind and message.
pub fn fail(kind: ExprError, message: impl Into<String>) -> Error {
    Error::new(crate::error::ErrorKind::Expression(kind), message)
}

/// The value as an `i64` when it is an integral number (any numeric type).
pub fn integral(v: &Val<'_>) -> Option<i64> {
    match v.get()? {
        RawBsonRef::Int32(n) => Some(n.into()),
        RawBsonRef::Int64(n) => Some(n),
        other => {
            let x = crate::query::value::number_as_f64(other)?;
            let in_range = (-9_223_372_036_854_775_808.0..9_223_372_036_854_775_808.0).contains(&x);
            (in_range && x.fract() == 0.0).then_some(x as i64)
        }
    }
}

/// The value as an `i32` when it is an integral number that fits.
pub fn integral32(v: &Val<'_>) -> Option<i32> {
    integral(v).and_then(|n| i32::try_from(n).ok())
}

/// A value shown the way mongod's messages show it.
pub fn shown(v: &Val<'_>) -> String {
    match v.get() {
        None => "missing".to_owned(),
        Some(r) => match bson::Bson::try_from(RawBson::from(r)) {
            Ok(b) => crate::encoding::display::shell(&b),
            Err(_) => type_name(&r).to_owned(),
        },
    }
}

/// A field name as a C string. Field names here come from BSON keys or
/// validated stage specs, which cannot hold NUL bytes.
pub(crate) fn cstr(s: &str) -> &bson::raw::CStr {
    <&bson::raw::CStr>::try_from(s).expect("field names have no NUL")
}
