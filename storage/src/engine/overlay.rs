//! A transaction's engine: one snapshot of the real engine with the
//! transaction's own writes laid over it, never committed to the real one.
//!
//! An [`Overlay`] is an [`Engine`] like any other, so the statements, the
//! writer and the query plans run on it unchanged: a batch "committed" to
//! it lands in its layer of writes, and every read (points, cursors,
//! snapshots, counts) sees the snapshot as of the transaction's start with
//! that layer on top. Nothing another client writes after the start is
//! seen, and nothing written here is seen by anyone else.
//!
//! The layer also keeps, in order, every write that landed in it
//! ([`Overlay::journal`]): the transaction's commit reads the writes to
//! records back from it, and each key's value in the snapshot
//! ([`Overlay::before`], read from the snapshot when asked) is what the
//! commit checks nobody changed since.
//!
//! Families are neither created nor dropped through it. What a statement
//! writes besides documents (the catalog's counts of never-expiring
//! documents) lands in the layer too, and goes nowhere after it.

use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::{Arc, Mutex, PoisonError};

use super::{
    Batch, Cf, CfStats, Cursor, Direction, Engine, EngineMemory, KeyRange, SealedBatch, Snapshot,
    held,
};
use crate::Result;
use ebb_lang::error::{Error, ErrorKind};

/// A key of a numbered family: its id, then the key.
type Key = (u64, Vec<u8>);

/// The layer: each key written, with its value (`None`: deleted).
type Layer = BTreeMap<Key, Option<Vec<u8>>>;

/// Keys written, each with its value in the snapshot (`None`: absent).
pub type Seen = Vec<(Vec<u8>, Option<Vec<u8>>)>;

/// One write that landed in the layer, in the order it landed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Write {
    /// The family's id (the catalog and the log sit past every id).
    pub cf: u64,
    pub key: Vec<u8>,
    /// The new value; `None` deletes.
    pub value: Option<Vec<u8>>,
}

/// A snapshot of an engine with a layer of writes over it.
pub struct Overlay {
    // Declared before `engine`: it borrows from it, so it must be dropped
    // first.
    base: Box<dyn Snapshot + 'static>,
    engine: Arc<dyn Engine>,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// Shared with the snapshots taken from the overlay: a commit makes a
    /// new layer when one is still read (copy on write).
    layer: Arc<Layer>,
    journal: Vec<Write>,
    /// Bytes of keys and values in `journal`.
    bytes: usize,
}

/// Where family `cf` sits in the layer: a numbered family at its id, the
/// catalog and the log past every id the catalog gives out.
fn slot(cf: Cf) -> u64 {
    match cf {
        Cf::Id(id) => id,
        Cf::Catalog => u64::MAX,
        Cf::Log => u64::MAX - 1,
    }
}

/// The family at `slot` (the inverse of [`slot`]).
fn family(slot: u64) -> Cf {
    match slot {
        u64::MAX => Cf::Catalog,
        s if s == u64::MAX - 1 => Cf::Log,
        id => Cf::Id(id),
    }
}

impl Overlay {
    /// A snapshot of `engine` as it is now, with an empty layer.
    pub fn new(engine: Arc<dyn Engine>) -> Overlay {
        let base = engine.snapshot();
        // SAFETY: the snapshot borrows the engine behind the `Arc` this
        // struct holds; the pointee never moves, and `base` is dropped
        // before `engine` (field order), so the borrow outlives no owner.
        let base: Box<dyn Snapshot + 'static> = unsafe { std::mem::transmute(base) };
        Overlay {
            base,
            engine,
            state: Mutex::default(),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn layer(&self) -> Arc<Layer> {
        self.state().layer.clone()
    }

    /// Every write that landed, in order.
    pub fn journal(&self) -> Vec<Write> {
        self.state().journal.clone()
    }

    /// Bytes of keys and values written so far.
    pub fn bytes(&self) -> usize {
        self.state().bytes
    }

    /// How many writes have landed so far (where the next statement's
    /// begin in [`Overlay::journal`]).
    pub fn landed(&self) -> usize {
        self.state().journal.len()
    }

    /// The keys of family `cf` written from the `from`-th write on, each
    /// with its value in the snapshot (`None`: it was absent).
    pub fn written_since(&self, cf: Cf, from: usize) -> Result<Seen> {
        let slot = slot(cf);
        let keys: std::collections::BTreeSet<Vec<u8>> = self
            .state()
            .journal
            .iter()
            .skip(from)
            .filter(|w| w.cf == slot)
            .map(|w| w.key.clone())
            .collect();
        keys.into_iter()
            .map(|k| Ok((k.clone(), self.base.get(cf, &k)?)))
            .collect()
    }

    /// Each key written, with the value it had in the snapshot (`None`:
    /// it was absent). The snapshot never changes, so it is read now.
    pub fn before(&self) -> Result<Vec<Write>> {
        let keys: std::collections::BTreeSet<Key> = self
            .state()
            .journal
            .iter()
            .map(|w| (w.cf, w.key.clone()))
            .collect();
        keys.into_iter()
            .map(|(cf, key)| {
                let value = self.base.get(family(cf), &key)?;
                Ok(Write { cf, key, value })
            })
            .collect()
    }

    /// Lays `writes` over the layer, in order.
    fn land(&self, writes: Vec<Write>) -> Result<()> {
        let mut state = self.state();
        let State {
            layer,
            journal,
            bytes,
        } = &mut *state;
        let layer = Arc::make_mut(layer);
        for w in writes {
            *bytes += w.key.len() + w.value.as_ref().map_or(0, Vec::len);
            layer.insert((w.cf, w.key.clone()), w.value.clone());
            journal.push(w);
        }
        Ok(())
    }
}

/// Reads of the base snapshot through a layer.
fn get(base: &dyn Snapshot, layer: &Layer, cf: Cf, key: &[u8]) -> Result<Option<Vec<u8>>> {
    if let Some(v) = layer.get(&(slot(cf), key.to_vec())) {
        return Ok(v.clone());
    }
    base.get(cf, key)
}

/// The layer's writes to `cf` inside `range`, in the order `dir` reads.
fn written(
    layer: &Layer,
    cf: Cf,
    range: &KeyRange,
    dir: Direction,
) -> Vec<(Vec<u8>, Option<Vec<u8>>)> {
    let id = slot(cf);
    let lower = Bound::Included((id, range.lower.clone()));
    let upper = match &range.upper {
        Some(u) => Bound::Excluded((id, u.clone())),
        None => match id.checked_add(1) {
            Some(next) => Bound::Excluded((next, Vec::new())),
            None => Bound::Unbounded,
        },
    };
    let mut out: Vec<_> = layer
        .range((lower, upper))
        .map(|((_, k), v)| (k.clone(), v.clone()))
        .collect();
    if dir == Direction::Reverse {
        out.reverse();
    }
    out
}

/// Which side the merged cursor stands on.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Side {
    Base,
    Layer,
    /// Both hold the key; the layer's value wins.
    Both,
}

/// A cursor of the base merged with the layer's writes in its range.
struct Merged<'a> {
    base: Box<dyn Cursor + 'a>,
    mine: Vec<(Vec<u8>, Option<Vec<u8>>)>,
    at: usize,
    dir: Direction,
    side: Option<Side>,
}

impl<'a> Merged<'a> {
    fn boxed(
        base: Box<dyn Cursor + 'a>,
        mine: Vec<(Vec<u8>, Option<Vec<u8>>)>,
        dir: Direction,
    ) -> Box<dyn Cursor + 'a> {
        let mut m = Merged {
            base,
            mine,
            at: 0,
            dir,
            side: None,
        };
        m.settle();
        Box::new(m)
    }

    /// Whether `a` comes before `b` in the cursor's direction.
    fn before(&self, a: &[u8], b: &[u8]) -> bool {
        match self.dir {
            Direction::Forward => a < b,
            Direction::Reverse => a > b,
        }
    }

    /// Stands on the next live key at or after the current positions,
    /// stepping over the layer's deletions and the base keys they delete.
    fn settle(&mut self) {
        loop {
            let base = self.base.valid().then(|| self.base.key());
            let mine = self.mine.get(self.at);
            self.side = match (base, mine) {
                (None, None) => None,
                (Some(_), None) => Some(Side::Base),
                (None, Some(_)) => Some(Side::Layer),
                (Some(b), Some((m, _))) if b == m.as_slice() => Some(Side::Both),
                (Some(b), Some((m, _))) if self.before(b, m) => Some(Side::Base),
                _ => Some(Side::Layer),
            };
            match self.side {
                Some(Side::Layer) if self.mine[self.at].1.is_none() => self.at += 1,
                Some(Side::Both) if self.mine[self.at].1.is_none() => {
                    self.at += 1;
                    self.base.advance();
                }
                _ => return,
            }
        }
    }
}

impl Cursor for Merged<'_> {
    fn valid(&self) -> bool {
        self.side.is_some()
    }

    fn key(&self) -> &[u8] {
        match self.side {
            Some(Side::Base) => self.base.key(),
            _ => &self.mine[self.at].0,
        }
    }

    fn value(&self) -> &[u8] {
        match self.side {
            Some(Side::Base) => self.base.value(),
            _ => self.mine[self.at].1.as_deref().unwrap_or_default(),
        }
    }

    fn advance(&mut self) {
        match self.side {
            Some(Side::Base) => self.base.advance(),
            Some(Side::Layer) => self.at += 1,
            Some(Side::Both) => {
                self.base.advance();
                self.at += 1;
            }
            None => return,
        }
        self.settle();
    }

    fn seek(&mut self, key: &[u8]) {
        self.base.seek(key);
        self.at = match self.dir {
            Direction::Forward => self.mine.partition_point(|(k, _)| k.as_slice() < key),
            Direction::Reverse => self.mine.partition_point(|(k, _)| k.as_slice() > key),
        };
        self.settle();
    }

    fn status(&self) -> Result<()> {
        self.base.status()
    }
}

/// A snapshot of the overlay: the base with the layer as it was when taken.
struct View<'a> {
    base: &'a dyn Snapshot,
    layer: Arc<Layer>,
}

impl Snapshot for View<'_> {
    fn get(&self, cf: Cf, key: &[u8]) -> Result<Option<Vec<u8>>> {
        get(self.base, &self.layer, cf, key)
    }

    fn cursor(&self, cf: Cf, range: KeyRange, dir: Direction) -> Result<Box<dyn Cursor + '_>> {
        let mine = written(&self.layer, cf, &range, dir);
        Ok(Merged::boxed(self.base.cursor(cf, range, dir)?, mine, dir))
    }

    fn bulk_cursor(&self, cf: Cf, range: KeyRange, dir: Direction) -> Result<Box<dyn Cursor + '_>> {
        let mine = written(&self.layer, cf, &range, dir);
        Ok(Merged::boxed(
            self.base.bulk_cursor(cf, range, dir)?,
            mine,
            dir,
        ))
    }

    fn cursor_skipping_at_most(
        &self,
        cf: Cf,
        range: KeyRange,
        dir: Direction,
        max_skipped: u64,
    ) -> Result<Box<dyn Cursor + '_>> {
        let mine = written(&self.layer, cf, &range, dir);
        let base = self
            .base
            .cursor_skipping_at_most(cf, range, dir, max_skipped)?;
        Ok(Merged::boxed(base, mine, dir))
    }
}

/// A batch that lands in the overlay's layer when committed.
struct LayerBatch<'a> {
    overlay: &'a Overlay,
    writes: Vec<Write>,
}

impl Batch for LayerBatch<'_> {
    fn put(&mut self, cf: Cf, key: &[u8], value: &[u8]) -> Result<()> {
        self.writes.push(Write {
            cf: slot(cf),
            key: key.to_vec(),
            value: Some(value.to_vec()),
        });
        Ok(())
    }

    fn delete(&mut self, cf: Cf, key: &[u8]) -> Result<()> {
        self.writes.push(Write {
            cf: slot(cf),
            key: key.to_vec(),
            value: None,
        });
        Ok(())
    }

    fn delete_range(&mut self, cf: Cf, from: &[u8], to: &[u8]) -> Result<()> {
        let id = slot(cf);
        let range = KeyRange::new(from.to_vec(), Some(to.to_vec()));
        // What the overlay holds in the range, and what this batch put
        // there before: each is deleted one by one.
        let mut keys = Vec::new();
        let mut cursor = self.overlay.cursor(cf, range, Direction::Forward)?;
        while cursor.valid() {
            keys.push(cursor.key().to_vec());
            cursor.advance();
        }
        cursor.status()?;
        drop(cursor);
        for w in &self.writes {
            if w.cf == id && w.key.as_slice() >= from && w.key.as_slice() < to {
                keys.push(w.key.clone());
            }
        }
        for key in keys {
            self.writes.push(Write {
                cf: id,
                key,
                value: None,
            });
        }
        Ok(())
    }

    fn len(&self) -> usize {
        self.writes.len()
    }

    fn commit(self: Box<Self>, _sync: bool) -> Result<()> {
        self.overlay.land(self.writes)
    }

    fn seal(self: Box<Self>) -> SealedBatch {
        SealedBatch::new(self.writes.len(), Box::new(self.writes))
    }
}

impl Engine for Overlay {
    fn create_cf(&self, cf: Cf) -> Result<()> {
        Err(Error::new(
            ErrorKind::IllegalOperation,
            format!("a transaction cannot create the family {cf:?}"),
        ))
    }

    fn drop_cf(&self, cf: Cf) -> Result<()> {
        Err(Error::new(
            ErrorKind::IllegalOperation,
            format!("a transaction cannot drop the family {cf:?}"),
        ))
    }

    fn numbered_cfs(&self) -> Vec<u64> {
        self.engine.numbered_cfs()
    }

    fn batch(&self) -> Box<dyn Batch + '_> {
        Box::new(LayerBatch {
            overlay: self,
            writes: Vec::new(),
        })
    }

    fn commit_sealed(&self, batch: SealedBatch, _sync: bool) -> Result<()> {
        let writes = batch
            .into_inner::<Vec<Write>>()
            .ok_or_else(|| Error::engine("a batch sealed by another engine"))?;
        self.land(*writes)
    }

    fn get(&self, cf: Cf, key: &[u8]) -> Result<Option<Vec<u8>>> {
        get(self.base.as_ref(), &self.layer(), cf, key)
    }

    fn multi_get(&self, cf: Cf, keys: &[Vec<u8>]) -> Result<Vec<Option<Vec<u8>>>> {
        let layer = self.layer();
        keys.iter()
            .map(|k| get(self.base.as_ref(), &layer, cf, k))
            .collect()
    }

    fn cursor(&self, cf: Cf, range: KeyRange, dir: Direction) -> Result<Box<dyn Cursor + '_>> {
        let mine = written(&self.layer(), cf, &range, dir);
        Ok(Merged::boxed(self.base.cursor(cf, range, dir)?, mine, dir))
    }

    fn snapshot(&self) -> Box<dyn Snapshot + '_> {
        Box::new(View {
            base: self.base.as_ref(),
            layer: self.layer(),
        })
    }

    fn count(&self, cf: Cf, range: KeyRange) -> Result<u64> {
        let mut cursor = self.cursor(cf, range, Direction::Forward)?;
        super::count_rest(cursor.as_mut())
    }

    fn approximate_size(&self, cf: Cf, range: KeyRange) -> Result<u64> {
        self.engine.approximate_size(cf, range)
    }

    /// Nothing here is durable until the transaction commits through the
    /// real engine.
    fn sync_wal(&self) -> Result<()> {
        Ok(())
    }

    fn flush(&self) -> Result<()> {
        Ok(())
    }

    fn checkpoint(&self, _dir: &std::path::Path) -> Result<()> {
        Err(Error::new(
            ErrorKind::IllegalOperation,
            "a transaction's engine has no checkpoint",
        ))
    }

    fn compact(&self, _cf: Cf, _range: Option<KeyRange>) -> Result<()> {
        Ok(())
    }

    fn stats(&self, cf: Cf) -> Result<CfStats> {
        self.engine.stats(cf)
    }

    fn memory(&self) -> Result<EngineMemory> {
        self.engine.memory()
    }

    fn held(&self) -> &held::HeldRegistry {
        self.engine.held()
    }

    fn detached(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn engine() -> (tempfile::TempDir, Arc<dyn Engine>) {
        let (dir, engine) = crate::testing::temp_engine();
        engine.create_cf(Cf::Id(7)).unwrap();
        (dir, Arc::new(engine))
    }

    fn keys(cursor: &mut dyn Cursor) -> Vec<(Vec<u8>, Vec<u8>)> {
        let mut out = Vec::new();
        while cursor.valid() {
            out.push((cursor.key().to_vec(), cursor.value().to_vec()));
            cursor.advance();
        }
        out
    }

    fn put(engine: &dyn Engine, pairs: &[(&[u8], &[u8])]) {
        let mut b = engine.batch();
        for (k, v) in pairs {
            b.put(Cf::Id(7), k, v).unwrap();
        }
        b.commit(false).unwrap();
    }

    #[test]
    fn reads_see_the_snapshot_with_the_layer_and_nothing_later() {
        let (_dir, real) = engine();
        put(real.as_ref(), &[(b"a", b"1"), (b"c", b"3"), (b"e", b"5")]);
        let overlay = Overlay::new(real.clone());
        put(real.as_ref(), &[(b"b", b"later")]);
        let mut b = overlay.batch();
        b.put(Cf::Id(7), b"d", b"4").unwrap();
        b.delete(Cf::Id(7), b"c").unwrap();
        b.put(Cf::Id(7), b"e", b"five").unwrap();
        b.commit(false).unwrap();

        let all = KeyRange::all();
        let forward = keys(
            overlay
                .cursor(Cf::Id(7), all.clone(), Direction::Forward)
                .unwrap()
                .as_mut(),
        );
        let want: Vec<(Vec<u8>, Vec<u8>)> = [("a", "1"), ("d", "4"), ("e", "five")]
            .iter()
            .map(|(k, v)| (k.as_bytes().to_vec(), v.as_bytes().to_vec()))
            .collect();
        assert_eq!(forward, want);
        let mut reverse = keys(
            overlay
                .cursor(Cf::Id(7), all, Direction::Reverse)
                .unwrap()
                .as_mut(),
        );
        reverse.reverse();
        assert_eq!(reverse, want);
        assert_eq!(overlay.get(Cf::Id(7), b"c").unwrap(), None);
        assert_eq!(overlay.get(Cf::Id(7), b"b").unwrap(), None);
        assert_eq!(overlay.count(Cf::Id(7), KeyRange::all()).unwrap(), 3);
        // The real engine never saw the layer.
        assert_eq!(real.get(Cf::Id(7), b"d").unwrap(), None);
        assert_eq!(real.get(Cf::Id(7), b"c").unwrap(), Some(b"3".to_vec()));

        let mut seek = overlay
            .cursor(Cf::Id(7), KeyRange::all(), Direction::Forward)
            .unwrap();
        seek.seek(b"b");
        assert_eq!(seek.key(), b"d");

        let journal = overlay.journal();
        assert_eq!(journal.len(), 3);
        assert_eq!(journal[1].value, None);
        let before = overlay.before().unwrap();
        let c = before.iter().find(|w| w.key == b"c").unwrap();
        assert_eq!(c.value, Some(b"3".to_vec()));
        let d = before.iter().find(|w| w.key == b"d").unwrap();
        assert_eq!(d.value, None);
    }

    #[test]
    fn a_snapshot_of_the_overlay_keeps_its_layer() {
        let (_dir, real) = engine();
        let overlay = Overlay::new(real);
        put(&overlay, &[(b"a", b"1")]);
        let snap = overlay.snapshot();
        put(&overlay, &[(b"b", b"2")]);
        assert_eq!(snap.get(Cf::Id(7), b"a").unwrap(), Some(b"1".to_vec()));
        assert_eq!(snap.get(Cf::Id(7), b"b").unwrap(), None);
        assert_eq!(overlay.get(Cf::Id(7), b"b").unwrap(), Some(b"2".to_vec()));
    }

    #[test]
    fn catalog_writes_stay_in_the_layer() {
        let (_dir, real) = engine();
        let overlay = Overlay::new(real.clone());
        let mut b = overlay.batch();
        b.put(Cf::Catalog, b"k", b"v").unwrap();
        b.commit(false).unwrap();
        assert_eq!(overlay.get(Cf::Catalog, b"k").unwrap(), Some(b"v".to_vec()));
        assert_eq!(real.get(Cf::Catalog, b"k").unwrap(), None);
        assert!(overlay.create_cf(Cf::Id(9)).is_err());
    }
}
