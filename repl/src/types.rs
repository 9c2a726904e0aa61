//! The consensus library's type configuration: what a member is, what an
//! entry carries and what applying one answers.
//!
//! Entries and answers are opaque bytes here (a BSON document the node
//! builds and reads); this crate never interprets them.

use std::fmt;
use std::io::Cursor;

use serde::{Deserialize, Serialize};

openraft::declare_raft_types!(
    /// ebb's replica set as the consensus library sees it.
    pub TypeConfig:
        D = Proposal,
        R = Applied,
        NodeId = u64,
        Node = Member,
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

/// A write as the leader decided it: a BSON document only the node reads.
#[derive(Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Proposal {
    #[serde(with = "serde_bytes")]
    pub bytes: Vec<u8>,
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
    use super::node_id;

    #[test]
    fn a_members_id_depends_only_on_its_address() {
        assert_eq!(node_id("127.0.0.1:27017"), node_id("127.0.0.1:27017"));
        assert_eq!(node_id("Host.example:1"), node_id("host.example:1"));
        assert_ne!(node_id("127.0.0.1:27017"), node_id("127.0.0.1:27018"));
        assert!(node_id("127.0.0.1:27017") <= i64::MAX as u64);
    }
}
