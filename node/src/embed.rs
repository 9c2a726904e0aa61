//! Running a node on a thread of its own: for tests, the benchmark
//! harness and embedding. The thread owns an actix system over a
//! multi-threaded tokio runtime, exactly as `ebbd` runs.

use std::net::SocketAddr;
use std::sync::Arc;

use tokio::sync::oneshot;

use crate::context::NodeContext;
use crate::server::{Node, NodeOptions, StartError};

/// A node running on its own thread; shuts down when dropped.
pub struct NodeThread {
    addr: SocketAddr,
    http_addr: Option<SocketAddr>,
    ctx: Arc<NodeContext>,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl NodeThread {
    pub fn start(opts: NodeOptions) -> Result<NodeThread, StartError> {
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let (stop_tx, stop_rx) = oneshot::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("ebb-node".into())
            .spawn(move || {
                let system = actix_rt::System::with_tokio_rt(|| {
                    tokio::runtime::Builder::new_multi_thread()
                        .worker_threads(2)
                        .enable_all()
                        .build()
                        .expect("tokio runtime")
                });
                system.block_on(async move {
                    match Node::start(opts).await {
                        Ok(node) => {
                            let _ = ready_tx.send(Ok((
                                node.local_addr(),
                                node.http_addr(),
                                node.context().clone(),
                            )));
                            let requested = node.context().shutdown_requested.notified();
                            tokio::select! {
                                _ = stop_rx => {}
                                () = requested => {}
                            }
                            // A failed flush is logged by shutdown; a test node has
                            // no exit code to report it with.
                            let _ = node.shutdown().await;
                        }
                        Err(e) => {
                            let _ = ready_tx.send(Err(e));
                        }
                    }
                });
            })
            .expect("spawn node thread");
        let (addr, http_addr, ctx) = ready_rx.recv().expect("node thread reports readiness")?;
        Ok(NodeThread {
            addr,
            http_addr,
            ctx,
            stop: Some(stop_tx),
            thread: Some(thread),
        })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The operations endpoint's address, when `net.http` enables it.
    pub fn http_addr(&self) -> Option<SocketAddr> {
        self.http_addr
    }

    /// `mongodb://127.0.0.1:port/` for drivers.
    pub fn uri(&self) -> String {
        format!("mongodb://{}/?directConnection=true", self.addr)
    }

    pub fn context(&self) -> &Arc<NodeContext> {
        &self.ctx
    }

    /// Shuts the node down in order and waits for it.
    pub fn shutdown(mut self) {
        self.stop_and_join();
    }

    fn stop_and_join(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for NodeThread {
    fn drop(&mut self) {
        self.stop_and_join();
    }
}
