//! Dotted paths (`a.b.0.c`) resolved against raw BSON documents, the two
//! ways MongoDB resolves them.
//!
//! *Query candidates* are the values a filter predicate is tested against:
//! walking the path descends through documents; an array met with path left
//! over applies the rest of the path to each element that is a document, and
//! a numeric component also selects the element at that offset; an array at
//! the end of the path offers its elements and then itself, so `{tags: "x"}`
//! matches `tags: ["x", "y"]` and `{tags: ["x", "y"]}` matches the whole
//! array, but `{a: 1}` does not match `a: [[1]]`. A missing value is offered
//! as `None`, which is how `{a: null}` comes to match a missing field.
//!
//! *Index keys* are the values an index (or a sort) sees at a path: arrays
//! are expanded, an empty array at the end of the path is `undefined`, a
//! missing path is reported as missing (MongoDB indexes it as null), and a
//! compound key may expand at most one array per document level (two
//! different arrays are "parallel arrays").
//!
//! This module only reads documents. It knows nothing about predicates,
//! index formats or sort directions.

use bson::{RawArray, RawBsonRef, RawDocument};

use crate::error::{Error, ErrorKind, Result};

/// How the value at the end of a path is offered when it is an array.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LeafArray {
    /// Each element, then the array itself (equality, comparisons, `$in`…).
    Elements,
    /// Only the array itself (`$size`, `$elemMatch`).
    Whole,
}

/// Offers each query candidate at `path` to `test` (`None` when the path is
/// missing on some branch) and stops at the first one `test` accepts.
/// Returns whether any candidate was accepted.
pub fn any_candidate<'a>(
    doc: &'a RawDocument,
    path: &str,
    leaf: LeafArray,
    test: &mut dyn FnMut(Option<RawBsonRef<'a>>) -> bool,
) -> bool {
    let components: Vec<&str> = path.split('.').collect();
    visit_document(doc, &components, leaf, test)
}

/// All query candidates at `path`, array elements before their array;
/// `None` marks a branch on which the path is missing.
pub fn candidates<'a>(doc: &'a RawDocument, path: &str) -> Vec<Option<RawBsonRef<'a>>> {
    let mut found = Vec::new();
    any_candidate(doc, path, LeafArray::Elements, &mut |value| {
        found.push(value);
        false
    });
    found
}

/// Where walking a path through documents ends.
enum Reached<'a, 'p> {
    /// Nothing there: a field is absent, or a scalar has path left over.
    Missing,
    /// The value at the end of the path (not an array).
    Value(RawBsonRef<'a>),
    /// An array, with the components after it (maybe none).
    Array(&'a RawArray, &'p [&'p str]),
}

/// Follows `components` through embedded documents, stopping at the first
/// array: what happens there depends on who is asking.
fn walk_documents<'a, 'p>(doc: &'a RawDocument, components: &'p [&'p str]) -> Reached<'a, 'p> {
    let mut current = doc;
    for (depth, name) in components.iter().enumerate() {
        let Some(value) = field(current, name) else {
            return Reached::Missing;
        };
        let rest = &components[depth + 1..];
        match value {
            RawBsonRef::Array(array) => return Reached::Array(array, rest),
            _ if rest.is_empty() => return Reached::Value(value),
            RawBsonRef::Document(sub) => current = sub,
            _ => return Reached::Missing,
        }
    }
    Reached::Missing
}

/// Offers the candidates of `components` below a document.
fn visit_document<'a>(
    doc: &'a RawDocument,
    components: &[&str],
    leaf: LeafArray,
    test: &mut dyn FnMut(Option<RawBsonRef<'a>>) -> bool,
) -> bool {
    match walk_documents(doc, components) {
        Reached::Missing => test(None),
        Reached::Value(value) => test(Some(value)),
        Reached::Array(array, rest) => visit_array(array, rest, leaf, test),
    }
}

/// Applies the `rest` of a path to an array met on the way.
fn visit_array<'a>(
    array: &'a RawArray,
    rest: &[&str],
    leaf: LeafArray,
    test: &mut dyn FnMut(Option<RawBsonRef<'a>>) -> bool,
) -> bool {
    if rest.is_empty() {
        if leaf == LeafArray::Elements && elements(array).any(|element| test(Some(element))) {
            return true;
        }
        return test(Some(RawBsonRef::Array(array)));
    }
    let offset = array_index(rest[0]);
    for (index, element) in elements(array).enumerate() {
        if let RawBsonRef::Document(sub) = element
            && visit_document(sub, rest, leaf, test)
        {
            return true;
        }
        if offset == Some(index) && visit_offset(element, &rest[1..], leaf, test) {
            return true;
        }
    }
    // An array in the middle of a path is never a candidate itself.
    false
}

/// Continues a path from the element a numeric component selected.
fn visit_offset<'a>(
    element: RawBsonRef<'a>,
    rest: &[&str],
    leaf: LeafArray,
    test: &mut dyn FnMut(Option<RawBsonRef<'a>>) -> bool,
) -> bool {
    if rest.is_empty() {
        // Selected explicitly, so an array here is not expanded.
        return test(Some(element));
    }
    match element {
        RawBsonRef::Document(sub) => visit_document(sub, rest, leaf, test),
        RawBsonRef::Array(inner) => visit_array(inner, rest, leaf, test),
        _ => false,
    }
}

/// The values at one path for an index key: present values, whether the
/// path is missing on some branch, and whether an array was expanded.
#[derive(Debug, Clone, PartialEq)]
pub struct IndexValues<'a> {
    /// The values to index, in document order; may repeat a value.
    pub values: Vec<RawBsonRef<'a>>,
    /// The path is missing on at least one branch: MongoDB indexes that
    /// branch as null, and a sparse index skips it.
    pub missing: bool,
    /// An array was expanded on the way (the index becomes multikey).
    pub multikey: bool,
}

/// Values at `path` for index keys: arrays at the end of the path are
/// expanded to their elements (an empty array is indexed as `undefined`),
/// arrays on the way apply the rest of the path to each element, and a
/// missing path yields no value but sets `missing`.
pub fn index_values<'a>(doc: &'a RawDocument, path: &str) -> IndexValues<'a> {
    let single = [path];
    // One path never meets a parallel array, so this cannot fail.
    let keys = index_keys(doc, &single).unwrap_or_else(|_| IndexKeys {
        keys: Vec::new(),
        multikey: vec![false],
    });
    let mut values = Vec::with_capacity(keys.keys.len());
    let mut missing = false;
    for key in &keys.keys {
        match key[0] {
            Some(value) => values.push(value),
            None => missing = true,
        }
    }
    IndexValues {
        values,
        missing,
        multikey: keys.multikey[0],
    }
}

/// The keys a compound index (or sort pattern) over `paths` takes for one
/// document.
#[derive(Debug, Clone, PartialEq)]
pub struct IndexKeys<'a> {
    /// One entry per key, one part per path; `None` where that path is
    /// missing. May repeat a key.
    pub keys: Vec<Vec<Option<RawBsonRef<'a>>>>,
    /// Per path: whether an array was expanded on the way.
    pub multikey: Vec<bool>,
}

/// Keys over several paths at once, as MongoDB generates them: paths that
/// run through the same array are expanded together element by element (not
/// as a cross product), and two paths that need two different arrays at the
/// same time fail with [`ErrorKind::CannotIndexParallelArrays`].
pub fn index_keys<'a>(doc: &'a RawDocument, paths: &[&str]) -> Result<IndexKeys<'a>> {
    let components: Vec<Vec<&str>> = paths.iter().map(|p| p.split('.').collect()).collect();
    let slots = components
        .iter()
        .map(|c| Slot::Walk(doc, c.as_slice()))
        .collect();
    let mut out = IndexKeys {
        keys: Vec::new(),
        multikey: vec![false; paths.len()],
    };
    expand_keys(slots, paths, &mut out)?;
    Ok(out)
}

/// Where one path of a key under construction stands.
#[derive(Clone, Copy)]
enum Slot<'a, 'p> {
    /// Resolved: a value, or `None` for missing.
    Done(Option<RawBsonRef<'a>>),
    /// Still to walk `components` from a document.
    Walk(&'a RawDocument, &'p [&'p str]),
    /// Stopped at an array with `components` left (maybe none).
    AtArray(&'a RawArray, &'p [&'p str]),
}

/// Walks every pending path to a value or an array, then expands the one
/// array they stopped at, recursing per element.
fn expand_keys<'a, 'p>(
    mut slots: Vec<Slot<'a, 'p>>,
    paths: &[&str],
    out: &mut IndexKeys<'a>,
) -> Result<()> {
    let mut array: Option<(&'a RawArray, usize)> = None;
    for index in 0..slots.len() {
        if let Slot::Walk(doc, components) = slots[index] {
            slots[index] = walk_to_array(doc, components);
        }
        if let Slot::AtArray(found, _) = slots[index] {
            match array {
                None => array = Some((found, index)),
                Some((first, _)) if same_array(first, found) => {}
                Some((_, other)) => return Err(parallel_arrays(paths[other], paths[index])),
            }
        }
    }
    let Some((array, _)) = array else {
        out.keys.push(
            slots
                .iter()
                .map(|slot| match slot {
                    Slot::Done(value) => *value,
                    _ => None,
                })
                .collect(),
        );
        return Ok(());
    };
    for (index, slot) in slots.iter().enumerate() {
        if matches!(slot, Slot::AtArray(..)) {
            out.multikey[index] = true;
        }
    }
    let mut items = elements(array).peekable();
    if items.peek().is_none() {
        let undefined = Some(RawBsonRef::Undefined);
        return expand_keys(with_element(&slots, undefined), paths, out);
    }
    for item in items {
        expand_keys(with_element(&slots, Some(item)), paths, out)?;
    }
    Ok(())
}

/// The slots for one element of the array being expanded: paths that end
/// at the array take the element, paths with more to go continue into it
/// (only a document can hold the rest), the others are unchanged.
fn with_element<'a, 'p>(
    slots: &[Slot<'a, 'p>],
    element: Option<RawBsonRef<'a>>,
) -> Vec<Slot<'a, 'p>> {
    slots
        .iter()
        .map(|slot| match *slot {
            Slot::AtArray(_, []) => Slot::Done(element),
            Slot::AtArray(_, rest) => match element {
                Some(RawBsonRef::Document(sub)) => Slot::Walk(sub, rest),
                _ => Slot::Done(None),
            },
            other => other,
        })
        .collect()
}

/// Follows documents to the end of the path or to the first array. A
/// numeric component naming an existing element of that array selects it
/// (`a.0.b`) instead of expanding the array.
fn walk_to_array<'a, 'p>(doc: &'a RawDocument, components: &'p [&'p str]) -> Slot<'a, 'p> {
    let (mut current, mut components) = (doc, components);
    loop {
        match walk_documents(current, components) {
            Reached::Missing => return Slot::Done(None),
            Reached::Value(value) => return Slot::Done(Some(value)),
            Reached::Array(array, rest) => match rest.first().and_then(|c| positional(array, c)) {
                Some(as_document) => (current, components) = (as_document, rest),
                None => return Slot::AtArray(array, rest),
            },
        }
    }
}

/// The array seen as a document when `component` is an index it has.
fn positional<'a>(array: &'a RawArray, component: &str) -> Option<&'a RawDocument> {
    let index = array_index(component)?;
    elements(array).nth(index)?;
    RawDocument::from_bytes(array.as_bytes()).ok()
}

fn same_array(a: &RawArray, b: &RawArray) -> bool {
    std::ptr::eq(a.as_bytes(), b.as_bytes())
}

fn parallel_arrays(first: &str, second: &str) -> Error {
    Error::new(
        ErrorKind::CannotIndexParallelArrays,
        format!("cannot index parallel arrays [{second}] [{first}]"),
    )
}

/// The value of field `name`; unreadable BSON reads as missing (documents
/// are validated on the way in).
pub(crate) fn field<'a>(doc: &'a RawDocument, name: &str) -> Option<RawBsonRef<'a>> {
    doc.get(name).ok().flatten()
}

/// The readable elements of an array, in order.
pub(crate) fn elements(array: &RawArray) -> impl Iterator<Item = RawBsonRef<'_>> {
    array.into_iter().map_while(|element| element.ok())
}

/// The array offset a path component names: all digits, written the way
/// BSON writes array keys (`"0"`, `"12"`, never `"01"`).
pub(crate) fn array_index(component: &str) -> Option<usize> {
    let canonical = component == "0"
        || (!component.is_empty()
            && !component.starts_with('0')
            && component.bytes().all(|b| b.is_ascii_digit()));
    if canonical {
        component.parse().ok()
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use bson::{RawBson, rawdoc};

    use super::*;

    fn owned(values: Vec<Option<RawBsonRef<'_>>>) -> Vec<Option<RawBson>> {
        values.into_iter().map(|v| v.map(RawBson::from)).collect()
    }

    fn raw(value: impl Into<RawBson>) -> Option<RawBson> {
        Some(value.into())
    }

    #[test]
    fn top_level_field_is_its_own_candidate() {
        let doc = rawdoc! { "a": 1 };
        assert_eq!(owned(candidates(&doc, "a")), vec![raw(1)]);
    }

    #[test]
    fn missing_field_is_one_missing_candidate() {
        let doc = rawdoc! { "b": 1 };
        assert_eq!(owned(candidates(&doc, "a")), vec![None]);
        assert_eq!(owned(candidates(&doc, "a.b")), vec![None]);
    }

    #[test]
    fn scalar_in_the_middle_of_a_path_is_missing() {
        let doc = rawdoc! { "a": 5 };
        assert_eq!(owned(candidates(&doc, "a.b")), vec![None]);
    }

    #[test]
    fn leaf_array_offers_elements_then_itself() {
        let doc = rawdoc! { "tags": ["x", "y"] };
        let expected = vec![raw("x"), raw("y"), Some(bson::rawbson!(["x", "y"]))];
        assert_eq!(owned(candidates(&doc, "tags")), expected);
    }

    #[test]
    fn nested_arrays_expand_one_level_only() {
        let doc = rawdoc! { "a": [[1]] };
        let found = owned(candidates(&doc, "a"));
        assert!(!found.contains(&raw(1)));
        assert_eq!(found.len(), 2);
    }

    #[test]
    fn array_of_documents_applies_the_rest_to_each() {
        let doc = rawdoc! { "a": [{ "b": 1 }, { "c": 2 }, 3, { "b": [4] }] };
        let expected = vec![raw(1), None, raw(4), Some(bson::rawbson!([4]))];
        assert_eq!(owned(candidates(&doc, "a.b")), expected);
    }

    #[test]
    fn array_of_scalars_with_path_left_has_no_candidates() {
        let doc = rawdoc! { "a": [1, null] };
        assert!(candidates(&doc, "a.b").is_empty());
        let empty = rawdoc! { "a": [] };
        assert!(candidates(&empty, "a.b").is_empty());
    }

    #[test]
    fn numeric_component_selects_an_element_without_expanding_it() {
        let doc = rawdoc! { "a": [[1, 2], 3] };
        let expected = vec![Some(bson::rawbson!([1, 2]))];
        assert_eq!(owned(candidates(&doc, "a.0")), expected);
    }

    #[test]
    fn numeric_component_also_matches_field_names_in_element_documents() {
        let doc = rawdoc! { "a": [{ "0": "field" }, "x"] };
        assert_eq!(
            owned(candidates(&doc, "a.0")),
            vec![
                raw("field"),
                Some(RawBson::Document(rawdoc! { "0": "field" }))
            ]
        );
    }

    #[test]
    fn numeric_component_continues_through_nested_arrays() {
        let doc = rawdoc! { "a": [[{ "b": 1 }], [{ "b": 2 }]] };
        assert_eq!(owned(candidates(&doc, "a.1.b")), vec![raw(2)]);
    }

    #[test]
    fn offsets_are_written_like_array_keys() {
        assert_eq!(array_index("0"), Some(0));
        assert_eq!(array_index("12"), Some(12));
        assert_eq!(array_index("01"), None);
        assert_eq!(array_index(""), None);
        assert_eq!(array_index("1a"), None);
    }

    #[test]
    fn whole_leaf_array_is_not_expanded() {
        let doc = rawdoc! { "a": [1, 2] };
        let mut seen = Vec::new();
        any_candidate(&doc, "a", LeafArray::Whole, &mut |v| {
            seen.push(v.map(RawBson::from));
            false
        });
        assert_eq!(seen, vec![Some(bson::rawbson!([1, 2]))]);
    }

    #[test]
    fn index_values_expand_a_leaf_array() {
        let doc = rawdoc! { "a": [1, [2, 3]] };
        let found = index_values(&doc, "a");
        let values: Vec<RawBson> = found.values.into_iter().map(RawBson::from).collect();
        assert_eq!(values, vec![RawBson::Int32(1), bson::rawbson!([2, 3])]);
        assert!(found.multikey);
        assert!(!found.missing);
    }

    #[test]
    fn index_values_of_an_empty_array_is_undefined() {
        let doc = rawdoc! { "a": [] };
        let found = index_values(&doc, "a");
        assert_eq!(found.values, vec![RawBsonRef::Undefined]);
        assert!(found.multikey);
    }

    #[test]
    fn index_values_of_a_missing_path_is_nothing_but_missing() {
        let doc = rawdoc! { "b": 1 };
        let found = index_values(&doc, "a.c");
        assert!(found.values.is_empty());
        assert!(found.missing);
        assert!(!found.multikey);
    }

    #[test]
    fn index_values_treat_scalars_inside_an_array_as_missing() {
        let doc = rawdoc! { "a": [1, { "b": 2 }, []] };
        let found = index_values(&doc, "a.b");
        assert_eq!(found.values, vec![RawBsonRef::Int32(2)]);
        assert!(found.missing);
        assert!(found.multikey);
    }

    #[test]
    fn index_values_follow_a_positional_component_without_multikey() {
        let doc = rawdoc! { "a": [{ "b": 1 }, { "b": 2 }] };
        let found = index_values(&doc, "a.1.b");
        assert_eq!(found.values, vec![RawBsonRef::Int32(2)]);
        assert!(!found.multikey);
    }

    #[test]
    fn index_keys_expand_a_shared_array_element_by_element() {
        let doc = rawdoc! { "a": [{ "x": 1, "y": 5 }, { "x": 2, "y": 0 }] };
        let keys = index_keys(&doc, &["a.x", "a.y"]).unwrap();
        let one = |a: i32, b: i32| vec![Some(RawBsonRef::Int32(a)), Some(RawBsonRef::Int32(b))];
        assert_eq!(keys.keys, vec![one(1, 5), one(2, 0)]);
        assert_eq!(keys.multikey, vec![true, true]);
    }

    #[test]
    fn index_keys_reject_parallel_arrays() {
        let doc = rawdoc! { "a": [1, 2], "b": [3, 4] };
        let err = index_keys(&doc, &["a", "b"]).unwrap_err();
        assert_eq!(err.kind, ErrorKind::CannotIndexParallelArrays);
        assert_eq!(err.message, "cannot index parallel arrays [b] [a]");
    }

    #[test]
    fn index_keys_combine_an_array_with_scalars() {
        let doc = rawdoc! { "a": [1, 2], "b": "s" };
        let keys = index_keys(&doc, &["a", "b"]).unwrap();
        assert_eq!(keys.keys.len(), 2);
        assert_eq!(keys.multikey, vec![true, false]);
        assert!(
            keys.keys
                .iter()
                .all(|k| k[1] == Some(RawBsonRef::String("s")))
        );
    }
}
