//! `redctxd`: the redctx daemon. Serves redacted views of local roots to `redctx`
//! clients over a private local socket; normally started on demand by `redctx mcp` or
//! `redctx daemon start`, and stopped with `redctx daemon stop`.

use clap::Parser;
use redctx_daemon::cache::{Cache, CacheError};
use redctx_daemon::engine::config::EnvOverrides;
use redctx_daemon::server::{self, Backend, BindError};
use redctx_daemon::service::Service;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

/// The redctx daemon: one per user, serving every root its clients ask for.
#[derive(Parser, Debug)]
#[command(name = "redctxd", version, about, long_about = None)]
struct Args {
    /// Socket path (default: $REDCTX_SOCKET, else $XDG_RUNTIME_DIR/redctx/redctxd.sock or
    /// <state dir>/run/redctxd.sock).
    #[arg(long, value_name = "PATH")]
    socket: Option<PathBuf>,
    /// State directory for logs and caches (default: $REDCTX_STATE_DIR, else
    /// $XDG_STATE_HOME/redctx or ~/.local/state/redctx).
    #[arg(long, value_name = "DIR")]
    state_dir: Option<PathBuf>,
    /// Log filter, e.g. `info` or `redctx_daemon=debug` (default: $REDCTX_LOG or `info`).
    #[arg(long, value_name = "FILTER")]
    log: Option<String>,
    /// Also write logs to stderr (useful when running in a terminal).
    #[arg(long)]
    log_stderr: bool,
    /// TEST ONLY: serve the fake backend instead of real redaction (also
    /// REDCTX_FAKE_BACKEND=1). Only with the `test-backend` feature, which the test
    /// suites turn on: a `redctxd` built to run has neither the flag nor the variable.
    #[cfg(feature = "test-backend")]
    #[arg(long, hide = true)]
    fake_backend: bool,
}

fn main() -> ExitCode {
    // The document worker (`documents::worker`): before anything else, so it opens no
    // log, socket or cache.
    let argv: Vec<String> = std::env::args().collect();
    if argv.get(1).map(String::as_str) == Some(redctx_daemon::documents::WORKER_FLAG) {
        let code = redctx_daemon::documents::worker::main(
            argv.get(2).map_or("", String::as_str),
            argv.get(3).map(String::as_str),
        );
        return ExitCode::from(u8::try_from(code).unwrap_or(1));
    }
    withhold_panic_messages();
    limit_malloc_arenas();
    if let Ok(exe) = std::env::current_exe() {
        redctx_daemon::documents::install_worker(exe);
    }
    let args = Args::parse();
    match run(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(msg) => {
            tracing::error!("{msg}");
            eprintln!("redctxd: {msg}");
            ExitCode::FAILURE
        }
    }
}

/// Caps glibc's malloc arenas at one per core (its default allows eight per core). A
/// thread that redacts a large file leaves the file's freed text in its own arena,
/// fragmented among small blocks still in use, so the daemon's memory grew with the number
/// of arenas: on a tree with 24 files of 2–16 MB (`cargo bench --bench daemon_index`, row
/// (e), two cores) peak RSS after the passage build was 304 MB by default and 222 MB with
/// two arenas, at the same query latency. Mapping every allocation of 1 MiB or more on its
/// own (`M_MMAP_THRESHOLD`) bounded memory about as well but made a whole-root retrieve
/// 30% slower: each call's large vectors were mapped and faulted in again. So that is
/// done only while a root is indexed (`budget::bulk_phase`).
fn limit_malloc_arenas() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        let arenas = libc::c_int::try_from(cores.max(2)).unwrap_or(libc::c_int::MAX);
        // SAFETY: mallopt only sets an allocator parameter; called before other threads start.
        unsafe {
            libc::mallopt(libc::M_ARENA_MAX, arenas);
        }
    }
}

/// A panic's message can quote the text being processed (a string slice out of bounds
/// prints the string), and this process holds raw file content: log where it happened,
/// never what it said.
fn withhold_panic_messages() {
    thread_local! {
        /// Set while this thread runs the hook: a panic inside the log writer then
        /// only reaches stderr instead of re-entering the logger.
        static IN_HOOK: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    }
    std::panic::set_hook(Box::new(|info| {
        let at = info
            .location()
            .map(|l| format!("{}:{}", l.file(), l.line()))
            .unwrap_or_default();
        let thread = std::thread::current();
        let thread = thread.name().unwrap_or("unnamed");
        eprintln!("redctxd: internal error at {at} on thread {thread} (message withheld)");
        if !IN_HOOK.replace(true) {
            tracing::error!(at, thread, "internal error (panic; message withheld)");
            IN_HOOK.set(false);
        }
    }));
}

fn run(args: Args) -> Result<(), String> {
    let state_dir = match args.state_dir.clone() {
        Some(d) => d,
        None => redctx_proto::paths::state_dir().map_err(|e| e.to_string())?,
    };
    init_logging(&state_dir, args.log.as_deref(), args.log_stderr)?;

    // A socket chosen by the user lives in a directory we must not re-permission.
    let user_socket = args.socket.is_some()
        || std::env::var_os(redctx_proto::paths::SOCKET_ENV).is_some_and(|v| !v.is_empty());
    let socket = match args.socket.clone() {
        Some(s) => s,
        None => redctx_proto::paths::socket_path().map_err(|e| e.to_string())?,
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("redctxd")
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}"))?;
    let result = rt.block_on(async move {
        let bound = server::bind(&socket, !user_socket)
            .await
            .map_err(|e| match e {
                BindError::AlreadyRunning { .. } => e.to_string(),
                other => other.to_string(),
            })?;
        // Bound first: the socket lock decides which daemon runs before the cache (whose
        // redb lock is a second single-instance guard) is opened.
        let (backend, cache) = make_backend(&args, &state_dir)?;
        let served = server::serve(bound, backend, server::shutdown_signal())
            .await
            .map_err(|e| format!("server failed: {e}"));
        // Background threads may still hold the cache: commit and close it explicitly,
        // or the next start pays for redb's repair of a database left open.
        if let Some(cache) = cache {
            cache.shutdown();
            tracing::info!("cache committed and closed");
        }
        served
    });
    // Requests still on the blocking pool were cancelled when the server stopped and end
    // at their next check; never let one hold the exit (a runtime's drop waits for every
    // blocking task).
    rt.shutdown_timeout(std::time::Duration::from_millis(500));
    result
}

/// The backend to serve and the cache it writes to (closed on shutdown).
type Made = (Arc<dyn Backend>, Option<Arc<Cache>>);

fn make_backend(args: &Args, state_dir: &std::path::Path) -> Result<Made, String> {
    #[cfg(not(feature = "test-backend"))]
    let _ = args;
    #[cfg(feature = "test-backend")]
    {
        let fake_env = std::env::var_os("REDCTX_FAKE_BACKEND").is_some_and(|v| v == "1");
        if args.fake_backend || fake_env {
            tracing::warn!("serving the FAKE backend (test only)");
            return Ok((Arc::new(server::fake::FakeBackend::new()), None));
        }
    }
    // A daemon that just gave up the socket may still be exiting and holding the cache
    // lock: give it a few seconds before refusing to start.
    let mut attempt = Cache::open(state_dir);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while matches!(attempt, Err(CacheError::AlreadyOpen)) && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(50));
        attempt = Cache::open(state_dir);
    }
    let cache = match attempt {
        Ok(cache) => Some(Arc::new(cache)),
        Err(CacheError::AlreadyOpen) => return Err(CacheError::AlreadyOpen.to_string()),
        Err(e) => {
            tracing::warn!("persistent cache unavailable, serving from memory: {e}");
            None
        }
    };
    // TEST ONLY: hold background indexing after N files (kill -9 mid-index tests) until
    // SIGUSR1 (`status --wait` latency tests).
    let pause_after = std::env::var("REDCTX_TEST_PAUSE_INDEX_AFTER")
        .ok()
        .and_then(|v| v.parse().ok());
    let service = Arc::new(
        Service::new(cache.clone(), EnvOverrides::from_process_env())
            .with_index_pause_after(pause_after),
    );
    if pause_after.is_some() {
        tracing::warn!("background indexing will pause (REDCTX_TEST_PAUSE_INDEX_AFTER, test only)");
        let held = service.clone();
        let mut resume =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::user_defined1())
                .map_err(|e| format!("cannot install the SIGUSR1 handler: {e}"))?;
        tokio::spawn(async move {
            while resume.recv().await.is_some() {
                tracing::info!("resuming held indexing (SIGUSR1, test only)");
                held.resume_indexing();
            }
        });
    }
    Ok((service, cache))
}

fn init_logging(
    state_dir: &std::path::Path,
    filter: Option<&str>,
    to_stderr: bool,
) -> Result<(), String> {
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
    use tracing_subscriber::{EnvFilter, fmt, prelude::*};
    let log_dir = redctx_proto::paths::log_dir(state_dir);
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&log_dir)
        .map_err(|e| format!("cannot create the log directory {}: {e}", log_dir.display()))?;
    let path = log_dir.join("redctxd.log");
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(&path)
        .map_err(|e| format!("cannot open the log file {}: {e}", path.display()))?;
    let filter = match filter
        .map(str::to_string)
        .or_else(|| std::env::var("REDCTX_LOG").ok())
    {
        Some(f) => EnvFilter::try_new(&f).map_err(|e| format!("invalid log filter: {e}"))?,
        None => EnvFilter::new("info"),
    };
    let file_layer = fmt::layer()
        .with_ansi(false)
        .with_writer(std::sync::Mutex::new(file));
    let stderr_layer = to_stderr.then(|| fmt::layer().with_writer(std::io::stderr));
    tracing_subscriber::registry()
        .with(filter)
        .with(file_layer)
        .with(stderr_layer)
        .try_init()
        .map_err(|e| format!("cannot initialise logging: {e}"))
}
