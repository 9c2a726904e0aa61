//! The set's time as drivers see it: every reply's `operationTime` and
//! `$clusterTime`, `hello`'s `lastWrite`, and the optimes
//! `replSetGetStatus` shows, all from the [`OpTime`] of the last write
//! this member applied.
//!
//! A member applies only committed entries, so the time it shows is
//! majority-committed: `lastWrite.opTime` and `majorityOpTime` agree, and
//! a client that reads with `afterClusterTime` set to any time it was
//! shown waits at most for this member to apply what is already committed
//! (`command::read_concern`). ebb signs no cluster times: the signature is
//! mongod's for a set without keys (a zero hash, key 0).

use bson::raw::cstr;
use bson::{Document, RawDocumentBuf, doc, rawdoc};
use ebb_repl::OpTime;

use super::ReplicaSet;

/// The timestamp of `t`, as BSON holds it.
pub fn timestamp(t: OpTime) -> bson::Timestamp {
    bson::Timestamp {
        time: t.secs,
        increment: t.inc,
    }
}

/// `{ts, t}`, as mongod shows an optime.
pub fn optime_doc(t: OpTime) -> Document {
    doc! { "ts": timestamp(t), "t": t.term as i64 }
}

/// The wall time of `t`'s timestamp.
pub fn wall(t: OpTime) -> bson::DateTime {
    bson::DateTime::from_millis(i64::from(t.secs) * 1000)
}

/// `hello`'s `lastWrite`: what a driver's `maxStalenessSeconds` measures.
pub fn last_write(t: OpTime) -> Document {
    doc! {
        "opTime": optime_doc(t),
        "lastWriteDate": wall(t),
        "majorityOpTime": optime_doc(t),
        "majorityWriteDate": wall(t),
    }
}

/// Adds `operationTime` and `$clusterTime` to a reply of this member, once
/// it has applied a write (an uninitiated member has no time to give).
pub fn stamp(set: &ReplicaSet, reply: &mut RawDocumentBuf) {
    let t = set.replica.optime();
    if t == OpTime::default() {
        return;
    }
    let ts = timestamp(t);
    reply.append(cstr!("operationTime"), ts);
    let signature = bson::Binary {
        subtype: bson::spec::BinarySubtype::Generic,
        bytes: vec![0; 20],
    };
    reply.append(
        cstr!("$clusterTime"),
        rawdoc! {
            "clusterTime": ts,
            "signature": { "hash": signature, "keyId": 0_i64 },
        },
    );
}
