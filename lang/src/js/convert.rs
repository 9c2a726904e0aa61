//! Values between BSON and the engine, as mongod's shell shows them: the
//! numbers as JS numbers (what comes back is a double), strings, booleans,
//! null and undefined as themselves, dates as `Date`, ObjectIds as the
//! prelude's `ObjectId`, regular expressions as `RegExp`, documents as
//! objects (fields in order) and arrays as arrays; a timestamp as `{t, i}`
//! and binary data as `{subtype, base64}`; a function coming back is
//! JavaScript code.

use base64::Engine as _;
use bson::{RawArrayBuf, RawBson, RawBsonRef, RawDocumentBuf};
use rquickjs::object::Property;
use rquickjs::{Array, CatchResultExt, Ctx, Function, Object, Value};

use super::fault::{caught, failure};
use crate::error::{Error, ErrorKind, Result};

/// How deep documents may nest on the way back (BSON's own bound).
const MAX_DEPTH: usize = 150;

fn construct<'js>(
    ctx: &Ctx<'js>,
    class: &str,
    args: impl rquickjs::function::IntoArgs<'js>,
) -> Result<Value<'js>> {
    let ctor: rquickjs::Constructor = ctx.globals().get(class).map_err(|e| failure(ctx, e))?;
    ctor.construct(args).catch(ctx).map_err(caught)
}

/// `v` as a JS value.
pub fn to_js<'js>(ctx: &Ctx<'js>, v: RawBsonRef<'_>) -> Result<Value<'js>> {
    let fail = |e| failure(ctx, e);
    Ok(match v {
        RawBsonRef::Double(d) => Value::new_float(ctx.clone(), d),
        RawBsonRef::Int32(n) => Value::new_int(ctx.clone(), n),
        RawBsonRef::Int64(n) => Value::new_float(ctx.clone(), n as f64),
        RawBsonRef::Decimal128(d) => Value::new_float(
            ctx.clone(),
            d.to_string().parse::<f64>().unwrap_or(f64::NAN),
        ),
        RawBsonRef::String(s) | RawBsonRef::Symbol(s) => rquickjs::String::from_str(ctx.clone(), s)
            .map_err(fail)?
            .into_value(),
        RawBsonRef::Boolean(b) => Value::new_bool(ctx.clone(), b),
        RawBsonRef::Null | RawBsonRef::MinKey | RawBsonRef::MaxKey => Value::new_null(ctx.clone()),
        RawBsonRef::Undefined => Value::new_undefined(ctx.clone()),
        RawBsonRef::DateTime(d) => construct(ctx, "Date", (d.timestamp_millis() as f64,))?,
        RawBsonRef::ObjectId(o) => construct(ctx, "ObjectId", (o.to_hex(),))?,
        RawBsonRef::RegularExpression(r) => {
            let flags: String = r
                .options
                .as_str()
                .chars()
                .filter(|c| "gimsuy".contains(*c))
                .collect();
            construct(ctx, "RegExp", (r.pattern.as_str().to_owned(), flags))?
        }
        RawBsonRef::Timestamp(t) => {
            let o = Object::new(ctx.clone()).map_err(fail)?;
            o.set("t", t.time).map_err(fail)?;
            o.set("i", t.increment).map_err(fail)?;
            o.into_value()
        }
        RawBsonRef::Binary(b) => {
            let o = Object::new(ctx.clone()).map_err(fail)?;
            o.set("subtype", u8::from(b.subtype)).map_err(fail)?;
            o.set(
                "base64",
                base64::engine::general_purpose::STANDARD.encode(b.bytes),
            )
            .map_err(fail)?;
            o.into_value()
        }
        RawBsonRef::JavaScriptCode(code) => rquickjs::String::from_str(ctx.clone(), code)
            .map_err(fail)?
            .into_value(),
        RawBsonRef::JavaScriptCodeWithScope(c) => rquickjs::String::from_str(ctx.clone(), c.code)
            .map_err(fail)?
            .into_value(),
        RawBsonRef::DbPointer(_) => Value::new_null(ctx.clone()),
        RawBsonRef::Array(items) => {
            let a = Array::new(ctx.clone()).map_err(fail)?;
            for (i, item) in items.into_iter().enumerate() {
                let item = item.map_err(|e| Error::corrupt(e.to_string()))?;
                a.set(i, to_js(ctx, item)?).map_err(fail)?;
            }
            a.into_value()
        }
        RawBsonRef::Document(d) => {
            let o = Object::new(ctx.clone()).map_err(fail)?;
            for item in d.iter() {
                let (k, v) = item.map_err(|e| Error::corrupt(e.to_string()))?;
                // Defined, not assigned: a field named like a frozen
                // prototype's property (`toString`) is the document's own.
                let field = Property::from(to_js(ctx, v)?)
                    .writable()
                    .enumerable()
                    .configurable();
                o.prop(k.as_str(), field).map_err(fail)?;
            }
            o.into_value()
        }
    })
}

/// A JS value as BSON.
pub fn from_js<'js>(ctx: &Ctx<'js>, v: Value<'js>) -> Result<RawBson> {
    back(ctx, v, 0)
}

fn is_a<'js>(ctx: &Ctx<'js>, o: &Object<'js>, class: &str) -> bool {
    ctx.globals()
        .get::<_, Value>(class)
        .is_ok_and(|c| o.is_instance_of(&c))
}

fn back<'js>(ctx: &Ctx<'js>, v: Value<'js>, depth: usize) -> Result<RawBson> {
    if depth > MAX_DEPTH {
        return Err(Error::new(
            ErrorKind::JsInterpreterFailure,
            "a value nests too deeply to become BSON",
        ));
    }
    let fail = |e| failure(ctx, e);
    if let Some(n) = v.as_number() {
        return Ok(RawBson::Double(n));
    }
    if let Some(b) = v.as_bool() {
        return Ok(RawBson::Boolean(b));
    }
    if let Some(s) = v.as_string() {
        return Ok(RawBson::String(s.to_string().map_err(fail)?));
    }
    if v.is_null() || v.is_undefined() {
        return Ok(RawBson::Null);
    }
    if let Some(f) = v.as_function() {
        let to_string: Function = v
            .as_object()
            .ok_or_else(|| Error::corrupt("a function that is no object"))?
            .get("toString")
            .map_err(fail)?;
        let text: String = to_string
            .call((rquickjs::function::This(f.clone()),))
            .map_err(fail)?;
        return Ok(RawBson::JavaScriptCode(text));
    }
    if let Some(a) = v.as_array() {
        let mut out = RawArrayBuf::new();
        for i in 0..a.len() {
            let item: Value = a.get(i).map_err(fail)?;
            out.push(back(ctx, item, depth + 1)?);
        }
        return Ok(RawBson::Array(out));
    }
    let Some(o) = v.as_object() else {
        return Ok(RawBson::Null);
    };
    if is_a(ctx, o, "Date") {
        let get_time: Function = o.get("getTime").map_err(fail)?;
        let ms: f64 = get_time
            .call((rquickjs::function::This(o.clone()),))
            .map_err(fail)?;
        return Ok(RawBson::DateTime(bson::DateTime::from_millis(ms as i64)));
    }
    if is_a(ctx, o, "ObjectId") {
        let hex: String = o.get("str").map_err(fail)?;
        if let Ok(oid) = bson::oid::ObjectId::parse_str(&hex) {
            return Ok(RawBson::ObjectId(oid));
        }
    }
    if is_a(ctx, o, "RegExp") {
        let pattern: String = o.get("source").map_err(fail)?;
        let flags: String = o.get("flags").map_err(fail)?;
        let mut options: Vec<char> = flags.chars().collect();
        options.sort_unstable();
        let options: String = options.into_iter().collect();
        let pattern =
            bson::raw::CString::try_from(pattern).map_err(|e| Error::bad_value(e.to_string()))?;
        let options =
            bson::raw::CString::try_from(options).map_err(|e| Error::bad_value(e.to_string()))?;
        return Ok(RawBson::RegularExpression(bson::Regex { pattern, options }));
    }
    let mut out = RawDocumentBuf::new();
    for key in o.keys::<String>() {
        let key = key.map_err(fail)?;
        let value: Value = o.get(&key).map_err(fail)?;
        if value.is_function() {
            continue;
        }
        let name = bson::raw::CString::try_from(key.as_str())
            .map_err(|e| Error::bad_value(e.to_string()))?;
        out.append(name, back(ctx, value, depth + 1)?);
    }
    Ok(RawBson::Document(out))
}
