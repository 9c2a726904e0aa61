//! `topologyVersion` and the awaitable `hello`: drivers that see a
//! `topologyVersion` keep one `hello` waiting on each member
//! (`maxAwaitTimeMS`), and the member answers it as soon as what `hello`
//! says changes (a new primary, a step-down, a new configuration, a
//! primary that lost its quorum), so they learn of a failover at once
//! instead of at their next poll.
//!
//! The counter grows whenever the fields `hello` shows change (`start`
//! follows them); the process id is new at every start of the node, so a
//! driver's version from before a restart is answered at once.

use std::time::Duration;

use bson::oid::ObjectId;
use bson::{Document, RawBsonRef, RawDocument, doc};
use tokio::sync::watch;

use crate::error::{CommandError, CommandResult, codes};

/// The longest an awaitable `hello` waits here, whatever its
/// `maxAwaitTimeMS` (drivers send their heartbeat interval, 10 s): a
/// driver's view of the member is never older than this. A driver may be
/// answered before its `maxAwaitTimeMS` with the same version; it then
/// sends the next `hello` at once.
const LONGEST_AWAIT: Duration = Duration::from_secs(1);

/// This member's topology version.
pub struct Topology {
    process: ObjectId,
    counter: watch::Sender<i64>,
}

impl Default for Topology {
    fn default() -> Self {
        Topology {
            process: ObjectId::new(),
            counter: watch::Sender::new(0),
        }
    }
}

/// An awaitable `hello`'s wait: the version the driver has, and for how
/// long it may wait for another.
pub struct Await {
    process: ObjectId,
    counter: i64,
    max: Duration,
}

impl Topology {
    /// `{processId, counter}`, as `hello` shows it.
    pub fn version(&self) -> Document {
        doc! { "processId": self.process, "counter": *self.counter.borrow() }
    }

    /// What `hello` says changed.
    pub fn changed(&self) {
        self.counter.send_modify(|c| *c += 1);
    }

    /// Waits until the version differs from the one the driver has, at
    /// most its `maxAwaitTimeMS`; at once for another process's version.
    pub async fn wait(&self, asked: &Await) -> CommandResult<()> {
        if asked.process != self.process {
            return Ok(());
        }
        let ours = *self.counter.borrow();
        if asked.counter > ours {
            return Err(CommandError::new(
                codes::TOPOLOGY_VERSION_FROM_THE_FUTURE,
                format!(
                    "Received a topology version with the same process ID and a higher counter \
                     than the server's: {} > {ours}",
                    asked.counter
                ),
            ));
        }
        if asked.counter < ours {
            return Ok(());
        }
        let mut rx = self.counter.subscribe();
        let changed = rx.wait_for(|c| *c != asked.counter);
        let _ = tokio::time::timeout(asked.max.min(LONGEST_AWAIT), changed).await;
        Ok(())
    }
}

/// Reads `hello`'s `topologyVersion` and `maxAwaitTimeMS`, which come
/// together or not at all.
pub fn awaited(body: &RawDocument) -> CommandResult<Option<Await>> {
    let version = body.get("topologyVersion")?;
    let max = body.get("maxAwaitTimeMS")?;
    let (version, max) = match (version, max) {
        (None, None) => return Ok(None),
        (Some(v), Some(m)) => (v, m),
        (Some(_), None) => {
            return Err(CommandError::new(
                codes::AWAITABLE_HELLO_PAIR,
                "A request with a 'topologyVersion' must include 'maxAwaitTimeMS'",
            ));
        }
        (None, Some(_)) => {
            return Err(CommandError::new(
                codes::AWAITABLE_HELLO_PAIR,
                "A request with 'maxAwaitTimeMS' must include a 'topologyVersion'",
            ));
        }
    };
    let RawBsonRef::Document(version) = version else {
        return Err(CommandError::new(
            codes::TYPE_MISMATCH,
            "BSON field 'hello.topologyVersion' is the wrong type, expected type 'object'",
        ));
    };
    let process = version.get_object_id("processId").map_err(|_| {
        CommandError::new(
            codes::MISSING_FIELD,
            "BSON field 'hello.topologyVersion.processId' is missing but a required field",
        )
    })?;
    let counter = match version.get("counter")? {
        Some(RawBsonRef::Int64(n)) => n,
        Some(RawBsonRef::Int32(n)) => i64::from(n),
        _ => {
            return Err(CommandError::new(
                codes::MISSING_FIELD,
                "BSON field 'hello.topologyVersion.counter' is missing but a required field",
            ));
        }
    };
    if counter < 0 {
        return Err(CommandError::new(
            codes::TOPOLOGY_VERSION_NEGATIVE,
            "topologyVersion must have a non-negative counter",
        ));
    }
    let ms = match max {
        RawBsonRef::Int32(n) => i64::from(n),
        RawBsonRef::Int64(n) => n,
        RawBsonRef::Double(d) if d.fract() == 0.0 => d as i64,
        _ => {
            return Err(CommandError::new(
                codes::TYPE_MISMATCH,
                "BSON field 'hello.maxAwaitTimeMS' is the wrong type, expected type 'long'",
            ));
        }
    };
    if ms < 0 {
        return Err(CommandError::bad_value(format!(
            "BSON field 'maxAwaitTimeMS' value must be >= 0, actual value '{ms}'"
        )));
    }
    Ok(Some(Await {
        process,
        counter,
        max: Duration::from_millis(ms as u64),
    }))
}
