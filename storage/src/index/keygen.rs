//! Index entries: which keys a document puts into each index.
//!
//! Entry key layout (value is empty):
//!
//! ```text
//! enc(field₁) ‖ enc(field₂) ‖ … ‖ enc(_id)
//! ```
//!
//! where `enc` is [`ebb_lang::encoding::keycode`]'s order-preserving encoding, inverted
//! for descending fields. Appending `_id` makes every entry unique, so equal
//! field values sort by `_id`, and the `_id` of an entry is recovered by
//! skipping the field values. A unique index is checked by looking for
//! another entry with the same field prefix.
//!
//! Following MongoDB: a missing field indexes as null; an array indexes one
//! entry per element (multikey), an empty array as undefined; a compound key
//! may hold at most one array (no parallel arrays); a sparse index skips
//! documents missing every key field; a partial index skips documents its
//! filter does not match.
//!
//! A geo index's entries start with the location's cell (`index::geo`,
//! `index::flat`) whatever its field's place in the key pattern, followed
//! by the other fields' values; a wildcard index's start with the leaf's
//! path (`index::wildcard`).

use std::sync::Arc;

use bson::{RawBsonRef, RawDocument};

use super::flat::{Fault, Grid};
use super::floor::Floor;
use super::rule::{cutoff_millis, due_millis};
use super::wildcard::{Wildcard, path_key};
use crate::catalog::IndexMeta;
use ebb_lang::encoding::collation::Collation;
use ebb_lang::encoding::{display, keycode};
use ebb_lang::error::{Error, ErrorKind, Result};
use ebb_lang::query::filter::Filter;
use ebb_lang::query::path::index_keys;
use ebb_lang::query::path::index_values;
use ebb_lang::query::path::{LeafArray, any_candidate};
use ebb_lang::text::TextIndex;

/// When a document falls due under a TTL index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Expiry {
    /// Its earliest Date at the indexed path, and the moment that date
    /// plus `expireAfterSeconds` makes it due (millis).
    At { date: i64, due: i64 },
    /// Never, and why.
    Never(NeverDue),
}

/// Why a TTL index never makes a document due.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NeverDue {
    /// Nothing at the indexed path, or only null.
    Missing,
    /// A value that is not a Date (its BSON type's name): a string or an
    /// epoch number instead of a Date.
    NotADate(&'static str),
    /// An array (or arrays on the way) holding no Date.
    ArrayWithoutDate,
    /// The index's partial filter does not match the document.
    Excluded,
}

impl NeverDue {
    /// The reason's name, as ebb reports it.
    pub fn name(self) -> &'static str {
        match self {
            NeverDue::Missing => "missing",
            NeverDue::NotADate(_) => "notADate",
            NeverDue::ArrayWithoutDate => "arrayWithoutDate",
            NeverDue::Excluded => "excludedByPartialFilter",
        }
    }

    /// The reason in a sentence, for a TTL index on `field`.
    pub fn explain(self, field: &str) -> String {
        match self {
            NeverDue::Missing => format!("the document has no date at '{field}' (missing or null)"),
            NeverDue::NotADate(t) => {
                format!("'{field}' holds a {t}, not a date: TTL indexes expire only BSON dates")
            }
            NeverDue::ArrayWithoutDate => format!("'{field}' is an array with no date in it"),
            NeverDue::Excluded => {
                "the index's partialFilterExpression does not match the document".to_owned()
            }
        }
    }
}

/// Computes the entry keys of one index.
#[derive(Debug)]
pub struct KeyGen {
    /// The index's column family.
    pub cf: u64,
    pub name: String,
    pub unique: bool,
    fields: Vec<(String, bool)>,
    /// No key field is a dotted path.
    top_level_only: bool,
    sparse: bool,
    partial: Option<Filter>,
    /// Strings are keyed by this collation's sort keys.
    collation: Option<Arc<Collation>>,
    key_pattern: bson::Document,
    /// For a TTL index: its `expireAfterSeconds`.
    expire_after_secs: Option<i64>,
    /// For an ascending TTL index: where its expired entries can start.
    floor: Option<Floor>,
    /// A `2dsphere` index: its one field's locations are keyed by their
    /// S2 cells (`index::geo`).
    geo: bool,
    /// A `2d` index: its one field's legacy pairs are keyed by their
    /// geohashes on this grid (`index::flat`).
    flat: Option<Grid>,
    /// A `hashed` index: its one field's value is keyed by mongod's hash
    /// of it.
    hashed: bool,
    /// A text index: a document is keyed by each of its terms with the
    /// term's score.
    text: Option<TextIndex>,
    /// A wildcard index: a document is keyed by each leaf path and value
    /// the index holds (`index::wildcard`).
    wildcard: Option<Wildcard>,
    /// Whether its entries carry their values' types (`index::cover`): a
    /// plain index ([`IndexMeta::is_plain`]).
    coverable: bool,
}

impl KeyGen {
    pub fn new(index: &IndexMeta) -> Result<Self> {
        let collation = index.collation()?;
        // A partial filter compares strings by the index's collation.
        let partial = match &index.partial_filter {
            None => None,
            Some(f) => {
                let raw = bson::RawDocumentBuf::try_from(f)
                    .map_err(|e| Error::corrupt(format!("partial filter: {e}")))?;
                Some(Filter::parse(&raw)?.collated(collation.clone()))
            }
        };
        let coverable = index.is_plain();
        let mut fields = index.fields();
        // A geo index's entries start with the location's cell, whatever
        // its field's place in the key pattern.
        if let Some(at) = fields
            .iter()
            .position(|(f, _)| Some(f.as_str()) == index.geo_field())
        {
            let geo = fields.remove(at);
            fields.insert(0, geo);
        }
        let ascending_ttl = index.is_ttl() && fields.first().is_some_and(|(_, asc)| *asc);
        Ok(KeyGen {
            cf: index.id,
            name: index.name.clone(),
            unique: index.unique,
            top_level_only: fields.iter().all(|(f, _)| !f.contains('.')),
            fields,
            // A document without a location, a term or a leaf the index
            // holds has no entry.
            sparse: index.sparse || index.is_geo() || index.is_text() || index.is_wildcard(),
            text: index.text_index(),
            wildcard: Wildcard::of(index),
            geo: index.is_sphere(),
            flat: Grid::of(index),
            hashed: index.is_hashed(),
            partial,
            collation,
            key_pattern: index.key.clone(),
            expire_after_secs: index
                .is_ttl()
                .then(|| i64::from(index.expire_after_seconds.unwrap_or(0))),
            floor: ascending_ttl.then(Floor::default),
            coverable,
        })
    }

    /// The value of a document's entries in a covering index (empty
    /// otherwise, and for a document with more than one entry):
    /// `index::cover`.
    pub fn cover_value(&self, doc: &RawDocument, entries: usize) -> Vec<u8> {
        match self.coverable && entries == 1 {
            true => super::cover::value(&self.fields, doc),
            false => Vec::new(),
        }
    }

    /// The document of the key fields an entry stands for, when its value
    /// carries their types (`index::cover`); `None` otherwise.
    pub fn rebuild(&self, entry: &[u8], value: &[u8]) -> Result<Option<bson::RawDocumentBuf>> {
        match self.coverable {
            true => super::cover::rebuild(&self.fields, entry, value),
            false => Ok(None),
        }
    }

    /// Whether this index's entries can answer a query alone.
    pub fn is_coverable(&self) -> bool {
        self.coverable
    }

    /// The floor of an ascending TTL index (`index::floor` explains it).
    pub fn floor(&self) -> Option<&Floor> {
        self.floor.as_ref()
    }

    /// Records that a write puts `entry` into this index (the floor of a
    /// TTL index goes down to it) and returns when the entry falls due, if
    /// this is a TTL index and the entry holds a Date: the one place the
    /// write path learns due times, so the monitor can be woken for them.
    pub fn note_put(&self, entry: &[u8]) -> Option<i64> {
        if let Some(floor) = &self.floor {
            floor.lower(entry);
        }
        let secs = self.expire_after_secs?;
        let date = keycode::leading_date(entry, self.leading_descending())?;
        Some(due_millis(date, secs))
    }

    /// For a TTL index: whether `doc` is due at `now_millis` by this
    /// index alone — it would put an entry holding a Date at or before the
    /// cutoff into the index (MongoDB's rule: the earliest Date of an
    /// array; a document the partial filter excludes has no entry). Exactly the
    /// documents the monitor's range scan of this index would delete.
    pub fn due_by(&self, doc: &RawDocument, now_millis: i64) -> bool {
        let Some(secs) = self.expire_after_secs else {
            return false;
        };
        let Some((path, _)) = self.fields.first() else {
            return false;
        };
        earliest_date(doc, path, self.top_level_only)
            .is_some_and(|date| date <= cutoff_millis(now_millis, secs))
            && self.covers(doc)
    }

    /// For a TTL index: when `doc` falls due under it, or why it never
    /// does (None for other indexes). The monitor's rule, read from the
    /// document: the earliest Date among the values at the indexed path.
    pub fn expiry(&self, doc: &RawDocument) -> Option<Expiry> {
        let secs = self.expire_after_secs?;
        let (path, _) = self.fields.first()?;
        if !self.covers(doc) {
            return Some(Expiry::Never(NeverDue::Excluded));
        }
        let found = index_values(doc, path);
        let earliest = found
            .values
            .iter()
            .filter_map(|v| match v {
                RawBsonRef::DateTime(d) => Some(d.timestamp_millis()),
                _ => None,
            })
            .min();
        if let Some(date) = earliest {
            return Some(Expiry::At {
                date,
                due: due_millis(date, secs),
            });
        }
        let not_null = found
            .values
            .iter()
            .find(|v| !matches!(v, RawBsonRef::Null | RawBsonRef::Undefined));
        Some(Expiry::Never(match not_null {
            _ if found.multikey => NeverDue::ArrayWithoutDate,
            None => NeverDue::Missing,
            Some(v) => NeverDue::NotADate(display::type_name(v)),
        }))
    }

    /// The path of the first key field.
    pub fn leading_field(&self) -> Option<&str> {
        self.fields.first().map(|(f, _)| f.as_str())
    }

    /// For a TTL index: its `expireAfterSeconds`.
    pub fn expire_after_secs(&self) -> Option<i64> {
        self.expire_after_secs
    }

    /// Whether the first key field is descending.
    pub fn leading_descending(&self) -> bool {
        self.fields.first().is_some_and(|(_, asc)| !asc)
    }

    /// Whether every document of the collection has at least one entry
    /// (neither sparse nor partial).
    pub fn indexes_every_document(&self) -> bool {
        !self.sparse && self.partial.is_none()
    }

    /// Whether `doc` belongs in this index at all (partial filter).
    /// Partial filters hold no `$expr` (refused when the index is created),
    /// so matching cannot fail.
    pub fn covers(&self, doc: &RawDocument) -> bool {
        self.partial
            .as_ref()
            .is_none_or(|f| f.matches(doc).unwrap_or(false))
    }

    /// Appends the entry keys of `doc` (whose encoded `_id` is `id_key`)
    /// to `out`, deduplicated. Returns how many were added.
    pub fn keys(&self, doc: &RawDocument, id_key: &[u8], out: &mut Vec<Vec<u8>>) -> Result<usize> {
        if !self.covers(doc) {
            return Ok(0);
        }
        if self.geo {
            return self.geo_keys(doc, id_key, out);
        }
        if let Some(grid) = &self.flat {
            return self.flat_keys(grid, doc, id_key, out);
        }
        if self.hashed {
            return self.hashed_key(doc, id_key, out);
        }
        if let Some(text) = &self.text {
            let (before, after) = text_fields_at(&self.fields);
            let end = self.fields.len() - after;
            let prefix = self.single_values(doc, &self.fields[..before])?;
            let suffix = self.single_values(doc, &self.fields[end..])?;
            return text_keys(text, (&prefix, &suffix), doc, id_key, out);
        }
        if let Some(wildcard) = &self.wildcard {
            return self.wildcard_keys(wildcard, doc, id_key, out);
        }
        if let Some(added) = self.top_level_key(doc, id_key, out)? {
            return Ok(added);
        }
        let paths: Vec<&str> = self.fields.iter().map(|(p, _)| p.as_str()).collect();
        let found = index_keys(doc, &paths)?;
        if self.sparse && found.keys.iter().all(|k| k.iter().all(Option::is_none)) {
            return Ok(0);
        }
        let start = out.len();
        let missing = [None];
        let keys: &[Vec<Option<RawBsonRef<'_>>>] = &found.keys;
        // A document with no value at any path still gets one all-null key.
        let fallback = [missing.repeat(paths.len())];
        let keys = if keys.is_empty() { &fallback[..] } else { keys };
        for parts in keys {
            let mut key = Vec::with_capacity(32 + id_key.len());
            for ((_, ascending), part) in self.fields.iter().zip(parts) {
                self.encode(&mut key, part.unwrap_or(RawBsonRef::Null), *ascending);
            }
            key.extend_from_slice(id_key);
            if !out[start..].contains(&key) {
                out.push(key);
            }
        }
        Ok(out.len() - start)
    }

    /// The entries of a `2dsphere` index: a key per S2 cell of each location
    /// at its field (none when there is none); a value that is no valid
    /// location refuses the document, with mongod's "Can't extract geo keys".
    fn geo_keys(&self, doc: &RawDocument, id_key: &[u8], out: &mut Vec<Vec<u8>>) -> Result<usize> {
        self.cell_keys(doc, id_key, out, |value| {
            let locations = ebb_lang::geo::stored_shapes(value).map_err(|e| {
                Error::new(
                    ErrorKind::CannotExtractGeoKeys,
                    format!("Can't extract geo keys: {}  {}", shown(doc), e.message),
                )
            })?;
            Ok(locations
                .unwrap_or_default()
                .iter()
                .flat_map(super::geo::cells_of)
                .collect())
        })
    }

    /// The entries of a `2d` index: a key per geohash of each legacy pair
    /// at its field (none when there is none); a value mongod cannot key
    /// refuses the document with mongod's reason.
    fn flat_keys(
        &self,
        grid: &Grid,
        doc: &RawDocument,
        id_key: &[u8],
        out: &mut Vec<Vec<u8>>,
    ) -> Result<usize> {
        self.cell_keys(doc, id_key, out, |value| {
            let locations = grid.locations(value).map_err(|fault| {
                let kind = match fault {
                    Fault::NotALocation => ErrorKind::FlatNotALocation,
                    Fault::Empty => ErrorKind::FlatEmptyLocation,
                    Fault::OneElement => ErrorKind::FlatOneElement,
                    Fault::NotNumbers => ErrorKind::FlatNotNumbers,
                    Fault::OutOfRange => ErrorKind::FlatOutOfRange,
                };
                let reason = fault.reason(grid);
                Error::new(kind, format!("{reason} :: caused by :: {}", shown(doc)))
            })?;
            Ok(locations.iter().map(|p| grid.hash(*p)).collect())
        })
    }

    /// The entries of a geo index: a key per distinct 64-bit cell that
    /// `cells` finds in each value at the index's field (S2 cells,
    /// geohashes), in order; the first value it refuses refuses the
    /// document.
    fn cell_keys(
        &self,
        doc: &RawDocument,
        id_key: &[u8],
        out: &mut Vec<Vec<u8>>,
        mut cells: impl FnMut(RawBsonRef<'_>) -> Result<Vec<u64>>,
    ) -> Result<usize> {
        let Some((path, _)) = self.fields.first() else {
            return Ok(0);
        };
        let mut found = Vec::new();
        let mut failure = None;
        any_candidate(doc, path, LeafArray::Whole, &mut |value| {
            match value.map(&mut cells).transpose() {
                Ok(some) => found.extend(some.unwrap_or_default()),
                Err(e) => failure = Some(e),
            }
            failure.is_some()
        });
        if let Some(e) = failure {
            return Err(e);
        }
        found.sort_unstable();
        found.dedup();
        if found.is_empty() {
            return Ok(0);
        }
        let tails = self.other_fields(doc)?;
        for cell in &found {
            for tail in &tails {
                let mut key = super::geo::cell_key(*cell);
                key.extend_from_slice(tail);
                key.extend_from_slice(id_key);
                out.push(key);
            }
        }
        Ok(found.len() * tails.len())
    }

    /// The encoded values of a compound geo index's fields after its
    /// location's, one per key of `doc` (multikey), as an ordinary index
    /// keys them; one empty tail for a geo index of one field.
    fn other_fields(&self, doc: &RawDocument) -> Result<Vec<Vec<u8>>> {
        let others = &self.fields[1..];
        if others.is_empty() {
            return Ok(vec![Vec::new()]);
        }
        let paths: Vec<&str> = others.iter().map(|(p, _)| p.as_str()).collect();
        let found = index_keys(doc, &paths)?;
        let missing = vec![None; paths.len()];
        let keys = match found.keys.is_empty() {
            true => std::slice::from_ref(&missing),
            false => &found.keys[..],
        };
        let mut tails: Vec<Vec<u8>> = keys
            .iter()
            .map(|parts| {
                let mut tail = Vec::with_capacity(16);
                for ((_, ascending), part) in others.iter().zip(parts) {
                    self.encode(&mut tail, part.unwrap_or(RawBsonRef::Null), *ascending);
                }
                tail
            })
            .collect();
        tails.sort_unstable();
        tails.dedup();
        Ok(tails)
    }

    /// The encoded values of a compound text index's ordinary `fields`
    /// (null for a missing one); an array there refuses the document, as
    /// mongod refuses it.
    fn single_values(&self, doc: &RawDocument, fields: &[(String, bool)]) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        for (path, ascending) in fields {
            let found = index_values(doc, path);
            if found.multikey {
                return Err(Error::new(
                    ErrorKind::CannotBuildIndexKeys,
                    format!(
                        "Field '{path}' of text index contains an array in document: {}",
                        shown(doc)
                    ),
                ));
            }
            let value = found.values.first().copied().unwrap_or(RawBsonRef::Null);
            self.encode(&mut out, value, *ascending);
        }
        Ok(out)
    }

    /// The entries of a wildcard index: a key per distinct leaf path and
    /// value of `doc` the index holds, none when it holds none.
    fn wildcard_keys(
        &self,
        wildcard: &Wildcard,
        doc: &RawDocument,
        id_key: &[u8],
        out: &mut Vec<Vec<u8>>,
    ) -> Result<usize> {
        let ascending = self.fields.first().is_none_or(|(_, asc)| *asc);
        let mut keys = Vec::new();
        wildcard.leaves(doc, &mut |path, value| {
            let mut key = path_key(path);
            self.encode(&mut key, value, ascending);
            key.extend_from_slice(id_key);
            keys.push(key);
        })?;
        keys.sort_unstable();
        keys.dedup();
        let added = keys.len();
        out.append(&mut keys);
        Ok(added)
    }

    /// The entry of a `hashed` index: mongod's hash of the value at its
    /// field (of null when there is none), as a 64-bit integer; an array
    /// there refuses the document, as mongod refuses it.
    fn hashed_key(
        &self,
        doc: &RawDocument,
        id_key: &[u8],
        out: &mut Vec<Vec<u8>>,
    ) -> Result<usize> {
        let Some((path, _)) = self.fields.first() else {
            return Ok(0);
        };
        let found = index_values(doc, path);
        if found.multikey {
            return Err(Error::new(
                ErrorKind::HashedArray,
                format!(
                    "Error: hashed indexes do not currently support array values. Found array \
                     at '{path}' in {}",
                    shown(doc)
                ),
            ));
        }
        let value = found.values.first().copied();
        if self.sparse && value.is_none() {
            return Ok(0);
        }
        let value = value.unwrap_or(RawBsonRef::Null);
        let mut key = hash_key(ebb_lang::encoding::hashed::hash64(value));
        key.extend_from_slice(id_key);
        out.push(key);
        Ok(1)
    }

    /// The common case without the general path walk: every key field is a
    /// top-level name and no value is an array, so the document has exactly
    /// one key. None when the general walk is needed.
    fn top_level_key(
        &self,
        doc: &RawDocument,
        id_key: &[u8],
        out: &mut Vec<Vec<u8>>,
    ) -> Result<Option<usize>> {
        if !self.top_level_only {
            return Ok(None);
        }
        let mut key = Vec::with_capacity(32 + id_key.len());
        let mut any_present = false;
        for (field, ascending) in &self.fields {
            let v = match doc.get(field)? {
                Some(RawBsonRef::Array(_)) => return Ok(None),
                Some(v) => {
                    any_present = true;
                    v
                }
                None => RawBsonRef::Null,
            };
            self.encode(&mut key, v, *ascending);
        }
        if self.sparse && !any_present {
            return Ok(Some(0));
        }
        key.extend_from_slice(id_key);
        out.push(key);
        Ok(Some(1))
    }

    /// Appends one key field, in the index's collation and direction.
    fn encode(&self, key: &mut Vec<u8>, v: RawBsonRef<'_>, ascending: bool) {
        let collation = self.collation.as_deref();
        if ascending {
            keycode::encode_collated(key, v, collation);
        } else {
            keycode::encode_collated_desc(key, v, collation);
        }
    }

    /// The part of an entry key that holds the field values.
    pub fn value_prefix<'k>(&self, entry: &'k [u8], id_key_len: usize) -> &'k [u8] {
        &entry[..entry.len() - id_key_len]
    }

    /// The encoded `_id` at the end of an entry key.
    pub fn id_suffix<'k>(&self, entry: &'k [u8]) -> Result<&'k [u8]> {
        if self.text.is_some() {
            let (before, after) = text_fields_at(&self.fields);
            let mut at = 0;
            for (_, ascending) in &self.fields[..before] {
                at += keycode::skip_value(&entry[at..], !ascending)?;
            }
            at += keycode::skip_value(&entry[at..], false)? + SCORE_BYTES;
            for (_, ascending) in &self.fields[self.fields.len() - after..] {
                let rest = entry
                    .get(at..)
                    .ok_or_else(|| Error::corrupt("a text index entry shorter than its score"))?;
                at += keycode::skip_value(rest, !ascending)?;
            }
            return entry
                .get(at..)
                .ok_or_else(|| Error::corrupt("a text index entry shorter than its score"));
        }
        let mut at = 0;
        if self.wildcard.is_some() {
            // The path, before the value.
            at += keycode::skip_value(entry, false)?;
        }
        for (_, ascending) in &self.fields {
            at += keycode::skip_value(&entry[at..], !ascending)?;
        }
        Ok(&entry[at..])
    }

    /// The duplicate-key error for an entry of this index, in MongoDB's
    /// words: `E11000 duplicate key error collection: db.c index: a_1 dup
    /// key: { a: 1 }`, with `keyPattern` and `keyValue` as detail.
    pub fn duplicate_error(&self, ns: &str, entry: &[u8]) -> Error {
        let mut key_value = bson::Document::new();
        let mut rest = entry;
        for (path, ascending) in &self.fields {
            let value = if *ascending {
                keycode::decode_value(&mut rest)
            } else {
                keycode::decode_value_desc(&mut rest)
            };
            let value = value
                .ok()
                .and_then(|v| bson::Bson::try_from(v).ok())
                .unwrap_or(bson::Bson::Null);
            key_value.insert(path.clone(), value);
        }
        duplicate_key_error(ns, &self.name, &self.key_pattern, key_value)
    }
}

/// A document as mongod's messages show it.
fn shown(doc: &RawDocument) -> String {
    bson::Document::try_from(doc)
        .map(|d| display::shell(&bson::Bson::Document(d)))
        .unwrap_or_default()
}

/// Builds MongoDB's E11000 error.
pub fn duplicate_key_error(
    ns: &str,
    index_name: &str,
    key_pattern: &bson::Document,
    key_value: bson::Document,
) -> Error {
    let shown = key_value
        .iter()
        .map(|(k, v)| format!("{k}: {}", display::shell(v)))
        .collect::<Vec<_>>()
        .join(", ");
    Error::new(
        ErrorKind::DuplicateKey,
        format!(
            "E11000 duplicate key error collection: {ns} index: {index_name} dup key: {{ {shown} }}"
        ),
    )
    .with_detail(bson::doc! { "keyPattern": key_pattern.clone(), "keyValue": key_value })
}

/// The earliest Date among the values an index on `path` takes from
/// `doc` (array elements included, non-dates ignored), read without
/// building keys: a top-level field is one lookup.
fn earliest_date(doc: &RawDocument, path: &str, top_level: bool) -> Option<i64> {
    let date = |v: &RawBsonRef<'_>| match v {
        RawBsonRef::DateTime(d) => Some(d.timestamp_millis()),
        _ => None,
    };
    if top_level {
        return match doc.get(path).ok()?? {
            RawBsonRef::Array(items) => items.into_iter().flatten().filter_map(|v| date(&v)).min(),
            v => date(&v),
        };
    }
    index_values(doc, path).values.iter().filter_map(date).min()
}

/// The entries of a text index: one per term of `doc`, `term ‖ score ‖
/// _id` (the term encoded as any string is, the score in
/// [`SCORE_BYTES`] ordered as the number), so a term's entries are one key
/// range. A document whose language field names a language text search
/// does not know is refused, as mongod refuses it.
fn text_keys(
    text: &TextIndex,
    around: (&[u8], &[u8]),
    doc: &RawDocument,
    id_key: &[u8],
    out: &mut Vec<Vec<u8>>,
) -> Result<usize> {
    let (before, after) = around;
    let scores = text.scores(doc)?;
    for (term, score) in &scores {
        let mut key = Vec::with_capacity(before.len() + term.len() + 32 + after.len());
        key.extend_from_slice(before);
        push_text_term(&mut key, term);
        key.extend_from_slice(&score_bytes(*score));
        key.extend_from_slice(after);
        key.extend_from_slice(id_key);
        out.push(key);
    }
    Ok(scores.len())
}

/// Where a text index's own fields (`_fts`, `_ftsx`) stand among its key
/// fields: the ordinary fields before them (a compound text index's
/// prefix) and after them (its suffix).
pub fn text_fields_at(fields: &[(String, bool)]) -> (usize, usize) {
    let at = fields.iter().position(|(f, _)| f == "_fts").unwrap_or(0);
    (at, fields.len().saturating_sub(at + 2))
}

/// The length of a text index entry's score.
pub const SCORE_BYTES: usize = 8;

/// A (positive) score as bytes that order as the numbers do: its IEEE
/// bits, big-endian.
fn score_bytes(score: f64) -> [u8; SCORE_BYTES] {
    score.to_bits().to_be_bytes()
}

/// The score of a text index entry, from the bytes after its term.
pub fn text_entry_score(after_term: &[u8]) -> Option<f64> {
    let bytes: [u8; SCORE_BYTES] = after_term.get(..SCORE_BYTES)?.try_into().ok()?;
    Some(f64::from_bits(u64::from_be_bytes(bytes)))
}

/// The start of a text index's entries for `term`.
pub fn text_term_key(term: &str) -> Vec<u8> {
    let mut key = Vec::with_capacity(term.len() + 16);
    push_text_term(&mut key, term);
    key
}

/// Appends `term` to a text index entry key, encoded as any string is.
fn push_text_term(key: &mut Vec<u8>, term: &str) {
    keycode::encode_value(key, RawBsonRef::String(term));
}

/// The start of a `hashed` index's entries for the values whose hash is
/// `hash`: the hash as a 64-bit integer, encoded as any number is.
pub fn hash_key(hash: i64) -> Vec<u8> {
    let mut key = Vec::with_capacity(16);
    keycode::encode_value(&mut key, RawBsonRef::Int64(hash));
    key
}
