//! The conformance suite for [`Engine`]: what every engine must do, written
//! once against the traits so that a new engine proves itself by passing
//! it instead of by being read line by line.
//!
//! Each check is a `pub fn` named for the behaviour it pins down. It takes
//! an [`EngineHome`], the place where one engine keeps its data, so it can
//! open the engine, drop it and open it again as a restart would. A check
//! panics with a message naming the broken promise, which makes this test
//! support code: an implementation wires one `#[test]` per entry of
//! [`CHECKS`] (see `rocks.rs`), or calls [`run_all`].
//!
//! The checks assert only what the docs in [`super`] promise or what the
//! rest of ebb relies on; where an engine only estimates (statistics) they
//! assert sanity, not numbers. The module is compiled into the crate, not
//! only under `cfg(test)`, so that other crates can run it; it must
//! therefore not use dev-dependencies, and leaves making homes (temporary
//! directories, say) to the caller.

use std::collections::BTreeMap;
use std::panic::{AssertUnwindSafe, catch_unwind};

use super::{Batch, Cf, Cursor, Direction, Engine, KeyRange};
use crate::Result;

/// Where one engine keeps its data: a directory for RocksDB, shared state
/// for an engine in memory.
pub trait EngineHome {
    /// Opens the engine over this home's data: empty the first time, and
    /// after the previous engine was dropped, holding everything it
    /// committed. A check never holds two engines of one home at once.
    fn open(&self) -> Box<dyn Engine>;
}

/// One conformance check.
pub type Check = fn(&dyn EngineHome);

/// Calls `$then!` with the name of every check: the one list of them,
/// which [`CHECKS`] and each engine's test suite expand.
macro_rules! for_each_engine_check {
    ($then:ident) => {
        $then![
            point_writes_read_back,
            families_are_independent,
            created_families_are_listed_and_kept,
            dropped_family_loses_its_keys,
            missing_family_is_an_error,
            keys_order_bytewise,
            ranges_are_half_open_both_ways,
            prefix_ranges_hold_exactly_their_keys,
            empty_ranges_yield_nothing,
            seek_lands_inside_the_range,
            cursors_merge_new_and_older_keys,
            batch_is_invisible_until_committed,
            empty_batch_commits,
            sealed_batch_commits_later_on_another_thread,
            batch_applies_writes_in_call_order,
            batches_match_an_in_order_model,
            delete_range_is_half_open,
            snapshot_hides_later_writes,
            multi_get_answers_in_request_order,
            count_matches_a_scan,
            stats_are_sane_estimates,
            committed_batches_survive_reopen,
            compaction_keeps_live_keys,
            large_keys_and_values_round_trip,
            concurrent_commits_are_seen_whole,
            commit_racing_a_family_drop_is_all_or_nothing,
        ];
    };
}

/// Declares [`CHECKS`] from the list.
macro_rules! checks {
    ($($check:ident),* $(,)?) => {
        /// Every check, by name; an engine's test suite runs each on a
        /// home of its own.
        pub const CHECKS: &[(&str, Check)] = &[$((stringify!($check), $check)),*];
    };
}

for_each_engine_check!(checks);
// For the engines' test suites (`rocks.rs`'s tests expand it too).
#[cfg(test)]
pub(crate) use for_each_engine_check;

/// Runs every check, each on a home from `new_home`, and panics naming
/// the ones that failed (each failure's own message is printed as it
/// happens).
pub fn run_all<H: EngineHome>(mut new_home: impl FnMut() -> H) {
    let mut failed = Vec::new();
    for (name, check) in CHECKS {
        let home = new_home();
        if catch_unwind(AssertUnwindSafe(|| check(&home))).is_err() {
            failed.push(*name);
        }
    }
    assert!(
        failed.is_empty(),
        "engine conformance checks failed: {}",
        failed.join(", ")
    );
}

// ---------------------------------------------------------------------------
// Helpers. Keys and values are shown escaped (`escape_ascii`) so that a
// failure prints `a\xff` rather than a list of numbers.

const A: Cf = Cf::Id(1);
const B: Cf = Cf::Id(2);
const FWD: Direction = Direction::Forward;
const REV: Direction = Direction::Reverse;

/// One write of a batch, so a check can state a batch as data.
#[derive(Debug, Clone, Copy)]
enum W<'a> {
    Put(Cf, &'a [u8], &'a [u8]),
    Del(Cf, &'a [u8]),
    DelRange(Cf, &'a [u8], &'a [u8]),
}

fn add(batch: &mut dyn Batch, w: W<'_>) -> Result<()> {
    match w {
        W::Put(cf, k, v) => batch.put(cf, k, v),
        W::Del(cf, k) => batch.delete(cf, k),
        W::DelRange(cf, from, to) => batch.delete_range(cf, from, to),
    }
}

fn commit_with(e: &dyn Engine, writes: &[W<'_>], sync: bool) {
    let mut b = e.batch();
    for &w in writes {
        add(b.as_mut(), w).unwrap_or_else(|err| panic!("adding {w:?} to a batch: {err}"));
    }
    b.commit(sync)
        .unwrap_or_else(|err| panic!("committing {writes:?}: {err}"));
}

fn commit(e: &dyn Engine, writes: &[W<'_>]) {
    commit_with(e, writes, false);
}

fn open_with(home: &dyn EngineHome, cfs: &[Cf]) -> Box<dyn Engine> {
    let e = home.open();
    for &cf in cfs {
        e.create_cf(cf)
            .unwrap_or_else(|err| panic!("creating {cf:?}: {err}"));
    }
    e
}

fn show(bytes: &[u8]) -> String {
    bytes.escape_ascii().to_string()
}

fn some(s: &str) -> Option<String> {
    Some(s.to_owned())
}

/// A point read, shown.
fn val(read: Result<Option<Vec<u8>>>) -> Option<String> {
    read.unwrap_or_else(|err| panic!("point read failed: {err}"))
        .map(|v| show(&v))
}

fn walk(cursor: Result<Box<dyn Cursor + '_>>, item: impl Fn(&dyn Cursor) -> String) -> Vec<String> {
    let mut c = cursor.unwrap_or_else(|err| panic!("opening a cursor: {err}"));
    let mut out = Vec::new();
    while c.valid() {
        out.push(item(c.as_ref()));
        c.advance();
    }
    c.status()
        .unwrap_or_else(|err| panic!("cursor ended with an error: {err}"));
    out
}

/// The keys a cursor passes from where it starts to the end of its range.
fn keys(cursor: Result<Box<dyn Cursor + '_>>) -> Vec<String> {
    walk(cursor, |c| show(c.key()))
}

/// Like [`keys`], as `key=value`.
fn entries(cursor: Result<Box<dyn Cursor + '_>>) -> Vec<String> {
    walk(cursor, |c| format!("{}={}", show(c.key()), show(c.value())))
}

/// Where a cursor stands: its key, or None past the end of its range.
fn at(c: &dyn Cursor) -> Option<String> {
    c.valid().then(|| show(c.key()))
}

fn range(lower: &[u8], upper: &[u8]) -> KeyRange {
    KeyRange::new(lower.to_vec(), Some(upper.to_vec()))
}

fn reversed(v: &[&str]) -> Vec<String> {
    v.iter().rev().map(|s| s.to_string()).collect()
}

/// A small deterministic generator (splitmix64), so a failing sequence is
/// the same on every run without a dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    /// Bytes that do not compress, so size estimates see real bytes.
    fn bytes(&mut self, len: usize) -> Vec<u8> {
        let mut out = Vec::with_capacity(len + 8);
        while out.len() < len {
            out.extend_from_slice(&self.next().to_le_bytes());
        }
        out.truncate(len);
        out
    }
}

// ---------------------------------------------------------------------------
// Point reads and writes, families.

/// A put is read back, an overwrite replaces, a delete removes, an empty
/// value is a value (not absence), and deleting an absent key is fine.
pub fn point_writes_read_back(home: &dyn EngineHome) {
    let e = open_with(home, &[A]);
    let e = e.as_ref();
    assert_eq!(val(e.get(A, b"k")), None, "a key never written is absent");
    commit(e, &[W::Put(A, b"k", b"v1")]);
    assert_eq!(
        val(e.get(A, b"k")),
        some("v1"),
        "a committed put reads back"
    );
    commit(e, &[W::Put(A, b"k", b"v2")]);
    assert_eq!(
        val(e.get(A, b"k")),
        some("v2"),
        "an overwrite replaces the value"
    );
    commit(e, &[W::Put(A, b"empty", b"")]);
    assert_eq!(
        val(e.get(A, b"empty")),
        some(""),
        "an empty value is present, not absent"
    );
    commit(e, &[W::Del(A, b"k"), W::Del(A, b"never written")]);
    assert_eq!(val(e.get(A, b"k")), None, "a deleted key is absent");
    assert_eq!(
        val(e.get(A, b"never written")),
        None,
        "deleting an absent key leaves it absent"
    );
    assert_eq!(
        val(e.get(A, b"empty")),
        some(""),
        "a delete touches only its key"
    );
    assert_eq!(entries(e.cursor(A, KeyRange::all(), FWD)), ["empty="]);
}

/// The same key in two numbered families and the catalog holds three
/// values; writes, deletes, range deletes and scans of one family never
/// touch another.
pub fn families_are_independent(home: &dyn EngineHome) {
    let e = open_with(home, &[A, B]);
    let e = e.as_ref();
    commit(
        e,
        &[
            W::Put(A, b"k", b"a"),
            W::Put(B, b"k", b"b"),
            W::Put(Cf::Catalog, b"k", b"c"),
        ],
    );
    assert_eq!(val(e.get(A, b"k")), some("a"));
    assert_eq!(
        val(e.get(B, b"k")),
        some("b"),
        "families with the same key keep their own values"
    );
    assert_eq!(val(e.get(Cf::Catalog, b"k")), some("c"));

    commit(e, &[W::Del(A, b"k")]);
    assert_eq!(
        val(e.get(B, b"k")),
        some("b"),
        "a delete in one family leaves another's key"
    );
    commit(e, &[W::DelRange(B, b"", b"\xff")]);
    assert_eq!(
        val(e.get(Cf::Catalog, b"k")),
        some("c"),
        "a range delete stays in its family"
    );

    commit(e, &[W::Put(A, b"x", b"1"), W::Put(B, b"y", b"2")]);
    assert_eq!(
        keys(e.cursor(A, KeyRange::all(), FWD)),
        ["x"],
        "a scan sees only its family"
    );
    assert_eq!(
        keys(e.cursor(B, KeyRange::all(), REV)),
        ["y"],
        "a scan sees only its family"
    );
    assert_eq!(keys(e.cursor(Cf::Catalog, KeyRange::all(), FWD)), ["k"]);
    assert_eq!(
        e.count(B, KeyRange::all()).unwrap(),
        1,
        "a count sees only its family"
    );
}

/// The catalog family exists without being created and is not listed;
/// numbered families are listed once created, creating one again keeps
/// its keys, and both the list and the keys survive a reopen.
pub fn created_families_are_listed_and_kept(home: &dyn EngineHome) {
    let e = home.open();
    assert!(
        e.numbered_cfs().is_empty(),
        "a new engine has no numbered families"
    );
    commit(e.as_ref(), &[W::Put(Cf::Catalog, b"meta", b"1")]);
    assert_eq!(
        val(e.get(Cf::Catalog, b"meta")),
        some("1"),
        "the catalog needs no creating"
    );

    for id in [7, 3, 42] {
        e.create_cf(Cf::Id(id)).unwrap();
    }
    commit(e.as_ref(), &[W::Put(Cf::Id(7), b"k", b"v")]);
    e.create_cf(Cf::Id(7))
        .expect("creating a family that exists is not an error");
    assert_eq!(
        val(e.get(Cf::Id(7), b"k")),
        some("v"),
        "re-creating a family keeps its keys"
    );
    let mut ids = e.numbered_cfs();
    ids.sort_unstable();
    assert_eq!(
        ids,
        [3, 7, 42],
        "numbered_cfs lists each created family once, and not the catalog"
    );

    drop(e);
    let e = home.open();
    let mut ids = e.numbered_cfs();
    ids.sort_unstable();
    assert_eq!(ids, [3, 7, 42], "created families survive a reopen");
    assert_eq!(val(e.get(Cf::Id(7), b"k")), some("v"));
    assert_eq!(val(e.get(Cf::Catalog, b"meta")), some("1"));
    commit(e.as_ref(), &[W::Put(Cf::Id(3), b"k", b"3")]);
    assert_eq!(
        val(e.get(Cf::Id(3), b"k")),
        some("3"),
        "a reopened family takes writes"
    );
}

/// Dropping a family removes it and its keys: it is no longer listed, a
/// family created again under the same id (or a new one) starts empty,
/// dropping twice or dropping what never existed is a no-op, and a dropped
/// family stays dropped across a reopen.
pub fn dropped_family_loses_its_keys(home: &dyn EngineHome) {
    let e = open_with(home, &[A, B]);
    commit(
        e.as_ref(),
        &[
            W::Put(A, b"a", b"1"),
            W::Put(A, b"b", b"1"),
            W::Put(B, b"a", b"2"),
        ],
    );
    e.flush().unwrap();
    commit(e.as_ref(), &[W::Put(A, b"c", b"1")]);
    e.drop_cf(A).unwrap();
    assert_eq!(e.numbered_cfs(), [2], "a dropped family is not listed");
    assert_eq!(
        val(e.get(B, b"a")),
        some("2"),
        "dropping a family leaves the others"
    );
    e.drop_cf(A)
        .expect("dropping a family twice is not an error");
    e.drop_cf(Cf::Id(99))
        .expect("dropping a family that never existed is not an error");

    e.create_cf(A).unwrap();
    assert_eq!(
        val(e.get(A, b"a")),
        None,
        "a family created again under a dropped id is empty"
    );
    assert!(
        keys(e.cursor(A, KeyRange::all(), FWD)).is_empty(),
        "a re-created family is empty"
    );
    assert_eq!(e.count(A, KeyRange::all()).unwrap(), 0);
    e.create_cf(Cf::Id(3)).unwrap();
    assert!(
        keys(e.cursor(Cf::Id(3), KeyRange::all(), REV)).is_empty(),
        "a new family is empty"
    );
    e.drop_cf(B).unwrap();

    drop(e);
    let e = home.open();
    let mut ids = e.numbered_cfs();
    ids.sort_unstable();
    assert_eq!(
        ids,
        [1, 3],
        "a dropped family stays dropped across a reopen"
    );
    assert!(
        keys(e.cursor(A, KeyRange::all(), FWD)).is_empty(),
        "dropped keys do not come back on reopen"
    );
    assert!(
        e.get(B, b"a").is_err(),
        "a family dropped before the reopen is still missing"
    );
}

/// Naming a family that does not exist (never created, or dropped) is an
/// error from every method, not a panic and not an empty answer; a batch
/// that names one fails by its commit at the latest and applies nothing.
pub fn missing_family_is_an_error(home: &dyn EngineHome) {
    let e = open_with(home, &[A, B]);
    let e = e.as_ref();
    commit(e, &[W::Put(B, b"k", b"v")]);
    e.drop_cf(B).unwrap();
    for (cf, what) in [
        (Cf::Id(99), "a family never created"),
        (B, "a dropped family"),
    ] {
        assert!(e.get(cf, b"k").is_err(), "get on {what}");
        assert!(
            e.multi_get(cf, &[b"k".to_vec()]).is_err(),
            "multi_get on {what}"
        );
        assert!(
            e.cursor(cf, KeyRange::all(), FWD).is_err(),
            "a cursor on {what}"
        );
        assert!(
            e.cursor(cf, KeyRange::all(), REV).is_err(),
            "a reverse cursor on {what}"
        );
        assert!(e.count(cf, KeyRange::all()).is_err(), "count on {what}");
        assert!(e.stats(cf).is_err(), "stats on {what}");
        assert!(e.compact(cf, None).is_err(), "compact on {what}");
        let snap = e.snapshot();
        assert!(snap.get(cf, b"k").is_err(), "a snapshot's get on {what}");
        assert!(
            snap.cursor(cf, KeyRange::all(), FWD).is_err(),
            "a snapshot's cursor on {what}"
        );
        drop(snap);

        for w in [
            W::Put(cf, b"k", b"v"),
            W::Del(cf, b"k"),
            W::DelRange(cf, b"a", b"z"),
        ] {
            let mut b = e.batch();
            b.put(A, b"a", b"1").unwrap();
            if add(b.as_mut(), w).is_ok() {
                assert!(
                    b.commit(false).is_err(),
                    "a batch with {w:?} on {what} fails to commit"
                );
            }
            assert_eq!(
                val(e.get(A, b"a")),
                None,
                "a batch that failed on {what} applied nothing"
            );
        }
    }
}

// ---------------------------------------------------------------------------
// Ranges and cursors.

/// Keys order bytewise, unsigned, a prefix before its extensions, the
/// empty key first; 0x00 and 0xFF are ordinary bytes anywhere in a key.
pub fn keys_order_bytewise(home: &dyn EngineHome) {
    const ORDERED: &[&[u8]] = &[
        b"",
        b"\x00",
        b"\x00\x00",
        b"\x00\xff",
        b"\x01",
        b"0",
        b"a",
        b"a\x00",
        b"ab",
        b"b",
        b"\x7f",
        b"\x80",
        b"\xfe\xff",
        b"\xff",
        b"\xff\x00",
        b"\xff\xff",
        b"\xff\xff\xff",
    ];
    let e = open_with(home, &[A]);
    let e = e.as_ref();
    let value = |k: &[u8]| [b"v".as_slice(), k].concat();
    // Written back to front, half of them flushed before the rest, so the
    // order has to come from the engine and from merging files with
    // memory rather than from the order of the writes.
    for (i, k) in ORDERED.iter().enumerate().rev() {
        let v = value(k);
        commit(e, &[W::Put(A, k, &v)]);
        if i == ORDERED.len() / 2 {
            e.flush().unwrap();
        }
    }
    let all: Vec<String> = ORDERED.iter().map(|k| show(k)).collect();
    assert_eq!(
        keys(e.cursor(A, KeyRange::all(), FWD)),
        all,
        "forward order is bytewise"
    );
    let back: Vec<String> = all.iter().rev().cloned().collect();
    assert_eq!(
        keys(e.cursor(A, KeyRange::all(), REV)),
        back,
        "reverse order is bytewise, backwards"
    );
    for k in ORDERED {
        assert_eq!(
            val(e.get(A, k)),
            Some(show(&value(k))),
            "the key {} reads back",
            show(k)
        );
    }
    assert_eq!(
        entries(e.cursor(A, range(b"", b"\x00"), FWD)),
        ["=v"],
        "the empty key is a key, and the smallest"
    );
    assert_eq!(
        keys(e.cursor(A, range(b"\x7f", b"\x81"), FWD)),
        ["\\x7f", "\\x80"],
        "bytes compare unsigned"
    );
    assert_eq!(e.count(A, KeyRange::all()).unwrap(), ORDERED.len() as u64);
}

/// A range is `[lower, upper)` in both directions: the lower bound is
/// included, the upper one never; bounds need not be keys; `upper: None`
/// runs to the family's end and an empty `lower` from its start.
pub fn ranges_are_half_open_both_ways(home: &dyn EngineHome) {
    let e = open_with(home, &[A]);
    let e = e.as_ref();
    commit(
        e,
        &[
            W::Put(A, b"a", b"1"),
            W::Put(A, b"b", b"2"),
            W::Put(A, b"c", b"3"),
            W::Put(A, b"d", b"4"),
            W::Put(A, b"e", b"5"),
        ],
    );
    let cases: [(KeyRange, &[&str], &str); 5] = [
        (range(b"b", b"d"), &["b", "c"], "[b, d) holds b and c"),
        (
            range(b"b\x00", b"d\x00"),
            &["c", "d"],
            "bounds between keys",
        ),
        (
            KeyRange::new(b"c".to_vec(), None),
            &["c", "d", "e"],
            "no upper bound runs to the end",
        ),
        (
            range(b"", b"c"),
            &["a", "b"],
            "an empty lower bound starts at the first key",
        ),
        (KeyRange::all(), &["a", "b", "c", "d", "e"], "all"),
    ];
    for (r, want, why) in cases {
        assert_eq!(keys(e.cursor(A, r.clone(), FWD)), want, "forward: {why}");
        assert_eq!(
            keys(e.cursor(A, r.clone(), REV)),
            reversed(want),
            "reverse: {why}"
        );
        assert_eq!(e.count(A, r).unwrap(), want.len() as u64, "count: {why}");
    }
    assert_eq!(
        entries(e.cursor(A, range(b"b", b"d"), REV)),
        ["c=3", "b=2"],
        "a cursor's values belong to its keys"
    );
}

/// [`KeyRange::prefix`] holds exactly the keys that start with the prefix,
/// including when the prefix ends in 0xFF bytes or is all 0xFF (no upper
/// key exists) or empty (every key).
pub fn prefix_ranges_hold_exactly_their_keys(home: &dyn EngineHome) {
    let e = open_with(home, &[A]);
    let e = e.as_ref();
    // In key order, to make the expectations below easy to check.
    let all: &[&[u8]] = &[
        b"a",
        b"ab",
        b"ab\x00",
        b"abc",
        b"ab\xff",
        b"ac",
        b"a\xff",
        b"a\xff\xff",
        b"b",
        b"\xff",
        b"\xff\x00",
        b"\xff\xff",
    ];
    let writes: Vec<W<'_>> = all.iter().map(|k| W::Put(A, k, b"")).collect();
    commit(e, &writes);
    let cases: [(&[u8], &[&str]); 7] = [
        (b"ab", &["ab", "ab\\x00", "abc", "ab\\xff"]),
        (b"a\xff", &["a\\xff", "a\\xff\\xff"]),
        (b"\xff", &["\\xff", "\\xff\\x00", "\\xff\\xff"]),
        (b"\xff\xff", &["\\xff\\xff"]),
        (
            b"a",
            &[
                "a",
                "ab",
                "ab\\x00",
                "abc",
                "ab\\xff",
                "ac",
                "a\\xff",
                "a\\xff\\xff",
            ],
        ),
        (b"zz", &[]),
        (b"abcd", &[]),
    ];
    for (prefix, want) in cases {
        let p = show(prefix);
        let r = KeyRange::prefix(prefix);
        assert_eq!(
            keys(e.cursor(A, r.clone(), FWD)),
            want,
            "forward over prefix {p}"
        );
        assert_eq!(
            keys(e.cursor(A, r.clone(), REV)),
            reversed(want),
            "reverse over prefix {p}"
        );
        assert_eq!(
            e.count(A, r).unwrap(),
            want.len() as u64,
            "count over prefix {p}"
        );
    }
    assert_eq!(
        e.count(A, KeyRange::prefix(b"")).unwrap(),
        all.len() as u64,
        "the empty prefix holds every key"
    );
}

/// A range with nothing in it yields nothing in either direction and
/// counts zero: lower equal to upper (even on an existing key), lower
/// above upper, a gap between keys, before the first key, past the last,
/// and any range of an empty family.
pub fn empty_ranges_yield_nothing(home: &dyn EngineHome) {
    let e = open_with(home, &[A, B]);
    let e = e.as_ref();
    commit(
        e,
        &[
            W::Put(A, b"a", b""),
            W::Put(A, b"b", b""),
            W::Put(A, b"c", b""),
        ],
    );
    let cases = [
        (
            A,
            range(b"b", b"b"),
            "lower equal to upper, on an existing key",
        ),
        (A, range(b"c", b"b"), "lower above upper"),
        (A, range(b"a\x00", b"b"), "a gap between two keys"),
        (A, range(b"", b""), "an empty upper bound"),
        (A, range(b"", b"a"), "before the first key"),
        (
            A,
            KeyRange::new(b"c\x00".to_vec(), None),
            "past the last key",
        ),
        (B, KeyRange::all(), "an empty family"),
    ];
    for (cf, r, why) in cases {
        assert!(
            keys(e.cursor(cf, r.clone(), FWD)).is_empty(),
            "forward: {why}"
        );
        assert!(
            keys(e.cursor(cf, r.clone(), REV)).is_empty(),
            "reverse: {why}"
        );
        assert_eq!(e.count(cf, r.clone()).unwrap(), 0, "count: {why}");
        assert!(
            keys(e.snapshot().cursor(cf, r, REV)).is_empty(),
            "snapshot: {why}"
        );
    }
}

/// Seeks `c` to each target and checks where it lands (`why` names the
/// case in the failure).
fn seeks_land(c: &mut dyn Cursor, dir: &str, table: &[(&[u8], Option<&str>, &str)]) {
    for (target, want, why) in table {
        c.seek(target);
        assert_eq!(
            at(c),
            want.map(str::to_owned),
            "{dir} seek to {}: {why}",
            show(target)
        );
    }
}

/// `seek` lands on its key or the next one in the cursor's direction, and
/// never outside the range: a target below the range lands on the first
/// key (forward) or nowhere (reverse), one above it nowhere (forward) or
/// on the last key (reverse). Deleted keys are skipped, and a cursor that
/// ran off its range can seek back into it.
pub fn seek_lands_inside_the_range(home: &dyn EngineHome) {
    let e = open_with(home, &[A]);
    let e = e.as_ref();
    commit(
        e,
        &[
            W::Put(A, b"a", b""),
            W::Put(A, b"b", b""),
            W::Put(A, b"c", b""),
            W::Put(A, b"d", b""),
            W::Put(A, b"e", b""),
            W::Put(A, b"f", b""),
            W::Put(A, b"g", b""),
        ],
    );
    commit(e, &[W::Del(A, b"d")]);
    // The range is [b, f): b, c, e (d was deleted).
    let r = range(b"b", b"f");

    let mut c = e.cursor(A, r.clone(), FWD).unwrap();
    let forward: [(&[u8], Option<&str>, &str); 8] = [
        (b"c", Some("c"), "an existing key"),
        (b"c\x00", Some("e"), "between keys, the next one"),
        (b"d", Some("e"), "a deleted key, the next live one"),
        (b"a", Some("b"), "below the range, its first key"),
        (b"", Some("b"), "the empty key, the range's first key"),
        (b"f", None, "the upper bound, nothing"),
        (b"z", None, "above the range, nothing"),
        (
            b"b",
            Some("b"),
            "after running off the range, back on the lower bound",
        ),
    ];
    seeks_land(c.as_mut(), "forward", &forward);
    c.seek(b"c");
    c.advance();
    assert_eq!(
        at(c.as_ref()),
        some("e"),
        "advancing after a seek continues forward"
    );
    drop(c);

    let mut c = e.cursor(A, r, REV).unwrap();
    let reverse: [(&[u8], Option<&str>, &str); 8] = [
        (b"c", Some("c"), "an existing key"),
        (b"c\x00", Some("c"), "between keys, the one before"),
        (b"d", Some("c"), "a deleted key, the live one before"),
        (b"z", Some("e"), "above the range, its last key"),
        (b"f", Some("e"), "the upper bound, the last key below it"),
        (b"a\xff", None, "below the range, nothing"),
        (b"a", None, "below the range, nothing"),
        (
            b"e",
            Some("e"),
            "after running off the range, back on its last key",
        ),
    ];
    seeks_land(c.as_mut(), "reverse", &reverse);
    c.seek(b"c");
    c.advance();
    assert_eq!(
        at(c.as_ref()),
        some("b"),
        "advancing after a seek continues in reverse"
    );
    c.status().unwrap();
}

/// A cursor over the latest state merges what a new batch wrote (puts,
/// overwrites, deletes, range deletes) with older keys, some already in
/// files, in both directions.
pub fn cursors_merge_new_and_older_keys(home: &dyn EngineHome) {
    let e = open_with(home, &[A]);
    let e = e.as_ref();
    commit(
        e,
        &[
            W::Put(A, b"a", b"1"),
            W::Put(A, b"c", b"1"),
            W::Put(A, b"e", b"1"),
            W::Put(A, b"g", b"1"),
        ],
    );
    e.flush().unwrap();
    commit(
        e,
        &[
            W::Put(A, b"b", b"2"),
            W::Put(A, b"c", b"2"),
            W::Del(A, b"e"),
            W::Put(A, b"f", b"2"),
            W::DelRange(A, b"g", b"h"),
        ],
    );
    let want = ["a=1", "b=2", "c=2", "f=2"];
    assert_eq!(
        entries(e.cursor(A, KeyRange::all(), FWD)),
        want,
        "forward over old and new keys"
    );
    assert_eq!(
        entries(e.cursor(A, KeyRange::all(), REV)),
        reversed(&want),
        "reverse over old and new keys"
    );

    commit(e, &[W::Put(A, b"e", b"3"), W::Put(A, b"g", b"3")]);
    let want = ["a=1", "b=2", "c=2", "e=3", "f=2", "g=3"];
    assert_eq!(
        entries(e.cursor(A, KeyRange::all(), FWD)),
        want,
        "keys deleted then written again"
    );
    assert_eq!(entries(e.cursor(A, KeyRange::all(), REV)), reversed(&want));
}

// ---------------------------------------------------------------------------
// Batches.

/// A batch's writes are invisible to every read until it commits; its
/// length counts operations (not keys); a batch dropped uncommitted
/// changes nothing.
pub fn batch_is_invisible_until_committed(home: &dyn EngineHome) {
    let e = open_with(home, &[A]);
    let e = e.as_ref();
    commit(e, &[W::Put(A, b"a", b"1")]);
    let writes = [
        W::Put(A, b"b", b"1"),
        W::Del(A, b"a"),
        W::DelRange(A, b"c", b"d"),
        W::Put(A, b"b", b"2"),
    ];
    for discard in [true, false] {
        let mut b = e.batch();
        assert_eq!(b.len(), 0, "a new batch is empty");
        assert!(b.is_empty());
        for (n, &w) in writes.iter().enumerate() {
            add(b.as_mut(), w).unwrap();
            assert_eq!(b.len(), n + 1, "len counts every operation added");
        }
        assert!(!b.is_empty());
        assert_eq!(val(e.get(A, b"b")), None, "an uncommitted put is invisible");
        assert_eq!(
            val(e.get(A, b"a")),
            some("1"),
            "an uncommitted delete is invisible"
        );
        assert_eq!(
            entries(e.cursor(A, KeyRange::all(), FWD)),
            ["a=1"],
            "cursors see no uncommitted write"
        );
        assert_eq!(
            e.multi_get(A, &[b"a".to_vec(), b"b".to_vec()]).unwrap(),
            [Some(b"1".to_vec()), None]
        );
        assert_eq!(e.count(A, KeyRange::all()).unwrap(), 1);
        assert_eq!(keys(e.snapshot().cursor(A, KeyRange::all(), REV)), ["a"]);
        if discard {
            drop(b);
            assert_eq!(
                entries(e.cursor(A, KeyRange::all(), FWD)),
                ["a=1"],
                "a dropped batch changes nothing"
            );
        } else {
            b.commit(false).unwrap();
            assert_eq!(
                entries(e.cursor(A, KeyRange::all(), FWD)),
                ["b=2"],
                "a commit applies the batch"
            );
        }
    }
}

/// An empty batch commits, synced or not, and changes nothing; so does a
/// batch that only deletes absent keys.
pub fn empty_batch_commits(home: &dyn EngineHome) {
    let e = open_with(home, &[A]);
    let e = e.as_ref();
    commit(e, &[W::Put(A, b"a", b"1")]);
    e.batch().commit(false).expect("an empty batch commits");
    e.batch()
        .commit(true)
        .expect("an empty synced batch commits");
    commit(e, &[W::Del(A, b"zz"), W::DelRange(A, b"x", b"y")]);
    assert_eq!(entries(e.cursor(A, KeyRange::all(), FWD)), ["a=1"]);
}

/// A sealed batch holds its writes, in call order, invisibly until it is
/// committed, which may happen on another thread after other commits; a
/// sealed batch dropped uncommitted changes nothing.
pub fn sealed_batch_commits_later_on_another_thread(home: &dyn EngineHome) {
    let e = open_with(home, &[A, B]);
    let e = e.as_ref();
    commit(e, &[W::Put(A, b"a", b"1"), W::Put(A, b"c", b"1")]);
    let seal = |writes: &[W<'_>]| {
        let mut b = e.batch();
        for &w in writes {
            add(b.as_mut(), w).unwrap();
        }
        b.seal()
    };
    let dropped = seal(&[W::Put(A, b"z", b"1")]);
    let sealed = seal(&[
        W::Del(A, b"a"),
        W::Put(B, b"b", b"1"),
        W::DelRange(A, b"c", b"d"),
        W::Put(A, b"c", b"2"),
    ]);
    assert_eq!(sealed.len(), 4, "len counts every operation added");
    assert!(!sealed.is_empty());
    assert!(e.batch().seal().is_empty());
    assert_eq!(
        entries(e.cursor(A, KeyRange::all(), FWD)),
        ["a=1", "c=1"],
        "a sealed batch is invisible"
    );
    commit(e, &[W::Put(A, b"e", b"1")]);
    drop(dropped);
    std::thread::scope(|s| {
        s.spawn(|| e.commit_sealed(sealed, false).unwrap());
    });
    assert_eq!(
        entries(e.cursor(A, KeyRange::all(), FWD)),
        ["c=2", "e=1"],
        "the sealed batch applied in call order, after the commit before it"
    );
    assert_eq!(entries(e.cursor(B, KeyRange::all(), FWD)), ["b=1"]);
    e.commit_sealed(e.batch().seal(), true)
        .expect("an empty sealed batch commits");
}

/// Within one batch, writes apply in the order they were added, whatever
/// the engine does to apply them quickly: the later write of a key wins,
/// a range delete removes keys put before it in the batch but not keys
/// put after it, and a write in one family never cancels one in another.
pub fn batch_applies_writes_in_call_order(home: &dyn EngineHome) {
    let e = open_with(home, &[A, B]);
    let e = e.as_ref();
    commit(
        e,
        &[
            W::Put(A, b"p2", b"old"),
            W::Put(A, b"t/1", b"old"),
            W::Put(A, b"t/2", b"old"),
        ],
    );
    commit(
        e,
        &[
            W::Put(A, b"z", b"1"),
            W::Put(A, b"p1", b"v"),
            W::Del(A, b"p1"),
            W::Del(A, b"p2"),
            W::Put(A, b"p2", b"new"),
            W::Put(A, b"p3", b"1"),
            W::Put(A, b"p3", b"2"),
            W::Put(A, b"r/1", b"v"),
            W::Put(B, b"r/1", b"v"),
            W::DelRange(A, b"r/", b"r0"),
            W::DelRange(A, b"s/", b"s0"),
            W::Put(A, b"s/1", b"v"),
            W::DelRange(A, b"t/", b"t0"),
            W::Put(A, b"t/2", b"new"),
            W::Put(A, b"u", b"1"),
            W::DelRange(A, b"u", b"v"),
            W::Put(A, b"u", b"2"),
            W::Put(A, b"w", b"1"),
            W::Put(B, b"w", b"1"),
            W::Del(A, b"w"),
            W::Put(A, b"y", b"1"),
            W::Put(A, b"x", b"1"),
        ],
    );
    let cases: [(Cf, &[u8], Option<&str>, &str); 13] = [
        (A, b"p1", None, "put then delete leaves the key absent"),
        (
            A,
            b"p2",
            Some("new"),
            "delete then put leaves the key present",
        ),
        (A, b"p3", Some("2"), "the later of two puts wins"),
        (
            A,
            b"r/1",
            None,
            "a range delete removes a key put before it",
        ),
        (
            B,
            b"r/1",
            Some("v"),
            "a range delete in one family spares another",
        ),
        (
            A,
            b"s/1",
            Some("v"),
            "a key put after a range delete survives it",
        ),
        (A, b"t/1", None, "a range delete removes committed keys"),
        (
            A,
            b"t/2",
            Some("new"),
            "a committed key deleted by range and put again is present",
        ),
        (
            A,
            b"u",
            Some("2"),
            "put, range delete, put: the last put wins",
        ),
        (
            A,
            b"w",
            None,
            "a delete removes the put before it in its family",
        ),
        (
            B,
            b"w",
            Some("1"),
            "a delete in one family spares the same key in another",
        ),
        (
            A,
            b"x",
            Some("1"),
            "puts added in descending key order all apply",
        ),
        (
            A,
            b"z",
            Some("1"),
            "puts added in descending key order all apply",
        ),
    ];
    for (cf, key, want, why) in cases {
        assert_eq!(
            val(e.get(cf, key)),
            want.map(str::to_owned),
            "{}: {why}",
            show(key)
        );
    }
    assert_eq!(
        keys(e.cursor(A, KeyRange::all(), FWD)),
        ["p2", "p3", "s/1", "t/2", "u", "x", "y", "z"],
        "cursors agree with point reads"
    );
}

/// Random batches of puts, deletes and range deletes over two families
/// give the same contents as applying each write in turn to a sorted map,
/// including across flushes and reopens; a snapshot taken before each
/// batch still shows the state before it.
pub fn batches_match_an_in_order_model(home: &dyn EngineHome) {
    // Few keys, so writes collide and ranges cover keys often.
    const KEYS: &[&[u8]] = &[
        b"",
        b"\x00",
        b"a",
        b"a\x00",
        b"ab",
        b"b",
        b"\x7f",
        b"\x80",
        b"\xff",
        b"\xff\xff",
    ];
    const CFS: [Cf; 2] = [A, B];
    type Model = BTreeMap<Vec<u8>, Vec<u8>>;
    let show_model = |m: &Model| -> Vec<String> {
        m.iter()
            .map(|(k, v)| format!("{}={}", show(k), show(v)))
            .collect()
    };

    let mut e = open_with(home, &CFS);
    let mut model: [Model; 2] = Default::default();
    let mut rng = Rng(0x5EED_0EBB);
    for round in 0..80 {
        let before = model.clone();
        let snap = e.snapshot();
        let mut b = e.batch();
        let mut log = Vec::new();
        for n in 0..rng.below(12) {
            let f = rng.below(2);
            let (cf, m) = (CFS[f], &mut model[f]);
            let key = KEYS[rng.below(KEYS.len())];
            match rng.below(5) {
                0..=2 => {
                    let v = format!("{round}.{n}");
                    b.put(cf, key, v.as_bytes()).unwrap();
                    log.push(format!("put {cf:?} {}={v}", show(key)));
                    m.insert(key.to_vec(), v.into_bytes());
                }
                3 => {
                    b.delete(cf, key).unwrap();
                    log.push(format!("delete {cf:?} {}", show(key)));
                    m.remove(key);
                }
                _ => {
                    let other = KEYS[rng.below(KEYS.len())];
                    let (from, to) = (key.min(other), key.max(other));
                    b.delete_range(cf, from, to).unwrap();
                    log.push(format!(
                        "delete_range {cf:?} [{}, {})",
                        show(from),
                        show(to)
                    ));
                    m.retain(|k, _| k.as_slice() < from || k.as_slice() >= to);
                }
            }
        }
        b.commit(false).unwrap();
        for f in 0..2 {
            let want = show_model(&model[f]);
            let got = entries(e.cursor(CFS[f], KeyRange::all(), FWD));
            assert_eq!(
                got, want,
                "round {round}, {:?} after the batch {log:#?}",
                CFS[f]
            );
            let back: Vec<String> = want.iter().rev().cloned().collect();
            assert_eq!(
                entries(e.cursor(CFS[f], KeyRange::all(), REV)),
                back,
                "round {round}, reverse"
            );
            let old = show_model(&before[f]);
            assert_eq!(
                entries(snap.cursor(CFS[f], KeyRange::all(), FWD)),
                old,
                "round {round}, {:?}: a snapshot from before the batch {log:#?}",
                CFS[f]
            );
        }
        drop(snap);
        if round % 20 == 9 {
            e.flush().unwrap();
        }
        if round % 20 == 19 {
            drop(e);
            e = home.open();
        }
    }
}

/// `delete_range(from, to)` removes exactly `[from, to)`: `from` and keys
/// extending it go, `to` stays; an empty `from` starts at the first key
/// (expiry of a whole collection relies on it); `from == to` removes
/// nothing; other families are untouched.
pub fn delete_range_is_half_open(home: &dyn EngineHome) {
    let e = open_with(home, &[A, B]);
    let e = e.as_ref();
    let all: &[&[u8]] = &[
        b"",
        b"a",
        b"b",
        b"b\x00",
        b"b\xff\xff",
        b"c",
        b"c\x00",
        b"d",
        b"\xff",
    ];
    let mut writes: Vec<W<'_>> = all.iter().map(|k| W::Put(A, k, b"")).collect();
    writes.push(W::Put(B, b"b", b""));
    commit(e, &writes);
    e.flush().unwrap();

    commit(e, &[W::DelRange(A, b"b", b"c")]);
    let want = ["", "a", "c", "c\\x00", "d", "\\xff"];
    assert_eq!(
        keys(e.cursor(A, KeyRange::all(), FWD)),
        want,
        "[b, c) removes b and its extensions, not c"
    );
    assert_eq!(
        keys(e.cursor(B, KeyRange::all(), FWD)),
        ["b"],
        "other families are untouched"
    );
    commit(e, &[W::DelRange(A, b"c\x00", b"c\x00")]);
    assert_eq!(
        keys(e.cursor(A, KeyRange::all(), FWD)),
        want,
        "an empty range removes nothing"
    );
    commit(e, &[W::DelRange(A, b"", b"a\x00")]);
    let want = ["c", "c\\x00", "d", "\\xff"];
    assert_eq!(
        keys(e.cursor(A, KeyRange::all(), FWD)),
        want,
        "an empty `from` starts at the empty key"
    );
    commit(e, &[W::DelRange(A, b"d", b"\xff")]);
    let want = ["c", "c\\x00", "\\xff"];
    assert_eq!(
        keys(e.cursor(A, KeyRange::all(), REV)),
        reversed(&want),
        "`to` stays, even as the last key"
    );
    assert_eq!(val(e.get(A, b"d")), None);
    assert_eq!(val(e.get(A, b"\xff")), some(""));
    assert_eq!(
        e.count(A, KeyRange::all()).unwrap(),
        3,
        "count skips range-deleted keys"
    );
}

// ---------------------------------------------------------------------------
// Snapshots, multi_get, count, stats.

/// A snapshot reads the state as of its creation: later puts, overwrites,
/// deletes and range deletes, in any family, are invisible to its point
/// reads and to its cursors (opened before or after those writes), and
/// flushing or compacting does not take away what it still reads.
pub fn snapshot_hides_later_writes(home: &dyn EngineHome) {
    let e = open_with(home, &[A, B]);
    let e = e.as_ref();
    commit(
        e,
        &[
            W::Put(A, b"a", b"1"),
            W::Put(A, b"b", b"1"),
            W::Put(A, b"c", b"1"),
            W::Put(A, b"d", b"1"),
            W::Put(A, b"e", b"1"),
            W::Put(B, b"x", b"1"),
        ],
    );
    e.flush().unwrap();
    commit(e, &[W::Put(A, b"f", b"1")]);
    let old = ["a=1", "b=1", "c=1", "d=1", "e=1", "f=1"];

    let snap = e.snapshot();
    let mut early = snap.cursor(A, KeyRange::all(), FWD).unwrap();
    commit(
        e,
        &[
            W::Put(A, b"a", b"2"),
            W::Del(A, b"b"),
            W::DelRange(A, b"c", b"e"),
            W::Put(A, b"g", b"2"),
            W::Put(B, b"x", b"2"),
            W::Put(B, b"y", b"2"),
        ],
    );
    let mut seen = Vec::new();
    while early.valid() {
        seen.push(format!("{}={}", show(early.key()), show(early.value())));
        early.advance();
    }
    early.status().unwrap();
    drop(early);
    assert_eq!(
        seen, old,
        "a snapshot's cursor opened before the writes misses them"
    );

    let point: [(Cf, &[u8], Option<&str>, &str); 6] = [
        (A, b"a", Some("1"), "an overwrite"),
        (A, b"b", Some("1"), "a delete"),
        (A, b"c", Some("1"), "a range delete"),
        (A, b"g", None, "a new key"),
        (B, b"x", Some("1"), "an overwrite in another family"),
        (B, b"y", None, "a new key in another family"),
    ];
    for (cf, key, want, what) in point {
        assert_eq!(
            val(snap.get(cf, key)),
            want.map(str::to_owned),
            "a snapshot does not see {what}"
        );
    }
    assert_eq!(
        entries(snap.cursor(A, KeyRange::all(), FWD)),
        old,
        "a snapshot's new cursor misses later writes"
    );
    assert_eq!(
        entries(snap.cursor(A, KeyRange::all(), REV)),
        reversed(&old),
        "in reverse too"
    );
    assert_eq!(entries(snap.cursor(B, KeyRange::all(), FWD)), ["x=1"]);
    let mut c = snap.cursor(A, range(b"b", b"d"), FWD).unwrap();
    c.seek(b"b");
    assert_eq!(
        at(c.as_ref()),
        some("b"),
        "a snapshot's cursor seeks to keys deleted since"
    );
    drop(c);

    assert_eq!(
        entries(e.cursor(A, KeyRange::all(), FWD)),
        ["a=2", "e=1", "f=1", "g=2"],
        "the engine sees the writes"
    );

    commit(e, &[W::DelRange(A, b"", b"\xff")]);
    e.flush().unwrap();
    e.compact(A, None).unwrap();
    assert_eq!(
        entries(snap.cursor(A, KeyRange::all(), FWD)),
        old,
        "flushing and compacting keep what a snapshot reads"
    );
    assert_eq!(val(snap.get(A, b"d")), some("1"));

    let now = e.snapshot();
    assert!(
        keys(now.cursor(A, KeyRange::all(), FWD)).is_empty(),
        "a new snapshot sees the latest state"
    );
    assert_eq!(entries(now.cursor(B, KeyRange::all(), FWD)), ["x=2", "y=2"]);
}

/// `multi_get` answers one entry per requested key, in request order,
/// whatever that order: repeated keys answer each time, absent, deleted
/// and range-deleted keys answer None, and no keys means no answers.
pub fn multi_get_answers_in_request_order(home: &dyn EngineHome) {
    let e = open_with(home, &[A]);
    let e = e.as_ref();
    commit(
        e,
        &[
            W::Put(A, b"a", b"1"),
            W::Put(A, b"b", b"2"),
            W::Put(A, b"c", b"3"),
            W::Put(A, b"d", b"4"),
        ],
    );
    commit(e, &[W::Del(A, b"c"), W::DelRange(A, b"d", b"e")]);
    let ask: Vec<Vec<u8>> = [&b"c"[..], b"a", b"zz", b"a", b"b", b"d", b""]
        .map(<[u8]>::to_vec)
        .to_vec();
    let got: Vec<Option<String>> = e
        .multi_get(A, &ask)
        .unwrap()
        .into_iter()
        .map(|v| v.map(|v| show(&v)))
        .collect();
    assert_eq!(
        got,
        [None, some("1"), None, some("1"), some("2"), None, None],
        "answers follow the request"
    );
    assert!(
        e.multi_get(A, &[]).unwrap().is_empty(),
        "no keys, no answers"
    );

    // Many keys, half present (some in files, some in memory), in an
    // order unrelated to the keys'.
    let mut rng = Rng(7);
    for chunk in 0..3 {
        let writes: Vec<(Vec<u8>, Vec<u8>)> = (0..100)
            .map(|i| {
                (
                    format!("k{:04}", 2 * (chunk * 100 + i)).into_bytes(),
                    rng.bytes(1 + i % 40),
                )
            })
            .collect();
        let ops: Vec<W<'_>> = writes.iter().map(|(k, v)| W::Put(A, k, v)).collect();
        commit(e, &ops);
        if chunk == 0 {
            e.flush().unwrap();
        }
    }
    let mut ask: Vec<Vec<u8>> = (0..600).map(|i| format!("k{i:04}").into_bytes()).collect();
    for i in (1..ask.len()).rev() {
        ask.swap(i, rng.below(i + 1));
    }
    let got = e.multi_get(A, &ask).unwrap();
    assert_eq!(got.len(), ask.len(), "one answer per key");
    for (key, answer) in ask.iter().zip(got) {
        assert_eq!(
            answer,
            e.get(A, key).unwrap(),
            "multi_get and get agree on {}",
            show(key)
        );
    }
}

/// `count` equals the number of keys a cursor over the same range
/// passes, after point and range deletes, over files and memory.
pub fn count_matches_a_scan(home: &dyn EngineHome) {
    let e = open_with(home, &[A]);
    let e = e.as_ref();
    let key = |i: usize| format!("p{}/{i:04}", i % 5).into_bytes();
    let all: Vec<Vec<u8>> = (0..500).map(key).collect();
    let ops: Vec<W<'_>> = all.iter().map(|k| W::Put(A, k, b"v")).collect();
    commit(e, &ops);
    e.flush().unwrap();
    let dels: Vec<W<'_>> = all.iter().step_by(3).map(|k| W::Del(A, k)).collect();
    commit(e, &dels);
    commit(e, &[W::DelRange(A, b"p2/", b"p20")]);

    let live = |r: &KeyRange| {
        (0..500)
            .filter(|i| i % 3 != 0 && i % 5 != 2)
            .map(key)
            .filter(|k| k >= &r.lower && r.upper.as_ref().is_none_or(|u| k < u))
            .count() as u64
    };
    let ranges = [
        KeyRange::all(),
        KeyRange::prefix(b"p0/"),
        KeyRange::prefix(b"p2/"),
        range(b"p1/0100", b"p3/0200"),
        range(b"p3", b"p3"),
        range(b"z", b"zz"),
    ];
    for r in ranges {
        let n = e.count(A, r.clone()).unwrap();
        assert_eq!(n, live(&r), "count over {r:?}");
        assert_eq!(
            n,
            keys(e.cursor(A, r.clone(), FWD)).len() as u64,
            "count agrees with a scan of {r:?}"
        );
    }
}

/// Statistics are estimates, but sane ones: a new family reports no keys;
/// after N keys the estimate is within a factor of two of N, before and
/// after a flush, and the reported size (the larger of live data and files,
/// as `collStats` shows it) is within a factor of four of the bytes
/// written; deleting everything and compacting brings the key estimate
/// down and does not grow the files.
pub fn stats_are_sane_estimates(home: &dyn EngineHome) {
    const N: u64 = 2000;
    const VALUE: usize = 200;
    let e = open_with(home, &[A, B]);
    let e = e.as_ref();
    assert_eq!(
        e.stats(A).unwrap().estimated_keys,
        0,
        "a new family reports no keys"
    );
    e.stats(Cf::Catalog).expect("the catalog has stats");

    let mut rng = Rng(11);
    for chunk in 0..N / 100 {
        let rows: Vec<(Vec<u8>, Vec<u8>)> = (0..100)
            .map(|i| ((chunk * 100 + i).to_be_bytes().to_vec(), rng.bytes(VALUE)))
            .collect();
        let ops: Vec<W<'_>> = rows.iter().map(|(k, v)| W::Put(A, k, v)).collect();
        commit(e, &ops);
    }
    let in_bounds = |n: u64| (N / 2..=2 * N).contains(&n);
    let s = e.stats(A).unwrap();
    assert!(
        in_bounds(s.estimated_keys),
        "{N} keys before a flush estimated as {}",
        s.estimated_keys
    );
    e.flush().unwrap();
    let s = e.stats(A).unwrap();
    assert!(
        in_bounds(s.estimated_keys),
        "{N} keys after a flush estimated as {}",
        s.estimated_keys
    );
    let written = N * (8 + VALUE as u64);
    let size = s.live_data_bytes.max(s.sst_bytes);
    assert!(
        (written / 4..=written * 4).contains(&size),
        "{written} bytes written, size reported as {size} ({s:?})"
    );
    assert_eq!(
        e.stats(B).unwrap().estimated_keys,
        0,
        "another family's writes are not counted"
    );

    commit(e, &[W::DelRange(A, b"", &[0xFF; 9])]);
    e.compact(A, None).unwrap();
    let after = e.stats(A).unwrap();
    assert!(
        after.estimated_keys < N / 2,
        "after deleting and compacting all keys: {after:?}"
    );
    assert!(
        after.sst_bytes <= s.sst_bytes,
        "compacting deleted keys does not grow the files: {s:?} then {after:?}"
    );
}

// ---------------------------------------------------------------------------
// Durability and maintenance.

/// Dropping an engine and opening its home again keeps every committed
/// batch, synced or not, whether it reached files (flush) or only the log
/// (`sync_wal`, or nothing): puts, deletes and range deletes, in numbered
/// families and the catalog. A reopened engine takes writes and keeps them
/// across the next reopen too.
pub fn committed_batches_survive_reopen(home: &dyn EngineHome) {
    let e = open_with(home, &[A, B]);
    commit_with(
        e.as_ref(),
        &[W::Put(A, b"a", b"1"), W::Put(Cf::Catalog, b"meta", b"1")],
        true,
    );
    commit(
        e.as_ref(),
        &[
            W::Put(A, b"b", b"1"),
            W::Put(B, b"x", b"1"),
            W::Del(A, b"a"),
        ],
    );
    commit(e.as_ref(), &[W::Put(A, b"c", b"1"), W::Put(A, b"c2", b"1")]);
    e.flush().unwrap();
    commit(
        e.as_ref(),
        &[W::Put(A, b"d", b"1"), W::DelRange(A, b"c1", b"c3")],
    );
    e.sync_wal().unwrap();
    commit(e.as_ref(), &[W::Put(A, b"e", b"1"), W::Put(B, b"x", b"2")]);
    let want_a = ["b=1", "c=1", "d=1", "e=1"];

    drop(e);
    let e = home.open();
    let mut ids = e.numbered_cfs();
    ids.sort_unstable();
    assert_eq!(ids, [1, 2], "families survive a reopen");
    assert_eq!(
        entries(e.cursor(A, KeyRange::all(), FWD)),
        want_a,
        "committed writes survive a reopen"
    );
    assert_eq!(
        entries(e.cursor(B, KeyRange::all(), FWD)),
        ["x=2"],
        "the last unsynced commit survives a clean close"
    );
    assert_eq!(
        val(e.get(Cf::Catalog, b"meta")),
        some("1"),
        "the catalog survives a reopen"
    );

    commit(e.as_ref(), &[W::Put(A, b"f", b"1"), W::Del(A, b"b")]);
    drop(e);
    let e = home.open();
    assert_eq!(
        entries(e.cursor(A, KeyRange::all(), FWD)),
        ["c=1", "d=1", "e=1", "f=1"],
        "writes after a reopen survive the next one"
    );
}

/// Compacting a range or a whole family keeps every live key and value and
/// brings back no deleted key, before and after a reopen; compacting an
/// empty family or the catalog is fine.
pub fn compaction_keeps_live_keys(home: &dyn EngineHome) {
    let e = open_with(home, &[A, B]);
    let mut model = BTreeMap::new();
    let rows: Vec<(Vec<u8>, Vec<u8>)> = (0..300)
        .map(|i| {
            (
                format!("k{i:03}").into_bytes(),
                format!("v{i}").into_bytes(),
            )
        })
        .collect();
    let ops: Vec<W<'_>> = rows.iter().map(|(k, v)| W::Put(A, k, v)).collect();
    commit(e.as_ref(), &ops);
    model.extend(rows.iter().cloned());
    e.flush().unwrap();
    let dels: Vec<W<'_>> = rows.iter().step_by(2).map(|(k, _)| W::Del(A, k)).collect();
    commit(e.as_ref(), &dels);
    commit(
        e.as_ref(),
        &[W::DelRange(A, b"k200", b"k250"), W::Put(A, b"k011", b"new")],
    );
    model.retain(|k, _| {
        let i: usize = std::str::from_utf8(&k[1..]).unwrap().parse().unwrap();
        i % 2 == 1 && !(200..250).contains(&i)
    });
    model.insert(b"k011".to_vec(), b"new".to_vec());
    let want: Vec<String> = model
        .iter()
        .map(|(k, v)| format!("{}={}", show(k), show(v)))
        .collect();

    e.compact(A, Some(range(b"k000", b"k100"))).unwrap();
    assert_eq!(
        entries(e.cursor(A, KeyRange::all(), FWD)),
        want,
        "after compacting a range"
    );
    e.compact(A, None).unwrap();
    assert_eq!(
        entries(e.cursor(A, KeyRange::all(), FWD)),
        want,
        "after compacting the whole family"
    );
    e.compact(A, Some(KeyRange::all())).unwrap();
    e.compact(B, None).expect("compacting an empty family");
    e.compact(Cf::Catalog, None)
        .expect("compacting the catalog");
    drop(e);
    let e = home.open();
    assert_eq!(
        entries(e.cursor(A, KeyRange::all(), REV)),
        want.iter().rev().cloned().collect::<Vec<_>>(),
        "after a reopen"
    );
}

/// Values past MongoDB's 16 MiB document limit (a record holds a little
/// more than its document) and long keys containing 0x00 and 0xFF
/// round-trip through every read path, from memory, from files and after
/// a reopen.
pub fn large_keys_and_values_round_trip(home: &dyn EngineHome) {
    let mut rng = Rng(17);
    let big = rng.bytes(17 << 20);
    let mid = rng.bytes(1 << 20);
    let long_key: Vec<u8> = (0..64 << 10).map(|i| [0x00, 0xFF, b'k'][i % 3]).collect();
    // Not assert_eq!: a failure must not print megabytes.
    let same = |got: Option<Vec<u8>>, want: &[u8], what: &str| {
        let len = got.as_ref().map(Vec::len);
        assert!(
            got.as_deref() == Some(want),
            "{what}: got {len:?} bytes, wanted {} bytes",
            want.len()
        );
    };
    let read_back = |e: &dyn Engine, when: &str| {
        same(
            e.get(A, b"big").unwrap(),
            &big,
            &format!("get of 17 MiB {when}"),
        );
        same(
            e.get(A, &long_key).unwrap(),
            &mid,
            &format!("get under a 64 KiB key {when}"),
        );
        let got = e
            .multi_get(A, &[long_key.clone(), b"big".to_vec()])
            .unwrap();
        same(
            got[0].clone(),
            &mid,
            &format!("multi_get under a long key {when}"),
        );
        same(got[1].clone(), &big, &format!("multi_get of 17 MiB {when}"));
        same(
            e.snapshot().get(A, b"big").unwrap(),
            &big,
            &format!("snapshot get {when}"),
        );
        let mut c = e.cursor(A, KeyRange::all(), FWD).unwrap();
        assert!(
            c.valid() && c.key() == long_key.as_slice(),
            "the long key sorts first {when}"
        );
        assert!(
            c.value() == mid.as_slice(),
            "a cursor's value under the long key {when}"
        );
        c.advance();
        assert!(
            c.valid() && c.key() == b"big" && c.value() == big.as_slice(),
            "a cursor over 17 MiB {when}"
        );
    };

    let e = open_with(home, &[A]);
    commit(
        e.as_ref(),
        &[
            W::Put(A, b"big", &big),
            W::Put(A, &long_key, &mid),
            W::Put(A, b"small", b"s"),
        ],
    );
    read_back(e.as_ref(), "from memory");
    e.flush().unwrap();
    read_back(e.as_ref(), "from files");
    drop(e);
    read_back(home.open().as_ref(), "after a reopen");
}

/// Batches committed from several threads at once are each seen whole by
/// snapshots taken meanwhile: two keys of one family and one of another,
/// always written together, always read equal.
pub fn concurrent_commits_are_seen_whole(home: &dyn EngineHome) {
    let e = open_with(home, &[A, B]);
    let e: &dyn Engine = e.as_ref();
    std::thread::scope(|s| {
        for writer in 0..2u8 {
            s.spawn(move || {
                for i in 0..300u32 {
                    let v = [&[writer][..], &i.to_be_bytes()].concat();
                    commit(
                        e,
                        &[
                            W::Put(A, b"x", &v),
                            W::Put(A, b"y", &v),
                            W::Put(B, b"x", &v),
                        ],
                    );
                }
            });
        }
        s.spawn(move || {
            for _ in 0..300 {
                let snap = e.snapshot();
                let x = snap.get(A, b"x").unwrap();
                assert_eq!(
                    snap.get(A, b"y").unwrap(),
                    x,
                    "a snapshot saw half a batch in one family"
                );
                assert_eq!(
                    snap.get(B, b"x").unwrap(),
                    x,
                    "a snapshot saw half a batch across families"
                );
            }
        });
    });
    let last = e.get(A, b"x").unwrap();
    assert!(last.is_some());
    assert_eq!(
        e.get(B, b"x").unwrap(),
        last,
        "the last batch applied whole"
    );
}

/// A batch that names a family dropped after the write was added either
/// commits whole or fails whole, and either way the engine goes on taking
/// writes and reopens with the same state.
pub fn commit_racing_a_family_drop_is_all_or_nothing(home: &dyn EngineHome) {
    let e = open_with(home, &[A, B]);
    let mut b = e.batch();
    b.put(A, b"a", b"1").unwrap();
    b.put(B, b"b", b"1").unwrap();
    b.put(A, b"c", b"1").unwrap();
    e.drop_cf(B).unwrap();
    let committed = b.commit(false).is_ok();
    let want = if committed {
        vec!["a=1", "c=1"]
    } else {
        vec![]
    };
    let outcome = if committed { "committed" } else { "failed" };
    assert_eq!(
        entries(e.cursor(A, KeyRange::all(), FWD)),
        want,
        "a batch that {outcome} when a family it names was dropped"
    );
    let mut after = e.batch();
    after.put(A, b"later", b"1").unwrap();
    after
        .commit(false)
        .unwrap_or_else(|err| panic!("the engine takes writes after the racing commit: {err}"));
    drop(e);
    let e = home.open();
    let mut want = want;
    want.push("later=1");
    assert_eq!(
        entries(e.cursor(A, KeyRange::all(), FWD)),
        want,
        "after a reopen, the batch that {outcome} is still all or nothing"
    );
}
