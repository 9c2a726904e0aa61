//! MongoDB's BSON comparison order, the reference every ordered structure
//! in ebb must agree with (sorts, range predicates, index keys).
//!
//! Values compare first by canonical type bracket (MinKey < undefined < null
//! < numbers < strings/symbols < objects < arrays < binData < ObjectId < bool
//! < Date < Timestamp < regex < DBPointer < code < code-with-scope < MaxKey),
//! then within the bracket. All numeric types share one bracket and compare
//! by mathematical value. Strings (and symbols) compare as bytes, or by a
//! collation when the operation has one ([`Cmp::new`]); field names never
//! use the collation.

use std::cmp::Ordering;

use bson::RawBsonRef;

use super::bracket::{TAG_NUMBER, canonical_type, db_pointer_parts};
use super::collation::Collation;
use super::numeric;

/// MongoDB's order, with the collation (if any) that orders strings.
#[derive(Debug, Clone, Copy, Default)]
pub struct Cmp<'c> {
    collation: Option<&'c Collation>,
}

impl<'c> Cmp<'c> {
    /// Byte order for strings: the simple collation.
    pub const BINARY: Cmp<'static> = Cmp { collation: None };

    pub fn new(collation: Option<&'c Collation>) -> Self {
        Cmp { collation }
    }

    pub fn collation(self) -> Option<&'c Collation> {
        self.collation
    }

    /// Compares two values in MongoDB's order.
    pub fn values(self, a: RawBsonRef<'_>, b: RawBsonRef<'_>) -> Ordering {
        let (ta, tb) = (canonical_type(&a), canonical_type(&b));
        if ta != tb {
            return ta.cmp(&tb);
        }
        match (a, b) {
            (
                RawBsonRef::String(x) | RawBsonRef::Symbol(x),
                RawBsonRef::String(y) | RawBsonRef::Symbol(y),
            ) => match self.collation {
                Some(c) => c.compare(x, y),
                None => x.as_bytes().cmp(y.as_bytes()),
            },
            (RawBsonRef::Document(x), RawBsonRef::Document(y)) => self.documents(x, y),
            (RawBsonRef::Array(x), RawBsonRef::Array(y)) => self.arrays(x, y),
            (RawBsonRef::Binary(x), RawBsonRef::Binary(y)) => x
                .bytes
                .len()
                .cmp(&y.bytes.len())
                .then_with(|| u8::from(x.subtype).cmp(&u8::from(y.subtype)))
                .then_with(|| x.bytes.cmp(y.bytes)),
            (RawBsonRef::ObjectId(x), RawBsonRef::ObjectId(y)) => x.bytes().cmp(&y.bytes()),
            (RawBsonRef::Boolean(x), RawBsonRef::Boolean(y)) => x.cmp(&y),
            (RawBsonRef::DateTime(x), RawBsonRef::DateTime(y)) => {
                x.timestamp_millis().cmp(&y.timestamp_millis())
            }
            (RawBsonRef::Timestamp(x), RawBsonRef::Timestamp(y)) => {
                (x.time, x.increment).cmp(&(y.time, y.increment))
            }
            (RawBsonRef::RegularExpression(x), RawBsonRef::RegularExpression(y)) => x
                .pattern
                .as_str()
                .as_bytes()
                .cmp(y.pattern.as_str().as_bytes())
                .then_with(|| {
                    x.options
                        .as_str()
                        .as_bytes()
                        .cmp(y.options.as_str().as_bytes())
                }),
            (RawBsonRef::JavaScriptCode(x), RawBsonRef::JavaScriptCode(y)) => {
                x.as_bytes().cmp(y.as_bytes())
            }
            // Code is not text a collation applies to, nor is its scope.
            (RawBsonRef::JavaScriptCodeWithScope(x), RawBsonRef::JavaScriptCodeWithScope(y)) => x
                .code
                .as_bytes()
                .cmp(y.code.as_bytes())
                .then_with(|| Cmp::BINARY.documents(x.scope, y.scope)),
            // MongoDB compares the value sizes first: namespace length, then
            // namespace bytes, then the ObjectId.
            (RawBsonRef::DbPointer(x), RawBsonRef::DbPointer(y)) => {
                let ((nx, ox), (ny, oy)) = (db_pointer_parts(x), db_pointer_parts(y));
                (nx.len(), nx, ox).cmp(&(ny.len(), ny, oy))
            }
            (x, y) if ta == TAG_NUMBER => numeric::compare(x, y),
            // MinKey, MaxKey, null and undefined are alone in their brackets.
            _ => Ordering::Equal,
        }
    }

    /// Compares documents element by element: type bracket, then field
    /// name, then value; a document that is a prefix of another sorts first.
    pub fn documents(self, a: &bson::RawDocument, b: &bson::RawDocument) -> Ordering {
        let mut ia = a.iter();
        let mut ib = b.iter();
        loop {
            match (ia.next(), ib.next()) {
                (None, None) => return Ordering::Equal,
                (None, Some(_)) => return Ordering::Less,
                (Some(_), None) => return Ordering::Greater,
                (Some(Ok((ka, va))), Some(Ok((kb, vb)))) => {
                    let ord = canonical_type(&va)
                        .cmp(&canonical_type(&vb))
                        .then_with(|| ka.as_str().as_bytes().cmp(kb.as_str().as_bytes()))
                        .then_with(|| self.values(va, vb));
                    if ord != Ordering::Equal {
                        return ord;
                    }
                }
                // Stored documents are validated on the way in; a malformed
                // tail sorts after a well-formed one so the order stays total.
                (Some(Err(_)), Some(Err(_))) => return Ordering::Equal,
                (Some(Err(_)), _) => return Ordering::Greater,
                (_, Some(Err(_))) => return Ordering::Less,
            }
        }
    }

    /// Compares arrays element by element; a prefix sorts first.
    pub fn arrays(self, a: &bson::RawArray, b: &bson::RawArray) -> Ordering {
        let mut ia = a.into_iter();
        let mut ib = b.into_iter();
        loop {
            match (ia.next(), ib.next()) {
                (None, None) => return Ordering::Equal,
                (None, Some(_)) => return Ordering::Less,
                (Some(_), None) => return Ordering::Greater,
                (Some(Ok(va)), Some(Ok(vb))) => {
                    let ord = self.values(va, vb);
                    if ord != Ordering::Equal {
                        return ord;
                    }
                }
                (Some(Err(_)), Some(Err(_))) => return Ordering::Equal,
                (Some(Err(_)), _) => return Ordering::Greater,
                (_, Some(Err(_))) => return Ordering::Less,
            }
        }
    }
}

/// Compares two values in MongoDB's order, strings as bytes.
pub fn compare_values(a: RawBsonRef<'_>, b: RawBsonRef<'_>) -> Ordering {
    Cmp::BINARY.values(a, b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::encoding::bracket::make_db_pointer;
    use bson::oid::ObjectId;
    use bson::spec::BinarySubtype;
    use bson::{Binary, Bson, Decimal128, RawBson, RawDocumentBuf, doc};

    fn raw(value: Bson) -> RawBson {
        let doc = RawDocumentBuf::try_from(&doc! { "v": value }).unwrap();
        doc.get("v").unwrap().unwrap().into()
    }

    fn cmp(a: &RawBson, b: &RawBson) -> Ordering {
        compare_values(a.as_raw_bson_ref(), b.as_raw_bson_ref())
    }

    fn dec(s: &str) -> Bson {
        Bson::Decimal128(s.parse::<Decimal128>().unwrap())
    }

    #[test]
    fn type_brackets_sort_in_mongodb_order() {
        let ascending = [
            Bson::MinKey,
            Bson::Null,
            Bson::Int32(1),
            Bson::String("a".into()),
            Bson::Document(doc! {}),
            Bson::Array(vec![]),
            Bson::Binary(Binary {
                subtype: BinarySubtype::Generic,
                bytes: vec![],
            }),
            Bson::ObjectId(ObjectId::from_bytes([0; 12])),
            Bson::Boolean(false),
            Bson::DateTime(bson::DateTime::from_millis(0)),
            Bson::Timestamp(bson::Timestamp {
                time: 0,
                increment: 0,
            }),
            Bson::RegularExpression(bson::Regex {
                pattern: "re".to_string().try_into().unwrap(),
                options: "".to_string().try_into().unwrap(),
            }),
            Bson::MaxKey,
        ]
        .map(raw);
        for pair in ascending.windows(2) {
            assert_eq!(cmp(&pair[0], &pair[1]), Ordering::Less, "{pair:?}");
            assert_eq!(cmp(&pair[1], &pair[0]), Ordering::Greater, "{pair:?}");
        }
    }

    #[test]
    fn one_equals_one_point_zero_long_one_and_decimal_one() {
        let ones = [
            Bson::Int32(1),
            Bson::Double(1.0),
            Bson::Int64(1),
            dec("1.0"),
        ]
        .map(raw);
        for a in &ones {
            for b in &ones {
                assert_eq!(cmp(a, b), Ordering::Equal, "{a:?} vs {b:?}");
            }
        }
    }

    #[test]
    fn nan_sorts_below_negative_infinity() {
        let nan = raw(Bson::Double(f64::NAN));
        assert_eq!(
            cmp(&nan, &raw(Bson::Double(f64::NEG_INFINITY))),
            Ordering::Less
        );
        assert_eq!(cmp(&nan, &raw(dec("NaN"))), Ordering::Equal);
    }

    #[test]
    fn shorter_object_sorts_before_its_extension() {
        let short = raw(Bson::Document(doc! { "a": 1 }));
        let long = raw(Bson::Document(doc! { "a": 1, "b": 1 }));
        assert_eq!(cmp(&short, &long), Ordering::Less);
    }

    #[test]
    fn objects_compare_field_names_before_values() {
        let a = raw(Bson::Document(doc! { "a": 1 }));
        let b = raw(Bson::Document(doc! { "b": 0 }));
        assert_eq!(cmp(&a, &b), Ordering::Less);
    }

    #[test]
    fn objects_compare_value_type_before_field_name() {
        let string = raw(Bson::Document(doc! { "a": "x" }));
        let number = raw(Bson::Document(doc! { "a": 5 }));
        assert_eq!(cmp(&string, &number), Ordering::Greater);
        let later_name_but_lower_type = raw(Bson::Document(doc! { "z": 5 }));
        assert_eq!(cmp(&string, &later_name_but_lower_type), Ordering::Greater);
    }

    #[test]
    fn strings_compare_as_bytes_with_embedded_nuls() {
        let [a, a_nul, a_one] = ["a", "a\0", "a\u{1}"].map(|s| raw(Bson::String(s.into())));
        assert_eq!(cmp(&a, &a_nul), Ordering::Less);
        assert_eq!(cmp(&a_nul, &a_one), Ordering::Less);
        assert_eq!(cmp(&a, &raw(Bson::Symbol("a".into()))), Ordering::Equal);
    }

    #[test]
    fn arrays_compare_element_by_element_prefix_first() {
        let short = raw(Bson::Array(vec![Bson::Int32(1)]));
        let long = raw(Bson::Array(vec![Bson::Int32(1), Bson::Int32(0)]));
        let bigger = raw(Bson::Array(vec![Bson::Int32(2)]));
        assert_eq!(cmp(&short, &long), Ordering::Less);
        assert_eq!(cmp(&long, &bigger), Ordering::Less);
    }

    #[test]
    fn bin_data_compares_length_then_subtype_then_bytes() {
        let bin = |subtype: u8, bytes: &[u8]| {
            raw(Bson::Binary(Binary {
                subtype: BinarySubtype::from(subtype),
                bytes: bytes.to_vec(),
            }))
        };
        assert_eq!(cmp(&bin(0x80, &[9]), &bin(0, &[0, 0])), Ordering::Less);
        assert_eq!(cmp(&bin(0, &[9]), &bin(4, &[0])), Ordering::Less);
        assert_eq!(cmp(&bin(4, &[1]), &bin(4, &[2])), Ordering::Less);
    }

    #[test]
    fn dates_before_1970_sort_first() {
        let date = |ms| raw(Bson::DateTime(bson::DateTime::from_millis(ms)));
        assert_eq!(cmp(&date(-1), &date(0)), Ordering::Less);
    }

    #[test]
    fn timestamps_compare_unsigned() {
        let ts = |time| raw(Bson::Timestamp(bson::Timestamp { time, increment: 0 }));
        assert_eq!(cmp(&ts(1), &ts(u32::MAX)), Ordering::Less);
    }

    #[test]
    fn db_pointers_compare_namespace_length_first() {
        let pointer = |ns: &str| make_db_pointer(ns, [7; 12]).unwrap();
        assert_eq!(cmp(&pointer("zz"), &pointer("aaa")), Ordering::Less);
        assert_eq!(cmp(&pointer("ab"), &pointer("ac")), Ordering::Less);
        let long = "n".repeat(300);
        assert_eq!(cmp(&pointer("n"), &pointer(&long)), Ordering::Less);
    }

    #[test]
    fn db_pointer_parts_read_back_what_was_built() {
        let built = make_db_pointer("db.coll", [1; 12]).unwrap();
        let RawBson::DbPointer(_) = &built else {
            panic!("not a DBPointer: {built:?}");
        };
        let RawBsonRef::DbPointer(p) = built.as_raw_bson_ref() else {
            unreachable!()
        };
        assert_eq!(db_pointer_parts(p), (b"db.coll".to_vec(), [1; 12]));
    }
}
