//! Dotted update paths (`a.b.0.c`): parsed and validated once when the
//! update is parsed, then walked component by component when it is applied.
//!
//! This module only knows the shape of a path; what a path *does* to a
//! document belongs to the tree walk in `apply`.

use bson::raw::{CStr, CString};

use crate::{Error, ErrorKind, Result};

/// A validated, non-empty dotted path whose components are non-empty.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FieldPath {
    dotted: String,
    parts: Vec<CString>,
}

impl FieldPath {
    /// Parses the path an update operator names, with MongoDB's messages for
    /// the empty path and for empty components (`a..b`, `.a`, `a.`).
    pub(crate) fn parse(dotted: &str) -> Result<FieldPath> {
        if dotted.is_empty() {
            return Err(Error::new(
                ErrorKind::EmptyFieldName,
                "An empty update path is not valid.",
            ));
        }
        if dotted.split('.').any(str::is_empty) {
            return Err(Error::new(
                ErrorKind::EmptyFieldName,
                format!(
                    "The update path '{dotted}' contains an empty field name, which is not allowed."
                ),
            ));
        }
        let parts = dotted
            .split('.')
            .map(CString::try_from)
            .collect::<std::result::Result<Vec<_>, _>>()
            .map_err(|_| {
                Error::bad_value(format!("The update path '{dotted}' contains a null byte"))
            })?;
        Ok(FieldPath {
            dotted: dotted.to_owned(),
            parts,
        })
    }

    pub(crate) fn dotted(&self) -> &str {
        &self.dotted
    }

    pub(crate) fn parts(&self) -> &[CString] {
        &self.parts
    }

    pub(crate) fn part(&self, i: usize) -> &CStr {
        &self.parts[i]
    }

    pub(crate) fn len(&self) -> usize {
        self.parts.len()
    }

    /// The first `n` components, dotted.
    pub(crate) fn prefix(&self, n: usize) -> String {
        let names: Vec<&str> = self.parts[..n].iter().map(CString::as_str).collect();
        names.join(".")
    }

    /// True when `self` equals `other` or is an ancestor of it, comparing
    /// whole components (`a` is a prefix of `a.b`, not of `ab`).
    pub(crate) fn is_prefix_of(&self, other: &FieldPath) -> bool {
        self.parts.len() <= other.parts.len()
            && self.parts.iter().zip(&other.parts).all(|(a, b)| a == b)
    }

    /// Whether any component is `$`, `$[]` or `$[id]`: the path names
    /// different elements in different documents.
    pub(crate) fn is_dynamic(&self) -> bool {
        self.parts
            .iter()
            .any(|p| !matches!(Part::of(p.as_str()), Part::Field(_)))
    }

    /// MongoDB's rules for where the positional forms may stand: at most
    /// one `$`, and neither `$` nor `$[...]` as the first component.
    pub(crate) fn check_positional(&self) -> Result<()> {
        let dollars = self.parts.iter().filter(|p| p.as_str() == "$").count();
        if dollars > 1 {
            return Err(Error::bad_value(format!(
                "Too many positional (i.e. '$') elements found in path '{}'",
                self.dotted
            )));
        }
        match Part::of(self.parts[0].as_str()) {
            Part::Positional => Err(Error::bad_value(format!(
                "Cannot have positional (i.e. '$') element in the first position in path '{}'",
                self.dotted
            ))),
            Part::AllElements | Part::Filtered(_) => Err(Error::bad_value(format!(
                "Cannot have array filter identifier (i.e. '$[<id>]') element in the first \
                 position in path '{}'",
                self.dotted
            ))),
            Part::Field(_) => Ok(()),
        }
    }

    /// A path made of already-resolved components (names and indexes).
    pub(crate) fn from_parts(parts: Vec<CString>) -> FieldPath {
        let names: Vec<&str> = parts.iter().map(CString::as_str).collect();
        FieldPath {
            dotted: names.join("."),
            parts,
        }
    }
}

/// What one component of an update path stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Part<'p> {
    /// A field name, or an array index written as digits.
    Field(&'p str),
    /// `$`: the element the query matched.
    Positional,
    /// `$[]`: every element of the array.
    AllElements,
    /// `$[id]`: the elements the array filter `id` accepts.
    Filtered(&'p str),
}

impl<'p> Part<'p> {
    pub(crate) fn of(part: &'p str) -> Part<'p> {
        if part == "$" {
            return Part::Positional;
        }
        match part.strip_prefix("$[").and_then(|p| p.strip_suffix(']')) {
            Some("") => Part::AllElements,
            Some(id) => Part::Filtered(id),
            None => Part::Field(part),
        }
    }

    /// `$[]` and `$[id]`: the parts that fan out over an array.
    pub(crate) fn is_array_update(self) -> bool {
        matches!(self, Part::AllElements | Part::Filtered(_))
    }
}

/// The array index a path component names, if it is all digits.
///
/// MongoDB reads any run of digits as an index into an array (leading
/// zeros included); anything else cannot address an array element.
pub(crate) fn array_index(part: &str) -> Option<usize> {
    if part.is_empty() || !part.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    // An index too large for usize is past the end of any array; saturate so
    // the backfill limit reports it.
    Some(part.parse().unwrap_or(usize::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dotted_path_splits_into_components() {
        let p = FieldPath::parse("a.b.0").unwrap();
        let parts: Vec<&str> = p.parts().iter().map(CString::as_str).collect();
        assert_eq!(parts, ["a", "b", "0"]);
        assert_eq!(p.prefix(2), "a.b");
    }

    #[test]
    fn empty_path_is_rejected() {
        let err = FieldPath::parse("").unwrap_err();
        assert_eq!(err.kind, ErrorKind::EmptyFieldName);
        assert_eq!(err.message, "An empty update path is not valid.");
    }

    #[test]
    fn empty_component_is_rejected_wherever_it_is() {
        for p in ["a..b", ".a", "a."] {
            let err = FieldPath::parse(p).unwrap_err();
            assert_eq!(err.kind, ErrorKind::EmptyFieldName);
            assert_eq!(
                err.message,
                format!(
                    "The update path '{p}' contains an empty field name, which is not allowed."
                )
            );
        }
    }

    #[test]
    fn prefix_compares_whole_components() {
        let a = FieldPath::parse("a").unwrap();
        let ab = FieldPath::parse("a.b").unwrap();
        let ab2 = FieldPath::parse("ab").unwrap();
        assert!(a.is_prefix_of(&ab));
        assert!(a.is_prefix_of(&a));
        assert!(!a.is_prefix_of(&ab2));
        assert!(!ab.is_prefix_of(&a));
    }

    #[test]
    fn digits_are_array_indexes() {
        assert_eq!(array_index("0"), Some(0));
        assert_eq!(array_index("007"), Some(7));
        assert_eq!(array_index("-1"), None);
        assert_eq!(array_index("1a"), None);
        assert_eq!(array_index("99999999999999999999999"), Some(usize::MAX));
    }

    #[test]
    fn positional_forms_are_classified() {
        assert_eq!(Part::of("$"), Part::Positional);
        assert_eq!(Part::of("$[]"), Part::AllElements);
        assert_eq!(Part::of("$[x]"), Part::Filtered("x"));
        assert_eq!(Part::of("$[x"), Part::Field("$[x"));
        assert_eq!(Part::of("$x"), Part::Field("$x"));
        assert!(FieldPath::parse("a.$[]").unwrap().is_dynamic());
        assert!(!FieldPath::parse("a.$x").unwrap().is_dynamic());
    }

    #[test]
    fn positional_placement_follows_mongodb() {
        let message = |p: &str| {
            FieldPath::parse(p)
                .unwrap()
                .check_positional()
                .unwrap_err()
                .message
        };
        assert_eq!(
            message("$.a"),
            "Cannot have positional (i.e. '$') element in the first position in path '$.a'"
        );
        assert_eq!(
            message("$[].a"),
            "Cannot have array filter identifier (i.e. '$[<id>]') element in the first \
             position in path '$[].a'"
        );
        assert_eq!(
            message("a.$.b.$"),
            "Too many positional (i.e. '$') elements found in path 'a.$.b.$'"
        );
        assert!(
            FieldPath::parse("a.$.b.$[]")
                .unwrap()
                .check_positional()
                .is_ok()
        );
    }
}
