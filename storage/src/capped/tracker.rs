//! What a writer keeps of a capped collection while its batch is open:
//! the totals as the batch leaves them, and the order and position
//! entries the batch wrote or removed, so that the oldest document is
//! found correctly even when the batch itself inserted it (an `insert` of
//! more documents than `max`).
//!
//! The tracker only puts entries into the writer's batch; the writer
//! decides what is inserted and removed (`crate::write::writer`).

use std::collections::{BTreeMap, HashMap};

use super::options::CappedOptions;
use super::order::{self, Totals};
use crate::engine::{Batch, Cf, Direction, Engine};
use ebb_lang::error::{Error, Result};

/// A capped collection's state inside one writer.
#[derive(Debug)]
pub struct Tracker {
    cf: Cf,
    pub options: CappedOptions,
    totals: Totals,
    /// The totals changed since the last commit.
    dirty: bool,
    /// Order entries the open batch put (Some id_key) or removed (None).
    order: BTreeMap<u64, Option<Vec<u8>>>,
    /// Position entries the open batch put (Some seq) or removed (None).
    positions: HashMap<Vec<u8>, Option<u64>>,
}

impl Tracker {
    /// Starts from the committed totals.
    pub fn open(engine: &dyn Engine, cf: Cf, options: CappedOptions) -> Result<Tracker> {
        Ok(Tracker {
            cf,
            options,
            totals: Totals::read(engine, cf)?,
            dirty: false,
            order: BTreeMap::new(),
            positions: HashMap::new(),
        })
    }

    /// Refuses a document that could never fit, as mongod does (BadValue).
    pub fn check_fits(&self, size: usize) -> Result<()> {
        if size as u64 > self.options.size as u64 {
            return Err(Error::bad_value("object to insert exceeds cappedMaxSize"));
        }
        Ok(())
    }

    /// Puts the order and position entries of a new document.
    pub fn inserted(&mut self, batch: &mut dyn Batch, id_key: &[u8], size: usize) -> Result<()> {
        let seq = self.totals.next_seq;
        self.totals.next_seq += 1;
        self.totals.bytes += size as u64;
        self.totals.count += 1;
        self.dirty = true;
        batch.put(self.cf, &order::order_key(seq), id_key)?;
        batch.put(self.cf, &order::position_key(id_key), &seq.to_be_bytes())?;
        self.order.insert(seq, Some(id_key.to_vec()));
        self.positions.insert(id_key.to_vec(), Some(seq));
        Ok(())
    }

    /// Removes the order and position entries of a removed document.
    pub fn removed(
        &mut self,
        engine: &dyn Engine,
        batch: &mut dyn Batch,
        id_key: &[u8],
        size: usize,
    ) -> Result<()> {
        let seq = match self.positions.get(id_key) {
            Some(seq) => *seq,
            None => order::position(engine, self.cf, id_key)?,
        };
        let Some(seq) = seq else {
            return Ok(());
        };
        batch.delete(self.cf, &order::order_key(seq))?;
        batch.delete(self.cf, &order::position_key(id_key))?;
        self.order.insert(seq, None);
        self.positions.insert(id_key.to_vec(), None);
        self.totals.forget(size);
        if seq == self.totals.first_seq {
            self.totals.first_seq = seq + 1;
        }
        self.dirty = true;
        Ok(())
    }

    /// A document changed size in place (8.0 allows it; nothing is removed
    /// until the next insert, as in mongod).
    pub fn resized(&mut self, old: usize, new: usize) {
        if old != new {
            self.totals.bytes = (self.totals.bytes + new as u64).saturating_sub(old as u64);
            self.dirty = true;
        }
    }

    /// Whether the collection holds more than its bounds allow.
    pub fn over(&self) -> bool {
        self.options.exceeded(self.totals.bytes, self.totals.count)
    }

    /// The record key of the oldest document, as the open batch leaves the
    /// collection.
    pub fn oldest(&mut self, engine: &dyn Engine) -> Result<Option<Vec<u8>>> {
        let mut cursor = engine.cursor(
            self.cf,
            order::range_from(self.totals.first_seq),
            Direction::Forward,
        )?;
        while cursor.valid() {
            let seq = order::seq_of(cursor.key())?;
            if !matches!(self.order.get(&seq), Some(None)) {
                // Everything below is gone: later searches start here.
                if seq > self.totals.first_seq {
                    self.totals.first_seq = seq;
                    self.dirty = true;
                }
                return Ok(Some(cursor.value().to_vec()));
            }
            cursor.advance();
        }
        cursor.status()?;
        drop(cursor);
        // Every committed one is gone: the oldest is one this batch put.
        Ok(self.order.values().find_map(|v| v.clone()))
    }

    /// Adds the totals to the batch about to commit.
    pub fn before_commit(&mut self, batch: &mut dyn Batch) -> Result<()> {
        if self.dirty {
            batch.put(self.cf, order::TOTALS_KEY, &self.totals.encode())?;
        }
        Ok(())
    }

    /// The batch committed: its entries are now the engine's.
    pub fn committed(&mut self) {
        self.dirty = false;
        self.order.clear();
        self.positions.clear();
    }
}
