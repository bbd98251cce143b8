//! One client connection: handshake, then pipelined requests, each on its own task.
//!
//! A reader loop decodes frames and spawns one task per request; a writer task owns the
//! write half and sends answers in completion order. When the client cancels a request
//! or disconnects, the request's task is aborted and its [`Cancel`] flag set so the
//! backend can stop early; answers for cancelled requests are never sent.

use super::{Cancel, Shared};
use interprocess::local_socket::tokio::{Stream, prelude::*};
use redctx_proto::{
    CRATE_VERSION, ClientMessage, ErrorKind, ErrorReply, FrameError, Hello, HelloReply,
    PROTOCOL_VERSION, Request, Response, ServerMessage, StatusInfo, ToolResult, read_frame,
    write_frame,
};
use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::task::AbortHandle;

/// Time a client has to send its `Hello` before the connection is dropped.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// An answer on its way to the writer; `then_shutdown` stops the daemon once written.
struct Outgoing {
    msg: ServerMessage,
    then_shutdown: bool,
}

type InFlight = Arc<Mutex<HashMap<u64, (AbortHandle, Cancel)>>>;

pub(super) async fn handle(stream: Stream, shared: Arc<Shared>) {
    if !peer_is_us(&stream) {
        return;
    }
    shared.connections.fetch_add(1, Ordering::Relaxed);
    let _count = ConnCount(&shared);
    let (mut rd, mut wr) = tokio::io::split(stream);

    let hello = match tokio::time::timeout(HANDSHAKE_TIMEOUT, read_frame::<_, Hello>(&mut rd)).await
    {
        Ok(Ok(Some(h))) => h,
        Ok(Ok(None)) => {
            tracing::debug!("client closed before the handshake (liveness probe)");
            return;
        }
        Ok(Err(e)) => {
            tracing::debug!(error = %e, "bad handshake");
            return;
        }
        Err(_) => {
            tracing::debug!("handshake timed out");
            return;
        }
    };
    let pid = std::process::id();
    if hello.protocol_version != PROTOCOL_VERSION || hello.client_version != CRATE_VERSION {
        tracing::warn!(
            client_version = %hello.client_version,
            client_protocol = hello.protocol_version,
            "refusing a client of another version"
        );
        let reply = HelloReply::Mismatch {
            daemon_version: CRATE_VERSION.to_string(),
            protocol_version: PROTOCOL_VERSION,
            pid,
        };
        let _ = write_frame(&mut wr, &reply).await;
        return;
    }
    let ok = HelloReply::Ok {
        daemon_version: CRATE_VERSION.to_string(),
        pid,
    };
    if write_frame(&mut wr, &ok).await.is_err() {
        return;
    }

    let (tx, mut rx) = mpsc::unbounded_channel::<Outgoing>();
    let writer_shared = shared.clone();
    let writer = tokio::spawn(async move {
        while let Some(out) = rx.recv().await {
            let written = match write_frame(&mut wr, &out.msg).await {
                // Nothing was written: the request gets an error in its place, and
                // the connection's later answers still go out.
                Err(FrameError::TooLarge(bytes)) => {
                    tracing::warn!(bytes, "an answer exceeded the frame limit");
                    write_frame(&mut wr, &too_large(out.msg)).await
                }
                other => other,
            };
            if let Err(e) = written {
                tracing::debug!(error = %e, "client went away while answering");
                break;
            }
            if out.then_shutdown {
                writer_shared.shutdown.notify_one();
            }
        }
    });

    let in_flight: InFlight = Arc::default();
    loop {
        match read_frame::<_, ClientMessage>(&mut rd).await {
            Ok(Some(ClientMessage::Request { id, request })) => {
                let cancel = shared.stopping.child();
                // Register before the task can finish and unregister itself.
                let mut map = in_flight.lock().unwrap_or_else(|p| p.into_inner());
                let task = tokio::spawn(run(
                    id,
                    request,
                    cancel.clone(),
                    shared.clone(),
                    tx.clone(),
                    in_flight.clone(),
                ));
                if let Some((old, old_cancel)) = map.insert(id, (task.abort_handle(), cancel)) {
                    // A reused id replaces the older request, which nobody can tell apart.
                    old_cancel.cancel();
                    old.abort();
                }
            }
            Ok(Some(ClientMessage::Cancel { id })) => {
                let entry = in_flight
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .remove(&id);
                if let Some((task, cancel)) = entry {
                    cancel.cancel();
                    task.abort();
                    tracing::debug!(id, "request cancelled by client");
                }
            }
            Ok(None) => break,
            Err(e) => {
                tracing::debug!(error = %e, "dropping connection after a bad frame");
                break;
            }
        }
    }
    // The client is gone: nobody will read the answers of its unfinished requests.
    let pending: Vec<_> = in_flight
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .drain()
        .collect();
    for (_, (task, cancel)) in pending {
        cancel.cancel();
        task.abort();
    }
    drop(tx);
    let _ = writer.await;
}

/// Decrements the open-connection count when the connection ends, however it ends.
struct ConnCount<'a>(&'a Shared);

impl Drop for ConnCount<'_> {
    fn drop(&mut self) {
        self.0.connections.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Only the daemon's own user may talk to it. The socket is 0600 in a 0700 directory
/// already; this check also covers a user-chosen socket location.
fn peer_is_us(stream: &Stream) -> bool {
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    match stream.peer_creds() {
        Ok(creds) if creds.euid() == Some(me) => true,
        Ok(creds) => {
            tracing::warn!(peer_uid = ?creds.euid(), "refusing a connection from another user");
            false
        }
        Err(e) => {
            tracing::warn!(error = %e, "cannot read peer credentials; refusing connection");
            false
        }
    }
}

async fn run(
    id: u64,
    request: Request,
    cancel: Cancel,
    shared: Arc<Shared>,
    tx: mpsc::UnboundedSender<Outgoing>,
    in_flight: InFlight,
) {
    let started = std::time::Instant::now();
    let kind = request_kind(&request);
    let then_shutdown = matches!(request, Request::Shutdown);
    let response = answer(request, &cancel, &shared).await;
    // Unregister; if the entry is gone the request was cancelled meanwhile.
    let still_wanted = in_flight
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .remove(&id)
        .is_some();
    if !still_wanted || cancel.is_cancelled() {
        return;
    }
    shared.requests_served.fetch_add(1, Ordering::Relaxed);
    tracing::debug!(
        id,
        kind,
        elapsed_us = started.elapsed().as_micros() as u64,
        "answered"
    );
    let _ = tx.send(Outgoing {
        msg: ServerMessage { id, response },
        then_shutdown,
    });
}

/// Answer in place of `msg`, which is too large for one frame: a tool call fails the
/// way its own errors do, any other request with a resource error.
fn too_large(msg: ServerMessage) -> ServerMessage {
    const TOO_LARGE: &str = "Answer too large to send; narrow the request.";
    let response = match msg.response {
        Response::ToolResult(result) => Response::ToolResult(ToolResult {
            text: TOO_LARGE.into(),
            is_error: true,
            receipt_json: result.receipt_json,
        }),
        _ => Response::Error(ErrorReply::new(ErrorKind::Resource, TOO_LARGE)),
    };
    ServerMessage {
        id: msg.id,
        response,
    }
}

fn request_kind(r: &Request) -> &'static str {
    match r {
        Request::CallTool { .. } => "call_tool",
        Request::RejectCall { .. } => "reject_call",
        Request::ListResources { .. } => "list_resources",
        Request::ReadResource { .. } => "read_resource",
        Request::Status => "status",
        Request::Roots => "roots",
        Request::WaitRoot { .. } => "wait_root",
        Request::ForgetRoot { .. } => "forget_root",
        Request::Shutdown => "shutdown",
        Request::Ping => "ping",
        Request::Benchmark { .. } => "benchmark",
        Request::SubmitDoc { .. } => "submit_doc",
        Request::Rehydrate { .. } => "rehydrate",
        Request::Discover { .. } => "discover",
        Request::DiscoverUpdate { .. } => "discover_update",
        Request::DiscoverProgress { .. } => "discover_progress",
    }
}

async fn answer(request: Request, cancel: &Cancel, shared: &Arc<Shared>) -> Response {
    match request {
        Request::Ping => Response::Pong,
        Request::Shutdown => Response::Ok,
        Request::Status => {
            let roots = blocking(shared, cancel, |b, _| b.roots()).await;
            match roots {
                Ok(roots) => Response::Status(StatusInfo {
                    daemon_version: CRATE_VERSION.to_string(),
                    protocol_version: PROTOCOL_VERSION,
                    pid: std::process::id(),
                    uptime_ms: shared.started.elapsed().as_millis() as u64,
                    connections: shared.connections.load(Ordering::Relaxed),
                    requests_served: shared.requests_served.load(Ordering::Relaxed),
                    roots,
                }),
                Err(e) => Response::Error(e),
            }
        }
        Request::Roots => {
            flatten(blocking(shared, cancel, |b, _| Ok(Response::Roots(b.roots()))).await)
        }
        Request::WaitRoot { root, timeout_ms } => flatten(
            blocking(shared, cancel, move |b, c| {
                let timeout = std::time::Duration::from_millis(timeout_ms.min(MAX_WAIT_MS));
                Ok(Response::Roots(b.wait_root(&root, timeout, c)))
            })
            .await,
        ),
        Request::ForgetRoot { root } => flatten(
            blocking(shared, cancel, move |b, _| {
                Ok(Response::Forgotten(b.forget_root(&root)))
            })
            .await,
        ),
        Request::CallTool {
            root,
            tool,
            arguments_json,
            caller,
        } => flatten(
            blocking(shared, cancel, move |b, c| {
                Ok(Response::ToolResult(b.call_tool(
                    &root,
                    &tool,
                    &arguments_json,
                    caller,
                    c,
                )))
            })
            .await,
        ),
        Request::RejectCall {
            root,
            tool,
            message,
        } => flatten(
            blocking(shared, cancel, move |b, _| {
                Ok(Response::ToolResult(b.reject_call(&root, &tool, &message)))
            })
            .await,
        ),
        Request::ListResources { root, cursor } => flatten(
            blocking(shared, cancel, move |b, c| {
                b.list_resources(&root, cursor.as_deref(), c)
                    .map(Response::Resources)
            })
            .await,
        ),
        Request::ReadResource { root, uri } => flatten(
            blocking(shared, cancel, move |b, c| {
                b.read_resource(&root, &uri, c).map(Response::ResourceText)
            })
            .await,
        ),
        Request::Benchmark { root, params } => flatten(
            blocking(shared, cancel, move |b, c| {
                b.benchmark(&root, &params, c).map(Response::Benchmark)
            })
            .await,
        ),
        Request::SubmitDoc {
            root,
            arguments_json,
            writes,
        } => flatten(
            blocking(shared, cancel, move |b, c| {
                Ok(Response::ToolResult(b.submit_doc(
                    &root,
                    &arguments_json,
                    &writes,
                    c,
                )))
            })
            .await,
        ),
        Request::Rehydrate { root, texts } => flatten(
            blocking(shared, cancel, move |b, c| {
                b.rehydrate(&root, &texts, c).map(Response::Rehydrated)
            })
            .await,
        ),
        Request::Discover {
            root,
            caller,
            job,
            params,
        } => flatten(
            blocking(shared, cancel, move |b, c| {
                b.discover(&root, caller, job, &params, c)
                    .map(Response::Discovered)
            })
            .await,
        ),
        Request::DiscoverUpdate {
            root,
            caller,
            job,
            params,
        } => flatten(
            blocking(shared, cancel, move |b, c| {
                b.discover_update(&root, caller, job, &params, c)
                    .map(Response::Discovered)
            })
            .await,
        ),
        Request::DiscoverProgress { job } => {
            let (done, total) = shared.backend.discover_progress(job);
            Response::DiscoverProgress { done, total }
        }
    }
}

/// Longest `WaitRoot` wait: a waiting request holds a thread of the blocking pool, and a
/// client wanting longer asks again.
const MAX_WAIT_MS: u64 = 10_000;

fn flatten(r: Result<Result<Response, ErrorReply>, ErrorReply>) -> Response {
    match r {
        Ok(Ok(resp)) => resp,
        Ok(Err(e)) | Err(e) => Response::Error(e),
    }
}

/// Run backend work on the blocking pool. A panic becomes an input-free internal error.
async fn blocking<T, F>(shared: &Arc<Shared>, cancel: &Cancel, f: F) -> Result<T, ErrorReply>
where
    T: Send + 'static,
    F: FnOnce(&dyn super::Backend, &Cancel) -> T + Send + 'static,
{
    let backend = shared.backend.clone();
    let cancel = cancel.clone();
    tokio::task::spawn_blocking(move || f(&*backend, &cancel))
        .await
        .map_err(|e| {
            // Not `%e`: a join error's text carries the panic message, which can quote
            // file text.
            tracing::error!(panicked = e.is_panic(), "backend call failed");
            ErrorReply::new(ErrorKind::Internal, "Internal error.")
        })
}
