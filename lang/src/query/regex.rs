//! Regular expressions in queries: `$regex`/`$options`, BSON regex values
//! (`{a: /x/i}`), and the literal prefix an anchored one gives the planner.
//!
//! **Engine: `fancy-regex`.** MongoDB uses PCRE, and applications use the
//! PCRE features beyond the `regex` crate's: backreferences (`(a)\1`) and
//! lookaround (`(?=…)`, `(?<!…)`). `fancy-regex` has them, hands every
//! part without them to the `regex` crate (linear time), and bounds its own
//! backtracking (`BACKTRACK_LIMIT` steps per match): a pathological pattern
//! fails that match instead of hanging a thread. A failed match counts as
//! no match and is recorded, and the query that ran it reports the error
//! (see [`Regex::failure`]) rather than a silently short answer.
//!
//! Options are MongoDB's: `i` case-insensitive, `m` multi-line anchors,
//! `x` extended (whitespace and `#` comments ignored), `s` dot matches
//! newline, `u` Unicode (always on here). Matching looks at strings and
//! symbols; a regex value matches a stored regex value with the same
//! pattern and options. A regex never uses a collation (as in MongoDB).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::error::{Error, ErrorKind, Result};

/// Backtracking steps one match may take before it fails.
const BACKTRACK_LIMIT: usize = 1_000_000;

/// A compiled query regex.
#[derive(Clone)]
pub struct Regex {
    pattern: String,
    options: String,
    compiled: Arc<fancy_regex::Regex>,
    /// Set when a match ran out of backtracking budget.
    failed: Arc<AtomicBool>,
}

impl std::fmt::Debug for Regex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "/{}/{}", self.pattern, self.options)
    }
}

impl PartialEq for Regex {
    fn eq(&self, other: &Self) -> bool {
        self.pattern == other.pattern && self.options == other.options
    }
}

impl Regex {
    /// Compiles a pattern with MongoDB's option letters.
    pub fn new(pattern: &str, options: &str) -> Result<Regex> {
        if pattern.contains('\0') {
            return Err(Error::bad_value(
                "Regular expression cannot contain an embedded null byte",
            ));
        }
        let mut builder = fancy_regex::RegexBuilder::new(pattern);
        builder.backtrack_limit(BACKTRACK_LIMIT);
        for flag in options.chars() {
            match flag {
                'i' => builder.case_insensitive(true),
                'm' => builder.multi_line(true),
                'x' => builder.ignore_whitespace(true),
                's' => builder.dot_matches_new_line(true),
                'u' => &mut builder,
                other => {
                    return Err(Error::new(
                        ErrorKind::InvalidRegexOptions,
                        format!("invalid flag in regex options: {other}"),
                    ));
                }
            };
        }
        let compiled = builder.build().map_err(|e| {
            // The engine's message may draw a caret diagram over several
            // lines; the client gets its first line.
            let e = e.to_string();
            Error::new(
                ErrorKind::InvalidRegex,
                format!(
                    "Regular expression is invalid: {}",
                    e.lines().next().unwrap_or_default()
                ),
            )
        })?;
        Ok(Regex {
            pattern: pattern.to_owned(),
            options: options.to_owned(),
            compiled: Arc::new(compiled),
            failed: Arc::new(AtomicBool::new(false)),
        })
    }

    pub fn pattern(&self) -> &str {
        &self.pattern
    }

    pub fn options(&self) -> &str {
        &self.options
    }

    /// Whether the regex finds a match in `s`. A match that exceeds the
    /// backtracking budget is no match, and is remembered for
    /// [`Regex::failure`].
    pub fn is_match(&self, s: &str) -> bool {
        match self.compiled.is_match(s) {
            Ok(found) => found,
            Err(_) => {
                self.failed.store(true, Ordering::Relaxed);
                false
            }
        }
    }

    /// The matches of the regex in `s`, leftmost first, at most `limit`
    /// (what `$regexFind` and `$regexFindAll` return): each with its byte
    /// offset and its capture groups (`None` for a group that took no
    /// part). Running out of backtracking budget is an error here.
    pub fn find_matches(&self, s: &str, limit: usize) -> Result<Vec<Found>> {
        let mut out = Vec::new();
        for caps in self.compiled.captures_iter(s) {
            if out.len() >= limit {
                break;
            }
            let caps = caps.map_err(|e| self.match_error(e))?;
            let Some(whole) = caps.get(0) else { continue };
            out.push(Found {
                start: whole.start(),
                text: whole.as_str().to_owned(),
                captures: (1..caps.len())
                    .map(|i| caps.get(i).map(|m| m.as_str().to_owned()))
                    .collect(),
            });
        }
        Ok(out)
    }

    /// Whether the regex matches `s`, with a budget overrun as an error.
    pub fn try_match(&self, s: &str) -> Result<bool> {
        self.compiled.is_match(s).map_err(|e| self.match_error(e))
    }

    fn match_error(&self, e: fancy_regex::Error) -> Error {
        Error::new(
            ErrorKind::BadValue,
            format!(
                "Regular expression /{}/{} failed while matching: {e}",
                self.pattern, self.options
            ),
        )
    }

    /// The error to report if some match ran out of backtracking budget.
    pub fn failure(&self) -> Option<Error> {
        self.failed.load(Ordering::Relaxed).then(|| {
            Error::new(
                ErrorKind::BadValue,
                format!(
                    "Regular expression /{}/{} exceeded its backtracking limit of {BACKTRACK_LIMIT} steps",
                    self.pattern, self.options
                ),
            )
        })
    }

    /// The literal every match starts with, when the regex is anchored at
    /// the start of the string and case-sensitive: `^abc.*` gives `abc`.
    /// Conservative: any alternation, escape or option that changes what
    /// `^` or the letters mean gives `None`, and a quantified last literal
    /// is left out (`^abc?` gives `ab`). An index scans `[prefix, next)`
    /// and the regex still checks every candidate.
    pub fn literal_prefix(&self) -> Option<String> {
        if self.options.contains(['i', 'x']) || self.pattern.contains('|') {
            return None;
        }
        let rest = if let Some(rest) = self.pattern.strip_prefix("\\A") {
            rest
        } else if !self.options.contains('m') {
            self.pattern.strip_prefix('^')?
        } else {
            return None;
        };
        let mut prefix = String::new();
        let mut chars = rest.chars().peekable();
        while let Some(&c) = chars.peek() {
            if "\\.^$|?*+()[]{}".contains(c) {
                break;
            }
            prefix.push(c);
            chars.next();
        }
        // A quantifier after the last literal makes that literal optional.
        if matches!(chars.peek(), Some('?' | '*' | '{')) {
            prefix.pop();
        }
        Some(prefix)
    }
}

/// One match: where it starts (bytes), what it matched, and each capture
/// group's text.
#[derive(Debug, Clone, PartialEq)]
pub struct Found {
    pub start: usize,
    pub text: String,
    pub captures: Vec<Option<String>>,
}

/// The least string greater than every string starting with `prefix`, if
/// one exists: the prefix with its last character incremented (characters
/// that cannot be incremented are dropped first).
pub fn prefix_upper_bound(prefix: &str) -> Option<String> {
    let mut chars: Vec<char> = prefix.chars().collect();
    while let Some(last) = chars.pop() {
        let mut next = last as u32 + 1;
        // Skip the surrogate gap.
        if (0xD800..=0xDFFF).contains(&next) {
            next = 0xE000;
        }
        if let Some(c) = char::from_u32(next) {
            chars.push(c);
            return Some(chars.into_iter().collect());
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn re(p: &str, o: &str) -> Regex {
        Regex::new(p, o).unwrap()
    }

    #[test]
    fn options_change_matching() {
        assert!(re("^abc", "").is_match("abcdef"));
        assert!(!re("^abc", "").is_match("ABC"));
        assert!(re("^abc", "i").is_match("ABC"));
        assert!(!re("^b", "").is_match("a\nb"));
        assert!(re("^b", "m").is_match("a\nb"));
        assert!(re("a b # comment", "x").is_match("ab"));
        assert!(!re("a.b", "").is_match("a\nb"));
        assert!(re("a.b", "s").is_match("a\nb"));
        assert!(re("é", "u").is_match("café"));
    }

    #[test]
    fn pcre_features_beyond_the_regex_crate() {
        assert!(re(r"(a)\1", "").is_match("xaa"));
        assert!(re(r"foo(?=bar)", "").is_match("foobar"));
        assert!(!re(r"foo(?!bar)", "").is_match("foobar"));
    }

    #[test]
    fn bad_patterns_and_options_are_refused() {
        assert_eq!(
            Regex::new("(", "").unwrap_err().kind,
            ErrorKind::InvalidRegex
        );
        assert_eq!(
            Regex::new("a", "z").unwrap_err().kind,
            ErrorKind::InvalidRegexOptions
        );
    }

    #[test]
    fn pathological_patterns_fail_instead_of_hanging() {
        let evil = re(r"^(a|aa)+\1x", "");
        let input = format!("{}b", "a".repeat(40));
        assert!(!evil.is_match(&input));
        assert!(evil.failure().is_some());
    }

    #[test]
    fn literal_prefixes_are_conservative() {
        assert_eq!(re("^abc", "").literal_prefix().as_deref(), Some("abc"));
        assert_eq!(re("^abc.*", "").literal_prefix().as_deref(), Some("abc"));
        assert_eq!(re("^abc?", "").literal_prefix().as_deref(), Some("ab"));
        assert_eq!(re(r"\Aab", "m").literal_prefix().as_deref(), Some("ab"));
        assert_eq!(re("^ab", "m").literal_prefix(), None);
        assert_eq!(re("^ab", "i").literal_prefix(), None);
        assert_eq!(re("^ab|cd", "").literal_prefix(), None);
        assert_eq!(re("abc", "").literal_prefix(), None);
        assert_eq!(re(r"^a\.b", "").literal_prefix().as_deref(), Some("a"));
    }

    #[test]
    fn prefix_upper_bounds_cover_every_extension() {
        assert_eq!(prefix_upper_bound("abc").as_deref(), Some("abd"));
        assert_eq!(prefix_upper_bound("").as_deref(), None);
        let max = char::MAX.to_string();
        assert_eq!(prefix_upper_bound(&format!("a{max}")).as_deref(), Some("b"));
        assert!("abc\u{10FFFF}" < "abd");
    }
}
