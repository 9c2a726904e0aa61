//! A cursor that passes over the keys the engine hides (`hidden`).

use std::sync::Arc;

use super::held::{HeldView, Views};
use super::{Cf, Cursor};
use crate::Result;

/// The numbered family `cf` names, if any (what `Hidden` registers).
pub(crate) fn family(cf: Cf) -> Option<u64> {
    match cf {
        Cf::Id(id) => Some(id),
        Cf::Catalog | Cf::Log => None,
    }
}

/// The view of `cf` among `views`.
pub(crate) fn view_of(views: &Views, cf: Cf) -> Option<Arc<dyn HeldView>> {
    let id = family(cf)?;
    views.iter().find(|(c, _)| *c == id).map(|(_, v)| v.clone())
}

/// A cursor that passes over hidden keys.
pub(crate) struct SkipHeld<'a> {
    inner: Box<dyn Cursor + 'a>,
    filter: Arc<dyn HeldView>,
}

impl<'a> SkipHeld<'a> {
    /// `inner`, or `inner` filtered by `filter`.
    pub fn wrap(
        inner: Box<dyn Cursor + 'a>,
        filter: Option<Arc<dyn HeldView>>,
    ) -> Box<dyn Cursor + 'a> {
        match filter {
            None => inner,
            Some(filter) => {
                let mut c = SkipHeld { inner, filter };
                c.skip();
                Box::new(c)
            }
        }
    }

    fn skip(&mut self) {
        while self.inner.valid() && self.filter.holds(self.inner.key()) {
            self.inner.advance();
        }
    }
}

impl Cursor for SkipHeld<'_> {
    fn valid(&self) -> bool {
        self.inner.valid()
    }

    fn key(&self) -> &[u8] {
        self.inner.key()
    }

    fn value(&self) -> &[u8] {
        self.inner.value()
    }

    fn advance(&mut self) {
        self.inner.advance();
        self.skip();
    }

    fn seek(&mut self, key: &[u8]) {
        self.inner.seek(key);
        self.skip();
    }

    fn status(&self) -> Result<()> {
        self.inner.status()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Hides the keys listed.
    struct Listed(Vec<Vec<u8>>);
    impl HeldView for Listed {
        fn holds(&self, key: &[u8]) -> bool {
            self.0.iter().any(|k| k == key)
        }
    }

    struct Keys(Vec<Vec<u8>>, usize);
    impl Cursor for Keys {
        fn valid(&self) -> bool {
            self.1 < self.0.len()
        }
        fn key(&self) -> &[u8] {
            &self.0[self.1]
        }
        fn value(&self) -> &[u8] {
            b""
        }
        fn advance(&mut self) {
            self.1 += 1;
        }
        fn seek(&mut self, key: &[u8]) {
            self.1 = self
                .0
                .iter()
                .position(|k| k.as_slice() >= key)
                .unwrap_or(self.0.len());
        }
        fn status(&self) -> Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_cursor_passes_over_hidden_keys_from_its_start_and_after_a_seek() {
        let keys: Vec<Vec<u8>> = (1u8..=9).map(|b| vec![b]).collect();
        let odd: Vec<Vec<u8>> = (1u8..=9).step_by(2).map(|b| vec![b]).collect();
        let mut c = SkipHeld::wrap(Box::new(Keys(keys, 0)), Some(Arc::new(Listed(odd))));
        let mut seen = Vec::new();
        while c.valid() {
            seen.push(c.key()[0]);
            c.advance();
        }
        assert_eq!(seen, [2, 4, 6, 8]);
        c.seek(&[5]);
        assert_eq!(c.key(), [6]);
    }
}
