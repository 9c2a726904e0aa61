//! The one place a schema compiles and runs a regular expression
//! (`pattern`, `patternProperties`).
//!
//! It uses the query language's engine (`crate::query::regex`, PCRE's
//! backreferences and look-around with bounded backtracking), so a schema
//! pattern and a `$regex` accept and match the same expressions; one that
//! does not compile is refused with MongoDB's "invalid regular expression"
//! error. It knows nothing about schemas.

use crate::error::Result;
use crate::query::regex::Regex;

/// A compiled, unanchored regular expression with the text it came from.
#[derive(Debug, Clone)]
pub(crate) struct Pattern {
    source: String,
    regex: Option<Regex>,
}

impl Pattern {
    /// Compiles `source` without options (JSON Schema allows none).
    pub fn compile(source: &str) -> Result<Pattern> {
        Ok(Pattern {
            source: source.to_owned(),
            regex: Some(Regex::new(source, "")?),
        })
    }

    /// Compiles `source`; one that does not compile matches nothing
    /// (`patternProperties` keys behave so in MongoDB: they are never
    /// refused).
    pub fn compile_lenient(source: &str) -> Pattern {
        Pattern {
            source: source.to_owned(),
            regex: Regex::new(source, "").ok(),
        }
    }

    /// Whether some part of `text` matches.
    pub fn is_match(&self, text: &str) -> bool {
        self.regex.as_ref().is_some_and(|r| r.is_match(text))
    }

    /// The expression as written.
    pub fn source(&self) -> &str {
        &self.source
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;

    #[test]
    fn patterns_search_anywhere_in_the_text() {
        let p = Pattern::compile("ing").unwrap();
        assert!(p.is_match("string"));
        assert!(!p.is_match("str"));
        assert!(
            Pattern::compile("^[0-9a-z-_]+$")
                .unwrap()
                .is_match("mongo-db")
        );
    }

    #[test]
    fn an_invalid_pattern_is_refused_or_matches_nothing() {
        let e = Pattern::compile("(").unwrap_err();
        assert_eq!(e.kind, ErrorKind::InvalidRegex);
        assert!(
            e.message.starts_with("Regular expression is invalid: "),
            "{}",
            e.message
        );
        assert!(!e.message.contains('\n'));
        assert!(!Pattern::compile_lenient("(").is_match("("));
    }
}
