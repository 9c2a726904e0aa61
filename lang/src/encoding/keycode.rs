//! The on-disk key encoding: BSON values as byte strings whose memcmp order
//! is MongoDB's comparison order.
//!
//! RocksDB orders keys with memcmp, so for all values `a`, `b`:
//! `encode_key(a).cmp(&encode_key(b)) == cmp::compare_values(a, b)`, and
//! values that compare equal have identical bytes (`5`, `NumberLong(5)`,
//! `5.0` and `NumberDecimal("5.0")` are one key, as `_id: 5` and `_id: 5.0`
//! are one document in MongoDB). Every encoding is self-delimiting, so a
//! concatenation `enc(v1) ‖ enc(v2) ‖ …` orders field by field: an index
//! entry key is `enc(field1) ‖ … ‖ enc(fieldN) ‖ enc(_id)` and a record key
//! is `enc(_id)`. A descending index field is the same encoding with every
//! byte inverted, which reverses its order and stays self-delimiting.
//!
//! **This is a persisted format.** The golden vectors in the tests pin every
//! layout below; changing one means migrating data on disk.
//!
//! This module does not know about collections, indexes, RocksDB or key
//! prefixes; callers compose keys from these pieces. It must not compare
//! values itself: `cmp` is the reference order and the property tests hold
//! this encoding to it.
//!
//! # Layout
//!
//! A value is `tag ‖ body`. The tag is the value's canonical type bracket
//! (`cmp::canonical_type`), so a bracket is one contiguous key range ("every
//! Date ≤ cutoff" is a single range scan that no string or number can enter).
//! Integers are big-endian so bytes order like numbers.
//!
//! ```text
//! type          tag  body
//! MinKey        01   (none)
//! Undefined     02   (none)
//! Null          05   (none)
//! Number        0A   class [finite]
//!                      class: 00 NaN | 01 -Inf | 02 negative | 03 zero | 04 positive | 05 +Inf
//!                      finite (classes 02 and 04), for |value| = 0.d1 d2 … dn × 10^e,
//!                      d1 ≠ 0, dn ≠ 0 (exact; see `numeric`):
//!                        e + 0x8000 : u16 | pair … pair | 00
//!                        pair = 1 + 10·d(2i-1) + d(2i), in 01..=64 hex; an odd
//!                        last digit is paired with 0
//!                      negative: every byte after the class inverted, so a
//!                      larger magnitude sorts first
//! String        0F   str                    (Symbol too: same bracket; decodes as String;
//!                                            in an index with a collation, str of the
//!                                            collation's sort key instead of the bytes)
//! Object        14   field … field | 00
//!                      field = tag(value) | str(name) | body(value)
//!                      a malformed element (unreadable BSON) is written as FF and
//!                      ends the object: it sorts after any well-formed tail
//! Array         19   value … value | 00     (element names are not encoded;
//!                                            a malformed element is FF, as in Object)
//! BinData       1E   length : u32 | subtype : u8 | bytes
//! ObjectId      23   12 bytes
//! Bool          28   00 false | 01 true
//! Date          2D   millis : i64, sign bit flipped, as u64 (pre-1970 sorts first)
//! Timestamp     2F   time : u32 | increment : u32
//! Regex         32   str(pattern) | str(options)
//! DBPointer     37   namespace length : u32 | namespace bytes | 12-byte ObjectId
//! Code          3C   str
//! CodeWScope    41   str(code) | field … field | 00
//! MaxKey        7F   (none)
//!
//! str = the UTF-8 bytes with each 00 written as 00 FF, then 00 00
//!       ("a" = 61 00 00 < "a\0" = 61 00 FF 00 00 < "a\x01" = 61 01 00 00)
//! descending = every byte of the value's encoding inverted (b ↦ !b)
//! ```
//!
//! Why this orders correctly: the tag orders brackets; the object/array
//! terminator 00 sorts below every tag, so a prefix sorts first; `str` is a
//! prefix-free code in byte order, so strings and field names order as raw
//! bytes and never run into what follows; numbers order by class, then
//! exponent, then digits, where no trailing zeros make a shorter digit
//! string (a prefix) the smaller magnitude.

use bson::raw::CString;
use bson::spec::BinarySubtype;
use bson::{Binary, DateTime, RawArrayBuf, RawBson, RawBsonRef, RawDocumentBuf, Regex};

use super::bracket::*;
use super::collation::Collation;
use super::numeric::{Class, Exact};
use crate::error::{Error, Result};

/// Ends an object, array or scope; below every tag so a prefix sorts first.
const END: u8 = 0x00;
/// Stands for an unreadable object or array element (and ends it); above
/// every tag, as `cmp` sorts a malformed tail after any well-formed one.
const MALFORMED: u8 = 0xFF;

const NUMBER_NAN: u8 = 0x00;
const NUMBER_NEGATIVE_INFINITY: u8 = 0x01;
const NUMBER_NEGATIVE: u8 = 0x02;
const NUMBER_ZERO: u8 = 0x03;
const NUMBER_POSITIVE: u8 = 0x04;
const NUMBER_POSITIVE_INFINITY: u8 = 0x05;
const EXPONENT_BIAS: i32 = 0x8000;
const DIGITS_END: u8 = 0x00;

/// BSON nests at most ~100 levels; a deeper key is damaged, and must not
/// exhaust the stack while we find that out.
const MAX_DEPTH: usize = 200;

/// Appends the ascending encoding of `v`.
pub fn encode_value(out: &mut Vec<u8>, v: RawBsonRef<'_>) {
    encode_collated(out, v, None);
}

/// Appends the descending encoding of `v`: the ascending bytes inverted.
pub fn encode_value_desc(out: &mut Vec<u8>, v: RawBsonRef<'_>) {
    encode_collated_desc(out, v, None);
}

/// Appends the ascending encoding of `v` for an index with a collation:
/// every string (and symbol), at any depth, is written as its collation
/// sort key instead of its bytes, so the key order is the collation's
/// order (`cmp::Cmp::new(Some(c))`) and strings the collation calls equal
/// have one key. Such keys do not decode back to the strings (as in
/// MongoDB, whose collated indexes cannot cover a query).
pub fn encode_collated(out: &mut Vec<u8>, v: RawBsonRef<'_>, collation: Option<&Collation>) {
    out.push(canonical_type(&v));
    encode_body(out, v, collation);
}

/// [`encode_collated`], descending.
pub fn encode_collated_desc(out: &mut Vec<u8>, v: RawBsonRef<'_>, collation: Option<&Collation>) {
    let start = out.len();
    encode_collated(out, v, collation);
    invert(&mut out[start..]);
}

/// The ascending encoding of `v` on its own.
pub fn encode_key(v: RawBsonRef<'_>) -> Vec<u8> {
    let mut out = Vec::new();
    encode_value(&mut out, v);
    out
}

/// Appends the encoding of a Date given in milliseconds since the epoch
/// (the same bytes as `encode_value` of that Date).
pub fn encode_date(out: &mut Vec<u8>, millis: i64) {
    out.push(TAG_DATE);
    out.extend(ordered_i64(millis));
}

/// Decodes one value from the front of `input`, advancing it. Numbers
/// decode to a canonical type (int32 if integral and in range, else int64,
/// else double if exactly representable, else decimal128); symbols decode
/// as strings; every other type decodes to itself. `decode(encode(x))`
/// compares Equal to `x` and encodes to the same bytes.
pub fn decode_value(input: &mut &[u8]) -> Result<RawBson> {
    decode_masked(input, ASCENDING)
}

/// Decodes one descending-encoded value from the front of `input`, advancing it.
pub fn decode_value_desc(input: &mut &[u8]) -> Result<RawBson> {
    decode_masked(input, DESCENDING)
}

/// Skips one encoded value (asc or desc), returning its byte length; used
/// to split an index entry key into its fields and the trailing `_id`.
pub fn skip_value(input: &[u8], descending: bool) -> Result<usize> {
    let mut reader = Reader::new(input, mask(descending));
    reader.skip_value()?;
    Ok(reader.pos)
}

/// The smallest byte string greater than every string that starts with
/// `prefix` (None if prefix is all 0xFF). Used for exclusive upper bounds.
pub fn prefix_successor(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut out = prefix.to_vec();
    while let Some(last) = out.pop() {
        if last != 0xFF {
            out.push(last + 1);
            return Some(out);
        }
    }
    None
}

/// Bounds of the Date bracket for TTL scans over the first field of an
/// index entry: keys whose leading Date is <= `cutoff_millis`, as
/// `[start, end)` for an ascending field and for a descending field.
pub fn date_range_up_to(cutoff_millis: i64, descending: bool) -> (Vec<u8>, Vec<u8>) {
    let mut cutoff = Vec::with_capacity(9);
    encode_date(&mut cutoff, cutoff_millis);
    if descending {
        // Inverted, later dates sort first: the range runs from the cutoff
        // to the end of the (inverted) Date bracket.
        invert(&mut cutoff);
        (cutoff, vec![!TAG_DATE + 1])
    } else {
        // The tag is never 0xFF, so a successor always exists.
        let end = prefix_successor(&cutoff).unwrap_or_else(|| vec![TAG_DATE + 1]);
        (vec![TAG_DATE], end)
    }
}

/// Reads the leading Date of an encoded key if the first value is a Date.
pub fn leading_date(key: &[u8], descending: bool) -> Option<i64> {
    let mut reader = Reader::new(key, mask(descending));
    if reader.byte().ok()? != TAG_DATE {
        return None;
    }
    reader.date_millis().ok()
}

fn encode_body(out: &mut Vec<u8>, v: RawBsonRef<'_>, collation: Option<&Collation>) {
    match v {
        RawBsonRef::MinKey | RawBsonRef::MaxKey | RawBsonRef::Null | RawBsonRef::Undefined => {}
        RawBsonRef::Int32(_)
        | RawBsonRef::Int64(_)
        | RawBsonRef::Double(_)
        | RawBsonRef::Decimal128(_) => {
            encode_number(out, &Exact::from_bson(v).unwrap_or(Exact::NAN));
        }
        RawBsonRef::String(s) | RawBsonRef::Symbol(s) => match collation {
            Some(c) => {
                let mut key = Vec::with_capacity(s.len() * 2);
                c.write_sort_key(s, &mut key);
                encode_str(out, &key);
            }
            None => encode_str(out, s.as_bytes()),
        },
        RawBsonRef::Document(doc) => encode_fields(out, doc, collation),
        RawBsonRef::Array(array) => {
            for element in array {
                match element {
                    Ok(value) => encode_collated(out, value, collation),
                    // Unreadable elements end the array the way they end an object.
                    Err(_) => {
                        out.push(MALFORMED);
                        return;
                    }
                }
            }
            out.push(END);
        }
        RawBsonRef::Binary(b) => {
            // BSON values are below 2^31 bytes, so the length fits.
            out.extend((b.bytes.len() as u32).to_be_bytes());
            out.push(u8::from(b.subtype));
            out.extend_from_slice(b.bytes);
        }
        RawBsonRef::ObjectId(id) => out.extend(id.bytes()),
        RawBsonRef::Boolean(b) => out.push(u8::from(b)),
        RawBsonRef::DateTime(d) => out.extend(ordered_i64(d.timestamp_millis())),
        RawBsonRef::Timestamp(t) => {
            out.extend(t.time.to_be_bytes());
            out.extend(t.increment.to_be_bytes());
        }
        RawBsonRef::RegularExpression(re) => {
            encode_str(out, re.pattern.as_str().as_bytes());
            encode_str(out, re.options.as_str().as_bytes());
        }
        RawBsonRef::DbPointer(p) => {
            let (namespace, id) = db_pointer_parts(p);
            out.extend((namespace.len() as u32).to_be_bytes());
            out.extend(namespace);
            out.extend(id);
        }
        RawBsonRef::JavaScriptCode(code) => encode_str(out, code.as_bytes()),
        RawBsonRef::JavaScriptCodeWithScope(c) => {
            encode_str(out, c.code.as_bytes());
            encode_fields(out, c.scope, None);
        }
    }
}

/// Object elements in MongoDB's element order: type bracket, name, value.
fn encode_fields(out: &mut Vec<u8>, doc: &bson::RawDocument, collation: Option<&Collation>) {
    for element in doc {
        match element {
            Ok((name, value)) => {
                out.push(canonical_type(&value));
                encode_str(out, name.as_str().as_bytes());
                encode_body(out, value, collation);
            }
            Err(_) => {
                out.push(MALFORMED);
                return;
            }
        }
    }
    out.push(END);
}

fn encode_str(out: &mut Vec<u8>, bytes: &[u8]) {
    let mut pieces = bytes.split(|&b| b == 0);
    if let Some(first) = pieces.next() {
        out.extend_from_slice(first);
    }
    for piece in pieces {
        out.extend([0x00, 0xFF]);
        out.extend_from_slice(piece);
    }
    out.extend([0x00, 0x00]);
}

fn encode_number(out: &mut Vec<u8>, n: &Exact) {
    let (class, negative) = match n.class() {
        Class::NaN => (NUMBER_NAN, false),
        Class::NegativeInfinity => (NUMBER_NEGATIVE_INFINITY, false),
        Class::Negative => (NUMBER_NEGATIVE, true),
        Class::Zero => (NUMBER_ZERO, false),
        Class::Positive => (NUMBER_POSITIVE, false),
        Class::PositiveInfinity => (NUMBER_POSITIVE_INFINITY, false),
    };
    out.push(class);
    if n.digits().is_empty() {
        return;
    }
    let start = out.len();
    // BSON exponents span about -6175..=6145, well inside a u16 with this bias.
    out.extend(((n.exponent() + EXPONENT_BIAS) as u16).to_be_bytes());
    for pair in n.digits().chunks(2) {
        let low = pair.get(1).copied().unwrap_or(0);
        out.push(1 + 10 * pair[0] + low);
    }
    out.push(DIGITS_END);
    if negative {
        invert(&mut out[start..]);
    }
}

/// Dates sort as signed integers: flipping the sign bit makes the
/// big-endian bytes of an i64 order like the number.
fn ordered_i64(x: i64) -> [u8; 8] {
    ((x as u64) ^ (1 << 63)).to_be_bytes()
}

fn invert(bytes: &mut [u8]) {
    for b in bytes {
        *b = !*b;
    }
}

const ASCENDING: u8 = 0x00;
const DESCENDING: u8 = 0xFF;

fn mask(descending: bool) -> u8 {
    if descending { DESCENDING } else { ASCENDING }
}

fn decode_masked(input: &mut &[u8], mask: u8) -> Result<RawBson> {
    let mut reader = Reader::new(input, mask);
    let value = reader.value()?;
    *input = &input[reader.pos..];
    Ok(value)
}

fn corrupt(what: &str) -> Error {
    Error::corrupt(format!("malformed index key: {what}"))
}

fn unknown_tag(tag: u8) -> Error {
    corrupt(&format!("unknown type tag {tag:#04x}"))
}

/// Reads an encoding front to back; every byte is XORed with `mask`, so a
/// descending encoding is read by inverting bytes as they come.
struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
    mask: u8,
    depth: usize,
}

impl<'a> Reader<'a> {
    fn new(bytes: &'a [u8], mask: u8) -> Self {
        Reader {
            bytes,
            pos: 0,
            mask,
            depth: 0,
        }
    }

    fn byte(&mut self) -> Result<u8> {
        let b = *self
            .bytes
            .get(self.pos)
            .ok_or_else(|| corrupt("truncated"))?;
        self.pos += 1;
        Ok(b ^ self.mask)
    }

    fn take(&mut self, n: usize) -> Result<Vec<u8>> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|&end| end <= self.bytes.len());
        let end = end.ok_or_else(|| corrupt("truncated"))?;
        let taken = self.bytes[self.pos..end].iter().map(|b| b ^ self.mask);
        let taken = taken.collect();
        self.pos = end;
        Ok(taken)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N]> {
        let mut out = [0u8; N];
        for b in &mut out {
            *b = self.byte()?;
        }
        Ok(out)
    }

    fn skip(&mut self, n: usize) -> Result<()> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|&end| end <= self.bytes.len());
        self.pos = end.ok_or_else(|| corrupt("truncated"))?;
        Ok(())
    }

    fn u32(&mut self) -> Result<u32> {
        Ok(u32::from_be_bytes(self.array()?))
    }

    fn date_millis(&mut self) -> Result<i64> {
        Ok((u64::from_be_bytes(self.array()?) ^ (1 << 63)) as i64)
    }

    /// Runs `f` one nesting level deeper, refusing absurd depths.
    fn nested<T>(&mut self, f: impl FnOnce(&mut Self) -> Result<T>) -> Result<T> {
        if self.depth >= MAX_DEPTH {
            return Err(corrupt("nested too deeply"));
        }
        self.depth += 1;
        let result = f(self);
        self.depth -= 1;
        result
    }

    fn value(&mut self) -> Result<RawBson> {
        let tag = self.byte()?;
        self.body(tag)
    }

    /// Dispatches on the tag; each type reads in its own function, which
    /// keeps this recursive frame small (debug builds reserve stack for
    /// every arm's temporaries).
    fn body(&mut self, tag: u8) -> Result<RawBson> {
        match tag {
            TAG_MINKEY => Ok(RawBson::MinKey),
            TAG_UNDEFINED => Ok(RawBson::Undefined),
            TAG_NULL => Ok(RawBson::Null),
            TAG_MAXKEY => Ok(RawBson::MaxKey),
            TAG_NUMBER => self.number_value(),
            TAG_STRING => self.string().map(RawBson::String),
            TAG_OBJECT => self.nested(Self::fields).map(RawBson::Document),
            TAG_ARRAY => self.nested(Self::elements).map(RawBson::Array),
            TAG_BINARY => self.binary(),
            TAG_OBJECTID => self.object_id(),
            TAG_BOOL => self.boolean(),
            TAG_DATE => self.date(),
            TAG_TIMESTAMP => self.timestamp(),
            TAG_REGEX => self.regex(),
            TAG_DBPOINTER => self.db_pointer(),
            TAG_CODE => self.string().map(RawBson::JavaScriptCode),
            TAG_CODE_WITH_SCOPE => self.code_with_scope(),
            other => Err(unknown_tag(other)),
        }
    }

    fn number_value(&mut self) -> Result<RawBson> {
        self.number()?
            .to_bson()
            .ok_or_else(|| corrupt("number held by no BSON type"))
    }

    fn binary(&mut self) -> Result<RawBson> {
        let len = self.u32()? as usize;
        let subtype = BinarySubtype::from(self.byte()?);
        let bytes = self.take(len)?;
        Ok(RawBson::Binary(Binary { subtype, bytes }))
    }

    fn object_id(&mut self) -> Result<RawBson> {
        Ok(RawBson::ObjectId(bson::oid::ObjectId::from_bytes(
            self.array()?,
        )))
    }

    fn boolean(&mut self) -> Result<RawBson> {
        match self.byte()? {
            0 => Ok(RawBson::Boolean(false)),
            1 => Ok(RawBson::Boolean(true)),
            _ => Err(corrupt("bool neither 0 nor 1")),
        }
    }

    fn date(&mut self) -> Result<RawBson> {
        Ok(RawBson::DateTime(DateTime::from_millis(
            self.date_millis()?,
        )))
    }

    fn timestamp(&mut self) -> Result<RawBson> {
        Ok(RawBson::Timestamp(bson::Timestamp {
            time: self.u32()?,
            increment: self.u32()?,
        }))
    }

    fn regex(&mut self) -> Result<RawBson> {
        Ok(RawBson::RegularExpression(Regex {
            pattern: CString::try_from(self.string()?)?,
            options: CString::try_from(self.string()?)?,
        }))
    }

    fn db_pointer(&mut self) -> Result<RawBson> {
        let len = self.u32()? as usize;
        let namespace = String::from_utf8(self.take(len)?)
            .map_err(|_| corrupt("DBPointer namespace is not UTF-8"))?;
        make_db_pointer(&namespace, self.array()?)
    }

    fn code_with_scope(&mut self) -> Result<RawBson> {
        Ok(RawBson::JavaScriptCodeWithScope(
            bson::raw::RawJavaScriptCodeWithScope {
                code: self.string()?,
                scope: self.nested(Self::fields)?,
            },
        ))
    }

    fn fields(&mut self) -> Result<RawDocumentBuf> {
        let mut doc = RawDocumentBuf::new();
        loop {
            let tag = self.byte()?;
            match tag {
                END => return Ok(doc),
                MALFORMED => return Err(corrupt("stored from malformed BSON")),
                _ => {
                    let name = CString::try_from(self.string()?)?;
                    let value = self.body(tag)?;
                    doc.append(name, value);
                }
            }
        }
    }

    fn elements(&mut self) -> Result<RawArrayBuf> {
        let mut array = RawArrayBuf::new();
        loop {
            match self.byte()? {
                END => return Ok(array),
                MALFORMED => return Err(corrupt("stored from malformed BSON")),
                tag => array.push(self.body(tag)?),
            }
        }
    }

    fn string(&mut self) -> Result<String> {
        String::from_utf8(self.str_bytes()?).map_err(|_| corrupt("string is not UTF-8"))
    }

    fn str_bytes(&mut self) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        loop {
            match self.byte()? {
                0x00 => match self.byte()? {
                    0x00 => return Ok(out),
                    0xFF => out.push(0),
                    _ => return Err(corrupt("bad string escape")),
                },
                b => out.push(b),
            }
        }
    }

    fn number(&mut self) -> Result<Exact> {
        let class = self.byte()?;
        let negative = match class {
            NUMBER_NAN => return Ok(Exact::NAN),
            NUMBER_NEGATIVE_INFINITY => return Ok(Exact::NEGATIVE_INFINITY),
            NUMBER_ZERO => return Ok(Exact::ZERO),
            NUMBER_POSITIVE_INFINITY => return Ok(Exact::POSITIVE_INFINITY),
            NUMBER_NEGATIVE => true,
            NUMBER_POSITIVE => false,
            _ => return Err(corrupt("unknown number class")),
        };
        let flip = if negative { 0xFF } else { 0x00 };
        let [high, low] = self.array()?;
        let exponent = i32::from(u16::from_be_bytes([high ^ flip, low ^ flip])) - EXPONENT_BIAS;
        let mut digits = Vec::new();
        loop {
            match self.byte()? ^ flip {
                DIGITS_END => break,
                pair @ 1..=100 => digits.extend([(pair - 1) / 10, (pair - 1) % 10]),
                _ => return Err(corrupt("bad digit pair")),
            }
        }
        // An odd count of digits was padded with one zero.
        if digits.last() == Some(&0) {
            digits.pop();
        }
        Exact::finite(negative, exponent, digits).ok_or_else(|| corrupt("digits not normalised"))
    }

    fn skip_value(&mut self) -> Result<()> {
        let tag = self.byte()?;
        self.skip_body(tag)
    }

    fn skip_body(&mut self, tag: u8) -> Result<()> {
        match tag {
            TAG_MINKEY | TAG_UNDEFINED | TAG_NULL | TAG_MAXKEY => Ok(()),
            TAG_NUMBER => self.skip_number(),
            TAG_STRING | TAG_CODE => self.skip_str(),
            TAG_OBJECT => self.nested(Self::skip_fields),
            TAG_ARRAY => self.nested(Self::skip_elements),
            TAG_BINARY => {
                let len = self.u32()? as usize;
                self.skip(1 + len)
            }
            TAG_OBJECTID => self.skip(12),
            TAG_BOOL => self.skip(1),
            TAG_DATE | TAG_TIMESTAMP => self.skip(8),
            TAG_REGEX => {
                self.skip_str()?;
                self.skip_str()
            }
            TAG_DBPOINTER => {
                let len = self.u32()? as usize;
                self.skip(len + 12)
            }
            TAG_CODE_WITH_SCOPE => {
                self.skip_str()?;
                self.nested(Self::skip_fields)
            }
            other => Err(unknown_tag(other)),
        }
    }

    fn skip_fields(&mut self) -> Result<()> {
        loop {
            match self.byte()? {
                END | MALFORMED => return Ok(()),
                tag => {
                    self.skip_str()?;
                    self.skip_body(tag)?;
                }
            }
        }
    }

    fn skip_elements(&mut self) -> Result<()> {
        loop {
            match self.byte()? {
                END | MALFORMED => return Ok(()),
                tag => self.skip_body(tag)?,
            }
        }
    }

    /// Skips to the 00 00 terminator; 00 FF (an escaped NUL) continues.
    fn skip_str(&mut self) -> Result<()> {
        while self.byte()? != 0x00 || self.byte()? != 0x00 {}
        Ok(())
    }

    fn skip_number(&mut self) -> Result<()> {
        let flip = match self.byte()? {
            NUMBER_NEGATIVE => 0xFF,
            NUMBER_POSITIVE => 0x00,
            NUMBER_NAN | NUMBER_NEGATIVE_INFINITY | NUMBER_ZERO | NUMBER_POSITIVE_INFINITY => {
                return Ok(());
            }
            _ => return Err(corrupt("unknown number class")),
        };
        self.skip(2)?;
        while self.byte()? ^ flip != DIGITS_END {}
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::cmp::Ordering;

    use bson::oid::ObjectId;
    use bson::raw::RawJavaScriptCodeWithScope;
    use bson::{Decimal128, Timestamp};
    use proptest::collection::vec;
    use proptest::prelude::*;

    use super::super::cmp::compare_values;
    use super::*;

    fn dec(text: &str) -> RawBson {
        RawBson::Decimal128(text.parse::<Decimal128>().unwrap())
    }

    fn doc(fields: Vec<(&str, RawBson)>) -> RawBson {
        let mut doc = RawDocumentBuf::new();
        for (name, value) in fields {
            doc.append(CString::try_from(name).unwrap(), value);
        }
        RawBson::Document(doc)
    }

    fn array(values: Vec<RawBson>) -> RawBson {
        let mut array = RawArrayBuf::new();
        for value in values {
            array.push(value);
        }
        RawBson::Array(array)
    }

    fn regex(pattern: &str, options: &str) -> RawBson {
        RawBson::RegularExpression(Regex {
            pattern: CString::try_from(pattern).unwrap(),
            options: CString::try_from(options).unwrap(),
        })
    }

    fn enc(v: &RawBson) -> Vec<u8> {
        encode_key(v.as_raw_bson_ref())
    }

    fn enc_desc(v: &RawBson) -> Vec<u8> {
        let mut out = Vec::new();
        encode_value_desc(&mut out, v.as_raw_bson_ref());
        out
    }

    fn hex(bytes: &[u8]) -> String {
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    }

    /// The persisted format, pinned: a change here is a change on disk.
    #[test]
    fn golden_vectors() {
        let oid = ObjectId::from_bytes([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]);
        let cases: Vec<(RawBson, &str)> = vec![
            (RawBson::MinKey, "01"),
            (RawBson::Undefined, "02"),
            (RawBson::Null, "05"),
            (RawBson::Double(f64::NAN), "0a00"),
            (RawBson::Double(f64::NEG_INFINITY), "0a01"),
            (RawBson::Int32(-5), "0a027ffeccff"),
            (RawBson::Int32(0), "0a03"),
            (RawBson::Double(-0.0), "0a03"),
            (RawBson::Int32(5), "0a0480013300"),
            (RawBson::Int64(5), "0a0480013300"),
            (RawBson::Double(5.0), "0a0480013300"),
            (dec("5.0"), "0a0480013300"),
            (RawBson::Double(0.5), "0a0480003300"),
            (dec("0.01"), "0a047fff0b00"),
            (RawBson::Int64(1234), "0a0480040d2300"),
            (RawBson::Double(f64::INFINITY), "0a05"),
            (RawBson::String(String::new()), "0f0000"),
            (RawBson::String("a\0b".into()), "0f6100ff620000"),
            (RawBson::Symbol("a".into()), "0f610000"),
            (doc(vec![]), "1400"),
            (
                doc(vec![("a", RawBson::Int32(1))]),
                "140a6100000480010b0000",
            ),
            (array(vec![]), "1900"),
            (
                array(vec![RawBson::Int32(1), RawBson::String("x".into())]),
                "190a0480010b000f78000000",
            ),
            (
                RawBson::Binary(Binary {
                    subtype: BinarySubtype::Generic,
                    bytes: vec![0xAB],
                }),
                "1e0000000100ab",
            ),
            (RawBson::ObjectId(oid), "23000102030405060708090a0b"),
            (RawBson::Boolean(false), "2800"),
            (RawBson::Boolean(true), "2801"),
            (
                RawBson::DateTime(DateTime::from_millis(0)),
                "2d8000000000000000",
            ),
            (
                RawBson::DateTime(DateTime::from_millis(-1)),
                "2d7fffffffffffffff",
            ),
            (
                RawBson::Timestamp(Timestamp {
                    time: 1,
                    increment: 2,
                }),
                "2f0000000100000002",
            ),
            (regex("a", "i"), "3261000069 0000"),
            (
                make_db_pointer("db.c", oid.bytes()).unwrap(),
                "370000000464622e63000102030405060708090a0b",
            ),
            (RawBson::JavaScriptCode("f".into()), "3c660000"),
            (
                RawBson::JavaScriptCodeWithScope(RawJavaScriptCodeWithScope {
                    code: "f".into(),
                    scope: RawDocumentBuf::new(),
                }),
                "4166000000",
            ),
            (RawBson::MaxKey, "7f"),
        ];
        for (value, expected) in cases {
            assert_eq!(hex(&enc(&value)), expected.replace(' ', ""), "{value:?}");
        }
        assert_eq!(hex(&enc_desc(&RawBson::Int32(5))), "f5fb7ffeccff");
    }

    #[test]
    fn date_range_holds_exactly_the_dates_up_to_the_cutoff() {
        let id = RawBson::Int32(7);
        for descending in [false, true] {
            let key = |v: &RawBson| {
                let mut out = Vec::new();
                let encode = if descending {
                    encode_value_desc
                } else {
                    encode_value
                };
                encode(&mut out, v.as_raw_bson_ref());
                encode_value(&mut out, id.as_raw_bson_ref());
                out
            };
            let (start, end) = date_range_up_to(1_000, descending);
            let inside = |v: &RawBson| {
                let k = key(v);
                start <= k && k < end
            };
            let date = |ms| RawBson::DateTime(DateTime::from_millis(ms));
            for ms in [i64::MIN, -1, 0, 999, 1_000] {
                assert!(inside(&date(ms)), "{ms} desc={descending}");
            }
            for ms in [1_001, i64::MAX] {
                assert!(!inside(&date(ms)), "{ms} desc={descending}");
            }
            let timestamp = RawBson::Timestamp(Timestamp {
                time: 0,
                increment: 0,
            });
            for other in [
                RawBson::Int64(0),
                RawBson::Boolean(true),
                timestamp,
                RawBson::Null,
            ] {
                assert!(!inside(&other), "{other:?} desc={descending}");
            }
        }
    }

    #[test]
    fn leading_date_reads_the_first_field_only_when_it_is_a_date() {
        let mut key = Vec::new();
        encode_date(&mut key, -86_400_000);
        encode_value(&mut key, RawBsonRef::Int32(1));
        assert_eq!(leading_date(&key, false), Some(-86_400_000));
        invert(&mut key);
        assert_eq!(leading_date(&key, true), Some(-86_400_000));
        assert_eq!(leading_date(&enc(&RawBson::Int64(5)), false), None);
        assert_eq!(leading_date(&[TAG_DATE, 0x80], false), None);
    }

    #[test]
    fn encode_date_matches_encoding_a_date_value() {
        let mut out = Vec::new();
        encode_date(&mut out, 1_700_000_000_000);
        let value = RawBson::DateTime(DateTime::from_millis(1_700_000_000_000));
        assert_eq!(out, enc(&value));
    }

    #[test]
    fn prefix_successor_carries_past_ff() {
        assert_eq!(prefix_successor(&[1, 2]), Some(vec![1, 3]));
        assert_eq!(prefix_successor(&[1, 0xFF]), Some(vec![2]));
        assert_eq!(prefix_successor(&[0xFF, 0xFF]), None);
    }

    #[test]
    fn damaged_keys_are_corrupt_not_panics() {
        for bytes in [
            &[][..],
            &[0x99],
            &[TAG_NUMBER, 0x04, 0x80],
            &[TAG_NUMBER, 0x04, 0x80, 0x01, 0xC8, 0x00],
            &[TAG_NUMBER, 0x04, 0x80, 0x01, 0x01, 0x00],
            &[TAG_STRING, 0x61, 0x00, 0x07],
            &[TAG_STRING, 0xFF, 0x00, 0x00],
            &[TAG_BOOL, 0x02],
            &[TAG_BINARY, 0xFF, 0xFF, 0xFF, 0xFF, 0x00],
            &[TAG_OBJECT, MALFORMED],
        ] {
            let mut input = bytes;
            let err = decode_value(&mut input).unwrap_err();
            assert_eq!(err.kind, crate::ErrorKind::Corrupt, "{bytes:02x?}");
        }
        let deep = vec![TAG_ARRAY; MAX_DEPTH + 10];
        assert!(decode_value(&mut &deep[..]).is_err());
        assert!(skip_value(&deep, false).is_err());
    }

    #[test]
    fn decode_leaves_the_rest_of_the_input() {
        let mut key = enc(&RawBson::String("k".into()));
        encode_value(&mut key, RawBsonRef::Int32(9));
        let mut input = &key[..];
        assert_eq!(
            decode_value(&mut input).unwrap(),
            RawBson::String("k".into())
        );
        assert_eq!(decode_value(&mut input).unwrap(), RawBson::Int32(9));
        assert!(input.is_empty());
    }

    // ---- property tests against the reference comparator ----

    fn text() -> impl Strategy<Value = String> {
        let ch = prop_oneof![
            Just('\0'),
            Just('\u{1}'),
            Just('a'),
            Just('b'),
            Just('é'),
            Just('\u{FFFF}'),
        ];
        prop_oneof![
            4 => vec(ch, 0..4).prop_map(String::from_iter),
            1 => any::<String>(),
        ]
    }

    fn name() -> impl Strategy<Value = String> {
        prop_oneof![Just(String::new()), "[ab]{1,2}", "[a-zé]{0,4}"]
    }

    fn small_number() -> impl Strategy<Value = RawBson> {
        // Halves from -3 to 3 in every type, so equal values of different
        // types meet often.
        (-6i64..=6, 0u32..3, 0u8..4).prop_map(|(halves, zeros, kind)| {
            let whole = halves % 2 == 0;
            match kind {
                0 if whole => RawBson::Int32((halves / 2) as i32),
                1 if whole => RawBson::Int64(halves / 2),
                3 => {
                    let coefficient = halves * 5 * 10i64.pow(zeros);
                    dec(&format!("{coefficient}E-{}", zeros + 1))
                }
                _ => RawBson::Double(halves as f64 / 2.0),
            }
        })
    }

    fn edge_number() -> impl Strategy<Value = RawBson> {
        let two_53 = 9_007_199_254_740_992i64;
        prop::sample::select(vec![
            RawBson::Int32(i32::MIN),
            RawBson::Int32(i32::MAX),
            RawBson::Int64(i64::MIN),
            RawBson::Int64(i64::MAX),
            RawBson::Int64(two_53),
            RawBson::Int64(two_53 + 1),
            RawBson::Double(two_53 as f64),
            RawBson::Double(9_223_372_036_854_775_808.0),
            RawBson::Double(-9_223_372_036_854_775_808.0),
            RawBson::Double(f64::MAX),
            RawBson::Double(f64::MIN),
            RawBson::Double(f64::MIN_POSITIVE),
            RawBson::Double(5e-324),
            RawBson::Double(-5e-324),
            RawBson::Double(0.1),
            RawBson::Double(-0.0),
            RawBson::Double(f64::NAN),
            RawBson::Double(f64::INFINITY),
            RawBson::Double(f64::NEG_INFINITY),
            dec("NaN"),
            dec("Infinity"),
            dec("-Infinity"),
            dec("-0"),
            dec("0.1"),
            dec("1000000000000000055511151231257827E-34"),
            dec("1E-6176"),
            dec("-1E-6176"),
            dec("9.999999999999999999999999999999999E+6144"),
            dec("1E+6144"),
            dec("9223372036854775808"),
            dec("-9223372036854775809"),
            dec("9007199254740993"),
            dec("4.940656458412465441765687928682213E-324"),
        ])
    }

    fn decimal_from_parts() -> impl Strategy<Value = RawBson> {
        let coefficient = prop_oneof![0u128..1000, 0u128..10u128.pow(34)];
        let exponent = prop_oneof![-20i32..20, -6176i32..=6111];
        (any::<bool>(), coefficient, exponent).prop_map(|(negative, c, e)| {
            dec(&format!("{}{c}E{e}", if negative { "-" } else { "" }))
        })
    }

    fn number() -> impl Strategy<Value = RawBson> {
        prop_oneof![
            6 => small_number(),
            2 => edge_number(),
            1 => any::<i32>().prop_map(RawBson::Int32),
            1 => any::<i64>().prop_map(RawBson::Int64),
            1 => any::<u64>().prop_map(|bits| RawBson::Double(f64::from_bits(bits))),
            1 => (any::<i64>(), -60i32..10)
                .prop_map(|(m, e)| RawBson::Double(m as f64 * 2f64.powi(e))),
            1 => any::<[u8; 16]>().prop_map(|b| RawBson::Decimal128(Decimal128::from_bytes(b))),
            2 => decimal_from_parts(),
        ]
    }

    fn date() -> impl Strategy<Value = RawBson> {
        let century = 100 * 365 * 86_400_000i64;
        prop_oneof![-3i64..3, -century..century, any::<i64>()]
            .prop_map(|ms| RawBson::DateTime(DateTime::from_millis(ms)))
    }

    fn leaf() -> impl Strategy<Value = RawBson> {
        let small_u32 = || prop_oneof![0u32..3, any::<u32>()];
        prop_oneof![
            1 => Just(RawBson::MinKey),
            1 => Just(RawBson::MaxKey),
            1 => Just(RawBson::Null),
            1 => Just(RawBson::Undefined),
            8 => number(),
            3 => text().prop_map(RawBson::String),
            1 => text().prop_map(RawBson::Symbol),
            1 => (any::<u8>(), vec(0u8..3, 0..4)).prop_map(|(subtype, bytes)| {
                RawBson::Binary(Binary {
                    subtype: BinarySubtype::from(subtype),
                    bytes,
                })
            }),
            1 => prop::array::uniform12(0u8..2)
                .prop_map(|b| RawBson::ObjectId(ObjectId::from_bytes(b))),
            1 => any::<bool>().prop_map(RawBson::Boolean),
            2 => date(),
            1 => (small_u32(), small_u32())
                .prop_map(|(time, increment)| RawBson::Timestamp(Timestamp { time, increment })),
            1 => (name(), prop_oneof![Just(""), Just("i"), Just("im")])
                .prop_map(|(p, o)| regex(&p, o)),
            1 => text().prop_map(RawBson::JavaScriptCode),
            1 => (name(), prop::array::uniform12(0u8..2))
                .prop_map(|(ns, id)| make_db_pointer(&ns, id).unwrap()),
        ]
    }

    fn fields_to_doc(fields: Vec<(String, RawBson)>) -> RawDocumentBuf {
        let mut doc = RawDocumentBuf::new();
        for (name, value) in fields {
            doc.append(CString::try_from(name).unwrap(), value);
        }
        doc
    }

    /// Any BSON value, nested up to three levels.
    fn value() -> impl Strategy<Value = RawBson> {
        leaf().prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                3 => vec((name(), inner.clone()), 0..4)
                    .prop_map(|fields| RawBson::Document(fields_to_doc(fields))),
                3 => vec(inner.clone(), 0..4).prop_map(array),
                1 => (text(), vec((name(), inner), 0..3)).prop_map(|(code, fields)| {
                    RawBson::JavaScriptCodeWithScope(RawJavaScriptCodeWithScope {
                        code,
                        scope: fields_to_doc(fields),
                    })
                }),
            ]
        })
    }

    fn encode_in(out: &mut Vec<u8>, v: &RawBson, descending: bool) {
        if descending {
            encode_value_desc(out, v.as_raw_bson_ref());
        } else {
            encode_value(out, v.as_raw_bson_ref());
        }
    }

    fn directed(ord: Ordering, descending: bool) -> Ordering {
        if descending { ord.reverse() } else { ord }
    }

    fn reference(a: &RawBson, b: &RawBson) -> Ordering {
        compare_values(a.as_raw_bson_ref(), b.as_raw_bson_ref())
    }

    proptest! {
        #[test]
        fn byte_order_is_bson_order(a in value(), b in value()) {
            let expected = reference(&a, &b);
            prop_assert_eq!(enc(&a).cmp(&enc(&b)), expected);
            prop_assert_eq!(enc_desc(&a).cmp(&enc_desc(&b)), expected.reverse());
        }

        #[test]
        fn numbers_order_exactly_across_types(a in number(), b in number()) {
            prop_assert_eq!(enc(&a).cmp(&enc(&b)), reference(&a, &b));
        }

        #[test]
        fn decoding_gives_back_an_equal_value(x in value(), descending in any::<bool>()) {
            let mut bytes = Vec::new();
            encode_in(&mut bytes, &x, descending);
            let mut input = &bytes[..];
            let decoded = if descending {
                decode_value_desc(&mut input)
            } else {
                decode_value(&mut input)
            };
            let decoded = decoded.unwrap();
            prop_assert!(input.is_empty());
            prop_assert_eq!(reference(&decoded, &x), Ordering::Equal);
            let mut again = Vec::new();
            encode_in(&mut again, &decoded, descending);
            prop_assert_eq!(again, bytes);
        }

        #[test]
        fn concatenated_keys_order_field_by_field(
            a in value(), b in value(), c in value(), d in value(),
            first_desc in any::<bool>(), second_desc in any::<bool>(),
        ) {
            let key = |x: &RawBson, y: &RawBson| {
                let mut out = Vec::new();
                encode_in(&mut out, x, first_desc);
                encode_in(&mut out, y, second_desc);
                out
            };
            let expected = directed(reference(&a, &c), first_desc)
                .then(directed(reference(&b, &d), second_desc));
            prop_assert_eq!(key(&a, &b).cmp(&key(&c, &d)), expected);
        }

        #[test]
        fn skip_value_measures_each_encoding(
            a in value(), b in value(), descending in any::<bool>(),
        ) {
            let mut key = Vec::new();
            encode_in(&mut key, &a, descending);
            let first = key.len();
            encode_in(&mut key, &b, descending);
            prop_assert_eq!(skip_value(&key, descending).unwrap(), first);
            prop_assert_eq!(skip_value(&key[first..], descending).unwrap(), key.len() - first);
        }

        #[test]
        fn date_range_selects_leading_dates_up_to_cutoff(
            v in prop_oneof![date(), value()], cutoff in any::<i64>(), descending in any::<bool>(),
        ) {
            let mut key = Vec::new();
            encode_in(&mut key, &v, descending);
            encode_value(&mut key, RawBsonRef::Int32(1));
            let (start, end) = date_range_up_to(cutoff, descending);
            let inside = start <= key && key < end;
            let due = matches!(v, RawBson::DateTime(d) if d.timestamp_millis() <= cutoff);
            prop_assert_eq!(inside, due);
            let leading = leading_date(&key, descending);
            let expected = match v {
                RawBson::DateTime(d) => Some(d.timestamp_millis()),
                _ => None,
            };
            prop_assert_eq!(leading, expected);
        }
    }
}
