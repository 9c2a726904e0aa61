//! The last hour of expiry, for the page's line charts: every
//! [`INTERVAL`], the documents the TTL monitor deleted per second and the
//! largest expiry lag of the chunks it ran in that interval (from
//! `TtlState`). Kept in memory from the listener's start; a restart
//! begins a new hour.

use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::watch;

use crate::context::NodeContext;

/// How often a point is taken.
pub const INTERVAL: Duration = Duration::from_secs(10);
/// An hour of points.
const POINTS: usize = 360;

/// One interval of expiry.
#[derive(Debug, Clone, Copy)]
pub struct Point {
    /// The interval's end, on the node's clock.
    pub at_millis: i64,
    pub deleted_per_sec: f64,
    /// None when no chunk ran in the interval.
    pub lag_millis: Option<u64>,
}

/// Where the interval being measured began.
#[derive(Debug, Clone, Copy)]
struct Mark {
    at: Instant,
    deleted: u64,
    chunks: u64,
}

#[derive(Debug)]
struct Inner {
    points: VecDeque<Point>,
    mark: Mark,
}

/// The hour of points.
#[derive(Debug)]
pub struct History {
    inner: Mutex<Inner>,
}

impl History {
    pub fn new(ctx: &NodeContext) -> History {
        History {
            inner: Mutex::new(Inner {
                points: VecDeque::with_capacity(POINTS),
                mark: mark(ctx),
            }),
        }
    }

    /// The points of the last hour, oldest first, and the interval running
    /// now as its last point (so a page shows what happened just before).
    pub fn points(&self, ctx: &NodeContext) -> Vec<Point> {
        let inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let mut out: Vec<Point> = inner.points.iter().copied().collect();
        let now = mark(ctx);
        if now.at.duration_since(inner.mark.at) >= Duration::from_millis(500) {
            out.push(point(
                ctx,
                inner.mark,
                now,
                ctx.shared.ttl.lag_peak_millis(),
            ));
        }
        out
    }

    /// Closes the interval running now.
    fn take(&self, ctx: &NodeContext) {
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let now = mark(ctx);
        let p = point(ctx, inner.mark, now, ctx.shared.ttl.take_lag_peak());
        if inner.points.len() == POINTS {
            inner.points.pop_front();
        }
        inner.points.push_back(p);
        inner.mark = now;
    }
}

fn mark(ctx: &NodeContext) -> Mark {
    let ttl = &ctx.shared.ttl;
    Mark {
        at: Instant::now(),
        deleted: ttl.deleted_documents.load(Ordering::Relaxed),
        chunks: ttl.chunks.load(Ordering::Relaxed),
    }
}

fn point(ctx: &NodeContext, from: Mark, to: Mark, lag_peak: u64) -> Point {
    let secs = to.at.duration_since(from.at).as_secs_f64().max(0.001);
    Point {
        at_millis: ctx.shared.clock.now_millis(),
        deleted_per_sec: to.deleted.saturating_sub(from.deleted) as f64 / secs,
        lag_millis: (to.chunks > from.chunks).then_some(lag_peak),
    }
}

/// Takes a point every [`INTERVAL`] until `stop` turns true.
pub async fn sample(ctx: Arc<NodeContext>, history: Arc<History>, mut stop: watch::Receiver<bool>) {
    let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + INTERVAL, INTERVAL);
    loop {
        tokio::select! {
            _ = stop.changed() => return,
            _ = tick.tick() => history.take(&ctx),
        }
    }
}
