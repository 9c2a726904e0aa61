//! Wildcard indexes (`{"$**": 1}`, `{"a.$**": 1}`): an entry per leaf
//! value of every path the index holds, so one index serves a query on
//! any of those paths.
//!
//! Entry key layout:
//!
//! ```text
//! enc(path as a string) ‖ enc(value) ‖ enc(_id)
//! ```
//!
//! so a path's entries are one key range, ordered by value. As in mongod,
//! a leaf is a value that is not a non-empty document: a document is
//! walked into (its path extended by each field name), an array's
//! elements are keyed at the array's own path (a document element walked
//! into, a nested array keyed whole), and an empty array or an empty
//! document is keyed as itself. A path is held when it lies under the
//! index's subtree (`a.$**`) or passes its `wildcardProjection`; `_id` is
//! held only when the projection includes it.

use bson::{RawBsonRef, RawDocument};

use crate::catalog::{IndexMeta, WILDCARD, WILDCARD_PROJECTION};
use ebb_lang::encoding::keycode;
use ebb_lang::error::{Error, Result};

/// The paths a wildcard index holds.
#[derive(Debug, Clone, PartialEq)]
pub enum Scope {
    /// Paths at or under one of these (a subtree's root, or an inclusion
    /// projection's paths).
    Within(Vec<String>),
    /// Paths at or under none of these (an exclusion projection's paths,
    /// and `_id` unless it was included).
    Outside(Vec<String>),
}

/// A wildcard index's definition.
#[derive(Debug, Clone, PartialEq)]
pub struct Wildcard {
    scope: Scope,
}

/// Whether `path` is `root` or lies under it.
fn under(path: &str, root: &str) -> bool {
    path.strip_prefix(root)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('.'))
}

impl Wildcard {
    /// The definition of `index`, if it is a wildcard index.
    pub fn of(index: &IndexMeta) -> Option<Wildcard> {
        if !index.is_wildcard() {
            return None;
        }
        let field = index.key.keys().next()?;
        if let Some(root) = field.strip_suffix(".$**") {
            return Some(Wildcard {
                scope: Scope::Within(vec![root.to_owned()]),
            });
        }
        debug_assert_eq!(field, WILDCARD);
        let projection = index.extra.get_document(WILDCARD_PROJECTION).ok();
        let scope = match projection.map(parse_projection) {
            Some(Ok(scope)) => scope,
            // The projection was checked when the index was created.
            Some(Err(_)) | None => Scope::Outside(vec!["_id".to_owned()]),
        };
        Some(Wildcard { scope })
    }

    /// Whether the index holds the leaves at `path`.
    pub fn holds(&self, path: &str) -> bool {
        match &self.scope {
            Scope::Within(roots) => roots.iter().any(|r| under(path, r)),
            Scope::Outside(excluded) => !excluded.iter().any(|e| under(path, e)),
        }
    }

    /// Whether the index may hold leaves at or below `path`.
    pub fn may_hold_below(&self, path: &str) -> bool {
        match &self.scope {
            Scope::Within(roots) => roots.iter().any(|r| under(path, r) || under(r, path)),
            Scope::Outside(_) => self.holds(path),
        }
    }

    /// Calls `leaf` with each path and leaf value of `doc` the index
    /// holds (a value may come twice, from two elements of an array).
    pub fn leaves<'a>(
        &self,
        doc: &'a RawDocument,
        leaf: &mut dyn FnMut(&str, RawBsonRef<'a>),
    ) -> Result<()> {
        self.walk(doc, "", leaf)
    }

    fn walk<'a>(
        &self,
        doc: &'a RawDocument,
        prefix: &str,
        leaf: &mut dyn FnMut(&str, RawBsonRef<'a>),
    ) -> Result<()> {
        for el in doc {
            let (name, value) = el.map_err(|e| Error::corrupt(format!("document: {e}")))?;
            let path = match prefix {
                "" => name.as_str().to_owned(),
                _ => format!("{prefix}.{}", name.as_str()),
            };
            self.value(&path, value, false, leaf)?;
        }
        Ok(())
    }

    fn value<'a>(
        &self,
        path: &str,
        value: RawBsonRef<'a>,
        in_array: bool,
        leaf: &mut dyn FnMut(&str, RawBsonRef<'a>),
    ) -> Result<()> {
        if !self.may_hold_below(path) {
            return Ok(());
        }
        match value {
            RawBsonRef::Document(d) if !d.is_empty() => self.walk(d, path, leaf),
            RawBsonRef::Array(items) if !in_array && !items.is_empty() => {
                for item in items {
                    let item = item.map_err(|e| Error::corrupt(format!("array: {e}")))?;
                    self.value(path, item, true, leaf)?;
                }
                Ok(())
            }
            _ => {
                if self.holds(path) {
                    leaf(path, value);
                }
                Ok(())
            }
        }
    }
}

/// The scope a `wildcardProjection` names (checked by `createIndexes`):
/// all inclusions or all exclusions of paths, nested documents naming
/// dotted paths, `_id` free to go either way.
pub fn parse_projection(projection: &bson::Document) -> std::result::Result<Scope, Refusal> {
    let mut paths = Vec::new();
    flatten(projection, "", &mut paths)?;
    if paths.is_empty() {
        return Err(Refusal::Empty);
    }
    let id = paths.iter().find(|(p, _)| p == "_id").map(|(_, i)| *i);
    let rest: Vec<&(String, bool)> = paths.iter().filter(|(p, _)| p != "_id").collect();
    let including = match rest.first() {
        Some((_, include)) => *include,
        None => id == Some(true),
    };
    if let Some((path, _)) = rest.iter().find(|(_, i)| *i != including) {
        return Err(Refusal::Mixed {
            including,
            path: path.clone(),
        });
    }
    let mut named: Vec<String> = rest.into_iter().map(|(p, _)| p.clone()).collect();
    Ok(match including {
        true => {
            if id == Some(true) {
                named.push("_id".to_owned());
            }
            Scope::Within(named)
        }
        false => {
            if id != Some(true) {
                named.push("_id".to_owned());
            }
            Scope::Outside(named)
        }
    })
}

/// Why a `wildcardProjection` is refused.
#[derive(Debug, Clone, PartialEq)]
pub enum Refusal {
    /// `{}`.
    Empty,
    /// Inclusions and exclusions together (other than of `_id`): the
    /// first path that goes the other way than the projection.
    Mixed { including: bool, path: String },
    /// A value that is neither a number nor a boolean, at this path.
    NotAFlag(String),
}

fn flatten(
    projection: &bson::Document,
    prefix: &str,
    out: &mut Vec<(String, bool)>,
) -> std::result::Result<(), Refusal> {
    for (name, value) in projection {
        let path = match prefix {
            "" => name.clone(),
            _ => format!("{prefix}.{name}"),
        };
        let include = match value {
            bson::Bson::Document(inner) if !inner.is_empty() => {
                flatten(inner, &path, out)?;
                continue;
            }
            bson::Bson::Boolean(b) => *b,
            bson::Bson::Int32(n) => *n != 0,
            bson::Bson::Int64(n) => *n != 0,
            bson::Bson::Double(n) => *n != 0.0,
            bson::Bson::Decimal128(d) => d.to_string().trim_start_matches('-') != "0",
            _ => return Err(Refusal::NotAFlag(path)),
        };
        out.push((path, include));
    }
    Ok(())
}

/// The start of a wildcard index's entries for `path`: the path encoded
/// as any string is.
pub fn path_key(path: &str) -> Vec<u8> {
    let mut key = Vec::with_capacity(path.len() + 8);
    keycode::encode_value(&mut key, RawBsonRef::String(path));
    key
}

#[cfg(test)]
mod tests {
    use super::*;

    fn leaves(w: &Wildcard, doc: bson::Document) -> Vec<String> {
        let raw = bson::RawDocumentBuf::try_from(&doc).unwrap();
        let mut out = Vec::new();
        w.leaves(&raw, &mut |p, v| {
            let v = bson::Bson::try_from(v).unwrap();
            out.push(format!("{p}={v}"));
        })
        .unwrap();
        out
    }

    fn all() -> Wildcard {
        Wildcard {
            scope: Scope::Outside(vec!["_id".into()]),
        }
    }

    #[test]
    fn leaves_follow_mongod() {
        let doc = bson::doc! {
            "_id": 1, "a": 1, "b": { "c": 2, "d": {}, "e": [] },
            "f": [3, { "g": 4 }, [5], []], "h": [[]],
        };
        assert_eq!(
            leaves(&all(), doc),
            [
                "a=1", "b.c=2", "b.d={}", "b.e=[]", "f=3", "f.g=4", "f=[5]", "f=[]", "h=[]"
            ]
        );
    }

    #[test]
    fn projections_choose_paths() {
        let scope = |p: bson::Document| parse_projection(&p);
        let within = Wildcard {
            scope: scope(bson::doc! { "a": 1, "b": { "c": true } }).unwrap(),
        };
        let doc = bson::doc! { "_id": 0, "a": { "x": 1 }, "b": { "c": 2, "d": 3 }, "e": 4 };
        assert_eq!(leaves(&within, doc.clone()), ["a.x=1", "b.c=2"]);
        let outside = Wildcard {
            scope: scope(bson::doc! { "a": 0, "_id": 1 }).unwrap(),
        };
        assert_eq!(leaves(&outside, doc), ["_id=0", "b.c=2", "b.d=3", "e=4"]);
        assert_eq!(scope(bson::doc! {}), Err(Refusal::Empty));
        assert_eq!(
            scope(bson::doc! { "a": 1, "b": 0 }),
            Err(Refusal::Mixed {
                including: true,
                path: "b".into()
            })
        );
        assert_eq!(
            scope(bson::doc! { "a": 1, "b": "x" }),
            Err(Refusal::NotAFlag("b".into()))
        );
        assert!(scope(bson::doc! { "_id": 0, "a": 1 }).is_ok());
    }

    #[test]
    fn a_subtree_holds_its_root_and_below() {
        let w = Wildcard {
            scope: Scope::Within(vec!["a.b".into()]),
        };
        assert!(w.holds("a.b") && w.holds("a.b.c") && !w.holds("a.bc") && !w.holds("a"));
        assert!(w.may_hold_below("a") && !w.may_hold_below("x"));
    }
}
