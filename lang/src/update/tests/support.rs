//! Helpers the update tests share: parsing an update (with array filters),
//! applying it after a query, and comparing documents byte for byte.

use bson::{Bson, DateTime, Document, RawDocument, RawDocumentBuf};

use crate::query::filter::Filter;
use crate::update::{UpdateContext, UpdateSpec};
use crate::{ErrorKind, Result};

pub(super) const NOW_MS: i64 = 1_700_000_000_123;

pub(super) fn ctx() -> UpdateContext {
    UpdateContext {
        collation: None,
        is_insert: false,
        now: DateTime::from_millis(NOW_MS),
        mutable_id: false,
    }
}

pub(super) fn raw(d: &Document) -> RawDocumentBuf {
    RawDocumentBuf::try_from(d).unwrap()
}

/// Parses `u` (a document or a pipeline) with `filters` as `arrayFilters`.
pub(super) fn parse_with(u: impl Into<Bson>, filters: &[Document]) -> Result<UpdateSpec> {
    let holder = raw(&bson::doc! {"u": u.into()});
    let filters: Vec<RawDocumentBuf> = filters.iter().map(raw).collect();
    let refs: Vec<&RawDocument> = filters.iter().map(|f| f.as_ref()).collect();
    UpdateSpec::parse(holder.get("u").unwrap().unwrap(), &refs)
}

pub(super) fn parse(u: Document) -> Result<UpdateSpec> {
    parse_with(u, &[])
}

/// Applies `u` (with `filters`) to `d`, which matched `query`: the new
/// document, or None when nothing changed.
pub(super) fn try_update_with(
    d: Document,
    query: Document,
    u: impl Into<Bson>,
    filters: &[Document],
) -> Result<Option<RawDocumentBuf>> {
    let query = Filter::parse(&raw(&query))?;
    parse_with(u, filters)?.apply(&raw(&d), &query, &ctx())
}

/// Applies `u` to `d`: the new document, or None when nothing changed.
pub(super) fn try_update(d: Document, u: Document) -> Result<Option<RawDocumentBuf>> {
    try_update_with(d, bson::doc! {}, u, &[])
}

/// Asserts that `u` turns `d` into exactly `expected` (order and types).
#[track_caller]
pub(super) fn assert_updates(d: Document, u: Document, expected: Document) {
    let got = try_update(d, u)
        .unwrap()
        .expect("the update changes the document");
    assert_same(&got, &expected);
}

#[track_caller]
pub(super) fn assert_same(got: &RawDocument, expected: &Document) {
    assert_eq!(
        got.as_bytes(),
        raw(expected).as_bytes(),
        "\n got: {:?}\nwant: {expected:?}",
        Document::try_from(got).unwrap()
    );
}

#[track_caller]
pub(super) fn assert_unchanged(d: Document, u: Document) {
    assert_eq!(try_update(d, u).unwrap(), None);
}

#[track_caller]
pub(super) fn assert_fails(d: Document, u: Document, kind: ErrorKind, message: &str) {
    let err = try_update(d, u).unwrap_err();
    assert_eq!((err.kind, err.message.as_str()), (kind, message));
}

/// The error of `result`, as (kind, message).
#[track_caller]
pub(super) fn failure<T: std::fmt::Debug>(result: Result<T>) -> (ErrorKind, String) {
    let err = result.unwrap_err();
    (err.kind, err.message)
}

pub(super) fn upsert(filter: Document, u: Document) -> Result<RawDocumentBuf> {
    upsert_with(filter, u, &[])
}

/// The document an upsert of `u` (with `filters`) after `filter` inserts.
pub(super) fn upsert_with(
    filter: Document,
    u: impl Into<Bson>,
    filters: &[Document],
) -> Result<RawDocumentBuf> {
    parse_with(u, filters)?.upsert_document(&raw(&filter), &ctx())
}
