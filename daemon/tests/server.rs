//! The socket server as clients see it: permissions, single instance, stale-file recovery,
//! handshake, concurrency and cancellation. In-process servers use the fake backend; the
//! process tests run the real `redctxd --fake-backend`.

use interprocess::local_socket::tokio::{Stream, prelude::*};
use interprocess::local_socket::{GenericFilePath, ToFsName};
use redctx_daemon::server::{self, BindError, fake::FakeBackend};
use redctx_proto::{
    ClientMessage, Hello, HelloReply, Request, Response, RootSpec, ServerMessage, read_frame,
    write_frame,
};
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{ReadHalf, WriteHalf};

struct Client {
    rd: ReadHalf<Stream>,
    wr: WriteHalf<Stream>,
}

impl Client {
    async fn connect(sock: &Path) -> std::io::Result<(Client, HelloReply)> {
        let name = sock.to_path_buf().to_fs_name::<GenericFilePath>()?;
        let stream = Stream::connect(name).await?;
        let (mut rd, mut wr) = tokio::io::split(stream);
        write_frame(&mut wr, &Hello::current()).await.unwrap();
        let reply: HelloReply = read_frame(&mut rd).await.unwrap().unwrap();
        Ok((Client { rd, wr }, reply))
    }

    async fn send(&mut self, id: u64, request: Request) {
        write_frame(&mut self.wr, &ClientMessage::Request { id, request })
            .await
            .unwrap();
    }

    async fn recv(&mut self) -> ServerMessage {
        tokio::time::timeout(Duration::from_secs(20), read_frame(&mut self.rd))
            .await
            .expect("answer in time")
            .unwrap()
            .expect("connection open")
    }

    async fn call(&mut self, id: u64, request: Request) -> Response {
        self.send(id, request).await;
        let m = self.recv().await;
        assert_eq!(m.id, id);
        m.response
    }
}

fn root(name: &str) -> RootSpec {
    RootSpec {
        path: PathBuf::from("/fake").join(name),
        gitignore: true,
        ..Default::default()
    }
}

fn tool(root_name: &str, path: &str) -> Request {
    Request::CallTool {
        root: root(root_name),
        tool: "redctx_read".into(),
        arguments_json: format!(r#"{{"path":"{path}"}}"#),
        caller: redctx_proto::Caller::Agent,
    }
}

struct Running {
    sock: PathBuf,
    backend: Arc<FakeBackend>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<std::io::Result<()>>,
    _dir: tempfile::TempDir,
}

async fn start() -> Running {
    let dir = tempfile::tempdir().unwrap();
    let sock = dir.path().join("run").join("redctxd.sock");
    let bound = server::bind(&sock, true).await.unwrap();
    let backend = Arc::new(FakeBackend::new());
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(server::serve(bound, backend.clone(), async {
        let _ = rx.await;
    }));
    Running {
        sock,
        backend,
        stop: Some(tx),
        task,
        _dir: dir,
    }
}

async fn wait_until(mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !cond() {
        assert!(Instant::now() < deadline, "condition not reached in time");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn socket_is_0600_in_a_0700_directory() {
    let r = start().await;
    let md = std::fs::metadata(&r.sock).unwrap();
    assert!(md.file_type().is_socket());
    assert_eq!(md.permissions().mode() & 0o777, 0o600);
    let dir_md = std::fs::metadata(r.sock.parent().unwrap()).unwrap();
    assert_eq!(dir_md.permissions().mode() & 0o777, 0o700);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_loose_dedicated_directory_is_tightened_to_0700() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run");
    std::fs::create_dir(&run).unwrap();
    std::fs::set_permissions(&run, std::fs::Permissions::from_mode(0o755)).unwrap();
    let _bound = server::bind(&run.join("d.sock"), true).await.unwrap();
    assert_eq!(
        std::fs::metadata(&run).unwrap().permissions().mode() & 0o777,
        0o700
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn handshake_names_the_daemon_and_ping_answers() {
    let r = start().await;
    let (mut c, reply) = Client::connect(&r.sock).await.unwrap();
    assert_eq!(
        reply,
        HelloReply::Ok {
            daemon_version: env!("CARGO_PKG_VERSION").into(),
            pid: std::process::id()
        }
    );
    assert_eq!(c.call(1, Request::Ping).await, Response::Pong);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_of_another_version_is_told_so_and_disconnected() {
    let r = start().await;
    let name = r.sock.clone().to_fs_name::<GenericFilePath>().unwrap();
    let stream = Stream::connect(name).await.unwrap();
    let (mut rd, mut wr) = tokio::io::split(stream);
    let old = Hello {
        protocol_version: 0,
        client_version: "0.0.1".into(),
    };
    write_frame(&mut wr, &old).await.unwrap();
    let reply: HelloReply = read_frame(&mut rd).await.unwrap().unwrap();
    assert!(
        matches!(
            reply,
            HelloReply::Mismatch {
                protocol_version: redctx_proto::PROTOCOL_VERSION,
                ..
            }
        ),
        "{reply:?}"
    );
    assert!(
        read_frame::<_, ServerMessage>(&mut rd)
            .await
            .unwrap()
            .is_none()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_call_blocks_neither_its_connection_nor_others() {
    let r = start().await;
    let (mut a, _) = Client::connect(&r.sock).await.unwrap();
    let (mut b, _) = Client::connect(&r.sock).await.unwrap();
    a.send(1, tool("r1", "slow")).await;
    // Same connection: a later fast request is answered while the slow one runs.
    a.send(2, tool("r1", "fast")).await;
    let m = a.recv().await;
    assert_eq!(m.id, 2);
    // Another connection too.
    match b.call(1, tool("r2", "fast")).await {
        Response::ToolResult(t) => assert_eq!(
            t.text,
            "tool=redctx_read root=/fake/r2 args={\"path\":\"fast\"}\n"
        ),
        other => panic!("{other:?}"),
    }
    write_frame(&mut a.wr, &ClientMessage::Cancel { id: 1 })
        .await
        .unwrap();
    wait_until(|| r.backend.cancelled_count() == 1).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_too_large_for_a_frame_fails_alone_and_the_connection_goes_on() {
    let r = start().await;
    let (mut a, _) = Client::connect(&r.sock).await.unwrap();
    match a.call(1, tool("r1", "huge")).await {
        Response::ToolResult(t) => {
            assert!(t.is_error);
            assert_eq!(t.text, "Answer too large to send; narrow the request.");
        }
        other => panic!("{other:?}"),
    }
    // The same connection answers the next request.
    match a.call(2, tool("r1", "fast")).await {
        Response::ToolResult(t) => assert!(!t.is_error && t.text.starts_with("tool=")),
        other => panic!("{other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn disconnecting_cancels_the_clients_requests() {
    let r = start().await;
    let (mut a, _) = Client::connect(&r.sock).await.unwrap();
    a.send(1, tool("r1", "slow")).await;
    a.send(2, tool("r1", "slow")).await;
    // Make sure both are running before hanging up.
    assert_eq!(a.call(3, Request::Ping).await, Response::Pong);
    drop(a);
    wait_until(|| r.backend.cancelled_count() == 2).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_reports_version_pid_and_roots() {
    let r = start().await;
    let (mut c, _) = Client::connect(&r.sock).await.unwrap();
    c.call(1, tool("alpha", "x")).await;
    match c.call(2, Request::Status).await {
        Response::Status(s) => {
            assert_eq!(s.daemon_version, env!("CARGO_PKG_VERSION"));
            assert_eq!(s.pid, std::process::id());
            assert_eq!(s.connections, 1);
            assert_eq!(s.roots.len(), 1);
            assert_eq!(s.roots[0].path, PathBuf::from("/fake/alpha"));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        c.call(
            3,
            Request::ForgetRoot {
                root: "/fake/alpha".into()
            }
        )
        .await,
        Response::Forgotten(true)
    );
    assert_eq!(c.call(4, Request::Roots).await, Response::Roots(vec![]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_request_answers_then_removes_the_socket() {
    let mut r = start().await;
    let (mut c, _) = Client::connect(&r.sock).await.unwrap();
    assert_eq!(c.call(1, Request::Shutdown).await, Response::Ok);
    (&mut r.task).await.unwrap().unwrap();
    assert!(!r.sock.exists());
    r.stop.take();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_signal_removes_the_socket() {
    let mut r = start().await;
    r.stop.take().unwrap().send(()).unwrap();
    (&mut r.task).await.unwrap().unwrap();
    assert!(!r.sock.exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_server_refuses_to_take_over_a_live_one() {
    let r = start().await;
    let err = server::bind(&r.sock, true)
        .await
        .err()
        .expect("second bind must fail");
    match &err {
        BindError::AlreadyRunning { pid, .. } => assert_eq!(*pid, Some(std::process::id())),
        other => panic!("{other}"),
    }
    assert!(err.to_string().contains("redctx daemon stop"), "{err}");
    // The live server still answers.
    let (mut c, _) = Client::connect(&r.sock).await.unwrap();
    assert_eq!(c.call(1, Request::Ping).await, Response::Pong);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stale_socket_file_is_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let sock = dir.path().join("d.sock");
    // A std listener leaves its file behind when dropped, like a killed daemon.
    drop(std::os::unix::net::UnixListener::bind(&sock).unwrap());
    assert!(sock.exists());
    let bound = server::bind(&sock, false).await.unwrap();
    let backend = Arc::new(FakeBackend::new());
    tokio::spawn(server::serve(bound, backend, std::future::pending()));
    let (mut c, _) = Client::connect(&sock).await.unwrap();
    assert_eq!(c.call(1, Request::Ping).await, Response::Pong);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resources_page_and_errors_travel_back() {
    let r = start().await;
    let (mut c, _) = Client::connect(&r.sock).await.unwrap();
    let list = |cursor: Option<&str>| Request::ListResources {
        root: root("a"),
        cursor: cursor.map(String::from),
    };
    match c.call(1, list(Some("400"))).await {
        Response::Resources(p) => {
            assert_eq!(p.resources.len(), 50);
            assert_eq!(p.next_cursor, None);
        }
        other => panic!("{other:?}"),
    }
    match c.call(2, list(Some("x"))).await {
        Response::Error(e) => assert_eq!(e.message, "cursor must be a string offset."),
        other => panic!("{other:?}"),
    }
}

// ---- process level -------------------------------------------------------------------

fn redctxd(state: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_redctxd"));
    c.arg("--fake-backend")
        .env("REDCTX_STATE_DIR", state)
        .env_remove("REDCTX_SOCKET")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    c
}

async fn wait_for_ping(sock: &Path) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Ok((mut c, HelloReply::Ok { .. })) = Client::connect(sock).await {
            assert_eq!(c.call(1, Request::Ping).await, Response::Pong);
            return;
        }
        assert!(Instant::now() < deadline, "daemon did not come up");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn daemon_process_lifecycle_kill9_second_instance_and_sigterm() {
    let state = tempfile::tempdir().unwrap();
    let sock = state.path().join("run").join("redctxd.sock");

    let mut first = redctxd(state.path()).spawn().unwrap();
    wait_for_ping(&sock).await;
    assert!(state.path().join("logs").join("redctxd.log").exists());

    // A second daemon refuses to start while the first is alive, and says why.
    let second = redctxd(state.path()).output().unwrap();
    assert!(!second.status.success());
    let err = String::from_utf8_lossy(&second.stderr);
    assert!(err.contains("already running"), "{err}");
    assert!(err.contains(&format!("pid {}", first.id())), "{err}");
    wait_for_ping(&sock).await;

    // kill -9 leaves the socket file behind; the next daemon cleans it up.
    first.kill().unwrap();
    first.wait().unwrap();
    assert!(sock.exists(), "SIGKILL leaves a stale socket file");
    let mut third = redctxd(state.path()).spawn().unwrap();
    wait_for_ping(&sock).await;

    // SIGTERM shuts down cleanly and removes the socket.
    // SAFETY: sending a signal to our own child.
    unsafe { libc::kill(third.id() as i32, libc::SIGTERM) };
    let status = third.wait().unwrap();
    assert!(status.success(), "{status:?}");
    assert!(!sock.exists());
}
