//! Finding, starting and talking to the daemon.
//!
//! [`Endpoint`] says where the daemon's socket is (same rules as the daemon, from
//! `redctx_proto::paths`). [`connect`] opens a connection and performs the handshake;
//! [`connect_or_start`] also starts `redctxd` when nobody answers, and waits (bounded)
//! until it does; starts are serialised by a lock file, so shims launched together start
//! one daemon. A [`Conn`] carries many requests at once: each gets an id, answers are
//! matched by id, and a request whose future is dropped is cancelled in the daemon. A
//! [`Link`] is what the MCP shim holds: a connection that is re-established after the
//! daemon went away, retrying a request once (see [`Retry`]).

use interprocess::local_socket::tokio::{Stream, prelude::*};
use interprocess::local_socket::{GenericFilePath, ToFsName};
use redctx_proto::paths::{self, SOCKET_ENV, STATE_DIR_ENV};
use redctx_proto::{
    CRATE_VERSION, ClientMessage, Hello, HelloReply, PROTOCOL_VERSION, Request, Response,
    ServerMessage, read_frame, write_frame,
};
use std::collections::HashMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, oneshot};

/// How long `connect_or_start` waits for a freshly started daemon.
pub const START_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a daemon this client started, still running but not answering yet, is
/// waited for in all.
const START_PATIENCE: Duration = Duration::from_secs(30);

/// Environment variable naming the `redctxd` executable to start (packaging and tests).
pub const DAEMON_EXE_ENV: &str = "REDCTX_DAEMON";

/// Where the daemon lives.
#[derive(Clone, Debug)]
pub struct Endpoint {
    pub socket: PathBuf,
    pub state_dir: PathBuf,
}

impl Endpoint {
    /// The endpoint the current environment selects.
    pub fn from_env() -> Result<Self, ClientError> {
        let err = |e: paths::PathError| ClientError::Setup(e.to_string());
        Ok(Endpoint {
            socket: paths::socket_path().map_err(err)?,
            state_dir: paths::state_dir().map_err(err)?,
        })
    }

    /// The daemon's log file, for error messages.
    pub fn log_file(&self) -> PathBuf {
        paths::log_dir(&self.state_dir).join("redctxd.log")
    }
}

/// Everything that can go wrong reaching the daemon. Each message says what failed and
/// what to do, in one line.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("the redctx daemon is not running (no answer on {0})")]
    NotRunning(PathBuf),
    #[error(
        "the running redctx daemon is version {daemon_version} (protocol {daemon_protocol}) but this redctx is {CRATE_VERSION} (protocol {PROTOCOL_VERSION}); restart it with `redctx daemon restart`"
    )]
    Mismatch {
        daemon_version: String,
        daemon_protocol: u32,
        pid: u32,
    },
    #[error(
        "the daemon socket {socket} belongs to another user (uid {uid}); set REDCTX_SOCKET to a path of your own"
    )]
    ForeignOwner { socket: PathBuf, uid: String },
    #[error("cannot talk to the redctx daemon on {socket}: {detail}")]
    Io { socket: PathBuf, detail: String },
    #[error(
        "could not start the redctx daemon ({detail}); see {log} or run `redctxd --log-stderr` to see why"
    )]
    StartFailed { detail: String, log: PathBuf },
    #[error(
        "the connection to the redctx daemon was lost; retry, and check {0} if it keeps happening"
    )]
    Lost(PathBuf),
    #[error("{0}")]
    Setup(String),
}

type Pending = Arc<Mutex<HashMap<u64, oneshot::Sender<Response>>>>;

/// An open, handshaken connection to the daemon.
pub struct Conn {
    tx: mpsc::UnboundedSender<ClientMessage>,
    pending: Pending,
    next_id: AtomicU64,
    alive: Arc<AtomicBool>,
    socket: PathBuf,
    /// Version the daemon reported.
    pub daemon_version: String,
    /// Process id the daemon reported.
    pub pid: u32,
}

impl Conn {
    /// Whether the connection is still usable.
    pub fn is_alive(&self) -> bool {
        self.alive.load(Ordering::Acquire)
    }

    /// Send `request` and wait for its answer. Dropping the returned future cancels the
    /// request in the daemon.
    pub async fn request(&self, request: Request) -> Result<Response, ClientError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        self.pending
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(id, tx);
        let mut guard = CancelOnDrop {
            id,
            conn: self,
            armed: true,
        };
        if self
            .tx
            .send(ClientMessage::Request { id, request })
            .is_err()
            || !self.is_alive()
        {
            guard.armed = false;
            self.pending
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .remove(&id);
            return Err(ClientError::Lost(self.socket.clone()));
        }
        let answer = rx.await;
        guard.armed = false;
        answer.map_err(|_| ClientError::Lost(self.socket.clone()))
    }
}

/// Tells the daemon to drop a request whose caller went away.
struct CancelOnDrop<'a> {
    id: u64,
    conn: &'a Conn,
    armed: bool,
}

impl Drop for CancelOnDrop<'_> {
    fn drop(&mut self) {
        if self.armed {
            self.conn
                .pending
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .remove(&self.id);
            let _ = self.conn.tx.send(ClientMessage::Cancel { id: self.id });
        }
    }
}

/// Nobody listens there: no socket file, a stale one, or a socket directory that does not
/// exist as a directory (starting the daemon reports why).
fn is_not_running(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::NotFound | io::ErrorKind::ConnectionRefused | io::ErrorKind::NotADirectory
    )
}

/// Connect to a running daemon; never starts one.
pub async fn connect(ep: &Endpoint) -> Result<Conn, ClientError> {
    let io_err = |e: io::Error| ClientError::Io {
        socket: ep.socket.clone(),
        detail: e.to_string(),
    };
    let name = ep
        .socket
        .clone()
        .to_fs_name::<GenericFilePath>()
        .map_err(io_err)?;
    let stream = match Stream::connect(name).await {
        Ok(s) => s,
        Err(e) if is_not_running(&e) => return Err(ClientError::NotRunning(ep.socket.clone())),
        Err(e) => return Err(io_err(e)),
    };
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    let creds = stream.peer_creds().map_err(io_err)?;
    if creds.euid() != Some(me) {
        let uid = creds
            .euid()
            .map_or_else(|| "unknown".to_string(), |u| u.to_string());
        return Err(ClientError::ForeignOwner {
            socket: ep.socket.clone(),
            uid,
        });
    }
    let (mut rd, mut wr) = tokio::io::split(stream);
    let proto_err = |e: redctx_proto::FrameError| ClientError::Io {
        socket: ep.socket.clone(),
        detail: e.to_string(),
    };
    write_frame(&mut wr, &Hello::current())
        .await
        .map_err(proto_err)?;
    let reply = tokio::time::timeout(
        Duration::from_secs(10),
        read_frame::<_, HelloReply>(&mut rd),
    )
    .await
    .map_err(|_| ClientError::Io {
        socket: ep.socket.clone(),
        detail: "no handshake answer within 10 s".into(),
    })?
    .map_err(proto_err)?;
    let (daemon_version, pid) = match reply {
        Some(HelloReply::Ok {
            daemon_version,
            pid,
        }) => (daemon_version, pid),
        Some(HelloReply::Mismatch {
            daemon_version,
            protocol_version,
            pid,
        }) => {
            return Err(ClientError::Mismatch {
                daemon_version,
                daemon_protocol: protocol_version,
                pid,
            });
        }
        // Closed during the handshake: a daemon that is shutting down.
        None => return Err(ClientError::NotRunning(ep.socket.clone())),
    };

    let pending: Pending = Arc::default();
    let alive = Arc::new(AtomicBool::new(true));
    let (tx, mut rx) = mpsc::unbounded_channel::<ClientMessage>();
    let writer_alive = alive.clone();
    tokio::spawn(async move {
        while let Some(msg) = rx.recv().await {
            if write_frame(&mut wr, &msg).await.is_err() {
                writer_alive.store(false, Ordering::Release);
                break;
            }
        }
    });
    let reader_pending = pending.clone();
    let reader_alive = alive.clone();
    tokio::spawn(async move {
        while let Ok(Some(ServerMessage { id, response })) =
            read_frame::<_, ServerMessage>(&mut rd).await
        {
            let waiter = reader_pending
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .remove(&id);
            if let Some(w) = waiter {
                let _ = w.send(response);
            }
        }
        reader_alive.store(false, Ordering::Release);
        // Fail everything still waiting: the daemon will never answer it.
        reader_pending
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clear();
    });
    Ok(Conn {
        tx,
        pending,
        next_id: AtomicU64::new(1),
        alive,
        socket: ep.socket.clone(),
        daemon_version,
        pid,
    })
}

/// Connect, starting `redctxd` first if no daemon answers, and wait for it up to
/// `timeout`, or up to [`START_PATIENCE`] while the daemon started is still running (a
/// loaded machine, a cache repaired after a crash). The boolean is `true` when this call
/// started the daemon.
///
/// Starts are serialised: "connect, else spawn and wait until it answers" runs under an
/// exclusive `flock` on [`start_lock_path`], so of many shims launched at once one starts
/// the daemon and the others wait for the lock (up to `timeout`), then find it running.
/// The daemon's own socket lock still decides if two start anyway (a service manager and
/// a shim); losing that race is not an error.
pub async fn connect_or_start(
    ep: &Endpoint,
    timeout: Duration,
) -> Result<(Conn, bool), ClientError> {
    match connect(ep).await {
        Ok(c) => return Ok((c, false)),
        Err(ClientError::NotRunning(_)) => {}
        Err(e) => return Err(e),
    }
    // The holder may wait up to START_PATIENCE for a slow daemon: so may we.
    let _lock = StartLock::acquire(ep, Instant::now() + timeout.max(START_PATIENCE)).await?;
    // Whoever held the lock before us may have started it.
    match connect(ep).await {
        Ok(c) => return Ok((c, false)),
        Err(ClientError::NotRunning(_)) => {}
        Err(e) => return Err(e),
    }
    let mut child = spawn_daemon(ep)?;
    let started = Instant::now();
    let mut delay = Duration::from_millis(2);
    let mut exited: Option<String> = None;
    loop {
        match connect(ep).await {
            Ok(c) => return Ok((c, exited.is_none())),
            Err(ClientError::NotRunning(_)) => {}
            Err(e) => return Err(e),
        }
        if exited.is_none()
            && let Ok(Some(status)) = child.process.try_wait()
        {
            let why = child.stderr_tail();
            // Losing a start race (to a daemon not started through this lock) is fine:
            // the other daemon will answer.
            if !why.contains("already running") {
                let detail = if why.is_empty() {
                    format!("redctxd exited with {status}")
                } else {
                    why
                };
                return Err(ClientError::StartFailed {
                    detail,
                    log: ep.log_file(),
                });
            }
            exited = Some(why);
        }
        // A daemon still starting on a loaded machine (its cache repaired after a crash,
        // other daemons indexing) is given up to START_PATIENCE; one that exited, or that
        // did not start through us, only `timeout`.
        let still_starting = exited.is_none() && matches!(child.process.try_wait(), Ok(None));
        let waited = started.elapsed();
        if waited >= timeout && (!still_starting || waited >= START_PATIENCE) {
            let detail = format!(
                "redctxd did not answer on {} within {} s",
                ep.socket.display(),
                waited.as_secs()
            );
            return Err(ClientError::StartFailed {
                detail,
                log: ep.log_file(),
            });
        }
        tokio::time::sleep(delay).await;
        delay = (delay * 2).min(Duration::from_millis(200));
    }
}

/// The lock file that serialises daemon starts: `<socket>.start.lock`, next to the
/// socket (the daemon's own `<socket>.lock` is held for its whole life, so it cannot
/// serve here).
pub fn start_lock_path(socket: &Path) -> PathBuf {
    let mut name = socket.file_name().unwrap_or_default().to_os_string();
    name.push(".start.lock");
    socket.with_file_name(name)
}

/// An exclusive `flock` on [`start_lock_path`], released on drop (closing the file). The
/// file is opened close-on-exec, so the daemon started under it does not inherit it.
struct StartLock {
    /// Closing it releases the lock.
    _file: std::fs::File,
}

impl StartLock {
    /// Take the lock, polling until `deadline`. A missing socket directory is created
    /// (0700, as the daemon would create it); an existing one is left as it is, which
    /// matters for a user-chosen `REDCTX_SOCKET` location.
    async fn acquire(ep: &Endpoint, deadline: Instant) -> Result<StartLock, ClientError> {
        use std::os::fd::AsRawFd;
        use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
        let path = start_lock_path(&ep.socket);
        let fail = |what: &str, e: io::Error| ClientError::StartFailed {
            detail: format!("cannot {what} {}: {e}", path.display()),
            log: ep.log_file(),
        };
        if let Some(dir) = path.parent() {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir)
                .map_err(|e| fail("create the directory of", e))?;
        }
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&path)
            .map_err(|e| fail("open the start lock", e))?;
        let mut delay = Duration::from_millis(2);
        loop {
            // SAFETY: flock on a descriptor we own.
            if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
                return Ok(StartLock { _file: file });
            }
            let e = io::Error::last_os_error();
            if e.raw_os_error() != Some(libc::EWOULDBLOCK) {
                return Err(fail("lock", e));
            }
            if Instant::now() >= deadline {
                return Err(ClientError::StartFailed {
                    detail: format!(
                        "another redctx kept starting the daemon (lock {}) for too long",
                        path.display()
                    ),
                    log: ep.log_file(),
                });
            }
            tokio::time::sleep(delay).await;
            delay = (delay * 2).min(Duration::from_millis(20));
        }
    }
}

struct Started {
    process: std::process::Child,
    stderr_path: PathBuf,
    stderr_start: u64,
}

impl Started {
    /// The last line the daemon wrote to stderr since we started it.
    fn stderr_tail(&self) -> String {
        use std::io::{Read, Seek, SeekFrom};
        let mut text = String::new();
        if let Ok(mut f) = std::fs::File::open(&self.stderr_path)
            && f.seek(SeekFrom::Start(self.stderr_start)).is_ok()
        {
            let _ = f.take(64 * 1024).read_to_string(&mut text);
        }
        text.lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("")
            .trim()
            .to_string()
    }
}

/// The `redctxd` to start: `$REDCTX_DAEMON`, else next to this executable, else on PATH.
pub fn daemon_exe() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os(DAEMON_EXE_ENV).filter(|v| !v.is_empty()) {
        return Some(PathBuf::from(p));
    }
    if let Ok(me) = std::env::current_exe()
        && let Some(dir) = me.parent()
    {
        let sibling = dir.join("redctxd");
        if sibling.is_file() {
            return Some(sibling);
        }
    }
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|d| d.join("redctxd"))
        .find(|p| p.is_file())
}

/// Start `redctxd` in its own session, detached from our terminal and stdio, with the
/// same state dir and socket environment as ours (made absolute, since the daemon runs
/// in `/`). Its stderr goes to `<state>/logs/redctxd.stderr` so early failures can be
/// reported.
fn spawn_daemon(ep: &Endpoint) -> Result<Started, ClientError> {
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
    use std::os::unix::process::CommandExt;
    let fail = |detail: String| ClientError::StartFailed {
        detail,
        log: ep.log_file(),
    };
    let exe = daemon_exe().ok_or_else(|| {
        fail(
            "redctxd was not found next to redctx or on PATH; install both binaries together"
                .into(),
        )
    })?;
    let log_dir = paths::log_dir(&ep.state_dir);
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&log_dir)
        .map_err(|e| fail(format!("cannot create {}: {e}", log_dir.display())))?;
    let stderr_path = log_dir.join("redctxd.stderr");
    let stderr = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(&stderr_path)
        .map_err(|e| fail(format!("cannot open {}: {e}", stderr_path.display())))?;
    let stderr_start = stderr.metadata().map(|m| m.len()).unwrap_or(0);
    let mut cmd = std::process::Command::new(&exe);
    cmd.stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(stderr)
        .current_dir("/");
    for var in [STATE_DIR_ENV, SOCKET_ENV] {
        if let Some(v) = std::env::var_os(var).filter(|v| !v.is_empty()) {
            cmd.env(var, absolute(Path::new(&v)));
        }
    }
    // SAFETY: setsid is async-signal-safe and touches no memory of the parent.
    unsafe {
        cmd.pre_exec(|| {
            if libc::setsid() == -1 {
                return Err(io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let process = cmd
        .spawn()
        .map_err(|e| fail(format!("cannot run {}: {e}", exe.display())))?;
    Ok(Started {
        process,
        stderr_path,
        stderr_start,
    })
}

fn absolute(p: &Path) -> PathBuf {
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        std::env::current_dir()
            .map(|d| d.join(p))
            .unwrap_or_else(|_| p.to_path_buf())
    }
}

/// Whether [`Link::request_with`] may send a request a second time after the connection
/// was lost or could not be made. Retrying is right for reads: the daemon either never
/// saw the first attempt or answered it to nobody, and a second run has the same effect.
/// A request that changes something (a future write tool) must use [`Retry::Never`], since
/// the first attempt may have done its work before the daemon died.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Retry {
    /// Reconnect (starting the daemon if needed) and send it once more.
    Once,
    /// Fail with the first error.
    Never,
}

/// A connection that is re-established (starting the daemon if needed) after the daemon
/// went away, so a long agent session survives a daemon restart or a killed daemon. It
/// may start without a connection (the daemon could not be reached when the shim
/// started); every request then tries again.
pub struct Link {
    ep: Endpoint,
    conn: tokio::sync::Mutex<Option<Arc<Conn>>>,
}

impl Link {
    /// A link over `conn`, or with none yet (the first request connects).
    pub fn new(ep: Endpoint, conn: Option<Conn>) -> Self {
        Link {
            ep,
            conn: tokio::sync::Mutex::new(conn.map(Arc::new)),
        }
    }

    /// [`Link::request_with`] with [`Retry::Once`]: every request the shim sends today
    /// is read-only.
    pub async fn request(&self, request: Request) -> Result<Response, ClientError> {
        self.request_with(request, Retry::Once).await
    }

    /// Send `request`, reconnecting first if the connection is dead. When the connection
    /// is lost before the answer, or cannot be made, and `retry` allows it, connect again
    /// (starting the daemon if none answers) and send it once more.
    pub async fn request_with(
        &self,
        request: Request,
        retry: Retry,
    ) -> Result<Response, ClientError> {
        let first = match retry {
            Retry::Once => self.attempt(request.clone()).await,
            Retry::Never => return self.attempt(request).await,
        };
        match first {
            Err(e) if is_retryable(&e) => {
                let conn = self.reconnect().await?;
                self.send_on(conn, request).await
            }
            done => done,
        }
    }

    async fn attempt(&self, request: Request) -> Result<Response, ClientError> {
        let conn = self.current().await?;
        self.send_on(conn, request).await
    }

    /// A connection to the daemon that replaced one that went away. Connecting is tried
    /// for up to [`RECONNECT_BUDGET`]: right after a daemon is killed, a connect can land
    /// in its dying listener's backlog and be reset, or meet the successor before it
    /// listens. Nothing is sent meanwhile, so trying again is safe for any request.
    async fn reconnect(&self) -> Result<Arc<Conn>, ClientError> {
        let deadline = Instant::now() + RECONNECT_BUDGET;
        loop {
            match self.current().await {
                Err(e) if is_retryable(&e) && Instant::now() < deadline => {
                    tokio::time::sleep(Duration::from_millis(25)).await;
                }
                done => return done,
            }
        }
    }

    async fn send_on(&self, conn: Arc<Conn>, request: Request) -> Result<Response, ClientError> {
        let answer = conn.request(request).await;
        if answer.is_err() {
            // Forget this connection (unless another request already replaced it).
            let mut slot = self.conn.lock().await;
            if slot.as_ref().is_some_and(|c| Arc::ptr_eq(c, &conn)) {
                *slot = None;
            }
        }
        answer
    }

    /// The live connection, made now if there is none.
    async fn current(&self) -> Result<Arc<Conn>, ClientError> {
        let mut slot = self.conn.lock().await;
        match slot.as_ref() {
            Some(c) if c.is_alive() => Ok(c.clone()),
            _ => {
                *slot = None;
                let (c, _) = connect_or_start(&self.ep, START_TIMEOUT).await?;
                let c = Arc::new(c);
                *slot = Some(c.clone());
                Ok(c)
            }
        }
    }
}

/// How long [`Link::reconnect`] keeps trying to reach a restarted daemon.
const RECONNECT_BUDGET: Duration = Duration::from_secs(3);

/// Errors a second attempt can cure: the daemon died or vanished under us. A daemon that
/// could not be started, runs another version or belongs to another user will not change
/// within one call.
fn is_retryable(e: &ClientError) -> bool {
    matches!(
        e,
        ClientError::Lost(_) | ClientError::NotRunning(_) | ClientError::Io { .. }
    )
}
