//! The consensus library's messages between members, carried by the node
//! ([`Transport`]: on the port clients use, so a member has one address).
//!
//! A message is a kind ([`Rpc`]) and a CBOR body; the answer is the
//! receiver's `Result`, encoded the same way. A chunk of a snapshot carries
//! its bytes as they are after the CBOR of the rest (`chunk`): a sequence
//! of integers would cost more than the copy. A member that cannot be
//! reached is reported as such, so the library backs off.

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use openraft::error::{
    InstallSnapshotError, NetworkError, RPCError, RaftError, RemoteError, Unreachable,
};
use openraft::network::{RPCOption, RaftNetwork, RaftNetworkFactory};
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, InstallSnapshotRequest, InstallSnapshotResponse,
    VoteRequest, VoteResponse,
};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::log::{decode, encode};
use crate::types::{Member, TypeConfig};

type NodeId = u64;

/// The kinds of message members send each other.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rpc {
    Append,
    Vote,
    Snapshot,
}

impl Rpc {
    pub fn name(self) -> &'static str {
        match self {
            Rpc::Append => "append",
            Rpc::Vote => "vote",
            Rpc::Snapshot => "snapshot",
        }
    }

    pub fn parse(name: &str) -> Option<Rpc> {
        [Rpc::Append, Rpc::Vote, Rpc::Snapshot]
            .into_iter()
            .find(|r| r.name() == name)
    }
}

/// How the node carries a message to the member at `host` and brings back
/// its answer.
pub trait Transport: Send + Sync + 'static {
    fn call(
        &self,
        host: &str,
        rpc: Rpc,
        body: Vec<u8>,
        timeout: Duration,
    ) -> BoxFuture<'static, std::io::Result<Vec<u8>>>;
}

/// Opens a [`Channel`] to each member the library talks to.
#[derive(Clone)]
pub struct Network {
    pub(crate) transport: Arc<dyn Transport>,
}

impl RaftNetworkFactory<TypeConfig> for Network {
    type Network = Channel;

    async fn new_client(&mut self, target: NodeId, node: &Member) -> Channel {
        Channel {
            transport: Arc::clone(&self.transport),
            target,
            host: node.host.clone(),
        }
    }
}

/// Messages to one member.
pub struct Channel {
    transport: Arc<dyn Transport>,
    target: NodeId,
    host: String,
}

impl Channel {
    async fn send<Req, Resp, E>(
        &self,
        rpc: Rpc,
        req: &Req,
        option: &RPCOption,
    ) -> Result<Resp, RPCError<NodeId, Member, E>>
    where
        Req: Serialize,
        Resp: DeserializeOwned,
        E: std::error::Error + DeserializeOwned,
    {
        let body = encode(req).map_err(|e| RPCError::Network(NetworkError::new(&e)))?;
        self.call(rpc, body, option).await
    }

    async fn call<Resp, E>(
        &self,
        rpc: Rpc,
        body: Vec<u8>,
        option: &RPCOption,
    ) -> Result<Resp, RPCError<NodeId, Member, E>>
    where
        Resp: DeserializeOwned,
        E: std::error::Error + DeserializeOwned,
    {
        let answer = self
            .transport
            .call(&self.host, rpc, body, option.hard_ttl())
            .await
            .map_err(|e| RPCError::Unreachable(Unreachable::new(&e)))?;
        let answer: Result<Resp, E> =
            decode(&answer).map_err(|e| RPCError::Network(NetworkError::new(&e)))?;
        answer.map_err(|e| RPCError::RemoteError(RemoteError::new(self.target, e)))
    }
}

impl RaftNetwork<TypeConfig> for Channel {
    async fn append_entries(
        &mut self,
        rpc: AppendEntriesRequest<TypeConfig>,
        option: RPCOption,
    ) -> Result<AppendEntriesResponse<NodeId>, RPCError<NodeId, Member, RaftError<NodeId>>> {
        self.send(Rpc::Append, &rpc, &option).await
    }

    async fn install_snapshot(
        &mut self,
        rpc: InstallSnapshotRequest<TypeConfig>,
        option: RPCOption,
    ) -> Result<
        InstallSnapshotResponse<NodeId>,
        RPCError<NodeId, Member, RaftError<NodeId, InstallSnapshotError>>,
    > {
        let body = chunk::encode(rpc).map_err(|e| RPCError::Network(NetworkError::new(&e)))?;
        self.call(Rpc::Snapshot, body, &option).await
    }

    async fn vote(
        &mut self,
        rpc: VoteRequest<NodeId>,
        option: RPCOption,
    ) -> Result<VoteResponse<NodeId>, RPCError<NodeId, Member, RaftError<NodeId>>> {
        self.send(Rpc::Vote, &rpc, &option).await
    }
}

/// Answers a message another member sent this one (`raft` is this
/// member's), as the bytes to send back. A vote asked by a member that a
/// configuration newer than its whole log removed is refused with
/// [`std::io::ErrorKind::PermissionDenied`]: the library would refuse it
/// too (this member's log is ahead), but without telling it why.
pub async fn serve(raft: &crate::types::Raft, rpc: Rpc, body: &[u8]) -> std::io::Result<Vec<u8>> {
    let bad = |e: openraft::StorageError<NodeId>| std::io::Error::other(e.to_string());
    let answer = match rpc {
        Rpc::Append => encode(&raft.append_entries(decode(body).map_err(bad)?).await),
        Rpc::Vote => {
            let request: VoteRequest<NodeId> = decode(body).map_err(bad)?;
            if removed_by(raft, &request) {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::PermissionDenied,
                    "not a member of the set's configuration",
                ));
            }
            encode(&raft.vote(request).await)
        }
        Rpc::Snapshot => encode(
            &raft
                .install_snapshot(chunk::decode(body).map_err(bad)?)
                .await,
        ),
    };
    answer.map_err(bad)
}

/// Whether `request` comes from a member this member's configuration does
/// not name, a configuration made after the candidate's last entry.
fn removed_by(raft: &crate::types::Raft, request: &VoteRequest<NodeId>) -> bool {
    let Some(candidate) = request.vote.leader_id().voted_for() else {
        return false;
    };
    let metrics = raft.metrics();
    let seen = metrics.borrow();
    let config = &seen.membership_config;
    let named = config.membership().get_node(&candidate).is_some();
    let made_at = config.log_id().map_or(0, |l| l.index);
    let candidate_last = request.last_log_id.map_or(0, |l| l.index);
    !named && made_at > candidate_last
}

/// A chunk of a snapshot on the wire: the length of the CBOR of the
/// request without its data (4 bytes, big-endian), that CBOR, the data.
mod chunk {
    use openraft::StorageError;
    use openraft::raft::InstallSnapshotRequest;

    use crate::log::{decode as cbor_decode, encode as cbor_encode, read_err};
    use crate::types::TypeConfig;

    type Request = InstallSnapshotRequest<TypeConfig>;
    type Result<T> = std::result::Result<T, StorageError<u64>>;

    pub(super) fn encode(mut request: Request) -> Result<Vec<u8>> {
        let data = std::mem::take(&mut request.data);
        let head = cbor_encode(&request)?;
        let mut body = Vec::with_capacity(4 + head.len() + data.len());
        body.extend_from_slice(&(head.len() as u32).to_be_bytes());
        body.extend_from_slice(&head);
        body.extend_from_slice(&data);
        Ok(body)
    }

    pub(super) fn decode(body: &[u8]) -> Result<Request> {
        let short = || read_err(ebb_storage::Error::engine("a snapshot chunk cut short"));
        let (len, rest) = body.split_first_chunk::<4>().ok_or_else(short)?;
        let len = u32::from_be_bytes(*len) as usize;
        if rest.len() < len {
            return Err(short());
        }
        let (head, data) = rest.split_at(len);
        let mut request: Request = cbor_decode(head)?;
        request.data = data.to_vec();
        Ok(request)
    }
}

#[cfg(test)]
mod tests {
    use openraft::raft::InstallSnapshotRequest;
    use openraft::storage::SnapshotMeta;
    use openraft::{CommittedLeaderId, LogId, Vote};

    use super::chunk;

    #[test]
    fn a_snapshot_chunk_arrives_as_it_was_sent() {
        let request = InstallSnapshotRequest {
            vote: Vote::new_committed(3, 7),
            meta: SnapshotMeta {
                last_log_id: Some(LogId::new(CommittedLeaderId::new(3, 7), 500)),
                last_membership: Default::default(),
                snapshot_id: "3-500".into(),
            },
            offset: 6 << 20,
            data: (0..=255u8).cycle().take(3 << 20).collect(),
            done: true,
        };
        let body = chunk::encode(request.clone()).unwrap();
        assert_eq!(
            body.len() - (3 << 20),
            4 + u32::from_be_bytes(body[..4].try_into().unwrap()) as usize
        );
        assert_eq!(chunk::decode(&body).unwrap(), request);
        assert!(chunk::decode(&body[..3]).is_err());
        assert!(chunk::decode(&body[..10]).is_err());
    }
}
