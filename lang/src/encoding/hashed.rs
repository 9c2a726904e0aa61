//! The key of a `hashed` index: mongod's 64-bit hash of a BSON value, so
//! that bounds in `explain`, `hint` and the values themselves agree with
//! mongod's (`convertShardKeyToHashed`).
//!
//! The hash is the first 8 bytes (little-endian) of the MD5 of a seed
//! (0, as a 4-byte integer) and the value: its canonical type as a 4-byte
//! integer, then, for a number, the number truncated to a 64-bit integer
//! (every numeric type alike, NaN as 0, beyond the range at its ends, 2^63
//! at the lower one as mongod keeps it);
//! for a document or an array, each element in turn with its name, and
//! its end as an element of type 0 without a name; for anything else, the
//! value's BSON bytes. A Date and a Timestamp with the same 8 bytes hash
//! alike, as in mongod.

use bson::{RawBsonRef, RawDocument, RawDocumentBuf};
use md5::{Digest, Md5};

use super::decimal::{self, Rounding};

/// mongod's hash of `value` (seed 0).
pub fn hash64(value: RawBsonRef<'_>) -> i64 {
    let mut md5 = Md5::new();
    md5.update(0i32.to_le_bytes());
    element(&mut md5, None, value);
    let digest = md5.finalize();
    i64::from_le_bytes(digest[..8].try_into().expect("an MD5 digest has 16 bytes"))
}

fn element(md5: &mut Md5, name: Option<&str>, value: RawBsonRef<'_>) {
    md5.update(canonical_type(value).to_le_bytes());
    if let Some(name) = name {
        md5.update(name.as_bytes());
        md5.update([0]);
    }
    match value {
        RawBsonRef::Document(d) => members(md5, d),
        RawBsonRef::Array(a) => {
            for (i, value) in a.into_iter().flatten().enumerate() {
                element(md5, Some(&i.to_string()), value);
            }
            end(md5);
        }
        RawBsonRef::Double(_)
        | RawBsonRef::Int32(_)
        | RawBsonRef::Int64(_)
        | RawBsonRef::Decimal128(_) => md5.update(as_long(value).to_le_bytes()),
        other => md5.update(value_bytes(other)),
    }
}

/// The elements of a document, then its end.
fn members(md5: &mut Md5, doc: &RawDocument) {
    for (name, value) in doc.iter().flatten() {
        element(md5, Some(name.as_str()), value);
    }
    end(md5);
}

/// The end of a document or an array, which mongod hashes as an element of
/// type 0 without a name.
fn end(md5: &mut Md5) {
    md5.update(0i32.to_le_bytes());
}

/// The number as a 64-bit integer: truncated (a decimal rounded half to
/// even), NaN as 0, saturated at the ends of the range.
fn as_long(value: RawBsonRef<'_>) -> i64 {
    match value {
        RawBsonRef::Int32(i) => i64::from(i),
        RawBsonRef::Int64(i) => i,
        // 2^63 itself hashes as the lowest integer: mongod keeps what its
        // unguarded cast once gave, for the hashes already on disk.
        RawBsonRef::Double(9_223_372_036_854_775_808.0) => i64::MIN,
        // `as` truncates toward zero, saturates and maps NaN to 0.
        RawBsonRef::Double(d) => d as i64,
        RawBsonRef::Decimal128(d) => {
            let d = decimal::decode(d);
            match decimal::to_i64(d, Rounding::HalfEven) {
                Some(i) => i,
                None => {
                    let f = decimal::to_f64(d);
                    if f.is_nan() { 0 } else { f as i64 }
                }
            }
        }
        _ => 0,
    }
}

/// The canonical type mongod's hash starts with.
fn canonical_type(value: RawBsonRef<'_>) -> i32 {
    match value {
        RawBsonRef::MinKey => -1,
        RawBsonRef::Undefined => 0,
        RawBsonRef::Null => 5,
        RawBsonRef::Double(_)
        | RawBsonRef::Int32(_)
        | RawBsonRef::Int64(_)
        | RawBsonRef::Decimal128(_) => 10,
        RawBsonRef::String(_) | RawBsonRef::Symbol(_) => 15,
        RawBsonRef::Document(_) => 20,
        RawBsonRef::Array(_) => 25,
        RawBsonRef::Binary(_) => 30,
        RawBsonRef::ObjectId(_) => 35,
        RawBsonRef::Boolean(_) => 40,
        RawBsonRef::DateTime(_) | RawBsonRef::Timestamp(_) => 45,
        RawBsonRef::RegularExpression(_) => 50,
        RawBsonRef::DbPointer(_) => 55,
        RawBsonRef::JavaScriptCode(_) => 60,
        RawBsonRef::JavaScriptCodeWithScope(_) => 65,
        RawBsonRef::MaxKey => 127,
    }
}

/// The bytes of `value` as BSON stores them after its type and name.
fn value_bytes(value: RawBsonRef<'_>) -> Vec<u8> {
    let mut doc = RawDocumentBuf::new();
    doc.append(bson::raw::cstr!(""), value);
    let bytes = doc.as_bytes();
    // Length (4), type (1), the empty name's end (1); the document's end.
    bytes[6..bytes.len() - 1].to_vec()
}

#[cfg(test)]
mod tests {
    use bson::oid::ObjectId;
    use bson::spec::BinarySubtype;
    use bson::{Binary, Bson, DateTime, Regex, Timestamp, doc};

    use super::hash64;

    fn hash(value: Bson) -> i64 {
        let doc = bson::RawDocumentBuf::try_from(&doc! { "check": value }).unwrap();
        hash64(doc.get("check").unwrap().unwrap())
    }

    /// mongod's own test vectors for its hashed index keys.
    #[test]
    fn values_hash_to_mongods_hashes() {
        for v in [Bson::Int32(42), Bson::Double(42.123), Bson::Int64(42)] {
            assert_eq!(hash(v), -944302157085130861);
        }
        for v in [Bson::Int32(0), Bson::Double(0.456), Bson::Double(f64::NAN)] {
            assert_eq!(hash(v), 4854801880128277513);
        }
        assert_eq!(hash(Bson::Double(1.987)), 5902408780260971510);
        assert_eq!(hash(Bson::Double(-1.789)), 1140205862565771219);
        assert_eq!(hash(Bson::Int32(i32::MIN)), 6165898260261354870);
        assert_eq!(hash(Bson::Double(f64::from(i32::MAX))), 1143184177162245883);
        assert_eq!(hash(Bson::Double(f64::MAX)), 921523596458303250);
        assert_eq!(hash(Bson::Int64(i64::MAX)), 921523596458303250);
        assert_eq!(hash(Bson::Double(-f64::MAX)), 4532067210535695462);
        assert_eq!(hash(Bson::Int64(i64::MIN)), 4532067210535695462);
        assert_eq!(
            hash(Bson::Double(9_223_372_036_854_775_808.0)),
            4532067210535695462
        );
        assert_eq!(hash(Bson::Double(f64::INFINITY)), 921523596458303250);
        assert_eq!(
            hash(Bson::Decimal128("42.4".parse().unwrap())),
            -944302157085130861
        );
        assert_eq!(hash(Bson::MinKey), 7961148599568647290);
        assert_eq!(hash(Bson::MaxKey), 5504842513779440750);
        assert_eq!(hash(Bson::Undefined), 40158834000849533);
        assert_eq!(hash(Bson::Null), 2338878944348059895);
        assert_eq!(hash(Bson::String("abc".into())), 8478485326885698097);
        assert_eq!(hash(Bson::Symbol("abc".into())), 8478485326885698097);
        assert_eq!(hash(Bson::String(String::new())), 2049396243249673340);
        assert_eq!(
            hash(Bson::Document(doc! { "a": "abc", "b": 123i64 })),
            4771603801758380216
        );
        assert_eq!(hash(Bson::Document(doc! {})), 7980500913326740417);
        assert_eq!(
            hash(Bson::Array(vec!["bar".into(), "baz".into(), "qux".into()])),
            -2938911267422831539
        );
        assert_eq!(hash(Bson::Array(vec![])), 8849948234993459283);
        let bytes = vec![0, 1, 2, 3, 4, 6];
        let bin = |subtype, bytes: Vec<u8>| Bson::Binary(Binary { subtype, bytes });
        assert_eq!(
            hash(bin(BinarySubtype::Generic, bytes.clone())),
            7252465090394235301
        );
        assert_eq!(
            hash(bin(BinarySubtype::UserDefined(0x80), bytes)),
            5736670452907618262
        );
        assert_eq!(
            hash(bin(BinarySubtype::Uuid, (0..16).collect())),
            6084661258071355978
        );
        let oid = |hex: &str| Bson::ObjectId(ObjectId::parse_str(hex).unwrap());
        assert_eq!(hash(oid("010203040506070809101112")), -5588663249627035708);
        assert_eq!(hash(oid("000000000000000000000000")), -4293118519463489418);
        assert_eq!(hash(Bson::Boolean(true)), 6405873908747105701);
        assert_eq!(hash(Bson::Boolean(false)), 6289544573401934092);
        assert_eq!(
            hash(Bson::DateTime(DateTime::from_millis(0x5566778811223344))),
            4476222765095560467
        );
        let ts = Timestamp {
            time: 0x55667788,
            increment: 0x11223344,
        };
        assert_eq!(hash(Bson::Timestamp(ts)), 4476222765095560467);
        assert_eq!(
            hash(Bson::DateTime(DateTime::from_millis(0))),
            -1178696894582842035
        );
        let regex = |p: &str, o: &str| {
            Bson::RegularExpression(Regex {
                pattern: p.to_owned().try_into().unwrap(),
                options: o.to_owned().try_into().unwrap(),
            })
        };
        assert_eq!(hash(regex("mongodb", "")), -7275792090268217043);
        assert_eq!(hash(regex(".*", "i")), 7095855029187981886);
        assert_eq!(
            hash(Bson::JavaScriptCode("func f() { return 1; }".into())),
            6861638109178014270
        );
    }
}
