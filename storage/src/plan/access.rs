//! What a plan is: the query it answers (`QuerySpec`, a `Hint`) and the
//! access path it takes to the documents (`Access`, `Plan`), as the
//! planner (`choose`, `wildcard`, `min_max`) makes it and `exec` runs it.

use crate::catalog::IndexMeta;
use crate::engine::{Direction, KeyRange};
use ebb_lang::encoding::collation::Collation;
use ebb_lang::query::filter::Filter;
use ebb_lang::query::sort::SortSpec;

/// What the client asked for, already parsed.
#[derive(Debug, Clone)]
pub struct QuerySpec {
    pub filter: Filter,
    pub sort: Option<SortSpec>,
    pub hint: Option<Hint>,
}

impl QuerySpec {
    /// The query comparing strings by `collation` in its filter and sort.
    pub fn collated(mut self, collation: Option<std::sync::Arc<Collation>>) -> QuerySpec {
        self.sort = self.sort.map(|s| s.collated(collation.clone()));
        self.filter = self.filter.collated(collation);
        self
    }
}

/// A `hint`.
#[derive(Debug, Clone, PartialEq)]
pub enum Hint {
    Name(String),
    KeyPattern(bson::Document),
    /// `{$natural: 1}` / `{$natural: -1}`: a collection scan in that order.
    Natural(Direction),
}

/// How documents are reached.
#[derive(Debug, Clone, PartialEq)]
pub enum Access {
    /// Ranges of the records column family (`_id` order); no fetch needed.
    Records {
        ranges: Vec<KeyRange>,
        dir: Direction,
    },
    /// Ranges of a secondary index; each entry's `_id` is fetched.
    Index {
        index: Box<IndexMeta>,
        ranges: Vec<KeyRange>,
        dir: Direction,
    },
    /// A capped collection's insertion order (`capped::order`): its
    /// collection scan; each entry's record is fetched.
    Natural { dir: Direction },
}

/// A chosen plan.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    pub access: Access,
    /// Whether the access path already yields the requested sort order.
    pub sorted_by_access: bool,
    /// Bounds per key field, in MongoDB's explain notation.
    pub bounds: Vec<(String, Vec<String>)>,
    /// For explain: the stage name (`COLLSCAN`, `IXSCAN`, `IDHACK`).
    pub stage: &'static str,
}

impl Plan {
    /// A forward scan of `ranges` of `index` for candidates the filter
    /// then decides, in no useful order (geo cells, hashes, a wildcard
    /// path's entries); explain shows `bounds`.
    pub fn candidates(
        index: &IndexMeta,
        ranges: Vec<KeyRange>,
        bounds: Vec<(String, Vec<String>)>,
    ) -> Plan {
        Plan {
            access: Access::Index {
                index: Box::new(index.clone()),
                ranges,
                dir: Direction::Forward,
            },
            sorted_by_access: false,
            bounds,
            stage: "IXSCAN",
        }
    }

    pub fn index_name(&self) -> Option<&str> {
        match &self.access {
            Access::Index { index, .. } => Some(&index.name),
            Access::Records { .. } if self.stage != "COLLSCAN" => {
                Some(crate::catalog::ID_INDEX_NAME)
            }
            Access::Records { .. } | Access::Natural { .. } => None,
        }
    }
}
