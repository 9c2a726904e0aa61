//! The one place a schema compiles and runs a regular expression
//! (`pattern`, `patternProperties`).
//!
//! For now this uses the `regex` crate directly: linear-time matching, but
//! no backreferences or look-around, which PCRE (MongoDB's engine) has; a
//! pattern the crate cannot compile is refused with MongoDB's "invalid
//! regular expression" error. When ebb's own regular-expression engine for
//! `$regex` lands, this module is the only thing to swap. It knows nothing
//! about schemas.

use crate::error::{Error, ErrorKind, Result};

/// A compiled, unanchored regular expression with the text it came from.
#[derive(Debug, Clone)]
pub(crate) struct Pattern {
    source: String,
    regex: Option<regex::Regex>,
}

impl Pattern {
    /// Compiles `source` without options (JSON Schema allows none).
    pub fn compile(source: &str) -> Result<Pattern> {
        match regex::Regex::new(source) {
            Ok(regex) => Ok(Pattern {
                source: source.to_owned(),
                regex: Some(regex),
            }),
            Err(e) => Err(Error::new(
                ErrorKind::InvalidRegex,
                format!("Regular expression is invalid: {}", summary(&e.to_string())),
            )),
        }
    }

    /// Compiles `source`; one that does not compile matches nothing
    /// (`patternProperties` keys behave so in MongoDB: they are never
    /// refused).
    pub fn compile_lenient(source: &str) -> Pattern {
        Pattern {
            source: source.to_owned(),
            regex: regex::Regex::new(source).ok(),
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

/// The crate's messages span several lines (a caret diagram, then
/// `error: …`); only the line saying what is wrong goes to the client.
fn summary(message: &str) -> &str {
    message
        .lines()
        .rev()
        .find(|l| l.starts_with("error:"))
        .map(|l| l.trim_start_matches("error:").trim())
        .unwrap_or(message)
}

#[cfg(test)]
mod tests {
    use super::*;

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
