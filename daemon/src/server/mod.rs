//! The daemon's local-socket server: accepts clients, speaks `redctx-proto`, and hands
//! each request to a [`Backend`].
//!
//! Invariant: this module knows nothing about redaction, files or MCP. It owns the
//! socket (location, permissions, stale-file recovery, single-instance guarantee), the
//! per-connection protocol (handshake, pipelined requests, cancellation) and
//! scheduling: every request runs on its own task, backend work runs on the blocking
//! pool, so a slow call never delays another one, on the same connection or elsewhere.
//!
//! Entry points: [`bind`] claims the socket (refusing to take over a live daemon),
//! [`serve`] answers clients until it is told to stop, [`shutdown_signal`] resolves on
//! SIGTERM/SIGINT. `fake::FakeBackend` is a test double, compiled only with the
//! `test-backend` feature.

mod conn;
#[cfg(feature = "test-backend")]
pub mod fake;
mod socket;

pub use crate::cancel::Cancel;
pub use socket::{BindError, Bound, bind};

use interprocess::local_socket::tokio::prelude::*;
use redctx_proto::{
    BenchmarkParams, BenchmarkReport, Caller, ErrorKind, ErrorReply, ResourcePage, ResourceText,
    RootInfo, RootSpec, ToolResult, WriteOptions,
};
use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::{Duration, Instant};
use tokio::sync::Notify;

/// What the daemon does with requests; the server only schedules and transports.
///
/// Methods are synchronous and may take long: the server calls them on tokio's blocking
/// pool, one call per request, concurrently. Long loops should poll `cancel` and give up
/// early once it is set (the client went away or cancelled); whatever they return then is
/// discarded. Every `message` a method returns may reach an MCP client, so it must be a
/// fixed, input-free text (spec 12.2).
pub trait Backend: Send + Sync + 'static {
    /// Run an already-validated tool call (`arguments_json` is a JSON object) for
    /// `caller` (which decides how path arguments are read).
    fn call_tool(
        &self,
        root: &RootSpec,
        tool: &str,
        arguments_json: &str,
        caller: Caller,
        cancel: &Cancel,
    ) -> ToolResult;

    /// The client rejected the arguments of `tool` with `message`. Run the call's policy
    /// check as a real call would (a blocked policy answers with its own error), else
    /// answer `message` as an error result with this root's empty receipt.
    fn reject_call(&self, root: &RootSpec, tool: &str, message: &str) -> ToolResult;

    /// One page of readable files as resources; `cursor` is the previous page's
    /// `next_cursor` (its format is the backend's choice).
    fn list_resources(
        &self,
        root: &RootSpec,
        cursor: Option<&str>,
        cancel: &Cancel,
    ) -> Result<ResourcePage, ErrorReply>;

    /// The redacted content of one resource URI, exactly as the client sent it.
    fn read_resource(
        &self,
        root: &RootSpec,
        uri: &str,
        cancel: &Cancel,
    ) -> Result<ResourceText, ErrorReply>;

    /// `redctx_submit_doc` from a session that may write under `writes` (arguments
    /// validated as for `call_tool`, caller an agent). A backend that cannot write
    /// answers as if writes were disabled.
    fn submit_doc(
        &self,
        root: &RootSpec,
        arguments_json: &str,
        _writes: &WriteOptions,
        cancel: &Cancel,
    ) -> ToolResult {
        self.call_tool(
            root,
            redctx_proto::tools::SUBMIT_DOC,
            arguments_json,
            Caller::Agent,
            cancel,
        )
    }

    /// `texts` rehydrated from `root` (`redctx rehydrate`, the operator's). Errors are
    /// fixed texts.
    fn rehydrate(
        &self,
        _root: &RootSpec,
        _texts: &[String],
        _cancel: &Cancel,
    ) -> Result<Vec<String>, ErrorReply> {
        Err(ErrorReply::new(
            ErrorKind::Unsupported,
            "This daemon cannot rehydrate.",
        ))
    }

    /// `redctx discover` end to end (the operator's command; a backend refuses
    /// `Caller::Agent`). Errors are fixed texts or the reference's sentences.
    fn discover(
        &self,
        _root: &RootSpec,
        _caller: redctx_proto::Caller,
        _job: u64,
        _params: &redctx_proto::DiscoverParams,
        _cancel: &Cancel,
    ) -> Result<redctx_proto::Discovered, ErrorReply> {
        Err(ErrorReply::new(
            ErrorKind::Unsupported,
            "This daemon cannot run discovery.",
        ))
    }

    /// `redctx discover-update` end to end, as [`Backend::discover`].
    fn discover_update(
        &self,
        _root: &RootSpec,
        _caller: redctx_proto::Caller,
        _job: u64,
        _params: &redctx_proto::DiscoverUpdateParams,
        _cancel: &Cancel,
    ) -> Result<redctx_proto::Discovered, ErrorReply> {
        Err(ErrorReply::new(
            ErrorKind::Unsupported,
            "This daemon cannot run discovery.",
        ))
    }

    /// Documents done and in all of the running discovery `job` (zeros: none). Cheap;
    /// answered on the connection's task, not the blocking pool.
    fn discover_progress(&self, _job: u64) -> (u64, u64) {
        (0, 0)
    }

    /// Roots served right now.
    fn roots(&self) -> Vec<RootInfo>;

    /// The entries of [`Backend::roots`] served at `root`, returned the moment all of them
    /// are `ready` or one is `blocked` (at once if so already, or if none is served), else
    /// once `timeout` has passed or `cancel` is set, with the progress then. Waits on a
    /// notification, never by polling, so `status --wait` ends when the root is ready.
    /// The default answers at once: right for a backend whose roots are always ready.
    fn wait_root(&self, root: &Path, _timeout: Duration, _cancel: &Cancel) -> Vec<RootInfo> {
        let mut roots = self.roots();
        roots.retain(|r| r.path == root);
        roots
    }

    /// Stop serving `root` and drop its state; `true` if it was served.
    fn forget_root(&self, root: &Path) -> bool;

    /// Time the backend's own cold full-tree work on `root` (`redctx benchmark`). Errors
    /// are the fixed budget and policy messages a user may see. A backend that cannot
    /// measure anything says so.
    fn benchmark(
        &self,
        _root: &RootSpec,
        _params: &BenchmarkParams,
        _cancel: &Cancel,
    ) -> Result<BenchmarkReport, ErrorReply> {
        Err(ErrorReply::new(
            ErrorKind::Unsupported,
            "This daemon cannot run benchmarks.",
        ))
    }
}

/// State shared by the accept loop and every connection.
pub(crate) struct Shared {
    pub backend: Arc<dyn Backend>,
    pub started: Instant,
    pub connections: AtomicU64,
    pub requests_served: AtomicU64,
    pub shutdown: Notify,
    pub socket: PathBuf,
    /// Set when the server stops: the parent of every request's [`Cancel`], so backend
    /// work in flight gives up within one unit of work and shutdown never waits for it.
    pub stopping: Cancel,
}

/// Answer clients on `bound` until `stop` resolves or a client sends `Shutdown`. On
/// return the socket file has been removed (the listener is dropped) and in-flight
/// requests of open connections are cancelled.
pub async fn serve(
    bound: Bound,
    backend: Arc<dyn Backend>,
    stop: impl Future<Output = ()> + Send,
) -> std::io::Result<()> {
    let Bound {
        listener,
        lock,
        path,
    } = bound;
    let shared = Arc::new(Shared {
        backend,
        started: Instant::now(),
        connections: AtomicU64::new(0),
        requests_served: AtomicU64::new(0),
        shutdown: Notify::new(),
        socket: path,
        stopping: Cancel::new(),
    });
    tracing::info!(socket = %shared.socket.display(), pid = std::process::id(), "redctxd listening");
    let mut conns = tokio::task::JoinSet::new();
    tokio::pin!(stop);
    loop {
        tokio::select! {
            _ = &mut stop => { tracing::info!("stop signal received"); break; }
            _ = shared.shutdown.notified() => { tracing::info!("shutdown requested by a client"); break; }
            accepted = listener.accept() => match accepted {
                Ok(stream) => { conns.spawn(conn::handle(stream, shared.clone())); }
                Err(e) => {
                    tracing::warn!(error = %e, "accept failed");
                    // Out of descriptors or similar: back off instead of spinning.
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                }
            },
            Some(_) = conns.join_next(), if !conns.is_empty() => {}
        }
    }
    drop(listener); // removes the socket file
    shared.stopping.cancel(); // backend work in flight stops at its next check
    conns.shutdown().await; // drops the connections and their request tasks
    drop(lock);
    tracing::info!("redctxd stopped");
    Ok(())
}

/// Resolves when the process receives SIGTERM or SIGINT, so [`serve`] can remove the
/// socket file before exit instead of leaving a stale one behind.
pub async fn shutdown_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = match signal(SignalKind::terminate()) {
        Ok(s) => s,
        Err(e) => {
            tracing::error!(error = %e, "cannot install SIGTERM handler");
            std::future::pending::<()>().await;
            return;
        }
    };
    let mut int = match signal(SignalKind::interrupt()) {
        Ok(s) => s,
        Err(e) => {
            tracing::error!(error = %e, "cannot install SIGINT handler");
            std::future::pending::<()>().await;
            return;
        }
    };
    tokio::select! {
        _ = term.recv() => {}
        _ = int.recv() => {}
    }
}
