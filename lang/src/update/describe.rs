//! What an update changed in a document, as a change stream's `update`
//! event says it: `updateDescription` with `updatedFields` (dotted path →
//! new value), `removedFields` (paths) and `truncatedArrays` (`{field,
//! newSize}`), computed from the document before and after.
//!
//! Like mongod's diff of two versions of a document: an embedded document
//! present in both is described field by field; an array that kept its
//! first elements is described by the elements that changed past them
//! (and truncated when it shrank); any other changed value is given whole.
//! mongod describes an operator update by the paths its operators wrote,
//! so a `$set` of a whole embedded document there names the document
//! where this names its changed fields.

use bson::raw::{RawArray, RawBsonRef, RawDocument};
use bson::{RawArrayBuf, RawDocumentBuf, rawdoc};

use super::tree::cstr;

use crate::error::Result;

/// `updateDescription` for `before` becoming `after`.
pub fn describe(before: &RawDocument, after: &RawDocument) -> Result<RawDocumentBuf> {
    let mut out = Description::default();
    out.document("", before, after)?;
    let mut truncated = RawArrayBuf::new();
    for (field, new_size) in out.truncated {
        truncated.push(rawdoc! { "field": field, "newSize": new_size });
    }
    let mut removed = RawArrayBuf::new();
    for path in out.removed {
        removed.push(path);
    }
    Ok(rawdoc! {
        "updatedFields": out.updated,
        "removedFields": removed,
        "truncatedArrays": truncated,
    })
}

#[derive(Default)]
struct Description {
    updated: RawDocumentBuf,
    removed: Vec<String>,
    truncated: Vec<(String, i32)>,
}

fn join(prefix: &str, name: &str) -> String {
    match prefix {
        "" => name.to_owned(),
        _ => format!("{prefix}.{name}"),
    }
}

impl Description {
    fn document(&mut self, prefix: &str, before: &RawDocument, after: &RawDocument) -> Result<()> {
        for el in after.iter() {
            let (name, new) = el?;
            let path = join(prefix, name.as_str());
            match before.get(name.as_str())? {
                Some(old) => self.value(path, old, new)?,
                None => self.set(&path, new)?,
            }
        }
        for el in before.iter() {
            let (name, _) = el?;
            if after.get(name.as_str())?.is_none() {
                self.removed.push(join(prefix, name.as_str()));
            }
        }
        Ok(())
    }

    fn value(&mut self, path: String, old: RawBsonRef<'_>, new: RawBsonRef<'_>) -> Result<()> {
        match (old, new) {
            (RawBsonRef::Document(o), RawBsonRef::Document(n)) => {
                if o.as_bytes() != n.as_bytes() {
                    self.document(&path, o, n)?;
                }
            }
            (RawBsonRef::Array(o), RawBsonRef::Array(n)) => self.array(path, o, n)?,
            _ if same(old, new) => {}
            _ => self.set(&path, new)?,
        }
        Ok(())
    }

    /// An array is described element by element when its elements up to the
    /// first change are kept (a `$push`, a `$set` of one element, a
    /// `$pop` of the last), else given whole.
    fn array(&mut self, path: String, old: &RawArray, new: &RawArray) -> Result<()> {
        if old.as_bytes() == new.as_bytes() {
            return Ok(());
        }
        let old: Vec<RawBsonRef<'_>> = old.into_iter().collect::<std::result::Result<_, _>>()?;
        let new_items: Vec<RawBsonRef<'_>> =
            new.into_iter().collect::<std::result::Result<_, _>>()?;
        let kept = old
            .iter()
            .zip(&new_items)
            .take_while(|(o, n)| same(**o, **n))
            .count();
        let changed = old.len().min(new_items.len()) - kept;
        // Mostly rewritten: the whole array says it more simply.
        if kept == 0 && changed > 0 {
            self.set(&path, RawBsonRef::Array(new))?;
            return Ok(());
        }
        if new_items.len() < old.len() {
            self.truncated.push((path.clone(), new_items.len() as i32));
        }
        for (i, n) in new_items.iter().enumerate().skip(kept) {
            let at = format!("{path}.{i}");
            match old.get(i) {
                Some(o) => self.value(at, *o, *n)?,
                None => self.set(&at, *n)?,
            }
        }
        Ok(())
    }

    fn set(&mut self, path: &str, value: RawBsonRef<'_>) -> Result<()> {
        self.updated.append(cstr(path)?, value);
        Ok(())
    }
}

/// Whether two values are the same BSON (type and bytes: `1` and `1.0`
/// differ, as a stored document's bytes do).
fn same(a: RawBsonRef<'_>, b: RawBsonRef<'_>) -> bool {
    a.element_type() == b.element_type() && a == b
}

#[cfg(test)]
mod tests {
    use bson::rawdoc;

    use super::describe;

    #[test]
    fn scalars_set_and_removed() {
        let d = describe(
            &rawdoc! { "_id": 1, "a": 1, "b": "x", "c": true },
            &rawdoc! { "_id": 1, "a": 2, "b": "x", "d": null },
        )
        .unwrap();
        assert_eq!(
            d,
            rawdoc! {
                "updatedFields": { "a": 2, "d": null },
                "removedFields": ["c"],
                "truncatedArrays": [],
            }
        );
    }

    #[test]
    fn embedded_documents_are_described_field_by_field() {
        let d = describe(
            &rawdoc! { "_id": 1, "a": { "b": 1, "c": { "d": 1 } } },
            &rawdoc! { "_id": 1, "a": { "b": 1, "c": { "d": 2, "e": 3 } } },
        )
        .unwrap();
        assert_eq!(
            d.get_document("updatedFields").unwrap(),
            &*rawdoc! { "a.c.d": 2, "a.c.e": 3 }
        );
    }

    #[test]
    fn a_push_names_the_new_element_and_a_pop_truncates() {
        let pushed = describe(
            &rawdoc! { "_id": 1, "xs": [1, 2] },
            &rawdoc! { "_id": 1, "xs": [1, 2, 3] },
        )
        .unwrap();
        assert_eq!(
            pushed.get_document("updatedFields").unwrap(),
            &*rawdoc! { "xs.2": 3 }
        );
        let popped = describe(
            &rawdoc! { "_id": 1, "xs": [1, 2, 3] },
            &rawdoc! { "_id": 1, "xs": [1, 2] },
        )
        .unwrap();
        assert_eq!(
            popped,
            rawdoc! {
                "updatedFields": {},
                "removedFields": [],
                "truncatedArrays": [{ "field": "xs", "newSize": 2 }],
            }
        );
    }

    #[test]
    fn a_rewritten_array_or_a_changed_type_is_given_whole() {
        let d = describe(
            &rawdoc! { "_id": 1, "xs": [1, 2], "n": 1 },
            &rawdoc! { "_id": 1, "xs": [5, 6], "n": 1.0 },
        )
        .unwrap();
        assert_eq!(
            d.get_document("updatedFields").unwrap(),
            &*rawdoc! { "xs": [5, 6], "n": 1.0 }
        );
    }
}
