//! The languages of text search, as mongod names them: each with its
//! Snowball stemmer and its stop words, or `none` (neither). A language is
//! named by its English name or its ISO 639-1 code, case-insensitively.

use std::collections::HashSet;
use std::sync::OnceLock;

use rust_stemmers::{Algorithm, Stemmer};

/// A language text search stems and drops stop words for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Language {
    Danish,
    Dutch,
    English,
    Finnish,
    French,
    German,
    Hungarian,
    Italian,
    Norwegian,
    Portuguese,
    Romanian,
    Russian,
    Spanish,
    Swedish,
    Turkish,
    /// Words as they are: no stemming, no stop words.
    None,
}

/// Every language with its names: mongod's English name, then its code.
const NAMES: &[(Language, &str, &str)] = &[
    (Language::Danish, "danish", "da"),
    (Language::Dutch, "dutch", "nl"),
    (Language::English, "english", "en"),
    (Language::Finnish, "finnish", "fi"),
    (Language::French, "french", "fr"),
    (Language::German, "german", "de"),
    (Language::Hungarian, "hungarian", "hu"),
    (Language::Italian, "italian", "it"),
    (Language::Norwegian, "norwegian", "nb"),
    (Language::Portuguese, "portuguese", "pt"),
    (Language::Romanian, "romanian", "ro"),
    (Language::Russian, "russian", "ru"),
    (Language::Spanish, "spanish", "es"),
    (Language::Swedish, "swedish", "sv"),
    (Language::Turkish, "turkish", "tr"),
    (Language::None, "none", "none"),
];

impl Language {
    /// The language `name` names (`"english"`, `"en"`, `"English"`), if
    /// text search knows it.
    pub fn parse(name: &str) -> Option<Language> {
        let name = name.to_ascii_lowercase();
        NAMES
            .iter()
            .find(|(_, long, code)| name == *long || name == *code)
            .map(|(l, _, _)| *l)
    }

    /// The language's English name, as mongod reports it.
    pub fn name(self) -> &'static str {
        NAMES
            .iter()
            .find(|(l, _, _)| *l == self)
            .map_or("none", |(_, long, _)| long)
    }

    fn algorithm(self) -> Option<Algorithm> {
        Some(match self {
            Language::Danish => Algorithm::Danish,
            Language::Dutch => Algorithm::Dutch,
            Language::English => Algorithm::English,
            Language::Finnish => Algorithm::Finnish,
            Language::French => Algorithm::French,
            Language::German => Algorithm::German,
            Language::Hungarian => Algorithm::Hungarian,
            Language::Italian => Algorithm::Italian,
            Language::Norwegian => Algorithm::Norwegian,
            Language::Portuguese => Algorithm::Portuguese,
            Language::Romanian => Algorithm::Romanian,
            Language::Russian => Algorithm::Russian,
            Language::Spanish => Algorithm::Spanish,
            Language::Swedish => Algorithm::Swedish,
            Language::Turkish => Algorithm::Turkish,
            Language::None => return None,
        })
    }

    /// The code of the stop-word list (the Snowball project's lists).
    fn stop_list(self) -> Option<&'static str> {
        Some(match self {
            Language::Norwegian => "no",
            Language::None => return None,
            other => NAMES.iter().find(|(l, _, _)| *l == other)?.2,
        })
    }

    /// The language's rules, built once (`NAMES` lists the languages in
    /// their declaration order, so a language's position there is its
    /// discriminant).
    pub fn rules(self) -> &'static Rules {
        static RULES: OnceLock<Vec<Rules>> = OnceLock::new();
        let all = RULES.get_or_init(|| NAMES.iter().map(|(l, _, _)| Rules::new(*l)).collect());
        &all[self as usize]
    }
}

/// How one language turns words into terms.
pub struct Rules {
    stemmer: Option<Stemmer>,
    stop_words: HashSet<&'static str>,
}

impl Rules {
    fn new(language: Language) -> Rules {
        let stop_words = language
            .stop_list()
            .and_then(stop_words::lookup)
            .unwrap_or_default();
        Rules {
            stemmer: language.algorithm().map(Stemmer::create),
            stop_words: stop_words.iter().copied().collect(),
        }
    }

    /// Whether `word` (lower case) is one of the language's stop words.
    pub fn is_stop_word(&self, word: &str) -> bool {
        self.stop_words.contains(word)
    }

    /// The stem of `word`.
    pub fn stem<'w>(&self, word: &'w str) -> std::borrow::Cow<'w, str> {
        match &self.stemmer {
            Some(s) => s.stem(word),
            None => std::borrow::Cow::Borrowed(word),
        }
    }
}

impl std::fmt::Debug for Rules {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Rules")
            .field("stemmed", &self.stemmer.is_some())
            .field("stop_words", &self.stop_words.len())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_list_the_languages_in_declaration_order() {
        for (at, (language, _, _)) in NAMES.iter().enumerate() {
            assert_eq!(*language as usize, at, "{language:?}");
        }
    }
}
