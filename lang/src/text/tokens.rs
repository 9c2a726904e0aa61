//! Words and terms: how text search cuts a string into words, folds case
//! and diacritics, drops stop words and stems, as mongod's version 3 text
//! indexes do.
//!
//! A word is a run of characters that are not delimiters. Delimiters are
//! the characters Unicode marks as white space, dashes, hyphens, quotation
//! marks, terminal punctuation or pattern syntax (ASCII punctuation but
//! `_`, the Latin-1 and general punctuation blocks, arrows, mathematical
//! operators, CJK punctuation); letters, marks, digits and `_` make words.
//! In English an ASCII apostrophe stays in its word (`Mark's` is one word).
//!
//! A word's term: lower-cased, dropped if its lower-case form (diacritics
//! kept) is a stop word, stemmed, then stripped of its diacritics
//! (canonical decomposition, combining marks removed: `é` is `e`). A
//! case-sensitive search stems the word as written; a diacritic-sensitive
//! one keeps its diacritics.

use unicode_normalization::UnicodeNormalization;
use unicode_normalization::char::is_combining_mark;

use super::language::Language;

/// What folding keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Fold {
    pub case_sensitive: bool,
    pub diacritic_sensitive: bool,
}

/// Whether `c` separates words.
fn is_delimiter(c: char, language: Language) -> bool {
    if c.is_ascii() {
        return match c {
            '_' => false,
            '\'' => language != Language::English,
            c => c.is_ascii_whitespace() || c == '\u{0B}' || c.is_ascii_punctuation(),
        };
    }
    c.is_whitespace()
        || matches!(c,
            '\u{A1}'..='\u{A7}' | '\u{A9}' | '\u{AB}' | '\u{AC}' | '\u{AE}' | '\u{B0}'
            | '\u{B1}' | '\u{B6}' | '\u{BB}' | '\u{BF}' | '\u{D7}' | '\u{F7}'
            | '\u{37E}' | '\u{387}' | '\u{589}' | '\u{58A}' | '\u{5BE}' | '\u{61F}'
            | '\u{6D4}' | '\u{964}' | '\u{965}'
            | '\u{2010}'..='\u{205E}'
            | '\u{2190}'..='\u{2BFF}'
            | '\u{2E00}'..='\u{2E7F}'
            | '\u{3001}'..='\u{3003}' | '\u{3008}'..='\u{3020}' | '\u{3030}'
            | '\u{FD3E}' | '\u{FD3F}' | '\u{FE10}'..='\u{FE19}' | '\u{FE30}'..='\u{FE6B}'
            | '\u{FF01}'..='\u{FF0F}' | '\u{FF1A}'..='\u{FF20}' | '\u{FF3B}'..='\u{FF3D}'
            | '\u{FF3F}' | '\u{FF5B}'..='\u{FF65}')
}

/// The words of `text`, in order.
pub fn words(text: &str, language: Language) -> impl Iterator<Item = &str> {
    text.split(move |c| is_delimiter(c, language))
        .filter(|w| !w.is_empty())
}

/// `word` folded: lower case unless case-sensitive, without diacritics
/// unless diacritic-sensitive.
pub fn fold(word: &str, fold: Fold) -> String {
    let lowered;
    let word = if fold.case_sensitive {
        word
    } else {
        lowered = word.to_lowercase();
        &lowered
    };
    strip(word, fold)
}

/// `word` without its diacritics, unless diacritic-sensitive.
fn strip(word: &str, fold: Fold) -> String {
    if fold.diacritic_sensitive || word.is_ascii() {
        return word.to_owned();
    }
    word.nfd().filter(|c| !is_combining_mark(*c)).collect()
}

/// The term `word` gives, or None for a stop word.
pub fn term(word: &str, language: Language, how: Fold) -> Option<String> {
    let rules = language.rules();
    let lower = word.to_lowercase();
    if rules.is_stop_word(&lower) {
        return None;
    }
    let written = if how.case_sensitive { word } else { &lower };
    Some(strip(&rules.stem(written), how))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The terms of `text`, in order, repeats kept.
    fn terms(text: &str, language: Language, how: Fold) -> Vec<String> {
        words(text, language)
            .filter_map(|w| term(w, language, how))
            .collect()
    }

    #[test]
    fn words_split_on_punctuation_and_keep_english_apostrophes() {
        let w: Vec<_> = words(
            "Coffee, tea; can't-stop! café_au lait «ça» 42",
            Language::English,
        )
        .collect();
        assert_eq!(
            w,
            [
                "Coffee", "tea", "can't", "stop", "café_au", "lait", "ça", "42"
            ]
        );
        let w: Vec<_> = words("l'homme", Language::French).collect();
        assert_eq!(w, ["l", "homme"]);
    }

    #[test]
    fn terms_fold_stem_and_drop_stop_words() {
        let t = terms(
            "The Running dogs are CAFÉS",
            Language::English,
            Fold::default(),
        );
        assert_eq!(t, ["run", "dog", "cafe"]);
        let sensitive = Fold {
            case_sensitive: true,
            diacritic_sensitive: true,
        };
        assert_eq!(terms("Café", Language::None, sensitive), ["Café"]);
        assert_eq!(terms("Café", Language::None, Fold::default()), ["cafe"]);
    }
}
