//! Text search, as mongod's version 3 text indexes do it: languages
//! (`language`: Snowball stemmers and stop words), words and terms
//! (`tokens`), a text index's definition and the scored terms it gives a
//! document (`index`), and `$text` queries against it (`search`).

pub mod index;
pub mod language;
pub mod search;
pub mod tokens;

pub use index::{TextIndex, WILDCARD};
pub use language::Language;
pub use search::{Search, TextQuery};

/// Where an aggregation carries a document's `$text` score between its
/// stages (`{$meta: "textScore"}` reads it, a `$sort` on the score sorts
/// by it). No stored document can hold a `$`-prefixed top-level field
/// that ebb writes, and the `aggregate` command removes it from what
/// the pipeline returns.
pub const SCORE_FIELD: &str = "$__textScore";
