//! A text index's definition (its weighted fields, default language and
//! language override field) and the terms it gives a document, each with
//! its score, as mongod's version 3 text indexes score them:
//!
//! for each indexed string, a term's score is `weight × freq × coeff`,
//! where `freq` sums `1, 1/2, 1/4, …` over the term's occurrences,
//! `coeff = ½ × count / words + ½` (how much of the string the term is),
//! with a tenth more when the whole string is the term; scores of one term
//! from several strings add up.

use std::collections::HashMap;

use bson::{RawBsonRef, RawDocument};

use super::language::Language;
use super::tokens::{Fold, term, words};
use crate::error::{Error, ErrorKind, Result};
use crate::query::path::{LeafArray, any_candidate};

/// The field of a wildcard text index (`{"$**": "text"}`).
pub const WILDCARD: &str = "$**";

/// A text index's definition.
#[derive(Debug, Clone, PartialEq)]
pub struct TextIndex {
    /// Indexed paths and their weights, in path order; `$**` indexes
    /// every string of the document.
    pub weights: Vec<(String, f64)>,
    pub default_language: Language,
    /// The top-level field that names a document's own language.
    pub language_override: String,
}

impl TextIndex {
    fn wildcard_weight(&self) -> Option<f64> {
        self.weights
            .iter()
            .find(|(p, _)| p == WILDCARD)
            .map(|(_, w)| *w)
    }

    /// The language `doc` is indexed in: its language override field when
    /// it has one, else the index's default. A language text search does
    /// not know, or a value that is not a string, fails, as mongod refuses
    /// such a document.
    pub fn language_of(&self, doc: &RawDocument) -> Result<Language> {
        match doc.get(&self.language_override) {
            Ok(Some(RawBsonRef::String(name))) => Language::parse(name).ok_or_else(|| {
                Error::new(
                    ErrorKind::TextLanguage,
                    format!("language override unsupported: {name}"),
                )
            }),
            Ok(Some(_)) => Err(Error::new(
                ErrorKind::TextLanguageType,
                "found language override field in document with non-string type",
            )),
            _ => Ok(self.default_language),
        }
    }

    /// Calls `visit` with each indexed string of `doc` and its weight.
    pub fn strings<'d>(&self, doc: &'d RawDocument, visit: &mut dyn FnMut(&'d str, f64)) {
        if let Some(weight) = self.wildcard_weight() {
            strings_in(doc, &mut |path, s| {
                if path == self.language_override {
                    return;
                }
                let w = self
                    .weights
                    .iter()
                    .find(|(p, _)| p == path)
                    .map_or(weight, |(_, w)| *w);
                visit(s, w);
            });
            return;
        }
        for (path, weight) in &self.weights {
            any_candidate(doc, path, LeafArray::Elements, &mut |value| {
                if let Some(RawBsonRef::String(s)) = value {
                    visit(s, *weight);
                }
                false
            });
        }
    }

    /// The terms of `doc` with their scores.
    pub fn scores(&self, doc: &RawDocument) -> Result<HashMap<String, f64>> {
        let language = self.language_of(doc)?;
        let mut scores: HashMap<String, f64> = HashMap::new();
        self.strings(doc, &mut |s, weight| {
            score_string(s, weight, language, &mut scores);
        });
        Ok(scores)
    }
}

/// Adds the scores of the terms of one string.
fn score_string(text: &str, weight: f64, language: Language, scores: &mut HashMap<String, f64>) {
    struct Seen {
        count: u32,
        freq: f64,
        step: f64,
    }
    let mut seen: HashMap<String, Seen> = HashMap::new();
    let mut total = 0u32;
    for word in words(text, language) {
        let Some(t) = term(word, language, Fold::default()) else {
            continue;
        };
        total += 1;
        let s = seen.entry(t).or_insert(Seen {
            count: 0,
            freq: 0.0,
            step: 0.5,
        });
        s.step *= 2.0;
        s.count += 1;
        s.freq += 1.0 / s.step;
    }
    for (t, s) in seen {
        let coeff = 0.5 * f64::from(s.count) / f64::from(total) + 0.5;
        let whole = text.len() == t.len() && text.eq_ignore_ascii_case(&t);
        let adjustment = if whole { 1.1 } else { 1.0 };
        *scores.entry(t).or_insert(0.0) += weight * s.freq * coeff * adjustment;
    }
}

/// Every string in `doc` with its dotted path (array positions left out),
/// for a wildcard index.
fn strings_in<'d>(doc: &'d RawDocument, visit: &mut dyn FnMut(&str, &'d str)) {
    fn walk<'d>(prefix: &str, value: RawBsonRef<'d>, visit: &mut dyn FnMut(&str, &'d str)) {
        match value {
            RawBsonRef::String(s) => visit(prefix, s),
            RawBsonRef::Document(d) => {
                for (k, v) in d.iter().flatten() {
                    let path = if prefix.is_empty() {
                        k.as_str().to_owned()
                    } else {
                        format!("{prefix}.{}", k.as_str())
                    };
                    walk(&path, v, visit);
                }
            }
            RawBsonRef::Array(a) => {
                for v in a.into_iter().flatten() {
                    walk(prefix, v, visit);
                }
            }
            _ => {}
        }
    }
    walk("", RawBsonRef::Document(doc), visit);
}

#[cfg(test)]
mod tests {
    use bson::rawdoc;

    use super::*;

    fn index(weights: &[(&str, f64)]) -> TextIndex {
        TextIndex {
            weights: weights.iter().map(|(p, w)| ((*p).to_owned(), *w)).collect(),
            default_language: Language::English,
            language_override: "language".to_owned(),
        }
    }

    #[test]
    fn scores_follow_frequency_share_and_weight() {
        let i = index(&[("subject", 1.0)]);
        let s = i.scores(&rawdoc! { "subject": "coffee shopping" }).unwrap();
        assert_eq!(s["coffe"], 0.75);
        let s = i.scores(&rawdoc! { "subject": "coffee coffee" }).unwrap();
        assert_eq!(s["coffe"], 1.5);
        // The whole string is the term: a tenth more.
        let s = i.scores(&rawdoc! { "subject": "tea" }).unwrap();
        assert_eq!(s["tea"], 1.1);
        let weighted = index(&[("a", 10.0), ("b", 2.0)]);
        let s = weighted
            .scores(&rawdoc! { "a": "cake", "b": "cake" })
            .unwrap();
        assert!((s["cake"] - 13.2).abs() < 1e-9);
    }

    #[test]
    fn wildcard_reads_every_string_and_the_language_field_decides() {
        let i = index(&[(WILDCARD, 1.0)]);
        let s = i
            .scores(&rawdoc! { "a": "apple", "b": { "c": ["pear"] }, "n": 1 })
            .unwrap();
        assert!(s.contains_key("appl") && s.contains_key("pear"));
        let doc = rawdoc! { "a": "las manzanas", "language": "es" };
        assert!(i.scores(&doc).unwrap().contains_key("manzan"));
        let bad = rawdoc! { "a": "x", "language": "klingon" };
        assert_eq!(i.scores(&bad).unwrap_err().kind, ErrorKind::TextLanguage);
    }
}
