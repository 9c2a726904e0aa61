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

    /// Rejects the positional forms (`$`, `$[]`, `$[id]`), which need the
    /// query's match or array filters that ebb does not support yet.
    pub(crate) fn reject_positional(&self) -> Result<()> {
        for (i, part) in self.parts.iter().enumerate() {
            let part = part.as_str();
            if part == "$" && i == 0 {
                return Err(Error::bad_value(format!(
                    "Cannot have positional (i.e. '$') element in the first position in path '{}'",
                    self.dotted
                )));
            }
            if part == "$" || part == "$[]" {
                return Err(Error::bad_value(format!(
                    "The positional operator '{part}' in path '{}' is not supported yet",
                    self.dotted
                )));
            }
            if let Some(id) = part.strip_prefix("$[").and_then(|p| p.strip_suffix(']')) {
                return Err(Error::bad_value(format!(
                    "No array filter found for identifier '{id}' in path '{}'",
                    self.dotted
                )));
            }
        }
        Ok(())
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
    fn positional_forms_are_reported() {
        let first = FieldPath::parse("$.a")
            .unwrap()
            .reject_positional()
            .unwrap_err();
        assert!(first.message.contains("first position"));
        let filter = FieldPath::parse("a.$[x]")
            .unwrap()
            .reject_positional()
            .unwrap_err();
        assert_eq!(
            filter.message,
            "No array filter found for identifier 'x' in path 'a.$[x]'"
        );
        assert!(
            FieldPath::parse("a.$x")
                .unwrap()
                .reject_positional()
                .is_ok()
        );
    }
}
