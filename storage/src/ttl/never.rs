//! How many documents a TTL index never makes due, and why (`NeverDue`:
//! no date at the field, not a date, an array without one, excluded by the
//! partial filter), kept as writes go rather than found by a scan.
//!
//! The writer that changes a document changes the counts in the same
//! batch: one catalog key per TTL index ([`catalog::never_key`]), read when
//! a writer opens, written when its batch commits. They are kept while the
//! index is its collection's only TTL index, from the build that made it
//! (a TTL chunk then deletes only documents that index makes due, which it
//! never counted). A collection with several TTL indexes keeps none: every
//! batch that writes to it deletes its keys, so counts never go stale.
//! An index with no key (one made TTL by `collMod`, or data written before
//! the counts existed) is not counted. A replica-set member that applies an
//! entry again after a crash counts only the batches it commits.

use bson::RawDocument;

use crate::catalog;
use crate::collection::Collection;
use crate::engine::{Batch, Cf, Engine};
use crate::index::{Expiry, KeyGen, NeverDue};
use ebb_lang::encoding::keycode;
use ebb_lang::error::{Error, Result};

/// The reasons in the order the counts keep them.
pub const REASONS: [NeverDue; 4] = [
    NeverDue::Missing,
    NeverDue::NotADate(""),
    NeverDue::ArrayWithoutDate,
    NeverDue::Excluded,
];

/// Counts per reason, in [`REASONS`] order.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tally(pub [u64; 4]);

fn slot(reason: NeverDue) -> usize {
    match reason {
        NeverDue::Missing => 0,
        NeverDue::NotADate(_) => 1,
        NeverDue::ArrayWithoutDate => 2,
        NeverDue::Excluded => 3,
    }
}

impl Tally {
    pub fn total(&self) -> u64 {
        self.0.iter().sum()
    }

    /// `(reason, count)` in [`REASONS`] order.
    pub fn by_reason(&self) -> impl Iterator<Item = (NeverDue, u64)> + '_ {
        REASONS.iter().copied().zip(self.0.iter().copied())
    }

    fn encode(&self) -> Vec<u8> {
        self.0.iter().flat_map(|n| n.to_le_bytes()).collect()
    }

    fn decode(bytes: &[u8]) -> Result<Tally> {
        let mut out = [0u64; 4];
        if bytes.len() != 32 {
            return Err(Error::corrupt("a never-expiring tally of the wrong size"));
        }
        for (n, chunk) in out.iter_mut().zip(bytes.chunks_exact(8)) {
            *n = u64::from_le_bytes(chunk.try_into().expect("8 bytes"));
        }
        Ok(Tally(out))
    }
}

/// The TTL index whose counts `coll` keeps: its only one.
pub fn counted(coll: &Collection) -> Option<&KeyGen> {
    let mut ttl = coll.ttl_keygens();
    match (ttl.next(), ttl.next()) {
        (Some(kg), None) if coll.timeseries.is_none() => Some(kg),
        _ => None,
    }
}

/// [`counted`] with its position among the handle's key generators.
fn counted_at(coll: &Collection) -> Option<(usize, &KeyGen)> {
    let kg = counted(coll)?;
    let index = coll.keygens.iter().position(|k| k.cf == kg.cf)?;
    Some((index, kg))
}

/// The counts of TTL index `kg`, if it keeps them.
pub fn read(engine: &dyn Engine, kg: &KeyGen) -> Result<Option<Tally>> {
    engine
        .get(Cf::Catalog, &catalog::never_key(kg.cf))?
        .map(|v| Tally::decode(&v))
        .transpose()
}

/// Puts `tally` as the counts of `kg` into `batch`.
pub fn write(batch: &mut dyn Batch, kg: &KeyGen, tally: &Tally) -> Result<()> {
    batch.put(Cf::Catalog, &catalog::never_key(kg.cf), &tally.encode())
}

/// Deletes the counts of every TTL index of `coll` in `batch`, when it
/// has several (a write to it could make them stale).
pub fn forget_if_several(batch: &mut dyn Batch, coll: &Collection) -> Result<()> {
    if coll.ttl_keygens().nth(1).is_none() {
        return Ok(());
    }
    for kg in coll.ttl_keygens() {
        batch.delete(Cf::Catalog, &catalog::never_key(kg.cf))?;
    }
    Ok(())
}

/// Why `kg` never makes `doc` due, if it never does; `entries` are the
/// document's entries in `kg`, so a document with a Date costs one look.
pub fn reason(kg: &KeyGen, doc: &RawDocument, entries: &[Vec<u8>]) -> Option<NeverDue> {
    let descending = kg.leading_descending();
    if entries
        .iter()
        .any(|e| keycode::leading_date(e, descending).is_some())
    {
        return None;
    }
    match kg.expiry(doc) {
        Some(Expiry::Never(why)) => Some(why),
        _ => None,
    }
}

/// A writer's view of the counts while its batch is open.
#[derive(Debug)]
pub struct Counter {
    /// Position of the counted index in the handle's key generators.
    pub index: usize,
    tally: Tally,
    /// As the engine holds them; None before their first commit.
    committed: Option<Tally>,
}

impl Counter {
    /// The counts `coll` keeps, as committed; None when it keeps none.
    pub fn open(engine: &dyn Engine, coll: &Collection) -> Result<Option<Counter>> {
        let Some((index, kg)) = counted_at(coll) else {
            return Ok(None);
        };
        Ok(read(engine, kg)?.map(|tally| Counter {
            index,
            tally,
            committed: Some(tally),
        }))
    }

    /// Counts of a new index, from zero (its build counts every document).
    pub fn fresh(coll: &Collection) -> Option<Counter> {
        let (index, _) = counted_at(coll)?;
        Some(Counter {
            index,
            tally: Tally::default(),
            committed: None,
        })
    }

    /// A document with `entries` in the counted index comes (`added`) or
    /// goes. Nothing changes for a batch a replica-set member drops as
    /// committed before a crash: the counts it read hold its changes.
    pub fn note(&mut self, kg: &KeyGen, doc: &RawDocument, entries: &[Vec<u8>], added: bool) {
        let Some(why) = reason(kg, doc, entries) else {
            return;
        };
        if ebb_lang::decided::rider().is_some_and(|r| r.skips_next()) {
            return;
        }
        let n = &mut self.tally.0[slot(why)];
        *n = match added {
            true => n.saturating_add(1),
            false => n.saturating_sub(1),
        };
    }

    /// Adds the counts to the batch about to commit, when they changed;
    /// returns them when the first never-expiring document came in it.
    pub fn before_commit(&self, batch: &mut dyn Batch, kg: &KeyGen) -> Result<Option<Tally>> {
        if self.committed == Some(self.tally) {
            return Ok(None);
        }
        write(batch, kg, &self.tally)?;
        let first = self.tally.total() > 0 && self.committed.is_none_or(|c| c.total() == 0);
        Ok(first.then_some(self.tally))
    }

    /// The batch committed.
    pub fn committed(&mut self) {
        self.committed = Some(self.tally);
    }
}
