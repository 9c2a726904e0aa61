//! `$text`: its operand, and the search it makes against a text index.
//!
//! The `$search` string holds words, `"quoted phrases"`, and either
//! negated with a leading `-`. A document matches when it has at least
//! one of the positive terms (the words, and the words of the phrases),
//! every positive phrase, no negated term and no negated phrase; with
//! `$caseSensitive` or `$diacriticSensitive` its terms are compared in that
//! form too. Its score sums its scores of the positive terms.

use std::collections::{BTreeSet, HashSet};

use bson::{RawBsonRef, RawDocument};

use super::index::TextIndex;
use super::language::Language;
use super::tokens::{Fold, fold, term, words};
use crate::error::{Error, ErrorKind, Result};
use crate::query::value::element;

/// A parsed `$text` operand.
#[derive(Debug, Clone, PartialEq)]
pub struct TextQuery {
    pub search: String,
    /// `$language`, when given.
    pub language: Option<Language>,
    pub fold: Fold,
}

impl TextQuery {
    /// Parses `{$search, $language, $caseSensitive, $diacriticSensitive}`,
    /// with mongod's errors.
    pub fn parse(value: RawBsonRef<'_>) -> Result<TextQuery> {
        let RawBsonRef::Document(spec) = value else {
            return Err(Error::bad_value("$text expects an object"));
        };
        let mut search = None;
        let mut language = None;
        let mut fold = Fold::default();
        for item in spec.iter() {
            let (key, value) = element(item)?;
            let wrong = |expected: &str| {
                Error::new(
                    ErrorKind::TypeMismatch,
                    format!(
                        "\"{key}\" had the wrong type. Expected {expected}, found {}",
                        crate::encoding::display::type_name(&value)
                    ),
                )
            };
            match (key, value) {
                ("$search", RawBsonRef::String(s)) => search = Some(s.to_owned()),
                ("$language", RawBsonRef::String(l)) => {
                    language = Some(Language::parse(l).ok_or_else(|| {
                        Error::bad_value(format!(
                            "unsupported language: \"{l}\" for text index version 3"
                        ))
                    })?);
                }
                ("$caseSensitive", RawBsonRef::Boolean(b)) => fold.case_sensitive = b,
                ("$diacriticSensitive", RawBsonRef::Boolean(b)) => fold.diacritic_sensitive = b,
                ("$search" | "$language", _) => return Err(wrong("string")),
                ("$caseSensitive" | "$diacriticSensitive", _) => return Err(wrong("bool")),
                _ => return Err(Error::bad_value("extra fields in $text")),
            }
        }
        let search = search.ok_or_else(|| {
            Error::new(ErrorKind::NoSuchKey, "Missing expected field \"$search\"")
        })?;
        Ok(TextQuery {
            search,
            language,
            fold,
        })
    }
}

/// A `$text` query made against one text index.
#[derive(Debug, Clone, PartialEq)]
pub struct Search {
    index: TextIndex,
    fold: Fold,
    /// Terms as the index keys them (folded), to find candidates with.
    pub terms: BTreeSet<String>,
    /// The same terms in the query's fold (differs when case- or
    /// diacritic-sensitive).
    exact_terms: HashSet<String>,
    negated_terms: HashSet<String>,
    phrases: Vec<String>,
    negated_phrases: Vec<String>,
    /// Whether a document is known to hold a positive term (it came from
    /// the index entries of `terms`), so only the other rules need a look.
    from_index: bool,
}

impl Search {
    pub fn new(query: &TextQuery, index: &TextIndex) -> Search {
        let language = query.language.unwrap_or(index.default_language);
        let how = query.fold;
        let mut search = Search {
            index: index.clone(),
            fold: how,
            terms: BTreeSet::new(),
            exact_terms: HashSet::new(),
            negated_terms: HashSet::new(),
            phrases: Vec::new(),
            negated_phrases: Vec::new(),
            from_index: false,
        };
        let add_words = |text: &str, negated: bool, s: &mut Search| {
            for word in words(text, language) {
                if negated {
                    if let Some(t) = term(word, language, how) {
                        s.negated_terms.insert(t);
                    }
                } else if let Some(t) = term(word, language, Fold::default()) {
                    s.terms.insert(t);
                    if let Some(exact) = term(word, language, how) {
                        s.exact_terms.insert(exact);
                    }
                }
            }
        };
        // mongod's lexer: `"` opens and closes a phrase; a `-` at the start
        // or after white space negates up to the next white space.
        let mut positive = String::new();
        let mut negative = String::new();
        let mut phrase: Option<(usize, bool)> = None;
        let mut negating = false;
        let mut after_space = true;
        let text = query.search.as_str();
        for (at, c) in text.char_indices() {
            let space = matches!(c, ' ' | '\n' | '\u{0B}' | '\u{0C}' | '\r');
            if let Some((start, negated)) = phrase {
                if c == '"' {
                    let body = &text[start..at];
                    if negated {
                        search.negated_phrases.push(body.to_owned());
                    } else {
                        search.phrases.push(body.to_owned());
                    }
                    phrase = None;
                    positive.push(' ');
                } else if !negated {
                    positive.push(c);
                }
            } else if c == '"' {
                phrase = Some((at + 1, negating));
                positive.push(' ');
            } else if c == '-' && (after_space || negating) {
                negating = true;
                negative.push(' ');
            } else if space {
                negating = false;
                positive.push(' ');
                negative.push(' ');
            } else if negating {
                negative.push(c);
            } else {
                positive.push(c);
            }
            after_space = space;
        }
        add_words(&positive, false, &mut search);
        add_words(&negative, true, &mut search);
        search
    }

    /// The same search, told that its documents come from the index
    /// entries of its terms.
    pub fn from_index(mut self) -> Search {
        self.from_index = true;
        self
    }

    /// Whether the search can match anything (it has a positive term).
    pub fn has_terms(&self) -> bool {
        !self.terms.is_empty()
    }

    /// Whether `doc` matches the search.
    pub fn matches(&self, doc: &RawDocument) -> Result<bool> {
        let sensitive = self.fold != Fold::default();
        let needs_terms = !self.from_index || sensitive || !self.negated_terms.is_empty();
        if needs_terms {
            let language = self.index.language_of(doc)?;
            let mut positive = false;
            let mut negative = false;
            self.index.strings(doc, &mut |s, _| {
                for word in words(s, language) {
                    let Some(t) = term(word, language, self.fold) else {
                        continue;
                    };
                    positive |= self.exact_terms.contains(&t);
                    negative |= self.negated_terms.contains(&t);
                }
            });
            if negative || !positive {
                return Ok(false);
            }
        }
        if self.phrases.is_empty() && self.negated_phrases.is_empty() {
            return Ok(true);
        }
        let mut texts = Vec::new();
        self.index
            .strings(doc, &mut |s, _| texts.push(fold(s, self.fold)));
        let holds = |phrase: &String| {
            let phrase = fold(phrase, self.fold);
            texts.iter().any(|t| t.contains(&phrase))
        };
        Ok(self.phrases.iter().all(holds) && !self.negated_phrases.iter().any(holds))
    }

    /// The score of a document with these term scores.
    pub fn score(&self, scores: &std::collections::HashMap<String, f64>) -> f64 {
        self.terms.iter().filter_map(|t| scores.get(t)).sum()
    }

    /// The query as parsed, as explain shows it: its terms, negated terms,
    /// phrases and negated phrases (terms sorted).
    pub fn parsed(&self) -> [Vec<String>; 4] {
        let mut negated: Vec<String> = self.negated_terms.iter().cloned().collect();
        negated.sort();
        [
            self.terms.iter().cloned().collect(),
            negated,
            self.phrases.clone(),
            self.negated_phrases.clone(),
        ]
    }
}

#[cfg(test)]
mod tests {
    use bson::{RawBson, rawdoc};

    use super::*;

    fn search(spec: bson::RawDocumentBuf) -> Search {
        let index = TextIndex {
            weights: vec![("body".to_owned(), 1.0)],
            default_language: Language::English,
            language_override: "language".to_owned(),
        };
        let q = TextQuery::parse(RawBsonRef::Document(&spec)).unwrap();
        Search::new(&q, &index)
    }

    fn matches(s: &Search, body: &str) -> bool {
        s.matches(&rawdoc! { "body": body }).unwrap()
    }

    #[test]
    fn terms_phrases_and_negations() {
        let s = search(rawdoc! { "$search": "coffee -shop \"cold brew\" -\"iced tea\"" });
        assert_eq!(
            s.terms.iter().cloned().collect::<Vec<_>>(),
            ["brew", "coffe", "cold"]
        );
        assert!(matches(&s, "Cold brew coffee"));
        assert!(!matches(&s, "cold brew coffee shops"));
        assert!(!matches(&s, "coffee, cold"));
        assert!(!matches(&s, "cold brew and iced tea"));
        let either = search(rawdoc! { "$search": "tea coffee" });
        assert!(matches(&either, "green tea") && matches(&either, "coffee"));
        assert!(!matches(&either, "water"));
        let only_negated = search(rawdoc! { "$search": "-coffee" });
        assert!(!only_negated.has_terms());
        let hyphenated = search(rawdoc! { "$search": "ice-cream" });
        assert_eq!(hyphenated.terms.len(), 2);
        let both = search(rawdoc! { "$search": "tea -foo-bar" });
        assert_eq!(both.negated_terms.len(), 2);
        assert!(!matches(&both, "tea and bar"));
    }

    #[test]
    fn case_and_diacritic_sensitivity() {
        let s = search(rawdoc! { "$search": "Café", "$caseSensitive": true });
        assert!(matches(&s, "Cafe au lait"));
        assert!(!matches(&s, "cafe au lait"));
        let d = search(rawdoc! { "$search": "café", "$diacriticSensitive": true });
        assert!(matches(&d, "un café"));
        assert!(!matches(&d, "un cafe"));
    }

    #[test]
    fn operand_errors() {
        let parse = |v: bson::RawDocumentBuf| TextQuery::parse(RawBsonRef::Document(&v));
        assert_eq!(parse(rawdoc! {}).unwrap_err().kind, ErrorKind::NoSuchKey);
        assert!(parse(rawdoc! { "$search": 1 }).is_err());
        assert!(parse(rawdoc! { "$search": "a", "$language": "xx" }).is_err());
        assert!(parse(rawdoc! { "$search": "a", "$caseSensitive": 1 }).is_err());
        assert!(parse(rawdoc! { "$search": "a", "$foo": 1 }).is_err());
        let _ = RawBson::Null;
    }
}
