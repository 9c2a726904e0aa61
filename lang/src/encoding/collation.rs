//! Collations: MongoDB's `collation` document parsed, checked and resolved
//! to an ICU4X collator, which then orders strings and writes their sort
//! keys (the bytes an index with a collation stores instead of the string).
//!
//! `{locale: "simple"}` is no collation at all: [`Collation::parse`] returns
//! `None` for it and every caller compares bytes. Anything else is resolved
//! to the full specification mongod reports (every field present, the
//! locale's defaults filled in) so `listIndexes`, `listCollections` and
//! equality between an index's and a query's collation all use one form.
//!
//! ICU4X differs from the ICU4C that mongod links in two places, and this
//! module says so rather than pretend: the French secondary order
//! (`backwards`) cannot be set, only taken from the locale (it is on for
//! `fr_CA` alone), so asking for another value is refused; and input is
//! always normalised, so `normalization: false` (ICU's "assume FCD input")
//! gives the result `normalization: true` gives, which is the correct
//! order for every input where the two differ.
//!
//! This module does not compare BSON values (that is `cmp`, which calls
//! [`Collation::compare`] for strings) and does not know about indexes.

use std::cmp::Ordering;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use bson::{Document, RawBsonRef, RawDocument};
use icu_collator::options::{AlternateHandling, CaseLevel, CollatorOptions, MaxVariable, Strength};
use icu_collator::preferences::{CollationCaseFirst, CollationNumericOrdering};
use icu_collator::{Collator, CollatorBorrowed, CollatorPreferences};
use icu_locale_core::Locale;

use crate::error::{Error, ErrorKind, Result};

/// The collator version mongod 8.0 reports (its ICU); a spec naming another
/// version is refused, as mongod refuses it.
pub const VERSION: &str = "57.1";

/// The languages MongoDB documents collation support for (its "Collation
/// Locales" table); a locale is one of these, optionally with a script
/// and/or a region, and optionally a `@collation=` variant.
const LANGUAGES: &[&str] = &[
    "af", "am", "ar", "as", "az", "be", "bg", "bn", "bo", "bs", "ca", "chr", "cs", "cy", "da",
    "de", "dsb", "dz", "ee", "el", "en", "eo", "es", "et", "fa", "fi", "fil", "fo", "fr", "ga",
    "gl", "gu", "ha", "haw", "he", "hi", "hr", "hsb", "hu", "hy", "id", "ig", "is", "it", "ja",
    "ka", "kk", "kl", "km", "kn", "ko", "kok", "ky", "lb", "lkt", "ln", "lo", "lt", "lv", "mk",
    "ml", "mn", "mr", "ms", "mt", "my", "nb", "ne", "nl", "nn", "om", "or", "pa", "pl", "ps", "pt",
    "ro", "ru", "se", "si", "sk", "sl", "smn", "sq", "sr", "sv", "sw", "ta", "te", "th", "tk",
    "to", "tr", "ug", "uk", "ur", "uz", "vi", "wae", "yi", "yo", "zh", "zu",
];

/// `@collation=` variants ICU4X's compiled data carries, by ICU's keyword
/// and the BCP 47 type it stands for. (`search` is not in the data, so it
/// is refused rather than silently served by the default order.)
const VARIANTS: &[(&str, &str)] = &[
    ("big5han", "big5han"),
    ("compat", "compat"),
    ("dictionary", "dict"),
    ("emoji", "emoji"),
    ("eor", "eor"),
    ("gb2312han", "gb2312"),
    ("phonebook", "phonebk"),
    ("phonetic", "phonetic"),
    ("pinyin", "pinyin"),
    ("standard", "standard"),
    ("stroke", "stroke"),
    ("traditional", "trad"),
    ("unihan", "unihan"),
    ("zhuyin", "zhuyin"),
];

/// Every field of a resolved collation, as mongod reports it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Spec {
    pub locale: String,
    pub case_level: bool,
    /// `"upper"`, `"lower"` or `"off"`.
    pub case_first: &'static str,
    /// 1 (primary) to 5 (identical).
    pub strength: i32,
    pub numeric_ordering: bool,
    /// `"non-ignorable"` or `"shifted"`.
    pub alternate: &'static str,
    /// `"punct"` or `"space"`.
    pub max_variable: &'static str,
    pub normalization: bool,
    pub backwards: bool,
}

impl Spec {
    /// The spec of a resolved document ([`Collation::to_document`]'s
    /// shape, every field present with a known value), read without
    /// validation; `None` for anything else.
    fn from_resolved(doc: &Document) -> Option<Spec> {
        let known = |field: &str, allowed: &[&'static str]| -> Option<&'static str> {
            let v = doc.get_str(field).ok()?;
            allowed.iter().find(|a| **a == v).copied()
        };
        if doc.get_str("version").ok()? != VERSION {
            return None;
        }
        Some(Spec {
            locale: doc
                .get_str("locale")
                .ok()
                .filter(|l| *l != "simple")?
                .to_owned(),
            case_level: doc.get_bool("caseLevel").ok()?,
            case_first: known("caseFirst", &["upper", "lower", "off"])?,
            strength: doc
                .get_i32("strength")
                .ok()
                .filter(|s| (1..=5).contains(s))?,
            numeric_ordering: doc.get_bool("numericOrdering").ok()?,
            alternate: known("alternate", &["non-ignorable", "shifted"])?,
            max_variable: known("maxVariable", &["punct", "space"])?,
            normalization: doc.get_bool("normalization").ok()?,
            backwards: doc.get_bool("backwards").ok()?,
        })
    }
}

/// A resolved collation: its specification and the collator serving it.
pub struct Collation {
    spec: Spec,
    collator: CollatorBorrowed<'static>,
}

impl std::fmt::Debug for Collation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Collation").field(&self.spec).finish()
    }
}

impl PartialEq for Collation {
    fn eq(&self, other: &Self) -> bool {
        self.spec == other.spec
    }
}

impl Eq for Collation {}

impl Collation {
    /// Parses a `collation` value as a command, `create` or an index spec
    /// gives it. `Ok(None)` is the simple (binary) collation.
    pub fn parse(value: RawBsonRef<'_>) -> Result<Option<Arc<Collation>>> {
        let RawBsonRef::Document(doc) = value else {
            return Err(Error::type_mismatch(format!(
                "BSON field 'collation' is the wrong type '{}', expected type 'object'",
                crate::encoding::display::type_name(&value)
            )));
        };
        let Some(spec) = parse_spec(doc)? else {
            return Ok(None);
        };
        cached(spec).map(Some)
    }

    /// [`Collation::parse`] of a stored specification. Planning reads one
    /// per collated index per query, so a complete resolved spec (what ebb
    /// stores) goes straight to the collator cache; anything else takes
    /// the full parse.
    pub fn from_document(doc: &Document) -> Result<Option<Arc<Collation>>> {
        if let Some(spec) = Spec::from_resolved(doc) {
            return cached(spec).map(Some);
        }
        let raw = bson::RawDocumentBuf::try_from(doc)
            .map_err(|e| Error::corrupt(format!("stored collation: {e}")))?;
        Collation::parse(RawBsonRef::Document(&raw))
    }

    pub fn spec(&self) -> &Spec {
        &self.spec
    }

    /// The full specification, every field present, as mongod shows it.
    pub fn to_document(&self) -> Document {
        let s = &self.spec;
        bson::doc! {
            "locale": &s.locale,
            "caseLevel": s.case_level,
            "caseFirst": s.case_first,
            "strength": s.strength,
            "numericOrdering": s.numeric_ordering,
            "alternate": s.alternate,
            "maxVariable": s.max_variable,
            "normalization": s.normalization,
            "backwards": s.backwards,
            "version": VERSION,
        }
    }

    /// Orders two strings.
    pub fn compare(&self, a: &str, b: &str) -> Ordering {
        self.collator.compare(a, b)
    }

    /// Appends the sort key of `s`: byte order of keys is [`Self::compare`]
    /// order, and strings equal under the collation have equal keys.
    pub fn write_sort_key(&self, s: &str, out: &mut Vec<u8>) {
        // Writing into a Vec cannot fail.
        let _ = self.collator.write_sort_key_to(s, out);
    }
}

/// An operation's `collation` argument, before its collection is known.
#[derive(Debug, Clone, Default, PartialEq)]
pub enum Choice {
    /// None given: the collection's default collation applies.
    #[default]
    CollectionDefault,
    /// Given; `None` is `{locale: "simple"}`, which overrides a default.
    Given(Option<Arc<Collation>>),
}

impl Choice {
    /// Parses an operation's optional `collation` argument. An empty
    /// document is no argument at all, as in mongod (which reads `{}` as
    /// "not given"), so the collection's default applies; `create` and
    /// index specifications, which have no default to fall back on, parse
    /// with [`Collation::parse`] and refuse it.
    pub fn parse(value: Option<RawBsonRef<'_>>) -> Result<Choice> {
        match value {
            None => Ok(Choice::CollectionDefault),
            Some(RawBsonRef::Document(d)) if d.is_empty() => Ok(Choice::CollectionDefault),
            Some(v) => Ok(Choice::Given(Collation::parse(v)?)),
        }
    }

    /// The collation the operation runs with on a collection whose
    /// default collation is `default`.
    pub fn resolve(&self, default: Option<Arc<Collation>>) -> Option<Arc<Collation>> {
        match self {
            Choice::Given(c) => c.clone(),
            Choice::CollectionDefault => default,
        }
    }
}

/// Whether two optional collations are the same (both simple, or the same
/// resolved specification): an index serves a query only then.
pub fn same(a: Option<&Collation>, b: Option<&Collation>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(x), Some(y)) => x.spec == y.spec,
        _ => false,
    }
}

/// Collators are built once per specification and shared: commands name
/// the same few collations over and over.
fn cached(spec: Spec) -> Result<Arc<Collation>> {
    static CACHE: OnceLock<Mutex<HashMap<Spec, Arc<Collation>>>> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    if let Some(found) = cache.lock().unwrap_or_else(|p| p.into_inner()).get(&spec) {
        return Ok(found.clone());
    }
    let built = Arc::new(build(spec.clone())?);
    cache
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .insert(spec, built.clone());
    Ok(built)
}

/// The fields of a collation document, each `None` when absent.
#[derive(Default)]
struct Given<'a> {
    locale: Option<&'a str>,
    case_level: Option<bool>,
    case_first: Option<&'a str>,
    strength: Option<i64>,
    numeric_ordering: Option<bool>,
    alternate: Option<&'a str>,
    max_variable: Option<&'a str>,
    normalization: Option<bool>,
    backwards: Option<bool>,
}

/// Parses and checks a collation document; `None` for `{locale: "simple"}`.
fn parse_spec(doc: &RawDocument) -> Result<Option<Spec>> {
    let mut given = Given::default();
    let mut version = None;
    let mut fields = 0;
    for element in doc {
        let (name, value) = element?;
        fields += 1;
        let name = name.as_str();
        match name {
            "locale" => given.locale = Some(string_field(name, value)?),
            "caseLevel" => given.case_level = Some(bool_field(name, value)?),
            "caseFirst" => given.case_first = Some(string_field(name, value)?),
            "strength" => given.strength = Some(integer_field(name, value)?),
            "numericOrdering" => given.numeric_ordering = Some(bool_field(name, value)?),
            "alternate" => given.alternate = Some(string_field(name, value)?),
            "maxVariable" => given.max_variable = Some(string_field(name, value)?),
            "normalization" => given.normalization = Some(bool_field(name, value)?),
            "backwards" => given.backwards = Some(bool_field(name, value)?),
            "version" => version = Some(string_field(name, value)?),
            other => {
                return Err(Error::new(
                    ErrorKind::UnknownField,
                    format!("BSON field 'collation.{other}' is an unknown field."),
                ));
            }
        }
    }
    let Some(locale) = given.locale else {
        return Err(Error::new(
            ErrorKind::MissingField,
            "BSON field 'collation.locale' is missing but a required field",
        ));
    };
    if locale == "simple" {
        if fields > 1 {
            return Err(Error::failed_to_parse(format!(
                "If \"locale\" is set to \"simple\", then no other fields can be set: {}",
                show(doc)
            )));
        }
        return Ok(None);
    }
    if let Some(v) = version
        && v != VERSION
    {
        return Err(Error::new(
            ErrorKind::IncompatibleCollationVersion,
            format!(
                "Requested collation version {v} but the only available collator version was {VERSION}. Requested collation spec: {}",
                show(doc)
            ),
        ));
    }
    let locale_tag = icu_locale(locale)
        .ok_or_else(|| Error::bad_value(format!("Field 'locale' is invalid in: {}", show(doc))))?;
    let locale_backwards = locale == "fr_CA" || locale.starts_with("fr_CA@");
    let strength = given.strength.unwrap_or(3);
    if !(1..=5).contains(&strength) {
        return Err(Error::failed_to_parse(format!(
            "Field 'strength' must be an integer 1 through 5. Got: {strength}"
        )));
    }
    let spec = Spec {
        locale: locale.to_owned(),
        case_level: given.case_level.unwrap_or(false),
        case_first: one_of(
            "caseFirst",
            given.case_first,
            &["upper", "lower", "off"],
            default_case_first(&locale_tag),
        )?,
        strength: strength as i32,
        numeric_ordering: given.numeric_ordering.unwrap_or(false),
        alternate: one_of(
            "alternate",
            given.alternate,
            &["non-ignorable", "shifted"],
            "non-ignorable",
        )?,
        max_variable: one_of(
            "maxVariable",
            given.max_variable,
            &["punct", "space"],
            "punct",
        )?,
        normalization: given.normalization.unwrap_or(false),
        backwards: given.backwards.unwrap_or(locale_backwards),
    };
    if spec.backwards != locale_backwards {
        return Err(Error::not_implemented(&format!(
            "'backwards: {}' for locale '{locale}' (ebb's collator takes the French secondary order from the locale only)",
            spec.backwards
        )));
    }
    Ok(Some(spec))
}

/// Builds the ICU4X collator for a checked specification.
fn build(spec: Spec) -> Result<Collation> {
    let locale = icu_locale(&spec.locale)
        .ok_or_else(|| Error::bad_value(format!("Field 'locale' is invalid: {}", spec.locale)))?;
    let mut prefs = CollatorPreferences::from(&locale);
    prefs.case_first = Some(match spec.case_first {
        "upper" => CollationCaseFirst::Upper,
        "lower" => CollationCaseFirst::Lower,
        _ => CollationCaseFirst::False,
    });
    prefs.numeric_ordering = Some(if spec.numeric_ordering {
        CollationNumericOrdering::True
    } else {
        CollationNumericOrdering::False
    });
    let mut options = CollatorOptions::default();
    options.strength = Some(match spec.strength {
        1 => Strength::Primary,
        2 => Strength::Secondary,
        3 => Strength::Tertiary,
        4 => Strength::Quaternary,
        _ => Strength::Identical,
    });
    options.case_level = Some(if spec.case_level {
        CaseLevel::On
    } else {
        CaseLevel::Off
    });
    options.alternate_handling = Some(if spec.alternate == "shifted" {
        AlternateHandling::Shifted
    } else {
        AlternateHandling::NonIgnorable
    });
    options.max_variable = Some(if spec.max_variable == "space" {
        MaxVariable::Space
    } else {
        MaxVariable::Punctuation
    });
    let collator = Collator::try_new(prefs, options).map_err(|e| {
        Error::new(
            ErrorKind::BadValue,
            format!("Field 'locale' is invalid: {} ({e})", spec.locale),
        )
    })?;
    Ok(Collation { spec, collator })
}

/// MongoDB's locale (`de_AT`, `zh_Hant`, `de@collation=phonebook`) as a
/// BCP 47 locale, or `None` when it is not one MongoDB supports.
fn icu_locale(locale: &str) -> Option<Locale> {
    let (base, variant) = match locale.split_once('@') {
        Some((base, keyword)) => (base, Some(keyword.strip_prefix("collation=")?)),
        None => (locale, None),
    };
    let mut parts = base.split('_');
    let language = parts.next()?;
    if !LANGUAGES.contains(&language) {
        return None;
    }
    let mut tag = language.to_owned();
    for part in parts {
        let script = part.len() == 4
            && part.starts_with(|c: char| c.is_ascii_uppercase())
            && part[1..].chars().all(|c| c.is_ascii_lowercase());
        let region = (part.len() == 2 && part.chars().all(|c| c.is_ascii_uppercase()))
            || (part.len() == 3 && part.chars().all(|c| c.is_ascii_digit()));
        let posix = part == "POSIX";
        if !(script || region || posix) {
            return None;
        }
        tag.push('-');
        tag.push_str(if posix { "posix" } else { part });
    }
    if let Some(variant) = variant {
        let (_, bcp47) = VARIANTS.iter().find(|(icu, _)| *icu == variant)?;
        tag.push_str("-u-co-");
        tag.push_str(bcp47);
    }
    Locale::try_from_str(&tag).ok()
}

/// The locale's own `caseFirst` (Danish and Maltese sort upper case first).
fn default_case_first(locale: &Locale) -> &'static str {
    match locale.id.language.as_str() {
        "da" | "mt" => "upper",
        _ => "off",
    }
}

fn one_of(
    field: &str,
    given: Option<&str>,
    allowed: &[&'static str],
    default: &'static str,
) -> Result<&'static str> {
    let Some(value) = given else {
        return Ok(default);
    };
    allowed
        .iter()
        .find(|a| **a == value)
        .copied()
        .ok_or_else(|| {
            let names: Vec<String> = allowed.iter().map(|a| format!("'{a}'")).collect();
            Error::failed_to_parse(format!(
                "Field '{field}' must be {}. Got: {value}",
                names.join(" or ")
            ))
        })
}

fn string_field<'a>(name: &str, value: RawBsonRef<'a>) -> Result<&'a str> {
    match value {
        RawBsonRef::String(s) => Ok(s),
        other => Err(wrong_type(name, other, "string")),
    }
}

fn bool_field(name: &str, value: RawBsonRef<'_>) -> Result<bool> {
    match value {
        RawBsonRef::Boolean(b) => Ok(b),
        other => Err(wrong_type(name, other, "bool")),
    }
}

/// An integer, given as any number type with an integral value.
fn integer_field(name: &str, value: RawBsonRef<'_>) -> Result<i64> {
    let n = match value {
        RawBsonRef::Int32(n) => Some(i64::from(n)),
        RawBsonRef::Int64(n) => Some(n),
        RawBsonRef::Double(d) if d.fract() == 0.0 && d.abs() < 1e18 => Some(d as i64),
        RawBsonRef::Double(d) => {
            return Err(Error::failed_to_parse(format!(
                "Field '{name}' must be an integer 1 through 5. Got: {d}"
            )));
        }
        _ => None,
    };
    n.ok_or_else(|| wrong_type(name, value, "int"))
}

fn wrong_type(name: &str, value: RawBsonRef<'_>, expected: &str) -> Error {
    Error::type_mismatch(format!(
        "BSON field 'collation.{name}' is the wrong type '{}', expected type '{expected}'",
        crate::encoding::display::type_name(&value)
    ))
}

fn show(doc: &RawDocument) -> String {
    Document::try_from(doc)
        .map(|d| d.to_string())
        .unwrap_or_else(|_| "<invalid>".into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::rawdoc;

    fn collation(doc: bson::RawDocumentBuf) -> Arc<Collation> {
        Collation::parse(RawBsonRef::Document(&doc))
            .unwrap()
            .expect("not simple")
    }

    fn error(doc: bson::RawDocumentBuf) -> Error {
        Collation::parse(RawBsonRef::Document(&doc)).unwrap_err()
    }

    fn key(c: &Collation, s: &str) -> Vec<u8> {
        let mut out = Vec::new();
        c.write_sort_key(s, &mut out);
        out
    }

    #[test]
    fn simple_is_no_collation() {
        let doc = rawdoc! { "locale": "simple" };
        assert!(
            Collation::parse(RawBsonRef::Document(&doc))
                .unwrap()
                .is_none()
        );
        let err = error(rawdoc! { "locale": "simple", "strength": 2 });
        assert_eq!(err.kind, ErrorKind::FailedToParse);
    }

    #[test]
    fn an_operations_empty_collation_is_the_collection_default() {
        // mongod reads an operation's `collation: {}` as not given; a
        // collation document of its own (`create`, an index) needs a locale.
        let empty = rawdoc! {};
        assert_eq!(
            Choice::parse(Some(RawBsonRef::Document(&empty))).unwrap(),
            Choice::CollectionDefault
        );
        assert_eq!(error(rawdoc! {}).kind, ErrorKind::MissingField);
    }

    #[test]
    fn secondary_strength_ignores_case() {
        // A case-insensitive lookup: "ping" and "PING" with
        // {locale: "en_US", strength: 2}.
        let c = collation(rawdoc! { "locale": "en_US", "strength": 2 });
        assert_eq!(c.compare("ping", "PING"), Ordering::Equal);
        assert_eq!(key(&c, "ping"), key(&c, "PING"));
        assert_ne!(c.compare("ping", "píng"), Ordering::Equal);
        let tertiary = collation(rawdoc! { "locale": "en_US" });
        assert_ne!(tertiary.compare("ping", "PING"), Ordering::Equal);
    }

    #[test]
    fn primary_strength_ignores_accents() {
        let c = collation(rawdoc! { "locale": "fr", "strength": 1 });
        assert_eq!(c.compare("cote", "côté"), Ordering::Equal);
        assert_eq!(key(&c, "cote"), key(&c, "Côté"));
    }

    #[test]
    fn sort_keys_order_like_compare() {
        let c = collation(rawdoc! { "locale": "en_US" });
        let words = [
            "a", "B", "b", "résumé", "resume", "Zebra", "apple", "", "10", "9",
        ];
        for x in words {
            for y in words {
                assert_eq!(key(&c, x).cmp(&key(&c, y)), c.compare(x, y), "{x} vs {y}");
            }
        }
    }

    #[test]
    fn numeric_ordering_orders_digit_runs_by_value() {
        let c = collation(rawdoc! { "locale": "en_US", "numericOrdering": true });
        assert_eq!(c.compare("9", "10"), Ordering::Less);
        let plain = collation(rawdoc! { "locale": "en_US" });
        assert_eq!(plain.compare("9", "10"), Ordering::Greater);
    }

    #[test]
    fn case_first_upper_puts_capitals_first() {
        let c = collation(rawdoc! { "locale": "en_US", "caseFirst": "upper" });
        assert_eq!(c.compare("A", "a"), Ordering::Less);
        let lower = collation(rawdoc! { "locale": "en_US", "caseFirst": "lower" });
        assert_eq!(lower.compare("A", "a"), Ordering::Greater);
    }

    #[test]
    fn shifted_alternate_ignores_punctuation() {
        let c = collation(rawdoc! { "locale": "en_US", "alternate": "shifted", "strength": 3 });
        assert_eq!(c.compare("a-b", "ab"), Ordering::Equal);
        let plain = collation(rawdoc! { "locale": "en_US" });
        assert_ne!(plain.compare("a-b", "ab"), Ordering::Equal);
    }

    #[test]
    fn full_spec_has_every_field() {
        // jstests/core/query/collation/collation.js: fr_CA resolves to backwards: true.
        let c = collation(rawdoc! { "locale": "fr_CA" });
        assert_eq!(
            c.to_document(),
            bson::doc! {
                "locale": "fr_CA", "caseLevel": false, "caseFirst": "off", "strength": 3,
                "numericOrdering": false, "alternate": "non-ignorable", "maxVariable": "punct",
                "normalization": false, "backwards": true, "version": "57.1",
            }
        );
        let round = Collation::from_document(&c.to_document()).unwrap().unwrap();
        assert!(same(Some(&round), Some(&c)));
    }

    #[test]
    fn bad_specifications_get_mongods_errors() {
        // jstests/core/query/collation/collation.js and invalid_collation_locale.js.
        assert_eq!(error(rawdoc! {}).kind, ErrorKind::MissingField);
        assert_eq!(error(rawdoc! { "blah": 1 }).kind, ErrorKind::UnknownField);
        assert_eq!(
            error(rawdoc! { "locale": "en", "blah": 1 }).kind,
            ErrorKind::UnknownField
        );
        for bad in [
            "xx",
            "x_invalid",
            "X_invalid",
            "i-invalid",
            "I-invalid",
            "xx_invalid",
        ] {
            assert_eq!(
                error(rawdoc! { "locale": bad }).kind,
                ErrorKind::BadValue,
                "{bad}"
            );
        }
        assert_eq!(
            error(rawdoc! { "locale": "en", "strength": 99 }).kind,
            ErrorKind::FailedToParse
        );
        assert_eq!(
            error(rawdoc! { "locale": "en", "strength": 9.9 }).kind,
            ErrorKind::FailedToParse
        );
        assert_eq!(
            error(rawdoc! { "locale": "en", "version": "unknownVersion" }).kind,
            ErrorKind::IncompatibleCollationVersion
        );
        assert_eq!(
            error(rawdoc! { "locale": "en", "caseFirst": "sideways" }).kind,
            ErrorKind::FailedToParse
        );
        assert_eq!(
            error(rawdoc! { "locale": "en", "caseLevel": 1 }).kind,
            ErrorKind::TypeMismatch
        );
        let not_doc = Collation::parse(RawBsonRef::String("en")).unwrap_err();
        assert_eq!(not_doc.kind, ErrorKind::TypeMismatch);
        assert_eq!(
            error(rawdoc! { "locale": "en", "backwards": true }).kind,
            ErrorKind::NotImplemented
        );
    }

    #[test]
    fn locale_variants_resolve() {
        let phonebook = collation(rawdoc! { "locale": "de@collation=phonebook" });
        let plain = collation(rawdoc! { "locale": "de" });
        // Phonebook German sorts "ä" as "ae": "Ärger" before "Af".
        assert_eq!(phonebook.compare("Ärger", "Af"), Ordering::Less);
        assert_eq!(plain.compare("Ärger", "Af"), Ordering::Greater);
        assert_eq!(
            error(rawdoc! { "locale": "de@collation=bogus" }).kind,
            ErrorKind::BadValue
        );
        collation(rawdoc! { "locale": "zh_Hant" });
        collation(rawdoc! { "locale": "en_US_POSIX" });
    }
}
