//! BSON values written the way MongoDB writes them inside error messages
//! (`{a: [ 1, 2 ]}`, `"x"`, `1.0`), so a driver user sees the same text
//! from ebb as from mongod.
//!
//! Only for messages: nothing here is parsed back or stored.

use bson::RawBsonRef;
use bson::spec::ElementType;

use crate::encoding::display;

/// MongoDB's name for a BSON type, as in `$type` and error messages.
pub(crate) fn type_name(t: ElementType) -> &'static str {
    display::type_name_of(t)
}

/// `name: value`, as MongoDB prints one element.
pub(crate) fn element(name: &str, v: RawBsonRef<'_>) -> String {
    let mut out = String::new();
    out.push_str(name);
    out.push_str(": ");
    write_value(&mut out, v);
    out
}

/// A value alone, as MongoDB prints it.
pub(crate) fn value(v: RawBsonRef<'_>) -> String {
    let mut out = String::new();
    write_value(&mut out, v);
    out
}

fn write_value(out: &mut String, v: RawBsonRef<'_>) {
    use std::fmt::Write;
    match v {
        RawBsonRef::Double(x) => out.push_str(&double_nice(x)),
        RawBsonRef::Int32(x) => {
            let _ = write!(out, "{x}");
        }
        RawBsonRef::Int64(x) => {
            let _ = write!(out, "{x}");
        }
        RawBsonRef::Decimal128(d) => {
            let _ = write!(out, "NumberDecimal(\"{d}\")");
        }
        RawBsonRef::String(s) | RawBsonRef::Symbol(s) => write_quoted(out, s),
        RawBsonRef::Document(d) => {
            let fields: Vec<String> = d
                .iter()
                .map(|e| match e {
                    Ok((k, v)) => element(k.as_str(), v),
                    Err(_) => "<malformed>".to_owned(),
                })
                .collect();
            write_list(out, '{', '}', &fields);
        }
        RawBsonRef::Array(a) => {
            let items: Vec<String> = a
                .into_iter()
                .map(|e| e.map_or_else(|_| "<malformed>".to_owned(), value))
                .collect();
            write_list(out, '[', ']', &items);
        }
        RawBsonRef::Binary(b) => {
            let _ = write!(out, "BinData({}, ", u8::from(b.subtype));
            for byte in b.bytes {
                let _ = write!(out, "{byte:02X}");
            }
            out.push(')');
        }
        RawBsonRef::Undefined => out.push_str("undefined"),
        RawBsonRef::ObjectId(oid) => {
            let _ = write!(out, "ObjectId('{oid}')");
        }
        RawBsonRef::Boolean(b) => {
            let _ = write!(out, "{b}");
        }
        RawBsonRef::DateTime(d) => {
            let _ = write!(out, "new Date({})", d.timestamp_millis());
        }
        RawBsonRef::Null => out.push_str("null"),
        RawBsonRef::RegularExpression(r) => {
            let _ = write!(out, "/{}/{}", r.pattern.as_str(), r.options.as_str());
        }
        RawBsonRef::DbPointer(_) => out.push_str("DBPointer(...)"),
        RawBsonRef::JavaScriptCode(code) => out.push_str(code),
        RawBsonRef::JavaScriptCodeWithScope(c) => {
            let _ = write!(
                out,
                "CodeWScope( {}, {})",
                c.code,
                value(RawBsonRef::Document(c.scope))
            );
        }
        RawBsonRef::Timestamp(ts) => {
            let _ = write!(out, "Timestamp({}, {})", ts.time, ts.increment);
        }
        RawBsonRef::MinKey => out.push_str("MinKey"),
        RawBsonRef::MaxKey => out.push_str("MaxKey"),
    }
}

/// `{ a, b }` with MongoDB's spacing; `{}` when empty.
fn write_list(out: &mut String, open: char, close: char, items: &[String]) {
    out.push(open);
    if !items.is_empty() {
        out.push(' ');
        out.push_str(&items.join(", "));
        out.push(' ');
    }
    out.push(close);
}

fn write_quoted(out: &mut String, s: &str) {
    use std::fmt::Write;
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// A double as C's `%.16g`, with `.0` appended when that leaves it looking
/// like an integer, which is how MongoDB prints doubles in messages.
fn double_nice(x: f64) -> String {
    if x.is_nan() {
        return "nan".to_owned();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf" } else { "-inf" }.to_owned();
    }
    let mut s = format_g16(x);
    if !s.contains('.') && !s.contains('e') {
        s.push_str(".0");
    }
    s
}

/// C's `%.16g`: 16 significant digits, fixed notation for exponents in
/// [-4, 16), scientific otherwise, trailing zeros removed.
fn format_g16(x: f64) -> String {
    const PRECISION: i32 = 16;
    let sci = format!("{:.*e}", (PRECISION - 1) as usize, x);
    let (mantissa, exp) = sci
        .split_once('e')
        .expect("scientific format has an exponent");
    let exp: i32 = exp.parse().expect("exponent is an integer");
    if (-4..PRECISION).contains(&exp) {
        let fixed = format!("{:.*}", (PRECISION - 1 - exp) as usize, x);
        trim_fraction(&fixed).to_owned()
    } else {
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{}e{sign}{:02}", trim_fraction(mantissa), exp.abs())
    }
}

fn trim_fraction(s: &str) -> &str {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::rawdoc;

    fn rendered(doc: bson::RawDocumentBuf) -> String {
        let (k, v) = doc.iter().next().unwrap().unwrap();
        element(k.as_str(), v)
    }

    #[test]
    fn scalars_render_like_mongod() {
        assert_eq!(rendered(rawdoc! {"a": 1}), "a: 1");
        assert_eq!(rendered(rawdoc! {"a": 1_i64}), "a: 1");
        assert_eq!(rendered(rawdoc! {"a": 1.0}), "a: 1.0");
        assert_eq!(rendered(rawdoc! {"a": 2.5}), "a: 2.5");
        assert_eq!(rendered(rawdoc! {"a": 0.1}), "a: 0.1");
        assert_eq!(rendered(rawdoc! {"a": "x\"y"}), "a: \"x\\\"y\"");
        assert_eq!(rendered(rawdoc! {"a": bson::raw::RawBson::Null}), "a: null");
        assert_eq!(rendered(rawdoc! {"a": true}), "a: true");
    }

    #[test]
    fn large_and_small_doubles_use_exponents() {
        assert_eq!(double_nice(1e20), "1e+20");
        assert_eq!(double_nice(1.5e-7), "1.5e-07");
        assert_eq!(double_nice(123456789012345680.0), "1.234567890123457e+17");
        assert_eq!(double_nice(0.0001), "0.0001");
    }

    #[test]
    fn containers_render_with_inner_spaces() {
        assert_eq!(rendered(rawdoc! {"a": [1, 2]}), "a: [ 1, 2 ]");
        assert_eq!(
            rendered(rawdoc! {"a": {"b": 1, "c": "x"}}),
            "a: { b: 1, c: \"x\" }"
        );
        assert_eq!(rendered(rawdoc! {"a": {}}), "a: {}");
        assert_eq!(rendered(rawdoc! {"a": []}), "a: []");
    }
}
