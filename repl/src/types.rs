//! The consensus library's type configuration: what a member is, what an
//! entry carries and what applying one answers.
//!
//! Entries and answers are opaque bytes here (a BSON document the node
//! builds and reads); this crate never interprets them.

use std::fmt;

use serde::{Deserialize, Serialize};

openraft::declare_raft_types!(
    /// ebb's replica set as the consensus library sees it.
    pub TypeConfig:
        D = Proposal,
        R = Applied,
        NodeId = u64,
        Node = Member,
        SnapshotData = crate::pack::SnapshotData,
);

/// The consensus library's handle on one member.
pub type Raft = openraft::Raft<TypeConfig>;

/// A member as the set's configuration names it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Member {
    /// `host:port` as clients reach it (`members[i].host`).
    pub host: String,
    /// `members[i]._id`, chosen by whoever configured the set.
    pub member_id: i32,
}

impl fmt::Display for Member {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (_id {})", self.host, self.member_id)
    }
}

/// The consensus identity of the member at `host`: a hash of the address
/// clients use, so a member knows it before any configuration reaches it.
/// It fits in 63 bits, as BSON stores integers signed.
pub fn node_id(host: &str) -> u64 {
    // FNV-1a: stable across builds and platforms, unlike std's hasher.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in host.to_ascii_lowercase().bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h >> 1
}

/// A write as the leader decided it: a BSON document only the node reads,
/// and the leader's wall time when it decided it (milliseconds since the
/// epoch), from which the entry's [`OpTime`] is made.
#[derive(Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Proposal {
    #[serde(with = "serde_bytes")]
    pub bytes: Vec<u8>,
    #[serde(default)]
    pub at_millis: i64,
}

/// Where an applied entry falls in the set's history, as mongod's oplog
/// names it: a timestamp (seconds, and a counter within the second) and
/// the term of the leader that wrote it. Timestamps only grow along the
/// log, and every member gives an entry the same one ([`OpTime::next`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct OpTime {
    pub secs: u32,
    pub inc: u32,
    pub term: u64,
}

impl OpTime {
    /// The time of the entry after `self` in the log, written at
    /// `at_millis` in `term`: the entry's own second, unless that is
    /// earlier than the last (a leader with a slower clock, proposals that
    /// crossed), and a counter that grows within a second.
    pub fn next(self, at_millis: i64, term: u64) -> OpTime {
        let own = u32::try_from(at_millis.max(0) / 1000).unwrap_or(u32::MAX);
        let (secs, inc) = match own.max(self.secs) {
            s if s > self.secs => (s, 1),
            s => match self.inc.checked_add(1) {
                Some(inc) => (s, inc),
                None => (s.saturating_add(1), 1),
            },
        };
        OpTime { secs, inc, term }
    }

    /// The timestamp, as `(seconds, counter)`: what orders entries.
    pub fn ts(self) -> (u32, u32) {
        (self.secs, self.inc)
    }

    /// The timestamp as one number that orders as it does: the seconds,
    /// then the counter (how change rows and resume tokens hold it).
    pub fn packed(self) -> u64 {
        (u64::from(self.secs) << 32) | u64::from(self.inc)
    }
}

impl fmt::Debug for Proposal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Proposal({} bytes)", self.bytes.len())
    }
}

impl fmt::Display for Proposal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

/// What applying a proposal answered on this member (the reply the leader
/// sends its client), as a BSON document.
#[derive(Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Applied {
    #[serde(with = "serde_bytes")]
    pub bytes: Vec<u8>,
}

impl fmt::Debug for Applied {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Applied({} bytes)", self.bytes.len())
    }
}

#[cfg(test)]
mod tests {
    use super::{OpTime, node_id};

    #[test]
    fn timestamps_only_grow_along_the_log() {
        let start = OpTime::default();
        let a = start.next(5_500, 1);
        assert_eq!((a.secs, a.inc, a.term), (5, 1, 1));
        let b = a.next(5_900, 1);
        assert_eq!(b.ts(), (5, 2));
        // An earlier clock (a new leader's, or a proposal that crossed
        // another) stays in the last entry's second.
        let c = b.next(3_000, 2);
        assert_eq!((c.secs, c.inc, c.term), (5, 3, 2));
        let d = c.next(7_000, 2);
        assert_eq!(d.ts(), (7, 1));
        let full = OpTime {
            secs: 9,
            inc: u32::MAX,
            term: 2,
        };
        assert_eq!(full.next(0, 2).ts(), (10, 1));
    }

    #[test]
    fn a_members_id_depends_only_on_its_address() {
        assert_eq!(node_id("127.0.0.1:27017"), node_id("127.0.0.1:27017"));
        assert_eq!(node_id("Host.example:1"), node_id("host.example:1"));
        assert_ne!(node_id("127.0.0.1:27017"), node_id("127.0.0.1:27018"));
        assert!(node_id("127.0.0.1:27017") <= i64::MAX as u64);
    }
}
